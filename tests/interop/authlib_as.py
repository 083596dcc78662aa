"""A real OAuth 2.1 authorization server for the interop tests, built from Authlib's
grant and endpoint classes and served on loopback with trio and h11.

It is what a deployment puts beside an MCP server, kept to what an MCP client needs:

* ``GET /.well-known/oauth-authorization-server``: RFC 8414 metadata;
* ``POST /register``: RFC 7591 dynamic client registration (open, as MCP clients
  expect);
* ``GET /authorize``: the authorization code grant with PKCE (S256 required), where
  the resource owner ``alice`` approves at once (the browser step, automated);
* ``POST /token``: the code for a JWT access token (RFC 9068) signed with an RSA key,
  whose ``aud`` is the RFC 8707 ``resource`` the client asked for (Authlib leaves
  resource indicators to the application: the code keeps the authorization request's
  ``resource``, and the token request must name the same one);
* ``GET /jwks.json``: the public key.

Authlib makes every OAuth decision (client authentication, redirect URI, PKCE, scope,
code single use); this module only stores and routes.  ``requests`` lists each request
seen, so a test can check what the client sent.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import h11
import trio
from authlib.oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import (
    ClientMixin,
    JsonPayload,
    JsonRequest,
    OAuth2Request,
    grants,
)
from authlib.oauth2.rfc6749.errors import InvalidGrantError
from authlib.oauth2.rfc6749.requests import BasicOAuth2Payload
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc9068 import JWTBearerTokenGenerator
from joserfc import jwk

USER = "alice"


@dataclass
class Client(ClientMixin):  # type: ignore[misc]
    client_id: str
    client_secret: str | None
    metadata: dict[str, Any]

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str:
        return str(self.metadata["redirect_uris"][0])

    def get_allowed_scope(self, scope: str) -> str:
        return scope or ""

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in self.metadata.get("redirect_uris", [])

    def check_client_secret(self, client_secret: str) -> bool:
        return self.client_secret is not None and secrets.compare_digest(
            client_secret, self.client_secret
        )

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        if endpoint == "token":
            return method == self.metadata.get("token_endpoint_auth_method", "client_secret_basic")
        return True

    def check_response_type(self, response_type: str) -> bool:
        return response_type in self.metadata.get("response_types", ["code"])

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in self.metadata.get("grant_types", ["authorization_code"])


@dataclass
class Code:
    code: str
    client_id: str
    redirect_uri: str
    scope: str
    code_challenge: str | None
    code_challenge_method: str | None
    resource: str | None
    user: str
    issued: float = field(default_factory=time.time)

    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope

    def is_expired(self) -> bool:
        return time.time() > self.issued + 300


@dataclass
class User:
    name: str

    def get_user_id(self) -> str:
        return self.name


class _Request(OAuth2Request):  # type: ignore[misc]
    def __init__(self, method: str, uri: str, headers: dict[str, str], body: bytes) -> None:
        super().__init__(method, uri, headers=headers)
        self._args = dict(parse_qsl(urlsplit(uri).query))
        form = body.decode() if "form-urlencoded" in headers.get("content-type", "") else ""
        self._form = dict(parse_qsl(form))
        self.payload = BasicOAuth2Payload({**self._args, **self._form})

    @property
    def args(self) -> dict[str, str]:
        return self._args

    @property
    def form(self) -> dict[str, str]:
        return self._form


class _JsonPayload(JsonPayload):  # type: ignore[misc]
    def __init__(self, data: Any) -> None:
        self._data = data

    @property
    def data(self) -> Any:
        return self._data


class AuthServer(AuthorizationServer):  # type: ignore[misc]
    """Authlib's server, with the storage and the framework glue it asks for."""

    def __init__(self, issuer: str) -> None:
        super().__init__(scopes_supported=["mcp", "admin"])
        self.issuer = issuer
        self.key = jwk.RSAKey.generate_key(2048, parameters={"kid": "as-1"})
        self.clients: dict[str, Client] = {}
        self.codes: dict[str, Code] = {}
        self.resource: str | None = None  # the token request being answered
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        self.tokens: list[dict[str, Any]] = []
        outer = self

        class Grant(grants.AuthorizationCodeGrant):  # type: ignore[misc]
            TOKEN_ENDPOINT_AUTH_METHODS = ["none", "client_secret_basic", "client_secret_post"]

            def save_authorization_code(self, code: str, request: Any) -> None:
                args = request.payload.data
                outer.codes[code] = Code(
                    code=code,
                    client_id=request.client.client_id,
                    redirect_uri=request.payload.redirect_uri,
                    scope=request.payload.scope or "",
                    code_challenge=args.get("code_challenge"),
                    code_challenge_method=args.get("code_challenge_method"),
                    resource=args.get("resource"),
                    user=request.user.name,
                )

            def query_authorization_code(self, code: str, client: Any) -> Code | None:
                found = outer.codes.get(code)
                if found and found.client_id == client.client_id and not found.is_expired():
                    # RFC 8707 section 2.2: the token request names the same resource.
                    asked = self.request.form.get("resource")
                    if found.resource and asked and asked != found.resource:
                        raise InvalidGrantError("the resource differs from the authorization's")
                    outer.resource = found.resource or asked
                    return found
                return None

            def delete_authorization_code(self, authorization_code: Code) -> None:
                outer.codes.pop(authorization_code.code, None)

            def authenticate_user(self, authorization_code: Code) -> User:
                return User(authorization_code.user)

        class Tokens(JWTBearerTokenGenerator):  # type: ignore[misc]
            def get_jwks(self) -> Any:
                return {"keys": [outer.key.as_dict(private=True)]}

            def get_audiences(self, client: Any, user: Any, scope: str) -> Any:
                return outer.resource or client.get_client_id()

        class Registration(ClientRegistrationEndpoint):  # type: ignore[misc]
            def authenticate_token(self, request: Any) -> bool:
                return True  # open registration

            def resolve_public_key(self, request: Any) -> None:
                return None

            def get_server_metadata(self) -> dict[str, Any]:
                return outer.metadata()

            def save_client(
                self, info: dict[str, Any], metadata: dict[str, Any], request: Any
            ) -> Client:
                secret = info["client_secret"]
                if metadata.get("token_endpoint_auth_method") == "none":
                    secret = None
                client = Client(info["client_id"], secret, metadata)
                outer.clients[client.client_id] = client
                return client

        self.register_grant(Grant, [CodeChallenge(required=True)])
        self.register_token_generator("default", Tokens(issuer=issuer))
        self.register_endpoint(Registration)

    # -- Authlib's framework hooks ---------------------------------------------------

    def query_client(self, client_id: str) -> Client | None:
        return self.clients.get(client_id)

    def save_token(self, token: dict[str, Any], request: Any) -> None:
        self.tokens.append(token)

    def create_oauth2_request(self, request: Any) -> OAuth2Request:
        return request if isinstance(request, OAuth2Request) else _Request(*request)

    def create_json_request(self, request: Any) -> JsonRequest:
        method, uri, headers, body = request
        out = JsonRequest(method, uri, headers)
        out.payload = _JsonPayload(json.loads(body or b"{}"))
        return out

    def handle_response(self, status: int, body: Any, headers: Any) -> tuple[int, Any, Any]:
        return status, body, headers

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        pass

    # -- the documents ---------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        base = self.issuer
        return {
            "issuer": base,
            "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token",
            "registration_endpoint": f"{base}/register",
            "jwks_uri": f"{base}/jwks.json",
            "scopes_supported": ["mcp", "admin"],
            "response_types_supported": ["code"],
            # refresh_token too: mcp-ref's client registers for it (tokens here come
            # without one, so it is never used)
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": [
                "none",
                "client_secret_basic",
                "client_secret_post",
            ],
            "code_challenge_methods_supported": ["S256"],
        }

    def answer(
        self, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, Any, Any]:
        """One request: ``(status, body, headers)``."""
        self.requests.append((method, target, headers, body))
        uri = self.issuer + target
        path = urlsplit(target).path
        json_head = [("Content-Type", "application/json")]
        if path == "/.well-known/oauth-authorization-server":
            return 200, self.metadata(), json_head
        if path == "/jwks.json":
            return 200, {"keys": [self.key.as_dict(private=False)]}, json_head
        if path == "/register" and method == "POST":
            return self.create_endpoint_response(
                "client_registration", (method, uri, headers, body)
            )
        if path == "/authorize":
            request = _Request(method, uri, headers, body)
            return self.create_authorization_response(request, grant_user=User(USER))
        if path == "/token" and method == "POST":
            self.resource = None
            return self.create_token_response(_Request(method, uri, headers, body))
        return 404, {"error": "not found"}, json_head


async def serve(server_factory: Any, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Serve an :class:`AuthServer` on a loopback port (``task_status``: the server)."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    server: AuthServer = server_factory(f"http://127.0.0.1:{port}")

    async def one(stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                request, body = None, b""
                while True:
                    event = conn.next_event()
                    if event is h11.NEED_DATA:
                        data = await stream.receive_some(65536)
                        conn.receive_data(data)
                        if not data and conn.their_state is not h11.DONE:
                            return
                        continue
                    if isinstance(event, h11.Request):
                        request = event
                    elif isinstance(event, h11.Data):
                        body += event.data
                    elif isinstance(event, h11.EndOfMessage):
                        break
                    else:
                        return
                assert request is not None
                headers = {k.decode().lower(): v.decode() for k, v in request.headers}
                status, payload, extra = server.answer(
                    request.method.decode(), request.target.decode(), headers, body
                )
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                if isinstance(payload, str):
                    data = payload.encode()
                head = [(k, v) for k, v in (extra or [])]
                head.append(("Content-Length", str(len(data))))
                out = conn.send(h11.Response(status_code=status, headers=head))
                out += conn.send(h11.Data(data=data)) + conn.send(h11.EndOfMessage())
                await stream.send_all(out)
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    return
                conn.start_next_cycle()
        except (trio.BrokenResourceError, h11.ProtocolError):
            return
        finally:
            await stream.aclose()

    task_status.started(server)
    await trio.serve_listeners(one, listeners)

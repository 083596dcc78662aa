"""The HTTP client signs in (OAuthClientOptions), over loopback, without node.

Two scripted h11 servers on two ports (two origins): the MCP server, which asks for a
bearer token and serves its protected resource metadata, and a tiny authorization server
(metadata, dynamic registration, token endpoint with code + PKCE and refresh).  The
browser step is the test's ``authorize`` callback, which answers as an authorization
server's redirect would.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import trio

from mcp_ref._http_client_auth import ClientAuth, OAuthClientOptions
from mcp_ref._oauth_grants import Grant
from mcp_ref._oauth_http import OAuthLocalError, TokenMisdirected
from mcp_ref._oauth_metadata import ClientInfo
from mcp_ref.client import open_client, open_http_client
from mcp_ref.trio import SessionClosed
from mcp_ref.trio.http.client import HttpTransportError, open_http_channel

from .test_transports_http_client import Reply, Req, _standard, fake_server, text_result

TIMEOUT = 15
A = "2025-06-18/basic/authorization#"
REDIRECT = "http://127.0.0.1:9/callback"


class World:
    """The two servers' shared state: URLs, tokens issued, requests seen."""

    def __init__(self) -> None:
        self.mcp_url = self.as_url = ""
        self.valid: set[str] = set()
        self.issued = 0
        self.codes: dict[str, str] = {}  # code -> code_challenge
        self.registered = 0
        self.refreshes = 0
        self.expires_in = 3600
        self.scope_seen: list[str | None] = []

    def new_token(self) -> dict[str, Any]:
        self.issued += 1
        token = f"tok-{self.issued}"
        self.valid = {token}
        return {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": self.expires_in,
            "refresh_token": f"refresh-{self.issued}",
        }

    async def mcp(self, req: Req, reply: Reply) -> None:
        if req.target.startswith("/.well-known/oauth-protected-resource"):
            await reply.json({"resource": self.mcp_url, "authorization_servers": [self.as_url]})
            return
        auth = req.headers.get("authorization", "")
        if not auth.startswith("Bearer ") or auth[7:] not in self.valid:
            prm = self.mcp_url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
            challenge = f'Bearer resource_metadata="{prm}", scope="mcp:tools"'
            await reply.status(401, b'{"error":"invalid_token"}', www_authenticate=challenge)
            return
        if not await _standard(req, reply):
            await reply.json(text_result(req.json["id"], auth[7:]))

    async def auth_server(self, req: Req, reply: Reply) -> None:
        path = urlsplit(req.target).path
        if path == "/.well-known/oauth-authorization-server":
            await reply.json(
                {
                    "issuer": self.as_url,
                    "authorization_endpoint": self.as_url + "/authorize",
                    "token_endpoint": self.as_url + "/token",
                    "registration_endpoint": self.as_url + "/register",
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["none"],
                    "response_types_supported": ["code"],
                }
            )
        elif path == "/register":
            self.registered += 1
            doc = json.loads(req.body)
            assert doc["redirect_uris"] == [REDIRECT]
            await reply.status(201, json.dumps({"client_id": "client-1", **doc}).encode())
        elif path == "/token":
            form = {k: v[0] for k, v in parse_qs(req.body.decode()).items()}
            assert form["resource"] == self.mcp_url
            if form["grant_type"] == "authorization_code":
                challenge = self.codes.pop(form["code"])
                digest = hashlib.sha256(form["code_verifier"].encode()).digest()
                assert base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == challenge
                await reply.json(self.new_token())
            elif form["grant_type"] == "refresh_token":
                assert form["refresh_token"] == f"refresh-{self.issued}"
                self.refreshes += 1
                await reply.json(self.new_token())
            else:
                await reply.status(400, b'{"error":"unsupported_grant_type"}')
        else:
            await reply.status(404)

    async def authorize(self, url: str) -> str:
        """The browser step: the user says yes at once."""
        assert url.startswith(self.as_url + "/authorize?")
        query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
        assert query["client_id"] == "client-1"
        assert query["code_challenge_method"] == "S256"
        assert query["resource"] == self.mcp_url
        self.scope_seen.append(query.get("scope"))
        code = f"code-{len(self.codes) + self.issued}"
        self.codes[code] = query["code_challenge"]
        return query["redirect_uri"] + "?" + urlencode({"code": code, "state": query["state"]})


@pytest.mark.spec(
    A + "token-requirements.2",
    "2025-03-26/basic/authorization#token-requirements.2",
    "2025-11-25/basic/authorization#token-requirements.2",
    "2026-07-28/basic/authorization/index#token-requirements.2",
    A + "token-requirements.3",
    "2025-03-26/basic/authorization#token-requirements.3",
    "2026-07-28/basic/authorization/index#token-requirements.3",
)
async def test_a_401_signs_in_and_every_request_carries_the_token() -> None:
    world = World()
    with trio.fail_after(TIMEOUT):
        async with (
            fake_server(world.mcp) as (mcp_url, mcp),
            fake_server(world.auth_server) as (as_url, auth_server),
        ):
            world.mcp_url, world.as_url = mcp_url, as_url.removesuffix("/mcp")
            options = OAuthClientOptions(redirect_uri=REDIRECT, authorize=world.authorize)
            async with open_http_client(mcp_url, auth=options) as client:
                result = await client.call_tool("x")
                assert result.content[0].text == "tok-1"  # type: ignore[union-attr]
            assert world.registered == 1 and world.scope_seen == ["mcp:tools"]
            posts = [r for r in mcp.requests if r.method == "POST"]
            assert "authorization" not in posts[0].headers  # the refused first try
            # Every later request to the MCP server carries the token.
            later = [r for r in mcp.requests[1:] if not r.target.startswith("/.well-known")]
            assert later and all(r.headers["authorization"] == "Bearer tok-1" for r in later)
            # The well-known GETs and every request to the authorization server: none.
            for r in [*mcp.requests, *auth_server.requests]:
                if r.target.startswith("/.well-known") or r in auth_server.requests:
                    assert "authorization" not in r.headers
            assert options.token_store.get(mcp_url) is not None


async def test_an_expired_token_is_refreshed_before_the_next_request() -> None:
    world = World()
    now = [1000.0]
    with trio.fail_after(TIMEOUT):
        async with (
            fake_server(world.mcp) as (mcp_url, mcp),
            fake_server(world.auth_server) as (as_url, _),
        ):
            world.mcp_url, world.as_url = mcp_url, as_url.removesuffix("/mcp")
            options = OAuthClientOptions(redirect_uri=REDIRECT, authorize=world.authorize)
            async with open_http_channel(mcp_url, auth=options) as channel:
                channel.clock = lambda: now[0]
                async with open_client(channel) as client:
                    assert (await client.call_tool("x")).content[0].text == "tok-1"  # type: ignore[union-attr]
                    now[0] += 3600  # expired (wall clock, as the driver sees it)
                    assert (await client.call_tool("x")).content[0].text == "tok-2"  # type: ignore[union-attr]
            assert world.refreshes == 1 and world.registered == 1


async def test_a_401_to_a_token_the_server_dropped_refreshes_it() -> None:
    world = World()
    with trio.fail_after(TIMEOUT):
        async with (
            fake_server(world.mcp) as (mcp_url, _),
            fake_server(world.auth_server) as (as_url, _),
        ):
            world.mcp_url, world.as_url = mcp_url, as_url.removesuffix("/mcp")
            options = OAuthClientOptions(redirect_uri=REDIRECT, authorize=world.authorize)
            async with open_http_client(mcp_url, auth=options) as client:
                await client.call_tool("x")
                world.valid = set()  # revoked: the next request gets a 401
                assert (await client.call_tool("x")).content[0].text == "tok-2"  # type: ignore[union-attr]
            assert world.refreshes == 1 and len(world.scope_seen) == 1


async def test_a_failed_sign_in_fails_initialize_with_the_reason() -> None:
    world = World()
    with trio.fail_after(TIMEOUT):
        async with (
            fake_server(world.mcp) as (mcp_url, _),
            fake_server(world.auth_server) as (as_url, _),
        ):
            world.mcp_url, world.as_url = mcp_url, as_url.removesuffix("/mcp")

            async def deny(url: str) -> str:
                state = parse_qs(urlsplit(url).query)["state"][0]
                return REDIRECT + "?" + urlencode({"error": "access_denied", "state": state})

            options = OAuthClientOptions(redirect_uri=REDIRECT, authorize=deny)
            with pytest.raises((SessionClosed, HttpTransportError), match="sign-in failed"):
                async with open_http_client(mcp_url, auth=options):
                    pass


def test_the_token_is_never_sent_to_another_origin() -> None:
    options = OAuthClientOptions(redirect_uri=REDIRECT, authorize=None)
    auth = ClientAuth("http://127.0.0.1:8000/mcp", options)
    assert auth.header("http://127.0.0.1:8000/mcp") is None  # not signed in
    grant = Grant(
        access_token="secret",
        expires_at=None,
        refresh_token=None,
        scope=None,
        resource="http://127.0.0.1:8000/mcp",
        token_endpoint="http://127.0.0.1:9000/token",
        client=ClientInfo(client_id="c"),
        auth_method="none",
    )
    auth.authorized(grant)
    assert auth.header("http://127.0.0.1:8000/mcp") == (b"authorization", b"Bearer secret")
    for elsewhere in (
        "http://127.0.0.1:8001/mcp",
        "http://localhost:8000/mcp",
        "https://127.0.0.1:8000/mcp",
        "http://127.0.0.1:8000/other",
    ):
        with pytest.raises(TokenMisdirected):
            auth.header(elsewhere)


def test_options_are_checked_when_the_client_opens() -> None:
    with pytest.raises(OAuthLocalError):
        ClientAuth("http://127.0.0.1:8000/mcp", OAuthClientOptions())  # no redirect URI
    with pytest.raises(OAuthLocalError):
        ClientAuth(
            "http://127.0.0.1:8000/mcp",
            OAuthClientOptions(redirect_uri="http://example.com/cb"),  # not https, not loopback
        )


def test_the_asyncio_client_signs_in_too() -> None:
    """The same servers (trio, in a thread of their own), the asyncio driver."""
    import asyncio
    import threading

    from mcp_ref.asyncio import open_http_client as open_asyncio_http_client

    world = World()
    ready = threading.Event()
    held: dict[str, Any] = {}

    async def servers() -> None:
        with trio.fail_after(TIMEOUT):
            async with (
                fake_server(world.mcp) as (mcp_url, mcp),
                fake_server(world.auth_server) as (as_url, _),
            ):
                world.mcp_url, world.as_url = mcp_url, as_url.removesuffix("/mcp")
                held["mcp"], held["stop"] = mcp, trio.Event()
                held["token"] = trio.lowlevel.current_trio_token()
                ready.set()
                await held["stop"].wait()

    thread = threading.Thread(target=trio.run, args=(servers,))
    thread.start()
    try:
        assert ready.wait(TIMEOUT)

        async def client() -> None:
            options = OAuthClientOptions(redirect_uri=REDIRECT, authorize=world.authorize)
            async with open_asyncio_http_client(world.mcp_url, auth=options) as c:
                result = await c.call_tool("x")
                assert result.content[0].text == "tok-1"  # type: ignore[union-attr]

        asyncio.run(asyncio.wait_for(client(), TIMEOUT))
    finally:
        if "stop" in held:
            trio.from_thread.run_sync(held["stop"].set, trio_token=held["token"])
        thread.join(TIMEOUT)
    assert world.registered == 1
    assert held["mcp"].requests[-1].headers["authorization"] == "Bearer tok-1"


class _Signer:
    """A JwtSigner test double: an unsigned JWS (the fake servers read claims only)."""

    def sign(self, claims: dict[str, Any], *, typ: str | None = None, jwk: bool = False) -> str:
        def b64(doc: dict[str, Any]) -> str:
            return base64.urlsafe_b64encode(json.dumps(doc).encode()).rstrip(b"=").decode()

        return f"{b64({'alg': 'ES256', 'typ': typ, 'jwk': jwk})}.{b64(claims)}.c2ln"


def _claims(proof: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(base64.urlsafe_b64decode(proof.split(".")[1] + "=="))
    return result


class DpopWorld(World):
    """The MCP server wants ``Authorization: DPoP`` with a proof carrying its nonce."""

    def __init__(self) -> None:
        super().__init__()
        self.proofs: list[dict[str, Any]] = []

    def new_token(self) -> dict[str, Any]:
        return {**super().new_token(), "token_type": "DPoP"}

    async def mcp(self, req: Req, reply: Reply) -> None:
        auth = req.headers.get("authorization", "")
        if req.target.startswith("/.well-known") or not auth.startswith("DPoP "):
            await super().mcp(req, reply)
            return
        claims = _claims(req.headers["dpop"])
        self.proofs.append(claims)
        if claims.get("nonce") != "rs-nonce":
            challenge = 'DPoP error="use_dpop_nonce"'
            await reply.status(401, b"{}", www_authenticate=challenge, dpop_nonce="rs-nonce")
            return
        digest = hashlib.sha256(auth[5:].encode()).digest()
        assert claims["ath"] == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
        assert claims["htu"] == self.mcp_url and claims["htm"] == req.method
        if not await _standard(req, reply):
            await reply.json(text_result(req.json["id"], auth[5:]))


async def test_a_dpop_token_goes_with_a_fresh_proof_and_the_servers_nonce() -> None:
    world = DpopWorld()
    with trio.fail_after(TIMEOUT):
        async with (
            fake_server(world.mcp) as (mcp_url, mcp),
            fake_server(world.auth_server) as (as_url, _),
        ):
            world.mcp_url, world.as_url = mcp_url, as_url.removesuffix("/mcp")
            options = OAuthClientOptions(
                redirect_uri=REDIRECT, authorize=world.authorize, dpop=_Signer()
            )
            async with open_http_client(mcp_url, auth=options) as client:
                result = await client.call_tool("x")
                assert result.content[0].text == "tok-1"  # type: ignore[union-attr]
            # One refusal for the nonce, then every proof carries it; no second sign-in.
            assert world.proofs[0].get("nonce") is None and world.issued == 1
            assert all(p["nonce"] == "rs-nonce" for p in world.proofs[1:])
            jtis = [p["jti"] for p in world.proofs]
            assert len(set(jtis)) == len(jtis) > 2
            schemes = {
                r.headers["authorization"][:5]
                for r in mcp.requests[1:]
                if r.headers.get("authorization")
            }
            assert schemes == {"DPoP "}  # never as a bearer token

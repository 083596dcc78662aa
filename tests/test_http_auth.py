"""The trio HTTP server as an OAuth 2.1 protected resource (``serve_http(auth=...)``),
over loopback with the raw h11 client: the metadata it serves, the refusals it gives
(401, 403, 400, 503) before a request reaches a session, and who is calling as the
handlers see it (``ctx.auth``, ``ctx.http_headers``).

Tokens are checked by a table verifier, and by the JWT verifier against a JWKS served
in-test on another loopback port (keys made with joserfc).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import h11
import pytest
import trio

from mcp_ref._http_auth import ResourceAuth
from mcp_ref._oauth_resource import ResourceConfig, ScopePolicy
from mcp_ref._oauth_verify import Identity, TokenRejected
from mcp_ref.client import connect_in_memory
from mcp_ref.server import Context, Server
from mcp_ref.trio.http.server import open_http_server

from ._http_raw import RawConnection, init_body, notification_body, request_body

spec = pytest.mark.spec
TIMEOUT = 10
A = "2025-11-25/basic/authorization#"
A6 = "2025-06-18/basic/authorization#"
RESOURCE = "https://mcp.example.com/mcp"
ISSUER = "https://auth.example.com"
METADATA_URL = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"


class TableVerifier:
    """Tokens from a table: the token's Identity, else rejected.  Counts its calls."""

    def __init__(self, table: dict[str, Identity]) -> None:
        self.table = table
        self.calls = 0

    def verify(self, token: str, *, now: float) -> Identity | TokenRejected:
        self.calls += 1
        found = self.table.get(token)
        return found if found is not None else TokenRejected(reason="unknown token")


def identity(*scopes: str, sub: str = "alice", aud: str = RESOURCE, exp: float | None = None):
    return Identity(
        subject=sub,
        client_id="app",
        scopes=frozenset(scopes),
        expires_at=time.time() + 600 if exp is None else exp,
        audience=(aud,),
        issuer=ISSUER,
    )


TOKENS = {
    "good": identity("mcp"),
    "admin": identity("mcp", "admin", sub="root"),
    "stepped-up": identity("mcp", "admin"),  # alice again, with more scopes
    "expired": identity("mcp", exp=1000.0),
    "elsewhere": identity("mcp", aud="https://other.example.com/mcp"),
}

POLICY = ScopePolicy(
    always=frozenset({"mcp"}), per_operation={"tools/call:wipe": frozenset({"admin"})}
)


def config(**kw: Any) -> ResourceConfig:
    return ResourceConfig(
        resource=RESOURCE,
        authorization_servers=(ISSUER,),
        scopes_supported=("mcp", "admin"),
        policy=POLICY,
        **kw,
    )


def make_server(seen: list[Any]) -> Server:
    server = Server("auth-test", "1.0")

    @server.tool()
    async def whoami(ctx: Context) -> str:
        seen.append((ctx.auth, ctx.http_headers))
        who = ctx.auth
        return "anonymous" if who is None else f"{who.subject} {' '.join(sorted(who.scopes))}"

    @server.tool()
    async def wipe() -> str:
        return "wiped"

    return server


@asynccontextmanager
async def serving(verifier: Any, seen: list[Any] | None = None, **kw: Any) -> AsyncIterator[int]:
    auth = None if verifier is None else ResourceAuth(config=config(), verifier=verifier)
    server = make_server([] if seen is None else seen)
    async with open_http_server(server, json_response=True, auth=auth, **kw) as info:
        yield info.port


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def start(port: int, token: str | None) -> tuple[RawConnection, str]:
    """A connection and an initialized session, signed in with ``token``."""
    conn = await RawConnection.open(port)
    headers = bearer(token) if token else {}
    ans = await conn.request("POST", body=init_body(), headers=headers)
    assert ans.status == 200, (ans.status, await ans.body())
    await ans.body()
    sid = ans.session_id
    assert sid is not None
    ans = await conn.request(
        "POST",
        body=notification_body("notifications/initialized"),
        session_id=sid,
        version="2025-11-25",
        headers=headers,
    )
    assert ans.status == 202
    await ans.body()
    return conn, sid


def challenge_params(value: str) -> dict[str, str]:
    assert value.startswith("Bearer ")
    out = {}
    for part in value[len("Bearer ") :].split(", "):
        k, _, v = part.partition("=")
        out[k] = v.strip('"')
    return out


# -- the metadata ------------------------------------------------------------------------


@spec(
    A + "authorization-server-location.1",
    A6 + "overview.3",
    "2026-07-28/basic/authorization/index#overview.4",
    A6 + "authorization-server-location.1",
    "2026-07-28/basic/authorization/authorization-server-discovery#authorization-server-location.1",
    A6 + "authorization-server-location.2",
    "2026-07-28/basic/authorization/authorization-server-discovery#authorization-server-location.2",
)
async def test_the_metadata_is_served_at_both_well_known_paths_without_a_token() -> None:
    with trio.fail_after(TIMEOUT):
        async with serving(TableVerifier(TOKENS)) as port:
            conn = await RawConnection.open(port)
            # one keep-alive connection: each answer leaves it usable
            for path in (
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource",
            ):
                ans = await conn.request("GET", path, accept="application/json")
                assert ans.status == 200
                assert ans.headers["access-control-allow-origin"] == "*"
                doc = await ans.json()
                assert doc["resource"] == RESOURCE
                assert doc["authorization_servers"] == [ISSUER]
                assert doc["bearer_methods_supported"] == ["header"]
            ans = await conn.request("HEAD", "/.well-known/oauth-protected-resource/mcp")
            assert ans.status == 200 and int(ans.headers["content-length"]) > 0
            assert await ans.body() == b""
            ans = await conn.request("POST", "/.well-known/oauth-protected-resource/mcp")
            assert ans.status == 405
            await conn.aclose()


async def test_without_auth_there_is_no_metadata() -> None:
    with trio.fail_after(TIMEOUT):
        async with serving(None) as port:
            conn = await RawConnection.open(port)
            ans = await conn.request("GET", "/.well-known/oauth-protected-resource/mcp")
            assert ans.status == 404
            await conn.aclose()


# -- refusals ----------------------------------------------------------------------------


@spec(
    A6 + "authorization-server-location.3",
    "2025-03-26/basic/authorization#example-authorization-code-grant.1",
    A6 + "access-token-privilege-restriction.1",
    "2026-07-28/basic/authorization/security-considerations#access-token-privilege-restriction.1",
    A + "protected-resource-metadata-discovery-requirements.1",
    "2026-07-28/basic/authorization/authorization-server-discovery#protected-resource-metadata-discovery-requirements.1",
)
async def test_a_request_without_a_token_gets_401_and_never_reaches_a_session() -> None:
    verifier = TableVerifier(TOKENS)
    with trio.fail_after(TIMEOUT):
        async with serving(verifier) as port:
            conn = await RawConnection.open(port)
            ans = await conn.request("POST", body=init_body())
            assert ans.status == 401
            assert ans.session_id is None
            params = challenge_params(ans.headers["www-authenticate"])
            assert params["resource_metadata"] == METADATA_URL
            assert params["scope"] == "mcp"
            assert "error" not in params
            await ans.body()
            # another scheme is no token either
            ans = await conn.request(
                "POST", body=init_body(), headers={"authorization": "Basic eDp5"}
            )
            assert ans.status == 401
            await ans.body()
            await conn.aclose()
    assert verifier.calls == 0


@spec(
    A + "token-handling.4",
    A + "token-handling.6",
    "2026-07-28/basic/authorization/index#token-handling.6",
    A6 + "token-handling.1",
    "2025-06-18/basic/authorization#access-token-privilege-restriction.2",
    "2025-03-26/basic/authorization#token-handling.1",
    "2025-11-25/basic/authorization#access-token-privilege-restriction.2",
    "2026-07-28/basic/authorization/index#token-handling.1",
    "2026-07-28/basic/authorization/security-considerations#access-token-privilege-restriction.2",
    A6 + "token-handling.2",
    "2026-07-28/basic/authorization/index#token-handling.2",
    A6 + "token-handling.3",
    "2025-03-26/basic/authorization#token-handling.2",
    "2026-07-28/basic/authorization/index#token-handling.3",
    A6 + "token-handling.4",
    "2025-03-26/basic/authorization#token-handling.3",
    "2026-07-28/basic/authorization/index#token-handling.4",
    A6 + "token-handling.6",
    A6 + "token-handling.7",
    "2026-07-28/basic/authorization/index#token-handling.7",
    A6 + "token-audience-binding-and-validation.2",
    "2026-07-28/basic/authorization/security-considerations#token-audience-binding-and-validation.2",
    A6 + "access-token-privilege-restriction.3",
    "2026-07-28/basic/authorization/security-considerations#access-token-privilege-restriction.3",
    A6 + "error-handling.1",
    "2025-03-26/basic/authorization#error-handling.1",
    "2026-07-28/basic/authorization/index#error-handling.1",
)
async def test_unknown_expired_and_foreign_tokens_get_401_invalid_token() -> None:
    with trio.fail_after(TIMEOUT):
        async with serving(TableVerifier(TOKENS)) as port:
            conn = await RawConnection.open(port)
            for token in ("forged", "expired", "elsewhere"):
                ans = await conn.request("POST", body=init_body(), headers=bearer(token))
                assert ans.status == 401, token
                params = challenge_params(ans.headers["www-authenticate"])
                assert params["error"] == "invalid_token"
                assert params["resource_metadata"] == METADATA_URL
                assert (await ans.json())["error"] == "invalid_token"
            await conn.aclose()


@spec(
    A + "token-requirements.4",
    A6 + "token-requirements.4",
    "2025-03-26/basic/authorization#token-requirements.4",
    "2026-07-28/basic/authorization/index#token-requirements.4",
)
async def test_a_token_in_the_query_string_is_refused_even_with_a_good_header() -> None:
    with trio.fail_after(TIMEOUT):
        async with serving(TableVerifier(TOKENS)) as port:
            conn = await RawConnection.open(port)
            ans = await conn.request(
                "POST", "/mcp?access_token=good", body=init_body(), headers=bearer("good")
            )
            assert ans.status == 400
            assert (await ans.json())["error"] == "invalid_request"
            await conn.aclose()


@spec(A + "runtime-insufficient-scope-errors.2")
async def test_a_tool_that_needs_a_scope_the_token_lacks_gets_403_then_passes_after_step_up() -> (
    None
):
    with trio.fail_after(TIMEOUT):
        async with serving(TableVerifier(TOKENS)) as port:
            conn, sid = await start(port, "good")
            call = request_body(2, "tools/call", {"name": "wipe", "arguments": {}})
            kw: dict[str, Any] = {"session_id": sid, "version": "2025-11-25"}
            ans = await conn.request("POST", body=call, headers=bearer("good"), **kw)
            assert ans.status == 403
            params = challenge_params(ans.headers["www-authenticate"])
            assert params["error"] == "insufficient_scope"
            assert set(params["scope"].split()) == {"mcp", "admin"}
            await ans.body()
            # other tools need no more than the token has
            ok = request_body(3, "tools/call", {"name": "whoami", "arguments": {}})
            ans = await conn.request("POST", body=ok, headers=bearer("good"), **kw)
            assert ans.status == 200
            await ans.body()
            # the same session, a token with more scopes: each request is checked afresh
            ans = await conn.request("POST", body=call, headers=bearer("stepped-up"), **kw)
            assert ans.status == 200
            assert (await ans.json())["result"]["content"][0]["text"] == "wiped"
            await conn.aclose()


@spec(
    "2025-06-18/basic/security_best_practices#mitigation-2.1",
    "2025-06-18/basic/transports#security-warning.3",
)
async def test_get_delete_and_the_2024_endpoints_are_checked_too() -> None:
    with trio.fail_after(TIMEOUT):
        async with serving(TableVerifier(TOKENS)) as port:
            conn, sid = await start(port, "good")
            kw: dict[str, Any] = {"session_id": sid, "version": "2025-11-25"}
            for method, path in (("GET", "/mcp"), ("DELETE", "/mcp"), ("GET", "/sse")):
                ans = await conn.request(method, path, **kw)
                assert ans.status == 401, (method, path)
                await ans.body()
            # a session is no credential: the next POST without a token is refused
            ping = request_body(9, "ping")
            ans = await conn.request("POST", body=ping, **kw)
            assert ans.status == 401
            await ans.body()
            ans = await conn.request("DELETE", headers=bearer("good"), **kw)
            assert ans.status == 200
            await conn.aclose()


@spec("2025-06-18/basic/security_best_practices#mitigation-2.5")
async def test_a_session_answers_only_the_caller_who_opened_it() -> None:
    bob = {**TOKENS, "bob": identity("mcp", "admin", sub="bob")}
    with trio.fail_after(TIMEOUT):
        async with serving(TableVerifier(bob)) as port:
            conn, sid = await start(port, "good")  # alice's
            kw: dict[str, Any] = {"session_id": sid, "version": "2025-11-25"}
            call = request_body(2, "tools/call", {"name": "whoami", "arguments": {}})
            for method, body in (("POST", call), ("GET", b""), ("DELETE", b"")):
                ans = await conn.request(method, body=body, headers=bearer("bob"), **kw)
                assert ans.status == 404, method  # as for a session that does not exist
                await ans.body()
            ans = await conn.request("POST", body=call, headers=bearer("good"), **kw)
            assert ans.status == 200
            assert (await ans.json())["result"]["content"][0]["text"] == "alice mcp"
            await conn.aclose()


async def test_an_unreachable_verifier_gives_503() -> None:
    from mcp_ref._oauth_verify import IntrospectionVerifier

    # a loopback port nobody listens on: the fetch fails at once
    with trio.socket.socket() as sock:
        await sock.bind(("127.0.0.1", 0))
        dead = sock.getsockname()[1]
    verifier = IntrospectionVerifier(
        resource=RESOURCE,
        endpoint=f"http://127.0.0.1:{dead}/introspect",
        client_id="mcp",
        client_secret="s3cret",
    )
    with trio.fail_after(TIMEOUT):
        async with serving(verifier) as port:
            conn = await RawConnection.open(port)
            ans = await conn.request("POST", body=init_body(), headers=bearer("good"))
            assert ans.status == 503
            await conn.aclose()


# -- who is calling ----------------------------------------------------------------------


@spec(
    A + "access-token-privilege-restriction.4",
    A6 + "access-token-privilege-restriction.4",
    "2026-07-28/basic/authorization/security-considerations#access-token-privilege-restriction.4",
)
async def test_the_handler_sees_the_identity_and_the_headers_but_not_the_token() -> None:
    seen: list[Any] = []
    with trio.fail_after(TIMEOUT):
        async with serving(TableVerifier(TOKENS), seen) as port:
            conn, sid = await start(port, "admin")
            call = request_body(2, "tools/call", {"name": "whoami", "arguments": {}})
            ans = await conn.request(
                "POST",
                body=call,
                session_id=sid,
                version="2025-11-25",
                headers={**bearer("admin"), "x-trace": "t-1", "X-Multi": "a"},
            )
            assert ans.status == 200
            assert (await ans.json())["result"]["content"][0]["text"] == "root admin mcp"
            await conn.aclose()
    who, headers = seen[0]
    assert who.subject == "root" and who.client_id == "app" and who.audience == (RESOURCE,)
    assert headers["x-trace"] == "t-1" and headers["X-TRACE"] == "t-1"
    assert headers.get_all("x-multi") == ["a"]
    assert "authorization" not in headers
    assert all("admin" not in v for v in headers.values())
    with pytest.raises(TypeError):
        headers["x-trace"] = "changed"  # type: ignore[index]


async def test_each_request_of_a_session_is_seen_with_its_own_token() -> None:
    seen: list[Any] = []
    with trio.fail_after(TIMEOUT):
        async with serving(TableVerifier(TOKENS), seen) as port:
            conn, sid = await start(port, "good")
            kw: dict[str, Any] = {"session_id": sid, "version": "2025-11-25"}
            for rid, token in ((2, "stepped-up"), (3, "good"), (4, "stepped-up")):
                call = request_body(rid, "tools/call", {"name": "whoami", "arguments": {}})
                ans = await conn.request("POST", body=call, headers=bearer(token), **kw)
                assert ans.status == 200
                await ans.body()
            await conn.aclose()
    assert [len(who.scopes) for who, _ in seen] == [2, 1, 2]


async def test_without_auth_the_handler_sees_the_headers_and_no_identity() -> None:
    seen: list[Any] = []
    with trio.fail_after(TIMEOUT):
        async with serving(None, seen) as port:
            conn, sid = await start(port, None)
            call = request_body(2, "tools/call", {"name": "whoami", "arguments": {}})
            ans = await conn.request(
                "POST", body=call, session_id=sid, version="2025-11-25", headers={"x-app": "1"}
            )
            assert (await ans.json())["result"]["content"][0]["text"] == "anonymous"
            await conn.aclose()
    assert seen[0][0] is None and seen[0][1]["x-app"] == "1"


async def test_off_http_there_is_no_caller() -> None:
    seen: list[Any] = []
    with trio.fail_after(TIMEOUT):
        async with connect_in_memory(make_server(seen)) as client:
            await client.call_tool("whoami", {})
    assert seen == [(None, None)]


# -- the JWT verifier against a JWKS served in-test --------------------------------------

joserfc = pytest.importorskip("joserfc")
from joserfc import jwk, jws  # noqa: E402

from mcp_ref._oauth_verify_jwt import JwtVerifier  # noqa: E402

KEY = jwk.RSAKey.generate_key(2048, parameters={"kid": "k1"})
STRANGER = jwk.RSAKey.generate_key(2048, parameters={"kid": "k1"})


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt_claims(**extra: Any) -> dict[str, Any]:
    now = int(time.time())
    base = {"iss": ISSUER, "aud": RESOURCE, "sub": "carol", "client_id": "app"}
    base |= {"scope": "mcp", "exp": now + 600, "iat": now}
    return {k: v for k, v in (base | extra).items() if v is not None}


def mint(key: Any = KEY, **extra: Any) -> str:
    head = {"alg": "RS256", "typ": "at+jwt", "kid": key.kid}
    return jws.serialize_compact(head, json.dumps(jwt_claims(**extra)).encode(), key)


def unsigned(alg: str, secret: bytes | None = None) -> str:
    head = b64(json.dumps({"alg": alg, "kid": "k1"}).encode())
    body = b64(json.dumps(jwt_claims()).encode())
    if secret is None:
        return f"{head}.{body}."
    mac = hmac.new(secret, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64(mac)}"


async def serve_json(
    doc: Any, hits: list[Any], task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    """A one-document HTTP server on loopback (each connection: one request, one
    answer); ``hits`` gets each request's target (and its headers and body, for a
    POST)."""
    body = json.dumps(doc).encode()

    async def one(stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await stream.receive_some(65536))
                continue
            if isinstance(event, h11.Request) and event.method == b"POST":
                head = {k.decode(): v.decode() for k, v in event.headers}
                got = b""
                while not isinstance(ev := conn.next_event(), h11.EndOfMessage):
                    if ev is h11.NEED_DATA:
                        conn.receive_data(await stream.receive_some(65536))
                    elif isinstance(ev, h11.Data):
                        got += ev.data
                hits.append((event.target.decode(), head, got))
                event = None
            elif isinstance(event, h11.Request):
                hits.append(event.target.decode())
                event = None
            if event is None:
                headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
                data = conn.send(h11.Response(status_code=200, headers=headers))
                await stream.send_all(
                    data + conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage())
                )
                await stream.aclose()
                return

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    task_status.started(listeners[0].socket.getsockname()[1])
    await trio.serve_listeners(one, listeners)


class WatchedJwtVerifier(JwtVerifier):
    """A JwtVerifier that says when it took keys."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.got_keys = trio.Event()

    def receive_jwks(self, response: Any, *, now: float) -> bool:
        took = super().receive_jwks(response, now=now)
        if took:
            self.got_keys.set()
        return took


@pytest.mark.filterwarnings("ignore::joserfc.errors.SecurityWarning")
@spec(A + "token-handling.2", A + "token-handling.4")
async def test_jwt_tokens_checked_against_a_jwks_fetched_from_the_authorization_server() -> None:
    hits: list[str] = []
    public = {"keys": [KEY.as_dict(private=False)]}
    now = int(time.time())
    cases: list[tuple[str, str | Callable[[], str], int]] = [
        ("valid", lambda: mint(), 200),
        ("expired", lambda: mint(exp=now - 3600, iat=now - 7200), 401),
        ("wrong audience", lambda: mint(aud="https://other.example.com/mcp"), 401),
        ("wrong issuer", lambda: mint(iss="https://evil.example.com"), 401),
        ("alg none", lambda: unsigned("none"), 401),
        ("key confusion", lambda: unsigned("HS256", KEY.as_pem(private=False)), 401),
        ("another key, same kid", lambda: mint(STRANGER), 401),
    ]
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            jwks_port = await nursery.start(serve_json, public, hits)
            verifier = WatchedJwtVerifier(
                resource=RESOURCE,
                issuer=ISSUER,
                jwks_url=f"http://127.0.0.1:{jwks_port}/jwks.json",
                refetch_seconds=3600,
            )
            async with serving(verifier) as port:
                await verifier.got_keys.wait()  # fetched at start-up, before any request
                conn = await RawConnection.open(port)
                for name, make, status in cases:
                    token = make() if callable(make) else make
                    ans = await conn.request("POST", body=init_body(), headers=bearer(token))
                    assert ans.status == status, name
                    if status == 401:
                        params = challenge_params(ans.headers["www-authenticate"])
                        assert params["error"] == "invalid_token", name
                    await ans.body()
                await conn.aclose()
            nursery.cancel_scope.cancel()
    # fetched once, at start-up, by the verifier itself: no request fetched them again,
    # and the callers' tokens never left the server
    assert hits == ["/jwks.json"]


@spec(A + "access-token-privilege-restriction.4")
async def test_introspection_asks_the_authorization_server_as_the_resource_itself() -> None:
    hits: list[Any] = []
    answer = {"active": True, "aud": RESOURCE, "sub": "dave", "scope": "mcp", "client_id": "app"}
    answer["exp"] = int(time.time()) + 600
    from mcp_ref._oauth_verify import IntrospectionVerifier

    seen: list[Any] = []
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            as_port = await nursery.start(serve_json, answer, hits)
            verifier = IntrospectionVerifier(
                endpoint=f"http://127.0.0.1:{as_port}/introspect",
                resource=RESOURCE,
                client_id="mcp-server",
                client_secret="s3cret",
            )
            async with serving(verifier, seen) as port:
                conn, sid = await start(port, "opaque-token")
                call = request_body(2, "tools/call", {"name": "whoami", "arguments": {}})
                ans = await conn.request(
                    "POST",
                    body=call,
                    session_id=sid,
                    version="2025-11-25",
                    headers=bearer("opaque-token"),
                )
                assert (await ans.json())["result"]["content"][0]["text"] == "dave mcp"
                await conn.aclose()
            nursery.cancel_scope.cancel()
    assert len(hits) == 3  # every request is introspected: initialize, initialized, the call
    target, headers, body = hits[0]
    assert target == "/introspect"
    # the server authenticates as itself; the caller's token is only the thing asked about
    expected = "Basic " + base64.b64encode(b"mcp-server:s3cret").decode()
    assert headers["authorization"] == expected
    assert b"token=opaque-token" in body
    assert seen[0][0].subject == "dave"


async def test_a_body_queued_for_the_sessions_reader_carries_its_caller() -> None:
    from mcp_ref._http import HttpLimits
    from mcp_ref._http_auth import CALLER, Caller
    from mcp_ref.trio.http.sessions import HttpSession

    sess = HttpSession("s", kind="streamable", limits=HttpLimits(), on_end=lambda _: None)
    caller = Caller(TOKENS["good"], [(b"x-n", b"1")])
    got: list[Any] = []

    async def reader() -> None:  # a task of its own, as the session's reader is
        got.append((await sess.receive(), CALLER.get()))

    with trio.fail_after(TIMEOUT):
        CALLER.set(caller)
        assert await sess.deliver(b"{}")  # no session runs yet: the body is queued
        assert sess.queued == 1  # (so the book never evicts it)
        CALLER.set(None)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader)
    assert got == [(b"{}", caller)] and sess.queued == 0


async def test_the_access_log_names_metadata_answers_and_refusals(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level("INFO", logger="mcp_ref.access")
    with trio.fail_after(TIMEOUT):
        async with serving(TableVerifier(TOKENS), access_log=True) as port:
            conn = await RawConnection.open(port)
            ans = await conn.request("GET", "/.well-known/oauth-protected-resource/mcp")
            await ans.body()
            ans = await conn.request("POST", body=init_body())
            assert ans.status == 401
            await ans.body()
            await conn.aclose()
    lines = [r.getMessage() for r in caplog.records if r.name == "mcp_ref.access"]
    assert any('"GET /.well-known/oauth-protected-resource/mcp" 200' in line for line in lines)
    assert any('"POST /mcp" 401' in line for line in lines), lines

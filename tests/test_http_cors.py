"""CORS on the Streamable HTTP server (issue 17: ``--cors ORIGIN``), through the real
trio server on a loopback socket and through the ASGI application: preflight answers,
the headers that let browser JavaScript read ``Mcp-Session-Id`` and
``MCP-Protocol-Version``, and the ``Origin`` check that CORS never loosens."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from mcp_ref._http_cors import EXPOSED_HEADERS, preflight, with_cors_origins
from mcp_ref.asgi import asgi_app
from mcp_ref.server import Server
from mcp_ref.trio.http.server import open_http_server
from tests._http_raw import RawConnection, init_body
from tests.test_asgi import ACCEPT, JSON, initialize, make_server, request

T = "2025-06-18/basic/transports#"
APP = "https://app.example"
EVIL = "https://evil.example"


def preflight_headers(origin: str) -> dict[str, str]:
    return {
        "origin": origin,
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type, mcp-session-id",
    }


async def answer_of(port: int, method: str, **kw: Any) -> tuple[int, dict[str, str], bytes]:
    conn = await RawConnection.open(port)
    try:
        ans = await conn.request(method, **kw)
        return ans.status, ans.headers, await ans.body()
    finally:
        await conn.aclose()


def tiny_server() -> Server:
    server = Server("cors-test", "1")

    @server.tool()
    def echo(text: str) -> str:
        return text

    return server


async def test_without_cors_options_is_405() -> None:
    with trio.fail_after(10):
        async with open_http_server(tiny_server()) as info:
            status, headers, _ = await answer_of(
                info.port, "OPTIONS", headers=preflight_headers(APP)
            )
            assert status == 403  # not an allowed origin either
            status, headers, _ = await answer_of(
                info.port, "OPTIONS", headers=preflight_headers("http://localhost:5173")
            )
            assert status == 405
            assert "access-control-allow-origin" not in headers


async def test_preflight_from_a_cors_origin_is_204_with_the_allow_headers() -> None:
    with trio.fail_after(10):
        async with open_http_server(tiny_server(), cors_origins=[APP]) as info:
            status, headers, body = await answer_of(
                info.port, "OPTIONS", headers=preflight_headers(APP)
            )
            assert status == 204 and body == b""
            assert headers["access-control-allow-origin"] == APP
            assert "POST" in headers["access-control-allow-methods"]
            assert headers["access-control-allow-headers"] == "content-type, mcp-session-id"
            assert headers["vary"] == "origin"
            assert "content-length" not in headers
            # Another path is no MCP endpoint: 404, preflight or not.
            status, _, _ = await answer_of(
                info.port, "OPTIONS", target="/elsewhere", headers=preflight_headers(APP)
            )
            assert status == 404


@pytest.mark.spec(T + "security-warning.1")
async def test_cors_never_loosens_the_origin_check() -> None:
    with trio.fail_after(10):
        async with open_http_server(tiny_server(), cors_origins=[APP, "*"]) as info:
            for method in ("OPTIONS", "POST"):
                body = init_body() if method == "POST" else b""
                status, headers, _ = await answer_of(
                    info.port, method, body=body, headers=preflight_headers(EVIL)
                )
                assert status == 403
                assert "access-control-allow-origin" not in headers
            # "*" gives CORS headers to the origins allowed anyway (loopback here).
            local = "http://localhost:5173"
            status, headers, _ = await answer_of(
                info.port, "OPTIONS", headers=preflight_headers(local)
            )
            assert status == 204 and headers["access-control-allow-origin"] == local


async def test_answers_to_a_cors_origin_expose_the_session_headers() -> None:
    with trio.fail_after(10):
        async with open_http_server(tiny_server(), cors_origins=[APP]) as info:
            status, headers, _ = await answer_of(
                info.port, "POST", body=init_body(), headers={"origin": APP}
            )
            assert status == 200
            assert headers["access-control-allow-origin"] == APP
            exposed = headers["access-control-expose-headers"]
            assert "mcp-session-id" in exposed and "mcp-protocol-version" in exposed
            assert "mcp-session-id" in headers
            # A refusal is readable too (here: an unknown session, 404).
            status, headers, _ = await answer_of(
                info.port,
                "GET",
                session_id="ab" * 16,
                version="2025-11-25",
                headers={"origin": APP},
            )
            assert status == 404
            assert headers["access-control-allow-origin"] == APP
            # An allowed origin that is not a CORS origin gets no CORS headers.
            status, headers, _ = await answer_of(
                info.port, "POST", body=init_body(), headers={"origin": "http://localhost:1"}
            )
            assert status == 200
            assert "access-control-allow-origin" not in headers


async def test_asgi_preflight_and_headers() -> None:
    with trio.fail_after(10):
        app = asgi_app(make_server(), cors_origins=[APP])
        origin = (b"origin", APP.encode())
        ex = await request(app, "OPTIONS", "/mcp", headers=[origin])
        assert ex.status == 204
        assert ex.headers[b"access-control-allow-origin"] == APP.encode()
        assert b"access-control-allow-methods" in ex.headers
        ex = await request(app, "POST", "/mcp", headers=[ACCEPT, JSON, origin], body=initialize())
        assert ex.status == 200
        assert ex.headers[b"access-control-allow-origin"] == APP.encode()
        assert ex.headers[b"access-control-expose-headers"] == EXPOSED_HEADERS
        evil = (b"origin", EVIL.encode())
        ex = await request(app, "OPTIONS", "/mcp", headers=[evil])
        assert ex.status == 403
        assert b"access-control-allow-origin" not in ex.headers


def test_core_cors_origins_add_to_the_allowed_ones_only() -> None:
    assert with_cors_origins(("http://a",), ["http://a", APP, "*"]) == ("http://a", APP)
    allowed = ["http://a", APP]
    assert preflight([(b"origin", EVIL.encode())], [APP], allowed) is None
    assert preflight([(b"origin", EVIL.encode())], ["*"], allowed) is None
    assert preflight([], [APP], allowed) is None  # no Origin: no preflight
    got = preflight([(b"origin", APP.encode())], ["*"], allowed)
    assert got is not None and got.status == 204

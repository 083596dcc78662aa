"""mcp-ref on both sides of a real sign-in: our HTTP client (``auth=OAuthClientOptions``)
against our protected server (``serve_http(auth=...)``, JWT tokens checked against the
JWKS), with Authlib's authorization server between them (``tests/interop/authlib_as.py``;
the official SDK's client takes the same path in
``tests/interop/test_python_sdk_oauth.py``)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import trio

pytest.importorskip("authlib")
pytest.importorskip("joserfc")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # Authlib's own

from mcp_ref.client import OAuthClientOptions, open_http_client  # noqa: E402
from mcp_ref.trio import open_http_server  # noqa: E402

from ._http_raw import RawConnection  # noqa: E402
from .interop.authlib_as import AuthServer, serve  # noqa: E402
from .interop.test_python_sdk_oauth import free_port, make_server, protected  # noqa: E402

spec = pytest.mark.spec
TIMEOUT = 20


@spec("2025-11-25/basic/authorization#runtime-insufficient-scope-errors.2")
async def test_our_client_signs_in_through_authlib_to_our_server_and_steps_up() -> None:
    seen: list[Any] = []
    asked: list[str] = []

    async def browser(url: str) -> str:
        """The resource owner approves: follow the authorization URL to its redirect."""
        asked.append(url)
        parts = urlsplit(url)
        assert parts.port is not None
        conn = await RawConnection.open(parts.port)
        ans = await conn.request("GET", f"{parts.path}?{parts.query}", accept="")
        await ans.body()
        await conn.aclose()
        assert ans.status == 302, ans.status
        return ans.headers["location"]

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            issuer_server: AuthServer = await nursery.start(serve, AuthServer)
            issuer = issuer_server.issuer
            port = free_port()
            auth = protected(issuer, port)
            resource = auth.config.resource
            options = OAuthClientOptions(
                redirect_uri="http://127.0.0.1:9/callback", authorize=browser
            )
            async with (
                open_http_server(make_server(seen), port=port, auth=auth) as info,
                open_http_client(info.url, auth=options) as client,
            ):
                who = await client.call_tool("whoami", {})
                assert who.content[0].text == "alice mcp"  # type: ignore[union-attr]
                wiped = await client.call_tool("wipe", {})
                assert wiped.content[0].text == "wiped"  # type: ignore[union-attr]
            nursery.cancel_scope.cancel()
    first, second = (parse_qs(urlsplit(u).query) for u in asked)
    assert first["resource"] == second["resource"] == [resource]
    assert set(second["scope"][0].split()) >= {"mcp", "admin"}
    assert [w.subject for w in seen] == ["alice", "alice"]
    assert seen[1].scopes >= {"mcp", "admin"}

"""mcp_ref.asgi as an OAuth 2.1 protected resource (``asgi_app(auth=...)``): the same
metadata, refusals and caller as the trio server (tests/test_http_auth.py), through the
in-process ASGI harness of tests/test_asgi.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from mcp_ref._http_auth import ResourceAuth
from mcp_ref.asgi import asgi_app

from .test_asgi import ACCEPT, INITIALIZED, JSON, VERSION, initialize, request, running
from .test_http_auth import METADATA_URL, RESOURCE, TOKENS, TableVerifier, config, make_server

spec = pytest.mark.spec
TIMEOUT = 10


def bearer(token: str) -> tuple[bytes, bytes]:
    return (b"authorization", f"Bearer {token}".encode())


@spec("2025-11-25/basic/authorization#authorization-server-location.1")
async def test_asgi_serves_the_metadata_refuses_without_a_token_and_tells_the_handler() -> None:
    seen: list[Any] = []
    auth = ResourceAuth(config=config(), verifier=TableVerifier(TOKENS))
    app = asgi_app(make_server(seen), json_response=True, auth=auth)
    with trio.fail_after(TIMEOUT):
        async with running(app):
            ex = await request(app, "GET", "/.well-known/oauth-protected-resource/mcp")
            assert ex.status == 200
            assert json.loads(ex.body)["resource"] == RESOURCE
            ex = await request(app, "POST", "/mcp", headers=[ACCEPT, JSON], body=initialize())
            assert ex.status == 401
            assert f'resource_metadata="{METADATA_URL}"'.encode() in ex.headers[b"www-authenticate"]
            assert b"mcp-session-id" not in ex.headers
            hdrs = [ACCEPT, JSON, bearer("admin")]
            ex = await request(app, "POST", "/mcp", headers=hdrs, body=initialize())
            assert ex.status == 200, ex.body
            sid = (b"mcp-session-id", ex.headers[b"mcp-session-id"])
            ex = await request(app, "POST", "/mcp", headers=[*hdrs, VERSION, sid], body=INITIALIZED)
            assert ex.status == 202
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
            call["params"] = {"name": "whoami", "arguments": {}}
            body = json.dumps(call).encode()
            ex = await request(app, "POST", "/mcp", headers=[*hdrs, VERSION, sid], body=body)
            assert json.loads(ex.body)["result"]["content"][0]["text"] == "root admin mcp"
            ex = await request(app, "POST", "/mcp", headers=[ACCEPT, JSON, VERSION, sid], body=body)
            assert ex.status == 401
    who, headers = seen[0]
    assert who.subject == "root" and "authorization" not in headers

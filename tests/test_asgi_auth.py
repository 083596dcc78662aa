"""mcp_ref.asgi as an OAuth 2.1 protected resource (``asgi_app(auth=...)``): the same
metadata, refusals and caller as the trio server (tests/test_http_auth.py), through the
in-process ASGI harness of tests/test_asgi.py."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import trio

from mcp_ref._http_auth import ResourceAuth
from mcp_ref.asgi import asgi_app

from .test_asgi import ACCEPT, INITIALIZED, JSON, VERSION, Message, initialize, request, running
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


def test_on_asyncio_the_guest_run_checks_tokens_and_tells_the_handler() -> None:
    """The same on an asyncio loop (the sessions run on trio as its guest), the
    metadata answered by the application on asyncio itself."""
    seen: list[Any] = []
    auth = ResourceAuth(config=config(), verifier=TableVerifier(TOKENS))
    app = asgi_app(make_server(seen), json_response=True, auth=auth)

    async def main() -> None:
        lifespan_in: asyncio.Queue[Message] = asyncio.Queue()
        lifespan_out: asyncio.Queue[Message] = asyncio.Queue()
        life = asyncio.create_task(app({"type": "lifespan"}, lifespan_in.get, lifespan_out.put))
        await lifespan_in.put({"type": "lifespan.startup"})
        assert (await lifespan_out.get())["type"] == "lifespan.startup.complete"

        async def call(method: str, path: str, headers: list[Any], body: bytes = b"") -> Any:
            sent: list[Message] = []
            gone = asyncio.Event()
            pieces = [body]

            async def receive() -> Message:
                if pieces:
                    return {"type": "http.request", "body": pieces.pop(), "more_body": False}
                await gone.wait()
                return {"type": "http.disconnect"}

            async def send(message: Message) -> None:
                sent.append(message)

            scope = {
                "type": "http",
                "method": method,
                "path": path,
                "root_path": "",
                "query_string": b"",
                "headers": [(b"host", b"127.0.0.1:8000"), *headers],
                "client": ("127.0.0.1", 1),
            }
            await app(scope, receive, send)
            gone.set()
            heads = {bytes(k): bytes(v) for k, v in sent[0]["headers"]}
            return sent[0]["status"], heads, b"".join(m.get("body", b"") for m in sent[1:])

        status, _, body = await call("GET", "/.well-known/oauth-protected-resource", [])
        assert status == 200 and json.loads(body)["resource"] == RESOURCE
        status, heads, _ = await call("POST", "/mcp", [ACCEPT, JSON], initialize())
        assert status == 401 and b"resource_metadata" in heads[b"www-authenticate"]
        hdrs = [ACCEPT, JSON, bearer("good")]
        status, heads, _ = await call("POST", "/mcp", hdrs, initialize())
        assert status == 200
        hdrs += [VERSION, (b"mcp-session-id", heads[b"mcp-session-id"])]
        status, _, _ = await call("POST", "/mcp", hdrs, INITIALIZED)
        assert status == 202
        ask = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami"}}
        status, _, body = await call("POST", "/mcp", hdrs, json.dumps(ask).encode())
        assert json.loads(body)["result"]["content"][0]["text"] == "alice mcp"
        await lifespan_in.put({"type": "lifespan.shutdown"})
        assert (await lifespan_out.get())["type"] == "lifespan.shutdown.complete"
        await life

    asyncio.run(asyncio.wait_for(main(), TIMEOUT))
    assert seen[0][0].subject == "alice"

"""The 2024-11-05 HTTP+SSE transport: the server's legacy endpoints and the client's
fallback to them.

Source: 2024-11-05/basic/transports "HTTP with SSE";
2025-06-18/basic/transports#backwards-compatibility.
"""

from __future__ import annotations

import json

import pytest
import trio
import trio.testing

from mcp_ref.client import open_client, open_http_client
from mcp_ref.trio.http.client import open_http_channel

from ._http_raw import RawConnection, init_body, notification_body
from .test_transports_http import call, serve

TIMEOUT = 10


async def test_legacy_round_trip_over_raw_http() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            sse = await RawConnection.open(info.port)
            stream = await sse.request("GET", "/sse")
            assert stream.status == 200 and stream.content_type == "text/event-stream"
            endpoint = await stream.event()
            assert endpoint is not None and endpoint.event == "endpoint"
            assert endpoint.data.startswith("/messages?session_id=")
            post = await RawConnection.open(info.port)
            for body in (
                init_body(1, "2024-11-05"),
                notification_body("notifications/initialized"),
            ):
                ans = await post.request("POST", endpoint.data, body=body)
                assert ans.status == 202
                assert await ans.body() == b""
            got = await stream.message()
            assert got is not None and got[1]["result"]["protocolVersion"] == "2024-11-05"
            ans = await post.request("POST", endpoint.data, body=call(2, "echo", {"text": "old"}))
            assert ans.status == 202
            await ans.body()
            ev = await stream.event()
            assert ev is not None and ev.event == "message"
            assert json.loads(ev.data)["result"]["content"][0]["text"] == "old"
            await sse.aclose()  # the SSE connection is the session
            await trio.testing.wait_all_tasks_blocked()
            ans = await post.request("POST", endpoint.data, body=call(3, "echo", {"text": "x"}))
            assert ans.status == 404
            await post.aclose()


async def test_legacy_endpoint_refusals() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            conn = await RawConnection.open(info.port)
            for method, target, status in [
                ("POST", "/messages", 400),
                ("POST", "/messages?session_id=nope", 404),
                ("GET", "/messages", 405),
                ("POST", "/sse", 405),
            ]:
                ans = await conn.request(
                    method, target, body=init_body() if method == "POST" else b""
                )
                assert ans.status == status, (method, target)
                await ans.body()
                if ans.headers.get("connection") == "close":
                    await conn.aclose()
                    conn = await RawConnection.open(info.port)
            ans = await conn.request("GET", "/sse", headers={"origin": "http://evil.example"})
            assert ans.status == 403
            await conn.aclose()
        async with serve(legacy_sse=False) as (info, _):
            conn = await RawConnection.open(info.port)
            ans = await conn.request("GET", "/sse")
            assert ans.status == 404
            await conn.aclose()


@pytest.mark.spec("2025-06-18/basic/transports#sending-messages-to-the-server.6")
async def test_client_falls_back_when_initialize_gets_a_4xx() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            assert info.legacy_sse_url is not None
            async with open_http_channel(info.legacy_sse_url) as channel:
                async with open_client(channel) as client:
                    assert channel.mode == "legacy"
                    result = await client.call_tool("echo", {"text": "fallback"})
                    assert result.content[0].text == "fallback"  # type: ignore[union-attr]
            async with open_http_client(info.legacy_sse_url) as client:
                tools = await client.list_tools()
                assert "echo" in {tool.name for tool in tools}

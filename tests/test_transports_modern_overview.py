"""What every binding does in the 2026-07-28 era, over the trio session on an in-memory
channel (the binding the stdio, WebSocket and HTTP drivers all hand their messages to):
the client's requests and notifications reach the server, the server's responses and
notifications reach the client.  Page: 2026-07-28/basic/transports/index."""

from __future__ import annotations

import pytest
import trio

from mcp_ref import types as t
from mcp_ref.client import open_client
from mcp_ref.server import Context, Server
from mcp_ref.trio import memory_channel_pair

spec = pytest.mark.spec


@spec("2026-07-28/basic/transports/index#messages.2")
async def test_each_direction_carries_its_kinds_of_message() -> None:
    server = Server("binding", "1")
    started, stopped = trio.Event(), trio.Event()

    @server.tool()
    async def chatty(ctx: Context) -> str:
        await ctx.log("info", "working")  # a server notification
        return "done"  # a server response

    @server.tool()
    async def slow(ctx: Context) -> str:
        started.set()
        try:
            await trio.sleep_forever()
        finally:
            stopped.set()  # the client's notifications/cancelled reached it
        return "never"

    logs: list[t.LoggingMessageNotificationParams] = []
    ours, theirs = memory_channel_pair()
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server.serve, theirs)
            async with open_client(ours, era="modern", on_log=logs.append) as client:
                await client.set_logging_level("info")
                result = await client.call_tool("chatty", {})  # a client request
                assert result.content == [t.TextContent(text="done")]
                assert [log.data for log in logs] == ["working"]
                with trio.CancelScope() as scope:
                    nursery.start_soon(_cancel_when, started, scope)
                    await client.call_tool("slow", {})
                await stopped.wait()
            nursery.cancel_scope.cancel()


async def _cancel_when(started: trio.Event, scope: trio.CancelScope) -> None:
    await started.wait()
    scope.cancel()

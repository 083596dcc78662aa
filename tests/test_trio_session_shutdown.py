"""End of input on a trio session (2025-06-18/basic/lifecycle#shutdown): the requests already
accepted are still answered (nothing accepted is lost), our own requests fail at once,
then the session closes."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing

from mcp_ref import SERVER
from mcp_ref import types as t
from mcp_ref._convert import unstructure
from mcp_ref.trio import RequestContext, Session, SessionClosed, StreamChannel, open_session

from ._pair import init_request, init_result

spec = pytest.mark.spec


class SlowServer:
    """Answers initialize at once and tools/list when released."""

    def __init__(self) -> None:
        self.release = trio.Event()
        self.session: Session | None = None

    async def handle_request(self, ctx: RequestContext) -> Any:
        if ctx.method == "initialize":
            return init_result()
        if ctx.method == "tools/list":
            await self.release.wait()
            return t.ListToolsResult(tools=[])
        raise AssertionError(ctx.method)

    async def handle_notification(self, session: Session, notification: Any) -> None:
        pass


def line(obj: Any) -> bytes:
    return json.dumps(obj).encode() + b"\n"


async def read_messages(stream: trio.abc.ReceiveStream) -> list[dict[str, Any]]:
    data = b""
    while chunk := await stream.receive_some():
        data += chunk
    return [json.loads(x) for x in data.splitlines() if x.strip()]


async def test_accepted_requests_are_answered_after_end_of_input() -> None:
    handler = SlowServer()
    client_end, server_end = trio.testing.memory_stream_pair()
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:

            async def serve() -> None:
                async with open_session(StreamChannel(server_end), SERVER, handler) as session:
                    handler.session = session
                    await session.wait_closed()

            nursery.start_soon(serve)
            init = init_request()
            await client_end.send_all(
                line(
                    {
                        "jsonrpc": "2.0",
                        "id": 0,
                        "method": "initialize",
                        "params": unstructure(init.params),
                    }
                )
                + line({"jsonrpc": "2.0", "method": "notifications/initialized"})
                + line({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            )
            await client_end.send_eof()  # like `printf ... | mcp-ref serve`
            await trio.testing.wait_all_tasks_blocked()
            session = handler.session
            assert session is not None and not session.closed
            # The session's own requests fail at once: the peer can no longer answer.
            with pytest.raises(SessionClosed):
                await session.send_request("ping")
            handler.release.set()
            messages = await read_messages(client_end)
    assert [m.get("id") for m in messages] == [0, 1]
    assert messages[1]["result"] == {"tools": []}


async def test_drain_is_bounded() -> None:
    handler = SlowServer()  # never released
    client_end, server_end = trio.testing.memory_stream_pair()
    with trio.fail_after(5):
        async with open_session(
            StreamChannel(server_end), SERVER, handler, drain_timeout=0.05
        ) as session:
            init = init_request()
            await client_end.send_all(
                line(
                    {
                        "jsonrpc": "2.0",
                        "id": 0,
                        "method": "initialize",
                        "params": unstructure(init.params),
                    }
                )
                + line({"jsonrpc": "2.0", "method": "notifications/initialized"})
                + line({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            )
            await client_end.send_eof()
            await session.wait_closed()
    messages = await read_messages(client_end)
    # The stuck request was cancelled, and answered with an error (the pipe still took it).
    assert [m.get("id") for m in messages] == [0, 1]
    assert messages[1]["error"]["code"] == -32603

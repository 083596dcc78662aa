"""``mcp_ref.asyncio.connect_in_memory``: a trio :class:`Server` in a thread, an asyncio
client in this one, joined by a socket pair.

Each test is a plain function running ``asyncio.run`` under ``asyncio.timeout`` (as in
``test_asyncio_drivers.py``), and checks after the block that the server's session has
ended and no server thread is left.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio

from mcp_ref import McpError
from mcp_ref import types as t
from mcp_ref.asyncio import StreamClient, connect_in_memory, open_stream_client
from mcp_ref.server import Context, Server
from mcp_ref.trio import RequestContext, StreamChannel, serve_channel

spec = pytest.mark.spec


def run(main: Callable[[], Awaitable[Any]], seconds: float = 20.0) -> Any:
    async def bounded() -> Any:
        async with asyncio.timeout(seconds):
            return await main()

    return asyncio.run(bounded())


def server_threads() -> list[threading.Thread]:
    return [th for th in threading.enumerate() if th.name.startswith("mcp_ref in-memory server")]


def _server() -> Server:
    server = Server("memory", "1.0")

    @server.tool()
    async def add(a: float, b: float, ctx: Context) -> float:
        """Add two numbers, saying so in a log message."""
        await ctx.log("info", f"adding {a} and {b}")
        return a + b

    @server.tool()
    async def ask(question: str, ctx: Context) -> str:
        """Ask the client's model."""
        result = await ctx.sample(question, max_tokens=10)
        assert isinstance(result.content, t.TextContent)
        return result.content.text

    @server.tool()
    def thread_name() -> str:
        """A sync tool: it runs in one of the server's worker threads."""
        return "worker" if threading.current_thread() is not threading.main_thread() else "main"

    return server


@spec("2025-06-18/basic/lifecycle#initialization.4")
def test_connect_in_memory_gives_an_initialized_asyncio_client() -> None:
    server = _server()
    notes: list[Any] = []

    async def main() -> Any:
        async with connect_in_memory(server, on_notification=notes.append) as client:
            assert isinstance(client, StreamClient)
            assert client.initialize_result is not None
            assert client.initialize_result.server_info.name == "memory"
            tools = [tool.name for tool in await client.list_tools()]
            result = await client.call_tool("add", {"a": 2, "b": 3})
            worker = await client.call_tool("thread_name")
            assert len(server.sessions) == 1
            assert len(server_threads()) == 1
        return tools, result, worker

    tools, result, worker = run(main)
    assert tools == ["add", "ask", "thread_name"]
    assert result.structured_content == {"result": 5.0}
    assert worker.content[0].text == "worker"
    # The block's exit waited for the server: its session ended, its thread is gone.
    assert server.sessions == ()
    assert server_threads() == []
    assert [n.params.data for n in notes if n.method == "notifications/message"] == [
        "adding 2.0 and 3.0"
    ]


def test_connect_in_memory_takes_the_client_options() -> None:
    """A sampling handler reaches the client core; the server's request to the client
    crosses the socket pair too."""

    def sample(params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        return t.CreateMessageResult(
            role="assistant", content=t.TextContent(text="forty-two"), model="test"
        )

    async def main() -> Any:
        async with connect_in_memory(_server(), sampling_handler=sample) as client:
            return await client.call_tool("ask", {"question": "why?"})

    result = run(main)
    assert result.content[0].text == "forty-two"
    assert server_threads() == []


def test_leaving_the_block_ends_a_tool_in_progress() -> None:
    """A request still running when the block exits does not keep the server alive."""
    server = Server("stuck", "1.0")
    running = threading.Event()

    @server.tool()
    async def forever() -> str:
        running.set()
        await trio.sleep_forever()
        return "never"

    async def main() -> None:
        async with connect_in_memory(server, shutdown_grace=5) as client:
            call = asyncio.create_task(client.call_tool("forever"))
            await asyncio.to_thread(running.wait, 5)
            assert running.is_set()
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call

    run(main)
    assert server.sessions == ()
    assert server_threads() == []


def test_a_server_that_ignores_end_of_input_is_cancelled_after_the_grace() -> None:
    """A handler whose session never ends by itself is cancelled after ``shutdown_grace``;
    the block still exits, with no thread left behind."""

    class Stubborn:
        async def handle_request(self, ctx: RequestContext) -> Any:
            return t.InitializeResult(
                protocol_version=ctx.params.protocol_version,
                capabilities=t.ServerCapabilities(),
                server_info=t.Implementation(name="stubborn", version="0"),
            )

        async def serve(self, channel: StreamChannel, **kw: Any) -> None:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(lambda: serve_channel_plain(self, channel))
                await trio.sleep_forever()  # ignores the session's end

    async def main() -> float:
        loop = asyncio.get_running_loop()
        async with connect_in_memory(Stubborn(), shutdown_grace=0.2) as client:
            assert client.initialize_result is not None
            start = loop.time()
        return loop.time() - start

    elapsed = run(main)
    assert 0.2 <= elapsed < 5
    assert server_threads() == []


async def serve_channel_plain(handler: Any, channel: StreamChannel) -> None:
    """Serve ``handler`` with a plain session (not through its ``serve`` method)."""

    class Plain:
        handle_request = handler.handle_request

    await serve_channel(Plain(), channel)


def test_a_failed_initialize_still_stops_the_server() -> None:
    class Refuses:
        async def handle_request(self, ctx: RequestContext) -> Any:
            raise McpError(-32603, "not today")

    async def main() -> None:
        with pytest.raises(McpError, match="not today"):
            async with connect_in_memory(Refuses()):
                pass

    run(main)
    assert server_threads() == []


@spec("2025-06-18/basic/transports#stdio.1")
def test_open_stream_client_talks_over_any_stream_pair() -> None:
    """The stream client alone, over a socket pair whose other end a trio server in a
    thread of the test's own serves: what ``connect_in_memory`` is built from."""
    server = _server()

    async def main() -> Any:
        ours, theirs = socket.socketpair()

        async def serve() -> None:
            stream = trio.SocketStream(trio.socket.from_stdlib_socket(theirs))
            async with stream:
                await serve_channel(server, StreamChannel(stream))

        thread = threading.Thread(target=trio.run, args=(serve,))
        thread.start()
        try:
            reader, writer = await asyncio.open_connection(sock=ours)
            async with open_stream_client(reader, writer) as client:
                result = await client.call_tool("add", {"a": 1, "b": 1})
            assert writer.is_closing()
        finally:
            await asyncio.to_thread(thread.join, 5)
        assert not thread.is_alive()  # our end of input ended the server's session
        return result

    assert run(main).structured_content == {"result": 2.0}
    assert server.sessions == ()

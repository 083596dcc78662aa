"""The trio session's fast path (``open_session(fast_path=True)``, mcp_ref/trio/_fastpath.py):
the same messages, in the same order, as the plain path, over memory channels and over a
real socket (where a message larger than the socket buffer is written partly at once and
the rest the plain way)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from mcp_ref import CLIENT, SERVER
from mcp_ref.trio import StreamChannel, memory_channel_pair, open_session
from mcp_ref.trio._fastpath import reader_for, writer_for
from mcp_ref.trio._stdio import StoppableChannel

from ._pair import CLIENT_CAPS, init_request
from .test_trio_session import LIMIT, ClientHandler, ServerHandler, call, session_pair

FAST = {"fast_path": True}


@pytest.mark.parametrize("framing", ["lines", "messages"])
async def test_many_callers_at_once_get_their_own_answers(framing: str) -> None:
    with trio.fail_after(LIMIT):
        async with session_pair(framing=framing, client_kw=FAST, server_kw=FAST) as (
            client,
            *_,
        ):
            answers: dict[int, Any] = {}

            async def one(i: int) -> None:
                result = await call(client, "echo", args={"i": i})
                answers[i] = json.loads(result.content[0].text)["i"]

            async with trio.open_nursery() as nursery:
                for i in range(100):
                    nursery.start_soon(one, i)
            assert answers == {i: i for i in range(100)}


async def test_progress_still_comes_before_the_answer() -> None:
    got: list[float] = []
    with trio.fail_after(LIMIT):
        async with session_pair(framing="messages", client_kw=FAST, server_kw=FAST) as (
            client,
            *_,
        ):
            result = await call(client, "progress", on_progress=lambda p: got.append(p.progress))
            assert result.content[0].text == "done" and got == [1, 2, 3]


async def test_a_message_larger_than_the_socket_buffer_goes_out_whole() -> None:
    # The server echoes 4 MiB: os.write takes what the socket buffer holds, the rest
    # goes through the plain path under the send lock, and the client reads it whole.
    a, b = trio.socket.socketpair()
    big = "x" * (4 * 1024 * 1024)
    with trio.fail_after(LIMIT):
        client_channel = StreamChannel(trio.SocketStream(a))
        server_channel = StreamChannel(trio.SocketStream(b))
        assert writer_for(server_channel) is not None
        sh = ServerHandler()
        async with (
            open_session(server_channel, SERVER, sh, fast_path=True),
            open_session(client_channel, CLIENT, ClientHandler(), fast_path=True) as client,
        ):
            await client.send_request("initialize", init_request(caps=CLIENT_CAPS).params)
            await client.send_notification("notifications/initialized")
            results = await _both(
                call(client, "echo", args={"text": big}), call(client, "echo", args={"n": 1})
            )
            assert json.loads(results[0].content[0].text)["text"] == big
            assert json.loads(results[1].content[0].text) == {"n": 1}


async def _both(*calls: Any) -> list[Any]:
    out: list[Any] = [None] * len(calls)

    async def run(i: int, c: Any) -> None:
        out[i] = await c

    async with trio.open_nursery() as nursery:
        for i, c in enumerate(calls):
            nursery.start_soon(run, i, c)
    return out


async def test_a_cancelled_caller_sends_nothing_on_the_fast_path_either() -> None:
    with trio.fail_after(LIMIT):
        async with session_pair(framing="messages", client_kw=FAST, server_kw=FAST) as (
            client,
            _,
            c_wire,
            _s,
        ):
            before = len(c_wire.sent)
            with trio.CancelScope() as scope:
                scope.cancel()
                await client.send_notification("notifications/roots/list_changed")
            assert len(c_wire.sent) == before


def test_which_channels_have_a_fast_writer_and_reader() -> None:
    ma, _mb = memory_channel_pair()
    assert writer_for(ma) is not None and reader_for(ma) is not None
    # A wrapper's writes may go to its channel; its reads must go through itself.
    stoppable = StoppableChannel(ma)
    assert writer_for(stoppable) is not None and reader_for(stoppable) is None

    class OwnSend(StreamChannel):
        async def send(self, data: bytes, *, related_request_id: Any = None) -> None:
            raise AssertionError("must see every write")

    a, _b = trio.socket.socketpair()
    assert writer_for(StreamChannel(trio.SocketStream(a))) is not None
    assert writer_for(OwnSend(trio.SocketStream(a))) is None
    assert reader_for(StreamChannel(trio.SocketStream(a))) is None

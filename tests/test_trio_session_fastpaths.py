"""The trio session's fast paths keep the slow paths' behaviour.

The session skips the scheduler where it can (a free lock, a channel that takes a
message at once, a timer that needs no waking).  These tests pin down what must not
change with it: deadlines, cancellation, ordering and failed writes.  Every test runs
under ``fail_after``; timeouts use the autojump MockClock.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
import trio
import trio.testing

from mcp_ref import CLIENT, SERVER, McpError, RequestTimeout
from mcp_ref._errors import REQUEST_TIMEOUT
from mcp_ref.trio import (
    SessionClosed,
    StreamChannel,
    memory_channel_pair,
    open_session,
    open_stdio_process,
)

from ._pair import CLIENT_CAPS, init_request
from .test_trio_session import ClientHandler, ServerHandler, call, session_pair

LIMIT = 10  # seconds (MockClock or real) any test may take


@pytest.mark.parametrize("framing", ["lines", "messages"])
async def test_earlier_deadline_of_a_later_request_wakes_the_timer(
    framing: str, autojump_clock: trio.testing.MockClock
) -> None:
    """The timer sleeps until the first request's deadline (30 s); a request sent after
    it with a 2 s timeout still times out after 2 s, not 30."""
    sh = ServerHandler()
    with trio.fail_after(1000):
        async with session_pair(sh, framing=framing) as (client, *_):
            outcome: dict[str, Any] = {}

            async def long_one() -> None:
                try:
                    await call(
                        client, "slow", args={"tag": "long"}, timeout=RequestTimeout(seconds=30)
                    )
                except McpError as exc:
                    outcome["long"] = (exc.code, trio.current_time() - start)

            start = trio.current_time()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(long_one)
                await sh.started_event("long").wait()
                with pytest.raises(McpError) as info:
                    await call(
                        client, "slow", args={"tag": "short"}, timeout=RequestTimeout(seconds=2)
                    )
                assert info.value.code == REQUEST_TIMEOUT
                assert trio.current_time() - start == pytest.approx(2, abs=0.01)
            assert outcome["long"][0] == REQUEST_TIMEOUT
            assert outcome["long"][1] == pytest.approx(30, abs=0.01)


class _NeverReads:
    """A "lines" channel whose writes block until cancelled (a peer that stopped
    reading; 500 s on the mock clock at most); counts the writes begun."""

    framing = "lines"

    def __init__(self) -> None:
        self.writes = 0
        self.closed = trio.Event()

    async def receive(self) -> bytes:
        await self.closed.wait()
        return b""

    async def send(self, data: bytes, *, related_request_id: Any = None) -> None:
        self.writes += 1
        # Shielded writes ignore fail_after: fail here rather than hang the test.
        await trio.sleep(500)
        raise AssertionError("the blocked write was never cancelled")

    async def aclose(self) -> None:
        self.closed.set()


async def test_a_write_past_send_timeout_ends_the_session(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A write bounded by send_timeout ends the session; the caller's own cancellation
    does not cut the write short (a half-written message would break the stream)."""
    channel = _NeverReads()
    with trio.fail_after(100):
        async with open_session(channel, CLIENT, ClientHandler(), send_timeout=5) as session:
            start = trio.current_time()
            with trio.move_on_after(1) as caller_scope:
                with pytest.raises(SessionClosed) as info:
                    await session.send_request("ping")
            assert not caller_scope.cancelled_caught
            assert "took longer than 5 s" in info.value.reason
            assert trio.current_time() - start == pytest.approx(5, abs=0.01)
            assert session.closed and channel.writes == 1


async def test_closing_the_session_cancels_a_blocked_write(
    autojump_clock: trio.testing.MockClock,
) -> None:
    channel = _NeverReads()
    errors: list[BaseException] = []
    ended_at: list[float] = []
    with trio.fail_after(1000):
        async with trio.open_nursery() as nursery:
            async with open_session(channel, CLIENT, ClientHandler(), send_timeout=None) as s:

                async def writer() -> None:
                    try:
                        await s.send_request("ping")
                    except SessionClosed as exc:
                        errors.append(exc)
                        ended_at.append(trio.current_time())

                nursery.start_soon(writer)
                await trio.sleep(50)  # the write is still blocked: no send timeout
                assert channel.writes == 1 and not s.closed
                closed_at = trio.current_time()
        (error,) = errors
        assert ended_at[0] == pytest.approx(closed_at, abs=0.01)  # at once, not after 500 s
        assert isinstance(error, SessionClosed)
        assert "closed by its owner" in error.reason


# ---------------------------------------------------------------- try_send fast paths


def _socket_channels() -> tuple[StreamChannel, StreamChannel]:
    a, b = trio.socket.socketpair()
    return StreamChannel(trio.SocketStream(a)), StreamChannel(trio.SocketStream(b))


async def test_stream_channel_try_send_on_a_socket() -> None:
    """On a socket, try_send writes at once; a full socket takes part or nothing and
    the rest goes through send, in order."""
    with trio.fail_after(LIMIT):
        left, right = _socket_channels()
        assert left.try_send(b"hello\n") == 6
        assert await right.receive() == b"hello\n"
        big = b"x" * (8 << 20)  # far more than the socket buffers hold
        taken = left.try_send(big)
        assert 0 < taken < len(big)
        assert left.try_send(b"more") == 0  # full: nothing taken
        got = bytearray()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(left.send, big[taken:] + b"\n")
            while not got.endswith(b"\n"):
                got += await right.receive()
        assert got == big + b"\n"
        await right.aclose()
        assert left.try_send(b"x\n") == 0  # the peer is gone: send reports it
        with pytest.raises(trio.BrokenResourceError):
            await left.send(b"x\n")
        await left.aclose()
        assert left.try_send(b"x\n") == 0  # closed
        with pytest.raises(trio.ClosedResourceError):
            await left.send(b"x\n")


async def test_try_send_is_off_for_memory_streams_and_subclasses_with_their_own_send() -> None:
    a, _ = trio.testing.memory_stream_pair()
    assert StreamChannel(a).try_send(b"x\n") == 0

    class Counting(StreamChannel):
        async def send(self, data: bytes, *, related_request_id: Any = None) -> None:
            await super().send(data)

    left, _right = _socket_channels()
    counting = Counting(left.send_stream)
    assert counting.try_send(b"x\n") == 0


async def test_memory_channel_try_send_full_and_closed() -> None:
    a, b = memory_channel_pair(1)
    assert a.try_send(b"one") == 3 and a.sent == 1
    assert a.try_send(b"two") == 0 and a.sent == 1  # full
    assert await b.receive() == b"one"
    await b.aclose()
    assert a.try_send(b"three") == 0  # the other end is gone: send reports it
    with pytest.raises(trio.BrokenResourceError):
        await a.send(b"three")


@pytest.mark.parametrize("transport", ["socket", "memory, one slot"])
async def test_sessions_over_fast_channels(transport: str) -> None:
    """Many concurrent calls, large answers included, over channels that take most
    writes at once and make the rest wait: every answer arrives whole and matched."""
    if transport == "socket":
        ca, cb = _socket_channels()
        channels: tuple[Any, Any] = (ca, cb)
    else:
        channels = memory_channel_pair(1)
    sh = ServerHandler()
    with trio.fail_after(LIMIT):
        async with (
            open_session(channels[1], SERVER, sh) as _server,
            open_session(channels[0], CLIENT, ClientHandler()) as client,
        ):
            await client.send_request("initialize", init_request(caps=CLIENT_CAPS).params)
            await client.send_notification("notifications/initialized")
            results: dict[int, str] = {}

            async def one(i: int) -> None:
                pad = "p" * (i * 50_000 if i % 10 == 0 else i)
                got = await call(client, "echo", args={"i": i, "pad": pad})
                results[i] = got.content[0].text
                assert json.loads(results[i]) == {"i": i, "pad": pad}

            async with trio.open_nursery() as nursery:
                for i in range(60):
                    nursery.start_soon(one, i)
            assert sorted(results) == list(range(60))


async def test_failed_fast_write_ends_the_session() -> None:
    """The peer's socket is closed: try_send takes nothing, send fails, the session
    ends as for any failed write."""
    with trio.fail_after(LIMIT):
        left, right = _socket_channels()
        await right.aclose()
        async with open_session(left, CLIENT, ClientHandler()) as session:
            with pytest.raises(SessionClosed) as info:
                await session.send_request("ping")
            assert "sending to the peer failed" in info.value.reason
            assert session.closed


async def test_a_cancelled_caller_sends_nothing() -> None:
    """Taking a free lock does not yield, but a cancelled caller still raises before
    anything is sent."""
    with trio.fail_after(LIMIT):
        a, b = memory_channel_pair()
        async with open_session(a, CLIENT, ClientHandler()) as session:
            with trio.CancelScope() as scope:
                scope.cancel()
                await session.send_request("ping")
            assert scope.cancelled_caught
            assert a.sent == 0
            with pytest.raises(trio.WouldBlock):
                b._receive.receive_nowait()


async def test_process_channel_write_to_a_closed_stdin_is_explained() -> None:
    """The child closed its stdin but still runs: the fast write takes nothing, and the
    awaited send fails with the child's state in the reason."""
    script = "import os, sys, time; os.close(0); print('ready', flush=True); time.sleep(30)"
    with trio.fail_after(LIMIT):
        async with open_stdio_process(
            [sys.executable, "-c", script], exit_wait=0.05, shutdown_grace=0.2
        ) as (channel, _process):
            got = b""
            while not got.endswith(b"\n"):
                got += await channel.receive()
            assert got == b"ready\n"
            assert channel.try_send(b"{}\n") == 0
            async with open_session(channel, CLIENT, ClientHandler()) as session:
                with pytest.raises(SessionClosed) as info:
                    await session.send_request("ping")
                assert "sending to the peer failed" in info.value.reason
                assert "still running" in info.value.reason


async def test_session_lock_is_fifo_hands_over_and_survives_cancelled_waiters() -> None:
    from mcp_ref.trio._session import _Lock

    lock = _Lock()
    order: list[str] = []
    with trio.fail_after(LIMIT):
        await lock.acquire()  # free: taken at once
        assert lock.locked()

        async def waiter(name: str, scope_box: list[trio.CancelScope] | None = None) -> None:
            with trio.CancelScope() as scope:
                if scope_box is not None:
                    scope_box.append(scope)
                await lock.acquire()
                order.append(name)
                await trio.sleep(0)
                lock.release()
            if scope.cancelled_caught:
                order.append(name + " cancelled")

        box: list[trio.CancelScope] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiter, "a")
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(waiter, "b", box)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(waiter, "c")
            await trio.testing.wait_all_tasks_blocked()
            box[0].cancel()  # b leaves the queue
            await trio.testing.wait_all_tasks_blocked()
            lock.release()  # handed to a, then c
        assert order == ["b cancelled", "a", "c"]
        assert not lock.locked()
        with trio.CancelScope() as scope:
            scope.cancel()
            await lock.acquire()  # a cancelled caller does not take a free lock
        assert scope.cancelled_caught and not lock.locked()

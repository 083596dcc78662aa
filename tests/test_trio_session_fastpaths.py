"""The trio session's fast paths keep the slow paths' behaviour.

The session skips the scheduler where it can (a free lock, a channel that takes a
message at once, a timer that needs no waking).  These tests pin down what must not
change with it: deadlines, cancellation, ordering and failed writes.  Every test runs
under ``fail_after``; timeouts use the autojump MockClock.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from mcp_ref import CLIENT, McpError, RequestTimeout
from mcp_ref._errors import REQUEST_TIMEOUT
from mcp_ref.trio import SessionClosed, open_session

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

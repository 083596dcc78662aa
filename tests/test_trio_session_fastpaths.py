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

from mcp_ref import McpError, RequestTimeout
from mcp_ref._errors import REQUEST_TIMEOUT

from .test_trio_session import ServerHandler, call, session_pair

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

"""The HTTP server's waiting POST answers: on their stream alone first, then on their
socket too (``LateWatch`` and ``wait_change`` of the server's modules)."""

from __future__ import annotations

import math

import h11
import trio
import trio.testing

from mcp_ref.trio._http_common import H11Stream
from mcp_ref.trio._http_server_sse import wait_change
from mcp_ref.trio._http_server_streams import LateWatch, LogicalStream

TIMEOUT = 10


def _stream() -> LogicalStream:
    return LogicalStream("p1", json_mode=True, pending=set(), base="")


async def test_a_stream_still_waiting_is_told_to_watch_after_one_to_two_delays(
    autojump_clock: trio.testing.MockClock,
) -> None:
    late = LateWatch(0.1)
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(late.run)
            await trio.testing.wait_all_tasks_blocked()
            await trio.sleep(0.05)  # not in step with the ticks
            stream = _stream()
            start = trio.current_time()
            late.add(stream)
            await stream.changed.wait()
            assert 0.1 <= trio.current_time() - start <= 0.2
            assert stream.watch
            nursery.cancel_scope.cancel()


async def test_a_stream_done_waiting_is_left_alone(
    autojump_clock: trio.testing.MockClock,
) -> None:
    late = LateWatch(0.1)
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(late.run)
            stream = _stream()
            late.add(stream)
            changed = stream.changed
            late.discard(stream)
            await trio.sleep(1)
            assert not stream.watch and not changed.is_set()
            nursery.cancel_scope.cancel()


async def test_a_post_answer_waits_on_its_stream_then_notices_a_client_that_left(
    autojump_clock: trio.testing.MockClock,
) -> None:
    late = LateWatch(0.1)
    client, server = trio.testing.memory_stream_pair()
    h = H11Stream(server, h11.SERVER)
    stream = _stream()
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(late.run)
            # News of the stream: "changed" at once, the socket untouched.
            nursery.start_soon(_wake_soon, stream)
            assert await wait_change(h, stream, math.inf, late=late) == "changed"
            assert not stream.watch and h.received == 0
            # No news: LateWatch ends the first wait; the next one watches the socket.
            await client.aclose()
            assert await wait_change(h, stream, math.inf, late=late) == "changed"
            assert stream.watch
            assert await wait_change(h, stream, math.inf, late=late) == "eof"
            nursery.cancel_scope.cancel()


async def test_an_answer_that_comes_while_the_socket_is_watched_ends_the_wait(
    autojump_clock: trio.testing.MockClock,
) -> None:
    _client, server = trio.testing.memory_stream_pair()
    h = H11Stream(server, h11.SERVER)
    stream = _stream()
    stream.watch = True
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_wake_soon, stream)
            assert await wait_change(h, stream, math.inf, late=LateWatch(0.1)) == "changed"
            assert not stream.watchers
            assert await wait_change(h, stream, 5.0) == "timeout"


async def _wake_soon(stream: LogicalStream) -> None:
    await trio.sleep(0.01)
    stream.wake()

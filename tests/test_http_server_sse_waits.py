"""The HTTP server's SSE writer waits for news of its logical stream while it reads the
client's side of the connection (``wait_change`` of :mod:`mcp_ref.trio.http.endpoint`)."""

from __future__ import annotations

import math
from typing import Any

import h11
import trio
import trio.testing

from mcp_ref._http import HttpLimits
from mcp_ref.trio.http.common import H11Stream
from mcp_ref.trio.http.endpoint import wait_change
from mcp_ref.trio.http.sessions import HttpSession

TIMEOUT = 10
NOTE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}}'


def _session() -> HttpSession:
    return HttpSession("s1", kind="streamable", limits=HttpLimits(), on_end=lambda _: None)


def _get_stream_wait() -> tuple[Any, H11Stream, HttpSession, Any]:
    """A session's standalone (GET) stream, and the server's side of a connection in
    memory to wait on it with: (the client's end, the server's H11Stream, the session,
    the stream)."""
    client, server = trio.testing.memory_stream_pair()
    sess = _session()
    return client, H11Stream(server, h11.SERVER), sess, sess.state.streams["get"]


async def _route_soon(sess: HttpSession) -> None:
    await trio.sleep(0.01)
    sess.send_nowait(NOTE)  # to the standalone stream: wakes its writer


async def _end_soon(sess: HttpSession) -> None:
    await trio.sleep(0.01)  # virtual time (autojump clock): once the wait has begun
    sess.end("test")


async def test_news_of_the_stream_ends_the_wait_and_leaves_no_waiter(
    autojump_clock: trio.testing.MockClock,
) -> None:
    _client, h, sess, stream = _get_stream_wait()
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_route_soon, sess)
            assert await wait_change(h, sess, stream, stream.seq, math.inf) == "changed"
        assert sess.waiters == {}
        # News that came before the wait: "changed" at once.
        seq = stream.seq
        sess.send_nowait(NOTE)
        assert await wait_change(h, sess, stream, seq, math.inf) == "changed"
        assert await wait_change(h, sess, stream, stream.seq, 5.0) == "timeout"


async def test_a_client_that_left_ends_the_wait(autojump_clock: trio.testing.MockClock) -> None:
    client, h, sess, stream = _get_stream_wait()
    with trio.fail_after(TIMEOUT):
        await client.aclose()
        assert await wait_change(h, sess, stream, stream.seq, math.inf) == "eof"


async def test_the_end_of_the_session_ends_the_wait(autojump_clock: trio.testing.MockClock) -> None:
    _client, h, sess, stream = _get_stream_wait()
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_end_soon, sess)
            assert await wait_change(h, sess, stream, stream.seq, math.inf) == "changed"


async def test_a_wait_without_a_connection_ends_on_news_on_timeout_and_at_the_end(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # What a JSON answer waits with (no connection to read): an event the session sets.
    sess = _session()
    stream = sess.state.streams["get"]
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_route_soon, sess)
            assert await wait_change(None, sess, stream, stream.seq, math.inf) == "changed"
        assert sess.waiters == {}
        assert await wait_change(None, sess, stream, stream.seq, 5.0) == "timeout"
        assert sess.waiters == {}
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_end_soon, sess)
            assert await wait_change(None, sess, stream, stream.seq, math.inf) == "changed"
        assert sess.waiters == {}

"""Writing a logical stream as an SSE response (:mod:`.server`).

Theory of operation
-------------------
:func:`answer_sse` attaches a logical stream to one HTTP response (a POST's answer, a
GET of the standalone stream, a resumption) and writes the stream's events from a
cursor until the stream ends, the client leaves, or another response takes the stream
over.  Between writes it waits in :func:`wait_change`: it reads the client's side of the
connection (to notice a client that left, so that events meant for it stay in the store
for a resumption) until the session wakes it (:meth:`~.session.HttpSession.wake`
cancels the read) or the keepalive time passes.  A JSON answer, which reads nothing
while it waits, waits on an event instead (a third of the cost of a cancelled wait).

A POST's answer usually comes within moments, so its head waits up to
``HEAD_WAIT_SECONDS`` for the first events: a quick answer is one write (head, events,
end: :class:`SseOut`).  From 2025-11-25 on the head goes at once, with its priming event.
"""

from __future__ import annotations

import logging
from typing import Any, Final, Literal

import h11
import trio

from ..._http_server import ServerConfig
from ..._http_streams import LogicalStream, StreamCursor
from ..._sse import SSEEvent, encode_comment, encode_event
from .common import H11Stream
from .session import HttpSession

__all__ = ["HEAD_WAIT_SECONDS", "SseOut", "answer_sse", "wait_change"]

log = logging.getLogger("mcp_ref.trio.http")

HEAD_WAIT_SECONDS: Final = 0.1
"""Seconds the head of a POST's SSE answer waits for the first events, so that a quick
answer is written at once, head and all."""

_MAX_PIPELINED: Final = 64 * 1024
_END: Final = h11.EndOfMessage()


async def answer_sse(
    cfg: ServerConfig,
    h: H11Stream,
    sess: HttpSession,
    stream: LogicalStream,
    session_id: str | None,
    *,
    last: bool,
    cursor: str | None = None,
    first: SSEEvent | None = None,
    post: bool = False,
) -> None:
    """Attach ``stream`` to this response and write its events from ``cursor`` (default:
    after the last event written) until it ends; what to write and when to stop is the
    sans-IO :class:`~mcp_ref._http_streams.StreamCursor`'s.  ``post``: the answer to the
    POST that carried the stream's requests; ``first``: an event to write before them."""
    out = SseOut(h, stream, sess.sse_head(session_id, last, post=post))
    if first is not None:
        out.add(encode_event(first))
    out.generation = sess.state.attach(stream)
    sess.wake(stream)  # a response writing it before stops
    if cursor is None:
        cursor = stream.delivered_id or stream.base_id
    reader = StreamCursor(sess.state, stream, cursor, out.generation)
    out.add(reader.opening(cfg.retry_ms))
    head_waits = post and not sess.state.primes
    try:
        while True:
            seq = stream.seq
            chunk = reader.take()
            out.add(chunk.data)
            if chunk.last_id is not None:
                out.delivered = chunk.last_id
            if chunk.end is not None:
                if chunk.end.startswith("events lost"):
                    log.warning("stream %s of session %s: %s", stream.id, sess.id, chunk.end)
                break
            if head_waits and out.delivered is None:
                # Nothing but the head yet: wait a moment for more, then write the head.
                got = await wait_change(h, sess, stream, seq, HEAD_WAIT_SECONDS)
                head_waits = got == "changed"
            else:
                head_waits = False
                await out.flush()
                got = await wait_change(h, sess, stream, seq, cfg.limits.keepalive_seconds)
                if got == "timeout":
                    out.add(encode_comment("keepalive"))
            if got == "eof":
                return  # the client left: what it did not receive stays in the store
    finally:
        sess.state.detach(stream, out.generation)
        if not post:
            sess.touch()  # (answer_post does, for a POST)
    await out.flush(end=True)


class SseOut:
    """What one SSE response has yet to write: its head (until first written) and
    encoded events, written together by :meth:`flush` (the events as one chunk), and
    the id of the last event among them."""

    __slots__ = ("chunks", "delivered", "generation", "h", "head", "stream")

    def __init__(self, h: H11Stream, stream: LogicalStream, head: h11.Response) -> None:
        self.h = h
        self.stream = stream
        self.generation = 0  # the stream's generation when this response attached it
        self.head: h11.Response | None = head  # None once written
        self.chunks: list[bytes] = []
        self.delivered: str | None = None  # id of the last event in ``chunks``

    def add(self, data: bytes) -> None:
        """Queue encoded SSE events (or a comment); nothing for ``b""``."""
        if data:
            self.chunks.append(data)

    async def flush(self, *, end: bool = False) -> None:
        """Write what is pending (with the end of the response when ``end``); then the
        stream's ``delivered_id`` is the last event written."""
        events: list[Any] = []
        if self.head is not None:
            events.append(self.head)
            self.head = None
        chunks = self.chunks
        if chunks:
            self.chunks = []
            events.append(h11.Data(data=b"".join(chunks)))
        if end:
            events.append(_END)
        if events:
            await self.h.send(*events)
        if self.delivered is not None:
            if self.stream.generation == self.generation:
                self.stream.delivered_id = self.delivered
            self.delivered = None


async def wait_change(
    h: H11Stream | None, sess: HttpSession, stream: LogicalStream, seq: int, timeout: float
) -> Literal["changed", "eof", "timeout"]:
    """Wait until ``stream`` changes (its ``seq`` is no longer ``seq``) while reading the
    client's side of the connection ``h`` (None: without), at most ``timeout`` seconds.

    Returns ``"changed"``, ``"eof"`` (the client closed its side: nobody will read the
    rest) or ``"timeout"``.  Input the client pipelines meanwhile goes into h11 for the
    next request (up to ``_MAX_PIPELINED`` bytes; past that the socket is not read).
    :meth:`HttpSession.wake` cancels the read (a cancelled ``receive_some`` loses
    nothing); without ``h`` it sets an event.
    """
    if stream.seq != seq:
        return "changed"
    waiting = sess.waiters.setdefault(stream, set())
    if h is None:  # nothing to read: an event is cheaper to wake than a cancelled wait
        changed = trio.Event()
        waiting.add(changed.set)
        try:
            with trio.move_on_after(timeout):
                await changed.wait()
        finally:
            waiting.discard(changed.set)
            if not waiting:
                sess.waiters.pop(stream, None)
        return "changed" if stream.seq != seq else "timeout"
    with trio.CancelScope(deadline=trio.current_time() + timeout) as scope:
        waiting.add(scope.cancel)
        try:
            while h.conn.their_state is not h11.CLOSED:
                if len(h.conn.trailing_data[0]) > _MAX_PIPELINED:
                    await trio.sleep_forever()  # pipelined input piles up: stop reading
                if not await h.receive_some():
                    return "eof"
            return "eof"
        finally:
            waiting.discard(scope.cancel)
            if not waiting:
                sess.waiters.pop(stream, None)
    return "changed" if stream.seq != seq else "timeout"

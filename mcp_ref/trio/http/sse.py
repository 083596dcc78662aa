"""Writing a logical stream as an SSE response (:mod:`.server`).

Theory of operation
-------------------
:func:`answer_sse` is the loop around the sans-IO :class:`~mcp_ref._http_answers.SseAnswer`
(what to write, when to wait, when to end) that writes one logical stream to one HTTP
response (a POST's answer, a GET of the standalone stream, a resumption) until the
stream ends, the client leaves, or another response takes the stream over.  Between
writes it waits in :func:`wait_change`: it reads the client's side of the connection
(to notice a client that left, so that events meant for it stay in the store for a
resumption) until the session wakes it (:meth:`~.session.HttpSession.wake` cancels the
read) or the wait the answer asked for passes.  A JSON answer, which reads nothing
while it waits, waits on an event instead (a third of the cost of a cancelled wait).
"""

from __future__ import annotations

import logging
from typing import Final, Literal

import h11
import trio

from ..._http_answers import SseAnswer
from ..._http_server import ServerConfig
from ..._http_streams import LogicalStream
from .common import H11Stream
from .session import HttpSession

__all__ = ["HEAD_WAIT_SECONDS", "answer_sse", "wait_change"]

log = logging.getLogger("mcp_ref.trio.http")

HEAD_WAIT_SECONDS: Final = 0.1
"""Seconds the head of a POST's SSE answer waits for the first events, so that a quick
answer is written at once, head and all."""

_MAX_PIPELINED: Final = 64 * 1024


async def answer_sse(
    cfg: ServerConfig,
    h: H11Stream,
    sess: HttpSession,
    stream: LogicalStream,
    session_id: str | None,
    *,
    last: bool,
    cursor: str | None = None,
    first: bytes = b"",
    post: bool = False,
) -> None:
    """Attach ``stream`` to this response and write its events from ``cursor`` (default:
    after the last event written) until it ends (module docstring).  ``post``: the
    answer to the POST that carried the stream's requests; ``first``: an encoded event
    to write before them."""
    head = sess.heads.sse(session_id, last, post=post)
    answer = SseAnswer(
        sess.state, stream, head, cursor=cursor, first=first, retry_ms=cfg.retry_ms, post=post
    )
    sess.wake(stream)  # a response writing it before stops
    try:
        keepalive = cfg.limits.keepalive_seconds
        while (wait := answer.step(keepalive, HEAD_WAIT_SECONDS)) is not None:
            if answer.ready:
                await _write(h, answer)
            got = await wait_change(h, sess, stream, answer.seq, wait)
            if got == "eof":
                return  # the client left: what it did not receive stays in the store
            answer.waited(got)
        if answer.end and answer.end.startswith("events lost"):
            log.warning("stream %s of session %s: %s", stream.id, sess.id, answer.end)
    finally:
        answer.detach()
        if not post:
            sess.touch()  # (the POST's handler does, for a POST)
    await _write(h, answer, end=True)


async def _write(h: H11Stream, answer: SseAnswer, *, end: bool = False) -> None:
    """Write what ``answer`` has pending (and its end when ``end``)."""
    events = answer.events(end=end)
    if events:
        await h.send(*events)
    answer.written()


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

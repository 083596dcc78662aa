"""Writing a logical stream as an SSE response (:mod:`._http_server`).

Theory of operation
-------------------
:func:`answer_sse` attaches a logical stream to one HTTP response (a POST's answer, a
GET of the standalone stream, a resumption) and writes the stream's events from a
cursor until the stream ends, the client leaves, or another response takes the stream
over.  The response waits for its stream's ``changed`` event (:func:`wait_change`).  A
POST's answer usually comes within moments: it waits on the event alone, its head not
yet written, until the :class:`~._http_server_streams.LateWatch` tells it to watch the
socket too; so a quick answer costs one write (head, events, end: :class:`SseOut`) and
no timer.  (From 2025-11-25 on, the head goes at once with its priming event.)  Once an
SSE response has written anything it watches its socket at every wait, so that events
meant for a client that left stay in the store for a resumption.

When the POST's own task runs the handler (:mod:`._http_server_answers`), an
:class:`EarlyWriter` writes the stream from a task of its own instead, as soon as the
handler sends something before its response or the answer is late.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, Literal

import h11
import trio

from .. import _http as rules
from .._http import HttpError
from .._sse import SSEEvent, encode_comment, encode_data, encode_event
from ._http_common import H11Stream, Supervisor
from ._http_server_streams import HttpSession, LateWatch, LogicalStream

if TYPE_CHECKING:
    from ._http_server_routing import HttpServer

__all__ = ["EarlyWriter", "SseOut", "answer_sse", "wait_change"]

log = logging.getLogger("mcp_ref.trio.http")

_MAX_PIPELINED: Final = 64 * 1024
_END: Final = h11.EndOfMessage()


async def answer_sse(
    server: HttpServer,
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
    """Attach ``stream`` to this response and write its events from ``cursor``
    (``post``: the answer to the POST that carried the stream's requests)."""
    out = SseOut(h, stream, sess.sse_head(session_id, last, post=post))
    if first is not None:
        out.add(encode_event(first))
    if cursor is None:
        cursor = stream.delivered_id or stream.base_id
    stream.generation += 1
    out.generation = stream.generation
    stream.attached = True
    if out.generation > 1:
        stream.wake()  # the response writing it before stops
    try:
        client_left = await _pump(server, out, sess, cursor, post)
    finally:
        if stream.generation == out.generation:
            stream.attached = False
    if not post:
        sess.touch()  # (answer_post does, for a POST)
    if not client_left:
        await out.flush(end=True)


async def _pump(
    server: HttpServer, out: SseOut, sess: HttpSession, cursor: str, post: bool
) -> bool:
    """Write the stream's events from ``cursor`` until it ends; True when the client
    closed its side first.  The events, and the head, are written together before
    each wait: a POST's head waits for the first events (``WATCH_AFTER`` seconds
    or so at most, see :class:`LateWatch`; not when a priming event goes first), so
    a quick answer costs one write (head, events, end)."""
    stream, generation = out.stream, out.generation
    if sess.primes:
        # Spec: 2025-06-18/basic/transports#resumability-and-redelivery.1
        # "Servers MAY attach an `id` field to their SSE events, as described in the SSE standard."
        # 2025-11-25: prime the stream with an id and empty data, and say when to
        # reconnect.
        out.add(encode_data("", id=cursor, retry=server.retry_ms))
    keepalive = server.limits.keepalive_seconds
    # A POST's stream usually ends within moments: its head waits for the first
    # events.  Once anything is written the socket is watched at each wait, so that
    # events are not written after the client left (they stay for a resumption);
    # before, the client holds no event id to resume from.  A priming event is
    # written at once, head and all: it is there to give the client an id at once.
    head_waits = post and not sess.primes
    while True:
        changed = stream.changed
        if stream.generation != generation:
            return False  # another response took the stream over
        if cursor != stream.last_id:
            replay = sess.store.replay_after(cursor)
            if isinstance(replay, HttpError):
                log.warning("stream %s of session %s lost events: %s", stream.id, sess.id, replay)
                return False
            for event_id, data in replay.events:
                if data:
                    out.add(encode_data(data, event=rules.MESSAGE_EVENT, id=event_id))
                cursor = out.delivered = event_id
        if stream.finished and cursor == stream.last_id:
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.10
            # "The SSE stream SHOULD eventually include JSON-RPC response for the JSON-RPC request
            # sent in the POST body."
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.13
            # "The server SHOULD NOT close the SSE stream before sending the JSON-RPC response for
            # the received JSON-RPC request, unless the session expires."
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.14
            # "After the JSON-RPC response has been sent, the server SHOULD close the SSE stream."
            sess.store.forget_stream(stream.id)
            return False
        if sess.ended:
            return False
        if stream.close_requested:
            stream.close_requested = False
            return False
        if head_waits and out.delivered is None and not stream.watch:
            # Nothing but the head yet: wait a moment for more.
            await wait_change(out.h, stream, keepalive, changed, late=server.late_watch)
            continue
        head_waits = False
        await out.flush()
        got = await wait_change(out.h, stream, keepalive, changed)
        if got == "eof":
            return True
        if got == "timeout":
            out.add(encode_comment("keepalive"))


class EarlyWriter:
    """Writes a POST's SSE answer from a task of its own when the handler, running in
    the POST's task, sends something before its response (progress, a request to the
    client, a log message), or is still running after ``WATCH_AFTER`` seconds or so:
    the client must get those messages now, not after the response, and the head of a
    late response (then the writer also notices a client that left).

    Args:
        supervisor: where the writer task runs (the server's).
        write: the writer, :func:`answer_sse` with the POST's arguments.

    Source: 2025-06-18/basic/transports#sending-messages-to-the-server.11 (requests and
    notifications before the response) and .13 (the stream stays open until it).
    """

    __slots__ = ("_supervisor", "_write", "done", "error", "started")

    def __init__(self, supervisor: Supervisor, write: Callable[[], Awaitable[None]]) -> None:
        self._supervisor = supervisor
        self._write = write
        self.started = False
        self.done = trio.Event()
        self.error: Exception | None = None

    def start(self) -> None:
        """Start the writer (the stream's ``on_early``).  When the server refuses new
        tasks (shutting down), the POST's task writes everything after the handler."""
        self.started = self._supervisor.start_soon(self._run)
        if not self.started:
            log.debug("no writer task for an early answer: written after its handler")

    async def _run(self) -> None:
        try:
            await self._write()
        except Exception as exc:  # the POST's task, which owns the connection, raises it
            self.error = exc
        finally:
            self.done.set()

    async def wait(self) -> None:
        """Wait until the writer wrote the whole answer.

        Raises:
            what the writer raised (a broken connection, an h11 error)."""
        await self.done.wait()
        if self.error is not None:
            raise self.error


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
        """Queue one encoded SSE event (or comment)."""
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
            events.append(h11.Data(data=chunks[0] if len(chunks) == 1 else b"".join(chunks)))
        if end:
            events.append(_END)
        if events:
            await self.h.send(*events)
        if self.delivered is not None:
            if self.stream.generation == self.generation:
                self.stream.delivered_id = self.delivered
            self.delivered = None


async def wait_change(
    h: H11Stream,
    stream: LogicalStream,
    timeout: float,
    changed: trio.Event | None = None,
    *,
    late: LateWatch | None = None,
) -> Literal["changed", "eof", "timeout"]:
    """Wait for news of ``stream`` (its ``changed`` event, or the one given) while
    watching the client's side of the connection, at most ``timeout`` seconds.

    Returns ``"changed"``, ``"eof"`` (the client closed its side: nobody will read the
    rest) or ``"timeout"``.  With ``late`` (the answer to a POST, which usually comes
    within moments) and until ``late`` sets the stream's ``watch``, the wait is on the
    event alone, without timeout, and may return ``"changed"`` for no news: no timer and
    no socket registration to undo when the answer comes; a client that left is then
    noticed up to ``2 * WATCH_AFTER`` seconds late.  Otherwise the socket is read too:
    input the client pipelines meanwhile goes into h11 for the next request (up to
    ``_MAX_PIPELINED`` bytes; past that the socket is not read).  :meth:`LogicalStream.wake`
    cancels that read's scope (a cancelled ``receive_some`` loses nothing).
    """
    if changed is None:
        changed = stream.changed
    if changed.is_set():
        return "changed"
    if late is not None and not stream.watch:
        late.add(stream)
        try:
            await changed.wait()
        finally:
            late.discard(stream)
        return "changed"
    with trio.CancelScope(deadline=trio.current_time() + timeout) as scope:
        stream.watchers.add(scope)
        try:
            while h.conn.their_state is not h11.CLOSED:
                if len(h.conn.trailing_data[0]) > _MAX_PIPELINED:
                    await changed.wait()  # pipelined input piles up: stop reading it
                    break
                if not await h.receive_some():
                    return "eof"
            else:
                return "eof"
        finally:
            stream.watchers.discard(scope)
    return "changed" if changed.is_set() else "timeout"

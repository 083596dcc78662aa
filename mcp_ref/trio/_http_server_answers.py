"""POST, GET and DELETE of the Streamable HTTP endpoint (:mod:`._http_server`).

Theory of operation
-------------------
A POST's body goes to its session (:meth:`~._http_server_streams.HttpSession.deliver`);
notifications and responses get 202 at once.  The handler of a POST's only request runs
in the POST's own task (``Session.push(run_here=...)``, not when streams are primed), so
a quick answer is read, handled and written in one go; if the handler sends anything
before its response, or is still running after ``WATCH_AFTER`` seconds or so, a writer
task (:class:`_EarlyWriter`) takes its stream over.  Requests get a new logical stream, answered
either as one JSON body (:func:`answer_json`) or as an SSE stream (:func:`answer_sse`)
that ends after the last response.  A GET attaches the standalone stream, or with
``Last-Event-ID`` the stream that event belongs to, and replays what followed it.

The response writing a stream waits for its ``changed`` event (:func:`wait_change`).  A
POST's answer usually comes within moments: it waits on the event alone, its SSE head not
yet written, until the :class:`~._http_server_streams.LateWatch` tells it to watch the
socket too; so a quick answer costs one write (head, events, end: :class:`SseOut`) and
no timer.  (From 2025-11-25 on, the head goes at once with its priming event.)  Once an SSE response has written anything it watches its socket at every wait,
so that events meant for a client that left stay in the store for a resumption.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

import h11
import trio

from .. import _http as rules
from .._http import LAST_EVENT_ID, HttpError, MessageKind, PostReply, http_error
from .._sse import SSEEvent, encode_comment, encode_data, encode_event
from ._http_common import H11Stream, MessageInfo, request_key
from ._http_server_requests import (
    Refused,
    RequestHeaders,
    gone,
    header,
    messages_of,
    read_body,
    send_simple,
    version_of,
)
from ._http_server_streams import STANDALONE, HttpSession, LateWatch, LogicalStream

if TYPE_CHECKING:
    from ._http_server_routing import HttpServer

__all__ = ["SseOut", "answer_sse", "delete", "get", "post", "wait_change"]

log = logging.getLogger("mcp_ref.trio.http")

_STATELESS_INIT_ID: Final = "mcp-ref:stateless-initialize"
_MAX_PIPELINED: Final = 64 * 1024
_END: Final = h11.EndOfMessage()


async def post(server: HttpServer, h: H11Stream, headers: RequestHeaders, last: bool) -> None:
    """Answer a POST to the MCP endpoint: 202 for notifications and responses, else
    the answer of its request(s) as JSON or an SSE stream.

    Raises:
        Refused: the request breaks a rule (the error says which).
    """
    err = headers.rule("accept POST", lambda: rules.check_accept(headers, b"POST"))
    if err is not None:
        raise Refused(err)
    body = await read_body(h, headers, server.limits)
    infos = messages_of(body)
    is_init = any(m.method == "initialize" for m in infos)
    if is_init and len(infos) > 1:
        raise Refused(
            http_error(
                400,
                "initialize must be sent alone",
                clause="2025-06-18/basic/lifecycle#initialization.1",
            )
        )
    if server.stateless:
        await stateless_post(server, h, headers, body, infos, is_init, last)
        return
    if is_init:
        got = rules.check_session(
            headers, is_initialize=True, active_sessions=server.table.sessions
        )
        if isinstance(got, HttpError):
            raise Refused(got)
        sess = await server.table.open("streamable")
    else:
        sess = server.table.of_headers(headers)
        version_of(headers)
        if len(infos) > 1 and sess.protocol_version not in ("2025-03-26", None):
            # Spec: 2025-06-18/basic#messages.1 (no batches from 2025-06-18 on)
            raise Refused(
                http_error(
                    400,
                    f"JSON-RPC batches are not allowed in {sess.protocol_version}",
                    clause="2025-06-18/basic/transports#sending-messages-to-the-server.4",
                )
            )
    sess.touch()
    await answer_post(server, h, sess, body, infos, is_init=is_init, last=last)


async def answer_post(
    server: HttpServer,
    h: H11Stream,
    sess: HttpSession,
    body: bytes,
    infos: list[MessageInfo],
    *,
    is_init: bool,
    last: bool,
    extra: Sequence[bytes] = (),
) -> None:
    """Feed ``extra`` then ``body`` to the session and answer the POST."""
    requests = [m for m in infos if m.kind is MessageKind.REQUEST]
    if not requests:
        for data in (*extra, body):
            if not await sess.deliver(data):
                raise Refused(gone())
        for m in infos:
            if m.method == "notifications/cancelled":
                sess.cancel_from(body)
        # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.5
        reply = rules.post_reply(infos[0].kind, stream=False)
        await send_simple(h, 202, rules.response_headers(reply), last)
        return
    keys = {request_key(m.id) for m in requests}
    if any(k in sess.routes for k in keys) or len(keys) != len(requests):
        raise Refused(http_error(400, "a request with this id is still being handled", clause=None))
    if len(sess.streams) >= server.limits.max_streams_per_session + 1:
        raise Refused(
            http_error(
                429,
                f"too many requests in progress in this session "
                f"(at most {server.limits.max_streams_per_session})",
                clause=None,
            )
        )
    # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.8
    json_mode = server.json_response
    stream = sess.new_stream(None, json_mode=json_mode, pending=set(keys))
    sess.streams[stream.id] = stream
    for k in keys:
        sess.routes[k] = stream
    if is_init:
        sess.init_key = next(iter(keys))
    session_id = sess.id if sess.kind == "streamable" else None
    # A POST of one request: its handler runs in this task (Session.push(run_here=)),
    # so a quick answer costs no task and no trip through the scheduler.  Not when the
    # session primes its streams: the priming event must go at once.
    inline = requests[0].id if len(infos) == 1 and (json_mode or not sess.primes) else None
    early: _EarlyWriter | None = None
    if inline is not None and not json_mode:
        # What the handler sends before its response, or the head of a late response,
        # goes out at once: a writer task then takes the stream over.
        early = _EarlyWriter(server, h, sess, stream, session_id, last)
        stream.on_early = early.start
        server.late_watch.add(stream)
    try:
        for data in (*extra, body):
            if not await sess.deliver(data, run_here=inline if data is body else None):
                for k in keys:
                    sess.routes.pop(k, None)
                sess.streams.pop(stream.id, None)
                raise Refused(gone())
    finally:
        if early is not None:
            stream.on_early = None
            server.late_watch.discard(stream)
    try:
        if early is not None and early.started:
            await early.wait()
        elif json_mode:
            await answer_json(server, h, sess, stream, session_id, batch=len(infos) > 1, last=last)
        else:
            await answer_sse(server, h, sess, stream, session_id, last=last, post=True)
    finally:
        sess.touch()
        if is_init and sess.init_failed and sess.kind == "streamable":
            sess.end("initialize failed")


class _EarlyWriter:
    """Writes a POST's SSE answer from a task of its own when the handler, running in
    the POST's task, sends something before its response (progress, a request to the
    client, a log message), or is still running after ``WATCH_AFTER`` seconds or so:
    the client must get those messages now, not after the response, and the head of a
    late response (then the writer also notices a client that left)."""

    __slots__ = ("done", "error", "h", "last", "server", "sess", "session_id", "started", "stream")

    def __init__(
        self,
        server: HttpServer,
        h: H11Stream,
        sess: HttpSession,
        stream: LogicalStream,
        session_id: str | None,
        last: bool,
    ) -> None:
        self.server, self.h, self.sess, self.stream = server, h, sess, stream
        self.session_id, self.last = session_id, last
        self.started = False
        self.done = trio.Event()
        self.error: Exception | None = None

    def start(self) -> None:
        """Start the writer (the stream's ``on_early``).  When the server refuses new
        tasks (shutting down), the POST's task writes everything after the handler."""
        self.started = self.server.table.supervisor.start_soon(self._run)
        if not self.started:
            log.debug("no writer task for stream %s: written after its handler", self.stream.id)

    async def _run(self) -> None:
        try:
            await answer_sse(
                self.server,
                self.h,
                self.sess,
                self.stream,
                self.session_id,
                last=self.last,
                post=True,
            )
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


async def answer_json(
    server: HttpServer,
    h: H11Stream,
    sess: HttpSession,
    stream: LogicalStream,
    session_id: str | None,
    *,
    batch: bool,
    last: bool,
) -> None:
    """Wait for the answer(s) collected on ``stream`` and write them as one JSON body
    (an array for a batch; 202 when none came)."""
    while not stream.finished and not sess.ended:
        if await wait_change(h, stream, math.inf, late=server.late_watch) == "eof":
            return  # the client went away
    if not stream.finished:
        raise Refused(gone())
    parts = stream.json_parts
    body = b"[" + b",".join(parts) + b"]" if batch else (parts[0] if parts else b"")
    if not body:
        await send_simple(h, 202, rules.response_headers(PostReply.ACCEPTED), last)
        return
    if sess.init_failed:
        session_id = None
    headers = sess.json_headers(session_id, len(body))
    if last:
        headers.append((b"connection", b"close"))
    await h.send(
        h11.Response(status_code=200, headers=headers, reason=b"OK"),
        h11.Data(data=body),
        h11.EndOfMessage(),
    )


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
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.13
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.14
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


async def stateless_post(
    server: HttpServer,
    h: H11Stream,
    headers: RequestHeaders,
    body: bytes,
    infos: list[MessageInfo],
    is_init: bool,
    last: bool,
) -> None:
    """Answer a POST in stateless mode, with a session of its own for this POST only."""
    extra: list[bytes] = []
    if not is_init:
        version = version_of(headers)
        # The session lives for this POST only: bring it to the operating state.
        init = {
            "jsonrpc": "2.0",
            "id": _STATELESS_INIT_ID,
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "stateless-http-client", "version": "0"},
            },
        }
        extra = [
            json.dumps(init).encode(),
            b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        ]
    sess = await server.table.open("stateless")
    try:
        if extra:
            # The answer to the synthetic initialize goes nowhere.
            discard = sess.new_stream("discard", json_mode=True)
            sess.routes[request_key(_STATELESS_INIT_ID)] = discard
        await answer_post(server, h, sess, body, infos, is_init=is_init, last=last, extra=extra)
    finally:
        sess.end("stateless request answered")


async def get(server: HttpServer, h: H11Stream, headers: RequestHeaders, last: bool) -> None:
    """Answer a GET: the session's standalone stream, or with ``Last-Event-ID`` the
    resumption of the stream that event belongs to.

    Raises:
        Refused: the request breaks a rule (405, 406, 400, 404, 409...).
    """
    err = rules.check_method(
        b"GET", allow_get=server.enable_get_stream, allow_delete=not server.stateless
    ) or rules.check_accept(headers, b"GET")
    if err is not None:
        raise Refused(err)
    sess = server.table.of_headers(headers)
    version_of(headers)
    last_event_id = header(headers, LAST_EVENT_ID)
    if last_event_id is None:
        stream = sess.streams[STANDALONE]
        cursor = None
    else:
        # Spec: 2025-06-18/basic/transports#resumability-and-redelivery.4
        found = sess.store.replay_after(last_event_id)
        if isinstance(found, HttpError):
            raise Refused(found)
        live = sess.streams.get(found.stream_id)
        if live is None:
            # Finished: the events left to send, then the end.
            live = LogicalStream(found.stream_id, json_mode=False, pending=set(), base="")
            live.finished = True
            live.last_id = found.events[-1][0] if found.events else last_event_id.decode()
        stream = live
        cursor = last_event_id.decode("latin-1")
    sess.touch()
    await answer_sse(server, h, sess, stream, sess.id, last=last, cursor=cursor)


async def delete(server: HttpServer, h: H11Stream, headers: RequestHeaders, last: bool) -> None:
    """Answer a DELETE: end the session (405 in stateless mode).

    Raises:
        Refused: the request breaks a rule.
    """
    if server.stateless:
        err = rules.check_method(b"DELETE", allow_get=False, allow_delete=False)
        assert err is not None
        raise Refused(err)
    sess = server.table.of_headers(headers)
    version_of(headers)
    # Spec: 2025-06-18/basic/transports#session-management.8
    sess.end("terminated by the client (DELETE)")
    await send_simple(h, 200, [(b"content-length", b"0")], last)


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

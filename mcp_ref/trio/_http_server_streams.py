"""Logical streams and sessions of the Streamable HTTP server (:mod:`._http_server`).

Theory of operation
-------------------
An :class:`HttpSession` is one MCP session seen from HTTP: the :class:`ServerChannel`
its :class:`~mcp_ref.trio.Session` talks to, the session's
:class:`~mcp_ref._http.EventStore`, and its :class:`LogicalStream` objects.  Messages in:
:meth:`HttpSession.deliver` queues one POST body (bounded; it waits when the session is
slow).  Messages out: the session's ``channel.send`` calls :meth:`HttpSession.route`,
which never blocks and puts the message on exactly one logical stream: the stream of the
POST that carried the related request, else the standalone (GET) stream.  A stream's
``changed`` event (and the scopes in ``watchers``) wake the response writing it.

:class:`LateWatch` is the one timer of waiting POST answers: they wait on their stream
alone, and it tells those still waiting after ``WATCH_AFTER`` seconds or so to watch
their socket too.  No I/O here but the session's input queue.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable
from typing import Any, Final, Literal

import h11
import trio

from .. import _http as rules
from .._http import EventStore, HttpLimits, MessageKind, PostReply
from .._http_messages import MessageInfo, message_info
from ..events import RequestId
from ._http_common import CONNECTION_CLOSE, request_key
from ._session import Session, SessionClosed

__all__ = [
    "CURRENT",
    "LEGACY",
    "PRIMING_SINCE",
    "STANDALONE",
    "WATCH_AFTER",
    "HttpSession",
    "LateWatch",
    "LogicalStream",
    "ServerChannel",
    "close_sse_stream",
]

log = logging.getLogger("mcp_ref.trio.http")

STANDALONE: Final = "get"
"""Stream id of a session's standalone (GET) stream."""
LEGACY: Final = "legacy"
"""Stream id of a 2024-11-05 session's one stream."""
PRIMING_SINCE: Final = "2025-11-25"
"""First protocol version whose streams start with a priming event."""

WATCH_AFTER: Final = 0.1
"""Seconds (up to twice that) a POST's answer waits for its stream before it also
watches its socket (see :class:`LateWatch`)."""

_INPUT_QUEUE: Final = 64

CURRENT: contextvars.ContextVar[HttpSession | None] = contextvars.ContextVar(
    "mcp_ref_http_session", default=None
)
"""The session whose owner task is running (set in that task; see
:func:`close_sse_stream`)."""


def close_sse_stream(request_id: RequestId) -> bool:
    """End the SSE stream of a request being handled, before its response (polling).

    Call it from the request's handler.  The client resumes with a GET carrying
    ``Last-Event-ID`` (after the ``retry`` time of the priming event) and receives what
    was sent meanwhile, the response included.

    Args:
        request_id: the id of the request being handled (``ctx.request_id``).

    Returns:
        True when the stream will end; False when there is nothing to end or the client
        could not resume it: not under Streamable HTTP, a JSON answer, no event id
        written yet, or already answered.

    Source: 2025-11-25 transports (servers may close SSE streams at will; resumption is
    always by GET with ``Last-Event-ID``);
    2025-06-18/basic/transports#resumability-and-redelivery.4.
    """
    sess = CURRENT.get()
    if sess is None:
        return False
    stream = sess.routes.get(request_key(request_id))
    if stream is None or stream.json_mode or stream.id in (STANDALONE, LEGACY):
        return False
    if stream.delivered_id is None and not sess.primes:
        return False  # the client would hold no event id to resume from
    stream.close_requested = True
    stream.wake()
    return True


class LogicalStream:
    """One logical SSE stream (or, in JSON mode, the collector of one POST's answer)."""

    def __init__(self, stream_id: str, *, json_mode: bool, pending: set[Any], base: str) -> None:
        self.id = stream_id
        self.json_mode = json_mode
        self.pending = pending  # request keys still awaiting their response
        self.json_parts: list[bytes] = []
        self.finished = False
        self.changed = trio.Event()
        self.generation = 0  # bumped by each attachment; an older writer then stops
        self.attached = False
        self.close_requested = False
        self.base_id = base  # an empty event before every real one: the first cursor
        self.last_id = base  # the last event appended
        self.delivered_id: str | None = None  # the last event written to a socket
        # Scopes of responses waiting for news of this stream while they watch their
        # socket (see wait_change); one per attached response, so a handful at most.
        self.watchers: set[trio.CancelScope] = set()
        # Set by LateWatch once a response has waited a while: from then on every wait
        # watches the socket too.
        self.watch = False
        # While the POST's own task runs its request's handler (and so writes nothing):
        # starts a writer task for the stream (see take_over).
        self.on_early: Callable[[], None] | None = None

    def take_over(self) -> None:
        """Start a writer for this stream if its POST's task is running the handler
        (``on_early``; once): a message came before the response, or the response is
        late, and the client must see it, or at least the head, now."""
        start, self.on_early = self.on_early, None
        if start is not None:
            start()

    def wake(self) -> None:
        """Tell whoever waits for news of this stream: set ``changed`` (then a fresh
        one) and cancel the watchers' socket reads."""
        self.changed.set()
        self.changed = trio.Event()
        for scope in self.watchers:
            scope.cancel()


class LateWatch:
    """Tells the responses waiting too long for their stream to watch their socket.

    A POST's answer usually comes within moments, so it first waits on its stream's
    ``changed`` event alone (or runs the handler itself: then a writer task takes the
    stream over when due, :meth:`LogicalStream.take_over`): no timer, no socket
    registration.  It puts its stream in ``young``; every ``delay`` seconds one task (:meth:`run`) sets ``watch`` on the
    streams still waiting since the tick before and wakes them, so a response starts
    watching its socket after ``delay`` to ``2 * delay`` seconds.  One sleeping task for
    the whole server, instead of a cancel scope per request.
    """

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self._young: set[LogicalStream] = set()
        self._old: set[LogicalStream] = set()
        self._work = trio.Event()

    def add(self, stream: LogicalStream) -> None:
        """A response starts waiting for ``stream``."""
        self._young.add(stream)
        if not self._work.is_set():
            self._work.set()

    def discard(self, stream: LogicalStream) -> None:
        """The response waiting for ``stream`` is done waiting."""
        self._young.discard(stream)
        self._old.discard(stream)

    async def run(self) -> None:
        """Tick while some stream waits; sleep on an event otherwise (runs until
        cancelled)."""
        while True:
            if not self._young and not self._old:
                self._work = trio.Event()
                await self._work.wait()
            await trio.sleep(self.delay)
            due, self._old, self._young = self._old, self._young, set()
            for stream in due:
                stream.watch = True
                stream.take_over()
                stream.wake()


class HttpSession:
    """One MCP session of the HTTP server: its channel, streams and event store."""

    def __init__(
        self,
        session_id: str | None,
        *,
        kind: Literal["streamable", "stateless", "legacy"],
        limits: HttpLimits,
        on_end: Callable[[HttpSession], None],
    ) -> None:
        self.id = session_id
        self.kind = kind
        self.store = EventStore(
            max_events_per_stream=limits.stored_events_per_stream,
            max_streams=max(limits.stored_streams, limits.max_streams_per_session + 2),
            max_total_bytes=limits.stored_bytes,
        )
        self.streams: dict[str, LogicalStream] = {}  # live streams: unfinished, or standalone
        self.routes: dict[Any, LogicalStream] = {}  # request key -> its stream
        self._next_stream = 0
        self.protocol_version: str | None = None
        self.init_key: Any = None
        self.init_failed = False
        self.input_send, self.input_receive = trio.open_memory_channel[bytes](_INPUT_QUEUE)
        # The MCP session, once it runs (ServerChannel.attach_session); and how many
        # bodies wait in the input queue, which pushed ones must not overtake.
        self.session: Session | None = None
        self.queued = 0
        self.channel = ServerChannel(self)
        self.last_used = trio.current_time()
        self.ended = False
        self.end_reason = ""
        self.started = trio.Event()
        self.done = trio.Event()
        self.cancel_scope = trio.CancelScope()
        self._on_end = on_end  # the session table forgets it
        self._json_heads: dict[str | None, list[tuple[bytes, bytes]]] = {}
        self._sse_heads: dict[tuple[str | None, bool, bool], h11.Response] = {}
        if kind == "streamable":
            self.streams[STANDALONE] = self.new_stream(STANDALONE, json_mode=False)
        elif kind == "legacy":
            self.streams[LEGACY] = self.new_stream(LEGACY, json_mode=False)

    def new_stream(
        self, stream_id: str | None, *, json_mode: bool, pending: set[Any] | None = None
    ) -> LogicalStream:
        """A new logical stream (``stream_id`` None: the next ``p<n>``); an SSE one
        gets its base event in the store, the first cursor."""
        if stream_id is None:
            self._next_stream += 1
            stream_id = f"p{self._next_stream}"
        base = "" if json_mode else self.store.append(stream_id, "")
        return LogicalStream(stream_id, json_mode=json_mode, pending=pending or set(), base=base)

    def json_headers(self, session_id: str | None, length: int) -> list[tuple[bytes, bytes]]:
        """``rules.response_headers(PostReply.JSON, session_id=..., content_length=...)``,
        built (and the session id validated) once per session: only the length changes."""
        base = self._json_heads.get(session_id)
        if base is None:
            base = rules.response_headers(PostReply.JSON, session_id=session_id, content_length=0)
            self._json_heads[session_id] = base  # two at most: with and without the id
        value = str(length).encode("ascii")
        return [(k, value) if k == rules.CONTENT_LENGTH else (k, v) for k, v in base]

    def sse_head(self, session_id: str | None, last: bool, *, post: bool) -> h11.Response:
        """The head of an SSE answer: 200 with ``rules.response_headers(PostReply.SSE,
        session_id=..., post=post)`` (plus ``Connection: close`` when ``last``).

        Built once per session and kind (h11 validates the headers of a new
        ``h11.Response``; the event is immutable, so each answer sends the same one)."""
        key = (session_id, last, post)
        head = self._sse_heads.get(key)
        if head is None:
            headers = rules.response_headers(PostReply.SSE, session_id=session_id, post=post)
            if last:
                headers.append(CONNECTION_CLOSE)
            head = h11.Response(status_code=200, headers=headers, reason=b"OK")
            self._sse_heads[key] = head  # eight at most
        return head

    @property
    def primes(self) -> bool:
        """Whether this session's SSE responses start with a priming event."""
        return self.protocol_version is not None and self.protocol_version >= PRIMING_SINCE

    def busy(self) -> bool:
        """Whether a request of the session is still being answered (whatever the
        answer's form, and whether or not a response writes its stream yet), or a
        response writes one of its streams (the GET stream)."""
        return bool(self.routes) or any(s.attached for s in self.streams.values())

    def touch(self) -> None:
        """The session was used now (the idle reaper counts from here)."""
        self.last_used = trio.current_time()

    # -- output (from the session) ------------------------------------------------------

    def route(self, data: bytes, related: RequestId | None) -> None:
        """Put one outgoing message on exactly one logical stream.  Never blocks."""
        # Spec: 2025-06-18/basic/transports#multiple-connections.2
        # "The server MUST send each of its JSON-RPC messages on only one of the connected streams;
        # that is, it MUST NOT broadcast the same message across multiple streams."
        # Each message is appended to one stream's events; only that stream's attached
        # response writes it (and a resumption of that stream replays it).
        info = message_info(data)
        stream: LogicalStream | None = None
        if related is not None:
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.12
            # "These messages SHOULD relate to the originating client request."
            stream = self.routes.get(request_key(related))
        final_key: Any = None
        if info is not None and info.kind is MessageKind.RESPONSE and info.id is not None:
            key = request_key(info.id)
            owner = self.routes.get(key)
            # A response goes to its request's stream even when the session sent it
            # without related_request_id (the core's refusals).
            if owner is not None and (stream is None or stream is owner):
                stream, final_key = owner, key
        if final_key is not None and final_key == self.init_key:
            self._note_initialize_result()
        if stream is not None and stream.json_mode and final_key is None:
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.8
            # "If the input is a JSON-RPC request, the server MUST either return `Content-Type:
            # text/event-stream`, to initiate an SSE stream, or `Content-Type: application/json`, to
            # return one JSON object."
            # A JSON answer holds one response only: other messages use the GET stream.
            stream = None
        # Spec: 2025-06-18/basic/transports#listening-for-messages-from-the-server.6
        # "The server MUST NOT send a JSON-RPC response on the stream unless resuming a
        # stream associated with a previous client request."
        # A response whose POST is gone (e.g. cancelled meanwhile) never goes to the GET
        # stream (the 2024-11-05 transport has one stream, which carries every message).
        if stream is None and info is not None and info.kind is MessageKind.RESPONSE:
            if self.kind != "legacy":
                log.debug("response to an unknown or cancelled request dropped")
                return
        if stream is None:
            # Spec: 2025-06-18/basic/transports#listening-for-messages-from-the-server.5
            # "These messages SHOULD be unrelated to any concurrently-running JSON-RPC request from
            # the client."
            stream = self.streams.get(LEGACY if self.kind == "legacy" else STANDALONE)
            if stream is None:
                log.debug("no stream for an unrelated message in a stateless session: dropped")
                return
        if stream.json_mode:
            stream.json_parts.append(data)
        else:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = data.decode("utf-8", "replace")
            stream.last_id = self.store.append(stream.id, text)
            if final_key is None:
                stream.take_over()
        if final_key is not None:
            del self.routes[final_key]
            self._settle(stream, final_key)
        stream.wake()

    def _note_initialize_result(self) -> None:
        """The answer to ``initialize`` is being routed: the session's connection has
        just sent it, so it knows the negotiated version (None: initialize failed)."""
        session = self.session
        version = session.connection.protocol_version if session is not None else None
        if version is None:
            self.init_failed = True
        else:
            self.protocol_version = version

    def cancel_request(self, rid: RequestId) -> None:
        """The client cancelled ``rid``: its response will never come; end its stream."""
        key = request_key(rid)
        stream = self.routes.pop(key, None)
        if stream is None:
            return
        self._settle(stream, key)
        stream.wake()

    def _settle(self, stream: LogicalStream, key: Any) -> None:
        """The request ``key`` of ``stream`` is settled (answered or cancelled); a POST's
        stream with nothing more to wait for is finished."""
        stream.pending.discard(key)
        if not stream.pending and stream.id not in (STANDALONE, LEGACY):
            stream.finished = True
            self.streams.pop(stream.id, None)

    def cancel_from(self, infos: list[MessageInfo]) -> None:
        """End the streams of the requests that the ``notifications/cancelled`` among a
        POST body's messages (``infos``, read by the core) cancel."""
        for info in infos:
            if info.cancels is not None:
                self.cancel_request(info.cancels)

    # -- input (to the session) ----------------------------------------------------------

    async def deliver(self, body: bytes, *, run_here: RequestId | None = None) -> bool:
        """Hand one POST body to the session; False when the session has ended.

        Once the session runs and nothing waits in the input queue, the body is pushed
        to it from this (the connection's) task, and the handler of the request
        ``run_here`` names (a request id of the body) runs in this task too, before
        this returns (``Session.push``); before that, the body queues for the
        session's reader and ``run_here`` is ignored.
        """
        if self.ended:
            return False
        session = self.session
        if session is not None and self.queued == 0:
            # Handlers started by this body see their HTTP session, as when the
            # session's reader starts them (close_sse_stream reads it).
            token = CURRENT.set(self)
            try:
                await session.push(body, run_here=run_here)
            except SessionClosed:
                return False
            finally:
                CURRENT.reset(token)
            return True
        self.queued += 1
        try:
            try:
                self.input_send.send_nowait(body)
            except trio.WouldBlock:
                await self.input_send.send(body)  # the queue is full: wait for room
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            self.queued -= 1
            return False
        except BaseException:
            self.queued -= 1  # cancelled while waiting for room: not queued
            raise
        return True

    def end(self, reason: str) -> None:
        """End the session (idempotent): no more input, every stream wakes and ends."""
        if self.ended:
            return
        self.ended = True
        self.end_reason = reason
        self.input_send.close()
        for stream in list(self.streams.values()) + list(self.routes.values()):
            stream.wake()
        self._on_end(self)


class ServerChannel:
    """The :class:`~mcp_ref.trio.MessageChannel` a server session talks to."""

    framing: Literal["lines", "messages"] = "messages"
    eof_reason: str | None = None

    def __init__(self, sess: HttpSession) -> None:
        self._sess = sess

    async def receive(self) -> bytes:
        """The next queued POST body; ``b""`` once the session was ended."""
        try:
            data = await self._sess.input_receive.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            self.eof_reason = self._sess.end_reason or None
            return b""
        # The session feeds it to its core before it next yields: from here on, pushed
        # bodies cannot overtake it.
        self._sess.queued -= 1
        return data

    def attach_session(self, session: Session) -> None:
        """The MCP session runs: later bodies may be pushed to it (HttpSession.deliver)."""
        self._sess.session = session

    def try_send(self, data: bytes, *, related_request_id: RequestId | None = None) -> int:
        """Route one message onto its stream at once: ``len(data)`` (never fails)."""
        self._sess.route(data, related_request_id)
        return len(data)

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """Route one message onto its stream (never blocks, never fails)."""
        self._sess.route(data, related_request_id)

    async def aclose(self) -> None:
        """End the session's HTTP side."""
        self._sess.end("the session closed")

"""The logical streams of one Streamable HTTP server session, sans-IO.

Theory of operation
-------------------
The server answers a POST that carries requests with a stream of messages that ends
after *the responses to those requests*, and it offers one more stream, the
*standalone* one, that a GET reads.  Either may be interrupted and resumed.  So the
server thinks in *logical streams*, not HTTP responses: a :class:`LogicalStream` is a
list of events in the session's :class:`~mcp_ref._http.EventStore` (bounded), and at
most one HTTP response at a time writes it from a cursor (the driver's business).

:class:`SessionStreams` holds one session's streams and decides, for every message the
server sends, which stream carries it (:meth:`SessionStreams.route`):

* the stream of the POST that carried request R, for R's response and for every
  message sent while handling R (``related == R``);
* else the standalone stream (a stateless session has none: the message is dropped);
* a response whose POST is gone never goes to the standalone stream.

Each message goes on exactly one stream (2025-06-18/basic/transports
#multiple-connections.2).  A POST's stream is *finished* once every request it carried
is answered or cancelled; the writer then ends its response.

Nothing here waits or writes: every call returns at once and says what changed (the
stream to wake, or None).  Each stream's ``seq`` grows with every change, so a driver
that remembers it knows whether news came while it was busy.  The driver maps streams
to HTTP responses, and wakes those writing a stream it was told about.

A POST reaches its session as a :class:`~mcp_ref._http_post.Post`
(:meth:`SessionStreams.accept_post`); a GET names the stream it writes
(:meth:`SessionStreams.resume`); what a response writes from a stream is
:mod:`mcp_ref._http_answers`'s.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from ._http import EventStore, HttpError, HttpLimits, MessageKind, http_error
from ._http_messages import MessageInfo, message_info, negotiated_version
from ._http_post import STATELESS_INIT_ID, Post, check_batch
from .events import RequestId

__all__ = [
    "LEGACY",
    "PRIMING_SINCE",
    "STANDALONE",
    "LogicalStream",
    "SessionKind",
    "SessionStreams",
    "request_key",
]

STANDALONE: Final = "get"
"""Stream id of a session's standalone (GET) stream."""
LEGACY: Final = "legacy"
"""Stream id of a 2024-11-05 session's one stream."""
PRIMING_SINCE: Final = "2025-11-25"
"""First protocol version whose SSE responses start with a priming event."""

SessionKind = Literal["streamable", "stateless", "legacy"]
"""A Streamable HTTP session with an id, a stateless one (one POST), or a 2024-11-05
HTTP+SSE one."""


def request_key(rid: RequestId | None) -> tuple[type, Any]:
    """Dictionary key of a request id: ``"7"`` and ``7`` stay apart, as in the core."""
    return (type(rid), rid)


class LogicalStream:
    """One logical SSE stream (or, in JSON mode, the collector of one POST's answer).

    The driver reads every field; it writes only ``attached``, ``generation`` (through
    :meth:`SessionStreams.attach`) and ``delivered_id``.
    """

    __slots__ = (
        "attached",
        "base_id",
        "batch",
        "close_requested",
        "delivered_id",
        "finished",
        "generation",
        "id",
        "json_mode",
        "json_parts",
        "last_id",
        "pending",
        "seq",
    )

    def __init__(self, stream_id: str, *, json_mode: bool, pending: set[Any], base: str) -> None:
        self.id = stream_id
        """``p<n>`` for a POST's stream, :data:`STANDALONE` or :data:`LEGACY`."""
        self.json_mode = json_mode
        """The answer is one JSON body (``json_parts``), not events in the store."""
        self.pending = pending
        """Keys (:func:`request_key`) of the requests still awaiting their response."""
        self.json_parts: list[bytes] = []
        """JSON mode: the responses collected, in order."""
        self.batch = False
        """It answers a batch: its JSON answer is an array."""
        self.finished = False
        """Every request is settled: the response writing it ends once it is written."""
        self.generation = 0
        """Bumped by each attachment; a response attached before then stops."""
        self.attached = False
        """A response writes this stream now."""
        self.close_requested = False
        """The handler asked to end the response now (polling, 2025-11-25)."""
        self.base_id = base
        """The stream's first cursor: an empty event appended before every real one."""
        self.last_id = base
        """The id of the last event appended."""
        self.delivered_id: str | None = None
        """The id of the last event written to a socket (None: none yet)."""
        self.seq = 0
        """Grows with every change: a driver compares it to know of news."""

    @property
    def json_body(self) -> bytes:
        """JSON mode, once finished: the body of the POST's answer (an array of the
        responses for a batch, else the one response); ``b""`` when none came (every
        request cancelled: the answer is then 202)."""
        # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.8
        # "If the input is a JSON-RPC request, the server MUST either return `Content-Type:
        # text/event-stream`, to initiate an SSE stream, or `Content-Type: application/json`, to return
        # one JSON object."
        parts = self.json_parts
        if self.batch:
            return b"[" + b",".join(parts) + b"]"
        return parts[0] if parts else b""


class SessionStreams:
    """The logical streams of one session, and the rules that route messages to them.

    Args:
        kind: the session's kind (a streamable session has a standalone stream; a
            legacy one has one stream for everything; a stateless one neither).
        limits: the event store's bounds (``stored_events_per_stream``,
            ``stored_streams``, ``stored_bytes``) and ``max_streams_per_session``.

    Source: 2025-06-18/basic/transports#multiple-connections,
    #sending-messages-to-the-server, #listening-for-messages-from-the-server,
    #resumability-and-redelivery.
    """

    def __init__(self, kind: SessionKind, limits: HttpLimits) -> None:
        self.kind = kind
        self.limits = limits
        self.store = EventStore(
            max_events_per_stream=limits.stored_events_per_stream,
            max_streams=max(limits.stored_streams, limits.max_streams_per_session + 2),
            max_total_bytes=limits.stored_bytes,
        )
        self.streams: dict[str, LogicalStream] = {}
        """Live streams by id: unfinished POST streams, and the standalone one."""
        self.routes: dict[Any, LogicalStream] = {}
        """Request key -> the stream its response goes to."""
        self.protocol_version: str | None = None
        """The version the answer to ``initialize`` named (None until then)."""
        self.init_key: Any = None
        """Key of the ``initialize`` request, while it is answered."""
        self.init_failed = False
        """The answer to ``initialize`` was an error."""
        self.ended = False
        """The session ended: every response writing its streams ends."""
        self._next_stream = 0
        self.prefix = ""
        """Put before each POST stream's id (a process adopting a shared session's)."""
        if kind == "streamable":
            self.streams[STANDALONE] = self.new_stream(STANDALONE, json_mode=False)
        elif kind == "legacy":
            self.streams[LEGACY] = self.new_stream(LEGACY, json_mode=False)

    @property
    def primes(self) -> bool:
        """Whether SSE responses start with a priming event (from 2025-11-25 on)."""
        return self.protocol_version is not None and self.protocol_version >= PRIMING_SINCE

    def busy(self) -> bool:
        """Whether a request is still being answered, or a response writes a stream."""
        return bool(self.routes) or any(s.attached for s in self.streams.values())

    def standalone_unwritten(self) -> bool:
        """Whether a response writes the standalone stream and has events of it still
        to write (a JSON answer lets it write them first: what a handler sent before
        its answer then reaches the client first, as far as two connections allow)."""
        get = self.streams.get(STANDALONE)
        return get is not None and get.attached and (get.delivered_id or get.base_id) != get.last_id

    def new_stream(
        self, stream_id: str | None, *, json_mode: bool, pending: set[Any] | None = None
    ) -> LogicalStream:
        """A new logical stream (``stream_id`` None: the next ``p<n>``), not yet live;
        an SSE one gets its base event in the store, the first cursor."""
        if stream_id is None:
            self._next_stream += 1
            stream_id = f"{self.prefix}p{self._next_stream}"
        base = "" if json_mode else self.store.append(stream_id, "")
        return LogicalStream(stream_id, json_mode=json_mode, pending=pending or set(), base=base)

    def open_post(
        self, requests: list[MessageInfo], *, json_mode: bool, is_init: bool
    ) -> LogicalStream | HttpError:
        """The stream that answers a POST carrying ``requests`` (one or more), now live
        and routed to; or the error to refuse the POST with: 400 for a request id still
        being handled (or twice in the body), 429 past
        ``limits.max_streams_per_session`` streams in progress."""
        keys = {request_key(m.id) for m in requests}
        if len(keys) != len(requests) or any(k in self.routes for k in keys):
            return http_error(400, "a request with this id is still being handled", clause=None)
        most = self.limits.max_streams_per_session
        if len(self.streams) >= most + 1:
            return http_error(
                429,
                f"too many requests in progress in this session (at most {most})",
                clause=None,
            )
        # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.8
        # "If the input is a JSON-RPC request, the server MUST either return `Content-Type:
        # text/event-stream`, to initiate an SSE stream, or `Content-Type: application/json`, to return
        # one JSON object."
        stream = self.new_stream(None, json_mode=json_mode, pending=set(keys))
        self.streams[stream.id] = stream
        for k in keys:
            self.routes[k] = stream
        if is_init:
            self.init_key = next(iter(keys))
        return stream

    def accept_post(
        self, post: Post, *, json_mode: bool, max_requests_in_flight: int | None
    ) -> LogicalStream | HttpError | None:
        """Take a POST (:func:`~mcp_ref._http_post.read_post`) before its body goes to
        the session: the live stream that answers its requests (:meth:`open_post`), None
        when it holds none (the answer is 202), or the refusal: a batch the session's
        connection would refuse whole (its version, ``max_requests_in_flight``:
        :func:`~mcp_ref._http_post.check_batch`), or :meth:`open_post`'s.  A stateless
        POST's synthetic ``initialize`` is answered nowhere."""
        if post.batch and self.kind == "streamable":
            err = check_batch(self.protocol_version, len(post.messages), max_requests_in_flight)
            if err is not None:
                return err
        if post.preamble:
            self.discard_answer(STATELESS_INIT_ID)
        if not post.requests:
            return None
        stream = self.open_post(post.requests, json_mode=json_mode, is_init=post.initialize)
        if isinstance(stream, LogicalStream):
            stream.batch = post.batch
        return stream

    def resume(self, last_event_id: bytes | None) -> tuple[LogicalStream, str | None] | HttpError:
        """The stream a GET attaches, and the cursor to write it from (None: the
        stream's own): without ``Last-Event-ID``, the standalone stream; with it, the
        stream that event belongs to, from that event on (one that finished: the events
        it has left to send, then its end); or the refusal
        (:meth:`~mcp_ref._http.EventStore.replay_after`: 400, 409).

        Source: 2025-06-18/basic/transports#resumability-and-redelivery.4,
        #resumability-and-redelivery.5 (never another stream's messages)."""
        if last_event_id is None:
            return self.streams[STANDALONE], None
        # Spec: 2025-06-18/basic/transports#resumability-and-redelivery.4
        # "The server MAY use this header to replay messages that would have been sent after the
        # last event ID, on the stream that was disconnected, and to resume the stream from that
        # point."
        found = self.store.replay_after(last_event_id)
        if isinstance(found, HttpError):
            return found
        stream = self.streams.get(found.stream_id)
        if stream is None:  # finished: the events left to send, then the end
            stream = LogicalStream(found.stream_id, json_mode=False, pending=set(), base="")
            stream.finished = True
            stream.last_id = found.events[-1][0] if found.events else last_event_id.decode()
        return stream, last_event_id.decode("latin-1")

    def close_post(self, stream: LogicalStream) -> None:
        """Forget a POST's stream whose body never reached the session."""
        for k in stream.pending:
            if self.routes.get(k) is stream:
                del self.routes[k]
        self.streams.pop(stream.id, None)

    def discard_answer(self, rid: RequestId) -> None:
        """Route the response to ``rid`` nowhere (a stateless session's synthetic
        ``initialize``)."""
        self.routes[request_key(rid)] = self.new_stream("discard", json_mode=True)

    def attach(self, stream: LogicalStream) -> int:
        """A response starts writing ``stream``: its generation (a response attached
        before stops when it sees the stream's generation change)."""
        stream.generation += 1
        stream.attached = True
        stream.seq += 1
        return stream.generation

    def detach(self, stream: LogicalStream, generation: int) -> None:
        """The response of ``generation`` stops writing ``stream``."""
        if stream.generation == generation:
            stream.attached = False

    def route(self, data: bytes, related: RequestId | None) -> LogicalStream | None:
        """Put one outgoing message on exactly one logical stream: the stream it went
        to (the driver wakes its writer), or None when it was dropped."""
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
            # The answer to initialize names the version (an error: initialize failed).
            self.protocol_version = negotiated_version(data)
            self.init_failed = self.protocol_version is None
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
                return None
        if stream is None:
            # Spec: 2025-06-18/basic/transports#listening-for-messages-from-the-server.5
            # "These messages SHOULD be unrelated to any concurrently-running JSON-RPC request from
            # the client."
            stream = self.streams.get(LEGACY if self.kind == "legacy" else STANDALONE)
            if stream is None:
                return None  # a stateless session has no stream for it
        if stream.json_mode:
            stream.json_parts.append(data)
        else:
            stream.last_id = self.store.append(stream.id, data.decode("utf-8", "replace"))
        if final_key is not None:
            del self.routes[final_key]
            self._settle(stream, final_key)
        stream.seq += 1
        return stream

    def cancel_request(self, rid: RequestId) -> LogicalStream | None:
        """The client cancelled ``rid``: its response will never come.  The stream that
        waited for it (to wake), or None."""
        key = request_key(rid)
        stream = self.routes.pop(key, None)
        if stream is None:
            return None
        self._settle(stream, key)
        stream.seq += 1
        return stream

    def cancel_from(self, infos: list[MessageInfo]) -> list[LogicalStream]:
        """Settle the requests that the ``notifications/cancelled`` among a POST body's
        messages (``infos``, read by the core) cancel; the streams to wake."""
        woken = []
        for info in infos:
            if info.cancels is not None:
                stream = self.cancel_request(info.cancels)
                if stream is not None:
                    woken.append(stream)
        return woken

    def request_close(self, rid: RequestId) -> LogicalStream | None:
        """End the SSE response of request ``rid`` before its response (polling): the
        stream to wake, or None when the client could not resume it (a JSON answer,
        no event id written yet, already answered, not a POST's stream).

        Source: 2025-06-18/basic/transports#resumability-and-redelivery.4; 2025-11-25
        (servers may end SSE streams at will, clients resume with GET)."""
        stream = self.routes.get(request_key(rid))
        if stream is None or stream.json_mode or stream.id in (STANDALONE, LEGACY):
            return None
        if stream.delivered_id is None and not self.primes:
            return None  # the client would hold no event id to resume from
        stream.close_requested = True
        stream.seq += 1
        return stream

    def end(self) -> list[LogicalStream]:
        """The session ends: every stream that a response may be writing (to wake)."""
        self.ended = True
        woken = list(self.streams.values()) + list(self.routes.values())
        for stream in woken:
            stream.seq += 1
        return woken

    def _settle(self, stream: LogicalStream, key: Any) -> None:
        """The request ``key`` of ``stream`` is answered or cancelled; a POST's stream
        with nothing more to wait for is finished."""
        stream.pending.discard(key)
        if not stream.pending and stream.id not in (STANDALONE, LEGACY):
            stream.finished = True
            self.streams.pop(stream.id, None)

"""The Streamable HTTP server (and the 2024-11-05 HTTP+SSE endpoints) on trio and h11.

Theory of operation
-------------------
:func:`serve_http` listens on TCP and serves every connection in its own task: h11
parses HTTP/1.1, the rules of :mod:`mcp_ref._http` decide each status code, and
:mod:`mcp_ref._sse` writes the event streams.  One MCP session is one
:class:`~mcp_ref.trio.Session` (run by the handler's ``serve`` method when it has one,
e.g. :class:`mcp_ref.server.Server`, else by :func:`~mcp_ref.trio.open_session`) over a
:class:`_ServerChannel` of ours.  Each session runs in an *owner task* started by the
server's private :class:`~mcp_ref.trio._http_common.Supervisor`, so it outlives the
HTTP request that created it but never the server.

Messages in: a POST's body is handed to the session's channel as one message (a bounded
queue: the POST waits when the session is slow).  Messages out: the session calls
``channel.send(data, related_request_id=...)``; the channel never blocks and never
fails.  It puts the message on exactly one *logical stream* (never two:
2025-06-18/basic/transports#multiple-connections.2):

* the stream of the POST that carried request R, for R's response and for every message
  sent while handling R (``related_request_id == R``);
* else the session's *standalone* stream, the one a GET reads (server notifications and
  requests unrelated to any request); a stateless server drops those.

A logical stream is a list of events in the session's :class:`~mcp_ref._http.EventStore`
(bounded), plus at most one HTTP response *attached* to it and writing its events from a
cursor.  A POST's stream is attached to that POST's response; when the client drops the
connection the stream lives on detached, and a GET with ``Last-Event-ID`` re-attaches it
and replays what was missed: only that stream's events
(2025-06-18/basic/transports#resumability-and-redelivery.5).  Event ids are
``<stream id>/<seq>`` with one sequence per session (:func:`~mcp_ref._http.make_event_id`).
A new attachment takes over from an old one (the old response ends), so a client whose
connection died unnoticed can always resume.  When the response to the POST's request
has been written, the response ends (#sending-messages-to-the-server.14).

With ``json_response=True`` a request's answer is one ``application/json`` body, and
messages sent while handling it go to the standalone stream instead.

From 2025-11-25 on (the negotiated version), every SSE response starts with a *priming*
event: an id and empty data, with a ``retry`` field (``retry_ms``).  The client then
holds an id it can resume from, so the server may end a stream at any time (polling);
:func:`close_sse_stream` lets a request handler do so.

The one place this module reads message contents is :func:`~._http_common.peek_message`
(kind and id, to route and to know which message ends a stream) and, once per session,
the ``protocolVersion`` of the ``initialize`` result (to know whether to prime streams).

Sessions: ``initialize`` creates one with a random id (16 bytes from :mod:`secrets`);
others name it in ``Mcp-Session-Id``: 400 without, 404 unknown or ended.  DELETE ends
it.  A session with no request and no attached stream for ``limits.session_idle_seconds``
is ended by the reaper task; at most ``limits.max_sessions`` run at once (503 past it).

Stateless mode (``stateless=True``): no session ids, no GET stream, no DELETE.  Each POST
gets a fresh session that lives for that POST only.  A POST other than ``initialize``
first has a synthetic ``initialize`` (version from ``MCP-Protocol-Version``, else
2025-03-26; no client capabilities, so the server never asks the client for anything)
and ``notifications/initialized`` fed before it; the answer to the synthetic initialize
is dropped.  So the core's lifecycle holds unchanged, and every request is handled as
the first request of an operating session.

Legacy HTTP+SSE (2024-11-05, ``legacy_sse=True``): ``GET /sse`` opens a session whose
stream starts with an ``endpoint`` event naming ``/messages?session_id=<id>``; POSTs
there are answered 202 and every server message goes to that one stream.  The session
ends when the GET's connection does.

Limits (:class:`~mcp_ref._http.HttpLimits`): request head size (h11: 431), body size
(413), requests per connection (then ``Connection: close``), seconds to receive a
request (408, or a silent close when the connection was idle), SSE keepalive comments.
"""

from __future__ import annotations

import contextvars
import http
import ipaddress
import json
import logging
import math
import secrets
from collections.abc import AsyncIterator, Callable, Collection, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final, Literal, TypeVar
from urllib.parse import parse_qs, urlsplit

import attrs
import h11
import trio

from .. import _http as rules
from .._http import (
    LAST_EVENT_ID,
    EventStore,
    HttpError,
    HttpLimits,
    MessageKind,
    PostReply,
    http_error,
)
from .._methods import SUPPORTED_VERSIONS
from .._sse import SSEEvent, encode_comment, encode_event
from .._state import SERVER
from ..events import RequestId
from ._http_common import H11Stream, MessageInfo, Supervisor, peek_body, peek_message, request_key
from ._session import Handler, open_session

__all__ = ["HttpServerInfo", "close_sse_stream", "serve_http"]

log = logging.getLogger("mcp_ref.trio.http")

STANDALONE: Final = "get"
"""Stream id of a session's standalone (GET) stream."""
LEGACY: Final = "legacy"
"""Stream id of a 2024-11-05 session's one stream."""
PRIMING_SINCE: Final = "2025-11-25"
"""First protocol version whose streams start with a priming event."""

_INPUT_QUEUE: Final = 64
_STATELESS_INIT_ID: Final = "mcp-ref:stateless-initialize"
_CLOSE_GRACE: Final = 5.0
_MAX_PIPELINED: Final = 64 * 1024
_WATCH_AFTER: Final = 0.1
"""Seconds (up to twice that) a POST's answer waits for its stream before it also
watches its socket (see :class:`_LateWatch`)."""

_T = TypeVar("_T")

_CURRENT: contextvars.ContextVar[_HttpSession | None] = contextvars.ContextVar(
    "mcp_ref_http_session", default=None
)


@attrs.frozen(kw_only=True)
class HttpServerInfo:
    """Where a running :func:`serve_http` listens (what ``task_status.started`` gives)."""

    host: str
    """The address bound, e.g. ``"127.0.0.1"``."""
    port: int
    """The TCP port bound (the real one when 0 was asked for)."""
    url: str
    """The MCP endpoint, e.g. ``"http://127.0.0.1:8000/mcp"``."""
    legacy_sse_url: str | None
    """The 2024-11-05 SSE endpoint, or None when not hosted."""


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
    sess = _CURRENT.get()
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


# -- logical streams and sessions -------------------------------------------------------


class _Stream:
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
        # socket (see _wait_change); one per attached response, so a handful at most.
        self.watchers: set[trio.CancelScope] = set()
        # Set by _LateWatch once a response has waited a while: from then on every wait
        # watches the socket too.
        self.watch = False

    def wake(self) -> None:
        self.changed.set()
        self.changed = trio.Event()
        for scope in self.watchers:
            scope.cancel()


class _LateWatch:
    """Tells the responses waiting too long for their stream to watch their socket.

    A POST's answer usually comes within moments, so it first waits on its stream's
    ``changed`` event alone: no timer, no socket registration.  It puts its stream in
    ``young``; every ``delay`` seconds one task (:meth:`run`) sets ``watch`` on the
    streams still waiting since the tick before and wakes them, so a response starts
    watching its socket after ``delay`` to ``2 * delay`` seconds.  One sleeping task for
    the whole server, instead of a cancel scope per request.
    """

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self._young: set[_Stream] = set()
        self._old: set[_Stream] = set()
        self._work = trio.Event()

    def add(self, stream: _Stream) -> None:
        self._young.add(stream)
        if not self._work.is_set():
            self._work.set()

    def discard(self, stream: _Stream) -> None:
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
                stream.wake()


class _SseOut:
    """What one SSE response has yet to write: h11 events, written together by
    :meth:`flush`, and the id of the last event among them."""

    __slots__ = ("delivered", "events", "generation", "h", "stream")

    def __init__(self, h: H11Stream, stream: _Stream, head: h11.Response) -> None:
        self.h = h
        self.stream = stream
        self.generation = 0  # the stream's generation when this response attached it
        self.events: list[Any] = [head]
        self.delivered: str | None = None  # id of the last event in ``events``

    def add(self, data: bytes) -> None:
        self.events.append(h11.Data(data=data))

    async def flush(self, *, end: bool = False) -> None:
        """Write what is pending (with the end of the response when ``end``); then the
        stream's ``delivered_id`` is the last event written."""
        events = self.events
        if end:
            events.append(h11.EndOfMessage())
        if events:
            self.events = []
            await self.h.send(*events)
        if self.delivered is not None:
            if self.stream.generation == self.generation:
                self.stream.delivered_id = self.delivered
            self.delivered = None


class _HttpSession:
    """One MCP session of the HTTP server: its channel, streams and event store."""

    def __init__(
        self,
        server: _HttpServer,
        session_id: str | None,
        *,
        kind: Literal["streamable", "stateless", "legacy"],
    ) -> None:
        limits = server.limits
        self.server = server
        self.id = session_id
        self.kind = kind
        self.store = EventStore(
            max_events_per_stream=limits.stored_events_per_stream,
            max_streams=max(limits.stored_streams, limits.max_streams_per_session + 2),
            max_total_bytes=limits.stored_bytes,
        )
        self.streams: dict[str, _Stream] = {}  # live streams: unfinished, or standalone
        self.routes: dict[Any, _Stream] = {}  # request key -> its stream
        self._next_stream = 0
        self.protocol_version: str | None = None
        self.init_key: Any = None
        self.init_failed = False
        self.input_send, self.input_receive = trio.open_memory_channel[bytes](_INPUT_QUEUE)
        self.channel = _ServerChannel(self)
        self.last_used = trio.current_time()
        self.ended = False
        self.end_reason = ""
        self.started = trio.Event()
        self.done = trio.Event()
        self.cancel_scope = trio.CancelScope()
        self._json_heads: dict[str | None, list[tuple[bytes, bytes]]] = {}
        self._sse_heads: dict[str | None, list[tuple[bytes, bytes]]] = {}
        if kind == "streamable":
            self.streams[STANDALONE] = self.new_stream(STANDALONE, json_mode=False)
        elif kind == "legacy":
            self.streams[LEGACY] = self.new_stream(LEGACY, json_mode=False)

    def new_stream(
        self, stream_id: str | None, *, json_mode: bool, pending: set[Any] | None = None
    ) -> _Stream:
        if stream_id is None:
            self._next_stream += 1
            stream_id = f"p{self._next_stream}"
        base = "" if json_mode else self.store.append(stream_id, "")
        return _Stream(stream_id, json_mode=json_mode, pending=pending or set(), base=base)

    def json_headers(self, session_id: str | None, length: int) -> list[tuple[bytes, bytes]]:
        """``rules.response_headers(PostReply.JSON, session_id=..., content_length=...)``,
        built (and the session id validated) once per session: only the length changes."""
        base = self._json_heads.get(session_id)
        if base is None:
            base = rules.response_headers(PostReply.JSON, session_id=session_id, content_length=0)
            self._json_heads[session_id] = base  # two at most: with and without the id
        value = str(length).encode("ascii")
        return [(k, value) if k == _CONTENT_LENGTH else (k, v) for k, v in base]

    def sse_headers(self, session_id: str | None, last: bool) -> list[tuple[bytes, bytes]]:
        """``rules.response_headers(PostReply.SSE, session_id=...)`` (plus ``Connection:
        close`` when ``last``), built (and the session id validated) once per session."""
        base = self._sse_heads.get(session_id)
        if base is None:
            base = rules.response_headers(PostReply.SSE, session_id=session_id)
            self._sse_heads[session_id] = base  # two at most: with and without the id
        return [*base, _CLOSE] if last else base

    @property
    def primes(self) -> bool:
        """Whether this session's SSE responses start with a priming event."""
        return self.protocol_version is not None and self.protocol_version >= PRIMING_SINCE

    def busy(self) -> bool:
        return any(s.attached for s in self.streams.values())

    def touch(self) -> None:
        self.last_used = trio.current_time()

    # -- output (from the session) ------------------------------------------------------

    def route(self, data: bytes, related: RequestId | None) -> None:
        """Put one outgoing message on exactly one logical stream.  Never blocks."""
        # Spec: 2025-06-18/basic/transports#multiple-connections.2
        # Each message is appended to one stream's events; only that stream's attached
        # response writes it (and a resumption of that stream replays it).
        info = peek_message(data)
        stream: _Stream | None = None
        if related is not None:
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.12
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
            self._note_initialize_result(data)
        if stream is not None and stream.json_mode and final_key is None:
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.8
            # A JSON answer holds one response only: other messages use the GET stream.
            stream = None
        if stream is None and info is not None and info.kind is MessageKind.RESPONSE:
            if self.kind != "legacy":
                # Spec: 2025-06-18/basic/transports#listening-for-messages-from-the-server.6
                # A response whose POST is gone (e.g. cancelled meanwhile) never goes to
                # the GET stream.
                log.debug("response to an unknown or cancelled request dropped")
                return
        if stream is None:
            # Spec: 2025-06-18/basic/transports#listening-for-messages-from-the-server.5
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
        if final_key is not None:
            del self.routes[final_key]
            stream.pending.discard(final_key)
            if not stream.pending and stream.id not in (STANDALONE, LEGACY):
                stream.finished = True
                self.streams.pop(stream.id, None)
        stream.wake()

    def _note_initialize_result(self, data: bytes) -> None:
        try:
            obj = json.loads(data)
            version = obj["result"]["protocolVersion"]
        except (ValueError, KeyError, TypeError):
            self.init_failed = True
            return
        if isinstance(version, str):
            self.protocol_version = version

    def cancel_request(self, rid: RequestId) -> None:
        """The client cancelled ``rid``: its response will never come; end its stream."""
        key = request_key(rid)
        stream = self.routes.pop(key, None)
        if stream is None:
            return
        stream.pending.discard(key)
        if not stream.pending and stream.id not in (STANDALONE, LEGACY):
            stream.finished = True
            self.streams.pop(stream.id, None)
        stream.wake()

    # -- input (to the session) ----------------------------------------------------------

    async def deliver(self, body: bytes) -> bool:
        """Hand one POST body to the session; False when the session has ended."""
        try:
            try:
                self.input_send.send_nowait(body)
            except trio.WouldBlock:
                await self.input_send.send(body)  # the queue is full: wait for room
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            return False
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
        self.server.forget(self)


class _ServerChannel:
    """The :class:`~mcp_ref.trio.MessageChannel` a server session talks to."""

    framing: Literal["lines", "messages"] = "messages"
    eof_reason: str | None = None

    def __init__(self, sess: _HttpSession) -> None:
        self._sess = sess

    async def receive(self) -> bytes:
        """The next POSTed message; ``b""`` once the session was ended."""
        try:
            return await self._sess.input_receive.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            self.eof_reason = self._sess.end_reason or None
            return b""

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


# -- the server ---------------------------------------------------------------------------


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _header(headers: _Headers, name: bytes) -> bytes | None:
    for key, value in headers:
        if key == name:
            return value
    return None


_MAX_MEMOS: Final = 256
_CONTENT_LENGTH: Final = b"content-length"
_CLOSE: Final = (b"connection", b"close")


class _Headers(list[tuple[bytes, bytes]]):
    """One request's headers (lowercase names), plus ``memo``: the outcome of each
    header rule for this exact target and header set, shared with every later request
    that repeats them (a client sends the same headers each time; only
    ``Content-Length`` changes, so it is not part of the set and is checked anew).

    ``size`` is the head's size in bytes as the 431 rule counts it.
    """

    __slots__ = ("memo", "size")

    def __init__(self, items: list[tuple[bytes, bytes]], memo: dict[Any, Any], size: int) -> None:
        super().__init__(items)
        self.memo = memo
        self.size = size

    def rule(self, key: Any, compute: Callable[[], _T]) -> _T:
        """``compute()``, once per distinct header set (the rules are pure functions of
        the headers and of the server's fixed settings)."""
        memo = self.memo
        try:
            value: _T = memo[key]
        except KeyError:
            value = memo[key] = compute()
        return value


class _Refused(Exception):
    def __init__(self, error: HttpError) -> None:
        super().__init__(error.detail)
        self.error = error


class _HttpServer:
    def __init__(
        self,
        handler: Handler | Callable[[], Handler],
        *,
        path: str,
        json_response: bool,
        stateless: bool,
        enable_get_stream: bool,
        allowed_origins: Collection[str],
        allowed_hosts: Collection[str],
        limits: HttpLimits,
        legacy_sse: bool,
        legacy_sse_path: str,
        legacy_messages_path: str,
        retry_ms: int,
        session_kw: dict[str, Any],
    ) -> None:
        self.handler = handler
        self.path = path
        self.json_response = json_response
        self.stateless = stateless
        self.enable_get_stream = enable_get_stream and not stateless
        self.allowed_origins = allowed_origins
        self.allowed_hosts = allowed_hosts
        self.limits = limits
        self.legacy_sse = legacy_sse
        self.legacy_sse_path = legacy_sse_path
        self.legacy_messages_path = legacy_messages_path
        self.retry_ms = retry_ms
        self.session_kw = session_kw
        self.sessions: dict[str, _HttpSession] = {}
        self.live = 0  # owner tasks running (sessions of every kind)
        self.supervisor = Supervisor()
        self.reaper_nudge = trio.Event()
        self.late_watch = _LateWatch(_WATCH_AFTER)
        # Header-rule outcomes per (target, header set); see _Headers.  Bounded.
        self._memos: dict[tuple[Any, ...], dict[Any, Any]] = {}

    def headers_of(self, req: h11.Request) -> _Headers:
        """The request's headers with the memo of their header set."""
        items = []
        rest = []
        size = len(req.target)
        for name, value in req.headers:
            size += len(name) + len(value) + 4
            if name == _CONTENT_LENGTH:
                rest.append((name, value))
            else:
                items.append((name, value))
        key = (req.target, *items)
        memo = self._memos.get(key)
        if memo is None:
            if len(self._memos) >= _MAX_MEMOS:
                self._memos.clear()
            memo = self._memos[key] = {}
        items.extend(rest)
        return _Headers(items, memo, size)

    # -- sessions ------------------------------------------------------------------------

    def _handler(self) -> Handler:
        h = self.handler
        if hasattr(h, "handle_request"):
            return h  # type: ignore[return-value]
        return h()  # a factory

    async def open_session(
        self, kind: Literal["streamable", "stateless", "legacy"]
    ) -> _HttpSession:
        """Start a session's owner task; raises _Refused(503) past the bound."""
        if self.live >= self.limits.max_sessions:
            raise _Refused(
                http_error(
                    503,
                    f"too many sessions (at most {self.limits.max_sessions})",
                    clause=None,
                    headers=[(b"retry-after", b"1")],
                )
            )
        session_id = None
        if kind != "stateless":
            # Spec: 2025-06-18/basic/transports#session-management.2
            session_id = rules.new_session_id(secrets.token_bytes(16))
        sess = _HttpSession(self, session_id, kind=kind)
        if not self.supervisor.start_soon(self._own, sess):
            raise _Refused(http_error(503, "the server is shutting down", clause=None))
        self.live += 1
        if session_id is not None:
            self.sessions[session_id] = sess
            self.reaper_nudge.set()
        await sess.started.wait()
        return sess

    async def _own(self, sess: _HttpSession) -> None:
        """The owner task of one session: runs it until it ends."""
        _CURRENT.set(sess)
        try:
            with sess.cancel_scope:
                handler = self._handler()
                serve = getattr(handler, "serve", None)
                sess.started.set()
                if serve is not None:
                    await serve(sess.channel, **self.session_kw)
                else:
                    async with open_session(
                        sess.channel, SERVER, handler, **self.session_kw
                    ) as session:
                        await session.wait_closed()
        except Exception:
            log.exception("session %s failed", sess.id)
        finally:
            sess.started.set()
            sess.end(sess.end_reason or "the session ended")
            self.live -= 1
            sess.done.set()

    def forget(self, sess: _HttpSession) -> None:
        if sess.id is not None and self.sessions.get(sess.id) is sess:
            del self.sessions[sess.id]
        # Spec: 2025-06-18/basic/transports#session-management.6
        # Input is closed; if the session does not end by itself, cancel it.
        if not sess.done.is_set():
            self.supervisor.start_soon(self._cancel_later, sess)

    async def _cancel_later(self, sess: _HttpSession) -> None:
        with trio.move_on_after(_CLOSE_GRACE):
            await sess.done.wait()
            return
        sess.cancel_scope.cancel()

    async def reaper(self) -> None:
        """End sessions idle for ``limits.session_idle_seconds`` (no request, no stream)."""
        idle = self.limits.session_idle_seconds
        while True:
            nudge = self.reaper_nudge = trio.Event()
            now = trio.current_time()
            deadline = math.inf
            for sess in list(self.sessions.values()):
                if sess.busy():
                    sess.touch()
                expires = sess.last_used + idle
                if expires <= now:
                    sess.end(f"idle for {idle} s")
                else:
                    deadline = min(deadline, expires)
            with trio.move_on_at(deadline):
                await nudge.wait()

    # -- connections ---------------------------------------------------------------------

    async def handle_connection(self, stream: trio.abc.Stream) -> None:
        limits = self.limits
        h = H11Stream(stream, h11.SERVER, max_incomplete_event_size=limits.max_header_bytes)
        served = 0
        try:
            while True:
                event: Any = None
                with trio.move_on_after(limits.idle_timeout_seconds):
                    try:
                        event = await h.next_event()
                    except h11.RemoteProtocolError as exc:
                        status = exc.error_status_hint or 400
                        await self._quick_error(h, http_error(status, str(exc), clause=None))
                        return
                if event is None:
                    # Idle: close quietly; in the middle of a request head: 408.
                    if h.conn.their_state is not h11.IDLE or h.conn.trailing_data[0]:
                        err = http_error(408, "request head not received in time", clause=None)
                        await self._quick_error(h, err)
                    return
                if not isinstance(event, h11.Request):
                    return  # ConnectionClosed (or PAUSED: nothing more to serve)
                served += 1
                last = served >= limits.max_requests_per_connection
                await self.handle_request(h, event, last)
                if last or h.conn.our_state is not h11.DONE or h.conn.their_state is not h11.DONE:
                    return
                h.conn.start_next_cycle()
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError) as exc:
            log.debug("HTTP connection ended: %r", exc)
        except Exception:
            # A bug of ours must not take the server down with it: this connection ends.
            log.exception("error while serving an HTTP connection")
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(1):
                await h.aclose()

    async def _quick_error(self, h: H11Stream, err: HttpError) -> None:
        """Answer with ``err`` and ``Connection: close`` when h11 still lets us."""
        if h.conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return
        try:
            await _send_error(h, err, close=True)
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
            pass

    async def handle_request(self, h: H11Stream, req: h11.Request, last: bool) -> None:
        headers = self.headers_of(req)
        method = bytes(req.method)
        parts = headers.rule("target", lambda: urlsplit(bytes(req.target).decode("latin-1")))
        try:
            # h11 bounds a head still arriving; one that came whole is measured here.
            if headers.size > self.limits.max_header_bytes:
                raise _Refused(
                    http_error(
                        431,
                        f"request head larger than {self.limits.max_header_bytes} bytes",
                        clause=None,
                    )
                )
            err = headers.rule(
                "origin, host",
                lambda: (
                    rules.check_origin(headers, self.allowed_origins)
                    or rules.check_host(headers, self.allowed_hosts)
                ),
            )
            if err is not None:
                raise _Refused(err)
            if parts.path == self.path:
                if method == b"POST":
                    await self.post(h, headers, last)
                elif method == b"GET":
                    await self.get(h, headers, last)
                elif method == b"DELETE":
                    await self.delete(h, headers, last)
                else:
                    err = rules.check_method(
                        method,
                        allow_get=self.enable_get_stream,
                        allow_delete=not self.stateless,
                    )
                    raise _Refused(err or http_error(405, "method not allowed", clause=None))
            elif self.legacy_sse and parts.path == self.legacy_sse_path:
                if method != b"GET":
                    raise _Refused(
                        http_error(
                            405,
                            "the 2024-11-05 SSE endpoint takes GET only",
                            clause=None,
                            headers=[(b"allow", b"GET")],
                        )
                    )
                await self.legacy_get(h, last)
            elif self.legacy_sse and parts.path == self.legacy_messages_path:
                if method != b"POST":
                    raise _Refused(
                        http_error(
                            405,
                            "the 2024-11-05 message endpoint takes POST only",
                            clause=None,
                            headers=[(b"allow", b"POST")],
                        )
                    )
                await self.legacy_post(h, headers, parts.query, last)
            else:
                raise _Refused(http_error(404, f"no MCP endpoint at {parts.path}", clause=None))
        except _Refused as refused:
            await self._refuse(h, refused.error, last)

    async def _refuse(self, h: H11Stream, err: HttpError, last: bool) -> None:
        if h.conn.our_state is not h11.SEND_RESPONSE:
            return  # a response is already under way: it cannot be replaced
        # The body may not have been read: then the connection cannot be reused.
        close = last or h.conn.their_state is not h11.DONE
        await _send_error(h, err, close=close)

    # -- POST ----------------------------------------------------------------------------

    async def read_body(self, h: H11Stream, headers: _Headers) -> bytes:
        limits = self.limits
        err = headers.rule(
            "content-type", lambda: rules.check_content_type(headers)
        ) or rules.check_content_length(headers, limits.max_body_bytes)
        if err is not None:
            raise _Refused(err)
        if h.conn.they_are_waiting_for_100_continue:
            await h.send(h11.InformationalResponse(status_code=100, headers=[]))
        body = bytearray()

        def add(event: Any) -> bool:
            """Take one body event; True at its end."""
            if isinstance(event, h11.Data):
                body.extend(event.data)
                if len(body) > limits.max_body_bytes:
                    raise _Refused(
                        http_error(
                            413, f"body larger than {limits.max_body_bytes} bytes", clause=None
                        )
                    )
                return False
            if isinstance(event, h11.EndOfMessage):
                return True
            raise trio.BrokenResourceError("the client went away during the body")

        # Usually the body came with the head: no waiting, no timer.
        while (event := h.conn.next_event()) is not h11.NEED_DATA:
            if add(event):
                return bytes(body)
        with trio.move_on_after(limits.idle_timeout_seconds) as scope:
            while not add(await h.next_event()):
                pass
            return bytes(body)
        assert scope.cancelled_caught
        raise _Refused(http_error(408, "request body not received in time", clause=None))

    def _messages(self, body: bytes) -> list[MessageInfo]:
        # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.4
        infos = peek_body(body)
        if isinstance(infos, str):
            code = -32700 if infos.startswith("parse error") else -32600
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.6
            raise _Refused(
                http_error(
                    400,
                    infos,
                    clause="2025-06-18/basic/transports#sending-messages-to-the-server.4",
                    code=code,
                )
            )
        return infos

    def _version(self, headers: _Headers) -> str:
        # Spec: 2025-06-18/basic/transports#protocol-version-header.4
        # Spec: 2025-06-18/basic/transports#protocol-version-header.3
        # Any supported version passes: we do not hold the client to the negotiated one.
        version = headers.rule(
            "version", lambda: rules.check_protocol_version(headers, None, SUPPORTED_VERSIONS)
        )
        if isinstance(version, HttpError):
            raise _Refused(version)
        return version

    def _session_of(self, headers: _Headers) -> _HttpSession:
        known = headers.memo.get("session")
        if known is not None and known in self.sessions:
            got = known  # a well-formed id seen before, of a live session
        else:
            got = rules.check_session(headers, is_initialize=False, active_sessions=self.sessions)
            if isinstance(got, HttpError):
                raise _Refused(got)
            assert got is not None
            headers.memo["session"] = got
        sess = self.sessions[got]
        if sess.kind != "streamable":
            raise _Refused(
                http_error(404, "session not found (unknown or terminated)", clause=None)
            )
        return sess

    async def post(self, h: H11Stream, headers: _Headers, last: bool) -> None:
        err = headers.rule("accept POST", lambda: rules.check_accept(headers, b"POST"))
        if err is not None:
            raise _Refused(err)
        body = await self.read_body(h, headers)
        infos = self._messages(body)
        is_init = any(m.method == "initialize" for m in infos)
        if is_init and len(infos) > 1:
            raise _Refused(
                http_error(
                    400,
                    "initialize must be sent alone",
                    clause="2025-06-18/basic/lifecycle#initialization.1",
                )
            )
        if self.stateless:
            await self.stateless_post(h, headers, body, infos, is_init, last)
            return
        if is_init:
            got = rules.check_session(headers, is_initialize=True, active_sessions=self.sessions)
            if isinstance(got, HttpError):
                raise _Refused(got)
            sess = await self.open_session("streamable")
        else:
            sess = self._session_of(headers)
            self._version(headers)
            if len(infos) > 1 and sess.protocol_version not in ("2025-03-26", None):
                # Spec: 2025-06-18/basic#messages.1 (no batches from 2025-06-18 on)
                raise _Refused(
                    http_error(
                        400,
                        f"JSON-RPC batches are not allowed in {sess.protocol_version}",
                        clause="2025-06-18/basic/transports#sending-messages-to-the-server.4",
                    )
                )
        sess.touch()
        await self.answer_post(h, sess, body, infos, is_init=is_init, last=last)

    async def answer_post(
        self,
        h: H11Stream,
        sess: _HttpSession,
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
                    raise _Refused(_gone())
            for m in infos:
                if m.method == "notifications/cancelled":
                    _cancel_from(sess, body)
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.5
            reply = rules.post_reply(infos[0].kind, stream=False)
            await _send_simple(h, 202, rules.response_headers(reply), last)
            return
        keys = {request_key(m.id) for m in requests}
        if any(k in sess.routes for k in keys) or len(keys) != len(requests):
            raise _Refused(
                http_error(400, "a request with this id is still being handled", clause=None)
            )
        if len(sess.streams) >= self.limits.max_streams_per_session + 1:
            raise _Refused(
                http_error(
                    429,
                    f"too many requests in progress in this session "
                    f"(at most {self.limits.max_streams_per_session})",
                    clause=None,
                )
            )
        # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.8
        json_mode = self.json_response
        stream = sess.new_stream(None, json_mode=json_mode, pending=set(keys))
        sess.streams[stream.id] = stream
        for k in keys:
            sess.routes[k] = stream
        if is_init:
            sess.init_key = next(iter(keys))
        for data in (*extra, body):
            if not await sess.deliver(data):
                for k in keys:
                    sess.routes.pop(k, None)
                sess.streams.pop(stream.id, None)
                raise _Refused(_gone())
        session_id = sess.id if sess.kind == "streamable" else None
        try:
            if json_mode:
                await self.answer_json(h, sess, stream, session_id, batch=len(infos) > 1, last=last)
            else:
                await self.answer_sse(h, sess, stream, session_id, last=last, post=True)
        finally:
            sess.touch()
            if is_init and sess.init_failed and sess.kind == "streamable":
                sess.end("initialize failed")

    async def answer_json(
        self,
        h: H11Stream,
        sess: _HttpSession,
        stream: _Stream,
        session_id: str | None,
        *,
        batch: bool,
        last: bool,
    ) -> None:
        while not stream.finished and not sess.ended:
            if await _wait_change(h, stream, math.inf, late=self.late_watch) == "eof":
                return  # the client went away
        if not stream.finished:
            raise _Refused(_gone())
        parts = stream.json_parts
        body = b"[" + b",".join(parts) + b"]" if batch else (parts[0] if parts else b"")
        if not body:
            await _send_simple(h, 202, rules.response_headers(PostReply.ACCEPTED), last)
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
        self,
        h: H11Stream,
        sess: _HttpSession,
        stream: _Stream,
        session_id: str | None,
        *,
        last: bool,
        cursor: str | None = None,
        first: SSEEvent | None = None,
        post: bool = False,
    ) -> None:
        """Attach ``stream`` to this response and write its events from ``cursor``
        (``post``: the answer to the POST that carried the stream's requests)."""
        head = h11.Response(
            status_code=200, headers=sess.sse_headers(session_id, last), reason=b"OK"
        )
        out = _SseOut(h, stream, head)
        if first is not None:
            out.add(encode_event(first))
        if cursor is None:
            cursor = stream.delivered_id or stream.base_id
        stream.generation += 1
        out.generation = stream.generation
        stream.attached = True
        stream.wake()
        try:
            client_left = await self._pump(out, sess, cursor, post)
        finally:
            if stream.generation == out.generation:
                stream.attached = False
        sess.touch()
        if not client_left:
            await out.flush(end=True)

    async def _pump(self, out: _SseOut, sess: _HttpSession, cursor: str, post: bool) -> bool:
        """Write the stream's events from ``cursor`` until it ends; True when the client
        closed its side first.  The events, and the head, are written together before
        each wait: a POST's head waits for the first events (``_WATCH_AFTER`` seconds
        or so at most, see :class:`_LateWatch`), so a quick answer costs one write
        (head, events, end)."""
        stream, generation = out.stream, out.generation
        if sess.primes:
            # Spec: 2025-06-18/basic/transports#resumability-and-redelivery.1
            # 2025-11-25: prime the stream with an id and empty data, and say when to
            # reconnect.
            out.add(encode_event(SSEEvent(data="", id=cursor, retry=self.retry_ms)))
        keepalive = self.limits.keepalive_seconds
        # A POST's stream usually ends within moments: its head waits for the first
        # events.  Once anything is written the socket is watched at each wait, so that
        # events are not written after the client left (they stay for a resumption);
        # before, the client holds no event id to resume from.
        head_waits = post
        while True:
            changed = stream.changed
            if stream.generation != generation:
                return False  # another response took the stream over
            if cursor != stream.last_id:
                replay = sess.store.replay_after(cursor)
                if isinstance(replay, HttpError):
                    log.warning(
                        "stream %s of session %s lost events: %s", stream.id, sess.id, replay
                    )
                    return False
                for event_id, data in replay.events:
                    if data:
                        out.add(encode_event(rules.message_event(data, event_id=event_id)))
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
                await _wait_change(out.h, stream, keepalive, changed, late=self.late_watch)
                continue
            head_waits = False
            await out.flush()
            got = await _wait_change(out.h, stream, keepalive, changed)
            if got == "eof":
                return True
            if got == "timeout":
                out.add(encode_comment("keepalive"))

    # -- stateless ----------------------------------------------------------------------

    async def stateless_post(
        self,
        h: H11Stream,
        headers: _Headers,
        body: bytes,
        infos: list[MessageInfo],
        is_init: bool,
        last: bool,
    ) -> None:
        extra: list[bytes] = []
        if not is_init:
            version = self._version(headers)
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
        sess = await self.open_session("stateless")
        try:
            if extra:
                # The answer to the synthetic initialize goes nowhere.
                discard = sess.new_stream("discard", json_mode=True)
                sess.routes[request_key(_STATELESS_INIT_ID)] = discard
            await self.answer_post(h, sess, body, infos, is_init=is_init, last=last, extra=extra)
        finally:
            sess.end("stateless request answered")

    # -- GET and DELETE ------------------------------------------------------------------

    async def get(self, h: H11Stream, headers: _Headers, last: bool) -> None:
        err = rules.check_method(
            b"GET", allow_get=self.enable_get_stream, allow_delete=not self.stateless
        ) or rules.check_accept(headers, b"GET")
        if err is not None:
            raise _Refused(err)
        sess = self._session_of(headers)
        self._version(headers)
        last_event_id = _header(headers, LAST_EVENT_ID)
        if last_event_id is None:
            stream = sess.streams[STANDALONE]
            cursor = None
        else:
            # Spec: 2025-06-18/basic/transports#resumability-and-redelivery.4
            found = sess.store.replay_after(last_event_id)
            if isinstance(found, HttpError):
                raise _Refused(found)
            live = sess.streams.get(found.stream_id)
            if live is None:
                # Finished: the events left to send, then the end.
                live = _Stream(found.stream_id, json_mode=False, pending=set(), base="")
                live.finished = True
                live.last_id = found.events[-1][0] if found.events else last_event_id.decode()
            stream = live
            cursor = last_event_id.decode("latin-1")
        sess.touch()
        await self.answer_sse(h, sess, stream, sess.id, last=last, cursor=cursor)

    async def delete(self, h: H11Stream, headers: _Headers, last: bool) -> None:
        if self.stateless:
            err = rules.check_method(b"DELETE", allow_get=False, allow_delete=False)
            assert err is not None
            raise _Refused(err)
        sess = self._session_of(headers)
        self._version(headers)
        # Spec: 2025-06-18/basic/transports#session-management.8
        sess.end("terminated by the client (DELETE)")
        await _send_simple(h, 200, [(b"content-length", b"0")], last)

    # -- 2024-11-05 HTTP+SSE -------------------------------------------------------------

    async def legacy_get(self, h: H11Stream, last: bool) -> None:
        sess = await self.open_session("legacy")
        assert sess.id is not None
        try:
            # Source: 2024-11-05/basic/transports "HTTP with SSE": the first event names
            # the URL to POST messages to.
            endpoint = rules.endpoint_event(f"{self.legacy_messages_path}?session_id={sess.id}")
            await self.answer_sse(h, sess, sess.streams[LEGACY], None, last=True, first=endpoint)
        finally:
            sess.end("the SSE connection closed")

    async def legacy_post(self, h: H11Stream, headers: _Headers, query: str, last: bool) -> None:
        values = parse_qs(query).get("session_id") or [""]
        sess = self.sessions.get(values[0])
        if not values[0]:
            raise _Refused(http_error(400, "missing session_id", clause=None))
        if sess is None or sess.kind != "legacy":
            raise _Refused(http_error(404, "session not found", clause=None))
        body = await self.read_body(h, headers)
        infos = self._messages(body)
        sess.touch()
        if not await sess.deliver(body):
            raise _Refused(_gone())
        for m in infos:
            if m.method == "notifications/cancelled":
                _cancel_from(sess, body)
        await _send_simple(h, 202, rules.response_headers(PostReply.ACCEPTED), last)


def _gone() -> HttpError:
    # Spec: 2025-06-18/basic/transports#session-management.6
    return http_error(
        404,
        "session not found (terminated)",
        clause="2025-06-18/basic/transports#session-management.6",
    )


def _cancel_from(sess: _HttpSession, body: bytes) -> None:
    """Read ``requestId`` of a ``notifications/cancelled`` body and end that stream."""
    try:
        obj = json.loads(body)
    except ValueError:
        return
    for item in obj if isinstance(obj, list) else [obj]:
        if isinstance(item, dict) and item.get("method") == "notifications/cancelled":
            params = item.get("params")
            rid = params.get("requestId") if isinstance(params, dict) else None
            if isinstance(rid, str | int) and not isinstance(rid, bool):
                sess.cancel_request(rid)


async def _wait_change(
    h: H11Stream,
    stream: _Stream,
    timeout: float,
    changed: trio.Event | None = None,
    *,
    late: _LateWatch | None = None,
) -> Literal["changed", "eof", "timeout"]:
    """Wait for news of ``stream`` (its ``changed`` event, or the one given) while
    watching the client's side of the connection, at most ``timeout`` seconds.

    Returns ``"changed"``, ``"eof"`` (the client closed its side: nobody will read the
    rest) or ``"timeout"``.  With ``late`` (the answer to a POST, which usually comes
    within moments) and until ``late`` sets the stream's ``watch``, the wait is on the
    event alone, without timeout, and may return ``"changed"`` for no news: no timer and
    no socket registration to undo when the answer comes; a client that left is then
    noticed up to ``2 * _WATCH_AFTER`` seconds late.  Otherwise the socket is read too:
    input the client pipelines meanwhile goes into h11 for the next request (up to
    ``_MAX_PIPELINED`` bytes; past that the socket is not read).  :meth:`_Stream.wake`
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


def _reason(status: int) -> bytes:
    try:
        return http.HTTPStatus(status).phrase.encode("ascii")
    except ValueError:
        return b""


async def _send_simple(
    h: H11Stream, status: int, headers: list[tuple[bytes, bytes]], last: bool
) -> None:
    if last:
        headers = [*headers, (b"connection", b"close")]
    await h.send(
        h11.Response(status_code=status, headers=headers, reason=_reason(status)),
        h11.EndOfMessage(),
    )


async def _send_error(h: H11Stream, err: HttpError, *, close: bool) -> None:
    headers = list(err.headers)
    if close:
        headers.append((b"connection", b"close"))
    response = h11.Response(status_code=err.status, headers=headers, reason=err.reason)
    if err.body:
        await h.send(response, h11.Data(data=err.body), h11.EndOfMessage())
    else:
        await h.send(response, h11.EndOfMessage())


async def serve_http(
    handler: Handler | Callable[[], Handler],
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    path: str = "/mcp",
    json_response: bool = False,
    stateless: bool = False,
    enable_get_stream: bool = True,
    allowed_origins: Collection[str] | None = None,
    allowed_hosts: Collection[str] | None = None,
    limits: HttpLimits | None = None,
    legacy_sse: bool = True,
    legacy_sse_path: str = "/sse",
    legacy_messages_path: str = "/messages",
    retry_ms: int = 1000,
    task_status: trio.TaskStatus[HttpServerInfo] = trio.TASK_STATUS_IGNORED,
    **session_kw: Any,
) -> None:
    """Serve MCP over Streamable HTTP (and 2024-11-05 HTTP+SSE) until cancelled.

    Args:
        handler: answers every session: a :class:`~mcp_ref.trio.Handler` shared by all
            sessions (e.g. an :class:`mcp_ref.server.Server`; its ``serve(channel)``
            method is used when it has one), or a zero-argument factory called once per
            session.
        host: the address to bind (default loopback: 2025-06-18/basic/transports
            #security-warning.2).
        port: the TCP port; 0 picks a free one (see ``task_status``).
        path: the MCP endpoint's path.
        json_response: answer requests with one JSON body instead of an SSE stream.
        stateless: no sessions (see the module docstring).
        enable_get_stream: offer the standalone GET stream (else GET gets 405).
        allowed_origins: ``Origin`` patterns (:func:`mcp_ref._http.check_origin`);
            default: the loopback origins for a loopback ``host``, else none (requests
            with an ``Origin`` are refused with 403, those without pass).
        allowed_hosts: ``Host`` patterns (:func:`mcp_ref._http.check_host`); default the
            loopback names for a loopback ``host``, else any.
        limits: the bounds (:class:`~mcp_ref._http.HttpLimits`).
        legacy_sse: also host the 2024-11-05 endpoints at ``legacy_sse_path`` (GET) and
            ``legacy_messages_path`` (POST).
        retry_ms: the ``retry`` field of priming events, in milliseconds.
        task_status: ``started`` with an :class:`HttpServerInfo` once listening.
        **session_kw: passed to the handler's ``serve`` or to
            :func:`~mcp_ref.trio.open_session` (``default_timeout``, ...).

    Raises:
        OSError: the address cannot be bound.

    Source: 2025-06-18/basic/transports#streamable-http; 2024-11-05/basic/transports
    "HTTP with SSE"; 2025-06-18/basic/transports#backwards-compatibility.
    """
    limits = limits or HttpLimits()
    loopback = _is_loopback(host)
    if allowed_origins is None:
        allowed_origins = rules.LOCALHOST_ORIGINS if loopback else ()
    if allowed_hosts is None:
        allowed_hosts = rules.LOCALHOST_HOSTS if loopback else ("*",)
    if not path.startswith("/"):
        raise ValueError("path must start with /")
    server = _HttpServer(
        handler,
        path=path,
        json_response=json_response,
        stateless=stateless,
        enable_get_stream=enable_get_stream,
        allowed_origins=allowed_origins,
        allowed_hosts=allowed_hosts,
        limits=limits,
        legacy_sse=legacy_sse and not stateless,
        legacy_sse_path=legacy_sse_path,
        legacy_messages_path=legacy_messages_path,
        retry_ms=retry_ms,
        session_kw=session_kw,
    )
    listeners = await trio.open_tcp_listeners(port, host=host)
    try:
        bound = listeners[0].socket.getsockname()
        name = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        base = f"http://{name}:{bound[1]}"
        info = HttpServerInfo(
            host=bound[0],
            port=bound[1],
            url=base + path,
            legacy_sse_url=base + legacy_sse_path if server.legacy_sse else None,
        )
        async with trio.open_nursery() as nursery:
            await nursery.start(server.supervisor.run)
            nursery.start_soon(server.reaper)
            nursery.start_soon(server.late_watch.run)
            await nursery.start(trio.serve_listeners, server.handle_connection, listeners)
            log.info("serving MCP on %s", info.url)
            task_status.started(info)
    finally:
        for listener in listeners:
            with trio.CancelScope(shield=True):
                await listener.aclose()


@asynccontextmanager
async def open_http_server(
    handler: Handler | Callable[[], Handler], host: str = "127.0.0.1", port: int = 0, **kw: Any
) -> AsyncIterator[HttpServerInfo]:
    """Run :func:`serve_http` for the duration of an ``async with`` block (tests, embedding).

    Yields:
        The :class:`HttpServerInfo` of the listening server; leaving the block stops it.
    """
    async with trio.open_nursery() as nursery:
        info: HttpServerInfo = await nursery.start(_serve_with_status, handler, host, port, kw)
        try:
            yield info
        finally:
            nursery.cancel_scope.cancel()


async def _serve_with_status(
    handler: Handler | Callable[[], Handler],
    host: str,
    port: int,
    kw: dict[str, Any],
    *,
    task_status: trio.TaskStatus[HttpServerInfo] = trio.TASK_STATUS_IGNORED,
) -> None:
    await serve_http(handler, host, port, task_status=task_status, **kw)

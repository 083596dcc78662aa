"""The Streamable HTTP client (with the 2024-11-05 HTTP+SSE fallback) on trio and h11.

Theory of operation
-------------------
:class:`HttpClientChannel` is a ``"messages"`` :class:`~mcp_ref.trio.MessageChannel`:
the session hands it one message at a time, and it turns each into one HTTP POST
(2025-06-18/basic/transports#sending-messages-to-the-server.1).  Everything the server
sends -- JSON answers, events of POST streams, events of the GET stream -- goes into one
bounded queue that ``receive`` reads.  The session never learns HTTP exists.

``send`` returns quickly so the session's send lock is never held across a long
exchange:

* a *request* is written (connect, headers, body) and ``send`` returns; a background
  task reads the answer: a JSON body, or an SSE stream read until the response to that
  request arrived.  When the stream ends first, the task waits the ``retry`` time the
  server gave (else ``default_retry``) and resumes with a GET carrying
  ``Last-Event-ID`` (#resumability-and-redelivery.3), as often as it makes progress.
  A request that cannot be answered any more (HTTP error, stream lost without an event
  id, connection failure) gets an error response made here, so the caller is not left
  waiting for its timeout;
* a *notification* or *response* is POSTed and its ``202`` awaited before ``send``
  returns, so they reach the server in order;
* after ``notifications/initialized`` a background task opens the GET stream and keeps
  it open, reconnecting (with ``Last-Event-ID``) when it ends; a 4xx other than 404
  means the server offers none, and the task stops.

What the channel reads of messages (:func:`~._http_common.peek_message`): kind, id and
method, and two things more.  The ``protocolVersion`` of the ``initialize`` result,
because every later request must carry it in ``MCP-Protocol-Version``
(#protocol-version-header.1); and the ``requestId`` of an outgoing
``notifications/cancelled``, to stop reading that request's stream.

Sessions: the ``Mcp-Session-Id`` of the ``initialize`` answer goes on every later
request (#session-management.4).  A 404 to a request that carried it means the session
is gone (#session-management.7): the channel starts a new one by replaying the
``initialize`` request and ``notifications/initialized`` it sent at the start (their
answers are not passed on), then retries the message once.  The session layer does not
learn it: its core stays in the operating state, with the capabilities negotiated the
first time (a server answering the replay with another protocol version ends the
channel).  Requests in flight in the old session are answered with errors.  Closing
sends DELETE (#session-management.8).

Fallback (2025-06-18/basic/transports#backwards-compatibility): when the POST of
``initialize`` gets a 4xx, the channel GETs the same URL, expects an SSE stream whose
first event is ``endpoint`` (:func:`~mcp_ref._http.resolve_endpoint`), POSTs every
message there, and reads every answer from that stream.

Connections: a small pool of keep-alive connections for POSTs (idle ones are dropped
after ``pool_idle_seconds``; a request that meets a connection the server had closed is
sent again on a new one, only when nothing was received); SSE streams use their own
connections.  ``https`` URLs use TLS with the default trust store.
"""

from __future__ import annotations

import json
import logging
import math
import ssl
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Final, Literal
from urllib.parse import urlsplit

import h11
import trio

from .. import _http as rules
from .._errors import INTERNAL_ERROR
from .._http import (
    CONTENT_TYPE,
    CONTENT_TYPE_JSON,
    CONTENT_TYPE_SSE,
    MCP_SESSION_ID,
    HttpLimits,
    MessageKind,
)
from .._sse import NEED_DATA as SSE_NEED_DATA
from .._sse import SSEDecoder, SSEEvent
from ..events import RequestId
from ._http_common import H11Stream, Supervisor, peek_message, request_key

if TYPE_CHECKING:
    from ..client import Client

__all__ = ["HttpClientChannel", "HttpTransportError", "open_http_channel", "open_http_client"]

log = logging.getLogger("mcp_ref.trio.http")

_INCOMING_QUEUE: Final = 256
_MAX_ERROR_BODY: Final = 65536
_POOL_SIZE: Final = 8
_MAX_GET_FAILURES: Final = 8
_MAX_RESUMES_WITHOUT_PROGRESS: Final = 3


class HttpTransportError(Exception):
    """The HTTP transport could not go on (connection refused, a bad answer to
    ``initialize``, a failed re-initialization).  ``str(exc)`` says why."""


_TRANSPORT_FAILURES = (OSError, trio.BrokenResourceError, h11.ProtocolError, HttpTransportError)
"""What an HTTP exchange may fail with: the socket, the peer's HTTP, or our own refusal."""


class _Exchange:
    """One HTTP request and its response on one connection (from the pool or new)."""

    def __init__(
        self,
        conn: H11Stream,
        *,
        reused: bool,
        method: bytes,
        target: str,
        body: bytes,
        last_event_id: str | None,
    ) -> None:
        self.conn = conn
        self.reused = reused
        self.received_before = conn.received
        """Bytes the connection had received before this exchange."""
        self.method = method
        self.target = target
        self.body = body
        self.last_event_id = last_event_id
        self.response: h11.Response | None = None
        self.complete = False
        """True once the whole response was read (the connection may be reused)."""

    def header(self, name: bytes) -> bytes | None:
        assert self.response is not None
        for key, value in self.response.headers:
            if key == name:
                return bytes(value)
        return None

    @property
    def status(self) -> int:
        assert self.response is not None
        return int(self.response.status_code)

    def media_type(self) -> bytes:
        value = self.header(CONTENT_TYPE) or b""
        return value.split(b";")[0].strip().lower()

    async def next_chunk(self) -> bytes | None:
        """The next piece of the response body; None at its end.

        Raises:
            trio.BrokenResourceError: the connection ended inside the response.
        """
        while True:
            event = await self.conn.next_event()
            if isinstance(event, h11.Data):
                if event.data:
                    return bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self.complete = True
                return None
            else:
                raise trio.BrokenResourceError("the connection ended inside a response")

    async def read_body(self, limit: int) -> bytes:
        """The whole body; raises HttpTransportError past ``limit`` bytes."""
        body = bytearray()
        while (chunk := await self.next_chunk()) is not None:
            body += chunk
            if len(body) > limit:
                raise HttpTransportError(f"answer larger than {limit} bytes")
        return bytes(body)


class HttpClientChannel:
    """A :class:`~mcp_ref.trio.MessageChannel` speaking Streamable HTTP to one URL.

    Make it with :func:`open_http_channel` (or use :func:`open_http_client`), which runs
    its background tasks.

    Attributes:
        url: the MCP endpoint.
        session_id: the ``Mcp-Session-Id`` the server assigned, or None.
        protocol_version: the negotiated version (None before ``initialize``).
        mode: ``"streamable"``, or ``"legacy"`` after falling back to 2024-11-05.
        reinitializations: how many times a new session was started after a 404.

    Source: 2025-06-18/basic/transports#streamable-http.
    """

    framing: Literal["lines", "messages"] = "messages"

    def __init__(
        self,
        url: str,
        supervisor: Supervisor,
        *,
        headers: Sequence[tuple[str, str]] = (),
        limits: HttpLimits | None = None,
        legacy_fallback: bool = True,
        get_stream: bool = True,
        max_concurrent_posts: int = 64,
        connect_timeout: float = 10.0,
        io_timeout: float = 20.0,
        default_retry: float = 1.0,
        pool_idle_seconds: float = 4.0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.url = url
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.mode: Literal["streamable", "legacy"] = "streamable"
        self.reinitializations = 0
        self.eof_reason: str | None = None
        self._supervisor = supervisor
        self._tls = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._tls else 80)
        self._host_header = parts.netloc.rpartition("@")[2].encode("idna")
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._post_target = self._target
        self._extra = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]
        self._limits = limits or HttpLimits()
        self._legacy_fallback = legacy_fallback
        self._want_get = get_stream
        self._connect_timeout = connect_timeout
        self._io_timeout = io_timeout
        self._default_retry = default_retry
        self._pool_idle = pool_idle_seconds
        self._ssl_context = ssl_context
        self._max_posts = max_concurrent_posts
        self._posts = trio.Semaphore(max_concurrent_posts)
        self._pool: list[tuple[float, H11Stream]] = []
        self._in_send, self._in_receive = trio.open_memory_channel[bytes](_INCOMING_QUEUE)
        self._init_body: bytes | None = None
        self._init_key: Any = None
        self._initialized_body: bytes | None = None
        self._generation = 0
        self._reinit_lock = trio.Lock()
        self._readers: dict[Any, trio.CancelScope] = {}
        self._head_cache: dict[tuple[bytes, str | None, str | None], list[tuple[bytes, bytes]]] = {}
        self._get_scope: trio.CancelScope | None = None
        self.closed = False

    # -- the MessageChannel side ---------------------------------------------------------

    async def receive(self) -> bytes:
        """The next message from the server; ``b""`` once the channel is closed."""
        try:
            return await self._in_receive.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            return b""

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """POST one message (see the module docstring for what is awaited).

        Raises:
            trio.ClosedResourceError: the channel is closed.
            HttpTransportError: ``initialize`` could not be sent or was refused.
        """
        if self.closed:
            raise trio.ClosedResourceError("the HTTP channel is closed")
        info = peek_message(data)
        if self.mode == "legacy":
            await self._legacy_send(data)
            return
        if info is not None and info.kind is MessageKind.REQUEST:
            if info.method == "initialize":
                await self._send_initialize(data, info.id)
            else:
                await self._send_request(data, info.id)
            return
        if info is not None and info.method == "notifications/cancelled":
            self._stop_reader_for(data)
        ok = await self._send_one_way(data)
        if info is not None and info.method == "notifications/initialized":
            self._initialized_body = data
            if ok and self._want_get and self.mode == "streamable":
                await self._open_get_stream()

    async def aclose(self) -> None:
        """DELETE the session (when there is one), close connections and end input.
        Idempotent."""
        if self.closed:
            return
        self.closed = True
        if self._get_scope is not None:
            self._get_scope.cancel()
        for scope in self._readers.values():
            scope.cancel()
        if self.session_id is not None and self.mode == "streamable":
            # Spec: 2025-06-18/basic/transports#session-management.8
            with trio.move_on_after(min(self._io_timeout, 2.0)):
                try:
                    ex = await self._request(b"DELETE", self._target, b"", fresh=False)
                    await ex.read_body(_MAX_ERROR_BODY)
                    log.debug("DELETE answered %s", ex.status)
                except (OSError, trio.BrokenResourceError, h11.ProtocolError, HttpTransportError):
                    pass
        for _, conn in self._pool:
            await conn.aclose()
        self._pool.clear()
        self._in_send.close()
        self._supervisor.close()

    # -- connections ---------------------------------------------------------------------

    async def _connect(self) -> H11Stream:
        with trio.fail_after(self._connect_timeout):
            stream: trio.abc.Stream
            if self._tls:
                context = self._ssl_context or ssl.create_default_context()
                stream = await trio.open_ssl_over_tcp_stream(
                    self._host, self._port, ssl_context=context
                )
            else:
                stream = await trio.open_tcp_stream(self._host, self._port)
        return H11Stream(
            stream, h11.CLIENT, max_incomplete_event_size=self._limits.max_header_bytes
        )

    def _headers(
        self, method: bytes, *, last_event_id: str | None = None, body: bytes = b""
    ) -> list[tuple[bytes, bytes]]:
        legacy = self.mode == "legacy"
        session_id = None if legacy else self.session_id
        version = None if legacy else self.protocol_version
        # The same headers go on every request of a session: built once per
        # (method, session id, version); a resuming GET's Last-Event-ID is never kept.
        key = (method, session_id, version)
        cached = self._head_cache.get(key) if last_event_id is None else None
        if cached is None:
            out = [(b"host", self._host_header)]
            # Spec: 2025-06-18/basic/transports#session-management.4
            # Spec: 2025-06-18/basic/transports#protocol-version-header.1
            # Spec: 2025-06-18/basic/transports#protocol-version-header.2
            # Spec: 2025-06-18/basic/lifecycle#version-negotiation.7
            out += rules.client_request_headers(
                method,
                session_id=session_id,
                protocol_version=version,
                last_event_id=last_event_id,
            )
            cached = out
            if last_event_id is None:
                if len(self._head_cache) >= 8:
                    self._head_cache.clear()
                self._head_cache[key] = cached
        out = cached.copy()
        if method == b"POST":
            out.append((b"content-length", str(len(body)).encode("ascii")))
        out += self._extra
        return out

    def _take_pooled(self) -> H11Stream | None:
        now = trio.current_time()
        while self._pool:
            since, conn = self._pool.pop()
            if now - since <= self._pool_idle:
                return conn
            self._supervisor.start_soon(conn.aclose)
        return None

    def _give_back(self, ex: _Exchange) -> None:
        conn = ex.conn
        if (
            not self.closed
            and conn.conn.our_state is h11.DONE
            and conn.conn.their_state is h11.DONE
            and len(self._pool) < _POOL_SIZE
        ):
            conn.conn.start_next_cycle()
            self._pool.append((trio.current_time(), conn))
        else:
            self._supervisor.start_soon(conn.aclose)

    async def _start(
        self,
        method: bytes,
        target: str,
        body: bytes,
        *,
        fresh: bool,
        last_event_id: str | None = None,
    ) -> _Exchange:
        """Write one request (on a pooled connection unless ``fresh``)."""
        headers = self._headers(method, last_event_id=last_event_id, body=body)
        conn = None if fresh else self._take_pooled()
        reused = conn is not None
        if conn is None:
            conn = await self._connect()
        ex = _Exchange(
            conn,
            reused=reused,
            method=method,
            target=target,
            body=body,
            last_event_id=last_event_id,
        )
        request = h11.Request(method=method, target=target.encode(), headers=headers)
        try:
            # Head, body and end in one write.
            if method == b"POST":
                await conn.send(request, h11.Data(data=body), h11.EndOfMessage())
            else:
                await conn.send(request, h11.EndOfMessage())
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            await conn.aclose()
            if not reused:
                raise
            return await self._start(method, target, body, fresh=True, last_event_id=last_event_id)
        return ex

    async def _head(self, ex: _Exchange) -> _Exchange:
        """Read the response head; a reused connection that the server had closed gets
        the request again on a new connection (nothing was received, so nothing was
        processed)."""
        try:
            while True:
                event = await ex.conn.next_event()
                if isinstance(event, h11.Response):
                    ex.response = event
                    return ex
                if isinstance(event, h11.InformationalResponse):
                    continue
                raise trio.BrokenResourceError("the connection closed before an answer")
        except (trio.BrokenResourceError, h11.RemoteProtocolError):
            await ex.conn.aclose()
            if not ex.reused or ex.conn.received > ex.received_before:
                raise  # a new connection, or the server answered something: not resent
        again = await self._start(
            ex.method, ex.target, ex.body, fresh=True, last_event_id=ex.last_event_id
        )
        return await self._head(again)

    async def _request(
        self,
        method: bytes,
        target: str,
        body: bytes,
        *,
        fresh: bool,
        last_event_id: str | None = None,
    ) -> _Exchange:
        ex = await self._start(method, target, body, fresh=fresh, last_event_id=last_event_id)
        return await self._head(ex)

    # -- input -----------------------------------------------------------------------------

    async def _feed(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            try:
                self._in_send.send_nowait(data)
            except trio.WouldBlock:
                await self._in_send.send(data)  # the session reads slowly: wait for room
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass

    async def _feed_error(self, rid: RequestId, message: str) -> None:
        """Answer our own request with an error: the server cannot answer it any more."""
        log.warning("request %r failed on the HTTP transport: %s", rid, message)
        await self._feed(rules.error_response_body(INTERNAL_ERROR, message, rid))

    def _note_session(self, ex: _Exchange) -> None:
        value = ex.header(MCP_SESSION_ID)
        if value is not None and rules.validate_session_id(value):
            self.session_id = value.decode("ascii")

    def _note_version(self, data: bytes) -> None:
        try:
            version = json.loads(data)["result"]["protocolVersion"]
        except (ValueError, KeyError, TypeError):
            return
        if isinstance(version, str) and version.isascii() and version.isprintable():
            self.protocol_version = version

    async def _deliver(self, data: bytes, waiting: Any) -> bool:
        """Pass one received message on; True when it is the response to ``waiting``."""
        info = peek_message(data)
        answered = (
            info is not None
            and info.kind is MessageKind.RESPONSE
            and request_key(info.id) == waiting
        )
        if answered and waiting == self._init_key and self.protocol_version is None:
            self._note_version(data)
        await self._feed(data)
        return answered

    # -- sending ---------------------------------------------------------------------------

    async def _send_initialize(self, data: bytes, rid: RequestId | None) -> None:
        self._init_body = data
        self._init_key = request_key(rid)
        try:
            ex = await self._request(b"POST", self._post_target, data, fresh=False)
        except (OSError, trio.BrokenResourceError, h11.ProtocolError) as exc:
            raise HttpTransportError(f"cannot reach {self.url}: {exc}") from exc
        if 400 <= ex.status < 500 and ex.status not in (401, 403) and self._legacy_fallback:
            # 2025-06-18/basic/transports, "Backwards compatibility": a 4xx to the POST
            # of initialize means an old server; try its GET stream.
            await ex.conn.aclose()
            log.info("POST initialize got %s: trying the 2024-11-05 HTTP+SSE transport", ex.status)
            await self._fall_back(data)
            return
        if ex.status in (401, 403):
            body = await ex.read_body(_MAX_ERROR_BODY)
            await ex.conn.aclose()
            raise HttpTransportError(
                f"the server wants authorization (HTTP {ex.status}), which mcp-ref does not "
                f"implement yet: {_error_message(body)}"
            )
        self._note_session(ex)
        self._supervisor.start_soon(self._read_answer, ex, rid, self._generation, False)

    async def _send_request(self, data: bytes, rid: RequestId | None) -> None:
        try:
            # Never wait here: the session holds its send lock while we run, and a wait
            # could keep back the answer a pending request needs (an elicitation).
            self._posts.acquire_nowait()
        except trio.WouldBlock:
            if rid is not None:
                self._supervisor.start_soon(
                    self._feed_error,
                    rid,
                    f"more than {self._max_posts} requests awaiting answers",
                )
            return
        try:
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.1
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.2
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.4
            # One POST per message: the session hands us exactly one message per send.
            ex = await self._start(b"POST", self._post_target, data, fresh=False)
        except (OSError, trio.BrokenResourceError, h11.ProtocolError) as exc:
            self._posts.release()
            if rid is not None:
                self._supervisor.start_soon(self._feed_error, rid, f"POST failed: {exc}")
            return
        if not self._supervisor.start_soon(self._read_answer, ex, rid, self._generation, True):
            self._posts.release()
            await ex.conn.aclose()

    async def _post_message(self, data: bytes) -> tuple[_Exchange, bytes]:
        """POST one message whose answer carries no MCP message (202, or an error);
        returns the exchange and its body (at most _MAX_ERROR_BODY bytes), the
        connection given back to the pool.

        Raises:
            any of _TRANSPORT_FAILURES.
        """
        ex = await self._request(b"POST", self._post_target, data, fresh=False)
        body = await ex.read_body(_MAX_ERROR_BODY)
        self._give_back(ex)
        return ex, body

    async def _send_one_way(self, data: bytes) -> bool:
        """POST a notification or response and wait for its answer (bounded)."""
        for attempt in range(2):
            generation = self._generation
            with trio.move_on_after(self._io_timeout):
                try:
                    ex, body = await self._post_message(data)
                except _TRANSPORT_FAILURES as exc:
                    log.warning("POST of a message failed: %s", exc)
                    return False
                if ex.status == 404 and self.session_id is not None and attempt == 0:
                    if await self._session_expired(generation):
                        continue
                    return False
                if ex.status >= 300:
                    log.warning("server refused a message with HTTP %s: %r", ex.status, body[:200])
                    return False
                return True
            log.warning("POST of a message took longer than %s s: given up", self._io_timeout)
            return False
        return False

    def _stop_reader_for(self, data: bytes) -> None:
        try:
            params = json.loads(data).get("params") or {}
            rid = params.get("requestId")
        except (ValueError, AttributeError):
            return
        scope = self._readers.get(request_key(rid))
        if scope is not None:
            scope.cancel()

    # -- reading answers -------------------------------------------------------------------

    async def _read_answer(
        self, ex: _Exchange, rid: RequestId | None, generation: int, release: bool
    ) -> None:
        key = request_key(rid)
        scope = trio.CancelScope()
        self._readers[key] = scope
        try:
            with scope:
                failure = await self._answer(ex, rid, key, generation)
                if failure is not None and rid is not None:
                    await self._feed_error(rid, failure)
        finally:
            if self._readers.get(key) is scope:
                del self._readers[key]
            if release:
                self._posts.release()

    async def _answer(
        self, ex: _Exchange, rid: RequestId | None, key: Any, generation: int
    ) -> str | None:
        """Read one request's answer; None when answered, else why it failed."""
        retried = False
        while True:
            try:
                if ex.response is None:
                    ex = await self._head(ex)  # a new exchange when it had to resend
                if ex.status == 404 and generation != self._generation:
                    return "the session expired"
                if (
                    ex.status == 404
                    and self.session_id is not None
                    and not retried
                    and self._init_body is not None
                    and key != self._init_key
                ):
                    # Spec: 2025-06-18/basic/transports#session-management.7
                    await ex.conn.aclose()
                    if not await self._session_expired(generation):
                        return "the session expired and a new one could not be started"
                    retried = True
                    generation = self._generation
                    ex = await self._start(b"POST", self._post_target, ex.body, fresh=False)
                    continue
                return await self._answer_of(ex, key)
            except _TRANSPORT_FAILURES as exc:
                await ex.conn.aclose()
                return f"the HTTP exchange failed: {exc}"

    async def _answer_of(self, ex: _Exchange, key: Any) -> str | None:
        status, media = ex.status, ex.media_type()
        if status >= 400:
            body = await ex.read_body(_MAX_ERROR_BODY)
            await ex.conn.aclose()
            return f"HTTP {status}: {_error_message(body)}"
        if status == 202:
            self._give_back(ex)
            log.warning("a request was answered 202: its response may come on the GET stream")
            return None
        if media == CONTENT_TYPE_JSON:
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.9
            body = await ex.read_body(self._limits.max_event_bytes)
            self._give_back(ex)
            if key == self._init_key:
                self._note_session(ex)
            if not await self._deliver(body, key):
                return "the JSON answer was not the response to the request"
            return None
        if media == CONTENT_TYPE_SSE:
            return await self._read_post_stream(ex, key)
        await ex.conn.aclose()
        return f"unexpected answer: HTTP {status} {media.decode('latin-1')!r}"

    async def _read_sse(self, ex: _Exchange, decoder: SSEDecoder, key: Any) -> tuple[bool, int]:
        """Feed the events of one SSE response; (answered, events received).

        After the awaited response the server should end the stream; it gets one second
        to do so (then the connection can be reused), else the connection is closed.
        """
        answered = False
        count = 0
        deadline = math.inf
        try:
            while True:
                with trio.move_on_at(deadline):
                    chunk = await ex.next_chunk()
                    if chunk is None:
                        break
                    decoder.receive_data(chunk)
                    while (event := decoder.next_event()) is not SSE_NEED_DATA and event:
                        assert isinstance(event, SSEEvent)
                        count += 1
                        if event.data and event.event in (None, "message"):
                            data = event.data.encode("utf-8")
                            answered = await self._deliver(data, key) or answered
                    if answered and deadline == math.inf:
                        deadline = trio.current_time() + 1.0
                    continue
                break
        except (trio.BrokenResourceError, h11.ProtocolError, OSError) as exc:
            log.debug("SSE stream broke: %r", exc)
        except Exception as exc:  # the decoder's RemoteProtocolError (event too large)
            log.warning("bad SSE stream: %s", exc)
        if ex.complete:
            self._give_back(ex)
        else:
            await ex.conn.aclose()
        return answered, count

    async def _read_post_stream(self, ex: _Exchange, key: Any) -> str | None:
        decoder = SSEDecoder(self._limits.max_event_bytes)
        idle = 0
        generation = self._generation
        while True:
            answered, count = await self._read_sse(ex, decoder, key)
            if answered:
                return None
            idle = 0 if count else idle + 1
            if not decoder.last_event_id:
                return "the SSE stream ended before the response and cannot be resumed"
            if idle > _MAX_RESUMES_WITHOUT_PROGRESS:
                return "the SSE stream keeps ending without progress"
            # Spec: 2025-06-18/basic/transports#resumability-and-redelivery.3
            await trio.sleep(self._retry_seconds(decoder))
            ex = await self._request(
                b"GET", self._target, b"", fresh=True, last_event_id=decoder.last_event_id
            )
            if ex.status == 404 and self.session_id is not None:
                await ex.conn.aclose()
                self._supervisor.start_soon(self._session_expired, generation)
                return "the session expired before the response came"
            if ex.status != 200 or ex.media_type() != CONTENT_TYPE_SSE:
                body = await ex.read_body(_MAX_ERROR_BODY)
                await ex.conn.aclose()
                return f"resuming the stream failed: HTTP {ex.status}: {_error_message(body)}"

    def _retry_seconds(self, decoder: SSEDecoder) -> float:
        return decoder.retry / 1000 if decoder.retry is not None else self._default_retry

    # -- the GET stream --------------------------------------------------------------------

    async def _open_get_stream(self) -> None:
        """Open the GET stream before ``send`` returns, so that it is there before the
        next request: a server may send on it what it has for us (an elicitation) as soon
        as the request arrives.  Waits at most ``min(io_timeout, 5)`` s for its head."""
        # Spec: 2025-06-18/basic/transports#listening-for-messages-from-the-server.1
        first: _Exchange | None = None
        try:
            first = await self._start(b"GET", self._target, b"", fresh=True)
            with trio.move_on_after(min(self._io_timeout, 5.0)):
                await self._head(first)
        except (OSError, trio.BrokenResourceError, h11.ProtocolError) as exc:
            log.debug("the GET stream could not be opened now: %s", exc)
            first = None
        if not self._supervisor.start_soon(self._get_stream, first) and first is not None:
            await first.conn.aclose()

    async def _get_stream(self, first: _Exchange | None = None) -> None:
        """Keep the GET stream open (when the server offers one) until the channel closes."""
        with trio.CancelScope() as scope:
            self._get_scope = scope
            decoder = SSEDecoder(self._limits.max_event_bytes)
            failures = 0
            generation = self._generation
            while not self.closed:
                if generation != self._generation:
                    decoder = SSEDecoder(self._limits.max_event_bytes)
                    generation = self._generation
                try:
                    if first is not None:
                        ex, first = first, None
                        if ex.response is None:
                            await self._head(ex)
                    else:
                        ex = await self._request(
                            b"GET",
                            self._target,
                            b"",
                            fresh=True,
                            last_event_id=decoder.last_event_id or None,
                        )
                except (OSError, trio.BrokenResourceError, h11.ProtocolError) as exc:
                    failures += 1
                    if failures > _MAX_GET_FAILURES:
                        log.warning("GET stream given up: %s", exc)
                        return
                    await trio.sleep(min(30.0, self._default_retry * 2**failures))
                    continue
                if ex.status == 404 and self.session_id is not None:
                    await ex.conn.aclose()
                    if not await self._session_expired(generation):
                        return
                    continue
                if ex.status == 409 and decoder.last_event_id:
                    await ex.conn.aclose()
                    decoder = SSEDecoder(self._limits.max_event_bytes)  # missed events lost
                    continue
                if ex.status != 200 or ex.media_type() != CONTENT_TYPE_SSE:
                    # Spec: 2025-06-18/basic/transports#listening-for-messages-from-the-server.3
                    log.debug("no GET stream (HTTP %s)", ex.status)
                    await ex.conn.aclose()
                    return
                _, count = await self._read_sse(ex, decoder, None)
                failures = 0 if count else failures + 1
                if failures > _MAX_GET_FAILURES:
                    return
                # Spec: 2025-06-18/basic/transports#resumability-and-redelivery.3
                delay = self._retry_seconds(decoder) * (2 ** max(0, failures - 1))
                await trio.sleep(min(delay, 30.0))

    # -- a new session after 404 -------------------------------------------------------------

    async def _session_expired(self, generation: int) -> bool:
        """Start a new session (once per expired one); False when that failed."""
        async with self._reinit_lock:
            if generation != self._generation:
                return True  # another task did it
            if self._init_body is None or self._initialized_body is None or self.closed:
                return False
            old_version = self.protocol_version
            self.session_id = None
            try:
                with trio.fail_after(self._io_timeout):
                    ok = await self._replay_handshake(old_version)
            except _TRANSPORT_FAILURES as exc:
                log.warning("starting a new session failed: %s", exc)
                ok = False
            except trio.TooSlowError:
                log.warning("starting a new session took longer than %s s", self._io_timeout)
                ok = False
            if not ok:
                self.eof_reason = "the HTTP session expired and a new one could not be started"
                self._in_send.close()
                return False
            self._generation += 1
            self.reinitializations += 1
            log.info("started a new HTTP session %s after a 404", self.session_id)
            return True

    async def _replay_handshake(self, old_version: str | None) -> bool:
        assert self._init_body is not None and self._initialized_body is not None
        self.protocol_version = None
        ex = await self._request(b"POST", self._post_target, self._init_body, fresh=False)
        if ex.status != 200:
            return False
        self._note_session(ex)
        result: bytes | None = None
        if ex.media_type() == CONTENT_TYPE_JSON:
            result = await ex.read_body(self._limits.max_event_bytes)
            self._give_back(ex)
        else:
            decoder = SSEDecoder(self._limits.max_event_bytes)
            try:
                while result is None and (chunk := await ex.next_chunk()) is not None:
                    decoder.receive_data(chunk)
                    while (ev := decoder.next_event()) is not SSE_NEED_DATA and ev is not None:
                        assert isinstance(ev, SSEEvent)
                        info = peek_message(ev.data.encode()) if ev.data else None
                        if info is not None and request_key(info.id) == self._init_key:
                            result = ev.data.encode()
            finally:
                await ex.conn.aclose()
        if result is None:
            return False
        self._note_version(result)
        if self.protocol_version != old_version:
            log.warning("the new session negotiated %s, not %s", self.protocol_version, old_version)
            return False
        ex = await self._request(b"POST", self._post_target, self._initialized_body, fresh=False)
        await ex.read_body(_MAX_ERROR_BODY)
        self._give_back(ex)
        return ex.status < 300

    # -- 2024-11-05 HTTP+SSE -------------------------------------------------------------------

    async def _fall_back(self, init_body: bytes) -> None:
        self.mode = "legacy"
        try:
            ex = await self._request(b"GET", self._target, b"", fresh=True)
        except (OSError, trio.BrokenResourceError, h11.ProtocolError) as exc:
            raise HttpTransportError(f"2024-11-05 fallback: GET failed: {exc}") from exc
        if ex.status != 200 or ex.media_type() != CONTENT_TYPE_SSE:
            await ex.conn.aclose()
            raise HttpTransportError(
                f"the server refused initialize (Streamable HTTP) and its GET answered "
                f"HTTP {ex.status}: not a 2024-11-05 HTTP+SSE server either"
            )
        decoder = SSEDecoder(self._limits.max_event_bytes)
        endpoint: SSEEvent | None = None
        with trio.move_on_after(self._io_timeout):
            while endpoint is None and (chunk := await ex.next_chunk()) is not None:
                decoder.receive_data(chunk)
                got = decoder.next_event()
                if isinstance(got, SSEEvent):
                    endpoint = got
        if endpoint is None:
            await ex.conn.aclose()
            raise HttpTransportError("no endpoint event on the 2024-11-05 SSE stream")
        try:
            post_url = rules.resolve_endpoint(endpoint, self.url)
        except Exception as exc:
            await ex.conn.aclose()
            raise HttpTransportError(f"bad endpoint event: {exc}") from exc
        parts = urlsplit(post_url)
        self._post_target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._supervisor.start_soon(self._legacy_stream, ex, decoder)
        await self._legacy_send(init_body)

    async def _legacy_stream(self, ex: _Exchange, decoder: SSEDecoder) -> None:
        try:
            while True:
                while (event := decoder.next_event()) is not SSE_NEED_DATA and event is not None:
                    assert isinstance(event, SSEEvent)
                    if event.data and event.event in (None, "message"):
                        await self._deliver(event.data.encode("utf-8"), self._init_key)
                if event is None:
                    break
                chunk = await ex.next_chunk()
                decoder.receive_data(chunk or b"")
        except (trio.BrokenResourceError, h11.ProtocolError, OSError) as exc:
            log.debug("the 2024-11-05 SSE stream broke: %r", exc)
        except Exception as exc:  # the decoder's RemoteProtocolError (event too large)
            log.warning("bad 2024-11-05 SSE stream: %s", exc)
        finally:
            await ex.conn.aclose()
            self.eof_reason = "the 2024-11-05 SSE stream ended"
            self._in_send.close()

    async def _legacy_send(self, data: bytes) -> None:
        with trio.move_on_after(self._io_timeout):
            try:
                ex, body = await self._post_message(data)
            except _TRANSPORT_FAILURES as exc:
                raise HttpTransportError(f"POST to the 2024-11-05 endpoint failed: {exc}") from exc
            if ex.status >= 300:
                log.warning(
                    "2024-11-05 server refused a message: HTTP %s %r", ex.status, body[:200]
                )
            return
        raise HttpTransportError("POST to the 2024-11-05 endpoint timed out")


def _error_message(body: bytes) -> str:
    try:
        obj = json.loads(body)
        message = obj["error"]["message"]
        if isinstance(message, str):
            return message
    except (ValueError, KeyError, TypeError):
        pass
    return body[:200].decode("utf-8", "replace") or "(no body)"


@asynccontextmanager
async def open_http_channel(url: str, **channel_kw: Any) -> AsyncIterator[HttpClientChannel]:
    """Open a :class:`HttpClientChannel` to ``url`` and run its background tasks.

    Args:
        url: the MCP endpoint, e.g. ``"http://127.0.0.1:8000/mcp"``.
        **channel_kw: ``headers`` (extra request headers, e.g. authorization), ``limits``
            (:class:`~mcp_ref._http.HttpLimits`), ``legacy_fallback`` (default True),
            ``get_stream`` (open the GET stream; default True), ``max_concurrent_posts``
            (64; a request past it is answered at once with an error), ``connect_timeout`` (10 s), ``io_timeout`` (20 s per one-way POST),
            ``default_retry`` (1 s when the server gave no ``retry``),
            ``pool_idle_seconds`` (4 s), ``ssl_context``.

    Yields:
        The channel; give it to :func:`~mcp_ref.trio.open_session` or
        :func:`mcp_ref.client.open_client`.  On exit it is closed (DELETE) and its tasks
        end.

    Raises:
        ValueError: not an http(s) URL.
    """
    supervisor = Supervisor()
    channel = HttpClientChannel(url, supervisor, **channel_kw)
    body_error: BaseException | None = None
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        try:
            yield channel
        except BaseException as exc:
            if isinstance(exc, GeneratorExit):
                raise
            body_error = exc  # re-raised below, not wrapped in an exception group
        finally:
            with trio.CancelScope(shield=True):
                await channel.aclose()
            nursery.cancel_scope.cancel()
    if body_error is not None:
        raise body_error


@asynccontextmanager
async def open_http_client(
    url: str,
    *,
    headers: Sequence[tuple[str, str]] = (),
    limits: HttpLimits | None = None,
    legacy_fallback: bool = True,
    get_stream: bool = True,
    max_concurrent_posts: int = 64,
    connect_timeout: float = 10.0,
    default_retry: float = 1.0,
    **client_kw: Any,
) -> AsyncIterator[Client]:
    """Connect to an MCP server over Streamable HTTP, initialize, and yield a
    :class:`~mcp_ref.client.Client`.

    Args:
        url: the MCP endpoint, e.g. ``"http://127.0.0.1:8000/mcp"``.
        headers: extra headers on every request (``[("authorization", "Bearer ...")]``).
        limits: bounds (:class:`~mcp_ref._http.HttpLimits`: ``max_event_bytes``,
            ``max_header_bytes``).
        legacy_fallback: when the POST of ``initialize`` gets a 4xx, try the 2024-11-05
            HTTP+SSE transport at the same URL.
        get_stream: open the server's GET stream after initialization.
        max_concurrent_posts: requests awaiting their answers at once; a request past it
            fails at once with an error response (McpError -32603), never waits.
        connect_timeout: seconds to open a connection.
        default_retry: seconds before resuming a stream when the server gave no ``retry``.
        **client_kw: passed to :func:`mcp_ref.client.open_client` (``client_info``,
            ``sampling_handler``, ``elicitation_handler``, ``roots``, ``on_log``,
            ``timeout``...).

    Raises:
        HttpTransportError: the server cannot be reached or refused ``initialize`` at the
            HTTP level (also without a 2024-11-05 endpoint), wrapped by the session as
            :class:`~mcp_ref.trio.SessionClosed` when it happens during ``initialize``.
        McpError: the server answered ``initialize`` with an error.

    Source: 2025-06-18/basic/transports#streamable-http,
    2025-06-18/basic/transports#backwards-compatibility.
    """
    from ..client import open_client

    async with (
        open_http_channel(
            url,
            headers=headers,
            limits=limits,
            legacy_fallback=legacy_fallback,
            get_stream=get_stream,
            max_concurrent_posts=max_concurrent_posts,
            connect_timeout=connect_timeout,
            default_retry=default_retry,
        ) as channel,
        open_client(channel, **client_kw) as client,
    ):
        yield client

"""The Streamable HTTP client's connections: the pool and one exchange.

Theory of operation
-------------------
:class:`~.client.HttpClientChannel` is two mixin classes and itself:
:class:`ClientConnections` (this one) <- :class:`~.client_answers.ClientAnswers` (the
answers, the streams, a new session, the fallback) <- the channel (:mod:`.client`).  A
part calls only what lies to its left.  Every decision -- headers, what a head means,
SSE cursors, a new session -- is the sans-IO :class:`~mcp_ref._http_client.HttpClientCore`
kept in ``self.core``; these modules do the I/O it asks for.

Every HTTP request is one :class:`_Exchange`.  ``_start`` writes head, body and end in
one write, on a pooled keep-alive connection unless ``fresh`` (SSE streams always get
their own); ``_head`` reads the response head.  A request that meets a pooled
connection the server had closed is sent again on a new one, only when nothing was
received (so the server processed nothing).  A connection goes back to the pool only
when both sides finished their messages; at most ``_POOL_SIZE`` are kept, and those idle
longer than ``pool_idle_seconds`` are dropped.  ``https`` URLs use TLS with the default
trust store.

Failures: an exchange may raise any of ``_TRANSPORT_FAILURES``; :class:`HttpTransportError`
is our own refusal to go on.
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from typing import Any, Final, Literal

import h11
import trio

from ..._http import HttpLimits
from ..._http_client import MAX_ERROR_BODY, HttpClientCore, media_type
from .common import H11Stream, Supervisor

__all__ = ["ClientConnections", "HttpTransportError"]


_INCOMING_QUEUE: Final = 256
_POOL_SIZE: Final = 8


class HttpTransportError(Exception):
    """The HTTP transport could not go on (connection refused, a bad answer to
    ``initialize``, a failed re-initialization).  ``str(exc)`` says why."""


_IO_FAILURES = (OSError, trio.BrokenResourceError, h11.ProtocolError)
"""What the socket or the peer's HTTP may fail an exchange with."""
_TRANSPORT_FAILURES = (*_IO_FAILURES, HttpTransportError)
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

    @property
    def status(self) -> int:
        assert self.response is not None
        return int(self.response.status_code)

    @property
    def headers(self) -> list[tuple[bytes, bytes]]:
        assert self.response is not None
        return list(self.response.headers)

    def media_type(self) -> bytes:
        return media_type(self.headers)

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


class ClientConnections:
    """The state of an :class:`~.client.HttpClientChannel` (made here for all its
    parts; the decisions' state is ``self.core``) and its connections: the pool, one
    exchange."""

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
        self.core = HttpClientCore(
            url,
            headers=headers,
            limits=limits,
            legacy_fallback=legacy_fallback,
            get_stream=get_stream,
            default_retry=default_retry,
        )
        self.url = url
        self.eof_reason: str | None = None
        self.closed = False
        self._supervisor = supervisor
        self._connect_timeout = connect_timeout
        self._io_timeout = io_timeout
        self._pool_idle = pool_idle_seconds
        self._ssl_context = ssl_context
        self._max_posts = max_concurrent_posts
        self._posts = trio.Semaphore(max_concurrent_posts)
        self._pool: list[tuple[float, H11Stream]] = []
        self._in_send, self._in_receive = trio.open_memory_channel[bytes](_INCOMING_QUEUE)
        self._reinit_lock = trio.Lock()
        self._readers: dict[Any, trio.CancelScope] = {}
        self._get_scope: trio.CancelScope | None = None

    @property
    def session_id(self) -> str | None:
        """The ``Mcp-Session-Id`` the server assigned, or None."""
        return self.core.session_id

    @property
    def protocol_version(self) -> str | None:
        """The negotiated version (None before ``initialize``)."""
        return self.core.protocol_version

    @property
    def mode(self) -> Literal["streamable", "legacy"]:
        """``"streamable"``, or ``"legacy"`` after falling back to 2024-11-05."""
        return self.core.mode

    @property
    def reinitializations(self) -> int:
        """How many times a new session was started after a 404."""
        return self.core.generation

    # -- connections ---------------------------------------------------------------------

    async def _connect(self) -> H11Stream:
        core = self.core
        with trio.fail_after(self._connect_timeout):
            stream: trio.abc.Stream
            if core.tls:
                context = self._ssl_context or ssl.create_default_context()
                stream = await trio.open_ssl_over_tcp_stream(
                    core.host, core.port, ssl_context=context
                )
            else:
                stream = await trio.open_tcp_stream(core.host, core.port)
        return H11Stream(stream, h11.CLIENT, max_incomplete_event_size=core.limits.max_header_bytes)

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
        headers = self.core.headers(method, last_event_id=last_event_id, body=body)
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

    async def _post_message(self, data: bytes) -> tuple[_Exchange, bytes]:
        """POST one message whose answer carries no MCP message (202, or an error);
        returns the exchange and its body (at most MAX_ERROR_BODY bytes), the
        connection given back to the pool.

        Raises:
            any of _TRANSPORT_FAILURES.
        """
        ex = await self._request(b"POST", self.core.post_target, data, fresh=False)
        body = await ex.read_body(MAX_ERROR_BODY)
        self._give_back(ex)
        return ex, body

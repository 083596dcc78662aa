"""The Streamable HTTP client's connections: the pool and one exchange.

Theory of operation
-------------------
:class:`~.client.HttpClientChannel` is :class:`ClientConnections` (this module: its
state and its connections) and the loop of :mod:`.client`.  Every decision is the
sans-IO core's (``self.core``, and the flows of :mod:`mcp_ref._http_client_flows`).

Every HTTP request is one :class:`_Exchange`.  ``_start`` writes the core's
:class:`~mcp_ref._http_client_steps.HttpRequest` (head, body and end in one write) on
a pooled keep-alive connection unless ``fresh`` (SSE streams get their own); ``_head``
reads the response head.  A request that meets a pooled connection the server had
closed is sent again on a new one, only when nothing was received (so the server
processed nothing).  ``_finish`` gives a connection back to the pool when both sides
finished their messages, else closes it; at most ``_POOL_SIZE`` are kept, and those
idle longer than ``pool_idle_seconds`` are dropped.  An exchange may fail with any of
``_IO_FAILURES``.

Signing in (``auth=``; the decisions are :mod:`mcp_ref._http_client_auth`'s): a flow's
:class:`~mcp_ref._http_client_steps.Authorize` step is ``_sign_in``, one at a time
under ``_auth_lock``: a refresh after a 401 when the token can be, else the
:class:`~mcp_ref._oauth_flow.SignIn` flow, whose requests ``_oauth_exchange`` sends on
connections of their own (never pooled, redirects not followed, bodies bounded);
``_keep_token_fresh`` refreshes an expired token before a message.
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Sequence
from typing import Any, Final, Literal

import h11
import trio

from ..._http import HttpLimits
from ..._http_client import HttpClientCore
from ..._http_client_auth import ClientAuth, OAuthClientOptions, SignInRunner
from ..._http_client_steps import Authorize, HttpRequest
from ..._oauth_http import HttpRequest as OAuthRequest
from ..._oauth_http import HttpResponse as OAuthResponse
from ..._oauth_http import read_answer
from .common import H11Stream, Supervisor

__all__ = ["ClientConnections", "HttpTransportError"]


log = logging.getLogger("mcp_ref.trio.http")

_INCOMING_QUEUE: Final = 256
_POOL_SIZE: Final = 8


class HttpTransportError(Exception):
    """The HTTP transport could not go on (connection refused, a bad answer to
    ``initialize``, a failed re-initialization).  ``str(exc)`` says why."""


_IO_FAILURES = (OSError, trio.BrokenResourceError, h11.ProtocolError)
"""What the socket or the peer's HTTP may fail an exchange with."""

_SIGN_IN_FAILURES = (*_IO_FAILURES, trio.TooSlowError)
"""What a sign-in or refresh exchange raises when it fails (or takes too long)."""


class _Exchange:
    """One HTTP request (``request``) and its response on one connection."""

    def __init__(self, conn: H11Stream, request: HttpRequest, *, reused: bool) -> None:
        self.conn = conn
        self.request = request
        self.reused = reused
        self.received_before = conn.received
        """Bytes the connection had received before this exchange."""
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        """The response head's (``status`` 0 until it was read)."""
        self.complete = False
        """True once the whole response was read (the connection may be reused)."""

    async def next_chunk(self) -> bytes | None:
        """The next piece of the response body; None at its end (raises
        trio.BrokenResourceError when the connection ended inside the response)."""
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


class ClientConnections:
    """The state of an :class:`~.client.HttpClientChannel` (the decisions' state is
    ``self.core``) and its connections: the pool, one exchange.

    Args: ``url`` (the MCP endpoint), ``supervisor`` (runs the background tasks), and
    the options of :func:`~.client.open_http_channel` (the core takes the first five).
    """

    def __init__(
        self,
        url: str,
        supervisor: Supervisor,
        *,
        headers: Sequence[tuple[str, str]] = (),
        limits: HttpLimits | None = None,
        legacy_fallback: bool = True,
        get_stream: bool = True,
        default_retry: float = 1.0,
        max_concurrent_posts: int = 64,
        connect_timeout: float = 10.0,
        io_timeout: float = 20.0,
        pool_idle_seconds: float = 4.0,
        ssl_context: ssl.SSLContext | None = None,
        auth: OAuthClientOptions | None = None,
    ) -> None:
        self.core = HttpClientCore(
            url,
            headers=headers,
            limits=limits,
            legacy_fallback=legacy_fallback,
            get_stream=get_stream,
            default_retry=default_retry,
            auth=None if auth is None else ClientAuth(url, auth),
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
        self._auth_lock = trio.Lock()
        """One sign-in (or refresh) at a time."""
        self.clock = time.time
        """Wall-clock seconds, for token expiry (tests may set another)."""
        self._readers: dict[Any, trio.CancelScope] = {}
        """The scopes of the flows running in the background, by the key of the request
        they read the answer of (the GET stream's: the key of no request)."""

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

    def _finish(self, ex: _Exchange) -> None:
        """Done with an exchange: its connection back to the pool when both sides
        finished their messages (and there is room), else closed."""
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

    async def _start(self, request: HttpRequest, *, pooled: bool = True) -> _Exchange:
        """Write one request (on a pooled connection unless ``request.fresh``)."""
        conn = None if request.fresh or not pooled else self._take_pooled()
        ex = _Exchange(conn or await self._connect(), request, reused=conn is not None)
        target = request.target.encode()
        head = h11.Request(method=request.method, target=target, headers=request.headers)
        body = (h11.Data(data=request.body),) if request.body else ()
        try:
            await ex.conn.send(head, *body, h11.EndOfMessage())  # in one write
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            await ex.conn.aclose()
            if not ex.reused:
                raise
            return await self._start(request, pooled=False)
        return ex

    async def _head(self, ex: _Exchange) -> _Exchange:
        """Read the response head (when not read yet); a reused connection that the
        server had closed gets the request again on a new connection (nothing was
        received, so nothing was processed)."""
        try:
            while not ex.status:
                event = await ex.conn.next_event()
                if isinstance(event, h11.Response):
                    ex.status, ex.headers = event.status_code, list(event.headers)
                elif not isinstance(event, h11.InformationalResponse):
                    raise trio.BrokenResourceError("the connection closed before an answer")
            return ex
        except (trio.BrokenResourceError, h11.RemoteProtocolError):
            await ex.conn.aclose()
            if not ex.reused or ex.conn.received > ex.received_before:
                raise  # a new connection, or the server answered something: not resent
        return await self._head(await self._start(ex.request, pooled=False))

    async def _request(self, request: HttpRequest) -> _Exchange:
        return await self._head(await self._start(request))

    async def _oauth_exchange(self, request: OAuthRequest) -> OAuthResponse:
        """Send one request of the sign-in flow on a connection of its own, as it is
        (redirects are not followed: the flow decides), and read the answer, its body
        cut at ``request.max_body_bytes + 1`` bytes (the flow refuses a longer one).
        Bounded by ``io_timeout``.

        Raises:
            OSError, trio.BrokenResourceError, h11.ProtocolError: the exchange failed.
            trio.TooSlowError: it took longer than ``io_timeout`` seconds.
        """
        wire = request.on_the_wire()
        with trio.fail_after(self._io_timeout):
            raw: trio.abc.Stream
            if wire.tls:
                context = self._ssl_context or ssl.create_default_context()
                raw = await trio.open_ssl_over_tcp_stream(wire.host, wire.port, ssl_context=context)
            else:
                raw = await trio.open_tcp_stream(wire.host, wire.port)
            conn = H11Stream(raw, h11.CLIENT)
            try:
                head = h11.Request(method=request.method, target=wire.target, headers=wire.headers)
                body = (h11.Data(data=request.body),) if request.body else ()
                await conn.send(head, *body, h11.EndOfMessage())
                status, got, parts_read, size = 0, [], [], 0
                while True:
                    event = await conn.next_event()
                    if isinstance(event, h11.Response):
                        status, got = event.status_code, list(event.headers)
                    elif isinstance(event, h11.Data):
                        parts_read.append(bytes(event.data))
                        size += len(event.data)
                        if size > request.max_body_bytes:
                            break  # enough to refuse it
                    elif isinstance(event, h11.EndOfMessage):
                        break
                    elif not isinstance(event, h11.InformationalResponse):
                        raise trio.BrokenResourceError("the connection ended inside a response")
            finally:
                await conn.aclose()
        return read_answer(status, got, parts_read, request.max_body_bytes)

    # -- signing in ---------------------------------------------------------------------

    def _tokens(self) -> SignInRunner | None:
        """The token work (:class:`~mcp_ref._http_client_auth.SignInRunner`) on this
        loop's lock, exchange and clock; None without ``auth=``."""
        auth = self.core.auth
        if auth is None:
            return None
        return SignInRunner(
            auth, self._auth_lock, self._oauth_exchange, self.clock, _SIGN_IN_FAILURES
        )

    async def _keep_token_fresh(self) -> None:
        """Before a message: refresh an expired token (wall clock) that can be."""
        if (tokens := self._tokens()) is not None:
            await tokens.keep_fresh()

    async def _sign_in(self, step: Authorize) -> str | None:
        """Sign in after the refusal ``step``, one task at a time.  None when signed in,
        else why not."""
        tokens = self._tokens()
        assert tokens is not None
        return await tokens.after_refusal(step.status, step.www_authenticate, step.generation)

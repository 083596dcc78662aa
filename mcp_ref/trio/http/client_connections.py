"""The Streamable HTTP client's connections: the pool and one exchange.

Theory of operation
-------------------
:class:`~.client.HttpClientChannel` is :class:`ClientConnections` (its state and its
connections: this module) and the loop of :mod:`.client`.  Every HTTP request is one
:class:`_Exchange`: ``_start`` writes it on a pooled keep-alive connection unless
``fresh`` (an SSE stream gets its own), ``_head`` reads the response head (sent again on
a new connection when a pooled one turns out closed and nothing was received),
``_finish`` pools the connection (the core's
:class:`~mcp_ref._http_client_steps.KeepAlivePool`) or closes it.  Sign-in requests go through
:func:`oauth_exchange`, each on a connection of its own.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Sequence
from functools import partial
from typing import Any, Final, Literal

import h11
import trio

from ..._http import HttpLimits
from ..._http_client import HttpClientCore
from ..._http_client_auth import ClientAuth, OAuthClientOptions, SignInRunner
from ..._http_client_steps import Authorize, HttpRequest, KeepAlivePool
from ..._oauth_http import HttpRequest as OAuthRequest
from ..._oauth_http import HttpResponse as OAuthResponse
from ..._oauth_http import read_answer
from .common import H11Stream, Supervisor

__all__ = ["ClientConnections", "HttpTransportError"]

_INCOMING_QUEUE: Final = 256


class HttpTransportError(Exception):
    """The HTTP transport could not go on (connection refused, a bad answer to
    ``initialize``, a failed re-initialization).  ``str(exc)`` says why."""


# What the socket or the peer's HTTP may fail an exchange with (a sign-in's: or too slow).
_IO_FAILURES = (OSError, trio.BrokenResourceError, h11.ProtocolError)
_SIGN_IN_FAILURES = (*_IO_FAILURES, trio.TooSlowError)


class _Exchange:
    """One HTTP request and its response on one connection (``request``: the one to
    send again on a new connection; None for a sign-in's, never sent again)."""

    def __init__(self, conn: H11Stream, request: HttpRequest | None, *, reused: bool) -> None:
        self.conn = conn
        self.request = request
        self.reused = reused
        self.received_before = conn.received  # bytes, before this exchange
        self.status = 0  # the response head's, 0 until it was read
        self.headers: list[tuple[bytes, bytes]] = []
        self.complete = False  # the whole response was read (the connection may be reused)

    async def write(
        self, method: bytes | str, target: bytes | str, headers: Any, body: bytes
    ) -> None:
        """Write the request: head, body and end in one write."""
        events: list[Any] = [h11.Request(method=method, target=target, headers=headers)]
        if body:
            events.append(h11.Data(data=body))
        await self.conn.send(*events, h11.EndOfMessage())

    async def read_head(self) -> None:
        """Read the response head (raises trio.BrokenResourceError when the connection
        ends first)."""
        while not self.status:
            event = await self.conn.next_event()
            if isinstance(event, h11.Response):
                self.status, self.headers = event.status_code, list(event.headers)
            elif not isinstance(event, h11.InformationalResponse):
                raise trio.BrokenResourceError("the connection closed before an answer")

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
    """The state of an :class:`~.client.HttpClientChannel` (the decisions' is
    ``self.core``) and its connections.  Args: ``url`` (the MCP endpoint),
    ``supervisor`` (runs the background tasks), and the options of
    :func:`~.client.open_http_channel` (the core takes the first five)."""

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
        self._ssl_context = ssl_context
        self._max_posts = max_concurrent_posts
        self._posts = trio.Semaphore(max_concurrent_posts)
        self._pool: KeepAlivePool[H11Stream] = KeepAlivePool(idle_seconds=pool_idle_seconds)
        self._in_send, self._in_receive = trio.open_memory_channel[bytes](_INCOMING_QUEUE)
        self._reinit_lock = trio.Lock()
        self._auth_lock = trio.Lock()  # one sign-in (or refresh) at a time
        self.clock = time.time  # wall-clock seconds, for token expiry (tests may set another)
        # The scopes of the flows running in the background, by the key of the request
        # they read the answer of (the GET stream's: the key of no request).
        self._readers: dict[Any, trio.CancelScope] = {}

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
            stream = await open_stream(core.tls, core.host, core.port, self._ssl_context)
        return H11Stream(stream, h11.CLIENT, max_incomplete_event_size=core.limits.max_header_bytes)

    def _take_pooled(self) -> H11Stream | None:
        conn, stale = self._pool.take(trio.current_time())
        for old in stale:
            self._supervisor.start_soon(old.aclose)
        return conn

    def _finish(self, ex: _Exchange) -> None:
        h = ex.conn.conn
        if not self.closed and h.our_state is h11.DONE and h.their_state is h11.DONE:
            h.start_next_cycle()
            if self._pool.put(ex.conn, trio.current_time()):
                return
        self._supervisor.start_soon(ex.conn.aclose)

    async def _start(self, request: HttpRequest, *, pooled: bool = True) -> _Exchange:
        """Write one request (on a pooled connection unless ``request.fresh``)."""
        conn = None if request.fresh or not pooled else self._take_pooled()
        ex = _Exchange(conn or await self._connect(), request, reused=conn is not None)
        try:
            await ex.write(request.method, request.target.encode(), request.headers, request.body)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            await ex.conn.aclose()
            if not ex.reused:
                raise
            return await self._start(request, pooled=False)
        return ex

    async def _head(self, ex: _Exchange) -> _Exchange:
        """Read the response head (when not read yet), or resend (module docstring)."""
        try:
            await ex.read_head()
            return ex
        except (trio.BrokenResourceError, h11.RemoteProtocolError):
            await ex.conn.aclose()
            if ex.request is None or not ex.reused or ex.conn.received > ex.received_before:
                raise  # a new connection, or the server answered something: not resent
        return await self._head(await self._start(ex.request, pooled=False))

    async def _request(self, request: HttpRequest) -> _Exchange:
        return await self._head(await self._start(request))

    # -- signing in ---------------------------------------------------------------------

    def _tokens(self) -> SignInRunner | None:
        # The token work on this loop's lock, exchange and clock; None without auth=.
        auth = self.core.auth
        if auth is None:
            return None
        exchange = partial(oauth_exchange, timeout=self._io_timeout, context=self._ssl_context)
        return SignInRunner(auth, self._auth_lock, exchange, self.clock, _SIGN_IN_FAILURES)

    async def _keep_token_fresh(self) -> None:
        """Before a message: refresh an expired token (wall clock) that can be."""
        if (tokens := self._tokens()) is not None:
            await tokens.keep_fresh()

    async def _sign_in(self, step: Authorize) -> str | None:
        """Sign in after the refusal ``step``, one task at a time; None when signed in,
        else why not."""
        tokens = self._tokens()
        assert tokens is not None
        return await tokens.after_refusal(step.status, step.www_authenticate, step.generation)


async def open_stream(
    tls: bool, host: str, port: int, context: ssl.SSLContext | None
) -> trio.abc.Stream:
    """A connection to ``host``:``port``; TLS (``context``, else the defaults) when ``tls``."""
    if tls:
        # Spec: 2025-06-18/basic/authorization#communication-security.1
        # "Implementations MUST follow OAuth 2.1 Section 1.5 'Communication Security'."
        # Spec: 2025-11-25/basic/authorization#communication-security.1
        # "Implementations MUST follow OAuth 2.1 Section 1.5 'Communication Security'."
        # Spec: 2026-07-28/basic/authorization/security-considerations#communication-security.1
        # "Implementations MUST follow OAuth 2.1 Section 1.5 'Communication Security'."
        context = context or ssl.create_default_context()
        return await trio.open_ssl_over_tcp_stream(host, port, ssl_context=context)
    return await trio.open_tcp_stream(host, port)


async def oauth_exchange(
    request: OAuthRequest, timeout: float, context: ssl.SSLContext | None
) -> OAuthResponse:
    """Send one OAuth request (a sign-in step, a token verifier's fetch) as it is, on a
    connection of its own, and read the answer, its body cut past ``request.max_body_bytes``.

    Raises:
        OSError, trio.BrokenResourceError, h11.ProtocolError: the exchange failed.
        trio.TooSlowError: it took longer than ``timeout`` seconds.
    """
    wire = request.on_the_wire()
    with trio.fail_after(timeout):
        stream = await open_stream(wire.tls, wire.host, wire.port, context)
        ex = _Exchange(H11Stream(stream, h11.CLIENT), None, reused=False)
        try:
            await ex.write(request.method, wire.target, wire.headers, request.body)
            await ex.read_head()
            parts: list[bytes] = []
            size = 0
            while size <= request.max_body_bytes and (chunk := await ex.next_chunk()):
                parts.append(chunk)
                size += len(chunk)
        finally:
            await ex.conn.aclose()
    return read_answer(ex.status, ex.headers, parts, request.max_body_bytes)

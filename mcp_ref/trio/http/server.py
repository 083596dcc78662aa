"""The Streamable HTTP server (and the 2024-11-05 HTTP+SSE endpoints) on trio and h11.

Theory of operation
-------------------
:func:`serve_http` accepts connections and, on ``stop``, stops gracefully
(:func:`mcp_ref.trio._listen.serve_until_stopped`).  Each connection is served in its
own task (:meth:`HttpServer.handle_connection`), a loop around the sans-IO
:class:`~mcp_ref._http_connection.ServerConnection`: read the socket (by the deadline
the core gives), feed it, and do what its events say: write a refusal, or run the
handler of the request's endpoint (:mod:`.endpoint`).  The MCP sessions outlive the
requests that created them, never the server (:mod:`.sessions`).

Every decision is the core's: the rules a request passes (:mod:`mcp_ref._http_server`),
what a POST means (:mod:`mcp_ref._http_post`), the logical streams
(:mod:`mcp_ref._http_streams`), the answers (:mod:`mcp_ref._http_answers`), the session
bounds (:mod:`mcp_ref._http_sessions`).  Modules, each importing only those before it:
:mod:`.common`, :mod:`.sessions`, :mod:`.endpoint`, this one.
"""

from __future__ import annotations

import logging
import ssl
import weakref
from collections.abc import AsyncIterator, Callable, Collection
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import attrs
import h11
import trio

from ..._http import HttpLimits, Refused
from ..._http_auth import ResourceAuth, server_connection
from ..._http_connection import NEED_DATA, Refusal, RequestReady
from ..._http_server import CLOSE_WAIT_SECONDS, ServerConfig, server_config, server_urls
from ..._session_rules import DEFAULT_GRACE_SECONDS, checked_grace
from ...stores import Sharing, Stores
from .._listen import close_listeners, peer_of, serve_until_stopped
from .._session_api import Handler
from .auth import admit, prefetch
from .common import H11Stream
from .endpoint import ENDPOINTS
from .sessions import PEER, SessionTable

__all__ = ["HttpServer", "HttpServerInfo", "open_http_server", "serve_http"]

log = logging.getLogger("mcp_ref.trio.http")


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
    stop: trio.Event = attrs.field(factory=trio.Event, repr=False, eq=False)
    """Set it (or call :meth:`shutdown`) to stop the server gracefully: the ``stop``
    given to :func:`serve_http`, else one of its own."""

    def shutdown(self) -> None:
        """Stop the server gracefully (see :func:`serve_http`); returns at once.  Under
        :func:`open_http_server`, leaving the block then waits for the stop to end."""
        self.stop.set()


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
    cors_origins: Collection[str] = (),
    access_log: bool = False,
    stores: Stores | None = None,
    stop: trio.Event | None = None,
    grace_seconds: float = DEFAULT_GRACE_SECONDS,
    auth: ResourceAuth | None = None,
    ssl_context: ssl.SSLContext | None = None,
    task_status: trio.TaskStatus[HttpServerInfo] = trio.TASK_STATUS_IGNORED,
    **session_kw: Any,
) -> None:
    """Serve MCP over Streamable HTTP (and 2024-11-05 HTTP+SSE) until cancelled, or
    until ``stop`` is set and the graceful stop is over.

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
        stateless: no session ids, no GET stream, no DELETE: each POST gets a session of
            its own (:mod:`.endpoint`).
        enable_get_stream: offer the standalone GET stream (else GET gets 405).
        allowed_origins, allowed_hosts: ``Origin`` and ``Host`` patterns
            (:func:`mcp_ref._http.check_origin`, :func:`~mcp_ref._http.check_host`);
            default for a loopback ``host`` the loopback names, else no ``Origin`` (403
            for a request with one) and any ``Host``.
        limits: the bounds (:class:`~mcp_ref._http.HttpLimits`, each listed in
            ``docs/http-limits.md``).
        legacy_sse: also host the 2024-11-05 endpoints at ``legacy_sse_path`` (GET) and
            ``legacy_messages_path`` (POST).
        retry_ms: the ``retry`` field of priming events, in milliseconds.
        cors_origins, access_log, stores: CORS origins (:mod:`mcp_ref._http_cors`); a log
            line per request (:mod:`mcp_ref._http_access`); a store shared by processes
            (:mod:`mcp_ref.stores`).  ``docs/http-deployment.md`` has all three.
        stop: set it to stop gracefully (default: a new event, ``HttpServerInfo.stop``).
            Then: no new connection is accepted (the listeners close); no connection
            serves a further request, and those waiting for one close; the requests in
            progress get ``grace_seconds`` to be answered; each one still running is
            then cancelled and answered with a JSON-RPC error response (-32603) on its
            own stream; every session ends, so every SSE response ends whole (its
            terminating chunk); connections get ``CLOSE_WAIT_SECONDS`` (1 s) to write
            what they hold, then are cancelled; and this returns normally.  Cancelling
            this instead stops everything at once.
        grace_seconds: seconds the requests in progress get after ``stop`` (default
            5.0).
        auth: serve as an OAuth 2.1 protected resource (:mod:`mcp_ref._http_auth`).
        ssl_context: serve HTTPS: each connection a ``trio.SSLStream`` (TLS in Python
            over ``ssl.MemoryBIO``; ``docs/tls.md`` gives its cost), the URLs ``https``.
        task_status: ``started`` with an :class:`HttpServerInfo` once listening.
        **session_kw: passed to the handler's ``serve`` or to
            :func:`~mcp_ref.trio.open_session` (``default_timeout``, ...).

    Raises:
        OSError: the address cannot be bound.
        ValueError: a bad ``path`` or a negative ``grace_seconds``.

    Source: 2025-06-18/basic/transports#streamable-http; 2024-11-05/basic/transports
    "HTTP with SSE"; 2025-06-18/basic/transports#backwards-compatibility;
    2025-06-18/basic/lifecycle#shutdown (the stop).
    """
    checked_grace(grace_seconds)
    cfg = server_config(
        host,
        path=path,
        json_response=json_response,
        stateless=stateless,
        enable_get_stream=enable_get_stream,
        allowed_origins=allowed_origins,
        allowed_hosts=allowed_hosts,
        limits=limits,
        legacy_sse=legacy_sse,
        legacy_sse_path=legacy_sse_path,
        legacy_messages_path=legacy_messages_path,
        retry_ms=retry_ms,
        cors_origins=cors_origins,
        access_log=access_log,
    )
    server = HttpServer(handler, cfg, session_kw, auth)
    if stores is not None:
        server.table.shared = Sharing(stores, cfg.limits.session_idle_seconds)
    listeners: Any = await trio.open_tcp_listeners(port, host=host)
    try:
        bound, port = listeners[0].socket.getsockname()[:2]
        if ssl_context is not None:
            listeners = [trio.SSLListener(x, ssl_context, https_compatible=True) for x in listeners]
        url, legacy_url = server_urls(cfg, bound, port, tls=ssl_context is not None)
        stop = trio.Event() if stop is None else stop
        info = HttpServerInfo(host=bound, port=port, url=url, legacy_sse_url=legacy_url, stop=stop)
        async with trio.open_nursery() as nursery:
            await nursery.start(server.table.supervisor.run)
            nursery.start_soon(server.table.reaper)
            nursery.start_soon(prefetch, auth)  # a JWT verifier's keys, once
            log.info("serving MCP on %s", info.url)
            task_status.started(info)
            await serve_until_stopped(
                listeners,
                server.handle_connection,
                info.stop,
                close_wait=CLOSE_WAIT_SECONDS,
                then=partial(server.stop_gracefully, grace_seconds),
            )
            nursery.cancel_scope.cancel()  # the sessions' tasks left, the reaper
        log.info("stopped serving MCP on %s", info.url)
    finally:
        await close_listeners(listeners)


class HttpServer:
    """One server's settings, sessions and connections (:func:`serve_http`'s arguments):
    :meth:`handle_connection` per connection, ``table.supervisor.run`` and
    ``table.reaper`` beside."""

    def __init__(
        self,
        handler: Handler | Callable[[], Handler],
        cfg: ServerConfig,
        session_kw: dict[str, Any],
        auth: ResourceAuth | None = None,
    ) -> None:
        self.cfg, self.auth = cfg, auth
        self.table = SessionTable(handler, limits=cfg.limits, session_kw=session_kw)
        self._memos: dict[tuple[Any, ...], dict[Any, Any]] = {}  # (RequestHeaders)
        # Stopping: no connection serves a further request; those waiting are cancelled.
        self.draining = False
        self.waiting: weakref.WeakSet[trio.CancelScope] = weakref.WeakSet()

    async def handle_connection(self, stream: trio.abc.Stream) -> None:
        """Serve the requests of one connection until it closes, errs or idles (module
        docstring); its sessions count against its client's :data:`~.sessions.PEER`."""
        peer_token = PEER.set(peer := peer_of(stream))
        conn = server_connection(self.cfg, self._memos, peer, trio.current_time, auth=self.auth)
        h = H11Stream(stream, h11.SERVER, conn=conn.h11)
        try:
            while True:
                if self.draining and conn.waiting_for == "head":
                    return  # stopping: no further request on this connection
                event = conn.next_event()
                if event is NEED_DATA:
                    if conn.outgoing:  # 100 Continue
                        await h.write(b"".join(conn.outgoing))
                        conn.outgoing.clear()
                    deadline = conn.deadline(trio.current_time())
                    if await self._receive(h, deadline, waiting=conn.waiting_for == "head"):
                        continue
                    event = conn.timed_out()
                if isinstance(event, Refusal):
                    if event.data:
                        await h.write(event.data)
                    if event.close or not conn.next_cycle(last=False):
                        return
                    continue
                if not isinstance(event, RequestReady):
                    return  # CLOSED
                try:
                    if await admit(self.auth, h, event, self.table.sessions):
                        if self.table.shared is not None:  # (mcp_ref.stores)
                            await self.table.shared.before(self.table, event)
                        await ENDPOINTS[event.endpoint](self.cfg, self.table, h, event)
                except Refused as refused:  # its answer, unless a response has begun
                    data = conn.refuse(refused.error, event.last)
                    if data:
                        await h.write(data)
                if not conn.next_cycle(event.last):
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError) as exc:
            log.debug("HTTP connection ended: %r", exc)
        except Exception:
            # A bug of ours must not take the server down with it: this connection ends.
            log.exception("error while serving an HTTP connection")
        finally:
            PEER.reset(peer_token)
            conn.closed()  # (the access log: an answer never ended)
            with trio.CancelScope(shield=True), trio.move_on_after(1):
                await h.aclose()

    async def stop_gracefully(self, grace: float) -> None:
        """:func:`serve_http`'s graceful stop, once its listeners are closed."""
        self.draining = True
        for scope in list(self.waiting):
            scope.cancel()
        await self.table.finish(grace, "the server is shutting down")

    async def _receive(self, h: H11Stream, deadline: float, *, waiting: bool) -> bool:
        """Read one chunk into h11, by ``deadline``; False when it passed first (or a
        graceful stop ended the wait of a connection ``waiting`` for a request)."""
        with trio.CancelScope(deadline=deadline) as scope:
            if waiting:
                self.waiting.add(scope)
            try:
                await h.receive_some()
            finally:
                self.waiting.discard(scope)
        return not scope.cancelled_caught


@asynccontextmanager
async def open_http_server(
    handler: Handler | Callable[[], Handler], host: str = "127.0.0.1", port: int = 0, **kw: Any
) -> AsyncIterator[HttpServerInfo]:
    """Run :func:`serve_http` for the duration of an ``async with`` block (tests, embedding).

    Yields:
        The :class:`HttpServerInfo` of the listening server.  Leaving the block stops it
        at once; after ``info.shutdown()`` it waits for the graceful stop instead (at
        most ``grace_seconds`` plus ``CLOSE_WAIT_SECONDS`` and a little).
    """
    async with trio.open_nursery() as nursery:
        info: HttpServerInfo = await nursery.start(partial(serve_http, handler, host, port, **kw))
        try:
            yield info
        finally:
            if not info.stop.is_set():
                nursery.cancel_scope.cancel()

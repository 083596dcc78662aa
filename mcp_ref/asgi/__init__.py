"""An MCP server as an ASGI 3 application: Streamable HTTP (JSON and SSE answers, the GET
stream, DELETE, resumption) and the 2024-11-05 HTTP+SSE endpoints, for Hypercorn,
Uvicorn, or a mount inside Starlette or FastAPI.

Example::

    from mcp_ref.asgi import asgi_app
    from mcp_ref.server import Server

    server = Server("demo")
    app = asgi_app(server)          # then: hypercorn module:app  /  uvicorn module:app

Theory of operation
-------------------
This is a driver, as :mod:`mcp_ref.trio.http` is: what the application decides is the
sans-IO core's, and most of what it does is the trio server's own code.  For one
``http`` request:

1. :func:`~._request.read_request` routes it with the core's rules
   (:func:`~mcp_ref._http_server.route_request`: 431, 403 ``Origin``/``Host``, 404,
   405, 406; :func:`~mcp_ref._http_server.check_body_headers`: 415, 400, 413) and reads
   its body within ``limits.max_body_bytes``, giving the
   :class:`~mcp_ref._http_connection.RequestReady` that the trio server's h11 loop
   gives; a refusal is written as is.
2. The trio server's endpoint for it
   (:data:`mcp_ref.trio.http.endpoint.ENDPOINTS`: :func:`~mcp_ref._http_post.read_post`,
   the session lookup, :class:`~mcp_ref._http_answers.SseAnswer`, ``resume``, the
   2024-11-05 endpoints) answers it, on the application's own
   :class:`~mcp_ref.trio.http.sessions.SessionTable` (its bounds: the sans-IO
   :class:`~mcp_ref._http_sessions.SessionBook`), writing to an
   :class:`~._request.AsgiStream` instead of a socket.  Meanwhile a watcher reads the
   ASGI ``receive`` for the client's ``http.disconnect``: the SSE writer then stops
   and what it did not write stays stored for a resumption.

The sessions run on trio: natively when the ASGI server runs trio, as a trio guest of
the asyncio loop otherwise (:mod:`._bridge` says why, and what it costs).  They start at
the ASGI ``lifespan`` startup, or at the first request when the application gets no
lifespan events (a Starlette ``Mount`` does not pass them on); the lifespan shutdown
stops them gracefully (the requests in progress get ``grace_seconds``, then every
session ends and its SSE responses end whole).  A mounted application gets the same
stop from the outer application's lifespan through :meth:`McpAsgiApp.running`.

ASGI tells an application of a stop only through the lifespan, which servers run once
every response has ended; an open SSE response (a client's GET stream) ends when the
client leaves, so the server's own bound applies first: Hypercorn's
``--graceful-timeout`` (3 s by default), Uvicorn's ``--timeout-graceful-shutdown``
(none by default: give one, or Uvicorn waits for the clients).

Under a mount (``scope["root_path"]``, e.g. ``Mount("/api", app)``) the paths are those
below the mount point (``/api/mcp`` is ``path="/mcp"``), and the 2024-11-05 ``endpoint``
event names the message endpoint with the mount point in front.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Collection
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import attrs
import sniffio
import trio

from .._http import HttpError, HttpLimits, Refused, http_error
from .._http_access import AsgiExchange
from .._http_auth import ResourceAuth
from .._http_connection import RequestReady
from .._http_peers import peer_address
from .._http_server import ServerConfig, server_config
from .._oauth_resource import serve_metadata
from .._session_rules import DEFAULT_GRACE_SECONDS, checked_grace
from ..stores import Sharing, Stores
from ..trio._session_api import Handler
from ..trio.http.auth import admit
from ..trio.http.endpoint import ENDPOINTS
from ..trio.http.sessions import PEER, SessionTable
from ._bridge import AsyncioHost, Host, Runtime, TrioHost
from ._request import AsgiStream, Message, Receive, Send, error_messages, read_request

__all__ = ["McpAsgiApp", "asgi_app"]

log = logging.getLogger("mcp_ref.asgi")


def asgi_app(
    handler: Handler | Callable[[], Handler],
    *,
    path: str = "/mcp",
    host: str = "127.0.0.1",
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
    grace_seconds: float = DEFAULT_GRACE_SECONDS,
    auth: ResourceAuth | None = None,
    **session_kw: Any,
) -> McpAsgiApp:
    """An ASGI 3 application serving MCP over Streamable HTTP (and 2024-11-05 HTTP+SSE),
    the same server :func:`mcp_ref.trio.serve_http` runs (module docstring).

    Args:
        handler: answers every session: an :class:`mcp_ref.server.Server` (or any
            :class:`~mcp_ref.trio.Handler`), or a zero-argument factory called once per
            session.
        path: the MCP endpoint's path (below the mount point, if mounted).
        host: the address the ASGI server binds; it sets the defaults of
            ``allowed_origins`` and ``allowed_hosts`` as in ``serve_http``: the loopback
            names for a loopback address (the default), else no ``Origin`` and any
            ``Host``.  Bound elsewhere (``--host 0.0.0.0``), say so, or pass both.
        json_response, stateless, enable_get_stream: as for
            :func:`mcp_ref.trio.serve_http`.
        allowed_origins, allowed_hosts: as for :func:`mcp_ref.trio.serve_http`, with
            the defaults that ``host`` gives them.
        limits: as for :func:`mcp_ref.trio.serve_http` (``limits.max_body_bytes``
            bounds a body read; ``limits.idle_timeout_seconds`` each wait for a body
            chunk).
        legacy_sse, legacy_sse_path, legacy_messages_path, retry_ms: as for
            :func:`mcp_ref.trio.serve_http`.
        cors_origins, access_log: as for :func:`mcp_ref.trio.serve_http` (the ASGI
            server may log requests too; an answer never ended is not logged here).
        stores: as for :func:`mcp_ref.trio.serve_http` (e.g. ``uvicorn --workers 2``
            with :class:`~mcp_ref.stores.redis.RedisStores`).
        grace_seconds: at the lifespan shutdown, seconds the requests in progress get
            before they are cancelled (each then answered with an error, -32603).
        auth: serve as an OAuth 2.1 protected resource, as for
            :func:`mcp_ref.trio.serve_http` (the metadata is served at the well-known
            paths of ``auth.config``, matched on the full path: mount the application
            at the root of its origin, or serve the metadata there yourself).
        **session_kw: passed to the handler's ``serve`` or to
            :func:`~mcp_ref.trio.open_session` (``default_timeout``, ...).

    Raises:
        ValueError: a path that does not start with ``/``, or a negative
            ``grace_seconds``.

    Source: 2025-06-18/basic/transports#streamable-http; 2024-11-05/basic/transports
    "HTTP with SSE"; 2025-06-18/basic/transports#security-warning (Origin, Host).
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
    return McpAsgiApp(
        handler, cfg, grace_seconds=grace_seconds, session_kw=session_kw, stores=stores, auth=auth
    )


class McpAsgiApp:
    """The ASGI 3 application :func:`asgi_app` returns: call it with ``(scope, receive,
    send)``.  It answers ``http`` and ``lifespan`` scopes (a ``websocket`` scope raises
    :class:`ValueError`: the ASGI server refuses the connection).  One instance serves one loop: the first scope
    fixes whether it runs on trio or asyncio.

    Args:
        handler: see :func:`asgi_app`.
        cfg: the settings.
        grace_seconds: see :func:`asgi_app`.
        session_kw: see :func:`asgi_app`.
        stores: see :func:`asgi_app`.
        auth: see :func:`asgi_app`.
    """

    def __init__(
        self,
        handler: Handler | Callable[[], Handler],
        cfg: ServerConfig,
        *,
        grace_seconds: float = DEFAULT_GRACE_SECONDS,
        session_kw: dict[str, Any] | None = None,
        stores: Stores | None = None,
        auth: ResourceAuth | None = None,
    ) -> None:
        self.cfg, self.auth = cfg, auth
        self._stores = stores
        self._handler = handler
        self._grace = grace_seconds
        self._session_kw = session_kw or {}
        self._host: Host | None = None
        self._memos: dict[Any, dict[Any, Any]] = {}
        self._mounted: dict[str, ServerConfig] = {}

    @property
    def table(self) -> SessionTable | None:
        """The live sessions (None before the first request or lifespan startup)."""
        return None if self._host is None else self._host.runtime.table

    def _the_host(self) -> Host:
        """The host of the running loop, made on first use.

        Raises:
            RuntimeError: the loop is neither trio nor asyncio.
        """
        if self._host is None:
            # Made on first use: only then is the loop known.
            table = SessionTable(self._handler, limits=self.cfg.limits, session_kw=self._session_kw)
            if self._stores is not None:
                table.shared = Sharing(self._stores, self.cfg.limits.session_idle_seconds)
            runtime = Runtime(table, self._grace)
            library = sniffio.current_async_library()
            if library == "trio":
                self._host = TrioHost(runtime)
            elif library == "asyncio":
                self._host = AsyncioHost(runtime)
            else:
                raise RuntimeError(f"mcp_ref.asgi runs on trio or asyncio, not {library}")
        return self._host

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Start the sessions' runtime for the duration of an ``async with`` block, and
        stop it gracefully at its end, as the ASGI lifespan does: for a mounted
        application, which gets no lifespan events of its own, e.g.
        ``Starlette(routes=[Mount("/api", app=mcp)], lifespan=lambda _: mcp.running())``.

        Raises:
            RuntimeError: the runtime has stopped already, or the loop is neither trio
                nor asyncio.
        """
        host = self._the_host()
        await host.start()
        try:
            yield  # nothing: Starlette takes what a lifespan yields as its state
        finally:
            await host.stop()

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        """Serve one ASGI scope (``http`` or ``lifespan``).

        Raises:
            ValueError: a scope of another type (``websocket``: not served).
        """
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)
        else:
            raise ValueError(f"ASGI scope {kind!r} not served by the MCP application")

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        """The ASGI lifespan protocol: start the sessions' runtime, stop it at shutdown."""
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self._the_host().start()
                except Exception as exc:
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._host is not None:
                    await self._host.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: Message, receive: Receive, send: Send) -> None:
        """Answer one HTTP request (module docstring)."""
        cfg = self.cfg
        if cfg.cors_origins or cfg.access_log:  # (_http_access)
            seen = AsgiExchange(
                scope, cors=cfg.cors_origins, allowed=cfg.allowed_origins,
                log=cfg.access_log, clock=time.monotonic,
            )  # fmt: skip
            send = partial(_observed, send, seen)
        host = self._the_host()
        trio_native = isinstance(host, TrioHost)
        within = _receive_trio if trio_native else _receive_asyncio
        if self.auth is not None and await _metadata(self.auth, scope, send):
            return
        got = await read_request(self.cfg, scope, receive, self._memos, receive_within=within)
        if got is None:
            return  # the client left mid-body
        if isinstance(got, HttpError):
            for message in error_messages(got):
                await send(message)
            return
        try:
            await host.start()
        except RuntimeError as exc:
            for message in error_messages(_unavailable(str(exc))):
                await send(message)
            return
        cfg = self._config_for(scope.get("root_path") or "")
        client = scope.get("client")
        peer = peer_address(tuple(client)) if client else None
        gone = trio.Event()
        answer = partial(_answer, cfg, host.runtime.table, got, peer, gone, self.auth)
        if trio_native:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_watch_trio, receive, gone)
                await host.call(answer, send)
                nursery.cancel_scope.cancel()
        else:
            watcher = asyncio.create_task(_watch_asyncio(receive, host, gone))
            try:
                await host.call(answer, send)
            finally:
                watcher.cancel()

    def _config_for(self, root_path: str) -> ServerConfig:
        """The settings under the mount point ``root_path``: the 2024-11-05 ``endpoint``
        event names the message endpoint with it in front.  Bounded (64 mount points)."""
        if not root_path:
            return self.cfg
        cfg = self._mounted.get(root_path)
        if cfg is None:
            if len(self._mounted) >= 64:
                self._mounted.clear()
            full = root_path.rstrip("/") + self.cfg.legacy_messages_path
            cfg = self._mounted[root_path] = attrs.evolve(self.cfg, legacy_messages_path=full)
        return cfg


async def _observed(send: Send, seen: AsgiExchange, message: Message) -> None:
    """``send(message)``, seen by CORS and the access log (:mod:`mcp_ref._http_access`)."""
    await send(seen.seen(message))


def _unavailable(detail: str) -> HttpError:
    """503: the sessions' runtime is not running (stopped, or failed to start)."""
    return http_error(503, detail, clause=None)


async def _answer(
    cfg: ServerConfig,
    table: SessionTable,
    req: RequestReady,
    peer: str | None,
    gone: trio.Event,
    auth: ResourceAuth | None,
    send: Send,
) -> None:
    """On trio: answer ``req`` with the trio server's endpoint, writing to ``send``
    (once :func:`~mcp_ref.trio.http.auth.admit` let it through)."""
    token = PEER.set(peer)
    stream = AsgiStream(send, gone)
    try:
        if await admit(auth, stream, req, table.sessions):
            if table.shared is not None:  # (mcp_ref.stores)
                await table.shared.before(table, req)
            await ENDPOINTS[req.endpoint](cfg, table, stream, req)  # type: ignore[arg-type]
    except Refused as refused:
        if not stream.started:
            try:
                for message in error_messages(refused.error):
                    await stream.send_message(message)
            except trio.BrokenResourceError:
                pass
    except trio.BrokenResourceError:
        pass  # the client left
    finally:
        PEER.reset(token)
        with trio.CancelScope(shield=True), trio.move_on_after(1):
            await stream.finish()


async def _metadata(auth: ResourceAuth, scope: Message, send: Send) -> bool:
    """Answer a request for the protected resource metadata; False when it is not one."""
    query = scope.get("query_string", b"").decode("latin-1")
    target = scope["path"] + (f"?{query}" if query else "")
    answer = serve_metadata(auth.config, scope["method"], target)
    if answer is None:
        return False
    headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in answer.headers]
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    body = b"" if scope["method"] == "HEAD" else answer.body
    await send({"type": "http.response.body", "body": body, "more_body": False})
    return True


async def _receive_trio(receive: Receive, seconds: float) -> Message:
    """``receive()`` within ``seconds`` (trio host).

    Raises:
        trio.TooSlowError: not in time.
    """
    with trio.fail_after(seconds):
        return await receive()


async def _receive_asyncio(receive: Receive, seconds: float) -> Message:
    """``receive()`` within ``seconds`` (asyncio host).

    Raises:
        TimeoutError: not in time.
    """
    return await asyncio.wait_for(receive(), seconds)


async def _watch_trio(receive: Receive, gone: trio.Event) -> None:
    """Set ``gone`` at the client's ``http.disconnect`` (trio host)."""
    while (await receive())["type"] != "http.disconnect":
        pass
    gone.set()


async def _watch_asyncio(receive: Receive, host: Host, gone: trio.Event) -> None:
    """Set ``gone`` at the client's ``http.disconnect`` (asyncio host)."""
    while (await receive())["type"] != "http.disconnect":
        pass
    host.signal(gone)

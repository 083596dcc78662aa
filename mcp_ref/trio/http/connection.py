"""Connections and routing of the Streamable HTTP server (:mod:`.server`).

Theory of operation
-------------------
:class:`HttpServer` holds one server's settings (:class:`~mcp_ref._http_server.ServerConfig`) and
its :class:`~.sessions.SessionTable`.  :meth:`HttpServer.handle_connection` serves
one connection's requests in turn, a loop around the sans-IO
:class:`~mcp_ref._http_connection.ServerConnection`: read the socket (within
``limits.idle_timeout_seconds`` for a head or a body), feed it, and do what its events
say: write a refusal, or hand a request to :meth:`HttpServer.handle_request`, which
calls the handlers of :mod:`.endpoint` (the MCP endpoint) or :mod:`.legacy` (the
2024-11-05 endpoints).  A handler refuses a request by raising
:class:`~.requests.Refused`; the answer is then that error's
(:meth:`~mcp_ref._http_connection.ServerConnection.refuse`).
"""

from __future__ import annotations

import logging
import math
import weakref
from collections.abc import Callable
from typing import Any

import h11
import trio

from ..._http_connection import NEED_DATA, Refusal, RequestReady, ServerConnection
from ..._http_server import Endpoint, ServerConfig
from .._session import Handler
from .common import H11Stream
from .endpoint import delete, get, post
from .legacy import legacy_get, legacy_post
from .requests import Refused
from .sessions import PEER, SessionTable, peer_of

__all__ = ["HttpServer"]

log = logging.getLogger("mcp_ref.trio.http")


class HttpServer:
    """One server's settings, sessions and connections (see :func:`serve_http
    <mcp_ref.trio.serve_http>` for the arguments).

    Run :meth:`handle_connection` per accepted connection; start ``table.supervisor.run``
    and ``table.reaper`` beside it.
    """

    def __init__(
        self,
        handler: Handler | Callable[[], Handler],
        cfg: ServerConfig,
        session_kw: dict[str, Any],
    ) -> None:
        self.cfg = cfg
        self.limits = cfg.limits
        self.table = SessionTable(handler, limits=cfg.limits, session_kw=session_kw)
        # Header-rule outcomes per (target, header set); see RequestHeaders.  Bounded.
        self._memos: dict[tuple[Any, ...], dict[Any, Any]] = {}
        # A graceful stop (serve_http's stop): connections serve no further request, and
        # those waiting for one (their idle scopes, in ``waiting``) are cancelled.
        self.draining = False
        self.waiting: weakref.WeakSet[trio.CancelScope] = weakref.WeakSet()

    async def handle_connection(self, stream: trio.abc.Stream) -> None:
        """Serve the requests of one connection until it closes, errs or idles: read
        the socket, feed the sans-IO :class:`~mcp_ref._http_connection.ServerConnection`,
        do what its events say.

        A request head, and a POST's body, must arrive within
        ``limits.idle_timeout_seconds`` (else 408, or a quiet close when the connection
        was idle).  The sessions it creates count against its client's address
        (``HttpLimits.max_sessions_per_peer``): :data:`~.sessions.PEER` holds it while
        this runs.
        """
        peer_token = PEER.set(peer_of(stream))
        conn = ServerConnection(self.cfg, self._memos)
        h = H11Stream(stream, h11.SERVER, conn=conn.h11)
        phase: str | None = None
        deadline = math.inf
        try:
            while True:
                if self.draining and conn.waiting_for == "head":
                    return  # stopping: no further request on this connection
                event = conn.next_event()
                if event is NEED_DATA:
                    if conn.outgoing:  # 100 Continue
                        await h.write(b"".join(conn.outgoing))
                        conn.outgoing.clear()
                    if conn.waiting_for != phase:
                        phase = conn.waiting_for
                        deadline = trio.current_time() + self.limits.idle_timeout_seconds
                    if not await self._receive(h, deadline, waiting=phase == "head"):
                        event = conn.timed_out()
                    else:
                        continue
                if isinstance(event, Refusal):
                    if event.data:
                        await h.write(event.data)
                    if event.close or not conn.next_cycle(last=False):
                        return
                    phase = None
                    continue
                if not isinstance(event, RequestReady):
                    return  # CLOSED
                phase = None
                await self.handle_request(h, conn, event)
                if not conn.next_cycle(event.last):
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError) as exc:
            log.debug("HTTP connection ended: %r", exc)
        except Exception:
            # A bug of ours must not take the server down with it: this connection ends.
            log.exception("error while serving an HTTP connection")
        finally:
            PEER.reset(peer_token)
            with trio.CancelScope(shield=True), trio.move_on_after(1):
                await h.aclose()

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

    async def handle_request(self, h: H11Stream, conn: ServerConnection, req: RequestReady) -> None:
        """Answer one request routed to its endpoint (with the error of a
        :class:`Refused` when one is raised)."""
        cfg, table, endpoint = self.cfg, self.table, req.endpoint
        try:
            if endpoint is Endpoint.POST:
                await post(cfg, table, h, req.headers, req.body, req.last)
            elif endpoint is Endpoint.GET:
                await get(cfg, table, h, req.headers, req.last)
            elif endpoint is Endpoint.DELETE:
                await delete(table, h, req.headers, req.last)
            elif endpoint is Endpoint.LEGACY_GET:
                await legacy_get(cfg, table, h, req.last)
            else:
                await legacy_post(cfg, table, h, req.headers, req.query, req.body, req.last)
        except Refused as refused:
            data = conn.refuse(refused.error, req.last)
            if data:
                await h.write(data)

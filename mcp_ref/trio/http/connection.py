"""Connections and routing of the Streamable HTTP server (:mod:`.server`).

Theory of operation
-------------------
:class:`HttpServer` holds one server's settings (:class:`~mcp_ref._http_server.ServerConfig`) and
its :class:`~.sessions.SessionTable`.  :meth:`HttpServer.handle_connection` serves
one connection's requests in turn: h11 parses each head (within
``limits.idle_timeout_seconds``: else 408, or a silent close when the connection was
idle), :meth:`HttpServer.handle_request` has the sans-IO rules
(:mod:`mcp_ref._http_server`) check what every request must pass (head size, ``Origin``,
``Host``) and route it by path and method, then hands it to the handlers of
:mod:`.endpoint` (the MCP endpoint) or :mod:`.legacy` (the 2024-11-05 endpoints).  A
handler refuses a request by raising :class:`~.requests.Refused`; the answer is then that error's.  After
``limits.max_requests_per_connection`` requests the connection closes.
"""

from __future__ import annotations

import logging
import math
import weakref
from collections.abc import Callable
from typing import Any

import h11
import trio

from ..._http import HttpError, http_error
from ..._http_server import Endpoint, ServerConfig, request_headers, route_request
from .._session import Handler
from .common import H11Stream
from .endpoint import delete, get, post
from .legacy import legacy_get, legacy_post
from .requests import Refused, checked, send_error
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
        """Serve the requests of one connection until it closes, errs or idles.

        The sessions it creates count against its client's address
        (``HttpLimits.max_sessions_per_peer``): :data:`~.sessions.PEER`
        holds it while this runs.
        """
        limits = self.limits
        peer_token = PEER.set(peer_of(stream))
        h = H11Stream(stream, h11.SERVER, max_incomplete_event_size=limits.max_header_bytes)
        served = 0
        try:
            while True:
                # One scope for the connection's requests: its deadline is set while a
                # request is awaited, and lifted while it is served.
                event: Any = None
                with trio.CancelScope() as idle:
                    while True:
                        event = None
                        idle.deadline = trio.current_time() + limits.idle_timeout_seconds
                        if self.draining:
                            return  # stopping: no further request on this connection
                        self.waiting.add(idle)
                        try:
                            event = await h.next_event()
                        except h11.RemoteProtocolError as exc:
                            status = exc.error_status_hint or 400
                            err = http_error(status, str(exc), clause=None)
                            await self._quick_error(h, err)
                            return
                        idle.deadline = math.inf
                        self.waiting.discard(idle)
                        if idle.cancel_called:
                            break  # the deadline passed as the request came: serve it below
                        served += 1
                        if not await self._serve(h, event, served):
                            return
                if event is None:
                    # Idle: close quietly; in the middle of a request head: 408.
                    if h.conn.their_state is not h11.IDLE or h.conn.trailing_data[0]:
                        err = http_error(408, "request head not received in time", clause=None)
                        await self._quick_error(h, err)
                    return
                served += 1
                if not await self._serve(h, event, served):
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

    async def _serve(self, h: H11Stream, event: Any, served: int) -> bool:
        """Answer one request (the ``served``-th of the connection); whether the
        connection goes on to the next."""
        if not isinstance(event, h11.Request):
            return False  # ConnectionClosed (or PAUSED: nothing more to serve)
        last = served >= self.limits.max_requests_per_connection
        await self.handle_request(h, event, last)
        if last or h.conn.our_state is not h11.DONE or h.conn.their_state is not h11.DONE:
            return False
        h.conn.start_next_cycle()
        return True

    async def _quick_error(self, h: H11Stream, err: HttpError) -> None:
        """Answer with ``err`` and ``Connection: close`` when h11 still lets us."""
        if h.conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return
        try:
            await send_error(h, err, close=True)
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
            pass

    async def handle_request(self, h: H11Stream, req: h11.Request, last: bool) -> None:
        """Route the request (:func:`mcp_ref._http_server.route_request`: head size,
        ``Origin``, ``Host``, path and method) and answer it (with the error of a
        :class:`Refused` when one is raised)."""
        cfg, table = self.cfg, self.table
        headers = request_headers(req, self._memos)
        try:
            endpoint, query = checked(route_request(cfg, req.method, req.target, headers))
            if endpoint is Endpoint.POST:
                await post(cfg, table, h, headers, last)
            elif endpoint is Endpoint.GET:
                await get(cfg, table, h, headers, last)
            elif endpoint is Endpoint.DELETE:
                await delete(table, h, headers, last)
            elif endpoint is Endpoint.LEGACY_GET:
                await legacy_get(cfg, table, h, last)
            else:
                await legacy_post(cfg, table, h, headers, query, last)
        except Refused as refused:
            await self._refuse(h, refused.error, last)
        except h11.RemoteProtocolError as exc:
            # The body broke HTTP/1.1 (a bad chunk-size line, a chunk without its CRLF,
            # the peer gone mid-body, ...): say so with 400, then close, rather than
            # close in silence.  h11 still lets us answer when no response has started.
            status = exc.error_status_hint or 400
            await self._quick_error(h, http_error(status, str(exc), clause=None))

    async def _refuse(self, h: H11Stream, err: HttpError, last: bool) -> None:
        if h.conn.our_state is not h11.SEND_RESPONSE:
            return  # a response is already under way: it cannot be replaced
        # The body may not have been read: then the connection cannot be reused.
        close = last or h.conn.their_state is not h11.DONE
        await send_error(h, err, close=close)

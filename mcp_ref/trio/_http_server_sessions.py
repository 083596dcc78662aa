"""The session table of the Streamable HTTP server (:mod:`._http_server`).

Theory of operation
-------------------
:class:`SessionTable` creates sessions (:meth:`SessionTable.open`) and finds them by the
``Mcp-Session-Id`` a request names (:meth:`SessionTable.of_headers`).  Each session runs in
an *owner task* started by the table's private
:class:`~mcp_ref.trio._http_common.Supervisor`, so it outlives the HTTP request that
created it but never the server: the handler's ``serve(channel)`` when it has one, else
:func:`~mcp_ref.trio.open_session`.  Bounds: at most ``limits.max_sessions`` run at once
(503 past it); a session with no request and no attached stream for
``limits.session_idle_seconds`` is ended by :meth:`SessionTable.reaper`; an ended session
that does not stop by itself is cancelled after a grace time.
"""

from __future__ import annotations

import logging
import math
import secrets
from collections.abc import Callable
from typing import Any, Final, Literal

import trio

from .. import _http as rules
from .._http import HttpError, HttpLimits, http_error
from .._state import SERVER
from ._http_common import Supervisor
from ._http_server_requests import Refused, RequestHeaders
from ._http_server_streams import CURRENT, HttpSession
from ._session import Handler, open_session

__all__ = ["SessionTable"]

log = logging.getLogger("mcp_ref.trio.http")

_CLOSE_GRACE: Final = 5.0


class SessionTable:
    """The sessions of one server, and the tasks that run them.

    Args:
        handler: a :class:`~mcp_ref.trio.Handler` shared by every session, or a
            zero-argument factory of one per session.
        limits: the bounds (``max_sessions``, ``session_idle_seconds``, ...).
        session_kw: passed to the handler's ``serve`` or to
            :func:`~mcp_ref.trio.open_session`.

    Start :attr:`supervisor`'s ``run`` and :meth:`reaper` in the server's nursery.
    """

    def __init__(
        self,
        handler: Handler | Callable[[], Handler],
        *,
        limits: HttpLimits,
        session_kw: dict[str, Any],
    ) -> None:
        self.handler = handler
        self.limits = limits
        self.session_kw = session_kw
        self.sessions: dict[str, HttpSession] = {}  # by id (stateless ones have none)
        self.live = 0  # owner tasks running (sessions of every kind)
        self.supervisor = Supervisor()
        self.reaper_nudge = trio.Event()

    def _handler(self) -> Handler:
        h = self.handler
        if hasattr(h, "handle_request"):
            return h  # type: ignore[return-value]
        return h()  # a factory

    async def open(self, kind: Literal["streamable", "stateless", "legacy"]) -> HttpSession:
        """Start a new session's owner task and return the session once it runs.

        Raises:
            Refused: 503 past ``limits.max_sessions`` or while shutting down.
        """
        if self.live >= self.limits.max_sessions:
            raise Refused(
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
        sess = HttpSession(session_id, kind=kind, limits=self.limits, on_end=self.forget)
        if not self.supervisor.start_soon(self._own, sess):
            raise Refused(http_error(503, "the server is shutting down", clause=None))
        self.live += 1
        if session_id is not None:
            self.sessions[session_id] = sess
            self.reaper_nudge.set()
        await sess.started.wait()
        return sess

    async def _own(self, sess: HttpSession) -> None:
        """The owner task of one session: runs it until it ends."""
        CURRENT.set(sess)
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

    def forget(self, sess: HttpSession) -> None:
        """An ended session leaves the table; cancelled if it does not end by itself."""
        if sess.id is not None and self.sessions.get(sess.id) is sess:
            del self.sessions[sess.id]
        # Spec: 2025-06-18/basic/transports#session-management.6
        # Input is closed; if the session does not end by itself, cancel it.
        if not sess.done.is_set():
            self.supervisor.start_soon(self._cancel_later, sess)

    async def _cancel_later(self, sess: HttpSession) -> None:
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

    def of_headers(self, headers: RequestHeaders) -> HttpSession:
        """The Streamable HTTP session named by the request's ``Mcp-Session-Id``.

        Raises:
            Refused: 400 without the header (or a malformed one), 404 for an unknown or
                ended session.
        """
        known = headers.memo.get("session")
        if known is not None and known in self.sessions:
            got = known  # a well-formed id seen before, of a live session
        else:
            got = rules.check_session(headers, is_initialize=False, active_sessions=self.sessions)
            if isinstance(got, HttpError):
                raise Refused(got)
            assert got is not None
            headers.memo["session"] = got
        sess = self.sessions[got]
        if sess.kind != "streamable":
            raise Refused(http_error(404, "session not found (unknown or terminated)", clause=None))
        return sess

"""The session table of the Streamable HTTP server (:mod:`.server`).

Theory of operation
-------------------
:class:`SessionTable` creates sessions (:meth:`SessionTable.open`) and finds them by the
``Mcp-Session-Id`` a request names (:meth:`SessionTable.of_headers`).  Each session runs
in an *owner task* started by the table's :class:`~.common.Supervisor`, so it outlives
the HTTP request that created it but never the server: the handler's ``serve(channel)``
when it has one, else :func:`~mcp_ref.trio.open_session`.

The bounds (``limits.max_sessions``, ``limits.max_sessions_per_peer``, eviction of an
idle session to make room, expiry of sessions never initialized or idle too long) are
decided by the sans-IO :class:`~mcp_ref._http_sessions.SessionBook`; this module ends
the sessions it names (one that does not stop by itself is cancelled after a grace
time) and sleeps until its next deadline (:meth:`SessionTable.reaper`).

A sans-IO decision to refuse a request is an :class:`~mcp_ref._http.HttpError`; the
driver passes it up as :class:`Refused` (:func:`checked`) to the connection, which
answers with it.
"""

from __future__ import annotations

import contextvars
import logging
import secrets
from collections.abc import Callable
from typing import Any, Final, TypeVar

import trio

from ... import _http as rules
from ..._http import HttpError, HttpLimits, http_error
from ..._http_server import RequestHeaders, legacy_session, session_request
from ..._http_sessions import SessionBook
from ..._http_streams import SessionKind
from ..._state import SERVER
from .._session import Handler, open_session
from .common import Supervisor
from .session import CURRENT, HttpSession

__all__ = ["PEER", "Refused", "SessionTable", "checked"]

log = logging.getLogger("mcp_ref.trio.http")

_T = TypeVar("_T")

_CLOSE_GRACE: Final = 5.0  # seconds an ended session has to stop before it is cancelled
_EVICT_GRACE: Final = 1.0  # the same, for one evicted to make room (a request waits)


class Refused(Exception):
    """The request is refused with ``error`` (its status, headers and body)."""

    def __init__(self, error: HttpError) -> None:
        super().__init__(error.detail)
        self.error = error


def checked(value: _T | HttpError) -> _T:
    """``value``, unless it is an :class:`~mcp_ref._http.HttpError`.

    Raises:
        Refused: carrying that error.
    """
    if isinstance(value, HttpError):
        raise Refused(value)
    return value


PEER: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "mcp_ref.trio.http.peer", default=None
)
"""The client address (:func:`~mcp_ref.trio._listen.peer_of`) of the connection this task serves, set by
``HttpServer.handle_connection``; :meth:`SessionTable.open` counts sessions per value
(``HttpLimits.max_sessions_per_peer``)."""


class SessionTable:
    """The sessions of one server, and the tasks that run them (``handler`` and
    ``session_kw``: see :func:`~mcp_ref.trio.serve_http`).  Start :attr:`supervisor`'s
    ``run`` and :meth:`reaper` in the server's nursery."""

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
        self.book: SessionBook[HttpSession] = SessionBook(limits)  # every live one's seat
        self.supervisor = Supervisor()
        self.reaper_nudge = trio.Event()

    @property
    def live(self) -> int:
        """Sessions whose owner task runs (of every kind)."""
        return len(self.book.seats)

    def peer_count(self, peer: str | None) -> int:
        """Live sessions created from the client address ``peer``."""
        return self.book.peer_count(peer)

    async def open(self, kind: SessionKind) -> HttpSession:
        """Start a new session's owner task and return the session once it runs.

        The session counts against the client address in :data:`PEER`.  When
        ``limits.max_sessions`` or ``limits.max_sessions_per_peer`` is reached, an
        evictable session within that bound is ended first (see the module docstring).

        Raises:
            Refused: 503 past ``limits.max_sessions``, 429 past
                ``limits.max_sessions_per_peer``, both with ``Retry-After`` (seconds),
                when no session can be evicted; 503 while shutting down.
        """
        peer = PEER.get()
        await self._make_room(peer)
        session_id = None
        if kind != "stateless":
            # Spec: 2025-06-18/basic/transports#session-management.2
            # "The session ID SHOULD be globally unique and cryptographically secure (e.g., a
            # securely generated UUID, a JWT, or a cryptographic hash)."
            session_id = rules.new_session_id(secrets.token_bytes(16))
        sess = HttpSession(session_id, kind=kind, limits=self.limits, on_end=self.forget)
        if not self.supervisor.start_soon(self._own, sess):
            raise Refused(http_error(503, "the server is shutting down", clause=None))
        self.book.add(sess, peer, trio.current_time())
        if session_id is not None:
            self.sessions[session_id] = sess
            self.reaper_nudge.set()
        await sess.started.wait()
        return sess

    async def _make_room(self, peer: str | None) -> None:
        """Evict sessions until a new one from ``peer`` fits in both bounds, or raise
        :class:`Refused` (503 or 429 with ``Retry-After``)."""
        while True:
            room = self.book.room_for(peer, self.sessions.values(), trio.current_time())
            if room is None:
                return
            victim = checked(room)
            victim.end("evicted to make room for a new session")
            await _stop(victim, _EVICT_GRACE)

    async def _own(self, sess: HttpSession) -> None:
        """The owner task of one session: runs it until it ends."""
        CURRENT.set(sess)
        try:
            with sess.cancel_scope:
                h = self.handler
                handler: Any = h if hasattr(h, "handle_request") else h()  # (a factory)
                serve = getattr(handler, "serve", None)
                sess.started.set()
                if serve is not None:
                    await serve(sess, **self.session_kw)
                else:
                    async with open_session(sess, SERVER, handler, **self.session_kw) as session:
                        await session.wait_closed()
        except Exception:
            log.exception("session %s failed", sess.id)
        finally:
            sess.started.set()
            sess.end("the session ended")
            self.book.remove(sess)
            sess.done.set()

    def forget(self, sess: HttpSession) -> None:
        """An ended session leaves the table; cancelled if it does not end by itself."""
        if sess.id is not None and self.sessions.get(sess.id) is sess:
            del self.sessions[sess.id]
        # Spec: 2025-06-18/basic/transports#session-management.6
        # "The server MAY terminate the session at any time, after which it MUST respond to requests
        # containing that session ID with HTTP 404 Not Found."
        # Input is closed; if the session does not end by itself, cancel it.
        if not sess.done.is_set():
            self.supervisor.start_soon(_stop, sess, _CLOSE_GRACE)

    async def reaper(self) -> None:
        """End the sessions the book says have expired
        (:meth:`~mcp_ref._http_sessions.SessionBook.expired`), then sleep until its next
        deadline or until :meth:`open` sets ``reaper_nudge``.  Runs until cancelled."""
        while True:
            nudge = self.reaper_nudge = trio.Event()
            ends, deadline = self.book.expired(list(self.sessions.values()), trio.current_time())
            for sess, reason in ends:
                sess.end(reason)
            with trio.move_on_at(deadline):
                await nudge.wait()

    def of_headers(self, headers: RequestHeaders) -> HttpSession:
        """The Streamable HTTP session a request to the MCP endpoint names
        (:func:`mcp_ref._http_server.session_request`: its ``Mcp-Session-Id``, then its
        ``MCP-Protocol-Version``).

        Raises:
            Refused: 400 without the header (or a malformed one) or with an unsupported
                version, 404 for an unknown or ended session.
        """
        return checked(session_request(headers, self.sessions))

    def legacy(self, query: str) -> HttpSession:
        """The 2024-11-05 session a POST to the message endpoint names
        (:func:`mcp_ref._http_server.legacy_session`).

        Raises:
            Refused: 400 without ``session_id``, 404 for an unknown or ended session.
        """
        return checked(legacy_session(query, self.sessions))


async def _stop(sess: HttpSession, grace: float) -> None:
    """Wait up to ``grace`` seconds for an ended session's owner task to finish; then
    cancel it, and wait as long again."""
    for _ in range(2):
        with trio.move_on_after(grace):
            await sess.done.wait()
            return
        sess.cancel_scope.cancel()

"""The session table of the Streamable HTTP server (:mod:`.server`).

Theory of operation
-------------------
:class:`SessionTable` creates sessions (:meth:`SessionTable.open`) and finds them by the
``Mcp-Session-Id`` a request names (:meth:`SessionTable.of_headers`).  Each session runs in
an *owner task* started by the table's private
:class:`~.common.Supervisor`, so it outlives the HTTP request that
created it but never the server: the handler's ``serve(channel)`` when it has one, else
:func:`~mcp_ref.trio.open_session`.

Bounds, all from :class:`~mcp_ref._http.HttpLimits`, so that holding sessions costs an
attacker more than it costs us:

* at most ``max_sessions`` owner tasks run at once, and at most
  ``max_sessions_per_peer`` of them for one client address (:data:`PEER`, which the
  connection's task sets).  A new session past either bound takes the place of an
  *evictable* session within that bound: one with no request in progress, no stream
  attached, no input queued, idle for ``session_evictable_seconds`` or more;
  uninitialized ones go first, then the longest idle.  With none, the new session is
  refused: 503 (all sessions) or 429 (the peer's share), with ``Retry-After`` naming
  the seconds until one could be reclaimed;
* :meth:`SessionTable.reaper` ends a session that has not completed initialization
  ``uninitialized_session_seconds`` after it was created, and one with no request and
  no attached stream for ``session_idle_seconds``.  It sleeps until the next such
  deadline, and is woken when a session is created;
* an ended session that does not stop by itself is cancelled after a grace time.

The spec lets us: "The server MAY terminate the session at any time"
(2025-06-18/basic/transports#session-management.6); its client then gets 404 and starts
a new session (#session-management.7).
"""

from __future__ import annotations

import contextvars
import ipaddress
import logging
import math
import secrets
from collections.abc import Callable
from typing import Any, Final

import attrs
import trio

from ... import _http as rules
from ..._http import HttpLimits, http_error
from ..._http_server import RequestHeaders, session_named
from ..._http_streams import SessionKind
from ..._state import SERVER, State
from .._session import Handler, open_session
from .common import Supervisor
from .requests import Refused, checked
from .session import CURRENT, HttpSession

__all__ = ["PEER", "SessionTable", "initialized", "peer_of", "told_apart"]

log = logging.getLogger("mcp_ref.trio.http")

_CLOSE_GRACE: Final = 5.0
_EVICT_GRACE: Final = 1.0  # seconds an evicted session has to stop before it is cancelled

_NOT_YET: Final = frozenset({State.PRE_INIT, State.INITIALIZING, State.INITIALIZED})

PEER: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "mcp_ref.trio.http.peer", default=None
)
"""The client address of the connection whose request is being served: an IP address
as text (:func:`peer_of`), or None when the connection has none.  Set per connection
task by ``HttpServer.handle_connection``; :meth:`SessionTable.open` counts sessions
per value (``HttpLimits.max_sessions_per_peer``)."""


def peer_of(stream: trio.abc.Stream) -> str | None:
    """The IP address of the far end of ``stream``, as text, without the port.

    Follows ``transport_stream`` (e.g. of a ``trio.SSLStream``) down to a socket.  An
    IPv4-mapped IPv6 address gives its IPv4 address, so one client is one peer on a
    dual-stack socket; an IPv6 zone (``%eth0``) is dropped.

    Returns:
        e.g. ``"127.0.0.1"`` or ``"::1"``; None for a stream with no socket (memory
        streams) or a socket without an IP peer (never raises).
    """
    sock: Any = None
    inner: Any = stream
    while inner is not None and sock is None:
        sock = getattr(inner, "socket", None)
        inner = getattr(inner, "transport_stream", None)
    if sock is None:
        return None
    try:
        name = sock.getpeername()
    except OSError:
        return None
    if not isinstance(name, tuple) or not name:
        return None
    host = str(name[0])
    try:
        addr = ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        return host
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return str(addr.ipv4_mapped)
    return str(addr)


def told_apart(peer: str | None) -> bool:
    """Whether clients at ``peer`` can be told apart from other clients, so a share per
    address means a share per client: False for a loopback address (every client on
    this machine) and for a connection without an IP address (in-memory streams).
    Only those peers are held to ``HttpLimits.max_sessions_per_peer``; the others share
    ``max_sessions`` alone."""
    if peer is None:
        return False
    try:
        return not ipaddress.ip_address(peer).is_loopback
    except ValueError:
        return True


@attrs.define
class _Seat:
    """What the table knows of one live session beyond the session itself."""

    peer: str | None  # the client address that created it (PEER)
    opened_at: float  # trio.current_time() when it was created, in seconds


def initialized(sess: HttpSession) -> bool:
    """Whether ``sess`` completed initialization: its core connection received the
    client's ``notifications/initialized`` (or is closing).  For a handler whose
    ``serve`` runs no mcp_ref session (none attached): once the ``initialize`` result
    was seen.

    Source: 2025-06-18/basic/lifecycle#initialization (the initialized notification
    ends it).
    """
    session = sess.session
    if session is not None:
        return session.connection.state not in _NOT_YET
    return sess.state.protocol_version is not None


class SessionTable:
    """The sessions of one server, and the tasks that run them.

    Args:
        handler: a :class:`~mcp_ref.trio.Handler` shared by every session, or a
            zero-argument factory of one per session.
        limits: the bounds (``max_sessions``, ``max_sessions_per_peer``,
            ``session_idle_seconds``, ``session_evictable_seconds``,
            ``uninitialized_session_seconds``; see the module docstring).
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
        self.running: set[HttpSession] = set()  # their sessions (a graceful stop ends them)
        self.supervisor = Supervisor()
        self.reaper_nudge = trio.Event()
        self._seats: dict[HttpSession, _Seat] = {}  # sessions opened, until their task ends
        self._per_peer: dict[str | None, int] = {}  # those seats, counted by peer

    def peer_count(self, peer: str | None) -> int:
        """Live sessions (owner tasks running) created from the client address ``peer``."""
        return self._per_peer.get(peer, 0)

    def _handler(self) -> Handler:
        h = self.handler
        if hasattr(h, "handle_request"):
            return h  # type: ignore[return-value]
        return h()  # a factory

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
        self.live += 1
        self._seats[sess] = _Seat(peer=peer, opened_at=trio.current_time())
        self._per_peer[peer] = self._per_peer.get(peer, 0) + 1
        if session_id is not None:
            self.sessions[session_id] = sess
            self.reaper_nudge.set()
        await sess.started.wait()
        return sess

    async def _make_room(self, peer: str | None) -> None:
        """Evict sessions until a new one from ``peer`` fits in both bounds, or raise
        :class:`Refused` (503 or 429 with ``Retry-After``)."""
        limits = self.limits
        while True:
            if self.live >= limits.max_sessions:
                peer_only = False
            elif told_apart(peer) and self.peer_count(peer) >= limits.max_sessions_per_peer:
                peer_only = True
            else:
                return
            now = trio.current_time()
            victim = self._victim(peer, peer_only, now)
            if victim is None:
                retry = str(self._retry_after(peer, peer_only, now)).encode("ascii")
                if peer_only:
                    status = 429
                    detail = (
                        f"too many sessions from this address "
                        f"(at most {limits.max_sessions_per_peer})"
                    )
                else:
                    status, detail = 503, f"too many sessions (at most {limits.max_sessions})"
                raise Refused(
                    http_error(status, detail, clause=None, headers=[(b"retry-after", retry)])
                )
            # Spec: 2025-06-18/basic/transports#session-management.6
            # "The server MAY terminate the session at any time": an idle one makes room.
            victim.end("evicted to make room for a new session")
            await self._wait_gone(victim)

    def _in_scope(self, sess: HttpSession, peer: str | None, peer_only: bool) -> _Seat | None:
        """The seat of ``sess`` when it counts against the bound being enforced."""
        seat = self._seats.get(sess)
        if seat is None or (peer_only and seat.peer != peer):
            return None
        return seat

    def _victim(self, peer: str | None, peer_only: bool, now: float) -> HttpSession | None:
        """The session to evict: idle (not busy, nothing queued) for at least
        ``limits.session_evictable_seconds``, uninitialized first, then the longest
        idle; only ``peer``'s when ``peer_only``.  None when there is none."""
        least = self.limits.session_evictable_seconds
        best: HttpSession | None = None
        best_key: tuple[bool, float] = (True, math.inf)
        for sess in self.sessions.values():
            if self._in_scope(sess, peer, peer_only) is None:
                continue
            if sess.busy() or sess.queued or now - sess.last_used < least:
                continue
            key = (initialized(sess), sess.last_used)
            if best is None or key < best_key:
                best, best_key = sess, key
        return best

    def _retry_after(self, peer: str | None, peer_only: bool, now: float) -> int:
        """Whole seconds (at least 1) until a session within the bound could be
        reclaimed: the soonest an idle one becomes evictable or an uninitialized one
        is reaped; ``session_evictable_seconds`` when every one is busy."""
        limits = self.limits
        soonest = math.inf
        for sess in self.sessions.values():
            seat = self._in_scope(sess, peer, peer_only)
            if seat is None:
                continue
            if not initialized(sess):
                soonest = min(soonest, seat.opened_at + limits.uninitialized_session_seconds)
            if not sess.busy():
                soonest = min(soonest, sess.last_used + limits.session_evictable_seconds)
        wait = soonest - now if soonest < math.inf else limits.session_evictable_seconds
        return max(1, math.ceil(wait))

    async def _wait_gone(self, sess: HttpSession) -> None:
        """Wait (bounded) for an ended session's owner task to finish, cancelling it
        after ``_EVICT_GRACE`` seconds."""
        with trio.move_on_after(_EVICT_GRACE):
            await sess.done.wait()
            return
        sess.cancel_scope.cancel()
        with trio.move_on_after(_EVICT_GRACE):
            await sess.done.wait()

    async def _own(self, sess: HttpSession) -> None:
        """The owner task of one session: runs it until it ends."""
        CURRENT.set(sess)
        self.running.add(sess)
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
            self.running.discard(sess)
            seat = self._seats.pop(sess, None)
            if seat is not None:
                left = self._per_peer[seat.peer] - 1
                if left:
                    self._per_peer[seat.peer] = left
                else:
                    del self._per_peer[seat.peer]
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
            self.supervisor.start_soon(self._cancel_later, sess)

    async def _cancel_later(self, sess: HttpSession) -> None:
        with trio.move_on_after(_CLOSE_GRACE):
            await sess.done.wait()
            return
        sess.cancel_scope.cancel()

    async def reaper(self) -> None:
        """End sessions that are uninitialized ``limits.uninitialized_session_seconds``
        after their creation, or idle (no request, no attached stream) for
        ``limits.session_idle_seconds``.

        Sleeps until the soonest of those deadlines (a ``trio.move_on_at`` scope), or
        until :meth:`open` wakes it with ``reaper_nudge``; a busy session counts as used
        at each pass.  Runs until cancelled.
        """
        idle = self.limits.session_idle_seconds
        uninit = self.limits.uninitialized_session_seconds
        while True:
            nudge = self.reaper_nudge = trio.Event()
            now = trio.current_time()
            deadline = math.inf
            for sess in list(self.sessions.values()):
                seat = self._seats.get(sess)
                if seat is not None and not initialized(sess):
                    # Spec: 2025-06-18/basic/transports#session-management.6
                    # "The server MAY terminate the session at any time": one that never
                    # completes initialization holds a slot for nothing.
                    by = seat.opened_at + uninit
                    if by <= now:
                        sess.end(f"not initialized within {uninit} s")
                        continue
                    deadline = min(deadline, by)
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
        """The Streamable HTTP session named by the request's ``Mcp-Session-Id``
        (:func:`mcp_ref._http_server.session_named`).

        Raises:
            Refused: 400 without the header (or a malformed one), 404 for an unknown or
                ended session.
        """
        sess = self.sessions[checked(session_named(headers, self.sessions))]
        if sess.kind != "streamable":
            raise Refused(http_error(404, "session not found (unknown or terminated)", clause=None))
        return sess

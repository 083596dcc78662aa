"""The Streamable HTTP server's session bounds, sans-IO: who may open a session, which
idle session makes room, and which sessions expire.

Theory of operation
-------------------
Holding a session costs the server memory and a task, so every session counts against
two bounds of :class:`~mcp_ref._http.HttpLimits`: ``max_sessions`` in all, and
``max_sessions_per_peer`` for one client address (only for addresses that tell clients
apart: :func:`told_apart`).  A :class:`SessionBook` keeps a *seat* per live session (the
address that opened it, and when) and answers, with the time passed in as ``now``
(seconds, any monotonic clock):

* :meth:`SessionBook.room_for`: may a new session from this address open now?  If a
  bound is reached, the *evictable* session to end first (no request in progress, no
  stream written, no input queued, idle for ``session_evictable_seconds`` or more;
  uninitialized ones first, then the longest idle), or the refusal: 503 (all sessions)
  or 429 (the address's share) with ``Retry-After``, the whole seconds until one could
  be reclaimed.
* :meth:`SessionBook.expired`: which sessions end now (not initialized
  ``uninitialized_session_seconds`` after they opened; idle for
  ``session_idle_seconds``), and the next time to ask again.

The spec lets us: "The server MAY terminate the session at any time"
(2025-06-18/basic/transports#session-management.6); its client then gets 404 and starts
a new session (#session-management.7).

The book reads each session through :class:`Tenant` (the driver's session object); it
never ends one itself: it says which, and the driver ends it.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Hashable, Iterable
from typing import Generic, Protocol, TypeVar

import attrs

from ._http import HttpError, HttpLimits, http_error

__all__ = ["Seat", "SessionBook", "Tenant", "told_apart"]


class Tenant(Hashable, Protocol):
    """What the book reads of a session (the driver's session object)."""

    @property
    def last_used(self) -> float:
        """When it was last used, in seconds (the ``now`` clock)."""

    @property
    def queued(self) -> int:
        """Messages waiting for it (an evictable session has none)."""

    def busy(self) -> bool:
        """Whether a request is in progress or a response writes one of its streams."""

    def initialized(self) -> bool:
        """Whether it completed initialization."""


T = TypeVar("T", bound=Tenant)


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
class Seat:
    """What the book knows of one live session beyond the session itself."""

    peer: str | None
    """The client address that opened it."""
    opened_at: float
    """When it opened, in seconds."""


class SessionBook(Generic[T]):
    """The live sessions' seats, and the decisions of the bounds (module docstring).

    Args:
        limits: ``max_sessions``, ``max_sessions_per_peer``, ``session_idle_seconds``,
            ``session_evictable_seconds``, ``uninitialized_session_seconds``.
    """

    def __init__(self, limits: HttpLimits) -> None:
        self.limits = limits
        self.seats: dict[T, Seat] = {}
        """Live sessions (of every kind, stateless ones included)."""
        self._per_peer: dict[str | None, int] = {}

    def peer_count(self, peer: str | None) -> int:
        """Live sessions opened from the client address ``peer``."""
        return self._per_peer.get(peer, 0)

    def add(self, tenant: T, peer: str | None, now: float) -> None:
        """A session opened from ``peer`` at ``now``."""
        self.seats[tenant] = Seat(peer=peer, opened_at=now)
        self._per_peer[peer] = self._per_peer.get(peer, 0) + 1

    def remove(self, tenant: T) -> None:
        """A session is gone (its task ended); its seat is free."""
        seat = self.seats.pop(tenant, None)
        if seat is None:
            return
        left = self._per_peer[seat.peer] - 1
        if left:
            self._per_peer[seat.peer] = left
        else:
            del self._per_peer[seat.peer]

    def room_for(
        self, peer: str | None, candidates: Iterable[T], now: float
    ) -> T | HttpError | None:
        """May a new session from ``peer`` open now?  None: yes; a session: end it
        first, then ask again; an error: refuse the new session (503 or 429 with
        ``Retry-After``).  ``candidates``: the sessions that may be evicted (those with
        an id)."""
        limits = self.limits
        if len(self.seats) >= limits.max_sessions:
            peer_only = False
        elif told_apart(peer) and self.peer_count(peer) >= limits.max_sessions_per_peer:
            peer_only = True
        else:
            return None
        in_scope = [
            (t, seat)
            for t in candidates
            if (seat := self.seats.get(t)) is not None and (not peer_only or seat.peer == peer)
        ]
        victim = self._victim(in_scope, now)
        if victim is not None:
            # Spec: 2025-06-18/basic/transports#session-management.6
            # "The server MAY terminate the session at any time": an idle one makes room.
            return victim
        retry = str(self._retry_after(in_scope, now)).encode("ascii")
        if peer_only:
            status = 429
            detail = f"too many sessions from this address (at most {limits.max_sessions_per_peer})"
        else:
            status, detail = 503, f"too many sessions (at most {limits.max_sessions})"
        return http_error(status, detail, clause=None, headers=[(b"retry-after", retry)])

    def _victim(self, in_scope: list[tuple[T, Seat]], now: float) -> T | None:
        """The session to evict: idle (not busy, nothing queued) for at least
        ``limits.session_evictable_seconds``, uninitialized first, then the longest
        idle.  None when there is none."""
        least = self.limits.session_evictable_seconds
        best: T | None = None
        best_key: tuple[bool, float] = (True, math.inf)
        for tenant, _ in in_scope:
            if tenant.busy() or tenant.queued or now - tenant.last_used < least:
                continue
            key = (tenant.initialized(), tenant.last_used)
            if best is None or key < best_key:
                best, best_key = tenant, key
        return best

    def _retry_after(self, in_scope: list[tuple[T, Seat]], now: float) -> int:
        """Whole seconds (at least 1) until a session within the bound could be
        reclaimed: the soonest an idle one becomes evictable or an uninitialized one
        is reaped; ``session_evictable_seconds`` when every one is busy."""
        limits = self.limits
        soonest = math.inf
        for tenant, seat in in_scope:
            if not tenant.initialized():
                soonest = min(soonest, seat.opened_at + limits.uninitialized_session_seconds)
            if not tenant.busy():
                soonest = min(soonest, tenant.last_used + limits.session_evictable_seconds)
        wait = soonest - now if soonest < math.inf else limits.session_evictable_seconds
        return max(1, math.ceil(wait))

    def expired(self, candidates: Iterable[T], now: float) -> tuple[list[tuple[T, str]], float]:
        """The sessions to end now, each with its reason, and when to ask again
        (``math.inf``: never, until a session opens).  A busy session should be counted
        as used ``now`` before asking (the driver sets its ``last_used``)."""
        idle = self.limits.session_idle_seconds
        uninit = self.limits.uninitialized_session_seconds
        ends: list[tuple[T, str]] = []
        deadline = math.inf
        for tenant in candidates:
            seat = self.seats.get(tenant)
            if seat is not None and not tenant.initialized():
                # Spec: 2025-06-18/basic/transports#session-management.6
                # "The server MAY terminate the session at any time": one that never
                # completes initialization holds a slot for nothing.
                by = seat.opened_at + uninit
                if by <= now:
                    ends.append((tenant, f"not initialized within {uninit} s"))
                    continue
                deadline = min(deadline, by)
            expires = tenant.last_used + idle
            if expires <= now:
                ends.append((tenant, f"idle for {idle} s"))
            else:
                deadline = min(deadline, expires)
        return ends, deadline

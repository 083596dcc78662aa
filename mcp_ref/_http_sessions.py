"""Streamable HTTP sessions, sans-IO: session ids, the bounds of a server
(:class:`HttpLimits`), and the decisions of those bounds: who may open a session, which
idle session makes room, and which sessions expire.

Theory of operation
-------------------
Holding a session costs the server memory and a task, so every session counts against
two bounds of :class:`~mcp_ref._http.HttpLimits`: ``max_sessions`` in all, and
``max_sessions_per_peer`` per client address (one that tells clients apart:
:func:`~mcp_ref._http_peers.told_apart`).  A :class:`SessionBook` keeps a *seat* per
live session (its address, and when it opened) and answers, given ``now`` (seconds):

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

Session ids (:func:`new_session_id`, from random bytes the driver passes) and the
``Mcp-Session-Id`` rules (:func:`check_session`) are here too.

The book reads each session through :class:`Tenant` (the driver's session object); it
never ends one itself: it says which, and the driver ends it.
"""

from __future__ import annotations

import math
from collections.abc import Container, Hashable, Iterable
from typing import Any, Final, Generic, Protocol, TypeVar

import attrs

from ._errors import LocalProtocolError
from ._http_errors import MCP_SESSION_ID, Headers, HttpError, _single, http_error
from ._http_peers import told_apart

__all__ = [
    "END_GRACE",
    "EVICT_GRACE",
    "INPUT_QUEUE",
    "MAX_SESSION_ID_LENGTH",
    "MIN_SESSION_ID_ENTROPY_BYTES",
    "HttpLimits",
    "Seat",
    "SessionBook",
    "Tenant",
    "check_session",
    "get_session_id",
    "new_session_id",
    "validate_session_id",
]

MIN_SESSION_ID_ENTROPY_BYTES: Final = 16
""":func:`new_session_id` wants at least this many random bytes (128 bits)."""
MAX_SESSION_ID_LENGTH: Final = 1024
"""Longest session id we accept, in characters (a bound; the spec sets none)."""
INPUT_QUEUE: Final = 64
"""POST bodies queued for a session's reader before a POST waits."""
END_GRACE: Final = 5.0
"""Seconds an ended session has to stop before it is cancelled (then as long again)."""
EVICT_GRACE: Final = 1.0
"""The same for a session evicted to make room (a request waits for it)."""

# -- sessions --------------------------------------------------------------------------


def new_session_id(random_bytes: bytes) -> str:
    """Make a session id from random bytes the driver drew (``secrets.token_bytes(16)``).

    Args:
        random_bytes: at least :data:`MIN_SESSION_ID_ENTROPY_BYTES` cryptographically
            secure random bytes.

    Returns:
        Their lowercase hex (32 characters for 16 bytes): visible ASCII only.

    Raises:
        LocalProtocolError: fewer than 16 bytes, or more than 512.

    Source: 2025-06-18/basic/transports#session-management.2 (unique, cryptographically
    secure); #session-management.3 (visible ASCII).
    """
    if not isinstance(random_bytes, bytes | bytearray):
        raise LocalProtocolError("new_session_id needs bytes")
    # Spec: 2025-06-18/basic/security_best_practices#mitigation-2.3
    # "MCP servers MUST use secure, non-deterministic session IDs."
    if not MIN_SESSION_ID_ENTROPY_BYTES <= len(random_bytes) <= MAX_SESSION_ID_LENGTH // 2:
        raise LocalProtocolError(
            f"a session id needs {MIN_SESSION_ID_ENTROPY_BYTES}..{MAX_SESSION_ID_LENGTH // 2}"
            f" random bytes, got {len(random_bytes)}"
        )
    # Spec: 2025-06-18/basic/transports#session-management.3
    # "The session ID MUST only contain visible ASCII characters (ranging from 0x21 to 0x7E)."
    return bytes(random_bytes).hex()


def validate_session_id(value: str | bytes) -> bool:
    """Whether ``value`` is a well-formed session id.

    Well-formed: 1 to :data:`MAX_SESSION_ID_LENGTH` characters, each visible ASCII
    (0x21..0x7E).  Clients use it on the id a server assigns; servers on what clients
    send back.

    Source: 2025-06-18/basic/transports#session-management.3.
    """
    raw = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value
    # Spec: 2025-06-18/basic/transports#session-management.3
    # "The session ID MUST only contain visible ASCII characters (ranging from 0x21 to 0x7E)."
    return 0 < len(raw) <= MAX_SESSION_ID_LENGTH and all(0x21 <= b <= 0x7E for b in raw)


def get_session_id(headers: Headers) -> str | HttpError | None:
    """Read the ``Mcp-Session-Id`` header.

    Returns:
        The session id (str); None when absent; a 400 :class:`HttpError` when repeated
        or not visible ASCII.

    Source: 2025-06-18/basic/transports#session-management.3.
    """
    clause = "2025-06-18/basic/transports#session-management.3"
    value = _single(headers, MCP_SESSION_ID, clause)
    if value is None or isinstance(value, HttpError):
        return value
    if not validate_session_id(value):
        return http_error(400, "malformed Mcp-Session-Id", clause=clause)
    return value.decode("ascii")


def check_session(
    headers: Headers, *, is_initialize: bool, active_sessions: Container[str]
) -> str | HttpError | None:
    """Apply the session rules of a server that requires sessions.

    Args:
        headers: request headers.
        is_initialize: whether this is the POST carrying ``initialize``.
        active_sessions: the ids of live sessions (a set or dict).

    Returns:
        For ``initialize``: None (the driver makes a new id with :func:`new_session_id`),
        or 400 if the client sent a session id with it.  Otherwise the session id (str),
        400 when the header is missing or malformed, 404 when the session is unknown or
        was terminated.

    Source: 2025-06-18/basic/transports#session-management.5 (400 without a session
    id); #session-management.6 (404 after termination); #session-management.7 (a new
    ``initialize`` goes without a session id).
    """
    session_id = get_session_id(headers)
    if isinstance(session_id, HttpError):
        return session_id
    if is_initialize:
        if session_id is not None:
            # Spec: 2025-06-18/basic/transports#session-management.7
            # "When a client receives HTTP 404 in response to a request containing an
            # `Mcp-Session-Id`, it MUST start a new session by sending a new `InitializeRequest`
            # without a session ID attached."
            return http_error(
                400,
                "initialize starts a new session and must not carry Mcp-Session-Id",
                clause="2025-06-18/basic/transports#session-management.7",
            )
        return None
    if session_id is None:
        # Spec: 2025-06-18/basic/transports#session-management.5
        # "Servers that require a session ID SHOULD respond to requests without an `Mcp-Session-Id`
        # header (other than initialization) with HTTP 400 Bad Request."
        return http_error(
            400,
            "missing Mcp-Session-Id header",
            clause="2025-06-18/basic/transports#session-management.5",
        )
    if session_id not in active_sessions:
        # Spec: 2025-06-18/basic/transports#session-management.6
        # "The server MAY terminate the session at any time, after which it MUST respond to requests
        # containing that session ID with HTTP 404 Not Found."
        return http_error(
            404,
            "session not found (unknown or terminated)",
            clause="2025-06-18/basic/transports#session-management.6",
        )
    return session_id


# -- limits ----------------------------------------------------------------------------


def _positive(_inst: object, attr: attrs.Attribute[Any], value: float) -> None:
    if isinstance(value, bool) or not value > 0:
        raise ValueError(f"HttpLimits.{attr.name} must be positive, not {value!r}")


@attrs.frozen(kw_only=True)
class HttpLimits:
    """The bounds of an HTTP MCP server (and client), as plain data.

    Every field must be positive.  The defaults suit a local server for a few clients.
    docs/http-limits.md lists them with what happens past each.

    Source: 2025-06-18/basic/transports#session-management.6 (the server MAY terminate
    a session at any time: idle, uninitialized and evicted sessions end so).
    """

    max_body_bytes: int = attrs.field(default=4 * 1024 * 1024, validator=_positive)
    """Largest POST body, in bytes (4 MiB); larger gets 413."""
    max_header_bytes: int = attrs.field(default=16 * 1024, validator=_positive)
    """Largest request head (request line and headers), in bytes (16 KiB); h11's
    ``max_incomplete_event_size``."""
    max_requests_per_connection: int = attrs.field(default=1000, validator=_positive)
    """Requests served on one keep-alive connection before the server closes it."""
    idle_timeout_seconds: float = attrs.field(default=60.0, validator=_positive)
    """Seconds a connection may wait for its next request (or the rest of one)."""
    max_sessions: int = attrs.field(default=1000, validator=_positive)
    """Live sessions at once (1000).  A new session past it takes the place of an
    evictable session (see ``session_evictable_seconds``), else is refused with 503
    and ``Retry-After``."""
    max_sessions_per_peer: int = attrs.field(default=100, validator=_positive)
    """Live sessions at once per client IP address (100).  A new session past it takes
    the place of an evictable session of the same address, else is refused with 429
    and ``Retry-After``.  It applies only where clients can be told apart by address:
    every client on the server's own machine connects from a loopback address, and a
    connection without an IP address (an in-memory stream) has none, so those share
    ``max_sessions`` alone."""
    session_idle_seconds: float = attrs.field(default=3600.0, validator=_positive)
    """Seconds (3600) without a request, and with no request in progress and no
    stream attached, after which a session is ended (then 404).  Long, because an
    idle session costs little and makes room when the table is full anyway (see
    ``session_evictable_seconds``)."""
    session_evictable_seconds: float = attrs.field(default=5.0, validator=_positive)
    """Seconds (5) a session must have been idle (no request, none in progress, no
    stream attached, no input queued) before a new session may take its place when
    ``max_sessions`` or ``max_sessions_per_peer`` is reached.  Uninitialized sessions
    go first, then the longest idle."""
    uninitialized_session_seconds: float = attrs.field(default=10.0, validator=_positive)
    """Seconds (10) from a session's creation within which its initialization must
    complete (the server received ``notifications/initialized``); past it the session
    is ended (then 404), busy or not."""
    max_streams_per_session: int = attrs.field(default=32, validator=_positive)
    """Open SSE streams (POST answers and GET) per session."""
    max_event_bytes: int = attrs.field(default=4 * 1024 * 1024, validator=_positive)
    """Largest SSE event a client decoder accepts, in bytes (``SSEDecoder``)."""
    keepalive_seconds: float = attrs.field(default=15.0, validator=_positive)
    """Seconds of silence on an SSE stream before the server sends a comment."""
    max_parked_sessions: int = attrs.field(default=32, validator=_positive)
    """Answered 2026-07-28 sessions kept for the next POST of the same client address
    and caller (:meth:`SessionBook.park`), the oldest ending first past it."""
    stored_events_per_stream: int = attrs.field(default=256, validator=_positive)
    """``EventStore(max_events_per_stream=...)``."""
    stored_streams: int = attrs.field(default=64, validator=_positive)
    """``EventStore(max_streams=...)``."""
    stored_bytes: int = attrs.field(default=4 * 1024 * 1024, validator=_positive)
    """``EventStore(max_total_bytes=...)``."""


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
        self.parked: dict[T, Hashable] = {}
        """Answered 2026-07-28 sessions waiting for a POST, oldest first, each with its
        key (:meth:`park`)."""

    def peer_count(self, peer: str | None) -> int:
        """Live sessions opened from the client address ``peer``."""
        return self._per_peer.get(peer, 0)

    def add(self, tenant: T, peer: str | None, now: float) -> None:
        """A session opened from ``peer`` at ``now``."""
        self.seats[tenant] = Seat(peer=peer, opened_at=now)
        self._per_peer[peer] = self._per_peer.get(peer, 0) + 1

    def park(self, tenant: T, key: Hashable) -> T | None:
        """Keep ``tenant``, the answered session of a 2026-07-28 POST, for the next POST
        of ``key`` (client address and caller) instead of a session per POST: it holds
        nothing between requests, each carrying its version, client and capabilities in
        ``_meta``.  Returns the oldest parked past ``limits.max_parked_sessions``: the
        driver ends it.  Source: 2026-07-28/basic/index#statelessness.1.
        """
        self.parked[tenant] = key
        if len(self.parked) <= self.limits.max_parked_sessions:
            return None
        oldest = next(iter(self.parked))
        del self.parked[oldest]
        return oldest

    def take(self, key: Hashable) -> T | None:
        """The newest session parked for ``key`` (:meth:`park`), now no longer parked;
        None if there is none."""
        for tenant in reversed(self.parked):
            if self.parked[tenant] == key:
                del self.parked[tenant]
                return tenant
        return None

    def remove(self, tenant: T) -> None:
        """A session is gone (its task ended); its seat is free."""
        self.parked.pop(tenant, None)
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
        (``math.inf``: never, until a session opens).  A busy session (a request in
        progress, a stream written) is in use: it does not expire while busy, however
        long ago its last request came (the driver counts it as used when it stops
        being busy); the initialization bound holds for it all the same."""
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
            if tenant.busy():
                deadline = min(deadline, now + idle)
                continue
            expires = tenant.last_used + idle
            if expires <= now:
                ends.append((tenant, f"idle for {idle} s"))
            else:
                deadline = min(deadline, expires)
        return ends, deadline

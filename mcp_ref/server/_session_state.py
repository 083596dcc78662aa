"""What the server keeps per session, in ``session.app_state``.

Theory of operation
-------------------
A :class:`~mcp_ref.server.Server` serves many sessions at once (one per stdio process,
many over HTTP).  What differs between them lives with the session, not the server,
so it goes away with the session: the log level the client chose, the resources it
subscribed to, the resource updates waiting to be sent, and the log rate limiter.  All
of it is one :class:`SessionState` under one key of ``session.app_state``, and every
collection in it has a bound.
"""

from __future__ import annotations

from typing import Any, Final, Protocol

import attrs

from .. import types as t
from .._ratelimit import TokenBucket

__all__ = ["APP_STATE_KEY", "SessionState", "state_of"]

APP_STATE_KEY: Final = "mcp_ref.server"
"""The ``session.app_state`` key holding the :class:`SessionState`."""


class _HasAppState(Protocol):
    app_state: dict[str, Any]


@attrs.define
class SessionState:
    """Per-session server state.

    Attributes:
        log_level: the minimum level the client asked for with ``logging/setLevel``,
            or None (the server's default applies).
        subscriptions: URIs the client subscribed to (an ordered set, bounded by the
            server's ``max_subscriptions``).
        pending_updates: URIs updated since the last ``notifications/resources/updated``
            for them was sent (an ordered set, bounded by ``max_pending_updates``).
        seen_generation: per list kind (``"tools"``...), the registry generation this
            session was last told about.
        log_bucket: the log message rate limiter.
        log_dropped: messages dropped by the rate limiter since the last one sent.
        buckets: request rate limiters, by method (only the server's limited methods).
    """

    log_level: t.LoggingLevel | None = None
    subscriptions: dict[str, None] = attrs.field(factory=dict)
    pending_updates: dict[str, None] = attrs.field(factory=dict)
    seen_generation: dict[str, int] = attrs.field(factory=dict)
    log_bucket: TokenBucket = attrs.field(factory=TokenBucket)
    log_dropped: int = 0
    buckets: dict[str, TokenBucket] = attrs.field(factory=dict)


def state_of(session: _HasAppState) -> SessionState:
    """The :class:`SessionState` of ``session`` (created on first use)."""
    state = session.app_state.get(APP_STATE_KEY)
    if state is None:
        state = session.app_state[APP_STATE_KEY] = SessionState()
    assert isinstance(state, SessionState)
    return state

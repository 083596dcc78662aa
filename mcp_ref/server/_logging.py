"""Logging to the client: ``logging/setLevel`` and ``notifications/message``.

Theory of operation
-------------------
A server that sends log messages declares the ``logging`` capability
(2025-06-18/server/utilities/logging#capabilities.1); the client may then choose the
minimum level with ``logging/setLevel``, per session.  Until it does, the server's
``default_log_level`` applies (the spec lets the server decide,
schema ``LoggingMessageNotification``).

:func:`send_log` is what ``Context.log`` calls.  It drops messages below the session's
level, and it rate-limits each session with a token bucket (``rate`` messages per
second, bursts of ``burst``): a tool in a tight logging loop must not flood the client
(2025-06-18/server/utilities/logging#implementation-considerations.1).  Dropped messages
are counted; the next message that gets through is preceded by one ``warning`` saying
how many were dropped.  Levels are RFC 5424 severities, least severe first.
"""

from __future__ import annotations

import typing
from typing import Any, Final, Protocol

import trio

from .. import types as t
from .._errors import INVALID_PARAMS, McpError
from .._methods import capability_present
from .._ratelimit import RateLimit
from ._session_state import state_of

__all__ = ["LEVELS", "LogPolicy", "check_level", "send_log", "set_level"]

LEVELS: Final[tuple[t.LoggingLevel, ...]] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
"""The eight levels, least severe first (RFC 5424 section 6.2.1)."""

_RANK: Final[dict[str, int]] = {level: i for i, level in enumerate(LEVELS)}


class _Session(Protocol):
    app_state: dict[str, Any]

    @property
    def our_capabilities(self) -> Any: ...

    async def send_notification(
        self, method: str, params: Any = None, *, related_request_id: Any = None
    ) -> None: ...


class LogPolicy:
    """How a server logs to its clients.

    Args:
        default_level: the level of sessions whose client never sent
            ``logging/setLevel`` (default ``"info"``).
        rate: messages per second each session may receive (default 50).
        burst: messages a session may receive at once before the rate applies
            (default 200).

    Attributes:
        default_level: the ``default_level`` given.
        limit: the :class:`~mcp_ref.server.RateLimit` of ``rate`` and ``burst``.

    Raises:
        ValueError: unknown level, ``rate`` <= 0 or ``burst`` < 1.
    """

    __slots__ = ("default_level", "limit")

    def __init__(
        self, default_level: t.LoggingLevel = "info", rate: float = 50.0, burst: int = 200
    ) -> None:
        check_level(default_level)
        self.default_level: t.LoggingLevel = default_level
        self.limit = RateLimit(per_second=rate, burst=burst)


def check_level(level: str) -> t.LoggingLevel:
    """``level`` if it is one of :data:`LEVELS`.

    Raises:
        ValueError: it is not.
    """
    if level not in _RANK:
        raise ValueError(f"unknown log level {level!r}; use one of {', '.join(LEVELS)}")
    return typing.cast(t.LoggingLevel, level)


def set_level(session: _Session, level: str) -> None:
    """Handle ``logging/setLevel``: remember ``level`` for this session.

    Raises:
        McpError: -32602 for an unknown level (the core already refuses those while
            converting params; this guards direct calls).

    Source: 2025-06-18/server/utilities/logging#setting-log-level,
    2025-06-18/server/utilities/logging#error-handling.1.
    """
    if level not in _RANK:
        # Spec: 2025-06-18/server/utilities/logging#error-handling.1
        # "Servers SHOULD return standard JSON-RPC errors for common failure cases:"
        raise McpError(INVALID_PARAMS, f"unknown log level {level!r}")
    state_of(session).log_level = typing.cast(t.LoggingLevel, level)


async def send_log(
    session: _Session,
    policy: LogPolicy,
    level: str,
    data: Any,
    *,
    logger: str | None = None,
    related_request_id: Any = None,
    per_request: bool = False,
    request_level: str | None = None,
    declared: bool = True,
) -> bool:
    """Send ``notifications/message`` if ``level`` reaches the session's level (or, for
    a modern request, the request's own).

    Args:
        session: the session to log to.
        policy: the server's :class:`LogPolicy`.
        level: one of :data:`LEVELS`.
        data: any JSON-serializable value (a string, a dict...).
        logger: an optional logger name.
        related_request_id: the request being handled, if any (HTTP routing).
        per_request: the level is the request's (2026-07-28), not the session's: no
            ``request_level`` means no message at all.
        request_level: the request's ``io.modelcontextprotocol/logLevel``, or None.
        declared: the server declares ``logging`` (read when ``per_request``; a modern
            session negotiates no capabilities).

    Returns:
        True if the message was sent; False when it was below the level, rate-limited,
        or the session did not negotiate ``logging``.

    Raises:
        ValueError: ``level`` is not one of :data:`LEVELS`.
        SessionClosed: the session ended.

    Source: 2025-06-18/server/utilities/logging#log-message-notifications.
    """
    check_level(level)
    state = state_of(session)
    if per_request:
        # Spec: 2026-07-28/server/utilities/logging#per-request-log-level.1
        # "The server MUST NOT emit `notifications/message` for a request that does not
        # include this field."
        # Spec: 2026-07-28/server/utilities/logging#capabilities.1
        # "Servers that emit log message notifications MUST declare the `logging` capability:"
        if request_level is None or not declared:
            return False
        threshold = request_level
    else:
        # Spec: 2025-06-18/server/utilities/logging#capabilities.1
        # "Servers that emit log message notifications MUST declare the `logging` capability:"
        if not capability_present(session.our_capabilities, ("logging",)):
            return False
        threshold = state.log_level or policy.default_level
    if _RANK[level] < _RANK[threshold]:
        return False
    # Spec: 2025-06-18/server/utilities/logging#implementation-considerations.1
    # "Servers SHOULD:"
    # Spec: 2025-06-18/server/utilities/logging#security.2 (rate limit messages)
    # "Implementations SHOULD:"
    if not state.log_bucket.take(policy.limit, trio.current_time()):
        state.log_dropped += 1
        return False
    if state.log_dropped:
        dropped, state.log_dropped = state.log_dropped, 0
        notice = t.LoggingMessageNotificationParams(
            level="warning",
            logger="mcp_ref.server",
            data=f"{dropped} log message(s) dropped by the rate limit",
        )
        await session.send_notification(
            "notifications/message", notice, related_request_id=related_request_id
        )
    params = t.LoggingMessageNotificationParams(level=level, data=data, logger=logger)  # type: ignore[arg-type]
    await session.send_notification(
        "notifications/message", params, related_request_id=related_request_id
    )
    return True

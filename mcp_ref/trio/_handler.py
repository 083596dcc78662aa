"""What the application sees of a trio session: the :class:`Handler` it implements, the
:class:`RequestContext` each request brings, and :class:`SessionClosed`.

Theory of operation
-------------------
A session (:mod:`._session`) calls ``handler.handle_request(ctx)`` in a task of its own
for each request from the peer (for a request given to ``Session.push`` with
``run_here``: in the pushing task, a task of its own for that request), and
``handler.handle_notification`` for each notification, one at a time.  The :class:`RequestContext` names the request (id, method,
typed params, progress token), carries the cancel scope the handler runs in (cancelled
when the peer cancels the request or the session closes), and sends what the handler
sends while working on it (progress, requests to the peer, notifications) tagged with
the request's id, so Streamable HTTP routes them onto that request's stream.

``timeout=`` arguments take a :class:`~mcp_ref.RequestTimeout`, None, or
:data:`SESSION_DEFAULT` (the session's ``default_timeout``, by default
:data:`DEFAULT_TIMEOUT`).
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, runtime_checkable

import trio

from .. import types as t
from .._inflight import RequestTimeout
from ..events import Notification, RequestId

if TYPE_CHECKING:
    from ._session import Session

__all__ = [
    "DEFAULT_TIMEOUT",
    "SESSION_DEFAULT",
    "Handler",
    "RequestContext",
    "SessionClosed",
    "TimeoutArg",
]

DEFAULT_TIMEOUT: Final = RequestTimeout(seconds=60, reset_on_progress=True, maximum=600)
"""The default per-request timeout: 60 s, restarted by progress, at most 600 s in all.

Source: 2025-06-18/basic/lifecycle#timeouts.1, .4 and .5."""


class _Default(enum.Enum):
    TOKEN = 0

    def __repr__(self) -> str:
        return "SESSION_DEFAULT"


SESSION_DEFAULT: Final = _Default.TOKEN
"""Sentinel for ``timeout=``: use the session's ``default_timeout``."""

TimeoutArg = RequestTimeout | None | Literal[_Default.TOKEN]
"""What ``timeout=`` takes: a :class:`RequestTimeout`, None (no timeout) or
:data:`SESSION_DEFAULT`."""


class SessionClosed(Exception):
    """The session ended (end of input, a failed write, a fatal protocol error, or the
    ``async with`` block exited) before the operation could complete.

    Attributes:
        reason: a human-readable account of why it ended (for a stdio child process:
            its exit code and the last lines of its stderr).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@runtime_checkable
class Handler(Protocol):
    """What a session calls for the peer's requests and notifications.

    A handler may also have sync methods ``session_opened(session)`` (called once the
    session's tasks are started) and ``session_closed(session)`` (called at the very
    end); the session calls them when they exist.

    Both methods run on the event loop: blocking, synchronous work inside them stalls the
    whole session (no reads, no pings, no timeouts).  Run such work with
    ``trio.to_thread.run_sync`` (the server API does this for sync tool functions).
    """

    async def handle_request(self, ctx: RequestContext) -> Any:
        """Answer one request: return the typed result (e.g. ``t.CallToolResult``) or
        raise :class:`~mcp_ref.McpError` (``InvalidCursor`` from ``paginate`` is answered
        with -32602).  Any other exception is answered with -32603 and logged.  For a server, ``initialize`` comes here too: answer
        ``t.InitializeResult`` with ``protocol_version=
        ctx.session.connection.negotiated_version_for(ctx.params.protocol_version)``.
        ``ping`` never comes here (the session answers it)."""
        ...

    async def handle_notification(self, session: Session, notification: Notification) -> None:
        """React to one notification (``notifications/initialized``, ``.../list_changed``,
        ``notifications/message``, ...).  ``notifications/cancelled`` and
        ``notifications/progress`` are consumed by the session.  Called one at a time, in
        arrival order, from one task: do not block for long."""
        ...


class RequestContext:
    """One incoming request being handled: what ``Handler.handle_request`` receives.

    Attributes:
        session: the :class:`Session` it arrived on.
        request_id: its id, exactly as the peer sent it.
        method: its method, e.g. ``"tools/call"``.
        params: its typed params (an instance of the method's params class), or None.
        progress_token: the ``_meta.progressToken`` it carried, or None.
        cancel_scope: the scope the handler runs in; cancelled when the peer sends
            ``notifications/cancelled`` for it or the session closes.

    Source: 2025-06-18/basic/utilities/cancellation#behavior-requirements.3 (stop
    processing a cancelled request), 2025-06-18/basic/utilities/progress#progress-flow.
    """

    __slots__ = ("cancel_scope", "method", "params", "progress_token", "request_id", "session")

    def __init__(self, session: Session, request_id: RequestId, method: str, params: Any) -> None:
        self.session = session
        self.request_id = request_id
        self.method = method
        self.params = params
        meta = getattr(params, "meta", None)
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        self.progress_token: str | int | None = token
        self.cancel_scope = trio.CancelScope()

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` for this request; a no-op when it carried no
        progress token.

        Raises:
            LocalProtocolError: ``progress`` does not increase past the last one sent, or
                the request is already answered.
            SessionClosed: the session ended.

        Source: 2025-06-18/basic/utilities/progress#progress-flow.3 and .4.
        """
        if self.progress_token is None:
            return
        params = t.ProgressNotificationParams(
            progress=progress, progress_token=self.progress_token, total=total, message=message
        )
        await self.session.send_notification(
            "notifications/progress", params, related_request_id=self.request_id
        )

    async def send_request(self, method: str, params: Any = None, **kw: Any) -> Any:
        """:meth:`Session.send_request` tagged as made while handling this request."""
        kw.setdefault("related_request_id", self.request_id)
        return await self.session.send_request(method, params, **kw)

    async def send_notification(self, method: str, params: Any = None) -> None:
        """:meth:`Session.send_notification` tagged as made while handling this request."""
        await self.session.send_notification(method, params, related_request_id=self.request_id)

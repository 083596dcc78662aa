"""What the application sees of a trio session: the :class:`Handler` it implements and
the :class:`RequestContext` each of the peer's requests brings.  The session calls the
handler in a task of its own per request, inside ``ctx.cancel_scope``, and answers with
what it returns or raises (:mod:`mcp_ref._session_rules` decides the error answers).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import trio

from .. import types as t
from .._session_rules import progress_token_of
from ..events import Notification, RequestId
from ._session_api import Session

__all__ = ["Handler", "RequestContext"]


@runtime_checkable
class Handler(Protocol):
    """What a session calls for the peer's requests and notifications, on the event
    loop (blocking work stalls the whole session).  Optional sync methods:
    ``session_opened(session)`` (once its tasks are started), ``session_closed(session)``
    (at the very end)."""

    async def handle_request(self, ctx: RequestContext) -> Any:
        """Answer one request: return the typed result (e.g. ``t.CallToolResult``) or
        raise :class:`~mcp_ref.McpError` (anything else: -32603, logged;
        :func:`mcp_ref._session_rules.error_reply`).  A server's ``initialize`` comes
        here too: answer ``t.InitializeResult`` with ``protocol_version=ctx.session.
        connection.negotiated_version_for(ctx.params.protocol_version)``; ``ping`` never
        does."""
        ...

    async def handle_notification(self, session: Session, notification: Notification) -> None:
        """React to one notification (not ``notifications/cancelled`` nor ``/progress``,
        the session's), one at a time in arrival order: do not block for long."""
        ...


class RequestContext:
    """One incoming request being handled, what ``Handler.handle_request`` receives:
    its ``session``, ``request_id`` (exactly as sent), ``method``, typed ``params`` (or
    None), ``progress_token`` (``_meta.progressToken`` or None), ``meta_context`` (a
    2026-07-28 request's :class:`mcp_ref._modern.RequestContext`, as the connection read
    it from ``_meta``; None in the handshake era) and ``cancel_scope``, the handler's,
    cancelled by the peer's ``notifications/cancelled`` or the session's end.  What is
    sent through it carries the request's id (HTTP routes on it).

    Source: 2025-06-18/basic/utilities/cancellation#behavior-requirements.3,
    2025-06-18/basic/utilities/progress#progress-flow.
    """

    __slots__ = (
        "cancel_scope",
        "meta_context",
        "method",
        "params",
        "progress_token",
        "request_id",
        "session",
    )

    def __init__(
        self,
        session: Session,
        request_id: RequestId,
        method: str,
        params: Any,
        meta_context: Any = None,
    ) -> None:
        self.session = session
        self.meta_context = meta_context
        self.request_id = request_id
        self.method = method
        self.params = params
        self.progress_token = progress_token_of(params)
        self.cancel_scope = trio.CancelScope()

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` for this request; a no-op without a progress
        token.  Raises LocalProtocolError (``progress`` not past the last one, or the
        request answered already) or SessionClosed.

        Source: 2025-06-18/basic/utilities/progress#progress-flow.3 and .4.
        """
        if self.progress_token is None:
            return
        params = t.ProgressNotificationParams(
            progress=progress, progress_token=self.progress_token, total=total, message=message
        )
        await self.send_notification("notifications/progress", params)

    async def send_request(self, method: str, params: Any = None, **kw: Any) -> Any:
        """:meth:`Session.send_request` tagged as made while handling this request."""
        kw.setdefault("related_request_id", self.request_id)
        return await self.session.send_request(method, params, **kw)

    async def send_notification(self, method: str, params: Any = None) -> None:
        """:meth:`Session.send_notification` tagged as made while handling this request."""
        await self.session.send_notification(method, params, related_request_id=self.request_id)

"""The peer's requests while we handle them: the running handlers, the answer each one's
outcome becomes, and a graceful stop.

Theory of operation
-------------------
The session runs each request of the peer in a task of its own, inside a
``trio.CancelScope`` that :class:`Running` keeps by request id: the peer's
``notifications/cancelled`` cancels it, and so does the end of the session (no answer
either way).  :class:`Running` also bounds how many run at once.  A graceful stop
(:meth:`Running.settle`) gives them a grace period, then cancels the rest and marks
each *abandoned*: its task answers it with -32603 and the stop's reason, since the peer
still waits.  :func:`answer` turns a handler's outcome into the response.  A leaf module:
it knows neither the session nor the channel.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Any, Final

import trio

from .._errors import INTERNAL_ERROR, McpError
from .._pagination import InvalidCursor
from ..events import ErrorResponse, RequestId, Response
from ._outgoing import key_of

__all__ = ["ABANDON_WAIT", "Running", "answer"]

log = logging.getLogger("mcp_ref.trio")

ABANDON_WAIT: Final = 1.0
"""Seconds a graceful stop waits for the handlers it cancelled to end (and answer)."""


class Running:
    """The peer's requests being handled now: their cancel scopes, by request id.

    Args:
        limit: the most handled at once (``max_concurrent_requests``, >= 1).
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._scopes: dict[tuple[type, RequestId], trio.CancelScope] = {}
        # Stopped by a graceful stop whose grace ran out: the reason to answer with.
        self._abandoned: dict[tuple[type, RequestId], str] = {}
        self._changed = trio.Event()
        self._closed = False

    def __len__(self) -> int:
        return len(self._scopes)

    @property
    def full(self) -> bool:
        """True when one more request would exceed the limit."""
        return len(self._scopes) >= self.limit

    def add(self, request_id: RequestId, scope: trio.CancelScope) -> None:
        """Register a request about to be handled in ``scope``."""
        self._scopes[key_of(request_id)] = scope

    def remove(self, request_id: RequestId) -> None:
        """Its handler ended (and was answered, or not): forget it."""
        key = key_of(request_id)
        self._scopes.pop(key, None)
        self._abandoned.pop(key, None)
        self._changed.set()

    def stopped_by_us(self, request_id: RequestId) -> str | None:
        """Why a graceful stop cancelled this request (its error answer's message), or
        None when it did not (cancelled by the peer or the session's end: no answer)."""
        return self._abandoned.get(key_of(request_id))

    def cancel(self, request_id: RequestId) -> None:
        """The peer cancelled it: cancel its handler (no answer will be sent)."""
        scope = self._scopes.get(key_of(request_id))
        if scope is not None:
            # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.3
            # "Receivers of cancellation notifications SHOULD:"
            scope.cancel()

    def cancel_all(self) -> None:
        """The session ends: cancel every handler (none is answered); stop waiting."""
        self._closed = True
        for scope in self._scopes.values():
            scope.cancel()
        self._changed.set()

    async def _until_none_or(self, seconds: float) -> None:
        with trio.move_on_after(seconds):
            while self._scopes and not self._closed:
                changed = self._changed  # shared: several tasks may wait at once
                if changed.is_set():
                    changed = self._changed = trio.Event()
                await changed.wait()

    async def settle(self, grace: float, reason: str) -> int:
        """Let the running handlers finish for ``grace`` seconds, then cancel the rest,
        each to be answered with -32603 and ``reason``, and wait (at most
        :data:`ABANDON_WAIT` seconds) for those answers.  Returns how many were cancelled.
        """
        await self._until_none_or(grace)
        if not self._scopes or self._closed:
            return 0
        for key, scope in self._scopes.items():
            self._abandoned.setdefault(key, reason)
            scope.cancel()
        stopped = len(self._scopes)
        log.info("%d request(s) still running after %.3g s: cancelled (%s)", stopped, grace, reason)
        # A handler in a worker thread (a sync tool) ends only when its thread does:
        # wait a little, not for ever.
        await self._until_none_or(ABANDON_WAIT)
        return stopped


async def answer(
    outcome: Awaitable[Any], request_id: RequestId, method: str
) -> Response | ErrorResponse:
    """Await a handler's ``outcome`` and return the response it makes.

    Returns:
        ``Response(result)``; or an ``ErrorResponse``: the code and message of an
        :class:`~mcp_ref.McpError` (also one alone in an exception group), -32602 for an
        invalid cursor, -32603 naming only the method and the exception's type for
        anything else (logged with its traceback, never sent).
    """
    try:
        result = await outcome
    except McpError as exc:
        return ErrorResponse(id=request_id, code=exc.code, message=exc.message, data=exc.data)
    except InvalidCursor as exc:
        # Spec: 2025-06-18/server/utilities/pagination#error-handling.1
        # "Invalid cursors SHOULD result in an error with code -32602 (Invalid params)."
        return ErrorResponse(id=request_id, code=exc.code, message=exc.message)
    except Exception as exc:
        mcp = _only_mcp_errors(exc)
        if mcp is not None:
            return ErrorResponse(id=request_id, code=mcp.code, message=mcp.message, data=mcp.data)
        log.exception("the handler of %s (id %r) failed", method, request_id)
        return ErrorResponse(
            id=request_id,
            code=INTERNAL_ERROR,
            message=f"internal error while handling {method} ({type(exc).__name__})",
        )
    return Response(id=request_id, result=result)


def _only_mcp_errors(exc: BaseException) -> McpError | None:
    """The first McpError of an exception group made only of McpErrors, else None."""
    if isinstance(exc, McpError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        found = [_only_mcp_errors(e) for e in exc.exceptions]
        if found and all(f is not None for f in found):
            return found[0]
    return None

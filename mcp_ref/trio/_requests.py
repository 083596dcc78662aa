"""Requests in flight both ways: ours, awaited by their callers (:class:`Waiter`), and
the peer's, running in their cancel scopes (:class:`Running`).

Theory of operation
-------------------
``Session.send_request`` registers a :class:`Waiter`, sends the request and awaits
:meth:`Waiter.outcome`; dispatch hands it the answer or the core's timeout (which end
the wait) and progress (run in the caller's task) through the core's
:class:`~mcp_ref._session_rules.Callers`, which keeps the waiters by request id.

:class:`Running` keeps the cancel scope each of the peer's requests runs in: the
peer's ``notifications/cancelled`` and the session's end cancel it unanswered, a
graceful stop (:meth:`Running.settle`) past its grace, answered with -32603.  A leaf
module: it knows neither the session nor the channel.
"""

from __future__ import annotations

import inspect
import logging
from collections import deque
from collections.abc import Callable
from typing import Any

import trio

from .._client import Outcome, SessionClosed, result_of
from .._session_rules import ABANDON_WAIT, MAX_QUEUED_PROGRESS, Handling
from ..events import Progress, RequestId

__all__ = ["ABANDON_WAIT", "MAX_QUEUED_PROGRESS", "Running", "Waiter"]

log = logging.getLogger("mcp_ref.trio")


class Waiter:
    """One caller of ``send_request`` awaiting its answer, and the progress to hand it
    (the core's :class:`~mcp_ref._session_rules.Waiting`)."""

    __slots__ = ("answer", "on_progress", "progress", "wake")

    def __init__(self, on_progress: Callable[[Progress], Any] | None) -> None:
        self.on_progress = on_progress
        self.progress: deque[Progress] = deque(maxlen=MAX_QUEUED_PROGRESS)
        self.wake = trio.Event()
        self.answer: Outcome | SessionClosed | None = None  # what ended the wait

    def finish(self, answer: Outcome | SessionClosed) -> None:
        """End the wait (only the first call counts)."""
        if self.answer is None:
            self.answer = answer
            self.wake.set()

    async def outcome(self) -> Any:
        """Wait for the result, running ``on_progress`` for each progress meanwhile.

        Raises:
            McpError (the peer's error), NoAnswerError (the timeout), SessionClosed, or
            what ``on_progress`` raised.
        """
        while True:
            await self.wake.wait()
            while self.progress and self.on_progress is not None:
                outcome = self.on_progress(self.progress.popleft())
                if inspect.isawaitable(outcome):
                    await outcome
            if isinstance(self.answer, SessionClosed):
                raise self.answer
            if self.answer is not None:
                return result_of(self.answer)
            self.wake = trio.Event()  # only progress came; nothing arrives unseen meanwhile


class Running(Handling[trio.CancelScope]):
    """The peer's requests being handled now, each in its cancel scope (the bookkeeping
    is :class:`~mcp_ref._session_rules.Handling`'s), and a graceful stop's waits."""

    def __init__(self, limit: int) -> None:
        super().__init__(limit)
        self._changed = trio.Event()

    def remove(self, request_id: RequestId) -> None:
        """Its handler ended (and was answered, or not): forget it."""
        super().remove(request_id)
        self._changed.set()

    def cancel(self, request_id: RequestId) -> None:
        """The peer cancelled it: cancel its handler (no answer will be sent)."""
        scope = self.handle_of(request_id)
        if scope is not None:
            # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.3
            # "Receivers of cancellation notifications SHOULD:"
            scope.cancel()

    def cancel_all(self) -> None:
        """The session ends: cancel every handler (none is answered); stop waiting."""
        for scope in self.close():
            scope.cancel()
        self._changed.set()

    async def _until_none_or(self, seconds: float) -> None:
        with trio.move_on_after(seconds):
            while len(self) and not self.closed:
                if self._changed.is_set():  # shared: several tasks may wait at once
                    self._changed = trio.Event()
                await self._changed.wait()

    async def settle(self, grace: float, reason: str) -> int:
        """:meth:`Session.finish_requests <mcp_ref.trio.Session.finish_requests>`, then
        :data:`ABANDON_WAIT` seconds at most for the answers of those cancelled."""
        await self._until_none_or(grace)
        if not len(self) or self.closed:
            return 0
        stopped = self.give_up(reason)
        for scope in stopped:
            scope.cancel()
        log.info(
            "%d request(s) still running after %.3g s: cancelled (%s)", len(stopped), grace, reason
        )
        # A handler in a worker thread (a sync tool) ends only when its thread does:
        # wait a little, not for ever.
        await self._until_none_or(ABANDON_WAIT)
        return len(stopped)

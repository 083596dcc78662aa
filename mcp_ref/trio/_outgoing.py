"""Our requests to the peer, as their callers see them: the wait, its outcome, progress.

Theory of operation
-------------------
:meth:`Session.send_request <mcp_ref.trio.Session.send_request>` registers a
:class:`Waiter` in :class:`Waiters` under the request's id, sends the request and awaits
:meth:`Waiter.outcome`.  The session's dispatch hands each event about one of our
requests to :meth:`Waiters.deliver`; a ``Progress`` is queued for the caller's
``on_progress``, which runs in the caller's own task.  A leaf module: it knows neither
the session nor the channel.
"""

from __future__ import annotations

import inspect
import logging
from collections import deque
from collections.abc import Callable
from typing import Any, Final, Literal

import trio

# One class, one default and one sentinel for every client and driver.
from .._client import DEFAULT, DEFAULT_TIMEOUT, SessionClosed, _Default
from .._errors import McpError, NoAnswerError
from .._inflight import RequestTimeout
from ..events import ErrorResponse, Event, Progress, RequestId, RequestTimedOut, Response

log = logging.getLogger("mcp_ref.trio")

__all__ = ["DEFAULT_TIMEOUT", "SESSION_DEFAULT", "SessionClosed", "TimeoutArg", "Waiters"]

SESSION_DEFAULT: Final = DEFAULT
"""Sentinel for ``timeout=``: use the session's ``default_timeout``."""

TimeoutArg = RequestTimeout | None | Literal[_Default.TOKEN]
"""What ``timeout=`` takes: a :class:`RequestTimeout`, None (no timeout) or
:data:`SESSION_DEFAULT`."""

MAX_QUEUED_PROGRESS: Final = 64
"""Progress events kept for a caller whose ``on_progress`` lags; older ones are dropped."""


def key_of(request_id: RequestId) -> tuple[type, RequestId]:
    """The key of a request id in the session's tables: as in the core, the string
    ``"7"`` and the number ``7`` are different ids."""
    return (type(request_id), request_id)


class Waiter:
    """One caller of ``send_request`` awaiting its outcome, and the progress to hand it."""

    __slots__ = ("done", "error", "on_progress", "progress", "result", "wake")

    def __init__(self, on_progress: Callable[[Progress], Any] | None) -> None:
        self.on_progress = on_progress
        self.progress: deque[Progress] = deque(maxlen=MAX_QUEUED_PROGRESS)
        self.wake = trio.Event()
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None

    def finish(self, *, result: Any = None, error: BaseException | None = None) -> None:
        """Settle the wait (only the first call counts)."""
        if not self.done:
            self.done, self.result, self.error = True, result, error
            self.wake.set()

    async def outcome(self) -> Any:
        """Wait for the result, running ``on_progress`` for each progress meanwhile.

        Raises:
            McpError, NoAnswerError, SessionClosed: whatever finished the wait.
            Any exception of ``on_progress``.
        """
        while True:
            await self.wake.wait()
            while self.progress and self.on_progress is not None:
                outcome = self.on_progress(self.progress.popleft())
                if inspect.isawaitable(outcome):
                    await outcome
            if self.done:
                if self.error is not None:
                    raise self.error
                return self.result
            # Only progress came; nothing can arrive unseen before the new event.
            self.wake = trio.Event()


class Waiters:
    """The callers waiting for our requests' outcomes, by request id."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[type, RequestId], Waiter] = {}

    def expect(
        self, request_id: RequestId, on_progress: Callable[[Progress], Any] | None
    ) -> Waiter:
        """Register a caller for ``request_id`` (before the request is sent)."""
        self._by_key[key_of(request_id)] = waiter = Waiter(on_progress)
        return waiter

    def forget(self, request_id: RequestId) -> None:
        """Drop the caller of ``request_id`` (it stopped waiting)."""
        del self._by_key[key_of(request_id)]

    def deliver(self, event: Event) -> None:
        """Hand an event about one of our requests to its caller, if it still waits."""
        rid = event.request_id if type(event) is Progress else getattr(event, "id", None)
        if rid is None:
            if type(event) is ErrorResponse:
                log.warning("the peer could not read a message we sent: %s", event.message)
            return
        waiter = self._by_key.get(key_of(rid))
        if waiter is None:
            return
        if type(event) is Response:
            waiter.finish(result=event.result)
        elif type(event) is ErrorResponse:
            waiter.finish(error=McpError(event.code, event.message, event.data))
        elif type(event) is RequestTimedOut:
            # Spec: 2025-06-18/basic/lifecycle#timeouts.2
            # "stop waiting for a response"
            # (NoAnswerError: never a plain McpError, which a peer could send)
            waiter.finish(error=NoAnswerError(event.method, event.elapsed))
        elif type(event) is Progress and waiter.on_progress is not None and not waiter.done:
            waiter.progress.append(event)  # the oldest is dropped when the caller lags
            waiter.wake.set()

    def fail_all(self, reason: str) -> None:
        """Finish every wait with :class:`SessionClosed` (the peer can no longer answer)."""
        for waiter in self._by_key.values():
            waiter.finish(error=SessionClosed(reason))

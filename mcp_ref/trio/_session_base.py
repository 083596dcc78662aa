"""What one trio session keeps, and its one write path.

Theory of operation
-------------------
A :class:`~mcp_ref.trio.Session` is written in three parts: :mod:`._session` has its
public API (requests and notifications we send, ``push``, ``abort``) and
:func:`~mcp_ref.trio.open_session`; :mod:`._session_input` reads and dispatches what the
peer sends (the reader, the handlers' tasks, the timer); this module holds the state
they share and the write path every message we send takes (:meth:`SessionBase._emit`):
the core's ``send``, then the channel's ``try_send`` at once when it can, else a write
under ``_send_lock`` that is shielded from the caller's cancellation, bounded by
``send_timeout``, and cancelled when the session closes.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable
from typing import Any

import trio

from .._connection import Connection
from .._errors import LocalProtocolError
from .._inflight import RequestTimeout
from .._state import Role
from ..events import Event, Notification, Progress, RequestId
from ._channel import MessageChannel
from ._handler import Handler, RequestContext, SessionClosed

__all__ = ["SessionBase"]

log = logging.getLogger("mcp_ref.trio")

_MAX_QUEUED_PROGRESS = 64


async def _acquire(lock: trio.Lock) -> None:
    """``await lock.acquire()``, without the trip through the scheduler when it is free.

    ``trio.Lock.acquire`` always yields, even uncontended; this still raises
    ``trio.Cancelled`` in a cancelled scope, waits its turn (FIFO) when the lock is held
    or has waiters, and yields only then.
    """
    await trio.lowlevel.checkpoint_if_cancelled()
    try:
        lock.acquire_nowait()
    except trio.WouldBlock:
        await lock.acquire()


def _key(request_id: Any) -> tuple[type, Any]:
    # The same keying as the core: "7" and 7 are different ids.
    return (type(request_id), request_id)


class _Waiter:
    """A caller of send_request awaiting its outcome, plus progress to hand it."""

    __slots__ = ("done", "error", "method", "on_progress", "progress", "result", "wake")

    def __init__(self, method: str, on_progress: Callable[[Progress], Any] | None) -> None:
        self.method = method
        self.on_progress = on_progress
        self.progress: deque[Progress] | None = (
            None if on_progress is None else deque(maxlen=_MAX_QUEUED_PROGRESS)
        )
        self.wake = trio.Event()
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None

    def finish(self, *, result: Any = None, error: BaseException | None = None) -> None:
        if self.done:
            return
        self.done = True
        self.result = result
        self.error = error
        self.wake.set()

    def add_progress(self, progress: Progress) -> None:
        if self.progress is None or self.done:
            return
        self.progress.append(progress)  # the oldest is dropped when the caller lags
        self.wake.set()


class SessionBase:
    """The state of one session and its write path; :class:`~mcp_ref.trio.Session`
    documents the attributes."""

    def __init__(
        self,
        channel: MessageChannel,
        connection: Connection,
        handler: Handler,
        *,
        max_concurrent_requests: int,
        send_timeout: float | None,
        max_queued_notifications: int,
        drain_timeout: float = 30.0,
    ) -> None:
        self.connection = connection
        self.role: Role = connection.our_role
        self.app_state: dict[str, Any] = {}
        self.closed = False
        self.close_reason: str | None = None
        self.default_timeout: RequestTimeout | None = connection.default_timeout
        self._channel = channel
        self._try_send: Callable[..., int] | None = getattr(channel, "try_send", None)
        self._handler = handler
        self._max_handlers = max_concurrent_requests
        self._send_timeout = math.inf if send_timeout is None else send_timeout
        self._send_lock = trio.Lock()
        self._dispatch_lock = trio.Lock()
        self._waiters: dict[tuple[type, Any], _Waiter] = {}
        self._handlers: dict[tuple[type, Any], RequestContext] = {}
        # push(run_here=...): the requests (by key) whose handler the pushing task runs
        # itself: None until dispatched, then the context it takes.
        self._held: dict[tuple[type, Any], RequestContext | None] = {}
        self._write_scope: trio.CancelScope | None = None
        self._nudge = trio.Event()
        # The deadline the timer task sleeps until (-inf while it is not sleeping).
        self._timer_at = -math.inf
        self._closed_event = trio.Event()
        # Set at end of input: why the peer will send nothing more.
        self._input_ended: str | None = None
        self._drain_timeout = drain_timeout
        self._handlers_changed = trio.Event()
        # Requests of the peer we stopped ourselves (a graceful stop whose grace ran
        # out), by key: the reason their error answer gives.
        self._abandoned: dict[tuple[type, Any], str] = {}
        self._notes_in, self._notes_out = trio.open_memory_channel[Notification](
            max_queued_notifications
        )
        # The session's own nursery: private, only the session spawns into it.
        self._nursery: trio.Nursery | None = None
        self.last_input_at = trio.current_time()

    def _check_open(self) -> None:
        if self.closed:
            raise SessionClosed(self.close_reason or "the session is closed")

    async def _emit(
        self, produce: Callable[[], bytes], related_request_id: RequestId | None
    ) -> None:
        """Call ``produce`` (the core's ``send``, which may raise LocalProtocolError)
        and write the bytes it returns, in turn with other writes.

        The send lock keeps messages whole and in order across awaits.  A write the
        channel takes at once has no await: then nothing can come between the core's
        send and the channel, so the lock is taken only when another write holds it or
        this one must wait.

        Raises:
            SessionClosed: the session is closed, or the write failed.
        """
        lock = self._send_lock
        held = lock.locked()  # another write is under way: queue behind it
        if held:
            await _acquire(lock)
        try:
            self._check_open()
            data = produce()
            rest = self._write_now(data, related_request_id) if data else b""
            if rest:
                if not held:
                    lock.acquire_nowait()  # free: nothing yielded since locked()
                    held = True
                await self._write_locked(rest, related_request_id)
        finally:
            if held:
                lock.release()

    def _write_now(self, data: bytes, related_request_id: RequestId | None) -> bytes:
        """Give bytes the core produced to the channel's ``try_send``, which takes what
        it can without waiting; return the rest (``b""`` when it took everything), for
        :meth:`_write_locked`."""
        try_send = self._try_send
        if try_send is None:
            return data
        try:
            taken = try_send(data, related_request_id=related_request_id)
        except Exception:
            taken = 0  # it should not raise: let send() report the trouble
        if taken >= len(data):
            return b""
        return data[taken:] if taken else data  # a byte stream may take the first part

    async def _write_locked(self, data: bytes, related_request_id: RequestId | None) -> None:
        """Write bytes the core produced; the caller holds ``_send_lock``."""
        failure: str | None = None
        # One scope: the shield keeps the caller's cancellation out (half a message would
        # break the stream), while the scope's own deadline (send_timeout) and _close()
        # (which cancels it) still apply inside.
        deadline = trio.current_time() + self._send_timeout
        with trio.CancelScope(shield=True, deadline=deadline) as scope:
            self._write_scope = scope
            try:
                await self._channel.send(data, related_request_id=related_request_id)
            except Exception as exc:
                failure = f"sending to the peer failed: {exc!r}"
            finally:
                self._write_scope = None
        if failure is None and scope.cancelled_caught:
            if self.closed:
                failure = self.close_reason or "the session closed while sending"
            else:
                failure = f"sending a message took longer than {self._send_timeout} s"
        if failure is not None:
            # The stream may hold half a message: the connection cannot go on.
            self.connection.send_failed()
            eof = getattr(self._channel, "eof_reason", None)
            self._close(f"{failure}; {eof}" if eof and eof not in failure else failure)
            raise SessionClosed(self.close_reason or failure)

    async def _send_event(
        self, event: Event, *, related_request_id: RequestId | None = None
    ) -> None:
        await self._emit(lambda: self.connection.send(event), related_request_id)

    async def _send_bytes(self, data: bytes) -> None:
        """Write bytes the core produced outside ``send`` (timeouts' cancellations, a
        batch's replies), in turn with other writes.

        Raises:
            SessionClosed: the session is closed, or the write failed.
        """
        await self._emit(lambda: data, None)

    async def _quiet_send(self, event: Event) -> None:
        try:
            await self._send_event(event)
        except SessionClosed:
            pass
        except LocalProtocolError as exc:
            log.warning("cannot send %r: %s", event, exc)

    def _close(self, reason: str) -> None:
        """End the session (idempotent): fail waiters, cancel handlers and writes."""
        if self.closed:
            return
        self.closed = True
        self.close_reason = reason
        self.connection.close()
        for waiter in self._waiters.values():
            waiter.finish(error=SessionClosed(reason))
        for ctx in self._handlers.values():
            ctx.cancel_scope.cancel()
        if self._write_scope is not None:
            self._write_scope.cancel()
        self._notes_in.close()
        self._nudge.set()
        self._closed_event.set()

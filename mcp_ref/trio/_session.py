"""The trio driver of the sans-IO core: one MCP session over one message channel.

Theory of operation
-------------------
:func:`open_session` is an async context manager that owns a nursery.  Inside it:

* **one reader task** awaits ``channel.receive()``, feeds the bytes to the core
  (``Connection.receive_data`` or ``receive_message``), then drains ``next_event()`` until
  ``NEED_DATA`` and dispatches each event:

  - a ``Request`` from the peer gets its own task, with its own ``trio.CancelScope``, that
    calls ``handler.handle_request(ctx)`` and sends the response; ``ping`` is answered
    by the session itself; ``initialize`` is handled in the reader (inline), so nothing
    after it is read before it is answered; past ``max_concurrent_requests`` running handlers the request
    is answered at once with -32603 "server busy" (never queued without bound);
  - a ``RequestCancelled`` cancels that handler's scope (the core drops any response);
  - a ``Response`` / ``ErrorResponse`` / ``RequestTimedOut`` / ``Progress`` goes to the
    caller waiting in :meth:`Session.send_request`;
  - a ``Notification`` goes to a bounded queue read by **one notification task**, which
    calls ``handler.handle_notification`` in arrival order;
  - a ``RemoteProtocolError`` is logged; its ``event_hint`` (e.g. -32700) is sent and
    the session carries on;
  - ``ConnectionClosed`` (end of input) closes the session.

* **one timer task** sleeps until ``Connection.next_deadline()`` (on
  ``trio.current_time()``, so ``MockClock`` drives it in tests), calls
  ``handle_timeout(now)``, writes the ``notifications/cancelled`` it returns and
  dispatches the ``RequestTimedOut`` events.  It is nudged awake whenever a request is
  sent, since that may bring the next deadline closer.

* **one keepalive task**, only with ``keepalive=``: pings the peer after a silence and
  ends the session when it stops answering (:mod:`._keepalive`).

* **one write path** (:meth:`Session._emit`): ``Connection.send`` checks the message and
  updates the core, then the channel's ``try_send`` takes the bytes at once if it can
  (no await, so nothing can come between the two).  Only a write that must wait, or one
  that finds another write waiting, goes through ``_send_lock``, so messages stay whole
  and in order.  The waiting write is shielded from the caller's cancellation (a
  half-written message would break the stream) but bounded by ``send_timeout`` and
  cancelled when the session closes; a write that fails or times out calls
  ``Connection.send_failed()`` and ends the session.

* **dispatch without awaiting** where it can (:meth:`Session._drain_locked`): a response
  wakes its caller, a request starts its task, a notification joins its queue, with no
  await between ``next_event()`` and the dispatch.  An event whose dispatch awaits
  (answering a ping, a full notification queue, a protocol error's reply, a batch's
  replies) takes ``_dispatch_lock``; the reader and the timer wait for it in turn, so
  events are dispatched in the order the core produced them.

Handlers run on the event loop: a synchronous, blocking handler stalls the whole
session.  The session does not know about sync code; the server API runs sync tool
functions with ``trio.to_thread.run_sync``.

When the ``async with`` block ends (or input ends first), the session closes: running
handlers are cancelled, callers waiting in ``send_request`` get :class:`SessionClosed`,
and, at block exit, the channel is closed.  No task outlives the block.
"""

from __future__ import annotations

import inspect
import logging
import math
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from .. import types as t
from .._connection import NEED_DATA, Connection
from .._errors import (
    INTERNAL_ERROR,
    REQUEST_TIMEOUT,
    LocalProtocolError,
    McpError,
    RemoteProtocolError,
)
from .._framing import DEFAULT_MAX_MESSAGE_BYTES
from .._inflight import RequestTimeout
from .._methods import METHODS
from .._pagination import InvalidCursor
from .._state import SERVER, Role, State
from ..events import (
    ConnectionClosed,
    ErrorResponse,
    Event,
    Notification,
    Progress,
    ProgressDropped,
    Request,
    RequestCancelled,
    RequestId,
    RequestTimedOut,
    Response,
    UnexpectedResponse,
)
from ._channel import MessageChannel
from ._handler import (
    DEFAULT_TIMEOUT,
    SESSION_DEFAULT,
    Handler,
    RequestContext,
    SessionClosed,
    TimeoutArg,
)
from ._keepalive import Keepalive, run_keepalive

__all__ = [
    "DEFAULT_TIMEOUT",
    "SESSION_DEFAULT",
    "Handler",
    "RequestContext",
    "Session",
    "SessionClosed",
    "open_session",
]

log = logging.getLogger("mcp_ref.trio")

_MAX_QUEUED_PROGRESS = 64
_CLOSE_GRACE = 5.0


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


class Session:
    """One running MCP session; made by :func:`open_session`, never directly.

    Attributes:
        connection: the sans-IO core (:class:`~mcp_ref.Connection`).
        role: ``CLIENT`` or ``SERVER``.
        app_state: a dict for the application's per-session state (log level,
            subscriptions, ...); the session never reads it.
        closed: True once the session has ended.
        last_input_at: when input last came from the peer (``trio.current_time()``
            seconds; the session's start until then); keepalive pings wait on it.
        close_reason: why it ended (None while open).
        default_timeout: the :class:`RequestTimeout` of ``send_request`` when none is given.
    """

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
        self._write_scope: trio.CancelScope | None = None
        self._nudge = trio.Event()
        # The deadline the timer task sleeps until (-inf while it is not sleeping).
        self._timer_at = -math.inf
        self._closed_event = trio.Event()
        # Set at end of input: why the peer will send nothing more.
        self._input_ended: str | None = None
        self._drain_timeout = drain_timeout
        self._handlers_changed = trio.Event()
        self._notes_in, self._notes_out = trio.open_memory_channel[Notification](
            max_queued_notifications
        )
        # The session's own nursery: private, only the session spawns into it.
        self._nursery: trio.Nursery | None = None
        self.last_input_at = trio.current_time()

    # ----------------------------------------------------------------- properties

    @property
    def protocol_version(self) -> str | None:
        """The negotiated protocol version (None before initialize completes)."""
        return self.connection.protocol_version

    @property
    def peer_capabilities(self) -> Any:
        """The peer's capabilities (``t.ServerCapabilities`` / ``t.ClientCapabilities``)."""
        return self.connection.peer_capabilities

    @property
    def our_capabilities(self) -> Any:
        """The capabilities we declared (None before initialize)."""
        return self.connection.our_capabilities

    @property
    def peer_info(self) -> Any:
        """The peer's ``t.Implementation`` (clientInfo or serverInfo), or None."""
        return self.connection.peer_info

    @property
    def requests_in_progress(self) -> int:
        """How many of the peer's requests are being handled now."""
        return len(self._handlers)

    async def wait_closed(self) -> None:
        """Return once the session has ended (e.g. the peer closed its side)."""
        await self._closed_event.wait()

    # -------------------------------------------------------------------- sending

    async def send_request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: TimeoutArg = SESSION_DEFAULT,
        on_progress: Callable[[Progress], Any] | None = None,
        related_request_id: RequestId | None = None,
    ) -> Any:
        """Send a request and wait for its result.

        Args:
            method: the MCP method, e.g. ``"tools/call"``.
            params: its typed params (e.g. ``t.CallToolRequestParams``), or None.
            timeout: a :class:`RequestTimeout`, None for none, or the session default.
            on_progress: called (sync or async) with each :class:`~mcp_ref.Progress` for
                this request, in the caller's task; giving it adds a progress token
                (the request id) to ``params._meta`` unless one is there.  At most 64
                progress events wait for a slow callback; older ones are dropped.  An
                exception from it cancels the request and propagates.
            related_request_id: the incoming request this one is made for (HTTP routing).

        Returns:
            The typed result (an instance of the method's result class).

        Raises:
            McpError: the peer answered with an error response; or
                ``McpError(REQUEST_TIMEOUT, ...)`` when the timeout expired (the core sent
                ``notifications/cancelled``).
            SessionClosed: the session ended before the answer came.
            LocalProtocolError: the request breaks the protocol (unknown method, missing
                capability, wrong state, too many requests in flight); nothing was sent.

        If the calling task is cancelled after the request went out, the session sends
        ``notifications/cancelled`` for it and re-raises the cancellation.

        Source: 2025-06-18/basic/lifecycle#timeouts.2,
        2025-06-18/basic/utilities/cancellation#cancellation-flow.
        """
        self._check_open()
        if self._input_ended is not None:
            # The peer's input ended: it can no longer answer.
            raise SessionClosed(self._input_ended)
        conn = self.connection
        rid = conn.next_request_id()
        if on_progress is not None:
            params = _with_progress_token(method, params, rid)
        waiter = _Waiter(method, on_progress)
        key = _key(rid)
        self._waiters[key] = waiter
        sent = False

        def produce() -> bytes:
            nonlocal sent
            data = conn.send(
                Request(id=rid, method=method, params=params),
                now=trio.current_time(),
                timeout=self._resolve(timeout),
            )
            sent = True
            deadline = conn.next_deadline()
            if deadline is not None and deadline < self._timer_at:
                self._nudge.set()  # the timer sleeps past this request's deadline
            return data

        try:
            await self._emit(produce, related_request_id)
            await self._wait(waiter)
        except BaseException:
            if sent and not waiter.done and not self.closed:
                with trio.CancelScope(shield=True):
                    # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.1
                    await self._cancel_outgoing(rid, "cancelled by the caller", related_request_id)
            raise
        finally:
            del self._waiters[key]
        if waiter.error is not None:
            raise waiter.error
        return waiter.result

    async def send_notification(
        self, method: str, params: Any = None, *, related_request_id: RequestId | None = None
    ) -> None:
        """Send a notification.

        Args:
            method: e.g. ``"notifications/tools/list_changed"``.
            params: its typed params, or None.
            related_request_id: the incoming request it belongs to (HTTP routing).

        Raises:
            SessionClosed: the session ended.
            LocalProtocolError: the notification breaks the protocol (wrong state,
                capability not negotiated, progress not increasing); nothing was sent.
        """
        await self._send_event(
            Notification(method=method, params=params), related_request_id=related_request_id
        )

    def _resolve(self, timeout: TimeoutArg) -> RequestTimeout | None:
        return self.default_timeout if timeout is SESSION_DEFAULT else timeout

    def _check_open(self) -> None:
        if self.closed:
            raise SessionClosed(self.close_reason or "the session is closed")

    async def _wait(self, waiter: _Waiter) -> None:
        while True:
            await waiter.wake.wait()
            if waiter.done and not waiter.progress:
                return
            waiter.wake = trio.Event()
            while waiter.progress and waiter.on_progress is not None:
                outcome = waiter.on_progress(waiter.progress.popleft())
                if inspect.isawaitable(outcome):
                    await outcome
            if waiter.done:
                return

    async def _cancel_outgoing(
        self, rid: RequestId, reason: str, related_request_id: RequestId | None
    ) -> None:
        params = t.CancelledNotificationParams(request_id=rid, reason=reason)
        try:
            with trio.move_on_after(self._send_timeout):
                await self._send_event(
                    Notification(method="notifications/cancelled", params=params),
                    related_request_id=related_request_id,
                )
        except (SessionClosed, LocalProtocolError) as exc:
            # e.g. initialize, which must not be cancelled
            # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.2
            log.debug("could not cancel request %r: %s", rid, exc)

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

    # -------------------------------------------------------------- background tasks

    async def _reader(self) -> None:
        conn = self.connection
        lines = self._channel.framing == "lines"
        while not self.closed:
            try:
                data = await self._channel.receive()
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            if self.closed:
                return
            self.last_input_at = trio.current_time()
            if not data:
                conn.receive_data(b"")
                await self._drain_locked()
                return  # end of input: nothing more to read
            elif lines:
                conn.receive_data(data)
            else:
                conn.receive_message(data)
            await self._drain_locked()

    async def _drain_locked(self) -> None:
        """Dispatch every event the core has ready, in order.

        Most events are dispatched at once, with no await: a response wakes its caller,
        a request starts its handler task.  The dispatch lock is taken only around a
        dispatch that awaits (answering a ping, queueing a notification when the queue
        is full, a protocol error's reply), and waited for when another task (the
        timer, or the reader) is in the middle of one, so events never overtake.

        A dispatch that awaits is shielded from cancellation: an event taken from the
        core is never lost half-way (it ends anyway when the session closes, which
        closes what it waits on).  Callers other than the reader (:meth:`push`) may
        be cancelled.
        """
        lock = self._dispatch_lock
        conn = self.connection
        while not self.closed:
            if lock.locked():
                await _acquire(lock)  # another task is dispatching: it goes first
                try:
                    with trio.CancelScope(shield=True):
                        await self._drain()
                finally:
                    lock.release()
                return
            try:
                event = conn.next_event()
            except RemoteProtocolError as exc:
                lock.acquire_nowait()
                try:
                    with trio.CancelScope(shield=True):
                        await self._on_protocol_error(exc)
                finally:
                    lock.release()
                continue
            if event is NEED_DATA:
                return
            assert isinstance(event, Event)
            if self._dispatch_now(event):
                continue
            lock.acquire_nowait()  # free: nothing yielded since locked()
            try:
                with trio.CancelScope(shield=True):
                    await self._dispatch(event)
            finally:
                lock.release()

    async def _timer(self) -> None:
        conn = self.connection
        while not self.closed:
            deadline = conn.next_deadline()
            # Requests sent meanwhile wake us only when their deadline comes earlier.
            self._timer_at = math.inf if deadline is None else deadline
            nudge = self._nudge = trio.Event()
            with trio.move_on_at(self._timer_at):
                await nudge.wait()
                continue
            self._timer_at = -math.inf  # busy: next_deadline() is read again below
            if self.closed:
                return
            # Spec: 2025-06-18/basic/lifecycle#timeouts.2
            for data in conn.handle_timeout(trio.current_time()):
                try:
                    await self._send_bytes(data)
                except SessionClosed:
                    return
            await self._drain_locked()

    async def _notification_worker(self) -> None:
        async with self._notes_out:
            async for note in self._notes_out:
                try:
                    await self._handler.handle_notification(self, note)
                except Exception:
                    log.exception("the handler of %s failed", note.method)

    async def _run_handler(self, ctx: RequestContext) -> None:
        try:
            with ctx.cancel_scope:
                reply = await self._call_handler(ctx)
                await self._send_reply(ctx, reply)
        finally:
            self._handlers.pop(_key(ctx.request_id), None)
            self._handlers_changed.set()

    async def _call_handler(self, ctx: RequestContext) -> Response | ErrorResponse:
        rid = ctx.request_id
        try:
            result = await self._handler.handle_request(ctx)
        except McpError as exc:
            return ErrorResponse(id=rid, code=exc.code, message=exc.message, data=exc.data)
        except InvalidCursor as exc:
            # Spec: 2025-06-18/server/utilities/pagination#error-handling.1
            return ErrorResponse(id=rid, code=exc.code, message=exc.message)
        except Exception as exc:
            mcp = _only_mcp_errors(exc)
            if mcp is not None:
                return ErrorResponse(id=rid, code=mcp.code, message=mcp.message, data=mcp.data)
            log.exception("the handler of %s (id %r) failed", ctx.method, rid)
            # Never a traceback to the peer: only the method and the exception's type.
            return ErrorResponse(
                id=rid,
                code=INTERNAL_ERROR,
                message=f"internal error while handling {ctx.method} ({type(exc).__name__})",
            )
        return Response(id=rid, result=result)

    async def _send_reply(self, ctx: RequestContext, reply: Response | ErrorResponse) -> None:
        rid = ctx.request_id
        try:
            await self._send_event(reply, related_request_id=rid)
            return
        except SessionClosed:
            return
        except (LocalProtocolError, ValueError, TypeError) as exc:
            log.error("cannot send the answer to %s (id %r): %s", ctx.method, rid, exc)
        fallback = ErrorResponse(
            id=rid,
            code=INTERNAL_ERROR,
            message=f"internal error: the answer to {ctx.method} could not be sent",
        )
        try:
            await self._send_event(fallback, related_request_id=rid)
        except (SessionClosed, LocalProtocolError) as exc:
            log.error("cannot answer %s (id %r) at all: %s", ctx.method, rid, exc)

    # ------------------------------------------------------------------ dispatching

    async def _drain(self) -> None:
        conn = self.connection
        while not self.closed:
            try:
                event = conn.next_event()
            except RemoteProtocolError as exc:
                await self._on_protocol_error(exc)
                continue
            if event is NEED_DATA:
                return
            assert isinstance(event, Event)
            await self._dispatch(event)

    async def _on_protocol_error(self, exc: RemoteProtocolError) -> None:
        log.warning("%s session: bad input from the peer: %s", self.role.value, exc.message)
        if exc.event_hint is not None:
            try:
                await self._send_event(exc.event_hint)
            except SessionClosed:
                return
            except LocalProtocolError as err:
                log.warning("cannot send the error reply: %s", err)
        if self.connection.state is State.CLOSED:
            self._close(f"protocol error: {exc.message}")

    async def _dispatch(self, event: Event) -> None:
        """Dispatch one event, awaiting where it must (caller holds the dispatch lock)."""
        if type(event) is RequestCancelled and self.connection.has_data_to_send:
            assert isinstance(event, RequestCancelled)
            self._on_cancelled(event)
            await self._send_bytes(self.connection.data_to_send())
            return
        if self._dispatch_now(event):
            return
        if type(event) is Request:
            await self._on_request(event)
        elif type(event) is Notification:
            try:
                await self._notes_in.send(event)  # bounded: the reader waits when full
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                pass

    def _dispatch_now(self, event: Event) -> bool:
        """Dispatch one event if that needs no await; False when it does (a ping to
        answer, initialize, a request beyond the concurrency bound, a notification
        when the queue is full): then :meth:`_dispatch` does it."""
        kind = type(event)
        if kind is Request:
            assert isinstance(event, Request)
            method = event.method
            if (
                method == "ping"
                or method == "initialize"
                or len(self._handlers) >= self._max_handlers
                or self._nursery is None
            ):
                return False
            ctx = RequestContext(self, event.id, method, event.params)
            self._handlers[_key(event.id)] = ctx
            self._nursery.start_soon(self._run_handler, ctx)
        elif kind is Notification:
            assert isinstance(event, Notification)
            try:
                self._notes_in.send_nowait(event)
            except trio.WouldBlock:
                return False
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                pass
        elif kind is Response:
            assert isinstance(event, Response)
            waiter = self._waiters.get(_key(event.id))
            if waiter is not None:
                waiter.finish(result=event.result)
        elif kind is ErrorResponse:
            assert isinstance(event, ErrorResponse)
            if event.id is None:
                log.warning(
                    "the peer could not read a message we sent: %s (code %s)",
                    event.message,
                    event.code,
                )
                return True
            waiter = self._waiters.get(_key(event.id))
            if waiter is not None:
                waiter.finish(error=McpError(event.code, event.message, event.data))
        elif kind is RequestCancelled:
            assert isinstance(event, RequestCancelled)
            if self.connection.has_data_to_send:
                return False  # it settled a batch: its replies must be written
            self._on_cancelled(event)
        elif kind is RequestTimedOut:
            assert isinstance(event, RequestTimedOut)
            waiter = self._waiters.get(_key(event.id))
            if waiter is not None:
                waiter.finish(
                    error=McpError(
                        REQUEST_TIMEOUT,
                        f"request {event.method} timed out after {event.elapsed:.3g} s "
                        # initialize is never cancelled, only abandoned (the core sends
                        # no notifications/cancelled for it).
                        + (
                            "and was abandoned"
                            if event.method == "initialize"
                            else "and was cancelled"
                        ),
                        {"method": event.method, "elapsed": event.elapsed},
                    )
                )
        elif kind is Progress:
            assert isinstance(event, Progress)
            waiter = self._waiters.get(_key(event.request_id))
            if waiter is not None:
                waiter.add_progress(event)
        elif kind is ConnectionClosed:
            eof = getattr(self._channel, "eof_reason", None)
            self._end_of_input(
                f"the peer closed the connection; {eof}"
                if eof
                else "the peer closed the connection"
            )
        elif kind in (ProgressDropped, UnexpectedResponse):
            log.debug("ignored input from the peer: %r", event)
        return True

    def _on_cancelled(self, event: RequestCancelled) -> None:
        running = self._handlers.get(_key(event.id))
        # Spec: 2025-06-18/basic/utilities/cancellation#implementation-notes.1
        log.debug("the peer cancelled request %r: %s", event.id, event.reason)
        if running is not None:
            # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.3
            running.cancel_scope.cancel()

    async def _on_request(self, event: Request) -> None:
        """A request :meth:`_dispatch_now` left: ping, initialize, or one too many."""
        if event.method == "ping":
            # Spec: 2025-06-18/basic/utilities/ping#behavior-requirements.1
            await self._quiet_send(Response(id=event.id, result=t.Result()))
            return
        if len(self._handlers) >= self._max_handlers or self._nursery is None:
            who = "server" if self.role is SERVER else "client"
            await self._quiet_send(
                ErrorResponse(
                    id=event.id,
                    code=INTERNAL_ERROR,
                    message=f"{who} busy: {len(self._handlers)} requests are being handled",
                )
            )
            return
        # initialize: answered before reading on, so the lifecycle moves in input order.
        ctx = RequestContext(self, event.id, event.method, event.params)
        self._handlers[_key(event.id)] = ctx
        await self._run_handler(ctx)

    async def _quiet_send(self, event: Event) -> None:
        try:
            await self._send_event(event)
        except SessionClosed:
            pass
        except LocalProtocolError as exc:
            log.warning("cannot send %r: %s", event, exc)

    # ---------------------------------------------------------------------- closing

    def _end_of_input(self, reason: str) -> None:
        """The peer will send nothing more: fail our requests to it, finish the peer's
        requests we accepted (nothing accepted is lost), then close.

        Source: 2025-06-18/basic/lifecycle#shutdown and #stdio.1 (the transport's end ends the
        session); the core is in state CLOSING meanwhile.
        """
        if self.closed or self._input_ended is not None:
            return
        self._input_ended = reason
        for waiter in self._waiters.values():
            waiter.finish(error=SessionClosed(reason))
        self._notes_in.close()
        if not self._handlers or self._nursery is None:
            self._close(reason)
        else:
            self._nursery.start_soon(self._drain_handlers, reason)

    async def _drain_handlers(self, reason: str) -> None:
        """Wait (at most ``drain_timeout`` seconds) for accepted requests to be answered."""
        with trio.move_on_after(self._drain_timeout):
            while self._handlers and not self.closed:
                self._handlers_changed = trio.Event()
                await self._handlers_changed.wait()
        if self._handlers:
            log.warning(
                "%d request(s) still running %.3g s after end of input; cancelled",
                len(self._handlers),
                self._drain_timeout,
            )
        self._close(reason)

    async def push(self, data: bytes) -> None:
        """Give the session one whole message from the caller's task, instead of through
        ``channel.receive()`` (for ``"messages"`` channels whose input arrives in other
        tasks, like a Streamable HTTP POST): the core takes it, and its events are
        dispatched before this returns, as the reader would (requests start their
        tasks; nothing waits for their answers).

        The channel must keep the order: a message it still holds for ``receive()``
        must reach the session before any pushed after it.  This waits while another
        task is dispatching, and while the notification queue is full (the same
        backpressure the reader applies); a dispatch under way is shielded from the
        caller's cancellation, so a message the core took is never lost.

        Raises:
            SessionClosed: the session is closed; the message was not taken.
        """
        self._check_open()
        if self._input_ended is not None:
            raise SessionClosed(self._input_ended)
        self.last_input_at = trio.current_time()
        self.connection.receive_message(data)
        await self._drain_locked()

    def abort(self, reason: str) -> None:
        """End the session now, as if the connection broke: pending ``send_request``
        callers get :class:`SessionClosed` with ``reason``, running handlers are
        cancelled, :meth:`wait_closed` returns.  Idempotent; the owner of the session
        still leaves its ``async with`` block to release the channel."""
        self._close(reason)

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


def _with_progress_token(method: str, params: Any, token: RequestId) -> Any:
    """``params`` with ``_meta.progressToken`` set to ``token`` unless one is there."""
    if params is None:
        spec = METHODS.get(method)
        if spec is None or spec.params_type is None:
            return params  # the core refuses the method
        params = spec.params_type()
    if not attrs.has(type(params)) or not hasattr(params, "meta"):
        return params
    meta = dict(params.meta or {})
    # Spec: 2025-06-18/basic/utilities/progress#progress-flow.2 (request ids are unique)
    meta.setdefault("progressToken", token)
    return attrs.evolve(params, meta=meta)


def _only_mcp_errors(exc: BaseException) -> McpError | None:
    """The first McpError of an exception group made only of McpErrors, else None."""
    if isinstance(exc, McpError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        found = [_only_mcp_errors(e) for e in exc.exceptions]
        if found and all(f is not None for f in found):
            return found[0]
    return None


@asynccontextmanager
async def open_session(
    channel: MessageChannel,
    role: Role,
    handler: Handler,
    *,
    default_timeout: RequestTimeout | None = DEFAULT_TIMEOUT,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    max_concurrent_requests: int = 256,
    send_timeout: float | None = 30.0,
    max_queued_notifications: int = 64,
    drain_timeout: float = 30.0,
    keepalive: Keepalive | None = None,
) -> AsyncIterator[Session]:
    """Run an MCP session over ``channel`` for the duration of an ``async with`` block.

    Args:
        channel: the transport (:class:`~mcp_ref.trio.MessageChannel`).
        role: ``CLIENT`` or ``SERVER`` (our side).
        handler: answers the peer's requests and notifications (:class:`Handler`).
        default_timeout: the timeout of requests we send when the caller gives none
            (default 60 s, restarted by progress, at most 600 s); None for no timeout.
        max_message_bytes: the largest message accepted, in bytes (default 8 MiB).
        max_concurrent_requests: the most peer requests handled at once (default 256);
            past it a request is answered at once with -32603 "server busy".
        send_timeout: seconds a single write may take before the session gives up on the
            peer (default 30); None for no limit.
        max_queued_notifications: notifications waiting for the notification handler
            before the reader stops reading (default 64).
        drain_timeout: at end of input, seconds to let the peer's accepted requests
            finish and be answered before they are cancelled (default 30).
        keepalive: ping the peer after this much silence and end the session when it
            stops answering (:class:`~mcp_ref.trio.Keepalive`); default None, no pings.

    Yields:
        The :class:`Session`.  Initialization is not done here: a client sends
        ``initialize`` itself (see :func:`mcp_ref.client.open_client`), a server's handler
        answers it.

    On exit, running handlers are cancelled, pending ``send_request`` callers get
    :class:`SessionClosed`, the channel is closed, and no task is left.  An exception
    raised in the block propagates unchanged (not wrapped in an exception group).

    Source: 2025-06-18/basic/lifecycle (the session), 2025-06-18/basic/lifecycle#timeouts.
    """
    if channel.framing not in ("lines", "messages"):
        raise ValueError(f"unknown channel framing {channel.framing!r}")
    if max_concurrent_requests < 1 or max_queued_notifications < 1:
        raise ValueError("max_concurrent_requests and max_queued_notifications must be >= 1")
    conn = Connection(
        role,
        newline_framing=channel.framing == "lines",
        default_timeout=default_timeout,
        max_message_bytes=max_message_bytes,
    )
    session = Session(
        channel,
        conn,
        handler,
        max_concurrent_requests=max_concurrent_requests,
        send_timeout=send_timeout,
        max_queued_notifications=max_queued_notifications,
        drain_timeout=drain_timeout,
    )
    body_error: BaseException | None = None
    try:
        async with trio.open_nursery() as nursery:
            session._nursery = nursery
            attach = getattr(channel, "attach_session", None)
            if attach is not None:
                attach(session)  # the channel may now push() input to it
            nursery.start_soon(session._reader)
            nursery.start_soon(session._timer)
            nursery.start_soon(session._notification_worker)
            if keepalive is not None:
                nursery.start_soon(run_keepalive, session, keepalive)
            opened = getattr(handler, "session_opened", None)
            if opened is not None:
                opened(session)
            try:
                yield session
            except BaseException as exc:
                if isinstance(exc, GeneratorExit):
                    raise
                body_error = exc
            finally:
                session._close("the session was closed by its owner")
                nursery.cancel_scope.cancel()
    finally:
        session._nursery = None
        session._close("the session was closed by its owner")
        with trio.CancelScope(shield=True), trio.move_on_after(_CLOSE_GRACE):
            try:
                await channel.aclose()
            except Exception as exc:
                log.debug("closing the channel failed: %r", exc)
        closed_hook = getattr(handler, "session_closed", None)
        if closed_hook is not None:
            closed_hook(session)
    if body_error is not None:
        raise body_error


async def serve_channel(handler: Handler, channel: MessageChannel, **session_kw: Any) -> None:
    """Serve one session of ``handler`` on ``channel`` until it ends.

    A handler with a ``serve(channel, **session_kw)`` coroutine method (such as
    ``mcp_ref.server.Server``, which runs tasks of its own beside the session) serves
    itself; any other handler gets a plain :func:`open_session`.  Every transport's
    server side calls this, so all of them treat handlers alike.
    """
    serve = getattr(handler, "serve", None)
    if serve is not None:
        await serve(channel, **session_kw)
        return
    async with open_session(channel, SERVER, handler, **session_kw) as session:
        await session.wait_closed()

"""How a trio session takes what the peer sends: reading, dispatching, running handlers.

Theory of operation
-------------------
The reader task (:meth:`SessionInput._reader`) feeds the channel's bytes to the core,
or a channel pushes whole messages from its own tasks (:meth:`SessionInput.push`); either
way :meth:`SessionInput._drain_locked` takes the core's events in order and dispatches
each: a request gets a task of its own with its own cancel scope
(:meth:`SessionInput._run_handler`), a response wakes the caller waiting for it, a
notification joins the bounded queue the notification task reads, a cancellation
cancels a handler's scope.  Most events need no await; one that does (a ping to answer,
a full notification queue, a protocol error's reply) takes ``_dispatch_lock`` so events
never overtake.  The timer task expires our requests at ``Connection.next_deadline()``.
At end of input the requests we accepted are still answered (``drain_timeout``), then the
session closes.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any, cast

import trio

from .. import types as t
from .._connection import NEED_DATA
from .._errors import (
    INTERNAL_ERROR,
    LocalProtocolError,
    McpError,
    NoAnswerError,
    RemoteProtocolError,
)
from .._pagination import InvalidCursor
from .._state import SERVER, State
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
from ._handler import RequestContext, SessionClosed
from ._session_base import SessionBase, _acquire, _key

if TYPE_CHECKING:
    from ._session import Session

__all__ = ["SessionInput"]

log = logging.getLogger("mcp_ref.trio")

_ABANDON_WAIT = 1.0
"""Seconds to wait for the handlers cancelled by a graceful stop to end (and answer)."""


class SessionInput(SessionBase):
    """The input half of :class:`~mcp_ref.trio.Session`."""

    @property
    def _as_session(self) -> Session:
        """This object as what it always is, a :class:`~mcp_ref.trio.Session` (the type
        handlers receive)."""
        return cast("Session", self)

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

    async def push(self, data: bytes, *, run_here: RequestId | None = None) -> None:
        """Give the session one whole message from the caller's task, instead of through
        ``channel.receive()`` (for ``"messages"`` channels whose input arrives in other
        tasks, like a Streamable HTTP POST): the core takes it, and its events are
        dispatched before this returns, as the reader would (requests start their
        tasks; nothing waits for their answers).

        ``run_here``: the id of a request in ``data`` whose handler the caller runs
        itself, in its own task, before this returns, instead of in a new task (for a
        caller that is a task of its own for that one request, like a POST's: it saves
        starting a task and a trip through the scheduler).  The handler runs as it
        would in a task of its own (its cancel scope, the concurrency bound, the
        answer sent by the session), except that cancelling the caller cancels it, and
        then it is not answered (as when the session closes): cancel such a caller only
        when the session ends.  A request that would not get a task (ping, initialize,
        one over the bound) is handled as usual.

        The channel must keep the order: a message it still holds for ``receive()``
        must reach the session before any pushed after it.  This waits while another
        task is dispatching, and while the notification queue is full (the same
        backpressure the reader applies); a dispatch under way is shielded from the
        caller's cancellation, so a message the core took is never lost (a request
        held for ``run_here`` then gets a task of its own after all).

        Raises:
            SessionClosed: the session is closed; the message was not taken.

        Source: 2025-06-18/basic/transports#sending-messages-to-the-server.1 (each POST
        body is a message the session receives, in the order they arrive).
        """
        self._check_open()
        if self._input_ended is not None:
            raise SessionClosed(self._input_ended)
        self.last_input_at = trio.current_time()
        self.connection.receive_message(data)
        if run_here is None:
            await self._drain_locked()
            return
        key = _key(run_here)
        self._held[key] = None
        try:
            await self._drain_locked()
        except BaseException:
            self._start_held(key)  # taken by the core: it runs in a task after all
            raise
        ctx = self._held.pop(key, None)
        if ctx is not None:
            await self._run_handler(ctx)

    def _start_held(self, key: tuple[type, Any]) -> None:
        ctx = self._held.pop(key, None)
        if ctx is None:
            return  # not dispatched yet: it gets a task when it is
        if self._nursery is not None:
            self._nursery.start_soon(self._run_handler, ctx)
        else:  # the session is ending: nobody will answer it
            self._handlers.pop(key, None)
            self._handlers_changed.set()

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
                    await self._dispatch_awaiting(event)
            finally:
                lock.release()

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
        if not self._dispatch_now(event):
            await self._dispatch_awaiting(event)

    async def _dispatch_awaiting(self, event: Event) -> None:
        """The rest of an event :meth:`_dispatch_now` could not finish without awaiting
        (caller holds the dispatch lock)."""
        if type(event) is Request:
            await self._on_request(event)
        elif type(event) is Notification:
            try:
                await self._notes_in.send(event)  # bounded: the reader waits when full
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                pass
        elif type(event) is RequestCancelled:
            # It settled a batch whose other replies were held: write them now.
            try:
                await self._send_bytes(self.connection.data_to_send())
            except SessionClosed:
                pass  # the session ended meanwhile: nothing more goes out

    def _dispatch_now(self, event: Event) -> bool:
        """Dispatch one event, or as much of it as needs no await; False when the rest
        must await (a ping to answer, initialize, a request beyond the concurrency
        bound, a notification when the queue is full, a batch's replies to write after
        a cancellation): then :meth:`_dispatch_awaiting` does it."""
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
            ctx = RequestContext(self._as_session, event.id, method, event.params)
            key = _key(event.id)
            self._handlers[key] = ctx
            if key in self._held:
                self._held[key] = ctx  # push(run_here=...) runs it in its own task
            else:
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
            running = self._handlers.get(_key(event.id))
            # Spec: 2025-06-18/basic/utilities/cancellation#implementation-notes.1
            # "Both parties SHOULD log cancellation reasons for debugging"
            log.debug("the peer cancelled request %r: %s", event.id, event.reason)
            if running is not None:
                # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.3
                # "Receivers of cancellation notifications SHOULD:"
                running.cancel_scope.cancel()
            return not self.connection.has_data_to_send
        elif kind is RequestTimedOut:
            assert isinstance(event, RequestTimedOut)
            waiter = self._waiters.get(_key(event.id))
            if waiter is not None:
                # Spec: 2025-06-18/basic/lifecycle#timeouts.2 ("stop waiting for a response")
                # We gave up: NoAnswerError, never a plain McpError a peer could send.
                waiter.finish(error=NoAnswerError(event.method, event.elapsed))
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

    async def _on_request(self, event: Request) -> None:
        """A request :meth:`_dispatch_now` left: ping, initialize, or one too many."""
        if event.method == "ping":
            # Spec: 2025-06-18/basic/utilities/ping#behavior-requirements.1
            # "The receiver MUST respond promptly with an empty response:"
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
        ctx = RequestContext(self._as_session, event.id, event.method, event.params)
        self._handlers[_key(event.id)] = ctx
        await self._run_handler(ctx)

    async def _run_handler(self, ctx: RequestContext) -> None:
        key = _key(ctx.request_id)
        try:
            with ctx.cancel_scope:
                reply = await self._call_handler(ctx)
                await self._send_reply(ctx, reply)
                return
            # Only a cancelled handler gets here.  Cancelled by the peer, or because the
            # session closed: no answer.  Stopped by us (_abandon): answered below.
            reason = self._abandoned.get(key)
            if reason is not None:
                # Spec: 2025-06-18/basic#responses.4
                # "errors MUST include an error code and message at minimum": the peer
                # is still waiting for this answer, and only a response ends its wait.
                await self._send_reply(
                    ctx, ErrorResponse(id=ctx.request_id, code=INTERNAL_ERROR, message=reason)
                )
        finally:
            self._abandoned.pop(key, None)
            self._handlers.pop(key, None)
            self._handlers_changed.set()

    async def _handlers_change(self) -> None:
        """Wait until a handler ends (any number of tasks may wait at once)."""
        changed = self._handlers_changed
        if changed.is_set():
            changed = self._handlers_changed = trio.Event()
        await changed.wait()

    def _abandon(self, reason: str) -> int:
        """Cancel every running handler of the peer's requests; each is then answered
        with -32603 and ``reason`` (:meth:`_run_handler`).  Returns how many."""
        for key, ctx in self._handlers.items():
            self._abandoned.setdefault(key, reason)
            ctx.cancel_scope.cancel()
        return len(self._handlers)

    async def _settle_handlers(self, grace: float, reason: str) -> int:
        """Let the running handlers finish for ``grace`` seconds, then cancel the rest
        and wait (at most ``_ABANDON_WAIT`` seconds) for their error answers.  Returns
        how many were cancelled."""
        with trio.move_on_after(grace):
            while self._handlers and not self.closed:
                await self._handlers_change()
        if not self._handlers or self.closed:
            return 0
        stopped = self._abandon(reason)
        log.info("%d request(s) still running after %.3g s: cancelled (%s)", stopped, grace, reason)
        # A handler in a worker thread (a sync tool) ends only when its thread does:
        # wait a little, not for ever.
        with trio.move_on_after(_ABANDON_WAIT):
            while self._handlers and not self.closed:
                await self._handlers_change()
        return stopped

    async def finish_requests(self, grace: float, *, reason: str) -> int:
        """Stop gracefully: let the peer's requests in progress run for at most ``grace``
        seconds, then cancel each one still running and answer it with an error
        response (code -32603 INTERNAL_ERROR, message ``reason``).

        The session stays open (the caller ends it, e.g. by ending its input); requests
        that arrive meanwhile are handled as usual.  A handler that ignores its
        cancellation (a sync tool in a worker thread) is waited for at most 1 s more,
        then left to the session's close.

        Args:
            grace: seconds the requests in progress may still take (0: cancel now).
            reason: the error message of the requests cancelled, e.g. ``"the server is
                shutting down"``.

        Returns:
            How many requests were cancelled (0 when all finished within the grace).

        Why an error response and not ``notifications/cancelled``: a cancellation "MUST
        only reference requests that were previously issued in the same direction"
        (2025-06-18/basic/utilities/cancellation#behavior-requirements.1), and the
        peer issued these; the peer is waiting for a response, and an error response
        "MUST include an error code and message" (2025-06-18/basic#responses.4).
        No shutdown message exists: the transport's end signals it
        (2025-06-18/basic/lifecycle#shutdown).
        """
        return await self._settle_handlers(grace, reason)

    async def _call_handler(self, ctx: RequestContext) -> Response | ErrorResponse:
        rid = ctx.request_id
        try:
            result = await self._handler.handle_request(ctx)
        except McpError as exc:
            return ErrorResponse(id=rid, code=exc.code, message=exc.message, data=exc.data)
        except InvalidCursor as exc:
            # Spec: 2025-06-18/server/utilities/pagination#error-handling.1
            # "Invalid cursors SHOULD result in an error with code -32602 (Invalid params)."
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

    async def _notification_worker(self) -> None:
        async with self._notes_out:
            async for note in self._notes_out:
                try:
                    await self._handler.handle_notification(self._as_session, note)
                except Exception:
                    log.exception("the handler of %s failed", note.method)

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
            # "When the request has not received a success or error response within the timeout
            # period, the sender SHOULD issue a cancellation notification for that request and stop
            # waiting for a response."
            for data in conn.handle_timeout(trio.current_time()):
                try:
                    await self._send_bytes(data)
                except SessionClosed:
                    return
            await self._drain_locked()

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
        """Wait (at most ``drain_timeout`` seconds) for accepted requests to be answered;
        then cancel the rest, each answered with an error while the channel still takes
        it (:meth:`finish_requests`), and close."""
        await self._settle_handlers(
            self._drain_timeout,
            f"cancelled: still running {self._drain_timeout:g} s after the end of input",
        )
        self._close(reason)


def _only_mcp_errors(exc: BaseException) -> McpError | None:
    """The first McpError of an exception group made only of McpErrors, else None."""
    if isinstance(exc, McpError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        found = [_only_mcp_errors(e) for e in exc.exceptions]
        if found and all(f is not None for f in found):
            return found[0]
    return None

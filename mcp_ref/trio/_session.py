"""The trio driver of the sans-IO core: one MCP session over one message channel.

Theory of operation
-------------------
:func:`open_session` makes a :class:`~._session_api.Session` (what its users call, and
the one write path) and runs its tasks in a nursery it owns, none outliving the
``async with`` block: the reader (await ``channel.receive()``, dispatch, repeat; a
channel whose input arrives in other tasks may :meth:`Session.push` it instead), the
timer (sleep until ``Connection.next_deadline()`` on ``trio.current_time()``, so
``MockClock`` drives it, then write what ``handle_timeout(now)`` returns), the
notification task (``handle_notification``, in order), and with ``keepalive=`` the
pinger (:meth:`_Tasks.keepalive`), with ``stop=`` a task that ends the input when it is
set.

**One dispatch route** (:meth:`_Tasks.dispatch`, one lock) feeds the core, then acts on
each event until ``NEED_DATA``: a request runs in a task and cancel scope of its own
(``initialize`` before the next event), which ``RequestCancelled`` cancels; answers,
timeouts and progress go to their callers (:mod:`._requests`); a notification joins a
bounded queue (full, it stops the reading); a ``RemoteProtocolError``'s ready reply is
sent.  At end of input our callers fail, the requests we accepted get ``drain_timeout``
to finish, then the session closes.  The answers the session makes of its own accord
are the core's (:mod:`mcp_ref._session_rules`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from functools import partial
from typing import Any

import attrs
import trio

from .. import _session_rules as rules
from .. import events as ev
from .._client import DEFAULT_TIMEOUT, SessionClosed
from .._connection import NEED_DATA, Connection
from .._errors import (
    INTERNAL_ERROR,
    LocalProtocolError,
    McpError,
    NoAnswerError,
    RemoteProtocolError,
)
from .._framing import DEFAULT_MAX_MESSAGE_BYTES
from .._inflight import RequestTimeout
from .._state import SERVER, Role, State
from ._channel import MessageChannel, open_owned_nursery
from ._session_api import Handler, RequestContext, Session

__all__ = ["open_session", "serve_channel"]

log = logging.getLogger("mcp_ref.trio")


async def shielded(work: Awaitable[None]) -> None:
    """Await ``work`` shielded from the dispatching task's cancellation (a cancelled
    ``push`` caller, say), so an event taken from the core is dispatched whole."""
    with trio.CancelScope(shield=True):
        await work


@attrs.define
class _Tasks:
    """The tasks of one session and its dispatch route (see the module docstring)."""

    session: Session
    handler: Handler
    nursery: trio.Nursery
    drain_timeout: float
    dispatch_lock: trio.Lock = attrs.field(factory=trio.Lock)
    stopped: str | None = None  # why a graceful stop ended the input

    async def read(self) -> None:
        """The one reader: the channel's bytes into the core, until the end of input."""
        session, channel = self.session, self.session._channel
        whole_messages = channel.framing == "messages"
        while not session.closed and self.stopped is None:
            try:
                data = await channel.receive()  # b"" at end of input
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            if session.closed:
                return
            session.last_input_at = trio.current_time()
            # Spec: 2026-07-28/basic/transports/index#messages.2
            # "A binding MUST deliver client-sent requests and notifications to the server, and
            # server-sent responses and notifications to the client."
            await self.dispatch(partial(self.feed, data, whole_messages and bool(data)))
            if not data:
                return

    def feed(self, data: bytes, whole_message: bool) -> None:
        """Give the core what the reader received (nothing after a graceful stop)."""
        conn = self.session.connection
        if self.stopped is None:
            (conn.receive_message if whole_message else conn.receive_data)(data)

    async def dispatch(self, take: Callable[[], None]) -> None:
        """The one dispatch route: in turn, call ``take`` (which feeds the core), then
        dispatch every event the core has ready; cancelled while waiting for the turn, it
        took nothing.  A free turn costs no schedule point (the reader just had one)."""
        session, lock = self.session, self.dispatch_lock
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            lock.acquire_nowait()
        except trio.WouldBlock:
            await lock.acquire()
        try:
            take()
            while not session.closed:
                try:
                    event = session.connection.next_event()
                except RemoteProtocolError as exc:
                    await shielded(self.refuse(exc))
                    continue
                if event is NEED_DATA:
                    return
                assert isinstance(event, ev.Event)
                await self.dispatch_one(event)
        finally:
            lock.release()

    async def dispatch_one(self, event: ev.Event) -> None:
        session = self.session
        if type(event) is ev.Request:
            await self.start_request(event)
        elif type(event) is ev.Notification:
            with suppress(trio.ClosedResourceError, trio.BrokenResourceError):
                await shielded(session._notes_in.send(event))  # bounded: waits while full
        elif type(event) is ev.RequestCancelled:
            # Spec: 2025-06-18/basic/utilities/cancellation#implementation-notes.1
            # "Both parties SHOULD log cancellation reasons for debugging"
            log.debug("the peer cancelled request %r: %s", event.id, event.reason)
            session._running.cancel(event.id)
            if session.connection.has_data_to_send:  # it settled a batch: its replies
                await shielded(session._write(session.connection.data_to_send, None, quiet=True))
        elif isinstance(event, (ev.Response, ev.ErrorResponse, ev.RequestTimedOut, ev.Progress)):
            session._waiters.deliver(event)
        elif type(event) is ev.ConnectionClosed:
            eof = self.stopped or getattr(session._channel, "eof_reason", None)
            self.end_of_input(rules.end_reason("the peer closed the connection", eof))
        else:  # ProgressDropped, UnexpectedResponse
            log.debug("ignored input from the peer: %r", event)

    async def refuse(self, exc: RemoteProtocolError) -> None:
        """Bad input: log it, send the core's ready reply, go on (unless fatal)."""
        session = self.session
        log.warning("%s session: bad input from the peer: %s", session.role.value, exc.message)
        if exc.event_hint is not None:
            await session._send(exc.event_hint, quiet=True)
        if session.connection.state is State.CLOSED:
            session._close(f"protocol error: {exc.message}")

    async def start_request(self, request: ev.Request) -> None:
        session, running = self.session, self.session._running
        accepting = not (running.full or session.closed)
        answer = rules.reply_at_once(request, session.role, len(running), accepting)
        if answer is not None:
            await shielded(session._send(answer, quiet=True))
        else:
            ctx = RequestContext(
                session, request.id, request.method, request.params, request.context
            )
            running.add(request.id, ctx.cancel_scope)
            if request.method == "initialize":
                await shielded(self.run_request(ctx))  # answered before the next event
            else:
                self.nursery.start_soon(self.run_request, ctx)

    async def run_request(self, ctx: RequestContext) -> None:
        """Handle one request of the peer in its cancel scope, and answer it."""
        running, rid = self.session._running, ctx.request_id
        try:
            with ctx.cancel_scope:
                reply: ev.Response | ev.ErrorResponse
                try:
                    reply = ev.Response(id=rid, result=await self.handler.handle_request(ctx))
                except Exception as exc:
                    reply = rules.error_reply(exc, rid, ctx.method)
                await self.reply(ctx, reply)
                return
            # Cancelled.  By the peer, or the session's end: no answer.  By a graceful
            # stop: the peer still waits, and only a response ends its wait.
            reason = running.stopped_by_us(rid)
            if reason is not None:
                # Spec: 2025-06-18/basic#responses.4
                # "errors MUST include an error code and message at minimum"
                await self.reply(ctx, ev.ErrorResponse(id=rid, code=INTERNAL_ERROR, message=reason))
        finally:
            running.remove(rid)

    async def reply(self, ctx: RequestContext, reply: ev.Response | ev.ErrorResponse) -> None:
        """Send the answer to ``ctx``'s request (or -32603 when the core refuses it)."""
        produce = partial(rules.answer_bytes, self.session.connection, reply, ctx.method)
        await self.session._write(produce, ctx.request_id, quiet=True)

    async def notify(self) -> None:
        """The notification task: the handler's ``handle_notification``, in order."""
        async with self.session._notes_out as queue:
            async for note in queue:
                try:
                    await self.handler.handle_notification(self.session, note)
                except Exception:
                    log.exception("the handler of %s failed", note.method)

    async def expire(self) -> None:
        """The timer task (``send_request`` brings ``session._timer``'s deadline nearer)."""
        session, conn = self.session, self.session.connection
        while not session.closed:
            deadline = conn.next_deadline()
            with trio.move_on_at(math.inf if deadline is None else deadline) as timer:
                session._timer = timer
                await trio.sleep_forever()
            if session.closed:  # the close cancelled it
                return
            # Spec: 2025-06-18/basic/lifecycle#timeouts.2
            # "the sender SHOULD issue a cancellation notification for that request"
            for data in conn.handle_timeout(trio.current_time()):
                await session._write(lambda: data, None, quiet=True)  # noqa: B023 (called at once)
            await self.dispatch(lambda: None)

    def end_of_input(self, reason: str) -> None:
        """The peer will send nothing more (module docstring; the core is CLOSING).
        Source: 2025-06-18/basic/lifecycle#shutdown (the transport's end ends the session).
        """
        session = self.session
        if session.closed or session._input_ended is not None:
            return
        session._input_ended = reason
        session._waiters.fail_all(reason)
        session._notes_in.close()
        if not session.requests_in_progress:
            session._close(reason)
        else:
            self.nursery.start_soon(self.finish_then_close, reason)

    async def keepalive(self, keepalive: rules.Keepalive) -> None:
        """The pinger: sleep until a ping is due (the core's
        :class:`~mcp_ref._session_rules.Keepalive` says when, and when the misses end
        the session) and ping only if the peer stayed silent meanwhile (a busy session
        never pings).  Any answer counts, even an error; a ping the lifecycle refuses
        (in the handshake, while closing) waits for the next interval.  Returns when
        the session is closed.  Source: 2025-06-18/basic/utilities/ping#error-handling.
        """
        session, failures = self.session, 0
        pinged_at = session.last_input_at
        while not session.closed:
            heard = session.last_input_at
            await trio.sleep_until(keepalive.next_ping_at(heard, pinged_at))
            if session.closed:
                return
            if session.last_input_at != heard:  # the peer talked meanwhile: wait again
                continue
            pinged_at = trio.current_time()
            try:
                # Spec: 2025-06-18/basic/utilities/ping#implementation-considerations.1
                # "Implementations SHOULD periodically issue pings to detect connection health"
                timeout = RequestTimeout(seconds=keepalive.timeout)
                await session.send_request("ping", timeout=timeout)
            except NoAnswerError:
                failures += 1
                note, lost = keepalive.missed(failures)
                log.warning("%s session: %s", session.role.value, note)
                if lost is not None:
                    session.abort(lost)
                    return
            except McpError:
                failures = 0  # an error response (even -32001) is still an answer
            except LocalProtocolError as exc:  # the lifecycle refuses a ping now: try later
                log.debug("keepalive ping not sent: %s", exc)
            except SessionClosed:
                return
            else:
                failures = 0

    async def stop_on(self, stop: trio.Event) -> None:
        """Once ``stop`` is set, end the input as the peer's end would (the reader's
        input is dropped).  Source: 2025-06-18/basic/lifecycle#stdio.2."""
        await stop.wait()
        self.stopped = "the server is shutting down"
        await self.dispatch(lambda: self.session.connection.receive_data(b""))  # as at EOF

    async def finish_then_close(self, reason: str) -> None:
        why = f"cancelled: still running {self.drain_timeout:g} s after the end of input"
        await self.session._running.settle(self.drain_timeout, why)
        self.session._close(reason)


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
    keepalive: rules.Keepalive | None = None,
    stop: trio.Event | None = None,
) -> AsyncIterator[Session]:
    """Run an MCP session over ``channel`` for the duration of an ``async with`` block
    (module docstring).

    Args:
        channel: the transport (:class:`~mcp_ref.trio.MessageChannel`).
        role: ``CLIENT`` or ``SERVER`` (our side).
        handler: answers the peer's requests and notifications (:class:`Handler`).
        default_timeout: the timeout of requests we send when the caller gives none
            (default 60 s, restarted by progress, at most 600 s); None for no timeout.
        max_message_bytes: the largest message accepted, in bytes (default 8 MiB).
        max_concurrent_requests: the most peer requests handled at once (default 256);
            past it a request is answered at once with -32603 "server busy".
        send_timeout: seconds one write may take before the session gives up on the
            peer (default 30); None for no limit.
        max_queued_notifications: notifications waiting for the notification handler
            before the reader stops reading (default 64).
        drain_timeout: at end of input, seconds to let the peer's accepted requests
            finish and be answered before they are cancelled (default 30).
        keepalive: ping the peer after this much silence and end the session when it
            stops answering (:class:`~mcp_ref.trio.Keepalive`); default None, no pings.
        stop: set it to stop gracefully (a signal, say): the session reads nothing more
            and ends as at the end of input (``drain_timeout`` for the requests in
            progress, then -32603 for each one still running).

    Yields:
        The :class:`Session`, not initialized: a client sends ``initialize`` itself
        (:func:`mcp_ref.client.open_client`), a server's handler answers it.

    Raises:
        ValueError: an unknown channel framing, or a limit below 1.

    On exit, running handlers are cancelled, pending ``send_request`` callers get
    :class:`SessionClosed`, the channel is closed, and no task is left; an exception of
    the block propagates unchanged (:func:`open_owned_nursery`).

    Source: 2025-06-18/basic/lifecycle (the session), 2025-06-18/basic/lifecycle#timeouts.
    """
    rules.check_session_options(channel.framing, max_concurrent_requests, max_queued_notifications)
    conn = Connection(
        role,
        newline_framing=channel.framing == "lines",
        default_timeout=default_timeout,
        max_message_bytes=max_message_bytes,
    )
    session = Session(
        channel,
        conn,
        max_concurrent_requests=max_concurrent_requests,
        send_timeout=send_timeout,
        max_queued_notifications=max_queued_notifications,
    )
    try:
        async with open_owned_nursery() as nursery:
            try:
                tasks = _Tasks(session, handler, nursery, drain_timeout)
                session._dispatch = tasks.dispatch
                attach = getattr(channel, "attach_session", None)
                if attach is not None:
                    attach(session)
                nursery.start_soon(tasks.read)
                nursery.start_soon(tasks.expire)
                nursery.start_soon(tasks.notify)
                if keepalive is not None:
                    nursery.start_soon(tasks.keepalive, keepalive)
                if stop is not None:
                    nursery.start_soon(tasks.stop_on, stop)
                opened = getattr(handler, "session_opened", None)
                if opened is not None:
                    opened(session)
                yield session
            finally:  # before the nursery's cancel: the tasks see a closed session
                session._close("the session was closed by its owner")
    finally:
        # A write under way finishes within the close's grace; then the channel closes.
        with trio.CancelScope(shield=True), trio.move_on_at(session._write_until):
            async with session._send_lock:
                pass
        with trio.CancelScope(shield=True), trio.move_on_after(rules.CLOSE_GRACE):
            try:
                await channel.aclose()
            except Exception as exc:
                log.debug("closing the channel failed: %r", exc)
        closed_hook = getattr(handler, "session_closed", None)
        if closed_hook is not None:
            closed_hook(session)


async def serve_channel(
    handler: Handler, channel: MessageChannel, stop: trio.Event | None = None, **session_kw: Any
) -> None:
    """Serve one session of ``handler`` on ``channel`` until it ends, or after a
    graceful ``stop`` (:func:`open_session`'s options).

    A handler with a ``serve(channel, **session_kw)`` coroutine method (such as
    ``mcp_ref.server.Server``, which runs tasks of its own beside the session) serves
    itself; any other handler gets a plain :func:`open_session`.  Every transport's
    server side calls this, so all of them treat handlers alike.
    """
    serve = getattr(handler, "serve", None)
    if serve is not None:
        await serve(channel, stop=stop, **session_kw)
        return
    async with open_session(channel, SERVER, handler, stop=stop, **session_kw) as session:
        await session.wait_closed()

"""The :class:`Session` object: what its users call, what it holds, and its one write path
(:mod:`._session` runs its tasks; every end goes through :meth:`Session._close`); the
:class:`Handler` an application implements, and the :class:`RequestContext` it receives.

Theory of operation
-------------------
**The one write path** (:meth:`Session._write`) is one locked send: a sender waits for
the write under way, then asks the core for the bytes (``Connection.send`` checks the
message and moves the state) and writes them, so the wire keeps the core's order and a
sender cancelled while it waits has sent nothing.  The channel's optional
``send_nowait`` is tried first, without the lock (nothing yields in between); anything
else goes through ``channel.send`` under the lock, shielded (half a message would break
the stream) and bounded by ``send_timeout``; a failed write calls
``Connection.send_failed()`` and ends the session.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Final, Literal, NoReturn, Protocol, runtime_checkable

import attrs
import trio

from .. import types as t

# One class, one default and one sentinel for every client and driver.
from .._client import DEFAULT, SessionClosed, _Default, with_progress_token
from .._connection import Connection
from .._errors import LocalProtocolError
from .._inflight import RequestTimeout
from .._session_rules import CLOSE_GRACE, Callers, cancel_bytes, end_reason, progress_token_of
from .._state import Role
from ..events import Event, Notification, Progress, Request, RequestId
from ._channel import MessageChannel
from ._requests import Running, Waiter

__all__ = ["SESSION_DEFAULT", "Handler", "RequestContext", "Session"]

log = logging.getLogger("mcp_ref.trio")

SESSION_DEFAULT: Final = DEFAULT
"""Sentinel for ``timeout=``: use the connection's ``default_timeout`` (the one
:func:`~mcp_ref.trio.open_session` was given)."""

TimeoutArg = RequestTimeout | None | Literal[_Default.TOKEN]
"""What ``timeout=`` takes: a :class:`RequestTimeout`, None (no timeout) or
:data:`SESSION_DEFAULT`."""


class Session:
    """One running MCP session; made by :func:`~mcp_ref.trio.open_session`, never directly.

    Attributes:
        connection: the sans-IO core (:class:`~mcp_ref.Connection`).
        closed: True once the session has ended; ``close_reason`` says why.
        last_input_at: when input last came from the peer (``trio.current_time()``
            seconds); keepalive pings wait on it.
    """

    def __init__(
        self,
        channel: MessageChannel,
        connection: Connection,
        *,
        max_concurrent_requests: int,
        send_timeout: float | None,
        max_queued_notifications: int,
    ) -> None:
        self.connection = connection
        self.role: Role = connection.our_role
        """``CLIENT`` or ``SERVER``."""
        self.app_state: dict[str, Any] = {}
        """The application's per-session state; the session never reads it."""
        self.closed = False
        self.close_reason: str | None = None
        self.last_input_at = trio.current_time()
        self._channel = channel
        self._send_timeout = math.inf if send_timeout is None else send_timeout
        self._send_nowait = getattr(channel, "send_nowait", None)  # optional
        self._send_lock = trio.Lock()
        self._write_scope: trio.CancelScope | None = None
        self._write_until = math.inf  # no write goes past this (set by _close)
        self._waiters: Callers[Waiter] = Callers()  # our requests' callers
        self._running = Running(max_concurrent_requests)  # the peer's requests
        self._notes_in, self._notes_out = trio.open_memory_channel[Notification](
            max_queued_notifications
        )
        self._timer = trio.CancelScope()  # the timer task sleeps in it, until its deadline
        self._input_ended: str | None = None  # why the peer will send nothing more
        self._closed_event = trio.Event()
        # The dispatch route, set by open_session (_session._Tasks.dispatch).
        self._dispatch: Callable[[Callable[[], None]], Awaitable[None]] | None = None

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
        return len(self._running)

    async def wait_closed(self) -> None:
        """Return once the session has ended (e.g. the peer closed its side)."""
        await self._closed_event.wait()

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
            on_progress: called (sync or async) with each :class:`~mcp_ref.Progress`, in
                the caller's task (:func:`mcp_ref._client.with_progress_token` puts the
                token in ``params``); at most 64 wait for a slow callback (older ones
                are dropped); what it raises cancels the request and propagates.
            related_request_id: the incoming request this one is made for (HTTP routing).

        Returns:
            The typed result (an instance of the method's result class).

        Raises:
            McpError: the peer answered with an error.
            NoAnswerError: the timeout expired (``notifications/cancelled`` was sent).
            SessionClosed: the session ended before the answer came.
            LocalProtocolError: the request breaks the protocol; nothing was sent.

        If the calling task is cancelled after the request went out, the session sends
        ``notifications/cancelled`` for it and re-raises the cancellation.

        Source: 2025-06-18/basic/lifecycle#timeouts.2,
        2025-06-18/basic/utilities/cancellation#cancellation-flow.
        """
        await trio.lowlevel.checkpoint_if_cancelled()  # a cancelled caller sends nothing
        self._check_open()
        if self._input_ended is not None:
            raise SessionClosed(self._input_ended)  # the peer can no longer answer
        conn = self.connection
        rid = conn.next_request_id()
        if on_progress is not None:
            params = with_progress_token(method, params, rid)
        waiter = self._waiters.expect(rid, Waiter(on_progress))
        timeout_kw: dict[str, Any] = {} if timeout is SESSION_DEFAULT else {"timeout": timeout}
        sent = False

        def produce() -> bytes:
            nonlocal sent
            request = Request(id=rid, method=method, params=params)
            data = conn.send(request, now=trio.current_time(), **timeout_kw)
            sent = True
            deadline = conn.next_deadline()
            if deadline is not None:  # this request's may be the nearest
                self._timer.deadline = min(self._timer.deadline, deadline)
            return data

        try:
            await self._write(produce, related_request_id)
            return await waiter.outcome()
        except BaseException:
            if sent and waiter.answer is None:
                cancel = partial(cancel_bytes, conn, rid, "cancelled by the caller")
                with trio.CancelScope(shield=True), trio.move_on_after(self._send_timeout):
                    await self._write(cancel, related_request_id, quiet=True)
            raise
        finally:
            self._waiters.forget(rid)

    async def send_notification(
        self, method: str, params: Any = None, *, related_request_id: RequestId | None = None
    ) -> None:
        """Send a notification (``method``, e.g. ``"notifications/tools/list_changed"``;
        ``params`` and ``related_request_id``: as :meth:`send_request`'s).

        Raises:
            SessionClosed: the session ended.
            LocalProtocolError: it breaks the protocol (wrong state, capability not
                negotiated, progress not increasing); nothing was sent.
        """
        await trio.lowlevel.checkpoint_if_cancelled()  # a cancelled caller sends nothing
        await self._send(Notification(method=method, params=params), related_request_id)

    async def _send(
        self, event: Event, related_request_id: RequestId | None = None, *, quiet: bool = False
    ) -> None:
        await self._write(lambda: self.connection.send(event), related_request_id, quiet=quiet)

    async def _write(
        self,
        produce: Callable[[], bytes],
        related_request_id: RequestId | None,
        *,
        quiet: bool = False,
    ) -> None:
        """The one write path (module docstring): write what ``produce`` (the core's
        ``send``) returns.  ``quiet``: a refusal is logged, not raised (what the session
        sends of its own accord, while it may be ending).

        Raises:
            LocalProtocolError (or ValueError, TypeError): from ``produce``; nothing sent.
            SessionClosed: the session is closed, or the write failed or timed out.
        """
        lock = self._send_lock
        holding = lock.locked()  # a write is under way: wait for the turn
        if holding:
            await lock.acquire()  # cancelled while waiting: nothing made, nothing sent
        try:
            self._check_open()
            data = produce()
            if data and not self._sent_at_once(data, related_request_id):
                if not holding:  # free: nothing has yielded since it was checked
                    lock.acquire_nowait()
                    holding = True
                await self._send_waiting(data, related_request_id)
        except (SessionClosed, LocalProtocolError, ValueError, TypeError) as exc:
            if not quiet:
                raise
            if not isinstance(exc, SessionClosed):
                log.warning("cannot send a message: %s", exc)
        finally:
            if holding:
                lock.release()

    def _sent_at_once(self, data: bytes, related_request_id: RequestId | None) -> bool:
        """Whether the channel's optional ``send_nowait`` took ``data`` whole."""
        if self._send_nowait is None:
            return False
        try:
            self._send_nowait(data, related_request_id=related_request_id)
            return True
        except trio.WouldBlock:
            return False
        except Exception as exc:
            self._write_failed(f"sending to the peer failed: {exc!r}")

    async def _send_waiting(self, data: bytes, related_request_id: RequestId | None) -> None:
        """``channel.send``, shielded, within ``send_timeout`` and the close's grace."""
        deadline = min(trio.current_time() + self._send_timeout, self._write_until)
        with trio.CancelScope(shield=True, deadline=deadline) as scope:
            self._write_scope = scope  # the close may bring its deadline nearer
            try:
                await self._channel.send(data, related_request_id=related_request_id)
            except Exception as exc:
                self._write_failed(f"sending to the peer failed: {exc!r}")
            finally:
                self._write_scope = None
        if scope.cancelled_caught:
            self._write_failed(
                self.close_reason or f"sending took longer than {self._send_timeout} s"
            )

    def _write_failed(self, failure: str) -> NoReturn:
        """A write failed or timed out: end the session, raise :class:`SessionClosed`."""
        self.connection.send_failed()  # the stream may hold half a message
        self._close(end_reason(failure, getattr(self._channel, "eof_reason", None)))
        raise SessionClosed(self.close_reason or failure)

    async def push(self, data: bytes) -> None:
        """Give the session one whole message from the caller's task instead of through
        ``channel.receive()`` (a ``"messages"`` channel whose input arrives in other
        tasks); its events are dispatched, as the reader's are, before this returns (a
        request starts its task; nothing waits for its answer).  Waits its turn, and
        while the notification queue is full; cancelled meanwhile, it gives nothing.  A
        message the channel holds for ``receive()`` must reach the session first.

        Raises:
            SessionClosed: the session is closed, or its input ended (message not taken).

        Source: 2025-06-18/basic/transports#sending-messages-to-the-server.1.
        """

        def take() -> None:
            self._check_open()
            if self._input_ended is not None:
                raise SessionClosed(self._input_ended)
            self.last_input_at = trio.current_time()
            self.connection.receive_message(data)

        self._check_open()
        assert self._dispatch is not None  # set by open_session before anyone sees us
        await self._dispatch(take)

    async def finish_requests(self, grace: float, *, reason: str) -> int:
        """Stop gracefully: let the peer's requests in progress run for ``grace`` seconds
        at most, then cancel each one still running and answer it with -32603 ``reason``
        (the session stays open; :meth:`Running.settle <._requests.Running.settle>`).
        Returns how many were cancelled (0 when all finished within the grace).

        Source: 2025-06-18/basic#responses.4 (an error answer: ``notifications/cancelled``
        only goes the request's own direction, cancellation#behavior-requirements.1).
        """
        return await self._running.settle(grace, reason)

    def abort(self, reason: str) -> None:
        """End the session now, as if the connection broke: ``send_request`` callers get
        :class:`SessionClosed` (``reason``), handlers and a write under way are cancelled,
        unwritten messages dropped, :meth:`wait_closed` returns.  Idempotent; the owner
        still leaves its ``async with`` block to release the channel."""
        self._close(reason, grace=0.0)

    def _check_open(self) -> None:
        if self.closed:
            raise SessionClosed(self.close_reason or "the session is closed")

    def _close(self, reason: str, *, grace: float = CLOSE_GRACE) -> None:
        """End the session (idempotent): refuse new messages, fail our callers, cancel
        the handlers and the timer, give a write under way ``grace`` seconds more."""
        self._write_until = min(self._write_until, trio.current_time() + grace)
        if self._write_scope is not None:
            self._write_scope.deadline = min(self._write_scope.deadline, self._write_until)
        if self.closed:
            return
        self.closed = True
        self.close_reason = reason
        self.connection.close()
        self._waiters.fail_all(reason)
        self._running.cancel_all()
        self._notes_in.close()
        self._timer.cancel()
        self._closed_event.set()


@runtime_checkable
class Handler(Protocol):
    """What a session calls for the peer's requests (each in a task of its own, inside
    ``ctx.cancel_scope``) and notifications, on the event loop (blocking work stalls the
    whole session).  Optional sync methods: ``session_opened(session)`` (once its tasks
    are started), ``session_closed(session)`` (at the very end)."""

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


@attrs.define(eq=False)
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

    session: Session
    request_id: RequestId
    method: str
    params: Any
    meta_context: Any = None
    progress_token: str | int | None = attrs.field(init=False)
    cancel_scope: trio.CancelScope = attrs.field(init=False, factory=trio.CancelScope)

    def __attrs_post_init__(self) -> None:
        self.progress_token = progress_token_of(self.params)

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

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

The :class:`Session` class is written in three parts: this module has its public API
(what we send and wait for, ``push``, ``abort``) and :func:`open_session`;
:mod:`._session_input` reads and dispatches what the peer sends (reader, handlers,
timer, end of input); :mod:`._session_base` holds the state they share and the write
path.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Final

import attrs
import trio

from .. import types as t
from .._connection import Connection
from .._errors import LocalProtocolError
from .._framing import DEFAULT_MAX_MESSAGE_BYTES
from .._inflight import RequestTimeout
from .._methods import METHODS
from .._state import SERVER, Role
from ..events import Notification, Progress, Request, RequestId
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
from ._session_base import _key, _Waiter
from ._session_input import SessionInput

__all__ = [
    "DEFAULT_GRACE_SECONDS",
    "DEFAULT_TIMEOUT",
    "SESSION_DEFAULT",
    "Handler",
    "RequestContext",
    "Session",
    "SessionClosed",
    "open_session",
]

log = logging.getLogger("mcp_ref.trio")

_CLOSE_GRACE = 5.0

DEFAULT_GRACE_SECONDS: Final = 5.0
"""Seconds the requests in progress get to finish when a server stops gracefully (a
signal, or the end of its input under ``serve_stdio``), before each one still running
is cancelled and answered with an error (:meth:`Session.finish_requests`)."""


class Session(SessionInput):
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
        # A caller already cancelled sends nothing (a checkpoint only when cancelled).
        await trio.lowlevel.checkpoint_if_cancelled()
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
                    # "Cancellation notifications MUST only reference requests that:"
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
        await trio.lowlevel.checkpoint_if_cancelled()  # a cancelled caller sends nothing
        await self._send_event(
            Notification(method=method, params=params), related_request_id=related_request_id
        )

    def _resolve(self, timeout: TimeoutArg) -> RequestTimeout | None:
        return self.default_timeout if timeout is SESSION_DEFAULT else timeout

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
            # "The `initialize` request MUST NOT be cancelled by clients"
            log.debug("could not cancel request %r: %s", rid, exc)

    def abort(self, reason: str) -> None:
        """End the session now, as if the connection broke: pending ``send_request``
        callers get :class:`SessionClosed` with ``reason``, running handlers are
        cancelled, :meth:`wait_closed` returns.  Idempotent; the owner of the session
        still leaves its ``async with`` block to release the channel."""
        self._close(reason)


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
    # "Progress tokens can be chosen by the sender using any means, but MUST be unique across all
    # active requests."
    meta.setdefault("progressToken", token)
    return attrs.evolve(params, meta=meta)


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

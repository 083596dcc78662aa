"""The client side shared by the asyncio drivers: pending requests, the timer, events.

How to drive the core as a client, step by step
-----------------------------------------------
Everything a client decides is the sans-IO client core's
(:class:`mcp_ref._client.ClientWire`, around :class:`mcp_ref.Connection`); this module
only waits, with plain asyncio.  A transport supplies "write these bytes"
(:meth:`ClientSession._transmit`) and feeds what it reads back with ``receive_data``
or ``receive_message`` followed by :meth:`ClientSession._process_events`.

1. Make the core: ``ClientWire(Connection(CLIENT, default_timeout=DEFAULT_TIMEOUT),
   **options)`` (``newline_framing=False`` when the transport delimits messages, as
   HTTP does).
2. Send a request: ``rid, params, data = wire.send_request(..., now=loop.time())``
   checks it (lifecycle, capabilities, params) and raises LocalProtocolError, having
   written nothing, if it breaks the protocol.  Park a future under ``rid``, write
   ``data``, await the future.
3. Whenever bytes arrive, feed them to the connection and write what
   ``wire.drain(dispatch)`` returns; it hands each event to ``dispatch``.  An ``Outcome``
   (Response, ErrorResponse or RequestTimedOut) resolves the future of its id (``result_of`` makes
   it the result, an McpError, or :class:`~mcp_ref.NoAnswerError`: we gave up waiting).
4. Time is an argument: one task (:meth:`ClientSession._clock`) waits until
   ``conn.next_deadline()`` (on the ``loop.time()`` clock, the one passed as ``now``),
   then calls ``conn.handle_timeout(loop.time())`` and writes what it returns: the
   ``notifications/cancelled`` of each expired request.  Sending a request wakes the
   task, as its deadline may be earlier than the one being waited for.
5. Cancellation: when the task awaiting a future is cancelled, write
   ``wire.cancel(rid)`` (``b""`` when the answer already arrived).
6. Progress: a request made with ``on_progress`` carries a progress token (the
   caller's own, or its id); the connection matches the server's
   ``notifications/progress`` to it, and the wire calls that request's callback (as it
   calls ``on_notification`` for each notification).
7. Server requests: the capabilities declared follow from the handlers given
   (``sampling_handler``, ``elicitation_handler``, ``roots``), so the core refuses
   the others itself.  Each server request (``ping`` too) is answered in a task of
   its own: ``wire.handle``, awaiting what a handler returns, ``wire.finish``, then
   write ``wire.reply(...)``; RequestCancelled (the server's
   ``notifications/cancelled``) cancels that task.
8. End of input gives ConnectionClosed: fail every pending future.  :meth:`abort`
   does the same at once and drops the transport with no goodbye.

No task here outlives the ``async with`` of the ``open_*`` function that made it.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from .. import types as t
from .._client import (
    DEFAULT,
    DEFAULT_CLIENT_INFO,
    ClientWire,
    ElicitationHandler,
    Outcome,
    RootsArg,
    SamplingHandler,
    SessionClosed,
    Timeout,
    result_of,
    set_log_level,
    typed_params,
)
from .._client_methods import TypedMethods
from .._connection import Connection
from .._errors import McpError
from ..events import (
    ConnectionClosed,
    Event,
    Notification,
    Progress,
    Request,
    RequestCancelled,
    RequestId,
)

__all__ = [
    "DEFAULT_CLIENT_INFO",
    "ClientSession",
    "ElicitationHandler",
    "ProgressCallback",
    "SamplingHandler",
    "SessionClosed",
    "typed_params",
]

log = logging.getLogger("mcp_ref.asyncio")

ProgressCallback = Callable[[Progress], object]
"""Called (synchronously, from the reading task) with each Progress of one request."""


class ClientSession(TypedMethods):
    """An MCP client over any transport, on asyncio (the shared half of the drivers).

    Its typed methods (``list_tools``, ``call_tool``, ``read_resource``, ``ping``, ...)
    are :class:`mcp_ref._client_methods.TypedMethods`', the trio client's too.

    Made by :func:`~mcp_ref.asyncio.open_stdio_client` and
    :func:`~mcp_ref.asyncio.open_http_client`, which initialize it before handing it
    out.  Requests may be made from many tasks at once.

    Args:
        connection: the core, ``Connection(CLIENT, ...)``.
        on_notification: called (synchronously, from the reading task) with each
            Notification the server sends; None ignores them.  An exception it raises
            ends the session.
        **options: the client core's (:class:`mcp_ref._client.ClientCore`):
            ``client_info``, ``era`` (``"legacy"``, ``"modern"`` or ``"auto"``:
            :data:`mcp_ref._client.EraArg`), ``protocol_version``, ``sampling_handler``,
            ``elicitation_handler``, ``roots``, the rate limits.  Each handler declares
            its capability.

    A handler runs in a task of its own; it may make requests of its own.  It is
    cancelled when the server cancels its request (or the session ends).  McpError
    becomes that error response; any other exception -32603.

    Attributes:
        wire: the client core with its connection.
        connection: the core's Connection.

    Source: 2025-06-18/basic/lifecycle (the client's side of the lifecycle);
    2025-06-18/client/sampling; 2025-06-18/client/elicitation; 2025-06-18/client/roots.
    """

    def __init__(
        self,
        connection: Connection,
        *,
        on_notification: Callable[[Notification], object] | None = None,
        **options: Any,
    ) -> None:
        self.wire = ClientWire(connection, on_notification=on_notification, **options)
        self.connection = connection
        self._pending: dict[RequestId, asyncio.Future[Event]] = {}
        self._serving: dict[RequestId, asyncio.Task[None]] = {}
        """Server requests being handled (bounded by the core's incoming table)."""
        self._wake = asyncio.Event()
        self._subscribed: list[str] = []
        self._listening: asyncio.Task[None] | None = None
        """Modern era: the task of the one ``subscriptions/listen`` (``subscribe``)."""
        self._acknowledged = asyncio.Event()

    @property
    def initialize_result(self) -> t.InitializeResult | None:
        """The server's answer to ``initialize`` (None before it)."""
        return self.wire.initialize_result

    # -- what a transport provides -------------------------------------------------

    async def _transmit(self, data: bytes) -> None:
        """Write one message (``b""``: nothing), waiting for the transport."""
        raise NotImplementedError

    def _transmit_soon(self, data: bytes) -> None:
        """Write one message without waiting (replies and cancellations)."""
        raise NotImplementedError

    async def _exchange(self, data: bytes, answer: asyncio.Future[Event]) -> Event:
        """Send a request's bytes and return the answer event."""
        await self._transmit(data)
        return await answer

    def _never_accepted(self, exc: BaseException) -> bool:
        """Whether ``exc``, raised by ``_exchange``, means the server never took the
        request (so there is nothing to cancel on the wire)."""
        return False

    # -- requests ------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: Timeout = DEFAULT,
        on_progress: ProgressCallback | None = None,
    ) -> Any:
        """Send a request and return its typed result: the arguments, errors and
        ``input_required`` rounds of :meth:`mcp_ref.client.Client.request`, on asyncio.

        ``timeout`` defaults to the session's.  ``on_progress`` is called synchronously
        (from the reading task); an exception it raises ends the session.  A caller
        cancelled (asyncio.CancelledError) has ``notifications/cancelled`` sent.

        Source: 2025-06-18/basic/lifecycle#timeouts;
        2025-06-18/basic/utilities/cancellation#cancellation-flow;
        2025-06-18/basic/utilities/progress#progress-flow;
        2026-07-28/basic/patterns/mrtr#client-requirements-basic-workflow.
        """
        send = partial(self._request, method, timeout=timeout, on_progress=on_progress)
        return await self._rounds(self.wire, method, params, send, asyncio.get_running_loop().time)

    async def _request(
        self, method: str, params: Any, *, timeout: Timeout, on_progress: ProgressCallback | None
    ) -> Any:
        """One request on the wire: its result (an InputRequiredResult too), unchecked."""
        loop = asyncio.get_running_loop()
        rid, params, data = self.wire.send_request(
            method, params, now=loop.time(), timeout=timeout, on_progress=on_progress
        )
        answer: asyncio.Future[Event] = loop.create_future()
        self._pending[rid] = answer
        # Spec: 2025-06-18/basic/lifecycle#timeouts.1 (the clock re-reads the deadlines)
        # "Implementations SHOULD establish timeouts for all sent requests, to prevent hung
        # connections and resource exhaustion."
        self._wake.set()
        try:
            reply = await self._exchange(data, answer)
        except BaseException as exc:
            if not answer.done() or answer.cancelled():  # (awaiting it cancels it)
                answer.cancel()
                cancel = self.wire.cancel(rid, method)  # the core forgets it either way
                if not self._never_accepted(exc):
                    # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.17
                    # "To cancel, the client SHOULD explicitly send an MCP `CancelledNotification`."
                    self._transmit_soon(cancel)
            else:
                answer.exception()  # mark it retrieved: we leave with another error
            raise
        finally:
            del self._pending[rid]
        return result_of(reply)

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification (typed params, a wire-form dict, or None).

        Raises:
            LocalProtocolError: it breaks the protocol (nothing was sent).
            SessionClosed: the session has ended.
        """
        await self._transmit(self.wire.send_notification(method, params))

    async def open(self) -> None:
        """Open the session in the era asked for (``era=``; the ``open_*`` functions
        do): ``initialize`` then ``notifications/initialized`` (legacy), nothing
        (modern), or the ``server/discover`` probe and its fallback (auto); see
        :meth:`mcp_ref._client.ClientCore.opening`.  Raises as :meth:`request`.
        """
        await self._run_opening(self.wire.opening(self.connection), self.notify)

    def _log_level(self, level: t.LoggingLevel) -> None:
        set_log_level(self.connection, level)

    async def _listen(self, uris: list[str]) -> None:
        """Modern era: cancel the session's ``subscriptions/listen`` (which sends
        ``notifications/cancelled``) and, for a non-empty ``uris``, open a new one and
        wait for its acknowledgment (or its end).

        Source: 2026-07-28/basic/patterns/subscriptions#cancellation.
        """
        if self._listening is not None:
            self._listening.cancel()
            await asyncio.gather(self._listening, return_exceptions=True)
            self._listening = None
        if not uris:
            return
        self._acknowledged = acknowledged = asyncio.Event()
        params = self.wire.listen_params(uris)

        async def listen() -> None:
            try:
                await self.request("subscriptions/listen", params, timeout=None)
            except (McpError, SessionClosed) as exc:
                log.warning("subscriptions/listen failed: %s", exc)
            finally:
                acknowledged.set()

        self._listening = asyncio.create_task(listen())
        await acknowledged.wait()

    @property
    def era(self) -> str | None:
        """The era the session speaks (``"legacy"`` or ``"modern"``; None before it
        is open)."""
        return self.wire.spoken

    async def discover(self) -> t.DiscoverResult:
        """``server/discover`` (modern era): the server's versions, capabilities and
        identity.  Source: 2026-07-28/server/discover."""
        result: t.DiscoverResult = await self.request("server/discover")
        self.wire.discovered(result)
        return result

    async def initialize(self) -> t.InitializeResult:
        """Run the initialization phase: ``initialize``, then ``notifications/initialized``
        (the ``open_*`` functions do).  Raises as :meth:`request`; SessionClosed also
        when the server answers a protocol version mcp-ref does not speak.

        Source: 2025-06-18/basic/lifecycle#initialization.
        """
        result: t.InitializeResult = await self.request("initialize", self.wire.initialize_params())
        note = self.wire.initialized(result)
        await self.notify(note.method, note.params)
        return result

    async def set_roots(self, roots: RootsArg) -> None:
        """Replace the client's roots and send ``notifications/roots/list_changed``.

        Raises:
            LocalProtocolError: the client was opened without ``roots``.
            ValueError: a root is not an absolute ``file://`` URI.

        Source: 2025-06-18/client/roots#root-list-changes.1.
        """
        note = self.wire.set_roots(roots)
        await self.notify(note.method, note.params)

    # -- what comes in ---------------------------------------------------------------

    def _process_events(self) -> None:
        """Drain the core's events after new input; dispatch each one."""
        self._transmit_soon(self.wire.drain(self._dispatch))

    def _dispatch(self, event: Event) -> None:
        if isinstance(event, Outcome):
            answer = self._pending.get(event.id) if event.id is not None else None
            if answer is not None and not answer.done():
                answer.set_result(event)
            elif event.id is None:
                log.warning("the server could not read a message: %s", event)
        elif isinstance(event, Request):
            self._answer_server(event)
        elif isinstance(event, RequestCancelled):
            serving = self._serving.get(event.id)
            if serving is not None:
                # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.3
                # "Receivers of cancellation notifications SHOULD:"
                serving.cancel()
        elif isinstance(event, ConnectionClosed):
            self._close(self.wire.closed or "the server closed the connection")
        elif isinstance(event, Notification):
            if event.method == "notifications/subscriptions/acknowledged":
                self._acknowledged.set()
        # Progress and Notification: the wire gave them to their callbacks.

    def _answer_server(self, request: Request) -> None:
        """Answer a server request in a task of its own (step 7)."""
        task = asyncio.create_task(self._serve(request))
        self._serving[request.id] = task
        task.add_done_callback(partial(self._forget, request.id))

    async def _serve(self, request: Request) -> None:
        """The answer to one server request; cancelled: no answer."""
        try:
            now = asyncio.get_running_loop().time()
            value = self.wire.handle(request.method, request.params, now)
            if inspect.isawaitable(value):
                value = await value
            outcome = self.wire.finish(request.method, value)
        except Exception as exc:
            outcome = exc
        if not self.closed:
            self._transmit_soon(self.wire.reply(request, outcome))

    def _forget(self, rid: RequestId, task: asyncio.Task[None]) -> None:
        if self._serving.get(rid) is task:
            del self._serving[rid]

    async def _stop_handlers(self) -> None:
        """Cancel the server requests still being handled (and the modern era's
        ``subscriptions/listen``) and wait for them."""
        tasks = list(self._serving.values())
        if self._listening is not None:
            tasks.append(self._listening)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _clock(self) -> None:
        """Run the core's timeouts until cancelled (step 4 of the module docstring)."""
        conn = self.connection
        loop = asyncio.get_running_loop()
        while True:
            self._wake.clear()
            try:
                async with asyncio.timeout_at(conn.next_deadline()):
                    await self._wake.wait()
                continue  # a request was sent: read the deadline again
            except TimeoutError:
                pass
            for data in conn.handle_timeout(loop.time()):
                self._transmit_soon(data)
            self._process_events()

    # -- the end -------------------------------------------------------------------

    def abort(self) -> None:
        """Drop the session at once, with no goodbye: pending requests fail with
        SessionClosed, the transport is cut (stdio: the server's stdin closed without
        waiting; HTTP: open connections reset, no DELETE).  What a crash looks like to
        the server; leaving the ``async with`` afterwards still reaps what is left.
        """
        self._close("the client aborted the session")
        self._drop_transport()

    def _drop_transport(self) -> None:
        """Cut the transport abruptly (what a transport provides for :meth:`abort`)."""
        raise NotImplementedError

    def _close(self, reason: str) -> SessionClosed:
        """End the session: every pending request fails with SessionClosed; returns
        one to raise (with the first reason given)."""
        self.wire.close(reason)
        reason = self.wire.closed or reason
        for answer in self._pending.values():
            if not answer.done():
                answer.set_exception(SessionClosed(reason))
        for task in self._serving.values():
            task.cancel()  # nobody to answer any more
        if self._listening is not None:
            self._listening.cancel()
        return SessionClosed(reason)

    def _check_open(self) -> None:
        self.wire.check_open()

    @property
    def closed(self) -> bool:
        """Whether the session has ended."""
        return self.wire.closed is not None

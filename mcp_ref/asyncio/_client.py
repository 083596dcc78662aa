"""The client side shared by the asyncio drivers: pending requests, the timer, events.

How to drive the core as a client, step by step
-----------------------------------------------
Everything here is plain asyncio around :class:`mcp_ref.Connection`; a transport only
supplies "write these bytes" (:meth:`ClientSession._transmit`) and feeds what it reads
back with ``receive_data`` or ``receive_message`` followed by
:meth:`ClientSession._process_events`.

1. Make the core: ``Connection(CLIENT, default_timeout=RequestTimeout(seconds=60))``
   (with ``newline_framing=False`` when the transport delimits messages, as HTTP does).
2. Send a request: ``rid = conn.next_request_id()``, then
   ``data = conn.send(Request(id=rid, method=..., params=<typed params>), now=loop.time())``.
   ``send`` checks the request (lifecycle, capabilities, params type) and raises
   LocalProtocolError, having written nothing, if it breaks the protocol.  Park a
   future under ``rid``, write ``data``, await the future.
3. Whenever bytes arrive, feed them to the core and call ``conn.next_event()`` until it
   returns NEED_DATA.  A Response or ErrorResponse resolves the future of its id; a
   Request from the server is answered at once (``ping``) or refused (-32601); a
   RemoteProtocolError carries in ``event_hint`` the error response to send back.
4. Time is an argument: one task (:meth:`ClientSession._clock`) waits until
   ``conn.next_deadline()`` (on the ``loop.time()`` clock, the one passed as ``now``),
   then calls ``conn.handle_timeout(loop.time())`` and writes what it returns: the
   ``notifications/cancelled`` of each expired request.  The RequestTimedOut events
   that follow fail their futures with :class:`~mcp_ref.blocking.NoAnswerError` (we
   gave up waiting), never a plain McpError (the server answered with an error).  Sending a request wakes the task, as its deadline
   may be earlier than the one being waited for.
5. Cancellation: when the task awaiting a future is cancelled, send
   ``notifications/cancelled`` for its id.  The core returns ``b""`` (send nothing)
   when the answer already arrived.
6. Progress: a request made with ``on_progress`` carries its id as
   ``_meta.progressToken``; the core matches the server's ``notifications/progress``
   to it and hands us a Progress event, which goes to that request's callback.
7. Server requests: the capabilities declared in ``initialize`` follow from the
   handlers given (``sampling_handler``, ``elicitation_handler``, ``roots``), so the
   core refuses the others itself.  A request that passes runs its handler in a task
   of its own, which sends ``conn.send(Response(...))`` when done; RequestCancelled
   (the server's ``notifications/cancelled``, also sent when its timeout expires)
   cancels that task.
8. End of input gives ConnectionClosed: fail every pending future.  :meth:`abort`
   does the same at once and drops the transport with no goodbye.

No task here outlives the ``async with`` of the ``open_*`` function that made it.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any, Final

from .. import types as t
from .._connection import NEED_DATA, Connection
from .._convert import ConversionError, structure
from .._errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    LocalProtocolError,
    McpError,
    NoAnswerError,
    RemoteProtocolError,
)
from .._inflight import RequestTimeout
from .._methods import (
    LATEST_PROTOCOL_VERSION,
    METHODS,
    check_version,
    with_progress_token,
)
from .._pagination import PageWalker
from .._roots import check_roots
from .._state import State
from ..events import (
    ConnectionClosed,
    ErrorResponse,
    Event,
    Notification,
    Progress,
    Request,
    RequestCancelled,
    RequestId,
    RequestTimedOut,
    Response,
)

__all__ = [
    "DEFAULT_CLIENT_INFO",
    "ClientSession",
    "ElicitationHandler",
    "NoAnswerError",
    "ProgressCallback",
    "SamplingHandler",
    "SessionClosed",
]

log = logging.getLogger("mcp_ref.asyncio")

DEFAULT_CLIENT_INFO: Final = t.Implementation(name="mcp-ref-asyncio", version="0.1.0")
"""The ``clientInfo`` sent in ``initialize`` unless another is given."""

_DEFAULT: Final[Any] = object()

SamplingHandler = Callable[
    [t.CreateMessageRequestParams], "t.CreateMessageResult | Awaitable[t.CreateMessageResult]"
]
"""Answers ``sampling/createMessage``: ``(params) -> t.CreateMessageResult``, a plain or
an async function (run on the loop)."""

ElicitationHandler = Callable[[Any], "t.ElicitResult | Awaitable[t.ElicitResult]"]
"""Answers ``elicitation/create``: ``(params) -> t.ElicitResult``, plain or async; params
are ``t.ElicitRequestFormParams`` or (2025-11-25) ``t.ElicitRequestURLParams``."""

ProgressCallback = Callable[[Progress], object]
"""Called (synchronously, from the reading task) with each Progress of one request."""


class SessionClosed(ConnectionError):
    """The session ended (the server closed its side, the transport failed, or the
    client was closed) before a request got its answer, or a request was made after."""


def typed_params(method: str, params: Any) -> Any:
    """``params`` as the typed class ``METHODS[method]`` wants: a dict (camelCase wire
    names, as in JSON) is converted; None and typed instances pass unchanged.

    Raises:
        LocalProtocolError: the dict does not fit the method's params (-32602).
    """
    spec = METHODS.get(method)
    if spec is None or not isinstance(params, dict):
        return params
    try:
        return structure(params, spec.params_type)
    except ConversionError as exc:
        raise LocalProtocolError(f"bad params for {method}: {exc}", code=INVALID_PARAMS) from None


def result_of(event: Event) -> Any:
    """The typed result of a Response; an ErrorResponse raises :class:`McpError`."""
    if isinstance(event, ErrorResponse):
        raise McpError(event.code, event.message, event.data)
    assert isinstance(event, Response)
    return event.result


class ClientSession:
    """An MCP client over any transport, on asyncio (the shared half of the drivers).

    Made by :func:`~mcp_ref.asyncio.open_stdio_client` and
    :func:`~mcp_ref.asyncio.open_http_client`, which initialize it before handing it
    out.  Requests may be made from many tasks at once.

    Args:
        connection: the core, ``Connection(CLIENT, ...)``.
        on_notification: called (synchronously, from the reading task) with each
            Notification the server sends; None ignores them.  An exception it raises
            ends the session.
        sampling_handler: answers ``sampling/createMessage``; declares ``sampling``.
        elicitation_handler: answers ``elicitation/create``; declares ``elicitation``.
        roots: the client's roots (``file://`` URIs, checked by :func:`check_roots`),
            answered to ``roots/list``; declares ``roots``.  None: no roots capability.

    A handler runs in a task of its own; it may make requests of its own.  It is
    cancelled when the server cancels its request (or the session ends).  McpError
    becomes that error response; any other exception -32603.

    Source: 2025-06-18/basic/lifecycle (the client's side of the lifecycle);
    2025-06-18/client/sampling; 2025-06-18/client/elicitation; 2025-06-18/client/roots.
    """

    def __init__(
        self,
        connection: Connection,
        *,
        on_notification: Callable[[Notification], object] | None = None,
        sampling_handler: SamplingHandler | None = None,
        elicitation_handler: ElicitationHandler | None = None,
        roots: Sequence[t.Root] | None = None,
    ) -> None:
        self.connection = connection
        self.on_notification = on_notification
        self.initialize_result: t.InitializeResult | None = None
        """The server's answer to ``initialize`` (None before it)."""
        self._handlers: dict[str, Callable[[Any], Any]] = {}
        if sampling_handler is not None:
            self._handlers["sampling/createMessage"] = sampling_handler
        if elicitation_handler is not None:
            self._handlers["elicitation/create"] = elicitation_handler
        self._roots = None if roots is None else check_roots(roots)
        self._pending: dict[RequestId, asyncio.Future[Event]] = {}
        self._progress: dict[RequestId, ProgressCallback] = {}
        self._serving: dict[RequestId, asyncio.Task[None]] = {}
        """Server requests being handled (bounded by the core's incoming table)."""
        self._wake = asyncio.Event()
        self._closed: str | None = None

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
        timeout: float | RequestTimeout | None = _DEFAULT,
        on_progress: ProgressCallback | None = None,
    ) -> Any:
        """Send a request and return its typed result.

        Args:
            method: e.g. ``"tools/list"``.
            params: the typed params (``mcp_ref.types``), a dict in wire form, or None.
            timeout: seconds (or a RequestTimeout) before the core gives up and sends
                ``notifications/cancelled``; None for no timeout; default: the
                session's.  A RequestTimeout with ``reset_on_progress`` restarts on
                each progress notification.
            on_progress: called with each :class:`~mcp_ref.events.Progress` the server
                reports for this request (its id is sent as the progress token); an
                exception it raises ends the session.

        Raises:
            NoAnswerError: no answer within the timeout (an McpError, code -32001,
                that the server did not send).
            McpError: the server answered with an error.
            SessionClosed: the session ended first.
            LocalProtocolError: the request breaks the protocol (nothing was sent).
            asyncio.CancelledError: the caller was cancelled; the server was sent
                ``notifications/cancelled``.

        Source: 2025-06-18/basic/lifecycle#timeouts;
        2025-06-18/basic/utilities/cancellation#cancellation-flow;
        2025-06-18/basic/utilities/progress#progress-flow.
        """
        self._check_open()
        conn = self.connection
        loop = asyncio.get_running_loop()
        rid = conn.next_request_id()
        params = typed_params(method, params)
        if on_progress is not None:
            params = with_progress_token(method, params, rid)
        kw: dict[str, Any] = {}
        if timeout is not _DEFAULT:
            kw["timeout"] = (
                timeout
                if timeout is None or isinstance(timeout, RequestTimeout)
                else RequestTimeout(seconds=timeout)
            )
        data = conn.send(Request(id=rid, method=method, params=params), now=loop.time(), **kw)
        answer: asyncio.Future[Event] = loop.create_future()
        self._pending[rid] = answer
        if on_progress is not None:
            self._progress[rid] = on_progress
        # Spec: 2025-06-18/basic/lifecycle#timeouts.1 (the clock re-reads the deadlines)
        # "Implementations SHOULD establish timeouts for all sent requests, to prevent hung
        # connections and resource exhaustion."
        self._wake.set()
        try:
            reply = await self._exchange(data, answer)
        except BaseException as exc:
            if not answer.done() or answer.cancelled():  # (awaiting it cancels it)
                answer.cancel()
                self._give_up(rid, method, tell_server=not self._never_accepted(exc))
            else:
                answer.exception()  # mark it retrieved: we leave with another error
            raise
        finally:
            del self._pending[rid]
            self._progress.pop(rid, None)
        return result_of(reply)

    def _give_up(self, rid: RequestId, method: str, *, tell_server: bool = True) -> None:
        """Make the core forget request ``rid`` by cancelling it; write the
        ``notifications/cancelled`` unless the server never accepted the request."""
        # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.2
        # "The `initialize` request MUST NOT be cancelled by clients"
        if method == "initialize" or self.connection.state is State.CLOSED:
            return
        note = Notification(
            method="notifications/cancelled",
            params=t.CancelledNotificationParams(request_id=rid, reason="cancelled by the client"),
        )
        try:
            data = self.connection.send(note)  # b"" when the answer already came
            if tell_server:
                # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.17
                # "To cancel, the client SHOULD explicitly send an MCP `CancelledNotification`."
                self._transmit_soon(data)
        except (LocalProtocolError, SessionClosed) as exc:
            log.debug("could not cancel request %r: %s", rid, exc)

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification (typed params, a wire-form dict, or None).

        Raises:
            LocalProtocolError: it breaks the protocol (nothing was sent).
            SessionClosed: the session has ended.
        """
        self._check_open()
        note = Notification(method=method, params=typed_params(method, params))
        await self._transmit(self.connection.send(note))

    async def initialize(
        self,
        *,
        client_info: t.Implementation = DEFAULT_CLIENT_INFO,
        protocol_version: str = LATEST_PROTOCOL_VERSION,
    ) -> t.InitializeResult:
        """Run the initialization phase: ``initialize``, then ``notifications/initialized``.

        Only the capabilities of the handlers given are declared, so the core refuses
        the server's other sampling, roots and elicitation requests on its own.

        Args:
            client_info: our ``clientInfo``.
            protocol_version: the revision we ask for; the server may answer another
                supported one (``initialize_result.protocol_version``).

        Raises:
            ValueError: ``protocol_version`` is not one mcp-ref speaks.
            McpError, SessionClosed: as :meth:`request`; also SessionClosed when the
                server answers a protocol version mcp-ref does not speak.

        Source: 2025-06-18/basic/lifecycle#initialization;
        2025-06-18/basic/lifecycle#version-negotiation.1.
        """
        params = t.InitializeRequestParams(
            protocol_version=check_version(protocol_version),
            capabilities=t.ClientCapabilities(
                # Spec: 2025-06-18/client/sampling#capabilities.1
                # "Clients that support sampling MUST declare the `sampling` capability during
                # initialization:"
                sampling=t.ClientCapabilitiesSampling()
                if "sampling/createMessage" in self._handlers
                else None,
                # Spec: 2025-06-18/client/elicitation#capabilities.1
                # "Clients that support elicitation MUST declare the `elicitation` capability during
                # initialization:"
                elicitation=t.ClientCapabilitiesElicitation()
                if "elicitation/create" in self._handlers
                else None,
                # Spec: 2025-06-18/client/roots#capabilities.1 (no list_changed: fixed roots)
                # "Clients that support roots MUST declare the `roots` capability during
                # initialization:"
                roots=t.ClientCapabilitiesRoots() if self._roots is not None else None,
            ),
            client_info=client_info,
        )
        result: t.InitializeResult = await self.request("initialize", params)
        self.initialize_result = result
        # Spec: 2025-06-18/basic/lifecycle#initialization.4
        # "After successful initialization, the client MUST send an `initialized` notification to
        # indicate it is ready to begin normal operations:"
        await self.notify("notifications/initialized")
        return result

    async def ping(self, *, timeout: float | None = _DEFAULT) -> None:
        """Send ``ping``; return when the server answers.  Raises as :meth:`request`.

        Source: 2025-06-18/basic/utilities/ping#behavior-requirements.1.
        """
        await self.request("ping", timeout=timeout)

    async def list_tools(self) -> list[t.Tool]:
        """All the server's tools, following ``nextCursor`` page by page.

        Raises:
            RemoteProtocolError: the server repeated a cursor or sent too many pages.
            McpError, SessionClosed: as :meth:`request`.

        Source: 2025-06-18/server/tools#listing-tools;
        2025-06-18/server/utilities/pagination#implementation-guidelines.3.
        """
        walker = PageWalker()
        while (cursor := walker.next_cursor()) is not PageWalker.DONE:
            params = t.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
            page: t.ListToolsResult = await self.request("tools/list", params)
            walker.add_page(page.tools, page.next_cursor)
        return walker.items

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = _DEFAULT,
        on_progress: ProgressCallback | None = None,
    ) -> t.CallToolResult:
        """Call a tool; return its result (``is_error`` set when the tool failed).

        ``timeout`` and ``on_progress`` are as for :meth:`request`.

        Raises:
            McpError, SessionClosed: as :meth:`request` (e.g. -32602 for an unknown tool).

        Source: 2025-06-18/server/tools#calling-tools.
        """
        params = t.CallToolRequestParams(name=name, arguments=arguments)
        result: t.CallToolResult = await self.request(
            "tools/call", params, timeout=timeout, on_progress=on_progress
        )
        return result

    # -- what comes in ---------------------------------------------------------------

    def _process_events(self) -> None:
        """Drain the core's events after new input; dispatch each one."""
        conn = self.connection
        while True:
            try:
                event = conn.next_event()
            except RemoteProtocolError as exc:
                log.warning("protocol error from the server: %s", exc.message)
                if exc.event_hint is not None and conn.state is not State.CLOSED:
                    self._transmit_soon(conn.send(exc.event_hint))
                if conn.state is State.CLOSED:
                    self._close(exc.message)
                    return
                continue
            if event is NEED_DATA:
                return
            assert isinstance(event, Event)
            self._dispatch(event)

    def _dispatch(self, event: Event) -> None:
        if isinstance(event, Response | ErrorResponse):
            answer = self._pending.get(event.id) if event.id is not None else None
            if answer is not None and not answer.done():
                answer.set_result(event)
            elif event.id is None:
                log.warning("the server could not read a message: %s", event)
        elif isinstance(event, RequestTimedOut):
            answer = self._pending.get(event.id)
            if answer is not None and not answer.done():
                # Spec: 2025-06-18/basic/lifecycle#timeouts.2 (the core wrote the cancel)
                # "When the request has not received a success or error response within the timeout
                # period, the sender SHOULD issue a cancellation notification for that request and
                # stop waiting for a response."
                answer.set_exception(NoAnswerError(event.method, event.elapsed))
        elif isinstance(event, Request):
            if event.method in self._handlers or (
                event.method == "roots/list" and self._roots is not None
            ):
                task = asyncio.create_task(self._serve(event))
                self._serving[event.id] = task
                task.add_done_callback(partial(self._forget, event.id))
                return
            reply: Event
            if event.method == "ping":
                # Spec: 2025-06-18/basic/utilities/ping#behavior-requirements.1
                # "The receiver MUST respond promptly with an empty response:"
                reply = Response(id=event.id, result=t.EmptyResult())
            else:
                reply = ErrorResponse(
                    id=event.id, code=METHOD_NOT_FOUND, message=f"not handled: {event.method}"
                )
            self._transmit_soon(self.connection.send(reply))
        elif isinstance(event, RequestCancelled):
            serving = self._serving.get(event.id)
            if serving is not None:
                # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.3
                # "Receivers of cancellation notifications SHOULD:"
                serving.cancel()
            if self.connection.has_data_to_send:  # a batch's replies (see _batch)
                self._transmit_soon(self.connection.data_to_send())
        elif isinstance(event, Progress):
            callback = self._progress.get(event.request_id)
            if callback is not None:
                callback(event)
        elif isinstance(event, Notification):
            if self.on_notification is not None:
                self.on_notification(event)
        elif isinstance(event, ConnectionClosed):
            self._close("the server closed the connection")
        # ProgressDropped, UnexpectedResponse: nothing to do.

    async def _serve(self, request: Request) -> None:
        """Answer one server request with its handler (step 7); cancelled: no answer."""
        reply: Event
        try:
            if request.method == "roots/list":
                assert self._roots is not None
                result: Any = t.ListRootsResult(roots=self._roots)
            else:
                result = self._handlers[request.method](request.params)
                if inspect.isawaitable(result):
                    result = await result
            reply = Response(id=request.id, result=result)
        except McpError as exc:
            reply = ErrorResponse(id=request.id, code=exc.code, message=exc.message, data=exc.data)
        except Exception:
            log.exception("the %s handler failed", request.method)
            reply = ErrorResponse(id=request.id, code=INTERNAL_ERROR, message="handler failed")
        if self.closed:
            return
        try:
            data = self.connection.send(reply)  # b"" when the server cancelled it meanwhile
        except LocalProtocolError as exc:
            log.error("invalid answer to %s: %s", request.method, exc)
            failed = ErrorResponse(id=request.id, code=INTERNAL_ERROR, message="invalid result")
            data = self.connection.send(failed)
        self._transmit_soon(data)

    def _forget(self, rid: RequestId, task: asyncio.Task[None]) -> None:
        if self._serving.get(rid) is task:
            del self._serving[rid]

    async def _stop_handlers(self) -> None:
        """Cancel the server requests still being handled and wait for them."""
        tasks = list(self._serving.values())
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

    def _close(self, reason: str) -> None:
        """End the session: every pending request fails with SessionClosed(reason)."""
        if self._closed is None:
            self._closed = reason
        for answer in self._pending.values():
            if not answer.done():
                answer.set_exception(SessionClosed(reason))
        for task in self._serving.values():
            task.cancel()  # nobody to answer any more

    def _check_open(self) -> None:
        if self._closed is not None:
            raise SessionClosed(self._closed)

    @property
    def closed(self) -> bool:
        """Whether the session has ended."""
        return self._closed is not None

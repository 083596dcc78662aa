"""The sans-IO MCP connection: bytes in, events out; events in, bytes out.

Theory of operation
-------------------
:class:`Connection` is one side (``our_role``) of one MCP session, modelled on h11:

* ``receive_data(data)`` appends bytes from the peer (``b""`` means end of input);
  ``receive_message(data)`` appends one whole message for transports that delimit
  messages themselves (an HTTP body, a WebSocket frame, an SSE event);
* ``next_event()`` returns the next :mod:`~mcp_ref.events` event, or
  :data:`NEED_DATA`.  It raises :class:`RemoteProtocolError` for a bad message, with
  the error response to send in ``event_hint``; the connection survives and the next
  call goes on with the next message;
* ``send(event)`` checks an event as strictly as a received one and returns the bytes
  to write.  It raises :class:`LocalProtocolError` and writes nothing when the event
  breaks the protocol;
* ``next_deadline()`` / ``handle_timeout(now)``: time is an argument; the core never
  reads a clock.

Every received message passes the same steps, in this order, each rule in its own
module:

1. framing (``_framing``: bounded lines) and JSON (``_jsonrpc.decode``, -32700);
2. the JSON-RPC envelope (``_jsonrpc.classify``, -32600 / -32602); a batch
   (2025-03-26 only) goes to the batch stage (``_batch``), which feeds its items
   back one by one and gathers their replies: the steps below see single messages;
3. the method table (``_methods.METHODS``: known method, right sender, revision,
   negotiated capability, -32601);
4. the lifecycle table of the peer's era (``_state``, ``_state_modern``; -32600): the
   state changes only by its rows;
5. params conversion to typed messages (``_convert``, -32602);
6. the in-flight tables (``_inflight``: duplicate ids, progress tokens, cancellation,
   response matching).

The era is the peer's, decided once (2026-07-28/basic/versioning): a server follows
the handshake table until ``initialize`` or a request naming its version in ``_meta``;
a modern request's ``_meta``, methods, params and results are ``_modern_connection``'s.

Sending runs the same checks the other way round and changes nothing until the
message is known to be good; a refusal's reply answers no request (``_inflight.Refusals``).
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable
from typing import Any, Final

from . import _jsonrpc as rpc
from ._batch import Batches
from ._convert import ConversionError, structure_fn, unstructure_fn
from ._errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    LocalProtocolError,
    RemoteProtocolError,
)
from ._framing import DEFAULT_MAX_MESSAGE_BYTES, PEEK_BYTES, TOO_LONG, LineBuffer
from ._inflight import Incoming, InFlight, Outgoing, Refusals, RequestTimeout
from ._methods import METHODS, NOTIFICATION, REQUEST, MethodSpec, lookup
from ._modern_connection import LEGACY, MODERN, ModernEra, is_modern_request, opening
from ._state import (
    CLIENT,
    RECEIVE,
    SEND,
    SERVER,
    Direction,
    Kind,
    Role,
    State,
    describe_refusal,
    kind_of,
)
from ._state_modern import describe_modern_refusal
from ._versions import accept_refusal, answer_refusal, ask_refusal, negotiate_version
from .events import (
    ConnectionClosed,
    ErrorResponse,
    Event,
    Notification,
    Request,
    RequestCancelled,
    RequestTimedOut,
    Response,
    UnexpectedResponse,
)
from .types import CreateTaskResult

__all__ = ["NEED_DATA", "Connection"]


class _NeedData:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NEED_DATA"


NEED_DATA: Final = _NeedData()
"""Returned by ``next_event()`` when no complete message is buffered."""

_DEFAULT: Final = object()  # send(timeout=): the connection's default_timeout
_BLANK: Final = frozenset(b" \t\r\n")  # JSON's insignificant whitespace
_CANCELLED: Final = "notifications/cancelled"
_PROGRESS: Final = "notifications/progress"

# The compiled (un)structure function of each class (a fixed set: the schema's).
_structurer: Callable[[Any], Callable[[Any], Any]] = functools.cache(structure_fn)
_unstructurer: Callable[[Any], Callable[[Any], Any]] = functools.cache(unstructure_fn)
_TASK_AUGMENTABLE: Final = frozenset({"tools/call", "sampling/createMessage", "elicitation/create"})
"""Requests whose params may carry ``task`` (2025-11-25/basic/utilities/tasks)."""


def _task_or(plain: Callable[[Any], Any], body: Any) -> Any:
    """A task-augmented request's result: a CreateTaskResult, or the plain result of a
    receiver that ignored ``task``."""
    task = isinstance(body, dict) and "task" in body
    return _structurer(CreateTaskResult)(body) if task else plain(body)


class Connection:
    """One side of an MCP session, with no I/O.

    Args:
        our_role: ``CLIENT`` or ``SERVER`` (else ValueError).
        max_message_bytes: the largest message accepted, in bytes (default 8 MiB); a
            longer one is refused with -32600 and skipped.
        max_requests_in_flight: the most requests in flight each way (default 1024;
            also the largest batch); past it we refuse to send (LocalProtocolError)
            or answer the peer's request with -32603.
        default_timeout: the :class:`RequestTimeout` of requests ``send`` is given
            none for; None (the default): no timeout.
        newline_framing: True (default) for newline-delimited byte streams (stdio);
            False for transports that delimit messages (``send`` adds no newline).
        remember_ids: how many finished request ids each way are remembered, to drop
            late responses and refuse reused ids (default 4096).
        era: ``"modern"`` (2026-07-28), ``"legacy"`` (the handshake) or None: a client
            is legacy, a server dual-era, decided by the peer's first request.
        protocol_version, client_info, capabilities: a modern client's version, its
            ``Implementation`` and ``ClientCapabilities`` (``_modern_connection``).
    """

    def __init__(
        self,
        our_role: Role,
        *,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        max_requests_in_flight: int = 1024,
        default_timeout: RequestTimeout | None = None,
        newline_framing: bool = True,
        remember_ids: int = 4096,
        era: str | None = None,
        protocol_version: str | None = None,
        client_info: Any = None,
        capabilities: Any = None,
    ) -> None:
        if our_role not in (CLIENT, SERVER):
            raise ValueError("our_role must be CLIENT or SERVER")
        # Spec: 2025-06-18/basic#overview.1
        # "All implementations MUST support the base protocol and lifecycle management components."
        self.our_role: Final = our_role
        self.their_role: Final = our_role.peer
        #: ``"modern"``, ``"legacy"``, or None while a server's peer has not chosen.
        self.era, self._transitions, self.state = opening(our_role, era)
        self._modern = ModernEra(our_role, protocol_version, client_info, capabilities)
        self.default_timeout = default_timeout
        self.newline_framing = newline_framing
        self.max_message_bytes = max_message_bytes
        self.max_requests_in_flight = max_requests_in_flight
        self._lines = LineBuffer(max_message_bytes)
        self._messages: deque[bytes] = deque()
        # Ready for next_event; a batch's refused items wait as their error.
        self._events: deque[Event | RemoteProtocolError] = deque()
        self._eof = False
        self._closed_reported = False
        self._inflight = InFlight(
            max_outgoing=max_requests_in_flight,
            max_incoming=max_requests_in_flight,
            remember=remember_ids,
        )
        self._init_id: Any = None  # a server's: the id of the client's initialize
        self._refusals = Refusals(max(64, 4 * max_requests_in_flight))
        self._batches: Batches | None = None  # made by the first batch read
        self._outbox: list[bytes] = []
        # Per-method decisions, kept until the version or capabilities change.
        self._request_plans: dict[str, tuple[MethodSpec, Kind]] = {}
        self._notification_plans: dict[str, tuple[MethodSpec, Kind, Callable[[Any], Any]]] = {}
        self._send_plans: dict[str, tuple[MethodSpec, Kind, Any]] = {}
        #: The protocol version: negotiated by initialize, or the modern era's (else None).
        self.protocol_version = self._modern.protocol_version if self.era is MODERN else None
        #: The version the client asked for in ``initialize``.
        self.requested_version: str | None = None
        #: Capabilities by role: typed ClientCapabilities / ServerCapabilities.
        self.capabilities: dict[Role, Any] = {CLIENT: capabilities, SERVER: None}
        #: The peer's ``Implementation`` (clientInfo or serverInfo).
        self.peer_info: Any = None
        #: The server's instructions, when we are the client.
        self.instructions: str | None = None

    # -- what the application asks ------------------------------------------------

    @property
    def our_state(self) -> State:
        """The lifecycle state (one state per connection; see ``_state``)."""
        return self.state

    @property
    def peer_capabilities(self) -> Any:
        """The peer's negotiated capabilities (None before initialize)."""
        return self.capabilities[self.their_role]

    @property
    def our_capabilities(self) -> Any:
        """The capabilities we declared (None before initialize)."""
        return self.capabilities[self.our_role]

    def next_request_id(self) -> int:
        """A fresh integer request id never used by us in this session."""
        return self._inflight.fresh_id()

    def negotiated_version_for(self, requested: str) -> str:
        """The version a server answers to ``requested`` (see ``negotiate_version``)."""
        return negotiate_version(requested)

    def requests_in_flight(self) -> tuple[list[Any], list[Any]]:
        """``(outgoing ids, incoming ids)`` of requests still awaiting a response."""
        return list(self._inflight.outgoing), list(self._inflight.incoming)

    def _step(self, direction: Direction, kind: Kind) -> State | None:
        # The one way the state changes: a row of the table of our peer's era.
        return self._transitions.get((self.state, direction, kind))

    def _refusal(self, direction: Direction, kind: Kind) -> str:
        describe = describe_modern_refusal if self.era is MODERN else describe_refusal
        return describe(self.our_role, self.state, direction, kind)

    # -- receiving ----------------------------------------------------------------

    def receive_data(self, data: bytes) -> None:
        """Feed bytes received from the peer; ``b""`` means end of input."""
        if self._eof:
            if data:
                raise LocalProtocolError("receive_data after end of input")
            return
        if not data:
            self._eof = True
            return
        if not self.newline_framing:
            raise LocalProtocolError("this connection takes whole messages: receive_message")
        self._lines.feed(data)

    def receive_message(self, data: bytes) -> None:
        """Feed one whole message (for transports that delimit messages); at most 1024
        wait for ``next_event``."""
        if self._eof:
            raise LocalProtocolError("receive_message after end of input")
        if len(self._messages) >= 1024:
            raise LocalProtocolError("too many queued messages; drain next_event() first")
        self._messages.append(data)

    def next_event(self) -> Event | _NeedData:
        """The next event, or :data:`NEED_DATA`; after end of input
        :class:`ConnectionClosed` once, then NEED_DATA.

        Raises:
            RemoteProtocolError: the next message broke the protocol; send
                ``event_hint`` (None: no reply owed) and go on.
        """
        while True:
            try:
                if self._events:
                    ready = self._events.popleft()
                    if type(ready) is RemoteProtocolError:
                        raise ready
                    assert not isinstance(ready, RemoteProtocolError)
                    return ready
                line = self._lines.next_line() if not self._messages else self._next_message()
                if line is None and self._eof:
                    line = self._lines.take_rest() or None
                if line is None:
                    if self._eof and not self._closed_reported:
                        self._closed_reported = True
                        self.state = self._step(RECEIVE, Kind.CLOSE) or self.state
                        return ConnectionClosed()
                    return NEED_DATA
                event = self._read(line)
            except RemoteProtocolError as exc:
                if exc.event_hint is not None:
                    self._refusals.owe(exc.event_hint.id)
                raise
            if event is not None:
                return event

    def _read(self, line: bytes | object) -> Event | None:
        """One framed message's event, or None (a blank line, a batch, a late response)."""
        if line is TOO_LONG:
            # Skipped for its size: a request's -32600, or the end of our request.
            return self._inflight.too_long(self._lines.too_long_prefix, self.max_message_bytes)
        assert isinstance(line, bytes)
        # JSON's whitespace only (bytes.strip() would take \x0b and \x0c too); strip
        # copies, so only when the line may be blank.
        if not line or (line[0] in _BLANK and not line.strip(b" \t\r\n")):
            if self.newline_framing:
                return None
            raise rpc.refuse("parse error: empty message", PARSE_ERROR)
        try:
            obj = rpc.decode(line)
        except RemoteProtocolError as exc:
            # Not JSON: -32700 with id null, or the id a truncated request shows.
            rid, is_request = rpc.peek(line[:PEEK_BYTES])
            if rid is None or not is_request:
                raise
            raise rpc.refuse(exc.message, exc.code, rid) from None
        if type(obj) is list:
            if self._batches is None:
                self._batches = Batches(
                    max_items=self._inflight.max_incoming,
                    collect=self.newline_framing,
                    max_refused=self._refusals.maximum,
                )
            self._events.extend(self._batches.split(obj, self.protocol_version, self._handle))
            return None
        return self._handle(obj)

    def _next_message(self) -> bytes | object:
        data = self._messages.popleft()
        if len(data) > self.max_message_bytes:
            self._lines.too_long_prefix = data[:PEEK_BYTES]
            return TOO_LONG
        return data

    def _handle(self, obj: Any) -> Event | None:
        kind, rid, method, payload = rpc.classify(obj)
        if kind == rpc.REQUEST:
            return self._receive_request(rid, method, payload)
        if kind == rpc.NOTIFICATION:
            return self._receive_notification(method, payload)
        return self._receive_response(kind, rid, payload, obj)

    def _receive_step(self, kind: Kind, rid: Any = None) -> State:
        """The next state for receiving ``kind``; -32600 (replying to ``rid``) if none."""
        new_state = self._transitions.get((self.state, RECEIVE, kind))
        if new_state is None:
            why = self._refusal(RECEIVE, kind)
            raise rpc.refuse(why, INVALID_REQUEST, rid, reply=rid is not None)
        return new_state

    def _plan_request(self, rid: Any, method: str) -> tuple[MethodSpec, Kind]:
        """May the peer send us this request: the method table, lifecycle, capabilities."""
        spec = lookup(method, self.their_role, REQUEST, self.protocol_version)
        if spec is None:
            raise rpc.refuse(f"method not found: {method}", METHOD_NOT_FOUND, rid)
        k = kind_of(method, is_request=True)
        self._receive_step(k, rid)  # a lifecycle refusal names the state first
        # Spec: 2025-06-18/basic/lifecycle#error-handling.1 (capability not negotiated)
        # "Implementations SHOULD be prepared to handle these error cases:"
        # Spec: 2025-06-18/client/roots#error-handling.1 (a client without roots: -32601)
        # "Clients SHOULD return standard JSON-RPC errors for common failure cases:"
        missing = spec.missing_capability(self.protocol_version, self.capabilities)
        if missing:
            raise rpc.refuse(f"method not available: {missing}", METHOD_NOT_FOUND, rid)
        plan = self._request_plans[method] = (spec, k)
        return plan

    def _receive_request(self, rid: Any, method: str, payload: Any) -> Event:
        ctx = None  # The modern era (or the request that opens it): _modern_connection
        if self.era is not LEGACY and (self.era is MODERN or is_modern_request(method, payload)):
            spec, new_state, params, ctx = self._modern.read_request(
                self.state, rid, method, payload
            )
            k = Kind.REQUEST
        else:
            plan = self._request_plans.get(method)
            spec, k = plan if plan is not None else self._plan_request(rid, method)
            new_state = self._receive_step(k, rid)
        inflight = self._inflight
        # (2026-07-28 refuses only an id in flight, basic/index#requests.3: not one answered)
        if rid in inflight.incoming or (self.era is not MODERN and rid in inflight.finished_in):
            raise rpc.refuse(f"request id {rid!r} was already used", INVALID_REQUEST, rid)
        if len(inflight.incoming) >= inflight.max_incoming:
            raise rpc.refuse("too many requests in flight", INTERNAL_ERROR, rid)
        try:
            # Spec: 2025-06-18/client/sampling#security-considerations.2
            # "Both parties SHOULD validate message content"
            if ctx is None:
                params = spec.read_params(payload, _structurer)
        except ConversionError as exc:
            raise rpc.refuse(f"invalid params for {method}: {exc}", INVALID_PARAMS, rid) from None
        token = None
        meta = getattr(params, "meta", None)
        if meta is not None and (token := meta.get("progressToken")) is not None:
            # Spec: 2025-06-18/basic/utilities/progress#progress-flow.1
            # "Progress tokens MUST be a string or integer value"
            if not rpc.valid_id(token):
                why = "progressToken must be a string or an integer"
                raise rpc.refuse(why, INVALID_PARAMS, rid)
            # Spec: 2025-06-18/basic/utilities/progress#progress-flow.2
            # "Progress tokens can be chosen by the sender using any means, but MUST be unique
            # across all active requests."
            if token in inflight.in_tokens:
                raise rpc.refuse(f"progress token {token!r} is already in use", INVALID_PARAMS, rid)
        if k is Kind.INITIALIZE:
            self.era = LEGACY  # decided once (2026-07-28/basic/versioning)
            self._init_id = rid
            self.requested_version = params.protocol_version
            self.capabilities[CLIENT] = params.capabilities
            self.peer_info = params.client_info
            self._forget_plans()
        elif self.era is None and ctx is not None:  # the first modern request decides
            self.era, self._transitions = MODERN, self._modern.transitions
            self.protocol_version = ctx.protocol_version
            self._forget_plans()
        inflight.add_incoming(Incoming(id=rid, method=method, progress_token=token, context=ctx))
        self.state = new_state
        return Request(id=rid, method=method, params=params, context=ctx)

    def _receive_notification(self, method: str, payload: Any) -> Event | None:
        # Spec: 2025-06-18/basic#notifications.1
        # "The receiver MUST NOT send a response."
        # (every failure below raises without an event_hint)
        plan = self._notification_plans.get(method)
        if plan is None:
            spec = lookup(method, self.their_role, NOTIFICATION, self.protocol_version)
            if spec is None:
                raise RemoteProtocolError(f"unknown notification: {method}", code=METHOD_NOT_FOUND)
            k = kind_of(method, is_request=False)
            read = _structurer if self.era is not MODERN else self._modern.structurer
            plan = self._notification_plans[method] = (spec, k, read(spec.params_type))
        spec, k, structure_params = plan
        new_state = self._receive_step(k)
        # A notification of a capability the peer did not declare (its fault, see
        # lifecycle#operation.1) asks nothing of us: it is delivered.
        try:
            if payload is None:
                params = spec.read_params(None, _structurer)  # None, or raises
            else:
                params = structure_params(payload)
        except ConversionError as exc:
            raise RemoteProtocolError(
                f"invalid params for {method}: {exc}", code=INVALID_PARAMS
            ) from None
        self.state = new_state
        if self.era is MODERN and self.our_role is CLIENT:  # a stream that ended: dropped
            if self._modern.of_ended_subscription(params, self._inflight.outgoing):
                return None
        if method == _CANCELLED:
            return self._receive_cancel(params)
        if method == _PROGRESS:
            return self._inflight.progress_received(params)
        return Notification(method=method, params=params)

    def _receive_cancel(self, params: Any) -> Event | None:
        # Spec: 2025-06-18/basic/utilities/cancellation#error-handling.1
        # "Invalid cancellation notifications SHOULD be ignored:"
        rid = params.request_id
        # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.2
        # "The `initialize` request MUST NOT be cancelled by clients"
        if self.our_role is SERVER and rid == self._init_id and type(rid) is type(self._init_id):
            return None
        if self.era is MODERN and self.our_role is CLIENT:  # the server ended a subscription
            return Notification(method=_CANCELLED, params=params)
        # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.4
        # "Receivers MAY ignore cancellation notifications if:"
        req = self._inflight.pop_incoming(rid, "cancelled")
        # Spec: 2026-07-28/basic/patterns/cancellation#timing-considerations.1
        # "Both parties MUST handle these race conditions gracefully:"
        # (a cancellation of a request already answered, or unknown: ignored)
        if req is None:
            return None
        if self._batches is not None:
            array = self._batches.cancelled(rid)
            if array:
                self._outbox.append(array)
        return RequestCancelled(id=rid, reason=params.reason)

    def _receive_response(self, kind: int, rid: Any, payload: Any, obj: Any) -> Event | None:
        inflight = self._inflight
        is_error = kind == rpc.ERROR
        if rid is None:  # the peer could not read one of our messages
            return rpc.error_event(None, payload)
        out = inflight.outgoing.get(rid)
        if out is None:
            if inflight.finished_out.get(rid) in ("cancelled", "timed out"):
                # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.5
                # "The sender of the cancellation notification SHOULD ignore any response to the
                # request that arrives afterward"
                # Spec: 2025-06-18/basic/utilities/cancellation#timing-considerations.1
                # "Both parties MUST handle these race conditions gracefully:"
                # Spec: 2026-07-28/basic/patterns/cancellation#timing-considerations.1
                # "Both parties MUST handle these race conditions gracefully:"
                return None  # a late answer to a request we gave up on: dropped
            return UnexpectedResponse(id=rid, message=obj)
        method = out.method
        answers_init = method == "initialize"
        k = kind_of(None, is_request=False, answers_initialize=answers_init, is_error=is_error)
        new_state = self._receive_step(k)
        inflight.pop_outgoing(rid, "answered")
        if is_error:
            self.state = new_state
            return rpc.error_event(rid, payload, method)
        try:
            # Spec: 2025-06-18/client/sampling#security-considerations.2 (results too)
            # "Both parties SHOULD validate message content"
            result = out.structure_result(payload)
        except ConversionError as exc:
            # An unusable initialize result fails the handshake like an error would.
            bad = Kind.INITIALIZE_ERROR if answers_init else k
            self.state = self._step(RECEIVE, bad) or self.state
            return ErrorResponse(
                id=rid,
                code=INTERNAL_ERROR,
                message=f"invalid result from peer for {method}: {exc}",
                data={"result": payload},
                method=method,
            )
        if answers_init:
            if why := accept_refusal(result.protocol_version):
                # Spec: 2025-06-18/basic/lifecycle#version-negotiation.6
                # "If the client does not support the version in the server's response, it SHOULD
                # disconnect."
                # Spec: 2025-06-18/basic/lifecycle#error-handling.1 (version mismatch)
                # "Implementations SHOULD be prepared to handle these error cases:"
                self.state = self._step(RECEIVE, Kind.UNSUPPORTED_VERSION) or self.state
                raise RemoteProtocolError(why, code=INVALID_PARAMS)
            self.protocol_version = result.protocol_version
            self.capabilities[SERVER] = result.capabilities
            self.peer_info = result.server_info
            self.instructions = result.instructions
            self._forget_plans()
        self.state = new_state
        return Response(id=rid, result=result, method=method)

    # -- sending ------------------------------------------------------------------

    def send(
        self,
        event: Event,
        *,
        now: float | None = None,
        timeout: RequestTimeout | object | None = _DEFAULT,
    ) -> bytes:
        """Check an event and return the bytes to write to the peer.

        Args:
            event: a Request, Notification, Response or ErrorResponse.
            now: the current time in seconds (any monotonic clock), needed when the
                request gets a timeout.
            timeout: for a Request, its :class:`RequestTimeout` (default: the
                connection's ``default_timeout``; None for none).

        Returns:
            The message (with its newline when ``newline_framing``), or ``b""``: a
            response to a request the peer cancelled, a cancellation of a request
            already answered, or a reply held for its batch's array.

        Raises:
            LocalProtocolError: the event breaks the protocol; nothing changed.
        """
        if self.state is State.CLOSED:
            raise LocalProtocolError("connection is closed")
        if type(event) is Request:
            return self._send_request(event, now, timeout)
        if type(event) is Response:
            return self._send_response(event)
        if type(event) is ErrorResponse:
            return self._send_error(event)
        if type(event) is Notification:
            return self._send_notification(event)
        raise LocalProtocolError(f"cannot send {type(event).__name__}")

    def _encode(self, message: dict[str, Any], *, bounded: bool = True) -> bytes:
        try:
            # Spec: 2025-06-18/basic/transports#stdio.1
            # "Messages are delimited by newlines, and MUST NOT contain embedded newlines."
            # (JSON text holds no raw newline)
            data = rpc.encode(message, newline=self.newline_framing)
        except ValueError as exc:
            raise LocalProtocolError(f"cannot serialize the message: {exc}") from None
        if bounded and len(data) - self.newline_framing > self.max_message_bytes:
            raise LocalProtocolError(
                f"message of {len(data)} bytes exceeds the limit of {self.max_message_bytes}"
            )
        return data

    def _check_step(self, kind: Kind) -> State:
        new_state = self._transitions.get((self.state, SEND, kind))
        if new_state is None:
            raise LocalProtocolError(self._refusal(SEND, kind))
        return new_state

    def _plan_send(self, method: str, is_request: bool) -> tuple[MethodSpec, Kind, Any]:
        """May we send this: the method table, lifecycle, capabilities.  The plan: the
        row, the lifecycle kind, and a request's result structure function."""
        spec = lookup(
            method, self.our_role, REQUEST if is_request else NOTIFICATION, self.protocol_version
        )
        if spec is None:
            what = "request" if is_request else "notification"
            why = f"{self.our_role.value} cannot send {what} {method!r}"
            if self.protocol_version:
                why += f" in protocol version {self.protocol_version}"
            raise LocalProtocolError(why, code=METHOD_NOT_FOUND)
        k = kind_of(method, is_request=is_request)
        self._check_step(k)  # a lifecycle refusal names the state first
        missing = spec.missing_capability(self.protocol_version, self.capabilities)
        if missing:
            raise LocalProtocolError(missing, code=METHOD_NOT_FOUND)
        result = None  # a modern result is read by its resultType
        if is_request:
            modern = self.era is MODERN
            result = self._modern.result_reader(spec) if modern else _structurer(spec.result_type)
        plan = self._send_plans[method] = (spec, k, result)
        return plan

    def _send_request(self, event: Request, now: float | None, timeout: Any) -> bytes:
        rid, method = event.id, event.method
        # Spec: 2025-06-18/basic#requests.1
        # "Requests MUST include a string or integer ID."
        # Spec: 2025-06-18/basic#requests.2
        # "Unlike base JSON-RPC, the ID MUST NOT be `null`."
        if not rpc.valid_id(rid):
            raise LocalProtocolError(f"request id must be a str or an int, not {rid!r}")
        plan = self._send_plans.get(method)
        spec, k, structure_result = plan if plan is not None else self._plan_send(method, True)
        new_state = self._check_step(k)
        params = spec.params_json(event.params, _unstructurer)
        if self.era is MODERN:  # version, client, capabilities in _meta (_modern_connection)
            params = self._modern.request_params(params)
        token = None
        meta = getattr(event.params, "meta", None)
        if meta is not None and (token := meta.get("progressToken")) is not None:
            if not rpc.valid_id(token):
                raise LocalProtocolError("progressToken must be a str or an int")
        # Spec: 2025-06-18/basic/lifecycle#timeouts.3
        # "SDKs and other middleware SHOULD allow these timeouts to be configured on a per-request
        # basis."
        if timeout is _DEFAULT:
            timeout = self.default_timeout
        if getattr(event.params, "task", None) is not None:  # a task, or a plain answer
            structure_result = functools.partial(_task_or, structure_result)
        out = Outgoing(
            id=rid, method=method, progress_token=token, structure_result=structure_result
        )
        out.start_clock(timeout, now)
        if k is Kind.INITIALIZE and (why := ask_refusal(event.params.protocol_version)):
            raise LocalProtocolError(why)
        data = self._encode(rpc.request(rid, method, params))
        # Spec: 2026-07-28/basic/index#requests.3
        # "The request ID MUST NOT match the ID of any other request the sender has issued
        # and not yet received a response for."
        self._inflight.add_outgoing(out)  # checks (id reuse, bounds) before adding
        if k is Kind.INITIALIZE:
            self.requested_version = event.params.protocol_version
            self.capabilities[CLIENT] = event.params.capabilities
            self._forget_plans()
        self.state = new_state
        return data

    def _send_notification(self, event: Notification) -> bytes:
        method = event.method
        plan = self._send_plans.get(method)
        spec, k, _ = plan if plan is not None else self._plan_send(method, False)
        new_state = self._check_step(k)
        data = self._encode(rpc.notification(method, spec.params_json(event.params, _unstructurer)))
        if self.era is MODERN and self.our_role is SERVER:  # (subscriptions, logs)
            self._modern.check_server_notification(method, event.params, self._inflight.incoming)
        elif method == _CANCELLED:  # both checks raise before they change anything
            # Spec: 2026-07-28/basic/patterns/cancellation#behavior-requirements.1
            # "Cancellation notifications MUST only reference requests that:"
            # (we issued, still in flight: otherwise nothing is sent)
            if not self._inflight.cancel_outgoing(event.params.request_id):
                return b""  # already answered (or given up on): nothing to cancel
        if method == _PROGRESS:
            self._inflight.progress_sent(event.params)
        self.state = new_state
        return data

    def _was_cancelled(self, rid: Any) -> bool:
        # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.3
        # "Receivers of cancellation notifications SHOULD:"
        return self._inflight.finished_in.get(rid) == "cancelled"

    def _send_response(self, event: Response) -> bytes:
        rid = event.id
        if not rpc.valid_id(rid):
            raise LocalProtocolError(f"response id must be a str or an int, not {rid!r}")
        req = self._inflight.incoming.get(rid)
        if req is None:
            if self._was_cancelled(rid):
                return b""
            raise LocalProtocolError(f"no request with id {rid!r} awaits a response")
        spec = METHODS[req.method]
        is_init = req.method == "initialize"
        new_state = self._check_step(Kind.INITIALIZE_RESULT if is_init else Kind.RESPONSE)
        result = event.result
        if req.context is not None:  # a modern request: resultType and its rules
            body = self._modern.result_json(spec, result, req.context, rid)
        elif not isinstance(result, spec.result_type) and not (
            isinstance(result, CreateTaskResult) and req.method in _TASK_AUGMENTABLE
        ):  # a task-augmented request's answer (2025-11-25/basic/utilities/tasks)
            raise LocalProtocolError(
                f"the result of {req.method} must be {spec.result_type.__name__}, "
                f"not {type(result).__name__}"
            )
        elif is_init and (why := answer_refusal(self.requested_version, result.protocol_version)):
            raise LocalProtocolError(why)
        else:
            body = _unstructurer(type(result))(result)
        data = self._encode(rpc.result(rid, body))
        self._inflight.pop_incoming(rid, "answered")
        if is_init:
            self.protocol_version = result.protocol_version
            self.capabilities[SERVER] = result.capabilities
            self._forget_plans()
        self.state = new_state
        return data if self._batches is None else self._batches.reply(rid, data, refused=False)

    def _send_error(self, event: ErrorResponse) -> bytes:
        rid = event.id
        if rid is not None and not rpc.valid_id(rid):
            raise LocalProtocolError(f"error response id must be a str, an int or None: {rid!r}")
        # Spec: 2025-06-18/basic#responses.5
        # "Error codes MUST be integers."
        if type(event.code) is not int:
            raise LocalProtocolError("error codes must be integers")
        if self.era is MODERN:  # codes 2026-07-28 retired or reserved
            self._modern.check_error_code(event.code)
        # Spec: 2025-06-18/basic#requests.3
        # "The request ID MUST NOT have been previously used by the requestor within the same
        # session."
        # (a refused message may have reused the id of a request in flight)
        refused = rid in self._refusals
        req = None if refused else self._inflight.incoming.get(rid)
        # Spec: 2026-07-28/basic/transports/stdio#cancellation.2
        # "Servers SHOULD stop work on a cancelled request as soon as practical and MUST NOT
        # send any further messages for it."
        if req is None and not refused and self._was_cancelled(rid):
            return b""
        is_init = req is not None and req.method == "initialize"
        new_state = self._check_step(Kind.INITIALIZE_ERROR if is_init else Kind.RESPONSE)
        # Unbounded: the reply to a message refused for its size must go out.
        data = self._encode(rpc.error(rid, event.code, event.message, event.data), bounded=False)
        self.state = new_state
        if refused:
            self._refusals.paid(rid)
        elif req is not None:
            self._inflight.pop_incoming(rid, "answered")
        return data if self._batches is None else self._batches.reply(rid, data, refused=refused)

    # -- closing, timeouts, and what the connection sends by itself ----------------

    def close(self) -> None:
        """Close our side: nothing more is sent or read (idempotent).  A driver calls
        it when it stops, e.g. in CLOSING once the requests it accepted are answered."""
        self.state = self._step(SEND, Kind.CLOSE) or self.state

    def send_failed(self) -> None:
        """Writing the bytes of a ``send`` failed or was cancelled: the stream may hold
        half a message, so the connection closes."""
        self.close()

    @property
    def has_data_to_send(self) -> bool:
        return bool(self._outbox)

    def data_to_send(self) -> bytes:
        """Bytes the connection produced by itself, to write now; ``b""`` when none.

        Only a batch makes any: when the peer cancels the last request of a batch whose
        other replies are held, their array is here after the :class:`RequestCancelled`.
        """
        data = b"".join(self._outbox)
        self._outbox.clear()
        return data

    def next_deadline(self) -> float | None:
        """When (on the clock of ``now``) to call ``handle_timeout``; None: never."""
        return self._inflight.next_deadline()

    def handle_timeout(self, now: float) -> list[bytes]:
        """Expire requests whose deadline has passed: queue a :class:`RequestTimedOut`
        for each and return the ``notifications/cancelled`` messages to write (framed
        like ``send``'s; none for ``initialize``)."""
        out: list[bytes] = []
        # Spec: 2025-06-18/basic/lifecycle#error-handling.1 (request timeouts)
        # "Implementations SHOULD be prepared to handle these error cases:"
        for req in self._inflight.expire(now):
            self._events.append(
                RequestTimedOut(id=req.id, method=req.method, elapsed=now - req.sent_at)
            )
            # Spec: 2025-06-18/basic/lifecycle#timeouts.2
            # "When the request has not received a success or error response within the timeout
            # period, the sender SHOULD issue a cancellation notification for that request and stop
            # waiting for a response."
            if req.method == "initialize" or self.state is State.CLOSED:
                continue
            message = rpc.notification(_CANCELLED, {"requestId": req.id, "reason": "timed out"})
            out.append(rpc.encode(message, newline=self.newline_framing))
        return out

    # -- helpers -------------------------------------------------------------------

    def _forget_plans(self) -> None:
        self._request_plans.clear()
        self._notification_plans.clear()
        self._send_plans.clear()

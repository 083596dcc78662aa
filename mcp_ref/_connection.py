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

Every received message passes the same steps, in this order, each in its own module:

1. framing (``_framing``: bounded lines) and JSON (``_jsonrpc.decode``, -32700);
2. the JSON-RPC envelope (``_jsonrpc.classify``, -32600 / -32602);
3. the method table (``_methods.METHODS``: known method, right sender, revision,
   negotiated capability, -32601);
4. the lifecycle table (``_state``, -32600);
5. params conversion to typed messages (``_convert``, -32602);
6. the in-flight tables (``_inflight``: duplicate ids, progress tokens, cancellation,
   response matching).

Sending runs the same checks the other way round.

The class is written in parts: this module has the public API; :mod:`._receive` the
receive paths, :mod:`._send` the send paths, and :mod:`._conn_state` the state they share.
"""

from __future__ import annotations

from typing import Any, Final

from . import _jsonrpc as rpc
from ._conn_state import _CANCELLED, _CLOSED, _DEFAULT
from ._errors import PARSE_ERROR, LocalProtocolError, RemoteProtocolError
from ._framing import PEEK_BYTES, TOO_LONG
from ._inflight import RequestTimeout
from ._methods import negotiate_version
from ._receive import ReceivePaths
from ._send import SendPaths
from ._state import RECEIVE, Kind, State, next_state
from .events import (
    ConnectionClosed,
    ErrorResponse,
    Event,
    Notification,
    Request,
    RequestTimedOut,
    Response,
)

__all__ = ["NEED_DATA", "Connection"]


class _NeedData:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NEED_DATA"


NEED_DATA: Final = _NeedData()
"""Returned by ``next_event()`` when no complete message is buffered."""

_BLANK: Final = frozenset(b" \t\r\n")
"""Bytes a whitespace-only line may start with (JSON's insignificant whitespace)."""


class Connection(ReceivePaths, SendPaths):
    """One side of an MCP session, with no I/O.

    Args:
        our_role: ``CLIENT`` or ``SERVER``.
        max_message_bytes: the largest message accepted, in bytes
            (default 8 MiB); a longer one is refused with -32600 and skipped.
        max_requests_in_flight: the most requests in flight in each direction
            (default 1024); past it we refuse to send (LocalProtocolError) or answer
            the peer's request with -32603.
        default_timeout: the :class:`RequestTimeout` of requests we send when
            ``send`` is given none; None (the default) means no timeout.
        newline_framing: True (default) for byte streams of newline-delimited
            messages (stdio); False for transports that delimit messages themselves,
            where ``send`` returns one message without its newline.
        remember_ids: how many finished request ids each direction remembers, to drop
            late responses and refuse reused ids (default 4096).

    Source: 2025-06-18/basic (messages), 2025-06-18/basic/lifecycle.
    """

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
        while True:
            self._next_id += 1
            rid = self._next_id
            if self._inflight.get_outgoing(rid) is None and not self._inflight.outgoing_finished(
                rid
            ):
                return rid

    def negotiated_version_for(self, requested: str) -> str:
        """The version a server must answer to ``requested`` (same if supported, else the
        latest).  Source: 2025-06-18/basic/lifecycle#version-negotiation."""
        return negotiate_version(requested)

    def requests_in_flight(self) -> tuple[list[Any], list[Any]]:
        """``(outgoing ids, incoming ids)`` of requests still awaiting a response."""
        return (
            [o.id for o in self._inflight.outgoing.values()],
            [i.id for i in self._inflight.incoming.values()],
        )

    def receive_data(self, data: bytes) -> None:
        """Feed bytes received from the peer; ``b""`` means end of input.

        Raises:
            LocalProtocolError: data after end of input, or on a connection without
                newline framing (use :meth:`receive_message`).
        """
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
        """Feed one whole message (for transports that delimit messages).

        Raises:
            LocalProtocolError: after end of input, or more than 1024 messages are
                queued (call ``next_event`` until NEED_DATA between feeds).
        """
        if self._eof:
            raise LocalProtocolError("receive_message after end of input")
        if len(self._messages) >= 1024:
            raise LocalProtocolError("too many queued messages; drain next_event() first")
        self._messages.append(data)

    def next_event(self) -> Event | _NeedData:
        """Return the next event, or :data:`NEED_DATA` when more input is needed.

        After end of input it returns :class:`ConnectionClosed` once, then NEED_DATA.

        Raises:
            RemoteProtocolError: the next message broke the protocol.  ``event_hint``
                holds the error response to send (None when no reply is owed).  The
                connection stays usable.
        """
        while True:
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
                    # CLOSING: we may still answer what we accepted.
                    self.state = (
                        next_state(self.our_role, self.state, RECEIVE, Kind.CLOSE) or self.state
                    )
                    return ConnectionClosed()
                return NEED_DATA
            if line is TOO_LONG:
                event = self._too_long()
                if event is not None:
                    return event
                continue
            assert isinstance(line, bytes)
            # JSON's whitespace only (bytes.strip() would take \x0b and \x0c too).
            if not line or (line[0] in _BLANK and not line.strip(b" \t\r\n")):
                if self.newline_framing:
                    continue  # a blank line (strip copies: only when it may be one)
                # A whole message that is blank is no JSON at all: refuse it.
                raise RemoteProtocolError(
                    "parse error: empty message",
                    code=PARSE_ERROR,
                    event_hint=rpc.error_reply(None, PARSE_ERROR, "parse error: empty message"),
                )
            try:
                obj = rpc.decode(line)
            except RemoteProtocolError as exc:
                raise self._parse_error(line, exc) from None
            if type(obj) is list:
                self._split_batch(obj)
                continue
            event = self._handle(obj)
            if event is not None:
                return event

    def _parse_error(self, line: bytes, exc: RemoteProtocolError) -> RemoteProtocolError:
        """The refusal of a message that is not JSON: -32700, answering the id of the
        request it was meant to be when its first bytes show one (a truncated
        ``tools/call``), else id null."""
        # Spec: JSON-RPC 2.0 section 5: "If there was an error in detecting the id in
        # the Request object (e.g. Parse error/Invalid Request), it MUST be Null."
        rid, is_request = rpc.peek(line[:PEEK_BYTES])
        if rid is None or not is_request:
            return exc
        return self._refuse(rid, exc.code, exc.message)

    def _next_message(self) -> bytes | object:
        """The next whole message fed with ``receive_message`` (or TOO_LONG)."""
        data = self._messages.popleft()
        if len(data) > self.max_message_bytes:
            self._lines.too_long_prefix = data[:PEEK_BYTES]
            return TOO_LONG
        return data

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
            The serialized message (with its newline when ``newline_framing``), or
            ``b""`` when the spec says to send nothing: a response to a request the
            peer cancelled, or a cancellation of a request already answered.

        Raises:
            LocalProtocolError: the event breaks the protocol; nothing is sent and the
                connection is unchanged.
        """
        if self.state is _CLOSED:
            raise LocalProtocolError("connection is closed")
        # Each helper checks everything, encodes, and only then changes the state, so a
        # refusal leaves the connection as it was.
        if type(event) is Request:
            return self._send_request(event, now, timeout)
        if type(event) is Response:
            data = self._send_response(event)
            return self._batched(event, data) if self._batch_of else data
        if type(event) is ErrorResponse:
            data = self._send_error(event)
            return self._batched(event, data) if self._batch_of or self._refusals else data
        if type(event) is Notification:
            return self._send_notification(event)
        raise LocalProtocolError(f"cannot send {type(event).__name__}")

    def close(self) -> None:
        """Mark the connection closed on our side: nothing more is sent or read.

        A driver calls it when it stops, e.g. after end of input once the requests it
        accepted are answered (state CLOSING).  Idempotent.
        """
        self.state = State.CLOSED

    def send_failed(self) -> None:
        """Tell the core that writing the bytes of a ``send`` failed or was cancelled.

        The byte stream may hold half a message, so the connection is closed: later
        ``send`` calls raise LocalProtocolError.
        """
        self.state = State.CLOSED

    @property
    def has_data_to_send(self) -> bool:
        """True when :meth:`data_to_send` has bytes."""
        return bool(self._outbox)

    def data_to_send(self) -> bytes:
        """Bytes the connection produced by itself, to write now; ``b""`` when none.

        Only a batch makes any: when the peer cancels the last request of a batch whose
        other replies are held, the array of those replies is here (after the
        :class:`RequestCancelled` event).  A driver calls it after handling that event.

        Source: JSON-RPC 2.0 section 6 (the replies to a batch go back as one array,
        once all its requests are processed, and never as an empty one); batches are
        received only in protocol version 2025-03-26 (see :mod:`._batch`).
        """
        if not self._outbox:
            return b""
        data = b"".join(self._outbox)
        self._outbox.clear()
        return data

    def next_deadline(self) -> float | None:
        """The time (same clock as ``now``) at which ``handle_timeout`` must be called,
        or None when no request we sent has a timeout."""
        return self._inflight.next_deadline()

    def handle_timeout(self, now: float) -> list[bytes]:
        """Expire requests whose deadline has passed.

        For each one, a :class:`RequestTimedOut` event is queued for ``next_event`` and
        a ``notifications/cancelled`` is produced (never for ``initialize``).

        Returns:
            The messages to write (the cancellation notifications), one bytes object
            each, framed like ``send``'s output; often empty.

        Source: 2025-06-18/basic/lifecycle#timeouts.
        """
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
            message = {
                "jsonrpc": "2.0",
                "method": _CANCELLED,
                "params": {"requestId": req.id, "reason": "timed out"},
            }
            out.append(rpc.encode(message, newline=self.newline_framing))
        return out

"""MCP over one open WebSocket, sans-IO, on wsproto: what each frame means to MCP.

Theory of operation
-------------------
wsproto does RFC 6455 itself: frames, masking, the UTF-8 of text, the states of the
closing handshake.  MCP's rules for the transport (docs/websocket.md; a custom transport,
2025-06-18/basic/transports#custom-transports) sit on top of it here, in h11's shape:

* bytes in: :meth:`WebSocketConnection.receive_data` (``b""`` at the end of the stream);
* events out: :meth:`~WebSocketConnection.next_event` gives a whole :class:`Message`,
  :data:`PONG` (the peer answered our keepalive ping), :data:`NEED_DATA`, or
  :data:`CLOSED` (nothing more will arrive: stop reading);
* bytes out: :meth:`~WebSocketConnection.send` frames one message; the control frames
  the connection decides on itself (a pong, a keepalive ping, a close frame) wait in
  :meth:`~WebSocketConnection.data_to_send`, in the order they must be written.

What each thing the peer sends means:

==========================  =============================================================
a text message              one MCP message, its frames joined; counted while they
                            arrive: above ``max_message_bytes``, close 1009 before
                            anything past the limit is kept
a binary message            close 1003: MCP messages are text
frames wsproto cannot parse close with the code wsproto names (1007 bad UTF-8, 1002);
                            its decoder is unusable after that, so: :data:`CLOSED`
a ping                      a pong (only the latest, when several wait: RFC 6455 5.5.3)
a pong                      :data:`PONG` when it carries our keepalive ping's payload
a close frame               answered with the same code (RFC 6455 section 5.5.1)
the end of the stream       1006: the connection was lost without a close frame
==========================  =============================================================

Input ends (:attr:`~WebSocketConnection.eof_reason` says why, in words the session
shows in ``SessionClosed``) as soon as either side closes; what arrives later is
dropped.  Every buffer is bounded: the message being received by ``max_message_bytes``,
the control frames waiting to be sent by one of each kind (a pong, a ping, a close).

Time is an argument, as in aioquic.  The keepalive sends a ping every ``ping_interval``
seconds, one at a time; without its pong ``ping_timeout`` seconds later it closes with
1011 and sets :attr:`~WebSocketConnection.keepalive_failed` (the driver then drops the
connection: a peer that answers no ping will not answer a close frame either).  The
driver calls :meth:`~WebSocketConnection.handle_timeout` once at the start, then at each
:meth:`~WebSocketConnection.next_deadline`, which a :data:`PONG` may bring forward.
"""

from __future__ import annotations

import enum
from typing import Final, Literal

import attrs
from wsproto import WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import BytesMessage, CloseConnection, Event, Ping, Pong, TextMessage
from wsproto.frame_protocol import CloseReason

from ._errors import LocalProtocolError
from ._framing import DEFAULT_MAX_MESSAGE_BYTES

__all__ = [
    "CLOSED",
    "CLOSE_MESSAGE_TOO_BIG",
    "CLOSE_NORMAL",
    "CLOSE_PING_TIMEOUT",
    "CLOSE_PROTOCOL_ERROR",
    "CLOSE_UNSUPPORTED_DATA",
    "DEFAULT_CLOSE_TIMEOUT",
    "DEFAULT_HANDSHAKE_TIMEOUT",
    "DEFAULT_PATH",
    "DEFAULT_PING_INTERVAL",
    "DEFAULT_PING_TIMEOUT",
    "NEED_DATA",
    "PONG",
    "STOP_SLACK",
    "SUBPROTOCOL",
    "Message",
    "Signal",
    "WebSocketConnection",
    "describe",
]

SUBPROTOCOL: Final = "mcp"
"""The ``Sec-WebSocket-Protocol`` both sides must agree on."""
DEFAULT_PATH: Final = "/mcp"
"""The endpoint's path unless told otherwise."""
DEFAULT_PING_INTERVAL: Final = 20.0
"""Seconds between keepalive pings."""
DEFAULT_PING_TIMEOUT: Final = 20.0
"""Seconds a pong may take (then close 1011)."""
DEFAULT_CLOSE_TIMEOUT: Final = 5.0
"""Seconds for the closing handshake and the peer's FIN (the driver's bound)."""
DEFAULT_HANDSHAKE_TIMEOUT: Final = 10.0
"""Seconds for the opening handshake (the client's: the TCP connect as well)."""
STOP_SLACK: Final = 2.0
"""Seconds past the requests' grace that a server's graceful stop gives its connections
(their closing handshakes) before it cancels them."""

# The close codes we send (RFC 6455 section 7.4.1); wsproto's CloseReason names them all.
CLOSE_NORMAL: Final = CloseReason.NORMAL_CLOSURE  # 1000
CLOSE_PROTOCOL_ERROR: Final = CloseReason.PROTOCOL_ERROR  # 1002
CLOSE_UNSUPPORTED_DATA: Final = CloseReason.UNSUPPORTED_DATA  # 1003: MCP messages are text
CLOSE_MESSAGE_TOO_BIG: Final = CloseReason.MESSAGE_TOO_BIG  # 1009
CLOSE_PING_TIMEOUT: Final = CloseReason.INTERNAL_ERROR  # 1011: no pong in time
_LOST: Final = CloseReason.ABNORMAL_CLOSURE  # 1006: never in a frame; wsproto's "EOF"


class Signal(enum.Enum):
    """The events of :meth:`WebSocketConnection.next_event` that carry no data."""

    NEED_DATA = "need data"
    """Read more bytes and give them to ``receive_data``."""
    PONG = "pong"
    """The peer answered our keepalive ping: ``next_deadline`` may be earlier."""
    CLOSED = "closed"
    """Nothing more will arrive: write ``data_to_send()``, stop reading."""


NEED_DATA: Final = Signal.NEED_DATA
PONG: Final = Signal.PONG
CLOSED: Final = Signal.CLOSED


@attrs.frozen
class Message:
    """One MCP message: the whole of one text message."""

    data: bytes
    """Its UTF-8 bytes, unparsed (the MCP core reads them).  Never empty: an empty
    message comes as ``b" "``, which the core answers with a parse error (-32700), since
    ``b""`` means the end of input to a session."""


def describe(code: int, reason: str | None) -> str:
    """``"code 1009 (message too big): reason"``, for log lines and ``eof_reason``."""
    try:
        text = f"code {code} ({CloseReason(code).name.lower().replace('_', ' ')})"
    except ValueError:
        text = f"code {code}"
    return f"{text}: {reason}" if reason else text


class WebSocketConnection:
    """MCP's side of one open WebSocket (either role), on a wsproto connection whose
    opening handshake is over (:mod:`mcp_ref._websocket_handshake` makes them).

    Attributes:
        subprotocol: the negotiated subprotocol (``"mcp"``).
        max_message_bytes: the largest message accepted, in UTF-8 bytes (close 1009).
        ping_interval, ping_timeout: the keepalive's, in seconds (``ping_interval``
            None: no keepalive).
        close_code, close_reason: those of the closing handshake: the peer's when it
            closed first, else ours; 1006 when the connection was lost without one.
        closed_by: ``"local"`` or ``"remote"``: who closed first.
        eof_reason: why input ended (None while it goes on).
        pings_sent: keepalive pings sent so far.
        keepalive_failed: no pong came in time (we closed with 1011).

    Raises:
        ValueError: a limit or an interval that is not positive.
        LocalProtocolError: ``ws`` is not open.

    Source: 2025-06-18/basic/transports#custom-transports.2 (one JSON-RPC message per
    text message, unchanged); RFC 6455.
    """

    def __init__(
        self,
        ws: WSConnection,
        *,
        subprotocol: str = SUBPROTOCOL,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        ping_interval: float | None = DEFAULT_PING_INTERVAL,
        ping_timeout: float = DEFAULT_PING_TIMEOUT,
    ) -> None:
        interval = 1.0 if ping_interval is None else ping_interval
        if min(max_message_bytes, interval, ping_timeout) <= 0:
            raise ValueError("limits and intervals must be positive")
        if ws.state is not ConnectionState.OPEN:
            raise LocalProtocolError(f"the WebSocket is not open ({ws.state.name})")
        self.subprotocol = subprotocol
        self.max_message_bytes = max_message_bytes
        self.ping_interval = ping_interval
        self.ping_timeout = ping_timeout
        self.close_code: int | None = None
        self.close_reason: str | None = None
        self.closed_by: Literal["local", "remote"] | None = None
        self.eof_reason: str | None = None
        self.pings_sent = 0
        self.keepalive_failed = False
        self._ws = ws
        self._parts: list[bytes] = []  # the text message being received
        self._size = 0  # its bytes so far
        self._pong = b""  # the pong to send: only the latest ping's
        self._outgoing = b""  # other control frames to send: a ping, a close frame
        self._decoder_failed = False
        self._lost = False  # the driver lost the stream: nothing can be sent
        self._ping = b""  # the payload of our ping awaiting its pong
        self._ping_sent_at = 0.0
        self._deadline: float | None = None  # the keepalive's next (None: not started)

    @property
    def is_open(self) -> bool:
        """Whether messages may still be sent: neither side has closed, the connection
        is not lost."""
        return self._ws.state is ConnectionState.OPEN and not self._lost

    # ------------------------------------------------------------------ receiving

    def receive_data(self, data: bytes) -> None:
        """Give the connection bytes read from the stream; ``b""`` at its end (a failed
        read too).  Bytes after the closing handshake, after a framing error or after
        the end are dropped."""
        if self._ws.state is not ConnectionState.CLOSED and not self._decoder_failed:
            self._ws.receive_data(data or None)

    def next_event(self) -> Message | Signal:
        """The next event: a :class:`Message`, :data:`PONG`, :data:`NEED_DATA` or
        :data:`CLOSED` (then for good).  Check :meth:`data_to_send` after each call."""
        while not (self._decoder_failed or self._lost):
            event = next(self._ws.events(), None)
            if event is None:
                break
            outcome = self._receive(event)
            if outcome is not None:
                return outcome
        if self._decoder_failed or self._lost or self._ws.state is ConnectionState.CLOSED:
            return CLOSED
        return NEED_DATA

    def _receive(self, event: Event) -> Message | Signal | None:
        if isinstance(event, TextMessage):
            return self._receive_text(event)
        if isinstance(event, BytesMessage):
            self.close(CLOSE_UNSUPPORTED_DATA, "binary messages are not accepted")
        elif isinstance(event, Ping) and self.is_open:
            self._pong = self._ws.send(event.response())
        elif isinstance(event, Pong) and self._ping and event.payload == self._ping:
            self._ping = b""
            self._deadline = self._ping_sent_at + (self.ping_interval or 0.0)  # the next ping
            return PONG
        elif isinstance(event, CloseConnection):
            self._receive_close(event)
        return None

    def _receive_text(self, event: TextMessage) -> Message | None:
        if not self.is_open:
            return None  # we are closing: input has ended
        chunk = event.data.encode("utf-8")
        self._size += len(chunk)
        if self._size > self.max_message_bytes:
            self._parts.clear()
            self.close(CLOSE_MESSAGE_TOO_BIG, f"message larger than {self.max_message_bytes} bytes")
            return None
        self._parts.append(chunk)
        if not event.message_finished:
            return None
        # Spec: 2025-06-18/basic/transports#custom-transports.2
        # "Implementers who choose to support custom transports MUST ensure they preserve the
        # JSON-RPC message format and lifecycle requirements defined by MCP."
        # Spec: 2026-07-28/basic/transports/index#custom-transports.2
        # "Implementers who choose to support custom transports MUST preserve the JSON-RPC message
        # format, the message patterns, and the per-request metadata model."
        message = b"".join(self._parts) or b" "
        self._parts.clear()
        self._size = 0
        return Message(message)

    def _receive_close(self, event: CloseConnection) -> None:
        state = self._ws.state
        if event.code == _LOST:
            self._record(_LOST, None, "remote")
            self._end_input("the connection was lost without a WebSocket close frame (1006)")
        elif state is ConnectionState.REMOTE_CLOSING:
            # The peer closed first: answer with the same code (RFC 6455 section 5.5.1).
            self._record(event.code, event.reason, "remote")
            why = describe(event.code, event.reason)
            self._end_input(f"the peer closed the WebSocket with {why}")
            self._outgoing += self._ws.send(event.response())
        elif state is ConnectionState.OPEN:
            # wsproto could not parse the peer's frames and names the code (1007, 1002);
            # its decoder is unusable from here on.
            self.close(event.code, event.reason or "")
            self._decoder_failed = True
        # else (CLOSED): the peer's answer to our close frame; the handshake is over.

    # -------------------------------------------------------------------- sending

    def send(self, data: bytes) -> bytes:
        """The frame of one text message carrying ``data`` (one MCP message, as the core
        produced it), to write whole.

        Raises:
            LocalProtocolError: the WebSocket is closing or lost (nothing can reach the
                peer any more).
            UnicodeDecodeError: ``data`` is not UTF-8 (the core never produces that).
        """
        if not self.is_open:
            raise LocalProtocolError(f"the WebSocket is closing: {self.eof_reason}")
        return self._ws.send(TextMessage(data=data.decode("utf-8")))

    def close(self, code: int = CLOSE_NORMAL, reason: str = "") -> None:
        """Start the closing handshake: a close frame (``reason`` cut to 123 bytes by
        wsproto) goes to :meth:`data_to_send`, and input ends.  No-op unless open."""
        if not self.is_open:
            return
        self._record(code, reason, "local")
        self._end_input(f"we closed the WebSocket with {describe(code, reason)}")
        self._outgoing += self._ws.send(CloseConnection(code=code, reason=reason or None))

    @property
    def has_data_to_send(self) -> bool:
        """Whether :meth:`data_to_send` would give bytes (a driver may skip its lock)."""
        return bool(self._pong or self._outgoing)

    def data_to_send(self) -> bytes:
        """The control frames decided since the last call, in order (a pong first: a
        close frame is always last); ``b""`` when none."""
        data, self._pong, self._outgoing = self._pong + self._outgoing, b"", b""
        return data

    def connection_lost(self, reason: str) -> None:
        """The driver lost the stream (a write failed, it dropped the connection):
        nothing more is sent or received; input ends with ``reason`` unless it had
        ended already."""
        self._lost = True
        self._end_input(reason)

    # ------------------------------------------------------------------ keepalive

    def next_deadline(self) -> float | None:
        """When :meth:`handle_timeout` is due next (seconds, on the clock the driver
        gives it); None: never (no keepalive, not started, or no longer open)."""
        if self.ping_interval is None or not self.is_open:
            return None
        return self._deadline

    def handle_timeout(self, now: float) -> None:
        """The keepalive at ``now`` (seconds).  The first call starts it: the first ping
        is due ``ping_interval`` later.  At that deadline: a ping (in
        :meth:`data_to_send`), the next due ``ping_interval`` after it once its pong
        came.  At the pong's deadline (``ping_timeout`` after the ping) without it:
        close 1011 and set :attr:`keepalive_failed`.  Early calls do nothing."""
        if self.ping_interval is None or not self.is_open:
            return
        if self._deadline is None:
            self._deadline = now + self.ping_interval
        elif now < self._deadline:
            return
        elif self._ping:
            reason = f"no pong within {self.ping_timeout:g} s"
            self.keepalive_failed = True
            self._end_input(f"keepalive failed: {reason}")
            self.close(CLOSE_PING_TIMEOUT, reason)
        else:
            self.pings_sent += 1
            self._ping = self.pings_sent.to_bytes(8, "big")
            self._outgoing += self._ws.send(Ping(payload=self._ping))
            self._ping_sent_at = now
            self._deadline = now + self.ping_timeout

    # -------------------------------------------------------------------- helpers

    def _record(self, code: int, reason: str | None, by: Literal["local", "remote"]) -> None:
        if self.close_code is None:
            self.close_code, self.close_reason, self.closed_by = code, reason, by

    def _end_input(self, reason: str) -> None:
        if self.eof_reason is None:
            self.eof_reason = reason

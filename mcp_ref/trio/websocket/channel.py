"""The WebSocket connection wrapper: one open WebSocket as a :class:`MessageChannel`.

Theory of operation
-------------------
:class:`WebSocketChannel` owns one wsproto :class:`~wsproto.WSConnection` (already past
the opening handshake, which :mod:`.server` and :mod:`.client` run)
and the byte stream under it.  :meth:`WebSocketChannel.run` is the one reader: it feeds
wsproto what arrives, answers pings and close frames, and pushes each whole *text*
message to the session from this task (``Session.push``: a burst read at once is
dispatched in one step; a full session stops the reading).  Without a session (tests)
messages wait in a bounded inbox for ``receive``.  Every write (``send``, pongs, pings,
close frames) goes through one lock, so a control frame never splits a data frame.

Rules kept here (see :mod:`mcp_ref.trio.websocket` for the transport as a whole): binary messages
are refused with 1003, messages over ``max_message_bytes`` with 1009 (counted while the
frames arrive, never buffered past the limit), invalid UTF-8 with 1007, framing
violations with 1002; a pong late by ``ping_timeout`` closes with 1011; the closing
handshake is bounded by ``close_timeout``, then TCP is half-closed and read to the
peer's FIN; a connection lost without a close frame ends input with "1006".

The constants of the transport (subprotocol, default path, default timeouts and sizes)
live here too, as both sides share them; the close codes in :mod:`.codes`.
"""

from __future__ import annotations

import logging
import math
from typing import Any, Final, Literal

import trio
from wsproto import WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (
    BytesMessage,
    CloseConnection,
    Ping,
    Pong,
    TextMessage,
)
from wsproto.utilities import LocalProtocolError as WSLocalProtocolError

from ..._framing import DEFAULT_MAX_MESSAGE_BYTES
from ...events import RequestId
from .._outgoing import SessionClosed
from .._session_api import Session
from .codes import (
    CLOSE_ABNORMAL,
    CLOSE_INVALID_DATA,
    CLOSE_MESSAGE_TOO_BIG,
    CLOSE_NORMAL,
    CLOSE_PING_TIMEOUT,
    CLOSE_PROTOCOL_ERROR,
    CLOSE_UNSUPPORTED_DATA,
    describe,
)

__all__ = [
    "CLOSE_ABNORMAL",
    "CLOSE_INVALID_DATA",
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
    "MAX_HANDSHAKE_BYTES",
    "MAX_REJECT_BODY",
    "RECEIVE_SIZE",
    "SUBPROTOCOL",
    "WebSocketChannel",
]

log = logging.getLogger("mcp_ref.trio.websocket")

SUBPROTOCOL: Final = "mcp"
"""The WebSocket subprotocol (``Sec-WebSocket-Protocol``) both sides must agree on."""
DEFAULT_PATH: Final = "/mcp"
"""The path the server accepts upgrades on, unless told otherwise."""

RECEIVE_SIZE: Final = 65536
"""Bytes asked for per ``receive_some``."""
MAX_HANDSHAKE_BYTES: Final = 16384
"""The largest HTTP request or response head accepted in a handshake, in bytes."""
MAX_REJECT_BODY: Final = 65536
"""The most bytes of a refusal's body a client keeps (for :class:`HandshakeError`)."""
DEFAULT_PING_INTERVAL: Final = 20.0
"""Seconds between keepalive pings."""
DEFAULT_PING_TIMEOUT: Final = 20.0
"""Seconds a pong may take before the connection is closed (1011)."""
DEFAULT_CLOSE_TIMEOUT: Final = 5.0
"""Seconds the closing handshake (and the wait for the peer's FIN) may take."""
DEFAULT_HANDSHAKE_TIMEOUT: Final = 10.0
"""Seconds the opening handshake may take (client: including the TCP connect)."""
_INBOX_SIZE: Final = 1  # whole messages waiting for receive(); the reader waits when full


class WebSocketChannel:
    """A ``framing="messages"`` :class:`~mcp_ref.trio.MessageChannel` over one open
    WebSocket.  Made by :func:`websocket_client_handshake` /
    :func:`websocket_server_handshake` (or the ``open_*``/``serve_*`` functions that call
    them); :meth:`run` must be running for anything to arrive.

    Attributes:
        subprotocol: the negotiated subprotocol (``"mcp"``).
        max_message_bytes: the largest message accepted (bytes of UTF-8).
        ping_interval: seconds between our pings (None: no keepalive).
        ping_timeout: seconds a pong may take.
        close_timeout: seconds the closing handshake may take.
        close_code, close_reason: the close code and reason of the closing handshake
            (the peer's if it closed first, else ours); 1006 when the connection was
            lost without one; None while open.
        closed_by: ``"local"`` or ``"remote"`` (who closed first), None while open.
        eof_reason: why input ended (the session puts it in ``SessionClosed``).

    Source: 2025-06-18/basic/transports#custom-transports.2 (JSON-RPC messages, one per
    text message, unchanged).
    """

    framing: Literal["lines", "messages"] = "messages"

    def __init__(
        self,
        stream: trio.abc.Stream,
        ws: WSConnection,
        *,
        subprotocol: str | None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        ping_interval: float | None = DEFAULT_PING_INTERVAL,
        ping_timeout: float = DEFAULT_PING_TIMEOUT,
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
    ) -> None:
        if max_message_bytes < 1:
            raise ValueError("max_message_bytes must be positive")
        if ping_interval is not None and ping_interval <= 0:
            raise ValueError("ping_interval must be positive (or None)")
        if ping_timeout <= 0 or close_timeout <= 0:
            raise ValueError("ping_timeout and close_timeout must be positive")
        self.stream = stream
        """The underlying byte stream (a ``trio.SocketStream`` in production)."""
        self.subprotocol = subprotocol
        self.max_message_bytes = max_message_bytes
        self.ping_interval = ping_interval
        self.ping_timeout = ping_timeout
        self.close_timeout = close_timeout
        self.close_code: int | None = None
        self.close_reason: str | None = None
        self.closed_by: Literal["local", "remote"] | None = None
        self.eof_reason: str | None = None
        self.pings_sent = 0
        """Keepalive pings sent so far (for tests)."""
        self._ws = ws
        self._send_lock = trio.Lock()
        self._inbox_send, self._inbox = trio.open_memory_channel[bytes](_INBOX_SIZE)
        self._parts: list[bytes] = []
        self._size = 0
        self._dropping = False  # inside a refused message: discard its remaining frames
        self._broken = False  # wsproto's decoder failed: only drain raw bytes from now on
        self._eof = False
        self._ping_payload: bytes | None = None
        self._pong = trio.Event()
        self._closing = trio.CancelScope()  # gets a deadline once closing starts
        self._done = trio.Event()
        self._running = False
        self._session: Session | None = None  # set by attach_session: input is pushed

    # ------------------------------------------------------------ MessageChannel

    def attach_session(self, session: Session) -> None:
        """Push input to ``session`` (``receive`` then only reports its end)."""
        self._session = session

    async def receive(self) -> bytes:
        """The next whole message (UTF-8 JSON bytes); ``b""`` once input ended."""
        try:
            return await self._inbox.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            return b""

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """Send one message as one text message (``related_request_id`` is ignored).

        Raises:
            ValueError: ``data`` is not UTF-8 (the core never produces that).
            trio.BrokenResourceError: the WebSocket is closing or the connection failed.
            trio.ClosedResourceError: the channel was closed.
        """
        text = data.decode("utf-8")
        # Spec: 2025-06-18/basic/transports#custom-transports.2
        # "Implementers who choose to support custom transports MUST ensure they preserve the
        # JSON-RPC message format and lifecycle requirements defined by MCP."
        await self._send_event(TextMessage(data=text), control=False)

    async def aclose(self) -> None:
        """Close the WebSocket with code 1000 (if still open), wait for the closing
        handshake and the end of :meth:`run` (at most ``close_timeout`` plus a little),
        then drop the connection.  Idempotent; never raises for a broken connection."""
        if self._done.is_set():
            return
        if self._ws.state is ConnectionState.OPEN:
            await self._local_close(CLOSE_NORMAL, "session ended")
        if self._running:
            with trio.move_on_after(self.close_timeout + 1.0):
                await self._done.wait()
        if not self._done.is_set():
            await self.abort()

    # ------------------------------------------------------------------ extras

    async def close(self, code: int = CLOSE_NORMAL, reason: str = "") -> None:
        """Start the closing handshake with ``code`` and ``reason`` (at most 123 bytes
        of UTF-8 are sent) and end input; :meth:`run` completes it.  No-op when closing
        already."""
        await self._local_close(code, reason)

    async def abort(self) -> None:
        """Drop the TCP connection at once, without a close frame (the peer sees 1006)."""
        self._end_input("the connection was dropped")
        self._closing.cancel()
        await trio.aclose_forcefully(self.stream)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Read frames and send keepalive pings until the connection is over; then
        finish the closing handshake and close the stream.  Start it with
        ``nursery.start``; cancelling it drops the connection."""
        self._running = True
        try:
            with self._closing:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._keepalive)
                    task_status.started()
                    await self._read_frames()
                    nursery.cancel_scope.cancel()
                await self._drain()
        finally:
            self._end_input("the connection ended")
            with trio.CancelScope(shield=True):
                await trio.aclose_forcefully(self.stream)
            self._done.set()

    # ------------------------------------------------------------------ reading

    async def _read_frames(self) -> None:
        ws = self._ws
        # Frames that arrived with the handshake are parsed before the first read.
        await self._handle_events()
        while ws.state is not ConnectionState.CLOSED and not self._eof and not self._broken:
            try:
                data = await self.stream.receive_some(RECEIVE_SIZE)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            if not data:
                self._eof = True
                ws.receive_data(None)  # wsproto reports 1006
            elif ws.state is ConnectionState.REMOTE_CLOSING:
                continue  # data after the peer's close frame: ignored (RFC 6455 5.5.1)
            else:
                ws.receive_data(bytes(data))
            await self._handle_events()

    async def _handle_events(self) -> None:
        for event in self._ws.events():
            if self._broken:
                return
            if isinstance(event, TextMessage):
                await self._on_text(event)
            elif isinstance(event, BytesMessage):
                if not self._dropping:
                    await self._local_close(
                        CLOSE_UNSUPPORTED_DATA,
                        "binary messages are not accepted: send each message as text",
                    )
                self._dropping = not event.message_finished
            elif isinstance(event, Ping):
                if self._ws.state is ConnectionState.OPEN:
                    await self._send_event(event.response(), control=True)
            elif isinstance(event, Pong):
                if event.payload == self._ping_payload:
                    self._pong.set()
            elif isinstance(event, CloseConnection):
                await self._on_close(event)

    async def _on_text(self, event: TextMessage) -> None:
        if self._dropping or self._ws.state is not ConnectionState.OPEN:
            self._dropping = not event.message_finished
            return
        chunk = event.data.encode("utf-8")
        self._size += len(chunk)
        if self._size > self.max_message_bytes:
            self._parts.clear()
            self._size = 0
            self._dropping = not event.message_finished
            await self._local_close(
                CLOSE_MESSAGE_TOO_BIG, f"message larger than {self.max_message_bytes} bytes"
            )
            return
        self._parts.append(chunk)
        if event.message_finished:
            # An empty text message is a message, not the end of input (which b"" means
            # to the session): it goes on as one space, which the connection refuses as
            # a parse error (-32700) like any other message that is not JSON.
            message = b"".join(self._parts) or b" "
            self._parts.clear()
            self._size = 0
            try:
                if self._session is not None:
                    await self._session.push(message)  # waits while the session is full
                else:
                    await self._inbox_send.send(message)  # bounded: waits for receive()
            except (SessionClosed, trio.ClosedResourceError, trio.BrokenResourceError):
                pass  # input already ended (we are closing)

    async def _on_close(self, event: CloseConnection) -> None:
        state = self._ws.state
        if self._eof:
            self._record(CLOSE_ABNORMAL, None, "remote")
            self._end_input("the connection was lost without a WebSocket close frame (1006)")
        elif state is ConnectionState.REMOTE_CLOSING:
            # The peer closed first: answer with the same code, as RFC 6455 5.5.1 asks.
            self._record(event.code, event.reason, "remote")
            self._end_input(
                f"the peer closed the WebSocket with {describe(event.code, event.reason)}"
            )
            self._start_closing_timer()
            await self._send_event(event.response(), control=True)
        elif state is ConnectionState.CLOSED:
            pass  # the peer's answer to our close frame: the handshake is complete
        else:
            # wsproto could not parse the peer's frames (bad UTF-8: 1007, else 1002): we
            # fail the connection; the decoder is unusable from here on.
            await self._local_close(event.code, event.reason or "")
            self._broken = True

    # ------------------------------------------------------------------ writing

    async def _send_event(self, event: Any, *, control: bool) -> None:
        """Write one wsproto event under the lock.  Control frames are bounded by
        ``close_timeout`` (data frames by the session's ``send_timeout``); a write that
        fails drops the connection."""
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            self._send_lock.acquire_nowait()  # free: no schedule point (send_all has one)
        except trio.WouldBlock:
            await self._send_lock.acquire()
        try:
            try:
                data = self._ws.send(event)
            except WSLocalProtocolError as exc:
                if control:
                    return  # e.g. a pong after the close started: nothing to do
                raise trio.BrokenResourceError(f"the WebSocket is closing: {exc}") from None
            ok = False
            try:
                if control:
                    with trio.move_on_after(self.close_timeout):
                        await self.stream.send_all(data)
                        ok = True
                else:
                    await self.stream.send_all(data)
                    ok = True
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                if not control:
                    raise
            finally:
                if not ok:
                    # Half a frame may be on the wire: the connection cannot go on.
                    self._broken = True
                    self._end_input("writing to the WebSocket failed")
                    self._closing.cancel()
        finally:
            self._send_lock.release()

    async def _local_close(self, code: int, reason: str) -> None:
        """Start the closing handshake from our side and end input."""
        if self._ws.state is not ConnectionState.OPEN:
            return
        self._record(code, reason, "local")
        if code != CLOSE_NORMAL:
            log.info("closing the WebSocket: %s", describe(code, reason))
        self._end_input(f"we closed the WebSocket with {describe(code, reason)}")
        self._start_closing_timer()
        await self._send_event(CloseConnection(code=code, reason=reason or None), control=True)

    def _record(self, code: int, reason: str | None, by: Literal["local", "remote"]) -> None:
        if self.close_code is None:
            self.close_code, self.close_reason, self.closed_by = code, reason, by

    def _start_closing_timer(self) -> None:
        if math.isinf(self._closing.deadline):
            self._closing.deadline = trio.current_time() + self.close_timeout

    def _end_input(self, reason: str) -> None:
        if self.eof_reason is None:
            self.eof_reason = reason
        self._inbox_send.close()

    async def _drain(self) -> None:
        """Half-close, then read and discard until the peer's FIN (bounded by the
        closing deadline), so our close frame is not destroyed by a TCP reset."""
        self._start_closing_timer()
        if self._eof:
            return
        if isinstance(self.stream, trio.abc.HalfCloseableStream):
            async with self._send_lock:
                try:
                    await self.stream.send_eof()
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return
        while True:
            try:
                if not await self.stream.receive_some(RECEIVE_SIZE):
                    return
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return

    # ---------------------------------------------------------------- keepalive

    async def _keepalive(self) -> None:
        if self.ping_interval is None:
            return
        while True:
            await trio.sleep(self.ping_interval)
            if self._ws.state is not ConnectionState.OPEN:
                return
            self.pings_sent += 1
            self._ping_payload = self.pings_sent.to_bytes(8, "big")
            self._pong = trio.Event()
            await self._send_event(Ping(payload=self._ping_payload), control=True)
            with trio.move_on_after(self.ping_timeout):
                await self._pong.wait()
                continue
            if self._ws.state is not ConnectionState.OPEN:
                return
            reason = f"no pong within {self.ping_timeout:g} s"
            await self._local_close(CLOSE_PING_TIMEOUT, reason)
            # The peer is not answering: do not wait for its close frame.
            self.eof_reason = f"keepalive failed: {reason}"
            await self.abort()
            return

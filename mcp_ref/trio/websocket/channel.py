"""One open WebSocket, either role, as the session's ``"messages"`` channel.

Theory of operation
-------------------
wsproto does the protocol work (frames, masking, UTF-8, the close handshake's states);
this module only moves its bytes.  :meth:`WebSocketChannel.run` is the one reader: read
the stream, feed wsproto, act on each event, repeat.  Text frames are joined into whole
messages, counted while they arrive (over ``max_message_bytes``: close 1009 before
anything is kept past the limit), and handed to the session (``Session.push``; without
a session, to :meth:`~WebSocketChannel.receive` through a one-message inbox, so a slow
consumer stops the reading).  A binary message closes with 1003, frames wsproto cannot
parse with the code it names (1007, 1002); pings are answered; the peer's close is
answered with its code.  Beside the reader, a keepalive task pings every
``ping_interval`` and closes with 1011 if no pong comes within ``ping_timeout``.

Every write holds one lock, so a control frame never splits a data frame.  Input ends
(``receive`` gives ``b""``, ``eof_reason`` says why) as soon as either side closes; then
:meth:`~WebSocketChannel.run` gets at most ``close_timeout`` to finish: the peer's close
frame, our half-close, the peer's FIN (so our close frame is not lost to a TCP reset).
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Final, Literal

import trio
from wsproto import WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import BytesMessage, CloseConnection, Event, Ping, Pong, TextMessage
from wsproto.frame_protocol import CloseReason
from wsproto.utilities import LocalProtocolError as WSLocalProtocolError

from ..._framing import DEFAULT_MAX_MESSAGE_BYTES
from ...events import RequestId
from .._outgoing import SessionClosed
from .._session_api import Session

__all__ = ["SUBPROTOCOL", "WebSocketChannel", "describe", "running"]

log = logging.getLogger("mcp_ref.trio.websocket")

SUBPROTOCOL: Final = "mcp"  # the Sec-WebSocket-Protocol both sides must agree on
DEFAULT_PATH: Final = "/mcp"
RECEIVE_SIZE: Final = 65536  # bytes per receive_some
DEFAULT_PING_INTERVAL: Final = 20.0  # seconds between keepalive pings
DEFAULT_PING_TIMEOUT: Final = 20.0  # seconds a pong may take (then close 1011)
DEFAULT_CLOSE_TIMEOUT: Final = 5.0  # seconds for the closing handshake and the peer's FIN
DEFAULT_HANDSHAKE_TIMEOUT: Final = 10.0  # seconds for the upgrade (client: and the connect)

# The close codes we send (RFC 6455 section 7.4.1); wsproto's CloseReason names them all.
CLOSE_NORMAL: Final = CloseReason.NORMAL_CLOSURE  # 1000
CLOSE_PROTOCOL_ERROR: Final = CloseReason.PROTOCOL_ERROR  # 1002
CLOSE_UNSUPPORTED_DATA: Final = CloseReason.UNSUPPORTED_DATA  # 1003: MCP messages are text
CLOSE_MESSAGE_TOO_BIG: Final = CloseReason.MESSAGE_TOO_BIG  # 1009
CLOSE_PING_TIMEOUT: Final = CloseReason.INTERNAL_ERROR  # 1011: no pong in time


def describe(code: int, reason: str | None) -> str:
    """``"code 1009 (message too big): reason"``, for log lines and ``eof_reason``."""
    try:
        text = f"code {code} ({CloseReason(code).name.lower().replace('_', ' ')})"
    except ValueError:
        text = f"code {code}"
    return f"{text}: {reason}" if reason else text


class WebSocketChannel:
    """A ``framing="messages"`` :class:`~mcp_ref.trio.MessageChannel` over one open
    WebSocket (either role).  Made by the handshakes (:mod:`.server`, :mod:`.client`);
    :meth:`run` must be running for anything to arrive.

    Attributes:
        stream: the byte stream under the WebSocket.
        subprotocol: the negotiated subprotocol (``"mcp"``).
        max_message_bytes, ping_interval, ping_timeout, close_timeout: as given (bytes
            of UTF-8; seconds; ``ping_interval=None``: no keepalive).
        close_code, close_reason: those of the closing handshake (the peer's when it
            closed first, else ours); 1006 when the connection was lost without one.
        closed_by: ``"local"`` or ``"remote"``: who closed first.
        eof_reason: why input ended (the session puts it in ``SessionClosed``).
        pings_sent: keepalive pings sent so far.

    Raises:
        ValueError: a limit or timeout that is not positive.

    Source: 2025-06-18/basic/transports#custom-transports.2 (one JSON-RPC message per
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
        interval = 1.0 if ping_interval is None else ping_interval
        if min(max_message_bytes, interval, ping_timeout, close_timeout) <= 0:
            raise ValueError("limits and timeouts must be positive")
        self.stream = stream
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
        self._ws = ws
        self._lock = trio.Lock()
        self._inbox_send, self._inbox = trio.open_memory_channel[bytes](1)
        self._session: Session | None = None
        self._parts: list[bytes] = []  # the message being received
        self._size = 0
        self._ping = b""
        self._pong = trio.Event()
        self._eof = False  # the peer's FIN (or a failed read)
        self._stop_reading = False  # wsproto's decoder failed: only the drain is left
        self._scope = trio.CancelScope()  # run's; a deadline once closing starts
        self._running = False
        self._done = trio.Event()

    # ------------------------------------------------------------ MessageChannel

    def attach_session(self, session: Session) -> None:
        """Push input to ``session``; ``receive`` then only reports its end."""
        self._session = session

    async def receive(self) -> bytes:
        """The next whole message (UTF-8 JSON bytes); ``b""`` once input ended."""
        try:
            return await self._inbox.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            return b""

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """Send ``data`` as one text message (``related_request_id`` is not used).

        Raises:
            UnicodeDecodeError: ``data`` is not UTF-8 (the core never produces that).
            trio.BrokenResourceError: the WebSocket is closing, or the write failed.
            trio.ClosedResourceError: the stream was closed.
        """
        # Spec: 2025-06-18/basic/transports#custom-transports.2
        # "Implementers who choose to support custom transports MUST ensure they preserve the
        # JSON-RPC message format and lifecycle requirements defined by MCP."
        await self._write(TextMessage(data=data.decode("utf-8")))

    async def aclose(self) -> None:
        """Close with 1000 (if open), wait for :meth:`run` to finish the closing
        handshake (``close_timeout`` plus 1 s at most), then drop the connection.
        Idempotent; never raises for a broken connection."""
        await self.close(CLOSE_NORMAL, "session ended")
        if self._running:
            with trio.move_on_after(self.close_timeout + 1.0):
                await self._done.wait()
        if not self._done.is_set():
            await self.abort()

    async def close(self, code: int = CLOSE_NORMAL, reason: str = "") -> None:
        """Send a close frame (``reason`` cut to 123 bytes by wsproto) and end input;
        :meth:`run` completes the handshake.  No-op unless the WebSocket is open."""
        if self._ws.state is not ConnectionState.OPEN:
            return
        self._record(code, reason, "local")
        if code != CLOSE_NORMAL:
            log.info("closing the WebSocket: %s", describe(code, reason))
        self._end_input(f"we closed the WebSocket with {describe(code, reason)}")
        await self._write(CloseConnection(code=code, reason=reason or None), control=True)

    async def abort(self) -> None:
        """Drop the connection at once, without a close frame (the peer sees 1006)."""
        self._end_input("the connection was dropped")
        self._scope.cancel()
        await trio.aclose_forcefully(self.stream)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Read and keep alive until the connection is over, drain, close the stream.
        Start it with ``nursery.start``; cancelling it drops the connection."""
        self._running = True
        try:
            with self._scope:
                async with trio.open_nursery() as nursery:
                    if self.ping_interval is not None:
                        nursery.start_soon(self._keepalive, self.ping_interval)
                    task_status.started()
                    await self._read()
                    nursery.cancel_scope.cancel()
                await self._drain()
        finally:
            self._end_input("the connection ended")
            with trio.CancelScope(shield=True):
                await trio.aclose_forcefully(self.stream)
            self._done.set()

    # ------------------------------------------------------------------ reading

    async def _read(self) -> None:
        """The reader loop, until the closing handshake is over or the connection lost
        (wsproto is in state CLOSED), or wsproto's decoder failed."""
        ws = self._ws
        while True:
            # The first pass takes the frames that came with the handshake.
            for event in ws.events():
                await self._on_event(event)
                if self._stop_reading:
                    return
            if ws.state is ConnectionState.CLOSED:
                return
            try:
                data = bytes(await self.stream.receive_some(RECEIVE_SIZE))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            self._eof = not data
            # After the peer's close frame wsproto ignores what follows (RFC 6455 5.5.1);
            # at EOF it reports 1006.
            ws.receive_data(data or None)

    async def _on_event(self, event: Event) -> None:
        if isinstance(event, TextMessage):
            await self._on_text(event)
        elif isinstance(event, BytesMessage):
            await self.close(CLOSE_UNSUPPORTED_DATA, "binary messages are not accepted")
        elif isinstance(event, Ping):
            await self._write(event.response(), control=True)
        elif isinstance(event, Pong):
            if event.payload == self._ping:
                self._pong.set()
        elif isinstance(event, CloseConnection):
            await self._on_close(event)

    async def _on_close(self, event: CloseConnection) -> None:
        state = self._ws.state
        if self._eof:
            self._record(event.code, None, "remote")
            self._end_input("the connection was lost without a WebSocket close frame (1006)")
        elif state is ConnectionState.REMOTE_CLOSING:
            # The peer closed first: answer with the same code (RFC 6455 5.5.1).
            self._record(event.code, event.reason, "remote")
            why = describe(event.code, event.reason)
            self._end_input(f"the peer closed the WebSocket with {why}")
            await self._write(event.response(), control=True)
        elif state is ConnectionState.OPEN:
            # wsproto could not parse the peer's frames and names the code (1007, 1002);
            # its decoder is unusable from here on.
            await self.close(event.code, event.reason or "")
            self._stop_reading = True
        # else CLOSED: the peer's answer to our close frame.

    async def _on_text(self, event: TextMessage) -> None:
        if self._ws.state is not ConnectionState.OPEN:
            return  # closing: input has ended
        chunk = event.data.encode("utf-8")
        self._size += len(chunk)
        if self._size > self.max_message_bytes:
            self._parts.clear()
            limit = self.max_message_bytes
            await self.close(CLOSE_MESSAGE_TOO_BIG, f"message larger than {limit} bytes")
            return
        self._parts.append(chunk)
        if not event.message_finished:
            return
        # An empty message is not the end of input (b"" to the session): it goes on as
        # one space, which the core answers with a parse error (-32700).
        message = b"".join(self._parts) or b" "
        self._parts.clear()
        self._size = 0
        try:
            if self._session is not None:
                await self._session.push(message)  # waits while the session is full
            else:
                await self._inbox_send.send(message)  # waits for receive()
        except (SessionClosed, trio.ClosedResourceError, trio.BrokenResourceError):
            pass  # input has ended: we are closing

    # ------------------------------------------------------------------ writing

    async def _write(self, event: Event, *, control: bool = False) -> None:
        """Write one event under the lock.  Data frames are bounded by the session's
        ``send_timeout``, control frames by ``close_timeout`` (and dropped when wsproto's
        state no longer allows them); a write that fails or times out drops the
        connection, since half a frame may be on the wire."""
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            self._lock.acquire_nowait()  # free: no schedule point (send_all has one)
        except trio.WouldBlock:
            await self._lock.acquire()
        try:
            try:
                data = self._ws.send(event)
            except WSLocalProtocolError as exc:
                if control:
                    return
                raise trio.BrokenResourceError(f"the WebSocket is closing: {exc}") from None
            written = False
            try:
                if not control:
                    await self.stream.send_all(data)
                    written = True
                else:
                    if isinstance(event, CloseConnection):
                        self._start_deadline()
                    with trio.move_on_after(self.close_timeout):
                        await self.stream.send_all(data)
                        written = True
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                if not control:
                    raise
            finally:
                if not written:
                    self._end_input("writing to the WebSocket failed")
                    self._scope.cancel()
        finally:
            self._lock.release()

    def _record(self, code: int, reason: str | None, by: Literal["local", "remote"]) -> None:
        if self.close_code is None:
            self.close_code, self.close_reason, self.closed_by = code, reason, by

    def _start_deadline(self) -> None:
        if math.isinf(self._scope.deadline):
            self._scope.deadline = trio.current_time() + self.close_timeout

    def _end_input(self, reason: str) -> None:
        if self.eof_reason is None:
            self.eof_reason = reason
        self._inbox_send.close()

    async def _drain(self) -> None:
        """Half-close, then discard what comes until the peer's FIN (within the closing
        deadline), so our close frame is not destroyed by a TCP reset."""
        self._start_deadline()
        if self._eof:
            return
        with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            if isinstance(self.stream, trio.abc.HalfCloseableStream):
                async with self._lock:
                    await self.stream.send_eof()
            while await self.stream.receive_some(RECEIVE_SIZE):
                pass

    # ---------------------------------------------------------------- keepalive

    async def _keepalive(self, interval: float) -> None:
        while True:
            await trio.sleep(interval)
            if self._ws.state is not ConnectionState.OPEN:
                return
            self.pings_sent += 1
            self._ping = self.pings_sent.to_bytes(8, "big")
            self._pong = trio.Event()
            await self._write(Ping(payload=self._ping), control=True)
            with trio.move_on_after(self.ping_timeout):
                await self._pong.wait()
                continue
            if self._ws.state is ConnectionState.OPEN:
                # The peer is not answering: no waiting for its close frame either.
                reason = f"no pong within {self.ping_timeout:g} s"
                self._end_input(f"keepalive failed: {reason}")
                await self.close(CLOSE_PING_TIMEOUT, reason)
                await self.abort()
            return


@asynccontextmanager
async def running(channel: WebSocketChannel) -> AsyncIterator[WebSocketChannel]:
    """Run ``channel`` (its reader and keepalive) in a nursery of this block's own; on
    exit, close it with 1000 and wait for the closing handshake (shielded, bounded by
    ``close_timeout``).  Both roles' ``open_*``/``serve_*`` functions use it."""
    async with trio.open_nursery() as nursery:
        await nursery.start(channel.run)
        try:
            yield channel
        finally:
            with trio.CancelScope(shield=True):
                await channel.aclose()
            nursery.cancel_scope.cancel()

"""One open WebSocket, either role, as the session's ``"messages"`` channel, and the
client side: its opening handshake (the core's
:class:`~mcp_ref._websocket_handshake.ClientHandshake`) and :func:`open_websocket_channel`.

Theory of operation
-------------------
The core (:class:`mcp_ref._websocket.WebSocketConnection`) decides; this module moves
bytes and time.  :meth:`WebSocketChannel.run` is the one reader: take the core's next
event, write the control frames it decided on, then read more bytes, hand a message to
the session (``Session.push``, else a one-message inbox for ``receive``), or stop.
Beside it the keepalive task sleeps until the core's deadline.  Every write holds one
lock, so no frame splits another.  Once input has ended, ``run`` gets ``close_timeout``
for the peer's close frame, our half-close and the peer's FIN (so our close frame is
not lost to a TCP reset).  A failed or timed-out write drops the connection.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any, Literal

import trio
from wsproto import WSConnection

from ... import _websocket as core
from ..._client import SessionClosed
from ..._errors import LocalProtocolError
from ..._framing import DEFAULT_MAX_MESSAGE_BYTES
from ..._websocket_handshake import ClientHandshake, split_url
from ...events import RequestId
from .._channel import BROKEN, RECEIVE_SIZE, open_running, receive_or_eof
from .._session_api import Session

__all__ = ["WebSocketChannel", "open_websocket_channel", "websocket_client_handshake"]

log = logging.getLogger("mcp_ref.trio.websocket")


class WebSocketChannel:
    """A ``"messages"`` :class:`~mcp_ref.trio.MessageChannel` over one open WebSocket
    (``ws``, wsproto's, its handshake over, on ``stream``), either role; nothing
    arrives unless :meth:`run` is running.  ``close_timeout``: seconds for the closing
    handshake and the peer's FIN; ``options``: the core's, its ``connection``
    (:class:`~mcp_ref._websocket.WebSocketConnection`), which also tells how the
    WebSocket ended.  Raises ValueError for a limit or timeout that is not positive.

    Source: 2025-06-18/basic/transports#custom-transports.2.
    """

    framing: Literal["lines", "messages"] = "messages"

    def __init__(
        self,
        stream: trio.abc.Stream,
        ws: WSConnection,
        *,
        close_timeout: float = core.DEFAULT_CLOSE_TIMEOUT,
        **options: Any,
    ) -> None:
        if close_timeout <= 0:
            raise ValueError("close_timeout must be positive")
        self.connection = core.WebSocketConnection(ws, **options)
        self.stream = stream
        self.close_timeout = close_timeout
        self._lock = trio.Lock()
        self._inbox_send, self._inbox = trio.open_memory_channel[bytes](1)
        # Where a message goes: the inbox (waits for receive()), or Session.push.
        self._deliver: Callable[[bytes], Awaitable[None]] = self._inbox_send.send
        self._pong = trio.Event()  # set by the reader: wakes the keepalive
        self._eof = False  # the peer's FIN (or a failed read)
        self._scope = trio.CancelScope()  # run's; a deadline once input ends
        self._running = False
        self._done = trio.Event()

    @property
    def eof_reason(self) -> str | None:
        """Why input ended (the core's words), None while it goes on."""
        return self.connection.eof_reason

    # ------------------------------------------------------------ MessageChannel

    def attach_session(self, session: Session) -> None:
        """Push input to ``session``; ``receive`` then only reports its end."""
        self._deliver = session.push  # waits while the session is full

    async def receive(self) -> bytes:
        """The next whole message (UTF-8 JSON bytes); ``b""`` once input ended."""
        return await receive_or_eof(self._inbox)

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """Send ``data`` as one text message (``related_request_id`` is not used); raises
        as :meth:`MessageChannel.send <mcp_ref.trio.MessageChannel.send>` (broken also
        once the WebSocket is closing)."""
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            self._lock.acquire_nowait()  # free: no schedule point (send_all has one)
        except trio.WouldBlock:
            await self._lock.acquire()
        try:
            try:
                frame = self.connection.send(data)  # under the lock: frames go out in order
            except LocalProtocolError as exc:
                raise trio.BrokenResourceError(exc.message) from None
            try:
                await self.stream.send_all(frame)
            except BaseException:
                self._lost("writing to the WebSocket failed")
                raise
        finally:
            self._lock.release()

    async def aclose(self) -> None:
        """Close with 1000 (if open), wait for :meth:`run` to finish the closing
        handshake (``close_timeout`` plus 1 s at most), then drop the connection.
        Idempotent; never raises for a broken connection."""
        await self.close(core.CLOSE_NORMAL, "session ended")
        if self._running:
            with trio.move_on_after(self.close_timeout + 1.0):
                await self._done.wait()
        if not self._done.is_set():
            await self.abort()

    async def close(self, code: int = core.CLOSE_NORMAL, reason: str = "") -> None:
        """Send a close frame and end input; :meth:`run` completes the handshake.  No-op
        unless the WebSocket is open."""
        self.connection.close(code, reason)
        await self._flush()

    async def abort(self) -> None:
        """Drop the connection at once, without a close frame (the peer sees 1006)."""
        self._lost("the connection was dropped")
        await trio.aclose_forcefully(self.stream)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Read and keep alive until the connection is over, drain, close the stream.
        Start it with ``nursery.start``; cancelling it drops the connection."""
        self._running = True
        try:
            with self._scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._keepalive)
                    task_status.started()
                    await self._read()
                    nursery.cancel_scope.cancel()
                await self._drain()
        finally:
            self.connection.connection_lost("the connection ended")
            self._inbox_send.close()
            with trio.CancelScope(shield=True):
                await trio.aclose_forcefully(self.stream)
            self._done.set()

    # ---------------------------------------------------------------- the loops

    async def _read(self) -> None:
        # Until the core says CLOSED; the first pass takes what came with the handshake.
        while True:
            event = self.connection.next_event()
            await self._flush()
            if event is core.CLOSED:
                return
            if event is core.PONG:
                self._pong.set()
            elif event is core.NEED_DATA:
                try:
                    data = bytes(await self.stream.receive_some(RECEIVE_SIZE))
                except BROKEN:
                    data = b""
                self._eof = not data
                self.connection.receive_data(data)
            else:
                try:
                    await self._deliver(event.data)
                except (SessionClosed, *BROKEN):
                    pass  # input has ended: we are closing

    async def _keepalive(self) -> None:
        # Sleep until the core's deadline (a pong may move it), let the core decide (a
        # ping, a close); no pong: drop the connection (a silent peer sends no close).
        self.connection.handle_timeout(trio.current_time())
        while (deadline := self.connection.next_deadline()) is not None:
            with trio.move_on_at(deadline):
                await self._pong.wait()
            self._pong = trio.Event()
            self.connection.handle_timeout(trio.current_time())
            await self._flush()
            if self.connection.keepalive_failed:
                await self.abort()

    async def _flush(self) -> None:
        # Write the frames the core decided on; once input has ended, start the closing deadline.
        if self.eof_reason is not None:
            self._inbox_send.close()
            if math.isinf(self._scope.deadline):
                normal = self.connection.close_code == core.CLOSE_NORMAL
                log.log(logging.DEBUG if normal else logging.INFO, "WebSocket: %s", self.eof_reason)
                self._scope.deadline = trio.current_time() + self.close_timeout
        if not self.connection.has_data_to_send:
            return
        async with self._lock:
            data = self.connection.data_to_send()  # under the lock: frames go out in order
            with suppress(*BROKEN), trio.move_on_after(self.close_timeout):
                await self.stream.send_all(data)
                return
            self._lost("writing to the WebSocket failed")

    async def _drain(self) -> None:
        # Half-close, then discard input until the peer's FIN (module docstring).
        if self._eof:
            return
        with suppress(*BROKEN):
            if isinstance(self.stream, trio.abc.HalfCloseableStream):
                async with self._lock:
                    await self.stream.send_eof()
            while await self.stream.receive_some(RECEIVE_SIZE):
                pass

    def _lost(self, reason: str) -> None:
        self.connection.connection_lost(reason)
        self._inbox_send.close()
        self._scope.cancel()


async def websocket_client_handshake(
    stream: trio.abc.Stream,
    *,
    host: str,
    target: str = core.DEFAULT_PATH,
    origin: str | None = None,
    headers: Sequence[tuple[str, str]] = (),
    **channel_kw: Any,
) -> WebSocketChannel:
    """Run the client side of the opening handshake on a connected ``stream`` (the
    options: :class:`~mcp_ref._websocket_handshake.ClientHandshake`'s, then
    :class:`WebSocketChannel`'s).  Returns the open channel, not yet running.  Raises
    HandshakeError (a refusal, with ``status_code`` and ``body``; no ``mcp``
    subprotocol; not a valid upgrade) or trio.BrokenResourceError."""
    handshake = ClientHandshake(host=host, target=target, origin=origin, headers=headers)
    await stream.send_all(handshake.request)
    while (ws := handshake.next_event()) is core.NEED_DATA:
        handshake.receive_data(bytes(await stream.receive_some(RECEIVE_SIZE)))
    return WebSocketChannel(stream, ws, **channel_kw)


@asynccontextmanager
async def open_websocket_channel(
    url: str,
    *,
    origin: str | None = None,
    headers: Sequence[tuple[str, str]] = (),
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ping_interval: float | None = core.DEFAULT_PING_INTERVAL,
    ping_timeout: float = core.DEFAULT_PING_TIMEOUT,
    close_timeout: float = core.DEFAULT_CLOSE_TIMEOUT,
    connect_timeout: float = core.DEFAULT_HANDSHAKE_TIMEOUT,
    stream: trio.abc.Stream | None = None,
) -> AsyncIterator[WebSocketChannel]:
    """Connect to ``url`` (``ws://host:port/path``), run the handshake within
    ``connect_timeout`` seconds and yield the running channel (no MCP session:
    :func:`mcp_ref.client.open_websocket_client` adds one); on exit the WebSocket is
    closed (1000).  ``origin``, ``headers``: :func:`websocket_client_handshake`'s; the
    four after them: :class:`WebSocketChannel`'s.  ``stream``: a connected stream to
    use instead (tests).

    Raises:
        ValueError: not a ``ws://`` URL (:func:`~mcp_ref._websocket_handshake.split_url`).
        OSError: the server could not be reached.
        HandshakeError: the server refused the upgrade.
        trio.TooSlowError: ``connect_timeout`` expired.
    """
    hostname, port, host, target = split_url(url)
    with trio.fail_after(connect_timeout):
        if stream is None:
            stream = await trio.open_tcp_stream(hostname, port)
        try:
            channel = await websocket_client_handshake(
                stream,
                host=host,
                target=target,
                origin=origin,
                headers=headers,
                max_message_bytes=max_message_bytes,
                ping_interval=ping_interval,
                ping_timeout=ping_timeout,
                close_timeout=close_timeout,
            )
        except BaseException:
            await trio.aclose_forcefully(stream)
            raise
    async with open_running(channel, channel.run):
        yield channel

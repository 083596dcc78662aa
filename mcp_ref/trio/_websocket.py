"""MCP over WebSocket (a custom transport): server and client on wsproto over trio streams.

Theory of operation
-------------------
The spec lets clients and servers add transports of their own as long as JSON-RPC and
the lifecycle are kept, and asks them to document how a connection is made and how
messages travel (2025-06-18/basic/transports#custom-transports).  This is that
transport; docs/websocket.md is its description for other implementers.

* **Connection**: the client sends an HTTP/1.1 ``GET`` upgrade (RFC 6455) to the MCP
  path (default ``/mcp``) offering the subprotocol ``mcp``.  The server parses the
  request with its own bounded h11 connection, checks path, ``Origin`` and ``Host``
  (the same DNS-rebinding defence as Streamable HTTP, :func:`mcp_ref._http.check_origin`
  and :func:`~mcp_ref._http.check_host`) and the subprotocol, then lets wsproto answer
  ``101 Switching Protocols``.  A refusal is a plain HTTP response (403, 400, ...) sent
  before any WebSocket exists.  One WebSocket connection carries exactly one MCP
  session, which starts with ``initialize`` as on every transport.
* **Messages**: one JSON-RPC message per WebSocket *text* message (UTF-8).  A
  :class:`WebSocketChannel` is a ``framing="messages"`` :class:`MessageChannel`: its
  ``receive`` returns one whole message and the core parses it (the channel never looks
  inside).  Binary messages are refused with close code 1003, messages over
  ``max_message_bytes`` with 1009 (checked while the frames arrive, never buffered past
  the limit), invalid UTF-8 with 1007 and framing violations with 1002.
* **Keepalive**: each side sends a ping every ``ping_interval`` seconds and closes with
  1011 when the pong does not come within ``ping_timeout``; pings from the peer are
  answered at once.
* **Closing**: the end of the session sends close code 1000 and waits (at most
  ``close_timeout``) for the peer's close frame, then half-closes TCP and reads until
  the peer's FIN, so no data is cut by a reset.  A connection lost without a close frame
  ends the input with the reason "1006".

Tasks: :meth:`WebSocketChannel.run` holds the reader (feeds wsproto, answers pings and
closes, queues whole messages for ``receive`` in a bounded channel) and the keepalive
timer, in a nursery of its own; the ``open_*``/``serve_*`` functions start it in theirs.
Every write goes through one lock, so control frames never split a data frame.
"""

# Spec: 2025-06-18/basic/transports#custom-transports.3 (documented in docs/websocket.md)

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Collection, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Final, Literal, NoReturn
from urllib.parse import urlsplit

import h11
import trio
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Ping,
    Pong,
    RejectConnection,
    RejectData,
    TextMessage,
)
from wsproto.events import Request as WSRequest
from wsproto.utilities import LocalProtocolError as WSLocalProtocolError
from wsproto.utilities import RemoteProtocolError as WSRemoteProtocolError

from .._framing import DEFAULT_MAX_MESSAGE_BYTES
from .._http import (
    LOCALHOST_HOSTS,
    LOCALHOST_ORIGINS,
    HttpError,
    check_host,
    check_origin,
    http_error,
)
from ..events import RequestId
from ._session import Handler, serve_channel

if TYPE_CHECKING:
    from ..client import Client

__all__ = [
    "CLOSE_MESSAGE_TOO_BIG",
    "CLOSE_NORMAL",
    "CLOSE_PING_TIMEOUT",
    "CLOSE_PROTOCOL_ERROR",
    "CLOSE_UNSUPPORTED_DATA",
    "DEFAULT_PATH",
    "SUBPROTOCOL",
    "HandshakeError",
    "WebSocketChannel",
    "open_websocket_channel",
    "open_websocket_client",
    "parse_host_port",
    "serve_websocket",
    "serve_websocket_stream",
    "websocket_client_handshake",
    "websocket_server_handshake",
]

log = logging.getLogger("mcp_ref.trio.websocket")

SUBPROTOCOL: Final = "mcp"
"""The WebSocket subprotocol (``Sec-WebSocket-Protocol``) both sides must agree on."""
DEFAULT_PATH: Final = "/mcp"
"""The path the server accepts upgrades on, unless told otherwise."""

CLOSE_NORMAL: Final = 1000
"""Close code: the session ended normally."""
CLOSE_PROTOCOL_ERROR: Final = 1002
"""Close code: the peer broke RFC 6455 framing (unmasked frame, bad opcode, ...)."""
CLOSE_UNSUPPORTED_DATA: Final = 1003
"""Close code: a binary message (MCP messages are text)."""
CLOSE_ABNORMAL: Final = 1006
"""Not sent on the wire: the connection was lost without a close frame."""
CLOSE_INVALID_DATA: Final = 1007
"""Close code: a text message that is not valid UTF-8."""
CLOSE_MESSAGE_TOO_BIG: Final = 1009
"""Close code: a message over ``max_message_bytes``."""
CLOSE_PING_TIMEOUT: Final = 1011
"""Close code: no pong came back within ``ping_timeout`` (keepalive)."""

_CLOSE_NAMES: Final = {
    1000: "normal closure",
    1001: "going away",
    1002: "protocol error",
    1003: "unsupported data",
    1006: "connection lost without a close frame",
    1007: "invalid UTF-8",
    1008: "policy violation",
    1009: "message too big",
    1011: "internal error",
}

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


def _describe(code: int, reason: str | None) -> str:
    name = _CLOSE_NAMES.get(code)
    text = f"code {code}" + (f" ({name})" if name else "")
    return f"{text}: {reason}" if reason else text


class HandshakeError(ConnectionError):
    """The opening handshake failed (client side).

    Attributes:
        status_code: the HTTP status of the server's refusal (e.g. 403), or None when
            the server's answer was not a valid upgrade (or it hung up).
        body: the first bytes of the refusal's body (a JSON-RPC error for our server).
    """

    def __init__(self, message: str, status_code: int | None = None, body: bytes = b"") -> None:
        super().__init__(message)
        self.status_code = status_code
        self.body = body


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

    # ------------------------------------------------------------ MessageChannel

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
            message = b"".join(self._parts)
            self._parts.clear()
            self._size = 0
            try:
                await self._inbox_send.send(message)  # bounded: waits for receive()
            except (trio.ClosedResourceError, trio.BrokenResourceError):
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
                f"the peer closed the WebSocket with {_describe(event.code, event.reason)}"
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
        async with self._send_lock:
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

    async def _local_close(self, code: int, reason: str) -> None:
        """Start the closing handshake from our side and end input."""
        if self._ws.state is not ConnectionState.OPEN:
            return
        self._record(code, reason, "local")
        if code != CLOSE_NORMAL:
            log.info("closing the WebSocket: %s", _describe(code, reason))
        self._end_input(f"we closed the WebSocket with {_describe(code, reason)}")
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


# ---------------------------------------------------------------------- handshakes


async def websocket_client_handshake(
    stream: trio.abc.Stream,
    *,
    host: str,
    target: str = DEFAULT_PATH,
    origin: str | None = None,
    headers: Sequence[tuple[str, str]] = (),
    **channel_kw: Any,
) -> WebSocketChannel:
    """Run the client side of the opening handshake on ``stream``.

    Args:
        stream: a connected byte stream.
        host: the ``Host`` header (``"127.0.0.1:8000"``).
        target: the request target (path and query), default ``/mcp``.
        origin: an ``Origin`` header to send (browsers send one; default none).
        headers: extra request headers, e.g. ``[("authorization", "Bearer ...")]``.
        **channel_kw: options of :class:`WebSocketChannel` (``max_message_bytes``,
            ``ping_interval``, ``ping_timeout``, ``close_timeout``).

    Returns:
        The open channel (not yet running: start :meth:`WebSocketChannel.run`).

    Raises:
        HandshakeError: the server refused (``status_code`` and ``body`` set), did not
            select the subprotocol ``mcp``, or did not answer with a valid upgrade.
        trio.BrokenResourceError: the connection failed.
    """
    ws = WSConnection(ConnectionType.CLIENT)
    extra = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    if origin is not None:
        extra.append((b"origin", origin.encode("latin-1")))
    request = WSRequest(host=host, target=target, subprotocols=[SUBPROTOCOL], extra_headers=extra)
    await stream.send_all(ws.send(request))
    status: int | None = None
    body = bytearray()
    while True:
        data = bytes(await stream.receive_some(RECEIVE_SIZE))
        if not data:
            raise HandshakeError("the server closed the connection during the handshake", status)
        try:
            ws.receive_data(data)
            events = list(ws.handshake.events())
        except WSRemoteProtocolError as exc:
            raise HandshakeError(f"invalid upgrade response from the server: {exc}") from None
        for event in events:
            if isinstance(event, AcceptConnection):
                if event.subprotocol != SUBPROTOCOL:
                    raise HandshakeError(
                        f"the server did not select the subprotocol {SUBPROTOCOL!r}"
                    )
                return WebSocketChannel(stream, ws, subprotocol=event.subprotocol, **channel_kw)
            if isinstance(event, RejectConnection):
                status = event.status_code
                if not event.has_body:
                    raise HandshakeError(f"the server refused the upgrade: {status}", status)
            elif isinstance(event, RejectData):
                body += event.data[: MAX_REJECT_BODY - len(body)]
                if event.body_finished:
                    raise HandshakeError(
                        f"the server refused the upgrade: {status} "
                        f"{bytes(body[:200]).decode('utf-8', 'replace')}",
                        status,
                        bytes(body),
                    )


async def _refuse(stream: trio.abc.Stream, conn: h11.Connection, err: HttpError) -> None:
    """Send ``err`` as the HTTP answer to the upgrade request (then the caller closes)."""
    headers = [*err.headers, (b"connection", b"close")]
    out = bytearray(
        conn.send(h11.Response(status_code=err.status, reason=err.reason, headers=headers)) or b""
    )
    if err.body:
        out += conn.send(h11.Data(data=err.body)) or b""
    out += conn.send(h11.EndOfMessage()) or b""
    log.info("refused a WebSocket upgrade: %s %s", err.status, err.detail)
    try:
        await stream.send_all(bytes(out))
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass


async def _read_request(stream: trio.abc.Stream, conn: h11.Connection) -> h11.Request | None:
    """Read one request head; None when the client went away or sent bad HTTP (then
    the 400 has been sent)."""
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError as exc:
            detail = f"bad HTTP request: {exc}"
            await _refuse(stream, conn, http_error(exc.error_status_hint, detail, clause=None))
            return None
        if event is h11.NEED_DATA:
            try:
                data = await stream.receive_some(RECEIVE_SIZE)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return None
            if not data:
                return None
            conn.receive_data(bytes(data))
        elif isinstance(event, h11.Request):
            return event
        else:
            return None


async def websocket_server_handshake(
    stream: trio.abc.Stream,
    *,
    path: str | None = DEFAULT_PATH,
    allowed_origins: Collection[str] = LOCALHOST_ORIGINS,
    allowed_hosts: Collection[str] = LOCALHOST_HOSTS,
    **channel_kw: Any,
) -> WebSocketChannel | None:
    """Run the server side of the opening handshake on ``stream``.

    Refusals are HTTP responses with a JSON-RPC error body, sent before any WebSocket
    exists: 405 (not GET), 404 (another path), 403 (``Origin`` or ``Host`` not allowed),
    400 (bad HTTP, a body, not a WebSocket upgrade, no ``mcp`` subprotocol offered),
    426 (another WebSocket version).

    Args:
        stream: a connected byte stream.
        path: the only path accepted (the query string is ignored); None: any.
        allowed_origins: ``Origin`` patterns (see :func:`mcp_ref._http.check_origin`);
            a request without ``Origin`` passes.
        allowed_hosts: ``Host`` patterns (see :func:`mcp_ref._http.check_host`).
        **channel_kw: options of :class:`WebSocketChannel`.

    Returns:
        The open channel (not yet running), or None when the request was refused or the
        client went away (the refusal has been sent; the caller closes the stream).

    Source: 2025-06-18/basic/transports#security-warning.1 (validate ``Origin``),
    2025-06-18/basic/transports#custom-transports.3 (the documented handshake).
    """
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HANDSHAKE_BYTES)
    request = await _read_request(stream, conn)
    if request is None:
        return None
    err = _check_request(request, path, allowed_origins, allowed_hosts)
    if err is not None:
        await _refuse(stream, conn, err)
        return None
    ws = WSConnection(ConnectionType.SERVER)
    try:
        ws.initiate_upgrade_connection(list(request.headers), request.target)
        offered = next(e for e in ws.events() if isinstance(e, WSRequest))
    except WSRemoteProtocolError as exc:
        hint = exc.event_hint
        status = hint.status_code if isinstance(hint, RejectConnection) else 400
        extra = list(hint.headers) if isinstance(hint, RejectConnection) else []
        detail = f"not a valid WebSocket upgrade: {exc}"
        await _refuse(stream, conn, http_error(status, detail, clause=None, headers=extra))
        return None
    except (StopIteration, ValueError, UnicodeError) as exc:
        await _refuse(stream, conn, http_error(400, f"bad upgrade request: {exc}", clause=None))
        return None
    if SUBPROTOCOL not in offered.subprotocols:
        detail = (
            f"the WebSocket subprotocol {SUBPROTOCOL!r} must be offered (Sec-WebSocket-Protocol)"
        )
        await _refuse(stream, conn, http_error(400, detail, clause=None))
        return None
    trailing = conn.trailing_data[0]
    await stream.send_all(ws.send(AcceptConnection(subprotocol=SUBPROTOCOL)))
    if trailing:
        ws.receive_data(trailing)  # frames sent right behind the request
    return WebSocketChannel(stream, ws, subprotocol=SUBPROTOCOL, **channel_kw)


def _check_request(
    request: h11.Request,
    path: str | None,
    allowed_origins: Collection[str],
    allowed_hosts: Collection[str],
) -> HttpError | None:
    if request.method != b"GET":
        return http_error(
            405,
            "only GET (a WebSocket upgrade) is allowed",
            clause=None,
            headers=[(b"allow", b"GET")],
        )
    target = request.target.decode("latin-1")
    if path is not None and target.split("?", 1)[0] != path:
        return http_error(404, f"no MCP endpoint at {target.split('?', 1)[0]!r}", clause=None)
    headers = list(request.headers)
    # Spec: 2025-06-18/basic/transports#security-warning.1
    err = check_origin(headers, allowed_origins) or check_host(headers, allowed_hosts)
    if err is not None:
        return err
    for name, value in headers:
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() != b"0"):
            return http_error(400, "an upgrade request has no body", clause=None)
    return None


# ------------------------------------------------------------------------ server


def _is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


async def serve_websocket_stream(
    stream: trio.abc.Stream,
    target: Handler,
    *,
    path: str | None = DEFAULT_PATH,
    allowed_origins: Collection[str] = LOCALHOST_ORIGINS,
    allowed_hosts: Collection[str] = LOCALHOST_HOSTS,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ping_interval: float | None = DEFAULT_PING_INTERVAL,
    ping_timeout: float = DEFAULT_PING_TIMEOUT,
    close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
    handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
    **session_kw: Any,
) -> None:
    """Serve one MCP session on one accepted connection: handshake, session, close.

    Args:
        stream: the accepted connection (closed on return).
        target: a session :class:`~mcp_ref.trio.Handler`; one with a
            ``serve(channel, **session_kw)`` method (``mcp_ref.server.Server``) serves
            itself (see :func:`~mcp_ref.trio.serve_channel`).
        path, allowed_origins, allowed_hosts: see :func:`websocket_server_handshake`.
        max_message_bytes: the largest message, in bytes (the channel closes with 1009
            above it; the session gets the same bound).
        ping_interval, ping_timeout, close_timeout: see :class:`WebSocketChannel`.
        handshake_timeout: seconds the client has to complete the upgrade request.
        **session_kw: options of :func:`~mcp_ref.trio.open_session`.

    Never raises for a misbehaving client: refusals are answered and logged.
    """
    try:
        channel: WebSocketChannel | None = None
        with trio.move_on_after(handshake_timeout):
            channel = await websocket_server_handshake(
                stream,
                path=path,
                allowed_origins=allowed_origins,
                allowed_hosts=allowed_hosts,
                max_message_bytes=max_message_bytes,
                ping_interval=ping_interval,
                ping_timeout=ping_timeout,
                close_timeout=close_timeout,
            )
        if channel is None:
            return
        async with trio.open_nursery() as nursery:
            await nursery.start(channel.run)
            try:
                session_kw.setdefault("max_message_bytes", max_message_bytes)
                await serve_channel(target, channel, **session_kw)
            finally:
                with trio.CancelScope(shield=True):
                    await channel.aclose()
    except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
        log.debug("WebSocket connection failed: %r", exc)
    finally:
        with trio.CancelScope(shield=True):
            await trio.aclose_forcefully(stream)


async def serve_websocket(
    target: Handler,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    path: str | None = DEFAULT_PATH,
    allowed_origins: Collection[str] | None = None,
    allowed_hosts: Collection[str] | None = None,
    max_connections: int = 256,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
    **kw: Any,
) -> NoReturn:
    """Serve MCP over WebSocket on ``host:port`` until cancelled, one session per
    connection.

    Usage::

        port = await nursery.start(serve_websocket, server)   # ws://127.0.0.1:<port>/mcp

    Args:
        target: a session :class:`~mcp_ref.trio.Handler`, e.g. an
            ``mcp_ref.server.Server``; one serves every connection (see
            :func:`~mcp_ref.trio.serve_channel`).
        host: the address to bind (default loopback only).
        port: the TCP port; 0 picks a free one (given to ``task_status``).
        path: the MCP endpoint path (default ``/mcp``); None accepts any.
        allowed_origins: ``Origin`` patterns; default: the loopback origins when
            ``host`` is a loopback address, else none (only clients that send no
            ``Origin``, i.e. not browsers).
        allowed_hosts: ``Host`` patterns; default: the loopback names on a loopback
            ``host``, else any.
        max_connections: connections served at once; more are refused with 503.
        task_status: receives the bound port (an int).
        **kw: options of :func:`serve_websocket_stream` (``max_message_bytes``,
            ``ping_interval``, ``ping_timeout``, ``close_timeout``,
            ``handshake_timeout``) and of :func:`~mcp_ref.trio.open_session`.

    Raises:
        OSError: the address could not be bound.

    Source: 2025-06-18/basic/transports#custom-transports.1 (a custom transport),
    2025-06-18/basic/transports#security-warning.2 (bind to loopback by default).
    """
    if max_connections < 1:
        raise ValueError("max_connections must be at least 1")
    loopback = _is_loopback(host)
    origins = (
        allowed_origins if allowed_origins is not None else (LOCALHOST_ORIGINS if loopback else ())
    )
    hosts = (
        allowed_hosts if allowed_hosts is not None else (LOCALHOST_HOSTS if loopback else ("*",))
    )
    # Spec: 2025-06-18/basic/transports#security-warning.2
    listeners = await trio.open_tcp_listeners(port, host=host)
    bound = listeners[0].socket.getsockname()[1]
    log.info("MCP WebSocket server on ws://%s:%s%s", host, bound, path or "/")
    task_status.started(bound)  # the listeners are bound and listening already
    await _serve_listeners(
        target,
        listeners,
        path=path,
        allowed_origins=origins,
        allowed_hosts=hosts,
        max_connections=max_connections,
        **kw,
    )


async def _serve_listeners(
    target: Handler,
    listeners: Sequence[trio.abc.Listener[Any]],
    *,
    max_connections: int,
    **kw: Any,
) -> NoReturn:
    """Accept on ``listeners`` forever, one :func:`serve_websocket_stream` per
    connection, at most ``max_connections`` at once (503 beyond)."""
    active = 0

    async def handle(stream: trio.abc.Stream) -> None:
        nonlocal active
        if active >= max_connections:
            with trio.move_on_after(kw.get("handshake_timeout", DEFAULT_HANDSHAKE_TIMEOUT)):
                await _refuse_busy(stream, max_connections)
            await trio.aclose_forcefully(stream)
            return
        active += 1
        try:
            await serve_websocket_stream(stream, target, **kw)
        finally:
            active -= 1

    await trio.serve_listeners(handle, list(listeners))
    raise AssertionError("trio.serve_listeners returned")  # pragma: no cover


async def _refuse_busy(stream: trio.abc.Stream, limit: int) -> None:
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HANDSHAKE_BYTES)
    if await _read_request(stream, conn) is not None:
        err = http_error(503, f"too many connections (at most {limit})", clause=None)
        await _refuse(stream, conn, err)


# ------------------------------------------------------------------------ client


def parse_host_port(text: str, default_host: str = "127.0.0.1") -> tuple[str, int]:
    """``"HOST:PORT"``, ``":PORT"``, ``"PORT"`` or ``"[::1]:PORT"`` as ``(host, port)``.

    Raises:
        ValueError: no valid port (0-65535).
    """
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = "", text
    host = host.strip("[]") or default_host
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"not HOST:PORT: {text!r}") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"port out of range: {port}")
    return host, port


def _split_url(url: str) -> tuple[str, int, str, str]:
    parts = urlsplit(url)
    if parts.scheme == "wss":
        raise ValueError("wss:// is not supported: put a TLS-terminating proxy in front")
    if parts.scheme != "ws" or not parts.hostname:
        raise ValueError(f"not a ws:// URL: {url!r}")
    port = parts.port or 80
    authority = parts.netloc.rpartition("@")[2]
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.hostname, port, authority, target


@asynccontextmanager
async def open_websocket_channel(
    url: str,
    *,
    origin: str | None = None,
    headers: Sequence[tuple[str, str]] = (),
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ping_interval: float | None = DEFAULT_PING_INTERVAL,
    ping_timeout: float = DEFAULT_PING_TIMEOUT,
    close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
    connect_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
    stream: trio.abc.Stream | None = None,
) -> AsyncIterator[WebSocketChannel]:
    """Connect to a WebSocket MCP endpoint and yield the running channel (no MCP
    session yet; see :func:`open_websocket_client` for that).

    Args:
        url: ``ws://host:port/path``.
        origin: an ``Origin`` header to send (default none).
        headers: extra request headers.
        max_message_bytes, ping_interval, ping_timeout, close_timeout: see
            :class:`WebSocketChannel`.
        connect_timeout: seconds for the TCP connect and the opening handshake.
        stream: an already connected stream to use instead of connecting (tests).

    On exit the WebSocket is closed (1000) and the connection dropped.

    Raises:
        ValueError: not a ``ws://`` URL.
        OSError: the server could not be reached.
        HandshakeError: the server refused the upgrade.
        trio.TooSlowError: ``connect_timeout`` expired.
    """
    host, port, authority, target = _split_url(url)
    with trio.fail_after(connect_timeout):
        own = stream is None
        if stream is None:
            stream = await trio.open_tcp_stream(host, port)
        try:
            channel = await websocket_client_handshake(
                stream,
                host=authority,
                target=target,
                origin=origin,
                headers=headers,
                max_message_bytes=max_message_bytes,
                ping_interval=ping_interval,
                ping_timeout=ping_timeout,
                close_timeout=close_timeout,
            )
        except BaseException:
            if own:
                await trio.aclose_forcefully(stream)
            raise
    async with trio.open_nursery() as nursery:
        await nursery.start(channel.run)
        try:
            yield channel
        finally:
            with trio.CancelScope(shield=True):
                await channel.aclose()
            nursery.cancel_scope.cancel()


@asynccontextmanager
async def open_websocket_client(
    url: str,
    *,
    origin: str | None = None,
    headers: Sequence[tuple[str, str]] = (),
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ping_interval: float | None = DEFAULT_PING_INTERVAL,
    ping_timeout: float = DEFAULT_PING_TIMEOUT,
    close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
    connect_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
    stream: trio.abc.Stream | None = None,
    **client_kw: Any,
) -> AsyncIterator[Client]:
    """Connect to a WebSocket MCP server, initialize, and yield a
    :class:`mcp_ref.client.Client`.

    Usage::

        async with open_websocket_client("ws://127.0.0.1:8000/mcp") as client:
            tools = await client.list_tools()

    Args:
        url, origin, headers, ping_interval, ping_timeout, close_timeout,
        connect_timeout, stream: see :func:`open_websocket_channel`.
        max_message_bytes: the largest message accepted, in bytes (channel and session).
        **client_kw: options of :func:`mcp_ref.client.open_client` (``client_info``,
            ``protocol_version``, ``sampling_handler``, ``roots``, ``timeout``...).

    Raises:
        ValueError, OSError, HandshakeError, trio.TooSlowError: as
            :func:`open_websocket_channel`.
        McpError, SessionClosed: initialization failed (as ``open_client``).
    """
    from ..client import open_client  # the client package imports mcp_ref.trio

    client_kw.setdefault("max_message_bytes", max_message_bytes)
    async with (
        open_websocket_channel(
            url,
            origin=origin,
            headers=headers,
            max_message_bytes=max_message_bytes,
            ping_interval=ping_interval,
            ping_timeout=ping_timeout,
            close_timeout=close_timeout,
            connect_timeout=connect_timeout,
            stream=stream,
        ) as channel,
        open_client(channel, **client_kw) as client,
    ):
        yield client

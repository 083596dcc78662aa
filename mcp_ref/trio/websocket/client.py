"""The client side: the opening handshake and :func:`open_websocket_channel`.

The handshake offers the subprotocol ``mcp`` and insists the server selects it; any
answer but ``101`` becomes a :class:`HandshakeError` carrying the status and the start
of the body (our server's refusals are JSON-RPC errors a caller can show).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final
from urllib.parse import urlsplit

import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, RejectConnection, RejectData, Request
from wsproto.utilities import RemoteProtocolError as WSRemoteProtocolError

from ..._framing import DEFAULT_MAX_MESSAGE_BYTES
from .channel import (
    DEFAULT_CLOSE_TIMEOUT,
    DEFAULT_HANDSHAKE_TIMEOUT,
    DEFAULT_PATH,
    DEFAULT_PING_INTERVAL,
    DEFAULT_PING_TIMEOUT,
    RECEIVE_SIZE,
    SUBPROTOCOL,
    WebSocketChannel,
    running,
)

__all__ = ["HandshakeError", "open_websocket_channel", "websocket_client_handshake"]

MAX_REJECT_BODY: Final = 65536
"""The most bytes of a refusal's body kept in :class:`HandshakeError`."""


class HandshakeError(ConnectionError):
    """The opening handshake failed (client side).

    Attributes:
        status_code: the HTTP status of the server's refusal (e.g. 403); None when the
            answer was not a valid upgrade, or the server hung up.
        body: the first bytes of the refusal's body (a JSON-RPC error from our server).
    """

    def __init__(self, message: str, status_code: int | None = None, body: bytes = b"") -> None:
        super().__init__(message)
        self.status_code = status_code
        self.body = body


async def websocket_client_handshake(
    stream: trio.abc.Stream,
    *,
    host: str,
    target: str = DEFAULT_PATH,
    origin: str | None = None,
    headers: Sequence[tuple[str, str]] = (),
    **channel_kw: Any,
) -> WebSocketChannel:
    """Run the client side of the opening handshake on a connected ``stream``.

    Args:
        host: the ``Host`` header (``"127.0.0.1:8000"``).
        target: the request target (path and query).
        origin: an ``Origin`` header to send (browsers send one; default none).
        headers: extra request headers, e.g. ``[("authorization", "Bearer ...")]``.
        **channel_kw: options of :class:`WebSocketChannel`.

    Returns:
        The open channel, not yet running (start :meth:`WebSocketChannel.run`).

    Raises:
        HandshakeError: a refusal (``status_code``, ``body``), no ``mcp`` subprotocol
            selected, or not a valid upgrade.
        trio.BrokenResourceError: the connection failed.
    """
    ws = WSConnection(ConnectionType.CLIENT)
    extra = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    if origin is not None:
        extra.append((b"origin", origin.encode("latin-1")))
    request = Request(host=host, target=target, subprotocols=[SUBPROTOCOL], extra_headers=extra)
    await stream.send_all(ws.send(request))
    status: int | None = None
    body = b""
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
                done = not event.has_body
            elif isinstance(event, RejectData):
                body = (body + event.data)[:MAX_REJECT_BODY]
                done = event.body_finished
            else:
                continue
            if done:
                shown = f"{status} {body[:200].decode('utf-8', 'replace')}".rstrip()
                raise HandshakeError(f"the server refused the upgrade: {shown}", status, body)


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
    """Connect to ``url`` (``ws://host:port/path``), run the handshake and yield the
    running channel (no MCP session: :func:`mcp_ref.client.open_websocket_client` adds
    one).  On exit the WebSocket is closed (1000) and the connection dropped.

    Args:
        origin, headers: see :func:`websocket_client_handshake`.
        max_message_bytes, ping_interval, ping_timeout, close_timeout: see
            :class:`WebSocketChannel`.
        connect_timeout: seconds for the TCP connect and the opening handshake.
        stream: a connected stream to use instead of connecting (tests).

    Raises:
        ValueError: not a ``ws://`` URL (``wss://`` needs a TLS-terminating proxy).
        OSError: the server could not be reached.
        HandshakeError: the server refused the upgrade.
        trio.TooSlowError: ``connect_timeout`` expired.
    """
    parts = urlsplit(url)
    if parts.scheme == "wss":
        raise ValueError("wss:// is not supported: put a TLS-terminating proxy in front")
    if parts.scheme != "ws" or not parts.hostname:
        raise ValueError(f"not a ws:// URL: {url!r}")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    with trio.fail_after(connect_timeout):
        own = stream is None
        if stream is None:
            stream = await trio.open_tcp_stream(parts.hostname, parts.port or 80)
        try:
            channel = await websocket_client_handshake(
                stream,
                host=parts.netloc.rpartition("@")[2],
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
    async with running(channel):
        yield channel

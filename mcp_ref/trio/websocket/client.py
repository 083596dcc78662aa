"""The client side of MCP over WebSocket: the opening handshake and the ``open_*`` calls.

Theory of operation
-------------------
:func:`open_websocket_channel` connects (``ws://`` only; ``wss://`` needs a
TLS-terminating proxy), runs :func:`websocket_client_handshake` within
``connect_timeout`` and runs the channel's reader in a nursery of its own until the
block exits; :func:`mcp_ref.client.open_websocket_client` adds an MCP session and
``initialize`` on top.

The handshake offers the subprotocol ``mcp`` and insists the server selects it.  A
refusal (any answer but ``101``) becomes a :class:`HandshakeError` carrying the status
and the first ``MAX_REJECT_BODY`` bytes of the body, so a caller can show the server's
JSON-RPC error.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, RejectConnection, RejectData
from wsproto.events import Request as WSRequest
from wsproto.utilities import RemoteProtocolError as WSRemoteProtocolError

from ..._framing import DEFAULT_MAX_MESSAGE_BYTES
from .channel import (
    DEFAULT_CLOSE_TIMEOUT,
    DEFAULT_HANDSHAKE_TIMEOUT,
    DEFAULT_PATH,
    DEFAULT_PING_INTERVAL,
    DEFAULT_PING_TIMEOUT,
    MAX_REJECT_BODY,
    RECEIVE_SIZE,
    SUBPROTOCOL,
    WebSocketChannel,
)

__all__ = [
    "HandshakeError",
    "open_websocket_channel",
    "parse_host_port",
    "websocket_client_handshake",
]


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
    session yet; see :func:`mcp_ref.client.open_websocket_client` for that).

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

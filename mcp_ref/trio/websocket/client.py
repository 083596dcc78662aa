"""The client side: the opening handshake (the core's
:class:`~mcp_ref._websocket_handshake.ClientHandshake`, written and fed here) and
:func:`open_websocket_channel`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import trio

from ... import _websocket as core
from ..._framing import DEFAULT_MAX_MESSAGE_BYTES
from ..._websocket_handshake import ClientHandshake, HandshakeError, split_url
from .._channel import RECEIVE_SIZE
from .._session import open_running
from .channel import WebSocketChannel

__all__ = ["HandshakeError", "open_websocket_channel", "websocket_client_handshake"]


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

"""The high-level client over Streamable HTTP and WebSocket: one ``open_*`` per transport.

Each opens the transport's channel (a driver of :mod:`mcp_ref.trio`), then runs
:func:`~mcp_ref.client.open_client` over it: the same initialize, the same typed
:class:`~mcp_ref.client.Client`.  They live here, beside :func:`open_stdio_client`, so
that the driver layer (``mcp_ref.trio``) never imports the client that is built on it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import trio

from .._framing import DEFAULT_MAX_MESSAGE_BYTES
from .._http import HttpLimits
from ..trio import open_http_channel, open_websocket_channel
from ..trio.websocket.channel import (
    DEFAULT_CLOSE_TIMEOUT,
    DEFAULT_HANDSHAKE_TIMEOUT,
    DEFAULT_PING_INTERVAL,
    DEFAULT_PING_TIMEOUT,
)
from ._client import Client, open_client

__all__ = ["open_http_client", "open_websocket_client"]


@asynccontextmanager
async def open_http_client(
    url: str,
    *,
    headers: Sequence[tuple[str, str]] = (),
    limits: HttpLimits | None = None,
    legacy_fallback: bool = True,
    get_stream: bool = True,
    max_concurrent_posts: int = 64,
    connect_timeout: float = 10.0,
    default_retry: float = 1.0,
    **client_kw: Any,
) -> AsyncIterator[Client]:
    """Connect to an MCP server over Streamable HTTP, initialize, and yield a
    :class:`~mcp_ref.client.Client`.

    Args:
        url: the MCP endpoint, e.g. ``"http://127.0.0.1:8000/mcp"``.
        headers: extra headers on every request (``[("authorization", "Bearer ...")]``).
        limits: bounds (:class:`~mcp_ref._http.HttpLimits`: ``max_event_bytes``,
            ``max_header_bytes``).
        legacy_fallback: when the POST of ``initialize`` gets a 4xx, try the 2024-11-05
            HTTP+SSE transport at the same URL.
        get_stream: open the server's GET stream after initialization.
        max_concurrent_posts: requests awaiting their answers at once; a request past it
            fails at once with an error response (McpError -32603), never waits.
        connect_timeout: seconds to open a connection.
        default_retry: seconds before resuming a stream when the server gave no ``retry``.
        **client_kw: passed to :func:`mcp_ref.client.open_client` (``client_info``,
            ``sampling_handler``, ``elicitation_handler``, ``roots``, ``on_log``,
            ``timeout``...).

    Raises:
        HttpTransportError: the server cannot be reached or refused ``initialize`` at the
            HTTP level (also without a 2024-11-05 endpoint), wrapped by the session as
            :class:`~mcp_ref.trio.SessionClosed` when it happens during ``initialize``.
        McpError: the server answered ``initialize`` with an error.

    Source: 2025-06-18/basic/transports#streamable-http,
    2025-06-18/basic/transports#backwards-compatibility.
    """
    async with (
        open_http_channel(
            url,
            headers=headers,
            limits=limits,
            legacy_fallback=legacy_fallback,
            get_stream=get_stream,
            max_concurrent_posts=max_concurrent_posts,
            connect_timeout=connect_timeout,
            default_retry=default_retry,
        ) as channel,
        open_client(channel, **client_kw) as client,
    ):
        yield client


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
        connect_timeout, stream: see :func:`~mcp_ref.trio.open_websocket_channel`.
        max_message_bytes: the largest message accepted, in bytes (channel and session).
        **client_kw: options of :func:`mcp_ref.client.open_client` (``client_info``,
            ``protocol_version``, ``sampling_handler``, ``roots``, ``timeout``...).

    Raises:
        ValueError, OSError, HandshakeError, trio.TooSlowError: as
            :func:`~mcp_ref.trio.open_websocket_channel`.
        McpError, SessionClosed: initialization failed (as ``open_client``).
    """
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

"""The high-level client over Streamable HTTP and WebSocket: one ``open_*`` per transport.

Each opens the transport's channel (a driver of :mod:`mcp_ref.trio`), then runs
:func:`~mcp_ref.client.open_client` over it: the same initialize, the same typed
:class:`~mcp_ref.client.Client`.  They live here, beside :func:`open_stdio_client`, so
that the driver layer (``mcp_ref.trio``) never imports the client that is built on it.

Their options are the channel opener's and ``open_client``'s, each with its default where
it is defined (nothing is restated here): a keyword the channel opener takes goes to it,
any other to ``open_client``.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from ..trio import HttpClientChannel, open_http_channel, open_websocket_channel
from ._client import Client, open_client

__all__ = ["open_http_client", "open_websocket_client"]


def _split(
    opener: Callable[..., Any], options: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(the keyword options ``opener`` takes, the rest)``."""
    takes = {
        name
        for name, p in inspect.signature(opener).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    }
    return (
        {k: v for k, v in options.items() if k in takes},
        {k: v for k, v in options.items() if k not in takes},
    )


@asynccontextmanager
async def open_http_client(url: str, **options: Any) -> AsyncIterator[Client]:
    """Connect to an MCP server over Streamable HTTP, initialize, and yield a
    :class:`~mcp_ref.client.Client`.

    Args:
        url: the MCP endpoint, e.g. ``"http://127.0.0.1:8000/mcp"``.
        **options: those of :func:`mcp_ref.trio.open_http_channel` (``headers``,
            ``limits``, ``legacy_fallback``, ``get_stream``, ``max_concurrent_posts``,
            ``connect_timeout``, ``default_retry``, ``auth``...: defaults there; ``auth``
            is an :class:`~mcp_ref.client.OAuthClientOptions`, to sign in when the
            server answers 401 or 403 ``insufficient_scope``), and the rest
            those of :func:`mcp_ref.client.open_client` (``client_info``,
            ``sampling_handler``, ``elicitation_handler``, ``roots``, ``on_log``,
            ``timeout``...).

    Raises:
        HttpTransportError: the server cannot be reached or refused ``initialize`` at the
            HTTP level (also without a 2024-11-05 endpoint, and when signing in
            failed: its reason in the message), wrapped by the session as
            :class:`~mcp_ref.SessionClosed` when it happens during ``initialize``.
        McpError: the server answered ``initialize`` with an error.
        TypeError: an option neither function takes.

    Source: 2025-06-18/basic/transports#streamable-http,
    2025-06-18/basic/transports#backwards-compatibility,
    2025-11-25/basic/authorization#token-requirements.
    """
    # open_http_channel hands its options on to the channel it makes.
    channel_options, client_options = _split(HttpClientChannel, options)
    async with (
        open_http_channel(url, **channel_options) as channel,
        open_client(channel, **client_options) as client,
    ):
        yield client


@asynccontextmanager
async def open_websocket_client(url: str, **options: Any) -> AsyncIterator[Client]:
    """Connect to a WebSocket MCP server, initialize, and yield a
    :class:`mcp_ref.client.Client`.

    Usage::

        async with open_websocket_client("ws://127.0.0.1:8000/mcp") as client:
            tools = await client.list_tools()

    Args:
        url: the endpoint, ``ws://`` or ``wss://``.
        **options: those of :func:`mcp_ref.trio.open_websocket_channel` (``origin``,
            ``headers``, ``ping_interval``, ``ping_timeout``, ``close_timeout``,
            ``connect_timeout``, ``stream``...: defaults there), and the rest those of
            :func:`mcp_ref.client.open_client`.  ``max_message_bytes`` (bytes) goes to
            both: the channel and the session take the same largest message.

    Raises:
        ValueError, OSError, HandshakeError, trio.TooSlowError: as
            :func:`~mcp_ref.trio.open_websocket_channel`.
        McpError, SessionClosed: initialization failed (as ``open_client``).
        TypeError: an option neither function takes.
    """
    channel_options, client_options = _split(open_websocket_channel, options)
    if "max_message_bytes" in channel_options:
        client_options["max_message_bytes"] = channel_options["max_message_bytes"]
    async with (
        open_websocket_channel(url, **channel_options) as channel,
        open_client(channel, **client_options) as client,
    ):
        yield client

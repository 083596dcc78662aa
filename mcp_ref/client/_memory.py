"""Test a server in-process: :func:`connect_in_memory` joins a client to it in memory.

Theory of operation
-------------------
Two :class:`~mcp_ref.trio.MemoryMessageChannel` ends (:func:`~mcp_ref.trio.memory_channel_pair`)
carry whole JSON-RPC messages, as bytes, between a server session and a client session
running in the same trio run.  Nothing is mocked: each message is encoded, framed as
one message, checked and decoded by the same core as over stdio or HTTP, so what passes
here passes there (a transport's own limits aside).

The server side is :func:`~mcp_ref.trio.serve_channel`, as every transport's server
side: a :class:`~mcp_ref.server.Server` serves through its ``serve`` method (with its
change notifier), any other :class:`~mcp_ref.trio.Handler` through a plain session.
It runs in the context manager's own nursery.  Leaving the block closes the client's
channel; the server then sees the end of its input and ends its session, and the block
exits once it has, so no task outlives it.

From asyncio, :func:`mcp_ref.asyncio.connect_in_memory` is the twin: the server runs on
trio in a thread of its own, joined to an asyncio client by a socket pair.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import trio

from ..trio import Handler, memory_channel_pair, serve_channel
from ._client import Client, open_client

__all__ = ["connect_in_memory"]


@asynccontextmanager
async def connect_in_memory(
    server: Handler,
    *,
    max_buffer: int | float = math.inf,
    server_options: Mapping[str, Any] | None = None,
    **client_options: Any,
) -> AsyncIterator[Client]:
    """Run ``server`` in this trio run, connect a client to it over memory, initialize,
    and yield the :class:`~mcp_ref.client.Client`.

    Usage::

        async with connect_in_memory(server) as client:
            result = await client.call_tool("add", {"a": 2, "b": 3})

    Args:
        server: a :class:`~mcp_ref.server.Server`, or any
            :class:`~mcp_ref.trio.Handler`.
        max_buffer: messages queued per direction before a send waits (default
            unbounded).
        server_options: options of the server's session
            (:func:`~mcp_ref.trio.open_session`: ``default_timeout``,
            ``max_concurrent_requests``, ...).
        **client_options: those of :func:`~mcp_ref.client.open_client`
            (``sampling_handler``, ``elicitation_handler``, ``roots``, ``on_log``,
            ``timeout``, ``protocol_version``...).

    Raises:
        McpError, SessionClosed: initialization failed (as ``open_client``).
        Whatever the server's session raises (a bug in a handler's own tasks), from
        the ``async with``.

    Source: 2025-06-18/basic/lifecycle (the same initialization as any transport).
    """
    client_end, server_end = memory_channel_pair(max_buffer)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: serve_channel(server, server_end, **dict(server_options or {})))
        try:
            async with open_client(client_end, **client_options) as client:
                yield client
        finally:
            await client_end.aclose()  # the server reads the end of its input

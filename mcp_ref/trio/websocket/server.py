"""The server side: the opening handshake (the core's
:class:`~mcp_ref._websocket_handshake.ServerHandshake`, fed and answered here), one
session per connection, the listeners (:func:`mcp_ref.trio._listen.serve_until_stopped`:
accepting, and the graceful stop)."""

from __future__ import annotations

import logging
from collections.abc import Collection
from contextlib import suppress
from typing import Any

import trio

from ... import _websocket as core
from ..._http import LOCALHOST_HOSTS, LOCALHOST_ORIGINS
from ..._http_peers import allowed_for
from ..._session_rules import DEFAULT_GRACE_SECONDS
from ..._websocket_handshake import Accepted, Refused, ServerHandshake, split_server_options
from .._channel import BROKEN, RECEIVE_SIZE, open_running
from .._listen import Handle, close_listeners, serve_until_stopped
from .._session import serve_channel
from .._session_api import Handler
from .channel import WebSocketChannel

__all__ = ["serve_websocket", "serve_websocket_stream", "websocket_server_handshake"]

log = logging.getLogger("mcp_ref.trio.websocket")


async def websocket_server_handshake(
    stream: trio.abc.Stream,
    *,
    path: str | None = core.DEFAULT_PATH,
    allowed_origins: Collection[str] = LOCALHOST_ORIGINS,
    allowed_hosts: Collection[str] = LOCALHOST_HOSTS,
    busy: int | None = None,
    **channel_kw: Any,
) -> WebSocketChannel | None:
    """Run the server side of the opening handshake on a connected ``stream``
    (the options: :class:`~mcp_ref._websocket_handshake.ServerHandshake`'s, then
    :class:`WebSocketChannel`'s).  Returns the open channel, not yet running, or None
    when the request was refused (the answer is sent) or the client went away.

    Source: 2025-06-18/basic/transports#security-warning.1 (validate ``Origin``),
    2025-06-18/basic/transports#custom-transports.3 (the documented handshake).
    """
    handshake = ServerHandshake(
        path=path, allowed_origins=allowed_origins, allowed_hosts=allowed_hosts, busy=busy
    )
    while (outcome := handshake.next_event()) is core.NEED_DATA:
        try:
            handshake.receive_data(bytes(await stream.receive_some(RECEIVE_SIZE)))
        except BROKEN:
            handshake.receive_data(b"")
    if isinstance(outcome, Refused):
        log.info("refused a WebSocket upgrade: %s %s", outcome.error.status, outcome.error.detail)
        with suppress(*BROKEN):
            await stream.send_all(outcome.data)
    if not isinstance(outcome, Accepted):
        return None
    await stream.send_all(outcome.data)
    return WebSocketChannel(stream, outcome.ws, **channel_kw)


async def serve_websocket_stream(
    stream: trio.abc.Stream,
    target: Handler,
    *,
    handshake_timeout: float = core.DEFAULT_HANDSHAKE_TIMEOUT,
    stop: trio.Event | None = None,
    **options: Any,
) -> None:
    """Serve one MCP session (``target``, a :class:`~mcp_ref.trio.Handler`) on one
    accepted connection: the handshake (within ``handshake_timeout`` seconds), the
    session, the close; the stream is closed on return.  Never raises for a misbehaving
    client.  ``stop``: see :func:`~mcp_ref.trio.serve_channel`.  ``**options``:
    :func:`websocket_server_handshake`'s, the rest :func:`~mcp_ref.trio.open_session`'s
    (:func:`~mcp_ref._websocket_handshake.split_server_options`)."""
    handshake_kw, options = split_server_options(options)
    try:
        channel: WebSocketChannel | None = None
        with trio.move_on_after(handshake_timeout):
            channel = await websocket_server_handshake(stream, **handshake_kw)
        if channel is None or (stop is not None and stop.is_set()):
            return
        async with open_running(channel, channel.run):
            await serve_channel(target, channel, stop, **options)
    except BROKEN as exc:
        log.debug("WebSocket connection failed: %r", exc)
    finally:
        with trio.CancelScope(shield=True):
            await trio.aclose_forcefully(stream)


async def serve_websocket(
    target: Handler,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    path: str | None = core.DEFAULT_PATH,
    allowed_origins: Collection[str] | None = None,
    allowed_hosts: Collection[str] | None = None,
    max_connections: int = 256,
    stop: trio.Event | None = None,
    grace_seconds: float = DEFAULT_GRACE_SECONDS,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
    **kw: Any,
) -> None:
    """Serve ``target`` (a :class:`~mcp_ref.trio.Handler`) over WebSocket on
    ``host:port`` (default loopback; port 0 picks one, given to ``task_status``), one
    session per connection, at most ``max_connections`` at once (more get 503), until
    cancelled or the graceful stop is over: once ``stop`` is set the listeners close,
    each session ends as at end of input, its requests get ``grace_seconds`` (its
    ``drain_timeout``) then -32603; connections open ``core.STOP_SLACK`` s later are
    cancelled.  ``path``, ``allowed_origins``, ``allowed_hosts`` and ``kw``: see
    :func:`serve_websocket_stream` (origin and host defaults:
    :func:`~mcp_ref._http_peers.allowed_for`).

    Raises:
        OSError: the address could not be bound.
        ValueError: ``max_connections`` below 1 or a negative ``grace_seconds``.

    Source: 2025-06-18/basic/transports#custom-transports.1 (a custom transport),
    2025-06-18/basic/transports#security-warning.2 (bind to loopback by default).
    """
    if max_connections < 1 or grace_seconds < 0:
        raise ValueError("max_connections must be at least 1, grace_seconds not negative")
    allowed_origins, allowed_hosts = allowed_for(host, allowed_origins, allowed_hosts)
    # Spec: 2025-06-18/basic/transports#security-warning.2
    # "When running locally, servers SHOULD bind only to localhost (127.0.0.1) rather than all
    # network interfaces (0.0.0.0)"
    listeners = await trio.open_tcp_listeners(port, host=host)
    try:
        bound = listeners[0].socket.getsockname()[1]
        log.info("MCP WebSocket server on ws://%s:%s%s", host, bound, path or "/")
        task_status.started(bound)
        if stop is not None:
            kw.setdefault("drain_timeout", grace_seconds)
        kw.update(path=path, allowed_origins=allowed_origins, allowed_hosts=allowed_hosts)
        handle = _connection_handler(target, max_connections, stop, **kw)
        close_wait = kw.get("drain_timeout", grace_seconds) + core.STOP_SLACK
        await serve_until_stopped(listeners, handle, stop, close_wait=close_wait)
    finally:
        await close_listeners(listeners)


def _connection_handler(
    target: Handler, max_connections: int, stop: trio.Event | None, **kw: Any
) -> Handle:
    """:func:`serve_websocket`'s per connection: :func:`serve_websocket_stream`, the
    handshake refused with 503 while ``max_connections`` are served."""
    active = 0

    async def handle(stream: trio.abc.Stream) -> None:
        nonlocal active
        if active >= max_connections:  # 503, if it passes the other checks
            await serve_websocket_stream(stream, target, busy=max_connections, **kw)
            return
        active += 1
        try:
            await serve_websocket_stream(stream, target, stop=stop, **kw)
        finally:
            active -= 1

    return handle

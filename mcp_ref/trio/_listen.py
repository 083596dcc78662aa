"""Listening sockets for the network servers (Streamable HTTP, WebSocket).

Theory of operation
-------------------
:func:`serve_until_stopped` runs the connections in a nursery of their own, apart from
the tasks that accept them (:func:`accept_connections`: ``trio.serve_listeners``'s loop
with that nursery passed in), so that accepting can stop while they finish.  Addresses
are the core's (:mod:`mcp_ref._http_peers`); :func:`peer_of` only reads the socket.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import trio

from .._http_peers import peer_address

__all__ = ["accept_connections", "close_listeners", "peer_of", "serve_until_stopped"]

log = logging.getLogger("mcp_ref.trio")

# accept() errors that mean "too many connections now" (trio.serve_listeners waits
# them out the same way, rather than crash).
_CAPACITY_ERRNOS: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})

Handle = Callable[[trio.SocketStream], Awaitable[object]]


async def accept_connections(
    listener: trio.SocketListener, connections: trio.Nursery, handle: Handle
) -> None:
    """Accept connections on ``listener`` and run ``handle(stream)`` for each in
    ``connections``, until cancelled.  Raises OSError when ``accept`` fails for another
    reason than too many open connections or files (then it retries after 0.1 s)."""
    while True:
        try:
            stream = await listener.accept()
        except OSError as exc:
            if exc.errno not in _CAPACITY_ERRNOS:
                raise
            log.warning("cannot accept a connection now (%s); trying again in 0.1 s", exc)
            await trio.sleep(0.1)
            continue
        connections.start_soon(handle, stream)


async def close_listeners(listeners: Sequence[trio.SocketListener]) -> None:
    """Close every listener (shielded: even in a cancelled scope)."""
    for listener in listeners:
        with trio.CancelScope(shield=True):
            await listener.aclose()


async def serve_until_stopped(
    listeners: Sequence[trio.SocketListener],
    handle: Handle,
    stop: trio.Event | None,
    *,
    close_wait: float,
    then: Callable[[], Awaitable[object]] | None = None,
) -> None:
    """Serve each connection accepted on ``listeners`` with ``handle`` until ``stop``
    is set (None: until cancelled); then close the listeners (the system refuses new
    clients), await ``then()`` (the server's graceful step), give the connections
    ``close_wait`` seconds and cancel those still running.  Returns once all ended."""
    async with trio.open_nursery() as connections:
        async with trio.open_nursery() as accepting:
            for listener in listeners:
                accepting.start_soon(accept_connections, listener, connections, handle)
            if stop is None:
                await trio.sleep_forever()
            await stop.wait()
            accepting.cancel_scope.cancel()
        await close_listeners(listeners)
        if then is not None:
            await then()
        connections.cancel_scope.deadline = trio.current_time() + close_wait


def peer_of(stream: trio.abc.Stream) -> str | None:
    """The client address of ``stream`` (:func:`mcp_ref._http_peers.peer_address`),
    following ``transport_stream`` (of a ``trio.SSLStream``) down to a socket; None
    without one (memory streams)."""
    sock: Any = None
    inner: Any = stream
    while inner is not None and sock is None:
        sock = getattr(inner, "socket", None)
        inner = getattr(inner, "transport_stream", None)
    try:
        return None if sock is None else peer_address(sock.getpeername())
    except OSError:
        return None

"""The stdio transport, server side, and a graceful stop on a signal.

Theory of operation
-------------------
The client writes newline-delimited messages to the server's stdin, the server to its
stdout (the client side is :mod:`._stdio_process`).  :func:`serve_stdio` runs one
session on duplicates of fds 0 and 1 (``trio.lowlevel.FdStream``: no worker threads;
Unix only) until end of input, with ``sys.stdout`` pointed at stderr so a stray
``print`` cannot corrupt the stream.  :func:`serve_until_signal` turns SIGTERM and
SIGINT into a graceful ``stop``, which ends the session's input as if the peer had.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, redirect_stdout, suppress
from typing import Any

import trio

from ._channel import StreamChannel
from ._session import DEFAULT_GRACE_SECONDS, Handler, serve_channel

__all__ = ["serve_stdio", "serve_until_signal", "stdio_channel"]

log = logging.getLogger("mcp_ref.trio.stdio")


@asynccontextmanager
async def stdio_channel() -> AsyncIterator[StreamChannel]:
    """This process's stdin and stdout as a :class:`StreamChannel`, for a server;
    meanwhile ``sys.stdout`` points at stderr.  The fds' blocking modes are restored at
    the end.  Source: 2025-06-18/basic/transports#stdio."""
    sys.stdout.flush()
    blocking = {fd: os.get_blocking(fd) for fd in (0, 1)}
    stdin = trio.lowlevel.FdStream(os.dup(0))
    stdout = trio.lowlevel.FdStream(os.dup(1))
    try:
        # Spec: 2025-06-18/basic/transports#stdio.4
        # "The server MUST NOT write anything to its `stdout` that is not a valid MCP message."
        with redirect_stdout(sys.stderr):
            yield StreamChannel(stdout, stdin)
    finally:
        for fd, mode in blocking.items():
            with suppress(OSError):
                os.set_blocking(fd, mode)


async def serve_stdio(
    handler: Handler,
    *,
    stop: trio.Event | None = None,
    grace_seconds: float = DEFAULT_GRACE_SECONDS,
    **session_kw: Any,
) -> None:
    """Serve ``handler`` (a :class:`~mcp_ref.trio.Handler`, e.g. an
    ``mcp_ref.server.Server``) on this process's stdin and stdout; return once input
    ended (or ``stop`` was set, e.g. on SIGTERM) and the requests are answered: those
    still running ``grace_seconds`` later (the session's ``drain_timeout`` unless
    ``session_kw``, :func:`~mcp_ref.trio.open_session`'s, has one) get -32603.

    Raises:
        ValueError: ``grace_seconds`` is negative.

    Source: 2025-06-18/basic/transports#stdio, 2025-06-18/basic/lifecycle#stdio.
    """
    if grace_seconds < 0:
        raise ValueError("grace_seconds must not be negative")
    session_kw.setdefault("drain_timeout", grace_seconds)
    async with stdio_channel() as channel:
        await serve_channel(handler, channel, stop=stop, **session_kw)


async def serve_until_signal(serve: Callable[[trio.Event], Awaitable[None]]) -> int | None:
    """Run ``serve(stop)`` until it returns, with SIGTERM and SIGINT setting ``stop``
    (a graceful stop); a second signal cancels it at once, and SIGINT does not raise
    ``KeyboardInterrupt``.  Call it from the main thread.  Returns the first signal
    received (``signal.SIGTERM`` or ``signal.SIGINT``), or None.

    Source: 2025-06-18/basic/lifecycle#stdio.1 (a client sends SIGTERM to a server
    that does not exit when its input closes).
    """
    stop = trio.Event()
    got: int | None = None
    async with trio.open_nursery() as nursery:

        async def watch(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
            nonlocal got
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                task_status.started()
                async for signum in signals:
                    if got is None:
                        got = signum
                        log.info("%s: stopping gracefully", signal.Signals(signum).name)
                        stop.set()
                    else:
                        nursery.cancel_scope.cancel()  # a second signal: stop now

        await nursery.start(watch)
        await serve(stop)
        nursery.cancel_scope.cancel()
    return got

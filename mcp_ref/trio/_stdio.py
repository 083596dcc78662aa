"""The stdio transport, server side, and a graceful stop for any transport.

Theory of operation
-------------------
Stdio carries newline-delimited messages: the client writes to the server's stdin, the
server writes to its stdout; stderr is free-form logging (the client side is
:mod:`._stdio_process`).  :func:`serve_stdio` runs one session on duplicates of fds 0
and 1 (``trio.lowlevel.FdStream``: no worker threads; Unix only) until end of input,
with ``sys.stdout`` pointed at stderr so a stray ``print`` cannot corrupt the stream.

A graceful stop (:func:`serve_until_signal`) ends the session's *input*
(:class:`StoppableChannel`), so the session ends as when the peer closes its side: the
requests in progress get their grace, then an error answer.  The WebSocket server stops
its sessions the same way.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, redirect_stdout
from typing import Any

import trio

from ..events import RequestId
from ._channel import MessageChannel, StreamChannel
from ._session import DEFAULT_GRACE_SECONDS, Handler, serve_channel

__all__ = [
    "StoppableChannel",
    "serve_channel_until",
    "serve_stdio",
    "serve_until_signal",
    "stdio_channel",
]

log = logging.getLogger("mcp_ref.trio.stdio")


@asynccontextmanager
async def stdio_channel() -> AsyncIterator[StreamChannel]:
    """This process's stdin and stdout as a :class:`StreamChannel`, for a server;
    meanwhile ``sys.stdout`` points at stderr.  The fds' blocking modes (FdStream makes
    them non-blocking) are restored at the end.

    Source: 2025-06-18/basic/transports#stdio.
    """
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
            try:
                os.set_blocking(fd, mode)
            except OSError:
                pass


async def serve_stdio(
    handler: Handler,
    *,
    stop: trio.Event | None = None,
    grace_seconds: float = DEFAULT_GRACE_SECONDS,
    **session_kw: Any,
) -> None:
    """Serve one MCP session on this process's stdin and stdout, until end of input or
    ``stop``.

    Args:
        handler: the server (e.g. an ``mcp_ref.server.Server``), a
            :class:`~mcp_ref.trio.Handler`.
        stop: set it to stop gracefully (e.g. on SIGTERM): stdin is no longer read,
            as if it had ended.
        grace_seconds: at end of input (or ``stop``), seconds the requests in progress
            may still take (default 5.0); then each one still running is cancelled and
            answered with -32603.  The session's ``drain_timeout``, which overrides it
            when given.
        **session_kw: passed to :func:`~mcp_ref.trio.open_session`.

    Returns when the client closes our stdin (or ``stop`` is set) and the requests it
    sent are answered.

    Raises:
        ValueError: ``grace_seconds`` is negative.

    Source: 2025-06-18/basic/transports#stdio, 2025-06-18/basic/lifecycle#stdio.
    """
    if grace_seconds < 0:
        raise ValueError("grace_seconds must not be negative")
    session_kw.setdefault("drain_timeout", grace_seconds)
    async with stdio_channel() as channel:
        await serve_channel_until(handler, channel, stop, **session_kw)


class StoppableChannel:
    """A :class:`~mcp_ref.trio.MessageChannel` whose input can be ended from our side.

    It passes everything through to ``inner`` (the transport's channel), except that
    after :meth:`stop` its ``receive()`` returns ``b""`` (one under way is cancelled,
    which loses nothing on a trio stream or memory channel).  Writes go on meanwhile.
    """

    def __init__(self, inner: MessageChannel) -> None:
        self.inner = inner
        self.framing = inner.framing
        self.stopped: str | None = None
        """Why :meth:`stop` ended the input (None until then)."""
        self._scope: trio.CancelScope | None = None

    @property
    def eof_reason(self) -> str | None:
        """Why input ended: the stop's reason, else the inner channel's."""
        return self.stopped or getattr(self.inner, "eof_reason", None)

    def stop(self, reason: str = "the server is shutting down") -> None:
        """End the input now (idempotent)."""
        if self.stopped is None:
            self.stopped = reason
        if self._scope is not None:
            self._scope.cancel()

    async def receive(self) -> bytes:
        """The inner channel's next input, or ``b""`` once stopped."""
        if self.stopped is None:
            with trio.CancelScope() as self._scope:
                try:
                    return await self.inner.receive()
                finally:
                    self._scope = None
        await trio.lowlevel.checkpoint()
        return b""

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """The inner channel's ``send``."""
        await self.inner.send(data, related_request_id=related_request_id)

    async def aclose(self) -> None:
        """Close the inner channel."""
        await self.inner.aclose()

    def __getattr__(self, name: str) -> Any:
        # attach_session and the like, when the inner channel has them.
        return getattr(self.inner, name)


async def serve_until_signal(serve: Callable[[trio.Event], Awaitable[None]]) -> int | None:
    """Run ``serve(stop)`` until it returns, with SIGTERM and SIGINT setting ``stop``
    (a graceful stop); a second signal cancels it at once.  Meanwhile SIGINT does not
    raise ``KeyboardInterrupt``.  Call it from the main thread.

    Returns:
        The first signal received (``signal.SIGTERM`` or ``signal.SIGINT``), or None
        when ``serve`` returned by itself.

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


async def serve_channel_until(
    handler: Handler, channel: MessageChannel, stop: trio.Event | None, **session_kw: Any
) -> None:
    """:func:`~mcp_ref.trio.serve_channel` that ends the channel's input when ``stop``
    is set (:class:`StoppableChannel`); with ``stop`` None, just ``serve_channel``.

    Source: 2025-06-18/basic/lifecycle#stdio.2 (the server may end the session).
    """
    if stop is None:
        await serve_channel(handler, channel, **session_kw)
        return
    stoppable = StoppableChannel(channel)

    async def watch() -> None:
        await stop.wait()
        stoppable.stop()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch)
        await serve_channel(handler, stoppable, **session_kw)
        nursery.cancel_scope.cancel()

"""Message channels: what a trio :class:`~mcp_ref.trio.Session` reads from and writes to.

Theory of operation
-------------------
A session does not know its transport: it talks to a :class:`MessageChannel`, which
moves bytes and says how they are framed.  A ``"lines"`` channel (stdio, a socket)
receives arbitrary chunks of one newline-delimited stream and the core finds the
boundaries (``Connection.receive_data``); a ``"messages"`` channel (an HTTP body, a
WebSocket frame) receives one whole message per ``receive`` (``receive_message``).
A channel never parses: garbage is handed on, and the core answers it (-32700).
Here: :class:`StreamChannel` over trio byte streams, :func:`memory_channel_pair`,
:func:`open_running` (a channel with its background tasks), and last, a fast path a
reader may skip, :func:`pipe_send_nowait`.
"""

from __future__ import annotations

import math
import os
import select
import stat
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Final, Literal, Protocol, TypeVar, runtime_checkable

import trio

from ..events import RequestId

__all__ = ["MemoryMessageChannel", "MessageChannel", "StreamChannel", "memory_channel_pair"]

RECEIVE_SIZE: Final = 65536  # bytes per receive_some call, for every trio driver
BROKEN: Final = (trio.BrokenResourceError, trio.ClosedResourceError)  # gone, or closed
MAX_READS_WITHOUT_YIELD = 64  # waiting messages a MemoryMessageChannel takes in a burst


@runtime_checkable
class MessageChannel(Protocol):
    """A bidirectional transport of MCP messages, as the session sees it.

    Attributes:
        framing: ``"lines"`` (a newline-delimited byte stream, in arbitrary chunks) or
            ``"messages"`` (one whole message per ``receive``).

    Optional, read with ``getattr``: ``eof_reason: str | None`` (why input ended, set
    before ``receive`` returns ``b""``; it goes into :class:`~mcp_ref.trio.SessionClosed`);
    ``attach_session(session)`` (called before the session's tasks start: a channel
    whose input arrives in other tasks may then ``await session.push(data)``);
    ``send_nowait(data, *, related_request_id=None)`` (a ``send`` that raises
    ``trio.WouldBlock``, having written nothing, instead of waiting; tried first).
    The session sends one whole message per call, one call at a time.
    """

    framing: Literal["lines", "messages"]

    async def receive(self) -> bytes:
        """The next chunk (``"lines"``) or message (``"messages"``); ``b""`` at end of
        input, also when the peer went away.  Cancelling it must not lose data."""
        ...

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """Write one message, the bytes the core produced (framed already for
        ``"lines"``).  ``related_request_id``: the incoming request it belongs to (its
        response, or sent while handling it), else None; Streamable HTTP routes on it.

        Raises:
            trio.BrokenResourceError: the peer went away (any error ends the session).
            trio.ClosedResourceError: this end was closed.
        """
        ...

    async def aclose(self) -> None:
        """Close both directions.  Idempotent."""
        ...


class StreamChannel:
    """A ``"lines"`` :class:`MessageChannel` over trio byte streams: ``stream`` is
    bidirectional (a socket, a memory stream), or the send half of a pair with
    ``receive_stream`` (pipes, fds 0 and 1); ``receive`` reads at most ``receive_size``
    bytes.  Raises TypeError when ``stream`` alone is not bidirectional, ValueError for
    a ``receive_size`` below 1.  Source: 2025-06-18/basic/transports#stdio.
    """

    framing: Literal["lines", "messages"] = "lines"
    eof_reason: str | None = None

    def __init__(
        self,
        stream: trio.abc.SendStream,
        receive_stream: trio.abc.ReceiveStream | None = None,
        *,
        receive_size: int = RECEIVE_SIZE,
    ) -> None:
        self._one_stream = receive_stream is None
        if receive_stream is None:
            if not isinstance(stream, trio.abc.ReceiveStream):
                raise TypeError("give a bidirectional Stream, or a send and a receive stream")
            receive_stream = stream
        if receive_size < 1:
            raise ValueError("receive_size must be positive")
        self.send_stream = stream
        self.receive_stream = receive_stream
        self.receive_size = receive_size
        self.send_nowait = pipe_send_nowait(stream)

    async def receive(self) -> bytes:
        """The next chunk, at most ``receive_size`` bytes; ``b""`` at end of input."""
        try:
            return bytes(await self.receive_stream.receive_some(self.receive_size))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return b""

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """Write ``data`` whole (errors: as :meth:`MessageChannel.send`)."""
        await self.send_stream.send_all(data)

    async def aclose(self) -> None:
        """Close the send stream, then the receive stream (if another)."""
        try:
            await self.send_stream.aclose()
        finally:
            if not self._one_stream:
                await self.receive_stream.aclose()


class MemoryMessageChannel:
    """One end of :func:`memory_channel_pair`: a ``"messages"`` channel over two trio
    memory channels."""

    framing: Literal["lines", "messages"] = "messages"
    eof_reason: str | None = None

    def __init__(
        self,
        send_channel: trio.MemorySendChannel[bytes],
        receive_channel: trio.MemoryReceiveChannel[bytes],
    ) -> None:
        self.send_channel = send_channel
        self.receive_channel = receive_channel
        self._reads_without_yield = 0

    async def receive(self) -> bytes:
        """The next whole message; ``b""`` once the other end closed.  A waiting one is
        taken without a schedule point, at most :data:`MAX_READS_WITHOUT_YIELD` in a row:
        the reader takes a burst in one step, yet a busy peer cannot starve the others."""
        if self._reads_without_yield < MAX_READS_WITHOUT_YIELD:
            await trio.lowlevel.checkpoint_if_cancelled()
            try:
                message = self.receive_channel.receive_nowait()
            except trio.WouldBlock:
                pass
            except (trio.EndOfChannel, trio.ClosedResourceError):
                return b""
            else:
                self._reads_without_yield += 1
                return message
        self._reads_without_yield = 0
        return await receive_or_eof(self.receive_channel)

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """Queue one message for the other end, waiting while its buffer is full."""
        await self.send_channel.send(data)

    def send_nowait(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """Queue one message if the other end's buffer has room, else raise
        ``trio.WouldBlock`` (nothing queued)."""
        self.send_channel.send_nowait(data)

    async def aclose(self) -> None:
        """Close both directions (the other end then receives ``b""``)."""
        await self.send_channel.aclose()
        await self.receive_channel.aclose()


def memory_channel_pair(
    max_buffer: int | float = math.inf,
) -> tuple[MemoryMessageChannel, MemoryMessageChannel]:
    """Two connected ``"messages"`` channels: what one sends, the other receives;
    ``max_buffer`` messages queued per direction before ``send`` waits (default
    unbounded, like ``trio.testing.memory_stream_pair``)."""
    a_send, b_receive = trio.open_memory_channel[bytes](max_buffer)
    b_send, a_receive = trio.open_memory_channel[bytes](max_buffer)
    return MemoryMessageChannel(a_send, a_receive), MemoryMessageChannel(b_send, b_receive)


async def receive_or_eof(channel: trio.MemoryReceiveChannel[bytes]) -> bytes:
    """The next message of a channel's inbox; ``b""`` once it is closed (either end):
    ``receive`` for channels with an inbox."""
    try:
        return await channel.receive()
    except (trio.EndOfChannel, trio.ClosedResourceError):
        return b""


_C = TypeVar("_C", bound=MessageChannel)


@asynccontextmanager
async def open_owned_nursery() -> AsyncIterator[trio.Nursery]:
    """A nursery for the tasks that serve an ``async with`` block (what an ``open_*``
    entry point yields): cancelled when the block ends, however it ends, and an
    exception of the block propagates unchanged (trio would wrap it in an exception
    group).  The caller's own ``finally`` around its ``yield`` runs before the cancel."""
    body_error: BaseException | None = None
    async with trio.open_nursery() as nursery:
        try:
            yield nursery
        except BaseException as exc:
            if isinstance(exc, GeneratorExit):
                raise
            body_error = exc
        finally:
            nursery.cancel_scope.cancel()
    if body_error is not None:
        raise body_error


@asynccontextmanager
async def open_running(channel: _C, run: Callable[..., Awaitable[None]]) -> AsyncIterator[_C]:
    """Yield ``channel`` with ``run`` (its background tasks, started with
    ``nursery.start``) running in a nursery of this block's own; on exit close the
    channel (shielded: its ``aclose`` bounds its own wait), then cancel what is left."""
    async with open_owned_nursery() as nursery:
        await nursery.start(run)
        try:
            yield channel
        finally:
            with trio.CancelScope(shield=True):
                await channel.aclose()


# -- A fast path for pipes, which a reader may skip: a small message written at once.
# The session's writer tries a channel's optional ``send_nowait`` before its ``send``.
# For a :class:`~mcp_ref.trio.StreamChannel` whose send stream is a pipe (a child's
# stdin, our stdout under ``serve_stdio``), :func:`pipe_send_nowait` gives one: a single
# ``os.write``, which POSIX keeps whole for at most ``PIPE_BUF`` bytes on a non-blocking
# pipe; else the session falls back to ``send`` (trio's ``send_all``, which reports any
# error).
#
# Why: ``send_all`` takes a schedule point before it writes, so with 100 requests in
# flight over stdio client and server take turns instead of overlapping.  The figures
# are in bench/README.md ("stdio and the fast path for pipes").  Sockets get no fast
# path (a non-blocking write to a socket may be partial).

PIPE_BUF = select.PIPE_BUF
"""The largest write to a pipe that POSIX keeps whole (4096 bytes on Linux, >= 512)."""


def pipe_send_nowait(stream: trio.abc.SendStream) -> Callable[..., None] | None:
    """A ``send_nowait(data, *, related_request_id=None)`` for ``stream`` when it is a
    ``trio.lowlevel.FdStream`` on a pipe or FIFO, else None.  It writes ``data`` whole,
    or raises ``trio.WouldBlock`` having written nothing (over :data:`PIPE_BUF` bytes,
    a full pipe, a failed write).  Call it only while no ``send_all`` is under way."""
    if not isinstance(stream, trio.lowlevel.FdStream):
        return None
    try:
        is_pipe = stat.S_ISFIFO(os.fstat(stream.fileno()).st_mode)
    except OSError:
        return None
    if not is_pipe:
        return None

    def send_nowait(data: bytes, *, related_request_id: RequestId | None = None) -> None:
        if len(data) > PIPE_BUF:
            raise trio.WouldBlock
        try:
            os.write(stream.fileno(), data)  # all or nothing (-1 once closed: EBADF)
        except OSError:  # EAGAIN (full), EPIPE, EBADF: the plain send takes over
            raise trio.WouldBlock from None

    return send_nowait

"""Message channels: what a trio :class:`~mcp_ref.trio.Session` reads from and writes to.

Theory of operation
-------------------
A session does not know its transport.  It talks to a :class:`MessageChannel`, which
only moves bytes and says how they are framed:

* ``framing == "lines"``: ``receive()`` returns arbitrary chunks of one newline-delimited
  byte stream (stdio, a TCP socket).  The session feeds them to the core with
  ``Connection.receive_data`` and the core finds the message boundaries.
* ``framing == "messages"``: every ``receive()`` returns exactly one whole message (an
  HTTP body, a WebSocket frame, the data of one SSE event).  The session feeds them with
  ``Connection.receive_message``; ``send`` gets one message without a newline.

Parsing never happens in a channel: a channel that receives garbage hands the garbage
on, and the core answers it (-32700, -32600).

End of input is ``b""`` from ``receive()``.  A channel that knows *why* its input ended
(the stdio client channel knows the child's exit code and last stderr lines) may say so
in an optional ``eof_reason`` attribute; the session puts it in the
:class:`~mcp_ref.trio.SessionClosed` it raises to waiting callers.

A ``send`` that raises means the byte stream is broken (it may hold half a message):
the session calls ``Connection.send_failed()`` and ends.

A channel may also offer a synchronous ``try_send(data, *, related_request_id=None) ->
int``: write what it can *now*, without waiting, and return how many bytes it took (a
``"messages"`` channel takes all or nothing).  The session calls it first and awaits
``send`` for the rest only, so a write that needs no waiting costs no trip through the
scheduler.  ``try_send`` never raises: on any trouble it returns 0 and the ``send`` that
follows reports the error.  Both channels here have it: :class:`StreamChannel` over a
socket or a pipe (a non-blocking ``os.write`` on its file descriptor, POSIX only) and
the memory channels (``send_nowait``).

This module has two channels: :class:`StreamChannel` over trio byte streams, and
:func:`memory_channel_pair`, two connected in-memory "messages" channels for tests.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from typing import Literal, Protocol, runtime_checkable

import trio

from ..events import RequestId

__all__ = [
    "DEFAULT_RECEIVE_SIZE",
    "MemoryMessageChannel",
    "MessageChannel",
    "StreamChannel",
    "memory_channel_pair",
]

DEFAULT_RECEIVE_SIZE = 65536
"""Bytes asked for per ``receive_some`` call by :class:`StreamChannel`."""


@runtime_checkable
class MessageChannel(Protocol):
    """A bidirectional transport of MCP messages, as the session sees it.

    Attributes:
        framing: ``"lines"`` (a newline-delimited byte stream, received in arbitrary
            chunks) or ``"messages"`` (one whole message per ``receive``).

    Optional attribute (read with ``getattr``): ``eof_reason: str | None``, a
    human-readable account of why input ended, set before ``receive`` returns ``b""``.

    Optional method (read with ``getattr``): ``try_send(data, *, related_request_id=None)
    -> int``, the bytes of ``data`` written at once without waiting (all or none for
    ``"messages"``); never raises (see the module docstring).

    Optional method (read with ``getattr``): ``attach_session(session)``, called with the
    :class:`~mcp_ref.trio.Session` once it runs; a ``"messages"`` channel whose input
    arrives in other tasks may then hand messages over with ``await session.push(data)``
    instead of queueing them for ``receive`` (one task switch less per message).
    """

    framing: Literal["lines", "messages"]

    async def receive(self) -> bytes:
        """The next chunk (``"lines"``) or message (``"messages"``); ``b""`` at end of input.

        Should not raise when the peer goes away: return ``b""`` instead.  Cancelling it
        must not lose data.
        """
        ...

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """Write one message (framed already for ``"lines"``).

        Args:
            data: the bytes the core produced.
            related_request_id: the id of the incoming request this message belongs to (its
                response, or a notification or request made while handling it), else None.
                Streamable HTTP routes on it; byte streams ignore it.

        Raises:
            Any exception when the message could not be written; the session then ends.
        """
        ...

    async def aclose(self) -> None:
        """Close both directions.  Idempotent."""
        ...


def _fileno_of(stream: object) -> Callable[[], int] | None:
    """How to get the file descriptor under a trio stream: ``fileno`` of an ``FdStream``
    (pipes) or of a ``SocketStream``'s socket (-1 once closed); None for any other
    stream (in-memory, TLS) and off POSIX."""
    if sys.platform == "win32":
        return None
    if isinstance(stream, trio.SocketStream):
        return stream.socket.fileno
    if isinstance(stream, trio.lowlevel.FdStream):
        return stream.fileno
    return None


def _write_now(fileno: Callable[[], int] | None, data: bytes) -> int:
    """Write what the socket or pipe ``fileno`` (from :func:`_fileno_of`) takes now,
    without blocking: the number of bytes written, 0 when there is no descriptor, it
    is closed, full or broken (the caller's blocking write then says which)."""
    if fileno is None:
        return 0
    fd = fileno()
    if fd < 0:
        return 0
    try:
        return os.write(fd, data)
    except OSError:
        return 0


class StreamChannel:
    """A ``"lines"`` :class:`MessageChannel` over trio byte streams.

    Args:
        stream: a bidirectional ``trio.abc.Stream`` (a socket, one end of
            ``trio.testing.memory_stream_pair``), or the send half when
            ``receive_stream`` is given.
        receive_stream: the receive half, when the two directions are separate streams
            (a child process's stdin/stdout pipes, fds 0 and 1).
        receive_size: the most bytes read per ``receive`` call (default 64 KiB).

    ``receive`` turns ``trio.BrokenResourceError`` and ``trio.ClosedResourceError`` into
    end of input (``b""``).

    Source: 2025-06-18/basic/transports#stdio (newline-delimited messages on a byte
    stream).
    """

    framing: Literal["lines", "messages"] = "lines"
    eof_reason: str | None = None

    def __init__(
        self,
        stream: trio.abc.SendStream,
        receive_stream: trio.abc.ReceiveStream | None = None,
        *,
        receive_size: int = DEFAULT_RECEIVE_SIZE,
    ) -> None:
        self._one_stream = receive_stream is None
        if receive_stream is None:
            if not isinstance(stream, trio.abc.ReceiveStream):
                raise TypeError("give a bidirectional Stream, or a send and a receive stream")
            receive_stream = stream
        if receive_size < 1:
            raise ValueError("receive_size must be positive")
        self.send_stream = stream
        """The stream messages are written to."""
        self.receive_stream = receive_stream
        """The stream messages are read from."""
        self.receive_size = receive_size
        self._send_fd = _fileno_of(stream)
        if type(self).send is not StreamChannel.send and (
            type(self).try_send is StreamChannel.try_send
        ):
            self._send_fd = None  # a subclass's own send must see every write

    async def receive(self) -> bytes:
        """The next chunk of bytes, at most ``receive_size``; ``b""`` at end of input."""
        try:
            return bytes(await self.receive_stream.receive_some(self.receive_size))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return b""

    def try_send(self, data: bytes, *, related_request_id: RequestId | None = None) -> int:
        """Write what the socket or pipe takes now; the number of bytes written (0 for
        other streams, when it is full, and on any error: ``send`` then reports it).

        A subclass that overrides ``send`` gets no fast path unless it overrides
        ``try_send`` too."""
        return _write_now(self._send_fd, data)

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """Write ``data`` whole (``related_request_id`` is ignored by byte streams).

        Raises:
            trio.BrokenResourceError: the peer closed its end.
            trio.ClosedResourceError: this channel was closed.
        """
        await self.send_stream.send_all(data)

    async def aclose(self) -> None:
        """Close the send stream, then the receive stream (one close when they are one)."""
        try:
            await self.send_stream.aclose()
        finally:
            if not self._one_stream:
                await self.receive_stream.aclose()


class MemoryMessageChannel:
    """One end of :func:`memory_channel_pair`: a ``"messages"`` channel in memory."""

    framing: Literal["lines", "messages"] = "messages"
    eof_reason: str | None = None

    def __init__(
        self,
        send_channel: trio.MemorySendChannel[bytes],
        receive_channel: trio.MemoryReceiveChannel[bytes],
    ) -> None:
        self._send = send_channel
        self._receive = receive_channel
        self.sent: int = 0
        """Messages sent so far (for tests)."""

    async def receive(self) -> bytes:
        """The next whole message; ``b""`` once the other end closed.

        A message already queued is taken without a trip through the scheduler (the
        session reads on until the queue is empty, then waits here).
        """
        try:
            try:
                return self._receive.receive_nowait()
            except trio.WouldBlock:
                return await self._receive.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            return b""

    def try_send(self, data: bytes, *, related_request_id: RequestId | None = None) -> int:
        """Queue one message if there is room: ``len(data)``, else 0 (also when closed:
        ``send`` then raises)."""
        try:
            self._send.send_nowait(data)
        except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
            return 0
        self.sent += 1
        return len(data)

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """Queue one message for the other end.

        Raises:
            trio.BrokenResourceError: the other end was closed.
            trio.ClosedResourceError: this end was closed.
        """
        await self._send.send(data)
        self.sent += 1

    async def aclose(self) -> None:
        """Close both directions (the other end then receives ``b""``)."""
        await self._send.aclose()
        await self._receive.aclose()


def memory_channel_pair(
    max_buffer: int | float = math.inf,
) -> tuple[MemoryMessageChannel, MemoryMessageChannel]:
    """Two connected ``"messages"`` channels: what one sends, the other receives.

    Args:
        max_buffer: messages queued per direction before ``send`` blocks (default
            unbounded, like ``trio.testing.memory_stream_pair``; for tests only).
    """
    a_send, b_receive = trio.open_memory_channel[bytes](max_buffer)
    b_send, a_receive = trio.open_memory_channel[bytes](max_buffer)
    return MemoryMessageChannel(a_send, a_receive), MemoryMessageChannel(b_send, b_receive)

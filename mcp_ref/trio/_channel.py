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
the session calls ``Connection.send_failed()`` and ends.  Only the session's writer
calls ``send``, one call at a time: a ``"messages"`` channel gets one message per call;
a ``"lines"`` channel may get several whole lines in one call (what piled up while the
previous write was under way), with ``related_request_id=None``.

This module has two channels: :class:`StreamChannel` over trio byte streams, and
:func:`memory_channel_pair`, two connected in-memory "messages" channels for tests.
"""

from __future__ import annotations

import math
from typing import Literal, Protocol, runtime_checkable

import trio

from ..events import RequestId

__all__ = [
    "DEFAULT_RECEIVE_SIZE",
    "MAX_READS_WITHOUT_YIELD",
    "MemoryMessageChannel",
    "MessageChannel",
    "StreamChannel",
    "memory_channel_pair",
]

DEFAULT_RECEIVE_SIZE = 65536
"""Bytes asked for per ``receive_some`` call by :class:`StreamChannel`."""

MAX_READS_WITHOUT_YIELD = 64
"""Waiting messages a :class:`MemoryMessageChannel` hands over before it lets other
tasks run (a schedule point)."""


@runtime_checkable
class MessageChannel(Protocol):
    """A bidirectional transport of MCP messages, as the session sees it.

    Attributes:
        framing: ``"lines"`` (a newline-delimited byte stream, received in arbitrary
            chunks) or ``"messages"`` (one whole message per ``receive``).

    Optional attribute (read with ``getattr``): ``eof_reason: str | None``, a
    human-readable account of why input ended, set before ``receive`` returns ``b""``.

    Optional method (read with ``getattr``): ``attach_session(session)``, called with the
    :class:`~mcp_ref.trio.Session` before its tasks start; a ``"messages"`` channel whose
    input arrives in other tasks may then hand messages over with ``await
    session.push(data)`` instead of queueing them for ``receive``.

    Optional method: ``send_nowait(data, *, related_request_id=None)``, a synchronous
    ``send`` that raises ``trio.WouldBlock`` (having written nothing) instead of waiting.
    The session tries it first: a message taken at once needs no send timeout and cannot
    be cut in half by a cancellation, so the session skips the shielded, timed scope it
    puts around ``send`` (the trio idiom of ``MemorySendChannel.send_nowait``).
    """

    framing: Literal["lines", "messages"]

    async def receive(self) -> bytes:
        """The next chunk (``"lines"``) or message (``"messages"``); ``b""`` at end of input.

        Should not raise when the peer goes away: return ``b""`` instead.  Cancelling it
        must not lose data.
        """
        ...

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """Write one message (``"lines"``: one or more, each framed already).

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

    async def receive(self) -> bytes:
        """The next chunk of bytes, at most ``receive_size``; ``b""`` at end of input."""
        try:
            return bytes(await self.receive_stream.receive_some(self.receive_size))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return b""

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
        self.send_channel = send_channel
        """The trio memory channel messages are sent on."""
        self.receive_channel = receive_channel
        """The trio memory channel messages are received from."""
        self._reads_without_yield = 0

    async def receive(self) -> bytes:
        """The next whole message; ``b""`` once the other end closed.

        A message already waiting is taken without a schedule point (still a
        cancellation point), at most :data:`MAX_READS_WITHOUT_YIELD` in a row, so the
        session's reader takes a burst in one step, and a peer that keeps the buffer
        full cannot starve the other tasks.
        """
        try:
            if self._reads_without_yield < MAX_READS_WITHOUT_YIELD:
                await trio.lowlevel.checkpoint_if_cancelled()
                try:
                    message = self.receive_channel.receive_nowait()
                except trio.WouldBlock:
                    pass
                else:
                    self._reads_without_yield += 1
                    return message
            self._reads_without_yield = 0
            return await self.receive_channel.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            return b""

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """Queue one message for the other end; wait only while its buffer is full.

        A message that fits goes in without a schedule point (still a cancellation
        point), as a byte stream's ``send`` returns once the kernel buffer took the
        bytes: the session's writer then writes a burst of messages in one step.

        Raises:
            trio.BrokenResourceError: the other end was closed.
            trio.ClosedResourceError: this end was closed.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            self.send_channel.send_nowait(data)
        except trio.WouldBlock:
            await self.send_channel.send(data)

    def send_nowait(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """Queue one message for the other end if its buffer has room.

        Raises:
            trio.WouldBlock: the buffer is full (nothing was queued).
            trio.BrokenResourceError: the other end was closed.
            trio.ClosedResourceError: this end was closed.
        """
        self.send_channel.send_nowait(data)

    async def aclose(self) -> None:
        """Close both directions (the other end then receives ``b""``)."""
        await self.send_channel.aclose()
        await self.receive_channel.aclose()


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

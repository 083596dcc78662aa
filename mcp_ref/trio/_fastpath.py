"""The session's one fast path, off by default: what needs no waiting skips the
scheduler.  A reader can skip this module: without it the session takes its plain path.

Theory of operation
-------------------
On the plain path every message costs trips through the scheduler even when nothing has
to wait: the send lock and ``channel.send`` are schedule points, so are the dispatch lock
and a memory channel's ``receive``.  Under load the send lock also makes a convoy: a
writer that yields inside ``channel.send`` while holding it makes every other writer
park, and the lock is then handed on one writer per trip through the scheduler; a
``"messages"`` channel's reader likewise takes one message per trip.

With ``open_session(..., fast_path=True)`` the session skips those trips where nothing
waits, in three places, each marked "fast path" where the session calls this module:

* **writing**: when no write is under way, the bytes go to a synchronous writer of the
  channel (:func:`writer_for`) first: the whole message goes out with no lock and no
  schedule point, or the lock is taken at once (nothing can come between) and the rest
  goes the plain way;
* **the dispatch lock** is taken without a schedule point when it is free
  (:func:`acquire`; still a cancellation point, still first come first served);
* **reading**: a message a memory channel already holds is taken without a schedule
  point (:func:`reader_for`).

Writers:

* :class:`~mcp_ref.trio.MemoryMessageChannel`: ``send_nowait`` (all or nothing);
* :class:`~mcp_ref.trio.StreamChannel` (and the stdio client's ``ProcessChannel``) over
  a trio ``SocketStream`` or ``FdStream``: a non-blocking ``os.write`` on the stream's
  file descriptor (POSIX), which takes what the kernel buffer has room for;
* any other channel (WebSocket, Streamable HTTP, a wrapper): none, the plain path.

What it buys, measured with ``python -m bench --quick --only e2e`` on 2 busy cores
(requests per second, plain -> fast path, the better of two runs): in-process sessions
x1 5,000 -> 6,700 and x100 5,200 -> 11,000; stdio x1 2,700 -> 3,900 and x100 7,300 ->
21,700; WebSocket and Streamable HTTP about unchanged (their channels have no fast
writer).  Under load the plain path runs one message per trip through the scheduler
(6,000 trips for 3,000 in-process requests), the fast path many at once (144 trips).

What it costs: a second way out for the bytes beside trio's stream (an ``os.write`` on a
descriptor trio owns; trio's own ``send_all`` is still used for anything that must
wait), three branches in the session, and fairness: a task that finds a lock free or a
message waiting goes on without letting other tasks run first.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import trio

from ._channel import MemoryMessageChannel, MessageChannel, StreamChannel
from ._stdio_process import ProcessChannel

__all__ = ["Reader", "Writer", "acquire", "reader_for", "writer_for"]

Writer = Callable[[bytes], int]
"""Writes what it can of one message now, never waiting and never raising; returns how
many bytes it took (0 on any trouble: the plain ``send`` then reports it)."""


def writer_for(channel: MessageChannel) -> Writer | None:
    """The synchronous writer of ``channel`` (see the module docstring), or None when it
    has none (then every write takes the plain path)."""
    channel = getattr(channel, "inner", channel)  # a StoppableChannel's own channel
    if isinstance(channel, MemoryMessageChannel):
        return _memory_writer(channel.send_channel)
    if isinstance(channel, StreamChannel) and sys.platform != "win32":
        # ProcessChannel's own send only explains a failure, which the plain send that
        # follows a refused write still does; any other subclass must see every write.
        if type(channel).send not in (StreamChannel.send, ProcessChannel.send):
            return None
        stream = channel.send_stream
        if isinstance(stream, trio.SocketStream):
            return _fd_writer(stream.socket.fileno)
        if isinstance(stream, trio.lowlevel.FdStream):
            return _fd_writer(stream.fileno)
    return None


Reader = Callable[[], bytes | None]
"""Returns a message the channel already holds (``b""`` once it ended), or None when
none is there (then the plain ``receive`` waits)."""


async def acquire(lock: trio.Lock) -> None:
    """``await lock.acquire()`` without the schedule point when it is free: still a
    cancellation point, and a lock that is held or has waiters is waited for in turn."""
    await trio.lowlevel.checkpoint_if_cancelled()
    try:
        lock.acquire_nowait()
    except trio.WouldBlock:
        await lock.acquire()


def reader_for(channel: MessageChannel) -> Reader | None:
    """A reader of the messages ``channel`` already holds, or None (a memory channel
    has one; a byte stream's ``receive`` does not yield when data waits anyway).  A
    wrapper (a ``StoppableChannel``) has none: its own ``receive`` must see every read."""
    if not isinstance(channel, MemoryMessageChannel):
        return None
    receive_channel = channel.receive_channel

    def read() -> bytes | None:
        try:
            return receive_channel.receive_nowait()
        except trio.WouldBlock:
            return None
        except (trio.EndOfChannel, trio.ClosedResourceError):
            return b""

    return read


def _memory_writer(send_channel: trio.MemorySendChannel[bytes]) -> Writer:
    def write(data: bytes) -> int:
        try:
            send_channel.send_nowait(data)
        except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
            return 0  # full, or closed: send() waits, or says which
        return len(data)

    return write


def _fd_writer(fileno: Callable[[], int]) -> Writer:
    def write(data: bytes) -> int:
        fd = fileno()  # -1 once the stream is closed
        if fd < 0:
            return 0
        try:
            return os.write(fd, data)  # the fd is non-blocking: trio set it so
        except OSError:
            return 0  # full (EAGAIN) or broken: send_all says which

    return write

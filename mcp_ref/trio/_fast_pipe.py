"""A fast path for pipes, which a reader may skip: a small message is written at once.

Theory of operation
-------------------
The session's writer tries a channel's optional ``send_nowait`` before its ``send``
(``Session._write``).  For a :class:`~mcp_ref.trio.StreamChannel` whose send stream is
a pipe (a child's stdin, our stdout under ``serve_stdio``), :func:`pipe_send_nowait`
gives one: a single ``os.write`` of the whole message.  POSIX makes a write of at most
``PIPE_BUF`` bytes to a non-blocking pipe atomic: all of it goes, or nothing and
``EAGAIN``.  Anything else (a larger message, a full pipe, an error) raises
``trio.WouldBlock`` having written nothing, and the session writes the message, and
everything after it, with the plain ``send`` (trio's ``send_all``), which reports the
error.  The session calls it only while no plain write is under way (its send lock
keeps trio's promise that one task at a time sends), so the bytes keep their order.

What it buys: ``send_all`` takes a schedule point *before* it writes, so with 100
requests in flight over stdio the other handlers queue their answers meanwhile and
client and server take turns instead of overlapping.  Measured (bench/README.md, "stdio
and the fast path for pipes"; medians of 9 runs, loaded machine): stdio x100 went from
0.090 of its floor back to the old tree's 0.150 (0.149), stdio x1 from 0.139 to 0.284
(the old tree: 0.312).  Sockets get no fast path (a non-blocking write to a socket may
be partial).
"""

from __future__ import annotations

import os
import select
import stat
from collections.abc import Callable

import trio

from ..events import RequestId

__all__ = ["PIPE_BUF", "pipe_send_nowait"]

PIPE_BUF = select.PIPE_BUF
"""The largest write to a pipe that POSIX keeps whole (4096 bytes on Linux, >= 512)."""

SendNowait = Callable[..., None]


def pipe_send_nowait(stream: trio.abc.SendStream) -> SendNowait | None:
    """A ``send_nowait(data, *, related_request_id=None)`` for ``stream`` when it is a
    ``trio.lowlevel.FdStream`` on a pipe or FIFO, else None (no fast path).

    The function writes ``data`` whole with one ``os.write``, or raises
    ``trio.WouldBlock`` having written nothing: when ``data`` is over :data:`PIPE_BUF`
    bytes, the pipe is full, or the write fails (the plain ``send`` then meets the
    failure and raises it).  Call it only while no ``send_all`` on ``stream`` is under
    way.
    """
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

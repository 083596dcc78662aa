"""A fast path for pipes, which a reader may skip: a small message is written at once.

Theory of operation
-------------------
The session's writer tries a channel's optional ``send_nowait`` before its ``send``.
For a :class:`~mcp_ref.trio.StreamChannel` whose send stream is a pipe (a child's
stdin, our stdout under ``serve_stdio``), :func:`pipe_send_nowait` gives one: a single
``os.write``, which POSIX keeps whole for at most ``PIPE_BUF`` bytes on a non-blocking
pipe (all of it, or nothing and ``EAGAIN``).  Anything else raises ``trio.WouldBlock``
having written nothing, and the session falls back to ``send`` (trio's ``send_all``,
which reports any error) for that message and those after it.

Why: ``send_all`` takes a schedule point before it writes, so with 100 requests in
flight over stdio client and server take turns instead of overlapping.  The figures
are in bench/README.md ("stdio and the fast path for pipes").  Sockets get no fast
path (a non-blocking write to a socket may be partial).
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

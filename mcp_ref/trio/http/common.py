"""What the trio HTTP server and client share: h11 over a trio stream
(:class:`H11Stream`), and a supervisor of tasks (:class:`Supervisor`) whose nursery is
a local variable of its :meth:`~Supervisor.run`, so no nursery is stored for others to
spawn into: they hand jobs to a bounded queue, which ``run`` reads.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import h11
import trio

__all__ = ["H11Stream", "Supervisor"]

_RECEIVE_SIZE: Final = 65536
"""Bytes asked for per ``receive_some``."""


class H11Stream:
    """One h11 connection over one trio stream.

    Args:
        stream: the byte stream (a socket).
        role: ``h11.SERVER`` or ``h11.CLIENT``.
        max_incomplete_event_size: h11's bound on a request or response head, in bytes.
        conn: the h11 connection to drive (default: a new one of ``role``), e.g. the
            one of a :class:`~mcp_ref._http_connection.ServerConnection`.
    """

    def __init__(
        self,
        stream: trio.abc.Stream,
        role: Any,
        *,
        max_incomplete_event_size: int = 16384,
        conn: h11.Connection | None = None,
    ) -> None:
        self.stream = stream
        self.conn = conn or h11.Connection(
            role, max_incomplete_event_size=max_incomplete_event_size
        )
        self.received = 0
        """Bytes received so far."""

    async def receive_some(self) -> bytes:
        """Read one chunk from the socket into h11; ``b""`` at end of stream (also for a
        broken or closed socket)."""
        try:
            data = bytes(await self.stream.receive_some(_RECEIVE_SIZE))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            data = b""
        self.received += len(data)
        self.conn.receive_data(data)
        return data

    async def next_event(self) -> Any:
        """The next h11 event, reading as needed (the client's; the server's events are
        :class:`~mcp_ref._http_connection.ServerConnection`'s).

        Returns an h11 event, or ``h11.PAUSED`` (the peer started its next cycle).

        Raises:
            h11.RemoteProtocolError: the peer broke HTTP/1.1 (``error_status_hint`` is
                the status to answer with).
        """
        while (event := self.conn.next_event()) is h11.NEED_DATA:
            if self.conn.their_state is h11.CLOSED:
                return h11.ConnectionClosed()
            await self.receive_some()
        return event

    async def send(self, *events: Any) -> None:
        """Write h11 events, several in one write (a response head and its body).

        Raises:
            trio.BrokenResourceError, trio.ClosedResourceError: the socket failed (h11
                is then told with ``send_failed``).
            h11.LocalProtocolError: an event is not allowed now (the events before it,
                which h11 counts as sent, are still written).
        """
        parts: list[bytes] = []
        try:
            for event in events:
                parts.append(self.conn.send(event) or b"")
        finally:
            if data := b"".join(parts):
                await self.write(data)

    async def write(self, data: bytes) -> None:
        """Write bytes h11 produced (``send_failed`` when the write fails).

        Raises:
            trio.BrokenResourceError, trio.ClosedResourceError: the socket failed.
        """
        try:
            await self.stream.send_all(data)
        except BaseException:
            self.conn.send_failed()
            raise

    async def aclose(self) -> None:
        """Close the socket (never raises for an already-broken one)."""
        try:
            await self.stream.aclose()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass


Job = tuple[Callable[..., Awaitable[Any]], Sequence[Any]]


class Supervisor:
    """Runs the jobs handed to :meth:`start_soon` as tasks of a nursery private to
    :meth:`run` (module docstring).

    Args:
        max_pending: jobs waiting to be started, after which :meth:`start_soon`
            refuses (a bound).
    """

    def __init__(self, max_pending: int = 1024) -> None:
        self._send, self._receive = trio.open_memory_channel[Job](max_pending)

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> bool:
        """Have ``fn(*args)`` started as a task; False when the supervisor is closed or
        its queue is full."""
        try:
            self._send.send_nowait((fn, args))
        except (trio.WouldBlock, trio.ClosedResourceError):
            return False
        return True

    def close(self) -> None:
        """Take no more jobs; :meth:`run` returns once the running tasks have ended."""
        self._send.close()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Start each job handed over, until :meth:`close`; then wait for the tasks
        (start it with ``nursery.start``; cancel it to stop every task)."""
        async with trio.open_nursery() as nursery:
            task_status.started()
            async for fn, args in self._receive:
                nursery.start_soon(fn, *args)

"""What the trio HTTP server and client share: h11 over a trio stream
(:class:`H11Stream`), and a supervisor of tasks (:class:`Supervisor`) whose nursery is
a local variable of its :meth:`~Supervisor.run`, so no nursery is stored for others to
spawn into: they hand jobs to a bounded queue, which ``run`` reads.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from typing import Any

import h11
import trio

from .._channel import RECEIVE_SIZE

__all__ = ["H11Stream", "Supervisor"]


class H11Stream:
    """One h11 connection (``conn``, default a new one of ``role``: ``h11.SERVER`` or
    ``h11.CLIENT``, with h11's bound on a head in bytes) over one trio ``stream``."""

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
        self.received = 0  # bytes so far

    async def receive_some(self) -> bytes:
        """Read one chunk from the socket into h11; ``b""`` at end of stream."""
        try:
            data = bytes(await self.stream.receive_some(RECEIVE_SIZE))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            data = b""
        self.received += len(data)
        self.conn.receive_data(data)
        return data

    async def next_event(self) -> Any:
        """The client's next h11 event (or ``h11.PAUSED``), reading as needed; raises
        h11.RemoteProtocolError when the server broke HTTP/1.1."""
        while (event := self.conn.next_event()) is h11.NEED_DATA:
            if self.conn.their_state is h11.CLOSED:
                return h11.ConnectionClosed()
            await self.receive_some()
        return event

    async def send(self, *events: Any) -> None:
        """Write h11 events in one write (a head and its body).

        Raises:
            trio.BrokenResourceError, trio.ClosedResourceError: as :meth:`write`.
            h11.LocalProtocolError: an event is not allowed now (those before it, which
                h11 counts as sent, are still written).
        """
        parts: list[bytes] = []
        try:
            for event in events:
                parts.append(self.conn.send(event) or b"")
        finally:
            if data := b"".join(parts):
                await self.write(data)

    async def write(self, data: bytes) -> None:
        """Write bytes h11 produced; when the socket fails (trio.BrokenResourceError,
        trio.ClosedResourceError), h11 is told (``send_failed``) and it raises."""
        try:
            await self.stream.send_all(data)
        except BaseException:
            self.conn.send_failed()
            raise

    async def aclose(self) -> None:
        """Close the socket (never raises for an already-broken one)."""
        with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await self.stream.aclose()


Job = tuple[Callable[..., Awaitable[Any]], Sequence[Any]]


class Supervisor:
    """Runs the jobs handed to :meth:`start_soon` as tasks of a nursery private to
    :meth:`run`; at most ``max_pending`` wait to be started."""

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

"""An MCP client over any pair of asyncio streams: :func:`open_stream_client`.

Theory of operation
-------------------
A byte stream carries newline-delimited messages (the stdio framing), whatever is
underneath: a child's pipes, a TCP or Unix socket, one end of ``socket.socketpair()``.
:class:`StreamClient` is :class:`~mcp_ref.asyncio.ClientSession` with the three things
a transport provides (see :mod:`mcp_ref.asyncio._client`):

* ``_transmit``: ``writer.write(data)`` -- one whole message per call, so messages
  never interleave and no lock is needed -- then ``await writer.drain()``;
* a reader task, ``_read``: ``reader.read(64 KiB)``, ``connection.receive_data(chunk)``
  (``b""`` at end of input), ``_process_events()``, until end of input;
* ``_drop_transport`` (for :meth:`~mcp_ref.asyncio.ClientSession.abort`): close the
  writer with no goodbye.

:func:`run_client` is the life of any such client, shared with the stdio client: start
the reader and the clock, initialize, hand the client out; at the end, fail what is
pending, stop the server-request handlers, run the transport's own shutdown, cancel the
two tasks.  Nothing it starts outlives the ``async with``.

:func:`open_stream_client`'s shutdown is the stdio one without a process: send end of
input (``write_eof``, when the stream can half-close), wait up to ``shutdown_grace`` for
the server to end its side (our reader sees end of input), then close.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Final, TypeVar

from .._client import DEFAULT_SHUTDOWN_GRACE, DEFAULT_TIMEOUT, as_timeout
from .._connection import Connection
from .._inflight import RequestTimeout
from .._state import CLIENT
from ..events import Notification
from ._client import ClientSession, SessionClosed

__all__ = ["StreamClient", "open_stream_client", "run_client"]

log = logging.getLogger("mcp_ref.asyncio")

CHUNK: Final = 65536
"""The most bytes read at once (64 KiB)."""

C = TypeVar("C", bound="StreamClient")


class StreamClient(ClientSession):
    """A :class:`~mcp_ref.asyncio.ClientSession` over an asyncio (reader, writer) pair
    carrying newline-delimited messages.

    Made by :func:`open_stream_client` (and, for a child process, by
    :func:`~mcp_ref.asyncio.open_stdio_client`), which initialize it first.

    Source: 2025-06-18/basic/transports#stdio (newline-delimited JSON-RPC messages).
    """

    _reader: asyncio.StreamReader
    _writer: asyncio.StreamWriter

    def _attach_streams(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Talk over ``reader`` and ``writer`` (given once the options were checked)."""
        self._reader = reader
        self._writer = writer
        self._input_ended = asyncio.Event()

    def _transmit_soon(self, data: bytes) -> None:
        if data and not self._writer.is_closing():
            self._writer.write(data)  # one whole message: never interleaves with another

    async def _transmit(self, data: bytes) -> None:
        if self._writer.is_closing():
            raise SessionClosed("the stream to the server is closed")
        self._transmit_soon(data)
        try:
            await self._writer.drain()
        except ConnectionError as exc:
            raise self._close(f"writing to the server failed: {exc!r}") from exc

    def _drop_transport(self) -> None:
        self._writer.close()  # no goodbye: whatever is buffered is all the server gets

    async def _read(self) -> None:
        """Feed what the server sends to the core until it ends."""
        try:
            while True:
                try:
                    chunk = await self._reader.read(CHUNK)
                except ConnectionError:
                    chunk = b""  # a reset is an end of input too
                self.connection.receive_data(chunk)
                self._process_events()
                if not chunk:
                    return
        finally:
            self._input_ended.set()
            self._close("the reader stopped")

    async def _end_of_input(self, grace: float) -> bool:
        """Wait up to ``grace`` seconds for the server's end of input; whether it came."""
        try:
            await asyncio.wait_for(self._input_ended.wait(), grace)
        except TimeoutError:
            return False
        return True


@asynccontextmanager
async def run_client(client: C, shutdown: Callable[[], Awaitable[None]]) -> AsyncIterator[C]:
    """Run ``client`` (its transport attached): the reader and the clock, then
    initialize and yield it; at the end, close the session, stop the handlers of the
    server's requests, await ``shutdown()`` (the transport's own goodbye), and cancel
    the two tasks.

    Raises:
        McpError, SessionClosed: initialization failed.

    Source: 2025-06-18/basic/lifecycle (initialization, then operation, then shutdown).
    """
    tasks = [asyncio.create_task(client._read()), asyncio.create_task(client._clock())]
    try:
        await client.open()
        yield client
    finally:
        client._close("the client was closed")
        try:
            await client._stop_handlers()
            await shutdown()
        finally:
            for task in tasks:
                task.cancel()
            for outcome in await asyncio.gather(*tasks, return_exceptions=True):
                if isinstance(outcome, Exception):
                    log.error("client task failed", exc_info=outcome)


@asynccontextmanager
async def open_stream_client(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    *,
    timeout: float | RequestTimeout | None = DEFAULT_TIMEOUT,
    on_notification: Callable[[Notification], object] | None = None,
    shutdown_grace: float = DEFAULT_SHUTDOWN_GRACE,
    **options: Any,
) -> AsyncIterator[StreamClient]:
    """Talk MCP over an asyncio stream pair and yield an initialized client.

    Usage::

        reader, writer = await asyncio.open_unix_connection("/run/my-server.sock")
        async with open_stream_client(reader, writer) as client:
            result = await client.call_tool("echo", {"text": "hi"})

    Args:
        reader, writer: the stream pair (from ``asyncio.open_connection``,
            ``open_unix_connection``, ...); messages are newline-delimited.  The writer
            is closed on exit.
        timeout: default per-request timeout (seconds or a RequestTimeout; default
            :data:`mcp_ref._client.DEFAULT_TIMEOUT`; None: none).
        on_notification: see :class:`~mcp_ref.asyncio.ClientSession`.
        shutdown_grace: seconds to wait, after sending end of input, for the server to
            end its side (default 2).
        **options: the client core's (:class:`mcp_ref._client.ClientCore`):
            ``client_info``, ``protocol_version``, ``sampling_handler``,
            ``elicitation_handler``, ``roots``, the rate limits.

    Raises:
        ValueError: ``protocol_version`` is not supported, or a root is not an
            absolute ``file://`` URI (before anything is sent).
        McpError, SessionClosed: initialization failed.

    Source: 2025-06-18/basic/transports#stdio (the framing);
    2025-06-18/basic/lifecycle#shutdown (closing the stream ends the session).
    """
    connection = Connection(CLIENT, default_timeout=as_timeout(timeout))
    try:
        client = StreamClient(connection, on_notification=on_notification, **options)
    except BaseException:
        writer.close()
        raise
    client._attach_streams(reader, writer)

    async def shutdown() -> None:
        try:
            if writer.can_write_eof() and not writer.is_closing():
                writer.write_eof()  # the server reads end of input and ends its session
                await client._end_of_input(shutdown_grace)
        except (OSError, RuntimeError) as exc:
            log.debug("could not half-close the stream: %r", exc)
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async with run_client(client, shutdown):
        yield client

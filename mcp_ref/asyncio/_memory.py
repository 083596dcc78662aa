"""Test a server from asyncio: :func:`connect_in_memory` runs it in a thread and joins
an asyncio client to it.

Theory of operation
-------------------
The high-level :class:`~mcp_ref.server.Server` runs on trio only, so it gets a thread
of its own with its own ``trio.run``, and the two loops talk over the one object both
understand: a connected ``socket.socketpair()``.  The server's end becomes a trio
:class:`~mcp_ref.trio.StreamChannel` served by :func:`~mcp_ref.trio.serve_channel`;
ours becomes an asyncio stream pair for :func:`~mcp_ref.asyncio.open_stream_client`.

Why a socket pair, and not ``trio.lowlevel.start_guest_run`` or ``trio.from_thread``:
no object is shared between the two loops, so neither loop ever calls into the other
(the only cross-thread call is one ``loop.call_soon_threadsafe`` saying the server's
run has returned); the bytes are framed, checked and decoded by the same code as over
stdio; and the end of the session is the end of the byte stream, the signal every
transport already handles.  Guest mode would interleave trio's run with asyncio's in
one thread and need both loops' objects to cross; ``from_thread`` would need a
trio-side channel fed from asyncio by blocking calls.

Shutdown, in order: leaving the block half-closes our end (``write_eof``); the server's
session reads end of input, ends, and its thread closes its end and returns from
``trio.run``; our reader sees end of input; we await the thread.  If the server has not
ended within ``shutdown_grace`` seconds, its run is cancelled (through its trio token),
and the thread is awaited again, also bounded.  The block never exits with the thread
still running unless the server ignores cancellation (then ``RuntimeError``).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import trio

from .._client import DEFAULT_SHUTDOWN_GRACE
from ..trio import Handler, StreamChannel, serve_channel
from ._streams import StreamClient, open_stream_client

__all__ = ["connect_in_memory"]


class _ServerThread:
    """One ``trio.run`` serving one session on a socket, in a thread of its own."""

    def __init__(self, server: Handler, sock: socket.socket, options: Mapping[str, Any]) -> None:
        self._server = server
        self._sock = sock
        self._options = dict(options)
        self._loop = asyncio.get_running_loop()
        self.done: asyncio.Future[None] = self._loop.create_future()
        self._started = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._scope: trio.CancelScope | None = None
        self.thread = threading.Thread(
            target=self._run, name=f"mcp_ref in-memory server {server!r:.40}", daemon=True
        )

    def _run(self) -> None:
        error: BaseException | None = None
        try:
            trio.run(self._serve)
        except BaseException as exc:  # handed to the asyncio side, raised there
            error = exc
        finally:
            self._started.set()
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            self._loop.call_soon_threadsafe(self._finish, error)

    def _finish(self, error: BaseException | None) -> None:
        if not self.done.done():
            if error is None:
                self.done.set_result(None)
            else:
                self.done.set_exception(error)

    async def _serve(self) -> None:
        with trio.CancelScope() as scope:
            self._token, self._scope = trio.lowlevel.current_trio_token(), scope
            self._started.set()
            stream = trio.SocketStream(trio.socket.from_stdlib_socket(self._sock))
            try:
                await serve_channel(self._server, StreamChannel(stream), **self._options)
            finally:
                with trio.CancelScope(shield=True):
                    await stream.aclose()  # the client's reader sees end of input

    def cancel(self) -> None:
        """Cancel the server's run (thread-safe; nothing once it has returned)."""
        self._started.wait()
        token, scope = self._token, self._scope
        if token is not None and scope is not None:
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(scope.cancel)

    async def stop(self, grace: float) -> None:
        """Wait up to ``grace`` seconds for the run to end, cancel it, wait as long
        again; then join the thread.

        Raises:
            RuntimeError: the run did not end (a server ignoring cancellation).
            Whatever the server's run raised.
        """
        try:
            await asyncio.wait_for(asyncio.shield(self.done), grace)
        except asyncio.CancelledError:
            self.cancel()  # we will not wait: the server's run ends on its own
            raise
        except TimeoutError:
            self.cancel()
            try:
                await asyncio.wait_for(asyncio.shield(self.done), grace)
            except TimeoutError:
                raise RuntimeError(
                    f"the in-memory server did not stop within {2 * grace} s"
                ) from None
        finally:
            if self.done.done():
                self.thread.join()  # returns at once: the run has returned
        self.done.result()


@asynccontextmanager
async def connect_in_memory(
    server: Handler,
    *,
    server_options: Mapping[str, Any] | None = None,
    shutdown_grace: float = DEFAULT_SHUTDOWN_GRACE,
    **client_options: Any,
) -> AsyncIterator[StreamClient]:
    """Run ``server`` on trio in a thread of its own, connect an asyncio client to it,
    initialize, and yield the client (the asyncio twin of
    :func:`mcp_ref.client.connect_in_memory`).

    Usage::

        async def test_add() -> None:  # any asyncio test runner
            async with connect_in_memory(server) as client:
                result = await client.call_tool("add", {"a": 2, "b": 3})
            assert result.structured_content == {"result": 5.0}

    When the block exits, the server's session has ended and its thread is gone.

    Args:
        server: a :class:`~mcp_ref.server.Server`, or any :class:`~mcp_ref.trio.Handler`
            (it runs in another thread: share nothing with it that is not thread-safe).
        server_options: options of the server's session
            (:func:`~mcp_ref.trio.open_session`: ``default_timeout``,
            ``max_concurrent_requests``, ...).
        shutdown_grace: seconds the server may take to end its session on exit before
            its run is cancelled (default 2).
        **client_options: those of :func:`~mcp_ref.asyncio.open_stream_client`
            (``timeout``, ``on_notification``, ``sampling_handler``,
            ``elicitation_handler``, ``roots``, ``protocol_version``...).

    Raises:
        McpError, SessionClosed: initialization failed.
        RuntimeError: the server's run did not end within twice ``shutdown_grace``.
        Whatever the server's run raises (a bug in the server's own tasks), on exit.

    Source: 2025-06-18/basic/lifecycle (the same initialization and shutdown as any
    transport); 2025-06-18/basic/transports#stdio (the framing on the socket pair).
    """
    ours, theirs = socket.socketpair()
    runner = _ServerThread(server, theirs, server_options or {})
    try:
        runner.thread.start()
    except BaseException:
        ours.close()
        theirs.close()
        raise
    try:
        try:
            reader, writer = await asyncio.open_connection(sock=ours)
        except BaseException:
            ours.close()
            raise
        async with open_stream_client(
            reader, writer, shutdown_grace=shutdown_grace, **client_options
        ) as client:
            yield client
    finally:
        await runner.stop(shutdown_grace)

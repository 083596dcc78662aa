"""MCP over stdio on asyncio: a server loop and a client that runs the server process.

How the server loop drives the core, step by step
-------------------------------------------------
:func:`serve_stdio` is the whole of it:

1. ``conn = Connection(SERVER)``; get an asyncio (reader, writer) pair for fds 0/1.
2. ``chunk = await reader.read(65536)`` -- the only thing the loop awaits -- and
   ``conn.receive_data(chunk)`` (``b""`` at end of input).
3. ``conn.next_event()`` until NEED_DATA:

   * ``initialize`` and ``ping`` are answered on the spot: ``writer.write(conn.send(
     Response(...)))``.  ``negotiated_version_for`` picks the version to answer;
   * any other Request goes to ``handler.handle_request(ctx)`` in a task of its own;
     the task sends ``conn.send(Response(...))`` (or an ErrorResponse for McpError,
     -32603 for any other exception) when it is done;
   * RequestCancelled cancels that task (the core would drop its answer anyway);
   * a Notification is awaited in line: ``handler.handle_notification(note)``;
   * RemoteProtocolError: write ``conn.send(exc.event_hint)`` when it has one;
   * ConnectionClosed: stop, cancel the running tasks, return.
4. ``await writer.drain()`` and go back to step 2.

Every message goes out whole in one ``writer.write``: asyncio buffers it in the
transport, so messages never interleave and no lock is needed.  The capabilities
passed to :func:`serve_stdio` are the ones the core enforces: a ``tools/list`` to a
server without ``tools`` is refused with -32601 before the handler sees it.

The client (:func:`open_stdio_client`) is :class:`~mcp_ref.asyncio.StreamClient` (the
client over any stream pair, :mod:`mcp_ref.asyncio._streams`) on the child's pipes,
with the shutdown the
lifecycle page asks for: close the child's stdin, wait, SIGTERM, wait, SIGKILL.
:meth:`~mcp_ref.asyncio.ClientSession.abort` closes the child's stdin at once (what
the server sees when its client crashes); the shutdown still follows on exit.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final, Protocol

from .. import types as t
from .._client import DEFAULT_SHUTDOWN_GRACE, DEFAULT_TIMEOUT, as_timeout
from .._connection import NEED_DATA, Connection
from .._errors import INTERNAL_ERROR, LocalProtocolError, McpError, RemoteProtocolError
from .._inflight import RequestTimeout
from .._state import CLIENT, SERVER
from ..events import (
    ConnectionClosed,
    ErrorResponse,
    Event,
    Notification,
    Request,
    RequestCancelled,
    RequestId,
    Response,
)
from ._client import typed_params
from ._streams import StreamClient, run_client

__all__ = ["Handler", "RequestContext", "StdioClient", "open_stdio_client", "serve_stdio"]

log = logging.getLogger("mcp_ref.asyncio")

_CHUNK: Final = 65536


# -- server ------------------------------------------------------------------------


class RequestContext:
    """One request being handled by :func:`serve_stdio`.

    Attributes:
        request_id: the request's id (str or int, as sent).
        method: e.g. ``"tools/call"``.
        params: the typed params (an instance of ``METHODS[method].params_type``) or None.
        progress_token: the ``_meta.progressToken`` the client sent, or None.
        cancelled: set to True just before the task is cancelled because the client
            sent ``notifications/cancelled`` (not when the server is shutting down).
        cancel_reason: the reason the client gave with it, or None.
    """

    def __init__(self, conn: Connection, writer: asyncio.StreamWriter, request: Request) -> None:
        self._conn = conn
        self._writer = writer
        self.request_id: RequestId = request.id
        self.method = request.method
        self.params: Any = request.params
        meta = getattr(request.params, "meta", None) or {}
        self.progress_token: str | int | None = meta.get("progressToken")
        self.cancel_reason: str | None = None
        self.cancelled = False

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` for this request; nothing when it carried no
        progress token.

        Raises:
            LocalProtocolError: ``progress`` does not increase.

        Source: 2025-06-18/basic/utilities/progress#progress-flow.
        """
        if self.progress_token is None:
            return
        params = t.ProgressNotificationParams(
            progress_token=self.progress_token, progress=progress, total=total, message=message
        )
        await self.send_notification("notifications/progress", params)

    async def send_notification(self, method: str, params: Any = None) -> None:
        """Send a notification (typed params, a wire-form dict, or None) to the client.

        Raises:
            LocalProtocolError: it breaks the protocol (e.g. capability not declared).
        """
        note = Notification(method=method, params=typed_params(method, params))
        self._writer.write(self._conn.send(note))
        await self._writer.drain()


class Handler(Protocol):
    """What :func:`serve_stdio` calls.  Write your own dispatch on ``ctx.method``."""

    async def handle_request(self, ctx: RequestContext) -> Any:
        """Return the typed result (e.g. ``t.CallToolResult``) or raise McpError.

        ``initialize`` and ``ping`` never come here: :func:`serve_stdio` answers them.
        """

    async def handle_notification(self, notification: Notification) -> None:
        """Handle a notification (``notifications/initialized`` included); awaited in
        line, so keep it short."""


async def _answer(conn: Connection, handler: Handler, ctx: RequestContext) -> None:
    reply: Event
    try:
        reply = Response(id=ctx.request_id, result=await handler.handle_request(ctx))
    except McpError as exc:
        reply = ErrorResponse(id=ctx.request_id, code=exc.code, message=exc.message, data=exc.data)
    except Exception:
        log.exception("handler failed on %s", ctx.method)
        reply = ErrorResponse(id=ctx.request_id, code=INTERNAL_ERROR, message="internal error")
    try:
        data = conn.send(reply)
    except LocalProtocolError as exc:
        log.error("invalid answer to %s: %s", ctx.method, exc)
        data = conn.send(
            ErrorResponse(id=ctx.request_id, code=INTERNAL_ERROR, message="invalid result")
        )
    ctx._writer.write(data)  # b"" when the client cancelled the request
    try:
        await ctx._writer.drain()
    except ConnectionError:
        log.debug("the client went away before the answer to %s", ctx.method)


def _forget(table: dict[RequestId, Any], key: RequestId, _task: object) -> None:
    table.pop(key, None)


async def serve_stdio(
    handler: Handler,
    *,
    server_info: t.Implementation,
    capabilities: t.ServerCapabilities,
    instructions: str | None = None,
    streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None,
    max_concurrent_requests: int = 256,
) -> None:
    """Serve one MCP session on stdin/stdout (or on ``streams``) until end of input.

    Args:
        handler: see :class:`Handler`.
        server_info: the ``serverInfo`` answered to ``initialize``.
        capabilities: the server's capabilities; the core refuses requests they lack.
        instructions: optional ``instructions`` for the client.
        streams: a (reader, writer) pair to serve on instead of fds 0 and 1 (e.g. from
            ``asyncio.start_server``).  With None, fds 0 and 1 must be pipes or
            sockets (not regular files); they are left open and blocking on return.
        max_concurrent_requests: requests handled at once; past it the core answers
            -32603.

    Returns when the client closes its side; handlers still running are cancelled.

    Source: 2025-06-18/basic/transports#stdio; 2025-06-18/basic/lifecycle#stdio.2.
    """
    reader, writer = streams if streams is not None else await _std_streams()
    conn = Connection(SERVER, max_requests_in_flight=max_concurrent_requests)
    running: dict[RequestId, tuple[asyncio.Task[None], RequestContext]] = {}
    try:
        while True:
            chunk = await reader.read(_CHUNK)
            conn.receive_data(chunk)
            while True:
                try:
                    event = conn.next_event()
                except RemoteProtocolError as exc:
                    log.warning("protocol error from the client: %s", exc.message)
                    if exc.event_hint is not None:
                        writer.write(conn.send(exc.event_hint))
                    continue
                if event is NEED_DATA:
                    break
                if isinstance(event, ConnectionClosed):
                    return
                if isinstance(event, Request) and event.method == "initialize":
                    result: Any = t.InitializeResult(
                        # Spec: 2025-06-18/basic/lifecycle#version-negotiation.3
                        # "If the server supports the requested protocol version, it MUST respond
                        # with the same version."
                        protocol_version=conn.negotiated_version_for(event.params.protocol_version),
                        capabilities=capabilities,
                        server_info=server_info,
                        instructions=instructions,
                    )
                    writer.write(conn.send(Response(id=event.id, result=result)))
                elif isinstance(event, Request) and event.method == "ping":
                    # Spec: 2025-06-18/basic/utilities/ping#behavior-requirements.1
                    # "The receiver MUST respond promptly with an empty response:"
                    writer.write(conn.send(Response(id=event.id, result=t.EmptyResult())))
                elif isinstance(event, Request):
                    ctx = RequestContext(conn, writer, event)
                    task = asyncio.create_task(_answer(conn, handler, ctx))
                    running[event.id] = (task, ctx)
                    task.add_done_callback(functools.partial(_forget, running, event.id))
                elif isinstance(event, RequestCancelled):
                    if event.id in running:
                        # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.3
                        # "Receivers of cancellation notifications SHOULD:"
                        task, ctx = running[event.id]
                        ctx.cancelled, ctx.cancel_reason = True, event.reason
                        task.cancel()
                    # The replies of a batch whose last request this was (see _batch).
                    writer.write(conn.data_to_send())
                elif isinstance(event, Notification):
                    await handler.handle_notification(event)
            try:
                await writer.drain()
            except ConnectionError:
                return  # the client went away
    finally:
        tasks = [task for task, _ in running.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if streams is None:
            writer.close()  # closes our duplicates of fds 0 and 1, not the fds themselves
            for fd in (0, 1):
                os.set_blocking(fd, True)


async def _std_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """asyncio streams on duplicates of fds 0 and 1 (so closing them leaves 0 and 1)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    stdin = os.fdopen(os.dup(sys.stdin.fileno()), "rb", buffering=0)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    stdout = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, stdout)
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


# -- client ------------------------------------------------------------------------


class StdioClient(StreamClient):
    """A :class:`~mcp_ref.asyncio.ClientSession` talking to a child process's stdio
    (a :class:`~mcp_ref.asyncio.StreamClient` on its pipes).

    Attributes:
        process: the server process (``asyncio.subprocess.Process``).
    """

    process: asyncio.subprocess.Process

    def _attach(self, process: asyncio.subprocess.Process) -> None:
        """Talk to ``process`` (started after the options were checked)."""
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self._attach_streams(process.stdout, process.stdin)


@asynccontextmanager
async def open_stdio_client(
    command: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    stderr: int | None = None,
    timeout: float | RequestTimeout | None = DEFAULT_TIMEOUT,
    on_notification: Callable[[Notification], object] | None = None,
    shutdown_grace: float = DEFAULT_SHUTDOWN_GRACE,
    **options: Any,
) -> AsyncIterator[StdioClient]:
    """Start an MCP server process and yield an initialized client talking to it.

    Usage::

        async with open_stdio_client([sys.executable, "-m", "my_server"]) as client:
            result = await client.call_tool("echo", {"text": "hi"})

    Args:
        command: program and arguments (no shell).
        env, cwd: for the child (default: ours).
        stderr: where the child's stderr goes: None inherits ours (the server's log),
            or ``asyncio.subprocess.DEVNULL`` or a file descriptor.
        timeout: default per-request timeout (seconds or a RequestTimeout; default
            :data:`mcp_ref._client.DEFAULT_TIMEOUT`; None: none).
        on_notification: see :class:`~mcp_ref.asyncio.ClientSession`.
        shutdown_grace: seconds to wait at each step of the shutdown (default 2).
        **options: the client core's (:class:`mcp_ref._client.ClientCore`):
            ``client_info``, ``era`` (``"legacy"``, ``"modern"`` or ``"auto"``:
            :data:`mcp_ref._client.EraArg`), ``protocol_version`` (the server may answer another
            supported one: ``client.initialize_result``), ``sampling_handler``,
            ``elicitation_handler``, ``roots``, the rate limits.

    Raises:
        ValueError: ``protocol_version`` is not supported, or a root is not an
            absolute ``file://`` URI (before anything is started).
        OSError: the command could not be started.
        McpError, SessionClosed: initialization failed.

    Source: 2025-06-18/basic/transports#stdio; 2025-06-18/basic/lifecycle#stdio.1.
    """
    connection = Connection(CLIENT, default_timeout=as_timeout(timeout))
    client = StdioClient(connection, on_notification=on_notification, **options)
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=stderr,
        env=env,
        cwd=cwd,
    )
    client._attach(process)

    async def shutdown() -> None:
        try:
            await _shutdown(process, shutdown_grace)
        finally:
            if process.returncode is None:
                process.kill()  # never leave a child behind, even when cancelled

    async with run_client(client, shutdown):
        yield client


async def _shutdown(process: asyncio.subprocess.Process, grace: float) -> None:
    """Close the child's stdin, wait; SIGTERM, wait; SIGKILL, wait."""
    assert process.stdin is not None
    # Spec: 2025-06-18/basic/lifecycle#stdio.1
    # "For the stdio transport, the client SHOULD initiate shutdown by:"
    process.stdin.close()
    for step in (None, process.terminate, process.kill):
        if step is not None and process.returncode is None:
            try:
                step()
            except ProcessLookupError:
                pass
        try:
            await asyncio.wait_for(process.wait(), grace if step is not process.kill else None)
            return
        except TimeoutError:
            continue

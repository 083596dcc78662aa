"""One transport-conformance check for every transport and loop (issue 7).

Like trio's ``check_two_way_stream``, this module holds scenarios, not transports. A
scenario is a plain async function (``check_*``) that takes a *connect* factory and
sometimes a *raw* factory, and runs the same steps whatever they connect to:

* ``connect(**client_kw)`` is an async context manager that opens one client connection
  to a running conformance server and yields a :class:`Conn`.  Three adapters give the
  three client APIs one shape: :class:`TrioConn` (``mcp_ref.client.Client``),
  :class:`AsyncioConn` (``mcp_ref.asyncio``, run on an asyncio loop in a worker thread)
  and :class:`BlockingConn` (``mcp_ref.blocking``, each call in a worker thread).
* ``open_raw()`` yields a :class:`RawConn` that writes bytes the clients would never
  write (garbage, invalid JSON-RPC) and returns the server's answers.

The server side of every combination is :func:`make_server`: an
``mcp_ref.server.Server`` with the tools the scenarios need.  It runs in-process (memory,
WebSocket, HTTP) or as a child process over stdio: ``python -m tests.transport_check``
from the repository root.

The blocking client has a smaller API than the others (one thread, no cancellation
from outside, no client capabilities).  What a client cannot do is listed in
:data:`UNSUPPORTED`, with the reason, so the test module can skip honestly.  The
asyncio client's sampling and elicitation handlers are the trio ones of
:class:`ClientSide`, run in the test's trio run through :meth:`AsyncioConn.bridge`.
Where a smaller API still has a defined behaviour, the scenario checks that
behaviour instead of skipping.  A client that declares no sampling capability, for
example, must see the server's ``sampling/createMessage`` refused without a hang.

tests/test_transport_conformance.py runs every scenario over every combination.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import math
import os
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any, Final, Protocol, TypeVar

import pytest
import trio

from mcp_ref import LocalProtocolError, McpError, RequestTimeout
from mcp_ref import _jsonrpc as rpc
from mcp_ref import types as t
from mcp_ref._convert import structure, unstructure
from mcp_ref._errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_TIMEOUT,
)
from mcp_ref._versions import LATEST_PROTOCOL_VERSION
from mcp_ref.events import Progress
from mcp_ref.server import Context, Server, ToolError

ROOT: Final = Path(__file__).resolve().parent.parent
"""The repository root (the working directory of stdio server processes)."""

LIMIT_BYTES: Final = 32 * 1024
"""``max_message_bytes`` of every conformance server: the size-limit scenario sends a
request of exactly this many bytes, then one byte more."""
PAGE_SIZE: Final = 3
"""Items per page of the conformance server's lists."""
FILLERS: Final = 7
"""Extra tools, so ``tools/list`` spans several pages."""
SHORT: Final = 0.3
"""Seconds of the timeouts the scenarios provoke."""
OVERSIZE_WAIT: Final = 1.0
"""Seconds a client waits for the answer to its oversized request: on stdio the server
answers with an id-less -32600 the client cannot match, so the wait ends in a timeout."""
DRAIN_TIMEOUT: Final = 1.0
"""Seconds a conformance server lets a request run after its client went away (the
session's ``drain_timeout``), before cancelling it."""
SESSION_KW: Final[dict[str, Any]] = {
    "max_message_bytes": LIMIT_BYTES,
    "drain_timeout": DRAIN_TIMEOUT,
}
"""The session options of every conformance server."""
STEP_LIMIT: Final = 20.0
"""Seconds (real or mock) any one scenario may take."""

T = TypeVar("T")


# =========================================================================== server


class ServerState:
    """What a conformance server remembers across its connections.

    Attributes:
        cancelled: how many ``block`` calls were cancelled so far.
        vanish: an async callable that drops the server abruptly (set by whoever runs
            the server); the ``vanish`` tool calls it.
    """

    def __init__(self) -> None:
        self.cancelled = 0
        self.blocks_started = 0
        self.client_started = trio.Event()
        self.vanish: Callable[[], Awaitable[None]] | None = None
        self._changed = trio.Event()

    def note_cancelled(self) -> None:
        self.cancelled += 1
        self._changed.set()
        self._changed = trio.Event()

    async def wait_cancelled(self, at_least: int, seconds: float) -> int:
        with trio.move_on_after(seconds):
            while self.cancelled < at_least:
                await self._changed.wait()
        return self.cancelled


def make_server(state: ServerState | None = None) -> Server:
    """The conformance server.

    Tools (all async, so no worker threads and MockClock works in memory):

    * ``echo(text)`` returns ``text``; ``size(pad)`` returns ``len(pad)``;
    * ``slow(steps)`` reports progress ``1..steps`` of ``steps`` and returns ``"done"``;
    * ``block()`` logs ``"block started"`` (``notifications/message``, info) and waits
      until cancelled, counting the cancellation;
    * ``cancellations(at_least, wait)`` returns the count once it reaches ``at_least``
      (or after ``wait`` seconds);
    * ``ask(kind, timeout, cancel)`` sends the client ``sampling/createMessage``,
      ``roots/list`` or ``elicitation/create`` and describes the outcome as text; with
      ``cancel`` it cancels the request once the client's handler called ``started()``;
    * ``vanish()`` drops the server abruptly;
    * ``filler0`` ... ``filler6`` fill the pages.
    """
    state = state if state is not None else ServerState()
    server = Server("conformance", "1.0", page_size=PAGE_SIZE, instructions="transport conformance")

    @server.tool()
    async def echo(text: str) -> str:
        """Return ``text`` unchanged."""
        return text

    @server.tool()
    async def size(pad: str) -> str:
        """Return the length of ``pad``."""
        return str(len(pad))

    @server.tool()
    async def slow(ctx: Context, steps: int = 3) -> str:
        """Report progress ``1..steps`` of ``steps``, then answer."""
        for i in range(1, steps + 1):
            await ctx.report_progress(i, steps, f"step {i}")
            # Spaced at the server's progress rate limit, so every step is sent.
            await trio.sleep(Context.MIN_PROGRESS_INTERVAL)
        return "done"

    @server.tool()
    async def block(ctx: Context) -> str:
        """Log that it started, then wait until cancelled."""
        state.blocks_started += 1
        await ctx.log("info", "block started")
        try:
            await trio.sleep_forever()
        finally:
            state.note_cancelled()
        raise AssertionError("unreachable")  # pragma: no cover

    @server.tool()
    async def cancellations(at_least: int = 0, wait: float = 10.0) -> str:
        """The number of cancelled ``block`` calls, once it reaches ``at_least``."""
        return str(await state.wait_cancelled(at_least, wait))

    @server.tool()
    async def ask(
        ctx: Context, kind: str, timeout: float | None = None, cancel: bool = False
    ) -> str:
        """Send the client a request (``kind``: sampling, roots or elicitation); with
        ``cancel``, cancel it once the client called ``started``."""
        kw: dict[str, Any] = {}
        if timeout is not None:
            kw["timeout"] = RequestTimeout(seconds=timeout)
        try:
            if not cancel:
                return await _ask(ctx, kind, kw)
            state.client_started = trio.Event()
            with trio.CancelScope() as scope:
                async with trio.open_nursery() as nursery:

                    async def canceller() -> None:
                        await state.client_started.wait()
                        scope.cancel()

                    nursery.start_soon(canceller)
                    await _ask(ctx, kind, kw)
            return "cancelled" if scope.cancelled_caught else "not cancelled"
        except LocalProtocolError as exc:
            return f"refused: {exc}"
        except McpError as exc:
            return f"error {exc.code}"

    @server.tool()
    async def started() -> str:
        """Called by the client's handler for ``ask(cancel=True)`` once it runs."""
        state.client_started.set()
        return "ok"

    @server.tool()
    async def vanish() -> str:
        """Drop the whole server abruptly (its connections die without goodbye)."""
        if state.vanish is None:
            raise ToolError("this server cannot vanish")
        await state.vanish()
        await trio.sleep_forever()
        raise AssertionError("unreachable")  # pragma: no cover

    for i in range(FILLERS):

        async def filler() -> str:
            return "filler"

        server.add_tool(filler, name=f"filler{i}", description=f"Filler tool {i}.")
    return server


async def _ask(ctx: Context, kind: str, kw: dict[str, Any]) -> str:
    if kind == "sampling":
        message = t.SamplingMessage(role="user", content=t.TextContent(text="hello"))
        params = t.CreateMessageRequestParams(messages=[message], max_tokens=5)
        sampled = await ctx.send_request("sampling/createMessage", params, **kw)
        return f"sampled: {sampled.content.text}"
    if kind == "roots":
        listed = await ctx.send_request("roots/list", None, **kw)
        return "roots: " + ",".join(root.uri for root in listed.roots)
    if kind == "elicitation":
        schema = structure(
            {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            t.ElicitRequestFormParamsRequestedSchema,
        )
        form = t.ElicitRequestFormParams(message="name?", requested_schema=schema)
        answer = await ctx.send_request("elicitation/create", form, **kw)
        return f"elicited: {answer.action} {json.dumps(answer.content, sort_keys=True)}"
    raise ToolError(f"unknown kind {kind!r}")


TOOL_NAMES: Final = [
    "echo",
    "size",
    "slow",
    "block",
    "cancellations",
    "ask",
    "started",
    "vanish",
    *(f"filler{i}" for i in range(FILLERS)),
]
"""The conformance server's tools, in listing order."""

STDIO_COMMAND: Final = [sys.executable, "-m", "tests.transport_check"]
"""The conformance server over stdio (run with ``cwd=ROOT``)."""


def main() -> None:
    """Serve the conformance server on stdio; ``vanish`` ends the process at once."""
    state = ServerState()

    async def die() -> None:
        os._exit(3)

    state.vanish = die
    make_server(state).run_stdio(**SESSION_KW)


# ====================================================================== connections


CLOSED_ERRORS: tuple[type[BaseException], ...]
"""The "session closed" exceptions of the three client APIs."""


def _closed_errors() -> tuple[type[BaseException], ...]:
    from mcp_ref import asyncio as mcp_asyncio
    from mcp_ref import blocking
    from mcp_ref.trio import SessionClosed

    return (SessionClosed, mcp_asyncio.SessionClosed, blocking.SessionClosed)


CLOSED_ERRORS = _closed_errors()

_DEFAULT: Final[Any] = object()

UNSUPPORTED: Final[dict[tuple[str, str], str]] = {
    ("blocking", "cancel"): (
        "a blocking call cannot be cancelled from outside its thread (it cancels its "
        "request only on KeyboardInterrupt or on its timeout, which "
        "test_timeout_client_request covers)"
    ),
    ("blocking", "handlers"): (
        "the blocking client declares no client capabilities: it runs on the caller's "
        "thread only, so a handler it ran could not be cancelled midway, which both "
        "scenarios need; test_server_to_client_requests checks the refusals"
    ),
    ("blocking", "abort"): (
        "a blocking call owns the client's thread until it returns, and the client is "
        "single-threaded by design: nothing may drop its pipes from outside mid-call"
    ),
}
"""(client flavour, feature) -> why the scenarios needing the feature cannot run."""


class Conn(Protocol):
    """One open, initialized client connection, whatever the client API.

    ``timeout`` arguments are seconds (None: no timeout; left out: the client's default).
    """

    flavour: str
    """``"trio"``, ``"asyncio"`` or ``"blocking"``."""

    @property
    def protocol_version(self) -> str: ...

    @property
    def server_name(self) -> str: ...

    async def call(
        self, name: str, arguments: dict[str, Any] | None = None, *, timeout: Any = _DEFAULT
    ) -> t.CallToolResult: ...

    async def call_with_progress(
        self, name: str, arguments: dict[str, Any]
    ) -> tuple[t.CallToolResult, list[Progress]]: ...

    async def list_tool_names(self) -> list[str]: ...

    async def list_tools_page(self, cursor: str | None) -> t.ListToolsResult: ...

    async def ping(self) -> None: ...

    async def cancel_blocked_call(self) -> None:
        """Call ``block``, wait until the server logged its start, cancel the call."""
        ...

    async def predict_request_id(self) -> int:
        """The id the next request will carry."""
        ...

    async def wait_block_started(self, before: int) -> None:
        """Wait until the server logged the start of more than ``before`` ``block``
        calls on this connection."""
        ...

    async def abort(self) -> None:
        """Drop the connection abruptly (no goodbye on the wire)."""
        ...


Connect = Callable[..., AbstractAsyncContextManager[Conn]]
"""``connect(**client_kw)``: open one client connection to the server under test."""


def _text(result: t.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, t.TextContent), block
    return block.text


def _is_block_start(data: Any) -> bool:
    return bool(data == "block started")


class TrioConn:
    """:class:`Conn` over :class:`mcp_ref.client.Client`.

    Args:
        abort: drops the underlying transport (per transport: close the WebSocket's
            TCP connection, the child's stdin, the memory channel).
    """

    flavour = "trio"

    def __init__(self, abort: Callable[[], Awaitable[None]] | None) -> None:
        self.client: Any = None
        self._abort = abort
        self.logs: list[Any] = []
        self._log_event = trio.Event()

    def on_log(self, params: t.LoggingMessageNotificationParams) -> None:
        self.logs.append(params.data)
        self._log_event.set()
        self._log_event = trio.Event()

    @property
    def protocol_version(self) -> str:
        version: str = self.client.protocol_version
        return version

    @property
    def server_name(self) -> str:
        name: str = self.client.server_info.name
        return name

    async def call(
        self, name: str, arguments: dict[str, Any] | None = None, *, timeout: Any = _DEFAULT
    ) -> t.CallToolResult:
        kw: dict[str, Any] = {}
        if timeout is not _DEFAULT:
            kw["timeout"] = None if timeout is None else RequestTimeout(seconds=timeout)
        result: t.CallToolResult = await self.client.call_tool(name, arguments, **kw)
        return result

    async def call_with_progress(
        self, name: str, arguments: dict[str, Any]
    ) -> tuple[t.CallToolResult, list[Progress]]:
        seen: list[Progress] = []
        result = await self.client.call_tool(name, arguments, on_progress=seen.append)
        return result, seen

    async def list_tool_names(self) -> list[str]:
        return [tool.name for tool in await self.client.list_tools()]

    async def list_tools_page(self, cursor: str | None) -> t.ListToolsResult:
        page: t.ListToolsResult = await self.client.list_tools_page(cursor)
        return page

    async def ping(self) -> None:
        await self.client.ping()

    async def cancel_blocked_call(self) -> None:
        before = sum(map(_is_block_start, self.logs))
        async with trio.open_nursery() as nursery:
            scope = trio.CancelScope()

            async def run() -> None:
                with scope:
                    await self.call("block")

            nursery.start_soon(run)
            while sum(map(_is_block_start, self.logs)) <= before:
                await self._log_event.wait()
            scope.cancel()

    async def predict_request_id(self) -> int:
        return int(self.client.session.connection.next_request_id()) + 1

    async def wait_block_started(self, before: int) -> None:
        """Wait until more than ``before`` ``block`` calls logged their start."""
        while sum(map(_is_block_start, self.logs)) <= before:
            await self._log_event.wait()

    async def abort(self) -> None:
        assert self._abort is not None
        await self._abort()


@asynccontextmanager
async def trio_conn(
    channel: Any, abort: Callable[[], Awaitable[None]] | None, **client_kw: Any
) -> AsyncIterator[TrioConn]:
    """A :class:`TrioConn` over ``channel`` (a :class:`~mcp_ref.trio.MessageChannel`)."""
    from mcp_ref.client import open_client

    conn = TrioConn(abort)
    async with open_client(channel, on_log=conn.on_log, **client_kw) as client:
        conn.client = client
        yield conn


class LoopThread:
    """An asyncio event loop running in a thread of its own, driven from trio."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def submit(self, coro: Awaitable[T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)  # type: ignore[arg-type]

    async def run(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run ``fn()`` on the loop; cancelling the trio caller cancels the coroutine."""
        future = self.submit(fn())
        try:
            return await trio.to_thread.run_sync(future.result, abandon_on_cancel=True)
        except trio.Cancelled:
            future.cancel()
            raise

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


class AsyncioConn:
    """:class:`Conn` over an ``mcp_ref.asyncio`` client, each operation run on its loop."""

    flavour = "asyncio"

    def __init__(self, loop: LoopThread) -> None:
        self.loop = loop
        self.client: Any = None
        self.logs: list[Any] = []
        self._log_events: set[asyncio.Event] = set()
        self._trio_token = trio.lowlevel.current_trio_token()

    def bridge(self, handler: Callable[[Any], Awaitable[T]]) -> Callable[[Any], Awaitable[T]]:
        """``handler`` (a trio function, e.g. of :class:`ClientSide`) as an asyncio one:
        it runs in the test's trio run, and cancelling the asyncio task cancels it."""
        token = self._trio_token

        async def on_asyncio(params: Any) -> T:  # on the loop's thread
            scope = trio.CancelScope()

            async def in_trio() -> T:
                with scope:
                    return await handler(params)
                raise asyncio.CancelledError  # cancelled from the asyncio side

            def run() -> T:
                return trio.from_thread.run(in_trio, trio_token=token)

            loop = asyncio.get_running_loop()
            try:
                return await loop.run_in_executor(None, run)
            except asyncio.CancelledError:
                cancel = partial(trio.from_thread.run_sync, scope.cancel, trio_token=token)
                await loop.run_in_executor(None, cancel)
                raise

        return on_asyncio

    def on_notification(self, note: Any) -> None:  # on the loop's thread
        if note.method == "notifications/message":
            self.logs.append(note.params.data)
            for event in self._log_events:
                event.set()

    @property
    def protocol_version(self) -> str:
        version: str = self.client.initialize_result.protocol_version
        return version

    @property
    def server_name(self) -> str:
        name: str = self.client.initialize_result.server_info.name
        return name

    async def call(
        self, name: str, arguments: dict[str, Any] | None = None, *, timeout: Any = _DEFAULT
    ) -> t.CallToolResult:
        kw = {} if timeout is _DEFAULT else {"timeout": timeout}
        result: t.CallToolResult = await self.loop.run(
            partial(self.client.call_tool, name, arguments, **kw)
        )
        return result

    async def call_with_progress(
        self, name: str, arguments: dict[str, Any]
    ) -> tuple[t.CallToolResult, list[Progress]]:
        seen: list[Progress] = []  # appended on the loop's thread, read after the call
        result: t.CallToolResult = await self.loop.run(
            partial(self.client.call_tool, name, arguments, on_progress=seen.append)
        )
        return result, seen

    async def list_tool_names(self) -> list[str]:
        tools = await self.loop.run(self.client.list_tools)
        return [tool.name for tool in tools]

    async def list_tools_page(self, cursor: str | None) -> t.ListToolsResult:
        params = t.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        page: t.ListToolsResult = await self.loop.run(
            partial(self.client.request, "tools/list", params)
        )
        return page

    async def ping(self) -> None:
        await self.loop.run(self.client.ping)

    async def cancel_blocked_call(self) -> None:
        await self.loop.run(self._cancel_blocked_call)

    async def _cancel_blocked_call(self) -> None:  # on the loop
        before = sum(map(_is_block_start, self.logs))
        event = asyncio.Event()
        self._log_events.add(event)
        task = asyncio.ensure_future(self.client.call_tool("block"))
        try:
            while sum(map(_is_block_start, self.logs)) <= before:
                await event.wait()
                event.clear()
        finally:
            self._log_events.discard(event)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def predict_request_id(self) -> int:
        async def peek() -> int:
            return int(self.client.connection.next_request_id()) + 1

        return await self.loop.run(peek)

    async def wait_block_started(self, before: int) -> None:
        """Wait until more than ``before`` ``block`` calls logged their start."""

        async def wait() -> None:  # on the loop
            event = asyncio.Event()
            self._log_events.add(event)
            try:
                while sum(map(_is_block_start, self.logs)) <= before:
                    await event.wait()
                    event.clear()
            finally:
                self._log_events.discard(event)

        await self.loop.run(wait)

    async def abort(self) -> None:
        async def abort() -> None:
            self.client.abort()

        await self.loop.run(abort)


@asynccontextmanager
async def asyncio_conn(
    open_client: Callable[..., AbstractAsyncContextManager[Any]], **open_kw: Any
) -> AsyncIterator[AsyncioConn]:
    """An :class:`AsyncioConn`: ``open_client(on_notification=..., **open_kw)`` (an
    ``mcp_ref.asyncio`` ``open_*`` function) entered and left on a loop thread."""
    loop = LoopThread()
    conn = AsyncioConn(loop)
    ready: concurrent.futures.Future[Any] = concurrent.futures.Future()
    stop = asyncio.Event()
    for name in ("sampling_handler", "elicitation_handler"):
        if open_kw.get(name) is not None:
            open_kw[name] = conn.bridge(open_kw[name])

    async def hold() -> None:
        try:
            async with open_client(on_notification=conn.on_notification, **open_kw) as client:
                ready.set_result(client)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    held = loop.submit(hold())
    try:
        conn.client = await trio.to_thread.run_sync(ready.result, abandon_on_cancel=True)
        try:
            yield conn
        finally:
            loop.loop.call_soon_threadsafe(stop.set)
            with trio.CancelScope(shield=True), trio.move_on_after(STEP_LIMIT):
                await trio.to_thread.run_sync(held.result, abandon_on_cancel=True)
    finally:
        held.cancel()
        loop.close()


class BlockingConn:
    """:class:`Conn` over :class:`mcp_ref.blocking.Client`, each call in a worker thread
    (one at a time, as that client requires)."""

    flavour = "blocking"

    def __init__(self) -> None:
        self.client: Any = None
        self.logs: list[Any] = []

    def on_notification(self, note: Any) -> None:  # in the calling worker thread
        if note.method == "notifications/message":
            self.logs.append(note.params.data)

    @property
    def protocol_version(self) -> str:
        version: str = self.client.initialize_result.protocol_version
        return version

    @property
    def server_name(self) -> str:
        name: str = self.client.initialize_result.server_info.name
        return name

    async def _run(self, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        return await trio.to_thread.run_sync(partial(fn, *args, **kw))

    async def call(
        self, name: str, arguments: dict[str, Any] | None = None, *, timeout: Any = _DEFAULT
    ) -> t.CallToolResult:
        kw = {} if timeout is _DEFAULT else {"timeout": timeout}
        result: t.CallToolResult = await self._run(self.client.call_tool, name, arguments, **kw)
        return result

    async def call_with_progress(
        self, name: str, arguments: dict[str, Any]
    ) -> tuple[t.CallToolResult, list[Progress]]:
        seen: list[Progress] = []  # appended on the calling thread, read after the call
        result: t.CallToolResult = await self._run(
            self.client.call_tool, name, arguments, on_progress=seen.append
        )
        return result, seen

    async def list_tool_names(self) -> list[str]:
        return [tool.name for tool in await self._run(self.client.list_tools)]

    async def list_tools_page(self, cursor: str | None) -> t.ListToolsResult:
        params = t.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        page: t.ListToolsResult = await self._run(self.client.request, "tools/list", params)
        return page

    async def ping(self) -> None:
        await self._run(self.client.ping)

    async def cancel_blocked_call(self) -> None:
        raise NotImplementedError(UNSUPPORTED[("blocking", "cancel")])

    async def predict_request_id(self) -> int:
        return int(self.client.connection.next_request_id()) + 1

    async def wait_block_started(self, before: int) -> None:
        raise NotImplementedError(UNSUPPORTED[("blocking", "abort")])

    async def abort(self) -> None:
        raise NotImplementedError(UNSUPPORTED[("blocking", "abort")])


@asynccontextmanager
async def blocking_conn(command: list[str], **connect_kw: Any) -> AsyncIterator[BlockingConn]:
    """A :class:`BlockingConn` to ``command`` (``mcp_ref.blocking.connect_stdio``)."""
    from mcp_ref.blocking import connect_stdio

    conn = BlockingConn()
    manager = connect_stdio(command, on_notification=conn.on_notification, **connect_kw)
    conn.client = await trio.to_thread.run_sync(manager.__enter__)
    try:
        yield conn
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(manager.__exit__, None, None, None)


# ============================================================================== raw


class RawConn(Protocol):
    """A connection that writes what no client would write."""

    async def exchange(self, message: bytes, *, reply: bool = True) -> dict[str, Any] | None:
        """Send one message (exact bytes, no framing); return the server's answer to it
        (the next JSON-RPC response, decoded), or None when ``reply`` is False."""
        ...


class ChannelRaw:
    """:class:`RawConn` over a :class:`~mcp_ref.trio.MessageChannel` (stdio: lines;
    memory and WebSocket: whole messages)."""

    def __init__(self, channel: Any) -> None:
        self.channel = channel
        self._buffer = b""

    async def exchange(self, message: bytes, *, reply: bool = True) -> dict[str, Any] | None:
        lines = self.channel.framing == "lines"
        await self.channel.send(message + b"\n" if lines else message)
        if not reply:
            return None
        while True:
            obj = json.loads(await self._next(lines))
            if "method" not in obj:  # skip the server's notifications and requests
                assert isinstance(obj, dict)
                return obj

    async def _next(self, lines: bool) -> bytes:
        if not lines:
            data: bytes = await self.channel.receive()
            assert data, "the server closed the connection"
            return data
        while b"\n" not in self._buffer:
            chunk = await self.channel.receive()
            assert chunk, "the server closed the connection"
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line


class HttpRaw:
    """:class:`RawConn` over Streamable HTTP: each message is one POST (h11 by hand);
    the answer is read from a JSON body, an SSE stream or an error body.

    Attributes:
        statuses: the HTTP status of every POST so far.
    """

    def __init__(self, host: str, port: int, path: str) -> None:
        self.host, self.port, self.path = host, port, path
        self.session_id: bytes | None = None
        self.version: bytes | None = None
        self.statuses: list[int] = []

    async def exchange(self, message: bytes, *, reply: bool = True) -> dict[str, Any] | None:
        import h11

        from mcp_ref._sse import NEED_DATA as SSE_NEED_DATA
        from mcp_ref._sse import SSEDecoder

        headers = [
            (b"host", f"{self.host}:{self.port}".encode()),
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
            (b"content-length", str(len(message)).encode()),
            (b"connection", b"close"),
        ]
        if self.session_id is not None:
            headers.append((b"mcp-session-id", self.session_id))
        if self.version is not None:
            headers.append((b"mcp-protocol-version", self.version))
        stream = await trio.open_tcp_stream(self.host, self.port)
        async with stream:
            conn = h11.Connection(h11.CLIENT)
            out = conn.send(h11.Request(method=b"POST", target=self.path.encode(), headers=headers))
            await stream.send_all((out or b"") + (conn.send(h11.Data(data=message)) or b""))
            await stream.send_all(conn.send(h11.EndOfMessage()) or b"")
            decoder: SSEDecoder | None = None
            body = b""
            answers: list[dict[str, Any]] = []
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(bytes(await stream.receive_some(65536)))
                    continue
                if isinstance(event, h11.Response):
                    self.statuses.append(event.status_code)
                    found = dict(event.headers)
                    if b"mcp-session-id" in found:
                        self.session_id = found[b"mcp-session-id"]
                    if found.get(b"content-type", b"").startswith(b"text/event-stream"):
                        decoder = SSEDecoder()
                elif isinstance(event, h11.Data):
                    if decoder is None:
                        body += event.data
                        continue
                    decoder.receive_data(bytes(event.data))
                    while True:
                        sse = decoder.next_event()
                        if sse is SSE_NEED_DATA or sse is None:
                            break
                        assert not isinstance(sse, type(SSE_NEED_DATA))
                        if sse.data:  # (a priming event has no data)
                            answers.append(json.loads(sse.data))
                    if any("method" not in a for a in answers):
                        break  # the response arrived: the stream is done for us
                else:
                    break
        if body:
            answers.append(json.loads(body))
        responses = [a for a in answers if "method" not in a]
        if not reply:
            return None
        assert responses, f"no answer (HTTP {self.statuses[-1]})"
        answer = responses[0]
        result = answer.get("result")
        if isinstance(result, dict) and "protocolVersion" in result:
            self.version = str(result["protocolVersion"]).encode()
        assert isinstance(answer, dict)
        return answer


# ======================================================================== scenarios


def _initialize_bytes(rid: int, version: str = LATEST_PROTOCOL_VERSION) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        }
    ).encode()


def request_size(rid: int, pad: str) -> int:
    """Bytes of the ``tools/call`` of ``size(pad)`` with id ``rid``, as the core encodes
    it (the message alone: no newline, no HTTP or WebSocket framing)."""
    params = t.CallToolRequestParams(name="size", arguments={"pad": pad})
    message = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": unstructure(params)}
    return len(rpc.encode(message))


def pad_for(total: int, rid: int) -> str:
    """A ``pad`` that makes the ``size`` request exactly ``total`` bytes long."""
    pad = "x" * (total - request_size(rid, ""))
    assert request_size(rid, pad) == total
    return pad


async def check_initialize(connect: Connect, version: str) -> None:
    """Initialize asking for ``version``; the server answers the same version; then a
    call and a ping work.  Source: 2025-06-18/basic/lifecycle#version-negotiation."""
    kw = {} if version == LATEST_PROTOCOL_VERSION else {"protocol_version": version}
    with trio.fail_after(STEP_LIMIT):
        async with connect(**kw) as conn:
            assert conn.protocol_version == version
            assert conn.server_name == "conformance"
            assert _text(await conn.call("echo", {"text": f"hi {version}"})) == f"hi {version}"
            await conn.ping()


async def check_pagination(connect: Connect) -> None:
    """List every tool across pages, walk the pages by hand, refuse a bad cursor; call
    a tool and an unknown one.  Source: 2025-06-18/server/utilities/pagination."""
    with trio.fail_after(STEP_LIMIT):
        async with connect() as conn:
            assert await conn.list_tool_names() == TOOL_NAMES
            names: list[str] = []
            cursor: str | None = None
            pages = 0
            while True:
                page = await conn.list_tools_page(cursor)
                pages += 1
                assert len(page.tools) <= PAGE_SIZE
                names += [tool.name for tool in page.tools]
                if page.next_cursor is None:
                    break
                cursor = page.next_cursor
            assert names == TOOL_NAMES
            assert pages == math.ceil(len(TOOL_NAMES) / PAGE_SIZE)
            with pytest.raises(McpError) as info:
                await conn.list_tools_page("not-a-cursor")
            assert info.value.code == INVALID_PARAMS
            assert _text(await conn.call("echo", {"text": "é ✓ \n"})) == "é ✓ \n"
            with pytest.raises(McpError) as info:
                await conn.call("no-such-tool")
            assert info.value.code == INVALID_PARAMS


async def check_progress(connect: Connect) -> None:
    """A call with a progress token gets increasing progress, then its result.
    Source: 2025-06-18/basic/utilities/progress#progress-flow."""
    with trio.fail_after(STEP_LIMIT):
        async with connect() as conn:
            result, seen = await conn.call_with_progress("slow", {"steps": 4})
            assert _text(result) == "done"
            assert [(p.progress, p.total, p.message) for p in seen] == [
                (i, 4, f"step {i}") for i in range(1, 5)
            ]


async def check_cancel_client_to_server(connect: Connect) -> None:
    """The client cancels a call the server is running: the server's handler is
    cancelled and the session goes on.
    Source: 2025-06-18/basic/utilities/cancellation#cancellation-flow."""
    with trio.fail_after(STEP_LIMIT):
        async with connect() as conn:
            await conn.cancel_blocked_call()
            assert _text(await conn.call("cancellations", {"at_least": 1})) == "1"
            assert _text(await conn.call("echo", {"text": "still here"})) == "still here"


class ClientSide:
    """Client-side handlers for server-to-client requests, recording what happened."""

    def __init__(self, *, block: bool = False) -> None:
        self.block = block
        self.conn: Conn | None = None
        """Set to tell the server (tool ``started``) when a blocking handler runs."""
        self.started = 0
        self.cancelled = 0
        self._changed = trio.Event()

    def _note(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def sampling(self, params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        self.started += 1
        self._note()
        if self.block:
            try:
                if self.conn is not None:
                    await self.conn.call("started")
                await trio.sleep_forever()
            except trio.Cancelled:
                self.cancelled += 1
                self._note()
                raise
        text = params.messages[0].content.text  # type: ignore[union-attr]
        return t.CreateMessageResult(
            role="assistant", content=t.TextContent(text=f"re: {text}"), model="m"
        )

    async def elicitation(self, params: Any) -> t.ElicitResult:
        assert params.message == "name?"
        return t.ElicitResult(action="accept", content={"name": "ada"})

    async def wait_cancelled(self, n: int) -> None:
        while self.cancelled < n:
            await self._changed.wait()

    def kw(self) -> dict[str, Any]:
        return {
            "sampling_handler": self.sampling,
            "elicitation_handler": self.elicitation,
            "roots": [t.Root(uri="file:///work", name="work")],
        }


async def check_cancel_server_to_client(connect: Connect) -> None:
    """The server cancels its ``sampling/createMessage``: the client's handler is
    cancelled.  Source: 2025-06-18/basic/utilities/cancellation#cancellation-flow."""
    side = ClientSide(block=True)
    with trio.fail_after(STEP_LIMIT):
        async with connect(**side.kw()) as conn:
            side.conn = conn
            answer = await conn.call("ask", {"kind": "sampling", "cancel": True})
            assert _text(answer) == "cancelled"
            await side.wait_cancelled(1)
            assert side.started == 1
            assert _text(await conn.call("ask", {"kind": "roots"})) == "roots: file:///work"


async def check_timeout_client_request(connect: Connect) -> None:
    """A client request that outlives its timeout fails with -32001 and the server is
    told (its handler is cancelled).  Source: 2025-06-18/basic/lifecycle#timeouts."""
    with trio.fail_after(STEP_LIMIT):
        async with connect() as conn:
            with pytest.raises(McpError) as info:
                await conn.call("block", timeout=SHORT)
            assert info.value.code == REQUEST_TIMEOUT
            assert _text(await conn.call("cancellations", {"at_least": 1})) == "1"


async def check_timeout_server_request(connect: Connect) -> None:
    """A server request to the client that outlives its timeout fails with -32001 on
    the server, and the client's handler is cancelled.
    Source: 2025-06-18/basic/lifecycle#timeouts."""
    side = ClientSide(block=True)
    with trio.fail_after(STEP_LIMIT):
        async with connect(**side.kw()) as conn:
            answer = await conn.call("ask", {"kind": "sampling", "timeout": SHORT})
            assert _text(answer) == f"error {REQUEST_TIMEOUT}"
            await side.wait_cancelled(1)


async def check_server_requests(connect: Connect, *, answered: bool) -> None:
    """The server asks the client for sampling, roots and elicitation while handling a
    call.  A client with handlers answers; a client that declared no capability gets
    none of those requests (the server's core refuses to send them).
    Source: 2025-06-18/client/sampling, 2025-06-18/client/roots,
    2025-06-18/client/elicitation."""
    side = ClientSide()
    with trio.fail_after(STEP_LIMIT):
        async with connect(**(side.kw() if answered else {})) as conn:
            answers = [
                _text(await conn.call("ask", {"kind": kind}))
                for kind in ("sampling", "roots", "elicitation")
            ]
    if answered:
        assert answers == [
            "sampled: re: hello",
            "roots: file:///work",
            'elicited: accept {"name": "ada"}',
        ]
    else:
        assert all(a.startswith("refused: ") and "capability" in a for a in answers), answers


async def check_size_limit(connect: Connect, *, oversize: str) -> None:
    """A request of exactly :data:`LIMIT_BYTES` bytes is served; one byte more is
    refused: with an error while the session goes on (``oversize="error"``), or by
    closing the connection (``oversize="close"``, WebSocket 1009), after which the
    server still takes new connections."""
    with trio.fail_after(STEP_LIMIT):
        async with connect() as conn:
            pad = pad_for(LIMIT_BYTES, await conn.predict_request_id())
            assert _text(await conn.call("size", {"pad": pad})) == str(len(pad))
            pad = pad_for(LIMIT_BYTES + 1, await conn.predict_request_id())
            if oversize == "error":
                with pytest.raises(McpError):
                    await conn.call("size", {"pad": pad}, timeout=OVERSIZE_WAIT)
                await conn.ping()
                assert _text(await conn.call("echo", {"text": "after"})) == "after"
            else:
                assert oversize == "close"
                with pytest.raises(CLOSED_ERRORS):
                    await conn.call("size", {"pad": pad}, timeout=STEP_LIMIT)
        if oversize == "close":
            async with connect() as conn:
                await conn.ping()


async def check_bad_input(open_raw: Callable[[], AbstractAsyncContextManager[RawConn]]) -> None:
    """Bytes that are not JSON get -32700 (with the request's id when its first bytes
    show one, however deep the rest is nested), JSON that is not JSON-RPC gets -32600,
    an unknown method -32601; the connection survives them all and serves a call.
    Source: 2025-06-18/basic#messages; JSON-RPC 2.0 section 5.1."""
    with trio.fail_after(STEP_LIMIT):
        async with open_raw() as raw:
            answer = await raw.exchange(b"this is not JSON")
            assert answer is not None and answer["error"]["code"] == PARSE_ERROR
            assert answer.get("id") is None
            answer = await raw.exchange(b'{"jsonrpc":"2.0","id":"q"}')
            assert answer is not None and answer["error"]["code"] == INVALID_REQUEST
            answer = await raw.exchange(_initialize_bytes(1))
            assert answer is not None
            assert answer["result"]["protocolVersion"] == LATEST_PROTOCOL_VERSION
            await raw.exchange(
                b'{"jsonrpc":"2.0","method":"notifications/initialized"}', reply=False
            )
            answer = await raw.exchange(b'{"jsonrpc":"2.0","id":2,"method":"no/such"}')
            assert answer is not None
            assert (answer["id"], answer["error"]["code"]) == (2, METHOD_NOT_FOUND)
            # Broken after its id (cut short; nested past any parser's depth): still
            # -32700, and answered by that id, which its first bytes show.
            answer = await raw.exchange(b'{"jsonrpc":"2.0","id":4,"method":"tools/call","par')
            assert answer is not None
            assert (answer["id"], answer["error"]["code"]) == (4, PARSE_ERROR)
            deep = b"[" * 5000 + b"]" * 5000
            answer = await raw.exchange(
                b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"x":' + deep + b"}}"
            )
            assert answer is not None
            assert (answer["id"], answer["error"]["code"]) == (5, PARSE_ERROR)
            call = {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "ok"}},
            }
            answer = await raw.exchange(json.dumps(call).encode())
            assert answer is not None and answer["id"] == 3
            assert answer["result"]["content"][0]["text"] == "ok"


async def check_server_vanishes(
    connect: Connect, *, also: tuple[type[BaseException], ...] = ()
) -> None:
    """The server drops dead in the middle of a call: the caller gets an error promptly
    (the session is closed, or the request fails), never a hang.

    Args:
        also: other exceptions the client documents for a server that breaks off.
    """
    with trio.fail_after(STEP_LIMIT):
        async with connect() as conn:
            with pytest.raises((*CLOSED_ERRORS, McpError, *also)):
                await conn.call("vanish", timeout=STEP_LIMIT)


async def check_client_vanishes(
    connect: Connect, *, after: Callable[[], Awaitable[None]] | None = None
) -> None:
    """The client drops its connection in the middle of a call: the server cancels the
    orphaned handler once its ``drain_timeout`` is over (seen by a new connection to a
    shared server), or, for a server process of its own, ends on its own (``after``
    checks that)."""
    with trio.fail_after(STEP_LIMIT):
        async with connect() as conn:
            async with trio.open_nursery() as nursery:

                async def orphan() -> None:
                    with contextlib.suppress(*CLOSED_ERRORS, McpError):
                        await conn.call("block")

                nursery.start_soon(orphan)
                await conn.wait_block_started(0)
                await conn.abort()
        if after is not None:
            await after()
        else:
            async with connect() as again:
                got = _text(await again.call("cancellations", {"at_least": 1}))
                assert got == "1", got


if __name__ == "__main__":
    main()

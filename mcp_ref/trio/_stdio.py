"""The stdio transport: the server side (:func:`serve_stdio`; :func:`serve_until_signal`
for a graceful stop on a signal) and the client side (:func:`open_stdio_process`, an
MCP server run as a child process).

Theory of operation
-------------------
The client writes newline-delimited messages to the server's stdin, the server to its
stdout.  The server reads and writes duplicates of fds 0 and 1
(``trio.lowlevel.FdStream``: no worker threads; Unix only).  The client keeps a bounded
tail of the child's stderr for the ``eof_reason`` its pending requests see in
:class:`~mcp_ref.trio.SessionClosed`, and shuts the child down as
:func:`open_stdio_process` says; the decisions are the core's (:mod:`mcp_ref._process_rules`).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, redirect_stdout, suppress
from typing import Any

import trio

from .. import _process_rules as rules
from .._process_rules import StderrMode
from .._session_rules import DEFAULT_GRACE_SECONDS, checked_grace
from ..events import RequestId
from ._channel import RECEIVE_SIZE, StreamChannel, open_owned_nursery
from ._session import serve_channel
from ._session_api import Handler

__all__ = [
    "ProcessChannel",
    "StderrMode",
    "open_stdio_process",
    "serve_stdio",
    "serve_until_signal",
    "stdio_channel",
]

log = logging.getLogger("mcp_ref.trio.stdio")


@asynccontextmanager
async def stdio_channel() -> AsyncIterator[StreamChannel]:
    """This process's stdin and stdout as a :class:`StreamChannel`, for a server;
    meanwhile ``sys.stdout`` points at stderr.  The fds' blocking modes are restored at
    the end.  Source: 2025-06-18/basic/transports#stdio."""
    sys.stdout.flush()
    blocking = {fd: os.get_blocking(fd) for fd in (0, 1)}
    stdin = trio.lowlevel.FdStream(os.dup(0))
    stdout = trio.lowlevel.FdStream(os.dup(1))
    try:
        # Spec: 2025-06-18/basic/transports#stdio.4
        # "The server MUST NOT write anything to its `stdout` that is not a valid MCP message."
        with redirect_stdout(sys.stderr):
            yield StreamChannel(stdout, stdin)
    finally:
        for fd, mode in blocking.items():
            with suppress(OSError):
                os.set_blocking(fd, mode)


async def serve_stdio(
    handler: Handler,
    *,
    stop: trio.Event | None = None,
    grace_seconds: float = DEFAULT_GRACE_SECONDS,
    **session_kw: Any,
) -> None:
    """Serve ``handler`` (a :class:`~mcp_ref.trio.Handler`, e.g. an
    ``mcp_ref.server.Server``) on this process's stdin and stdout; return once input
    ended (or ``stop`` was set, e.g. on SIGTERM) and the requests are answered: those
    still running ``grace_seconds`` later (the session's ``drain_timeout`` unless
    ``session_kw``, :func:`~mcp_ref.trio.open_session`'s, has one) get -32603.

    Raises:
        ValueError: ``grace_seconds`` is negative.

    Source: 2025-06-18/basic/transports#stdio, 2025-06-18/basic/lifecycle#stdio.
    """
    session_kw.setdefault("drain_timeout", checked_grace(grace_seconds))
    async with stdio_channel() as channel:
        await serve_channel(handler, channel, stop=stop, **session_kw)


async def serve_until_signal(serve: Callable[[trio.Event], Awaitable[None]]) -> int | None:
    """Run ``serve(stop)`` until it returns, with SIGTERM and SIGINT setting ``stop``
    (a graceful stop); a second signal cancels it at once, and SIGINT does not raise
    ``KeyboardInterrupt``.  Call it from the main thread.  Returns the first signal
    received (``signal.SIGTERM`` or ``signal.SIGINT``), or None.

    Source: 2025-06-18/basic/lifecycle#stdio.1 (a client sends SIGTERM to a server
    that does not exit when its input closes).
    """
    stop = trio.Event()
    got: int | None = None
    async with trio.open_nursery() as nursery:

        async def watch(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
            nonlocal got
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                task_status.started()
                async for signum in signals:
                    if got is None:
                        got = signum
                        log.info("%s: stopping gracefully", signal.Signals(signum).name)
                        stop.set()
                    else:
                        nursery.cancel_scope.cancel()  # a second signal: stop now

        await nursery.start(watch)
        await serve(stop)
        nursery.cancel_scope.cancel()
    return got


class ProcessChannel(StreamChannel):
    """The ``"lines"`` channel to a child server: its stdin and stdout.  Its
    ``process`` is the ``trio.Process``; ``eof_reason``, once its stdout ended or a
    write broke, :func:`mcp_ref._process_rules.describe_exit`'s account."""

    def __init__(
        self, process: trio.Process, tail: rules.StderrTail | None, forward: bool, exit_wait: float
    ) -> None:
        assert process.stdin is not None and process.stdout is not None
        super().__init__(process.stdin, process.stdout)
        self.process = process
        self._tail = tail
        self._forward = forward  # also copy each stderr line to ours
        self._stderr_done = trio.Event()  # the stderr reader has read it all
        if tail is None:
            self._stderr_done.set()
        self._exit_wait = exit_wait
        self._closing = False

    @property
    def stderr_tail(self) -> list[str]:
        """The last captured stderr lines (empty unless stderr is captured or forwarded)."""
        return list(self._tail.lines) if self._tail is not None else []

    async def receive(self) -> bytes:
        """The next chunk of the child's stdout; ``b""`` at its end, ``eof_reason`` set."""
        data = await super().receive()
        if not data and not self._closing:
            await self._explain()
        return data

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """Write to the child's stdin (raises ``trio.BrokenResourceError`` when the child
        closed it or died, ``eof_reason`` set first)."""
        try:
            # Spec: 2025-06-18/basic/transports#stdio.5
            # "The client MUST NOT write anything to the server's `stdin` that is not a valid MCP
            # message."
            # (only what the core framed comes here)
            await super().send(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            if not self._closing:
                await self._explain()
            raise

    async def aclose(self) -> None:
        """Close the child's stdin and stdout (the first step of its shutdown)."""
        self._closing = True
        await super().aclose()

    async def _explain(self) -> None:
        # Give the child a moment to exit and the stderr reader to catch up.
        with trio.move_on_after(self._exit_wait):
            await self.process.wait()
            await self._stderr_done.wait()
        process = self.process
        self.eof_reason = rules.describe_exit(process.pid, process.returncode, self.stderr_tail)

    async def _read_stderr(self, stream: trio.abc.ReceiveStream, tail: rules.StderrTail) -> None:
        # A task of open_stdio_process: each line into the tail, logged, maybe forwarded.
        try:
            while chunk := await stream.receive_some(RECEIVE_SIZE):
                for line in tail.feed(bytes(chunk)):
                    self._show(line)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            for line in tail.feed(b""):  # a last line without a newline
                self._show(line)
            self._stderr_done.set()

    def _show(self, line: str) -> None:
        log.debug("server stderr: %s", line)
        if self._forward:
            try:
                print(line, file=sys.stderr, flush=True)
            except (OSError, ValueError):
                self._forward = False


async def _aclose_quietly(stream: trio.abc.AsyncResource | None) -> None:
    if stream is not None:
        with suppress(OSError, trio.BrokenResourceError, trio.ClosedResourceError):
            await stream.aclose()


async def _shutdown(process: trio.Process, grace: float) -> None:
    """Stop a child server; shielded, so it completes even in a cancelled scope."""
    with trio.CancelScope(shield=True):
        # Spec: 2025-06-18/basic/lifecycle#stdio.1
        # "For the stdio transport, the client SHOULD initiate shutdown by:"
        # 1. close the child's input stream; 2. SIGTERM when it has not exited within the
        # grace period; 3. SIGKILL when it has not exited within the grace period after SIGTERM
        await _aclose_quietly(process.stdin)
        for signal_it in (process.terminate, process.kill):
            with trio.move_on_after(grace):
                await process.wait()
            if process.returncode is not None:
                return
            log.warning("the server process %d has not exited: %s", process.pid, signal_it.__name__)
            with suppress(OSError):
                signal_it()
        await process.wait()


@asynccontextmanager
async def open_stdio_process(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = True,
    cwd: str | os.PathLike[str] | None = None,
    stderr: StderrMode = "capture",
    stderr_lines: int = 20,
    shutdown_grace: float = 2.0,
    exit_wait: float = 1.0,
) -> AsyncIterator[tuple[ProcessChannel, trio.Process]]:
    """Start ``command`` (a list, e.g. ``[sys.executable, "server.py"]``: no shell) as
    a child process in ``cwd`` and yield ``(channel, process)``: a :class:`ProcessChannel`
    (for ``open_session`` or ``mcp_ref.client.open_client``) and the ``trio.Process``.
    The child's environment is ``env`` over ours (alone unless ``inherit_env``); ``stderr``
    is a :data:`StderrMode`, of which the last ``stderr_lines`` lines are kept.  On
    exit the child is shut down (stdin closed, ``shutdown_grace`` seconds, SIGTERM,
    ``shutdown_grace`` seconds, SIGKILL) and always reaped; once its stdout ended, its
    exit is awaited ``exit_wait`` seconds for ``eof_reason``.

    Raises:
        OSError: the program could not be started (e.g. FileNotFoundError).
        TypeError, ValueError: :func:`mcp_ref._process_rules.check_options`.

    Source: 2025-06-18/basic/lifecycle#stdio.1, 2025-06-18/basic/transports#stdio.
    """
    rules.check_options(command, stderr, stderr_lines, shutdown_grace, exit_wait)
    stderr_arg = {"inherit": None, "discard": subprocess.DEVNULL}.get(stderr, subprocess.PIPE)
    process = await trio.lowlevel.open_process(
        list(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr_arg,
        env=rules.child_env(os.environ, env, inherit_env),
        cwd=cwd,
    )
    tail = rules.StderrTail(stderr_lines) if stderr_arg == subprocess.PIPE else None
    channel = ProcessChannel(process, tail, stderr == "forward", exit_wait)
    try:
        async with open_owned_nursery() as nursery:
            if tail is not None:
                assert process.stderr is not None
                nursery.start_soon(channel._read_stderr, process.stderr, tail)
            try:
                yield channel, process
            finally:
                channel._closing = True
                await _shutdown(process, shutdown_grace)
                # Let the stderr reader take what the child left in the pipe, briefly.
                with trio.CancelScope(shield=True), trio.move_on_after(0.5):
                    await channel._stderr_done.wait()
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:  # only if _shutdown itself was interrupted
                with suppress(OSError):
                    process.kill()
                await process.wait()
            for pipe in (process.stdin, process.stdout, process.stderr):
                await _aclose_quietly(pipe)

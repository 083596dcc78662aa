"""The stdio transport, client side: run an MCP server as a child process.

Theory of operation
-------------------
:func:`open_stdio_process` starts the server and yields a :class:`ProcessChannel` over
its stdin and stdout.  Its stderr is captured into a bounded tail (and optionally
forwarded to ours), inherited, or discarded.  When its stdout ends, the channel waits
briefly for the exit and sets ``eof_reason`` to the exit code and the last stderr
lines, which pending requests then see in their :class:`~mcp_ref.trio.SessionClosed`.
Leaving the block shuts the child down as the lifecycle page says, shielded, so even a
cancelled caller leaves no zombie.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Literal

import trio

from ..events import RequestId
from ._channel import RECEIVE_SIZE, StreamChannel

__all__ = ["ProcessChannel", "StderrMode", "open_stdio_process"]

log = logging.getLogger("mcp_ref.trio.stdio")

StderrMode = Literal["capture", "forward", "inherit", "discard"]
"""What to do with a child server's stderr:

* ``"capture"``: keep the last lines in memory (for error messages) and log each line at
  DEBUG level to the ``mcp_ref.trio.stdio`` logger;
* ``"forward"``: the same, and also copy each line to our ``sys.stderr``;
* ``"inherit"``: the child writes straight to our stderr (no tail kept);
* ``"discard"``: ``/dev/null``.

Source: 2025-06-18/basic/transports#stdio.3 (clients may capture, forward or ignore it).
"""

_MAX_STDERR_LINE = 1000


class _StderrTail:
    """The last lines of a child's stderr; bounded in lines and in bytes per line."""

    def __init__(self, max_lines: int, forward: bool) -> None:
        self.lines: deque[str] = deque(maxlen=max_lines)
        self.forward = forward
        self.done = trio.Event()
        self._partial = bytearray()

    async def pump(self, stream: trio.abc.ReceiveStream) -> None:
        try:
            while chunk := await stream.receive_some(RECEIVE_SIZE):
                *lines, rest = chunk.split(b"\n")
                for line in lines:
                    self._append(line)
                    self._finish_line()
                self._append(rest)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            if self._partial:
                self._finish_line()
            self.done.set()

    def _append(self, data: bytes | bytearray) -> None:
        room = _MAX_STDERR_LINE - len(self._partial)
        if room > 0:
            self._partial += data[:room]

    def _finish_line(self) -> None:
        text = self._partial.decode("utf-8", "replace").rstrip("\r")
        self._partial.clear()
        self.lines.append(text)
        log.debug("server stderr: %s", text)
        if self.forward:
            try:
                print(text, file=sys.stderr, flush=True)
            except (OSError, ValueError):
                self.forward = False


def _describe_exit(process: trio.Process, tail: Sequence[str] = ()) -> str:
    """A one-paragraph account of a child server's state: exit code or signal, and the
    last lines of its stderr."""
    rc = process.returncode
    if rc is None:
        text = f"the server process (pid {process.pid}) closed its output and is still running"
    elif rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        text = f"the server process was killed by {name} (exit code {rc})"
    else:
        text = f"the server process exited with code {rc}"
    if tail:
        text += "; last stderr lines:\n" + "\n".join(f"  {line}" for line in tail)
    return text


class ProcessChannel(StreamChannel):
    """The ``"lines"`` channel to a child server: its stdin and stdout.

    Attributes:
        process: the ``trio.Process``.
        eof_reason: after its stdout ended (or a write broke): the exit code and the last
            stderr lines.
    """

    def __init__(self, process: trio.Process, tail: _StderrTail | None, exit_wait: float) -> None:
        assert process.stdin is not None and process.stdout is not None
        super().__init__(process.stdin, process.stdout)
        self.process = process
        self._tail = tail
        self._exit_wait = exit_wait
        self._closing = False

    @property
    def stderr_tail(self) -> list[str]:
        """The last captured stderr lines (empty unless stderr is captured or forwarded)."""
        return list(self._tail.lines) if self._tail is not None else []

    async def receive(self) -> bytes:
        """The next chunk of the child's stdout; ``b""`` at its end (``eof_reason`` set)."""
        data = await super().receive()
        if not data and not self._closing:
            await self._explain()
        return data

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """Write to the child's stdin.

        Raises:
            trio.BrokenResourceError: the child closed its stdin or died (``eof_reason``
                is set first).
        """
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
        # Give the child a moment to exit and its stderr pump to catch up.
        with trio.move_on_after(self._exit_wait):
            await self.process.wait()
            if self._tail is not None:
                await self._tail.done.wait()
        self.eof_reason = _describe_exit(self.process, self.stderr_tail)


async def _aclose_quietly(stream: trio.abc.AsyncResource | None) -> None:
    if stream is not None:
        try:
            await stream.aclose()
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError):
            pass


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
            try:
                signal_it()
            except OSError:
                pass
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
    """Start an MCP server as a child process and yield ``(channel, process)``.

    Args:
        command: the program and its arguments, e.g. ``[sys.executable, "server.py"]``
            (a list; a plain string is refused, there is no shell).
        env: environment variables for the child, added over ours (or, with
            ``inherit_env=False``, the whole environment).
        inherit_env: whether the child starts from our environment (default True).
        cwd: the child's working directory.
        stderr: what to do with the child's stderr (:data:`StderrMode`).
        stderr_lines: how many last stderr lines to keep (default 20; lines are cut at
            1000 bytes).
        shutdown_grace: seconds to wait after closing stdin, and again after SIGTERM
            (default 2.0).
        exit_wait: seconds to wait for the child's exit once its stdout ended, to report
            its exit code (default 1.0).

    Yields:
        A :class:`ProcessChannel` (give it to ``open_session`` or
        ``mcp_ref.client.open_client``) and the ``trio.Process``.

    Raises:
        OSError: the program could not be started (e.g. FileNotFoundError).

    On exit the child is shut down (stdin closed, ``shutdown_grace`` seconds, SIGTERM,
    ``shutdown_grace`` seconds, SIGKILL) and always reaped.  Exceptions from the block
    propagate unchanged.

    Source: 2025-06-18/basic/lifecycle#stdio.1, 2025-06-18/basic/transports#stdio.
    """
    if isinstance(command, (str, bytes)):
        raise TypeError("command must be a list of arguments, e.g. [sys.executable, 'server.py']")
    if not command:
        raise ValueError("command is empty")
    if stderr not in ("capture", "forward", "inherit", "discard"):
        raise ValueError(f"unknown stderr mode {stderr!r}")
    if shutdown_grace < 0 or exit_wait < 0 or stderr_lines < 0:
        raise ValueError("shutdown_grace, exit_wait and stderr_lines must not be negative")
    child_env: dict[str, str] | None = None
    if env is not None or not inherit_env:
        child_env = dict(os.environ) if inherit_env else {}
        child_env.update(env or {})
    stderr_arg = {"inherit": None, "discard": subprocess.DEVNULL}.get(stderr, subprocess.PIPE)
    process = await trio.lowlevel.open_process(
        list(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr_arg,
        env=child_env,
        cwd=cwd,
    )
    tail = _StderrTail(stderr_lines, stderr == "forward") if stderr_arg == subprocess.PIPE else None
    channel = ProcessChannel(process, tail, exit_wait)
    body_error: BaseException | None = None
    try:
        async with trio.open_nursery() as nursery:
            if tail is not None:
                assert process.stderr is not None
                nursery.start_soon(tail.pump, process.stderr)
            try:
                yield channel, process
            except BaseException as exc:
                if isinstance(exc, GeneratorExit):
                    raise
                body_error = exc
            finally:
                channel._closing = True
                await _shutdown(process, shutdown_grace)
                if tail is not None:
                    # Let the pump read what the child left in the pipe, briefly.
                    with trio.CancelScope(shield=True), trio.move_on_after(0.5):
                        await tail.done.wait()
                nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:  # only if _shutdown itself was interrupted
                try:
                    process.kill()
                except OSError:
                    pass
                await process.wait()
            for pipe in (process.stdin, process.stdout, process.stderr):
                await _aclose_quietly(pipe)
    if body_error is not None:
        raise body_error

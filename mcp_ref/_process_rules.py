"""What a client decides about the server it runs as a child process, sans-IO: the
child's arguments and environment, what it keeps of the child's stderr, and how it
tells the child's end.

Theory of operation
-------------------
A stdio client driver (:mod:`mcp_ref.trio._stdio`) starts the child, reads its
stderr and waits for its exit; what follows from the arguments and the bytes, and not
from the event loop, is here, so a test needs no process:

* **The arguments** (:func:`check_options`, :func:`child_env`): a list, never a string
  for a shell; the child's environment is ours with ``env`` over it, or ``env`` alone.
* **The stderr tail** (:class:`StderrTail`): the child's last lines, fed chunk by chunk,
  bounded in lines and in bytes per line, so a chatty or hostile child cannot grow it.
* **The account of the child's end** (:func:`describe_exit`): its exit code or the
  signal that killed it, and the tail; the pending requests' ``SessionClosed`` says it.
"""

from __future__ import annotations

import signal
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Final, Literal

__all__ = [
    "MAX_STDERR_LINE",
    "STDERR_MODES",
    "StderrMode",
    "StderrTail",
    "check_command",
    "check_options",
    "child_env",
    "describe_exit",
]

# Spec: 2025-06-18/basic/transports#stdio.3
# "Clients MAY capture, forward, or ignore this logging."
StderrMode = Literal["capture", "forward", "inherit", "discard"]
"""What to do with a child server's stderr:

* ``"capture"``: keep the last lines in memory (for error messages) and log each line at
  DEBUG level to the ``mcp_ref.trio.stdio`` logger;
* ``"forward"``: the same, and also copy each line to our ``sys.stderr``;
* ``"inherit"``: the child writes straight to our stderr (no tail kept);
* ``"discard"``: ``/dev/null``.

Source: 2025-06-18/basic/transports#stdio.3.
"""

STDERR_MODES: Final = ("capture", "forward", "inherit", "discard")
"""The values of :data:`StderrMode`."""

MAX_STDERR_LINE: Final = 1000
"""Bytes kept of one stderr line; the rest of a longer line is dropped."""


def check_command(command: Sequence[str]) -> None:
    """Refuse a command that is not a non-empty list of arguments.

    Raises:
        TypeError: a plain string (there is no shell to split it).
        ValueError: an empty command.
    """
    if isinstance(command, (str, bytes)):
        raise TypeError("command must be a list of arguments, e.g. [sys.executable, 'server.py']")
    if not command:
        raise ValueError("command is empty")


def check_options(command: Sequence[str], stderr: str, stderr_lines: int, *seconds: float) -> None:
    """Refuse the options of a stdio client before anything is started.

    Args:
        command: the program and its arguments (:func:`check_command`).
        stderr: a :data:`StderrMode`.
        stderr_lines: how many last stderr lines to keep.
        seconds: the waits (shutdown grace, exit wait), in seconds.

    Raises:
        TypeError, ValueError: a string or empty ``command``, an unknown ``stderr``, a
            negative number.
    """
    check_command(command)
    if stderr not in STDERR_MODES:
        raise ValueError(f"unknown stderr mode {stderr!r}")
    if stderr_lines < 0 or any(wait < 0 for wait in seconds):
        raise ValueError("waits and stderr_lines must not be negative")


def child_env(
    ours: Mapping[str, str], env: Mapping[str, str] | None, inherit: bool
) -> dict[str, str] | None:
    """The child's environment: None for ours unchanged; else ``env`` over ``ours``
    (``inherit``), or ``env`` alone."""
    if env is None and inherit:
        return None
    return {**(ours if inherit else {}), **(env or {})}


class StderrTail:
    """The last lines of a child's stderr, fed chunk by chunk.

    Args:
        max_lines: how many last lines :attr:`lines` keeps (>= 0).

    Lines are cut at :data:`MAX_STDERR_LINE` bytes, decoded as UTF-8 (bad bytes
    replaced), and lose a trailing ``\\r``.
    """

    def __init__(self, max_lines: int) -> None:
        self.lines: deque[str] = deque(maxlen=max_lines)
        self._partial = bytearray()

    def feed(self, chunk: bytes) -> list[str]:
        """Take the next bytes of stderr, ``b""`` at its end (which completes a last
        line with no newline).  Returns the lines they completed, oldest first."""
        *ended, rest = chunk.split(b"\n")
        done = []
        for line in ended:
            self._append(line)
            done.append(self._finish_line())
        self._append(rest)
        if not chunk and self._partial:
            done.append(self._finish_line())
        return done

    def _append(self, data: bytes) -> None:
        room = MAX_STDERR_LINE - len(self._partial)
        if room > 0:
            self._partial += data[:room]

    def _finish_line(self) -> str:
        text = self._partial.decode("utf-8", "replace").rstrip("\r")
        self._partial.clear()
        self.lines.append(text)
        return text


def describe_exit(pid: int, returncode: int | None, tail: Sequence[str] = ()) -> str:
    """A one-paragraph account of a child server that closed its output: still running,
    its exit code, or the signal that killed it (a negative ``returncode``, as
    ``subprocess`` gives it), then the last lines of its stderr."""
    if returncode is None:
        text = f"the server process (pid {pid}) closed its output and is still running"
    elif returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        text = f"the server process was killed by {name} (exit code {returncode})"
    else:
        text = f"the server process exited with code {returncode}"
    if tail:
        text += "; last stderr lines:\n" + "\n".join(f"  {line}" for line in tail)
    return text

"""One-line errors for the ``mcp-ref`` command.

Every error the command reports is one line on stderr and exit status 1
(:func:`mcp_ref.cli.main`).  :class:`CliError` is the error the command itself raises
(a usage mistake, a server it cannot load); :func:`explain` turns any exception into
that one line, looking inside exception groups (trio's nurseries wrap what their tasks
raise) for the first exception that is not a cancellation.
"""

from __future__ import annotations

import trio

from .._client import SessionClosed
from .._errors import McpError, NoAnswerError, ProtocolError

__all__ = ["CliError", "explain", "first_error"]


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 1."""


def explain(exc: BaseException) -> str:
    """One line for an exception (the first interesting one of a group).  A message of
    several lines (a server's last stderr lines) keeps its first and last: the
    child's traceback ends with the line that names its error."""
    lines = [line.strip() for line in _describe(exc).splitlines() if line.strip()]
    if len(lines) > 2:
        return f"{lines[0]} ... {lines[-1]}"
    return " ".join(lines)


def first_error(exc: BaseException) -> BaseException:
    """``exc``, or for an exception group the first exception inside it (at any depth)
    that is not a ``trio.Cancelled``; a group of cancellations only gives its first."""
    if not isinstance(exc, BaseExceptionGroup):
        return exc
    for inner in exc.exceptions:
        found = first_error(inner)
        if not isinstance(found, trio.Cancelled):
            return found
    return first_error(exc.exceptions[0])


def _describe(exc: BaseException) -> str:
    exc = _underlying(first_error(exc))
    if isinstance(exc, trio.Cancelled):
        return "cancelled"
    if isinstance(exc, NoAnswerError):  # we gave up waiting: nobody answered
        return exc.message
    if isinstance(exc, McpError):
        return f"the server answered with error {exc.code}: {exc.message}"
    if isinstance(exc, FileNotFoundError):
        return f"cannot start the server: {exc.filename or exc}: no such file"
    if isinstance(exc, OSError):
        return f"{type(exc).__name__}: {exc}"
    if isinstance(exc, ProtocolError | CliError) or _is_transport_error(exc):
        return exc.args[0] if exc.args else type(exc).__name__
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _is_transport_error(exc: BaseException) -> bool:
    from ..trio import HttpTransportError

    return isinstance(exc, HttpTransportError)


def _underlying(exc: BaseException) -> BaseException:
    """For a :class:`~mcp_ref._client.SessionClosed` raised while handling the HTTP
    transport's error or our own (a failed sign-in, no sign-in callback in time), that
    error: it says why in the user's terms, without the session's wrapping."""
    if isinstance(exc, SessionClosed):
        inner = exc.__cause__ or exc.__context__
        if inner is not None and (isinstance(inner, CliError) or _is_transport_error(inner)):
            return inner
    return exc

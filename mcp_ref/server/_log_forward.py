"""Python ``logging`` to the client: :class:`ClientLogHandler`.

Theory of operation
-------------------
Install one handler where your tools log (``logging.getLogger("my_tools").addHandler(
ClientLogHandler())``, or on the root logger).  A record emitted while a tool, resource,
prompt or completion function runs goes to *that request's* client as
``notifications/message``: the level mapped by :func:`mcp_level`, ``logger`` the
record's logger name, ``data`` the formatted message (the handler's formatter; with the
default, the message and any traceback).  The request is found through
:data:`~mcp_ref.server._context.current_context`, which the server sets in the request's
task; trio copies it into the worker thread of a sync function.  A record emitted
anywhere else (no current request) is ignored.

What decides whether a record goes, cheapest first:

1. records of mcp_ref's own loggers (``mcp_ref`` and below) are never forwarded, nor is
   anything logged while a record is being sent: forwarding cannot feed itself;
2. no current request, or its session has ended: dropped;
3. below the level the client chose with ``logging/setLevel`` (else the server's
   ``log_level``), or the server does not declare ``logging``: dropped before the record
   is even formatted;
4. the rest is sent through :meth:`Context.log <mcp_ref.server.Context.log>`, with its
   per-session rate limit and its "N log message(s) dropped" notice.

How a record is sent depends on the thread ``emit`` runs in, as ``emit`` may not wait
in the event loop's thread:

* **a worker thread** (a sync function; the default ``blocking=True``): the thread
  sends it itself, ``trio.from_thread.run(context.log, ...)``, and goes on once it is
  written; the request's answer comes after it;
* **the event loop's thread** (an ``async def`` function, or ``blocking=False``): the
  record joins the request's queue (at most :data:`MAX_QUEUED`; past that it is dropped,
  and counted in the "dropped" notice that precedes the session's next message), and one trio system task per request
  with queued records sends them in order while the function goes on.  The server waits
  for that task before it answers (:func:`flush_forwarded`), so every record of a
  request reaches its client before the response (Streamable HTTP then routes it onto
  the request's stream); when the request is cancelled the task is cancelled with it.

``emit`` never raises: whatever fails (the session closed, the run ended) drops the
record.  :meth:`ClientLogHandler.handle` takes no lock, so a worker thread waiting for
the event loop never holds one the loop's thread may want.
"""

from __future__ import annotations

import collections
import contextvars
import logging
from typing import Final

import trio

from .. import types as t
from ._context import Context, current_context
from ._logging import LEVELS
from ._session_state import state_of

__all__ = ["ALERT", "EMERGENCY", "MAX_QUEUED", "NOTICE", "ClientLogHandler", "mcp_level"]

log = logging.getLogger("mcp_ref.server")

NOTICE: Final = 25
"""A Python level between INFO and WARNING that maps to MCP's ``notice``
(``logging.addLevelName(NOTICE, "NOTICE")`` to name it)."""
ALERT: Final = 60
"""A Python level above CRITICAL that maps to MCP's ``alert``."""
EMERGENCY: Final = 70
"""A Python level above ALERT that maps to MCP's ``emergency``."""

MAX_QUEUED: Final = 100
"""Records one request may have waiting in the event loop's thread; more are dropped."""

_RANK: Final = {level: i for i, level in enumerate(LEVELS)}

_forwarding: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "mcp_ref.server.forwarding", default=False
)
"""True while a record is being sent: what is logged meanwhile is not forwarded."""


def mcp_level(levelno: int) -> t.LoggingLevel:
    """The MCP level of a Python ``logging`` level number.

    ``>= EMERGENCY`` (70) emergency, ``>= ALERT`` (60) alert, ``>= CRITICAL`` critical,
    ``>= ERROR`` error, ``>= WARNING`` warning, ``>= NOTICE`` (25) notice, ``>= INFO``
    info, anything lower debug.

    Source: 2025-06-18/server/utilities/logging#log-levels (the RFC 5424 severities).
    """
    for threshold, level in (
        (EMERGENCY, "emergency"),
        (ALERT, "alert"),
        (logging.CRITICAL, "critical"),
        (logging.ERROR, "error"),
        (logging.WARNING, "warning"),
        (NOTICE, "notice"),
        (logging.INFO, "info"),
    ):
        if levelno >= threshold:
            return level  # type: ignore[return-value]
    return "debug"


class ClientLogHandler(logging.Handler):
    """A :class:`logging.Handler` that forwards the records a request's handler
    function emits to that request's client as ``notifications/message``.

    Usage::

        logging.getLogger("my_tools").addHandler(ClientLogHandler())
        logging.getLogger("my_tools").setLevel(logging.DEBUG)  # let the client choose

        @server.tool()
        def fetch(url: str) -> str:
            logging.getLogger("my_tools").info("fetching %s", url)  # -> the client
            ...

    The client's level (``logging/setLevel``) is honoured: a record below it is
    dropped.  Remember the logger's own level still applies first (Python's default
    lets only WARNING and above through).  See the module docstring for what is
    forwarded, when, and in which order.

    Args:
        level: the handler's own minimum Python level (default NOTSET: all).

    Source: 2025-06-18/server/utilities/logging#log-message-notifications;
    2025-06-18/server/utilities/logging#setting-log-level.
    """

    def handle(self, record: logging.LogRecord) -> bool:
        """Filter and emit ``record`` without taking the handler's lock (``emit`` may
        wait for the event loop, which may be logging too).  Returns whether it passed
        the filters."""
        passed = self.filter(record)
        if isinstance(passed, logging.LogRecord):  # Python 3.12: a filter may replace it
            record = passed
        if passed:
            self.emit(record)
        return bool(passed)

    def emit(self, record: logging.LogRecord) -> None:
        """Forward ``record`` to the current request's client, or drop it; never raises."""
        try:
            self._forward(record)
        except Exception:  # a record is never worth failing the caller for
            pass

    def _forward(self, record: logging.LogRecord) -> None:
        name = record.name
        if name == "mcp_ref" or name.startswith("mcp_ref.") or _forwarding.get():
            return  # our own records, or one logged while sending one: no loop
        context = current_context.get()
        if context is None or context.session.closed:
            return
        level = mcp_level(record.levelno)
        if not _wanted(context, level):
            return
        item = (level, self.format(record), name)
        if trio.lowlevel.in_trio_run():
            _enqueue(context, item)
            return
        token = _forwarding.set(True)  # copied into the task that sends it
        try:
            trio.from_thread.run(_send, context, item)
        except (Exception, trio.Cancelled):
            pass  # the run ended, the request was cancelled: the record is dropped
        finally:
            _forwarding.reset(token)


def _wanted(context: Context, level: t.LoggingLevel) -> bool:
    """Whether the session would take a message at ``level`` (read without sending)."""
    server = context.server
    if not getattr(server, "logging", True):
        return False
    # Spec: 2025-06-18/server/utilities/logging#setting-log-level.1 (the client's minimum)
    # "To configure the minimum log level, clients MAY send a `logging/setLevel` request:"
    if context.modern is not None:  # 2026-07-28: the request's own level, or none at all
        wanted = context.modern.log_level
        return wanted is not None and _RANK[level] >= _RANK[wanted]
    threshold = state_of(context.session).log_level or server.log_policy.default_level
    return _RANK[level] >= _RANK[threshold]


async def _send(context: Context, item: tuple[t.LoggingLevel, str, str]) -> bool:
    """Send one record through ``context.log``; False when it could not go."""
    level, data, logger = item
    try:
        return await context.log(level, data, logger=logger)
    except Exception as exc:  # SessionClosed, a protocol state that refuses it
        log.debug("a forwarded log record was dropped: %r", exc)
        return False


class _Queue:
    """The records of one request emitted in the event loop's thread, and the task
    sending them."""

    __slots__ = ("done", "dropped", "records", "scope", "sending")

    def __init__(self) -> None:
        self.records: collections.deque[tuple[t.LoggingLevel, str, str]] = collections.deque()
        self.sending = False
        self.dropped = 0  # records refused while full, told after the queued ones
        self.done = trio.Event()
        self.scope = trio.CancelScope()


def _enqueue(context: Context, item: tuple[t.LoggingLevel, str, str]) -> None:
    queue: _Queue | None = context._log_queue
    if queue is None:
        queue = context._log_queue = _Queue()
    if len(queue.records) >= MAX_QUEUED:
        # Spec: 2025-06-18/server/utilities/logging#implementation-considerations.1 (rate limit)
        # "Servers SHOULD:"
        queue.dropped += 1
        return
    queue.records.append(item)
    if not queue.sending:
        queue.done, queue.scope = trio.Event(), trio.CancelScope()
        trio.lowlevel.spawn_system_task(
            _drain, context, queue, name="mcp_ref.server forwarded log records"
        )
        queue.sending = True  # only once it will run: flush_forwarded waits for it


async def _drain(context: Context, queue: _Queue) -> None:
    """Send the queued records in order (a system task: one per request at a time)."""
    _forwarding.set(True)  # this task's own context
    try:
        with queue.scope:
            while queue.records:
                await _send(context, queue.records.popleft())
                if context.session.closed:
                    queue.records.clear()
    finally:
        # The session's count: the next message sent says how many were dropped.
        state_of(context.session).log_dropped += queue.dropped
        queue.dropped, queue.sending = 0, False
        queue.done.set()


async def flush_forwarded() -> None:
    """Wait until the current request's queued records are sent (the server calls it
    when a handler returns, before it answers); no checkpoint when none are queued.
    Cancelled, it cancels their sending and drops them."""
    context = current_context.get()
    queue: _Queue | None = context._log_queue if context is not None else None
    if queue is None or not queue.sending:
        return
    try:
        await queue.done.wait()
    except BaseException:
        queue.records.clear()
        queue.scope.cancel()
        raise

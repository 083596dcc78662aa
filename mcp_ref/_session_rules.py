"""What a session decides about requests, sans-IO: the answers it makes for the peer's
requests, the cancellation it sends for its own, and when a keepalive pings.

Theory of operation
-------------------
A session driver (:mod:`mcp_ref.trio`) moves bytes, runs handlers and waits; the
decisions that follow from the spec and not from the event loop are here, so that a
reader finds them in one place and a test needs no loop:

* **The answer to a handler's failure** (:func:`error_reply`): an
  :class:`~mcp_ref.McpError` is sent as it is, an invalid cursor as -32602, anything else
  as -32603 naming only the method (the exception is logged, never sent); and an answer
  the core refuses (a result of the wrong type) becomes -32603 too (:func:`answer_bytes`).
* **The answers made without a handler** (:func:`reply_at_once`): ``ping``'s empty
  result, and -32603 "busy" past the limit (:func:`busy_reply`).
* **Giving up on our own request** (:func:`cancel_bytes`): the
  ``notifications/cancelled`` naming it, unless the core refuses it.
* **Request ids as keys** (:func:`key_of`): ``"7"`` and ``7`` are different ids; the
  peer's requests being handled, within the limit, and those a graceful stop gave up on
  (:class:`Handling`); the callers of ours still waiting, and what each answer, timeout
  and progress does to them (:class:`Callers`).
* **The progress token** a request carries (:func:`progress_token_of`).
* **The options a session refuses** (:func:`check_session_options`, :func:`checked_grace`).
* **Keepalive** (:class:`Keepalive`): how often to ping a silent peer, how long to wait
  for the answer, how many misses end the session; :meth:`Keepalive.next_ping_at` is
  when the next ping is due, time being an argument.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any, Final, Generic, Protocol, TypeVar

import attrs

from . import types as t
from ._client import Outcome, SessionClosed
from ._connection import Connection
from ._errors import INTERNAL_ERROR, LocalProtocolError, McpError
from ._pagination import InvalidCursor
from ._state import SERVER, Role
from .events import ErrorResponse, Notification, Progress, Request, RequestId, Response

__all__ = [
    "ABANDON_WAIT",
    "CLOSE_GRACE",
    "DEFAULT_GRACE_SECONDS",
    "MAX_QUEUED_PROGRESS",
    "Callers",
    "Handling",
    "Keepalive",
    "Waiting",
    "answer_bytes",
    "busy_reply",
    "cancel_bytes",
    "check_session_options",
    "checked_grace",
    "end_reason",
    "error_reply",
    "key_of",
    "progress_token_of",
    "reply_at_once",
]

log = logging.getLogger("mcp_ref")

H = TypeVar("H")

DEFAULT_GRACE_SECONDS: Final = 5.0
"""Seconds the requests in progress get to finish when a server stops gracefully (a
signal, or the end of its input under ``serve_stdio``), before each one still running
is cancelled and answered with an error (:meth:`Handling.give_up`)."""

MAX_QUEUED_PROGRESS: Final = 64
"""Progress events kept for a caller whose ``on_progress`` lags; older ones are dropped."""

ABANDON_WAIT: Final = 1.0
"""Seconds a graceful stop waits for the handlers it cancelled to end (and answer)."""

CLOSE_GRACE: Final = 5.0
"""Seconds a write under way has to finish once the session closed; then closing the
channel has as long again."""


def key_of(request_id: RequestId) -> tuple[type, RequestId]:
    """The key of a request id in a table: as in the core, the string ``"7"`` and the
    number ``7`` are different ids."""
    return (type(request_id), request_id)


class Handling(Generic[H]):
    """The peer's requests being handled now: a handle for each (what cancels its
    handler: a trio cancel scope, say), by request id, and the reason a graceful stop
    gave for each it gave up on (its error answer's message).

    Args:
        limit: the most handled at once (``max_concurrent_requests``, >= 1).
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.closed = False
        """The session ended (:meth:`close`): no handler is answered any more."""
        self._handles: dict[tuple[type, RequestId], H] = {}
        self._abandoned: dict[tuple[type, RequestId], str] = {}

    def __len__(self) -> int:
        return len(self._handles)

    @property
    def full(self) -> bool:
        """True when one more request would exceed the limit."""
        return len(self._handles) >= self.limit

    def add(self, request_id: RequestId, handle: H) -> None:
        """Register a request about to be handled, ``handle`` cancelling its handler."""
        self._handles[key_of(request_id)] = handle

    def remove(self, request_id: RequestId) -> None:
        """Its handler ended (and was answered, or not): forget it."""
        key = key_of(request_id)
        self._handles.pop(key, None)
        self._abandoned.pop(key, None)

    def handle_of(self, request_id: RequestId) -> H | None:
        """The handle of a request being handled, or None."""
        return self._handles.get(key_of(request_id))

    def stopped_by_us(self, request_id: RequestId) -> str | None:
        """Why a graceful stop cancelled this request (its error answer's message), or
        None (cancelled by the peer or the session's end: no answer)."""
        return self._abandoned.get(key_of(request_id))

    def give_up(self, reason: str) -> list[H]:
        """A graceful stop's grace is over: each request still handled is to be answered
        with -32603 ``reason`` (:meth:`stopped_by_us`).  Returns their handles, to cancel.

        Source: 2025-06-18/basic#responses.4 (``notifications/cancelled`` only goes the
        request's own direction: the peer still waits for an answer).
        """
        for key in self._handles:
            self._abandoned.setdefault(key, reason)
        return list(self._handles.values())

    def close(self) -> list[H]:
        """The session ends: returns every handle, to cancel; none is answered."""
        self.closed = True
        return list(self._handles.values())


def check_session_options(framing: str, max_requests: int, max_notifications: int) -> None:
    """Refuse what a session cannot run with: raises ValueError for a channel
    ``framing`` other than ``"lines"`` and ``"messages"``, or a limit (the most requests
    handled at once, notifications queued) below 1."""
    if framing not in ("lines", "messages"):
        raise ValueError(f"unknown channel framing {framing!r}")
    if max_requests < 1 or max_notifications < 1:
        raise ValueError("max_concurrent_requests and max_queued_notifications must be >= 1")


def checked_grace(grace_seconds: float) -> float:
    """``grace_seconds``, the seconds a graceful stop gives the requests in progress;
    raises ValueError when it is negative."""
    if grace_seconds < 0:
        raise ValueError("grace_seconds must not be negative")
    return grace_seconds


class Waiting(Protocol):
    """What :class:`Callers` reads and calls of a driver's waiter (one caller of
    ``send_request``): ``wake`` is anything with a ``set()`` (a ``trio.Event``)."""

    answer: Any
    """What ended the wait (an :data:`~mcp_ref._client.Outcome`, or SessionClosed),
    None while it goes on."""
    on_progress: Any
    """The caller's progress callback, or None (then progress is not kept)."""
    progress: deque[Progress]
    """Progress waiting for the callback (at most :data:`MAX_QUEUED_PROGRESS`)."""
    wake: Any

    def finish(self, answer: Any) -> None:
        """End the wait with ``answer`` (only the first call counts)."""


W = TypeVar("W", bound=Waiting)


class Callers(Generic[W]):
    """The callers of our requests still waiting for an answer, by request id (each a
    driver's :class:`Waiting`), and what each event about those requests does to them."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[type, RequestId], W] = {}

    def expect(self, request_id: RequestId, waiter: W) -> W:
        """Register the caller of ``request_id`` (before the request is sent)."""
        self._by_key[key_of(request_id)] = waiter
        return waiter

    def forget(self, request_id: RequestId) -> None:
        """Drop the caller of ``request_id`` (it stopped waiting)."""
        del self._by_key[key_of(request_id)]

    def deliver(self, event: Outcome | Progress) -> None:
        """Hand an event about one of our requests to its caller, if it still waits: an
        answer or our timeout ends the wait; progress is queued (the oldest dropped when
        the caller lags) and wakes it, if it takes progress; an error about no request
        (the peer could not read one we sent) is only logged."""
        if isinstance(event, Progress):
            waiter = self._by_key.get(key_of(event.request_id))
            if waiter is not None and waiter.answer is None and waiter.on_progress is not None:
                waiter.progress.append(event)
                waiter.wake.set()
        elif event.id is None:
            assert isinstance(event, ErrorResponse)
            log.warning("the peer could not read a message we sent: %s", event.message)
        elif (waiter := self._by_key.get(key_of(event.id))) is not None:
            # Spec: 2025-06-18/basic/lifecycle#timeouts.2
            # "stop waiting for a response"
            # (RequestTimedOut becomes NoAnswerError: never an error a peer could send)
            waiter.finish(event)

    def fail_all(self, reason: str) -> None:
        """End every wait with :class:`~mcp_ref.SessionClosed` (the peer can no longer
        answer)."""
        for waiter in self._by_key.values():
            waiter.finish(SessionClosed(reason))


def end_reason(what: str, cause: str | None) -> str:
    """Why a session ended: ``what`` ended it, then the channel's ``cause`` (its
    ``eof_reason``: a child's exit, say) when that adds something."""
    return f"{what}; {cause}" if cause and cause not in what else what


def progress_token_of(params: Any) -> str | int | None:
    """The ``_meta.progressToken`` a request's typed ``params`` carry, or None.

    Source: 2025-06-18/basic/utilities/progress#progress-flow.1.
    """
    meta = getattr(params, "meta", None)
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    return token if isinstance(token, str | int) else None


def error_reply(exc: Exception, request_id: RequestId, method: str) -> ErrorResponse:
    """The error response to send when the handler of ``method`` raised ``exc``.

    Returns:
        The code, message and data of an :class:`~mcp_ref.McpError` (also of one alone,
        or several, in an exception group: the first); -32602 for an invalid cursor;
        else -32603 naming the method and the exception's type only (the exception is
        logged with its traceback, never sent: it may hold secrets).

    Source: 2025-06-18/basic#responses.4, 2025-06-18/server/utilities/pagination#error-handling.
    """
    mcp = _only_mcp_errors(exc)
    if mcp is not None:
        return ErrorResponse(id=request_id, code=mcp.code, message=mcp.message, data=mcp.data)
    if isinstance(exc, InvalidCursor):
        # Spec: 2025-06-18/server/utilities/pagination#error-handling.1
        # "Invalid cursors SHOULD result in an error with code -32602 (Invalid params)."
        return ErrorResponse(id=request_id, code=exc.code, message=exc.message)
    log.error("the handler of %s (id %r) failed", method, request_id, exc_info=exc)
    message = f"internal error while handling {method} ({type(exc).__name__})"
    return ErrorResponse(id=request_id, code=INTERNAL_ERROR, message=message)


def _only_mcp_errors(exc: BaseException) -> McpError | None:
    """``exc`` if an McpError; the first McpError of a group made only of them; else None."""
    if isinstance(exc, McpError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        found = [_only_mcp_errors(e) for e in exc.exceptions]
        if found and all(f is not None for f in found):
            return found[0]
    return None


def answer_bytes(conn: Connection, reply: Response | ErrorResponse, method: str) -> bytes:
    """The bytes of the answer to the peer's request ``method``: ``reply`` sent through
    ``conn``; when the core refuses it (a result of the wrong type, say: the handler's
    fault), a -32603 naming the method instead, and the refusal is logged.

    Raises:
        LocalProtocolError: the core refuses the -32603 too (the request is no longer
            open: answered, or the session closed).
    """
    try:
        return conn.send(reply)
    except (LocalProtocolError, ValueError, TypeError) as exc:
        log.error("cannot send the answer to %s (id %r): %s", method, reply.id, exc)
        message = f"internal error: the answer to {method} could not be sent"
        return conn.send(ErrorResponse(id=reply.id, code=INTERNAL_ERROR, message=message))


def busy_reply(request_id: RequestId, our_role: Role, running: int) -> ErrorResponse:
    """The answer to a request that would exceed the most handled at once (``running``
    are): -32603, sent at once, no handler run."""
    who = "server" if our_role is SERVER else "client"
    message = f"{who} busy: {running} requests are being handled"
    return ErrorResponse(id=request_id, code=INTERNAL_ERROR, message=message)


def reply_at_once(
    request: Request, our_role: Role, running: int, accepting: bool
) -> Response | ErrorResponse | None:
    """The answer to the peer's ``request`` made without running a handler, or None
    (run one): ``ping``'s empty result; -32603 "busy" when not ``accepting`` (the
    limit reached, ``running`` handled now, or the session ending: :func:`busy_reply`).
    """
    if request.method == "ping":
        # Spec: 2025-06-18/basic/utilities/ping#behavior-requirements.1
        # "The receiver MUST respond promptly with an empty response:"
        return Response(id=request.id, result=t.Result())
    return None if accepting else busy_reply(request.id, our_role, running)


def cancel_bytes(conn: Connection, request_id: RequestId, reason: str) -> bytes:
    """The bytes of ``notifications/cancelled`` for our request ``request_id``, whose
    caller stopped waiting; ``b""`` when the core refuses it (``initialize``, or the
    request is no longer open), which is logged.

    Source: 2025-06-18/basic/utilities/cancellation#cancellation-flow.
    """
    params = t.CancelledNotificationParams(request_id=request_id, reason=reason)
    try:
        # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.1
        # "Cancellation notifications MUST only reference requests that:"
        # Spec: 2026-07-28/basic/patterns/cancellation#transport-specific-cancellation.2
        # "The client MUST send a `notifications/cancelled` notification referencing the request
        # ID."
        # Spec: 2026-07-28/basic/transports/stdio#cancellation.1
        # "To cancel an in-flight request, the client MUST send a `notifications/cancelled`
        # notification referencing the request's ID."
        return conn.send(Notification(method="notifications/cancelled", params=params))
    except LocalProtocolError as exc:
        # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.2
        # "The `initialize` request MUST NOT be cancelled by clients"
        log.debug("could not cancel request %r: %s", request_id, exc)
        return b""


def _positive(instance: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value > 0:
        raise ValueError(f"Keepalive.{attribute.name} must be > 0, not {value!r}")


def _at_least_one(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value < 1:
        raise ValueError(f"Keepalive.{attribute.name} must be >= 1, not {value!r}")


@attrs.frozen(kw_only=True)
class Keepalive:
    """When a session pings its peer, and when it gives up on it.

    Attributes:
        interval: seconds of silence from the peer before a ping (> 0).
        timeout: seconds to wait for the answer to one ping (> 0; default 10).
        max_failures: unanswered pings in a row that end the session (>= 1; default 2).

    Raises:
        ValueError: a value out of range.

    Source: 2025-06-18/basic/utilities/ping#implementation-considerations.2 (the
    frequency is configurable) and #implementation-considerations.3 (so are timeouts).
    """

    # Spec: 2025-06-18/basic/utilities/ping#implementation-considerations.2
    # "The frequency of pings SHOULD be configurable"
    interval: float = attrs.field(validator=_positive)
    # Spec: 2025-06-18/basic/utilities/ping#implementation-considerations.3
    # "Timeouts SHOULD be appropriate for the network environment"
    timeout: float = attrs.field(default=10.0, validator=_positive)
    max_failures: int = attrs.field(default=2, validator=_at_least_one)

    def next_ping_at(self, heard_at: float, last_ping_at: float) -> float:
        """When to ping, in the session's clock's seconds: ``interval`` after the later
        of the last input from the peer and the last ping (one ping per interval at
        most, none while the peer talks)."""
        # Spec: 2025-06-18/basic/utilities/ping#implementation-considerations.4
        # "Excessive pinging SHOULD be avoided to reduce network overhead"
        return max(heard_at, last_ping_at) + self.interval

    def missed(self, failures: int) -> tuple[str, str | None]:
        """After ``failures`` unanswered pings in a row: ``(what to log, why the session
        ends now, or None)``; it ends at ``max_failures``.

        Source: 2025-06-18/basic/utilities/ping#error-handling.
        """
        # Spec: 2025-06-18/basic/utilities/ping#error-handling.3
        # "Implementations SHOULD log ping failures for diagnostics"
        note = f"no answer to ping within {self.timeout:.3g} s ({failures} of {self.max_failures})"
        if failures < self.max_failures:
            return note, None
        # Spec: 2025-06-18/basic/utilities/ping#error-handling.1
        # "Timeouts SHOULD be treated as connection failures"
        # Spec: 2025-06-18/basic/utilities/ping#error-handling.2
        # "Multiple failed pings MAY trigger connection reset"
        lost = f"the peer did not answer {failures} ping(s) (timeout {self.timeout:.3g} s each)"
        return note, lost + ": connection considered lost"

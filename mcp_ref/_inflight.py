"""Requests in flight, both ways: the tables behind matching, cancellation, progress
and timeouts.

Theory of operation
-------------------
An MCP connection carries requests in both directions at once.  :class:`InFlight` keeps:

* ``outgoing``: requests we sent and that await a response, by id, with their method,
  progress token and timeout bookkeeping;
* ``incoming``: requests we received and have not answered, by id;
* the progress tokens of both, so a ``notifications/progress`` finds its request;
* two bounded "recently finished" memories, so a late response to a request we
  cancelled (or that timed out) is dropped quietly, a response we would send to a
  request the peer cancelled is dropped, and a request id is not reused soon after;
* a heap of deadlines, so ``next_deadline()`` is O(1) and expiry O(log n).

Every table has a bound; the connection refuses new requests past it.  Beside them,
:class:`Refusals` counts the replies owed to messages the connection refused.

Timeouts (2025-06-18/basic/lifecycle#timeouts): a :class:`RequestTimeout` gives the
seconds a request may wait, whether a progress notification restarts that clock, and
a hard maximum that progress never extends.  The core has no clock: a progress
notification only marks the request, and the restart happens when the deadline is
checked (``handle_timeout(now)``), from ``now``.  So a request that shows progress
never expires earlier than the policy says, and at most ``seconds`` later.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

import attrs

from ._errors import INTERNAL_ERROR, INVALID_REQUEST, LocalProtocolError
from ._jsonrpc import peek, refuse, valid_id
from .events import ErrorResponse, Progress, ProgressDropped

__all__ = ["InFlight", "Incoming", "Outgoing", "Refusals", "RequestTimeout"]


@attrs.frozen(kw_only=True)
class RequestTimeout:
    """How long a request we send may wait for its response (see the module header)."""

    seconds: float
    """Seconds to wait for a response (or, with ``reset_on_progress``, between progress
    notifications)."""
    reset_on_progress: bool = False
    """Whether a progress notification for the request restarts the clock."""
    maximum: float | None = None
    """Hard limit in seconds since sending, whatever the progress; None means
    ``seconds`` when ``reset_on_progress`` is False, else 10 times ``seconds``."""

    def __attrs_post_init__(self) -> None:
        if not self.seconds > 0:
            raise ValueError("RequestTimeout.seconds must be positive")
        if self.maximum is not None and self.maximum < self.seconds:
            raise ValueError("RequestTimeout.maximum must be at least seconds")

    @property
    def hard_limit(self) -> float:
        """The effective hard maximum, in seconds."""
        if self.maximum is not None:
            return self.maximum
        return self.seconds * 10 if self.reset_on_progress else self.seconds


@attrs.define(slots=True)
class Outgoing:
    """A request we sent, awaiting its response."""

    id: Any
    method: str
    structure_result: Callable[[Any], Any]
    """Turns the JSON result into the method's result class (the send plan's)."""
    progress_token: Any = None
    last_progress: float | None = None
    timeout: RequestTimeout | None = None
    sent_at: float = 0.0
    deadline: float | None = None
    progressed: bool = False

    def start_clock(self, timeout: RequestTimeout | None, now: float | None) -> None:
        """Give the request ``timeout`` (None: none), counted from ``now`` (seconds);
        TypeError when ``timeout`` is not a RequestTimeout, LocalProtocolError when
        ``now`` is None.  Source: 2025-06-18/basic/lifecycle#timeouts.3."""
        if timeout is None:
            return
        if not isinstance(timeout, RequestTimeout):
            raise TypeError("timeout must be a RequestTimeout or None")
        if now is None:
            raise LocalProtocolError("a request with a timeout needs now=")
        self.timeout = timeout
        self.sent_at = now
        self.deadline = now + timeout.seconds


@attrs.define(slots=True)
class Incoming:
    """A request we received and have not answered."""

    id: Any
    method: str
    progress_token: Any = None
    last_progress: float | None = None
    context: Any = None  # a modern request's RequestContext


class _Recent(OrderedDict[Any, str]):
    """A bounded memory of finished ids: id -> why it finished, oldest first (an
    OrderedDict: popping the oldest is O(1), a dict's ``next(iter())`` is not)."""

    def __init__(self, maximum: int) -> None:
        super().__init__()
        self._max = maximum

    def add(self, key: Any, why: str) -> None:
        self[key] = why
        if len(self) > self._max:
            self.popitem(last=False)


# Ids and progress tokens are dict keys as they are: every one that reaches these
# tables was checked to be a str or an int that is not a bool (_jsonrpc.valid_id), so
# "7" and 7 stay apart and True never stands in for 1.


class InFlight:
    """The in-flight tables of one connection: at most ``max_outgoing`` requests of
    ours in flight, ``max_incoming`` unanswered ones of the peer's, and ``remember``
    finished ids remembered each way."""

    def __init__(self, *, max_outgoing: int, max_incoming: int, remember: int) -> None:
        self.max_outgoing = max_outgoing
        self.max_incoming = max_incoming
        self.outgoing: dict[Any, Outgoing] = {}
        self.incoming: dict[Any, Incoming] = {}
        self.out_tokens: dict[Any, Outgoing] = {}
        self.in_tokens: dict[Any, Incoming] = {}
        self.finished_out = _Recent(remember)
        self.finished_in = _Recent(remember)
        self._heap: list[tuple[float, int, Any]] = []
        self._seq = 0
        self._last_id = 0

    def fresh_id(self) -> int:
        """A fresh integer request id, never used by us in this session (Source:
        2025-06-18/basic#requests.3)."""
        while True:
            self._last_id += 1
            if self._last_id not in self.outgoing and self._last_id not in self.finished_out:
                return self._last_id

    # -- outgoing -----------------------------------------------------------------

    def add_outgoing(self, req: Outgoing) -> None:
        """Register a request we are sending; LocalProtocolError when its id or token
        is in use, or the table is full."""
        k = req.id
        # Spec: 2025-06-18/basic#requests.3
        # "The request ID MUST NOT have been previously used by the requestor within the same
        # session."
        if k in self.outgoing or k in self.finished_out:
            raise LocalProtocolError(f"request id {req.id!r} was already used in this session")
        if len(self.outgoing) >= self.max_outgoing:
            raise LocalProtocolError(f"too many requests in flight (at most {self.max_outgoing})")
        if (tk := req.progress_token) is not None:
            # Spec: 2025-06-18/basic/utilities/progress#progress-flow.2
            # "Progress tokens can be chosen by the sender using any means, but MUST be unique
            # across all active requests."
            if tk in self.out_tokens:
                raise LocalProtocolError(
                    f"progress token {tk!r} is in use by another active request"
                )
            # Spec: 2025-06-18/basic/utilities/progress#implementation-notes.1
            # "Senders and receivers SHOULD track active progress tokens"
            self.out_tokens[tk] = req
        self.outgoing[k] = req
        if req.deadline is not None:
            self._push(req.deadline, k)

    def pop_outgoing(self, request_id: Any, why: str) -> Outgoing | None:
        """Forget a request we sent (answered, cancelled or timed out); None if unknown."""
        return _pop(self.outgoing, self.out_tokens, self.finished_out, request_id, why)

    def cancel_outgoing(self, rid: Any) -> bool:
        """We cancel a request we sent (id ``rid``): forget it.  False when it already
        finished (send nothing); LocalProtocolError when it names no request we sent."""
        if not valid_id(rid):
            raise LocalProtocolError(
                f"notifications/cancelled needs a str or int requestId: {rid!r}"
            )
        out = self.outgoing.get(rid)
        if out is None:
            if rid in self.finished_out:
                return False
            # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.1
            # "Cancellation notifications MUST only reference requests that:"
            raise LocalProtocolError(f"cannot cancel {rid!r}: no such request was sent")
        # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.2
        # "The `initialize` request MUST NOT be cancelled by clients"
        if out.method == "initialize":
            raise LocalProtocolError("the initialize request must not be cancelled")
        self.pop_outgoing(rid, "cancelled")
        return True

    def progress_received(self, params: Any) -> Progress | ProgressDropped:
        """The event of a ``notifications/progress`` from the peer (typed ``params``):
        Progress for a request we sent, else ProgressDropped saying why."""
        token = params.progress_token
        out = self.out_tokens.get(token)
        # Spec: 2025-06-18/basic/utilities/progress#behavior-requirements.1
        # "Progress notifications MUST only reference tokens that:"
        if out is None:
            return ProgressDropped(progress_token=token, reason="no active request has this token")
        # Spec: 2025-06-18/basic/utilities/progress#progress-flow.4
        # "The `progress` value MUST increase with each notification, even if the total is unknown."
        if out.last_progress is not None and not params.progress > out.last_progress:
            return ProgressDropped(
                progress_token=token,
                reason=f"progress {params.progress} does not increase past {out.last_progress}",
            )
        out.last_progress = params.progress
        out.progressed = True
        return Progress(
            request_id=out.id,
            progress_token=token,
            progress=params.progress,
            total=params.total,
            message=params.message,
        )

    # -- incoming -----------------------------------------------------------------

    def too_long(self, prefix: bytes, limit: int) -> ErrorResponse | None:
        """A message over ``limit`` bytes, starting with ``prefix``, was skipped.  A
        request is refused (RemoteProtocolError, -32600 to the id its first bytes show);
        a response to one of ours fails that request now: its ErrorResponse (-32603).
        A response we are not waiting for: None."""
        message = f"message longer than {limit} bytes"
        rid, is_request = peek(prefix)
        if rid is None or is_request:
            raise refuse(message, INVALID_REQUEST, rid)  # rid None: id null
        out = self.outgoing.get(rid)
        if out is None or out.method == "initialize":
            return None  # a response we are not waiting for: nothing to do
        self.pop_outgoing(rid, "answered")
        why = f"the response was dropped: {message}"
        return ErrorResponse(id=rid, code=INTERNAL_ERROR, message=why, method=out.method)

    def add_incoming(self, req: Incoming) -> None:
        """Register a request received from the peer (the caller checked the bounds)."""
        self.incoming[req.id] = req
        if req.progress_token is not None:
            # Spec: 2025-06-18/basic/utilities/progress#implementation-notes.1
            # "Senders and receivers SHOULD track active progress tokens"
            self.in_tokens[req.progress_token] = req

    def progress_sent(self, params: Any) -> None:
        """We send a ``notifications/progress`` (typed ``params``) for a peer's request;
        LocalProtocolError when the spec forbids it."""
        token = params.progress_token
        if not valid_id(token):
            raise LocalProtocolError(f"a progress token is a str or an int, not {token!r}")
        req = self.in_tokens.get(token)
        # Spec: 2025-06-18/basic/utilities/progress#behavior-requirements.1
        # "Progress notifications MUST only reference tokens that:"
        # Spec: 2025-06-18/basic/utilities/progress#implementation-notes.3
        # "Progress notifications MUST stop after completion"
        if req is None:
            raise LocalProtocolError(f"progress token {token!r} belongs to no active request")
        # Spec: 2025-06-18/basic/utilities/progress#progress-flow.4
        # "The `progress` value MUST increase with each notification, even if the total is unknown."
        if req.last_progress is not None and not params.progress > req.last_progress:
            raise LocalProtocolError(
                f"progress must increase: {params.progress} after {req.last_progress}"
            )
        req.last_progress = params.progress

    def pop_incoming(self, request_id: Any, why: str) -> Incoming | None:
        """Forget a request from the peer (answered or cancelled); None if unknown."""
        return _pop(self.incoming, self.in_tokens, self.finished_in, request_id, why)

    # -- deadlines ----------------------------------------------------------------

    def _push(self, deadline: float, k: Any) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (deadline, self._seq, k))
        # Entries of answered requests stay until they surface; keep them bounded.
        if len(self._heap) > 2 * len(self.outgoing) + 64:
            self._heap = [
                (d, s, key)
                for d, s, key in self._heap
                if (o := self.outgoing.get(key)) is not None and o.deadline == d
            ]
            heapq.heapify(self._heap)

    def next_deadline(self) -> float | None:
        """The earliest deadline of a request in flight, or None."""
        heap = self._heap
        while heap:
            d, _, k = heap[0]
            o = self.outgoing.get(k)
            if o is not None and o.deadline == d:
                return d
            heapq.heappop(heap)
        return None

    def expire(self, now: float) -> list[Outgoing]:
        """Pop and return the requests whose deadline has passed at ``now`` (those that
        showed progress under a resetting policy get a new deadline instead)."""
        expired: list[Outgoing] = []
        heap = self._heap
        while heap and heap[0][0] <= now:
            d, _, k = heapq.heappop(heap)
            o = self.outgoing.get(k)
            if o is None or o.deadline != d or o.timeout is None:
                continue
            # Spec: 2025-06-18/basic/lifecycle#timeouts.5
            # "However, implementations SHOULD always enforce a maximum timeout, regardless of
            # progress notifications, to limit the impact of a misbehaving client or server."
            hard = o.sent_at + o.timeout.hard_limit
            if o.progressed and o.timeout.reset_on_progress and now < hard:
                o.progressed = False
                o.deadline = min(now + o.timeout.seconds, hard)
                self._push(o.deadline, k)
                continue
            self.pop_outgoing(o.id, "timed out")
            expired.append(o)
        return expired


class Refusals:
    """The replies owed to refused messages, by id; past ``maximum`` owed, the oldest id
    is forgotten.  Such a reply may carry the id of a request in flight (the peer reused
    it), and sending it must answer no request (2025-06-18/basic#requests.3)."""

    def __init__(self, maximum: int) -> None:
        self.maximum = maximum
        self._owed: dict[Any, int] = {}
        self._count = 0

    def __contains__(self, rid: object) -> bool:
        return rid in self._owed

    def owe(self, rid: Any) -> None:
        """A reply to ``rid`` (None: id null) is owed."""
        self._owed[rid] = self._owed.get(rid, 0) + 1
        self._count += 1
        if self._count > self.maximum:
            self._count -= self._owed.pop(next(iter(self._owed)))

    def paid(self, rid: Any) -> None:
        """A reply owed to ``rid`` went out."""
        self._count -= 1
        self._owed[rid] -= 1
        if not self._owed[rid]:
            del self._owed[rid]


_R = TypeVar("_R", Outgoing, Incoming)


def _pop(
    table: dict[Any, _R], tokens: dict[Any, _R], finished: _Recent, k: Any, why: str
) -> _R | None:
    """Take request ``k`` out of ``table`` and its token out of ``tokens``; remember why."""
    req = table.pop(k, None)
    if req is not None:
        finished.add(k, why)
        if req.progress_token is not None:
            tokens.pop(req.progress_token, None)
    return req

"""How a driver runs the Streamable HTTP client's jobs, sans-IO: steps and flows.

Theory of operation
-------------------
Everything the client does over HTTP is a *flow* (the jobs are in
:mod:`mcp_ref._http_client_flows`): a small state machine that says what to do next
with a *step*.  The driver does the step and reports back; its loop is the same in
trio and asyncio::

    step = flow.start()
    while not isinstance(step, Done):
        HttpRequest -> write the request (a connection of its own when step.fresh,
                       else a pooled one), read the head:
                       step = flow.head(status, headers)
                       (the exchange failed: step = flow.broken(why))
        Read        -> feed the body: pass on what flow.receive_data(chunk) gives,
                       stop when flow.stop, give flow.grace seconds more once it is
                       set; at the end feed b"" (only when the body was whole):
                       step = flow.ended(complete)
        Wait        -> sleep step.seconds: step = flow.waited()
        NewSession  -> start a new session (one at a time):
                       step = flow.new_session(ok)
        Authorize   -> sign in (one at a time; :mod:`mcp_ref._http_client_auth`):
                       step = flow.signed_in(error)

A connection whose response was read whole goes back to the pool; any other is
closed.  :class:`Done` ends the flow: ``error`` None (answered, accepted) or the text
the caller is failed with.  :class:`Flow` is what every flow shares: the body being
read -- a JSON answer (bounded by the flow's ``max_bytes``), an error's body (bounded
by :data:`~mcp_ref._http_client.MAX_ERROR_BODY`), or an SSE stream read through a
:class:`~mcp_ref._http_client_streams.StreamCursor` (each event bounded by
``max_bytes``) -- and whether the response awaited came.  No clock, no sockets;
messages are read only by the core's reader.
"""

from __future__ import annotations

import enum
from typing import Any, Final, Generic, TypeVar

import attrs

from ._http import HTTP_SERVER_ERROR, Headers
from ._http_client import MAX_ERROR_BODY, HttpClientCore
from ._http_client_streams import ANSWERED_GRACE, StreamCursor
from ._http_messages import error_of
from ._http_streams import request_key
from .events import RequestId

__all__ = [
    "READ",
    "SESSION_NOT_RESTARTED",
    "Authorize",
    "Body",
    "Done",
    "Flow",
    "HttpRequest",
    "KeepAlivePool",
    "NewSession",
    "Read",
    "Step",
    "Wait",
    "delete_request",
    "refusal_message",
]

SESSION_NOT_RESTARTED: Final = "the session expired and a new one could not be started"


def refusal_message(status: int, body: bytes) -> str:
    """Why an HTTP error refused a message: ``"HTTP <status>: <message>"``, the message
    being the JSON-RPC error's in the body, else the body's first 200 bytes.

    Source: 2025-06-18/basic/transports#sending-messages-to-the-server.7.
    """
    # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.7
    # "The HTTP response body MAY comprise a JSON-RPC error response that has no `id`."
    error = error_of(body)
    text = error[1] if error is not None else body[:200].decode(errors="replace")
    return f"HTTP {status}: {text or '(no body)'}"


# -- steps ----------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class HttpRequest:
    """Write this HTTP request, then read its head (:meth:`Flow.head`)."""

    method: bytes
    """``b"POST"``, ``b"GET"`` or ``b"DELETE"``."""
    target: str
    """The request target."""
    headers: list[tuple[bytes, bytes]]
    """Every header (:meth:`~mcp_ref._http_client.HttpClientCore.headers`)."""
    body: bytes = b""
    """A POST's body: one JSON-RPC message."""
    fresh: bool = False
    """A connection of its own (an SSE stream), not a pooled keep-alive one."""


@attrs.frozen
class Read:
    """Read the body (:meth:`Flow.receive_data`, then :meth:`Flow.ended`)."""


READ: Final = Read()


@attrs.frozen
class Wait:
    """Sleep, then :meth:`Flow.waited`."""

    seconds: float
    """How long, in seconds."""


@attrs.frozen
class NewSession:
    """Start a new session (under the driver's lock), then :meth:`Flow.new_session`."""

    generation: int
    """The session (``HttpClientCore.generation``) the 404 was for."""


@attrs.frozen(kw_only=True)
class Done:
    """The flow ended."""

    error: str | None = None
    """None: answered (or accepted); else why not, for the caller's error."""
    code: int = HTTP_SERVER_ERROR
    """The JSON-RPC code for the caller: the server's, when its error body had one."""
    http_status: int | None = None
    """The HTTP error status that refused the message (None: no refusal)."""
    session_lost: bool = False
    """A 404 to our session id once more, after a new session."""


@attrs.frozen(kw_only=True)
class Authorize:
    """The server wants a sign-in (a 401, or a 403): sign in under the driver's lock
    (unless another task did since ``generation``), then :meth:`Flow.signed_in`.

    Source: 2025-11-25/basic/authorization#step-up-authorization-flow;
    #token-requirements.
    """

    status: int
    """401 or 403."""
    www_authenticate: list[str]
    """Every ``WWW-Authenticate`` value of the refusal (latin-1 text)."""
    generation: int
    """``ClientAuth.generation`` when the refused request was sent."""


MAX_SIGN_INS: Final = 2
"""How many times one message is sent again after signing in (the sign-in flow has
its own retry limit across messages)."""

Step = HttpRequest | Read | Wait | NewSession | Authorize | Done


class Body(enum.Enum):
    """What the body being read is (a flow's ``_body``)."""

    JSON = "json"
    """One JSON-RPC message, read whole (at most the flow's ``max_bytes``)."""
    ERROR = "error"
    """Read whole for its text: an error's, or whatever a notification's answer
    carries (at most :data:`~mcp_ref._http_client.MAX_ERROR_BODY` bytes)."""
    SSE = "sse"
    """An SSE stream, read through a cursor (each event at most ``max_bytes``)."""


# -- what every flow shares ------------------------------------------------------------------------


class Flow:
    """What every flow shares: the body being read and the request awaited.

    A subclass gives :meth:`start`, :meth:`head` and :meth:`ended`, and sets
    :attr:`answer_ends_stream` when the stream it reads is there only to carry the
    response awaited (a request's answer: once it came, the stream may be given up).

    Args:
        core: the client's :class:`~mcp_ref._http_client.HttpClientCore`.
        max_bytes: the bound on a JSON answer and on one SSE event, in bytes
            (default ``core.limits.max_event_bytes``).

    Attributes:
        key: the request whose response the flow awaits (``request_key(None)``: none).
        id: that request's id (None: none), to answer it with an error when the flow
            gives up.
        answered: that response came.
        error: why the body being read cannot be read on (past a bound), or None.
        generation: the session the flow runs in.
        retried: the request was sent again, in a new session (a 404 then means the
            new session is gone too: :attr:`Done.session_lost`).
        status: the status of the last response head.
    """

    answer_ends_stream = False

    def __init__(self, core: HttpClientCore, *, max_bytes: int | None = None) -> None:
        self.core = core
        self.max_bytes = core.limits.max_event_bytes if max_bytes is None else max_bytes
        self.key: Any = request_key(None)
        self.id: RequestId | None = None
        self.answered = False
        self.error: str | None = None
        self.generation = core.generation
        self.retried = False
        self.status = 0
        self.sign_ins = 0
        """Times this flow signed in and sent again."""
        self._challenge: Authorize | None = None
        self._auth_generation = 0
        self._body = Body.ERROR
        self._parts: list[bytes] = []
        self._size = 0
        """The body read whole so far (not an SSE stream's), and its size in bytes."""
        self._cursor: StreamCursor | None = None

    def start(self) -> Step:
        """The first step."""
        raise NotImplementedError

    def head(self, status: int, headers: Headers) -> Step:
        """A response head came (after :class:`HttpRequest`)."""
        raise NotImplementedError

    def ended(self, complete: bool) -> Step:
        """The body ended (``complete``: read whole; else broken off or given up)."""
        raise NotImplementedError

    def broken(self, why: str) -> Step:
        """The request could not be sent, or its head not read (``why``: the error)."""
        return Done(error=f"the HTTP exchange failed: {why}")

    def waited(self) -> Step:
        """The :class:`Wait` is over."""
        return self.start()

    def new_session(self, ok: bool) -> Step:
        """The :class:`NewSession` ended (``ok``: the session goes on): send again."""
        if not ok:
            return Done(error=SESSION_NOT_RESTARTED)
        self.retried = True
        self.generation = self.core.generation
        return self.start()

    def signed_in(self, error: str | None) -> Step:
        """The :class:`Authorize` ended (``error``: why the sign-in failed): send the
        refused message again, now with the token."""
        if error is not None:
            return Done(error=error, http_status=self.status)
        self.sign_ins += 1
        return self.start()

    def _unauthorized(self, headers: Headers) -> Read:
        """A 401/403 the client can sign in for: read its body, then :class:`Authorize`
        (from :meth:`_authorize`, at the body's end)."""
        values = [v.decode("latin-1") for k, v in headers if k.lower() == b"www-authenticate"]
        for k, v in headers:
            if k.lower() == b"dpop-nonce" and self.core.auth is not None:
                self.core.auth.note_dpop_nonce(bytes(v).decode("latin-1"))  # RFC 9449 s. 9
        self._challenge = Authorize(
            status=self.status, www_authenticate=values, generation=self._auth_generation
        )
        return self._read(Body.ERROR)

    def _authorize(self, prefix: str = "") -> Step:
        """The 401/403 body was read: sign in, unless this message was sent again
        after :data:`MAX_SIGN_INS` sign-ins already."""
        assert self._challenge is not None
        step, self._challenge = self._challenge, None
        # Spec: 2026-07-28/basic/authorization/index#step-up-authorization-flow.5
        # "Clients SHOULD implement retry limits and SHOULD track scope upgrade attempts to avoid
        # repeated failures for the same resource and operation combination."
        # Spec: 2025-11-25/basic/authorization#step-up-authorization-flow.4
        # "Clients SHOULD implement retry limits and SHOULD track scope upgrade attempts
        # to avoid repeated failures for the same resource and operation combination."
        if self.sign_ins >= MAX_SIGN_INS:
            return self._refusal(prefix + f"still refused after {MAX_SIGN_INS} sign-ins: ")
        return step

    @property
    def stop(self) -> bool:
        """Read no more of this body (:attr:`error` is set)."""
        return self.error is not None

    @property
    def grace(self) -> float | None:
        """Seconds the server gets to end a request's stream once the response came
        (then the driver stops reading), or None."""
        answered = self.answer_ends_stream and self.answered
        return ANSWERED_GRACE if answered and self._body is Body.SSE else None

    def receive_data(self, chunk: bytes) -> list[bytes]:
        """A piece of the body (``b""``: its end); returns the messages to pass on.

        Past a bound :attr:`error` is set and nothing more is read.
        """
        if self.error is not None:
            return []
        if self._body is Body.SSE:
            assert self._cursor is not None
            got = self._cursor.receive_data(chunk)
            self.error = self._cursor.error
            return self._take(got)
        limit = self.max_bytes if self._body is Body.JSON else MAX_ERROR_BODY
        self._size += len(chunk)
        if chunk:
            self._parts.append(chunk)  # at most one chunk past the limit
        if self._size > limit:
            self.error = f"the answer is too large (over {limit} bytes)"
        elif not chunk and self._body is Body.JSON:
            return self._take([b"".join(self._parts)])
        return []

    def _take(self, messages: list[bytes]) -> list[bytes]:
        """Messages received: note whether the response awaited came."""
        messages = [self.core.modern.inbound(data, self.key) for data in messages]
        for data in messages:
            self.answered = self.core.received(data, self.key) or self.answered
        return messages

    def _read(self, body: Body, cursor: StreamCursor | None = None) -> Read:
        self._body, self._cursor, self.error = body, cursor, None
        self._parts, self._size = [], 0
        if cursor is not None:
            cursor.begin()
        return READ

    def _cursor_for(self, *, expect_endpoint: bool = False) -> StreamCursor:
        return StreamCursor(
            self.max_bytes, self.core.default_retry, expect_endpoint=expect_endpoint
        )

    def _refusal(self, prefix: str = "") -> Done:
        """The error body read whole: the caller's error (the body's JSON-RPC code)."""
        body = b"".join(self._parts)[:MAX_ERROR_BODY]
        error = error_of(body)
        if error is not None and self.key != request_key(None):  # (a request's)
            self.core.modern.refused(self.key, body)
        return Done(
            error=prefix + refusal_message(self.status, body),
            code=error[0] if error is not None else HTTP_SERVER_ERROR,
            http_status=self.status,
            session_lost=self.status == 404 and self.retried,
        )

    def _post(self, body: bytes) -> HttpRequest:
        core = self.core
        self._auth_generation = core.auth.generation if core.auth is not None else 0
        return HttpRequest(
            method=b"POST",
            target=core.post_target,
            headers=core.headers(b"POST", body=body),
            body=body,
        )

    def _get(self, last_event_id: str | None = None) -> HttpRequest:
        core = self.core
        headers = core.headers(b"GET", last_event_id=last_event_id or None)
        return HttpRequest(method=b"GET", target=core.target, headers=headers, fresh=True)


C = TypeVar("C")


class KeepAlivePool(Generic[C]):
    """The idle keep-alive connections of one client (``C``: the driver's), the newest
    last: at most ``size``, none reused past ``idle_seconds`` idle (a server closes an
    idle connection after its own timeout: a request on it would be lost).  Time is an
    argument, in the driver's clock's seconds."""

    def __init__(self, size: int = 8, idle_seconds: float = 4.0) -> None:
        self.size = size
        self.idle_seconds = idle_seconds
        self._idle: list[tuple[float, C]] = []

    def take(self, now: float) -> tuple[C | None, list[C]]:
        """``(the newest connection still fresh, or None; the stale ones passed over,
        for the driver to close)``."""
        stale: list[C] = []
        while self._idle:
            since, conn = self._idle.pop()
            if now - since <= self.idle_seconds:
                return conn, stale
            stale.append(conn)
        return None, stale

    def put(self, conn: C, now: float) -> bool:
        """Keep ``conn`` (its exchange ended whole on both sides); False when the pool
        is full: close it."""
        if len(self._idle) >= self.size:
            return False
        self._idle.append((now, conn))
        return True

    def clear(self) -> list[C]:
        """Empty the pool; returns its connections, to close."""
        idle, self._idle = [conn for _, conn in self._idle], []
        return idle


def delete_request(core: HttpClientCore) -> HttpRequest:
    """The DELETE that ends our session (#session-management.8)."""
    return HttpRequest(method=b"DELETE", target=core.target, headers=core.headers(b"DELETE"))

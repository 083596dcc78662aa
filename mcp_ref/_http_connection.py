"""One HTTP/1.1 connection of the Streamable HTTP server, sans-IO, on h11.

Theory of operation
-------------------
A :class:`ServerConnection` is h11's server connection plus the server's rules: bytes
in (:meth:`~ServerConnection.receive_data`), events out
(:meth:`~ServerConnection.next_event`):

* :class:`RequestReady`: a request routed to its :class:`~mcp_ref._http_server.Endpoint`
  with its headers and, for a POST, its whole body (the head's rules, the body's size
  bound and its ``Content-Type`` already passed);
* :class:`Refusal`: a request refused before it reached an endpoint, or an HTTP/1.1
  error of the peer's: write ``data`` (empty when h11 no longer lets us answer), then
  go on to the next request (:meth:`~ServerConnection.next_cycle`) unless ``close``
  (always, for now: a refused request was not read whole);
* :data:`NEED_DATA`: give it more bytes; while :attr:`~ServerConnection.waiting_for`
  is ``"head"`` or ``"body"`` the driver bounds the wait by
  :meth:`~ServerConnection.deadline` (``HttpLimits.idle_timeout_seconds``) and calls
  :meth:`~ServerConnection.timed_out` when it passes;
* :data:`CLOSED`: nothing more to serve (the client closed its side, or paused).

Bytes out: ``outgoing`` holds what the connection itself must write (``100
Continue``); answers are h11 events the driver sends with ``h11``; a refusal that comes
later, from an endpoint, is :meth:`~ServerConnection.refuse`; after each answer,
:meth:`~ServerConnection.next_cycle` says whether the connection serves another
request (``limits.max_requests_per_connection`` bounds them).

No clock and no sockets: the driver passes the time in and owns the writes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Literal

import attrs
import h11

from ._http import HttpError, http_error
from ._http_access import ObservedConnection
from ._http_server import (
    Endpoint,
    RequestHeaders,
    ServerConfig,
    check_body_headers,
    request_headers,
    route_request,
)

__all__ = ["CLOSED", "CONNECTION_CLOSE", "NEED_DATA", "Refusal", "RequestReady", "ServerConnection"]

NEED_DATA: Final = h11.NEED_DATA
"""More bytes are needed (h11's sentinel)."""


class _Closed:
    def __repr__(self) -> str:
        return "CLOSED"


CLOSED: Final = _Closed()
"""The connection has nothing more to serve."""

CONNECTION_CLOSE: Final = (b"connection", b"close")
"""The ``Connection: close`` header of a response after which the connection ends."""

_WITH_BODY: Final = frozenset({Endpoint.POST, Endpoint.LEGACY_POST})


@attrs.frozen(kw_only=True)
class RequestReady:
    """A request for an endpoint, its body read."""

    endpoint: Endpoint
    """Which answer it gets."""
    query: str
    """The query of its target (the 2024-11-05 message endpoint's ``session_id``)."""
    headers: RequestHeaders
    """Its headers, with the memo of their header set."""
    body: bytes
    """The whole body of a POST (empty for the other methods)."""
    last: bool
    """The connection's last request: its answer carries ``Connection: close``."""


@attrs.frozen(kw_only=True)
class Refusal:
    """A request refused before it reached an endpoint, or a broken one."""

    error: HttpError
    """What was wrong (status, detail, clause)."""
    data: bytes
    """The response to write (empty when no response can be written now)."""
    close: bool
    """Close the connection once ``data`` is written."""


class ServerConnection:
    """h11's server connection and the rules every request passes (module docstring).

    Args:
        cfg: the server's settings (``limits.max_header_bytes`` also bounds a head
            still arriving, in bytes).
        memos: the server's memo of header-rule outcomes, shared by its connections
            (:func:`~mcp_ref._http_server.request_headers`).
        peer, clock: the client's address and the driver's clock, for CORS and the
            access log (:class:`~mcp_ref._http_access.ObservedConnection`, used when
            ``cfg`` asks for either).
    """

    def __init__(
        self,
        cfg: ServerConfig,
        memos: dict[Any, dict[Any, Any]],
        peer: str | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.cfg = cfg
        size = cfg.limits.max_header_bytes
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=size)
        if cfg.cors_origins or cfg.access_log:
            self.h11 = ObservedConnection(
                cors=cfg.cors_origins,
                allowed=cfg.allowed_origins,
                log=cfg.access_log,
                peer=peer,
                clock=clock or (lambda: 0.0),
                max_incomplete_event_size=size,
            )
        self.outgoing: list[bytes] = []
        """Bytes to write before anything else (``100 Continue``); the driver empties it."""
        self.served = 0
        """Requests received so far."""
        self._memos = memos
        self._pending: tuple[Endpoint, str, RequestHeaders, bool] | None = None
        self._chunks: list[bytes] = []
        self._size = 0
        self._waited: str | None = None  # what the current deadline is for
        self._deadline = 0.0

    @property
    def waiting_for(self) -> Literal["head", "body"] | None:
        """What :data:`NEED_DATA` waits for: a request head, its body, or None
        (an answer is being written)."""
        if self._pending is not None:
            return "body"
        if self.h11.their_state is h11.IDLE:
            return "head"
        return None

    def deadline(self, now: float) -> float:
        """When the wait for what :attr:`waiting_for` names must end, in seconds on the
        driver's clock (``now``): ``limits.idle_timeout_seconds`` after that wait began,
        the same deadline until the connection waits for something else (a head, then
        its body; the next head once :meth:`next_cycle` began a new request)."""
        waiting = self.waiting_for
        if waiting != self._waited:
            self._waited = waiting
            self._deadline = now + self.cfg.limits.idle_timeout_seconds
        return self._deadline

    def receive_data(self, data: bytes) -> None:
        """Bytes from the client; ``b""`` at the end of its side."""
        self.h11.receive_data(data)

    def next_event(self) -> RequestReady | Refusal | _Closed | type[h11.NEED_DATA]:
        """The next thing to do (module docstring)."""
        conn = self.h11
        try:
            if self._pending is None:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    return CLOSED if conn.their_state is h11.CLOSED else NEED_DATA
                if not isinstance(event, h11.Request):
                    return CLOSED  # ConnectionClosed, or PAUSED
                got = self._head(event)
                if got is not None:
                    return got
            return self._body()
        except h11.RemoteProtocolError as exc:
            # A head or body that broke HTTP/1.1 (too large a head, a bad chunk-size
            # line, the peer gone mid-body, ...): say so, then close, rather than close
            # in silence; h11 still lets us answer when no response has started.
            self._pending = None
            status = exc.error_status_hint or 400
            return self._broken(http_error(status, str(exc), clause=None))

    def _head(self, req: h11.Request) -> RequestReady | Refusal | None:
        """A request head: route it; None when its body is to be read."""
        self.served += 1
        last = self.served >= self.cfg.limits.max_requests_per_connection
        headers = request_headers(req, self._memos)
        if isinstance(self.h11, ObservedConnection):
            self.h11.begin(req.method, req.target, headers)
        routed = route_request(self.cfg, req.method, req.target, headers)
        if isinstance(routed, HttpError):
            return self._broken(routed)
        endpoint, query = routed
        if endpoint in _WITH_BODY:
            err = check_body_headers(headers, self.cfg.limits)
            if err is not None:
                return self._broken(err)
            if self.h11.they_are_waiting_for_100_continue:
                self.outgoing.append(
                    self.h11.send(h11.InformationalResponse(status_code=100, headers=[])) or b""
                )
        # Every request's end of message is read too (h11 hands it over as an event of
        # its own, at once for a GET without a body): only then can the connection serve
        # the next request once this one is answered.
        self._pending = (endpoint, query, headers, last)
        self._chunks, self._size = [], 0
        return None

    def _body(self) -> RequestReady | Refusal | _Closed | type[h11.NEED_DATA]:
        """Take the body events h11 has; the request once its body is whole."""
        assert self._pending is not None
        endpoint, query, headers, last = self._pending
        most = self.cfg.limits.max_body_bytes
        while True:
            event = self.h11.next_event()
            if event is h11.NEED_DATA:
                return NEED_DATA
            if isinstance(event, h11.Data):
                self._chunks.append(event.data)
                self._size += len(event.data)
                if self._size > most:
                    self._pending = None
                    err = http_error(413, f"body larger than {most} bytes", clause=None)
                    return self._broken(err)
                continue
            self._pending = None
            if not isinstance(event, h11.EndOfMessage):
                return CLOSED  # the client went away during the body
            # h11 hands each chunk over as a bytearray; a body sent with another method
            # is read (within the bound) and ignored.
            body = b"".join(self._chunks) if endpoint in _WITH_BODY else b""
            self._chunks = []
            return RequestReady(
                endpoint=endpoint, query=query, headers=headers, body=body, last=last
            )

    def timed_out(self) -> Refusal | _Closed:
        """The wait for :attr:`waiting_for` passed its deadline: 408 for a head begun or
        a body, a quiet close for an idle connection."""
        pending, self._pending = self._pending, None
        conn = self.h11
        if pending is not None:
            return self._broken(http_error(408, "request body not received in time", clause=None))
        if conn.their_state is not h11.IDLE or conn.trailing_data[0]:
            return self._broken(http_error(408, "request head not received in time", clause=None))
        return CLOSED

    def refuse(self, err: HttpError, last: bool) -> bytes:
        """The response of ``err`` to the current request (``Connection: close`` when it
        is the ``last``, or its body was not read); empty when a response is already
        under way (it cannot be replaced)."""
        if self.h11.our_state is not h11.SEND_RESPONSE:
            return b""
        return self._error_bytes(err, close=last or self.h11.their_state is not h11.DONE)

    def _broken(self, err: HttpError) -> Refusal:
        """The refusal of a request not read whole, or broken: the connection closes
        after it (h11 starts a next cycle only once a request was read whole, and a
        refused body is not worth reading; after an error h11 may no longer let us
        answer at all)."""
        data = b""
        if isinstance(self.h11, ObservedConnection) and self.h11.exchange is None:
            self.h11.begin(b"-", b"-", [])  # no head read: the access log says so
        if self.h11.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            data = self._error_bytes(err, close=True)
        return Refusal(error=err, data=data, close=True)

    def _error_bytes(self, err: HttpError, *, close: bool) -> bytes:
        """The response of ``err``; when h11 refuses part of it (a body after the head
        of the answer to a HEAD request), what it took: the connection then ends."""
        headers = list(err.headers)
        if close:
            headers.append(CONNECTION_CLOSE)
        events: list[Any] = [
            h11.Response(status_code=err.status, headers=headers, reason=err.reason)
        ]
        if err.body:
            events.append(h11.Data(data=err.body))
        events.append(h11.EndOfMessage())
        parts: list[bytes] = []
        try:
            for event in events:
                parts.append(self.h11.send(event) or b"")
        except h11.LocalProtocolError:
            pass  # h11 counts the parts before as sent; next_cycle() is then False
        return b"".join(parts)

    def next_cycle(self, last: bool) -> bool:
        """After an answer: whether the connection serves another request (then it is
        ready for it).  Not after the ``last`` request, nor when the answer or the
        request is unfinished."""
        conn = self.h11
        if last or conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
            return False
        conn.start_next_cycle()
        self._waited = None  # the next head gets a deadline of its own
        return True

    def closed(self) -> None:
        """The connection ends: an answer under way is logged as incomplete (when the
        access log is on)."""
        if isinstance(self.h11, ObservedConnection):
            self.h11.closed()

    def send_failed(self) -> None:
        """A write failed: no further answer can go on this connection."""
        self.h11.send_failed()

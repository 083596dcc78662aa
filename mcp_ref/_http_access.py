"""What the server's answers carry besides their content, sans-IO: the CORS headers
(:mod:`mcp_ref._http_cors`) and one access log line per request.

Theory of operation
-------------------
Every answer of the trio server goes through h11 (:class:`h11.Connection`'s
``send``), whichever code wrote it: an endpoint, a refusal, a graceful stop.  So the one
place that sees each request's answer whole is there: :class:`ObservedConnection` is
h11's server connection that, when told a request began (:meth:`~ObservedConnection.begin`,
from :class:`~mcp_ref._http_connection.ServerConnection`), adds the CORS headers to its
answer's head, counts the answer's body bytes, and at its end logs one line on the
``mcp_ref.access`` logger (:func:`access_line`)::

    127.0.0.1:50312 "POST /mcp" 200 1532B 3.2ms session=4f1c...

remote address, method and target, status, body bytes written, the time from the
request's head to the answer's end in milliseconds, and the session id (the answer's
``Mcp-Session-Id``, else the request's; ``-`` without one).  An answer that never ends
(the client left, the connection broke) is logged when the connection closes
(:meth:`~ObservedConnection.closed`), its status as sent and ``incomplete``.

The time is the driver's: it passes its clock in (``clock``); nothing here reads one.
A server with neither CORS nor the access log uses plain h11 (no cost).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, MutableMapping
from typing import Any, Final

import h11

from ._http_cors import cors_origin, with_cors_headers
from ._http_errors import MCP_SESSION_ID, Headers

__all__ = ["ACCESS_LOGGER", "AsgiExchange", "Exchange", "ObservedConnection", "access_line"]

ACCESS_LOGGER: Final = "mcp_ref.access"
"""The name of the access log's logger (level INFO, one record per request)."""

access_log = logging.getLogger(ACCESS_LOGGER)


class Exchange:
    """One request and its answer, as the access log tells it."""

    __slots__ = ("bytes", "cors", "method", "session_id", "started", "status", "target")

    def __init__(self, method: bytes, target: bytes, headers: Headers, started: float) -> None:
        self.method = method
        """The request method, e.g. ``b"POST"``."""
        self.target = target
        """The request target as sent, e.g. ``b"/mcp"``."""
        self.session_id: bytes | None = None
        """The request's ``Mcp-Session-Id`` (replaced by the answer's)."""
        for name, value in headers:
            if name == MCP_SESSION_ID:
                self.session_id = value
        self.started = started
        """When its head was read, on the driver's clock (seconds)."""
        self.status: int | None = None
        """The answer's status (None: no answer began)."""
        self.bytes = 0
        """The answer's body bytes sent so far."""
        self.cors: bytes | None = None
        """The request's CORS origin (its answer carries the CORS headers)."""


def access_line(peer: str | None, ex: Exchange, now: float, *, complete: bool = True) -> str:
    """The access log line of ``ex`` at ``now`` (module docstring; ``peer``: the
    client's address, ``-`` when unknown)."""
    status = "-" if ex.status is None else str(ex.status)
    session = "-" if ex.session_id is None else ex.session_id.decode("latin-1")
    line = (
        f'{peer or "-"} "{ex.method.decode("latin-1")} {ex.target.decode("latin-1")}" '
        f"{status} {ex.bytes}B {(now - ex.started) * 1000:.1f}ms session={session}"
    )
    return line if complete else line + " incomplete"


class ObservedConnection(h11.Connection):
    """h11's server connection, observing each answer (module docstring).

    Args:
        cors, allowed: the CORS origins and the allowed ones (``ServerConfig``'s).
        log: write the access log line of each request.
        peer: the client's address, for the log line.
        clock: the driver's clock (seconds), e.g. ``trio.current_time``.
        **kw: h11's (``max_incomplete_event_size``).
    """

    def __init__(
        self,
        *,
        cors: Collection[str],
        allowed: Collection[str],
        log: bool,
        peer: str | None,
        clock: Callable[[], float],
        **kw: Any,
    ) -> None:
        super().__init__(h11.SERVER, **kw)
        self.cors = cors
        self.allowed = allowed
        self.log = log
        self.peer = peer
        self.clock = clock
        self.exchange: Exchange | None = None
        """The request being answered."""

    def begin(self, method: bytes, target: bytes, headers: Headers) -> None:
        """A request's head was read (the previous answer's line, if it never ended, is
        logged now)."""
        self.closed()
        ex = self.exchange = Exchange(method, target, headers, self.clock())
        ex.cors = cors_origin(headers, self.cors, self.allowed)

    def send_with_data_passthrough(self, event: Any) -> list[Any] | None:
        """h11's, seeing the answer go by: the CORS headers added to its head, its body
        bytes counted, its line logged at its end."""
        ex = self.exchange
        if ex is not None:
            if type(event) is h11.Response:
                ex.status = event.status_code
                for name, value in event.headers:
                    if name == MCP_SESSION_ID:
                        ex.session_id = value
                if ex.cors is not None:
                    event = h11.Response(
                        status_code=event.status_code,
                        headers=with_cors_headers(event.headers, ex.cors),
                        reason=event.reason,
                    )
            elif type(event) is h11.Data:
                ex.bytes += len(event.data)
            elif type(event) is h11.EndOfMessage:
                out = super().send_with_data_passthrough(event)
                self.exchange = None
                if self.log:
                    access_log.info("%s", access_line(self.peer, ex, self.clock()))
                return out
        return super().send_with_data_passthrough(event)

    def closed(self) -> None:
        """The connection ends (or a new request begins): an answer that never ended is
        logged, ``incomplete``."""
        ex, self.exchange = self.exchange, None
        if ex is not None and self.log:
            access_log.info("%s", access_line(self.peer, ex, self.clock(), complete=False))


class AsgiExchange:
    """One ASGI request's :class:`Exchange`: :meth:`seen` takes each ``send`` message
    of its answer (the ASGI application's counterpart of :class:`ObservedConnection`).

    Args:
        scope: the request's ASGI ``http`` scope (method, path, query, headers, client).
        cors, allowed: the CORS origins and the allowed ones (``ServerConfig``'s).
        log: write its access log line when its answer ends.
        clock: the driver's clock (seconds).
    """

    def __init__(
        self,
        scope: MutableMapping[str, Any],
        *,
        cors: Collection[str],
        allowed: Collection[str],
        log: bool,
        clock: Callable[[], float],
    ) -> None:
        headers = [(bytes(k).lower(), bytes(v)) for k, v in scope.get("headers") or ()]
        target = (scope.get("raw_path") or scope.get("path", "/").encode()) + (
            b"?" + scope["query_string"] if scope.get("query_string") else b""
        )
        self.ex = Exchange(scope.get("method", "").encode(), target, headers, clock())
        self.ex.cors = cors_origin(headers, cors, allowed)
        client = scope.get("client")
        self.peer = str(client[0]) if client else None
        self.log = log
        self.clock = clock

    def seen(self, message: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        """``message`` as it is to be sent (the CORS headers added to the head)."""
        ex = self.ex
        if message["type"] == "http.response.start":
            ex.status = message["status"]
            for name, value in message.get("headers") or ():
                if bytes(name).lower() == MCP_SESSION_ID:
                    ex.session_id = bytes(value)
            if ex.cors is not None:
                message = {**message, "headers": with_cors_headers(message["headers"], ex.cors)}
        elif message["type"] == "http.response.body":
            ex.bytes += len(message.get("body", b""))
            if not message.get("more_body", False) and self.log:
                access_log.info("%s", access_line(self.peer, ex, self.clock()))
        return message

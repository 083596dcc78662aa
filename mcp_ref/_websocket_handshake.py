"""The opening handshake of MCP over WebSocket, sans-IO, both roles: checks and answers.

Theory of operation
-------------------
:class:`ServerHandshake` reads one upgrade request with an h11 connection of its own, so
that the request head is bounded (:data:`MAX_HANDSHAKE_BYTES`) and the checks wsproto
does not make come first, in the order docs/websocket.md gives:

=======================================  ==========================================
check                                    refusal
=======================================  ==========================================
the method is GET                        405, ``Allow: GET``
the path is the endpoint's               404 (the query is ignored)
``Origin``, then ``Host``, allowed       403 (400: ``Host`` missing or repeated), the
                                         DNS-rebinding rules of Streamable HTTP
                                         (:func:`mcp_ref._http.check_origin`,
                                         :func:`~mcp_ref._http.check_host`)
no body                                  400
a valid RFC 6455 upgrade                 400, or the 426 wsproto's ``event_hint`` names
``mcp`` among the offered subprotocols   400
the server is under its connection limit 503
=======================================  ==========================================

Every refusal is a plain HTTP response whose body is a JSON-RPC error
(:class:`~mcp_ref._http.HttpError`), sent before any WebSocket exists.  Bytes in
(:meth:`~ServerHandshake.receive_data`), one outcome out
(:meth:`~ServerHandshake.next_event`): :data:`NEED_DATA`, :class:`Accepted` (the ``101``
to write, and the open wsproto connection, which already holds the frames that came
right behind the request), :class:`Refused` (the response to write, then close), or
:data:`CLOSED` (the client went away first).

:class:`ClientHandshake` holds the request (offering ``mcp``) in ``request``, then reads
the answer: the open wsproto connection once the server answered ``101`` selecting
``mcp``; any other answer raises :class:`HandshakeError` with the status and the start
of the body (our server's refusals are JSON-RPC errors a caller can show).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Final, Literal
from urllib.parse import urlsplit

import attrs
import h11
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, RejectConnection, RejectData, Request
from wsproto.utilities import RemoteProtocolError as WSRemoteProtocolError

from ._http import (
    LOCALHOST_HOSTS,
    LOCALHOST_ORIGINS,
    HttpError,
    check_host,
    check_origin,
    http_error,
    split_target,
)
from ._websocket import CLOSED, DEFAULT_PATH, NEED_DATA, SUBPROTOCOL, Signal

__all__ = [
    "MAX_HANDSHAKE_BYTES",
    "MAX_REJECT_BODY",
    "Accepted",
    "ClientHandshake",
    "HandshakeError",
    "Refused",
    "ServerHandshake",
    "split_server_options",
    "split_url",
]

MAX_HANDSHAKE_BYTES: Final = 16384
"""The largest upgrade request head a server accepts, in bytes (400 above)."""
MAX_REJECT_BODY: Final = 65536
"""The most bytes of a refusal's body a client keeps in :class:`HandshakeError`."""

SERVER_OPTIONS: Final = frozenset(
    {"path", "allowed_origins", "allowed_hosts", "busy"}  # ServerHandshake's
    | {"ping_interval", "ping_timeout", "close_timeout", "max_message_bytes"}  # the channel's
)
"""The options of a server's handshake and of its channel, the rest being its session's."""


def split_server_options(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(the handshake's and the channel's options, the session's)`` among a WebSocket
    server's keywords (:data:`SERVER_OPTIONS`); ``max_message_bytes`` goes to both, as
    it bounds a message of the channel and of the session alike."""
    ours = {k: v for k, v in options.items() if k in SERVER_OPTIONS}
    rest = {k: v for k, v in options.items() if k not in ours or k == "max_message_bytes"}
    return ours, rest


@attrs.frozen
class Accepted:
    """The server accepts the upgrade."""

    data: bytes
    """The ``101 Switching Protocols`` response, selecting ``mcp``, to write."""
    ws: WSConnection
    """The open wsproto connection, for :class:`mcp_ref._websocket.WebSocketConnection`."""


@attrs.frozen
class Refused:
    """The server refuses the upgrade: write ``data``, then close the connection."""

    data: bytes
    """The whole HTTP response (empty when h11 lets us send none)."""
    error: HttpError
    """Why: status, detail, body."""


class HandshakeError(ConnectionError):
    """The opening handshake failed (client side).

    Attributes:
        status_code: the HTTP status of the server's refusal (e.g. 403); None when the
            answer was not a valid upgrade, or the server hung up.
        body: the first bytes of the refusal's body (a JSON-RPC error from our server),
            at most :data:`MAX_REJECT_BODY`.
    """

    def __init__(self, message: str, status_code: int | None = None, body: bytes = b"") -> None:
        super().__init__(message)
        self.status_code = status_code
        self.body = body


def _error(status: int, detail: str, headers: Sequence[tuple[bytes, bytes]] = ()) -> HttpError:
    return http_error(status, detail, clause=None, headers=headers)


class ServerHandshake:
    """The server side of one opening handshake.

    Args:
        path: the only path accepted (the query is ignored); None: any.
        allowed_origins: ``Origin`` patterns (:func:`mcp_ref._http.check_origin`); a
            request without ``Origin`` passes.
        allowed_hosts: ``Host`` patterns (:func:`mcp_ref._http.check_host`).
        busy: the server's connection limit when it has reached it: a request that
            passes every other check gets 503.

    Source: 2025-06-18/basic/transports#security-warning.1 (validate ``Origin``),
    2025-06-18/basic/transports#custom-transports.3 (the documented handshake).
    """

    def __init__(
        self,
        *,
        path: str | None = DEFAULT_PATH,
        allowed_origins: Collection[str] = LOCALHOST_ORIGINS,
        allowed_hosts: Collection[str] = LOCALHOST_HOSTS,
        busy: int | None = None,
    ) -> None:
        self.path = path
        self.allowed_origins = allowed_origins
        self.allowed_hosts = allowed_hosts
        self.busy = busy
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HANDSHAKE_BYTES)
        self._ended = False

    def receive_data(self, data: bytes) -> None:
        """Give it bytes read from the client; ``b""`` when the client went away (or the
        read failed)."""
        if not data:
            self._ended = True
        elif not self._ended:
            self._h11.receive_data(data)

    def next_event(self) -> Accepted | Refused | Signal:
        """:data:`NEED_DATA` until the request head is whole; then one outcome:
        :class:`Accepted`, :class:`Refused` (bad HTTP included), or :data:`CLOSED`."""
        if self._ended:
            return CLOSED
        try:
            event = self._h11.next_event()
        except h11.RemoteProtocolError as exc:
            return self._refuse(_error(exc.error_status_hint, f"bad HTTP request: {exc}"))
        if event is h11.NEED_DATA:
            return NEED_DATA
        if not isinstance(event, h11.Request):
            return CLOSED
        return self._answer(event)

    def _check(self, request: h11.Request) -> HttpError | None:
        """The checks wsproto does not make, in the documented order."""
        if request.method != b"GET":
            return _error(405, "only GET (a WebSocket upgrade) is allowed", [(b"allow", b"GET")])
        where = split_target(request.target)[1]
        if self.path is not None and where != self.path:
            return _error(404, f"no MCP endpoint at {where!r}")
        headers = list(request.headers)
        # Spec: 2025-03-26/basic/authorization#protocol-requirements.4
        # "Implementations using alternative transports MUST follow established security best
        # practices for their protocol."
        # Spec: 2025-06-18/basic/authorization#protocol-requirements.4
        # "Implementations using alternative transports MUST follow established security best
        # practices for their protocol."
        # Spec: 2025-11-25/basic/authorization#protocol-requirements.4
        # "Implementations using alternative transports MUST follow established security best
        # practices for their protocol."
        # Spec: 2026-07-28/basic/authorization/index#protocol-requirements.4
        # "Implementations using alternative transports MUST follow established security best
        # practices for their protocol."
        # Spec: 2025-06-18/basic/transports#security-warning.1
        # "Servers MUST validate the `Origin` header on all incoming connections to prevent DNS
        # rebinding attacks"
        err = check_origin(headers, self.allowed_origins) or check_host(
            headers, self.allowed_hosts, target=request.target
        )
        if err is None and any(
            name == b"transfer-encoding" or (name == b"content-length" and value.strip() != b"0")
            for name, value in headers
        ):
            err = _error(400, "an upgrade request has no body")
        return err

    def _answer(self, request: h11.Request) -> Accepted | Refused:
        ws = WSConnection(ConnectionType.SERVER)
        err = self._check(request)
        if err is None:
            try:
                ws.initiate_upgrade_connection(list(request.headers), request.target)
                offered = next(e for e in ws.events() if isinstance(e, Request))
                if SUBPROTOCOL not in offered.subprotocols:
                    err = _error(400, f"the subprotocol {SUBPROTOCOL!r} must be offered")
            except WSRemoteProtocolError as exc:
                hint = exc.event_hint  # wsproto's reply: 400, or 426 naming version 13
                if not isinstance(hint, RejectConnection):
                    hint = RejectConnection()
                detail = f"not a valid WebSocket upgrade: {exc}"
                err = _error(hint.status_code, detail, hint.headers)
            except (StopIteration, ValueError, UnicodeError) as exc:
                err = _error(400, f"bad upgrade request: {exc}")
        if err is None and self.busy is not None:
            err = _error(503, f"too many connections (at most {self.busy})")
        if err is not None:
            return self._refuse(err)
        data = ws.send(AcceptConnection(subprotocol=SUBPROTOCOL))
        ws.receive_data(self._h11.trailing_data[0])  # frames sent right behind the request
        return Accepted(data, ws)

    def _refuse(self, err: HttpError) -> Refused:
        head = h11.Response(
            status_code=err.status,
            reason=err.reason,
            headers=[*err.headers, (b"connection", b"close")],
        )
        try:
            data = b"".join(
                self._h11.send(event) or b""
                for event in (head, h11.Data(data=err.body), h11.EndOfMessage())
            )
        except h11.LocalProtocolError:
            data = b""  # h11 lets us answer nothing: the driver just closes
        return Refused(data, err)


def split_url(url: str) -> tuple[str, int, str, str]:
    """``(hostname, port, Host header, request target)`` of a ``ws://`` URL:
    ``"ws://user@h:8000/mcp?x=1"`` gives ``("h", 8000, "h:8000", "/mcp?x=1")``; the
    port is 80 unless given.

    Raises:
        ValueError: not a ``ws://`` URL (``wss://``: TLS is not built in, put a
            TLS-terminating proxy in front), or a bad port.

    Source: RFC 6455 section 3 (WebSocket URIs).
    """
    parts = urlsplit(url)
    if parts.scheme == "wss":
        raise ValueError("wss:// is not supported: put a TLS-terminating proxy in front")
    if parts.scheme != "ws" or not parts.hostname:
        raise ValueError(f"not a ws:// URL: {url!r}")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.hostname, parts.port or 80, parts.netloc.rpartition("@")[2], target


class ClientHandshake:
    """The client side of one opening handshake: write :attr:`request`, then feed the
    answer to :meth:`receive_data` until :meth:`next_event` gives the connection.

    Args:
        host: the ``Host`` header (``"127.0.0.1:8000"``).
        target: the request target (path and query).
        origin: an ``Origin`` header to send (browsers send one; default none).
        headers: extra request headers, e.g. ``[("authorization", "Bearer ...")]``.

    Raises:
        UnicodeEncodeError: a header that is not Latin-1.

    Source: 2025-06-18/basic/transports#custom-transports.3 (the documented handshake).
    """

    def __init__(
        self,
        *,
        host: str,
        target: str = DEFAULT_PATH,
        origin: str | None = None,
        headers: Sequence[tuple[str, str]] = (),
    ) -> None:
        self._ws = WSConnection(ConnectionType.CLIENT)
        extra = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]
        if origin is not None:
            extra.append((b"origin", origin.encode("latin-1")))
        request = Request(host=host, target=target, subprotocols=[SUBPROTOCOL], extra_headers=extra)
        self.request: bytes = self._ws.send(request)
        """The upgrade request to write first."""
        self._status: int | None = None
        self._body = b""

    def receive_data(self, data: bytes) -> None:
        """Give it bytes read from the server; ``b""`` when the server closed.

        Raises:
            HandshakeError: the server closed, or its answer is not HTTP or not a valid
                upgrade.
        """
        if not data:
            raise HandshakeError(
                "the server closed the connection during the handshake", self._status
            )
        try:
            self._ws.receive_data(data)
        except WSRemoteProtocolError as exc:
            raise HandshakeError(f"invalid upgrade response from the server: {exc}") from None

    def next_event(self) -> WSConnection | Literal[Signal.NEED_DATA]:
        """:data:`NEED_DATA`, or the open wsproto connection once the server accepted.

        Raises:
            HandshakeError: the server refused (``status_code``, ``body``), or accepted
                without selecting ``mcp``.
        """
        for event in self._ws.events():
            if isinstance(event, AcceptConnection):
                if event.subprotocol != SUBPROTOCOL:
                    raise HandshakeError(
                        f"the server did not select the subprotocol {SUBPROTOCOL!r}"
                    )
                return self._ws
            if isinstance(event, RejectConnection):
                self._status = event.status_code
                done = not event.has_body
            elif isinstance(event, RejectData):
                self._body = (self._body + event.data)[:MAX_REJECT_BODY]
                done = event.body_finished
            else:
                continue
            if done:
                shown = f"{self._status} {self._body[:200].decode('utf-8', 'replace')}".rstrip()
                raise HandshakeError(
                    f"the server refused the upgrade: {shown}", self._status, self._body
                )
        return NEED_DATA

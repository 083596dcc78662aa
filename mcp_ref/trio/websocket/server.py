"""The server side: the opening handshake's checks, one session per connection, listeners.

The upgrade request is read with an h11 connection of our own, so that its head is
bounded (``MAX_HANDSHAKE_BYTES``) and so that the checks wsproto does not make come
first, in the order docs/websocket.md gives: method (405), path (404), ``Origin`` and
``Host`` (403: the DNS-rebinding defence of Streamable HTTP, from :mod:`mcp_ref._http`),
no body (400).  Then wsproto checks the upgrade itself (400, or the 426 its
``event_hint`` names) and we check that ``mcp`` is offered (400).  Every refusal is a
plain HTTP response with a JSON-RPC error body, sent before any WebSocket exists.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from typing import Any, Final

import h11
import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, RejectConnection, Request
from wsproto.utilities import RemoteProtocolError as WSRemoteProtocolError

from ..._http import (
    LOCALHOST_HOSTS,
    LOCALHOST_ORIGINS,
    HttpError,
    check_host,
    check_origin,
    http_error,
)
from .._session import DEFAULT_GRACE_SECONDS, Handler
from .._stdio import serve_channel_until
from ..http.server import _is_loopback, accept_connections, close_listeners
from .channel import (
    DEFAULT_HANDSHAKE_TIMEOUT,
    DEFAULT_PATH,
    RECEIVE_SIZE,
    SUBPROTOCOL,
    WebSocketChannel,
    running,
)

__all__ = ["serve_websocket", "serve_websocket_stream", "websocket_server_handshake"]

log = logging.getLogger("mcp_ref.trio.websocket")

MAX_HANDSHAKE_BYTES: Final = 16384
"""The largest upgrade request head accepted, in bytes (400 above)."""
STOP_SLACK: Final = 2.0
"""Seconds past the grace a graceful stop waits for connections to close."""


def _error(status: int, detail: str, headers: Sequence[tuple[bytes, bytes]] = ()) -> HttpError:
    return http_error(status, detail, clause=None, headers=headers)


async def _read_request(stream: trio.abc.Stream) -> tuple[h11.Connection, h11.Request | None]:
    """One request head, and the h11 connection to answer on; None when the client went
    away or sent bad HTTP (then answered)."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HANDSHAKE_BYTES)
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError as exc:
            await _refuse(stream, conn, _error(exc.error_status_hint, f"bad HTTP request: {exc}"))
            return conn, None
        if event is not h11.NEED_DATA:
            return conn, event if isinstance(event, h11.Request) else None
        try:
            data = await stream.receive_some(RECEIVE_SIZE)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return conn, None
        if not data:
            return conn, None
        conn.receive_data(bytes(data))


async def _refuse(stream: trio.abc.Stream, conn: h11.Connection, err: HttpError) -> None:
    """Send ``err`` as the answer to the upgrade request (the caller then closes)."""
    log.info("refused a WebSocket upgrade: %s %s", err.status, err.detail)
    head = h11.Response(
        status_code=err.status, reason=err.reason, headers=[*err.headers, (b"connection", b"close")]
    )
    out = b"".join(conn.send(e) or b"" for e in (head, h11.Data(data=err.body), h11.EndOfMessage()))
    try:
        await stream.send_all(out)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass


def _check(
    request: h11.Request, path: str | None, origins: Collection[str], hosts: Collection[str]
) -> HttpError | None:
    if request.method != b"GET":
        return _error(405, "only GET (a WebSocket upgrade) is allowed", [(b"allow", b"GET")])
    where = request.target.decode("latin-1").split("?", 1)[0]
    if path is not None and where != path:
        return _error(404, f"no MCP endpoint at {where!r}")
    headers = list(request.headers)
    # Spec: 2025-06-18/basic/transports#security-warning.1
    # "Servers MUST validate the `Origin` header on all incoming connections to prevent DNS
    # rebinding attacks"
    err = check_origin(headers, origins) or check_host(headers, hosts)
    if err is None and any(
        name == b"transfer-encoding" or (name == b"content-length" and value.strip() != b"0")
        for name, value in headers
    ):
        err = _error(400, "an upgrade request has no body")
    return err


async def websocket_server_handshake(
    stream: trio.abc.Stream,
    *,
    path: str | None = DEFAULT_PATH,
    allowed_origins: Collection[str] = LOCALHOST_ORIGINS,
    allowed_hosts: Collection[str] = LOCALHOST_HOSTS,
    **channel_kw: Any,
) -> WebSocketChannel | None:
    """Run the server side of the opening handshake on a connected ``stream``.

    Args:
        path: the only path accepted (the query is ignored); None: any.
        allowed_origins: ``Origin`` patterns (:func:`mcp_ref._http.check_origin`); a
            request without ``Origin`` passes.
        allowed_hosts: ``Host`` patterns (:func:`mcp_ref._http.check_host`).
        **channel_kw: options of :class:`WebSocketChannel`.

    Returns:
        The open channel (not yet running), or None when the request was refused (the
        answer is sent: 405, 404, 403, 400, 426) or the client went away.

    Source: 2025-06-18/basic/transports#security-warning.1 (validate ``Origin``),
    2025-06-18/basic/transports#custom-transports.3 (the documented handshake).
    """
    conn, request = await _read_request(stream)
    if request is None:
        return None
    ws = WSConnection(ConnectionType.SERVER)
    err = _check(request, path, allowed_origins, allowed_hosts)
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
            err = _error(hint.status_code, f"not a valid WebSocket upgrade: {exc}", hint.headers)
        except (StopIteration, ValueError, UnicodeError) as exc:
            err = _error(400, f"bad upgrade request: {exc}")
    if err is not None:
        await _refuse(stream, conn, err)
        return None
    await stream.send_all(ws.send(AcceptConnection(subprotocol=SUBPROTOCOL)))
    ws.receive_data(conn.trailing_data[0])  # frames sent right behind the request
    return WebSocketChannel(stream, ws, subprotocol=SUBPROTOCOL, **channel_kw)


_HANDSHAKE_OPTIONS: Final = frozenset(
    {"path", "allowed_origins", "allowed_hosts", "max_message_bytes"}
    | {"ping_interval", "ping_timeout", "close_timeout"}
)


async def serve_websocket_stream(
    stream: trio.abc.Stream,
    target: Handler,
    *,
    handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
    stop: trio.Event | None = None,
    **options: Any,
) -> None:
    """Serve one MCP session on one accepted connection: the handshake (within
    ``handshake_timeout`` seconds), the session, the close; the stream is closed on return.

    Args:
        target: a session :class:`~mcp_ref.trio.Handler` (see
            :func:`~mcp_ref.trio.serve_channel`).
        stop: when set, the session takes no more input and ends as at the end of input
            (its ``drain_timeout``, error answers for what still runs, the close).
        **options: those of :func:`websocket_server_handshake` (``path``,
            ``allowed_origins``, ``allowed_hosts``) and :class:`WebSocketChannel`
            (``max_message_bytes``, which the session gets too, ``ping_interval``,
            ``ping_timeout``, ``close_timeout``); the rest go to
            :func:`~mcp_ref.trio.open_session`.

    Never raises for a misbehaving client: refusals are answered and logged.
    """
    handshake_kw = {k: options.pop(k) for k in _HANDSHAKE_OPTIONS & options.keys()}
    if "max_message_bytes" in handshake_kw:
        options["max_message_bytes"] = handshake_kw["max_message_bytes"]
    try:
        channel: WebSocketChannel | None = None
        with trio.move_on_after(handshake_timeout):
            channel = await websocket_server_handshake(stream, **handshake_kw)
        if channel is None or (stop is not None and stop.is_set()):
            return
        async with running(channel):
            await serve_channel_until(target, channel, stop, **options)
    except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
        log.debug("WebSocket connection failed: %r", exc)
    finally:
        with trio.CancelScope(shield=True):
            await trio.aclose_forcefully(stream)


async def serve_websocket(
    target: Handler,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    path: str | None = DEFAULT_PATH,
    allowed_origins: Collection[str] | None = None,
    allowed_hosts: Collection[str] | None = None,
    max_connections: int = 256,
    stop: trio.Event | None = None,
    grace_seconds: float = DEFAULT_GRACE_SECONDS,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
    **kw: Any,
) -> None:
    """Serve MCP over WebSocket on ``host:port``, one session per connection, until
    cancelled or until ``stop`` is set and the graceful stop is over.

    Usage: ``port = await nursery.start(serve_websocket, server)`` (then
    ``ws://127.0.0.1:<port>/mcp``).

    Args:
        target: a session :class:`~mcp_ref.trio.Handler`, e.g. an
            ``mcp_ref.server.Server``, serving every connection.
        host: the address to bind (default loopback only).
        port: the TCP port; 0 picks a free one (given to ``task_status``).
        path: the endpoint path; None accepts any.
        allowed_origins, allowed_hosts: patterns; default on a loopback ``host``: the
            loopback names; else no ``Origin`` (only non-browser clients) and any ``Host``.
        max_connections: connections served at once; more get 503.
        stop: set it to stop gracefully: the listeners close, each session takes no more
            input, its requests get ``grace_seconds``, those still running are answered
            with an error (-32603), and the WebSockets close; connections still open
            ``STOP_SLACK`` seconds later are cancelled.
        grace_seconds: see ``stop`` (the sessions' ``drain_timeout`` unless ``kw`` has one).
        task_status: receives the bound port.
        **kw: options of :func:`serve_websocket_stream` and of
            :func:`~mcp_ref.trio.open_session`.

    Raises:
        OSError: the address could not be bound.
        ValueError: ``max_connections`` below 1 or a negative ``grace_seconds``.

    Source: 2025-06-18/basic/transports#custom-transports.1 (a custom transport),
    2025-06-18/basic/transports#security-warning.2 (bind to loopback by default).
    """
    if max_connections < 1 or grace_seconds < 0:
        raise ValueError("max_connections must be at least 1, grace_seconds not negative")
    loopback = _is_loopback(host)
    if allowed_origins is None:
        allowed_origins = LOCALHOST_ORIGINS if loopback else ()
    if allowed_hosts is None:
        allowed_hosts = LOCALHOST_HOSTS if loopback else ("*",)
    # Spec: 2025-06-18/basic/transports#security-warning.2
    # "When running locally, servers SHOULD bind only to localhost (127.0.0.1) rather than all
    # network interfaces (0.0.0.0)"
    listeners = await trio.open_tcp_listeners(port, host=host)
    try:
        bound = listeners[0].socket.getsockname()[1]
        log.info("MCP WebSocket server on ws://%s:%s%s", host, bound, path or "/")
        task_status.started(bound)
        if stop is not None:
            kw.setdefault("drain_timeout", grace_seconds)
        await _serve_listeners(
            target,
            listeners,
            max_connections=max_connections,
            stop=stop,
            path=path,
            allowed_origins=allowed_origins,
            allowed_hosts=allowed_hosts,
            **kw,
        )
    finally:
        await close_listeners(listeners)


async def _serve_listeners(
    target: Handler,
    listeners: Sequence[trio.SocketListener],
    *,
    max_connections: int,
    stop: trio.Event | None = None,
    **kw: Any,
) -> None:
    """Accept on ``listeners``, one :func:`serve_websocket_stream` per connection (503
    past ``max_connections``), until ``stop``; then give the connections
    ``drain_timeout`` plus ``STOP_SLACK`` seconds to end."""
    active = 0

    async def handle(stream: trio.abc.Stream) -> None:
        nonlocal active
        if active >= max_connections:
            with trio.move_on_after(kw.get("handshake_timeout", DEFAULT_HANDSHAKE_TIMEOUT)):
                conn, request = await _read_request(stream)
                if request is not None:
                    busy = f"too many connections (at most {max_connections})"
                    await _refuse(stream, conn, _error(503, busy))
            await trio.aclose_forcefully(stream)
            return
        active += 1
        try:
            await serve_websocket_stream(stream, target, stop=stop, **kw)
        finally:
            active -= 1

    async with trio.open_nursery() as connections:
        async with trio.open_nursery() as accepting:
            for listener in listeners:
                accepting.start_soon(accept_connections, listener, connections, handle)
            if stop is None:
                await trio.sleep_forever()
            await stop.wait()
            accepting.cancel_scope.cancel()
        await close_listeners(listeners)
        wait = kw["drain_timeout"] + STOP_SLACK  # set by serve_websocket with a stop
        connections.cancel_scope.deadline = trio.current_time() + wait

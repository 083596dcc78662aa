"""The server side of MCP over WebSocket: the opening handshake's checks and the listeners.

Theory of operation
-------------------
:func:`serve_websocket` binds (loopback by default) and hands every accepted connection
to :func:`serve_websocket_stream`, at most ``max_connections`` at once (a connection past
it gets 503).  :func:`serve_websocket_stream` runs :func:`websocket_server_handshake`
within ``handshake_timeout``, then one MCP session over the resulting
:class:`~.channel.WebSocketChannel`, and closes the connection.

The handshake reads the upgrade request with its own bounded h11 connection (at most
``MAX_HANDSHAKE_BYTES`` of head) and checks, in this order: method (405 unless GET),
path (404), ``Origin`` and ``Host`` (403, the DNS-rebinding defence shared with
Streamable HTTP), no body (400); then wsproto checks the upgrade itself (400, or 426
for another WebSocket version, its ``event_hint`` giving the reply) and we check that
the subprotocol ``mcp`` was offered (400).  Every refusal is a plain HTTP response with
a JSON-RPC error body, sent before any WebSocket exists.  Frames the client sent right
behind its request are handed to wsproto before the channel starts reading.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from typing import Any, Final

import h11
import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, RejectConnection
from wsproto.events import Request as WSRequest
from wsproto.utilities import RemoteProtocolError as WSRemoteProtocolError

from ..._framing import DEFAULT_MAX_MESSAGE_BYTES
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
from ..http.server import accept_connections, close_listeners
from .channel import (
    DEFAULT_CLOSE_TIMEOUT,
    DEFAULT_HANDSHAKE_TIMEOUT,
    DEFAULT_PATH,
    DEFAULT_PING_INTERVAL,
    DEFAULT_PING_TIMEOUT,
    MAX_HANDSHAKE_BYTES,
    RECEIVE_SIZE,
    SUBPROTOCOL,
    WebSocketChannel,
)

__all__ = ["serve_websocket", "serve_websocket_stream", "websocket_server_handshake"]

log = logging.getLogger("mcp_ref.trio.websocket")


# ---------------------------------------------------------------------- handshake


async def _refuse(stream: trio.abc.Stream, conn: h11.Connection, err: HttpError) -> None:
    """Send ``err`` as the HTTP answer to the upgrade request (then the caller closes)."""
    headers = [*err.headers, (b"connection", b"close")]
    out = bytearray(
        conn.send(h11.Response(status_code=err.status, reason=err.reason, headers=headers)) or b""
    )
    if err.body:
        out += conn.send(h11.Data(data=err.body)) or b""
    out += conn.send(h11.EndOfMessage()) or b""
    log.info("refused a WebSocket upgrade: %s %s", err.status, err.detail)
    try:
        await stream.send_all(bytes(out))
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass


async def _read_request(stream: trio.abc.Stream, conn: h11.Connection) -> h11.Request | None:
    """Read one request head; None when the client went away or sent bad HTTP (then
    the 400 has been sent)."""
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError as exc:
            detail = f"bad HTTP request: {exc}"
            await _refuse(stream, conn, http_error(exc.error_status_hint, detail, clause=None))
            return None
        if event is h11.NEED_DATA:
            try:
                data = await stream.receive_some(RECEIVE_SIZE)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return None
            if not data:
                return None
            conn.receive_data(bytes(data))
        elif isinstance(event, h11.Request):
            return event
        else:
            return None


async def websocket_server_handshake(
    stream: trio.abc.Stream,
    *,
    path: str | None = DEFAULT_PATH,
    allowed_origins: Collection[str] = LOCALHOST_ORIGINS,
    allowed_hosts: Collection[str] = LOCALHOST_HOSTS,
    **channel_kw: Any,
) -> WebSocketChannel | None:
    """Run the server side of the opening handshake on ``stream``.

    Refusals are HTTP responses with a JSON-RPC error body, sent before any WebSocket
    exists: 405 (not GET), 404 (another path), 403 (``Origin`` or ``Host`` not allowed),
    400 (bad HTTP, a body, not a WebSocket upgrade, no ``mcp`` subprotocol offered),
    426 (another WebSocket version).

    Args:
        stream: a connected byte stream.
        path: the only path accepted (the query string is ignored); None: any.
        allowed_origins: ``Origin`` patterns (see :func:`mcp_ref._http.check_origin`);
            a request without ``Origin`` passes.
        allowed_hosts: ``Host`` patterns (see :func:`mcp_ref._http.check_host`).
        **channel_kw: options of :class:`WebSocketChannel`.

    Returns:
        The open channel (not yet running), or None when the request was refused or the
        client went away (the refusal has been sent; the caller closes the stream).

    Source: 2025-06-18/basic/transports#security-warning.1 (validate ``Origin``),
    2025-06-18/basic/transports#custom-transports.3 (the documented handshake).
    """
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HANDSHAKE_BYTES)
    request = await _read_request(stream, conn)
    if request is None:
        return None
    err = _check_request(request, path, allowed_origins, allowed_hosts)
    if err is not None:
        await _refuse(stream, conn, err)
        return None
    ws = WSConnection(ConnectionType.SERVER)
    try:
        ws.initiate_upgrade_connection(list(request.headers), request.target)
        offered = next(e for e in ws.events() if isinstance(e, WSRequest))
    except WSRemoteProtocolError as exc:
        hint = exc.event_hint
        status = hint.status_code if isinstance(hint, RejectConnection) else 400
        extra = list(hint.headers) if isinstance(hint, RejectConnection) else []
        detail = f"not a valid WebSocket upgrade: {exc}"
        await _refuse(stream, conn, http_error(status, detail, clause=None, headers=extra))
        return None
    except (StopIteration, ValueError, UnicodeError) as exc:
        await _refuse(stream, conn, http_error(400, f"bad upgrade request: {exc}", clause=None))
        return None
    if SUBPROTOCOL not in offered.subprotocols:
        detail = (
            f"the WebSocket subprotocol {SUBPROTOCOL!r} must be offered (Sec-WebSocket-Protocol)"
        )
        await _refuse(stream, conn, http_error(400, detail, clause=None))
        return None
    trailing = conn.trailing_data[0]
    await stream.send_all(ws.send(AcceptConnection(subprotocol=SUBPROTOCOL)))
    if trailing:
        ws.receive_data(trailing)  # frames sent right behind the request
    return WebSocketChannel(stream, ws, subprotocol=SUBPROTOCOL, **channel_kw)


def _check_request(
    request: h11.Request,
    path: str | None,
    allowed_origins: Collection[str],
    allowed_hosts: Collection[str],
) -> HttpError | None:
    if request.method != b"GET":
        return http_error(
            405,
            "only GET (a WebSocket upgrade) is allowed",
            clause=None,
            headers=[(b"allow", b"GET")],
        )
    target = request.target.decode("latin-1")
    if path is not None and target.split("?", 1)[0] != path:
        return http_error(404, f"no MCP endpoint at {target.split('?', 1)[0]!r}", clause=None)
    headers = list(request.headers)
    # Spec: 2025-06-18/basic/transports#security-warning.1
    # "Servers MUST validate the `Origin` header on all incoming connections to prevent DNS
    # rebinding attacks"
    err = check_origin(headers, allowed_origins) or check_host(headers, allowed_hosts)
    if err is not None:
        return err
    for name, value in headers:
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() != b"0"):
            return http_error(400, "an upgrade request has no body", clause=None)
    return None


# ---------------------------------------------------------------------- listeners


def _is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


async def serve_websocket_stream(
    stream: trio.abc.Stream,
    target: Handler,
    *,
    path: str | None = DEFAULT_PATH,
    allowed_origins: Collection[str] = LOCALHOST_ORIGINS,
    allowed_hosts: Collection[str] = LOCALHOST_HOSTS,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ping_interval: float | None = DEFAULT_PING_INTERVAL,
    ping_timeout: float = DEFAULT_PING_TIMEOUT,
    close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
    handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
    stop: trio.Event | None = None,
    **session_kw: Any,
) -> None:
    """Serve one MCP session on one accepted connection: handshake, session, close.

    Args:
        stream: the accepted connection (closed on return).
        target: a session :class:`~mcp_ref.trio.Handler`; one with a
            ``serve(channel, **session_kw)`` method (``mcp_ref.server.Server``) serves
            itself (see :func:`~mcp_ref.trio.serve_channel`).
        path, allowed_origins, allowed_hosts: see :func:`websocket_server_handshake`.
        max_message_bytes: the largest message, in bytes (the channel closes with 1009
            above it; the session gets the same bound).
        ping_interval, ping_timeout, close_timeout: see :class:`WebSocketChannel`.
        handshake_timeout: seconds the client has to complete the upgrade request.
        stop: when set, the session reads no more input and ends as at the end of
            input: its ``drain_timeout`` for the requests in progress, an error answer
            for each one still running, then the close handshake.
        **session_kw: options of :func:`~mcp_ref.trio.open_session`.

    Never raises for a misbehaving client: refusals are answered and logged.
    """
    try:
        channel: WebSocketChannel | None = None
        with trio.move_on_after(handshake_timeout):
            channel = await websocket_server_handshake(
                stream,
                path=path,
                allowed_origins=allowed_origins,
                allowed_hosts=allowed_hosts,
                max_message_bytes=max_message_bytes,
                ping_interval=ping_interval,
                ping_timeout=ping_timeout,
                close_timeout=close_timeout,
            )
        if channel is None or (stop is not None and stop.is_set()):
            return
        async with trio.open_nursery() as nursery:
            await nursery.start(channel.run)
            try:
                session_kw.setdefault("max_message_bytes", max_message_bytes)
                await serve_channel_until(target, channel, stop, **session_kw)
            finally:
                with trio.CancelScope(shield=True):
                    await channel.aclose()
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
    """Serve MCP over WebSocket on ``host:port`` until cancelled (or until ``stop`` is
    set and the graceful stop is over), one session per connection.

    Usage::

        port = await nursery.start(serve_websocket, server)   # ws://127.0.0.1:<port>/mcp

    Args:
        target: a session :class:`~mcp_ref.trio.Handler`, e.g. an
            ``mcp_ref.server.Server``; one serves every connection (see
            :func:`~mcp_ref.trio.serve_channel`).
        host: the address to bind (default loopback only).
        port: the TCP port; 0 picks a free one (given to ``task_status``).
        path: the MCP endpoint path (default ``/mcp``); None accepts any.
        allowed_origins: ``Origin`` patterns; default: the loopback origins when
            ``host`` is a loopback address, else none (only clients that send no
            ``Origin``, i.e. not browsers).
        allowed_hosts: ``Host`` patterns; default: the loopback names on a loopback
            ``host``, else any.
        max_connections: connections served at once; more are refused with 503.
        stop: set it to stop gracefully: the listeners close; each session reads no
            more input, its requests in progress get ``grace_seconds``, those still
            running are cancelled and answered with an error (-32603), and it closes
            (the WebSocket close handshake); this returns once every connection has
            ended (at most about ``grace_seconds`` + 2 s, then they are cancelled).
        grace_seconds: seconds the requests in progress get after ``stop`` (default
            5.0; the sessions' ``drain_timeout`` unless one is given in ``kw``).
        task_status: receives the bound port (an int).
        **kw: options of :func:`serve_websocket_stream` (``max_message_bytes``,
            ``ping_interval``, ``ping_timeout``, ``close_timeout``,
            ``handshake_timeout``) and of :func:`~mcp_ref.trio.open_session`.

    Raises:
        OSError: the address could not be bound.
        ValueError: ``max_connections`` below 1 or a negative ``grace_seconds``.

    Source: 2025-06-18/basic/transports#custom-transports.1 (a custom transport),
    2025-06-18/basic/transports#security-warning.2 (bind to loopback by default).
    """
    if max_connections < 1:
        raise ValueError("max_connections must be at least 1")
    if grace_seconds < 0:
        raise ValueError("grace_seconds must not be negative")
    loopback = _is_loopback(host)
    origins = (
        allowed_origins if allowed_origins is not None else (LOCALHOST_ORIGINS if loopback else ())
    )
    hosts = (
        allowed_hosts if allowed_hosts is not None else (LOCALHOST_HOSTS if loopback else ("*",))
    )
    # Spec: 2025-06-18/basic/transports#security-warning.2
    # "When running locally, servers SHOULD bind only to localhost (127.0.0.1) rather than all
    # network interfaces (0.0.0.0)"
    listeners = await trio.open_tcp_listeners(port, host=host)
    bound = listeners[0].socket.getsockname()[1]
    log.info("MCP WebSocket server on ws://%s:%s%s", host, bound, path or "/")
    task_status.started(bound)  # the listeners are bound and listening already
    if stop is not None:
        kw.setdefault("drain_timeout", grace_seconds)
    try:
        await _serve_listeners(
            target,
            listeners,
            path=path,
            allowed_origins=origins,
            allowed_hosts=hosts,
            max_connections=max_connections,
            stop=stop,
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
    """Accept on ``listeners``, one :func:`serve_websocket_stream` per connection, at
    most ``max_connections`` at once (503 beyond), until ``stop`` (for ever without);
    then wait for the connections to end (``drain_timeout`` plus 2 s at most)."""
    active = 0

    async def handle(stream: trio.abc.Stream) -> None:
        nonlocal active
        if active >= max_connections:
            with trio.move_on_after(kw.get("handshake_timeout", DEFAULT_HANDSHAKE_TIMEOUT)):
                await _refuse_busy(stream, max_connections)
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
        # The sessions end by themselves (see serve_websocket_stream); a bound anyway.
        wait = kw["drain_timeout"] + _STOP_SLACK
        connections.cancel_scope.deadline = trio.current_time() + wait


_STOP_SLACK: Final = 2.0
"""Seconds past the grace a graceful stop waits for WebSocket connections to end (the
error answers, the close handshake) before it cancels them."""


async def _refuse_busy(stream: trio.abc.Stream, limit: int) -> None:
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HANDSHAKE_BYTES)
    if await _read_request(stream, conn) is not None:
        err = http_error(503, f"too many connections (at most {limit})", clause=None)
        await _refuse(stream, conn, err)

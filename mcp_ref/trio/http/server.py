"""The Streamable HTTP server (and the 2024-11-05 HTTP+SSE endpoints) on trio and h11.

Theory of operation
-------------------
:func:`serve_http` listens on TCP and serves every connection in its own task.  What the
server decides is sans-IO, in the core, and this package is loops around it:

* :mod:`mcp_ref._http_connection`: one connection's bytes in, its requests (routed,
  bodies read whole) or refusals out, on h11 (:mod:`mcp_ref._http_server` holds the
  rules one request passes; :mod:`mcp_ref._http` the header rules and status codes);
* :mod:`mcp_ref._http_streams`: which logical stream each message of a session goes to;
* :mod:`mcp_ref._http_sessions`: the session bounds (eviction, expiry), time passed in;
* :mod:`mcp_ref._sse`: the event streams' bytes.

One MCP session is one :class:`~mcp_ref.trio.Session` (run by the handler's ``serve``
method when it has one, e.g. :class:`mcp_ref.server.Server`, else by
:func:`~mcp_ref.trio.open_session`) over a :class:`~.session.ServerChannel` of ours.
Each session runs in an *owner task* started by the server's private
:class:`~.common.Supervisor`, so it outlives the HTTP request that created it but never
the server.

Messages in: a POST's body is handed to the session's channel as one message (a bounded
queue: the POST waits when the session is slow).  Messages out: the session calls
``channel.send(data, related_request_id=...)``; the channel never blocks and never
fails.  It puts the message on exactly one *logical stream* (never two:
2025-06-18/basic/transports#multiple-connections.2):

* the stream of the POST that carried request R, for R's response and for every message
  sent while handling R (``related_request_id == R``);
* else the session's *standalone* stream, the one a GET reads (server notifications and
  requests unrelated to any request); a stateless server drops those.

A logical stream is a list of events in the session's :class:`~mcp_ref._http.EventStore`
(bounded), plus at most one HTTP response *attached* to it and writing its events from a
cursor.  A POST's stream is attached to that POST's response; when the client drops the
connection the stream lives on detached, and a GET with ``Last-Event-ID`` re-attaches it
and replays what was missed: only that stream's events
(2025-06-18/basic/transports#resumability-and-redelivery.5).  Event ids are
``<stream id>/<seq>`` with one sequence per session (:func:`~mcp_ref._http.make_event_id`).
A new attachment takes over from an old one (the old response ends), so a client whose
connection died unnoticed can always resume.  When the response to the POST's request
has been written, the response ends (#sending-messages-to-the-server.14).

With ``json_response=True`` a request's answer is one ``application/json`` body, and
messages sent while handling it go to the standalone stream instead.

From 2025-11-25 on (the negotiated version), every SSE response starts with a *priming*
event: an id and empty data, with a ``retry`` field (``retry_ms``).  The client then
holds an id it can resume from, so the server may end a stream at any time (polling);
:func:`close_sse_stream` lets a request handler do so.

The server never reads JSON itself: the kind and id of each message (to route it, and
to know which message ends a stream) come from :mod:`mcp_ref._http_messages`, which reads
a body with the connection's own decoder, so a POST never waits for a request the
connection did not take; the negotiated version comes from the answer to
``initialize`` (:func:`mcp_ref._http_messages.negotiated_version`).

Sessions: ``initialize`` creates one with a random id (16 bytes from :mod:`secrets`);
others name it in ``Mcp-Session-Id``: 400 without, 404 unknown or ended.  DELETE ends
it.  The session table (:mod:`.sessions`) bounds them: at most
``limits.max_sessions`` at once and ``limits.max_sessions_per_peer`` per client address
(an idle session is evicted to make room, else 503 or 429 with ``Retry-After``); the
reaper ends sessions that never complete initialization within
``limits.uninitialized_session_seconds`` and sessions idle for
``limits.session_idle_seconds``.  Every limit is listed in ``docs/http-limits.md``.

Stateless mode (``stateless=True``): no session ids, no GET stream, no DELETE.  Each POST
gets a fresh session that lives for that POST only.  A POST other than ``initialize``
first has a synthetic ``initialize`` (version from ``MCP-Protocol-Version``, else
2025-03-26; no client capabilities, so the server never asks the client for anything)
and ``notifications/initialized`` fed before it; the answer to the synthetic initialize
is dropped.  So the core's lifecycle holds unchanged, and every request is handled as
the first request of an operating session.

Legacy HTTP+SSE (2024-11-05, ``legacy_sse=True``): ``GET /sse`` opens a session whose
stream starts with an ``endpoint`` event naming ``/messages?session_id=<id>``; POSTs
there are answered 202 and every server message goes to that one stream.  The session
ends when the GET's connection does.

Limits (:class:`~mcp_ref._http.HttpLimits`): request head size (h11: 431), body size
(413), requests per connection (then ``Connection: close``), seconds to receive a
request (408, or a silent close when the connection was idle), SSE keepalive comments.

Modules, each importing only those before it: :mod:`.common` (h11 over trio, the
supervisor), :mod:`.requests` (refusals and bodiless answers), :mod:`.fastpath` (the one
fast path), :mod:`.session` (one session: channel, input queue, waking its responses),
:mod:`.sessions` (the session table), :mod:`.sse` (writing a logical stream as an SSE
response), :mod:`.endpoint` (POST, GET and DELETE of the MCP endpoint), :mod:`.legacy`
(2024-11-05), :mod:`.connection` (the loop around one connection); this one holds the
entry points.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final

import attrs
import trio

from ... import _http as rules
from ..._http import HttpLimits
from ..._http_server import ServerConfig
from .._session import DEFAULT_GRACE_SECONDS, Handler, Session
from .connection import HttpServer
from .session import close_sse_stream

__all__ = [
    "CLOSE_WAIT_SECONDS",
    "HttpServerInfo",
    "close_sse_stream",
    "open_http_server",
    "serve_http",
]

log = logging.getLogger("mcp_ref.trio.http")


@attrs.frozen(kw_only=True)
class HttpServerInfo:
    """Where a running :func:`serve_http` listens (what ``task_status.started`` gives)."""

    host: str
    """The address bound, e.g. ``"127.0.0.1"``."""
    port: int
    """The TCP port bound (the real one when 0 was asked for)."""
    url: str
    """The MCP endpoint, e.g. ``"http://127.0.0.1:8000/mcp"``."""
    legacy_sse_url: str | None
    """The 2024-11-05 SSE endpoint, or None when not hosted."""
    stop: trio.Event = attrs.field(factory=trio.Event, repr=False, eq=False)
    """Set it (or call :meth:`shutdown`) to stop the server gracefully: the ``stop``
    given to :func:`serve_http`, else one of its own."""

    def shutdown(self) -> None:
        """Stop the server gracefully (see :func:`serve_http`); returns at once.  Under
        :func:`open_http_server`, leaving the block then waits for the stop to end."""
        self.stop.set()


async def serve_http(
    handler: Handler | Callable[[], Handler],
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    path: str = "/mcp",
    json_response: bool = False,
    stateless: bool = False,
    enable_get_stream: bool = True,
    allowed_origins: Collection[str] | None = None,
    allowed_hosts: Collection[str] | None = None,
    limits: HttpLimits | None = None,
    legacy_sse: bool = True,
    legacy_sse_path: str = "/sse",
    legacy_messages_path: str = "/messages",
    retry_ms: int = 1000,
    stop: trio.Event | None = None,
    grace_seconds: float = DEFAULT_GRACE_SECONDS,
    task_status: trio.TaskStatus[HttpServerInfo] = trio.TASK_STATUS_IGNORED,
    **session_kw: Any,
) -> None:
    """Serve MCP over Streamable HTTP (and 2024-11-05 HTTP+SSE) until cancelled, or
    until ``stop`` is set and the graceful stop is over.

    Args:
        handler: answers every session: a :class:`~mcp_ref.trio.Handler` shared by all
            sessions (e.g. an :class:`mcp_ref.server.Server`; its ``serve(channel)``
            method is used when it has one), or a zero-argument factory called once per
            session.
        host: the address to bind (default loopback: 2025-06-18/basic/transports
            #security-warning.2).
        port: the TCP port; 0 picks a free one (see ``task_status``).
        path: the MCP endpoint's path.
        json_response: answer requests with one JSON body instead of an SSE stream.
        stateless: no sessions (see the module docstring).
        enable_get_stream: offer the standalone GET stream (else GET gets 405).
        allowed_origins: ``Origin`` patterns (:func:`mcp_ref._http.check_origin`);
            default: the loopback origins for a loopback ``host``, else none (requests
            with an ``Origin`` are refused with 403, those without pass).
        allowed_hosts: ``Host`` patterns (:func:`mcp_ref._http.check_host`); default the
            loopback names for a loopback ``host``, else any.
        limits: the bounds (:class:`~mcp_ref._http.HttpLimits`).
        legacy_sse: also host the 2024-11-05 endpoints at ``legacy_sse_path`` (GET) and
            ``legacy_messages_path`` (POST).
        retry_ms: the ``retry`` field of priming events, in milliseconds.
        stop: set it to stop gracefully (default: a new event, ``HttpServerInfo.stop``).
            Then: no new connection is accepted (the listeners close); no connection
            serves a further request, and those waiting for one close; the requests in
            progress get ``grace_seconds`` to be answered; each one still running is
            then cancelled and answered with a JSON-RPC error response (-32603) on its
            own stream; every session ends, so every SSE response ends whole (its
            terminating chunk); connections get ``CLOSE_WAIT_SECONDS`` (1 s) to write
            what they hold, then are cancelled; and this returns normally.  Cancelling
            this instead stops everything at once.
        grace_seconds: seconds the requests in progress get after ``stop`` (default
            5.0).
        task_status: ``started`` with an :class:`HttpServerInfo` once listening.
        **session_kw: passed to the handler's ``serve`` or to
            :func:`~mcp_ref.trio.open_session` (``default_timeout``, ...).

    Raises:
        OSError: the address cannot be bound.
        ValueError: a bad ``path`` or a negative ``grace_seconds``.

    Source: 2025-06-18/basic/transports#streamable-http; 2024-11-05/basic/transports
    "HTTP with SSE"; 2025-06-18/basic/transports#backwards-compatibility;
    2025-06-18/basic/lifecycle#shutdown (the stop).
    """
    if grace_seconds < 0:
        raise ValueError("grace_seconds must not be negative")
    limits = limits or HttpLimits()
    loopback = _is_loopback(host)
    if allowed_origins is None:
        allowed_origins = rules.LOCALHOST_ORIGINS if loopback else ()
    if allowed_hosts is None:
        allowed_hosts = rules.LOCALHOST_HOSTS if loopback else ("*",)
    if not path.startswith("/"):
        raise ValueError("path must start with /")
    cfg = ServerConfig(
        path=path,
        json_response=json_response,
        stateless=stateless,
        enable_get_stream=enable_get_stream and not stateless,
        allowed_origins=allowed_origins,
        allowed_hosts=allowed_hosts,
        limits=limits,
        legacy_sse=legacy_sse and not stateless,
        legacy_sse_path=legacy_sse_path,
        legacy_messages_path=legacy_messages_path,
        retry_ms=retry_ms,
    )
    server = HttpServer(handler, cfg, session_kw)
    listeners = await trio.open_tcp_listeners(port, host=host)
    try:
        bound = listeners[0].socket.getsockname()
        name = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        base = f"http://{name}:{bound[1]}"
        info = HttpServerInfo(
            host=bound[0],
            port=bound[1],
            url=base + path,
            legacy_sse_url=base + legacy_sse_path if cfg.legacy_sse else None,
            stop=trio.Event() if stop is None else stop,
        )
        async with trio.open_nursery() as nursery:
            await nursery.start(server.table.supervisor.run)
            nursery.start_soon(server.table.reaper)
            # Connections run in a nursery of their own, apart from the accepting tasks,
            # so that accepting can stop while they finish.
            async with trio.open_nursery() as connections:
                async with trio.open_nursery() as accepting:
                    for listener in listeners:
                        accepting.start_soon(
                            accept_connections, listener, connections, server.handle_connection
                        )
                    log.info("serving MCP on %s", info.url)
                    task_status.started(info)
                    await info.stop.wait()
                    accepting.cancel_scope.cancel()
                await close_listeners(listeners)
                await _stop_gracefully(server, grace_seconds)
                connections.cancel_scope.deadline = trio.current_time() + CLOSE_WAIT_SECONDS
            nursery.cancel_scope.cancel()  # the session tasks left, the reaper
        log.info("stopped serving MCP on %s", info.url)
    finally:
        await close_listeners(listeners)


CLOSE_WAIT_SECONDS: Final = 1.0
"""After a graceful stop's grace, seconds the connections get to write what they hold
(the error answers, the ends of the SSE responses) before they are cancelled."""

_SHUTDOWN_REASON: Final = "the server is shutting down"

# accept() errors that mean "too many connections now" (trio.serve_listeners waits
# them out the same way, rather than crash).
_CAPACITY_ERRNOS: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})


async def accept_connections(
    listener: trio.SocketListener,
    connections: trio.Nursery,
    handle: Callable[[trio.SocketStream], Awaitable[object]],
) -> None:
    """Accept connections on ``listener`` and run ``handle(stream)`` for each in
    ``connections``, until cancelled (``trio.serve_listeners`` with the connections in
    a nursery of the caller's, so that accepting can stop while they finish).

    Raises:
        OSError: ``accept`` failed for another reason than too many open connections
            or files (then it waits 0.1 s and tries again).
    """
    while True:
        try:
            stream = await listener.accept()
        except OSError as exc:
            if exc.errno not in _CAPACITY_ERRNOS:
                raise
            log.warning("cannot accept a connection now (%s); trying again in 0.1 s", exc)
            await trio.sleep(0.1)
            continue
        connections.start_soon(handle, stream)


async def close_listeners(listeners: Sequence[trio.SocketListener]) -> None:
    """Close every listener (shielded: even in a cancelled scope)."""
    for listener in listeners:
        with trio.CancelScope(shield=True):
            await listener.aclose()


async def _stop_gracefully(server: HttpServer, grace: float) -> None:
    """The graceful stop of :func:`serve_http`, once the listeners are closed."""
    # 1. No further request on any connection; the idle ones close now.
    server.draining = True
    for scope in list(server.waiting):
        scope.cancel()
    # 2. The requests in progress get ``grace`` seconds; those still running are then
    # cancelled and each answered with an error, which its stream carries.
    sessions = list(server.table.running)
    async with trio.open_nursery() as nursery:
        for sess in sessions:
            if sess.session is not None:
                nursery.start_soon(_finish, sess.session, grace)
    # 3. Every session ends: its streams write what they hold and end whole.
    # The lifecycle page, "Shutdown": "the underlying transport mechanism should be
    # used to signal connection termination": each SSE response ends (h11
    # EndOfMessage), then its connection.
    for sess in list(server.table.running):
        sess.end(_SHUTDOWN_REASON)


async def _finish(session: Session, grace: float) -> None:
    await session.finish_requests(grace, reason=_SHUTDOWN_REASON)


@asynccontextmanager
async def open_http_server(
    handler: Handler | Callable[[], Handler], host: str = "127.0.0.1", port: int = 0, **kw: Any
) -> AsyncIterator[HttpServerInfo]:
    """Run :func:`serve_http` for the duration of an ``async with`` block (tests, embedding).

    Yields:
        The :class:`HttpServerInfo` of the listening server.  Leaving the block stops it
        at once; after ``info.shutdown()`` it waits for the graceful stop instead (at
        most ``grace_seconds`` plus ``CLOSE_WAIT_SECONDS`` and a little).
    """
    async with trio.open_nursery() as nursery:
        info: HttpServerInfo = await nursery.start(_serve_with_status, handler, host, port, kw)
        try:
            yield info
        finally:
            if not info.stop.is_set():
                nursery.cancel_scope.cancel()


async def _serve_with_status(
    handler: Handler | Callable[[], Handler],
    host: str,
    port: int,
    kw: dict[str, Any],
    *,
    task_status: trio.TaskStatus[HttpServerInfo] = trio.TASK_STATUS_IGNORED,
) -> None:
    await serve_http(handler, host, port, task_status=task_status, **kw)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False

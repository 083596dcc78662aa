"""One ASGI HTTP request seen as the trio server's endpoints see a request.

Theory of operation
-------------------
The trio server (:mod:`mcp_ref.trio.http`) reads bytes with h11; the sans-IO
:class:`~mcp_ref._http_connection.ServerConnection` turns them into a routed
:class:`~mcp_ref._http_connection.RequestReady`.  An ASGI server has parsed the request
already, so this module makes the same :class:`RequestReady` from an ASGI ``scope`` and
its body, with the core's own rules, in the core's order: :func:`request_headers` (the
adapter of :func:`mcp_ref._http_server.request_headers`, which takes an ``h11.Request``),
:func:`~mcp_ref._http_server.route_request` (431, 403 ``Origin``/``Host``, 404, 405,
406), :func:`~mcp_ref._http_server.check_body_headers` (415, 400, 413) and the body's
bound (``limits.max_body_bytes``: 413; ``limits.idle_timeout_seconds`` per chunk: 408).

The answer is then written by the trio endpoints themselves
(:data:`mcp_ref.trio.http.endpoint.ENDPOINTS`), through :class:`AsgiStream`: the
:class:`~mcp_ref.trio.http.common.H11Stream` they write h11 events to, here turned into
ASGI ``http.response.start`` / ``http.response.body`` messages; its ``receive_some``
returns ``b""`` once the client has gone (an ``http.disconnect``), which is how
:func:`~mcp_ref.trio.http.endpoint.wait_change` notices a client that left.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

import h11
import trio

from .._http import HttpError, http_error
from .._http_connection import RequestReady
from .._http_server import (
    Endpoint,
    RequestHeaders,
    ServerConfig,
    check_body_headers,
    headers_from_items,
    route_request,
)

__all__ = ["AsgiStream", "error_messages", "read_request", "request_headers", "route_path"]

Message = MutableMapping[str, Any]
"""An ASGI event (a dict with a ``type``)."""
Send = Callable[[Message], Awaitable[None]]
Receive = Callable[[], Awaitable[Message]]

_WITH_BODY: Final = frozenset({Endpoint.POST, Endpoint.LEGACY_POST})
_HOP_BY_HOP: Final = frozenset({b"connection", b"keep-alive", b"transfer-encoding"})
"""Headers that are the ASGI server's to write, not the application's."""


def route_path(scope: Message) -> str:
    """The path of the request below the application's mount point: ``scope["path"]``
    without ``scope["root_path"]`` when it starts with it (Starlette's ``Mount`` and
    Uvicorn's ``--root-path`` give the full path), else as it is."""
    path: str = scope.get("path") or "/"
    root: str = scope.get("root_path") or ""
    if root and path.startswith(root):
        path = path[len(root) :] or "/"
    return path


def request_headers(
    scope: Message, target: bytes, memos: dict[Any, dict[Any, Any]]
) -> RequestHeaders:
    """The headers of an ASGI request as :func:`mcp_ref._http_server.request_headers`
    gives those of an h11 request: lowercase names, ``Content-Length`` out of the memo
    key, the head's size counted as the 431 rule counts it, the memo of the header set
    taken from ``memos`` (bounded: cleared past 256 sets): the core's
    :func:`~mcp_ref._http_server.headers_from_items` over the scope's ``headers``."""
    raw_items = ((bytes(name), bytes(value)) for name, value in scope.get("headers") or ())
    return headers_from_items(target, raw_items, memos)


async def read_request(
    cfg: ServerConfig,
    scope: Message,
    receive: Receive,
    memos: dict[Any, dict[Any, Any]],
    *,
    receive_within: Callable[[Receive, float], Awaitable[Message]],
) -> RequestReady | HttpError | None:
    """Route one ASGI ``http`` request and read its body, by the core's rules (module
    docstring).

    Args:
        cfg: the application's settings.
        scope: the ASGI ``http`` scope.
        receive: the ASGI ``receive`` callable (its ``http.request`` messages).
        memos: the application's memo of header-rule outcomes.
        receive_within: ``receive`` bounded by a time in seconds on the running loop
            (raising :class:`TimeoutError` or :class:`trio.TooSlowError` past it).

    Returns:
        The routed request (``last`` is always False: the connection is the ASGI
        server's), the :class:`HttpError` to answer instead, or None when the client
        left before its body was whole (nothing to answer).
    """
    query = scope.get("query_string") or b""
    target = route_path(scope).encode("utf-8", "surrogateescape")
    if query:
        target += b"?" + bytes(query)
    headers = request_headers(scope, target, memos)
    method = str(scope.get("method", "GET")).upper().encode("ascii", "replace")
    routed = route_request(cfg, method, target, headers)
    if isinstance(routed, HttpError):
        return routed
    endpoint, query_text = routed
    body = b""
    if endpoint in _WITH_BODY:
        err = check_body_headers(headers, cfg.limits)
        if err is not None:
            return err
        most = cfg.limits.max_body_bytes
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            try:
                message = await receive_within(receive, cfg.limits.idle_timeout_seconds)
            except (TimeoutError, trio.TooSlowError):
                return http_error(408, "request body not received in time", clause=None)
            if message["type"] != "http.request":
                return None  # http.disconnect
            chunk = bytes(message.get("body") or b"")
            size += len(chunk)
            if size > most:
                return http_error(413, f"body larger than {most} bytes", clause=None)
            chunks.append(chunk)
            more = bool(message.get("more_body"))
        body = b"".join(chunks)
    return RequestReady(endpoint=endpoint, query=query_text, headers=headers, body=body, last=False)


def error_messages(err: HttpError) -> list[Message]:
    """The ASGI messages of a refusal (its status, headers and body)."""
    return [
        {"type": "http.response.start", "status": err.status, "headers": list(err.headers)},
        {"type": "http.response.body", "body": err.body, "more_body": False},
    ]


class AsgiStream:
    """What :mod:`mcp_ref.trio.http.endpoint` writes to and reads from, over ASGI
    (module docstring): the duck type of an :class:`~mcp_ref.trio.http.common.H11Stream`
    that the endpoints use (``send``, ``receive_some``, ``conn``).

    Args:
        send: a trio-awaitable function sending one ASGI message (the ASGI server's
            ``send``, or its bridge from trio).
        gone: set when the client has left (its ``http.disconnect``).
    """

    def __init__(self, send: Send, gone: trio.Event) -> None:
        self._send = send
        self.gone = gone
        # Never fed: its peer stays IDLE with no pipelined bytes, so wait_change waits in
        # receive_some (below) until the client leaves.
        self.conn = h11.Connection(h11.SERVER)
        self.received = 0
        self.started = False
        """A response head was sent."""
        self.finished = False
        """The response's last body message was sent."""

    async def receive_some(self) -> bytes:
        """Wait until the client leaves; then ``b""`` (there is nothing else to read:
        the body was read whole before the endpoint ran)."""
        await self.gone.wait()
        return b""

    async def send(self, *events: Any) -> None:
        """Send h11 events (a response head, its data, its end) as ASGI messages; a
        ``Data`` just before the ``EndOfMessage`` goes in the same message.

        Raises:
            trio.BrokenResourceError: the ASGI server refused a message (the client
                left); the stream sends nothing more.
        """
        out: list[Message] = []
        for event in events:
            if isinstance(event, h11.Response):
                head = [(k, v) for k, v in event.headers if k not in _HOP_BY_HOP]
                out.append(
                    {"type": "http.response.start", "status": event.status_code, "headers": head}
                )
            elif isinstance(event, h11.Data):
                out.append(
                    {"type": "http.response.body", "body": bytes(event.data), "more_body": True}
                )
            elif isinstance(event, h11.EndOfMessage):
                if out and out[-1]["type"] == "http.response.body":
                    out[-1]["more_body"] = False
                else:
                    out.append({"type": "http.response.body", "body": b"", "more_body": False})
        for message in out:
            await self.send_message(message)

    async def send_message(self, message: Message) -> None:
        """Send one ASGI message, keeping track of the response's state.

        Raises:
            trio.BrokenResourceError: the ASGI server refused it, or the response
                was already finished.
        """
        if self.finished:
            raise trio.BrokenResourceError("the ASGI response is finished")
        if message["type"] == "http.response.start":
            self.started = True
        elif not message.get("more_body"):
            self.finished = True
        try:
            await self._send(message)
        except (OSError, RuntimeError) as exc:  # the client left (servers differ)
            self.finished = True
            self.gone.set()
            raise trio.BrokenResourceError(str(exc)) from exc

    async def finish(self) -> None:
        """End the response if it began and was not ended (never raises)."""
        if self.started and not self.finished:
            try:
                await self.send_message({"type": "http.response.body", "body": b""})
            except trio.BrokenResourceError:
                pass

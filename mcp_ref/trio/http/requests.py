"""One request of the Streamable HTTP server (:mod:`.server`): its headers, body and
refusal, and the server's settings (:class:`ServerConfig`).

Theory of operation
-------------------
A request's headers become a :class:`RequestHeaders`: the list h11 parsed plus a *memo*
shared by every request with the same target and headers (``Content-Length`` aside).  The
header rules of :mod:`mcp_ref._http` are pure functions of those headers and of the
server's fixed settings, so each is computed once per header set (:meth:`RequestHeaders.rule`)
instead of once per request.  A rule that fails raises :class:`Refused`, carrying the
:class:`~mcp_ref._http.HttpError` to answer with; :func:`send_error` writes it.
"""

from __future__ import annotations

import http
from collections.abc import Callable, Collection
from typing import Any, Final, TypeVar

import attrs
import h11
import trio

from ... import _http as rules
from ..._http import HttpError, HttpLimits, http_error
from ..._http_messages import MessageInfo, read_post_body
from ..._methods import SUPPORTED_VERSIONS
from .common import CONNECTION_CLOSE, H11Stream

__all__ = [
    "Refused",
    "RequestHeaders",
    "ServerConfig",
    "gone",
    "header",
    "headers_of",
    "messages_of",
    "read_body",
    "send_error",
    "send_simple",
    "version_of",
]

_T = TypeVar("_T")

_MAX_MEMOS: Final = 256


@attrs.frozen(kw_only=True)
class ServerConfig:
    """One server's fixed settings (see :func:`~.server.serve_http` for each)."""

    path: str
    """The MCP endpoint's path, e.g. ``"/mcp"``."""
    json_response: bool
    """Answer requests with one JSON body instead of an SSE stream."""
    stateless: bool
    """No sessions: each POST gets a session of its own."""
    enable_get_stream: bool
    """Offer the standalone GET stream (else GET gets 405)."""
    allowed_origins: Collection[str]
    """``Origin`` patterns (:func:`mcp_ref._http.check_origin`)."""
    allowed_hosts: Collection[str]
    """``Host`` patterns (:func:`mcp_ref._http.check_host`)."""
    limits: HttpLimits
    """The bounds."""
    legacy_sse: bool
    """Host the 2024-11-05 endpoints too."""
    legacy_sse_path: str
    """Path of the 2024-11-05 SSE endpoint (GET)."""
    legacy_messages_path: str
    """Path of the 2024-11-05 message endpoint (POST)."""
    retry_ms: int
    """The ``retry`` field of priming events, in milliseconds."""


class RequestHeaders(list[tuple[bytes, bytes]]):
    """One request's headers (lowercase names), plus ``memo``: the outcome of each
    header rule for this exact target and header set, shared with every later request
    that repeats them (a client sends the same headers each time; only
    ``Content-Length`` changes, so it is not part of the set and is checked anew).

    ``size`` is the head's size in bytes as the 431 rule counts it.
    """

    __slots__ = ("memo", "size")

    def __init__(self, items: list[tuple[bytes, bytes]], memo: dict[Any, Any], size: int) -> None:
        super().__init__(items)
        self.memo = memo
        self.size = size

    def rule(self, key: Any, compute: Callable[[], _T]) -> _T:
        """``compute()``, once per distinct header set (the rules are pure functions of
        the headers and of the server's fixed settings)."""
        memo = self.memo
        try:
            value: _T = memo[key]
        except KeyError:
            value = memo[key] = compute()
        return value


class Refused(Exception):
    """The request is refused with ``error`` (its status, headers and body)."""

    def __init__(self, error: HttpError) -> None:
        super().__init__(error.detail)
        self.error = error


def header(headers: RequestHeaders, name: bytes) -> bytes | None:
    """The value of the header ``name`` (lowercase), or None."""
    for key, value in headers:
        if key == name:
            return value
    return None


def headers_of(req: h11.Request, memos: dict[Any, dict[Any, Any]]) -> RequestHeaders:
    """The request's headers (:class:`RequestHeaders`) with the memo of their header
    set, taken from ``memos`` (the server's; bounded: cleared past ``_MAX_MEMOS``)."""
    items = []
    rest = []
    size = len(req.target)
    # raw_items: the names as sent (h11 lowercases them when iterated, one item at a
    # time through Sequence.__getitem__; lowercasing them here is cheaper).
    for raw_name, value in req.headers.raw_items():
        size += len(raw_name) + len(value) + 4
        name = raw_name.lower()
        if name == rules.CONTENT_LENGTH:
            rest.append((name, value))
        else:
            items.append((name, value))
    key = (req.target, *items)
    memo = memos.get(key)
    if memo is None:
        if len(memos) >= _MAX_MEMOS:
            memos.clear()
        memo = memos[key] = {}
    items.extend(rest)
    return RequestHeaders(items, memo, size)


async def read_body(h: H11Stream, headers: RequestHeaders, limits: HttpLimits) -> bytes:
    """The request's body, read whole (after ``100 Continue`` when asked for).

    Raises:
        Refused: a bad ``Content-Type`` or ``Content-Length`` (415, 400, 413), a body
            past ``limits.max_body_bytes`` (413) or not received in
            ``limits.idle_timeout_seconds`` (408).
        trio.BrokenResourceError: the client went away during the body.
    """
    err = headers.rule(
        "content-type", lambda: rules.check_content_type(headers)
    ) or rules.check_content_length(headers, limits.max_body_bytes)
    if err is not None:
        raise Refused(err)
    if h.conn.they_are_waiting_for_100_continue:
        await h.send(h11.InformationalResponse(status_code=100, headers=[]))
    chunks: list[bytes] = []
    size = 0

    def add(event: Any) -> bool:
        """Take one body event; True at its end."""
        nonlocal size
        if isinstance(event, h11.Data):
            chunks.append(event.data)
            size += len(event.data)
            if size > limits.max_body_bytes:
                raise Refused(
                    http_error(413, f"body larger than {limits.max_body_bytes} bytes", clause=None)
                )
            return False
        if isinstance(event, h11.EndOfMessage):
            return True
        raise trio.BrokenResourceError("the client went away during the body")

    # Usually the body came with the head: no waiting, no timer.
    while (event := h.conn.next_event()) is not h11.NEED_DATA:
        if add(event):
            return _joined(chunks)
    with trio.move_on_after(limits.idle_timeout_seconds) as scope:
        while not add(await h.next_event()):
            pass
        return _joined(chunks)
    assert scope.cancelled_caught
    raise Refused(http_error(408, "request body not received in time", clause=None))


def _joined(chunks: list[bytes]) -> bytes:
    """The body from its chunks (h11 gives ``bytes`` or ``bytearray``; no copy of one
    ``bytes`` chunk)."""
    if len(chunks) == 1 and type(chunks[0]) is bytes:
        return chunks[0]
    return b"".join(chunks)


def messages_of(body: bytes, *, max_items: int = 64) -> list[MessageInfo]:
    """Kind, id and method of each message of a POST body, as the session's connection
    will read them (:func:`mcp_ref._http_messages.read_post_body`).

    Args:
        body: the POST body.
        max_items: the most messages a batch may hold.

    Raises:
        Refused: 400 for a body that is not a message or a batch of them, with the
            JSON-RPC error body the connection would have sent (-32700, -32600 or
            -32602; the request's id wherever it can be read).
    """
    # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.4
    # "The body of the POST request MUST be a single JSON-RPC request, notification, or
    # response."
    infos = read_post_body(body, max_items=max_items)
    if isinstance(infos, HttpError):
        raise Refused(infos)
    return infos


def version_of(headers: RequestHeaders) -> str:
    """The protocol version the request names (``MCP-Protocol-Version``; 2025-03-26
    without it).

    Raises:
        Refused: 400 for an unsupported version.
    """
    # Spec: 2025-06-18/basic/transports#protocol-version-header.4
    # "If the server receives a request with an invalid or unsupported `MCP-Protocol-Version`, it
    # MUST respond with `400 Bad Request`."
    # Spec: 2025-06-18/basic/transports#protocol-version-header.3
    # "For backwards compatibility, if the server does not receive an `MCP-Protocol-Version` header,
    # and has no other way to identify the version - for example, by relying on the protocol version
    # negotiated during initialization - the server SHOULD assume protocol version `2025-03-26`."
    # Any supported version passes: we do not hold the client to the negotiated one.
    version = headers.rule(
        "version", lambda: rules.check_protocol_version(headers, None, SUPPORTED_VERSIONS)
    )
    if isinstance(version, HttpError):
        raise Refused(version)
    return version


def gone() -> HttpError:
    """404 for a session that ended."""
    # Spec: 2025-06-18/basic/transports#session-management.6
    # "The server MAY terminate the session at any time, after which it MUST respond to requests
    # containing that session ID with HTTP 404 Not Found."
    return http_error(
        404,
        "session not found (terminated)",
        clause="2025-06-18/basic/transports#session-management.6",
    )


def _reason(status: int) -> bytes:
    try:
        return http.HTTPStatus(status).phrase.encode("ascii")
    except ValueError:
        return b""


async def send_simple(
    h: H11Stream, status: int, headers: list[tuple[bytes, bytes]], last: bool
) -> None:
    """Write a response without body (``Connection: close`` when ``last``)."""
    if last:
        headers = [*headers, CONNECTION_CLOSE]
    await h.send(
        h11.Response(status_code=status, headers=headers, reason=_reason(status)),
        h11.EndOfMessage(),
    )


async def send_error(h: H11Stream, err: HttpError, *, close: bool) -> None:
    """Write the response of ``err`` (``Connection: close`` when ``close``)."""
    headers = list(err.headers)
    if close:
        headers.append(CONNECTION_CLOSE)
    response = h11.Response(status_code=err.status, headers=headers, reason=err.reason)
    if err.body:
        await h.send(response, h11.Data(data=err.body), h11.EndOfMessage())
    else:
        await h.send(response, h11.EndOfMessage())

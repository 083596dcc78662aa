"""The Streamable HTTP server's decisions about one request, sans-IO.

Theory of operation
-------------------
A driver parses HTTP with h11 (sans-IO too) and, for each request, asks this module
what to do with it; the answer is either where the request goes or the
:class:`~mcp_ref._http.HttpError` to refuse it with (status, headers, body, and the spec
clause that decided it).  No sockets, no clock, no randomness: what needs I/O (reading
the body, waiting for a session, writing the answer) is the driver's.

One request goes through these steps, each a function here:

1. :func:`request_headers`: the headers h11 parsed, lowercased, with a *memo* shared by
   every request with the same target and headers (``Content-Length`` aside): the
   header rules are pure functions of the headers and of the server's fixed settings
   (:class:`ServerConfig`), so each is computed once per header set.
2. :func:`route_request`: head size (431), ``Origin`` and ``Host`` (403), then the path
   and method: the :class:`Endpoint` that answers it (or 404, 405, 406).
3. For a POST, :func:`check_body_headers` before the body is read (415, 400, 413), and
   :func:`read_messages` once it is: what the body holds, read by the connection's own
   decoder (:mod:`mcp_ref._http_messages`), or the JSON-RPC error to answer with.
4. :func:`request_version` (the ``MCP-Protocol-Version`` rules) and
   :func:`session_named` (the ``Mcp-Session-Id`` rules) where the endpoint needs them;
   :func:`check_batch`, the HTTP server's one rule on JSON-RPC batches (which the
   connection core's batch stage can later replace).

The logical streams a session's messages go to are :mod:`mcp_ref._http_streams`.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Collection, Container
from typing import Any, Final, TypeVar
from urllib.parse import parse_qs

import attrs
import h11

from . import _http as rules
from ._batch import refuse_batch
from ._http import HttpError, HttpLimits, http_error
from ._http_messages import MessageInfo, read_post_body
from ._methods import BATCH_VERSIONS, SUPPORTED_VERSIONS
from .events import RequestId

__all__ = [
    "STATELESS_INIT_ID",
    "Endpoint",
    "RequestHeaders",
    "ServerConfig",
    "check_batch",
    "check_body_headers",
    "check_initialize_alone",
    "gone",
    "header",
    "legacy_session_id",
    "read_messages",
    "request_headers",
    "request_version",
    "route_request",
    "session_named",
    "stateless_preamble",
]

_T = TypeVar("_T")

_MAX_MEMOS: Final = 256
"""Header sets whose rule outcomes are remembered (then the memo starts afresh)."""


@attrs.frozen(kw_only=True)
class ServerConfig:
    """One server's fixed settings (see :func:`mcp_ref.trio.serve_http` for each)."""

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


def header(headers: RequestHeaders, name: bytes) -> bytes | None:
    """The value of the header ``name`` (lowercase), or None."""
    for key, value in headers:
        if key == name:
            return value
    return None


def request_headers(req: h11.Request, memos: dict[Any, dict[Any, Any]]) -> RequestHeaders:
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


class Endpoint(enum.Enum):
    """Which answer a request gets (:func:`route_request`)."""

    POST = "POST to the MCP endpoint"
    GET = "GET of the MCP endpoint (the standalone stream, or a resumption)"
    DELETE = "DELETE of the MCP endpoint (the end of a session)"
    LEGACY_GET = "GET of the 2024-11-05 SSE endpoint (a new session)"
    LEGACY_POST = "POST to the 2024-11-05 message endpoint"


def route_request(
    cfg: ServerConfig, method: bytes, target: bytes, headers: RequestHeaders
) -> tuple[Endpoint, str] | HttpError:
    """Where a request goes, with the query of its target: ``(endpoint, query)``; or
    the refusal (431 head too large, 403 ``Origin`` or ``Host``, 404 no such path, 405
    method, 406 ``Accept``).

    Source: 2025-06-18/basic/transports#security-warning (Origin),
    #sending-messages-to-the-server.2 (Accept of a POST),
    #listening-for-messages-from-the-server (GET), #session-management (DELETE);
    2024-11-05/basic/transports "HTTP with SSE".
    """
    _, path, query = headers.rule("target", lambda: rules.split_target(target))
    # h11 bounds a head still arriving; one that came whole is measured here.
    most = cfg.limits.max_header_bytes
    if headers.size > most:
        return http_error(431, f"request head larger than {most} bytes", clause=None)
    err = headers.rule(
        "origin, host",
        lambda: (
            rules.check_origin(headers, cfg.allowed_origins)
            or rules.check_host(headers, cfg.allowed_hosts, target=target)
        ),
    )
    if err is not None:
        return err
    if path == cfg.path:
        if method == b"POST":
            err = headers.rule("accept POST", lambda: rules.check_accept(headers, b"POST"))
            return err or (Endpoint.POST, query)
        if method == b"GET":
            # Spec: 2025-06-18/basic/transports#listening-for-messages-from-the-server.3
            # "The server MUST either return `Content-Type: text/event-stream` in response to this
            # HTTP GET, or else return HTTP 405 Method Not Allowed, indicating that the server does
            # not offer an SSE stream at this endpoint."
            # 405 (with its Allow header) when the GET stream is off; else an SSE stream.
            err = rules.check_method(
                b"GET", allow_get=cfg.enable_get_stream, allow_delete=not cfg.stateless
            ) or rules.check_accept(headers, b"GET")
            return err or (Endpoint.GET, query)
        # Any other method is refused here, and DELETE when the server keeps no sessions.
        err = rules.check_method(
            method, allow_get=cfg.enable_get_stream, allow_delete=not cfg.stateless
        )
        return err or (Endpoint.DELETE, query)
    if cfg.legacy_sse and path == cfg.legacy_sse_path:
        if method != b"GET":
            return http_error(
                405,
                "the 2024-11-05 SSE endpoint takes GET only",
                clause=None,
                headers=[(b"allow", b"GET")],
            )
        return Endpoint.LEGACY_GET, query
    if cfg.legacy_sse and path == cfg.legacy_messages_path:
        if method != b"POST":
            return http_error(
                405,
                "the 2024-11-05 message endpoint takes POST only",
                clause=None,
                headers=[(b"allow", b"POST")],
            )
        return Endpoint.LEGACY_POST, query
    return http_error(404, f"no MCP endpoint at {path}", clause=None)


def check_body_headers(headers: RequestHeaders, limits: HttpLimits) -> HttpError | None:
    """Before a POST's body is read: 415 for a ``Content-Type`` other than JSON, 400 or
    413 for a bad or too large ``Content-Length`` (``limits.max_body_bytes``)."""
    return headers.rule(
        "content-type", lambda: rules.check_content_type(headers)
    ) or rules.check_content_length(headers, limits.max_body_bytes)


def read_messages(body: bytes, *, max_items: int = 64) -> list[MessageInfo] | HttpError:
    """Kind, id and method of each message of a POST body, as the session's connection
    will read them (:func:`mcp_ref._http_messages.read_post_body`); or 400 for a body
    that is not a message or a batch of at most ``max_items`` of them, with the JSON-RPC
    error body the connection would have sent (-32700, -32600 or -32602; the request's
    id wherever it can be read)."""
    # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.4
    # "The body of the POST request MUST be a single JSON-RPC request, notification, or
    # response."
    return read_post_body(body, max_items=max_items)


def request_version(headers: RequestHeaders) -> str | HttpError:
    """The protocol version the request names (``MCP-Protocol-Version``; 2025-03-26
    without it), or 400 for an unsupported one."""
    # Spec: 2025-06-18/basic/transports#protocol-version-header.4
    # "If the server receives a request with an invalid or unsupported `MCP-Protocol-Version`, it
    # MUST respond with `400 Bad Request`."
    # Spec: 2025-06-18/basic/transports#protocol-version-header.3
    # "For backwards compatibility, if the server does not receive an `MCP-Protocol-Version` header,
    # and has no other way to identify the version - for example, by relying on the protocol version
    # negotiated during initialization - the server SHOULD assume protocol version `2025-03-26`."
    # Any supported version passes: we do not hold the client to the negotiated one.
    version: str | HttpError = headers.rule(
        "version", lambda: rules.check_protocol_version(headers, None, SUPPORTED_VERSIONS)
    )
    return version


def session_named(headers: RequestHeaders, live: Container[str]) -> str | HttpError:
    """The id of the live session (in ``live``) that the request's ``Mcp-Session-Id``
    names; 400 without the header (or a malformed one), 404 for an unknown or ended
    session (:func:`mcp_ref._http.check_session`)."""
    known = headers.memo.get("session")
    if known is not None and known in live:
        return str(known)  # a well-formed id seen before, of a live session
    got = rules.check_session(headers, is_initialize=False, active_sessions=live)
    if isinstance(got, HttpError):
        return got
    assert got is not None
    headers.memo["session"] = got
    return got


def legacy_session_id(query: str) -> str | HttpError:
    """The ``session_id`` query parameter of a POST to the 2024-11-05 message endpoint,
    or 400 without it."""
    values = parse_qs(query).get("session_id") or [""]
    if not values[0]:
        return http_error(400, "missing session_id", clause=None)
    return values[0]


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


def check_initialize_alone(infos: list[MessageInfo]) -> HttpError | None:
    """400 for a batch that holds ``initialize``: it must be sent alone."""
    # Spec: 2025-06-18/basic/lifecycle#initialization.1
    # "The initialization phase MUST be the first interaction between client and server."
    if len(infos) > 1 and any(m.method == "initialize" for m in infos):
        return http_error(
            400,
            "initialize must be sent alone",
            clause="2025-06-18/basic/lifecycle#initialization.1",
        )
    return None


STATELESS_INIT_ID: Final[RequestId] = "mcp-ref:stateless-initialize"
"""The id of the synthetic ``initialize`` of a stateless session (its answer is
dropped)."""


def stateless_preamble(version: str) -> list[bytes]:
    """The messages that bring a stateless session (one POST's) to the operating state
    before the POST's own: a synthetic ``initialize`` (id :data:`STATELESS_INIT_ID`,
    protocol ``version``, no client capabilities, so the server never asks the client
    for anything) and ``notifications/initialized``.  The core's lifecycle then holds
    unchanged, and the request is handled as the first of an operating session."""
    init = {
        "jsonrpc": "2.0",
        "id": STATELESS_INIT_ID,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "stateless-http-client", "version": "0"},
        },
    }
    return [
        json.dumps(init, separators=(",", ":")).encode(),
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
    ]


def check_batch(
    version: str | None, size: int, max_requests_in_flight: int | None
) -> HttpError | None:
    """The refusal of a POSTed batch that the session's connection would refuse whole
    (with id null, which would answer none of the POST's requests): outside
    2025-03-26, or larger than the connection takes (``max_requests_in_flight``;
    None: not known yet).  None when the batch may go to the session.

    The rules are the connection's own (:func:`mcp_ref._batch.refuse_batch`); this
    turns its refusal into the HTTP answer.

    Source: 2025-03-26/basic/transports (batches); 2025-06-18/basic#messages (none
    from 2025-06-18 on).
    """
    refusal = refuse_batch(size, version, max_requests_in_flight or size)
    if refusal is None:
        return None
    # A batch outside 2025-03-26 is the transport's 400 too.
    clause = (
        "2025-06-18/basic/transports#sending-messages-to-the-server.4"
        if version not in BATCH_VERSIONS
        else None
    )
    return http_error(400, refusal.message, clause=clause)

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
   and method: the :class:`Endpoint` that answers it (or 404, 405, 406; a modern
   client's GET or DELETE, 405: :func:`modern_client`).
3. For a POST, :func:`check_body_headers` before the body is read (415, 400, 413); what
   the body then means is :mod:`mcp_ref._http_post`'s.
4. :func:`session_request`: the session the ``Mcp-Session-Id`` names
   (:func:`session_named`), then the ``MCP-Protocol-Version`` rules
   (:func:`request_version`), for every request but ``initialize``;
   :func:`legacy_session` for a POST to the 2024-11-05 message endpoint.

:func:`server_config` gives a server's settings from the address it binds.  The logical
streams a session's messages go to are :mod:`mcp_ref._http_streams`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Final, Protocol, TypeVar
from urllib.parse import parse_qs

import attrs
import h11

from . import _http as rules
from ._http import HttpError, HttpLimits, http_error
from ._http_cors import preflight, with_cors_origins
from ._http_peers import allowed_for, http_url
from ._modern import MODERN_VERSIONS
from ._versions import SUPPORTED_VERSIONS

__all__ = [
    "CLOSE_WAIT_SECONDS",
    "Endpoint",
    "Kinded",
    "RequestHeaders",
    "ServerConfig",
    "check_body_headers",
    "gone",
    "header",
    "headers_from_items",
    "legacy_session",
    "modern_client",
    "request_headers",
    "request_version",
    "route_request",
    "server_config",
    "server_urls",
    "session_named",
    "session_request",
]

_T = TypeVar("_T")

CLOSE_WAIT_SECONDS: Final = 1.0
"""After a graceful stop's grace, seconds the connections get to write what they hold
(the error answers, the ends of the SSE responses) before they are cancelled."""

_MAX_MEMOS: Final = 256
"""Header sets whose rule outcomes are remembered (then the memo starts afresh)."""


def _endpoint_path(_inst: object, attr: attrs.Attribute[str], value: str) -> None:
    if not value.startswith("/"):
        raise ValueError(f"{attr.name} must start with /, not {value!r}")


@attrs.frozen(kw_only=True)
class ServerConfig:
    """One server's fixed settings (see :func:`mcp_ref.trio.serve_http` for each, and
    :func:`server_config` for the defaults that depend on the address bound).

    Raises:
        ValueError: a path that does not start with ``/``.
    """

    path: str = attrs.field(default="/mcp", validator=_endpoint_path)
    """The MCP endpoint's path, e.g. ``"/mcp"``."""
    json_response: bool = False
    """Answer requests with one JSON body instead of an SSE stream."""
    stateless: bool = False
    """No sessions: each POST gets a session of its own."""
    enable_get_stream: bool = True
    """Offer the standalone GET stream (else GET gets 405)."""
    allowed_origins: Collection[str] = rules.LOCALHOST_ORIGINS
    """``Origin`` patterns (:func:`mcp_ref._http.check_origin`)."""
    allowed_hosts: Collection[str] = rules.LOCALHOST_HOSTS
    """``Host`` patterns (:func:`mcp_ref._http.check_host`)."""
    limits: HttpLimits = attrs.Factory(HttpLimits)
    """The bounds."""
    legacy_sse: bool = True
    """Host the 2024-11-05 endpoints too."""
    legacy_sse_path: str = attrs.field(default="/sse", validator=_endpoint_path)
    """Path of the 2024-11-05 SSE endpoint (GET)."""
    legacy_messages_path: str = attrs.field(default="/messages", validator=_endpoint_path)
    """Path of the 2024-11-05 message endpoint (POST)."""
    retry_ms: int = 1000
    """The ``retry`` field of priming events, in milliseconds."""
    cors_origins: Collection[str] = ()
    """CORS origins (:mod:`mcp_ref._http_cors`; each is an allowed origin too)."""
    access_log: bool = False
    """Log a line per request (:mod:`mcp_ref._http_access`)."""


def server_config(
    host: str,
    *,
    allowed_origins: Collection[str] | None = None,
    allowed_hosts: Collection[str] | None = None,
    limits: HttpLimits | None = None,
    **options: Any,
) -> ServerConfig:
    """The settings of a server bound to ``host``: ``Origin`` and ``Host`` patterns
    default by the address (:func:`~mcp_ref._http_peers.allowed_for`), ``limits`` to
    :class:`~mcp_ref._http.HttpLimits`'s, the other ``options`` to
    :class:`ServerConfig`'s; a stateless server offers no GET stream and no 2024-11-05
    endpoints (both need a session that outlives a POST).

    Raises:
        ValueError: a path that does not start with ``/``.
        TypeError: an option :class:`ServerConfig` does not have.
    """
    origins, hosts = allowed_for(host, allowed_origins, allowed_hosts)
    origins = with_cors_origins(origins, options.get("cors_origins") or ())
    cfg = ServerConfig(
        allowed_origins=origins, allowed_hosts=hosts, limits=limits or HttpLimits(), **options
    )
    if cfg.stateless:
        cfg = attrs.evolve(cfg, enable_get_stream=False, legacy_sse=False)
    return cfg


def server_urls(cfg: ServerConfig, host: str, port: int, *, tls: bool) -> tuple[str, str | None]:
    """``(the MCP endpoint's URL, the 2024-11-05 SSE endpoint's or None)`` of a server
    bound to ``host`` and ``port`` (:func:`~mcp_ref._http_peers.http_url`; ``https``
    when ``tls``)."""
    origin = http_url(host, port, "")
    if tls:
        origin = "https" + origin.removeprefix("http")
    return origin + cfg.path, origin + cfg.legacy_sse_path if cfg.legacy_sse else None


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
    set, taken from ``memos`` (the server's; bounded: cleared past ``_MAX_MEMOS``):
    :func:`headers_from_items` over h11's raw items (the names as sent: h11 lowercases
    them when iterated, one item at a time through ``Sequence.__getitem__``; lowercasing
    them there is cheaper)."""
    return headers_from_items(req.target, req.headers.raw_items(), memos)


def headers_from_items(
    target: bytes, raw_items: Iterable[tuple[bytes, bytes]], memos: dict[Any, dict[Any, Any]]
) -> RequestHeaders:
    """One request's :class:`RequestHeaders`, from whatever parsed its head: the names
    lowercased; ``Content-Length`` kept out of the memo key (it changes from request to
    request); the head's size counted as the 431 rule counts it (the target, plus each
    name and value and 4 bytes for ``": "`` and CRLF); the memo of the header set taken
    from ``memos`` (the server's, bounded: cleared past ``_MAX_MEMOS`` sets).

    Args:
        target: the request target as sent (path and query), e.g. ``b"/mcp"``.
        raw_items: the ``(name, value)`` pairs in order, names in any case.
        memos: the server's memos, keyed by target and header set; updated here.

    Source: 2025-06-18/basic/transports#streamable-http (the headers the rules read).
    """
    items = []
    rest = []
    size = len(target)
    for raw_name, value in raw_items:
        size += len(raw_name) + len(value) + 4
        name = raw_name.lower()
        if name == rules.CONTENT_LENGTH:
            rest.append((name, value))
        else:
            items.append((name, value))
    key = (target, *items)
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
    if method == b"OPTIONS" and cfg.cors_origins:  # a CORS preflight (_http_cors)
        err = preflight(headers, cfg.cors_origins, cfg.allowed_origins)
        if err is not None and path in (cfg.path, cfg.legacy_sse_path, cfg.legacy_messages_path):
            return err
    # Spec: 2026-07-28/basic/transports/streamable-http#streamable-http.1
    # "The server MUST provide a single HTTP endpoint path (hereafter referred to as the MCP
    # endpoint) that supports POST."
    if path == cfg.path:
        if method != b"POST" and headers.rule("modern", lambda: modern_client(headers)):
            # Spec: 2026-07-28/basic/transports/streamable-http#earlier-streamable-http-revisions.1
            # "A server that supports only this revision and receives such traffic from an
            # older client SHOULD respond as follows:"
            # A modern client has no GET stream and no session to DELETE: 405, as a
            # modern-only server answers (its Allow: POST).
            refused = rules.check_method(method, allow_get=False, allow_delete=False)
            assert refused is not None  # (anything but POST)
            return refused
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
    if cfg.legacy_sse and path in (cfg.legacy_sse_path, cfg.legacy_messages_path):
        # Source: 2024-11-05/basic/transports "HTTP with SSE": a GET opens the SSE
        # stream, the messages are POSTed to the endpoint it names; one method each.
        if path == cfg.legacy_sse_path:
            endpoint, name, takes = Endpoint.LEGACY_GET, "SSE", b"GET"
        else:
            endpoint, name, takes = Endpoint.LEGACY_POST, "message", b"POST"
        if method != takes:
            detail = f"the 2024-11-05 {name} endpoint takes {takes.decode()} only"
            return http_error(405, detail, clause=None, headers=[(b"allow", takes)])
        return endpoint, query
    return http_error(404, f"no MCP endpoint at {path}", clause=None)


def modern_client(headers: RequestHeaders) -> bool:
    """Whether the request's ``MCP-Protocol-Version`` names a modern (2026-07-28) version:
    the client speaks the era without sessions (memoized per header set as
    ``"modern"``).

    Source: 2026-07-28/basic/transports/streamable-http#protocol-version-header.1 (every
    POST carries it).
    """
    version = header(headers, b"mcp-protocol-version")
    return version is not None and version.decode("latin-1") in MODERN_VERSIONS


def check_body_headers(headers: RequestHeaders, limits: HttpLimits) -> HttpError | None:
    """Before a POST's body is read: 415 for a ``Content-Type`` other than JSON, 400 or
    413 for a bad or too large ``Content-Length`` (``limits.max_body_bytes``)."""
    return headers.rule(
        "content-type", lambda: rules.check_content_type(headers)
    ) or rules.check_content_length(headers, limits.max_body_bytes)


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


class Kinded(Protocol):
    """What :func:`session_named` reads of a session (the driver's session object)."""

    @property
    def kind(self) -> str:
        """``"streamable"``, ``"stateless"`` or ``"legacy"``
        (:data:`~mcp_ref._http_streams.SessionKind`)."""


K = TypeVar("K", bound=Kinded)


def session_named(headers: RequestHeaders, live: Mapping[str, K]) -> K | HttpError:
    """The live Streamable HTTP session (in ``live``, by id) that the request's
    ``Mcp-Session-Id`` names; 400 without the header (or a malformed one), 404 for an
    unknown or ended session (:func:`mcp_ref._http.check_session`), or one of another
    kind (a 2024-11-05 session is reached through its message endpoint only)."""
    known = headers.memo.get("session")
    if known is None:
        got = rules.check_session(headers, is_initialize=False, active_sessions=live)
        if isinstance(got, HttpError):
            return got
        assert got is not None
        headers.memo["session"] = known = got  # well-formed: checked once per header set
    sess = live.get(known)
    if sess is None or sess.kind != "streamable":
        return gone()
    return sess


def session_request(headers: RequestHeaders, live: Mapping[str, K]) -> K | HttpError:
    """The session of a request to the MCP endpoint that is not ``initialize``
    (:func:`session_named`), once its ``MCP-Protocol-Version`` passes too
    (:func:`request_version`); the session rules' refusal comes first."""
    sess = session_named(headers, live)
    if isinstance(sess, HttpError):
        return sess
    version = request_version(headers)
    return version if isinstance(version, HttpError) else sess


def legacy_session(query: str, live: Mapping[str, K]) -> K | HttpError:
    """The 2024-11-05 session (in ``live``, by id) that the ``session_id`` query
    parameter of a POST to the message endpoint names; 400 without it, 404 for an
    unknown or ended session, or one of another kind.

    Source: 2024-11-05/basic/transports "HTTP with SSE" (the ``endpoint`` event names
    the URL, query included, that the client POSTs to)."""
    values = parse_qs(query).get("session_id") or [""]
    if not values[0]:
        return http_error(400, "missing session_id", clause=None)
    sess = live.get(values[0])
    if sess is None or sess.kind != "legacy":
        return http_error(404, "session not found", clause=None)
    return sess


def gone() -> HttpError:
    """404 for a session that ended (or never was one of the kind asked for)."""
    # Spec: 2025-06-18/basic/transports#session-management.6
    # "The server MAY terminate the session at any time, after which it MUST respond to requests
    # containing that session ID with HTTP 404 Not Found."
    return http_error(
        404,
        "session not found (terminated)",
        clause="2025-06-18/basic/transports#session-management.6",
    )

"""The rules of MCP's HTTP transports, as pure functions over header lists.

Theory of operation
-------------------
Streamable HTTP (2025-06-18/basic/transports#streamable-http) puts MCP on one HTTP
endpoint: the client POSTs each JSON-RPC message; the server answers a notification or
response with ``202 Accepted`` and a request with either one JSON body or an SSE stream;
a GET opens an optional server-to-client SSE stream; ``Mcp-Session-Id`` ties requests
to a session, ``MCP-Protocol-Version`` names the negotiated version, and SSE event ids
with ``Last-Event-ID`` let a broken stream resume.

This module holds those rules and nothing else: no sockets, no h11, no clock, no
randomness.  A driver parses HTTP with h11 and hands us what h11 gives it -- the method
and target as bytes, headers as ``[(name, value), ...]`` with lowercased byte names --
and asks, one rule at a time, whether the request may go on.  Each ``check_*`` returns
``None`` when the request passes, or an :class:`HttpError`: the status, the headers and
the body of the response the driver should send, plus the spec clause that decided it.
The driver sends it as it is::

    err = check_origin(h, origins) or check_host(h, hosts) or check_accept(h, method)
    if err is not None:
        send(h11.Response(status_code=err.status, reason=err.reason, headers=err.headers))
        send(h11.Data(data=err.body)); ...

Suggested order for a server: :func:`check_method`, :func:`check_origin`,
:func:`check_host`, :func:`check_accept`, then for POST :func:`check_content_type` and
:func:`check_content_length`, then :func:`check_session` and
:func:`check_protocol_version` (once the body showed whether it is ``initialize``), and
:func:`post_reply` to choose the answer.

Status codes, and why (the spec fixes some; the others are our choice, said here once):

* 400 Bad Request: unsupported ``MCP-Protocol-Version`` (fixed by the spec); missing
  session id (spec: SHOULD); malformed session id, ``Last-Event-ID`` or header repeated.
* 403 Forbidden: an ``Origin`` not allowed (2025-11-25 fixes 403); a ``Host``, or the
  host of an absolute-form request target, not allowed (our choice: the same
  DNS-rebinding refusal).
* 404 Not Found: a session id that is unknown or terminated (fixed by the spec).
* 405 Method Not Allowed: GET when the server offers no GET stream, DELETE when it does
  not let clients end sessions (both named by the spec), any other method (our choice).
* 406 Not Acceptable: an ``Accept`` header that does not list what the spec requires.
* 409 Conflict: ``Last-Event-ID`` names events the :class:`EventStore` no longer holds
  (our choice; 404 would tell the client its *session* is gone, which is false).
* 413 Content Too Large, 415 Unsupported Media Type: body too big, or not JSON.
* 429 Too Many Requests, 503 Service Unavailable: one client's share of the sessions,
  or all of them, in use (:class:`HttpLimits`); both carry ``Retry-After`` in seconds.

Server-sent event ids (:func:`make_event_id`) are ``<stream id>/<seq>``: the stream id
names the SSE stream inside the session, the sequence number is unique across the whole
session, so ids never repeat even if a stream id is reused.

The 2024-11-05 HTTP+SSE transport is covered by :func:`endpoint_event`,
:func:`message_event` and :func:`resolve_endpoint`.
"""

from __future__ import annotations

import enum
import http
import json
import re
from collections import OrderedDict, deque
from collections.abc import Collection, Container, Sequence
from typing import Any, Final
from urllib.parse import urljoin, urlsplit

import attrs

from ._errors import INVALID_REQUEST, LocalProtocolError, RemoteProtocolError
from ._sse import SSEEvent

__all__ = [
    "ACCEPT",
    "CONTENT_LENGTH",
    "CONTENT_TYPE",
    "CONTENT_TYPE_JSON",
    "CONTENT_TYPE_SSE",
    "DEFAULT_PROTOCOL_VERSION",
    "ENDPOINT_EVENT",
    "HOST",
    "HTTP_SERVER_ERROR",
    "LAST_EVENT_ID",
    "LOCALHOST_HOSTS",
    "LOCALHOST_ORIGINS",
    "MAX_SESSION_ID_LENGTH",
    "MCP_PROTOCOL_VERSION",
    "MCP_SESSION_ID",
    "MESSAGE_EVENT",
    "MIN_SESSION_ID_ENTROPY_BYTES",
    "ORIGIN",
    "EventStore",
    "Headers",
    "HttpError",
    "HttpLimits",
    "MessageKind",
    "PostReply",
    "Replay",
    "check_accept",
    "check_content_length",
    "check_content_type",
    "check_host",
    "check_method",
    "check_origin",
    "check_protocol_version",
    "check_session",
    "client_request_headers",
    "endpoint_event",
    "error_response_body",
    "get_session_id",
    "http_error",
    "make_event_id",
    "message_event",
    "new_session_id",
    "parse_event_id",
    "post_reply",
    "resolve_endpoint",
    "response_headers",
    "split_target",
    "validate_session_id",
]

Headers = Sequence[tuple[bytes, bytes]]
"""Headers as h11 gives them: ``(name, value)`` byte pairs, names lowercased."""

# -- names and constants -------------------------------------------------------------

MCP_SESSION_ID: Final = b"mcp-session-id"
"""Session id header. Source: 2025-06-18/basic/transports#session-management.1."""
MCP_PROTOCOL_VERSION: Final = b"mcp-protocol-version"
"""Protocol version header. Source: 2025-06-18/basic/transports#protocol-version-header.1."""
LAST_EVENT_ID: Final = b"last-event-id"
"""Resumption header. Source: 2025-06-18/basic/transports#resumability-and-redelivery.3."""
ACCEPT: Final = b"accept"
CONTENT_TYPE: Final = b"content-type"
CONTENT_LENGTH: Final = b"content-length"
ORIGIN: Final = b"origin"
HOST: Final = b"host"

CONTENT_TYPE_JSON: Final = b"application/json"
"""Media type of a JSON body. Source: 2025-06-18/basic/transports#sending-messages-to-the-server.8."""
CONTENT_TYPE_SSE: Final = b"text/event-stream"
"""Media type of an SSE stream. Source: 2025-06-18/basic/transports#sending-messages-to-the-server.8."""

DEFAULT_PROTOCOL_VERSION: Final = "2025-03-26"
"""The version a server assumes when a request has no ``MCP-Protocol-Version`` header and
nothing else tells it. Source: 2025-06-18/basic/transports#protocol-version-header.3."""

HTTP_SERVER_ERROR: Final = -32000
"""JSON-RPC code we put in the body of HTTP errors other than 400 (the start of the
implementation-defined server-error range of JSON-RPC 2.0 section 5.1).  400s carry
-32600 (Invalid Request)."""

LOCALHOST_HOSTS: Final = ("localhost:*", "127.0.0.1:*", "[::1]:*")
"""Default ``Host`` patterns for a server bound to the loopback interface: the three
loopback names, any port.  Source: 2025-06-18/basic/transports#security-warning.2."""
LOCALHOST_ORIGINS: Final = tuple(
    f"{scheme}://{host}" for scheme in ("http", "https") for host in LOCALHOST_HOSTS
)
"""Default ``Origin`` patterns for a loopback server: http and https, the three loopback
names, any port.  Source: 2025-06-18/basic/transports#security-warning.1."""

MIN_SESSION_ID_ENTROPY_BYTES: Final = 16
""":func:`new_session_id` wants at least this many random bytes (128 bits)."""
MAX_SESSION_ID_LENGTH: Final = 1024
"""Longest session id we accept, in characters (a bound; the spec sets none)."""

_MAX_SEQ_DIGITS: Final = 19
_MAX_STREAM_ID_LENGTH: Final = 128
_SEQ_LIMIT: Final = 10**_MAX_SEQ_DIGITS

# -- errors --------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class HttpError:
    """A refusal: the complete HTTP response a driver should send instead of going on.

    Build it with :func:`http_error`.  ``headers`` already holds ``content-type`` (when
    there is a body) and ``content-length``, so the driver sends them unchanged.
    """

    status: int
    """The HTTP status code, e.g. 400."""
    detail: str
    """One line saying what was wrong; also the ``message`` of the JSON-RPC error body."""
    clause: str | None
    """The spec clause (``2025-06-18/basic/transports#...``) behind the refusal, or None
    when the status is our own choice with no clause behind it."""
    headers: tuple[tuple[bytes, bytes], ...]
    """Response headers, lowercased names: content-type, content-length, extras."""
    body: bytes = b""
    """The response body: a JSON-RPC error without ``id``, or empty."""
    code: int | None = None
    """The JSON-RPC error code of ``body`` (None without a body)."""

    @property
    def reason(self) -> bytes:
        """The standard reason phrase for ``status``, e.g. ``b"Bad Request"``."""
        try:
            return http.HTTPStatus(self.status).phrase.encode("ascii")
        except ValueError:
            return b""


def error_response_body(code: int, message: str, id: str | int | None = None) -> bytes:
    """A JSON-RPC error response as compact UTF-8 JSON bytes.

    Args:
        code: the JSON-RPC error code (int).
        message: the error message.
        id: the id of the request it answers; None omits ``id``, as the spec allows for
            HTTP error bodies.

    Raises:
        LocalProtocolError: ``id`` is a bool or ``code`` is not an int.

    Source: 2025-06-18/basic/transports#sending-messages-to-the-server.7 (an error
    response with no id); JSON-RPC 2.0 section 5.1.
    """
    if isinstance(code, bool) or not isinstance(code, int):
        raise LocalProtocolError(f"JSON-RPC error code must be an int, not {code!r}")
    if isinstance(id, bool) or not isinstance(id, str | int | None):
        raise LocalProtocolError(f"JSON-RPC id must be a str or int, not {id!r}")
    obj: dict[str, object] = {"jsonrpc": "2.0"}
    if id is not None:
        obj["id"] = id
    obj["error"] = {"code": code, "message": message}
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def http_error(
    status: int,
    detail: str,
    *,
    clause: str | None,
    code: int | None = None,
    headers: Sequence[tuple[bytes, bytes]] = (),
    body: bool = True,
) -> HttpError:
    """Build an :class:`HttpError` with its JSON-RPC error body and framing headers.

    Args:
        status: HTTP status code (4xx/5xx).
        detail: one-line description, used as the JSON-RPC error message.
        clause: the spec clause id, or None.
        code: JSON-RPC error code of the body; default -32600 for 400, else -32000.
        headers: extra response headers (e.g. ``allow`` for 405).
        body: False for an empty body.

    Source: 2025-06-18/basic/transports#sending-messages-to-the-server.6 (an HTTP error
    status when the server cannot accept the input).
    """
    if code is None:
        code = INVALID_REQUEST if status == 400 else HTTP_SERVER_ERROR
    payload = error_response_body(code, detail) if body else b""
    out = list(headers)
    if payload:
        out.append((CONTENT_TYPE, CONTENT_TYPE_JSON))
    out.append((CONTENT_LENGTH, str(len(payload)).encode("ascii")))
    return HttpError(
        status=status,
        detail=detail,
        clause=clause,
        headers=tuple(out),
        body=payload,
        code=code if payload else None,
    )


def _values(headers: Headers, name: bytes) -> list[bytes]:
    return [v for n, v in headers if n == name]


def _single(headers: Headers, name: bytes, clause: str | None) -> bytes | HttpError | None:
    vals = _values(headers, name)
    if not vals:
        return None
    if len(vals) > 1:
        return http_error(400, f"more than one {name.decode()} header", clause=clause)
    return vals[0]


# -- method, media types, size ---------------------------------------------------------


def check_method(
    method: bytes, *, allow_get: bool = True, allow_delete: bool = True
) -> HttpError | None:
    """Refuse methods the MCP endpoint does not serve (405, with an ``allow`` header).

    Args:
        method: the request method, e.g. ``b"POST"``.
        allow_get: whether the server offers the GET stream.
        allow_delete: whether clients may end sessions with DELETE.

    Returns:
        None, or a 405 :class:`HttpError`.

    Source: 2025-06-18/basic/transports#streamable-http.1 (POST and GET);
    #listening-for-messages-from-the-server.3 (405 for GET without a stream);
    #session-management.9 (405 for DELETE).
    """
    allowed = [b"POST"]
    if allow_get:
        allowed.append(b"GET")
    if allow_delete:
        allowed.append(b"DELETE")
    if method in allowed:
        return None
    allow = [(b"allow", b", ".join(allowed))]
    if method == b"GET":
        # Spec: 2025-06-18/basic/transports#listening-for-messages-from-the-server.3
        # "The server MUST either return `Content-Type: text/event-stream` in response to this HTTP
        # GET, or else return HTTP 405 Method Not Allowed, indicating that the server does not offer
        # an SSE stream at this endpoint."
        clause = "2025-06-18/basic/transports#listening-for-messages-from-the-server.3"
        detail = "this server offers no SSE stream on GET"
    elif method == b"DELETE":
        # Spec: 2025-06-18/basic/transports#session-management.9
        # "The server MAY respond to this request with HTTP 405 Method Not Allowed, indicating that
        # the server does not allow clients to terminate sessions."
        clause = "2025-06-18/basic/transports#session-management.9"
        detail = "this server does not let clients terminate sessions"
    else:
        # Spec: 2025-06-18/basic/transports#streamable-http.1
        # "The server MUST provide a single HTTP endpoint path (hereafter referred to as the MCP
        # endpoint) that supports both POST and GET methods."
        clause = "2025-06-18/basic/transports#streamable-http.1"
        detail = f"method {method.decode('latin-1')} not allowed on the MCP endpoint"
    return http_error(405, detail, clause=clause, headers=allow)


def _media_ranges(headers: Headers) -> list[tuple[bytes, float]]:
    ranges: list[tuple[bytes, float]] = []
    for value in _values(headers, ACCEPT):
        for part in value.split(b","):
            pieces = part.split(b";")
            media = pieces[0].strip().lower()
            if not media:
                continue
            q = 1.0
            for param in pieces[1:]:
                key, _, val = param.strip().partition(b"=")
                if key.strip().lower() == b"q":
                    try:
                        q = float(val.strip())
                    except ValueError:
                        q = 0.0
            ranges.append((media, q))
    return ranges


def _accepts(ranges: list[tuple[bytes, float]], media: bytes, wildcards: bool) -> bool:
    kind = media.split(b"/")[0]
    for candidate, q in ranges:
        if q <= 0:
            continue
        if candidate == media:
            return True
        if wildcards and candidate in (b"*/*", kind + b"/*"):
            return True
    return False


def check_accept(
    headers: Headers, method: bytes, *, allow_wildcards: bool = False
) -> HttpError | None:
    """Check the ``Accept`` header the spec requires of the client (406 if missing).

    A POST must list both ``application/json`` and ``text/event-stream``; a GET must
    list ``text/event-stream``.  Media ranges with ``q=0`` do not count.  Other methods
    pass.

    Args:
        headers: request headers.
        method: ``b"POST"``, ``b"GET"``, ...
        allow_wildcards: also count ``*/*`` and ``type/*`` (off: the spec says
            "listing", and a reference implementation holds clients to it).

    Returns:
        None, or a 406 :class:`HttpError` naming the clause.

    Source: 2025-06-18/basic/transports#sending-messages-to-the-server.3 (POST);
    2025-06-18/basic/transports#listening-for-messages-from-the-server.2 (GET).
    """
    ranges = _media_ranges(headers)
    if method == b"POST":
        # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.3
        # "The client MUST include an `Accept` header, listing both `application/json` and
        # `text/event-stream` as supported content types."
        clause = "2025-06-18/basic/transports#sending-messages-to-the-server.3"
        needed: tuple[bytes, ...] = (CONTENT_TYPE_JSON, CONTENT_TYPE_SSE)
    elif method == b"GET":
        # Spec: 2025-06-18/basic/transports#listening-for-messages-from-the-server.2
        # "The client MUST include an `Accept` header, listing `text/event-stream` as a supported
        # content type."
        clause = "2025-06-18/basic/transports#listening-for-messages-from-the-server.2"
        needed = (CONTENT_TYPE_SSE,)
    else:
        return None
    missing = [m for m in needed if not _accepts(ranges, m, allow_wildcards)]
    if not missing:
        return None
    names = " and ".join(m.decode() for m in needed)
    return http_error(406, f"Accept must list {names}", clause=clause)


def check_content_type(headers: Headers) -> HttpError | None:
    """Require a POST body to be ``application/json`` in UTF-8 (415 otherwise).

    A ``charset`` parameter other than utf-8 is refused; no charset is fine (JSON is
    UTF-8 by definition).

    Source: 2025-06-18/basic/transports#transports.1 (JSON-RPC messages MUST be UTF-8);
    2025-06-18/basic/transports#sending-messages-to-the-server.4 (the body is one
    JSON-RPC message).
    """
    clause = "2025-06-18/basic/transports#transports.1"
    value = _single(headers, CONTENT_TYPE, clause)
    if isinstance(value, HttpError):
        return value
    if value is None:
        return http_error(415, "a POST body needs Content-Type: application/json", clause=clause)
    pieces = value.split(b";")
    if pieces[0].strip().lower() != CONTENT_TYPE_JSON:
        return http_error(
            415,
            f"Content-Type must be application/json, not {value.decode('latin-1')}",
            clause=clause,
        )
    for param in pieces[1:]:
        key, _, val = param.strip().partition(b"=")
        if key.strip().lower() == b"charset" and val.strip().strip(b'"').lower() not in (
            b"utf-8",
            b"utf8",
        ):
            # Spec: 2025-06-18/basic/transports#transports.1
            # "JSON-RPC messages MUST be UTF-8 encoded."
            return http_error(415, "JSON-RPC messages must be UTF-8", clause=clause)
    return None


def check_content_length(headers: Headers, max_body_bytes: int) -> HttpError | None:
    """Refuse a declared body larger than ``max_body_bytes`` (413) before reading it.

    A chunked body has no length to check here: the driver counts bytes as they arrive
    and answers ``http_error(413, ...)`` itself when the bound is passed.  h11 has
    already refused malformed Content-Length values.

    Args:
        headers: request headers.
        max_body_bytes: the bound, in bytes (see :class:`HttpLimits`).
    """
    value = _single(headers, CONTENT_LENGTH, None)
    if value is None or isinstance(value, HttpError):
        return value
    if not value.isdigit():
        return http_error(400, "bad Content-Length", clause=None)
    if len(value) > 18 or int(value) > max_body_bytes:
        return http_error(413, f"body larger than {max_body_bytes} bytes", clause=None)
    return None


# -- Origin and Host (DNS rebinding) --------------------------------------------------

_AUTHORITY = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[^\[\]:/@\s]+)(?::([0-9]{0,5}))?$")


def _split_authority(authority: str) -> tuple[str, str | None] | None:
    m = _AUTHORITY.match(authority)
    if m is None:
        return None
    return m.group(1).lower(), m.group(2) or None


def _authority_matches(authority: str, pattern: str) -> bool:
    got = _split_authority(authority)
    want = _split_authority(pattern.removesuffix(":*"))
    if got is None or want is None:
        return False
    if pattern.endswith(":*"):
        return got[0] == want[0]
    return got == want


def _origin_matches(origin: str, pattern: str) -> bool:
    if pattern == "*":
        return True
    o_scheme, sep, o_rest = origin.partition("://")
    p_scheme, psep, p_rest = pattern.partition("://")
    if not sep or not psep or o_scheme.lower() != p_scheme.lower():
        return False
    return _authority_matches(o_rest, p_rest)


def check_origin(headers: Headers, allowed_origins: Collection[str]) -> HttpError | None:
    """Refuse a request whose ``Origin`` is not allowed (403), against DNS rebinding.

    No ``Origin`` header passes: browsers, the attackers' vehicle, always send one on
    the requests that matter (POST and cross-origin GET); other clients need not.

    Args:
        headers: request headers.
        allowed_origins: patterns: ``"*"`` (any), ``"scheme://host"``,
            ``"scheme://host:port"`` or ``"scheme://host:*"`` (any port or none).
            Scheme and host compare case-insensitively.  ``"null"`` matches only itself.
            :data:`LOCALHOST_ORIGINS` is the default for a loopback server.

    Returns:
        None, or a 403 :class:`HttpError` (also for a repeated ``Origin`` header).

    Source: 2025-06-18/basic/transports#security-warning.1; the 2025-11-25 revision
    fixes the status: 403 Forbidden.
    """
    clause = "2025-06-18/basic/transports#security-warning.1"
    values = _values(headers, ORIGIN)
    if not values:
        return None
    if len(values) > 1:
        return http_error(403, "more than one Origin header", clause=clause)
    origin = values[0].decode("latin-1")
    # Spec: 2025-06-18/basic/transports#security-warning.1
    # "Servers MUST validate the `Origin` header on all incoming connections to prevent DNS
    # rebinding attacks"
    for pattern in allowed_origins:
        if pattern in ("*", origin) or (origin != "null" and _origin_matches(origin, pattern)):
            return None
    return http_error(403, f"Origin {origin!r} is not allowed", clause=clause)


_ABSOLUTE_FORM = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)(.*)$", re.DOTALL)


def split_target(target: bytes) -> tuple[str | None, str, str]:
    """Split an HTTP/1.1 request target into ``(authority, path, query)``.

    * origin-form ``/mcp?x=1``: ``(None, "/mcp", "x=1")``;
    * absolute-form ``http://host:8000/mcp?x=1``: ``("host:8000", "/mcp", "x=1")`` (an
      empty path is ``"/"``; the authority may be ``""``);
    * asterisk-form ``*``: ``(None, "*", "")``;
    * authority-form ``host:443`` (CONNECT) and anything else: ``(target, "", "")``.

    A fragment (``#...``) is dropped.  Only origin-form names a path: a target such as
    ``//host/mcp`` is origin-form with the path ``//host/mcp``, not the path ``/mcp``.

    Args:
        target: the request target as h11 gives it (bytes, decoded as Latin-1).

    Source: RFC 9112 section 3.2 (the four forms of request-target).
    """
    text = target.decode("latin-1")
    if text.startswith("/"):
        rest, authority = text, None
    elif text == "*":
        return None, "*", ""
    else:
        m = _ABSOLUTE_FORM.match(text)
        if m is None:
            return text, "", ""
        authority, rest = m.group(1), m.group(2) or "/"
    rest = rest.partition("#")[0]
    path, _, query = rest.partition("?")
    return authority, path, query


def check_host(
    headers: Headers, allowed_hosts: Collection[str], *, target: bytes | None = None
) -> HttpError | None:
    """Refuse a request whose ``Host`` is not allowed (403), against DNS rebinding.

    After a rebinding, the victim's browser reaches our loopback address but still names
    the attacker's host; checking ``Host`` catches it even when ``Origin`` is absent.
    A request target in absolute-form (``POST http://evil.example/mcp HTTP/1.1``), or
    in authority-form, names a host too, one that HTTP/1.1 says to use instead of the
    ``Host`` header (RFC 9112 section 3.2.2): with ``target`` given, that host must be
    allowed as well (both are checked, so neither can smuggle the other past us).

    Args:
        headers: request headers.
        allowed_hosts: patterns: ``"*"`` (any, also no header), ``"host"``,
            ``"host:port"``, ``"host:*"`` (any port or none); IPv6 in brackets.
            :data:`LOCALHOST_HOSTS` is the default for a loopback server.
        target: the request target (bytes), or None to check the header only.

    Returns:
        None; a 400 :class:`HttpError` when ``Host`` is missing or repeated (and the
        patterns are not ``"*"``); a 403 when it, or the target's host, is not allowed
        (a target authority with user info, e.g. ``user@host``, is never allowed).

    Source: 2025-06-18/basic/transports#security-warning.1 (the same DNS-rebinding
    defence); 2025-06-18/basic/transports#security-warning.2 (loopback servers);
    RFC 9112 section 3.2.2 (absolute-form).
    """
    clause = "2025-06-18/basic/transports#security-warning.1"
    if "*" in allowed_hosts:
        return None
    value = _single(headers, HOST, clause)
    if isinstance(value, HttpError):
        return value
    if value is None:
        return http_error(400, "missing Host header", clause=clause)
    host = value.decode("latin-1")
    # Spec: 2025-06-18/basic/transports#security-warning.1
    # "Servers MUST validate the Origin header ... to prevent DNS rebinding attacks":
    # the Host header, and a host in the request target, get the same check.
    if not any(_authority_matches(host, pattern) for pattern in allowed_hosts):
        return http_error(403, f"Host {host!r} is not allowed", clause=clause)
    if target is not None:
        authority = split_target(target)[0]
        if authority is not None and not any(
            _authority_matches(authority, pattern) for pattern in allowed_hosts
        ):
            return http_error(
                403, f"request target host {authority[:200]!r} is not allowed", clause=clause
            )
    return None


# -- protocol version ------------------------------------------------------------------


def check_protocol_version(
    headers: Headers, negotiated: str | None, supported: Collection[str]
) -> str | HttpError:
    """Decide the protocol version of a request from its ``MCP-Protocol-Version`` header.

    Call it on every request after the one carrying ``initialize`` (that one has no
    version yet; the body negotiates it).

    Args:
        headers: request headers.
        negotiated: the version negotiated in the session's ``initialize``, or None when
            unknown (no session, or a stateless server).
        supported: the versions the server supports.

    Returns:
        The version (str) the request is handled under: the header's value; without the
        header, ``negotiated``, or else :data:`DEFAULT_PROTOCOL_VERSION`.  Or a 400
        :class:`HttpError` when the header is repeated, unsupported, or differs from
        ``negotiated`` (we read a version other than the negotiated one as invalid),
        or when it is absent, nothing was negotiated and 2025-03-26 is not supported.

    Source: 2025-06-18/basic/transports#protocol-version-header.4 (400);
    #protocol-version-header.3 (assume 2025-03-26); #protocol-version-header.2.
    """
    clause = "2025-06-18/basic/transports#protocol-version-header.4"
    value = _single(headers, MCP_PROTOCOL_VERSION, clause)
    if isinstance(value, HttpError):
        return value
    if value is None:
        if negotiated is not None:
            return negotiated
        # Spec: 2025-06-18/basic/transports#protocol-version-header.3
        # "For backwards compatibility, if the server does not receive an `MCP-Protocol-Version`
        # header, and has no other way to identify the version - for example, by relying on the
        # protocol version negotiated during initialization - the server SHOULD assume protocol
        # version `2025-03-26`."
        if DEFAULT_PROTOCOL_VERSION in supported:
            return DEFAULT_PROTOCOL_VERSION
        return http_error(
            400,
            "missing MCP-Protocol-Version header (and 2025-03-26 is not supported)",
            clause="2025-06-18/basic/transports#protocol-version-header.3",
        )
    version = value.decode("latin-1")
    # Spec: 2025-06-18/basic/transports#protocol-version-header.4
    # "If the server receives a request with an invalid or unsupported `MCP-Protocol-Version`, it
    # MUST respond with `400 Bad Request`."
    if version not in supported:
        return http_error(400, f"unsupported MCP-Protocol-Version {version!r}", clause=clause)
    if negotiated is not None and version != negotiated:
        return http_error(
            400,
            f"MCP-Protocol-Version {version!r} differs from the negotiated {negotiated!r}",
            clause=clause,
        )
    return version


# -- sessions --------------------------------------------------------------------------


def new_session_id(random_bytes: bytes) -> str:
    """Make a session id from random bytes the driver drew (``secrets.token_bytes(16)``).

    Args:
        random_bytes: at least :data:`MIN_SESSION_ID_ENTROPY_BYTES` cryptographically
            secure random bytes.

    Returns:
        Their lowercase hex (32 characters for 16 bytes): visible ASCII only.

    Raises:
        LocalProtocolError: fewer than 16 bytes, or more than 512.

    Source: 2025-06-18/basic/transports#session-management.2 (unique, cryptographically
    secure); #session-management.3 (visible ASCII).
    """
    if not isinstance(random_bytes, bytes | bytearray):
        raise LocalProtocolError("new_session_id needs bytes")
    if not MIN_SESSION_ID_ENTROPY_BYTES <= len(random_bytes) <= MAX_SESSION_ID_LENGTH // 2:
        raise LocalProtocolError(
            f"a session id needs {MIN_SESSION_ID_ENTROPY_BYTES}..{MAX_SESSION_ID_LENGTH // 2}"
            f" random bytes, got {len(random_bytes)}"
        )
    # Spec: 2025-06-18/basic/transports#session-management.3
    # "The session ID MUST only contain visible ASCII characters (ranging from 0x21 to 0x7E)."
    return bytes(random_bytes).hex()


def validate_session_id(value: str | bytes) -> bool:
    """Whether ``value`` is a well-formed session id.

    Well-formed: 1 to :data:`MAX_SESSION_ID_LENGTH` characters, each visible ASCII
    (0x21..0x7E).  Clients use it on the id a server assigns; servers on what clients
    send back.

    Source: 2025-06-18/basic/transports#session-management.3.
    """
    raw = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value
    # Spec: 2025-06-18/basic/transports#session-management.3
    # "The session ID MUST only contain visible ASCII characters (ranging from 0x21 to 0x7E)."
    return 0 < len(raw) <= MAX_SESSION_ID_LENGTH and all(0x21 <= b <= 0x7E for b in raw)


def get_session_id(headers: Headers) -> str | HttpError | None:
    """Read the ``Mcp-Session-Id`` header.

    Returns:
        The session id (str); None when absent; a 400 :class:`HttpError` when repeated
        or not visible ASCII.

    Source: 2025-06-18/basic/transports#session-management.3.
    """
    clause = "2025-06-18/basic/transports#session-management.3"
    value = _single(headers, MCP_SESSION_ID, clause)
    if value is None or isinstance(value, HttpError):
        return value
    if not validate_session_id(value):
        return http_error(400, "malformed Mcp-Session-Id", clause=clause)
    return value.decode("ascii")


def check_session(
    headers: Headers, *, is_initialize: bool, active_sessions: Container[str]
) -> str | HttpError | None:
    """Apply the session rules of a server that requires sessions.

    Args:
        headers: request headers.
        is_initialize: whether this is the POST carrying ``initialize``.
        active_sessions: the ids of live sessions (a set or dict).

    Returns:
        For ``initialize``: None (the driver makes a new id with :func:`new_session_id`),
        or 400 if the client sent a session id with it.  Otherwise the session id (str),
        400 when the header is missing or malformed, 404 when the session is unknown or
        was terminated.

    Source: 2025-06-18/basic/transports#session-management.5 (400 without a session
    id); #session-management.6 (404 after termination); #session-management.7 (a new
    ``initialize`` goes without a session id).
    """
    session_id = get_session_id(headers)
    if isinstance(session_id, HttpError):
        return session_id
    if is_initialize:
        if session_id is not None:
            # Spec: 2025-06-18/basic/transports#session-management.7
            # "When a client receives HTTP 404 in response to a request containing an
            # `Mcp-Session-Id`, it MUST start a new session by sending a new `InitializeRequest`
            # without a session ID attached."
            return http_error(
                400,
                "initialize starts a new session and must not carry Mcp-Session-Id",
                clause="2025-06-18/basic/transports#session-management.7",
            )
        return None
    if session_id is None:
        # Spec: 2025-06-18/basic/transports#session-management.5
        # "Servers that require a session ID SHOULD respond to requests without an `Mcp-Session-Id`
        # header (other than initialization) with HTTP 400 Bad Request."
        return http_error(
            400,
            "missing Mcp-Session-Id header",
            clause="2025-06-18/basic/transports#session-management.5",
        )
    if session_id not in active_sessions:
        # Spec: 2025-06-18/basic/transports#session-management.6
        # "The server MAY terminate the session at any time, after which it MUST respond to requests
        # containing that session ID with HTTP 404 Not Found."
        return http_error(
            404,
            "session not found (unknown or terminated)",
            clause="2025-06-18/basic/transports#session-management.6",
        )
    return session_id


# -- POST answers and response headers -------------------------------------------------


class MessageKind(enum.Enum):
    """What one POSTed JSON-RPC message is, as far as the HTTP answer cares."""

    REQUEST = "request"
    NOTIFICATION = "notification"
    RESPONSE = "response"
    """A response or an error response."""


class PostReply(enum.Enum):
    """How the server answers a POST it accepted."""

    ACCEPTED = "202 Accepted, no body"
    JSON = "200, Content-Type: application/json, one JSON-RPC response"
    SSE = "200, Content-Type: text/event-stream"


def post_reply(kind: MessageKind, *, stream: bool) -> PostReply:
    """Choose the answer to an accepted POST.

    Args:
        kind: what the body was.
        stream: for a request, whether the server wants an SSE stream (to send
            notifications or requests before the response) rather than one JSON body.

    Returns:
        :attr:`PostReply.ACCEPTED` for a notification or a response;
        :attr:`PostReply.SSE` or :attr:`PostReply.JSON` for a request.

    Source: 2025-06-18/basic/transports#sending-messages-to-the-server.5 (202, no body);
    #sending-messages-to-the-server.8 (a request gets SSE or JSON).
    """
    if kind is MessageKind.REQUEST:
        # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.8
        # "If the input is a JSON-RPC request, the server MUST either return `Content-Type:
        # text/event-stream`, to initiate an SSE stream, or `Content-Type: application/json`, to
        # return one JSON object."
        return PostReply.SSE if stream else PostReply.JSON
    # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.5
    # "If the server accepts the input, the server MUST return HTTP status code 202 Accepted with no
    # body."
    return PostReply.ACCEPTED


def response_headers(
    reply: PostReply,
    *,
    session_id: str | None = None,
    content_length: int | None = None,
    post: bool = False,
) -> list[tuple[bytes, bytes]]:
    """Headers of a successful answer (to a POST, or a GET stream with ``PostReply.SSE``).

    Args:
        reply: the answer chosen by :func:`post_reply`.
        session_id: the session id to send (always on the ``initialize`` answer).
        content_length: body length in bytes, for :attr:`PostReply.JSON`.
        post: the SSE stream answers a POST (not a GET).

    Returns:
        ``[(name, value), ...]``: for ACCEPTED ``content-length: 0``; for JSON the
        content type and length; for SSE the content type, and ``cache-control:
        no-cache`` on a GET's stream (h11 frames the stream with chunked encoding);
        plus ``mcp-session-id`` when given.  A POST's stream goes without
        ``cache-control``: a response to POST is cacheable only with explicit
        freshness information and ``Content-Location`` (RFC 9110 section 9.3.3),
        which it never has, so the header would say nothing (and costs h11 a
        validation per answer).

    Raises:
        LocalProtocolError: a malformed ``session_id``; JSON without ``content_length``.

    Source: 2025-06-18/basic/transports#session-management.1 (the session id goes in
    ``Mcp-Session-Id``); #sending-messages-to-the-server.5 and .8.
    """
    out: list[tuple[bytes, bytes]] = []
    if reply is PostReply.ACCEPTED:
        out.append((CONTENT_LENGTH, b"0"))
    elif reply is PostReply.JSON:
        if content_length is None:
            raise LocalProtocolError("a JSON answer needs content_length")
        out.append((CONTENT_TYPE, CONTENT_TYPE_JSON))
        out.append((CONTENT_LENGTH, str(content_length).encode("ascii")))
    else:
        out.append((CONTENT_TYPE, CONTENT_TYPE_SSE))
        if not post:
            out.append((b"cache-control", b"no-cache"))
    if session_id is not None:
        if not validate_session_id(session_id):
            raise LocalProtocolError(f"malformed session id {session_id!r}")
        # Spec: 2025-06-18/basic/transports#session-management.1
        # "A server using the Streamable HTTP transport MAY assign a session ID at initialization
        # time, by including it in an `Mcp-Session-Id` header on the HTTP response containing the
        # `InitializeResult`."
        out.append((MCP_SESSION_ID, session_id.encode("ascii")))
    return out


def client_request_headers(
    method: bytes,
    *,
    session_id: str | None = None,
    protocol_version: str | None = None,
    last_event_id: str | None = None,
) -> list[tuple[bytes, bytes]]:
    """The MCP headers a client puts on a request (Host and framing are the driver's).

    Args:
        method: ``b"POST"``, ``b"GET"`` or ``b"DELETE"``.
        session_id: the session id the server assigned, if any.
        protocol_version: the negotiated version (None only before initialization).
        last_event_id: for a resuming GET, the decoder's ``last_event_id`` ("" = none).

    Returns:
        ``accept`` (both types on POST, SSE on GET), ``content-type`` on POST,
        ``mcp-session-id``, ``mcp-protocol-version``, ``last-event-id`` as given.

    Raises:
        LocalProtocolError: a malformed session id, or a value with CR, LF or NUL.

    Source: 2025-06-18/basic/transports#sending-messages-to-the-server.3;
    #listening-for-messages-from-the-server.2; #session-management.4;
    #protocol-version-header.1; #resumability-and-redelivery.3.
    """
    out: list[tuple[bytes, bytes]] = []
    if method == b"POST":
        # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.3
        # "The client MUST include an `Accept` header, listing both `application/json` and
        # `text/event-stream` as supported content types."
        out.append((ACCEPT, CONTENT_TYPE_JSON + b", " + CONTENT_TYPE_SSE))
        out.append((CONTENT_TYPE, CONTENT_TYPE_JSON))
    elif method == b"GET":
        # Spec: 2025-06-18/basic/transports#listening-for-messages-from-the-server.2
        # "The client MUST include an `Accept` header, listing `text/event-stream` as a supported
        # content type."
        out.append((ACCEPT, CONTENT_TYPE_SSE))
    if session_id is not None:
        if not validate_session_id(session_id):
            raise LocalProtocolError(f"malformed session id {session_id!r}")
        # Spec: 2025-06-18/basic/transports#session-management.4
        # "If an `Mcp-Session-Id` is returned by the server during initialization, clients using the
        # Streamable HTTP transport MUST include it in the `Mcp-Session-Id` header on all of their
        # subsequent HTTP requests."
        out.append((MCP_SESSION_ID, session_id.encode("ascii")))
    for name, value in ((MCP_PROTOCOL_VERSION, protocol_version), (LAST_EVENT_ID, last_event_id)):
        if value:
            if not value.isascii() or not value.isprintable():
                raise LocalProtocolError(f"bad {name.decode()} value {value!r}")
            out.append((name, value.encode("ascii")))
    return out


# -- event ids and the event store -----------------------------------------------------


def _check_stream_id(stream_id: str) -> None:
    # Visible ASCII ("!".."~"): ASCII, printable (no controls, no DEL), and no space.
    if not (
        isinstance(stream_id, str)
        and 0 < len(stream_id) <= _MAX_STREAM_ID_LENGTH
        and stream_id.isascii()
        and stream_id.isprintable()
        and " " not in stream_id
    ):
        raise LocalProtocolError(
            f"stream id must be 1..{_MAX_STREAM_ID_LENGTH} visible ASCII chars: {stream_id!r}"
        )


def make_event_id(stream_id: str, seq: int) -> str:
    """Make the SSE event id ``"<stream_id>/<seq>"``.

    Args:
        stream_id: names the stream within the session: 1..128 visible ASCII
            characters (may itself contain ``/``; parsing splits at the last one).
        seq: a non-negative int, unique within the session (the :class:`EventStore`
            counts one sequence across all streams).

    Raises:
        LocalProtocolError: bad stream id, or ``seq`` negative, not an int, or a bool.

    Source: 2025-06-18/basic/transports#resumability-and-redelivery.2 (unique across the
    session's streams); "In other words" paragraph (a per-stream cursor).
    """
    _check_stream_id(stream_id)
    if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq < _SEQ_LIMIT:
        raise LocalProtocolError(f"event sequence number must be an int >= 0, not {seq!r}")
    return f"{stream_id}/{seq}"


def _seq_ok(digits: str) -> bool:
    """Whether ``digits`` is a sequence number as :func:`make_event_id` writes it."""
    return (
        0 < len(digits) <= _MAX_SEQ_DIGITS
        and digits.isascii()
        and digits.isdigit()
        and (digits == "0" or not digits.startswith("0"))
    )


def parse_event_id(s: str | bytes) -> tuple[str, int]:
    """Split an event id made by :func:`make_event_id` (e.g. a ``Last-Event-ID`` value).

    Returns:
        ``(stream_id, seq)``.

    Raises:
        RemoteProtocolError: not of the form ``<stream id>/<decimal digits>`` (no sign,
            no leading zeros, at most 19 digits), or the stream id is not 1..128 visible
            ASCII characters.
    """
    if isinstance(s, bytes):
        s = s.decode("latin-1")
    stream_id, sep, digits = s.rpartition("/")
    ok = sep and _seq_ok(digits)
    if ok:
        try:
            _check_stream_id(stream_id)
        except LocalProtocolError:
            ok = False
    if not ok:
        raise RemoteProtocolError(f"malformed event id {s[:200]!r}", code=INVALID_REQUEST)
    return stream_id, int(digits)


@attrs.frozen(kw_only=True)
class Replay:
    """What :meth:`EventStore.replay_after` found: the events to send again, in order."""

    stream_id: str
    """The stream the last event id belongs to (the one to resume)."""
    events: tuple[tuple[str, str], ...]
    """``(event_id, data)`` pairs of that stream after the given id, oldest first."""


@attrs.define
class _Stream:
    # (seq, event id, data, UTF-8 size of data), oldest first
    events: deque[tuple[int, str, str, int]] = attrs.field(factory=deque)
    evicted_through: int = -1  # highest seq of this stream no longer held
    last_seq: int = -1


class EventStore:
    """A bounded store of the SSE events sent on a session's streams, for resumption.

    Use one store per session.  ``append`` records an event and returns its id;
    ``replay_after`` answers a ``Last-Event-ID``.  Oldest first out on every bound:

    * more than ``max_events_per_stream`` in a stream: that stream's oldest event goes;
    * a new stream beyond ``max_streams``: the stream appended to least recently goes,
      whole (a later stream of the same name starts afresh; ids from before it are
      refused, never half-answered);
    * more than ``max_total_bytes`` of data (UTF-8) in all: the oldest events go,
      whichever their stream.  One event larger than the whole budget is not kept.

    Args:
        max_events_per_stream: bound on events kept per stream (default 256).
        max_streams: bound on streams kept (default 64).
        max_total_bytes: bound on the UTF-8 size of all kept data (default 4 MiB).

    Source: 2025-06-18/basic/transports#resumability-and-redelivery (ids unique across
    the session's streams; replay only the disconnected stream's messages).
    """

    def __init__(
        self,
        *,
        max_events_per_stream: int = 256,
        max_streams: int = 64,
        max_total_bytes: int = 4 * 1024 * 1024,
    ) -> None:
        if min(max_events_per_stream, max_streams, max_total_bytes) < 1:
            raise ValueError("EventStore bounds must be positive")
        self.max_events_per_stream = max_events_per_stream
        self.max_streams = max_streams
        self.max_total_bytes = max_total_bytes
        self._streams: OrderedDict[str, _Stream] = OrderedDict()  # least recent first
        self._order: OrderedDict[int, str] = OrderedDict()  # seq -> stream id, oldest first
        self._next_seq = 0
        self.total_bytes = 0
        """UTF-8 bytes of data currently held."""

    def __len__(self) -> int:
        """The number of events held."""
        return len(self._order)

    @property
    def stream_ids(self) -> list[str]:
        """The streams held, least recently appended to first."""
        return list(self._streams)

    def append(self, stream_id: str, data: str) -> str:
        """Record an event sent on ``stream_id``; return its event id.

        Args:
            stream_id: the stream (1..128 visible ASCII characters); new ids start a new
                stream (evicting the least recently used one past ``max_streams``).
            data: the event's data (the JSON text of one message; ``""`` for a priming
                event).

        Returns:
            The event id (``make_event_id(stream_id, seq)``) to put in the SSE ``id``.

        Raises:
            LocalProtocolError: bad stream id; data not a str.

        Source: 2025-06-18/basic/transports#resumability-and-redelivery.2.
        """
        if not isinstance(data, str):
            raise LocalProtocolError("event data must be a str")
        stream = self._streams.get(stream_id)
        if stream is None:
            _check_stream_id(stream_id)  # a stream held was checked when it came
        # Spec: 2025-06-18/basic/transports#resumability-and-redelivery.2
        # "If present, the ID MUST be globally unique across all streams within that session—or all
        # streams with that specific client, if session management is not in use."
        # One counter for the whole store: ids never repeat, even for a reused stream id.
        seq = self._next_seq
        if seq >= _SEQ_LIMIT:
            raise LocalProtocolError("event sequence numbers exhausted")
        self._next_seq += 1
        if stream is None:
            while len(self._streams) >= self.max_streams:
                self._evict_stream(next(iter(self._streams)))
            # Whatever an earlier stream of this name sent (if it was evicted) is lost: a
            # resume from before this event must be refused, not answered in part.
            stream = self._streams[stream_id] = _Stream(evicted_through=seq - 1)
        else:
            self._streams.move_to_end(stream_id)
        event_id = f"{stream_id}/{seq}"  # make_event_id, both parts already checked
        stream.last_seq = seq
        size = len(data) if data.isascii() else len(data.encode("utf-8", "surrogatepass"))
        if size > self.max_total_bytes:
            stream.evicted_through = seq
            return event_id
        stream.events.append((seq, event_id, data, size))
        self._order[seq] = stream_id
        self.total_bytes += size
        if len(stream.events) > self.max_events_per_stream:
            self._evict_oldest_of(stream)
        while self.total_bytes > self.max_total_bytes:
            oldest_stream = next(iter(self._order.values()))
            self._evict_oldest_of(self._streams[oldest_stream])
        return event_id

    def replay_after(self, last_event_id: str | bytes) -> Replay | HttpError:
        """Find the events of ``last_event_id``'s stream sent after it.

        Args:
            last_event_id: the ``Last-Event-ID`` header value.

        Returns:
            A :class:`Replay` (possibly with no events, when the client missed nothing),
            or an :class:`HttpError`:

            * 400 when the id is malformed;
            * 409 when the stream is unknown (never ours, or evicted whole), when the id
              lies beyond what the stream has sent, or when some events after it were
              evicted.  Replaying a partial tail would silently lose messages; 404 would
              tell the client its session is gone.  The client can then carry on
              without the lost messages, e.g. with a fresh GET.

        Source: 2025-06-18/basic/transports#resumability-and-redelivery.4 (replay after
        the last event id, on the stream that was disconnected);
        #resumability-and-redelivery.5 (never another stream's messages).
        """
        try:
            stream_id, seq = parse_event_id(last_event_id)
        except RemoteProtocolError as exc:
            return http_error(
                400,
                exc.message,
                clause="2025-06-18/basic/transports#resumability-and-redelivery.3",
            )
        stream = self._streams.get(stream_id)
        clause = "2025-06-18/basic/transports#resumability-and-redelivery.4"
        if stream is None:
            return http_error(409, f"no stored events for stream {stream_id!r}", clause=clause)
        if seq > stream.last_seq:
            return http_error(409, f"event {seq} was never sent on {stream_id!r}", clause=clause)
        if seq < stream.evicted_through:
            return http_error(
                409, f"events after {seq} on {stream_id!r} are no longer stored", clause=clause
            )
        # Spec: 2025-06-18/basic/transports#resumability-and-redelivery.5
        # "The server MUST NOT replay messages that would have been delivered on a different
        # stream."
        # Only this stream's events; they are in order of seq: read back from the newest.
        later: list[tuple[str, str]] = []
        for s, event_id, data, _ in reversed(stream.events):
            if s <= seq:
                break
            later.append((event_id, data))
        later.reverse()
        return Replay(stream_id=stream_id, events=tuple(later))

    def forget_stream(self, stream_id: str) -> None:
        """Drop a stream and its events (e.g. when the session ends).  Unknown ids pass."""
        if stream_id in self._streams:
            self._evict_stream(stream_id)

    def _evict_oldest_of(self, stream: _Stream) -> None:
        seq, _, _, size = stream.events.popleft()
        del self._order[seq]
        self.total_bytes -= size
        stream.evicted_through = max(stream.evicted_through, seq)

    def _evict_stream(self, stream_id: str) -> None:
        stream = self._streams.pop(stream_id)
        for seq, _, _, size in stream.events:
            del self._order[seq]
            self.total_bytes -= size


# -- 2024-11-05 HTTP+SSE ---------------------------------------------------------------

ENDPOINT_EVENT: Final = "endpoint"
"""Event type of the 2024-11-05 transport's first event."""
MESSAGE_EVENT: Final = "message"
"""Event type of server messages on SSE streams."""


def endpoint_event(post_url: str) -> SSEEvent:
    """The first event of a 2024-11-05 HTTP+SSE stream: where to POST messages.

    Args:
        post_url: the URI (absolute, or relative to the SSE URL) the client must POST
            to, usually carrying a session query parameter.

    Raises:
        LocalProtocolError: ``post_url`` is empty or holds whitespace or control chars.

    Source: 2024-11-05/basic/transports, section "HTTP with SSE" (the server MUST send
    an ``endpoint`` event when a client connects).
    """
    if not post_url or not post_url.isprintable() or any(c.isspace() for c in post_url):
        raise LocalProtocolError(f"bad endpoint URL {post_url!r}")
    return SSEEvent(event=ENDPOINT_EVENT, data=post_url)


def message_event(data: str, *, event_id: str | None = None) -> SSEEvent:
    """A server message as an SSE ``message`` event.

    Args:
        data: the JSON text of one JSON-RPC message.
        event_id: its event id (from :meth:`EventStore.append`), or None.

    Source: 2024-11-05/basic/transports "HTTP with SSE" (messages are ``message``
    events); 2025-06-18/basic/transports#resumability-and-redelivery.1 (ids).
    """
    return SSEEvent(event=MESSAGE_EVENT, data=data, id=event_id)


def resolve_endpoint(event: SSEEvent, sse_url: str) -> str:
    """Client side of 2024-11-05: the absolute POST URL announced by an ``endpoint`` event.

    Args:
        event: the first event of the stream.
        sse_url: the absolute URL of the SSE stream.

    Returns:
        The POST URL, resolved against ``sse_url``.

    Raises:
        RemoteProtocolError: the event is not ``endpoint``, or its URL points at another
            origin (scheme, host or port) than the SSE stream -- we do not let a server
            send our messages elsewhere.

    Source: 2024-11-05/basic/transports "HTTP with SSE";
    2025-06-18/basic/transports#backwards-compatibility.
    """
    if event.event != ENDPOINT_EVENT:
        raise RemoteProtocolError(f"expected an endpoint event, got {event.event!r}")
    url = urljoin(sse_url, event.data.strip())
    base, target = urlsplit(sse_url), urlsplit(url)
    if (base.scheme.lower(), base.netloc.lower()) != (target.scheme.lower(), target.netloc.lower()):
        raise RemoteProtocolError(f"endpoint {url!r} is not on the origin of {sse_url!r}")
    return url


# -- limits ----------------------------------------------------------------------------


def _positive(_inst: object, attr: attrs.Attribute[Any], value: float) -> None:
    if isinstance(value, bool) or not value > 0:
        raise ValueError(f"HttpLimits.{attr.name} must be positive, not {value!r}")


@attrs.frozen(kw_only=True)
class HttpLimits:
    """The bounds of an HTTP MCP server (and client), as plain data.

    Every field must be positive.  The defaults suit a local server for a few clients.
    docs/http-limits.md lists them with what happens past each.

    Source: 2025-06-18/basic/transports#session-management.6 (the server MAY terminate
    a session at any time: idle, uninitialized and evicted sessions end so).
    """

    max_body_bytes: int = attrs.field(default=4 * 1024 * 1024, validator=_positive)
    """Largest POST body, in bytes (4 MiB); larger gets 413."""
    max_header_bytes: int = attrs.field(default=16 * 1024, validator=_positive)
    """Largest request head (request line and headers), in bytes (16 KiB); h11's
    ``max_incomplete_event_size``."""
    max_requests_per_connection: int = attrs.field(default=1000, validator=_positive)
    """Requests served on one keep-alive connection before the server closes it."""
    idle_timeout_seconds: float = attrs.field(default=60.0, validator=_positive)
    """Seconds a connection may wait for its next request (or the rest of one)."""
    max_sessions: int = attrs.field(default=1000, validator=_positive)
    """Live sessions at once (1000).  A new session past it takes the place of an
    evictable session (see ``session_evictable_seconds``), else is refused with 503
    and ``Retry-After``."""
    max_sessions_per_peer: int = attrs.field(default=100, validator=_positive)
    """Live sessions at once per client IP address (100).  A new session past it takes
    the place of an evictable session of the same address, else is refused with 429
    and ``Retry-After``.  It applies only where clients can be told apart by address:
    every client on the server's own machine connects from a loopback address, and a
    connection without an IP address (an in-memory stream) has none, so those share
    ``max_sessions`` alone."""
    session_idle_seconds: float = attrs.field(default=3600.0, validator=_positive)
    """Seconds (3600) without a request, and with no request in progress and no
    stream attached, after which a session is ended (then 404).  Long, because an
    idle session costs little and makes room when the table is full anyway (see
    ``session_evictable_seconds``)."""
    session_evictable_seconds: float = attrs.field(default=5.0, validator=_positive)
    """Seconds (5) a session must have been idle (no request, none in progress, no
    stream attached, no input queued) before a new session may take its place when
    ``max_sessions`` or ``max_sessions_per_peer`` is reached.  Uninitialized sessions
    go first, then the longest idle."""
    uninitialized_session_seconds: float = attrs.field(default=10.0, validator=_positive)
    """Seconds (10) from a session's creation within which its initialization must
    complete (the server received ``notifications/initialized``); past it the session
    is ended (then 404), busy or not."""
    max_streams_per_session: int = attrs.field(default=32, validator=_positive)
    """Open SSE streams (POST answers and GET) per session."""
    max_event_bytes: int = attrs.field(default=4 * 1024 * 1024, validator=_positive)
    """Largest SSE event a client decoder accepts, in bytes (``SSEDecoder``)."""
    keepalive_seconds: float = attrs.field(default=15.0, validator=_positive)
    """Seconds of silence on an SSE stream before the server sends a comment."""
    stored_events_per_stream: int = attrs.field(default=256, validator=_positive)
    """``EventStore(max_events_per_stream=...)``."""
    stored_streams: int = attrs.field(default=64, validator=_positive)
    """``EventStore(max_streams=...)``."""
    stored_bytes: int = attrs.field(default=4 * 1024 * 1024, validator=_positive)
    """``EventStore(max_total_bytes=...)``."""

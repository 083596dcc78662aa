"""The header rules of Streamable HTTP, sans-IO: method, media types, body size,
``Origin`` and ``Host`` (DNS rebinding), the request target and
``MCP-Protocol-Version``.

Theory of operation
-------------------
Each ``check_*`` is a pure function of the request's headers (``[(name, value), ...]``,
lowercased byte names, as h11 gives them) and of the server's settings: None when the
request passes, else the :class:`~mcp_ref._http_errors.HttpError` to answer with.  The
suggested order is in :mod:`mcp_ref._http`.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Final

from ._http_errors import (
    ACCEPT,
    CONTENT_LENGTH,
    CONTENT_TYPE,
    CONTENT_TYPE_JSON,
    CONTENT_TYPE_SSE,
    DEFAULT_PROTOCOL_VERSION,
    HOST,
    MCP_PROTOCOL_VERSION,
    ORIGIN,
    Headers,
    HttpError,
    _single,
    _values,
    http_error,
)

LOCALHOST_HOSTS: Final = ("localhost:*", "127.0.0.1:*", "[::1]:*")
"""Default ``Host`` patterns for a server bound to the loopback interface: the three
loopback names, any port.  Source: 2025-06-18/basic/transports#security-warning.2."""
LOCALHOST_ORIGINS: Final = tuple(
    f"{scheme}://{host}" for scheme in ("http", "https") for host in LOCALHOST_HOSTS
)
"""Default ``Origin`` patterns for a loopback server: http and https, the three loopback
names, any port.  Source: 2025-06-18/basic/transports#security-warning.1."""


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
    # Spec: 2026-07-28/basic/transports/streamable-http#security--endpoint.1
    # "Servers MUST validate the `Origin` header on all incoming connections to prevent DNS
    # rebinding attacks."
    # Spec: 2026-07-28/basic/transports/streamable-http#security--endpoint.2
    # "If the `Origin` header is present and invalid, servers MUST respond with HTTP 403
    # Forbidden."
    # Spec: 2025-11-25/basic/transports#security-warning.2
    # "If the `Origin` header is present and invalid, servers MUST respond with HTTP 403 Forbidden."
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

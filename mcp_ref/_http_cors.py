"""CORS for the Streamable HTTP server, sans-IO: the preflight answer and the headers
that let browser JavaScript on an allowed origin read the server's answers.

Theory of operation
-------------------
A browser page on ``https://app.example`` that calls an MCP server on another origin
first sends a *preflight*: ``OPTIONS`` with ``Origin``,
``Access-Control-Request-Method`` and ``Access-Control-Request-Headers``.  Without a
2xx answer naming its origin, the browser sends nothing more; and without
``Access-Control-Allow-Origin`` on the real answers (and
``Access-Control-Expose-Headers`` for ``Mcp-Session-Id`` and ``MCP-Protocol-Version``),
the page cannot read them.

CORS never loosens the ``Origin`` check (2025-06-18/basic/transports#security-warning.1,
:func:`mcp_ref._http.check_origin`): a server given CORS origins allows exactly those
origins *in addition to* its allowed ones (:func:`with_cors_origins`, applied by
:func:`~mcp_ref._http_server.server_config`), and a request from any other origin is
refused 403 before anything here is asked, preflight included.  The CORS headers then
go only to a request whose ``Origin`` is one of the CORS origins
(:func:`response_headers`); ``"*"`` means every origin the ``Origin`` check lets through.

Nothing here reads a socket: :func:`preflight` is an answer a driver writes as is (an
:class:`~mcp_ref._http.HttpError` of status 204), :func:`response_headers` the headers
it adds to every other answer.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Final

from ._http_errors import Headers, HttpError, _values
from ._http_rules import check_origin

__all__ = [
    "ALLOWED_METHODS",
    "EXPOSED_HEADERS",
    "cors_origin",
    "preflight",
    "response_headers",
    "with_cors_headers",
    "with_cors_origins",
]

ORIGIN: Final = b"origin"
ALLOWED_METHODS: Final = b"GET, POST, DELETE, OPTIONS"
"""What a preflight allows (the MCP endpoint's methods)."""
ALLOWED_HEADERS: Final = (
    b"accept, authorization, content-type, last-event-id, mcp-protocol-version, mcp-session-id"
)
"""Request headers a preflight allows when it names none."""
EXPOSED_HEADERS: Final = b"mcp-session-id, mcp-protocol-version, www-authenticate, retry-after"
"""Response headers browser JavaScript may read (the session id and the version first)."""
MAX_AGE_SECONDS: Final = 600
"""How long a browser may cache a preflight answer."""
_MAX_REQUESTED: Final = 1024  # longest Access-Control-Request-Headers echoed, in bytes


def with_cors_origins(allowed: Collection[str], cors: Collection[str]) -> tuple[str, ...]:
    """The ``Origin`` patterns of a server with CORS origins ``cors``: ``allowed`` and
    ``cors`` (an allowed CORS origin is an allowed origin; nothing else is).  ``"*"``
    adds none: it gives the CORS headers to every origin already allowed."""
    return (*allowed, *(o for o in cors if o != "*" and o not in allowed))


def cors_origin(headers: Headers, cors: Collection[str], allowed: Collection[str]) -> bytes | None:
    """The request's ``Origin`` when it is one of the CORS origins ``cors`` (``"*"``:
    any) and passes the ``Origin`` check against ``allowed`` (the server's patterns),
    else None."""
    if not cors:
        return None
    values = _values(headers, ORIGIN)
    if len(values) != 1:
        return None
    origin = values[0]
    if "*" not in cors and origin.decode("latin-1") not in cors:
        return None
    # Spec: 2025-06-18/basic/transports#security-warning.1
    # "Servers MUST validate the `Origin` header on all incoming connections to prevent DNS
    # rebinding attacks"
    # CORS headers only for an origin the check lets through: CORS never loosens it.
    return origin if check_origin(headers, allowed) is None else None


def response_headers(origin: bytes) -> list[tuple[bytes, bytes]]:
    """The headers an answer to a request from CORS origin ``origin`` carries."""
    return [
        (b"access-control-allow-origin", origin),
        (b"access-control-expose-headers", EXPOSED_HEADERS),
        (b"vary", b"origin"),
    ]


def with_cors_headers(
    headers: Iterable[tuple[bytes, bytes]], origin: bytes
) -> list[tuple[bytes, bytes]]:
    """An answer's ``headers`` (lowercase names) with :func:`response_headers` added,
    unless they name an allowed origin already (a preflight answer)."""
    out = list(headers)
    if all(name != b"access-control-allow-origin" for name, _ in out):
        out.extend(response_headers(origin))
    return out


def preflight(
    headers: Headers, cors: Collection[str], allowed: Collection[str]
) -> HttpError | None:
    """The answer to an ``OPTIONS`` request (a CORS preflight) whose ``Origin`` the
    ``Origin`` check let through: 204 with the ``Access-Control-Allow-*`` headers when
    that origin is a CORS origin, else None (the caller refuses the method: 405).

    The requested headers (``Access-Control-Request-Headers``, up to 1 KiB) are
    allowed as asked; without them, :data:`ALLOWED_HEADERS`.
    """
    origin = cors_origin(headers, cors, allowed)
    if origin is None:
        return None
    asked = _values(headers, b"access-control-request-headers")
    allow = asked[0] if len(asked) == 1 and len(asked[0]) <= _MAX_REQUESTED else ALLOWED_HEADERS
    out: Iterable[tuple[bytes, bytes]] = [
        *response_headers(origin),
        (b"access-control-allow-methods", ALLOWED_METHODS),
        (b"access-control-allow-headers", allow),
        (b"access-control-max-age", str(MAX_AGE_SECONDS).encode()),
    ]
    return HttpError(status=204, detail="CORS preflight", clause=None, headers=tuple(out))

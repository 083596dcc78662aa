"""What every HTTP rule of MCP shares, sans-IO: the header names, and :class:`HttpError`,
the complete response (status, headers, JSON-RPC error body, and the spec clause behind
it) that a driver sends when a rule refuses a request.

Theory of operation
-------------------
A rule (:mod:`mcp_ref._http_rules`, :mod:`mcp_ref._http_sessions`, ...) returns None,
a value, or an :class:`HttpError` built by :func:`http_error`; the driver writes that
error as it is (or raises it as :class:`Refused`: :func:`checked`).  Read :mod:`mcp_ref._http` for the whole of the HTTP transports.
"""

from __future__ import annotations

import http
import json
from collections.abc import Sequence
from typing import Final, TypeVar

import attrs

from ._errors import INVALID_REQUEST, LocalProtocolError

_T = TypeVar("_T")

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


class Refused(Exception):
    """A refusal raised rather than returned (:func:`checked`), for a driver whose
    handlers are easier to read with exceptions: ``error`` is the response to send."""

    def __init__(self, error: HttpError) -> None:
        super().__init__(error.detail)
        self.error = error


def checked(value: _T | HttpError) -> _T:
    """``value``, unless it is an :class:`HttpError` (what a rule returns to refuse).

    Raises:
        Refused: carrying that error.
    """
    if isinstance(value, HttpError):
        raise Refused(value)
    return value


def _values(headers: Headers, name: bytes) -> list[bytes]:
    return [v for n, v in headers if n == name]


def _single(headers: Headers, name: bytes, clause: str | None) -> bytes | HttpError | None:
    vals = _values(headers, name)
    if not vals:
        return None
    if len(vals) > 1:
        return http_error(400, f"more than one {name.decode()} header", clause=clause)
    return vals[0]

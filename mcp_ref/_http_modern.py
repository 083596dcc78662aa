"""Modern-era (2026-07-28) POSTs to the Streamable HTTP endpoint, sans-IO.

Theory of operation
-------------------
From 2026-07-28 there are no sessions: every request says in its own ``params._meta``
which version it speaks, and each POST is answered alone.  A dual-era server tells such
a POST from a handshake-era one by its ``MCP-Protocol-Version`` header (a modern
version) or by its body (``params._meta`` carries
``io.modelcontextprotocol/protocolVersion``): :func:`read_modern`.  A handshake-era
client never sends either, so it is served as before (sessions, or stateless mode).

A modern POST is judged here before any session exists (:func:`check_modern`): one
message, not a response; for a request, the ``_meta`` version present (-32602), the
mirrored headers agreeing with the body (-32020,
:func:`mcp_ref._modern.check_headers`), and the method one of the request's version
(404 with -32601: ``initialize``, ``ping``, ``logging/setLevel``... were removed);
for ``tools/call``, the ``Mcp-Param-{Name}`` headers of the tool's ``x-mcp-header``
parameters too, when the handler tells the tool's ``inputSchema``
(:data:`ToolSchema`, :func:`check_param_headers`).
Each refusal is the HTTP status the page gives with the JSON-RPC error answering the
request's id.  What passes opens a session for this POST only, with nothing fed before
the body (no ``initialize``: the server's connection takes the modern era from the
request itself, and judges the rest of ``_meta``), answered as JSON or SSE like any
POST, and gone once answered (:func:`~mcp_ref._http_post.read_post`).

A ``subscriptions/listen`` is answered with an SSE stream whatever the server's
``json_response`` (:func:`is_listen`): the acknowledgment, then the notifications the
server relates to it, until the client closes the stream, which cancels it.

The connection's own refusals travel in the answer; :func:`answer_status` gives the
HTTP status the page asks for them (400 for -32602, -32020, -32021, -32022; 404 for
-32601), which a JSON answer carries, and an SSE answer too when the error is all it
holds before its head is written: a modern SSE answer's head waits for the first
message up to a keepalive time (:class:`~mcp_ref._http_answers.SseAnswer`).

Source: 2026-07-28/basic/transports/streamable-http (no sessions; every message its
own POST; request metadata; server validation); 2026-07-28/basic/versioning (a
dual-era server selects its behavior from how the client opens); 2026-07-28/basic/index
(``_meta``, the statuses of its errors).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import attrs

from . import _jsonrpc as rpc
from ._errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    RemoteProtocolError,
)
from ._http import HttpError, http_error
from ._http_messages import MessageInfo, with_request_id
from ._http_server import RequestHeaders, header, modern_client
from ._methods import REQUEST, lookup
from ._modern import (
    MODERN_VERSIONS,
    PROTOCOL_VERSION_KEY,
    check_headers,
    decode_header_value,
    header_chains,
    is_token,
    read_request_meta,
)
from ._state import CLIENT
from .events import ErrorResponse

__all__ = [
    "ERROR_STATUS",
    "Modern",
    "ToolSchema",
    "answer_status",
    "check_modern",
    "check_param_headers",
    "is_listen",
    "mirrored_params",
    "read_modern",
]

_KEY: Final = PROTOCOL_VERSION_KEY.encode()
_PAGE: Final = "2026-07-28/basic/transports/streamable-http#"
_SAFE_INTEGER: Final = 2**53 - 1

# Spec: 2026-07-28/basic/index#_meta.8
# "On HTTP, the response status MUST be `400 Bad Request`."
# Spec: 2026-07-28/basic/transports/streamable-http#protocol-version-header.4
# "If the server does not implement the requested protocol version ... it MUST respond
# with `400 Bad Request` and an [`UnsupportedProtocolVersionError`][unsupported-version]
# listing its supported versions."
ERROR_STATUS: Final[dict[int, int]] = {
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,  # _meta.8
    UNSUPPORTED_PROTOCOL_VERSION: 400,  # protocol-version-header.4
    METHOD_NOT_FOUND: 404,
}
"""The HTTP status of a modern POST answered by one of these JSON-RPC errors (any other
answer: 200).  Source: 2026-07-28/basic/index#_meta.4, #_meta.8;
2026-07-28/basic/transports/streamable-http#protocol-version-header.3-5."""


@attrs.frozen
class Modern:
    """A modern-era POST's body (:func:`read_modern`)."""

    message: Any
    """The decoded body (one message; a list for a batch, refused later)."""


def read_modern(headers: RequestHeaders, body: bytes) -> Modern | None:
    """The body of a modern-era POST, decoded; None for a handshake-era one (neither a
    modern ``MCP-Protocol-Version`` nor the ``_meta`` version key in a message's
    params: the body is then not decoded again).

    Args:
        headers: the request's headers.
        body: the whole body (already read by
            :func:`~mcp_ref._http_messages.read_post_body`, so it is JSON).

    Source: 2026-07-28/basic/versioning#backward-compatibility-with-initialization-based-versions
    ("A request carrying modern per-request `_meta` is served statelessly").
    """
    by_header: bool = headers.rule("modern", lambda: modern_client(headers))
    if not by_header and _KEY not in body:
        return None
    try:
        obj = rpc.decode(body)
    except RemoteProtocolError:
        return None
    if by_header:
        return Modern(obj)
    params = obj.get("params") if isinstance(obj, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return Modern(obj) if isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta else None


def _refuse(status: int, reply: ErrorResponse, clause: str | None) -> HttpError:
    err = http_error(status, reply.message, clause=clause, code=reply.code)
    return err if reply.id is None else with_request_id(err, reply.id)


def check_modern(
    headers: RequestHeaders, modern: Modern, tool_schema: ToolSchema | None = None
) -> HttpError | None:
    """The refusal of a modern POST decided before any session (module docstring), or
    None when the body may go to a session of its own.

    In order: 400 (-32600) for a batch or a response; for a request, 400 (-32602) when
    ``params._meta`` lacks the version, 400 (-32020) when a mirrored header is missing
    or disagrees with the body (for ``tools/call``, the ``Mcp-Param-*`` headers too,
    when ``tool_schema`` gives the tool's ``inputSchema``: :func:`check_param_headers`),
    404 (-32601) for a method the request's version does not define.  A notification
    passes (the page defines no header rules for it).
    """
    msg = modern.message
    if not isinstance(msg, dict):
        # Spec: 2026-07-28/basic/transports/streamable-http#sending-messages.5
        # "The body of the HTTP POST MUST be a single JSON-RPC request or notification."
        return http_error(
            400,
            "2026-07-28: one message per POST, not a batch",
            clause=_PAGE + "sending-messages.5",
        )
    if "method" not in msg:
        # Spec: 2026-07-28/basic/transports/streamable-http#sending-messages.6
        # "The client MUST NOT send JSON-RPC responses."
        return http_error(
            400,
            "2026-07-28: clients send no responses",
            clause=_PAGE + "sending-messages.6",
            code=INVALID_REQUEST,
        )
    rid = msg.get("id")
    if rid is None:
        return None
    params = msg.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict) or not isinstance(meta.get(PROTOCOL_VERSION_KEY), str):
        reply = read_request_meta(params, request_id=rid)
        assert isinstance(reply, ErrorResponse)  # (-32602: the version is missing)
        # Spec: 2026-07-28/basic/index#_meta.4
        # "On HTTP, the response status MUST be `400 Bad Request`."
        return _refuse(400, reply, "2026-07-28/basic/index#_meta.4")
    named = {k.decode("latin-1"): v.decode("latin-1") for k, v in headers}
    # Spec: 2026-07-28/basic/transports/streamable-http#protocol-version-header.3
    # "If the values do not match, the server MUST reject the request with `400 Bad
    # Request` and a `HeaderMismatch` JSON-RPC error (see Server Validation)."
    mismatch = check_headers(named, msg)
    if mismatch is not None:
        # Spec: 2026-07-28/basic/transports/streamable-http#server-validation.3
        # "When rejecting a request due to header validation failure, servers MUST return
        # HTTP status `400 Bad Request`"
        return _refuse(400, mismatch, _PAGE + "server-validation.3")
    if msg["method"] == "tools/call" and tool_schema is not None:
        mismatch = check_param_headers(headers, msg, tool_schema)
        if mismatch is not None:
            # Spec: 2026-07-28/basic/transports/streamable-http#server-behavior-for-custom-headers.4
            # "Servers MUST reject requests with a `400 Bad Request` HTTP status and JSON-RPC
            # error code `-32020` (`HeaderMismatch`) if any validation fails."
            return _refuse(400, mismatch, _PAGE + "server-behavior-for-custom-headers.4")
    version = meta[PROTOCOL_VERSION_KEY]
    method = msg["method"]
    if version in MODERN_VERSIONS and lookup(method, CLIENT, REQUEST, version) is None:
        # Spec: 2026-07-28/basic/transports/streamable-http#protocol-version-header.5
        # "If the server does not implement the requested RPC method, it MUST respond with
        # `404 Not Found` and a JSON-RPC error with code `-32601` (`Method not found`)."
        reply = ErrorResponse(
            id=rid, code=METHOD_NOT_FOUND, message=f"method not found in {version}: {method}"
        )
        return _refuse(404, reply, _PAGE + "protocol-version-header.5")
    return None


ToolSchema = Callable[[str], Any]
"""``tool_input_schema(name)``: the ``inputSchema`` of the server's tool ``name`` (a
JSON object), or None (no such tool).  A handler offering this method has the
``Mcp-Param-*`` headers of its tools' calls checked (:func:`check_param_headers`)."""


def mirrored_params(input_schema: Any) -> list[tuple[tuple[str, ...], str]]:
    """The ``x-mcp-header`` annotations of a tool's ``inputSchema``: ``(property path,
    header name part)`` for each property reachable from the root through
    ``properties`` keys only, whose annotation is a token (others are not
    annotations a client may follow, so no header is expected for them).

    Source: 2026-07-28/basic/transports/streamable-http#schema-extension.
    """
    return [(path, name) for path, name, _ in header_chains(input_schema) if is_token(name)]


def _value_at(arguments: Any, path: tuple[str, ...]) -> Any:
    node = arguments
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _agrees(header_value: str, body_value: Any) -> bool:
    """Whether a decoded ``Mcp-Param-*`` value stands for ``body_value``: a string as
    it is, a boolean as ``true``/``false``, a number compared numerically."""
    if isinstance(body_value, bool):
        return header_value == ("true" if body_value else "false")
    if isinstance(body_value, int | float):
        # Spec: 2026-07-28/basic/transports/streamable-http#server-validation.2
        # "When validating integer parameter values, servers SHOULD compare the header value
        # and the body value numerically rather than as strings (e.g., `42.0` and `42` are
        # considered equal)."
        try:
            return float(header_value) == body_value
        except ValueError:
            return False
    return isinstance(body_value, str) and header_value == body_value


def check_param_headers(
    headers: RequestHeaders, message: Mapping[str, Any], tool_schema: ToolSchema
) -> ErrorResponse | None:
    """None when a ``tools/call``'s ``Mcp-Param-{Name}`` headers agree with its
    arguments, for each ``x-mcp-header`` annotation of the tool's ``inputSchema``
    (:func:`mirrored_params`); else the -32020 response: a value present in the body
    (not null) without its header, a header with characters outside visible ASCII,
    space and tab, or one whose value (Base64 sentinel decoded) differs.  Headers of
    parameters absent from the body, and of tools the server does not have, are not
    looked at.  An annotated integer outside -(2**53-1)..2**53-1 is -32602 (Invalid
    params), whatever its header says (2026-07-28/server/tools#x-mcp-header.6).

    Source: 2026-07-28/basic/transports/streamable-http#server-behavior-for-custom-headers.
    """
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    name = params.get("name")
    schema = tool_schema(name) if isinstance(name, str) else None
    rid = message.get("id")
    for path, part in mirrored_params(schema) if schema is not None else ():
        value = _value_at(params.get("arguments"), path)
        if value is None:
            continue
        shown = f"Mcp-Param-{part}"
        # Spec: 2026-07-28/server/tools#x-mcp-header.6
        # "Integer values MUST be within the safe range for integers represented using IEEE754
        # double-precision floating point numbers"
        if type(value) is int and abs(value) > _SAFE_INTEGER:
            return ErrorResponse(
                id=rid,
                code=INVALID_PARAMS,
                message=f"{shown}: the integer {value} is outside -(2**53-1)..2**53-1",
            )
        raw = header(headers, shown.lower().encode())
        if raw is None:
            return ErrorResponse(
                id=rid, code=HEADER_MISMATCH, message=f"Header mismatch: missing {shown} header"
            )
        # Spec: 2026-07-28/basic/transports/streamable-http#server-behavior-for-custom-headers.2
        # "Servers MUST reject requests with a recognized `Mcp-Param-{Name}` header that
        # contains invalid characters (see Value Encoding)."
        decoded = (
            decode_header_value(raw.decode("ascii"))
            if all(0x20 <= b <= 0x7E or b == 0x09 for b in raw)
            else None
        )
        # Spec: 2026-07-28/basic/transports/streamable-http#server-behavior-for-custom-headers.3
        # "Any server that processes the message body MUST validate that encoded header
        # values, after decoding if Base64-encoded, match the corresponding values in the
        # request body."
        if decoded is None or not _agrees(decoded, value):
            return ErrorResponse(
                id=rid,
                code=HEADER_MISMATCH,
                message=f"Header mismatch: {shown} header value {raw!r} does not match "
                f"body value {value!r}",
            )
    return None


def is_listen(requests: Sequence[MessageInfo]) -> bool:
    """Whether a modern POST's one request is ``subscriptions/listen``: its answer is an
    SSE stream (acknowledgment first, then the notifications the server relates to it)
    that lasts until the client closes it, which cancels it.

    Source: 2026-07-28/basic/transports/streamable-http#receiving-messages (long-lived
    notification streams), #cancellation.1; 2026-07-28/basic/patterns/subscriptions.
    """
    return len(requests) == 1 and requests[0].method == "subscriptions/listen"


def answer_status(body: bytes) -> int:
    """The HTTP status of a modern POST's answer ``body`` (one JSON-RPC message): the
    :data:`ERROR_STATUS` of its error's code, else 200.

    Source: 2026-07-28/basic/index#_meta.4 and #_meta.8 (-32602, -32021: 400);
    2026-07-28/basic/transports/streamable-http#protocol-version-header.3-5 (-32020,
    -32022: 400; -32601: 404).
    """
    if b'"error"' not in body:
        return 200
    try:
        obj = rpc.decode(body)
    except RemoteProtocolError:
        return 200
    error = obj.get("error") if isinstance(obj, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    if type(code) is not int:
        return 200
    return ERROR_STATUS.get(code, 200)

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
(404 with -32601: ``initialize``, ``ping``, ``logging/setLevel``... were removed).
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
holds before its head is written (:class:`~mcp_ref._http_answers.SseAnswer`).

Source: 2026-07-28/basic/transports/streamable-http (no sessions; every message its
own POST; request metadata; server validation); 2026-07-28/basic/versioning (a
dual-era server selects its behavior from how the client opens); 2026-07-28/basic/index
(``_meta``, the statuses of its errors).
"""

from __future__ import annotations

from collections.abc import Sequence
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
from ._http_server import RequestHeaders, modern_client
from ._methods import REQUEST, lookup
from ._modern import (
    MODERN_VERSIONS,
    PROTOCOL_VERSION_KEY,
    check_headers,
    read_request_meta,
)
from ._state import CLIENT
from .events import ErrorResponse

__all__ = ["ERROR_STATUS", "Modern", "answer_status", "check_modern", "is_listen", "read_modern"]

_KEY: Final = PROTOCOL_VERSION_KEY.encode()
_PAGE: Final = "2026-07-28/basic/transports/streamable-http#"

ERROR_STATUS: Final[dict[int, int]] = {
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
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


def check_modern(headers: RequestHeaders, modern: Modern) -> HttpError | None:
    """The refusal of a modern POST decided before any session (module docstring), or
    None when the body may go to a session of its own.

    In order: 400 (-32600) for a batch or a response; for a request, 400 (-32602) when
    ``params._meta`` lacks the version, 400 (-32020) when a mirrored header is missing
    or disagrees with the body, 404 (-32601) for a method the request's version does
    not define.  A notification passes (the page defines no header rules for it).
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
    mismatch = check_headers(named, msg)
    if mismatch is not None:
        # Spec: 2026-07-28/basic/transports/streamable-http#server-validation.3
        # "When rejecting a request due to header validation failure, servers MUST return
        # HTTP status `400 Bad Request`"
        return _refuse(400, mismatch, _PAGE + "server-validation.3")
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

"""What a Streamable HTTP body holds, read with the connection's own JSON-RPC reader.

Theory of operation
-------------------
Streamable HTTP answers a POST by what its body holds: 202 for notifications and
responses, a stream (or one JSON body) that ends with the response for a request, and a
400 for a body that is none of these.  So the transport must know, for each message of a
body, its kind and its id, before the connection has handled it.

That reading must agree with the connection's, byte for byte.  If the transport saw
"a request with id 7" where the connection saw a parse error, the POST would wait for a
response to 7 that never comes: the connection answers a parse error with id null.  So
this module reads a body with exactly the functions the connection uses,
:func:`~mcp_ref._jsonrpc.decode` (strict UTF-8, no BOM, one JSON value, bounded depth)
and :func:`~mcp_ref._jsonrpc.classify` (the JSON-RPC envelope, MCP's rules on ids).  A
body it accepts is one whose every message the connection will take with the same kind
and id; a body it refuses gets a 400 carrying the JSON-RPC error the connection would
have sent, with the request's id wherever it can be read.

No exception a body can cause escapes: decoding catches ``RecursionError`` (nesting past
the scanner's depth), and bodies are bounded in size before they get here
(``HttpLimits.max_body_bytes``).

The same reader serves the other direction: a client routing the messages a server
sent (:func:`message_info`), reading the version an ``initialize`` result names
(:func:`negotiated_version`) and the JSON-RPC error in an HTTP error's body
(:func:`error_of`); and a server routing its own messages.  So no transport reads JSON.
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from . import _jsonrpc as rpc
from ._errors import INVALID_REQUEST, PARSE_ERROR, RemoteProtocolError
from ._framing import PEEK_BYTES
from ._http import HttpError, MessageKind, error_response_body, http_error
from .events import RequestId

__all__ = [
    "MessageInfo",
    "error_of",
    "message_info",
    "negotiated_version",
    "read_post_body",
    "with_request_id",
]

_KINDS: Final = {
    rpc.REQUEST: MessageKind.REQUEST,
    rpc.NOTIFICATION: MessageKind.NOTIFICATION,
    rpc.RESPONSE: MessageKind.RESPONSE,
    rpc.ERROR: MessageKind.RESPONSE,
}

_BODY_CLAUSE: Final = "2025-06-18/basic/transports#sending-messages-to-the-server.4"


@attrs.frozen
class MessageInfo:
    """The kind, id and method of one JSON-RPC message, as the connection reads it."""

    kind: MessageKind
    """Request, notification or response (a result or an error)."""
    id: RequestId | None
    """The request id (None for a notification, or an error response without id)."""
    method: str | None
    """The method of a request or notification; None for a response."""
    cancels: RequestId | None = None
    """For ``notifications/cancelled``: the ``requestId`` it names, when legal."""


def _info(obj: Any) -> MessageInfo:
    """The :class:`MessageInfo` of one decoded message.

    Raises:
        RemoteProtocolError: :func:`~mcp_ref._jsonrpc.classify` refused it.
    """
    kind, rid, method, payload = rpc.classify(obj)
    cancels = None
    if method == "notifications/cancelled" and type(payload) is dict:
        named = payload.get("requestId")
        cancels = named if rpc.valid_id(named) else None
    return MessageInfo(_KINDS[kind], rid, method, cancels)


def message_info(data: bytes) -> MessageInfo | None:
    """Kind, id and method of one whole message (no batch), or None when the connection
    would refuse it (not UTF-8 JSON, not a JSON-RPC message).

    Args:
        data: one message, UTF-8 JSON, no framing.

    Source: 2025-06-18/basic#messages (the three kinds and their fields).
    """
    try:
        return _info(rpc.decode(data))
    except RemoteProtocolError:
        return None


def _refusal(code: int, message: str, rid: RequestId | None) -> HttpError:
    """A 400 whose body is the JSON-RPC error ``code`` answering ``rid`` (None: no id)."""
    # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.6
    # "If the server cannot accept the input, it MUST return an HTTP error status code
    # (e.g., 400 Bad Request)"
    # Spec: 2026-07-28/basic/transports/streamable-http#sending-messages.8
    # "If the server cannot accept it, it MUST return an HTTP error status code (e.g., `400 Bad
    # Request`)."
    base = http_error(400, message, clause=_BODY_CLAUSE, code=code)
    if rid is None:
        return base
    return with_request_id(base, rid)


def read_post_body(body: bytes, *, max_items: int = 64) -> list[MessageInfo] | HttpError:
    """Read a POST body as the connection will: one message, or a batch of them.

    Args:
        body: the whole body, in bytes.
        max_items: the most messages a batch may hold (the connection's bound on
            requests in flight; a larger batch is refused whole).

    Returns:
        One :class:`MessageInfo` per message, in order (a batch gives several), or the
        :class:`~mcp_ref._http.HttpError` to answer with: 400 whose body is a JSON-RPC
        error with code -32700 (not UTF-8 JSON, as the connection decodes it), -32600
        (not a message, an empty or too large batch) or -32602 (params not an object),
        and the request's id wherever it can be read.

    Source: 2025-06-18/basic/transports#sending-messages-to-the-server.4 ("The body of
    the POST request MUST be a single JSON-RPC request, notification, or response");
    2025-03-26/basic/transports (a body may be a batch); JSON-RPC 2.0 section 5.1.
    """
    try:
        obj = rpc.decode(body)
    except RemoteProtocolError as exc:
        # The id of a request whose body is broken after it can still be read.
        rid, is_request = rpc.peek(body[:PEEK_BYTES])
        return _refusal(PARSE_ERROR, exc.message, rid if is_request else None)
    items = obj if type(obj) is list else None
    if items is None:
        try:
            return [_info(obj)]
        except RemoteProtocolError as exc:
            return _refusal(exc.code, exc.message, exc.request_id)
    if not items:
        return _refusal(INVALID_REQUEST, "invalid request: empty batch", None)
    if len(items) > max_items:
        return _refusal(
            INVALID_REQUEST, f"invalid request: batch of more than {max_items} messages", None
        )
    out: list[MessageInfo] = []
    for item in items:
        try:
            out.append(_info(item))
        except RemoteProtocolError as exc:
            return _refusal(exc.code, exc.message, exc.request_id)
    return out


def with_request_id(err: HttpError, rid: RequestId) -> HttpError:
    """``err`` with a JSON-RPC error body that answers ``rid`` (same status, headers,
    message and code); ``err`` itself when it has no body.

    Use it when a refused POST held one request whose id could be read, so the client
    can tell which request the error answers.

    Source: JSON-RPC 2.0 section 5 (the error response carries the request's id when
    it can be detected).
    """
    if err.code is None:
        return err
    payload = error_response_body(err.code, err.detail, rid)
    headers = tuple(
        (k, str(len(payload)).encode("ascii")) if k == b"content-length" else (k, v)
        for k, v in err.headers
    )
    return attrs.evolve(err, headers=headers, body=payload)


def negotiated_version(data: bytes) -> str | None:
    """The ``protocolVersion`` of an ``initialize`` result message, or None (not a
    result, no such field, or not a printable ASCII string).

    Source: 2025-06-18/basic/lifecycle#version-negotiation (the server's answer names
    the version); 2025-06-18/basic/transports#protocol-version-header (the client
    sends it on every later request).
    """
    try:
        kind, _, _, result = rpc.classify(rpc.decode(data))
    except RemoteProtocolError:
        return None
    version = (
        result.get("protocolVersion") if kind == rpc.RESPONSE and type(result) is dict else None
    )
    if type(version) is str and version.isascii() and version.isprintable():
        return version
    return None


def error_of(body: bytes) -> tuple[int, str] | None:
    """The code and message of the JSON-RPC error response in an HTTP error's body, or
    None when the body holds none.

    Source: 2025-06-18/basic/transports#sending-messages-to-the-server.7 ("The HTTP
    response body MAY comprise a JSON-RPC error response that has no ``id``").
    """
    try:
        obj = rpc.decode(body)
    except RemoteProtocolError:
        return None
    error = obj.get("error") if type(obj) is dict else None
    if type(error) is dict and type(error.get("code")) is int and type(error.get("message")) is str:
        return error["code"], error["message"]
    return None

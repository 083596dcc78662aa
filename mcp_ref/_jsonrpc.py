"""JSON-RPC 2.0 envelopes: decode a line into a message, encode a message into bytes.

Theory of operation
-------------------
This module knows JSON-RPC 2.0 plus MCP's restrictions on it, and nothing about MCP
methods.  :func:`decode` turns one framed line into a Python value (-32700 on bad
UTF-8 or bad JSON); :func:`classify` checks one decoded value and says whether it is a
request, a notification, a response or an error response, enforcing:

* ``"jsonrpc": "2.0"``;
* ids are strings or integers, never null, never booleans or floats, and are kept
  exactly as received ("7" is not 7);
* a response has ``result`` or ``error``, never both;
* ``params`` is an object, ``error`` an object with an integer ``code`` and a string
  ``message``.

Failures raise :class:`RemoteProtocolError` carrying the ready error response (to the
request's id when it could be read, else id null).  :func:`encode` is the reverse:
compact UTF-8 JSON, one line (control characters inside strings are escaped).
"""

from __future__ import annotations

import json
from json.encoder import c_encode_basestring, c_make_encoder  # type: ignore[attr-defined]
from typing import Any

from ._errors import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, RemoteProtocolError
from .events import ErrorResponse

__all__ = [
    "ERROR",
    "NOTIFICATION",
    "REQUEST",
    "RESPONSE",
    "classify",
    "decode",
    "encode",
    "error",
    "error_event",
    "error_reply",
    "notification",
    "peek",
    "refuse",
    "request",
    "result",
    "valid_id",
]

# The kinds of message classify() tells apart.
REQUEST, NOTIFICATION, RESPONSE, ERROR = range(4)

_loads = json.loads
_scan_once = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_dumps_ascii = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


def _no_default(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# JSONEncoder.encode builds a new C encoder on every call; build it once.  markers None
# skips the cycle check: a cyclic value ends in RecursionError, caught in encode.
_c_encode = c_make_encoder(
    None, _no_default, c_encode_basestring, None, ":", ",", False, False, False
)


def valid_id(value: object) -> bool:
    """True if ``value`` is a legal MCP request id: a str, or an int that is not a bool."""
    t = type(value)
    return t is str or t is int


def error_reply(request_id: Any, code: int, message: str, data: Any = None) -> ErrorResponse:
    """The error response to a bad message; id null unless ``request_id`` is legal
    (JSON-RPC 2.0 section 5)."""
    rid = request_id if valid_id(request_id) else None
    return ErrorResponse(id=rid, code=code, message=message, data=data)


def refuse(
    message: str, code: int, request_id: Any = None, *, reply: bool = True
) -> RemoteProtocolError:
    """The refusal of a message: ``reply`` to ``request_id`` (id null when not legal)."""
    rid = request_id if valid_id(request_id) else None
    hint = error_reply(rid, code, message) if reply else None
    return RemoteProtocolError(message, code=code, event_hint=hint, request_id=rid)


def request(rid: Any, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
    """A request's JSON-RPC object (no ``params`` member when ``params`` is None).
    Source: 2025-06-18/basic#requests."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: dict[str, Any] | None) -> dict[str, Any]:
    """A notification's JSON-RPC object: a request without an id.
    Source: 2025-06-18/basic#notifications."""
    # Spec: 2025-06-18/basic#notifications.2
    # "Notifications MUST NOT include an ID."
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def result(rid: Any, result: dict[str, Any]) -> dict[str, Any]:
    """A success response's JSON-RPC object.  Source: 2025-06-18/basic#responses."""
    # Spec: 2025-06-18/basic#responses.1
    # "Responses MUST include the same ID as the request they correspond to."
    # Spec: 2026-07-28/basic/index#result-responses.1
    # "Result responses MUST include the same ID as the request they correspond to."
    # Spec: 2026-07-28/basic/index#result-responses.2
    # "Result responses MUST include a `result` field."
    # Spec: 2025-11-25/basic/index#result-responses.1
    # "Result responses MUST include the same ID as the request they correspond to."
    # Spec: 2025-11-25/basic/index#result-responses.2
    # "Result responses MUST include a `result` field."
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def error(rid: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """An error response's JSON-RPC object (no ``data`` member when ``data`` is None).
    Source: 2025-06-18/basic#responses; JSON-RPC 2.0 section 5.1."""
    # Spec: 2026-07-28/basic/index#error-responses.2
    # "Error responses MUST include an `error` field with a `code` and `message`."
    # Spec: 2025-11-25/basic/index#error-responses.2
    # "Error responses MUST include an `error` field with a `code` and `message`."
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    # Spec: 2026-07-28/basic/index#error-responses.1
    # "Error responses MUST include the same ID as the request they correspond to"
    # Spec: 2025-11-25/basic/index#error-responses.1
    # "Error responses MUST include the same ID as the request they correspond to"
    return {"jsonrpc": "2.0", "id": rid, "error": error}


def error_event(rid: Any, error: dict[str, Any], method: str | None = None) -> ErrorResponse:
    """The event of a received ``error`` object (checked by :func:`classify`), answering
    our request ``method`` (None: not known)."""
    return ErrorResponse(
        id=rid, code=error["code"], message=error["message"], data=error.get("data"), method=method
    )


def decode(line: bytes) -> Any:
    """Decode one framed line (UTF-8 JSON); -32700 with an id-null reply when it is not."""
    try:
        # Spec: 2025-06-18/basic/transports#transports.1
        # "JSON-RPC messages MUST be UTF-8 encoded."
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise refuse(f"parse error: invalid UTF-8 at byte {exc.start}", PARSE_ERROR) from None
    try:
        # The C scanner directly (json.loads adds two Python-level layers); anything
        # but one clean value (surrounding whitespace, any error) goes the long way.
        obj, end = _scan_once(text, 0)
        if end == len(text):
            return obj
    except (StopIteration, ValueError, RecursionError):
        pass
    try:
        return _loads(text)
    except ValueError as exc:
        raise refuse(f"parse error: {exc}", PARSE_ERROR) from None
    except RecursionError:
        raise refuse("parse error: JSON nested too deeply", PARSE_ERROR) from None


def classify(obj: Any) -> tuple[int, Any, Any, Any]:
    """Check one decoded message (not a batch) and say what it is.

    Returns:
        ``(kind, id, method, payload)``: kind REQUEST, NOTIFICATION, RESPONSE or ERROR;
        id None for notifications; method None for responses; payload the params (or
        None), the result, or the error object.

    Raises:
        RemoteProtocolError: -32600 for a malformed envelope, -32602 for non-object
        params; with the error reply when the message was a request.
    """
    if type(obj) is not dict:
        raise refuse("invalid request: a message must be a JSON object", INVALID_REQUEST)
    rid = obj.get("id")
    method = obj.get("method")
    # Spec: 2025-06-18/basic#messages.1
    # "All messages between MCP clients and servers MUST follow the JSON-RPC 2.0 specification."
    if obj.get("jsonrpc") != "2.0":
        raise refuse(
            'invalid request: "jsonrpc" must be "2.0"',
            INVALID_REQUEST,
            rid,
            reply=method is not None
            or ("id" in obj and "result" not in obj and "error" not in obj),
        )
    if method is not None:
        if type(method) is not str:
            raise refuse('invalid request: "method" must be a string', INVALID_REQUEST, rid)
        params = obj.get("params")
        is_request = "id" in obj
        # Spec: 2025-06-18/basic#requests.1
        # "Requests MUST include a string or integer ID."
        # Spec: 2025-06-18/basic#requests.2
        # "Unlike base JSON-RPC, the ID MUST NOT be `null`."
        if is_request and not valid_id(rid):
            raise refuse(
                "invalid request: id must be a string or an integer, not "
                + ("null" if rid is None else type(rid).__name__),
                INVALID_REQUEST,
            )
        # Spec: 2025-06-18/basic#notifications.1
        # "The receiver MUST NOT send a response."
        if params is not None and type(params) is not dict:
            why = 'invalid params: "params" must be an object'
            raise refuse(why, INVALID_PARAMS, rid, reply=is_request)
        return (REQUEST if is_request else NOTIFICATION), rid, method, params  # (rid: None)
    # A response: never answered, so every failure below carries no reply.
    has_result = "result" in obj
    has_error = "error" in obj
    if has_result and has_error:
        # Spec: 2025-06-18/basic#responses.3
        # "A response MUST NOT set both."
        raise refuse("invalid response: both result and error", INVALID_REQUEST, rid, reply=False)
    # Spec: 2025-06-18/basic#responses.2
    # "Either a `result` or an `error` MUST be set."
    if not has_result and not has_error:
        raise refuse(
            "invalid message: neither a method nor a result or error",
            INVALID_REQUEST,
            rid,
            reply="id" in obj,
        )
    if has_result:
        # Spec: 2025-06-18/basic#responses.1
        # "Responses MUST include the same ID as the request they correspond to."
        if not valid_id(rid):
            raise refuse(
                "invalid response: id must be a string or an integer", INVALID_REQUEST, reply=False
            )
        return RESPONSE, rid, None, obj["result"]
    error = obj["error"]
    # Spec: 2025-06-18/basic#responses.4
    # "Results MAY follow any JSON object structure, while errors MUST include an error code and
    # message at minimum."
    # Spec: 2025-06-18/basic#responses.5
    # "Error codes MUST be integers."
    if (
        type(error) is not dict
        or type(error.get("code")) is not int
        or type(error.get("message")) is not str
    ):
        raise refuse(
            "invalid error response: error must be an object with an integer code and a string message",
            INVALID_REQUEST,
            rid,
            reply=False,
        )
    if rid is not None and not valid_id(rid):
        raise refuse("invalid error response: bad id", INVALID_REQUEST, reply=False)
    return ERROR, rid, None, error


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def peek(prefix: bytes) -> tuple[Any, bool]:
    """``(id or None, has_method)`` of a message too long (or too broken) to decode,
    read from its first bytes, so its error answers the right id.

    Walks the top-level object (strings, nesting) for an ``"id"`` whose value ends
    inside the prefix and is a legal id, and a ``"method"`` key.  Never raises: input
    it cannot read gives no id, and the reply gets id null (JSON-RPC 2.0 section 5).
    """
    text = prefix.decode("utf-8", "replace")
    i = _skip_ws(text, 0)
    if i >= len(text) or text[i] != "{":
        return None, False
    found: Any = None
    has_method = False
    depth, expect_key, in_string = 0, False, False
    n = len(text)
    while i < n:
        c = text[i]
        if in_string:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_string = False
            i += 1
            continue
        if c == '"':
            if depth == 1 and expect_key:
                try:
                    key, j = _scan_once(text, i)
                except (StopIteration, ValueError):
                    break
                j = _skip_ws(text, j)
                if j >= n or text[j] != ":":
                    break
                j = _skip_ws(text, j + 1)
                if key == "method":
                    has_method = True
                elif key == "id":
                    try:
                        value, end = _scan_once(text, j)
                    except (StopIteration, ValueError, RecursionError):
                        break  # RecursionError: nested too deep to be an id anyway
                    end = _skip_ws(text, end)
                    if end < n and text[end] in ",}" and valid_id(value):
                        found = value
                expect_key = False
                i = j
                continue
            in_string = True
        elif c in "{[":
            depth += 1
            expect_key = depth == 1
        elif c in "}]":
            depth -= 1
        elif c == "," and depth == 1:
            expect_key = True
        i += 1
    return found, has_method


def encode(message: dict[str, Any], *, newline: bool = False) -> bytes:
    """Serialize one JSON-ready message as compact UTF-8 JSON, with the framing
    newline when ``newline``; ValueError for NaN, infinity, non-JSON values, or
    nesting too deep (or cyclic)."""
    try:
        text = "".join(_c_encode(message, 0))
    except TypeError as exc:
        raise ValueError(str(exc)) from None
    except RecursionError:
        raise ValueError("message nested too deeply (or cyclic)") from None
    if newline:
        text += "\n"
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates (legal in Python str, not in UTF-8): escape them instead.
        ascii_text = _dumps_ascii(message) + ("\n" if newline else "")
        return ascii_text.encode("ascii")

"""The Streamable HTTP client's part of the modern era (2026-07-28), sans-IO: the headers
that mirror a request's body, and the tool definitions those headers come from.

Theory of operation
-------------------
From 2026-07-28 every POST says in its headers what its body holds, so that a load
balancer or gateway can route it without parsing JSON:

* ``MCP-Protocol-Version``: the ``io.modelcontextprotocol/protocolVersion`` of the
  request's ``_meta`` (on every POST);
* ``Mcp-Method``: the method (every request);
* ``Mcp-Name``: ``params.name`` of ``tools/call`` and ``prompts/get``, ``params.uri`` of
  ``resources/read``;
* ``Mcp-Param-{Name}``: for ``tools/call``, each argument the tool's ``inputSchema``
  marks with ``x-mcp-header``.

A value that is not plain printable ASCII (or has leading or trailing whitespace, or
looks like the sentinel) travels as ``=?base64?<Base64 of its UTF-8>?=``
(:func:`encode_header_value`; :func:`mcp_ref._modern.decode_header_value` reads it).

The ``x-mcp-header`` names come from ``tools/list``: :class:`ToolHeaders` reads each
listed tool, keeps where its annotated arguments are, and drops a tool whose annotations
break the rules (:func:`header_annotations`), so the caller never sees it.  The HTTP
client core (:mod:`mcp_ref._http_client`) calls :func:`request_headers` for each POST
and :meth:`ToolHeaders.filter_result` for each answer to a modern ``tools/list``.
Nothing here does I/O.

Source: 2026-07-28/basic/transports/streamable-http#request-metadata (the protocol
version header, standard request headers, custom headers from tool parameters, value
encoding, client behavior).
"""

from __future__ import annotations

import base64
import logging
import re
from collections.abc import Mapping
from typing import Any, Final

from . import _jsonrpc as rpc
from ._errors import MODERN_ERROR_CODES, RemoteProtocolError
from ._http_streams import request_key
from ._modern import PROTOCOL_VERSION_KEY, header_chains, is_token
from .events import RequestId

__all__ = [
    "MCP_METHOD",
    "MCP_NAME",
    "MCP_PROTOCOL_VERSION",
    "ModernHttp",
    "ToolHeaders",
    "encode_header_value",
    "header_annotations",
    "param_value",
    "request_headers",
]

log = logging.getLogger("mcp_ref.client")

MCP_PROTOCOL_VERSION: Final = b"mcp-protocol-version"
MCP_METHOD: Final = b"mcp-method"
MCP_NAME: Final = b"mcp-name"
_PARAM_PREFIX: Final = b"mcp-param-"

_NAMED: Final = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
"""The methods whose ``Mcp-Name`` mirrors a params field, and which field."""

_SENTINEL: Final = ("=?base64?", "?=")
_PLAIN: Final = re.compile(r"[\x20-\x7e]*")
_SAFE_INTEGER: Final = 2**53 - 1
_PRIMITIVE: Final = ("string", "integer", "boolean")

Path = tuple[str, ...]
"""Where an argument is: the chain of ``properties`` keys from the schema's root."""


def encode_header_value(value: str) -> str:
    """``value`` as a header carries it: itself when it is printable ASCII with no
    leading or trailing whitespace and does not look like the sentinel, else
    ``=?base64?<Base64 of its UTF-8>?=``.

    Source: 2026-07-28/basic/transports/streamable-http#value-encoding.
    """
    head, tail = _SENTINEL
    # Spec: 2026-07-28/basic/transports/streamable-http#value-encoding.2
    # "When a value cannot be safely represented as a plain ASCII header value (e.g., it
    # contains non-ASCII characters, control characters, or has leading/trailing
    # whitespace), clients MUST use Base64 encoding of the UTF-8 representation"
    # Spec: 2026-07-28/basic/transports/streamable-http#value-encoding.7
    # "To avoid ambiguity, clients MUST also Base64-encode any plain-ASCII value that
    # matches the sentinel pattern"
    plain = (
        _PLAIN.fullmatch(value) is not None
        and value == value.strip(" \t")
        and not (value.startswith(head) and value.endswith(tail))
    )
    if plain:
        return value
    return head + base64.b64encode(value.encode("utf-8")).decode("ascii") + tail


def param_value(value: Any) -> str | None:
    """An argument's value as ``Mcp-Param-*`` carries it before encoding: a string as
    it is, an integer in decimal, a boolean as ``true``/``false``; None (no header)
    for null, a missing value or any other type.

    Source: 2026-07-28/basic/transports/streamable-http#value-encoding (type conversion).
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value
    return None


def _annotated(schema: Any, inside_properties: bool = False) -> int:
    """How many ``x-mcp-header`` annotations ``schema`` holds anywhere (a property
    named ``x-mcp-header`` is a name, not an annotation)."""
    count = 0
    if isinstance(schema, dict):
        for key, value in schema.items():
            if inside_properties:
                count += _annotated(value)
            elif key == "x-mcp-header":
                count += 1
            else:
                count += _annotated(value, key == "properties")
    elif isinstance(schema, list):
        count += sum(_annotated(item) for item in schema)
    return count


def header_annotations(input_schema: Any) -> list[tuple[Path, str]] | str:
    """The ``x-mcp-header`` annotations of a tool's ``inputSchema``, as ``(path to the
    argument, header name)`` pairs, or why the tool definition is invalid.

    Source: 2026-07-28/basic/transports/streamable-http#schema-extension.
    """
    found = list(header_chains(input_schema))
    # Spec: 2026-07-28/basic/transports/streamable-http#schema-extension.7
    # "MUST only be applied to properties that are statically reachable from the schema
    # root: reachable via a chain consisting solely of `properties` keys."
    if _annotated(input_schema) != len(found):
        return "an x-mcp-header annotation outside a chain of properties"
    seen: set[str] = set()
    out: list[tuple[Path, str]] = []
    for path, name, prop in found:
        where = ".".join(path)
        # Spec: 2026-07-28/basic/transports/streamable-http#schema-extension.1
        # "MUST NOT be empty"
        # Spec: 2026-07-28/basic/transports/streamable-http#schema-extension.2
        # "MUST match HTTP field-name token syntax"
        # Spec: 2026-07-28/basic/transports/streamable-http#schema-extension.3
        # "MUST NOT contain control characters"
        if not is_token(name):
            return f"x-mcp-header of {where} is not an HTTP token: {name!r}"
        # Spec: 2026-07-28/basic/transports/streamable-http#schema-extension.4
        # "MUST be case-insensitively unique among all `x-mcp-header` values in the
        # `inputSchema`"
        if name.lower() in seen:
            return f"x-mcp-header {name!r} appears twice"
        seen.add(name.lower())
        # Spec: 2026-07-28/basic/transports/streamable-http#schema-extension.5
        # "MUST only be applied to parameters with primitive types (integer, string,
        # boolean)."
        kind = prop.get("type")
        if kind not in _PRIMITIVE:
            return f"x-mcp-header {name!r} is on {where}, of type {kind!r}"
        out.append((path, name))
    return out


class ToolHeaders:
    """The ``x-mcp-header`` annotations of the tools a server listed, by tool name.

    Source: 2026-07-28/basic/transports/streamable-http#custom-headers-from-tool-parameters.
    """

    def __init__(self) -> None:
        self._tools: dict[str, list[tuple[Path, str]]] = {}

    def filter_result(self, result: Mapping[str, Any]) -> dict[str, Any] | None:
        """A ``tools/list`` result (decoded JSON) without the tools whose annotations
        are invalid (a warning logged for each), remembering the others'; None when
        nothing was dropped (the result stands as it is)."""
        tools = result.get("tools")
        if not isinstance(tools, list):
            return None
        kept = []
        for tool in tools:
            name = tool.get("name") if isinstance(tool, dict) else None
            read = header_annotations(tool.get("inputSchema")) if isinstance(tool, dict) else "?"
            if isinstance(read, str):
                # Spec: 2026-07-28/basic/transports/streamable-http#schema-extension.10
                # "Rejection means the client MUST exclude the invalid tool from the result
                # of `tools/list`."
                # Spec: 2026-07-28/basic/transports/streamable-http#schema-extension.11
                # "Clients SHOULD log a warning when rejecting a tool definition, including
                # the tool name and the reason for rejection."
                # Spec: 2026-07-28/server/tools#x-mcp-header.9
                # "Rejection means the client MUST exclude the invalid tool from the result of
                # `tools/list`."
                log.warning("tools/list: tool %r left out: %s", name, read)
                continue
            if isinstance(name, str):
                self._tools[name] = read
            kept.append(tool)
        if len(kept) == len(tools):
            return None
        return {**result, "tools": kept}

    def headers_for(self, name: Any, arguments: Any) -> list[tuple[bytes, bytes]]:
        """The ``Mcp-Param-*`` headers of a call of tool ``name`` with ``arguments``."""
        out: list[tuple[bytes, bytes]] = []
        for path, header in self._tools.get(name, []) if isinstance(name, str) else []:
            value: Any = arguments
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            # Spec: 2026-07-28/basic/transports/streamable-http#schema-extension.6
            # "Integer values MUST be within the safe range for JavaScript"
            if isinstance(value, int) and not isinstance(value, bool):
                if abs(value) > _SAFE_INTEGER:
                    continue
            text = param_value(value)
            if text is None:  # null or absent: no header
                continue
            out.append(
                # Spec: 2026-07-28/basic/transports/streamable-http#value-encoding.1
                # "Clients MUST encode parameter values before including them in HTTP headers to
                # ensure safe transmission and prevent injection attacks."
                (_PARAM_PREFIX + header.lower().encode("ascii"), encode_header_value(text).encode())
            )
        return out


def request_headers(
    message: Any, tools: ToolHeaders, version: str | None
) -> list[tuple[bytes, bytes]]:
    """The modern headers of one POSTed message (decoded JSON): for a request whose
    ``_meta`` names a version, ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``
    where its method has one and the ``Mcp-Param-*`` of a ``tools/call``; for any other
    message ``MCP-Protocol-Version: version`` when the session is modern (``version``
    not None), else nothing.

    Source: 2026-07-28/basic/transports/streamable-http#protocol-version-header,
    #standard-request-headers, #client-behavior.
    """
    if not isinstance(message, dict):
        return []
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    meta = params.get("_meta")
    stated = meta.get(PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else None
    method = message.get("method")
    if not isinstance(stated, str) or not isinstance(method, str) or "id" not in message:
        # Spec: 2026-07-28/basic/transports/streamable-http#protocol-version-header.1
        # "Every POST request to the MCP endpoint MUST include an `MCP-Protocol-Version`
        # header."
        return [] if version is None else [(MCP_PROTOCOL_VERSION, version.encode("ascii"))]
    # Spec: 2026-07-28/basic/transports/streamable-http#protocol-version-header.2
    # "The header value MUST match the `io.modelcontextprotocol/protocolVersion` field
    # carried in the request body's `_meta`."
    # Spec: 2026-07-28/basic/transports/streamable-http#standard-request-headers.1
    # "These headers are REQUIRED for compliance."
    out = [
        (MCP_PROTOCOL_VERSION, stated.encode("ascii", "replace")),
        (MCP_METHOD, encode_header_value(method).encode("ascii")),
    ]
    field = _NAMED.get(method)
    if field is not None and isinstance(params.get(field), str):
        # Spec: 2026-07-28/basic/transports/streamable-http#standard-request-headers.2
        # "If the `Mcp-Name` source value cannot be safely represented as a plain ASCII
        # header value, clients MUST encode it using the Base64 sentinel format described
        # in Value Encoding."
        out.append((MCP_NAME, encode_header_value(params[field]).encode("ascii")))
    if method == "tools/call":
        # Spec: 2026-07-28/basic/transports/streamable-http#client-behavior.1
        # "When constructing a `tools/call` request via HTTP transport, the client MUST:"
        # Spec: 2026-07-28/basic/transports/streamable-http#custom-headers-from-tool-parameters.3
        # "When a server's tool definition includes `x-mcp-header` annotations, conforming clients
        # MUST mirror the designated parameter values into HTTP headers."
        out += tools.headers_for(params.get("name"), params.get("arguments"))
    return out


_MODERN_MARK: Final = b'"' + PROTOCOL_VERSION_KEY.encode() + b'"'
"""In a request's bytes: it is modern (its ``_meta`` names a version)."""
_CANCELLED: Final = b'"notifications/cancelled"'


class ModernHttp:
    """The modern era's part of one HTTP client core (:class:`~mcp_ref._http_client.
    HttpClientCore` holds one as ``modern``): the headers of each POST, the tools listed
    and their annotations, the modern errors of ``400`` answers.  A handshake session
    never gets past the byte search for the ``_meta`` version key.

    Attributes:
        version: the version of the modern requests sent (None: none yet, or the
            client fell back to ``initialize``); every POST of a modern session names it.
        tools: the ``x-mcp-header`` annotations of the tools listed.
    """

    def __init__(self) -> None:
        self.version: str | None = None
        self.tools = ToolHeaders()
        self._refusals: dict[Any, Any] = {}  # request key -> the error of its 400
        self._tool_lists: set[Any] = set()  # keys of modern tools/list awaiting answers

    def outgoing(self, method: str | None, data: bytes, key: Any) -> None:
        """Note a request about to be POSTed (a modern ``tools/list``: its answer is
        filtered by :meth:`inbound`)."""
        if method == "tools/list" and _MODERN_MARK in data:
            self._tool_lists.add(key)

    def headers(self, body: bytes, *, initialized: bool) -> list[tuple[bytes, bytes]]:
        """The headers mirroring a POST's ``body`` (:func:`request_headers`): none for a
        handshake session (``initialized``, or no modern request yet)."""
        if initialized or (self.version is None and _MODERN_MARK not in body):
            return []
        try:
            message = rpc.decode(body)
        except RemoteProtocolError:  # (the connection made it: never)
            return []
        out = request_headers(message, self.tools, self.version)
        for name, value in out:
            if name == MCP_PROTOCOL_VERSION:
                self.version = value.decode("ascii")
        return out

    def unsent(self, data: bytes, *, initialized: bool) -> bool:
        """Whether a one-way message of a modern session is not POSTed at all: its
        ``notifications/cancelled`` (closing the request's stream, which the driver
        does, is the cancellation on Streamable HTTP: "No `notifications/cancelled`
        message is required or expected", 2026-07-28/basic/patterns/cancellation
        #transport-specific-cancellation)."""
        if initialized or self.version is None or _CANCELLED not in data:
            return False
        try:
            message = rpc.decode(data)
        except RemoteProtocolError:
            return False
        return isinstance(message, dict) and message.get("method") == "notifications/cancelled"

    def refused(self, key: Any, body: bytes) -> None:
        """Keep the modern JSON-RPC error (-32020..-32022) in an HTTP error's ``body``
        answering the request awaited under ``key``, for :meth:`failure`."""
        try:
            message = rpc.decode(body)
        except RemoteProtocolError:
            return
        error = message.get("error") if isinstance(message, dict) else None
        if isinstance(error, dict) and error.get("code") in MODERN_ERROR_CODES:
            self._refusals[key] = error

    def take_error(self, key: Any) -> dict[str, Any] | None:
        """The modern error kept for the request awaited under ``key`` (forgotten
        now), or None."""
        error: dict[str, Any] | None = self._refusals.pop(key, None)
        return error

    def failure(self, rid: RequestId) -> bytes | None:
        """The error response to our request ``rid`` made of the modern error its HTTP
        refusal carried (code, message and data), or None.

        Source: 2026-07-28/basic/transports/streamable-http#backward-compatibility.
        """
        error = self.take_error(request_key(rid))
        if error is None:
            return None
        return rpc.encode({"jsonrpc": "2.0", "id": rid, "error": error})

    def inbound(self, data: bytes, key: Any) -> bytes:
        """One message the server sent, as the connection should read it: the answer to
        a modern ``tools/list`` (awaited under ``key``) without the tools whose
        ``x-mcp-header`` annotations are invalid; any other message as it is.

        Source: 2026-07-28/basic/transports/streamable-http#schema-extension.9.
        """
        if key not in self._tool_lists:
            return data
        try:
            message = rpc.decode(data)
        except RemoteProtocolError:
            return data
        if not isinstance(message, dict) or request_key(message.get("id")) != key:
            return data
        self._tool_lists.discard(key)
        result = message.get("result")
        # Spec: 2026-07-28/basic/transports/streamable-http#schema-extension.9
        # "Clients using the Streamable HTTP transport MUST reject tool definitions where
        # any `x-mcp-header` value violates these constraints."
        # Spec: 2026-07-28/server/tools#x-mcp-header.8
        # "Clients using the Streamable HTTP transport MUST reject tool definitions where any
        # `x-mcp-header` value violates these constraints."
        # Spec: 2026-07-28/basic/transports/streamable-http#custom-headers-from-tool-parameters.2
        # "While the use of `x-mcp-header` is optional for servers, clients MUST support this
        # feature."
        kept = self.tools.filter_result(result) if isinstance(result, dict) else None
        if kept is None:
            return data
        return rpc.encode({**message, "result": kept})

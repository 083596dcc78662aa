"""The modern era's per-request rules (2026-07-28): ``_meta``, its errors, the era.

Theory of operation
-------------------
From 2026-07-28 there is no ``initialize``: each request says in its own ``params._meta``
which protocol version it speaks, who the client is and what it can do, and the server
judges each request alone.  This module holds those rules as pure functions; the
connection consults them through :mod:`mcp_ref._modern_connection`, beside the second
lifecycle table (:mod:`mcp_ref._state_modern`).  Nothing here does I/O or keeps a clock; the one object with
state, :class:`PeerEra`, only remembers a decision.

A server reading a request calls, in order:

1. :func:`era_of_request` on the decoded message: ``"modern"`` (the request carries the
   version key in ``_meta``), ``"legacy"`` (it is ``initialize``) or None (neither: a
   legacy request, to be judged by the handshake table);
2. for a modern one, :func:`read_request_meta`: the :class:`RequestContext` (version,
   capabilities, client, log level), or the ready :class:`~mcp_ref.events.ErrorResponse`
   to send: -32602 for a malformed or missing required field, -32022
   (:data:`UNSUPPORTED_PROTOCOL_VERSION`) with the supported versions;
3. where a method needs a client capability, :func:`require_capabilities`: None, or the
   -32021 (:data:`MISSING_REQUIRED_CLIENT_CAPABILITY`) response listing what is missing;
4. on Streamable HTTP, :func:`check_headers`: None, or the -32020
   (:data:`HEADER_MISMATCH`) response when ``MCP-Protocol-Version``, ``Mcp-Method`` or
   ``Mcp-Name`` is missing or disagrees with the body; the ``Mcp-Param-*`` headers of a
   ``tools/call`` follow the ``x-mcp-header`` annotations :func:`header_chains` finds.

On Streamable HTTP every one of these errors is sent with status ``400 Bad Request``
(2026-07-28/basic/index#_meta.4 and #_meta.8; the schema's descriptions of the three
errors); choosing the status is the HTTP layer's part.

A client builds each request's ``_meta`` with :func:`request_meta`, and decides the
server's era from its answer to a probe (:func:`era_of_reply`): a result or a
recognised modern error means modern, anything else (another error, or no answer)
legacy.  :class:`PeerEra` keeps that answer for the peer's lifetime.

The error codes live beside the others in ``mcp_ref/_errors.py``; they are imported
here, so ``_modern.UNSUPPORTED_PROTOCOL_VERSION`` still names them.

Spec clauses are cited as ``2026-07-28/<page>#<section>.<n>``, numbered as spec_map's
extractor numbers them (``spec_map/clauses/2026-07-28.json``).

Source: 2026-07-28/basic/index (``_meta``, error codes), 2026-07-28/basic/versioning,
2026-07-28/basic/transports/streamable-http (request headers, server validation),
2026-07-28/basic/transports/stdio (backward compatibility); the 2026-07-28 schema
(``RequestMetaObject``, the three error definitions).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, Literal

import attrs

from . import types
from ._convert import ConversionError, structure, structure_fn, unstructure
from ._errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    MODERN_ERROR_CODES,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from .events import ErrorResponse

__all__ = [
    "CLIENT_CAPABILITIES_KEY",
    "CLIENT_INFO_KEY",
    "HEADER_MISMATCH",
    "LOG_LEVEL_KEY",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "MODERN_ERROR_CODES",
    "MODERN_VERSIONS",
    "PROTOCOL_VERSION_KEY",
    "SERVER_INFO_KEY",
    "SUBSCRIPTION_ID_KEY",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "Era",
    "PeerEra",
    "RequestContext",
    "check_headers",
    "decode_header_value",
    "era_of_reply",
    "era_of_request",
    "header_chains",
    "is_token",
    "read_request_meta",
    "request_meta",
    "require_capabilities",
]

MODERN_VERSIONS: Final = ("2026-07-28",)
"""The modern protocol versions mcp-ref speaks, newest first."""

Era = Literal["modern", "legacy"]
"""The two eras of the versioning page: per-request metadata, or ``initialize``."""

# --- the reserved _meta keys (2026-07-28/basic/index#_meta) ------------------------------

PROTOCOL_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
"""Request ``_meta``: the protocol version of this request (a string; required)."""
CLIENT_INFO_KEY: Final = "io.modelcontextprotocol/clientInfo"
"""Request ``_meta``: the client's ``Implementation`` (optional; clients SHOULD send it)."""
CLIENT_CAPABILITIES_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
"""Request ``_meta``: the client's ``ClientCapabilities`` for this request (required)."""
LOG_LEVEL_KEY: Final = "io.modelcontextprotocol/logLevel"
"""Request ``_meta``: the lowest ``LoggingLevel`` the server should emit for it."""
SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"
"""Result ``_meta``: the server's ``Implementation`` (servers SHOULD send it)."""
SUBSCRIPTION_ID_KEY: Final = "io.modelcontextprotocol/subscriptionId"
"""Notification ``_meta``: the id of the ``subscriptions/listen`` request it belongs to."""

_SCHEMA: Final = "2026-07-28"  # the schema revision whose _meta shapes are read


@attrs.frozen(kw_only=True)
class RequestContext:
    """What one modern request says about itself in ``params._meta``; the server judges
    the request by this alone.

    Source: 2026-07-28/basic/index#_meta (per-request protocol fields).
    """

    protocol_version: str
    """The version the request speaks (one of the supported ones: checked)."""
    client_capabilities: types.ClientCapabilities
    """The capabilities the client declares for this request (``{}`` declares none)."""
    client_info: types.Implementation | None = None
    """The client's name and version, when sent (self-reported: display and logs only)."""
    log_level: types.LoggingLevel | None = None
    """The lowest log level the server should emit for this request, when sent."""


def _invalid(request_id: types.RequestId, message: str) -> ErrorResponse:
    return ErrorResponse(id=request_id, code=INVALID_PARAMS, message=message)


def read_request_meta(
    params: Any,
    *,
    request_id: types.RequestId,
    supported: Sequence[str] = MODERN_VERSIONS,
    advertised: Sequence[str] | None = None,
) -> RequestContext | ErrorResponse:
    """Check one modern request's ``params._meta``; return its :class:`RequestContext`,
    or the error response to send instead (never raises).

    ``params`` is the request's decoded ``params`` (absent: None); ``request_id`` its id,
    echoed in the error; ``supported`` the modern versions this side serves;
    ``advertised`` the list sent in ``data.supported`` of -32022 (default
    ``supported``; a dual-era server adds its handshake versions, as the versioning
    page's example does).

    In order:

    * ``params`` or ``params._meta`` not an object, or no string
      ``io.modelcontextprotocol/protocolVersion``: -32602 (the request is malformed);
    * a version not in ``supported``: -32022, ``data = {"supported": [...],
      "requested": "<version>"}``.  Checked before the other keys, whose shape is that
      version's business;
    * no ``io.modelcontextprotocol/clientCapabilities``, or it, ``clientInfo`` or
      ``logLevel`` not of its schema type: -32602 naming the key.

    Other ``_meta`` keys (``progressToken``, trace context, extensions') are not
    looked at.
    """
    # Spec: 2026-07-28/basic/patterns/mrtr#multi-round-trip-requests.2
    # "Every request MUST include the required `_meta` fields"
    # Spec: 2026-07-28/server/tools#tools.1
    # "Every request MUST include the required `_meta` fields"
    # Spec: 2026-07-28/server/prompts#prompts.1
    # "Every request MUST include the required `_meta` fields"
    # Spec: 2026-07-28/server/resources#resources.1
    # "Every request MUST include the required `_meta` fields"
    # Spec: 2026-07-28/server/utilities/completion#completion.1
    # "Every request MUST include the required `_meta` fields"
    # Spec: 2026-07-28/server/utilities/pagination#pagination.1
    # "Every request MUST include the required `_meta` fields"
    # Spec: 2026-07-28/basic/index#_meta.3
    # "A request missing any required field is malformed; the server MUST reject it with
    # JSON-RPC error code `-32602` (Invalid params)."
    if not isinstance(params, dict):
        return _invalid(request_id, "missing params._meta (required by 2026-07-28)")
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        return _invalid(request_id, "missing params._meta (required by 2026-07-28)")
    version = meta.get(PROTOCOL_VERSION_KEY)
    if not isinstance(version, str):
        what = "missing" if version is None else "not a string:"
        return _invalid(request_id, f"_meta: {what} {PROTOCOL_VERSION_KEY}")
    # Spec: 2026-07-28/basic/versioning#protocol-version-negotiation.1
    # "If the server does not implement the requested version ... it MUST respond with an
    # UnsupportedProtocolVersionError listing the versions it does support"
    if version not in supported:
        return ErrorResponse(
            id=request_id,
            code=UNSUPPORTED_PROTOCOL_VERSION,
            message="Unsupported protocol version",
            data={
                "supported": list(supported if advertised is None else advertised),
                "requested": version,
            },
        )
    # Spec: 2026-07-28/basic/index#_meta.1
    # "Certain key names are reserved by MCP for protocol-level metadata, as specified below;
    # implementations MUST NOT make assumptions about values at these keys."
    # (each reserved key's value is read against its schema type, never assumed; reserved
    # keys of no rule here are not looked at)
    try:  # the schema's RequestMetaObject requires clientCapabilities too
        read = structure(meta, types.RequestMetaObject, _SCHEMA)
        level = meta.get(LOG_LEVEL_KEY)  # not in the schema's RequestMetaObject
        if level is not None:
            try:
                level = structure_fn(types.LoggingLevel)(level)
            except ConversionError as exc:
                raise exc.prefixed(LOG_LEVEL_KEY) from None
    except ConversionError as exc:
        return _invalid(request_id, f"_meta{'' if exc.path.startswith('[') else '.'}{exc}")
    return RequestContext(
        protocol_version=version,
        client_capabilities=read.client_capabilities,
        client_info=read.client_info,
        log_level=level,
    )


def request_meta(
    *,
    capabilities: types.ClientCapabilities,
    client_info: types.Implementation | None,
    protocol_version: str = MODERN_VERSIONS[0],
    log_level: types.LoggingLevel | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``_meta`` object a client puts in every modern request: the version, the
    capabilities (``ClientCapabilities()`` declares none), the client's name and
    version unless ``client_info`` is None, the log level if given, and ``extra`` keys
    (``progressToken``...) beside them.  A new dict each call.

    Source: 2026-07-28/basic/index#_meta.2 (required fields on every request) and
    #_meta.5 (clients SHOULD send clientInfo).
    """
    meta: dict[str, Any] = dict(extra or {})
    meta[PROTOCOL_VERSION_KEY] = protocol_version
    meta[CLIENT_CAPABILITIES_KEY] = unstructure(capabilities)
    if client_info is not None:
        meta[CLIENT_INFO_KEY] = unstructure(client_info)
    if log_level is not None:
        meta[LOG_LEVEL_KEY] = log_level
    return meta


def _missing(declared: Any, required: Mapping[str, Any]) -> dict[str, Any]:
    """The part of ``required`` (a capabilities object, nested) that ``declared`` (its
    JSON form) lacks: a key absent, or present without a nested key ``required`` names."""
    out: dict[str, Any] = {}
    for key, need in required.items():
        have = declared.get(key) if isinstance(declared, dict) else None
        if have is None or not isinstance(have, dict):
            out[key] = need
        elif isinstance(need, Mapping) and need:
            deeper = _missing(have, need)
            if deeper:
                out[key] = deeper
    return out


def missing_capabilities(declared: Any, required: Mapping[str, Any]) -> dict[str, Any]:
    """The part of ``required`` (a ``ClientCapabilities``-shaped JSON object, as for
    :func:`require_capabilities`) that the capabilities ``declared`` (typed, or None)
    lack; empty when none is missing.  Either era's server asks it before an input."""
    return _missing(unstructure(declared) if declared is not None else {}, required)


def require_capabilities(
    context: RequestContext,
    required: Mapping[str, Any],
    *,
    request_id: types.RequestId,
) -> ErrorResponse | None:
    """None if the request declared every capability in ``required``; else the -32021
    response whose ``data.requiredCapabilities`` lists those it lacks.

    ``required`` is a ``ClientCapabilities``-shaped JSON object: ``{"elicitation": {}}``
    needs the capability at all, ``{"elicitation": {"url": {}}}`` its URL mode too,
    ``{"sampling": {"tools": {}}}`` sampling with tools.  A capability counts as
    declared when its key holds an object (an empty one is a declaration).

    Source: 2026-07-28/basic/index#_meta.7; the schema's
    ``MissingRequiredClientCapabilityError``.
    """
    # Spec: 2026-07-28/basic/index#_meta.6
    # "A server MUST NOT rely on capabilities the client has not declared."
    # Spec: 2026-07-28/basic/index#_meta.7
    # "If processing a request requires a capability the client did not include in
    # `io.modelcontextprotocol/clientCapabilities`, the server MUST return a
    # MissingRequiredClientCapabilityError (`-32021`) whose `data.requiredCapabilities`
    # lists the missing capabilities."
    missing = _missing(unstructure(context.client_capabilities), required)
    if not missing:
        return None
    return ErrorResponse(
        id=request_id,
        code=MISSING_REQUIRED_CLIENT_CAPABILITY,
        message="Missing required client capability: " + ", ".join(sorted(missing)),
        data={"requiredCapabilities": missing},
    )


# --- Streamable HTTP: the headers that mirror the body ------------------------------------

_NAMED: Final = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
"""The methods whose ``Mcp-Name`` header mirrors a params field, and which field."""
_SENTINEL: Final = ("=?base64?", "?=")


def decode_header_value(value: str) -> str | None:
    """A mirrored header's value as the body would hold it: ``=?base64?<b64>?=`` decoded
    (UTF-8), any other value as it is; None when the sentinel's content is not valid
    Base64 of UTF-8 (a malformed header).

    Source: 2026-07-28/basic/transports/streamable-http#value-encoding.
    """
    head, tail = _SENTINEL
    # Spec: 2026-07-28/basic/transports/streamable-http#value-encoding.4
    # "These markers are case-sensitive and MUST appear exactly as shown (lowercase)."
    if not (value.startswith(head) and value.endswith(tail)):
        return value
    if len(value) < len(head) + len(tail):  # "=?base64?=": the two markers overlap
        return value
    # Spec: 2026-07-28/basic/transports/streamable-http#value-encoding.5
    # "Servers and intermediaries that need to inspect these values MUST decode them
    # accordingly."
    # Spec: 2026-07-28/basic/transports/streamable-http#value-encoding.6
    # "servers MUST decode an encoded `Mcp-Name` or `Mcp-Param-{Name}` value before
    # comparing it to the corresponding request body value"
    try:
        return base64.b64decode(value[len(head) : -len(tail)], validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def _mismatch(request_id: types.RequestId | None, message: str) -> ErrorResponse:
    return ErrorResponse(id=request_id, code=HEADER_MISMATCH, message=f"Header mismatch: {message}")


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def check_headers(headers: Mapping[str, str], message: Any) -> ErrorResponse | None:
    """None if a modern POST's mirrored headers agree with its body; else the -32020
    response to send (with HTTP 400).

    ``headers`` maps header names to values (names compared case-insensitively, values
    exactly); ``message`` is the decoded request.  Checked: ``MCP-Protocol-Version``
    against ``params._meta``'s version, ``Mcp-Method`` against ``method``, and, for
    ``tools/call``, ``prompts/get`` and ``resources/read``, ``Mcp-Name`` (Base64
    sentinel decoded) against ``params.name`` / ``params.uri``.  A missing header is a
    mismatch too.  The body itself is not judged here (:func:`read_request_meta` does).

    Source: 2026-07-28/basic/transports/streamable-http (protocol version header,
    standard request headers, server validation).
    """
    # Spec: 2026-07-28/basic/transports/streamable-http#case-sensitivity.1
    # "Clients and servers MUST use case-insensitive comparisons for header names."
    lower = {k.lower(): v for k, v in headers.items()}
    body = message if isinstance(message, dict) else {}
    request_id = body.get("id")
    if not isinstance(request_id, (str, int)) or isinstance(request_id, bool):
        request_id = None
    params = _object(body.get("params"))
    meta = _object(params.get("_meta"))
    method = body.get("method")
    # Spec: 2026-07-28/basic/transports/streamable-http#server-validation.1
    # "Servers that process the request body MUST reject requests where the values
    # specified in the headers do not match the corresponding values in the request body."
    wanted = [("mcp-protocol-version", "MCP-Protocol-Version", meta.get(PROTOCOL_VERSION_KEY))]
    wanted.append(("mcp-method", "Mcp-Method", method))
    if isinstance(method, str) and method in _NAMED:
        wanted.append(("mcp-name", "Mcp-Name", params.get(_NAMED[method])))
    for key, shown, body_value in wanted:
        if key not in lower:
            return _mismatch(request_id, f"missing {shown} header")
        # Spec: 2026-07-28/basic/transports/streamable-http#server-validation.4
        # "servers MUST decode encoded values (see Value Encoding) before comparing them
        # to the body value."
        value = lower[key] if key != "mcp-name" else decode_header_value(lower[key])
        if value is None:
            return _mismatch(request_id, f"{shown} header is not valid Base64 of UTF-8")
        if value != body_value:
            return _mismatch(
                request_id,
                f"{shown} header value {value!r} does not match body value {body_value!r}",
            )
    return None


# --- the era ----------------------------------------------------------------------------


def era_of_request(message: Any) -> Era | None:
    """The era a dual-era server serves a decoded request in: ``"legacy"`` for
    ``initialize``, ``"modern"`` when ``params._meta`` carries the protocol version key,
    None for anything else (a legacy request after ``initialize``, or a malformed one:
    the handshake table judges it).

    Source: 2026-07-28/basic/versioning (backward compatibility: "A dual-era server
    selects its behavior from how the client opens").
    """
    if not isinstance(message, dict):
        return None
    if message.get("method") == "initialize":
        return "legacy"
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta:
        return "modern"
    return None


def era_of_reply(reply: Any) -> Era:
    """The server's era from its answer to a modern probe (``server/discover`` on
    stdio, any modern request on HTTP): ``reply`` is the decoded response (or the body
    of an HTTP 400), or None when none came in time.

    A result, or an error whose code is one of :data:`MODERN_ERROR_CODES`, means
    ``"modern"``; any other error, any other body, or no answer means ``"legacy"``.

    Source: 2026-07-28/basic/transports/stdio#backward-compatibility,
    2026-07-28/basic/transports/streamable-http#backward-compatibility.
    """
    if not isinstance(reply, dict):
        return "legacy"
    if isinstance(reply.get("result"), dict):
        return "modern"
    # Spec: 2026-07-28/basic/transports/stdio#backward-compatibility.2
    # "The fallback MUST NOT be keyed to one specific error code"
    error = reply.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    if isinstance(code, int) and not isinstance(code, bool) and code in MODERN_ERROR_CODES:
        return "modern"
    return "legacy"


@attrs.define
class PeerEra:
    """The era of one peer (a server process on stdio, an origin on HTTP), decided once.

    ``era`` is None until :meth:`decide`; the first decision stands, and deciding the
    other era afterwards raises ``ValueError`` (a bug: the era is the peer's, not a
    request's).  :meth:`forget` drops it, for the re-probe the spec allows when a cached
    decision later fails.

    Source: 2026-07-28/basic/versioning#backward-compatibility-with-initialization-based-versions.2.
    """

    era: Era | None = None
    """The decided era, or None."""

    def decide(self, era: Era) -> Era:
        """Record ``era`` (the first time) and return the peer's era.

        Raises:
            ValueError: the other era was decided before.
        """
        # Spec: 2026-07-28/basic/versioning#backward-compatibility-with-initialization-based-versions.2
        # "Clients SHOULD cache the result for the lifetime of the server process (stdio)
        # or origin (HTTP)"
        if self.era is None:
            self.era = era
        elif self.era != era:
            raise ValueError(f"the peer's era is {self.era}, decided before; not {era}")
        return self.era

    def forget(self) -> None:
        """Drop the decision, so the next probe decides again."""
        self.era = None


_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def is_token(value: Any) -> bool:
    """Whether ``value`` is a str in HTTP field-name token syntax (RFC 9110 section 5.6.2)."""
    return isinstance(value, str) and _TOKEN.fullmatch(value) is not None


_Path = tuple[str, ...]


def header_chains(schema: Any, path: _Path = ()) -> Iterator[tuple[_Path, Any, dict[str, Any]]]:
    """The ``x-mcp-header`` annotations on the ``properties`` chains of ``schema`` (a
    tool's ``inputSchema``): ``(path to the property, the annotation as written, the
    property's schema)``, whatever the annotation's value.  The client's check
    (``_http_client_modern.header_annotations``) and the server's
    (``_http_modern.mirrored_params``) both walk the schema with it.

    Source: 2026-07-28/basic/transports/streamable-http#schema-extension.
    """
    # Spec: 2026-07-28/basic/transports/streamable-http#schema-extension.8
    # "The chain MUST NOT pass through `items` (or any other array keyword),
    # composition keywords (`oneOf`, `anyOf`, `allOf`, `not`), conditional keywords
    # (`if`/`then`/`else`), or `$ref`."
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return
    for key, prop in props.items():
        if not isinstance(prop, dict):
            continue
        if "x-mcp-header" in prop:
            yield (*path, key), prop["x-mcp-header"], prop
        yield from header_chains(prop, (*path, key))

"""OAuth resource server, part 3: the server's description and the answers it gives.

Theory of operation
-------------------
An MCP server that requires sign-in is an OAuth 2.1 resource server.  This module holds
what it says about itself, as values:

* :class:`ResourceConfig`: the canonical server URI (the ``resource``), its
  authorization servers, the scopes it knows, and which scopes each operation needs
  (:class:`ScopePolicy`).  Checked when built.
* The protected resource metadata document (RFC 9728 section 2,
  :func:`metadata_document`) and where it is served (:func:`metadata_paths`: the
  path-aware well-known URI, then the root one), with :func:`serve_metadata` as the
  pure function a driver calls first on every request: a request target in, the
  ready :class:`HttpAnswer` or None (not a metadata path: carry on).
* The refusals as ready HTTP answers (:func:`challenge`): ``401`` with
  ``WWW-Authenticate: Bearer resource_metadata="...", scope="..."`` (plus
  ``error="invalid_token"`` when a token was presented and is bad), ``403``
  ``insufficient_scope`` with the scopes the request needs, ``400``
  ``invalid_request`` for a malformed request, and ``503`` when the verifier cannot
  reach its authorization server.

The per-request check that chooses among them is :mod:`mcp_ref._oauth_resource_guard`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal
from urllib.parse import urlsplit, urlunsplit

from ._oauth_http import OAuthError, OAuthLocalError, canonical_resource, require_secure
from ._oauth_verify import DEFAULT_LEEWAY

__all__ = [
    "MAX_TOKEN_BYTES",
    "WELL_KNOWN",
    "HttpAnswer",
    "ResourceConfig",
    "ScopePolicy",
    "challenge",
    "metadata_document",
    "metadata_paths",
    "serve_metadata",
]

WELL_KNOWN: Final = "/.well-known/oauth-protected-resource"
"""The RFC 9728 well-known path prefix."""

MAX_TOKEN_BYTES: Final = 16 * 1024
"""The longest bearer token read (bytes); a longer one is refused as invalid."""

_SCOPE_TOKEN: Final = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
"""RFC 6749 section 3.3's scope-token: printable ASCII but space, ``"`` and ``\\``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ScopePolicy:
    """Which scopes each request needs.

    A request needs :attr:`always`, plus, for each JSON-RPC request it carries, the
    entries of :attr:`per_operation` under its method (``"tools/call"``) and under
    ``"<method>:<name>"`` for ``tools/call`` and ``prompts/get`` (``"tools/call:rm"``):
    the union, so adding an entry can only tighten the policy.  :attr:`implies` states
    scope hierarchies: a granted scope counts as each scope it implies (transitively).
    """

    always: frozenset[str] = frozenset()
    """Scopes every request needs (GET and DELETE included)."""
    per_operation: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Operation (``"tools/list"``, ``"tools/call:rm"``) to the scopes it needs."""
    implies: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Scope to the narrower scopes it implies (``"files" -> {"files:read"}``)."""

    def required(self, operations: Iterable[str]) -> frozenset[str]:
        """The scopes a request carrying ``operations`` (:func:`operation_names`)
        needs."""
        needed = set(self.always)
        for op in operations:
            needed |= self.per_operation.get(op, frozenset())
        return frozenset(needed)

    def expand(self, granted: Iterable[str]) -> frozenset[str]:
        """``granted`` with every scope they imply, transitively."""
        # Spec: 2026-07-28/basic/authorization/index#step-up-authorization-flow.6
        # "Servers MUST account for scope hierarchies, where a broader scope implies
        # narrower ones, when deciding whether a token is sufficient for an operation."
        out, todo = set(granted), list(granted)
        while todo:
            for narrower in self.implies.get(todo.pop(), frozenset()):
                if narrower not in out:
                    out.add(narrower)
                    todo.append(narrower)
        return frozenset(out)


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceConfig:
    """What a protected MCP server says about itself (RFC 9728) and requires.

    Raises (when built):
        OAuthLocalError: ``resource`` not an absolute http(s) URL, or with a query or
            fragment; no authorization server, or one that is not HTTPS (HTTP only on
            loopback); a scope that is not an RFC 6749 scope-token, or
            ``offline_access`` (refresh tokens are not a resource's requirement).
    """

    resource: str
    """The MCP endpoint's canonical URI (RFC 8707 section 2), e.g.
    ``https://mcp.example.com/mcp``; stored canonicalized."""
    authorization_servers: tuple[str, ...]
    """Issuer identifiers of the authorization servers (at least one)."""
    scopes_supported: tuple[str, ...] = ()
    """Scopes advertised in the metadata (never ``offline_access``)."""
    policy: ScopePolicy = ScopePolicy()
    """Which scopes each request needs."""
    resource_name: str | None = None
    """A human-readable name (RFC 9728 ``resource_name``)."""
    resource_documentation: str | None = None
    """A URL of documentation for developers."""
    serve_at_root: bool = True
    """Also serve the document at ``/.well-known/oauth-protected-resource`` when the
    resource has a path.  The MCP pages list the root as the clients' second choice;
    RFC 9728 section 3.3 wants a root document to describe the origin itself, so a
    server hosting several resources on one origin sets this False."""
    max_token_bytes: int = MAX_TOKEN_BYTES
    """The longest bearer token read, in bytes."""
    leeway: float = DEFAULT_LEEWAY
    """Clock skew allowed when the guard checks an identity's expiry, in seconds."""

    def __post_init__(self) -> None:
        try:
            resource = canonical_resource(self.resource)
            for server in self.authorization_servers:
                require_secure(server, "an authorization server")
        except OAuthError as exc:
            raise OAuthLocalError(exc.reason) from None
        if urlsplit(resource).query:
            raise OAuthLocalError(f"the resource URI must have no query: {self.resource!r}")
        # Spec: 2025-11-25/basic/authorization#authorization-server-location.2
        # "The Protected Resource Metadata document returned by the MCP server MUST
        # include the `authorization_servers` field containing at least one
        # authorization server."
        if not self.authorization_servers:
            raise OAuthLocalError("a protected resource needs at least one authorization server")
        p = self.policy
        scopes = {*self.scopes_supported, *p.always, *p.implies}
        for values in (*p.per_operation.values(), *p.implies.values()):
            scopes |= values
        bad = sorted(s for s in scopes if not _SCOPE_TOKEN.fullmatch(s))
        if bad:
            raise OAuthLocalError(f"not valid scope names: {bad}")
        # Spec: 2026-07-28/basic/authorization/index#refresh-tokens.5
        # "MCP Servers (Protected Resources) SHOULD NOT include `offline_access` in
        # `WWW-Authenticate` scope or Protected Resource Metadata `scopes_supported`"
        if "offline_access" in scopes:
            raise OAuthLocalError("offline_access is not a resource's scope")
        object.__setattr__(self, "resource", resource)

    @property
    def metadata_url(self) -> str:
        """The path-aware metadata URL, given as ``resource_metadata`` in challenges
        (RFC 9728 section 3.1: the well-known path inserted before the resource's
        path)."""
        parts = urlsplit(self.resource)
        return urlunsplit((parts.scheme, parts.netloc, WELL_KNOWN + parts.path, "", ""))


def metadata_document(config: ResourceConfig) -> dict[str, Any]:
    """The protected resource metadata (RFC 9728 section 2) as a JSON object:
    ``resource``, ``authorization_servers``, ``bearer_methods_supported: ["header"]``,
    and ``scopes_supported``, ``resource_name``, ``resource_documentation`` when
    set."""
    # Spec: 2025-11-25/basic/authorization#authorization-server-location.1
    # "MCP servers MUST implement the OAuth 2.0 Protected Resource Metadata (RFC9728)
    # specification to indicate the locations of authorization servers."
    doc: dict[str, Any] = {
        "resource": config.resource,
        "authorization_servers": list(config.authorization_servers),
        # Spec: 2025-11-25/basic/authorization#token-requirements.4
        # "Access tokens MUST NOT be included in the URI query string"
        "bearer_methods_supported": ["header"],
    }
    if config.scopes_supported:
        doc["scopes_supported"] = list(config.scopes_supported)
    if config.resource_name is not None:
        doc["resource_name"] = config.resource_name
    if config.resource_documentation is not None:
        doc["resource_documentation"] = config.resource_documentation
    return doc


def metadata_paths(config: ResourceConfig) -> tuple[str, ...]:
    """The request paths that serve the document: the path-aware one first
    (``/.well-known/oauth-protected-resource/mcp``), then the root one when
    :attr:`ResourceConfig.serve_at_root` (the same path when the resource has none)."""
    path = urlsplit(config.resource).path
    paths = [WELL_KNOWN + path]
    if path and config.serve_at_root:
        paths.append(WELL_KNOWN)
    return tuple(paths)


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpAnswer:
    """A complete HTTP answer for the driver to send as is."""

    status: int
    """The status code."""
    headers: tuple[tuple[str, str], ...]
    """Header (name, value) pairs."""
    body: bytes
    """The body (JSON)."""
    error: str | None = None
    """The OAuth error code given (``"invalid_token"``...), or None."""

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (case-insensitive), or None."""
        low = name.lower()
        return next((v for k, v in self.headers if k.lower() == low), None)


def _json_answer(status: int, doc: Mapping[str, Any], *extra: tuple[str, str]) -> HttpAnswer:
    body = json.dumps(doc, separators=(",", ":")).encode()
    headers = (("Content-Type", "application/json"), ("Cache-Control", "no-store"), *extra)
    return HttpAnswer(status=status, headers=headers, body=body, error=doc.get("error"))


def serve_metadata(config: ResourceConfig, method: str, target: str) -> HttpAnswer | None:
    """The answer to a request for the metadata, or None when ``target`` (the
    request-target: path and optional query) is not one of :func:`metadata_paths`.

    GET and HEAD get 200 and the document (the driver drops the body on HEAD), with
    ``Access-Control-Allow-Origin: *`` so browser clients can read it; other methods
    get 405.  No token is asked for.  Never raises."""
    if target.split("?", 1)[0] not in metadata_paths(config):
        return None
    if method.upper() not in ("GET", "HEAD"):
        return _json_answer(405, {"error": "method not allowed"}, ("Allow", "GET, HEAD"))
    body = json.dumps(metadata_document(config), separators=(",", ":")).encode()
    headers = (("Content-Type", "application/json"), ("Access-Control-Allow-Origin", "*"))
    return HttpAnswer(status=200, headers=headers, body=body)


def _quoted(value: str) -> str:
    """``value`` as an RFC 6750 quoted parameter value: only %x20-21 / %x23-5B /
    %x5D-7E survive (others become ``?``)."""
    text = "".join(c if 0x20 <= ord(c) <= 0x7E and c not in '"\\' else "?" for c in value)
    return f'"{text[:200]}"'


def challenge(
    config: ResourceConfig,
    kind: Literal[
        "missing", "invalid_request", "invalid_token", "insufficient_scope", "unavailable"
    ],
    *,
    scopes: Iterable[str] = (),
    description: str = "",
) -> HttpAnswer:
    """The refusal to send, as a ready :class:`HttpAnswer`.

    Args:
        config: the server's description (``resource_metadata`` is its metadata URL).
        kind: ``"missing"`` (no token: 401 without an error code, RFC 6750 section
            3.1), ``"invalid_token"`` (401), ``"insufficient_scope"`` (403),
            ``"invalid_request"`` (400), ``"unavailable"`` (503, the verifier could not
            reach its authorization server; no challenge).
        scopes: the ``scope`` to announce: the scopes the request needs (omitted when
            empty).
        description: ``error_description`` (quoted safely; not sent with "missing").
    """
    if kind == "unavailable":
        return _json_answer(
            503, {"error": "temporarily_unavailable", "error_description": description}
        )
    status = {"missing": 401, "invalid_token": 401, "insufficient_scope": 403}.get(kind, 400)
    # Spec: 2025-03-26/basic/authorization#error-handling.1
    # "Servers MUST return appropriate HTTP status codes for authorization errors:"
    # Spec: 2025-11-25/basic/authorization#error-handling.1
    # "Servers MUST return appropriate HTTP status codes for authorization errors:"
    # Spec: 2026-07-28/basic/authorization/index#error-handling.1
    # "Servers MUST return appropriate HTTP status codes for authorization errors:"
    # Spec: 2025-06-18/basic/authorization#error-handling.1
    # "Servers MUST return appropriate HTTP status codes for authorization errors:"
    # Spec: 2026-07-28/basic/authorization/authorization-server-discovery#protected-resource-metadata-discovery-requirements.1
    # "MCP servers MUST implement one of the following discovery mechanisms to provide authorization
    # server location information to MCP clients:"
    # Spec: 2025-11-25/basic/authorization#protected-resource-metadata-discovery-requirements.1
    # "MCP servers MUST implement one of the following discovery mechanisms to provide
    # authorization server location information to MCP clients:"
    params = [f"resource_metadata={_quoted(config.metadata_url)}"]
    scope = " ".join(sorted(set(scopes)))
    # Spec: 2026-07-28/basic/authorization/index#scope-selection-strategy.1
    # "MCP servers SHOULD include a `scope` parameter in the `WWW-Authenticate` header as defined in
    # RFC 6750 Section 3 to indicate the scopes required for accessing the resource."
    # Spec: 2025-11-25/basic/authorization#protected-resource-metadata-discovery-requirements.3
    # "MCP servers SHOULD include a `scope` parameter in the `WWW-Authenticate` header as
    # defined in RFC 6750 Section 3 to indicate the scopes required for accessing the
    # resource."
    if scope:
        params.append(f"scope={_quoted(scope)}")
    doc: dict[str, str] = {}
    if kind != "missing":
        params.insert(0, f"error={_quoted(kind)}")
        doc = {"error": kind}
        if description:
            params.append(f"error_description={_quoted(description)}")
            doc["error_description"] = description
    return _json_answer(status, doc, ("WWW-Authenticate", "Bearer " + ", ".join(params)))

"""OAuth sign-in, part 3: the documents the flow reads, checked as they are read.

Theory of operation
-------------------
Each function here takes an :class:`~mcp_ref._oauth_http.HttpResponse` (or the URLs
to build) and returns a frozen value, or raises one
:class:`~mcp_ref._oauth_http.OAuthRefused` subclass naming what is wrong.  Nothing is
fetched here; the flow decides what to fetch next.

* Where to look: :func:`protected_resource_urls` (RFC 9728 well-known URLs, path-aware
  first), :func:`authorization_server_urls` (RFC 8414 and OpenID Connect discovery,
  every variant in the order the 2025-11-25 page lists) and, for servers of the
  2025-03-26 revision that have no protected resource metadata,
  :func:`legacy_metadata_url` and :func:`legacy_endpoints`.
* What was found: :func:`read_protected_resource` (its ``resource`` must be this MCP
  server, or a parent path of it on the same origin) and :func:`read_server_metadata`
  (``issuer`` identical to the one asked for; every endpoint HTTPS except on loopback;
  the token and registration endpoints on the issuer's origin unless the application
  trusts another origin, because they receive secrets).
* Client registration: :func:`registration_request` / :func:`read_registration`
  (RFC 7591).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ._oauth_http import (
    BadMetadata,
    HttpRequest,
    HttpResponse,
    IssuerMismatch,
    OAuthRefused,
    PkceUnsupported,
    RegistrationRefused,
    ResourceMismatch,
    UnexpectedOrigin,
    canonical_resource,
    is_loopback_url,
    origin_of,
    read_json_object,
    require_secure,
    resource_covers,
)

__all__ = [
    "ClientInfo",
    "ProtectedResource",
    "ServerMetadata",
    "authorization_server_urls",
    "error_text",
    "legacy_endpoints",
    "legacy_metadata_url",
    "protected_resource_urls",
    "read_protected_resource",
    "read_registration",
    "read_server_metadata",
    "registration_request",
    "require_pkce",
]


def _strings(doc: dict[str, Any], key: str, what: str) -> tuple[str, ...] | None:
    value = doc.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadMetadata(f"{what}: {key!r} is not a list of strings")
    return tuple(value)


def _string(doc: dict[str, Any], key: str, what: str, required: bool = False) -> str | None:
    value = doc.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise BadMetadata(f"{what}: {key!r} is {'missing or ' if required else ''}not a string")
    return value


# --- protected resource metadata (RFC 9728) ----------------------------------------


def protected_resource_urls(server_url: str) -> list[str]:
    """The well-known URLs of an MCP server's protected resource metadata, in the order
    to try them: path-aware first, then the root (only the root for a server at ``/``).

    Raises:
        BadMetadata: ``server_url`` is not an absolute http(s) URL.
    """
    parts = urlsplit(canonical_resource(server_url))
    root = urlunsplit((parts.scheme, parts.netloc, "/.well-known/oauth-protected-resource", "", ""))
    # Spec: 2025-11-25/basic/authorization#protected-resource-metadata-discovery-requirements.2
    # "they MUST fall back to constructing and requesting the well-known URIs in the
    # order listed above"
    path = parts.path.rstrip("/")
    return [root + path, root] if path else [root]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProtectedResource:
    """What the flow keeps of an MCP server's protected resource metadata."""

    resource: str
    """The ``resource`` identifier, as the server wrote it (sent as RFC 8707's
    ``resource`` parameter)."""
    authorization_servers: tuple[str, ...]
    """Issuer identifiers, at least one."""
    scopes_supported: tuple[str, ...] | None
    """The scopes the server lists, or None when it lists none."""


def read_protected_resource(
    response: HttpResponse, server_url: str, max_body_bytes: int
) -> ProtectedResource:
    """Check and keep a protected resource metadata document.

    Args:
        response: a 200 answer from a metadata URL.
        server_url: the MCP server's URL.
        max_body_bytes: the body bound, in bytes.

    Raises:
        BodyTooLarge, BadMetadata: the document is too long, malformed, or lacks
            ``resource`` or ``authorization_servers``.
        ResourceMismatch: ``resource`` is neither the server's canonical URI nor a parent
            path of it on the same origin.
    """
    what = "protected resource metadata"
    doc = read_json_object(response, max_body_bytes, what)
    resource = _string(doc, "resource", what, required=True)
    assert resource is not None
    servers = _strings(doc, "authorization_servers", what)
    # Spec: 2026-07-28/basic/authorization/authorization-server-discovery#authorization-server-location.2
    # "The Protected Resource Metadata document returned by the MCP server MUST include the
    # `authorization_servers` field containing at least one authorization server."
    # Spec: 2025-06-18/basic/authorization#authorization-server-location.2
    # "The Protected Resource Metadata document returned by the MCP server MUST include
    # the `authorization_servers` field containing at least one authorization server."
    if not servers:
        raise BadMetadata(f"{what} lists no authorization_servers")
    # Spec: 2025-11-25/basic/authorization#resource-parameter-implementation.3
    # "MUST identify the MCP server that the client intends to use the token with."
    # Spec: 2026-07-28/basic/authorization/index#resource-parameter-implementation.3
    # "MUST identify the MCP server that the client intends to use the token with."
    # Spec: 2025-06-18/basic/authorization#resource-parameter-implementation.3
    # "MUST identify the MCP server that the client intends to use the token with."
    if not resource_covers(resource, server_url):
        raise ResourceMismatch(
            f"the protected resource metadata is for {resource!r}, not for {server_url!r}"
        )
    return ProtectedResource(
        resource=resource,
        authorization_servers=servers,
        scopes_supported=_strings(doc, "scopes_supported", what),
    )


# --- authorization server metadata (RFC 8414, OpenID Connect discovery) -------------


def authorization_server_urls(issuer: str) -> list[str]:
    """The metadata URLs of an issuer, in the order the 2025-11-25 page lists.

    With a path (``https://a.example/t1``): OAuth with path insertion, OpenID Connect
    with path insertion, OpenID Connect with path appending.  Without a path: OAuth,
    then OpenID Connect.

    Raises:
        BadMetadata: ``issuer`` is not an absolute http(s) URL.
        InsecureEndpoint: ``issuer`` is plain HTTP off loopback.
    """
    # Spec: 2025-11-25/basic/authorization#overview.7
    # "MCP clients MUST support both discovery mechanisms to obtain the information required to
    # interact with the authorization server."
    # Spec: 2025-11-25/basic/authorization#authorization-server-metadata-discovery.1
    # "To handle different issuer URL formats and ensure interoperability with both OAuth 2.0
    # Authorization Server Metadata and OpenID Connect Discovery 1.0 specifications, MCP clients
    # MUST attempt multiple well-known endpoints when discovering authorization server metadata."
    # Spec: 2025-11-25/basic/authorization#authorization-server-metadata-discovery.3
    # "For issuer URLs without path components (e.g., `https://auth.example.com`), clients MUST
    # try:"
    # Spec: 2026-07-28/basic/authorization/index#overview.7
    # "MCP clients MUST support both discovery mechanisms to obtain the information required to
    # interact with the authorization server."
    # Spec: 2026-07-28/basic/authorization/authorization-server-discovery#authorization-server-metadata-discovery.1
    # "To handle different issuer URL formats and ensure interoperability with both OAuth 2.0
    # Authorization Server Metadata and OpenID Connect Discovery 1.0 specifications, MCP clients
    # MUST attempt multiple well-known endpoints when discovering authorization server metadata."
    # Spec: 2026-07-28/basic/authorization/authorization-server-discovery#authorization-server-metadata-discovery.3
    # "For issuer URLs without path components (e.g., `https://auth.example.com`), clients MUST
    # try:"
    require_secure(issuer, "the issuer")
    parts = urlsplit(issuer)
    base = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    path = parts.path.rstrip("/")
    # Spec: 2026-07-28/basic/authorization/authorization-server-discovery#authorization-server-metadata-discovery.2
    # "For issuer URLs with path components (e.g., `https://auth.example.com/tenant1`), clients MUST
    # try endpoints in the following priority order:"
    # Spec: 2025-11-25/basic/authorization#authorization-server-metadata-discovery.2
    # "For issuer URLs with path components (e.g., `https://auth.example.com/tenant1`),
    # clients MUST try endpoints in the following priority order"
    if path:
        return [
            f"{base}/.well-known/oauth-authorization-server{path}",
            f"{base}/.well-known/openid-configuration{path}",
            f"{base}{path}/.well-known/openid-configuration",
        ]
    return [
        f"{base}/.well-known/oauth-authorization-server",
        f"{base}/.well-known/openid-configuration",
    ]


def legacy_metadata_url(server_url: str) -> tuple[str, str]:
    """(issuer, metadata URL) for a 2025-03-26 server that has no protected resource
    metadata: the authorization base URL is the server URL without its path.

    Raises:
        BadMetadata: ``server_url`` is not an absolute http(s) URL.
    """
    base = origin_of(server_url)
    # Spec: 2025-03-26/basic/authorization#authorization-base-url.2
    # "The metadata endpoint MUST be at
    # `https://api.example.com/.well-known/oauth-authorization-server`"
    # Spec: 2025-03-26/basic/authorization#authorization-base-url.1
    # "The authorization base URL MUST be determined from the MCP server URL by
    # discarding any existing `path` component."
    return base, f"{base}/.well-known/oauth-authorization-server"


def legacy_endpoints(server_url: str) -> ServerMetadata:
    """The default endpoints of a 2025-03-26 server without metadata: ``/authorize``,
    ``/token`` and ``/register`` at the authorization base URL.  ``issuer`` is None:
    there is no validated issuer to check ``iss`` against.  With no metadata to read
    PKCE support from, S256 is assumed: that revision requires PKCE of every client.

    Raises:
        BadMetadata: ``server_url`` is not an absolute http(s) URL.
        InsecureEndpoint: plain HTTP off loopback.
    """
    base = require_secure(origin_of(server_url), "the authorization base URL")
    # Spec: 2025-03-26/basic/authorization#fallbacks-for-servers-without-metadata-discovery.1
    # "For servers that do not implement OAuth 2.0 Authorization Server Metadata,
    # clients MUST use the following default endpoint paths"
    # Spec: 2025-03-26/basic/authorization#implementation-requirements.2
    # "PKCE is REQUIRED for all clients"
    return ServerMetadata(
        issuer=None,
        authorization_endpoint=f"{base}/authorize",
        token_endpoint=f"{base}/token",
        registration_endpoint=f"{base}/register",
        code_challenge_methods_supported=("S256",),
        token_endpoint_auth_methods_supported=None,
        scopes_supported=None,
        iss_parameter_supported=False,
        client_id_metadata_document_supported=False,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerMetadata:
    """What the flow keeps of an authorization server's metadata."""

    issuer: str | None
    """The validated issuer identifier (None only for 2025-03-26 default endpoints)."""
    authorization_endpoint: str | None
    """Where the browser goes (None if the server lists none: client credentials only)."""
    token_endpoint: str
    """Where codes, refresh tokens and client credentials are sent."""
    registration_endpoint: str | None
    """RFC 7591 dynamic registration, if offered."""
    code_challenge_methods_supported: tuple[str, ...] | None
    """PKCE methods; None when the field is absent (then PKCE is not supported)."""
    token_endpoint_auth_methods_supported: tuple[str, ...] | None
    """Client authentication methods at the token endpoint (None: absent)."""
    scopes_supported: tuple[str, ...] | None
    """The scopes the server lists (used for ``offline_access``)."""
    iss_parameter_supported: bool
    """``authorization_response_iss_parameter_supported`` (RFC 9207)."""
    client_id_metadata_document_supported: bool
    """Whether URL client ids (client ID metadata documents) are accepted."""


def read_server_metadata(
    response: HttpResponse,
    issuer: str,
    max_body_bytes: int,
    trusted_origins: frozenset[str] = frozenset(),
    *,
    legacy: bool = False,
) -> ServerMetadata:
    """Check and keep an authorization server metadata document.

    Args:
        response: a 200 answer from one of :func:`authorization_server_urls`.
        issuer: the issuer identifier the URL was built from.
        max_body_bytes: the body bound, in bytes.
        trusted_origins: origins (``https://host[:port]``) besides the issuer's where
            the token and registration endpoints may live.
        legacy: a 2025-03-26 server's document, fetched from its authorization base
            URL (``issuer``, an origin, not an issuer identifier): the document's
            ``issuer`` may be any URL on that origin, and is the one kept.

    Raises:
        BodyTooLarge, BadMetadata: too long, malformed, or no ``token_endpoint``.
        IssuerMismatch: ``issuer`` in the document is not identical to ``issuer``.
        InsecureEndpoint: an endpoint is plain HTTP off loopback.
        UnexpectedOrigin: the token or registration endpoint is on another origin.
    """
    what = "authorization server metadata"
    doc = read_json_object(response, max_body_bytes, what)
    # Spec: 2026-07-28/basic/authorization/authorization-server-discovery#authorization-server-metadata-discovery.4
    # "the `issuer` value in the document MUST be identical to the issuer identifier
    # used to construct the well-known URL."
    # Spec: 2026-07-28/basic/authorization/authorization-server-discovery#authorization-server-metadata-discovery.5
    # "If they differ, the client MUST NOT use the metadata."
    # Spec: 2026-07-28/basic/authorization/authorization-server-discovery#authorization-server-metadata-discovery.6
    # "For example, a document fetched from
    # `https://attacker.example/.well-known/oauth-authorization-server` that contains `'issuer':
    # 'https://honest.example'` MUST be rejected."
    named = doc.get("issuer")
    if legacy and isinstance(named, str) and named != issuer:
        # 2025-03-26/basic/authorization#authorization-base-url.1: that revision finds
        # the metadata at the authorization base URL (the MCP server's origin), not
        # from an issuer identifier; an issuer on that same origin is the server's.
        try:
            same = origin_of(named) == origin_of(issuer) and urlsplit(named).query == ""
        except OAuthRefused:
            same = False
        if same:
            issuer = named
    if named != issuer:
        raise IssuerMismatch(
            f"the metadata's issuer is {doc.get('issuer')!r}, expected exactly {issuer!r}"
        )
    allowed = {origin_of(issuer), *(origin_of(o) for o in trusted_origins)}
    endpoints: dict[str, str | None] = {}
    for key in ("authorization_endpoint", "token_endpoint", "registration_endpoint"):
        url = _string(doc, key, what, required=key == "token_endpoint")
        if url is not None:
            require_secure(url, f"the {key}")
            if key != "authorization_endpoint" and origin_of(url) not in allowed:
                raise UnexpectedOrigin(
                    f"the {key} {url!r} is not on the issuer's origin {origin_of(issuer)!r}"
                )
        endpoints[key] = url
    token_endpoint = endpoints["token_endpoint"]
    assert token_endpoint is not None
    return ServerMetadata(
        issuer=issuer,
        authorization_endpoint=endpoints["authorization_endpoint"],
        token_endpoint=token_endpoint,
        registration_endpoint=endpoints["registration_endpoint"],
        code_challenge_methods_supported=_strings(doc, "code_challenge_methods_supported", what),
        token_endpoint_auth_methods_supported=_strings(
            doc, "token_endpoint_auth_methods_supported", what
        ),
        scopes_supported=_strings(doc, "scopes_supported", what),
        iss_parameter_supported=doc.get("authorization_response_iss_parameter_supported") is True,
        client_id_metadata_document_supported=(
            doc.get("client_id_metadata_document_supported") is True
        ),
    )


def require_pkce(metadata: ServerMetadata) -> None:
    """Check the server can run the authorization code grant as MCP requires it.

    Raises:
        PkceUnsupported: ``code_challenge_methods_supported`` is absent or lacks S256.
        BadMetadata: there is no ``authorization_endpoint``.
    """
    # Spec: 2026-07-28/basic/authorization/security-considerations#authorization-code-protection.4
    # "OAuth 2.0 Authorization Server Metadata: If `code_challenge_methods_supported` is absent, the
    # authorization server does not support PKCE and MCP clients MUST refuse to proceed."
    # Spec: 2025-11-25/basic/authorization#authorization-code-protection.4
    # "If `code_challenge_methods_supported` is absent, the authorization server does
    # not support PKCE and MCP clients MUST refuse to proceed."
    # Spec: 2025-11-25/basic/authorization#authorization-code-protection.1
    # "To mitigate this, MCP clients MUST implement PKCE according to OAuth 2.1 Section 7.5.2 and
    # MUST verify PKCE support before proceeding with authorization."
    # Spec: 2025-11-25/basic/authorization#authorization-code-protection.3
    # "Since OAuth 2.1 and PKCE specifications do not define a mechanism for clients to discover
    # PKCE support, MCP clients MUST rely on authorization server metadata to verify this
    # capability:"
    # Spec: 2025-11-25/basic/authorization#authorization-code-protection.5
    # "MCP clients MUST verify the presence of `code_challenge_methods_supported` in the provider
    # metadata response."
    # Spec: 2025-11-25/basic/authorization#authorization-code-protection.6
    # "If the field is absent, MCP clients MUST refuse to proceed."
    # Spec: 2026-07-28/basic/authorization/security-considerations#authorization-code-protection.1
    # "To mitigate this, MCP clients MUST implement PKCE according to OAuth 2.1 Section 7.5.2 and
    # MUST verify PKCE support before proceeding with authorization."
    # Spec: 2026-07-28/basic/authorization/security-considerations#authorization-code-protection.3
    # "Since OAuth 2.1 and PKCE specifications do not define a mechanism for clients to discover
    # PKCE support, MCP clients MUST rely on authorization server metadata to verify this
    # capability:"
    # Spec: 2026-07-28/basic/authorization/security-considerations#authorization-code-protection.5
    # "MCP clients MUST verify the presence of `code_challenge_methods_supported` in the provider
    # metadata response."
    # Spec: 2026-07-28/basic/authorization/security-considerations#authorization-code-protection.6
    # "If the field is absent, MCP clients MUST refuse to proceed."
    methods = metadata.code_challenge_methods_supported
    if "S256" not in (methods or ()):
        raise PkceUnsupported(
            f"the authorization server does not advertise PKCE with S256 (it lists {methods})"
        )
    if metadata.authorization_endpoint is None:
        raise BadMetadata("the authorization server metadata has no authorization_endpoint")


# --- client registration (RFC 7591) -------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientInfo:
    """The client as one authorization server knows it."""

    client_id: str
    """The client identifier (a URL for a client ID metadata document)."""
    client_secret: str | None = None
    """The secret, for confidential clients."""
    auth_method: str | None = None
    """``none``, ``client_secret_basic`` or ``client_secret_post``; None: choose from
    what the server supports."""
    issuer: str | None = None
    """The issuer this client id belongs to (None: not bound, e.g. a metadata URL)."""


def registration_request(
    metadata: ServerMetadata, *, client_name: str, redirect_uri: str | None, max_body_bytes: int
) -> HttpRequest:
    """The RFC 7591 registration POST (a JSON body) to the server's registration
    endpoint.

    With a ``redirect_uri``, a public client of the authorization code grant (with
    refresh tokens): ``token_endpoint_auth_method`` ``none`` unless the server's list
    lacks it, and ``application_type`` ``native`` for a loopback redirect URI, else
    ``web``.  Without one, a confidential client of the client credentials grant.

    Raises:
        BadMetadata: the server has no registration endpoint (the caller checks first).
    """
    if metadata.registration_endpoint is None:
        raise BadMetadata("the authorization server has no registration endpoint")
    supported = metadata.token_endpoint_auth_methods_supported
    if redirect_uri is not None and (supported is None or "none" in supported):
        method = "none"
    else:
        secret_methods = ("client_secret_basic", "client_secret_post")
        method = next((m for m in supported or () if m in secret_methods), secret_methods[0])
    doc: dict[str, Any] = {"client_name": client_name, "token_endpoint_auth_method": method}
    if redirect_uri is None:
        doc["grant_types"] = ["client_credentials"]
    else:
        # Spec: 2026-07-28/basic/authorization/index#refresh-tokens.2
        # "SHOULD include `refresh_token` in their `grant_types` client metadata"
        doc["grant_types"] = ["authorization_code", "refresh_token"]
        # Spec: 2025-11-25/basic/authorization#open-redirection.1
        # "MCP clients MUST have redirect URIs registered with the authorization server."
        # Spec: 2026-07-28/basic/authorization/security-considerations#open-redirection.1
        # "MCP clients MUST have redirect URIs registered with the authorization server."
        # Spec: 2025-06-18/basic/authorization#open-redirection.1
        # "MCP clients MUST have redirect URIs registered with the authorization server."
        doc["redirect_uris"] = [redirect_uri]
        doc["response_types"] = ["code"]
        # Spec: 2026-07-28/basic/authorization/client-registration#application-type-and-redirect-uri-constraints.1
        # "MCP clients MUST specify an appropriate `application_type` during Dynamic
        # Client Registration."
        doc["application_type"] = "native" if is_loopback_url(redirect_uri) else "web"
    return HttpRequest(
        method="POST",
        url=metadata.registration_endpoint,
        headers=(("Content-Type", "application/json"), ("Accept", "application/json")),
        body=json.dumps(doc).encode("utf-8"),
        max_body_bytes=max_body_bytes,
    )


def read_registration(
    response: HttpResponse, metadata: ServerMetadata, max_body_bytes: int
) -> ClientInfo:
    """The client the registration endpoint created, bound to the server's issuer.

    Raises:
        RegistrationRefused: a non-2xx answer (its ``error`` and description quoted).
        BodyTooLarge, BadMetadata: the answer is too long, malformed, or has no
            ``client_id``.
    """
    what = "registration response"
    if not 200 <= response.status < 300:
        # Spec: 2026-07-28/basic/authorization/client-registration#application-type-and-redirect-uri-constraints.4
        # "MCP clients MUST be prepared to handle registration failures due to redirect URI
        # constraints when authorization servers implement OIDC."
        raise RegistrationRefused(f"registration refused: {error_text(response, max_body_bytes)}")
    doc = read_json_object(response, max_body_bytes, what)
    client_id = _string(doc, "client_id", what, required=True)
    assert client_id is not None
    return ClientInfo(
        client_id=client_id,
        client_secret=_string(doc, "client_secret", what),
        auth_method=_string(doc, "token_endpoint_auth_method", what),
        issuer=metadata.issuer,
    )


def error_text(response: HttpResponse, max_body_bytes: int) -> str:
    """``error: description`` of an OAuth error answer, or its status.  Never raises."""
    try:
        doc = read_json_object(response, max_body_bytes, "error answer")
    except OAuthRefused:  # not JSON, or too long: the status says enough
        return f"HTTP {response.status}"
    error, desc = doc.get("error"), doc.get("error_description")
    text = f"HTTP {response.status}"
    if isinstance(error, str):
        text += f", {error[:200]}"
    if isinstance(desc, str):
        text += f": {desc[:500]}"
    return text

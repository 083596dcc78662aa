"""OAuth sign-in, part 5a: the flow's configuration, states and events.

Theory of operation
-------------------
:class:`~mcp_ref._oauth_flow.SignIn` is configured by one frozen
:class:`SignInConfig` (checked when built) and tells its driver what to do with four
events, h11-style: :class:`NeedHttp` (send a request, hand back the answer),
:class:`NeedAuthorization` (the application's browser step), :class:`Authorized` (the
tokens) and :class:`Failed` (the refusal, sticky).  :class:`FlowState` names where the
flow is; the transitions are drawn in :mod:`mcp_ref._oauth_flow`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Final, Literal
from urllib.parse import urlsplit

from ._oauth_assertions import DEFAULT_ASSERTION_LIFETIME, IdentityProvider, JwtSigner
from ._oauth_grants import Grant
from ._oauth_http import (
    DEFAULT_MAX_BODY_BYTES,
    HttpRequest,
    OAuthError,
    OAuthLocalError,
    OAuthRefused,
    RegistrationUnavailable,
    origin_of,
    require_secure,
)
from ._oauth_metadata import ClientInfo, ServerMetadata

__all__ = [
    "AUTHORIZATION_CODE",
    "CLIENT_CREDENTIALS",
    "ENTERPRISE",
    "JWT_BEARER",
    "Authorized",
    "Event",
    "Failed",
    "FlowState",
    "NeedAuthorization",
    "NeedHttp",
    "SignInConfig",
    "choose_client",
]


class FlowState(enum.Enum):
    """Where a :class:`SignIn` is (see the module's diagram)."""

    IDLE = "idle"
    RESOURCE_METADATA = "resource metadata"
    SERVER_METADATA = "server metadata"
    REGISTERING = "registering"
    BROWSER = "browser"
    IDENTITY_ASSERTION = "identity assertion grant"
    TOKEN = "token"
    AUTHORIZED = "authorized"
    FAILED = "failed"


@dataclass(frozen=True, slots=True, kw_only=True)
class NeedHttp:
    """Send :attr:`request` and hand its answer to ``receive_response``."""

    request: HttpRequest
    """The request (never carries an access token)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NeedAuthorization:
    """Open :attr:`url` in the user's browser; hand the redirect back to
    ``receive_redirect``."""

    url: str
    """The authorization request URL."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Authorized:
    """Signed in."""

    grant: Grant
    """The tokens, and what is needed to refresh them."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Failed:
    """Signed out for good: :attr:`error` says why (raise it, or show its reason)."""

    error: OAuthError
    """The refusal (an :class:`~mcp_ref._oauth_http.OAuthRefused` subclass)."""


Event = NeedHttp | NeedAuthorization | Authorized | Failed

AUTHORIZATION_CODE: Final = "authorization_code"
CLIENT_CREDENTIALS: Final = "client_credentials"
JWT_BEARER: Final = "jwt_bearer"
ENTERPRISE: Final = "enterprise"

Grants = Literal["authorization_code", "client_credentials", "jwt_bearer", "enterprise"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SignInConfig:
    """How the client signs in.  Checked when built (:class:`OAuthLocalError`)."""

    grant: Grants = "authorization_code"
    """``client_credentials`` is the OAuth client credentials extension (no user);
    ``jwt_bearer`` trades :attr:`assertion` for a token (RFC 7523 section 2.1: workload
    identity federation); ``enterprise`` is enterprise-managed authorization (an ID-JAG
    from :attr:`identity_provider`, then the JWT-bearer grant)."""
    redirect_uri: str | None = None
    """Where the browser comes back (required for ``authorization_code``; HTTPS or
    loopback)."""
    client: ClientInfo | None = None
    """A pre-registered client (required, with a secret, for ``client_credentials``
    unless the server offers dynamic registration)."""
    client_metadata_url: str | None = None
    """This client's client ID metadata document URL (HTTPS, with a path), if any."""
    client_name: str = "mcp-ref"
    """The name given in dynamic registration."""
    offline_access: bool = True
    """Add ``offline_access`` to the scope when the server lists it (refresh tokens)."""
    trusted_origins: frozenset[str] = field(default_factory=frozenset)
    """Origins besides the issuer's where its token/registration endpoints may live."""
    max_retries: int = 3
    """How many 401/403 challenges after signing in are answered by signing in again."""
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    """The largest response body read, in bytes (1 MiB by default)."""
    legacy_fallback: bool = True
    """Fall back to the 2025-03-26 discovery when there is no protected resource
    metadata."""
    protocol_version: str | None = "2025-11-25"
    """Sent as ``MCP-Protocol-Version`` on discovery requests (None: not sent)."""
    signer: JwtSigner | None = None
    """Signs ``private_key_jwt`` client assertions (RFC 7523 section 2.2): used when
    the client has no other method set and the server accepts it."""
    assertion: str | None = None
    """The JWT the ``jwt_bearer`` grant sends (a workload identity token, say)."""
    identity_provider: IdentityProvider | None = None
    """The enterprise IdP and the user's identity assertion (``enterprise`` grant)."""
    assertion_lifetime: float = DEFAULT_ASSERTION_LIFETIME
    """How long a client assertion is valid, in seconds (0 to 3600)."""
    dpop: JwtSigner | None = None
    """Ask for DPoP-bound tokens (RFC 9449), proofs signed by this signer's key (its
    public key goes in each proof); None: bearer tokens."""

    def __post_init__(self) -> None:
        try:
            if self.grant == AUTHORIZATION_CODE:
                if self.redirect_uri is None:
                    raise OAuthLocalError("the authorization code grant needs a redirect_uri")
                require_secure(self.redirect_uri, "the redirect URI")
            elif self.grant == JWT_BEARER and not self.assertion:
                raise OAuthLocalError("the jwt_bearer grant needs an assertion")
            elif self.grant == ENTERPRISE and self.identity_provider is None:
                raise OAuthLocalError("enterprise-managed authorization needs an identity_provider")
            elif self.grant not in (CLIENT_CREDENTIALS, JWT_BEARER, ENTERPRISE):
                raise OAuthLocalError(f"unknown grant {self.grant!r}")
            if self.grant in (JWT_BEARER, ENTERPRISE) and self.client is None:
                raise OAuthLocalError(f"the {self.grant} grant needs a pre-registered client")
            if self.client_metadata_url is not None:
                require_secure(self.client_metadata_url, "the client metadata URL")
                url = self.client_metadata_url
                # Spec: 2026-07-28/basic/authorization/client-registration#implementation-requirements.3
                # "The `client_id` URL MUST use the 'https' scheme and contain a path component,
                # e.g. `https://example.com/client.json`"
                # Spec: 2025-11-25/basic/authorization#implementation-requirements.3
                # "The `client_id` URL MUST use the 'https' scheme and contain a path
                # component"
                if not url.startswith("https://") or urlsplit(url).path in ("", "/"):
                    raise OAuthLocalError("a client metadata URL is https:// with a path")
            for origin in self.trusted_origins:
                origin_of(origin)  # an absolute http(s) URL, or BadMetadata
        except OAuthRefused as exc:
            raise OAuthLocalError(exc.reason) from None
        if self.max_retries < 0 or self.max_body_bytes < 1:
            raise OAuthLocalError("max_retries >= 0 and max_body_bytes >= 1")
        if not 0 < self.assertion_lifetime <= 3600:
            raise OAuthLocalError("assertion_lifetime is between 0 and 3600 seconds")


def choose_client(
    config: SignInConfig, kept: ClientInfo | None, metadata: ServerMetadata
) -> ClientInfo | None:
    """The client to sign in as, or None when dynamic registration must make one.

    Args:
        config: the flow's configuration.
        kept: the client of an earlier sign-in with this flow, if any.
        metadata: the authorization server's metadata.

    Raises:
        RegistrationUnavailable: the pre-registered client belongs to another issuer,
            or there is no way to get a client id.
    """
    # Spec: 2026-07-28/basic/authorization/index#client-registration.1
    # "Before initiating the authorization flow, MCP clients MUST obtain a client ID through one of
    # three registration mechanisms: Client ID Metadata Documents, pre-registration, or Dynamic
    # Client Registration, following the requirements and selection priority defined in Client
    # Registration."
    # Spec: 2026-07-28/basic/authorization/client-registration#client-registration.1
    # "Clients supporting all options SHOULD use the following priority order:"
    # Spec: 2025-11-25/basic/authorization#client-registration-approaches.1
    # "Use pre-registered client information for the server if the client has it
    # available ... Use Client ID Metadata Documents if the Authorization Server
    # indicates if the server supports it ... Use Dynamic Client Registration as a
    # fallback"
    # Spec: 2026-07-28/basic/authorization/authorization-server-discovery#authorization-server-location.3
    # "Clients MUST maintain separate registration state (client credentials, tokens) per
    # authorization server and MUST NOT assume that credentials valid for one authorization server
    # will be accepted by another."
    # Spec: 2026-07-28/basic/authorization/client-registration#authorization-server-binding.1
    # "Clients that use pre-registered credentials, or persist client credentials obtained via
    # Dynamic Client Registration, MUST associate those credentials with the specific authorization
    # server that issued them, keyed by the authorization server's `issuer` identifier."
    # Spec: 2026-07-28/basic/authorization/client-registration#authorization-server-binding.2
    # "When the authorization server changes (detected via updated protected resource metadata),
    # clients MUST NOT reuse client credentials from a different authorization server and MUST
    # re-register with the new authorization server."
    if kept is not None and kept.issuer in (None, metadata.issuer):
        return kept  # signed in before with this server: keep the client
    # Spec: 2025-11-25/basic/authorization#preregistration.1
    # "MCP clients SHOULD support an option for static client credentials such as those supplied by
    # a preregistration flow."
    # Spec: 2026-07-28/basic/authorization/client-registration#pre-registration.1
    # "MCP clients SHOULD support an option for static client credentials such as those supplied by
    # a pre-registration flow."
    if config.client is not None:
        # Spec: 2026-07-28/basic/authorization/client-registration#authorization-server-binding.3
        # "If the authorization server indicated by protected resource metadata no longer
        # matches the one the credentials were registered with, clients SHOULD surface an
        # error rather than silently attempting to use mismatched credentials."
        if config.client.issuer not in (None, metadata.issuer):
            raise RegistrationUnavailable(
                f"the pre-registered client belongs to {config.client.issuer!r}, "
                f"and this server's issuer is {metadata.issuer!r}"
            )
        return config.client
    # Spec: 2025-11-25/basic/authorization#discovery.1
    # "MCP clients SHOULD check for this capability and MAY fall back to Dynamic Client Registration
    # or pre-registration if unavailable."
    # Spec: 2026-07-28/basic/authorization/client-registration#advertising-cimd-support.1
    # "MCP clients SHOULD check for this capability and MAY fall back to Dynamic Client Registration
    # or pre-registration if unavailable."
    if config.client_metadata_url and metadata.client_id_metadata_document_supported:
        return ClientInfo(client_id=config.client_metadata_url, auth_method="none")
    if metadata.registration_endpoint is not None:
        return None
    raise RegistrationUnavailable(
        "no pre-registered client, no client ID metadata document support and no "
        "registration endpoint: ask the user for a client id"
    )

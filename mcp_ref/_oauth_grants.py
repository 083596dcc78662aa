"""OAuth sign-in, part 4: PKCE, the browser step, the token endpoint, and tokens kept.

Theory of operation
-------------------
Once the flow knows the authorization server and has a client id, what remains is
plain OAuth 2.1, written here as pure functions:

1. :func:`select_scope` applies MCP's scope selection strategy; :func:`pkce_pair` makes
   an S256 verifier and challenge; :func:`authorization_url` builds the URL the
   application opens in a browser (``response_type=code``, PKCE, ``state``,
   ``resource``, ``scope``).
2. :func:`read_redirect` checks the redirect the browser comes back with: same redirect
   URI, then ``iss`` (RFC 9207, before anything else in it is believed), then ``state``,
   then ``error``, then ``code``.
3. :func:`token_request` builds a token endpoint POST for any grant, authenticating the
   client as :func:`choose_auth_method` decided (``client_secret_basic``,
   ``client_secret_post``, ``private_key_jwt`` with an assertion made by
   :mod:`mcp_ref._oauth_assertions`, or ``none``); :func:`read_token_response` turns the answer
   into a :class:`Grant` whose expiry is ``now + expires_in`` seconds.
4. A :class:`Grant` carries everything a refresh needs (:func:`refresh_request`), and
   :func:`bearer_header` is the only way the access token leaves it: it refuses any
   URL outside the grant's resource.

Time is always an argument (``now``, in seconds, from whatever clock the driver uses);
randomness comes from a ``token_bytes(n)`` callable (``secrets.token_bytes`` unless a
test passes another).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol
from urllib.parse import parse_qsl, quote_plus, urlencode, urlsplit, urlunsplit

from ._oauth_assertions import CLIENT_ASSERTION_TYPE
from ._oauth_http import (
    AuthorizationDenied,
    BadMetadata,
    HttpRequest,
    HttpResponse,
    IssuerMismatch,
    OAuthLocalError,
    StateMismatch,
    TokenMisdirected,
    TokenRefused,
    UnexpectedRedirect,
    UnsupportedClientAuth,
    canonical_resource,
    read_json_object,
    resource_covers,
)
from ._oauth_metadata import ClientInfo, ServerMetadata, error_text

__all__ = [
    "Grant",
    "InMemoryTokenStore",
    "TokenStore",
    "authorization_url",
    "bearer_header",
    "choose_auth_method",
    "new_state",
    "pkce_pair",
    "read_redirect",
    "read_token_response",
    "refresh_request",
    "select_scope",
    "token_request",
]

TokenBytes = Callable[[int], bytes]


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def pkce_pair(token_bytes: TokenBytes) -> tuple[str, str]:
    """(code_verifier, code_challenge) for PKCE with ``S256`` (RFC 7636 section 4): a
    43-character verifier from 32 random bytes, and base64url(SHA-256(verifier))."""
    # Spec: 2025-06-18/basic/authorization#authorization-code-protection.1
    # "To mitigate this, MCP clients MUST implement PKCE according to OAuth 2.1 Section
    # 7.5.2."
    verifier = _b64url(token_bytes(32))
    challenge = _b64url(hashlib.sha256(verifier.encode("ascii")).digest())
    return verifier, challenge


def new_state(token_bytes: TokenBytes) -> str:
    """A fresh ``state`` value: 16 random bytes, base64url (22 characters)."""
    return _b64url(token_bytes(16))


def select_scope(
    challenged: tuple[str, ...] | None, scopes_supported: tuple[str, ...] | None
) -> tuple[str, ...] | None:
    """The scopes to ask for first: the 401 challenge's ``scope`` if given, else every
    scope the protected resource metadata lists, else None (no ``scope`` parameter)."""
    # Spec: 2026-07-28/basic/authorization/index#scope-selection-strategy.8
    # "During the initial authorization handshake, MCP clients SHOULD follow this priority order for
    # scope selection:"
    # Spec: 2025-11-25/basic/authorization#protected-resource-metadata-discovery-requirements.5
    # "Clients MUST NOT assume any particular set relationship between the challenged scope set and
    # `scopes_supported`."
    # Spec: 2025-11-25/basic/authorization#protected-resource-metadata-discovery-requirements.6
    # "Clients MUST treat the scopes provided in the challenge as authoritative for satisfying the
    # current request."
    # Spec: 2026-07-28/basic/authorization/index#scope-selection-strategy.3
    # "Clients MUST NOT assume any particular set relationship between the challenged scope set and
    # `scopes_supported`."
    # Spec: 2026-07-28/basic/authorization/index#scope-selection-strategy.4
    # "Clients MUST treat the scopes provided in the challenge as authoritative for the current
    # operation."
    # Spec: 2025-11-25/basic/authorization#scope-selection-strategy.2
    # "Use `scope` parameter from the initial `WWW-Authenticate` header in the 401
    # response, if provided ... If `scope` is not available, use all scopes defined in
    # `scopes_supported` from the Protected Resource Metadata document, omitting the
    # `scope` parameter if `scopes_supported` is undefined."
    # Spec: 2025-11-25/basic/authorization#scope-selection-strategy.1
    # "When implementing authorization flows, MCP clients SHOULD follow the principle of least
    # privilege by requesting only the scopes necessary for their intended operations."
    # Spec: 2026-07-28/basic/authorization/index#scope-selection-strategy.7
    # "When implementing authorization flows, MCP clients SHOULD follow the principle of least
    # privilege by requesting only the scopes necessary for their intended operations."
    # Spec: 2025-11-25/basic/authorization#protected-resource-metadata-discovery-requirements.9
    # "If the `scope` parameter is absent, clients SHOULD apply the fallback behavior defined in the
    # Scope Selection Strategy section."
    if challenged:
        return challenged
    return scopes_supported or None


def choose_auth_method(
    client: ClientInfo, metadata: ServerMetadata, *, can_sign: bool = False
) -> str:
    """How the client authenticates at the token endpoint.

    The client's own method when it has one (checked against the server's list when the
    server gives one); else ``private_key_jwt`` when the client can sign (``can_sign``:
    it has a :class:`~mcp_ref._oauth_assertions.JwtSigner`) and the server lists it or
    lists nothing; else ``none`` without a secret; else ``client_secret_basic`` or
    ``client_secret_post``, whichever the server lists first (``none`` when it lists
    only that; ``client_secret_basic`` when it lists none, RFC 8414's default).

    Raises:
        UnsupportedClientAuth: ``private_key_jwt`` without a signer, an unknown method,
            a secret method without a secret, or a method the server does not list.
    """
    supported = metadata.token_endpoint_auth_methods_supported
    method = client.auth_method
    if method is None and can_sign and (supported is None or "private_key_jwt" in supported):
        method = "private_key_jwt"
    if method is None:
        if client.client_secret is None:
            method = "none"
        elif supported is None:
            method = "client_secret_basic"
        else:
            # A secret, and the server lists no secret method but ``none``: a public
            # client after all (a registration may hand out a secret the server's
            # token endpoint never asks for).
            fallback = "none" if "none" in supported else "client_secret_basic"
            method = next(
                (m for m in supported if m in ("client_secret_basic", "client_secret_post")),
                fallback,
            )
    if method == "private_key_jwt" and not can_sign:
        raise UnsupportedClientAuth("private_key_jwt needs a signer (OAuthClientOptions.signer)")
    if method not in ("none", "client_secret_basic", "client_secret_post", "private_key_jwt"):
        raise UnsupportedClientAuth(f"unknown token endpoint auth method {method!r}")
    if method not in ("none", "private_key_jwt") and client.client_secret is None:
        raise UnsupportedClientAuth(f"{method} needs a client secret, and there is none")
    if supported is not None and method not in supported:
        raise UnsupportedClientAuth(
            f"the authorization server does not accept {method} (it lists {list(supported)})"
        )
    return method


def authorization_url(
    metadata: ServerMetadata,
    *,
    client_id: str,
    redirect_uri: str,
    code_challenge: str,
    state: str,
    scope: tuple[str, ...] | None,
    resource: str,
) -> str:
    """The authorization request URL (OAuth 2.1 section 4.1.1) for the browser step.
    Parameters already in the endpoint's query are kept.

    Raises:
        OAuthLocalError: the server has no authorization endpoint.
    """
    if metadata.authorization_endpoint is None:
        raise OAuthLocalError("the authorization server has no authorization endpoint")
    params = [
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", redirect_uri),
        ("code_challenge", code_challenge),
        # Spec: 2026-07-28/basic/authorization/security-considerations#authorization-code-protection.2
        # "MCP clients MUST use the `S256` code challenge method when technically capable, as
        # required by OAuth 2.1 Section 4.1.1."
        # Spec: 2025-11-25/basic/authorization#authorization-code-protection.2
        # "MCP clients MUST use the `S256` code challenge method when technically
        # capable"
        ("code_challenge_method", "S256"),
        # Spec: 2025-11-25/basic/authorization#open-redirection.3
        # "MCP clients SHOULD use and verify state parameters in the authorization code flow and
        # discard any results that do not include or have a mismatch with the original state."
        # Spec: 2026-07-28/basic/authorization/security-considerations#open-redirection.3
        # "MCP clients SHOULD use and verify state parameters in the authorization code flow and
        # discard any results that do not include or have a mismatch with the original state."
        # Spec: 2025-06-18/basic/authorization#open-redirection.3
        # "MCP clients SHOULD use and verify state parameters in the authorization code
        # flow"
        ("state", state),
        # Spec: 2025-11-25/basic/authorization#resource-parameter-implementation.1
        # "MCP clients MUST implement Resource Indicators for OAuth 2.0 as defined in RFC 8707 to
        # explicitly specify the target resource for which the token is being requested."
        # Spec: 2026-07-28/basic/authorization/index#resource-parameter-implementation.1
        # "MCP clients MUST implement Resource Indicators for OAuth 2.0 as defined in RFC 8707 to
        # explicitly specify the target resource for which the token is being requested."
        # Spec: 2025-06-18/basic/authorization#resource-parameter-implementation.1
        # "MCP clients MUST implement Resource Indicators for OAuth 2.0 as defined in RFC 8707 to
        # explicitly specify the target resource for which the token is being requested."
        # Spec: 2025-11-25/basic/authorization#canonical-server-uri.4
        # "MCP clients MUST send this parameter regardless of whether authorization servers support
        # it."
        # Spec: 2026-07-28/basic/authorization/index#canonical-server-uri.4
        # "MCP clients MUST send this parameter regardless of whether authorization servers support
        # it."
        # Spec: 2025-06-18/basic/authorization#canonical-server-uri.4
        # "MCP clients MUST send this parameter regardless of whether authorization servers support
        # it."
        # Spec: 2025-11-25/basic/authorization#token-audience-binding-and-validation.1
        # "MCP clients MUST include the `resource` parameter in authorization and token requests as
        # specified in the Resource Parameter Implementation section"
        # Spec: 2026-07-28/basic/authorization/security-considerations#token-audience-binding-and-validation.1
        # "MCP clients MUST include the `resource` parameter in authorization and token requests as
        # specified in the Resource Parameter Implementation section"
        # Spec: 2025-06-18/basic/authorization#token-audience-binding-and-validation.1
        # "MCP clients MUST include the `resource` parameter in authorization and token requests as
        # specified in the Resource Parameter Implementation section"
        # Spec: 2025-11-25/basic/authorization#access-token-privilege-restriction.5
        # "MCP clients MUST implement and use the `resource` parameter as defined in RFC 8707 -
        # Resource Indicators for OAuth 2.0 to explicitly specify the target resource for which the
        # token is being requested."
        # Spec: 2026-07-28/basic/authorization/security-considerations#access-token-privilege-restriction.5
        # "MCP clients MUST implement and use the `resource` parameter as defined in RFC 8707 -
        # Resource Indicators for OAuth 2.0 to explicitly specify the target resource for which the
        # token is being requested."
        # Spec: 2025-06-18/basic/authorization#access-token-privilege-restriction.5
        # "MCP clients MUST implement and use the `resource` parameter as defined in RFC 8707 -
        # Resource Indicators for OAuth 2.0 to explicitly specify the target resource for which the
        # token is being requested."
        # Spec: 2025-06-18/basic/authorization#resource-parameter-implementation.2
        # "MUST be included in both authorization requests and token requests."
        ("resource", resource),
    ]
    if scope:
        params.append(("scope", " ".join(scope)))
    parts = urlsplit(metadata.authorization_endpoint)
    query = parse_qsl(parts.query, keep_blank_values=True)
    return urlunsplit(parts._replace(query=urlencode([*query, *params]), fragment=""))


def read_redirect(
    url: str,
    *,
    redirect_uri: str,
    state: str,
    issuer: str | None,
    iss_supported: bool,
) -> str:
    """The authorization code from the redirect the browser came back with.

    Args:
        url: the full URL the browser was sent to.
        redirect_uri: the redirect URI the request named.
        state: the ``state`` the request carried.
        issuer: the issuer recorded before the browser step (None: 2025-03-26 default
            endpoints, where no ``iss`` can be checked, so any ``iss`` is refused).
        iss_supported: the server's ``authorization_response_iss_parameter_supported``.

    Raises:
        UnexpectedRedirect: ``url`` is not at ``redirect_uri``, or repeats a parameter.
        IssuerMismatch: ``iss`` differs, or is missing though the server promised it.
        StateMismatch: ``state`` is missing or differs.
        AuthorizationDenied: the server answered with ``error``.
        BadMetadata: no ``code``.
    """
    try:
        got, want = urlsplit(url), urlsplit(redirect_uri)
    except ValueError:  # "Invalid IPv6 URL"
        raise UnexpectedRedirect(f"the browser came back to a malformed URL: {url!r}") from None
    if (got.scheme.lower(), got.netloc.lower(), got.path) != (
        want.scheme.lower(),
        want.netloc.lower(),
        want.path,
    ):
        raise UnexpectedRedirect(f"the browser came back to {url!r}, not to {redirect_uri!r}")
    pairs = parse_qsl(got.query, keep_blank_values=True)
    params = dict(pairs)
    if len(params) != len(pairs):
        raise UnexpectedRedirect("the authorization response repeats a parameter")
    iss = params.get("iss")
    # Spec: 2026-07-28/basic/authorization/index#authorization-response-validation.4
    # "MCP clients MUST apply the validation in RFC9207 Section 2.4 before transmitting
    # the authorization code to any token endpoint"
    # Spec: 2026-07-28/basic/authorization/index#authorization-response-validation.7
    # "on mismatch the client MUST NOT act on or display `error`, `error_description`,
    # or `error_uri`."
    # Spec: 2026-07-28/basic/authorization/index#authorization-response-validation.6
    # "After decoding the `iss` value from the `application/x-www-form-urlencoded` response per RFC
    # 9207 Section 2.4, clients MUST NOT apply scheme or host case folding, default-port elision,
    # trailing-slash, or percent-encoding normalization (RFC 3986 Sections 6.2.2-6.2.3) before
    # comparison."
    if iss is not None and iss != issuer:
        raise IssuerMismatch(f"the authorization response's iss {iss!r} is not {issuer!r}")
    if iss is None and iss_supported:
        raise IssuerMismatch("the authorization server promised an iss parameter and sent none")
    # Spec: 2025-06-18/basic/authorization#open-redirection.3
    # "discard any results that do not include or have a mismatch with the original
    # state."
    if params.get("state") != state:
        raise StateMismatch("the authorization response's state is missing or wrong")
    if "error" in params:
        desc = params.get("error_description", "")
        raise AuthorizationDenied(f"authorization refused: {params['error'][:200]} {desc[:500]}")
    code = params.get("code")
    if not code:
        raise BadMetadata("the authorization response has no code")
    return code


def token_request(
    token_endpoint: str,
    client: ClientInfo,
    auth_method: str,
    params: list[tuple[str, str]],
    max_body_bytes: int,
    client_assertion: str | None = None,
    dpop_proof: str | None = None,
) -> HttpRequest:
    """A token endpoint POST: ``params`` form-encoded, plus client authentication.

    ``client_secret_basic`` puts the form-encoded id and secret in ``Authorization:
    Basic`` (RFC 6749 section 2.3.1); ``client_secret_post`` puts them in the body;
    ``private_key_jwt`` sends ``client_id``, ``client_assertion_type`` and
    ``client_assertion`` (the signed JWT, RFC 7523 section 2.2); ``none`` sends
    ``client_id`` only.  A ``dpop_proof`` goes in the ``DPoP`` header (RFC 9449
    section 5: the token asked for is bound to the proof's key).

    Raises:
        OAuthLocalError: ``private_key_jwt`` without ``client_assertion``.
    """
    body = list(params)
    headers = [
        ("Content-Type", "application/x-www-form-urlencoded"),
        ("Accept", "application/json"),
    ]
    if auth_method == "client_secret_basic":
        raw = f"{quote_plus(client.client_id)}:{quote_plus(client.client_secret or '')}"
        headers.append(("Authorization", "Basic " + base64.b64encode(raw.encode()).decode()))
    else:
        body.append(("client_id", client.client_id))
        if auth_method == "client_secret_post":
            body.append(("client_secret", client.client_secret or ""))
        elif auth_method == "private_key_jwt":
            if client_assertion is None:
                raise OAuthLocalError("private_key_jwt needs a client assertion")
            body.append(("client_assertion_type", CLIENT_ASSERTION_TYPE))
            body.append(("client_assertion", client_assertion))
    if dpop_proof is not None:
        headers.append(("DPoP", dpop_proof))
    return HttpRequest(
        method="POST",
        url=token_endpoint,
        headers=tuple(headers),
        body=urlencode(body).encode("ascii"),
        max_body_bytes=max_body_bytes,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Grant:
    """Tokens for one MCP server, and what is needed to refresh them."""

    access_token: str
    """The bearer token.  Send it only through :func:`bearer_header`."""
    expires_at: float | None
    """When it expires, in the driver's clock (seconds): ``now + expires_in``; None
    when the server did not say."""
    refresh_token: str | None
    """The refresh token, if one was issued (kept across a refresh that sends none)."""
    scope: tuple[str, ...] | None
    """The scopes requested (and granted, unless the server said otherwise)."""
    resource: str
    """The resource (RFC 8707) the token is for."""
    token_endpoint: str
    """Where to refresh it."""
    client: ClientInfo
    """The client it was issued to."""
    auth_method: str
    """The client authentication method used at the token endpoint."""
    issuer: str | None = None
    """The authorization server's issuer (the ``aud`` of a client assertion when the
    grant is refreshed with ``private_key_jwt``); None: not known."""
    token_type: str = "Bearer"
    """``Bearer``, or ``DPoP`` for a token bound to the client's DPoP key (RFC 9449):
    the ``Authorization`` scheme it is sent with."""

    def expired(self, now: float, leeway: float = 30.0) -> bool:
        """Whether the access token is expired, or will be within ``leeway`` seconds."""
        return self.expires_at is not None and now + leeway >= self.expires_at


def read_token_response(
    response: HttpResponse,
    now: float,
    *,
    template: Grant,
    max_body_bytes: int,
) -> Grant:
    """The grant a token endpoint answer carries.

    Args:
        response: the token endpoint's answer.
        now: the current time, in seconds.
        template: the grant's other fields (resource, endpoint, client, requested scope,
            and the refresh token to keep if no new one comes).
        max_body_bytes: the body bound, in bytes.

    Raises:
        TokenRefused: a non-200 answer, a ``token_type`` other than Bearer (or DPoP,
            when ``template.token_type`` is DPoP: a DPoP-bound token was asked for), or
            no ``access_token``.
        BodyTooLarge, BadMetadata: too long or malformed.
    """
    if response.status != 200:
        raise TokenRefused(f"the token endpoint refused: {error_text(response, max_body_bytes)}")
    doc = read_json_object(response, max_body_bytes, "token response")
    token, kind = doc.get("access_token"), doc.get("token_type")
    if not isinstance(token, str) or not token:
        raise TokenRefused("the token response has no access_token")
    accepted = {"bearer": "Bearer"}
    if template.token_type == "DPoP":
        accepted["dpop"] = "DPoP"
    if not isinstance(kind, str) or kind.lower() not in accepted:
        raise TokenRefused(f"the token type is {kind!r}, not {' or '.join(accepted.values())}")
    expires_in = doc.get("expires_in")
    if isinstance(expires_in, bool) or not isinstance(expires_in, int | float | None):
        raise BadMetadata(f"expires_in is not a number: {expires_in!r}")
    # Spec: 2026-07-28/basic/authorization/index#refresh-tokens.4
    # "MUST NOT assume refresh tokens will be issued; the AS retains discretion"
    refresh = doc.get("refresh_token")
    scope = doc.get("scope")
    return replace(
        template,
        access_token=token,
        expires_at=None if expires_in is None else now + float(expires_in),
        refresh_token=refresh if isinstance(refresh, str) and refresh else template.refresh_token,
        scope=tuple(scope.split()) if isinstance(scope, str) else template.scope,
        token_type=accepted[kind.lower()],
    )


def refresh_request(
    grant: Grant,
    max_body_bytes: int,
    client_assertion: str | None = None,
    dpop_proof: str | None = None,
) -> HttpRequest:
    """The refresh-token POST for ``grant`` (with ``resource``); read the answer with
    :func:`read_token_response` and ``template=grant``.  Raises OAuthLocalError when
    the grant has no refresh token (or is refreshed with ``private_key_jwt`` and no
    ``client_assertion`` is given)."""
    if grant.refresh_token is None:
        raise OAuthLocalError("this grant has no refresh token")
    params = [
        ("grant_type", "refresh_token"),
        ("refresh_token", grant.refresh_token),
        ("resource", grant.resource),
    ]
    return token_request(
        grant.token_endpoint,
        grant.client,
        grant.auth_method,
        params,
        max_body_bytes,
        client_assertion,
        dpop_proof,
    )


def bearer_header(grant: Grant, url: str) -> tuple[str, str]:
    """``("Authorization", "Bearer <token>")`` for a request to ``url`` (``DPoP
    <token>`` for a DPoP-bound token, which also needs its proof: see
    :mod:`mcp_ref._oauth_assertions`).

    Raises:
        TokenMisdirected: ``url`` is not the grant's resource or below it: the token is
            never sent anywhere else.
    """
    # Spec: 2025-03-26/basic/authorization#token-requirements.2
    # "MCP client MUST use the Authorization request header field Section 5.1.1:"
    # Spec: 2025-11-25/basic/authorization#token-requirements.2
    # "MCP client MUST use the Authorization request header field defined in OAuth 2.1 Section
    # 5.1.1:"
    # Spec: 2026-07-28/basic/authorization/index#token-requirements.2
    # "MCP client MUST use the Authorization request header field defined in OAuth 2.1 Section
    # 5.1.1:"
    # Spec: 2025-06-18/basic/authorization#token-requirements.2
    # "MCP client MUST use the Authorization request header field"
    # Spec: 2025-11-25/basic/authorization#token-handling.5
    # "MCP clients MUST NOT send tokens to the MCP server other than ones issued by the MCP server's
    # authorization server."
    # Spec: 2026-07-28/basic/authorization/index#token-handling.5
    # "MCP clients MUST NOT send tokens to the MCP server other than ones issued by the MCP server's
    # authorization server."
    # Spec: 2025-06-18/basic/authorization#token-handling.5
    # "MCP clients MUST NOT send tokens to the MCP server other than ones issued by the
    # MCP server's authorization server."
    if not resource_covers(grant.resource, url):
        raise TokenMisdirected(f"a token for {grant.resource!r} is not sent to {url!r}")
    return ("Authorization", f"{grant.token_type} {grant.access_token}")


class TokenStore(Protocol):
    """Where grants are kept between runs, keyed by MCP server URL.  Keep it as secret
    as a password: it holds refresh tokens (OAuth 2.1 section 7.1)."""

    def get(self, server_url: str) -> Grant | None:
        """The grant kept for ``server_url``, or None."""

    def set(self, server_url: str, grant: Grant | None) -> None:
        """Keep ``grant`` for ``server_url`` (None forgets it)."""


class InMemoryTokenStore:
    """A :class:`TokenStore` in a dict, keyed by canonical server URL; gone on exit."""

    def __init__(self) -> None:
        self._grants: dict[str, Grant] = {}

    def get(self, server_url: str) -> Grant | None:
        """The grant kept for ``server_url``, or None.

        Raises:
            BadMetadata: ``server_url`` is not an absolute http(s) URL.
        """
        return self._grants.get(canonical_resource(server_url))

    def set(self, server_url: str, grant: Grant | None) -> None:
        """Keep ``grant`` for ``server_url`` (None forgets it).

        Raises:
            BadMetadata: ``server_url`` is not an absolute http(s) URL.
        """
        key = canonical_resource(server_url)
        if grant is None:
            self._grants.pop(key, None)
        else:
            self._grants[key] = grant

"""OAuth sign-in, part 6: JWT assertions: signed client authentication, the JWT-bearer
grant, and the enterprise identity assertion grant (ID-JAG).

Theory of operation
-------------------
Three sign-in mechanisms send a JWT to the token endpoint instead of a secret or a
browser step; this module holds what they share, as pure functions:

* ``private_key_jwt`` client authentication (RFC 7523 section 2.2, the OAuth client
  credentials extension's recommended form): the client proves who it is with a JWT it
  signs itself.  :func:`client_assertion_claims` builds the claims (``iss`` = ``sub`` =
  the client id, ``aud`` = the authorization server's issuer, ``iat``, ``exp``, a fresh
  ``jti``), and a :class:`JwtSigner` the application supplies turns them into a compact
  JWS.  Signing is JOSE, outside MCP and outside this core: the core never touches a
  key.  :class:`mcp_ref.client.PrivateKeySigner` is one ready signer (joserfc, the
  extra ``mcp-ref[auth]``).
* The JWT-bearer authorization grant (RFC 7523 section 2.1): the client holds an
  assertion someone else signed (a workload identity token, or an ID-JAG) and trades it
  for an access token.  :func:`check_assertion` reads a given assertion's claims
  (without verifying them: that is the authorization server's part) so that one meant
  for another audience, or already expired, is refused here and never sent.
* Enterprise-managed authorization: the client first trades the user's identity
  assertion (an OpenID ID token) at the enterprise IdP for an Identity Assertion JWT
  Authorization Grant (RFC 8693 token exchange, :func:`token_exchange_request`,
  :func:`read_id_jag`), then sends that to the MCP authorization server with the
  JWT-bearer grant.
* DPoP (RFC 9449): the client binds its access token to a key of its own; every
  request that carries the token (and the token request itself) carries a fresh proof,
  a JWT the signer makes over the method, the URL and the token's hash, with the public
  key in its header (:func:`dpop_claims`, :func:`dpop_proof`); a server that asks for
  a nonce gets one proof more with it (:func:`dpop_nonce`).

Every answer is bounded (``max_body_bytes``; an assertion is at most
:data:`MAX_ASSERTION_BYTES`), and every refusal is an
:class:`~mcp_ref._oauth_http.OAuthRefused` the flow turns into ``Failed``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol
from urllib.parse import quote_plus, urlencode, urlsplit, urlunsplit

from ._oauth_http import (
    BadMetadata,
    HttpRequest,
    HttpResponse,
    OAuthLocalError,
    OAuthRefused,
    TokenRefused,
    read_json_object,
    require_secure,
)
from ._oauth_metadata import error_text

__all__ = [
    "CLIENT_ASSERTION_TYPE",
    "DEFAULT_ASSERTION_LIFETIME",
    "ID_JAG_TOKEN_TYPE",
    "ID_TOKEN_TYPE",
    "JWT_BEARER_GRANT",
    "MAX_ASSERTION_BYTES",
    "TOKEN_EXCHANGE_GRANT",
    "AssertionUnusable",
    "IdentityProvider",
    "JwtSigner",
    "check_assertion",
    "client_assertion",
    "client_assertion_claims",
    "dpop_claims",
    "dpop_nonce",
    "dpop_proof",
    "read_id_jag",
    "token_exchange_request",
    "token_request_jwts",
]

CLIENT_ASSERTION_TYPE: Final = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
"""``client_assertion_type`` of a JWT client assertion (RFC 7523 section 2.2)."""
JWT_BEARER_GRANT: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"
"""``grant_type`` of the JWT-bearer authorization grant (RFC 7523 section 2.1)."""
TOKEN_EXCHANGE_GRANT: Final = "urn:ietf:params:oauth:grant-type:token-exchange"
"""``grant_type`` of an RFC 8693 token exchange."""
ID_TOKEN_TYPE: Final = "urn:ietf:params:oauth:token-type:id_token"
"""The token type of an OpenID Connect ID token (RFC 8693 section 3)."""
ID_JAG_TOKEN_TYPE: Final = "urn:ietf:params:oauth:token-type:id-jag"
"""The token type of an Identity Assertion JWT Authorization Grant."""

MAX_ASSERTION_BYTES: Final = 16 * 1024
"""The longest assertion (bytes) made, taken or sent: a JWT is a few hundred bytes to a
few KiB; anything longer is refused."""

DEFAULT_ASSERTION_LIFETIME: Final = 60.0
"""How long a client assertion is valid, in seconds (``exp - iat``)."""


class AssertionUnusable(OAuthRefused):
    """An assertion is malformed, too long, meant for another audience, or expired (or
    a signer produced something that is not a compact JWS): it is not sent."""


class JwtSigner(Protocol):
    """Signs JWTs for the client: the application's key, held outside mcp-ref's core.

    Any object with this method will do (an HSM, a cloud KMS, a test double);
    :class:`mcp_ref.client.PrivateKeySigner` signs with a private key through joserfc.
    """

    def sign(self, claims: dict[str, Any], *, typ: str | None = None, jwk: bool = False) -> str:
        """The compact JWS of ``claims`` (a JSON object), signed with this signer's key
        and algorithm; ``typ``, when given, goes in the protected header, and with
        ``jwk`` the public key too (a DPoP proof, RFC 9449 section 4.2)."""
        ...


def client_assertion_claims(
    *, client_id: str, audience: str, now: float, jti: str, lifetime: float
) -> dict[str, Any]:
    """The claims of a ``private_key_jwt`` client assertion (RFC 7523 sections 2.2 and
    3): ``iss`` and ``sub`` the client id, ``aud`` the authorization server (its issuer
    identifier), ``iat`` ``now`` and ``exp`` ``now + lifetime`` (whole seconds since the
    epoch), and a one-time ``jti``.

    Raises:
        OAuthLocalError: an empty client id or audience, or ``lifetime`` not in (0, 3600].
    """
    if not client_id or not audience or not jti:
        raise OAuthLocalError("a client assertion needs a client id, an audience and a jti")
    if not 0 < lifetime <= 3600:
        raise OAuthLocalError(f"a client assertion lives 0 to 3600 seconds, not {lifetime}")
    issued = int(now)
    return {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": issued,
        "exp": issued + max(1, int(lifetime)),
        "jti": jti,
    }


def _segments(jwt: str) -> list[str]:
    """The three base64url segments of a compact JWS, or :class:`AssertionUnusable`."""
    if len(jwt) > MAX_ASSERTION_BYTES:
        raise AssertionUnusable(f"the assertion is over {MAX_ASSERTION_BYTES} bytes")
    parts = jwt.split(".")
    alphabet = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    if len(parts) != 3 or not all(p and frozenset(p) <= alphabet for p in parts):
        raise AssertionUnusable("the assertion is not a compact JWS (three base64url parts)")
    return parts


def client_assertion(signer: JwtSigner, claims: dict[str, Any]) -> str:
    """``claims`` signed by ``signer``, checked to be a compact JWS.

    Raises:
        AssertionUnusable: the signer returned something else, or over
            :data:`MAX_ASSERTION_BYTES`.
    """
    return _signed(signer, claims, "signer")


def _signed(signer: JwtSigner, claims: dict[str, Any], who: str, **how: Any) -> str:
    """``signer.sign(claims, **how)``, checked to be a compact JWS (``who`` names the
    signer in the error), or :class:`AssertionUnusable`."""
    try:
        jwt = signer.sign(claims, **how)
    except OAuthLocalError as exc:
        raise AssertionUnusable(f"the {who} failed: {exc.reason}") from None
    if not isinstance(jwt, str):
        raise AssertionUnusable(f"the {who} returned {type(jwt).__name__}, not a JWT")
    _segments(jwt)
    return jwt


def _json_segment(segment: str, what: str) -> dict[str, Any]:
    try:
        raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
        value = json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError, RecursionError):
        raise AssertionUnusable(f"the assertion's {what} is not base64url JSON") from None
    if not isinstance(value, dict):
        raise AssertionUnusable(f"the assertion's {what} is not a JSON object")
    return value


def check_assertion(jwt: str, *, audiences: tuple[str, ...], now: float) -> dict[str, Any]:
    """The claims of an assertion the client was given, read but not verified (the
    authorization server verifies the signature), once checked fit to send.

    Args:
        jwt: the compact JWS.
        audiences: the values ``aud`` may hold for this authorization server (its issuer,
            its token endpoint); a trailing ``/`` is ignored on both sides.
        now: the current time, in seconds since the epoch.

    Raises:
        AssertionUnusable: not a compact JWS, over :data:`MAX_ASSERTION_BYTES`, no
            ``aud`` naming this server, ``exp`` missing, not a number, or past.
    """
    claims = _json_segment(_segments(jwt)[1], "payload")
    aud = claims.get("aud")
    named = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
    ours = {a.rstrip("/") for a in audiences}
    if not any(isinstance(a, str) and a.rstrip("/") in ours for a in named):
        raise AssertionUnusable(
            f"the assertion is for {aud!r}, not for this authorization server {audiences}"
        )
    exp = claims.get("exp")
    if isinstance(exp, bool) or not isinstance(exp, int | float):
        raise AssertionUnusable("the assertion has no numeric exp")
    if exp <= now:
        raise AssertionUnusable(f"the assertion expired {int(now - exp)} seconds ago")
    return claims


@dataclass(frozen=True, slots=True, kw_only=True)
class IdentityProvider:
    """The enterprise identity provider of enterprise-managed authorization, and the
    user's identity assertion it issued when the user signed in to the client.

    Source: extensions/auth/enterprise-managed-authorization (ID-JAG, RFC 8693).
    """

    token_endpoint: str
    """The IdP's token endpoint (HTTPS, or http on loopback), where the exchange goes."""
    subject_token: str
    """The user's identity assertion (an OpenID ID token), kept from the SSO sign-in."""
    subject_token_type: str = ID_TOKEN_TYPE
    """Its token type (an ID token unless said otherwise)."""
    client_id: str | None = None
    """This client's id at the IdP (sent in the body, or in Basic with a secret)."""
    client_secret: str | None = None
    """Its secret at the IdP, if it is a confidential client there."""

    def __post_init__(self) -> None:
        try:
            require_secure(self.token_endpoint, "the IdP token endpoint")
        except OAuthRefused as exc:
            raise OAuthLocalError(exc.reason) from None
        if not self.subject_token or len(self.subject_token) > MAX_ASSERTION_BYTES:
            raise OAuthLocalError("the identity assertion is empty or too long")


def token_exchange_request(
    idp: IdentityProvider,
    *,
    audience: str,
    resource: str,
    scope: tuple[str, ...] | None,
    max_body_bytes: int,
) -> HttpRequest:
    """The RFC 8693 token exchange POST that asks the IdP for an ID-JAG: the identity
    assertion as ``subject_token``, ``requested_token_type`` the ID-JAG type,
    ``audience`` the MCP authorization server's issuer, ``resource`` the MCP server.
    """
    params = [
        ("grant_type", TOKEN_EXCHANGE_GRANT),
        ("requested_token_type", ID_JAG_TOKEN_TYPE),
        ("audience", audience),
        ("resource", resource),
        ("subject_token", idp.subject_token),
        ("subject_token_type", idp.subject_token_type),
    ]
    if scope:
        params.append(("scope", " ".join(scope)))
    headers = [
        ("Content-Type", "application/x-www-form-urlencoded"),
        ("Accept", "application/json"),
    ]
    if idp.client_secret is not None and idp.client_id is not None:
        raw = f"{quote_plus(idp.client_id)}:{quote_plus(idp.client_secret)}"
        headers.append(("Authorization", "Basic " + base64.b64encode(raw.encode()).decode()))
    elif idp.client_id is not None:
        params.append(("client_id", idp.client_id))
    return HttpRequest(
        method="POST",
        url=idp.token_endpoint,
        headers=tuple(headers),
        body=urlencode(params).encode("ascii"),
        max_body_bytes=max_body_bytes,
    )


def read_id_jag(response: HttpResponse, max_body_bytes: int) -> str:
    """The ID-JAG in the IdP's token exchange answer.

    Raises:
        TokenRefused: a non-200 answer, or ``issued_token_type`` is not the ID-JAG type.
        BadMetadata, BodyTooLarge: malformed, or longer than ``max_body_bytes``.
        AssertionUnusable: the token is not a compact JWS, or too long.
    """
    if response.status != 200:
        text = error_text(response, max_body_bytes)
        raise TokenRefused(f"the identity provider refused the token exchange: {text}")
    doc = read_json_object(response, max_body_bytes, "token exchange response")
    kind = doc.get("issued_token_type")
    if kind != ID_JAG_TOKEN_TYPE:
        raise TokenRefused(f"the identity provider issued {kind!r}, not an ID-JAG")
    token = doc.get("access_token")
    if not isinstance(token, str) or not token:
        raise BadMetadata("the token exchange response has no access_token")
    _segments(token)
    return token


MAX_NONCE_CHARS: Final = 1024
"""The longest DPoP nonce kept (characters); a longer one is ignored."""


def dpop_claims(
    *, method: str, url: str, now: float, jti: str, access_token: str | None, nonce: str | None
) -> dict[str, Any]:
    """The claims of a DPoP proof (RFC 9449 section 4.2): ``htm`` the HTTP method,
    ``htu`` the URL without query and fragment, ``iat`` ``now`` (whole seconds), a fresh
    ``jti``, ``ath`` the base64url SHA-256 of the access token it goes with (none on a
    token request), and the server's ``nonce`` when it gave one."""
    parts = urlsplit(url)
    claims: dict[str, Any] = {
        "htm": method,
        "htu": urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")),
        "iat": int(now),
        "jti": jti,
    }
    if access_token is not None:
        digest = hashlib.sha256(access_token.encode("ascii", "replace")).digest()
        claims["ath"] = base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
    if nonce is not None:
        claims["nonce"] = nonce
    return claims


def dpop_proof(signer: JwtSigner, claims: dict[str, Any]) -> str:
    """``claims`` signed as a DPoP proof (``typ`` ``dpop+jwt``, the public key in the
    header), checked to be a compact JWS.

    Raises:
        AssertionUnusable: the signer failed, or returned something else.
    """
    return _signed(signer, claims, "DPoP signer", typ="dpop+jwt", jwk=True)


def dpop_nonce(value: str | None) -> str | None:
    """A ``DPoP-Nonce`` header value fit to send back (RFC 9449 section 8: visible
    ASCII, at most :data:`MAX_NONCE_CHARS`), else None."""
    if not value or len(value) > MAX_NONCE_CHARS:
        return None
    if not all("!" <= c <= "~" for c in value):
        return None
    return value


def token_request_jwts(
    *,
    client_signer: JwtSigner | None,
    dpop: JwtSigner | None,
    client_id: str,
    audience: str,
    token_endpoint: str,
    now: float,
    token_bytes: Callable[[int], bytes],
    lifetime: float = DEFAULT_ASSERTION_LIFETIME,
    nonce: str | None = None,
) -> tuple[str | None, str | None]:
    """The JWTs one token request carries: ``(client_assertion, dpop_proof)``, each
    None when its signer is None.  The client assertion is for ``audience`` (the
    authorization server's issuer, RFC 7523 section 3); the DPoP proof is for a POST
    to ``token_endpoint`` with the server's ``nonce`` (RFC 9449 section 5); each gets a
    fresh ``jti`` of 16 random bytes.

    Raises:
        AssertionUnusable: a signer failed or answered something else than a JWS.
        OAuthLocalError: bad claims (an empty client id, a lifetime out of range).
    """

    def jti() -> str:
        return base64.urlsafe_b64encode(token_bytes(16)).rstrip(b"=").decode("ascii")

    assertion = proof = None
    if client_signer is not None:
        claims = client_assertion_claims(
            client_id=client_id, audience=audience, now=now, jti=jti(), lifetime=lifetime
        )
        assertion = client_assertion(client_signer, claims)
    if dpop is not None:
        claims = dpop_claims(
            method="POST", url=token_endpoint, now=now, jti=jti(), access_token=None, nonce=nonce
        )
        proof = dpop_proof(dpop, claims)
    return assertion, proof

"""OAuth resource server, part 2: JWT access tokens checked against a JWKS.

Theory of operation
-------------------
:class:`JwtVerifier` accepts a JWS compact token (RFC 7515/7519, RFC 9068 access
tokens) signed by one of the authorization server's public keys.  The protocol
decisions are made here, before any cryptography: the token is split and its header
read by this module (three base64url parts, a JSON object header, no ``crit``), its
``alg`` must be one of :attr:`JwtVerifier.algorithms` (never ``none``, never an HMAC:
a JWKS holds public keys, and an HMAC keyed with a public key is the classic
algorithm-confusion forgery), and the key is picked by ``kid`` among the keys whose
type and curve fit that ``alg`` (a token without ``kid`` is accepted only when the
JWKS holds exactly one key).  Only then is the signature checked, by joserfc with that
one key and that one algorithm.  The claims are read by
:func:`mcp_ref._oauth_verify.identity_from` (``aud`` = this server, ``iss`` = the
issuer, which is required here, ``exp`` required, ``nbf``).

The keys come from a JWKS document: given once (``jwks=``) or fetched from
``jwks_url`` through a :class:`~mcp_ref._oauth_verify.NeedFetch` when none are held,
when they are older than ``cache_seconds``, or when a token names an unknown ``kid``
(at most once per ``refetch_seconds``, so random ``kid`` values cannot make the server
hammer its authorization server).  A failed fetch keeps the keys held before.  Requests
that arrive together before the first keys do each fetch them; a driver avoids that by
fetching once at start-up (:meth:`JwtVerifier.jwks_request`,
:meth:`JwtVerifier.receive_jwks`).

JOSE is outside MCP, so joserfc is the optional extra ``mcp-ref[auth]``; it is
imported when a verifier is built, never when this module is imported, and a missing
library raises an :class:`~mcp_ref._oauth_http.OAuthLocalError` naming the extra.
joserfc was chosen over Authlib: it is the JOSE half of Authlib, by the same author,
typed (``py.typed``), with one dependency (cryptography), and nothing of OAuth clients
or web frameworks that this package already implements.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ._oauth_http import (
    DEFAULT_MAX_BODY_BYTES,
    HttpRequest,
    HttpResponse,
    OAuthError,
    OAuthLocalError,
    canonical_resource,
    read_json_object,
    require_secure,
)
from ._oauth_verify import (
    DEFAULT_LEEWAY,
    Identity,
    NeedFetch,
    TokenRejected,
    Verdict,
    identity_from,
)

__all__ = ["ALGORITHMS", "DEFAULT_ALGORITHMS", "JwtVerifier"]

ALGORITHMS: Final[Mapping[str, tuple[str, str | None]]] = {
    "RS256": ("RSA", None),
    "RS384": ("RSA", None),
    "RS512": ("RSA", None),
    "PS256": ("RSA", None),
    "PS384": ("RSA", None),
    "PS512": ("RSA", None),
    "ES256": ("EC", "P-256"),
    "ES384": ("EC", "P-384"),
    "ES512": ("EC", "P-521"),
    "Ed25519": ("OKP", "Ed25519"),
    "EdDSA": ("OKP", "Ed25519"),
}
"""The signature algorithms that may be accepted, each with the key type (``kty``) and
curve (``crv``) it needs (RFC 7518 section 3, RFC 8037, RFC 9864).  Asymmetric only:
no ``none``, no ``HS*``.  (``EdDSA`` is taken with Ed25519 keys only.)"""

DEFAULT_ALGORITHMS: Final = tuple(a for a in ALGORITHMS if a != "EdDSA")
"""The algorithms accepted unless the application says otherwise: all of
:data:`ALGORITHMS` but ``EdDSA``, which RFC 9864 deprecates for the fully specified
``Ed25519`` (joserfc warns on each use); pass it in ``algorithms`` to accept it."""

MAX_KEYS: Final = 64
"""The most keys read from one JWKS; the rest are ignored."""

_PART: Final = re.compile(r"[A-Za-z0-9_-]*")


def _joserfc() -> Any:
    """The joserfc modules (jwk, jws, errors), imported on first use."""
    try:
        from joserfc import errors, jwk, jws
    except ImportError:
        raise OAuthLocalError(
            "the JWT verifier needs joserfc: install the extra `mcp-ref[auth]`"
        ) from None
    return jwk, jws, errors


def _b64decode(part: str) -> bytes:
    """base64url without padding (RFC 7515 section 2); ValueError when malformed."""
    if not _PART.fullmatch(part) or len(part) % 4 == 1:
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def _json_object(data: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True, slots=True)
class _Key:
    kid: str | None
    kty: str
    crv: str | None
    alg: str | None
    key: Any
    """The joserfc key object (public)."""


def _usable_key(jwk: Any, errors: Any, data: object) -> _Key | None:
    """One JWKS entry as a verification key, or None: not a dict, a symmetric or
    private key, ``use`` other than ``sig``, ``key_ops`` without ``verify``, or key
    material joserfc cannot import."""
    if not isinstance(data, dict):
        return None
    kty, crv, kid, alg = (data.get(k) for k in ("kty", "crv", "kid", "alg"))
    if kty not in ("RSA", "EC", "OKP"):
        return None
    if data.get("use", "sig") != "sig":
        return None
    ops = data.get("key_ops")
    if ops is not None and (not isinstance(ops, list) or "verify" not in ops):
        return None
    if not all(v is None or isinstance(v, str) for v in (crv, kid, alg)):
        return None
    try:
        key = jwk.import_key(data, kty)
    except (errors.JoseError, ValueError, KeyError, TypeError):  # what joserfc raises
        return None
    if key.is_private:
        return None
    return _Key(kid=kid, kty=kty, crv=crv, alg=alg, key=key)


class JwtVerifier:
    """Verifies JWT access tokens against a JWKS (see the module header).

    Args:
        resource: this MCP server's canonical URI; ``aud`` must name it.
        issuer: the authorization server's issuer; ``iss`` must equal it.
        jwks_url: where to fetch the JWKS (HTTPS, or HTTP on loopback), or None.
        jwks: a JWKS document (``{"keys": [...]}``) to use instead of or before
            fetching.
        algorithms: the accepted ``alg`` values, a subset of :data:`ALGORITHMS`
            (:data:`DEFAULT_ALGORITHMS` unless given).
        leeway: clock skew allowed on ``exp``/``nbf``, in seconds.
        cache_seconds: how long fetched keys are used before a refetch, in seconds.
        refetch_seconds: the least time between two fetches prompted by an unknown
            ``kid``, in seconds.
        max_body_bytes: the largest JWKS read, in bytes.
        require_at_jwt: refuse a token whose ``typ`` is not ``at+jwt`` (RFC 9068
            section 4; off by default because many servers send ``JWT``).

    Raises:
        OAuthLocalError: joserfc is not installed; neither ``jwks_url`` nor ``jwks``;
            an insecure ``jwks_url``; an unknown algorithm; a bad resource; a
            ``jwks`` with no usable key.
    """

    def __init__(
        self,
        *,
        resource: str,
        issuer: str,
        jwks_url: str | None = None,
        jwks: Mapping[str, Any] | None = None,
        algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS,
        leeway: float = DEFAULT_LEEWAY,
        cache_seconds: float = 300.0,
        refetch_seconds: float = 30.0,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        require_at_jwt: bool = False,
    ) -> None:
        self._jwk, self._jws, self._errors = _joserfc()
        try:
            self.resource: Final = canonical_resource(resource)
            if jwks_url is not None:
                require_secure(jwks_url, "the JWKS URL")
        except OAuthError as exc:
            raise OAuthLocalError(exc.reason) from None
        unknown = [a for a in algorithms if a not in ALGORITHMS]
        if unknown or not algorithms:
            raise OAuthLocalError(f"algorithms not accepted by the JWT verifier: {unknown}")
        if jwks_url is None and jwks is None:
            raise OAuthLocalError("the JWT verifier needs jwks_url or jwks")
        self.issuer: Final = issuer
        self.jwks_url: Final = jwks_url
        self.algorithms: Final = frozenset(algorithms)
        self.leeway, self.cache_seconds, self.refetch_seconds = (
            leeway,
            cache_seconds,
            refetch_seconds,
        )
        self.max_body_bytes, self.require_at_jwt = max_body_bytes, require_at_jwt
        self._keys: tuple[_Key, ...] = ()
        self._fetched_at: float | None = None
        self._static = jwks_url is None
        if jwks is not None:
            self._keys = self._read_keys(jwks)
            if not self._keys:
                raise OAuthLocalError("the JWKS given holds no usable verification key")

    def _read_keys(self, doc: Mapping[str, Any]) -> tuple[_Key, ...]:
        keys = doc.get("keys")
        if not isinstance(keys, list):
            return ()
        found = (_usable_key(self._jwk, self._errors, k) for k in keys[:MAX_KEYS])
        return tuple(k for k in found if k is not None)

    def jwks_request(self) -> HttpRequest:
        """The JWKS ``GET`` (never carries a token).

        Raises:
            OAuthLocalError: the verifier has no ``jwks_url``.
        """
        if self.jwks_url is None:
            raise OAuthLocalError("this JWT verifier has no jwks_url")
        return HttpRequest(
            method="GET",
            url=self.jwks_url,
            headers=(("Accept", "application/json"),),
            max_body_bytes=self.max_body_bytes,
        )

    def _fetch(self, then: Any) -> NeedFetch[Identity | TokenRejected]:
        def on_answer(response: HttpResponse | None, now: float) -> Any:
            self.receive_jwks(response, now=now)
            return then(now)

        return NeedFetch(self.jwks_request(), on_answer)

    def receive_jwks(self, response: HttpResponse | None, *, now: float) -> bool:
        """Keep the keys of an answer to :meth:`jwks_request` received at ``now``
        (seconds); None means the exchange failed.  A failed, malformed or keyless
        answer changes nothing but the time of the attempt.  A driver may call it at
        start-up to fetch the keys before the first request.  Returns whether new keys
        were taken.  Never raises."""
        self._fetched_at = now
        if response is None or response.status != 200:
            return False
        try:
            doc = read_json_object(response, self.max_body_bytes, "JWKS")
        except OAuthError:
            return False
        keys = self._read_keys(doc)
        if keys:
            self._keys = keys
        return bool(keys)

    def verify(self, token: str, *, now: float) -> Verdict:
        """The token's :class:`~mcp_ref._oauth_verify.Identity`, a
        :class:`~mcp_ref._oauth_verify.TokenRejected`, or a
        :class:`~mcp_ref._oauth_verify.NeedFetch` for the JWKS.  ``now`` in seconds
        since the epoch.  Never raises."""
        parts = token.split(".")
        if len(parts) != 3:
            return TokenRejected(reason="the token is not a signed JWT (JWS compact)")
        try:
            header = _json_object(_b64decode(parts[0]))
            claims = _json_object(_b64decode(parts[1]))
            _b64decode(parts[2])
        except (ValueError, binascii.Error):
            return TokenRejected(reason="the token is not base64url")
        if header is None or claims is None:
            return TokenRejected(reason="the token's header or claims are not a JSON object")
        alg, kid = header.get("alg"), header.get("kid")
        if not isinstance(alg, str) or alg not in self.algorithms:
            return TokenRejected(reason=f"the token's algorithm is not accepted: {str(alg)[:20]!r}")
        if kid is not None and not isinstance(kid, str):
            return TokenRejected(reason="the token's kid is not a string")
        if "crit" in header:
            return TokenRejected(reason="the token has critical header parameters")
        if self.require_at_jwt and str(header.get("typ", "")).lower() not in (
            "at+jwt",
            "application/at+jwt",
        ):
            return TokenRejected(reason="the token is not a JWT access token (typ)")
        stale = self._fetched_at is None or now - self._fetched_at >= self.cache_seconds
        if not self._static and stale:
            return self._fetch(lambda at: self._check(token, header, claims, at, False))
        return self._check(token, header, claims, now, not self._static)

    def _check(
        self,
        token: str,
        header: dict[str, Any],
        claims: dict[str, Any],
        now: float,
        may_refetch: bool,
    ) -> Verdict:
        alg, kid = header["alg"], header.get("kid")
        kty, crv = ALGORITHMS[alg]
        if kid is None and len(self._keys) > 1:
            return TokenRejected(reason="the token has no kid and the JWKS holds several keys")
        fits = [
            k
            for k in self._keys
            if (kid is None or k.kid == kid)
            and k.kty == kty
            and (crv is None or k.crv == crv)
            and k.alg in (None, alg)
        ]
        if not fits:
            recent = self._fetched_at is not None and now - self._fetched_at < self.refetch_seconds
            if may_refetch and (kid is not None or not self._keys) and not recent:
                return self._fetch(lambda at: self._check(token, header, claims, at, False))
            if not self._keys:
                return TokenRejected(reason="no JWKS could be read", kind="unavailable")
            return TokenRejected(reason="no key of the JWKS fits the token's kid and alg")
        try:
            self._jws.deserialize_compact(token, fits[0].key, algorithms=[alg])
        except (self._errors.JoseError, ValueError) as exc:
            why = type(exc).__name__
            return TokenRejected(reason=f"the token's signature does not verify ({why})")
        # Spec: 2025-11-25/basic/authorization#token-handling.1
        # "MCP servers, acting in their role as an OAuth 2.1 resource server, MUST
        # validate access tokens as described in OAuth 2.1 Section 5.2."
        if claims.get("iss") != self.issuer:
            return TokenRejected(reason="the token comes from another issuer (iss)")
        return identity_from(
            claims,
            resource=self.resource,
            issuer=self.issuer,
            now=now,
            leeway=self.leeway,
            require_exp=True,
        )

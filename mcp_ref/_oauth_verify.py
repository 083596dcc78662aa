"""OAuth resource server, part 1: verifying access tokens, and token introspection.

Theory of operation
-------------------
An MCP server acting as an OAuth resource server gets a bearer token with every HTTP
request and must decide whose it is and whether it was issued for this server.  That
decision is a :class:`TokenVerifier`: one method, ``verify(token, now=...)``, which
answers an :class:`Identity` (subject, client, scopes, expiry, audience, claims), a
:class:`TokenRejected` (why, and whether the token or the verifier is at fault), or a
:class:`NeedFetch` when it must ask the authorization server first.

Why a :class:`NeedFetch` and not an ``async`` method: checking a token may need HTTP
(a JWKS ``GET``, an introspection ``POST``), and the core does no I/O.  Rather than
move verification into the drivers (written three times: trio, asyncio, blocking),
the verifier hands out the request to make together with its continuation, as the
sign-in flow hands out ``NeedHttp``; the driver's loop is the same for every verifier::

    verdict = verifier.verify(token, now=clock())
    while isinstance(verdict, NeedFetch):
        verdict = verdict.resume(send_or_none(verdict.request), now=clock())

The continuation keeps the state of one verification, so concurrent requests never
share a "pending" slot, and a verifier that needs no I/O (a table of tokens, a JWT with
static keys) simply never returns a :class:`NeedFetch`.  ``resume(None)`` means the
exchange failed (no connection, timeout): the verifier answers "unavailable" (503),
never "invalid token", since a client that threw its token away would gain nothing.

Whatever verifier produced it, an :class:`Identity` is checked again by the caller
(:mod:`mcp_ref._oauth_resource`): its audience must name this server and it must not
have expired, so no verifier can forget the two rules the spec makes MUSTs.

:class:`IntrospectionVerifier` is the RFC 7662 verifier: it POSTs the token to the
authorization server's introspection endpoint with client authentication and reads
``active``, ``scope``, ``aud``, ``exp``, ``nbf``, ``sub``, ``client_id`` and ``iss``.
The JWT verifier (:mod:`mcp_ref._oauth_verify_jwt`) needs JOSE, an optional extra.
"""

from __future__ import annotations

import base64
import hashlib
import math
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Generic, Literal, Protocol, TypeVar
from urllib.parse import quote_plus, urlencode

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

__all__ = [
    "DEFAULT_LEEWAY",
    "CachingVerifier",
    "Identity",
    "IntrospectionVerifier",
    "NeedFetch",
    "TokenRejected",
    "TokenVerifier",
    "Verdict",
    "audience_matches",
    "check_times",
    "identity_from",
    "read_scopes",
]

DEFAULT_LEEWAY: Final = 30.0
"""Clock skew tolerated on ``exp`` and ``nbf``, in seconds."""

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class Identity:
    """Who is calling, as established from a valid access token."""

    subject: str | None
    """``sub``: the resource owner (None for a client acting on its own behalf)."""
    client_id: str | None
    """``client_id``: the OAuth client the token was issued to."""
    scopes: frozenset[str]
    """The scopes granted (``scope``, split on spaces)."""
    expires_at: float | None
    """``exp``, in seconds since the epoch, or None if the token states none."""
    audience: tuple[str, ...]
    """``aud``: the resources the token is for; must include this server."""
    issuer: str | None = None
    """``iss``: the authorization server that issued the token."""
    claims: Mapping[str, Any] = field(default_factory=dict)
    """Every claim or introspection member, as received (for the application)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenRejected:
    """The token is refused.  ``kind`` picks the HTTP answer (see
    :mod:`mcp_ref._oauth_resource`): ``"invalid_token"`` is a 401, ``"unavailable"``
    (the verifier could not reach or read its authorization server) a 503."""

    reason: str
    """A sentence for logs and ``error_description`` (never contains the token)."""
    kind: Literal["invalid_token", "unavailable"] = "invalid_token"
    """Whose fault: the token's, or the verifier's upstream."""


class NeedFetch(Generic[T]):
    """An HTTP exchange a verification needs before it can answer.

    Send :attr:`request` (do not follow redirects; stop reading the body past
    ``request.max_body_bytes``) and call :meth:`resume` once with the answer, or with
    None when the exchange failed.  ``resume`` returns the verdict, or another
    :class:`NeedFetch`.
    """

    __slots__ = ("_then", "_used", "request")

    def __init__(
        self, request: HttpRequest, then: Callable[[HttpResponse | None, float], T | NeedFetch[T]]
    ) -> None:
        self.request: Final = request
        """The request to send."""
        self._then = then
        self._used = False

    def resume(self, response: HttpResponse | None, *, now: float) -> T | NeedFetch[T]:
        """The verdict, given the answer (None: the exchange failed); ``now`` in
        seconds.

        Raises:
            OAuthLocalError: called a second time.
        """
        if self._used:
            raise OAuthLocalError("NeedFetch.resume called twice")
        self._used = True
        return self._then(response, now)

    def map(self, f: Callable[[Any], Any]) -> NeedFetch[Any]:
        """A :class:`NeedFetch` for the same request whose final verdict is ``f``
        applied to this one's (for callers that wrap a verifier's answer)."""

        def then(response: HttpResponse | None, now: float) -> Any:
            result = self.resume(response, now=now)
            return result.map(f) if isinstance(result, NeedFetch) else f(result)

        return NeedFetch(self.request, then)


Verdict = Identity | TokenRejected | NeedFetch[Identity | TokenRejected]
"""What :meth:`TokenVerifier.verify` answers."""


class TokenVerifier(Protocol):
    """Decides whose an access token is.  Implemented by the application, or use
    :class:`IntrospectionVerifier` or :class:`~mcp_ref._oauth_verify_jwt.JwtVerifier`."""

    def verify(self, token: str, *, now: float) -> Verdict:
        """The token's :class:`Identity`, a :class:`TokenRejected`, or a
        :class:`NeedFetch` to run first.  ``token`` is the bearer token's text (at most
        the guard's bound, syntax already checked); ``now`` is seconds since the epoch.
        Must not raise for any token: every refusal is a :class:`TokenRejected`."""
        ...


class CachingVerifier:
    """A :class:`TokenVerifier` that remembers the identities another one established,
    so a token is not introspected again on every request (RFC 7662 section 4 lets a
    resource server cache the answer).

    A verdict is kept for ``ttl`` seconds at most, never past the identity's expiry;
    only identities are kept (a refused token is asked about again), by a SHA-256 of
    the token (the token itself is not kept), at most ``max_entries`` of them (the
    least recently used go first).  A revoked token stays accepted until its entry
    expires: ``ttl`` is that delay.

    Args:
        inner: the verifier asked on a miss.
        ttl: seconds a verdict is reused (> 0).
        max_entries: the most tokens remembered (> 0).

    Raises:
        OAuthLocalError: ``ttl`` or ``max_entries`` not positive.
    """

    def __init__(self, inner: TokenVerifier, *, ttl: float = 60.0, max_entries: int = 4096) -> None:
        if not ttl > 0 or max_entries < 1:
            raise OAuthLocalError("a verdict cache needs ttl > 0 and max_entries >= 1")
        self.inner: Final = inner
        self.ttl: Final = ttl
        self.max_entries: Final = max_entries
        self._kept: OrderedDict[bytes, tuple[float, Identity]] = OrderedDict()

    def verify(self, token: str, *, now: float) -> Verdict:
        """The remembered identity of ``token`` while fresh, else the inner verifier's
        verdict (remembered when it is an identity).  Never raises."""
        key = hashlib.sha256(token.encode()).digest()
        kept = self._kept.get(key)
        if kept is not None:
            if now < kept[0]:
                self._kept.move_to_end(key)
                return kept[1]
            del self._kept[key]
        verdict = self.inner.verify(token, now=now)
        if isinstance(verdict, NeedFetch):
            return verdict.map(lambda v: self._keep(key, v, now))
        return self._keep(key, verdict, now)

    def _keep(
        self, key: bytes, verdict: Identity | TokenRejected, now: float
    ) -> Identity | TokenRejected:
        if isinstance(verdict, Identity):
            until = now + self.ttl
            if verdict.expires_at is not None:
                until = min(until, verdict.expires_at)
            self._kept[key] = (until, verdict)
            self._kept.move_to_end(key)
            while len(self._kept) > self.max_entries:
                self._kept.popitem(last=False)
        return verdict


# --- claim checks shared by the verifiers --------------------------------------------


def audience_matches(aud: object, resource: str) -> tuple[str, ...] | None:
    """The ``aud`` value as a tuple when it names ``resource`` (RFC 8707 section 2),
    else None.  ``aud`` may be a string or a list of strings (RFC 7519 section 4.1.3,
    RFC 7662 section 2.2); URL values are compared in canonical form (uppercase scheme
    and host accepted), others exactly.  Never raises."""
    values = [aud] if isinstance(aud, str) else aud
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        return None
    found = False
    for value in values:
        try:
            found = found or canonical_resource(value) == resource
        except OAuthError:
            found = found or value == resource
    return tuple(values) if found else None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def check_times(claims: Mapping[str, Any], now: float, leeway: float, require_exp: bool) -> str:
    """Why the token's ``exp``/``nbf`` (seconds since the epoch) refuse it at ``now``,
    or ``""`` if they do not.  ``leeway`` (seconds) is granted both ways.  Never
    raises."""
    exp = claims.get("exp")
    if exp is None and require_exp:
        return "the token has no expiry (exp)"
    if exp is not None:
        value = _number(exp)
        if value is None:
            return "the token's exp is not a number"
        if now >= value + leeway:
            return "the token has expired"
    nbf = claims.get("nbf")
    if nbf is not None:
        value = _number(nbf)
        if value is None:
            return "the token's nbf is not a number"
        if now + leeway < value:
            return "the token is not valid yet (nbf)"
    return ""


def read_scopes(claims: Mapping[str, Any]) -> frozenset[str] | None:
    """The granted scopes: ``scope`` (a space-separated string, RFC 6749 section 3.3)
    or, failing that, ``scp`` (a list of strings, as some servers send); empty when
    neither is present; None when present but malformed.  Never raises."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return frozenset(scope.split())
    if scope is not None:
        return None
    scp = claims.get("scp")
    if scp is None:
        return frozenset()
    if isinstance(scp, list) and all(isinstance(s, str) for s in scp):
        return frozenset(scp)
    return None


def _optional_str(claims: Mapping[str, Any], key: str) -> str | Literal[False] | None:
    value = claims.get(key)
    if value is None or isinstance(value, str):
        return value
    return False


def identity_from(
    claims: Mapping[str, Any],
    *,
    resource: str,
    issuer: str | None,
    now: float,
    leeway: float,
    require_exp: bool,
) -> Identity | TokenRejected:
    """The :class:`Identity` the claims (a JWT's payload or an introspection answer)
    state, after the checks both verifiers share: ``aud`` names ``resource``, ``iss``
    equals ``issuer`` when one is configured and the claims carry one, ``exp``/``nbf``
    at ``now`` (seconds, ``leeway`` seconds either way), and well-typed ``sub``,
    ``client_id``, ``scope``.  Never raises."""
    # Spec: 2025-11-25/basic/authorization#token-handling.2
    # "MCP servers MUST validate that access tokens were issued specifically for them as
    # the intended audience, according to RFC 8707 Section 2."
    audience = audience_matches(claims.get("aud"), resource)
    if audience is None:
        return TokenRejected(reason="the token was not issued for this server (aud)")
    iss = _optional_str(claims, "iss")
    if iss is False or (issuer is not None and iss is not None and iss != issuer):
        return TokenRejected(reason="the token comes from another issuer (iss)")
    why = check_times(claims, now, leeway, require_exp)
    if why:
        return TokenRejected(reason=why)
    scopes = read_scopes(claims)
    subject, client_id = _optional_str(claims, "sub"), _optional_str(claims, "client_id")
    if scopes is None or subject is False or client_id is False:
        return TokenRejected(reason="the token's sub, client_id or scope is malformed")
    exp = _number(claims.get("exp"))
    return Identity(
        subject=subject,
        client_id=client_id,
        scopes=scopes,
        expires_at=exp,
        audience=audience,
        issuer=iss,
        claims=dict(claims),
    )


# --- RFC 7662 token introspection -----------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class IntrospectionVerifier:
    """Verifies tokens by asking the authorization server (RFC 7662).

    Each :meth:`verify` returns a :class:`NeedFetch` for a ``POST`` of
    ``token=...&token_type_hint=access_token`` to :attr:`endpoint`, authenticated as
    :attr:`client_id` (RFC 7662 section 2.1 requires the resource server to
    authenticate).  The answer must be a 200 JSON object whose ``active`` is ``true``;
    then ``aud`` must name :attr:`resource`, ``iss`` (when sent) equal :attr:`issuer`,
    and ``exp``/``nbf`` hold at ``now``.  No answer is cached.

    Raises (when built):
        OAuthLocalError: an endpoint that is not HTTPS (HTTP only on loopback), a
            resource that is not an absolute http(s) URL, or an unknown auth method.
    """

    endpoint: str
    """The introspection endpoint URL (``introspection_endpoint`` of RFC 8414)."""
    resource: str
    """This MCP server's canonical URI (stored canonicalized)."""
    client_id: str
    """The resource server's client id at the authorization server."""
    client_secret: str
    """Its secret."""
    issuer: str | None = None
    """The expected ``iss``, or None to skip that check."""
    auth_method: Literal["client_secret_basic", "client_secret_post"] = "client_secret_basic"
    """How the client authenticates (RFC 6749 section 2.3.1)."""
    leeway: float = DEFAULT_LEEWAY
    """Clock skew allowed on ``exp``/``nbf``, in seconds."""
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    """The largest introspection answer read, in bytes."""

    def __post_init__(self) -> None:
        try:
            require_secure(self.endpoint, "the introspection endpoint")
            object.__setattr__(self, "resource", canonical_resource(self.resource))
        except OAuthError as exc:
            raise OAuthLocalError(exc.reason) from None
        if self.auth_method not in ("client_secret_basic", "client_secret_post"):
            raise OAuthLocalError(f"unknown client auth method {self.auth_method!r}")

    def request(self, token: str) -> HttpRequest:
        """The introspection ``POST`` for ``token`` (form-encoded, RFC 7662 section
        2.1), with the client's credentials."""
        form = {"token": token, "token_type_hint": "access_token"}
        headers = [
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Accept", "application/json"),
        ]
        if self.auth_method == "client_secret_basic":
            # RFC 6749 section 2.3.1: both parts form-urlencoded before base64.
            pair = f"{quote_plus(self.client_id)}:{quote_plus(self.client_secret)}"
            basic = base64.b64encode(pair.encode()).decode("ascii")
            headers.append(("Authorization", f"Basic {basic}"))
        else:
            form |= {"client_id": self.client_id, "client_secret": self.client_secret}
        return HttpRequest(
            method="POST",
            url=self.endpoint,
            headers=tuple(headers),
            body=urlencode(form).encode("ascii"),
            max_body_bytes=self.max_body_bytes,
        )

    def verify(self, token: str, *, now: float) -> Verdict:
        """A :class:`NeedFetch` for the introspection request; its verdict is the
        :class:`Identity`, or a :class:`TokenRejected` (``invalid_token`` for an
        inactive or foreign token, ``unavailable`` for a failed exchange or an answer
        that is not a 200 JSON object).  Never raises."""
        return NeedFetch(self.request(token), self.read)

    def read(self, response: HttpResponse | None, now: float) -> Identity | TokenRejected:
        """The verdict an introspection answer gives at ``now`` (seconds).  Never
        raises."""
        if response is None:
            return TokenRejected(
                reason="the introspection endpoint did not answer", kind="unavailable"
            )
        if response.status != 200:
            return TokenRejected(
                reason=f"the introspection endpoint answered {response.status}",
                kind="unavailable",
            )
        try:
            doc = read_json_object(response, self.max_body_bytes, "introspection answer")
        except OAuthError as exc:
            return TokenRejected(reason=exc.reason, kind="unavailable")
        if doc.get("active") is not True:
            return TokenRejected(reason="the token is not active")
        return identity_from(
            doc,
            resource=self.resource,
            issuer=self.issuer,
            now=now,
            leeway=self.leeway,
            require_exp=False,
        )

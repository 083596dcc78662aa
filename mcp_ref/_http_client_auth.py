"""The Streamable HTTP client signs in, sans-IO: the options, the token, the decisions.

Theory of operation
-------------------
The HTTP client flows (:mod:`mcp_ref._http_client_flows`) see a 401, or a 403 with
``insufficient_scope``, and hand the driver an
:class:`~mcp_ref._http_client_steps.Authorize` step.  The driver asks the
:class:`ClientAuth` held by the core (``core.auth``) what to do, and does the I/O:

1. Under the driver's sign-in lock, :meth:`ClientAuth.stale` says whether another task
   already signed in since the refused request was sent (``generation``): then the
   request is simply sent again with the new token.
2. After a 401, a kept grant with a refresh token is refreshed first
   (:meth:`ClientAuth.refresh_request`, :meth:`ClientAuth.refreshed`).
3. Else :meth:`ClientAuth.begin` hands out the :class:`~mcp_ref._oauth_flow.SignIn`
   flow, fed with the challenge: the driver runs it (its ``NeedHttp`` requests are sent
   as they are, redirects not followed, bodies cut at ``max_body_bytes + 1``; its
   ``NeedAuthorization`` goes to :attr:`OAuthClientOptions.authorize`), and gives the
   grant to :meth:`ClientAuth.authorized`.

Every request's headers then carry :meth:`ClientAuth.header`: the bearer token, only
for a URL the grant's resource covers (:func:`~mcp_ref._oauth_grants.bearer_header`
refuses any other).  Before each message the driver asks
:meth:`ClientAuth.refresh_request` with the wall clock: an expired token with a refresh
token is refreshed before it is sent.  No sockets, no clock here.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from . import _oauth_assertions as jwts
from ._oauth_config import (
    Authorized,
    Failed,
    FlowState,
    Grants,
    NeedAuthorization,
    NeedHttp,
    SignInConfig,
)
from ._oauth_flow import SignIn
from ._oauth_grants import (
    Grant,
    InMemoryTokenStore,
    TokenStore,
    bearer_header,
    new_state,
    read_token_response,
    refresh_request,
)
from ._oauth_http import (
    DEFAULT_MAX_BODY_BYTES,
    HttpRequest,
    HttpResponse,
    OAuthError,
    OAuthLocalError,
    OAuthRefused,
)
from ._oauth_metadata import ClientInfo

__all__ = ["ClientAuth", "OAuthClientOptions", "SignInRunner", "run_refresh", "run_sign_in"]

log = logging.getLogger(__name__)

Authorize = Callable[[str], Awaitable[str]]
"""The browser step: ``async (authorization_url) -> redirect_url``."""


@dataclass(frozen=True, kw_only=True)
class OAuthClientOptions:
    """How :func:`mcp_ref.client.open_http_client` signs in when the server asks
    (``auth=OAuthClientOptions(...)``).

    Authorization code: ``redirect_uri`` and ``authorize``.  Client credentials
    extension: a client id and a secret or a ``signer``.  Workload identity:
    ``grant="jwt_bearer"``, a client id, ``assertion``.  Enterprise-managed
    authorization: ``grant="enterprise"``, a client id (and secret),
    ``identity_provider``.  Checked when the client opens (``SignInConfig``:
    :class:`~mcp_ref._oauth_http.OAuthLocalError`).

    Source: 2025-11-25/basic/authorization#token-requirements;
    #step-up-authorization-flow; #client-registration-approaches;
    extensions/auth/oauth-client-credentials; extensions/auth/enterprise-managed-authorization.
    """

    redirect_uri: str | None = None
    """Where the browser comes back (HTTPS, or http on loopback)."""
    authorize: Authorize | None = None
    """The browser step: open the URL, return the URL the browser was redirected to
    (with ``code`` and ``state``).  Required for the authorization code grant."""
    grant: Grants = "authorization_code"
    """``client_credentials`` (no user), ``jwt_bearer`` (RFC 7523), ``enterprise``
    (an ID-JAG from ``identity_provider``, then the JWT-bearer grant)."""
    client_id: str | None = None
    """A pre-registered client id (used before any other registration)."""
    client_secret: str | None = None
    """Its secret (confidential clients)."""
    client_auth_method: str | None = None
    """``none``, ``client_secret_basic``, ``client_secret_post`` or
    ``private_key_jwt``; None: chosen from what the server supports."""
    signer: jwts.JwtSigner | None = None
    """Signs ``private_key_jwt`` client assertions (``PrivateKeySigner``)."""
    assertion: str | None = None
    """The JWT the ``jwt_bearer`` grant sends (a workload identity token)."""
    identity_provider: jwts.IdentityProvider | None = None
    """The enterprise IdP and the user's identity assertion (``enterprise`` grant)."""
    assertion_lifetime: float = jwts.DEFAULT_ASSERTION_LIFETIME
    """How long a client assertion is valid, in seconds."""
    dpop: jwts.JwtSigner | None = None
    """DPoP-bound tokens (RFC 9449), proofs signed with this key; None: bearer tokens."""
    client_metadata_url: str | None = None
    """This client's client ID metadata document URL (https, with a path)."""
    client_name: str = "mcp-ref"
    """The name sent in dynamic registration."""
    token_store: TokenStore = field(default_factory=InMemoryTokenStore)
    """Where grants are kept, by server URL (in memory by default)."""
    offline_access: bool = True
    """Ask for ``offline_access`` (a refresh token) when the server offers it."""
    trusted_origins: frozenset[str] = frozenset()
    """Origins besides the issuer's where token/registration endpoints may live."""
    max_retries: int = 3
    """How many 401/403 after signing in are answered by signing in again."""
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    """The largest authorization-server answer read, in bytes."""

    def sign_in_config(self, protocol_version: str | None = "2025-11-25") -> SignInConfig:
        """The :class:`~mcp_ref._oauth_config.SignInConfig` these options make.

        Raises:
            OAuthLocalError: inconsistent options (no redirect URI for the
                authorization code grant, an insecure URL...).
        """
        client = None
        if self.client_id is not None:
            client = ClientInfo(
                client_id=self.client_id,
                client_secret=self.client_secret,
                auth_method=self.client_auth_method,
            )
        return SignInConfig(
            grant=self.grant,
            redirect_uri=self.redirect_uri,
            client=client,
            client_metadata_url=self.client_metadata_url,
            client_name=self.client_name,
            offline_access=self.offline_access,
            trusted_origins=self.trusted_origins,
            max_retries=self.max_retries,
            max_body_bytes=self.max_body_bytes,
            protocol_version=protocol_version,
            signer=self.signer,
            assertion=self.assertion,
            identity_provider=self.identity_provider,
            assertion_lifetime=self.assertion_lifetime,
            dpop=self.dpop,
        )


class ClientAuth:
    """The signed-in state of one HTTP client: the grant (in the options' token store,
    keyed by ``url``), the flow, and ``generation`` (grants taken so far).

    Args:
        url: the MCP endpoint URL (the resource the token is for).
        options: how to sign in.

    Raises:
        OAuthLocalError: the options are inconsistent (checked at once).
    """

    def __init__(self, url: str, options: OAuthClientOptions) -> None:
        self.url = url
        self.options = options
        self.config = options.sign_in_config()
        self.generation = 0
        """Grants taken (sign-ins and refreshes): a refused request sent with an older
        one is simply sent again."""
        self._flow: SignIn | None = None
        self._now = 0.0
        self._nonce: str | None = None
        self._nonce_fresh = False

    def tick(self, now: float) -> None:
        """The wall clock (seconds), noted before each message: DPoP proofs' ``iat``."""
        self._now = now

    @property
    def grant(self) -> Grant | None:
        """The grant kept for this server, or None."""
        return self.options.token_store.get(self.url)

    def header(self, url: str) -> tuple[bytes, bytes] | None:
        """The ``Authorization`` header for a request to ``url``, or None when not
        signed in.

        Raises:
            TokenMisdirected: ``url`` is outside the grant's resource (never sent).
        """
        grant = self.grant
        if grant is None:
            return None
        name, value = bearer_header(grant, url)
        return (name.lower().encode("latin-1"), value.encode("latin-1"))

    def headers(self, method: str, url: str) -> list[tuple[bytes, bytes]]:
        """The headers that carry the token on a ``method`` request to ``url``: none
        when not signed in, else ``Authorization``, and for a DPoP-bound token a fresh
        ``DPoP`` proof with the server's last nonce (RFC 9449 section 7.1).

        Raises:
            TokenMisdirected: ``url`` is outside the grant's resource (never sent).
        """
        authorization = self.header(url)
        if authorization is None:
            return []
        grant, signer = self.grant, self.config.dpop
        if grant is None or grant.token_type != "DPoP" or signer is None:
            return [authorization]
        # RFC 9449 section 4.2: a proof that goes with an access token carries its hash.
        claims = jwts.dpop_claims(
            method=method,
            url=url,
            now=self._now,
            jti=new_state(secrets.token_bytes),
            access_token=grant.access_token,
            nonce=self._nonce,
        )
        try:
            return [authorization, (b"dpop", jwts.dpop_proof(signer, claims).encode("ascii"))]
        except OAuthRefused as exc:  # the server refuses the proofless token: a clear 401
            log.warning("no DPoP proof: %s", exc.reason)
            return [authorization]

    def note_dpop_nonce(self, value: str) -> None:
        """The MCP server's ``DPoP-Nonce`` (RFC 9449 section 9): later proofs carry it."""
        nonce = jwts.dpop_nonce(value)
        if nonce is not None and nonce != self._nonce:
            self._nonce, self._nonce_fresh = nonce, True

    def take_fresh_nonce(self) -> bool:
        """A new nonce came since the last call: send the refused request again."""
        fresh, self._nonce_fresh = self._nonce_fresh, False
        return fresh

    def stale(self, generation: int) -> bool:
        """A grant was taken after the refused request (sent at ``generation``) went
        out: send it again rather than sign in again."""
        return generation != self.generation

    def refresh_request(self, now: float, *, force: bool = False) -> HttpRequest | None:
        """The refresh POST when the kept grant has expired at ``now`` (wall-clock
        seconds; ``force``: whatever its expiry, after a 401), or None (no grant, no
        refresh token, not expired).

        Source: 2026-07-28/basic/authorization/index#refresh-tokens.
        """
        grant = self.grant
        if grant is None or grant.refresh_token is None:
            return None
        if not force and not grant.expired(now):
            return None
        signer = self.config.signer if grant.auth_method == "private_key_jwt" else None
        if grant.auth_method == "private_key_jwt" and signer is None:
            raise OAuthLocalError("the grant is refreshed with private_key_jwt: no signer")
        try:
            assertion, proof = jwts.token_request_jwts(
                client_signer=signer,
                dpop=self.config.dpop if grant.token_type == "DPoP" else None,
                client_id=grant.client.client_id,
                audience=grant.issuer or grant.token_endpoint,
                token_endpoint=grant.token_endpoint,
                now=now,
                token_bytes=secrets.token_bytes,
                lifetime=self.config.assertion_lifetime,
            )
        except OAuthRefused as exc:
            log.warning("cannot refresh: %s", exc.reason)
            return None
        return refresh_request(grant, self.config.max_body_bytes, assertion, proof)

    def refreshed(self, response: HttpResponse, now: float) -> bool:
        """The refresh answer: True when a new token is kept; else the grant is
        forgotten (a full sign-in follows) and False."""
        grant = self.grant
        if grant is None:
            return False
        try:
            new = read_token_response(
                response, now, template=grant, max_body_bytes=self.config.max_body_bytes
            )
        except OAuthRefused:
            self.options.token_store.set(self.url, None)
            return False
        self.authorized(new)
        return True

    def begin(self, status: int, www_authenticate: list[str]) -> SignIn:
        """The sign-in flow, fed with the MCP server's refusal (``status`` 401 or 403,
        its ``WWW-Authenticate`` values): the same flow after a sign-in (step-up and
        its retry limit), a new one otherwise."""
        flow = self._flow
        if flow is None or flow.state is not FlowState.AUTHORIZED:
            flow = self._flow = SignIn(self.url, self.config)
        flow.receive_challenge(status, www_authenticate)
        return flow

    def authorized(self, grant: Grant) -> None:
        """Keep ``grant`` (the flow's, or a refresh's): later requests carry it."""
        self.options.token_store.set(self.url, grant)
        self.generation += 1


async def run_sign_in(
    auth: ClientAuth,
    status: int,
    www_authenticate: list[str],
    exchange: Callable[[HttpRequest], Awaitable[HttpResponse]],
    clock: Callable[[], float],
    io_failures: tuple[type[BaseException], ...],
) -> str | None:
    """Run one sign-in after a ``status`` answer (401, or 403 ``insufficient_scope``)
    whose ``WWW-Authenticate`` values are ``www_authenticate``: the flow's HTTP requests
    go through ``exchange`` (the driver's I/O, awaited), its browser step through
    ``auth.options.authorize``, until it is authorized (the grant is kept in ``auth``)
    or fails.  The one loop the trio and asyncio HTTP clients share: it awaits only
    what it is given, so it runs under either.

    Args:
        auth: the client's sign-in state.
        status, www_authenticate: the refusal that asks for a sign-in.
        exchange: sends one request of the flow and returns its response.
        clock: wall-clock seconds (token expiry is compared with it).
        io_failures: the exceptions ``exchange`` raises when the exchange fails.

    Returns:
        None when signed in, else why not (one line).

    Source: 2025-11-25/basic/authorization#authorization-flow-steps.
    """
    try:
        flow = auth.begin(status, www_authenticate)
    except OAuthError as exc:
        return f"HTTP {status}: cannot sign in: {exc.reason}"
    while True:
        event = flow.next_event()
        if isinstance(event, NeedHttp):
            try:
                response = await exchange(event.request)
            except io_failures as exc:
                return f"sign-in failed: {event.request.url}: {exc!r}"
            flow.receive_response(response, now=clock())
        elif isinstance(event, NeedAuthorization):
            authorize = auth.options.authorize
            if authorize is None:
                return "sign-in needs a browser step: give OAuthClientOptions.authorize"
            flow.receive_redirect(await authorize(event.url), now=clock())
        elif isinstance(event, Authorized):
            auth.authorized(event.grant)
            return None
        else:
            assert isinstance(event, Failed)
            return f"sign-in failed: {event.error.reason}"


async def run_refresh(
    auth: ClientAuth,
    request: HttpRequest,
    exchange: Callable[[HttpRequest], Awaitable[HttpResponse]],
    clock: Callable[[], float],
    io_failures: tuple[type[BaseException], ...],
) -> bool:
    """Send one refresh ``request`` (from :meth:`ClientAuth.refresh_request`) through
    ``exchange`` and keep the new token; True when one is kept.  A failed exchange is
    logged and gives False (the caller signs in anew).  Loop-agnostic, as
    :func:`run_sign_in`.

    Source: 2025-11-25/basic/authorization#token-handling (refresh tokens).
    """
    try:
        response = await exchange(request)
    except io_failures as exc:
        log.warning("refreshing the token failed: %r", exc)
        return False
    return auth.refreshed(response, clock())


@dataclass
class SignInRunner:
    """What a client driver does about tokens, written once for the trio and the asyncio
    HTTP clients: both give it their I/O (``exchange``), their lock and their clock.

    Attributes:
        auth: the client's sign-in state.
        lock: an async lock of the driver's loop (``trio.Lock()``, ``asyncio.Lock()``):
            one refresh or sign-in at a time.
        exchange: sends one request of the flow and returns its response.
        clock: wall-clock seconds.
        io_failures: the exceptions ``exchange`` raises when the exchange fails.
    """

    auth: ClientAuth
    lock: Any
    exchange: Callable[[HttpRequest], Awaitable[HttpResponse]]
    clock: Callable[[], float]
    io_failures: tuple[type[BaseException], ...]

    async def keep_fresh(self) -> None:
        """Before a message: refresh an expired token that can be refreshed."""
        auth = self.auth
        auth.tick(self.clock())
        if auth.refresh_request(self.clock()) is None:
            return
        async with self.lock:
            if (request := auth.refresh_request(self.clock())) is not None:
                await run_refresh(auth, request, self.exchange, self.clock, self.io_failures)

    async def after_refusal(
        self, status: int, www_authenticate: list[str], generation: int
    ) -> str | None:
        """After a 401 (or 403 ``insufficient_scope``) to a message sent with the
        token of ``generation``: nothing when another task signed in since; after a
        401, a refresh when the token can be refreshed; else the sign-in flow.  None
        when the message may be sent again, else why not (one line).

        Source: 2025-11-25/basic/authorization#authorization-flow-steps.
        """
        auth = self.auth
        auth.tick(self.clock())
        if status == 401 and auth.take_fresh_nonce():
            return None  # the server wants a DPoP nonce: send again with it
        async with self.lock:
            if auth.stale(generation):
                return None  # another task signed in since: send again with its token
            if status == 401:
                request = auth.refresh_request(self.clock(), force=True)
                if request is not None and await run_refresh(
                    auth, request, self.exchange, self.clock, self.io_failures
                ):
                    return None
            return await run_sign_in(
                auth, status, www_authenticate, self.exchange, self.clock, self.io_failures
            )

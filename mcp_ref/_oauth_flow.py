"""OAuth sign-in, part 5: the flow, a state machine that asks for HTTP and a browser.

Theory of operation
-------------------
:class:`SignIn` signs an MCP client in to one MCP server, in the order the
authorization pages give, without doing any I/O.  A driver runs it like h11::

    flow = SignIn(server_url, config)
    flow.receive_challenge(401, www_authenticate_values)   # the MCP server's answer
    while True:
        event = flow.next_event()
        if isinstance(event, NeedHttp):           # send it, do not follow redirects
            flow.receive_response(send(event.request), now=clock())
        elif isinstance(event, NeedAuthorization):  # the application's browser step
            flow.receive_redirect(open_browser_and_wait(event.url))
        elif isinstance(event, Authorized):       # keep event.grant in a TokenStore
            break
        else:                                     # Failed: event.error says why
            raise event.error

The states, and what moves the flow on (anything else is an
:class:`~mcp_ref._oauth_http.OAuthLocalError`)::

    IDLE --receive_challenge--> RESOURCE_METADATA  header URL, path-aware, root
    RESOURCE_METADATA --200--> SERVER_METADATA     RFC 8414 / OIDC URLs in order
    RESOURCE_METADATA --none found--> SERVER_METADATA  2025-03-26: base URL metadata
    SERVER_METADATA --none found--> (2025-03-26 default endpoints)
    SERVER_METADATA --200--> REGISTERING (dynamic registration) or straight on
    ... --> BROWSER (authorization code) --receive_redirect--> TOKEN
    ... --> TOKEN (client credentials; JWT bearer)
    ... --> IDENTITY_ASSERTION (enterprise: the IdP's ID-JAG) --200--> TOKEN
    TOKEN --200--> AUTHORIZED --receive_challenge (403 insufficient_scope, 401)--> ...
    any --refusal--> FAILED (sticky)

Registration follows the spec's preference: the pre-registered client, else a client
ID metadata document when the server supports them, else dynamic registration, else
:class:`~mcp_ref._oauth_http.RegistrationUnavailable` (asking the user is the
application's part).  After AUTHORIZED, a 403 ``insufficient_scope`` re-authorizes with
the union of the scopes asked so far and the new ones (step-up), and a 401 starts over;
both count toward ``max_retries``, and a step-up that asks for nothing new is refused
at once (:class:`~mcp_ref._oauth_http.StepUpLimit`).

Grants without a browser (:mod:`mcp_ref._oauth_assertions`): client credentials, with a
secret or a ``private_key_jwt`` assertion the configured signer makes at the moment
the token request is built; the JWT-bearer grant, with an assertion the application
was given (checked for this server's audience and expiry before it is sent); and
enterprise-managed authorization, which first asks the enterprise IdP for an ID-JAG
(RFC 8693 token exchange) and then sends it with the JWT-bearer grant.

With ``dpop`` configured, every token request carries a DPoP proof (RFC 9449 section 5)
and is sent once more with the server's nonce when it answers ``use_dpop_nonce``
(section 8); the grant then holds a ``DPoP`` token, which the driver sends with a
proof of its own on every request (:class:`~mcp_ref._http_client_auth.ClientAuth`).

Not covered here (gaps, named): choosing among several authorization
servers (the first listed is used), and refreshing (pure functions in
:mod:`mcp_ref._oauth_grants`: the driver refreshes a stored grant before it needs a new
sign-in).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable

from ._oauth_assertions import (
    JWT_BEARER_GRANT,
    check_assertion,
    dpop_nonce,
    read_id_jag,
    token_exchange_request,
    token_request_jwts,
)
from ._oauth_challenge import bearer_challenge
from ._oauth_config import (
    AUTHORIZATION_CODE,
    CLIENT_CREDENTIALS,
    ENTERPRISE,
    JWT_BEARER,
    Authorized,
    Event,
    Failed,
    FlowState,
    NeedAuthorization,
    NeedHttp,
    SignInConfig,
    choose_client,
)
from ._oauth_grants import (
    Grant,
    TokenBytes,
    authorization_url,
    choose_auth_method,
    new_state,
    pkce_pair,
    read_redirect,
    read_token_response,
    select_scope,
    token_request,
)
from ._oauth_http import (
    AuthorizationDenied,
    BadMetadata,
    DiscoveryFailed,
    HttpResponse,
    OAuthLocalError,
    OAuthRefused,
    StepUpLimit,
    UnsupportedClientAuth,
    canonical_resource,
    discovery_request,
    redirect_target,
    require_secure,
)
from ._oauth_metadata import (
    ClientInfo,
    ProtectedResource,
    ServerMetadata,
    authorization_server_urls,
    legacy_endpoints,
    legacy_metadata_url,
    protected_resource_urls,
    read_protected_resource,
    read_registration,
    read_server_metadata,
    registration_request,
    require_pkce,
)

__all__ = [
    "Authorized",
    "Failed",
    "FlowState",
    "NeedAuthorization",
    "NeedHttp",
    "SignIn",
    "SignInConfig",
]


class SignIn:
    """The sign-in flow for one MCP server (see the module's theory of operation).

    Args:
        server_url: the MCP endpoint URL.
        config: how to sign in.
        token_bytes: ``n -> n`` random bytes, for PKCE and ``state``.

    Raises:
        OAuthLocalError: ``server_url`` is not an absolute http(s) URL.
    """

    def __init__(
        self,
        server_url: str,
        config: SignInConfig,
        *,
        token_bytes: TokenBytes = secrets.token_bytes,
    ) -> None:
        try:
            self._resource = canonical_resource(server_url)
        except OAuthRefused as exc:
            raise OAuthLocalError(exc.reason) from None
        self.server_url = server_url
        self.config = config
        self._random = token_bytes
        self.state = FlowState.IDLE
        self._event: Event | None = None
        self._candidates: list[str] = []
        self._tried: list[str] = []
        self._hops = 0
        self._challenge_scope: tuple[str, ...] | None = None
        self._prm: ProtectedResource | None = None
        self._issuer: str | None = None
        self._legacy = False
        self._metadata: ServerMetadata | None = None
        self._client: ClientInfo | None = None
        self._auth_method = "none"
        self._scope: tuple[str, ...] | None = None
        self._scopes_asked: list[frozenset[str]] = []
        self._retries = 0
        self._verifier = self._state_value = ""
        self._now = 0.0
        self._token_params: list[tuple[str, str]] = []
        self._dpop_nonce: str | None = None
        self._nonce_retried = False

    # --- the driver's side -----------------------------------------------------------

    def next_event(self) -> Event:
        """What the driver must do now (the same event until it is answered).

        Raises:
            OAuthLocalError: nothing started yet (call ``receive_challenge`` first).
        """
        if self._event is None:
            raise OAuthLocalError("the flow has not started: call receive_challenge")
        return self._event

    def receive_challenge(self, status: int, www_authenticate: Iterable[str]) -> None:
        """Start (or, once signed in, restart) from the MCP server's 401 or 403 answer.

        Args:
            status: 401, or 403 (only ``insufficient_scope`` is acted upon).
            www_authenticate: every ``WWW-Authenticate`` value of the answer.

        Raises:
            OAuthLocalError: the flow is busy or failed, or ``status`` is neither.
        """
        if self.state not in (FlowState.IDLE, FlowState.AUTHORIZED) or status not in (401, 403):
            raise OAuthLocalError(f"no challenge ({status}) is expected in {self.state.value}")
        try:
            self._challenge(status, list(www_authenticate))
        except OAuthRefused as exc:
            self._fail(exc)

    def receive_response(self, response: HttpResponse, *, now: float) -> None:
        """The answer to the last :class:`NeedHttp` request.

        Args:
            response: the answer (a redirect included: the flow decides).
            now: the current time in seconds (token expiry is ``now + expires_in``).

        Raises:
            OAuthLocalError: no request is outstanding.
        """
        if not isinstance(self._event, NeedHttp):
            raise OAuthLocalError(f"no HTTP request is outstanding in {self.state.value}")
        request = self._event.request
        self._now = now
        try:
            target = redirect_target(request, response, self._hops)
            if target is not None:
                self._hops += 1
                self._get(target, keep_hops=True)
                return
            self._on_response(response, now)
        except OAuthRefused as exc:
            self._fail(exc)

    def receive_redirect(self, url: str, *, now: float | None = None) -> None:
        """The URL the browser was redirected to after the authorization step.

        Args:
            url: the whole redirect URL (``redirect_uri`` with ``code``, ``state`` and,
                from servers that send it, ``iss``); a refusal becomes :class:`Failed`.
            now: the current time in seconds since the epoch (a ``private_key_jwt``
                assertion's ``iat``); None: the time of the last response.

        Raises:
            OAuthLocalError: no browser step is outstanding.
        """
        if self.state is not FlowState.BROWSER or self._metadata is None:
            raise OAuthLocalError(f"no browser step is outstanding in {self.state.value}")
        assert self._client is not None and self.config.redirect_uri is not None
        self._now = self._now if now is None else now
        try:
            code = read_redirect(
                url,
                redirect_uri=self.config.redirect_uri,
                state=self._state_value,
                # Spec: 2026-07-28/basic/authorization/index#authorization-response-validation.1
                # "Before redirecting the user-agent, the client MUST record the `issuer` value from
                # the selected authorization server's validated metadata document (see Authorization
                # Server Metadata Discovery) and associate it with the same per-request record used
                # to store the PKCE code verifier (and the `state` value, if used)."
                issuer=self._metadata.issuer,
                iss_supported=self._metadata.iss_parameter_supported,
            )
        except OAuthRefused as exc:
            self._fail(exc)
            return
        # Spec: 2025-11-25/basic/authorization#resource-parameter-implementation.2
        # "MUST be included in both authorization requests and token requests."
        # Spec: 2026-07-28/basic/authorization/index#resource-parameter-implementation.2
        # "MUST be included in both authorization requests and token requests."
        # Spec: 2025-06-18/basic/authorization#resource-parameter-implementation.2
        # "MUST be included in both authorization requests and token requests."
        resource = ("resource", self._resource_param())
        self._token(
            [
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", self.config.redirect_uri),
                ("code_verifier", self._verifier),
                resource,
            ]
        )

    # --- steps -----------------------------------------------------------------------

    def _fail(self, error: OAuthRefused) -> None:
        self.state = FlowState.FAILED
        self._event = Failed(error=error)

    def _get(self, url: str, *, keep_hops: bool = False) -> None:
        self._hops = self._hops if keep_hops else 0
        version, limit = self.config.protocol_version, self.config.max_body_bytes
        self._event = NeedHttp(request=discovery_request(url, version, limit))

    def _challenge(self, status: int, values: list[str]) -> None:
        challenge = bearer_challenge(values)
        scope = challenge.scope if challenge else None
        if status == 403 and (challenge is None or challenge.error != "insufficient_scope"):
            raise AuthorizationDenied("403 Forbidden without insufficient_scope: not a scope")
        if self.state is FlowState.AUTHORIZED:
            self._retries += 1
            # Spec: 2025-11-25/basic/authorization#step-up-authorization-flow.4
            # "Clients SHOULD implement retry limits and SHOULD track scope upgrade attempts to
            # avoid repeated failures for the same resource and operation combination."
            # Spec: 2026-07-28/basic/authorization/index#step-up-authorization-flow.5
            # "Clients SHOULD implement retry limits and SHOULD track scope upgrade attempts to
            # avoid repeated failures for the same resource and operation combination."
            if self._retries > self.config.max_retries:
                raise StepUpLimit(f"still refused after {self.config.max_retries} sign-ins")
            if status == 403:
                # Spec: 2025-11-25/basic/authorization#step-up-authorization-flow.1
                # "Clients SHOULD respond to these errors by requesting a new access token with an
                # increased set of scopes via a step-up authorization flow or handle the errors in
                # other, appropriate ways."
                # Spec: 2026-07-28/basic/authorization/index#step-up-authorization-flow.1
                # "Clients SHOULD respond to these errors by requesting a new access
                # token with an increased set of scopes via a step-up authorization
                # flow"; its scopes are the union of those asked before and the
                # challenge's (the flow's step 2, which holds no keyword of its own).
                # Spec: 2026-07-28/basic/authorization/index#scope-selection-strategy.5
                # "When re-authorizing, clients SHOULD include these scopes alongside any previously
                # granted scopes to avoid losing permissions needed for other operations (see
                # Step-Up Authorization Flow)."
                # Spec: 2025-11-25/basic/authorization#step-up-authorization-flow.2
                # "Clients acting on behalf of a user SHOULD attempt the step-up authorization
                # flow."
                # Spec: 2026-07-28/basic/authorization/index#step-up-authorization-flow.2
                # "Clients acting on behalf of a user SHOULD attempt the step-up authorization
                # flow."
                union = tuple(dict.fromkeys([*(self._scope or ()), *(scope or ())]))
                if frozenset(union) in self._scopes_asked:
                    raise StepUpLimit(f"the server asks again for scopes already granted: {union}")
                self._scope = union
                self._authorize()
                return
        # Spec: 2026-07-28/basic/authorization/authorization-server-discovery#protected-resource-metadata-discovery-requirements.2
        # "MCP clients MUST support both discovery mechanisms and use the resource metadata URL from
        # the parsed `WWW-Authenticate` headers when present; otherwise, they MUST fall back to
        # constructing and requesting the well-known URIs in the order listed above."
        # Spec: 2025-11-25/basic/authorization#protected-resource-metadata-discovery-requirements.2
        # "use the resource metadata URL from the parsed `WWW-Authenticate` headers when
        # present; otherwise, they MUST fall back to constructing and requesting the
        # well-known URIs in the order listed above."
        self._challenge_scope = scope
        self._scope, self._prm, self._legacy, self._tried = None, None, False, []
        self._candidates = protected_resource_urls(self.server_url)
        if challenge is not None and challenge.resource_metadata:
            first = require_secure(challenge.resource_metadata, "the resource metadata URL")
            self._candidates = [first, *(u for u in self._candidates if u != first)]
        self.state = FlowState.RESOURCE_METADATA
        self._next_candidate()

    def _next_candidate(self) -> None:
        if self._candidates:
            url = self._candidates.pop(0)
            self._tried.append(url)
            self._get(url)
            return
        if self.state is FlowState.RESOURCE_METADATA and self.config.legacy_fallback:
            self._legacy = True
            self._issuer, url = legacy_metadata_url(self.server_url)
            self.state = FlowState.SERVER_METADATA
            self._candidates = [url]
            self._next_candidate()
            return
        # Spec: 2025-03-26/basic/authorization#fallbacks-for-servers-without-metadata-discovery.2
        # "Clients MUST first attempt to discover endpoints via the metadata document before falling
        # back to default paths."
        if self.state is FlowState.SERVER_METADATA and self._legacy:
            self._with_metadata(legacy_endpoints(self.server_url))
            return
        raise DiscoveryFailed(f"no {self.state.value} found at {self._tried}")

    def _on_response(self, response: HttpResponse, now: float) -> None:
        state, limit = self.state, self.config.max_body_bytes
        if state in (FlowState.RESOURCE_METADATA, FlowState.SERVER_METADATA):
            if response.status != 200:
                self._next_candidate()
            elif state is FlowState.RESOURCE_METADATA:
                # Spec: 2025-11-25/basic/authorization#overview.5
                # "MCP clients MUST use OAuth 2.0 Protected Resource Metadata for authorization
                # server discovery."
                # Spec: 2026-07-28/basic/authorization/index#overview.5
                # "MCP clients MUST use OAuth 2.0 Protected Resource Metadata for authorization
                # server discovery."
                # Spec: 2025-06-18/basic/authorization#overview.4
                # "MCP clients MUST use OAuth 2.0 Protected Resource Metadata for
                # authorization server discovery."
                self._prm = read_protected_resource(response, self.server_url, limit)
                self._issuer = self._prm.authorization_servers[0]
                self._candidates, self._tried = authorization_server_urls(self._issuer), []
                self.state = FlowState.SERVER_METADATA
                self._next_candidate()
            else:
                assert self._issuer is not None
                # Spec: 2025-03-26/basic/authorization#overview.3
                # "MCP servers SHOULD and MCP clients MUST implement OAuth 2.0 Authorization Server
                # Metadata (RFC8414)."
                # Spec: 2025-06-18/basic/authorization#overview.6
                # "MCP clients MUST use the OAuth 2.0 Authorization Server Metadata."
                # Spec: 2025-06-18/basic/authorization#server-metadata-discovery.1
                # "MCP clients MUST follow the OAuth 2.0 Authorization Server Metadata
                # RFC8414 specification"
                trusted = self.config.trusted_origins
                self._with_metadata(
                    read_server_metadata(
                        response, self._issuer, limit, trusted, legacy=self._legacy
                    )
                )
        elif state is FlowState.REGISTERING:
            assert self._metadata is not None
            self._client = read_registration(response, self._metadata, limit)
            self._with_client()
        elif state is FlowState.IDENTITY_ASSERTION:
            self._jwt_bearer(read_id_jag(response, limit))
        elif state is FlowState.TOKEN and self._use_dpop_nonce(response):
            self._token(self._token_params)  # the same request, with the server's nonce
        elif state is FlowState.TOKEN:
            assert self._metadata is not None and self._client is not None
            template = Grant(
                access_token="",
                expires_at=None,
                refresh_token=None,
                scope=self._scope,
                resource=self._resource_param(),
                token_endpoint=self._metadata.token_endpoint,
                client=self._client,
                auth_method=self._auth_method,
                issuer=self._metadata.issuer,
                token_type="DPoP" if self.config.dpop is not None else "Bearer",
            )
            grant = read_token_response(response, now, template=template, max_body_bytes=limit)
            self.state, self._nonce_retried = FlowState.AUTHORIZED, False
            self._event = Authorized(grant=grant)
        else:  # pragma: no cover - receive_response checks a request is outstanding
            raise OAuthLocalError(f"unexpected response in {state.value}")

    def _with_metadata(self, metadata: ServerMetadata) -> None:
        if self.config.grant == AUTHORIZATION_CODE:
            require_pkce(metadata)
        self._metadata = metadata
        self._client = choose_client(self.config, self._client, metadata)
        if self._client is None:
            self.state = FlowState.REGISTERING
            code = self.config.grant == AUTHORIZATION_CODE
            self._event = NeedHttp(
                request=registration_request(
                    metadata,
                    client_name=self.config.client_name,
                    redirect_uri=self.config.redirect_uri if code else None,
                    max_body_bytes=self.config.max_body_bytes,
                )
            )
            return
        self._with_client()

    def _with_client(self) -> None:
        assert self._metadata is not None and self._client is not None
        config = self.config
        can_sign = config.signer is not None
        self._auth_method = choose_auth_method(self._client, self._metadata, can_sign=can_sign)
        if self._scope is None:
            scopes = self._prm.scopes_supported if self._prm else None
            self._scope = select_scope(self._challenge_scope, scopes)
        if config.grant == JWT_BEARER:
            assert config.assertion is not None
            self._scopes_asked.append(frozenset(self._scope or ()))
            self._jwt_bearer(config.assertion)
            return
        if config.grant == ENTERPRISE:
            assert config.identity_provider is not None
            if self._metadata.issuer is None:
                raise BadMetadata("an ID-JAG names the authorization server's issuer: none")
            self._scopes_asked.append(frozenset(self._scope or ()))
            self.state = FlowState.IDENTITY_ASSERTION
            request = token_exchange_request(
                config.identity_provider,
                audience=self._metadata.issuer,
                resource=self._resource_param(),
                scope=self._scope,
                max_body_bytes=config.max_body_bytes,
            )
            self._event = NeedHttp(request=request)
            return
        if config.grant == CLIENT_CREDENTIALS:
            if self._auth_method == "none":
                raise UnsupportedClientAuth("client credentials need a client secret or a signer")
            params = [("grant_type", "client_credentials"), ("resource", self._resource_param())]
            if self._scope:
                params.append(("scope", " ".join(self._scope)))
            self._scopes_asked.append(frozenset(self._scope or ()))
            self._token(params)
            return
        # Spec: 2026-07-28/basic/authorization/index#refresh-tokens.3
        # "MAY add `offline_access` to the `scope` parameter of the authorization and
        # token requests when the Authorization Server metadata contains it in
        # `scopes_supported`"
        offered = self._metadata.scopes_supported or ()
        if self.config.offline_access and "offline_access" in offered:
            if "offline_access" not in (self._scope or ()):
                self._scope = (*(self._scope or ()), "offline_access")
        self._authorize()

    def _authorize(self) -> None:
        """Go to the browser step with fresh PKCE and ``state`` for ``self._scope``
        (for client credentials: ask the token endpoint again)."""
        assert self._metadata is not None and self._client is not None
        if self.config.grant != AUTHORIZATION_CODE:
            self._with_client()
            return
        assert self.config.redirect_uri is not None
        self._scopes_asked.append(frozenset(self._scope or ()))
        self._verifier, challenge = pkce_pair(self._random)
        self._state_value = new_state(self._random)
        url = authorization_url(
            self._metadata,
            client_id=self._client.client_id,
            redirect_uri=self.config.redirect_uri,
            code_challenge=challenge,
            state=self._state_value,
            scope=self._scope,
            resource=self._resource_param(),
        )
        self.state = FlowState.BROWSER
        self._event = NeedAuthorization(url=url)

    def _jwt_bearer(self, assertion: str) -> None:
        """Ask the token endpoint with the JWT-bearer grant (RFC 7523 section 2.1), once
        ``assertion`` is checked to be for this authorization server and unexpired."""
        assert self._metadata is not None
        audiences = (self._metadata.token_endpoint, *filter(None, [self._metadata.issuer]))
        check_assertion(assertion, audiences=audiences, now=self._now)
        params = [("grant_type", JWT_BEARER_GRANT), ("assertion", assertion)]
        params.append(("resource", self._resource_param()))
        if self._scope:
            params.append(("scope", " ".join(self._scope)))
        self._token(params)

    def _token(self, params: list[tuple[str, str]]) -> None:
        assert self._metadata is not None and self._client is not None
        self.state = FlowState.TOKEN
        endpoint, limit = self._metadata.token_endpoint, self.config.max_body_bytes
        # RFC 7523 section 3: a client assertion's audience is the authorization server,
        # named by its issuer (the token endpoint on 2025-03-26 default endpoints);
        # RFC 9449 section 5: a DPoP proof on the token request binds the token.
        pkjwt = self._auth_method == "private_key_jwt"  # choose_auth_method: a signer
        assertion, proof = token_request_jwts(
            client_signer=self.config.signer if pkjwt else None,
            dpop=self.config.dpop,
            client_id=self._client.client_id,
            audience=self._metadata.issuer or endpoint,
            token_endpoint=endpoint,
            now=self._now,
            token_bytes=self._random,
            lifetime=self.config.assertion_lifetime,
            nonce=self._dpop_nonce,
        )
        self._token_params = params
        request = token_request(
            endpoint, self._client, self._auth_method, params, limit, assertion, proof
        )
        self._event = NeedHttp(request=request)

    def _use_dpop_nonce(self, response: HttpResponse) -> bool:
        """A token endpoint's ``use_dpop_nonce`` answer with a usable ``DPoP-Nonce``,
        the first time (RFC 9449 section 8): keep the nonce and ask again."""
        if self.config.dpop is None or response.status not in (400, 401) or self._nonce_retried:
            return False
        nonce = dpop_nonce(response.header("dpop-nonce"))
        if nonce is None or b"use_dpop_nonce" not in response.body[:4096]:
            return False
        self._dpop_nonce, self._nonce_retried = nonce, True
        return True

    def _resource_param(self) -> str:
        """The ``resource`` parameter: the metadata's resource (checked to cover this
        server), else this server's canonical URI."""
        # Spec: 2025-11-25/basic/authorization#resource-parameter-implementation.4
        # "MUST use the canonical URI of the MCP server as defined in RFC 8707 Section 2."
        # Spec: 2026-07-28/basic/authorization/index#resource-parameter-implementation.4
        # "MUST use the canonical URI of the MCP server as defined in RFC 8707 Section 2."
        # Spec: 2025-06-18/basic/authorization#resource-parameter-implementation.4
        # "MUST use the canonical URI of the MCP server as defined in RFC 8707 Section 2."
        # Spec: 2025-06-18/basic/authorization#canonical-server-uri.1
        # "MCP clients SHOULD provide the most specific URI that they can for the MCP server they
        # intend to access, following the guidance in RFC 8707."
        # Spec: 2025-11-25/basic/authorization#canonical-server-uri.1
        # "MCP clients SHOULD provide the most specific URI that they can for the MCP server they
        # intend to access, following the guidance in RFC 8707."
        # Spec: 2026-07-28/basic/authorization/index#canonical-server-uri.1
        # "MCP clients SHOULD provide the most specific URI that they can for the MCP server they
        # intend to access, following the guidance in RFC 8707."
        return canonical_resource(self._prm.resource) if self._prm else self._resource

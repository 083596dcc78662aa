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
    ... --> TOKEN (client credentials)
    TOKEN --200--> AUTHORIZED --receive_challenge (403 insufficient_scope, 401)--> ...
    any --refusal--> FAILED (sticky)

Registration follows the spec's preference: the pre-registered client, else a client
ID metadata document when the server supports them, else dynamic registration, else
:class:`~mcp_ref._oauth_http.RegistrationUnavailable` (asking the user is the
application's part).  After AUTHORIZED, a 403 ``insufficient_scope`` re-authorizes with
the union of the scopes asked so far and the new ones (step-up), and a 401 starts over;
both count toward ``max_retries``, and a step-up that asks for nothing new is refused
at once (:class:`~mcp_ref._oauth_http.StepUpLimit`).

Not covered here (gaps, named): ``private_key_jwt`` client authentication (JOSE; the
client-credentials extension's recommended form), enterprise-managed authorization,
choosing among several authorization servers (the first listed is used), and
refreshing (pure functions in :mod:`mcp_ref._oauth_grants`: the driver refreshes a
stored grant before it needs a new sign-in).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable

from ._oauth_challenge import bearer_challenge
from ._oauth_config import (
    AUTHORIZATION_CODE,
    CLIENT_CREDENTIALS,
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
        try:
            target = redirect_target(request, response, self._hops)
            if target is not None:
                self._hops += 1
                self._get(target, keep_hops=True)
                return
            self._on_response(response, now)
        except OAuthRefused as exc:
            self._fail(exc)

    def receive_redirect(self, url: str) -> None:
        """The URL the browser was redirected to after the authorization step.

        Args:
            url: the whole redirect URL (``redirect_uri`` with ``code``, ``state`` and,
                from servers that send it, ``iss``); a refusal becomes :class:`Failed`.

        Raises:
            OAuthLocalError: no browser step is outstanding.
        """
        if self.state is not FlowState.BROWSER or self._metadata is None:
            raise OAuthLocalError(f"no browser step is outstanding in {self.state.value}")
        assert self._client is not None and self.config.redirect_uri is not None
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
            )
            grant = read_token_response(response, now, template=template, max_body_bytes=limit)
            self.state = FlowState.AUTHORIZED
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
        self._auth_method = choose_auth_method(self._client, self._metadata)
        if self._scope is None:
            scopes = self._prm.scopes_supported if self._prm else None
            self._scope = select_scope(self._challenge_scope, scopes)
        if self.config.grant == CLIENT_CREDENTIALS:
            if self._auth_method == "none":
                raise UnsupportedClientAuth("client credentials need a client secret")
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
        if self.config.grant == CLIENT_CREDENTIALS:
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

    def _token(self, params: list[tuple[str, str]]) -> None:
        assert self._metadata is not None and self._client is not None
        self.state = FlowState.TOKEN
        endpoint, limit = self._metadata.token_endpoint, self.config.max_body_bytes
        request = token_request(endpoint, self._client, self._auth_method, params, limit)
        self._event = NeedHttp(request=request)

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

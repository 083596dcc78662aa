"""basic/authorization, client side: the sans-IO sign-in flow (mcp_ref/_oauth_flow.py)
driven against a scripted MCP server and authorization server, without I/O.

The fake world is plain functions from an HttpRequest to an HttpResponse, keyed by URL;
its authorization server checks what a real one would (PKCE, redirect URI, resource,
client authentication), so a flow that breaks a rule is refused there or here.  The
browser step is a function too: it plays the user who consents.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, parse_qsl, unquote_plus, urlencode, urlsplit

import pytest

from mcp_ref._oauth_config import (
    Authorized,
    Failed,
    FlowState,
    NeedAuthorization,
    NeedHttp,
    SignInConfig,
)
from mcp_ref._oauth_flow import SignIn
from mcp_ref._oauth_http import (
    AuthorizationDenied,
    BadMetadata,
    BodyTooLarge,
    DiscoveryFailed,
    HttpRequest,
    HttpResponse,
    InsecureEndpoint,
    IssuerMismatch,
    OAuthError,
    OAuthLocalError,
    PkceUnsupported,
    RegistrationRefused,
    RegistrationUnavailable,
    ResourceMismatch,
    StateMismatch,
    StepUpLimit,
    TokenRefused,
    UnexpectedOrigin,
    UnexpectedRedirect,
    UnsupportedClientAuth,
)
from mcp_ref._oauth_metadata import ClientInfo

spec = pytest.mark.spec

SERVER = "https://mcp.example.com/mcp"
ISSUER = "https://auth.example.com"
REDIRECT = "http://127.0.0.1:3000/callback"
PRM_PATH = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
PRM_ROOT = "https://mcp.example.com/.well-known/oauth-protected-resource"
ASM = f"{ISSUER}/.well-known/oauth-authorization-server"
CHALLENGE = 'Bearer resource_metadata="https://mcp.example.com/prm", scope="files:read"'

Handler = Callable[[HttpRequest], HttpResponse]
PUBLIC = ClientInfo(client_id="pub-1")
CONFIDENTIAL = ClientInfo(client_id="pre-1", client_secret="s3cret")


def js(doc: Any, status: int = 200) -> HttpResponse:
    return HttpResponse(
        status=status,
        headers=(("Content-Type", "application/json"),),
        body=json.dumps(doc).encode(),
    )


def s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


@dataclass
class World:
    """An MCP server's metadata and an authorization server, as plain functions."""

    issuer: str = ISSUER
    prm: dict[str, Any] = field(
        default_factory=lambda: {
            "resource": SERVER,
            "authorization_servers": [ISSUER],
            "scopes_supported": ["mcp:read"],
        }
    )
    metadata: dict[str, Any] = field(
        default_factory=lambda: {
            "issuer": ISSUER,
            "authorization_endpoint": f"{ISSUER}/authorize",
            "token_endpoint": f"{ISSUER}/token",
            "registration_endpoint": f"{ISSUER}/register",
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": [
                "none",
                "client_secret_basic",
                "client_secret_post",
            ],
            "authorization_response_iss_parameter_supported": True,
            "scopes_supported": ["mcp:read", "files:read", "files:write"],
        }
    )
    clients: dict[str, str | None] = field(
        default_factory=lambda: {"pre-1": "s3cret", "pub-1": None}
    )
    routes: dict[str, Handler] = field(default_factory=dict)
    requests: list[HttpRequest] = field(default_factory=list)
    codes: dict[str, dict[str, str]] = field(default_factory=dict)
    send_iss: str | None = ISSUER
    issued: int = 0

    def __post_init__(self) -> None:
        self.routes.setdefault(PRM_PATH, lambda r: js(self.prm))
        self.routes.setdefault("https://mcp.example.com/prm", lambda r: js(self.prm))
        self.routes.setdefault(ASM, lambda r: js(self.metadata))
        self.routes.setdefault(f"{ISSUER}/register", self.register)
        self.routes.setdefault(f"{ISSUER}/token", self.token)

    def handle(self, request: HttpRequest) -> HttpResponse:
        self.requests.append(request)
        route = self.routes.get(request.url)
        return route(request) if route else HttpResponse(status=404)

    def register(self, request: HttpRequest) -> HttpResponse:
        doc = json.loads(request.body)
        client_id = f"dyn-{len(self.clients)}"
        secret = None if doc["token_endpoint_auth_method"] == "none" else "dyn-secret"
        self.clients[client_id] = secret
        answer = {"client_id": client_id, **({"client_secret": secret} if secret else {})}
        return js({**answer, "token_endpoint_auth_method": doc["token_endpoint_auth_method"]}, 201)

    def browser(self, url: str) -> str:
        """The authorization endpoint and a user who consents: the redirect URL."""
        parts = urlsplit(url)
        assert (
            f"{parts.scheme}://{parts.netloc}{parts.path}"
            == self.metadata["authorization_endpoint"]
        )
        q = {k: v[0] for k, v in parse_qs(parts.query).items()}
        assert q["response_type"] == "code" and q["code_challenge_method"] == "S256"
        code = f"code-{len(self.codes)}"
        self.codes[code] = q
        back = {"code": code, "state": q["state"]}
        if self.send_iss is not None:
            back["iss"] = self.send_iss
        return f"{q['redirect_uri']}?{urlencode(back)}"

    def authenticate(self, request: HttpRequest, form: dict[str, str]) -> str | None:
        """The authenticated client id, or None (RFC 6749 section 2.3)."""
        basic = request.header("authorization")
        if basic is not None:
            raw = base64.b64decode(basic.removeprefix("Basic ")).decode()
            cid, secret = (unquote_plus(p) for p in raw.split(":", 1))
            ok = cid in self.clients and self.clients[cid] == secret and "client_secret" not in form
            return cid if ok else None
        cid = form.get("client_id", "")
        if cid not in self.clients and not cid.startswith("https://"):
            return None
        return cid if self.clients.get(cid) == form.get("client_secret") else None

    def token(self, request: HttpRequest) -> HttpResponse:
        assert request.header("content-type") == "application/x-www-form-urlencoded"
        pairs = parse_qsl(request.body.decode())
        form = dict(pairs)
        assert len(form) == len(pairs)
        cid = self.authenticate(request, form)
        if cid is None:
            return js({"error": "invalid_client"}, 401)
        if "resource" not in form:
            return js({"error": "invalid_target"}, 400)
        grant = form["grant_type"]
        if grant == "authorization_code":
            q = self.codes.pop(form["code"], None)
            if (
                q is None
                or s256(form["code_verifier"]) != q["code_challenge"]
                or form["redirect_uri"] != q["redirect_uri"]
                or form["resource"] != q["resource"]
                or cid != q["client_id"]
            ):
                return js({"error": "invalid_grant"}, 400)
            scope = q.get("scope", "")
        elif grant in ("refresh_token", "client_credentials"):
            scope = form.get("scope", "")
        else:
            return js({"error": "unsupported_grant_type"}, 400)
        self.issued += 1
        return js(
            {
                "access_token": f"at-{self.issued}",
                "token_type": "Bearer",
                "expires_in": 3600,
                "refresh_token": f"rt-{self.issued}",
                **({"scope": scope} if scope else {}),
            }
        )


def config(**kw: Any) -> SignInConfig:
    kw.setdefault("redirect_uri", REDIRECT)
    return SignInConfig(**kw)


def fixed_random(n: int) -> bytes:
    return bytes(range(n))


def drive(
    flow: SignIn,
    world: World,
    *,
    browser: Callable[[str], str] | None = None,
    now: float = 1000.0,
) -> Authorized | Failed:
    """Run the flow until it is authorized or has failed."""
    for _ in range(60):
        event = flow.next_event()
        if isinstance(event, NeedHttp):
            flow.receive_response(world.handle(event.request), now=now)
        elif isinstance(event, NeedAuthorization):
            flow.receive_redirect((browser or world.browser)(event.url))
        else:
            return event
    raise AssertionError("the flow did not end")


def sign_in(
    world: World, challenge: str | None = CHALLENGE, *, status: int = 401, **kw: Any
) -> tuple[SignIn, Authorized | Failed]:
    browser = kw.pop("browser", None)
    server = kw.pop("server", SERVER)
    flow = SignIn(server, config(**kw), token_bytes=fixed_random)
    flow.receive_challenge(status, [challenge] if challenge else [])
    return flow, drive(flow, world, browser=browser)


def refused(event: Authorized | Failed, kind: type[OAuthError]) -> OAuthError:
    assert isinstance(event, Failed), event
    assert isinstance(event.error, kind), event.error
    assert event.error.reason
    return event.error


def urls(world: World) -> list[str]:
    return [r.url for r in world.requests]


# -- the whole flow ------------------------------------------------------------------------


@spec(
    "2025-06-18/basic/authorization#authorization-server-location.4",
    "2025-11-25/basic/authorization#protected-resource-metadata-discovery-requirements.8",
    "2026-07-28/basic/authorization/authorization-server-discovery#protected-resource-metadata-discovery-requirements.3",
    "2025-06-18/basic/authorization#overview.4",
    "2025-11-25/basic/authorization#overview.5",
    "2026-07-28/basic/authorization/index#overview.5",
    "2025-06-18/basic/authorization#server-metadata-discovery.1",
    "2025-06-18/basic/authorization#authorization-code-protection.1",
    "2025-03-26/basic/authorization#implementation-requirements.2",
    "2025-06-18/basic/authorization#overview.6",
    "2025-03-26/basic/authorization#overview.3",
)
def test_a_401_leads_to_tokens_by_the_spec_s_steps() -> None:
    world = World()
    flow, event = sign_in(world, client=CONFIDENTIAL)
    assert isinstance(event, Authorized) and flow.state is FlowState.AUTHORIZED
    grant = event.grant
    assert grant.access_token == "at-1" and grant.refresh_token == "rt-1"
    assert grant.expires_at == 1000.0 + 3600 and grant.resource == SERVER
    # The header's metadata URL, then the AS metadata, then the token endpoint.
    assert urls(world) == ["https://mcp.example.com/prm", ASM, f"{ISSUER}/token"]
    # No discovery request carries credentials; the flow never sends a bearer token.
    for request in world.requests:
        assert not (request.header("authorization") or "").startswith("Bearer")
        assert request.max_body_bytes == 1024 * 1024
    assert world.requests[0].header("mcp-protocol-version") == "2025-11-25"


def test_next_event_repeats_until_answered_and_failure_is_sticky() -> None:
    flow = SignIn(SERVER, config())
    with pytest.raises(OAuthLocalError):
        flow.next_event()
    flow.receive_challenge(401, [CHALLENGE])
    first = flow.next_event()
    assert flow.next_event() is first
    with pytest.raises(OAuthLocalError):
        flow.receive_redirect(REDIRECT)  # no browser step is outstanding
    flow.receive_response(HttpResponse(status=200, body=b"not json"), now=0)
    failed = flow.next_event()
    assert isinstance(failed, Failed) and isinstance(failed.error, BadMetadata)
    assert flow.next_event() is failed
    for misuse in (
        lambda: flow.receive_response(HttpResponse(status=200), now=0),
        lambda: flow.receive_challenge(401, []),
        lambda: flow.receive_redirect(REDIRECT),
    ):
        with pytest.raises(OAuthLocalError):
            misuse()


@spec(
    "2025-11-25/basic/authorization#implementation-requirements.3",
    "2026-07-28/basic/authorization/client-registration#implementation-requirements.3",
)
def test_bad_configuration_is_refused_when_built() -> None:
    with pytest.raises(OAuthLocalError):
        SignInConfig()  # the authorization code grant needs a redirect URI
    with pytest.raises(OAuthLocalError):
        config(redirect_uri="http://app.example.com/cb")  # not HTTPS, not loopback
    with pytest.raises(OAuthLocalError):
        config(client_metadata_url="https://app.example.com")  # no path
    with pytest.raises(OAuthLocalError):
        SignIn("mcp.example.com", config())  # no scheme
    with pytest.raises(OAuthLocalError):
        config(trusted_origins=frozenset({"tokens.example.com"}))
    with pytest.raises(OAuthLocalError):
        config(client_metadata_url="https://app.example.com/")
    assert config(redirect_uri="https://app.example.com/cb").redirect_uri


# -- protected resource metadata discovery --------------------------------------------------


@spec(
    "2025-11-25/basic/authorization#protected-resource-metadata-discovery-requirements.2",
    "2026-07-28/basic/authorization/authorization-server-discovery#protected-resource-metadata-discovery-requirements.2",
)
def test_without_a_header_url_the_path_aware_well_known_comes_first() -> None:
    world = World()
    world.routes[PRM_PATH] = lambda r: HttpResponse(status=404)
    world.routes[PRM_ROOT] = lambda r: js(world.prm)
    _, event = sign_in(world, "Bearer", client=CONFIDENTIAL)
    assert isinstance(event, Authorized)
    assert urls(world)[:3] == [PRM_PATH, PRM_ROOT, ASM]


def test_a_server_at_the_root_has_one_well_known_url() -> None:
    world = World()
    world.prm["resource"] = "https://mcp.example.com"
    world.routes[PRM_ROOT] = lambda r: js(world.prm)
    flow, event = sign_in(world, None, server="https://mcp.example.com/", client=PUBLIC)
    assert isinstance(event, Authorized), event
    assert urls(world)[0] == PRM_ROOT and PRM_PATH not in urls(world)


def test_a_failing_header_url_falls_back_to_the_well_known_urls() -> None:
    world = World()
    world.routes["https://mcp.example.com/prm"] = lambda r: HttpResponse(status=500)
    _, event = sign_in(world, client=PUBLIC)
    assert isinstance(event, Authorized)
    assert urls(world)[:2] == ["https://mcp.example.com/prm", PRM_PATH]


@spec(
    "2025-06-18/basic/authorization#resource-parameter-implementation.3",
    "2025-11-25/basic/authorization#resource-parameter-implementation.3",
    "2026-07-28/basic/authorization/index#resource-parameter-implementation.3",
)
@pytest.mark.parametrize(
    "resource",
    [
        "https://other.example.com/mcp",
        "https://mcp.example.com/other",
        "https://mcp.example.com/mcpx",
    ],
)
def test_metadata_for_another_resource_is_refused(resource: str) -> None:
    world = World()
    world.prm["resource"] = resource
    _, event = sign_in(world, client=PUBLIC)
    refused(event, ResourceMismatch)
    assert ASM not in urls(world)


def test_a_parent_resource_on_the_same_origin_is_accepted_and_sent() -> None:
    world = World()
    world.prm["resource"] = "https://MCP.example.com"
    _, event = sign_in(world, client=PUBLIC)
    assert isinstance(event, Authorized) and event.grant.resource == "https://mcp.example.com"


@pytest.mark.parametrize(
    "prm",
    [
        {"resource": SERVER},
        {"resource": SERVER, "authorization_servers": []},
        {"authorization_servers": [ISSUER]},
        {"resource": SERVER, "authorization_servers": [7]},
        [SERVER],
    ],
)
def test_malformed_resource_metadata_is_refused(prm: Any) -> None:
    world = World()
    world.routes["https://mcp.example.com/prm"] = lambda r: js(prm)
    refused(sign_in(world)[1], BadMetadata)


def test_an_insecure_resource_metadata_url_is_refused() -> None:
    world = World()
    challenge = 'Bearer resource_metadata="http://mcp.example.com/prm"'
    refused(sign_in(world, challenge)[1], InsecureEndpoint)
    assert world.requests == []


def test_a_malformed_challenge_is_a_refusal_not_a_crash() -> None:
    refused(sign_in(World(), 'Bearer scope="unterminated')[1], OAuthError)


# -- authorization server metadata discovery ------------------------------------------------


@spec(
    "2025-11-25/basic/authorization#authorization-server-metadata-discovery.1",
    "2025-11-25/basic/authorization#authorization-server-metadata-discovery.2",
    "2026-07-28/basic/authorization/authorization-server-discovery#authorization-server-metadata-discovery.1",
    "2026-07-28/basic/authorization/authorization-server-discovery#authorization-server-metadata-discovery.2",
)
def test_an_issuer_with_a_path_is_tried_in_the_listed_order() -> None:
    world = World()
    world.prm["authorization_servers"] = ["https://auth.example.com/tenant1"]
    refused(sign_in(world, legacy_fallback=False)[1], DiscoveryFailed)
    assert urls(world)[1:] == [
        "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
        "https://auth.example.com/.well-known/openid-configuration/tenant1",
        "https://auth.example.com/tenant1/.well-known/openid-configuration",
    ]


@spec(
    "2025-11-25/basic/authorization#overview.7",
    "2025-11-25/basic/authorization#authorization-server-metadata-discovery.1",
    "2025-11-25/basic/authorization#authorization-server-metadata-discovery.3",
    "2026-07-28/basic/authorization/index#overview.7",
    "2026-07-28/basic/authorization/authorization-server-discovery#authorization-server-metadata-discovery.1",
    "2026-07-28/basic/authorization/authorization-server-discovery#authorization-server-metadata-discovery.3",
)
def test_an_issuer_without_a_path_tries_oauth_then_openid() -> None:
    world = World()
    world.routes[ASM] = lambda r: HttpResponse(status=404)
    oidc = f"{ISSUER}/.well-known/openid-configuration"
    world.routes[oidc] = lambda r: js(world.metadata)
    _, event = sign_in(world, client=PUBLIC)
    assert isinstance(event, Authorized)
    assert urls(world)[1:3] == [ASM, oidc]


@spec(
    "2025-11-25/basic/authorization#overview.7", "2026-07-28/basic/authorization/index#overview.7"
)
def test_the_openid_path_appending_variant_is_used_when_it_is_the_one_served() -> None:
    world = World()
    tenant = "https://auth.example.com/tenant1"
    world.prm["authorization_servers"] = [tenant]
    world.metadata["issuer"] = world.send_iss = tenant
    world.routes[f"{tenant}/.well-known/openid-configuration"] = lambda r: js(world.metadata)
    _, event = sign_in(world, client=PUBLIC)
    assert isinstance(event, Authorized)


@spec(
    "2026-07-28/basic/authorization/authorization-server-discovery#authorization-server-metadata-discovery.4",
    "2026-07-28/basic/authorization/authorization-server-discovery#authorization-server-metadata-discovery.5",
    "2026-07-28/basic/authorization/authorization-server-discovery#authorization-server-metadata-discovery.6",
)
def test_metadata_with_another_issuer_is_not_used() -> None:
    world = World()
    world.metadata["issuer"] = "https://honest.example"
    refused(sign_in(world, client=PUBLIC)[1], IssuerMismatch)
    assert f"{ISSUER}/token" not in urls(world)


@spec(
    "2025-06-18/basic/authorization#communication-security.2",
    "2025-03-26/basic/authorization#security-considerations.4",
    "2025-11-25/basic/authorization#communication-security.2",
    "2026-07-28/basic/authorization/security-considerations#communication-security.2",
)
@pytest.mark.parametrize(
    "key", ["authorization_endpoint", "token_endpoint", "registration_endpoint"]
)
def test_plain_http_endpoints_are_refused_off_loopback(key: str) -> None:
    world = World()
    world.metadata[key] = world.metadata[key].replace("https://", "http://")
    refused(sign_in(world)[1], InsecureEndpoint)


def test_plain_http_is_allowed_on_loopback() -> None:
    local = "http://127.0.0.1:9000"
    world = World()
    world.prm["authorization_servers"] = [local]
    world.metadata.update(
        issuer=local, authorization_endpoint=f"{local}/authorize", token_endpoint=f"{local}/token"
    )
    world.metadata.pop("registration_endpoint")
    world.send_iss = local
    world.routes[f"{local}/.well-known/oauth-authorization-server"] = lambda r: js(world.metadata)
    world.routes[f"{local}/token"] = world.token
    _, event = sign_in(world, client=PUBLIC)
    assert isinstance(event, Authorized)


@pytest.mark.parametrize("key", ["token_endpoint", "registration_endpoint"])
def test_credential_endpoints_on_another_origin_are_refused(key: str) -> None:
    world = World()
    world.metadata[key] = "https://collector.example.net/steal"
    refused(sign_in(world)[1], UnexpectedOrigin)
    assert all("collector" not in u for u in urls(world))


def test_a_trusted_origin_may_hold_the_token_endpoint() -> None:
    world = World()
    world.metadata["token_endpoint"] = "https://tokens.example.com/token"
    world.routes["https://tokens.example.com/token"] = world.token
    trusted = frozenset({"HTTPS://Tokens.example.com:443/"})
    _, event = sign_in(world, client=PUBLIC, trusted_origins=trusted)
    assert isinstance(event, Authorized)


@spec(
    "2025-03-26/basic/authorization#authorization-base-url.1",
    "2025-03-26/basic/authorization#authorization-base-url.2",
    "2025-03-26/basic/authorization#fallbacks-for-servers-without-metadata-discovery.1",
    "2025-03-26/basic/authorization#fallbacks-for-servers-without-metadata-discovery.2",
    "2025-03-26/basic/authorization#implementation-requirements.2",
)
def test_the_2025_03_26_fallbacks_metadata_at_the_root_then_default_endpoints() -> None:
    world = World()
    world.routes.pop(PRM_PATH)
    world.routes.pop("https://mcp.example.com/prm")
    base = "https://mcp.example.com"
    # Only the browser step reads this: no metadata is served for the base URL.
    world.metadata = {"authorization_endpoint": f"{base}/authorize"}
    world.routes[f"{base}/token"] = world.token
    world.routes[f"{base}/register"] = world.register
    world.send_iss = None
    _, event = sign_in(world, "Bearer")
    assert isinstance(event, Authorized), event
    assert urls(world) == [
        PRM_PATH,
        PRM_ROOT,
        f"{base}/.well-known/oauth-authorization-server",
        f"{base}/register",
        f"{base}/token",
    ]


@spec(
    "2025-03-26/basic/authorization#overview.3",
    "2025-03-26/basic/authorization#authorization-base-url.2",
)
def test_2025_03_26_metadata_at_the_base_url_is_used_when_served() -> None:
    world = World()
    world.routes.pop(PRM_PATH)
    world.routes.pop("https://mcp.example.com/prm")
    base = "https://mcp.example.com"
    world.metadata = {**world.metadata, "issuer": base}
    world.metadata.pop("registration_endpoint")
    world.routes[f"{base}/.well-known/oauth-authorization-server"] = lambda r: js(world.metadata)
    world.metadata["token_endpoint"] = f"{base}/token"
    world.metadata["authorization_endpoint"] = f"{base}/authorize"
    world.routes[f"{base}/token"] = world.token
    world.send_iss = base
    _, event = sign_in(world, "Bearer", client=PUBLIC)
    assert isinstance(event, Authorized), event


def test_without_the_legacy_fallback_no_metadata_is_a_discovery_failure() -> None:
    world = World()
    world.routes.pop(PRM_PATH)
    world.routes.pop("https://mcp.example.com/prm")
    refused(sign_in(world, "Bearer", legacy_fallback=False)[1], DiscoveryFailed)


# -- PKCE -------------------------------------------------------------------------------------


@spec(
    "2025-11-25/basic/authorization#authorization-code-protection.1",
    "2025-11-25/basic/authorization#authorization-code-protection.3",
    "2025-11-25/basic/authorization#authorization-code-protection.4",
    "2025-11-25/basic/authorization#authorization-code-protection.5",
    "2025-11-25/basic/authorization#authorization-code-protection.6",
    "2026-07-28/basic/authorization/security-considerations#authorization-code-protection.1",
    "2026-07-28/basic/authorization/security-considerations#authorization-code-protection.3",
    "2026-07-28/basic/authorization/security-considerations#authorization-code-protection.4",
    "2026-07-28/basic/authorization/security-considerations#authorization-code-protection.5",
    "2026-07-28/basic/authorization/security-considerations#authorization-code-protection.6",
)
@pytest.mark.parametrize("methods", [None, ["plain"], []])
def test_a_server_without_s256_is_refused_before_the_browser(methods: Any) -> None:
    world = World()
    if methods is None:
        world.metadata.pop("code_challenge_methods_supported")
    else:
        world.metadata["code_challenge_methods_supported"] = methods
    browsed: list[str] = []
    _, event = sign_in(world, client=PUBLIC, browser=browsed.append)
    refused(event, PkceUnsupported)
    assert browsed == []


def test_client_credentials_need_no_pkce() -> None:
    world = World()
    world.metadata.pop("code_challenge_methods_supported")
    client = CONFIDENTIAL
    _, event = sign_in(world, grant="client_credentials", client=client, redirect_uri=None)
    assert isinstance(event, Authorized)


# -- client registration ------------------------------------------------------------------


@spec(
    "2025-11-25/basic/authorization#client-registration-approaches.1",
    "2025-11-25/basic/authorization#preregistration.1",
    "2026-07-28/basic/authorization/client-registration#pre-registration.1",
    "2026-07-28/basic/authorization/client-registration#client-registration.1",
)
def test_a_pre_registered_client_comes_first() -> None:
    world = World()
    world.metadata["client_id_metadata_document_supported"] = True
    cimd = "https://app.example.com/client.json"
    _, event = sign_in(world, client=CONFIDENTIAL, client_metadata_url=cimd)
    assert isinstance(event, Authorized) and event.grant.client.client_id == "pre-1"
    assert f"{ISSUER}/register" not in urls(world)


@spec(
    "2026-07-28/basic/authorization/index#client-registration.1",
    "2025-11-25/basic/authorization#client-registration-approaches.1",
    "2025-11-25/basic/authorization#discovery.1",
    "2026-07-28/basic/authorization/client-registration#advertising-cimd-support.1",
    "2026-07-28/basic/authorization/client-registration#client-registration.1",
)
def test_a_client_id_metadata_document_comes_before_dynamic_registration() -> None:
    world = World()
    world.metadata["client_id_metadata_document_supported"] = True
    cimd = "https://app.example.com/client.json"
    flow = SignIn(SERVER, config(client_metadata_url=cimd), token_bytes=fixed_random)
    flow.receive_challenge(401, [CHALLENGE])
    event = drive(flow, world)
    assert isinstance(event, Authorized) and event.grant.client.client_id == cimd
    assert event.grant.auth_method == "none"
    assert f"{ISSUER}/register" not in urls(world)


@spec(
    "2025-06-18/basic/authorization#open-redirection.1",
    "2025-11-25/basic/authorization#open-redirection.1",
    "2026-07-28/basic/authorization/security-considerations#open-redirection.1",
    "2026-07-28/basic/authorization/client-registration#application-type-and-redirect-uri-constraints.1",
    "2026-07-28/basic/authorization/client-registration#authorization-server-binding.1",
    "2026-07-28/basic/authorization/index#client-registration.1",
    "2025-11-25/basic/authorization#client-registration-approaches.1",
    "2026-07-28/basic/authorization/index#refresh-tokens.2",
    "2025-11-25/basic/authorization#discovery.1",
    "2026-07-28/basic/authorization/client-registration#advertising-cimd-support.1",
    "2026-07-28/basic/authorization/client-registration#client-registration.1",
)
def test_without_metadata_document_support_dynamic_registration_is_used() -> None:
    world = World()
    cimd = "https://app.example.com/client.json"
    _, event = sign_in(world, client_metadata_url=cimd, client_name="Test Client")
    assert isinstance(event, Authorized) and event.grant.client.client_id == "dyn-2"
    register = next(r for r in world.requests if r.url.endswith("/register"))
    doc = json.loads(register.body)
    assert register.method == "POST" and register.header("content-type") == "application/json"
    assert doc["redirect_uris"] == [REDIRECT] and doc["client_name"] == "Test Client"
    assert doc["application_type"] == "native" and doc["token_endpoint_auth_method"] == "none"
    assert doc["grant_types"] == ["authorization_code", "refresh_token"]
    assert event.grant.client.issuer == ISSUER


@spec(
    "2026-07-28/basic/authorization/client-registration#application-type-and-redirect-uri-constraints.1"
)
def test_a_web_redirect_uri_registers_a_web_application() -> None:
    world = World()
    _, event = sign_in(world, redirect_uri="https://app.example.com/cb")
    register = next(r for r in world.requests if r.url.endswith("/register"))
    assert json.loads(register.body)["application_type"] == "web"


def test_a_confidential_registration_is_asked_when_none_is_not_offered() -> None:
    world = World()
    world.metadata["token_endpoint_auth_methods_supported"] = ["client_secret_post"]
    _, event = sign_in(world)
    assert isinstance(event, Authorized) and event.grant.auth_method == "client_secret_post"
    assert event.grant.client.client_secret == "dyn-secret"


def test_no_way_to_get_a_client_id_is_a_clear_refusal() -> None:
    world = World()
    world.metadata.pop("registration_endpoint")
    refused(sign_in(world)[1], RegistrationUnavailable)


@spec(
    "2026-07-28/basic/authorization/client-registration#application-type-and-redirect-uri-constraints.4"
)
def test_a_refused_registration_quotes_the_server() -> None:
    world = World()
    world.routes[f"{ISSUER}/register"] = lambda r: js(
        {"error": "invalid_redirect_uri", "error_description": "native only"}, 400
    )
    error = refused(sign_in(world)[1], RegistrationRefused)
    assert "invalid_redirect_uri" in error.reason and "native only" in error.reason


@spec(
    "2026-07-28/basic/authorization/authorization-server-discovery#authorization-server-location.3",
    "2026-07-28/basic/authorization/client-registration#authorization-server-binding.2",
    "2026-07-28/basic/authorization/client-registration#authorization-server-binding.3",
)
def test_a_pre_registered_client_of_another_issuer_is_not_used() -> None:
    world = World()
    other = ClientInfo(client_id="pre-1", client_secret="s3cret", issuer="https://old.example")
    refused(sign_in(world, client=other)[1], RegistrationUnavailable)
    assert f"{ISSUER}/token" not in urls(world)


# -- scope selection, the browser step ------------------------------------------------------


def authorization_query(world: World, challenge: str | None, **kw: Any) -> dict[str, list[str]]:
    seen: list[str] = []

    def browser(url: str) -> str:
        seen.append(url)
        return world.browser(url)

    sign_in(world, challenge, browser=browser, client=PUBLIC, **kw)
    return parse_qs(urlsplit(seen[0]).query)


@spec(
    "2025-11-25/basic/authorization#protected-resource-metadata-discovery-requirements.5",
    "2025-11-25/basic/authorization#protected-resource-metadata-discovery-requirements.6",
    "2026-07-28/basic/authorization/index#scope-selection-strategy.3",
    "2026-07-28/basic/authorization/index#scope-selection-strategy.4",
    "2025-11-25/basic/authorization#scope-selection-strategy.2",
    "2026-07-28/basic/authorization/index#scope-selection-strategy.8",
    "2025-11-25/basic/authorization#scope-selection-strategy.1",
    "2026-07-28/basic/authorization/index#scope-selection-strategy.7",
)
def test_the_challenge_s_scope_comes_first() -> None:
    q = authorization_query(World(), CHALLENGE, offline_access=False)
    assert q["scope"] == ["files:read"]


@spec(
    "2025-11-25/basic/authorization#scope-selection-strategy.2",
    "2026-07-28/basic/authorization/index#scope-selection-strategy.8",
    "2025-11-25/basic/authorization#protected-resource-metadata-discovery-requirements.9",
)
def test_without_a_challenged_scope_all_scopes_supported_are_asked() -> None:
    world = World()
    world.prm["scopes_supported"] = ["a", "b"]
    q = authorization_query(world, 'Bearer resource_metadata="https://mcp.example.com/prm"')
    assert q["scope"] == ["a b"]


@spec(
    "2025-11-25/basic/authorization#scope-selection-strategy.2",
    "2026-07-28/basic/authorization/index#scope-selection-strategy.8",
)
def test_without_either_no_scope_parameter_is_sent() -> None:
    world = World()
    world.prm.pop("scopes_supported")
    q = authorization_query(world, 'Bearer resource_metadata="https://mcp.example.com/prm"')
    assert "scope" not in q


def test_offline_access_is_added_only_when_the_server_lists_it() -> None:
    world = World()
    world.metadata["scopes_supported"].append("offline_access")
    assert authorization_query(world, CHALLENGE)["scope"] == ["files:read offline_access"]
    assert authorization_query(World(), CHALLENGE)["scope"] == ["files:read"]


@spec(
    "2025-06-18/basic/authorization#resource-parameter-implementation.1",
    "2025-11-25/basic/authorization#resource-parameter-implementation.1",
    "2026-07-28/basic/authorization/index#resource-parameter-implementation.1",
    "2025-06-18/basic/authorization#resource-parameter-implementation.2",
    "2025-11-25/basic/authorization#resource-parameter-implementation.2",
    "2026-07-28/basic/authorization/index#resource-parameter-implementation.2",
    "2025-06-18/basic/authorization#resource-parameter-implementation.4",
    "2025-11-25/basic/authorization#resource-parameter-implementation.4",
    "2026-07-28/basic/authorization/index#resource-parameter-implementation.4",
    "2025-06-18/basic/authorization#canonical-server-uri.4",
    "2025-11-25/basic/authorization#canonical-server-uri.4",
    "2026-07-28/basic/authorization/index#canonical-server-uri.4",
    "2025-06-18/basic/authorization#token-audience-binding-and-validation.1",
    "2025-11-25/basic/authorization#token-audience-binding-and-validation.1",
    "2026-07-28/basic/authorization/security-considerations#token-audience-binding-and-validation.1",
    "2025-06-18/basic/authorization#access-token-privilege-restriction.5",
    "2025-11-25/basic/authorization#access-token-privilege-restriction.5",
    "2026-07-28/basic/authorization/security-considerations#access-token-privilege-restriction.5",
    "2025-06-18/basic/authorization#canonical-server-uri.1",
    "2025-11-25/basic/authorization#canonical-server-uri.1",
    "2026-07-28/basic/authorization/index#canonical-server-uri.1",
)
def test_the_resource_parameter_is_in_the_authorization_and_token_requests() -> None:
    world = World()
    world.prm["resource"] = "HTTPS://MCP.EXAMPLE.COM/mcp"
    q = authorization_query(world, CHALLENGE)
    assert q["resource"] == [SERVER]
    token = next(r for r in world.requests if r.url.endswith("/token"))
    assert dict(parse_qsl(token.body.decode()))["resource"] == SERVER


@spec(
    "2025-11-25/basic/authorization#authorization-code-protection.2",
    "2026-07-28/basic/authorization/security-considerations#authorization-code-protection.2",
)
def test_the_authorization_url_carries_pkce_s256_state_and_the_client() -> None:
    world = World()
    q = authorization_query(world, CHALLENGE)
    assert q["code_challenge_method"] == ["S256"] and q["client_id"] == ["pub-1"]
    assert q["redirect_uri"] == [REDIRECT] and q["response_type"] == ["code"]
    assert len(q["state"][0]) >= 22 and len(q["code_challenge"][0]) == 43
    token = next(r for r in world.requests if r.url.endswith("/token"))
    form = dict(parse_qsl(token.body.decode()))
    assert s256(form["code_verifier"]) == q["code_challenge"][0]
    assert form["grant_type"] == "authorization_code" and form["client_id"] == "pub-1"


def browser_with(world: World, **changes: str | None) -> Callable[[str], str]:
    def browser(url: str) -> str:
        back = urlsplit(world.browser(url))
        q = dict(parse_qsl(back.query))
        for key, value in changes.items():
            if value is None:
                q.pop(key, None)
            else:
                q[key] = value
        return back._replace(query=urlencode(q)).geturl()

    return browser


@spec(
    "2025-06-18/basic/authorization#open-redirection.3",
    "2025-11-25/basic/authorization#open-redirection.3",
    "2026-07-28/basic/authorization/security-considerations#open-redirection.3",
)
@pytest.mark.parametrize("state", ["forged", None])
def test_a_missing_or_wrong_state_is_discarded(state: str | None) -> None:
    world = World()
    _, event = sign_in(world, client=PUBLIC, browser=browser_with(world, state=state))
    refused(event, StateMismatch)
    assert f"{ISSUER}/token" not in urls(world)


@spec(
    "2026-07-28/basic/authorization/index#authorization-response-validation.1",
    "2026-07-28/basic/authorization/index#authorization-response-validation.4",
    "2026-07-28/basic/authorization/index#authorization-response-validation.6",
)
@pytest.mark.parametrize(
    ("supported", "iss", "ok"),
    [
        (True, ISSUER, True),
        (True, None, False),
        (True, "https://evil.example", False),
        (True, ISSUER + "/", False),  # no trailing-slash normalization
        (False, "https://evil.example", False),
        (False, None, True),
    ],
)
def test_iss_is_checked_before_the_code_is_sent(supported: bool, iss: str | None, ok: bool) -> None:
    world = World()
    world.metadata["authorization_response_iss_parameter_supported"] = supported
    world.send_iss = iss
    _, event = sign_in(world, client=PUBLIC)
    if ok:
        assert isinstance(event, Authorized)
    else:
        refused(event, IssuerMismatch)
        assert f"{ISSUER}/token" not in urls(world)


@spec("2026-07-28/basic/authorization/index#authorization-response-validation.7")
def test_an_error_answer_with_a_wrong_iss_is_not_acted_upon() -> None:
    world = World()
    browser = browser_with(world, iss="https://evil.example", error="access_denied", code=None)
    refused(sign_in(world, client=PUBLIC, browser=browser)[1], IssuerMismatch)


def test_an_error_answer_is_a_denial() -> None:
    world = World()
    browser = browser_with(world, error="access_denied", code=None)
    error = refused(sign_in(world, client=PUBLIC, browser=browser)[1], AuthorizationDenied)
    assert "access_denied" in error.reason


@pytest.mark.parametrize(
    "where",
    [
        "http://evil.example:3000/callback",
        "http://127.0.0.1:3001/callback",
        "http://127.0.0.1:3000/other",
    ],
)
def test_a_redirect_to_an_unexpected_place_is_refused(where: str) -> None:
    world = World()

    def browser(url: str) -> str:
        return where + "?" + urlsplit(world.browser(url)).query

    refused(sign_in(world, client=PUBLIC, browser=browser)[1], UnexpectedRedirect)
    assert f"{ISSUER}/token" not in urls(world)


def test_a_repeated_parameter_in_the_redirect_is_refused() -> None:
    world = World()

    def browser(url: str) -> str:
        return world.browser(url) + "&code=injected"

    refused(sign_in(world, client=PUBLIC, browser=browser)[1], UnexpectedRedirect)


# -- the token endpoint ---------------------------------------------------------------------


def token_request_of(world: World) -> tuple[HttpRequest, dict[str, str]]:
    token = next(r for r in world.requests if r.url == world.metadata["token_endpoint"])
    return token, dict(parse_qsl(token.body.decode()))


def test_client_secret_basic_is_used_when_the_server_lists_it_first() -> None:
    world = World()
    world.clients["a b:c"] = "p&ss:word"
    client = ClientInfo(client_id="a b:c", client_secret="p&ss:word")
    _, event = sign_in(world, client=client)
    assert isinstance(event, Authorized) and event.grant.auth_method == "client_secret_basic"
    request, form = token_request_of(world)
    raw = base64.b64decode(request.header("authorization").removeprefix("Basic ")).decode()  # type: ignore[union-attr]
    assert raw == "a+b%3Ac:p%26ss%3Aword"  # form-encoded before base64 (RFC 6749 2.3.1)
    assert "client_secret" not in form and "client_id" not in form


def test_client_secret_post_when_that_is_what_the_server_takes() -> None:
    world = World()
    world.metadata["token_endpoint_auth_methods_supported"] = ["client_secret_post"]
    _, event = sign_in(world, client=CONFIDENTIAL)
    assert isinstance(event, Authorized) and event.grant.auth_method == "client_secret_post"
    request, form = token_request_of(world)
    assert request.header("authorization") is None
    assert form["client_id"] == "pre-1" and form["client_secret"] == "s3cret"


def test_a_method_the_server_does_not_take_is_refused() -> None:
    world = World()
    world.metadata["token_endpoint_auth_methods_supported"] = ["private_key_jwt"]
    refused(sign_in(world, client=CONFIDENTIAL)[1], UnsupportedClientAuth)
    jwt = ClientInfo(client_id="pre-1", auth_method="private_key_jwt")
    error = refused(sign_in(World(), client=jwt)[1], UnsupportedClientAuth)
    assert "signer" in error.reason


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        (js({"error": "invalid_grant", "error_description": "expired"}, 400), TokenRefused),
        (js({"access_token": "x", "token_type": "mac"}), TokenRefused),
        (js({"token_type": "Bearer"}), TokenRefused),
        (js({"access_token": "x", "token_type": "Bearer", "expires_in": "soon"}), BadMetadata),
        (HttpResponse(status=200, body=b"<html>"), BadMetadata),
    ],
)
def test_a_bad_token_answer_is_refused(answer: HttpResponse, kind: type[OAuthError]) -> None:
    world = World()
    world.routes[f"{ISSUER}/token"] = lambda r: answer
    refused(sign_in(world, client=PUBLIC)[1], kind)


@spec("2026-07-28/basic/authorization/index#refresh-tokens.4")
def test_the_token_s_scope_and_expiry_come_from_the_answer() -> None:
    world = World()
    world.routes[f"{ISSUER}/token"] = lambda r: js(
        {"access_token": "x", "token_type": "bearer", "scope": "files:read extra"}
    )
    _, event = sign_in(world, client=PUBLIC)
    assert isinstance(event, Authorized)
    assert event.grant.scope == ("files:read", "extra") and event.grant.expires_at is None
    assert event.grant.refresh_token is None


# -- step-up ---------------------------------------------------------------------------------

STEP_UP = 'Bearer error="insufficient_scope", scope="files:write", resource_metadata="https://mcp.example.com/prm"'


@spec(
    "2025-11-25/basic/authorization#step-up-authorization-flow.1",
    "2026-07-28/basic/authorization/index#step-up-authorization-flow.1",
    "2026-07-28/basic/authorization/index#scope-selection-strategy.5",
    "2025-11-25/basic/authorization#step-up-authorization-flow.2",
    "2026-07-28/basic/authorization/index#step-up-authorization-flow.2",
)
def test_insufficient_scope_re_authorizes_with_the_union_of_scopes() -> None:
    world = World()
    flow, event = sign_in(world, client=PUBLIC, offline_access=False)
    assert isinstance(event, Authorized)
    asked = len(world.requests)
    flow.receive_challenge(403, [STEP_UP])
    step = flow.next_event()
    assert isinstance(step, NeedAuthorization)
    assert parse_qs(urlsplit(step.url).query)["scope"] == ["files:read files:write"]
    again = drive(flow, world)
    assert isinstance(again, Authorized) and again.grant.access_token == "at-2"
    assert again.grant.scope == ("files:read", "files:write")
    assert urls(world)[asked:] == [f"{ISSUER}/token"]  # no new discovery


@spec(
    "2025-11-25/basic/authorization#step-up-authorization-flow.4",
    "2026-07-28/basic/authorization/index#step-up-authorization-flow.5",
)
def test_a_step_up_asking_for_nothing_new_is_a_permanent_failure() -> None:
    world = World()
    flow, _ = sign_in(world, client=PUBLIC)
    flow.receive_challenge(403, [STEP_UP])
    assert isinstance(drive(flow, world), Authorized)
    flow.receive_challenge(403, [STEP_UP])
    refused(flow.next_event(), StepUpLimit)


@spec(
    "2025-11-25/basic/authorization#step-up-authorization-flow.4",
    "2026-07-28/basic/authorization/index#step-up-authorization-flow.5",
)
def test_challenges_after_sign_in_stop_at_the_retry_limit() -> None:
    world = World()
    flow, _ = sign_in(world, client=PUBLIC, max_retries=2)
    for n in range(2):
        flow.receive_challenge(403, [f'Bearer error="insufficient_scope", scope="s{n}"'])
        assert isinstance(drive(flow, world), Authorized)
    flow.receive_challenge(401, [CHALLENGE])
    refused(flow.next_event(), StepUpLimit)


def test_a_401_after_sign_in_starts_over_with_discovery() -> None:
    world = World()
    flow, _ = sign_in(world, client=PUBLIC)
    before = len(world.requests)
    flow.receive_challenge(401, [CHALLENGE])
    assert isinstance(drive(flow, world), Authorized)
    assert urls(world)[before:] == ["https://mcp.example.com/prm", ASM, f"{ISSUER}/token"]


def test_a_403_that_is_not_about_scope_is_refused() -> None:
    flow = SignIn(SERVER, config())
    flow.receive_challenge(403, ['Bearer error="invalid_token"'])
    refused(flow.next_event(), AuthorizationDenied)
    with pytest.raises(OAuthLocalError):
        SignIn(SERVER, config()).receive_challenge(500, [])


# -- client credentials (extension) ----------------------------------------------------------


def test_client_credentials_ask_the_token_endpoint_directly() -> None:
    world = World()
    _, event = sign_in(world, grant="client_credentials", client=CONFIDENTIAL, redirect_uri=None)
    assert isinstance(event, Authorized) and event.grant.scope == ("files:read",)
    request, form = token_request_of(world)
    assert form == {"grant_type": "client_credentials", "resource": SERVER, "scope": "files:read"}
    assert request.header(
        "authorization",
    ).startswith("Basic ")  # type: ignore[union-attr]
    assert urls(world) == ["https://mcp.example.com/prm", ASM, f"{ISSUER}/token"]


def test_client_credentials_without_a_secret_are_refused() -> None:
    world = World()
    refused(
        sign_in(world, grant="client_credentials", client=PUBLIC, redirect_uri=None)[1],
        UnsupportedClientAuth,
    )


def test_client_credentials_step_up_asks_for_the_union() -> None:
    world = World()
    flow, _ = sign_in(world, grant="client_credentials", client=CONFIDENTIAL, redirect_uri=None)
    flow.receive_challenge(403, [STEP_UP])
    event = drive(flow, world)
    assert isinstance(event, Authorized) and event.grant.scope == ("files:read", "files:write")


def test_client_credentials_may_register_a_confidential_client() -> None:
    world = World()
    _, event = sign_in(world, grant="client_credentials", redirect_uri=None)
    assert isinstance(event, Authorized) and event.grant.client.client_secret == "dyn-secret"
    register = next(r for r in world.requests if r.url.endswith("/register"))
    doc = json.loads(register.body)
    assert doc["grant_types"] == ["client_credentials"] and "redirect_uris" not in doc


# -- hostile answers --------------------------------------------------------------------------


def test_a_50_mb_metadata_document_is_refused_unread() -> None:
    world = World()
    huge = b'{"issuer": "' + b"x" * (50 * 1024 * 1024) + b'"}'
    world.routes[ASM] = lambda r: HttpResponse(status=200, body=huge)
    error = refused(sign_in(world, client=PUBLIC)[1], BodyTooLarge)
    assert "1048576" in error.reason


def test_the_body_bound_is_configurable_and_told_to_the_driver() -> None:
    world = World()
    _, event = sign_in(world, client=PUBLIC, max_body_bytes=100)
    refused(event, BodyTooLarge)
    assert world.requests[0].max_body_bytes == 100


def test_deep_nesting_is_a_refusal() -> None:
    world = World()
    world.routes[ASM] = lambda r: HttpResponse(status=200, body=b"[" * 100_000)
    refused(sign_in(world, client=PUBLIC)[1], BadMetadata)


def test_a_same_origin_redirect_is_followed_and_another_origin_is_refused() -> None:
    world = World()
    world.routes[ASM] = lambda r: HttpResponse(status=302, headers=(("Location", "/meta"),))
    world.routes[f"{ISSUER}/meta"] = lambda r: js(world.metadata)
    assert isinstance(sign_in(world, client=PUBLIC)[1], Authorized)
    world = World()
    evil = "https://evil.example/.well-known/oauth-authorization-server"
    world.routes[ASM] = lambda r: HttpResponse(status=307, headers=(("Location", evil),))
    refused(sign_in(world, client=PUBLIC)[1], UnexpectedRedirect)
    assert evil not in urls(world)


def test_redirect_loops_and_redirected_posts_are_refused() -> None:
    world = World()
    world.routes[ASM] = lambda r: HttpResponse(status=302, headers=(("Location", ASM),))
    refused(sign_in(world, client=PUBLIC)[1], UnexpectedRedirect)
    world = World()
    world.routes[f"{ISSUER}/token"] = lambda r: HttpResponse(
        status=307, headers=(("Location", f"{ISSUER}/token2"),)
    )
    refused(sign_in(world, client=CONFIDENTIAL)[1], UnexpectedRedirect)
    assert f"{ISSUER}/token2" not in urls(world)


@pytest.mark.parametrize("location", ["http://[", "//[::1", "https://a:b/"])
def test_a_malformed_location_is_a_refusal(location: str) -> None:
    world = World()
    world.routes[ASM] = lambda r: HttpResponse(status=302, headers=(("Location", location),))
    refused(sign_in(world, client=PUBLIC)[1], UnexpectedRedirect)


@pytest.mark.parametrize("where", ["http://[", "", "?code=x", "http://127.0.0.1:3000/callback"])
def test_a_malformed_redirect_from_the_browser_is_a_refusal(where: str) -> None:
    refused(sign_in(World(), client=PUBLIC, browser=lambda url: where)[1], OAuthError)

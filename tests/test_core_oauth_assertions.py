"""extensions/auth (client credentials, enterprise-managed authorization) and RFC 7523 /
8693 / 9449 (DPoP), client side: JWT assertions in the sans-IO sign-in flow, without I/O.

The pure functions of mcp_ref/_oauth_assertions.py first (claims, the signer's answer,
reading a given assertion, the token exchange), then the flow run against the scripted
world of test_core_oauth.py, extended with what these grants need: an authorization
server that reads client assertions and JWT-bearer grants, and an enterprise IdP.  The
signer here is a test double that "signs" with a fixed signature: the core never
verifies, and the authorization server of the world reads the claims only.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from typing import Any
from urllib.parse import parse_qsl

import pytest

from mcp_ref._http_client_auth import ClientAuth, OAuthClientOptions
from mcp_ref._oauth_assertions import (
    CLIENT_ASSERTION_TYPE,
    ID_JAG_TOKEN_TYPE,
    JWT_BEARER_GRANT,
    MAX_ASSERTION_BYTES,
    MAX_NONCE_CHARS,
    TOKEN_EXCHANGE_GRANT,
    AssertionUnusable,
    IdentityProvider,
    check_assertion,
    client_assertion,
    client_assertion_claims,
    dpop_claims,
    dpop_nonce,
    dpop_proof,
    read_id_jag,
    token_exchange_request,
)
from mcp_ref._oauth_challenge import bearer_challenge
from mcp_ref._oauth_config import Authorized, Failed, FlowState, NeedHttp, SignInConfig
from mcp_ref._oauth_flow import SignIn
from mcp_ref._oauth_grants import Grant, choose_auth_method
from mcp_ref._oauth_http import (
    BadMetadata,
    BodyTooLarge,
    HttpRequest,
    HttpResponse,
    OAuthLocalError,
    TokenMisdirected,
    TokenRefused,
    UnsupportedClientAuth,
)
from mcp_ref._oauth_metadata import ClientInfo, ServerMetadata

from .test_core_oauth import CHALLENGE, ISSUER, SERVER, World, fixed_random, js

spec = pytest.mark.spec

NOW = 1_700_000_000.0
IDP = "https://idp.example.com"
CLIENT = ClientInfo(client_id="svc-1")


def b64(doc: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(doc).encode()).rstrip(b"=").decode()


def jwt(claims: dict[str, Any], header: dict[str, Any] | None = None) -> str:
    """An unverified compact JWS (the signature is a fixed string)."""
    return f"{b64(header or {'alg': 'ES256'})}.{b64(claims)}.c2ln"


def claims_of(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    result: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=" * 4))
    return result


class FakeSigner:
    """A JwtSigner double: records the claims, returns what ``answer`` makes of them."""

    def __init__(self, answer: Any = None) -> None:
        self.signed: list[dict[str, Any]] = []
        self.answer = answer

    def sign(self, claims: dict[str, Any], *, typ: str | None = None, jwk: bool = False) -> str:
        self.signed.append(claims)
        if self.answer is not None:
            return self.answer(claims)  # type: ignore[no-any-return]
        header: dict[str, Any] = {"alg": "ES256", **({"typ": typ} if typ else {})}
        if jwk:
            header["jwk"] = {"kty": "EC", "crv": "P-256", "x": "x", "y": "y"}
        return jwt(claims, header)


# --- the pure functions -------------------------------------------------------------------


def test_client_assertion_claims_name_the_client_and_the_server() -> None:
    claims = client_assertion_claims(
        client_id="svc-1", audience=ISSUER, now=NOW + 0.7, jti="j1", lifetime=60
    )
    assert claims == {
        "iss": "svc-1",
        "sub": "svc-1",
        "aud": ISSUER,
        "iat": int(NOW),
        "exp": int(NOW) + 60,
        "jti": "j1",
    }
    for bad in ({"client_id": ""}, {"audience": ""}, {"lifetime": 0}, {"lifetime": 7200}):
        kw: dict[str, Any] = {
            "client_id": "svc-1",
            "audience": ISSUER,
            "now": NOW,
            "jti": "j",
            "lifetime": 60,
        }
        with pytest.raises(OAuthLocalError):
            client_assertion_claims(**{**kw, **bad})


def test_a_signer_answer_that_is_no_compact_jws_is_refused() -> None:
    claims = {"iss": "svc-1"}
    assert client_assertion(FakeSigner(), claims) == jwt(claims)
    for answer in (
        lambda c: "not-a-jwt",
        lambda c: "a.b",
        lambda c: "a.b.c.d",
        lambda c: "a.b c.d",
        lambda c: b"a.b.c",
        lambda c: "a." + "b" * MAX_ASSERTION_BYTES + ".c",
    ):
        with pytest.raises(AssertionUnusable):
            client_assertion(FakeSigner(answer), claims)

    def failing(claims: dict[str, Any]) -> str:
        raise OAuthLocalError("the HSM is offline")

    with pytest.raises(AssertionUnusable, match="HSM is offline"):
        client_assertion(FakeSigner(failing), claims)


def test_a_given_assertion_must_name_this_server_and_be_unexpired() -> None:
    audiences = (f"{ISSUER}/token", ISSUER)
    good = {"aud": ISSUER + "/", "exp": NOW + 60, "sub": "wl"}
    assert check_assertion(jwt(good), audiences=audiences, now=NOW)["sub"] == "wl"
    listed = {**good, "aud": ["https://other.example", f"{ISSUER}/token"]}
    assert check_assertion(jwt(listed), audiences=audiences, now=NOW)
    for claims, reason in (
        ({**good, "aud": "https://wrong.example"}, "not for this"),
        ({**good, "aud": [1, None]}, "not for this"),
        ({"exp": NOW + 60}, "not for this"),
        ({**good, "exp": NOW - 60}, "expired"),
        ({**good, "exp": NOW}, "expired"),
        ({**good, "exp": "soon"}, "numeric exp"),
        ({**good, "exp": True}, "numeric exp"),
        ({"aud": ISSUER}, "numeric exp"),
    ):
        with pytest.raises(AssertionUnusable, match=reason):
            check_assertion(jwt(claims), audiences=audiences, now=NOW)

    def raw(payload: bytes) -> str:
        return base64.urlsafe_b64encode(payload).decode().rstrip("=")

    for token in (
        "",
        "one.two",
        f"{b64({})}.!!!.sig",
        f"{b64({})}.{raw(b'[1]')}.sig",
        f"{b64({})}.{raw(b'{')}.sig",
        f"{b64({})}.{raw(bytes([255]))}.sig",
        f"{b64({})}.{raw(b'[' * 100_000)}.sig",
        jwt({**good, "pad": "x" * MAX_ASSERTION_BYTES}),
    ):
        with pytest.raises(AssertionUnusable):
            check_assertion(token, audiences=audiences, now=NOW)


def test_the_token_exchange_asks_for_an_id_jag_for_this_server() -> None:
    idp = IdentityProvider(token_endpoint=f"{IDP}/token", subject_token="id.tok.en", client_id="c")
    request = token_exchange_request(
        idp, audience=ISSUER, resource=SERVER, scope=("a", "b"), max_body_bytes=100
    )
    form = dict(parse_qsl(request.body.decode()))
    assert request.url == f"{IDP}/token" and request.max_body_bytes == 100
    assert form == {
        "grant_type": TOKEN_EXCHANGE_GRANT,
        "requested_token_type": ID_JAG_TOKEN_TYPE,
        "audience": ISSUER,
        "resource": SERVER,
        "subject_token": "id.tok.en",
        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        "scope": "a b",
        "client_id": "c",
    }
    secret = IdentityProvider(
        token_endpoint=f"{IDP}/token", subject_token="t", client_id="c", client_secret="s"
    )
    request = token_exchange_request(
        secret, audience=ISSUER, resource=SERVER, scope=None, max_body_bytes=100
    )
    assert request.header("authorization") == "Basic " + base64.b64encode(b"c:s").decode()
    assert "client_secret" not in request.body.decode() and "scope" not in request.body.decode()
    for bad in (
        {"token_endpoint": "http://idp.example.com/token"},
        {"token_endpoint": "not a url"},
        {"subject_token": ""},
        {"subject_token": "x" * (MAX_ASSERTION_BYTES + 1)},
    ):
        with pytest.raises(OAuthLocalError):
            IdentityProvider(**{"token_endpoint": f"{IDP}/token", "subject_token": "t", **bad})


def test_the_id_jag_answer_is_checked() -> None:
    jag = jwt({"aud": ISSUER, "exp": NOW + 300})
    ok = {"access_token": jag, "issued_token_type": ID_JAG_TOKEN_TYPE, "token_type": "N_A"}
    assert read_id_jag(js(ok), 10_000) == jag
    with pytest.raises(TokenRefused, match="invalid_grant"):
        read_id_jag(js({"error": "invalid_grant"}, 400), 10_000)
    with pytest.raises(TokenRefused, match="not an ID-JAG"):
        read_id_jag(js({**ok, "issued_token_type": "urn:x"}), 10_000)
    with pytest.raises(BadMetadata):
        read_id_jag(js({**ok, "access_token": 7}), 10_000)
    with pytest.raises(BadMetadata):
        read_id_jag(HttpResponse(status=200, body=b"[]"), 10_000)
    with pytest.raises(BodyTooLarge):
        read_id_jag(js(ok), 50)
    with pytest.raises(AssertionUnusable):
        read_id_jag(js({**ok, "access_token": "opaque"}), 10_000)


def _metadata(methods: tuple[str, ...] | None) -> ServerMetadata:
    return ServerMetadata(
        issuer=ISSUER,
        authorization_endpoint=None,
        token_endpoint=f"{ISSUER}/token",
        registration_endpoint=None,
        code_challenge_methods_supported=None,
        token_endpoint_auth_methods_supported=methods,
        scopes_supported=None,
        iss_parameter_supported=False,
        client_id_metadata_document_supported=False,
    )


def test_private_key_jwt_is_chosen_only_with_a_signer_the_server_accepts() -> None:
    both = ("client_secret_basic", "private_key_jwt")
    secret = ClientInfo(client_id="c", client_secret="s")
    assert choose_auth_method(CLIENT, _metadata(both), can_sign=True) == "private_key_jwt"
    assert choose_auth_method(CLIENT, _metadata(None), can_sign=True) == "private_key_jwt"
    assert choose_auth_method(secret, _metadata(both)) == "client_secret_basic"
    only_basic = _metadata(("client_secret_basic",))
    assert choose_auth_method(secret, only_basic, can_sign=True) == "client_secret_basic"
    with pytest.raises(UnsupportedClientAuth, match="signer"):
        choose_auth_method(
            ClientInfo(client_id="c", auth_method="private_key_jwt"), _metadata(both)
        )


# --- the flow -------------------------------------------------------------------------------


class JwtWorld(World):
    """The scripted world, plus client assertions, the JWT-bearer grant and an IdP."""

    def __init__(self) -> None:
        super().__init__()
        self.metadata["token_endpoint_auth_methods_supported"] = [
            "none",
            "client_secret_basic",
            "private_key_jwt",
        ]
        self.clients["svc-1"] = None
        self.seen: list[dict[str, str]] = []
        self.idp_answer: HttpResponse | None = None
        self.jag_claims: dict[str, Any] = {}
        self.routes[f"{IDP}/token"] = self.idp
        self.routes[f"{ISSUER}/token"] = self.jwt_token

    def idp(self, request: HttpRequest) -> HttpResponse:
        form = dict(parse_qsl(request.body.decode()))
        self.seen.append(form)
        if self.idp_answer is not None:
            return self.idp_answer
        claims = {"aud": form["audience"], "resource": form["resource"], "exp": NOW + 300}
        claims.update(self.jag_claims)
        jag = jwt(claims, {"alg": "ES256", "typ": "oauth-id-jag+jwt"})
        return js(
            {"access_token": jag, "issued_token_type": ID_JAG_TOKEN_TYPE, "token_type": "N_A"}
        )

    def jwt_token(self, request: HttpRequest) -> HttpResponse:
        form = dict(parse_qsl(request.body.decode()))
        self.seen.append(form)
        if "client_assertion" in form:
            assert form["client_assertion_type"] == CLIENT_ASSERTION_TYPE
            claims = claims_of(form["client_assertion"])
            ok = claims["iss"] == claims["sub"] == form["client_id"] and claims["aud"] == ISSUER
            if not ok or not claims["iat"] <= NOW < claims["exp"]:
                return js({"error": "invalid_client"}, 401)
            self.issued += 1
            return js({"access_token": f"at-{self.issued}", "token_type": "Bearer"})
        if form.get("grant_type") == JWT_BEARER_GRANT:
            if form.get("resource") != SERVER:
                return js({"error": "invalid_target"}, 400)
            self.issued += 1
            return js({"access_token": f"at-{self.issued}", "token_type": "Bearer"})
        return self.token(request)


def run(world: World, **kw: Any) -> tuple[SignIn, Authorized | Failed]:
    flow = SignIn(SERVER, SignInConfig(**kw), token_bytes=fixed_random)
    flow.receive_challenge(401, [CHALLENGE])
    for _ in range(30):
        event = flow.next_event()
        if isinstance(event, NeedHttp):
            flow.receive_response(world.handle(event.request), now=NOW)
        else:
            assert isinstance(event, Authorized | Failed)
            return flow, event
    raise AssertionError("the flow did not end")


def test_client_credentials_with_a_signed_client_assertion() -> None:
    world, signer = JwtWorld(), FakeSigner()
    flow, event = run(world, grant="client_credentials", client=CLIENT, signer=signer)
    assert isinstance(event, Authorized), event
    assert event.grant.auth_method == "private_key_jwt" and event.grant.issuer == ISSUER
    form = world.seen[-1]
    assert form["grant_type"] == "client_credentials" and "client_secret" not in form
    assert signer.signed[0]["jti"] and signer.signed[0]["exp"] == int(NOW) + 60
    assert world.requests[-1].header("authorization") is None


def test_a_client_assertion_the_server_refuses_fails_the_flow() -> None:
    world = JwtWorld()
    signer = FakeSigner(lambda c: jwt({**c, "aud": "https://elsewhere.example"}))
    _, event = run(world, grant="client_credentials", client=CLIENT, signer=signer)
    assert isinstance(event, Failed) and isinstance(event.error, TokenRefused)
    signer = FakeSigner(lambda c: "garbage")
    _, event = run(JwtWorld(), grant="client_credentials", client=CLIENT, signer=signer)
    assert isinstance(event, Failed) and isinstance(event.error, AssertionUnusable)


def test_without_a_signer_or_secret_there_are_no_client_credentials() -> None:
    _, event = run(JwtWorld(), grant="client_credentials", client=CLIENT)
    assert isinstance(event, Failed) and isinstance(event.error, UnsupportedClientAuth)


@spec("2025-06-18/basic/authorization#resource-parameter-implementation.2")
def test_the_jwt_bearer_grant_sends_the_workload_assertion() -> None:
    world = JwtWorld()
    assertion = jwt({"aud": ISSUER, "exp": NOW + 60, "sub": "workload"})
    _, event = run(world, grant="jwt_bearer", client=CLIENT, assertion=assertion)
    assert isinstance(event, Authorized), event
    form = world.seen[-1]
    assert form["grant_type"] == JWT_BEARER_GRANT and form["assertion"] == assertion
    assert form["resource"] == SERVER and form["client_id"] == "svc-1"


def test_an_assertion_for_another_server_is_never_sent() -> None:
    for claims in ({"aud": "https://wrong.example", "exp": NOW + 60}, {"aud": ISSUER, "exp": 1}):
        world = JwtWorld()
        _, event = run(world, grant="jwt_bearer", client=CLIENT, assertion=jwt(claims))
        assert isinstance(event, Failed) and isinstance(event.error, AssertionUnusable)
        assert not any(r.method == "POST" for r in world.requests)


def test_a_refused_jwt_bearer_grant_is_not_retried() -> None:
    world = JwtWorld()
    world.routes[f"{ISSUER}/token"] = lambda r: js({"error": "invalid_grant"}, 400)
    assertion = jwt({"aud": ISSUER, "exp": NOW + 60})
    flow, event = run(world, grant="jwt_bearer", client=CLIENT, assertion=assertion)
    assert isinstance(event, Failed) and "invalid_grant" in event.error.reason
    assert flow.state is FlowState.FAILED and flow.next_event() is event
    assert sum(r.method == "POST" for r in world.requests) == 1


def _idp(**kw: Any) -> IdentityProvider:
    return IdentityProvider(token_endpoint=f"{IDP}/token", subject_token="id.to.ken", **kw)


def test_enterprise_managed_authorization_exchanges_then_sends_the_id_jag() -> None:
    world = JwtWorld()
    flow, event = run(world, grant="enterprise", client=CLIENT, identity_provider=_idp())
    assert isinstance(event, Authorized), event
    exchange, bearer = world.seen
    assert exchange["grant_type"] == TOKEN_EXCHANGE_GRANT and exchange["audience"] == ISSUER
    assert exchange["resource"] == SERVER and exchange["subject_token"] == "id.to.ken"
    assert bearer["grant_type"] == JWT_BEARER_GRANT
    assert claims_of(bearer["assertion"])["aud"] == ISSUER
    # The IdP's token exchange carries no MCP credential, and the ID token goes nowhere else.
    posts = [r for r in world.requests if r.method == "POST"]
    assert [r.url for r in posts] == [f"{IDP}/token", f"{ISSUER}/token"]
    assert "id.to.ken" not in posts[1].body.decode()


def test_a_bad_identity_provider_answer_fails_the_flow_cleanly() -> None:
    answers = [
        (js({"error": "access_denied"}, 403), TokenRefused),
        (js({"access_token": "x.y.z", "issued_token_type": "urn:other"}), TokenRefused),
        (js({"issued_token_type": ID_JAG_TOKEN_TYPE}), BadMetadata),
        (HttpResponse(status=200, body=b"{" * 2_000_000), BodyTooLarge),
        (HttpResponse(status=200, body=b"\xff"), BadMetadata),
    ]
    for answer, error in answers:
        world = JwtWorld()
        world.idp_answer = answer
        _, event = run(world, grant="enterprise", client=CLIENT, identity_provider=_idp())
        assert isinstance(event, Failed) and isinstance(event.error, error), (answer, event)
        assert world.requests[-1].url == f"{IDP}/token"


def test_an_id_jag_for_another_server_is_not_sent_to_this_one() -> None:
    world = JwtWorld()
    world.jag_claims = {"aud": "https://other-as.example"}
    _, event = run(world, grant="enterprise", client=CLIENT, identity_provider=_idp())
    assert isinstance(event, Failed) and isinstance(event.error, AssertionUnusable)
    assert world.requests[-1].url == f"{IDP}/token"


def test_the_configuration_of_these_grants_is_checked() -> None:
    for kw in (
        {"grant": "jwt_bearer", "client": CLIENT},
        {"grant": "jwt_bearer", "assertion": "a.b.c"},
        {"grant": "enterprise", "client": CLIENT},
        {"grant": "enterprise", "identity_provider": _idp()},
        {"grant": "client_credentials", "assertion_lifetime": 0},
    ):
        with pytest.raises(OAuthLocalError):
            SignInConfig(**kw)


# --- refresh, and the ready signer ------------------------------------------------------------


def test_a_private_key_jwt_grant_is_refreshed_with_a_fresh_assertion() -> None:
    signer = FakeSigner()
    options = OAuthClientOptions(grant="client_credentials", client_id="svc-1", signer=signer)
    auth = ClientAuth(SERVER, options)
    world = JwtWorld()
    world.routes[f"{ISSUER}/token"] = lambda r: js(
        {"access_token": "at", "token_type": "Bearer", "expires_in": 60, "refresh_token": "rt"}
    )
    world.metadata["token_endpoint_auth_methods_supported"] = ["private_key_jwt"]
    flow = auth.begin(401, [CHALLENGE])
    while isinstance(event := flow.next_event(), NeedHttp):
        flow.receive_response(world.handle(event.request), now=NOW)
    assert isinstance(event, Authorized)
    auth.authorized(event.grant)
    request = auth.refresh_request(NOW + 3600)
    assert request is not None
    form = dict(parse_qsl(request.body.decode()))
    assert form["grant_type"] == "refresh_token"
    assert claims_of(form["client_assertion"])["iat"] == int(NOW + 3600)
    assert len(signer.signed) == 2 and signer.signed[0]["jti"] != signer.signed[1]["jti"]


def test_joserfc_is_not_imported_by_the_core_or_the_client_package() -> None:
    code = (
        "import sys, mcp_ref._oauth_flow, mcp_ref._http_client_auth, mcp_ref.client\n"
        "print('joserfc' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False"]


def test_the_ready_signer_signs_what_a_verifier_accepts(monkeypatch: Any) -> None:
    joserfc = pytest.importorskip("joserfc")
    from joserfc import jwk
    from joserfc import jwt as jose_jwt

    from mcp_ref.client import PrivateKeySigner

    key = jwk.ECKey.generate_key("P-256")
    signer = PrivateKeySigner(key.as_pem(private=True), key_id="k1")
    claims = client_assertion_claims(
        client_id="svc-1", audience=ISSUER, now=NOW, jti="j", lifetime=60
    )
    token = client_assertion(signer, claims)
    decoded = jose_jwt.decode(token, key, algorithms=["ES256"])
    assert decoded.claims == claims and decoded.header["kid"] == "k1"
    for bad in (
        lambda: PrivateKeySigner(key.as_pem(private=False)),
        lambda: PrivateKeySigner(key.as_pem(private=True), algorithm="HS256"),
        lambda: PrivateKeySigner(key.as_pem(private=True), algorithm="RS256"),
        lambda: PrivateKeySigner("not a key"),
    ):
        with pytest.raises(OAuthLocalError):
            bad()
    with pytest.raises(OAuthLocalError):
        signer.sign({"x": {1, 2}})
    monkeypatch.setitem(sys.modules, "joserfc", None)
    with pytest.raises(OAuthLocalError, match=r"mcp-ref\[auth\]"):
        PrivateKeySigner(key.as_pem(private=True))
    assert joserfc is not None


# --- DPoP (RFC 9449) ------------------------------------------------------------------------


def header_of(token: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=" * 4))
    return result


def test_a_dpop_proof_names_the_method_the_url_and_the_token() -> None:
    claims = dpop_claims(
        method="POST",
        url=f"{SERVER}?session=1#frag",
        now=NOW + 0.5,
        jti="j",
        access_token="at-1",
        nonce="n-1",
    )
    ath = base64.urlsafe_b64encode(__import__("hashlib").sha256(b"at-1").digest())
    assert claims == {
        "htm": "POST",
        "htu": SERVER,
        "iat": int(NOW),
        "jti": "j",
        "ath": ath.rstrip(b"=").decode(),
        "nonce": "n-1",
    }
    bare = dpop_claims(method="GET", url=SERVER, now=NOW, jti="j", access_token=None, nonce=None)
    assert "ath" not in bare and "nonce" not in bare
    proof = dpop_proof(FakeSigner(), bare)
    assert header_of(proof)["typ"] == "dpop+jwt" and "jwk" in header_of(proof)
    with pytest.raises(AssertionUnusable):
        dpop_proof(FakeSigner(lambda c: "nope"), bare)


def test_only_a_well_formed_nonce_is_kept() -> None:
    assert dpop_nonce("abc-._~!") == "abc-._~!"
    for bad in (None, "", "a b", "caf\u00e9", "x\ny", "x" * (MAX_NONCE_CHARS + 1)):
        assert dpop_nonce(bad) is None


def test_a_dpop_challenge_is_read_like_a_bearer_one() -> None:
    challenge = bearer_challenge(['DPoP error="use_dpop_nonce", resource_metadata="https://x/p"'])
    assert challenge is not None and challenge.resource_metadata == "https://x/p"
    assert challenge.error == "use_dpop_nonce"


class DpopWorld(JwtWorld):
    """An authorization server that wants a DPoP proof, and a nonce ``nonces`` times."""

    def __init__(self, nonces: int = 0) -> None:
        super().__init__()
        self.nonces = nonces
        self.proofs: list[str] = []
        self.routes[f"{ISSUER}/token"] = self.dpop_token

    def dpop_token(self, request: HttpRequest) -> HttpResponse:
        proof = request.header("dpop")
        if proof is None:  # a server that binds no token, yet says DPoP
            return js({"access_token": "at-x", "token_type": "DPoP"})
        self.proofs.append(proof)
        if self.nonces > 0 and "nonce" not in claims_of(proof):
            self.nonces -= 1
            answer = js({"error": "use_dpop_nonce"}, 400)
            return HttpResponse(status=400, headers=(("DPoP-Nonce", "n-1"),), body=answer.body)
        if self.nonces > 0:
            self.nonces -= 1
            answer = js({"error": "use_dpop_nonce"}, 400)
            return HttpResponse(status=400, headers=(("DPoP-Nonce", "n-2"),), body=answer.body)
        self.issued += 1
        return js({"access_token": f"at-{self.issued}", "token_type": "DPoP", "expires_in": 60})


def test_the_token_request_carries_a_proof_and_the_token_is_dpop_bound() -> None:
    world = DpopWorld()
    kw = {"grant": "client_credentials", "client": CLIENT, "signer": FakeSigner()}
    _, event = run(world, dpop=FakeSigner(), **kw)
    assert isinstance(event, Authorized) and event.grant.token_type == "DPoP"
    (proof,) = world.proofs
    assert claims_of(proof)["htm"] == "POST" and claims_of(proof)["htu"] == f"{ISSUER}/token"
    assert "ath" not in claims_of(proof)
    # Without DPoP configured, a DPoP token type is refused: there is no key to prove.
    _, event = run(DpopWorld(), **kw)
    assert isinstance(event, Failed) and isinstance(event.error, TokenRefused)


def test_the_authorization_servers_nonce_is_used_once() -> None:
    world = DpopWorld(nonces=1)
    kw = {"grant": "client_credentials", "client": CLIENT, "signer": FakeSigner()}
    _, event = run(world, dpop=FakeSigner(), **kw)
    assert isinstance(event, Authorized)
    assert [claims_of(p).get("nonce") for p in world.proofs] == [None, "n-1"]
    world = DpopWorld(nonces=5)  # a server that never takes a nonce: one retry, then refused
    _, event = run(world, dpop=FakeSigner(), **kw)
    assert isinstance(event, Failed) and isinstance(event.error, TokenRefused)
    assert len(world.proofs) == 2


def _dpop_auth() -> ClientAuth:
    options = OAuthClientOptions(
        grant="client_credentials", client_id="svc-1", client_secret="s", dpop=FakeSigner()
    )
    auth = ClientAuth(SERVER, options)
    auth.authorized(
        Grant(
            access_token="at-1",
            expires_at=None,
            refresh_token=None,
            scope=None,
            resource=SERVER,
            token_endpoint=f"{ISSUER}/token",
            client=CLIENT,
            auth_method="client_secret_basic",
            token_type="DPoP",
        )
    )
    return auth


def test_every_request_carries_the_dpop_token_and_a_fresh_proof() -> None:
    auth = _dpop_auth()
    auth.tick(NOW)
    first, second = auth.headers("POST", SERVER), auth.headers("GET", SERVER)
    assert first[0] == (b"authorization", b"DPoP at-1") and first[1][0] == b"dpop"
    one, two = claims_of(first[1][1].decode()), claims_of(second[1][1].decode())
    assert one["jti"] != two["jti"] and (one["htm"], two["htm"]) == ("POST", "GET")
    assert one["iat"] == int(NOW) and "nonce" not in one
    auth.note_dpop_nonce("bad nonce")  # not visible ASCII: ignored
    assert not auth.take_fresh_nonce()
    auth.note_dpop_nonce("rs-1")
    assert auth.take_fresh_nonce() and not auth.take_fresh_nonce()
    auth.note_dpop_nonce("rs-1")  # the same again: nothing new to retry with
    assert not auth.take_fresh_nonce()
    assert claims_of(auth.headers("POST", SERVER)[1][1].decode())["nonce"] == "rs-1"
    with pytest.raises(TokenMisdirected):
        auth.headers("POST", "https://elsewhere.example/mcp")
    # A signer that fails: the token goes alone (the server refuses it), no crash.
    auth.config = SignInConfig(grant="client_credentials", dpop=FakeSigner(lambda c: "broken"))
    assert auth.headers("POST", SERVER) == [(b"authorization", b"DPoP at-1")]

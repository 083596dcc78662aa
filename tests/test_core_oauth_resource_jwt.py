"""basic/authorization, server side: JWT access tokens checked against a JWKS
(mcp_ref/_oauth_verify_jwt.py), without I/O.

The authorization server's keys (RSA, EC P-256, Ed25519) are generated here and its
tokens minted with joserfc; the forgeries are built by hand (``alg: none``, an HS256
token keyed with the RSA public key, tampered claims, wrong ``aud``/``iss``, expired).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

joserfc = pytest.importorskip("joserfc")
from cryptography.hazmat.primitives import hashes  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import padding  # noqa: E402
from joserfc import jwk, jws  # noqa: E402

from mcp_ref._oauth_http import HttpResponse, OAuthLocalError  # noqa: E402
from mcp_ref._oauth_resource import HttpAnswer, ResourceConfig, ScopePolicy  # noqa: E402
from mcp_ref._oauth_resource_guard import Allowed, check_request  # noqa: E402
from mcp_ref._oauth_verify import Identity, NeedFetch, TokenRejected  # noqa: E402
from mcp_ref._oauth_verify_jwt import JwtVerifier  # noqa: E402

spec = pytest.mark.spec

SERVER = "https://mcp.example.com/mcp"
ISSUER = "https://auth.example.com"
JWKS_URL = f"{ISSUER}/jwks.json"
NOW = 1_800_000_000.0

RSA = jwk.RSAKey.generate_key(2048, parameters={"kid": "rsa-1"})
EC = jwk.ECKey.generate_key("P-256", parameters={"kid": "ec-1"})
ED = jwk.OKPKey.generate_key("Ed25519", parameters={"kid": "ed-1"})
OTHER = jwk.RSAKey.generate_key(2048, parameters={"kid": "rsa-1"})  # same kid, other key
JWKS = {"keys": [k.as_dict(private=False) for k in (RSA, EC, ED)]}


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def claims(**extra: Any) -> dict[str, Any]:
    base = {
        "iss": ISSUER,
        "aud": SERVER,
        "sub": "alice",
        "client_id": "app",
        "scope": "mcp tools",
        "exp": int(NOW) + 600,
        "iat": int(NOW),
    }
    return {k: v for k, v in (base | extra).items() if v is not None}


def mint(key: Any = RSA, alg: str = "RS256", header: dict[str, Any] | None = None, **c: Any) -> str:
    head = {"alg": alg, "typ": "at+jwt", "kid": key.kid} | (header or {})
    head = {k: v for k, v in head.items() if v is not None}
    return jws.serialize_compact(head, json.dumps(claims(**c)).encode(), key, algorithms=[alg])


def reheader(token: str, **changes: Any) -> str:
    """``token`` with its header changed (its signature no longer matches)."""
    head, body, sig = token.split(".")
    header = json.loads(base64.urlsafe_b64decode(head + "=="))
    return ".".join((b64(json.dumps(header | changes).encode()), body, sig))


def verifier(**kwargs: Any) -> JwtVerifier:
    return JwtVerifier(**({"resource": SERVER, "issuer": ISSUER, "jwks": JWKS} | kwargs))


def rejected(verdict: object, kind: str = "invalid_token") -> TokenRejected:
    assert isinstance(verdict, TokenRejected), verdict
    assert verdict.kind == kind, verdict
    return verdict


@spec(
    "2025-11-25/basic/authorization#token-handling.1",
    "2025-11-25/basic/authorization#token-handling.2",
)
def test_tokens_signed_by_each_key_type_are_accepted() -> None:
    v = verifier()
    for key, alg in ((RSA, "RS256"), (RSA, "PS256"), (EC, "ES256"), (ED, "Ed25519")):
        identity = v.verify(mint(key, alg), now=NOW)
        assert isinstance(identity, Identity), (alg, identity)
        assert identity.subject == "alice" and identity.client_id == "app"
        assert identity.scopes == {"mcp", "tools"} and identity.audience == (SERVER,)
        assert identity.expires_at == int(NOW) + 600 and identity.issuer == ISSUER
        assert identity.claims["iat"] == int(NOW)


@pytest.mark.filterwarnings("ignore::joserfc.errors.SecurityWarning")
def test_eddsa_deprecated_by_rfc_9864_is_accepted_only_when_asked_for() -> None:
    rejected(verifier().verify(mint(ED, "EdDSA"), now=NOW))
    opted = verifier(algorithms=("EdDSA",))
    assert isinstance(opted.verify(mint(ED, "EdDSA"), now=NOW), Identity)


def test_alg_none_is_refused() -> None:
    for alg in ("none", "None", "NONE"):
        head = b64(json.dumps({"alg": alg, "kid": "rsa-1"}).encode())
        body = b64(json.dumps(claims()).encode())
        for token in (f"{head}.{body}.", f"{head}.{body}.{b64(b'x')}"):
            assert "algorithm" in rejected(verifier().verify(token, now=NOW)).reason


def _hs256(secret: bytes, kid: str | None = "rsa-1") -> str:
    head = b64(json.dumps({"alg": "HS256", "kid": kid}).encode())
    body = b64(json.dumps(claims()).encode())
    mac = hmac.new(secret, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64(mac)}"


def test_an_hmac_token_keyed_with_the_public_rsa_key_is_refused() -> None:
    """Algorithm confusion: the forger signs HS256 with what the verifier holds."""
    public = RSA.as_dict(private=False)
    secrets = [
        RSA.as_pem(private=False),
        json.dumps(public).encode(),
        base64.urlsafe_b64decode(public["n"] + "=="),
    ]
    for secret in secrets:
        rejected(verifier().verify(_hs256(secret), now=NOW))
    with pytest.raises(OAuthLocalError):
        verifier(algorithms=("HS256",))


def test_a_key_of_another_type_or_curve_than_the_alg_is_never_used() -> None:
    # an RSA kid with an EC algorithm, an EC kid with an RSA algorithm
    rs_as_es = mint(EC, "ES256", header={"kid": "rsa-1"})
    es_as_rs = mint(RSA, "RS256", header={"kid": "ec-1"})
    for token in (rs_as_es, es_as_rs):  # refused before any signature check
        assert "no key" in rejected(verifier().verify(token, now=NOW)).reason
    p384 = jwk.ECKey.generate_key("P-384", parameters={"kid": "p384"})
    only = {"keys": [p384.as_dict(private=False)]}
    forged = mint(p384, "ES384", header={"alg": "ES384"})
    assert isinstance(verifier(jwks=only).verify(forged, now=NOW), Identity)
    rejected(verifier(jwks=only, algorithms=("ES256",)).verify(forged, now=NOW))
    as_p256 = reheader(forged, alg="ES256")  # a P-384 key for ES256
    assert "no key" in rejected(verifier(jwks=only).verify(as_p256, now=NOW)).reason


def test_a_jwk_alg_pins_the_algorithm() -> None:
    pinned = {"keys": [RSA.as_dict(private=False) | {"alg": "PS256"}]}
    assert "no key" in rejected(verifier(jwks=pinned).verify(mint(RSA, "RS256"), now=NOW)).reason
    assert isinstance(verifier(jwks=pinned).verify(mint(RSA, "PS256"), now=NOW), Identity)


@pytest.mark.parametrize(
    "extra",
    [
        {"aud": "https://other.example.com/mcp"},
        {"aud": ["https://other.example.com"]},
        {"aud": None},
        {"iss": "https://evil.example.com"},
        {"iss": None},
        {"exp": int(NOW) - 60},
        {"exp": None},
        {"nbf": int(NOW) + 600},
        {"exp": "tomorrow"},
        {"scope": 7},
    ],
)
@spec(
    "2025-11-25/basic/authorization#token-handling.2",
    "2025-11-25/basic/authorization#access-token-privilege-restriction.3",
    "2025-11-25/basic/authorization#token-handling.4",
)
def test_a_token_for_another_audience_issuer_or_time_is_refused(extra: dict[str, Any]) -> None:
    rejected(verifier().verify(mint(**extra), now=NOW))


def test_the_leeway_is_honoured_both_ways() -> None:
    v = verifier(leeway=10)
    assert isinstance(v.verify(mint(exp=int(NOW) - 5), now=NOW), Identity)
    rejected(v.verify(mint(exp=int(NOW) - 15), now=NOW))
    assert isinstance(v.verify(mint(nbf=int(NOW) + 5), now=NOW), Identity)
    rejected(v.verify(mint(nbf=int(NOW) + 15), now=NOW))


def test_a_tampered_or_foreign_signature_is_refused() -> None:
    token = mint()
    head, _, sig = token.split(".")
    evil = b64(json.dumps(claims(scope="mcp tools admin")).encode())
    rejected(verifier().verify(f"{head}.{evil}.{sig}", now=NOW))
    rejected(verifier().verify(mint(OTHER), now=NOW))


def test_a_missing_kid_is_refused_when_the_jwks_holds_several_keys() -> None:
    token = mint(RSA, header={"kid": None})
    assert "kid" in rejected(verifier().verify(token, now=NOW)).reason
    single = {"keys": [RSA.as_dict(private=False)]}
    assert isinstance(verifier(jwks=single).verify(token, now=NOW), Identity)


@pytest.mark.parametrize(
    "token",
    [
        "",
        "a.b",
        "a.b.c.d.e",  # JWE compact
        "!!.e30.",
        "e30.e30.",  # {} header: no alg
        f"{b64(b'[1]')}.e30.",
        f"{b64(json.dumps({'alg': 'RS256', 'kid': 5}).encode())}.e30.",
        f"{b64(json.dumps({'alg': 'RS256', 'crit': ['exp']}).encode())}.e30.",
        f"{b64(json.dumps({'alg': 'RS256'}).encode())}.{b64(b'not json')}.",
    ],
)
def test_garbage_is_refused(token: str) -> None:
    rejected(verifier().verify(token, now=NOW))


def test_require_at_jwt_checks_the_type() -> None:
    v = verifier(require_at_jwt=True)
    assert isinstance(v.verify(mint(), now=NOW), Identity)
    rejected(v.verify(mint(header={"typ": "JWT"}), now=NOW))
    assert isinstance(verifier().verify(mint(header={"typ": "JWT"}), now=NOW), Identity)


def test_private_symmetric_and_encryption_keys_in_a_jwks_are_ignored() -> None:
    oct_key = jwk.OctKey.generate_key(256, parameters={"kid": "hs"})
    bad = {
        "keys": [
            RSA.as_dict(private=True),
            oct_key.as_dict(private=True),
            RSA.as_dict(private=False) | {"use": "enc"},
            RSA.as_dict(private=False) | {"key_ops": ["encrypt"]},
            {"kty": "RSA", "kid": "rsa-1", "n": "!!", "e": "AQAB"},
            "junk",
        ]
    }
    with pytest.raises(OAuthLocalError):
        verifier(jwks=bad)
    mixed = {"keys": [*bad["keys"], EC.as_dict(private=False)]}
    v = verifier(jwks=mixed)
    rejected(v.verify(mint(), now=NOW))
    rejected(v.verify(_hs256(oct_key.as_dict(private=True)["k"].encode(), "hs"), now=NOW))
    assert isinstance(v.verify(mint(EC, "ES256"), now=NOW), Identity)


# --- fetching the JWKS -------------------------------------------------------------------


def jwks_answer(doc: Any = JWKS, status: int = 200) -> HttpResponse:
    return HttpResponse(status=status, body=json.dumps(doc).encode())


def test_the_jwks_is_fetched_then_cached_then_refetched() -> None:
    v = JwtVerifier(resource=SERVER, issuer=ISSUER, jwks_url=JWKS_URL, cache_seconds=300)
    first = v.verify(mint(), now=NOW)
    assert isinstance(first, NeedFetch)
    assert (first.request.method, first.request.url) == ("GET", JWKS_URL)
    assert first.request.header("authorization") is None
    assert isinstance(first.resume(jwks_answer(), now=NOW), Identity)
    assert isinstance(v.verify(mint(), now=NOW + 299), Identity)  # cached
    stale = v.verify(mint(), now=NOW + 300)
    assert isinstance(stale, NeedFetch)
    # A failed refetch keeps the keys held before.
    assert isinstance(stale.resume(None, now=NOW + 300), Identity)


def test_the_keys_can_be_fetched_before_the_first_request() -> None:
    v = JwtVerifier(resource=SERVER, issuer=ISSUER, jwks_url=JWKS_URL)
    assert v.jwks_request().url == JWKS_URL
    assert not v.receive_jwks(jwks_answer({"keys": []}), now=NOW - 400)
    assert isinstance(v.verify(mint(), now=NOW), NeedFetch)  # nothing held, and stale
    assert v.receive_jwks(jwks_answer(), now=NOW)
    assert isinstance(v.verify(mint(), now=NOW + 1), Identity)


def test_an_unknown_kid_refetches_at_most_once_per_interval() -> None:
    v = JwtVerifier(resource=SERVER, issuer=ISSUER, jwks_url=JWKS_URL, refetch_seconds=30)
    first = v.verify(mint(), now=NOW)
    assert isinstance(first, NeedFetch)
    first.resume(jwks_answer(), now=NOW)
    rotated = jwk.RSAKey.generate_key(2048, parameters={"kid": "rsa-2"})
    rejected(v.verify(mint(rotated), now=NOW + 10))  # too soon after the last fetch
    again = v.verify(mint(rotated), now=NOW + 40)
    assert isinstance(again, NeedFetch)
    new = {"keys": [*JWKS["keys"], rotated.as_dict(private=False)]}
    assert isinstance(again.resume(jwks_answer(new), now=NOW + 40), Identity)
    unknown = v.verify(mint(OTHER, header={"kid": "nobody"}), now=NOW + 100)
    assert isinstance(unknown, NeedFetch)
    rejected(unknown.resume(jwks_answer(new), now=NOW + 100))  # no second fetch


@pytest.mark.parametrize(
    "answer",
    [
        None,
        jwks_answer(status=500),
        HttpResponse(status=200, body=b"{"),
        jwks_answer({"keys": "no"}),
        jwks_answer({"keys": []}),
        HttpResponse(status=200, body=b" " * (2 * 1024 * 1024)),
    ],
)
def test_without_readable_keys_the_verifier_is_unavailable(answer: HttpResponse | None) -> None:
    v = JwtVerifier(resource=SERVER, issuer=ISSUER, jwks_url=JWKS_URL)
    first = v.verify(mint(), now=NOW)
    assert isinstance(first, NeedFetch)
    rejected(first.resume(answer, now=NOW), "unavailable")


def test_after_a_failed_fetch_the_verifier_stays_unavailable_until_it_may_retry() -> None:
    v = JwtVerifier(resource=SERVER, issuer=ISSUER, jwks_url=JWKS_URL, refetch_seconds=30)
    first = v.verify(mint(), now=NOW)
    assert isinstance(first, NeedFetch)
    rejected(first.resume(None, now=NOW), "unavailable")
    for token in (mint(), mint(header={"kid": None})):
        rejected(v.verify(token, now=NOW + 10), "unavailable")  # no fetch storm
        retry = v.verify(token, now=NOW + 31)
        assert isinstance(retry, NeedFetch)
        assert isinstance(
            retry.resume(jwks_answer({"keys": JWKS["keys"][:1]}), now=NOW + 31), Identity
        )
        v = JwtVerifier(resource=SERVER, issuer=ISSUER, jwks_url=JWKS_URL, refetch_seconds=30)
        first = v.verify(mint(), now=NOW)
        assert isinstance(first, NeedFetch)
        first.resume(None, now=NOW)


def test_the_verifier_refuses_a_bad_configuration() -> None:
    for kwargs in (
        {"jwks": None},
        {"jwks": None, "jwks_url": "http://auth.example.com/jwks"},
        {"algorithms": ("RS256", "none")},
        {"algorithms": ()},
        {"resource": "not a url"},
    ):
        with pytest.raises(OAuthLocalError):
            verifier(**kwargs)
    with pytest.raises(OAuthLocalError):
        verifier().jwks_request()


def test_joserfc_is_imported_only_when_a_verifier_is_built(monkeypatch: Any) -> None:
    code = (
        "import sys, mcp_ref._oauth_verify_jwt, mcp_ref._oauth_resource_guard\n"
        "print('joserfc' in sys.modules, 'cryptography' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
    monkeypatch.setitem(sys.modules, "joserfc", None)
    with pytest.raises(OAuthLocalError, match=r"mcp-ref\[auth\]"):
        verifier()


# --- through the guard ----------------------------------------------------------------------


CONFIG = ResourceConfig(
    resource=SERVER,
    authorization_servers=(ISSUER,),
    policy=ScopePolicy(always=frozenset({"mcp"}), per_operation={"tools/call": frozenset({"x"})}),
)


@spec("2025-11-25/basic/authorization#token-handling.3")
def test_the_guard_with_a_jwt_verifier() -> None:
    v = verifier()
    ok = check_request(CONFIG, v, authorization=[f"Bearer {mint()}"], now=NOW)
    assert isinstance(ok, Allowed) and ok.identity.subject == "alice"
    bad = check_request(CONFIG, v, authorization=[f"Bearer {mint(aud='x')}"], now=NOW)
    assert isinstance(bad, HttpAnswer) and (bad.status, bad.error) == (401, "invalid_token")
    more = check_request(
        CONFIG, v, authorization=[f"Bearer {mint()}"], operations=["tools/call"], now=NOW
    )
    assert isinstance(more, HttpAnswer) and (more.status, more.error) == (403, "insufficient_scope")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(
    payload=st.dictionaries(
        st.sampled_from(["iss", "aud", "exp", "nbf", "sub", "client_id", "scope", "scp"]),
        json_values,
    ),
    header=st.dictionaries(st.sampled_from(["typ", "crit", "x5u", "jku"]), json_values, max_size=2),
)
def test_any_signed_claims_give_an_identity_or_a_refusal(
    payload: dict[str, Any], header: dict[str, Any]
) -> None:
    # Signed by hand (RS256), so that headers joserfc would not write can be tried.
    head = b64(json.dumps({**header, "alg": "RS256", "kid": "rsa-1"}).encode())
    signing_input = f"{head}.{b64(json.dumps(payload).encode())}"
    signature = RSA.raw_value.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    token = f"{signing_input}.{b64(signature)}"
    assert isinstance(verifier().verify(token, now=NOW), Identity | TokenRejected)


@settings(max_examples=150, deadline=None)
@given(
    keys=st.lists(
        st.one_of(
            json_values,
            st.fixed_dictionaries(
                {"kty": st.sampled_from(["RSA", "EC", "OKP", "oct"])},
                optional={
                    "crv": st.sampled_from(["P-256", "Ed25519", "X25519", "bad"]),
                    "kid": st.sampled_from(["ec-1", "rsa-1", None]),
                    "x": st.text(max_size=50),
                    "y": st.text(max_size=50),
                    "n": st.text(max_size=50),
                    "e": st.text(max_size=8),
                    "alg": json_values,
                    "use": json_values,
                    "key_ops": json_values,
                },
            ),
        ),
        max_size=4,
    ),
    token=st.sampled_from([mint(), mint(EC, "ES256"), mint(ED, "Ed25519"), "x.y.z"]),
)
def test_any_jwks_gives_an_identity_or_a_refusal(keys: list[Any], token: str) -> None:
    v = JwtVerifier(resource=SERVER, issuer=ISSUER, jwks_url=JWKS_URL)
    verdict = v.verify(token, now=NOW)
    if isinstance(verdict, NeedFetch):
        verdict = verdict.resume(jwks_answer({"keys": keys}), now=NOW)
    assert isinstance(verdict, Identity | TokenRejected)

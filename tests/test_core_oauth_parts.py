"""basic/authorization, client side: the sign-in flow's parts, one rule at a time.

The ``WWW-Authenticate`` reader (examples, then Hypothesis: any text gives challenges or
MalformedChallenge, and generated headers read back as written), the URL rules, the
refresh request, the token's only way out (``bearer_header``), the token store, and
the flow fed arbitrary answers at every step (a Failed event or the next step, never
another exception).
"""

from __future__ import annotations

import base64
import string
from urllib.parse import parse_qsl

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_ref._oauth_challenge import Challenge, bearer_challenge, parse_challenges
from mcp_ref._oauth_config import Authorized, Failed, NeedAuthorization, NeedHttp
from mcp_ref._oauth_flow import SignIn
from mcp_ref._oauth_grants import (
    Grant,
    InMemoryTokenStore,
    bearer_header,
    pkce_pair,
    read_token_response,
    refresh_request,
    select_scope,
)
from mcp_ref._oauth_http import (
    BadMetadata,
    HttpRequest,
    HttpResponse,
    InsecureEndpoint,
    MalformedChallenge,
    OAuthLocalError,
    OAuthRefused,
    TokenMisdirected,
    canonical_resource,
    is_loopback_url,
    read_answer,
    require_secure,
    resource_covers,
)
from mcp_ref._oauth_metadata import (
    ClientInfo,
    authorization_server_urls,
    legacy_endpoints,
    protected_resource_urls,
)

from .test_core_oauth import CHALLENGE, CONFIDENTIAL, SERVER, World, config, js

spec = pytest.mark.spec

# -- WWW-Authenticate ------------------------------------------------------------------------


@spec(
    "2025-06-18/basic/authorization#authorization-server-location.4",
    "2025-11-25/basic/authorization#protected-resource-metadata-discovery-requirements.8",
    "2026-07-28/basic/authorization/authorization-server-discovery#protected-resource-metadata-discovery-requirements.3",
)
def test_the_spec_s_examples_read_as_meant() -> None:
    got = bearer_challenge(
        [
            'Bearer error="insufficient_scope",\r\n'.replace("\r\n", "")
            + ' scope="files:read files:write user:profile",'
            ' resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource",'
            ' error_description="Additional file write permission required"'
        ]
    )
    assert got is not None
    assert got.error == "insufficient_scope"
    assert got.scope == ("files:read", "files:write", "user:profile")
    assert got.resource_metadata == "https://mcp.example.com/.well-known/oauth-protected-resource"
    assert got.error_description == "Additional file write permission required"


def test_several_challenges_schemes_and_fields() -> None:
    header = 'Basic realm="x", Newauth realm="y", type=1, title="Login \\"here\\"", bearer scope=a'
    assert parse_challenges(header) == [
        Challenge(scheme="basic", params={"realm": "x"}),
        Challenge(scheme="newauth", params={"realm": "y", "type": "1", "title": 'Login "here"'}),
        Challenge(scheme="bearer", params={"scope": "a"}),
    ]
    found = bearer_challenge(['Basic realm="x"', 'Bearer resource_metadata="u"'])
    assert found is not None and found.resource_metadata == "u" and found.scope is None
    assert bearer_challenge(['Basic realm="x"']) is None
    assert bearer_challenge([]) is None


def test_token68_bare_schemes_and_empty_elements() -> None:
    assert parse_challenges("Negotiate abc+/==, Bearer") == [
        Challenge(scheme="negotiate", params={}, token68="abc+/=="),
        Challenge(scheme="bearer", params={}),
    ]
    assert parse_challenges(" , ,Bearer  realm = x ,, ") == [
        Challenge(scheme="bearer", params={"realm": "x"})
    ]
    assert parse_challenges("") == []
    # "realm=" is a token68 (it may end in "="), not a parameter without a value.
    assert parse_challenges("Bearer realm=") == [
        Challenge(scheme="bearer", params={}, token68="realm=")
    ]


@pytest.mark.parametrize(
    "header",
    [
        'Bearer scope="open',
        "Bearer scope=a, scope=b",
        'Bearer realm="a" junk',
        "Bearer =x",
        "=Bearer",
        "Bearer a=b, c=",
        'Bearer realm="a\x01"',
        "Bearer abc def",
        "Bea{rer",
        "Bearer " + "a=b, " * 5000,
    ],
)
def test_malformed_headers_are_refused(header: str) -> None:
    with pytest.raises(MalformedChallenge):
        parse_challenges(header)


@given(st.text(max_size=200))
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_any_text_gives_challenges_or_malformed_challenge(text: str) -> None:
    try:
        result = parse_challenges(text)
    except MalformedChallenge as exc:
        assert exc.reason
    else:
        assert all(c.scheme == c.scheme.lower() for c in result)


@given(st.text(alphabet='Bearer ,="\\\t realmscope=a-_', max_size=60))
def test_header_like_text_gives_challenges_or_malformed_challenge(text: str) -> None:
    try:
        parse_challenges(text)
        bearer_challenge([text])
    except MalformedChallenge:
        pass


_TOKEN = st.text(alphabet=string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~", min_size=1)
_VALUE = st.text(
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E) | st.just("\t"), max_size=20
)


@given(
    st.lists(
        st.tuples(_TOKEN, st.dictionaries(_TOKEN.map(str.lower), _VALUE, max_size=4)),
        min_size=1,
        max_size=4,
    )
)
def test_generated_challenges_read_back_as_written(
    challenges: list[tuple[str, dict[str, str]]],
) -> None:
    def quote(value: str) -> str:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'

    header = ", ".join(
        scheme + (" " + ", ".join(f"{k}={quote(v)}" for k, v in params.items()) if params else "")
        for scheme, params in challenges
    )
    assert parse_challenges(header) == [
        Challenge(scheme=s.lower(), params=p) for s, p in challenges
    ]


# -- URL rules -----------------------------------------------------------------------------


@spec(
    "2025-06-18/basic/authorization#canonical-server-uri.2",
    "2026-07-28/basic/authorization/index#canonical-server-uri.2",
    "2025-06-18/basic/authorization#canonical-server-uri.3",
    "2025-11-25/basic/authorization#canonical-server-uri.3",
    "2026-07-28/basic/authorization/index#canonical-server-uri.3",
)
def test_the_canonical_resource_uri() -> None:
    assert canonical_resource("HTTPS://MCP.Example.com:443/Mcp") == "https://mcp.example.com/Mcp"
    assert canonical_resource("https://mcp.example.com/") == "https://mcp.example.com"
    assert canonical_resource("https://mcp.example.com:8443") == "https://mcp.example.com:8443"
    for bad in (
        "mcp.example.com",
        "https://mcp.example.com#fragment",
        "ftp://x/",
        "https://x:99999",
    ):
        with pytest.raises(BadMetadata):
            canonical_resource(bad)


def test_what_a_resource_covers() -> None:
    assert resource_covers("https://mcp.example.com", SERVER)
    assert resource_covers(SERVER, SERVER + "/sub")
    assert not resource_covers(SERVER, "https://mcp.example.com/mcpx")
    assert not resource_covers(SERVER, "http://mcp.example.com/mcp")
    assert not resource_covers(SERVER, "https://mcp.example.com:8443/mcp")
    assert not resource_covers(SERVER, "not a url")


@spec(
    "2025-06-18/basic/authorization#communication-security.2",
    "2025-03-26/basic/authorization#security-considerations.4",
    "2025-11-25/basic/authorization#communication-security.2",
    "2026-07-28/basic/authorization/security-considerations#communication-security.2",
    "2025-06-18/basic/authorization#communication-security.3",
    "2025-03-26/basic/authorization#security-considerations.6",
    "2025-11-25/basic/authorization#communication-security.3",
    "2026-07-28/basic/authorization/security-considerations#communication-security.3",
)
def test_https_except_on_loopback() -> None:
    for ok in (
        "https://a.example/x",
        "http://localhost:8080/cb",
        "http://127.0.0.1/",
        "http://[::1]:3/",
    ):
        assert require_secure(ok, "u") == ok
    for bad in ("http://a.example/x", "http://127.0.0.1.evil.example/", "http://localhost.evil/"):
        with pytest.raises(InsecureEndpoint):
            require_secure(bad, "u")
    assert not is_loopback_url("http://[bad/")


@spec(
    "2025-11-25/basic/authorization#protected-resource-metadata-discovery-requirements.2",
    "2026-07-28/basic/authorization/authorization-server-discovery#protected-resource-metadata-discovery-requirements.2",
)
def test_well_known_urls_in_the_spec_s_order() -> None:
    assert protected_resource_urls("https://example.com/public/mcp") == [
        "https://example.com/.well-known/oauth-protected-resource/public/mcp",
        "https://example.com/.well-known/oauth-protected-resource",
    ]
    assert authorization_server_urls("https://auth.example.com/tenant1/") == [
        "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
        "https://auth.example.com/.well-known/openid-configuration/tenant1",
        "https://auth.example.com/tenant1/.well-known/openid-configuration",
    ]
    with pytest.raises(InsecureEndpoint):
        authorization_server_urls("http://auth.example.com")


@spec(
    "2025-03-26/basic/authorization#authorization-base-url.1",
    "2025-03-26/basic/authorization#fallbacks-for-servers-without-metadata-discovery.1",
)
def test_the_2025_03_26_default_endpoints_drop_the_path() -> None:
    m = legacy_endpoints("https://api.example.com/v1/mcp")
    assert (m.authorization_endpoint, m.token_endpoint, m.registration_endpoint) == (
        "https://api.example.com/authorize",
        "https://api.example.com/token",
        "https://api.example.com/register",
    )
    assert m.issuer is None


# -- grants, refresh, the token's way out ------------------------------------------------------

GRANT = Grant(
    access_token="at",
    expires_at=2000.0,
    refresh_token="rt",
    scope=("files:read",),
    resource=SERVER,
    token_endpoint="https://auth.example.com/token",
    client=CONFIDENTIAL,
    auth_method="client_secret_post",
)


def test_pkce_pair_is_s256_of_a_43_character_verifier() -> None:
    import hashlib

    verifier, challenge = pkce_pair(lambda n: b"\x07" * n)
    assert len(verifier) == 43 and set(verifier) <= set(string.ascii_letters + string.digits + "-_")
    digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=")
    assert challenge == digest.decode()


def test_scope_selection_order() -> None:
    assert select_scope(("a",), ("b", "c")) == ("a",)
    assert select_scope(None, ("b", "c")) == ("b", "c")
    assert select_scope((), None) is None


def test_refresh_sends_the_refresh_token_with_the_resource_to_the_token_endpoint() -> None:
    request = refresh_request(GRANT, 1024)
    assert request.url == GRANT.token_endpoint and request.method == "POST"
    assert dict(parse_qsl(request.body.decode())) == {
        "grant_type": "refresh_token",
        "refresh_token": "rt",
        "resource": SERVER,
        "client_id": "pre-1",
        "client_secret": "s3cret",
    }
    with pytest.raises(OAuthLocalError):
        refresh_request(Grant(**{**_fields(GRANT), "refresh_token": None}), 1024)


def _fields(grant: Grant) -> dict[str, object]:
    return {name: getattr(grant, name) for name in grant.__dataclass_fields__}


def test_a_refresh_answer_without_a_new_refresh_token_keeps_the_old_one() -> None:
    answer = js({"access_token": "at2", "token_type": "Bearer", "expires_in": 60})
    new = read_token_response(answer, 5000.0, template=GRANT, max_body_bytes=1024)
    assert (new.access_token, new.refresh_token, new.expires_at) == ("at2", "rt", 5060.0)
    rotated = js({"access_token": "at3", "token_type": "Bearer", "refresh_token": "rt3"})
    assert (
        read_token_response(rotated, 0, template=GRANT, max_body_bytes=1024).refresh_token == "rt3"
    )


def test_expiry_is_seconds_from_now_with_a_leeway() -> None:
    assert not GRANT.expired(1900.0)
    assert GRANT.expired(1980.0)  # within the default 30 s
    assert not GRANT.expired(1980.0, leeway=0)
    assert not Grant(**{**_fields(GRANT), "expires_at": None}).expired(1e12)


@spec(
    "2025-06-18/basic/authorization#token-requirements.2",
    "2025-03-26/basic/authorization#token-requirements.2",
    "2025-11-25/basic/authorization#token-requirements.2",
    "2026-07-28/basic/authorization/index#token-requirements.2",
    "2025-06-18/basic/authorization#token-handling.5",
    "2025-11-25/basic/authorization#token-handling.5",
    "2026-07-28/basic/authorization/index#token-handling.5",
)
def test_the_token_goes_only_to_its_resource_in_the_authorization_header() -> None:
    assert bearer_header(GRANT, SERVER) == ("Authorization", "Bearer at")
    assert bearer_header(GRANT, "HTTPS://mcp.example.com/mcp/x")[1] == "Bearer at"
    for other in (
        "https://evil.example/mcp",
        "https://mcp.example.com/other",
        GRANT.token_endpoint,
    ):
        with pytest.raises(TokenMisdirected):
            bearer_header(GRANT, other)


def test_the_in_memory_store_keys_by_canonical_url() -> None:
    store = InMemoryTokenStore()
    assert store.get(SERVER) is None
    store.set("HTTPS://MCP.example.com/mcp", GRANT)
    assert store.get(SERVER) is GRANT
    store.set(SERVER, None)
    assert store.get(SERVER) is None
    store.set(SERVER, None)  # forgetting twice is fine


# -- never a crash ---------------------------------------------------------------------------

_BODIES = st.one_of(
    st.binary(max_size=64),
    st.sampled_from(
        [b"{}", b"[]", b"null", b'{"issuer": 5}', b'{"resource": []}', b'{"access_token": 1}']
    ),
    st.dictionaries(
        st.sampled_from(
            [
                "resource",
                "authorization_servers",
                "issuer",
                "token_endpoint",
                "access_token",
                "token_type",
                "expires_in",
                "client_id",
                "code_challenge_methods_supported",
            ]
        ),
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(),
            st.text(max_size=8),
            st.lists(st.text(max_size=8), max_size=2),
        ),
    ).map(lambda d: js(d).body),
)
_ANSWERS = st.builds(
    HttpResponse,
    status=st.sampled_from([200, 201, 302, 400, 401, 404, 500]),
    headers=st.lists(
        st.tuples(
            st.sampled_from(["Location", "Content-Type"]),
            st.text(max_size=30) | st.sampled_from(["http://[", "/x", "//evil.example/"]),
        ),
        max_size=2,
    ).map(tuple),
    body=_BODIES,
)


@given(
    st.lists(st.tuples(st.integers(0, 9), _ANSWERS), max_size=12),
    st.text(max_size=40) | st.sampled_from(["http://[", "http://127.0.0.1:3000/callback?x"]),
)
@settings(deadline=None, max_examples=300)
def test_any_answer_at_any_step_gives_an_event_never_a_crash(
    script: list[tuple[int, HttpResponse]], redirect: str
) -> None:
    """Honest answers, except that at the scripted steps an arbitrary one replaces them."""
    world = World()
    flow = SignIn(SERVER, config(client=None), token_bytes=lambda n: b"\x01" * n)
    flow.receive_challenge(401, [CHALLENGE])
    replace = dict(script)
    for step in range(40):
        event = flow.next_event()
        if isinstance(event, NeedHttp):
            answer = replace.get(step) or world.handle(event.request)
            flow.receive_response(answer, now=float(step))
        elif isinstance(event, NeedAuthorization):
            flow.receive_redirect(redirect if step in replace else world.browser(event.url))
        else:
            assert isinstance(event, Authorized | Failed)
            if isinstance(event, Failed):
                assert isinstance(event.error, OAuthRefused) and event.error.reason
            return
    raise AssertionError("the flow did not end")


def test_client_info_defaults() -> None:
    info = ClientInfo(client_id="x")
    assert info.client_secret is None and info.auth_method is None and info.issuer is None


@given(st.lists(st.text(max_size=80), max_size=3), st.sampled_from([401, 403]))
def test_any_challenge_starts_the_flow_or_fails_it_cleanly(values: list[str], status: int) -> None:
    flow = SignIn(SERVER, config())
    flow.receive_challenge(status, values)
    event = flow.next_event()
    if isinstance(event, Failed):
        assert isinstance(event.error, OAuthRefused) and event.error.reason
    else:
        assert isinstance(event, NeedHttp) and event.request.method == "GET"
        assert event.request.header("authorization") is None


def test_a_challenge_of_another_scheme_falls_back_to_the_well_known_urls() -> None:
    flow = SignIn(SERVER, config())
    flow.receive_challenge(401, ['Basic realm="mcp"'])
    event = flow.next_event()
    assert isinstance(event, NeedHttp)
    assert event.request.url == "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"


def test_a_request_on_the_wire_names_its_connection_target_and_headers() -> None:
    """What every driver sends: Host first (no user info), the request's headers,
    Content-Length for a POST, Connection: close; the port from the URL or the scheme."""
    post = HttpRequest(
        method="POST",
        url="https://user@as.example.com/token?x=1",
        headers=(("Content-Type", "application/x-www-form-urlencoded"),),
        body=b"a=b",
    ).on_the_wire()
    assert (post.tls, post.host, post.port, post.target) == (
        True,
        "as.example.com",
        443,
        "/token?x=1",
    )
    assert post.headers == [
        ("Host", "as.example.com"),
        ("Content-Type", "application/x-www-form-urlencoded"),
        ("Content-Length", "3"),
        ("Connection", "close"),
    ]
    get = HttpRequest(method="GET", url="http://127.0.0.1:8080").on_the_wire()
    assert (get.tls, get.host, get.port, get.target) == (False, "127.0.0.1", 8080, "/")
    assert get.headers == [("Host", "127.0.0.1:8080"), ("Connection", "close")]


def test_an_answer_read_by_a_driver_is_decoded_and_cut_past_the_bound() -> None:
    answer = read_answer(200, [(b"content-type", b"application/json")], [b"abc", b"def"], 4)
    assert answer.status == 200
    assert answer.headers == (("content-type", "application/json"),)
    assert answer.body == b"abcde"  # max + 1: enough for the flow to refuse it

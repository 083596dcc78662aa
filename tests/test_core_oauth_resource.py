"""basic/authorization, server side: protected resource metadata, the bearer check made
on every request, scopes and step-up, and the RFC 7662 introspection verifier
(mcp_ref/_oauth_resource.py, _oauth_resource_guard.py, _oauth_verify.py), without I/O.

Challenges are read back with the client's own parser (mcp_ref._oauth_challenge), so a
challenge the sign-in flow could not read fails here.  The JWT verifier has its own file
(test_core_oauth_resource_jwt.py).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, unquote_plus

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_ref._http_messages import read_post_body
from mcp_ref._oauth_challenge import bearer_challenge
from mcp_ref._oauth_http import HttpResponse, OAuthLocalError
from mcp_ref._oauth_resource import (
    HttpAnswer,
    ResourceConfig,
    ScopePolicy,
    metadata_document,
    metadata_paths,
    serve_metadata,
)
from mcp_ref._oauth_resource_guard import (
    Allowed,
    bearer_token,
    check_request,
    check_scopes,
    operation_names,
)
from mcp_ref._oauth_verify import (
    Identity,
    IntrospectionVerifier,
    NeedFetch,
    TokenRejected,
    Verdict,
)

spec = pytest.mark.spec

SERVER = "https://mcp.example.com/mcp"
ISSUER = "https://auth.example.com"
PRM = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
NOW = 1_800_000_000.0

POLICY = ScopePolicy(
    always=frozenset({"mcp"}),
    per_operation={
        "tools/call": frozenset({"tools"}),
        "tools/call:rm": frozenset({"files:write"}),
        "prompts/get:secret": frozenset({"admin"}),
    },
    implies={"files": frozenset({"files:read", "files:write"})},
)
CONFIG = ResourceConfig(
    resource="HTTPS://MCP.Example.com:443/mcp",
    authorization_servers=(ISSUER,),
    scopes_supported=("mcp", "tools", "files:read", "files:write"),
    policy=POLICY,
    resource_name="Notes",
)


class Table:
    """A verifier that needs no I/O: a dict of token -> Identity, recording calls."""

    def __init__(self, tokens: Mapping[str, Identity]) -> None:
        self.tokens = tokens
        self.calls: list[str] = []

    def verify(self, token: str, *, now: float) -> Verdict:
        self.calls.append(token)
        found = self.tokens.get(token)
        return found if found is not None else TokenRejected(reason="unknown token")


def ident(scopes: str = "mcp tools", aud: tuple[str, ...] = (SERVER,), exp: float | None = None):
    return Identity(
        subject="alice",
        client_id="app",
        scopes=frozenset(scopes.split()),
        expires_at=NOW + 3600 if exp is None else exp,
        audience=aud,
    )


TABLE = {"good": ident(), "all": ident("mcp tools files"), "few": ident("mcp files:read")}


def check(auth: list[str | bytes], ops: tuple[str, ...] = (), query: str = "", table=None):
    verifier = Table(TABLE if table is None else table)
    return (
        check_request(CONFIG, verifier, authorization=auth, query=query, operations=ops, now=NOW),
        verifier,
    )


def refused(answer: object, status: int) -> HttpAnswer:
    assert isinstance(answer, HttpAnswer), answer
    assert answer.status == status, (answer.status, answer.body)
    return answer


def www(answer: HttpAnswer):
    found = bearer_challenge([v for k, v in answer.headers if k == "WWW-Authenticate"])
    assert found is not None
    return found


# --- protected resource metadata -------------------------------------------------------


@spec(
    "2025-11-25/basic/authorization#overview.4",
    "2025-11-25/basic/authorization#authorization-server-location.1",
    "2025-11-25/basic/authorization#authorization-server-location.2",
)
def test_the_metadata_document_names_this_server_and_its_authorization_servers() -> None:
    assert metadata_document(CONFIG) == {
        "resource": SERVER,
        "authorization_servers": [ISSUER],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["mcp", "tools", "files:read", "files:write"],
        "resource_name": "Notes",
    }
    bare = ResourceConfig(resource="https://mcp.example.com/", authorization_servers=(ISSUER,))
    assert metadata_document(bare) == {
        "resource": "https://mcp.example.com",
        "authorization_servers": [ISSUER],
        "bearer_methods_supported": ["header"],
    }


@spec(
    "2025-11-25/basic/authorization#protected-resource-metadata-discovery-requirements.1",
    "2026-07-28/basic/authorization/authorization-server-discovery#protected-resource-metadata-discovery-requirements.1",
)
def test_the_metadata_is_served_at_the_path_aware_and_the_root_well_known_paths() -> None:
    assert CONFIG.metadata_url == PRM
    assert metadata_paths(CONFIG) == (
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    )
    for target in (*metadata_paths(CONFIG), "/.well-known/oauth-protected-resource/mcp?x=1"):
        answer = serve_metadata(CONFIG, "GET", target)
        assert answer is not None and answer.status == 200
        assert json.loads(answer.body) == metadata_document(CONFIG)
        assert answer.header("content-type") == "application/json"
        assert answer.header("access-control-allow-origin") == "*"
    for other in ("/mcp", "/.well-known/oauth-protected-resource/other", "/", ""):
        assert serve_metadata(CONFIG, "GET", other) is None
    assert refused(serve_metadata(CONFIG, "POST", metadata_paths(CONFIG)[0]), 405)
    only = ResourceConfig(resource=SERVER, authorization_servers=(ISSUER,), serve_at_root=False)
    assert metadata_paths(only) == ("/.well-known/oauth-protected-resource/mcp",)
    assert serve_metadata(only, "GET", "/.well-known/oauth-protected-resource") is None
    root = ResourceConfig(resource="https://mcp.example.com", authorization_servers=(ISSUER,))
    assert metadata_paths(root) == ("/.well-known/oauth-protected-resource",)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"authorization_servers": ()},
        {"authorization_servers": ("http://auth.example.com",)},
        {"resource": "https://mcp.example.com/mcp?tenant=1"},
        {"resource": "https://mcp.example.com/mcp#x"},
        {"resource": "mcp.example.com/mcp"},
        {"scopes_supported": ("a b",)},
        {"scopes_supported": ("offline_access",)},
        {"policy": ScopePolicy(always=frozenset({'q"uote'}))},
        {"policy": ScopePolicy(per_operation={"tools/list": frozenset({"offline_access"})})},
    ],
)
@spec(
    "2025-11-25/basic/authorization#authorization-server-location.2",
    "2026-07-28/basic/authorization/index#refresh-tokens.5",
)
def test_a_configuration_that_breaks_a_rule_is_refused_when_built(kwargs: dict[str, Any]) -> None:
    base: dict[str, Any] = {"resource": SERVER, "authorization_servers": (ISSUER,)}
    with pytest.raises(OAuthLocalError):
        ResourceConfig(**(base | kwargs))


def test_a_loopback_authorization_server_may_use_plain_http() -> None:
    config = ResourceConfig(resource=SERVER, authorization_servers=("http://127.0.0.1:9000",))
    assert config.authorization_servers == ("http://127.0.0.1:9000",)


# --- the bearer check -------------------------------------------------------------------


@spec(
    "2025-06-18/basic/authorization#authorization-server-location.3",
    "2025-03-26/basic/authorization#example-authorization-code-grant.1",
    "2025-11-25/basic/authorization#protected-resource-metadata-discovery-requirements.3",
    "2026-07-28/basic/authorization/index#scope-selection-strategy.1",
)
def test_no_token_is_a_401_whose_challenge_points_at_the_metadata_and_the_scopes() -> None:
    for auth in ([], ["Basic YWxhZGRpbjpvcGVuc2VzYW1l"], [b"Digest x=1"]):
        answer, verifier = check(auth, ("tools/call", "tools/call:rm"))
        challenge = www(refused(answer, 401))
        assert challenge.resource_metadata == PRM
        assert set(challenge.scope or ()) == {"mcp", "tools", "files:write"}
        assert challenge.error is None  # RFC 6750 3.1: no error code without a token
        assert verifier.calls == []
    answer, _ = check([], ())
    assert www(refused(answer, 401)).scope == ("mcp",)


@spec(
    "2025-11-25/basic/authorization#token-handling.4",
    "2025-11-25/basic/authorization#token-handling.3",
)
def test_an_unknown_or_expired_token_is_a_401_invalid_token() -> None:
    answer, verifier = check(["Bearer nope"])
    challenge = www(refused(answer, 401))
    assert challenge.error == "invalid_token" and challenge.resource_metadata == PRM
    assert verifier.calls == ["nope"]
    expired = {"old": ident(exp=NOW - 3600)}
    challenge = www(refused(check(["Bearer old"], table=expired)[0], 401))
    assert challenge.error == "invalid_token" and "expired" in (challenge.error_description or "")
    within = {"skew": ident(exp=NOW - CONFIG.leeway / 2)}
    assert isinstance(check(["Bearer skew"], table=within)[0], Allowed)


@spec(
    "2025-06-18/basic/authorization#token-requirements.1",
    "2025-03-26/basic/authorization#token-requirements.1",
    "2025-11-25/basic/authorization#token-requirements.1",
    "2026-07-28/basic/authorization/index#token-requirements.1",
)
def test_a_valid_token_is_allowed_with_its_identity() -> None:
    answer, _ = check(["bearer   good"], ("tools/call", "tools/call:echo"))
    assert isinstance(answer, Allowed) and answer.identity == TABLE["good"]


@pytest.mark.parametrize(
    "auth",
    [
        ["Bearer good", "Bearer good"],
        ["Bearer"],
        ["Bearer "],
        ["Bearer good extra"],
        ["Bearer go\u00efod"],
        ["Bearer good,Basic x"],
        ['Bearer "good"'],
    ],
)
@spec(
    "2025-11-25/basic/authorization#error-handling.1",
    "2025-06-18/basic/authorization#token-requirements.1",
    "2025-03-26/basic/authorization#token-requirements.1",
    "2025-11-25/basic/authorization#token-requirements.1",
    "2026-07-28/basic/authorization/index#token-requirements.1",
)
def test_a_malformed_authorization_header_is_a_400_invalid_request(auth: list[str]) -> None:
    answer, verifier = check(auth)
    assert www(refused(answer, 400)).error == "invalid_request"
    assert verifier.calls == []


@spec(
    "2025-11-25/basic/authorization#token-requirements.4",
    "2025-06-18/basic/authorization#token-requirements.4",
    "2025-03-26/basic/authorization#token-requirements.4",
    "2026-07-28/basic/authorization/index#token-requirements.4",
)
def test_a_token_in_the_query_string_is_never_read() -> None:
    for query in ("access_token=good", "a=1&access_token=", "access_token"):
        for auth in ([], ["Bearer good"]):
            answer, verifier = check(auth, query=query)
            assert www(refused(answer, 400)).error == "invalid_request"
            assert verifier.calls == []
    assert isinstance(check(["Bearer good"], query="token=x&a=1")[0], Allowed)


def test_a_token_over_the_bound_is_refused_unread() -> None:
    long = "a" * (CONFIG.max_token_bytes + 1)
    answer, verifier = check([f"Bearer {long}"], table={long: ident()})
    assert www(refused(answer, 401)).error == "invalid_token" and verifier.calls == []
    ok = "a" * CONFIG.max_token_bytes
    assert isinstance(check([f"Bearer {ok}"], table={ok: ident()})[0], Allowed)


@spec(
    "2025-06-18/basic/security_best_practices#mitigation-2.1",
    "2025-06-18/basic/security_best_practices#mitigation-2.2",
    "2025-11-25/basic/authorization#token-requirements.3",
)
def test_every_request_is_verified_again() -> None:
    verifier = Table(TABLE)
    for _ in range(3):
        outcome = check_request(CONFIG, verifier, authorization=["Bearer good"], now=NOW)
        assert isinstance(outcome, Allowed)
    assert verifier.calls == ["good"] * 3
    verifier.tokens = {}  # the token was revoked: the next request is refused
    answer = check_request(CONFIG, verifier, authorization=["Bearer good"], now=NOW)
    assert refused(answer, 401)


@spec(
    "2025-11-25/basic/authorization#token-handling.6",
    "2026-07-28/basic/authorization/index#token-handling.6",
    "2025-11-25/basic/authorization#token-handling.7",
    "2025-11-25/basic/authorization#access-token-privilege-restriction.3",
    "2025-06-18/basic/security_best_practices#mitigation-1.1",
)
def test_an_identity_for_another_audience_is_refused_whichever_verifier_made_it() -> None:
    for aud in ((), ("https://other.example.com/mcp",), ("https://mcp.example.com",)):
        answer, _ = check(["Bearer t"], table={"t": ident(aud=aud)})
        assert www(refused(answer, 401)).error == "invalid_token"


def test_a_verifier_answering_nonsense_is_a_503() -> None:
    class Broken:
        def verify(self, token: str, *, now: float) -> Any:
            return "yes"

    answer = check_request(CONFIG, Broken(), authorization=["Bearer x"], now=NOW)
    assert refused(answer, 503).error == "temporarily_unavailable"


# --- scopes and step-up -------------------------------------------------------------------


@spec(
    "2025-11-25/basic/authorization#runtime-insufficient-scope-errors.1",
    "2026-07-28/basic/authorization/index#runtime-insufficient-scope-errors.1",
    "2025-11-25/basic/authorization#runtime-insufficient-scope-errors.2",
    "2026-07-28/basic/authorization/index#runtime-insufficient-scope-errors.3",
    "2026-07-28/basic/authorization/index#runtime-insufficient-scope-errors.2",
)
def test_too_few_scopes_is_a_403_naming_every_scope_the_request_needs() -> None:
    answer, _ = check(["Bearer good"], ("tools/call", "tools/call:rm"))
    challenge = www(refused(answer, 403))
    assert challenge.error == "insufficient_scope" and challenge.resource_metadata == PRM
    # needed (mcp, tools, files:write) plus the supported scopes already granted
    assert set(challenge.scope or ()) == {"mcp", "tools", "files:write"}
    answer, _ = check(["Bearer few"], ("tools/call",))
    assert set(www(refused(answer, 403)).scope or ()) == {"mcp", "tools", "files:read"}
    assert json.loads(refused(answer, 403).body)["error"] == "insufficient_scope"


@spec("2026-07-28/basic/authorization/index#step-up-authorization-flow.6")
def test_a_broader_scope_implies_the_narrower_ones() -> None:
    assert isinstance(check(["Bearer all"], ("tools/call", "tools/call:rm"))[0], Allowed)
    deep = ScopePolicy(
        implies={"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"})}
    )
    assert deep.expand({"a"}) == {"a", "b", "c"}
    assert POLICY.expand({"files:read"}) == {"files:read"}


def test_the_scopes_needed_are_the_union_of_every_matching_entry() -> None:
    assert POLICY.required([]) == {"mcp"}
    assert POLICY.required(["tools/list"]) == {"mcp"}
    assert POLICY.required(["tools/call", "tools/call:rm"]) == {"mcp", "tools", "files:write"}
    assert POLICY.required(["prompts/get", "prompts/get:secret"]) == {"mcp", "admin"}


def test_operation_names_reads_methods_and_tool_or_prompt_names() -> None:
    messages: list[Any] = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "rm"}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "prompts/get", "params": {"name": "secret"}},
        {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"name": "x"}},
        {"jsonrpc": "2.0", "id": 4, "result": {}},
        {"method": 5},
        {"method": "tools/call", "params": {"name": 7}},
        "junk",
        None,
    ]
    assert operation_names(messages) == (
        "tools/call",
        "tools/call:rm",
        "notifications/initialized",
        "prompts/get",
        "prompts/get:secret",
        "resources/read",
        "tools/call",
    )


def test_operation_names_reads_objects_with_method_and_name_attributes() -> None:
    class Info:
        def __init__(self, method: str | None, name: str | None = None) -> None:
            self.method, self.name = method, name

    infos = [Info("tools/call", "rm"), Info(None), Info("tools/list", "x"), Info("prompts/get")]
    assert operation_names(infos) == ("tools/call", "tools/call:rm", "tools/list", "prompts/get")
    body = b'[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rm"}}]'
    summaries = read_post_body(body)
    assert isinstance(summaries, list)
    # The HTTP core's summaries carry no tool name yet: only the method is seen.
    assert operation_names(summaries) == ("tools/call",)


def test_the_scopes_can_be_checked_after_the_body_is_read() -> None:
    first = check_request(CONFIG, Table(TABLE), authorization="Bearer good", now=NOW)
    assert isinstance(first, Allowed)
    needed = POLICY.required(["tools/call", "tools/call:rm"])
    step = check_scopes(CONFIG, first.identity, needed)
    assert www(refused(step, 403)).error == "insufficient_scope"
    assert isinstance(
        check_scopes(CONFIG, first.identity, POLICY.required(["tools/call"])), Allowed
    )


def test_bearer_token_reads_one_credential() -> None:
    assert bearer_token([], 100) is None
    assert bearer_token(["Basic abc"], 100) is None
    assert bearer_token([b"BEARER abc.def-_~+/=="], 100) == "abc.def-_~+/=="
    assert bearer_token(["  Bearer abc  "], 100) == "abc"


# --- the verifier's HTTP, through the guard ---------------------------------------------


INTROSPECT = IntrospectionVerifier(
    endpoint=f"{ISSUER}/introspect",
    resource=SERVER,
    client_id="mcp server",
    client_secret="s3cr:t&",
    issuer=ISSUER,
)


def active(**extra: Any) -> dict[str, Any]:
    return {
        "active": True,
        "aud": SERVER,
        "iss": ISSUER,
        "sub": "alice",
        "client_id": "app",
        "scope": "mcp tools",
        "exp": NOW + 600,
    } | extra


def js(doc: Any, status: int = 200) -> HttpResponse:
    return HttpResponse(status=status, body=json.dumps(doc).encode())


def introspect(answer: HttpResponse | None, verifier: IntrospectionVerifier = INTROSPECT):
    verdict = verifier.verify("tok-1", now=NOW)
    assert isinstance(verdict, NeedFetch)
    return verdict.resume(answer, now=NOW)


@spec("2025-11-25/basic/authorization#token-handling.1")
def test_introspection_posts_the_token_with_client_authentication() -> None:
    verdict = INTROSPECT.verify("tok-1", now=NOW)
    assert isinstance(verdict, NeedFetch)
    request = verdict.request
    assert (request.method, request.url) == ("POST", f"{ISSUER}/introspect")
    assert "tok-1" not in request.url
    assert parse_qs(request.body.decode()) == {
        "token": ["tok-1"],
        "token_type_hint": ["access_token"],
    }
    assert request.header("content-type") == "application/x-www-form-urlencoded"
    scheme, _, blob = (request.header("authorization") or "").partition(" ")
    user, _, password = base64.b64decode(blob).decode().partition(":")
    assert scheme == "Basic"
    assert (unquote_plus(user), unquote_plus(password)) == ("mcp server", "s3cr:t&")
    post = IntrospectionVerifier(
        endpoint=f"{ISSUER}/introspect",
        resource=SERVER,
        client_id="rs",
        client_secret="x",
        auth_method="client_secret_post",
    )
    request = post.request("tok-1")
    assert request.header("authorization") is None
    assert parse_qs(request.body.decode())["client_secret"] == ["x"]
    with pytest.raises(OAuthLocalError):
        IntrospectionVerifier(
            endpoint="http://auth.example.com/i", resource=SERVER, client_id="a", client_secret="b"
        )


def test_an_active_token_for_this_server_gives_its_identity() -> None:
    identity = introspect(js(active()))
    assert identity == Identity(
        subject="alice",
        client_id="app",
        scopes=frozenset({"mcp", "tools"}),
        expires_at=NOW + 600,
        audience=(SERVER,),
        issuer=ISSUER,
        claims=active(),
    )


@pytest.mark.parametrize(
    "doc",
    [
        active(active=False),
        active(active="true"),
        {"active": True},
        active(aud="https://other.example.com/mcp"),
        active(aud=["https://mcp.example.com"]),
        active(aud=None),
        active(iss="https://evil.example.com"),
        active(iss=5),
        active(exp=NOW - 60),
        active(exp="soon"),
        active(exp=float("nan")),
        active(nbf=NOW + 600),
        active(scope=["mcp"]),
        active(sub=42),
    ],
)
@spec(
    "2025-11-25/basic/authorization#token-handling.2",
    "2025-11-25/basic/authorization#token-audience-binding-and-validation.2",
)
def test_an_inactive_foreign_or_expired_token_is_invalid(doc: dict[str, Any]) -> None:
    verdict = introspect(js(doc))
    assert isinstance(verdict, TokenRejected) and verdict.kind == "invalid_token"


@spec("2025-11-25/basic/authorization#canonical-server-uri.2")
def test_an_audience_list_naming_this_server_in_another_case_is_accepted() -> None:
    doc = active(aud=["https://api.example.com", "HTTPS://MCP.EXAMPLE.COM/mcp"], exp=NOW - 10)
    identity = introspect(js(doc))
    assert isinstance(identity, Identity)
    assert identity.audience == ("https://api.example.com", "HTTPS://MCP.EXAMPLE.COM/mcp")


@pytest.mark.parametrize(
    "answer",
    [
        None,
        js(active(), status=500),
        js(active(), status=401),
        HttpResponse(status=200, body=b"not json"),
        HttpResponse(status=200, body=b"[1]"),
        HttpResponse(status=200, body=b" " * (INTROSPECT.max_body_bytes + 1)),
    ],
)
def test_a_failed_introspection_is_unavailable_not_invalid(answer: HttpResponse | None) -> None:
    verdict = introspect(answer)
    assert isinstance(verdict, TokenRejected) and verdict.kind == "unavailable"


def test_the_guard_hands_out_the_verifier_request_and_answers_after_it() -> None:
    outcome = check_request(
        CONFIG, INTROSPECT, authorization=["Bearer tok-1"], operations=["tools/call"], now=NOW
    )
    assert isinstance(outcome, NeedFetch)
    assert outcome.request.url == f"{ISSUER}/introspect"
    allowed = outcome.resume(js(active()), now=NOW)
    assert isinstance(allowed, Allowed) and allowed.identity.subject == "alice"
    with pytest.raises(OAuthLocalError):
        outcome.resume(js(active()), now=NOW)
    for answer, status in ((None, 503), (js(active(active=False)), 401)):
        again = check_request(CONFIG, INTROSPECT, authorization=["Bearer tok-1"], now=NOW)
        assert isinstance(again, NeedFetch)
        refused(again.resume(answer, now=NOW), status)
    step = check_request(
        CONFIG, INTROSPECT, authorization=["Bearer t"], operations=["tools/call:rm"], now=NOW
    )
    assert isinstance(step, NeedFetch)
    assert www(refused(step.resume(js(active()), now=NOW), 403)).error == "insufficient_scope"


def test_an_error_description_cannot_break_the_header() -> None:
    class Chatty:
        def verify(self, token: str, *, now: float) -> Verdict:
            return TokenRejected(reason='bad "token"\r\nSet-Cookie: x=1\\ \u00e9' + "x" * 500)

    answer = check_request(CONFIG, Chatty(), authorization=["Bearer t"], now=NOW)
    value = refused(answer, 401).header("www-authenticate") or ""
    assert all(0x20 <= ord(c) <= 0x7E for c in value) and len(value) < 400
    challenge = www(refused(answer, 401))
    assert challenge.error == "invalid_token" and challenge.resource_metadata == PRM
    assert json.loads(refused(answer, 401).body)["error_description"].startswith('bad "token"')


def driver_step(method: str, target: str, headers: list[tuple[str, str]], body: Any, fetch):
    """What an HTTP server driver does per request (the hook, in miniature): the
    metadata first, then the bearer check with the request's operations, running any
    fetch the verifier asks for; None means 'carry on to the MCP session'."""
    answer = serve_metadata(CONFIG, method, target)
    if answer is not None:
        return answer
    path, _, query = target.partition("?")
    outcome = check_request(
        CONFIG,
        INTROSPECT,
        authorization=[v for k, v in headers if k.lower() == "authorization"],
        query=query,
        operations=operation_names(body if isinstance(body, list) else [body]),
        now=NOW,
    )
    while isinstance(outcome, NeedFetch):
        outcome = outcome.resume(fetch(outcome.request), now=NOW)
    return outcome


def test_the_driver_hook_in_miniature() -> None:
    seen: list[str] = []

    def fetch(request):
        seen.append(request.url)
        token = parse_qs(request.body.decode())["token"][0]
        return js(active(scope="mcp tools") if token == "tok-1" else {"active": False})

    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}}
    meta = driver_step("GET", "/.well-known/oauth-protected-resource/mcp", [], None, fetch)
    assert isinstance(meta, HttpAnswer) and meta.status == 200 and seen == []
    first = driver_step("POST", "/mcp", [], call, fetch)
    assert www(refused(first, 401)).resource_metadata == PRM and seen == []
    ok = driver_step("POST", "/mcp", [("Authorization", "Bearer tok-1")], call, fetch)
    assert isinstance(ok, Allowed) and ok.identity.scopes == {"mcp", "tools"}
    bad = driver_step("POST", "/mcp", [("authorization", "Bearer tok-2")], call, fetch)
    assert www(refused(bad, 401)).error == "invalid_token"
    rm = {**call, "params": {"name": "rm"}}
    more = driver_step("POST", "/mcp", [("Authorization", "Bearer tok-1")], [rm], fetch)
    assert www(refused(more, 403)).error == "insufficient_scope"
    assert seen == [f"{ISSUER}/introspect"] * 3


# --- never a crash ------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(method=st.text(max_size=8), target=st.text(max_size=60))
def test_any_target_gives_the_metadata_an_answer_or_none(method: str, target: str) -> None:
    for t in (target, "/.well-known/oauth-protected-resource" + target):
        answer = serve_metadata(CONFIG, method, t)
        served = t.split("?", 1)[0] in metadata_paths(CONFIG)
        assert (answer is None) is not served
        assert answer is None or answer.status in (200, 405)


header_values = st.lists(
    st.one_of(
        st.text(max_size=60),
        st.binary(max_size=60),
        st.builds(lambda t: "Bearer " + t, st.text(max_size=40)),
        st.sampled_from(["Bearer good", "Bearer tok-1", "bearer few"]),
    ),
    max_size=3,
)


@settings(max_examples=300, deadline=None)
@given(auth=header_values, query=st.text(max_size=30), ops=st.lists(st.text(max_size=12)))
def test_any_header_gives_allowed_or_an_answer(auth: list[Any], query: str, ops: list[str]) -> None:
    outcome, _ = check(auth, tuple(ops), query)
    assert isinstance(outcome, Allowed | HttpAnswer)
    if isinstance(outcome, HttpAnswer):
        assert outcome.status in (400, 401, 403)


@settings(max_examples=200, deadline=None)
@given(
    auth=header_values,
    status=st.sampled_from([200, 200, 400, 500]),
    body=st.one_of(
        st.binary(max_size=80),
        st.recursive(
            st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=10),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(
                    st.sampled_from(["active", "aud", "exp", "nbf", "iss", "scope", "sub", "scp"]),
                    inner,
                    max_size=6,
                )
            ),
            max_leaves=12,
        ).map(lambda v: json.dumps(v).encode()),
    ),
)
def test_any_introspection_answer_gives_allowed_or_an_answer(
    auth: list[Any], status: int, body: bytes
) -> None:
    outcome = check_request(CONFIG, INTROSPECT, authorization=auth, now=NOW)
    if isinstance(outcome, NeedFetch):
        outcome = outcome.resume(HttpResponse(status=status, body=body), now=NOW)
    assert isinstance(outcome, Allowed | HttpAnswer)

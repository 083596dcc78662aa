"""CachingVerifier (mcp_ref/_oauth_verify.py): identities reused for a while, never past
their expiry, refusals never kept, bounded; through a NeedFetch too.  No I/O."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_ref._oauth_http import HttpRequest, HttpResponse, OAuthLocalError
from mcp_ref._oauth_verify import CachingVerifier, Identity, NeedFetch, TokenRejected

AUD = ("https://mcp.example.com/mcp",)


def identity(sub: str, exp: float | None = None) -> Identity:
    return Identity(subject=sub, client_id="c", scopes=frozenset(), expires_at=exp, audience=AUD)


class Counting:
    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def verify(self, token: str, *, now: float) -> Any:
        self.asked.append(token)
        return self.answers.get(token, TokenRejected(reason="unknown"))


def test_an_identity_is_reused_until_the_ttl_then_asked_again() -> None:
    inner = Counting({"a": identity("alice")})
    cache = CachingVerifier(inner, ttl=60)
    assert cache.verify("a", now=0).subject == "alice"  # type: ignore[union-attr]
    assert cache.verify("a", now=59.9).subject == "alice"  # type: ignore[union-attr]
    assert inner.asked == ["a"]
    cache.verify("a", now=60)
    assert inner.asked == ["a", "a"]


def test_never_past_the_token_s_expiry_and_refusals_are_not_kept() -> None:
    inner = Counting({"a": identity("alice", exp=10.0)})
    cache = CachingVerifier(inner, ttl=60)
    cache.verify("a", now=0)
    cache.verify("a", now=10)  # expired: asked again (the guard refuses it)
    assert inner.asked == ["a", "a"]
    for _ in range(2):
        assert isinstance(cache.verify("x", now=0), TokenRejected)
    assert inner.asked.count("x") == 2


def test_the_least_recently_used_go_first() -> None:
    inner = Counting({t: identity(t) for t in "abc"})
    cache = CachingVerifier(inner, ttl=60, max_entries=2)
    for t in "ab":
        cache.verify(t, now=0)
    cache.verify("a", now=1)  # a is fresher than b now
    cache.verify("c", now=2)  # b goes
    inner.asked.clear()
    cache.verify("a", now=3)
    cache.verify("b", now=3)
    assert inner.asked == ["b"]


def test_an_identity_found_through_a_fetch_is_kept() -> None:
    class Fetching:
        calls = 0

        def verify(self, token: str, *, now: float) -> Any:
            self.calls += 1
            request = HttpRequest(method="POST", url="https://as.example.com/introspect")
            return NeedFetch(request, lambda response, now: identity("dana"))

    inner = Fetching()
    cache = CachingVerifier(inner, ttl=60)
    pending = cache.verify("t", now=0)
    assert isinstance(pending, NeedFetch)
    assert pending.resume(HttpResponse(status=200), now=0).subject == "dana"  # type: ignore[union-attr]
    assert cache.verify("t", now=1).subject == "dana"  # type: ignore[union-attr]
    assert inner.calls == 1


def test_the_bounds_are_checked() -> None:
    for kw in ({"ttl": 0}, {"max_entries": 0}):
        with pytest.raises(OAuthLocalError):
            CachingVerifier(Counting({}), **kw)  # type: ignore[arg-type]

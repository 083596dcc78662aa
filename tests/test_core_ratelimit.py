"""The token buckets of mcp_ref._ratelimit, tested without a clock (time is an argument).

Source: 2025-06-18/server/utilities/completion#security.1 (rate-limit completion
requests), 2025-06-18/client/sampling#security-considerations.4 (rate limits on sampling);
mcp_ref/_ratelimit.py's theory of operation.  Written to kill the mutants mutmut makes of
that module (tests/mutation_score.md).
"""

from __future__ import annotations

import pytest

from mcp_ref import McpError
from mcp_ref._errors import INTERNAL_ERROR
from mcp_ref._ratelimit import RateLimit, TokenBucket, take_or_refuse


def test_limits_are_validated() -> None:
    with pytest.raises(ValueError, match="per_second"):
        RateLimit(per_second=0, burst=1)
    with pytest.raises(ValueError, match="burst"):
        RateLimit(per_second=1, burst=0)
    assert RateLimit(per_second=0.5, burst=1).burst == 1


def test_a_new_bucket_allows_a_burst_then_refuses() -> None:
    limit = RateLimit(per_second=1.0, burst=3)
    bucket = TokenBucket()
    assert bucket.take(limit, 100.0) is True
    assert bucket.tokens == 2.0
    assert bucket.stamp == 100.0
    assert [bucket.take(limit, 100.0) for _ in range(3)] == [True, True, False]
    assert bucket.tokens == 0.0


def test_no_time_passed_means_no_refill() -> None:
    limit = RateLimit(per_second=1.0, burst=1)
    bucket = TokenBucket()
    assert bucket.take(limit, 50.0)
    assert not bucket.take(limit, 50.0)
    # A clock that goes backwards refills nothing either.
    assert not bucket.take(limit, 10.0)


def test_tokens_come_back_at_the_rate() -> None:
    limit = RateLimit(per_second=2.0, burst=1)
    bucket = TokenBucket()
    assert bucket.take(limit, 100.0)
    assert not bucket.take(limit, 100.25)  # half a token back
    assert bucket.tokens == 0.5
    assert bucket.take(limit, 100.5)  # exactly one token back: allowed
    assert bucket.tokens == 0.0


def test_refill_stops_at_the_burst() -> None:
    limit = RateLimit(per_second=1.0, burst=2)
    bucket = TokenBucket()
    assert bucket.take(limit, 0.0)
    assert [bucket.take(limit, 1000.0) for _ in range(3)] == [True, True, False]


def test_wait_time_is_seconds_until_the_next_token() -> None:
    limit = RateLimit(per_second=4.0, burst=1)
    bucket = TokenBucket()
    assert bucket.wait_time(limit) == 0.25  # no token taken yet, none counted
    assert bucket.take(limit, 0.0)
    assert bucket.wait_time(limit) == 0.25
    assert not bucket.take(limit, 0.125)  # half a token back
    assert bucket.wait_time(limit) == 0.125
    full = TokenBucket(tokens=3.0)
    assert full.wait_time(limit) == 0.0


def test_take_or_refuse_keeps_one_bucket_per_method() -> None:
    limit = RateLimit(per_second=4.0, burst=2)
    buckets: dict[str, TokenBucket] = {}
    take_or_refuse(buckets, limit, "tools/call", 10.0)
    assert list(buckets) == ["tools/call"]
    assert buckets["tools/call"].tokens == 1.0
    take_or_refuse(buckets, limit, "tools/call", 10.0)
    take_or_refuse(buckets, limit, "completion/complete", 10.0)  # its own bucket
    with pytest.raises(McpError) as caught:
        take_or_refuse(buckets, limit, "tools/call", 10.0)
    err = caught.value
    assert err.code == INTERNAL_ERROR
    assert err.data == {"retryAfter": 0.25}
    assert err.message == (
        "rate limit exceeded for tools/call: at most 4 per second (bursts of 2); retry in 0.25 s"
    )
    # The refusal used no token: a quarter of a second later one is back.
    take_or_refuse(buckets, limit, "tools/call", 10.25)

"""Per-session rate limits: a token bucket per session and per method (no I/O).

Theory of operation
-------------------
A :class:`RateLimit` allows ``burst`` requests at once and ``per_second`` more every
second after that.  Each session keeps one :class:`TokenBucket` per limited method, so
one busy peer cannot slow another.  A request that finds its bucket empty is refused at
once (:func:`take_or_refuse`) with -32603 and ``data.retryAfter`` (seconds until a token
is back); nothing is queued.  The caller passes the time (any monotonic clock, seconds).

Who limits what:

* the server (:mod:`mcp_ref.server`): ``completion/complete`` by default
  (2025-06-18/server/utilities/completion#security.1), ``tools/call`` when the
  application says how much (2025-06-18/server/tools#security-considerations.1: a
  sensible rate depends on what the tools cost), and log messages (:mod:`._logging`);
* the client (:mod:`mcp_ref.client`): ``sampling/createMessage`` and
  ``elicitation/create`` by default (2025-06-18/client/sampling#security-considerations.4,
  2025-06-18/client/elicitation#security-considerations.6): a server must not be able to
  flood the user or the model with requests.
"""

from __future__ import annotations

import attrs

from ._errors import INTERNAL_ERROR, McpError

__all__ = ["RateLimit", "TokenBucket", "take_or_refuse"]


@attrs.frozen
class RateLimit:
    """How often something may happen, per session.

    Attributes:
        per_second: the sustained rate (events per second, > 0).
        burst: how many may happen at once (>= 1).
    """

    per_second: float = attrs.field()
    burst: int = attrs.field()

    @per_second.validator
    def _positive(self, _: object, value: float) -> None:
        if not value > 0:
            raise ValueError("per_second must be > 0")

    @burst.validator
    def _at_least_one(self, _: object, value: int) -> None:
        if value < 1:
            raise ValueError("burst must be >= 1")


@attrs.define
class TokenBucket:
    """A token bucket: ``take`` succeeds while tokens last; they refill at the rate."""

    tokens: float | None = None
    stamp: float = 0.0

    def take(self, limit: RateLimit, now: float) -> bool:
        """Take one token at time ``now`` (seconds); False when none is left."""
        if self.tokens is None:
            self.tokens = float(limit.burst)
        else:
            elapsed = max(0.0, now - self.stamp)
            self.tokens = min(float(limit.burst), self.tokens + elapsed * limit.per_second)
        self.stamp = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True

    def wait_time(self, limit: RateLimit) -> float:
        """Seconds until the next token (0 when one is there)."""
        missing = 1.0 - (self.tokens or 0.0)
        return max(0.0, missing / limit.per_second)


def take_or_refuse(
    buckets: dict[str, TokenBucket], limit: RateLimit, method: str, now: float
) -> None:
    """Take a token for one ``method`` request at time ``now`` (seconds) from that
    method's bucket in ``buckets`` (one session's; a bucket starts full).

    Raises:
        McpError: -32603 "rate limit exceeded ...", with ``data = {"retryAfter":
            seconds}``, when the bucket is empty.  The caller answers the request with it.
    """
    bucket = buckets.get(method)
    if bucket is None:
        bucket = buckets[method] = TokenBucket()
    if not bucket.take(limit, now):
        wait = bucket.wait_time(limit)
        raise McpError(
            INTERNAL_ERROR,
            f"rate limit exceeded for {method}: at most {limit.per_second:g} per "
            f"second (bursts of {limit.burst}); retry in {wait:.2g} s",
            {"retryAfter": wait},
        )

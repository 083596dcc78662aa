"""The client's rate limits on what the server asks of it: sampling and elicitation
requests beyond the limit are refused before they reach the handler."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from mcp_ref import McpError
from mcp_ref import types as t
from mcp_ref._errors import INTERNAL_ERROR
from mcp_ref.client import DEFAULT_ELICITATION_RATE_LIMIT, RateLimit

from .test_client import LIMIT, memory_client, sampler

spec = pytest.mark.spec

SAMPLE = t.CreateMessageRequestParams(
    messages=[t.SamplingMessage(role="user", content=t.TextContent(text="hi"))], max_tokens=5
)
ELICIT = t.ElicitRequestFormParams(
    message="name?",
    requested_schema=t.ElicitRequestFormParamsRequestedSchema(
        properties={"name": t.StringSchema()}
    ),
)


async def _outcomes(server: Any, method: str, params: Any, n: int) -> list[Any]:
    """Send ``n`` requests at once; each one's result or McpError."""
    out: list[Any] = [None] * n

    async def one(i: int) -> None:
        try:
            out[i] = await server.send_request(method, params)
        except McpError as exc:
            out[i] = exc

    async with trio.open_nursery() as nursery:
        for i in range(n):
            nursery.start_soon(one, i)
    return out


@spec("2025-06-18/client/sampling#security-considerations.4")
async def test_sampling_beyond_the_limit_is_refused_with_retry_after(
    autojump_clock: trio.testing.MockClock,
) -> None:
    calls = 0

    def counting(params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        nonlocal calls
        calls += 1
        return sampler(params)

    limit = RateLimit(per_second=0.5, burst=2)
    with trio.fail_after(LIMIT):
        async with memory_client(sampling_handler=counting, sampling_rate_limit=limit) as (
            client,
            server,
            _,
        ):
            await client.ping()  # the server has seen notifications/initialized
            got = await _outcomes(server, "sampling/createMessage", SAMPLE, 3)
            refused = [r for r in got if isinstance(r, McpError)]
            assert len(refused) == 1 and calls == 2
            assert refused[0].code == INTERNAL_ERROR
            assert "rate limit exceeded for sampling/createMessage" in refused[0].message
            assert refused[0].data["retryAfter"] == pytest.approx(2.0, abs=0.1)
            await trio.sleep(2.0)  # a token is back
            result = await server.send_request("sampling/createMessage", SAMPLE)
            assert result.model == "test-model" and calls == 3


@spec("2025-06-18/client/elicitation#security-considerations.6")
async def test_elicitation_is_limited_by_default() -> None:
    calls = 0

    def accept(params: Any) -> t.ElicitResult:
        nonlocal calls
        calls += 1
        return t.ElicitResult(action="accept", content={"name": "bob"})

    burst = DEFAULT_ELICITATION_RATE_LIMIT.burst
    with trio.fail_after(LIMIT):
        async with memory_client(elicitation_handler=accept) as (client, server, _):
            await client.ping()
            got = await _outcomes(server, "elicitation/create", ELICIT, burst + 3)
    refused = [r for r in got if isinstance(r, McpError)]
    # The clock moves a little while they arrive: at least the 3 past the burst, at
    # most one more token earned meanwhile.
    assert 2 <= len(refused) <= 3
    assert calls == len(got) - len(refused)


async def test_no_limit_when_none() -> None:
    with trio.fail_after(LIMIT):
        async with memory_client(sampling_handler=sampler, sampling_rate_limit=None) as (
            client,
            server,
            _,
        ):
            await client.ping()
            got = await _outcomes(server, "sampling/createMessage", SAMPLE, 50)
    assert not any(isinstance(r, McpError) for r in got)

"""server/utilities/logging and server/utilities/completion.
(2025-06-18/server/utilities/logging, 2025-06-18/server/utilities/completion)"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing

from mcp_ref import INTERNAL_ERROR, INVALID_PARAMS, McpError
from mcp_ref import types as t
from mcp_ref.server import MAX_COMPLETION_INPUT, Context, LogPolicy, RateLimit, Server
from mcp_ref.server._completion import completion_of, make_completion
from mcp_ref.trio import memory_channel_pair

from ._server_harness import connect

spec = pytest.mark.spec


def logging_server(**kw: Any) -> Server:
    server = Server("log", "1", **kw)

    @server.tool()
    async def emit(ctx: Context, levels: list[str]) -> list[bool]:
        """Logs one message per level; returns which were sent."""
        return [await ctx.log(level, f"at {level}", logger="emit") for level in levels]

    return server


ALL = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


async def emitted(client: Any, levels: list[str]) -> list[bool]:
    result = await client.call_tool("emit", {"levels": levels})
    sent: list[bool] = result.structured_content["result"]
    return sent


@spec("2025-06-18/server/utilities/logging#capabilities.1")
async def test_logging_capability_and_no_logs_without_it() -> None:
    with trio.fail_after(5):
        async with connect(logging_server()) as client:
            assert client.init.capabilities.logging == {}
        async with connect(logging_server(logging=False)) as client:
            assert client.init.capabilities.logging is None
            assert await emitted(client, ["emergency"]) == [False]
            await trio.testing.wait_all_tasks_blocked()
            assert client.notes("notifications/message") == []


@spec("2025-06-18/server/utilities/logging#setting-log-level.1")
async def test_set_level_filters_per_session() -> None:
    server = logging_server()
    with trio.fail_after(5):
        async with connect(server) as a, connect(server) as b:
            # The default level is "info".
            assert await emitted(a, ["debug", "info"]) == [False, True]
            assert (
                await a.request("logging/setLevel", t.SetLevelRequestParams(level="error"))
                == t.Result()
            )
            await b.request("logging/setLevel", t.SetLevelRequestParams(level="debug"))
            assert await emitted(a, ALL) == [False] * 4 + [True] * 4
            assert await emitted(b, ALL) == [True] * 8
            a_logs = await a.wait_for("notifications/message", 5)
            b_logs = await b.wait_for("notifications/message", 8)
    assert [n.level for n in a_logs] == ["info", "error", "critical", "alert", "emergency"]
    assert [n.level for n in b_logs] == ALL
    assert b_logs[0] == t.LoggingMessageNotificationParams(
        level="debug", data="at debug", logger="emit"
    )


@spec("2025-06-18/server/utilities/logging#error-handling.1")
async def test_an_unknown_level_is_32602() -> None:
    """Sent as raw JSON: our own client would refuse to send it."""
    client_end, server_end = memory_channel_pair()
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "banana"}},
    ]
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(logging_server().serve, server_end)
            for message in messages:
                await client_end.send(json.dumps(message).encode())
            replies = [json.loads(await client_end.receive()) for _ in range(2)]
            await client_end.aclose()
    assert replies[0]["result"]["protocolVersion"] == "2025-06-18"
    assert replies[1]["id"] == 2 and replies[1]["error"]["code"] == INVALID_PARAMS


def test_log_policy_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="unknown log level"):
        LogPolicy("verbose")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        LogPolicy(rate=0)


async def test_unknown_levels_from_a_handler_fail_the_tool() -> None:
    with trio.fail_after(5):
        async with connect(logging_server()) as client:
            result = await client.call_tool("emit", {"levels": ["loud"]})
    assert result.is_error
    assert "unknown log level" in result.content[0].text  # type: ignore[union-attr]


@spec(
    "2025-06-18/server/utilities/logging#implementation-considerations.1",
    "2025-06-18/server/utilities/logging#security.2",
)
async def test_logs_are_rate_limited_per_session(mock_clock: trio.testing.MockClock) -> None:
    server = logging_server(log_rate=1.0, log_burst=2)
    with trio.fail_after(5):
        async with connect(server) as client:
            assert await emitted(client, ["info"] * 4) == [True, True, False, False]
            mock_clock.jump(1.0)  # one token comes back
            assert await emitted(client, ["info", "info"]) == [True, False]
            logs = await client.wait_for("notifications/message", 4)
            await trio.testing.wait_all_tasks_blocked()
            assert len(client.notes("notifications/message")) == 4
    assert [n.level for n in logs] == ["info", "info", "warning", "info"]
    assert logs[2].data == "2 log message(s) dropped by the rate limit"


# -------------------------------------------------------------------- completion


def completion_server(**kw: Any) -> Server:
    server = Server("complete", "1", **kw)

    @server.prompt()
    def order(food: str, drink: str = "water") -> str:
        """Order something."""
        return f"{food} and {drink}"

    @server.prompt()
    def other(x: str) -> str:
        """Another prompt, without completions."""
        return x

    @server.completion(prompt="order", argument="drink")
    async def drinks(value: str, arguments: dict[str, str], ctx: Context) -> list[str]:
        menu = ["wine", "water", "whisky"] if arguments.get("food") == "steak" else ["water", "tea"]
        return [d for d in menu if d.startswith(value)]

    server.add_completion(prompt="order", argument="food", values=["Steak", "Salad", "soup"])

    @server.resource_template("test://numbers/{n}")
    def numbers(n: str) -> str:
        """A number."""
        return n

    server.add_completion(
        template="test://numbers/{n}", argument="n", fn=lambda value: [str(i) for i in range(250)]
    )
    return server


async def complete(
    client: Any,
    ref: t.PromptReference | t.ResourceTemplateReference,
    name: str,
    value: str,
    context: dict[str, str] | None = None,
) -> t.CompleteResultCompletion:
    params = t.CompleteRequestParams(
        ref=ref,
        argument=t.CompleteRequestParamsArgument(name=name, value=value),
        context=t.CompleteRequestParamsContext(arguments=context) if context else None,
    )
    result: t.CompleteResult = await client.request("completion/complete", params)
    return result.completion


@spec("2025-06-18/server/utilities/completion#capabilities.1")
async def test_completions_capability_follows_registrations() -> None:
    with trio.fail_after(5):
        async with connect(completion_server()) as client:
            assert client.init.capabilities.completions == {}
        async with connect(logging_server()) as client:
            assert client.init.capabilities.completions is None


async def test_completion_values() -> None:
    order = t.PromptReference(name="order")
    with trio.fail_after(5):
        async with connect(completion_server()) as client:
            food = await complete(client, order, "food", "s")
            plain = await complete(client, order, "drink", "w")
            steak = await complete(client, order, "drink", "w", {"food": "steak"})
            none = await complete(client, t.PromptReference(name="other"), "x", "a")
            many = await complete(
                client, t.ResourceTemplateReference(uri="test://numbers/{n}"), "n", ""
            )
    assert food == t.CompleteResultCompletion(
        values=["Steak", "Salad", "soup"], has_more=False, total=3
    )
    assert plain.values == ["water"]
    assert steak.values == ["wine", "water", "whisky"]
    assert none == t.CompleteResultCompletion(values=[], has_more=False, total=0)
    # Spec: at most 100 values per answer, with hasMore and the total.
    assert many.values == [str(i) for i in range(100)]
    assert (many.has_more, many.total) == (True, 250)


@spec("2025-06-18/server/utilities/completion#error-handling.1")
@pytest.mark.parametrize(
    ("ref", "name", "fault"),
    [
        (t.PromptReference(name="nope"), "x", "Unknown prompt: nope"),
        (t.PromptReference(name="order"), "size", "has no argument 'size'"),
        (t.ResourceTemplateReference(uri="test://nope/{n}"), "n", "Unknown resource template"),
        (t.ResourceTemplateReference(uri="test://numbers/{n}"), "m", "has no variable 'm'"),
    ],
)
async def test_bad_references_are_32602(
    ref: t.PromptReference | t.ResourceTemplateReference, name: str, fault: str
) -> None:
    with trio.fail_after(5):
        async with connect(completion_server()) as client:
            with pytest.raises(McpError) as info:
                await complete(client, ref, name, "")
    assert info.value.code == INVALID_PARAMS
    assert fault in info.value.message


@spec(
    "2025-06-18/server/utilities/completion#security.1",
    "2025-06-18/server/utilities/completion#implementation-considerations.1",
)
async def test_completion_inputs_are_validated_and_rate_limited() -> None:
    order = t.PromptReference(name="order")
    server = completion_server(
        rate_limits={"completion/complete": RateLimit(per_second=1, burst=3)}
    )
    with trio.fail_after(5):
        async with connect(server) as client:
            with pytest.raises(McpError) as info:
                await complete(client, order, "food", "x" * (MAX_COMPLETION_INPUT + 1))
            assert info.value.code == INVALID_PARAMS
            await complete(client, order, "food", "")
            await complete(client, order, "food", "")
            with pytest.raises(McpError) as limited:
                await complete(client, order, "food", "")
    assert limited.value.code == INTERNAL_ERROR
    assert "rate limit exceeded for completion/complete" in limited.value.message


def test_completion_registration_errors() -> None:
    with pytest.raises(ValueError, match="exactly one of prompt"):
        make_completion(argument="a", values=[])
    with pytest.raises(ValueError, match="exactly one of a function"):
        make_completion(prompt="p", argument="a")
    with pytest.raises(TypeError, match="cannot be filled"):
        make_completion(prompt="p", argument="a", fn=lambda query: [])
    with pytest.raises(TypeError, match="strings"):
        completion_of([1, 2])


# Issue 13: each clause's tests kill the mutants of its lines.


@spec("2025-06-18/server/utilities/completion#capabilities.1")
async def test_a_server_declaring_completions_declares_them_before_any_is_registered() -> None:
    with trio.fail_after(5):
        async with connect(Server("c", "1", declare=("completions",))) as client:
            assert client.init.capabilities.completions == {}
        async with connect(Server("c", "1", declare=("tools",))) as client:
            assert client.init.capabilities.completions is None


@spec("2025-06-18/server/utilities/logging#capabilities.1")
async def test_log_messages_are_sent_exactly_when_logging_was_declared() -> None:
    """A server declaring ``logging`` sends the message (and the client gets it); one
    that did not declare it sends none."""
    with trio.fail_after(5):
        async with connect(logging_server()) as client:
            assert client.init.capabilities.logging == {}
            assert await emitted(client, ["error"]) == [True]
            (note,) = await client.wait_for("notifications/message")
            assert (note.level, note.data) == ("error", "at error")
        async with connect(logging_server(logging=False)) as client:
            assert await emitted(client, ["error"]) == [False]


@spec("2025-06-18/server/utilities/completion#security.1")
async def test_completion_input_bounds_are_inclusive() -> None:
    """A value of exactly ``MAX_COMPLETION_INPUT`` characters and a context of exactly
    64 arguments are completed; one character or one argument more is refused -32602."""
    order = t.PromptReference(name="order")
    full = {f"a{i}": "x" for i in range(64)}
    with trio.fail_after(5):
        async with connect(completion_server()) as client:
            got = await complete(client, order, "food", "s" * MAX_COMPLETION_INPUT)
            assert got.values == []
            got = await complete(client, order, "food", "s", full)
            assert got.values == ["Steak", "Salad", "soup"]
            for value, context in (
                ("s" * (MAX_COMPLETION_INPUT + 1), None),
                ("s", {**full, "a64": "x"}),
            ):
                with pytest.raises(McpError) as info:
                    await complete(client, order, "food", value, context)
                assert info.value.code == INVALID_PARAMS

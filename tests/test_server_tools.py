"""server/tools: registration, generated schemas, strict arguments, results, errors,
sync and async handlers, the context, list changes.  (2025-06-18/server/tools)"""

from __future__ import annotations

import enum
import json
import threading
from typing import Annotated, Any, Literal, TypedDict

import attrs
import jsonschema
import pytest
import trio
import trio.testing

from mcp_ref import INTERNAL_ERROR, INVALID_PARAMS, LocalProtocolError, McpError
from mcp_ref import types as t
from mcp_ref.server import Context, RateLimit, Server, ToolError, image, schema_for
from mcp_ref.server import _tools as tools_module

from ._server_harness import connect

spec = pytest.mark.spec


class Color(enum.Enum):
    """A colour."""

    RED = "red"
    GREEN = "green"


@attrs.frozen
class Point:
    """A point on a plane.

    Attributes:
        x: the horizontal coordinate.
        y: the vertical coordinate.
    """

    x: int
    y: int = 0


class Options(TypedDict, total=False):
    verbose: bool
    depth: int


@attrs.frozen
class Summary:
    count: int
    names: list[str]


def typed_tool(
    name: str,
    count: int,
    ratio: float = 0.5,
    flag: bool = False,
    tags: list[str] | None = None,
    scores: dict[str, float] | None = None,
    mode: Literal["fast", "slow"] = "fast",
    color: Color = Color.RED,
    where: Point | None = None,
    options: Options | None = None,
    note: Annotated[str, "a free note"] = "",
) -> Summary:
    """Summarize the arguments.

    Args:
        name: who asks.
        count: how many.
            Continued on a second line.
        ratio: a fraction.
    """
    return Summary(count=count, names=[name, mode, color.value])


def server_with(*fns: Any, **server_kw: Any) -> Server:
    server = Server("test", "1.0", **server_kw)
    for fn in fns:
        server.add_tool(fn)
    return server


# --------------------------------------------------------------------------- schemas


def test_input_schema_is_generated_from_annotations_and_docstring() -> None:
    tool = server_with(typed_tool).tools["typed_tool"].tool
    assert tool.description == "Summarize the arguments."
    schema = tool.input_schema
    assert schema["type"] == "object"
    assert schema["required"] == ["name", "count"]
    assert schema["additionalProperties"] is False
    props = schema["properties"]
    assert props["name"] == {"type": "string", "description": "who asks."}
    assert props["count"] == {
        "type": "integer",
        "description": "how many. Continued on a second line.",
    }
    assert props["ratio"] == {"type": "number", "description": "a fraction.", "default": 0.5}
    assert props["flag"] == {"type": "boolean", "default": False}
    assert props["tags"] == {
        "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
        "default": None,
    }
    assert props["scores"]["anyOf"][0] == {
        "type": "object",
        "additionalProperties": {"type": "number"},
    }
    assert props["mode"] == {"type": "string", "enum": ["fast", "slow"], "default": "fast"}
    assert props["color"] == {
        "title": "Color",
        "type": "string",
        "enum": ["red", "green"],
        "description": "A colour.",
        "default": "red",
    }
    point = props["where"]["anyOf"][0]
    assert point["required"] == ["x"] and point["additionalProperties"] is False
    assert point["properties"]["x"] == {
        "type": "integer",
        "description": "the horizontal coordinate.",
    }
    assert point["properties"]["y"]["default"] == 0
    options = props["options"]["anyOf"][0]
    assert options["properties"] == {"verbose": {"type": "boolean"}, "depth": {"type": "integer"}}
    assert "required" not in options
    assert props["note"] == {"type": "string", "description": "a free note", "default": ""}
    # The generated schema is itself a valid JSON Schema (2020-12).
    jsonschema.Draft202012Validator.check_schema(schema)


def test_output_schema_for_a_typed_return() -> None:
    tool = server_with(typed_tool).tools["typed_tool"].tool
    assert tool.output_schema == {
        "type": "object",
        "title": "Summary",
        "properties": {
            "count": {"type": "integer"},
            "names": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["count", "names"],
        "additionalProperties": False,
    }


def test_non_object_returns_are_wrapped_and_content_returns_are_not_structured() -> None:
    def number() -> int:
        """A number."""
        return 1

    def words() -> str:
        """Words."""
        return "w"

    def picture() -> t.ImageContent:
        """A picture."""
        return image(b"x", "image/png")

    def mixed() -> list[t.ContentBlock]:
        """Mixed."""
        return []

    def nothing() -> None:
        """Nothing."""

    def names() -> list[str]:
        """Data, not content."""
        return []

    server = server_with(number, words, picture, mixed, nothing, names)
    assert server.tools["names"].tool.output_schema == {
        "type": "object",
        "properties": {"result": {"type": "array", "items": {"type": "string"}}},
        "required": ["result"],
    }
    assert server.tools["number"].tool.output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    for name in ("words", "picture", "mixed", "nothing"):
        assert server.tools[name].tool.output_schema is None


def test_context_parameter_is_not_in_the_schema() -> None:
    async def uses_context(ctx: Context, text: str) -> str:
        """Uses the context."""
        return text

    schema = server_with(uses_context).tools["uses_context"].tool.input_schema
    assert list(schema["properties"]) == ["text"]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"name": "bad name"}, ValueError, "invalid tool name"),
        ({"name": "x" * 129}, ValueError, "invalid tool name"),
        ({"input_schema": {"type": "array"}}, ValueError, "type"),
        ({"output_schema": {"type": "string"}}, ValueError, "type"),
        ({"input_schema": {"type": "object", "properties": 5}}, ValueError, "invalid input_schema"),
        ({"annotations": {"readOnlyHint": "yes"}}, ValueError, "annotations"),
    ],
)
def test_bad_registrations_are_refused(kwargs: dict[str, Any], error: type, match: str) -> None:
    def fine(**kw: Any) -> str:
        """Fine."""
        return ""

    with pytest.raises(error, match=match):
        Server("s", "1").add_tool(fine, **kwargs)


def test_unsupported_signatures_are_refused() -> None:
    server = Server("s", "1")

    def positional(a: int, /) -> str:
        return ""

    def raw_bytes(data: bytes) -> str:
        return ""

    with pytest.raises(TypeError, match="positional-only"):
        server.add_tool(positional)
    with pytest.raises(TypeError, match="cannot describe"):
        server.add_tool(raw_bytes)

    def twice(a: int) -> str:
        """Twice."""
        return ""

    server.add_tool(twice)
    with pytest.raises(ValueError, match="already registered"):
        server.add_tool(twice)
    server.add_tool(twice, replace=True)


@attrs.frozen
class Node:
    children: list[Node]


def test_recursive_types_are_refused() -> None:
    with pytest.raises(TypeError, match="recursive"):
        schema_for(Node)


def test_decorator_forms_return_the_function() -> None:
    server = Server("s", "1")

    @server.tool
    def bare() -> str:
        """Bare."""
        return "bare"

    @server.tool("renamed", title="Renamed")
    def original() -> str:
        """Renamed."""
        return ""

    assert bare() == "bare"
    assert set(server.tools) == {"bare", "renamed"}
    assert server.tools["renamed"].tool.title == "Renamed"


# ---------------------------------------------------------------- calling: arguments


@spec("2025-06-18/server/tools#security-considerations.1")
async def test_arguments_are_converted_strictly() -> None:
    seen: dict[str, Any] = {}

    def record(**kw: Any) -> None:
        seen.update(kw)

    def convert(count: int, color: Color, where: Point, tags: set[str], ratio: float) -> str:
        """Convert."""
        record(count=count, color=color, where=where, tags=tags, ratio=ratio)
        return "ok"

    with trio.fail_after(5):
        async with connect(server_with(convert)) as client:
            result = await client.call_tool(
                "convert",
                {
                    "count": 3,
                    "color": "green",
                    "where": {"x": 1},
                    "tags": ["a", "a", "b"],
                    "ratio": 2,
                },
            )
    assert not result.is_error
    assert seen == {
        "count": 3,
        "color": Color.GREEN,
        "where": Point(x=1, y=0),
        "tags": {"a", "b"},
        "ratio": 2.0,
    }
    assert isinstance(seen["ratio"], float)


@spec("2025-06-18/server/tools#security-considerations.1")
@pytest.mark.parametrize(
    ("arguments", "fault"),
    [
        (
            {"count": "5", "color": "red", "where": {"x": 1}},
            "expected an integer, got a string @ $.count",
        ),
        (
            {"count": True, "color": "red", "where": {"x": 1}},
            "expected an integer, got a boolean @ $.count",
        ),
        (
            {"count": 1, "color": "blue", "where": {"x": 1}},
            "expected one of ['red', 'green'], got 'blue' @ $.color",
        ),
        (
            {"count": 1, "color": "red", "where": {"x": "1"}},
            "expected an integer, got a string @ $.where.x",
        ),
        ({"count": 1, "color": "red", "where": {"x": 1, "z": 2}}, "unknown field(s): z @ $.where"),
        ({"color": "red", "where": {"x": 1}}, "missing required argument @ $.count"),
        (
            {"count": 1, "color": "red", "where": {"x": 1}, "extra": 1},
            "unknown argument(s): extra @ $",
        ),
    ],
)
async def test_invalid_arguments_are_tool_execution_errors(
    arguments: dict[str, Any], fault: str
) -> None:
    """2025-11-25: invalid arguments are reported in the result (isError), naming the
    fault, so a model can correct itself."""

    def strict(count: int, color: Color, where: Point) -> str:
        """Strict."""
        raise AssertionError("must not be called")

    with trio.fail_after(5):
        async with connect(server_with(strict)) as client:
            result = await client.call_tool("strict", arguments)
    assert result.is_error is True
    text = result.content[0]
    assert isinstance(text, t.TextContent)
    assert text.text.startswith("Invalid arguments for tool strict: ")
    assert fault in text.text


async def test_unknown_tool_is_a_protocol_error() -> None:
    with trio.fail_after(5):
        async with connect(server_with(typed_tool)) as client:
            with pytest.raises(McpError) as info:
                await client.call_tool("no_such_tool", {})
    assert info.value.code == INVALID_PARAMS
    assert "no_such_tool" in info.value.message


async def test_missing_arguments_object_is_empty_arguments() -> None:
    def no_args() -> str:
        """No arguments."""
        return "fine"

    with trio.fail_after(5):
        async with connect(server_with(no_args)) as client:
            result = await client.call_tool("no_args", None)
    assert result.content == [t.TextContent(text="fine")]


# ---------------------------------------------------------------- calling: results


@spec("2025-06-18/server/tools#output-schema.1")
async def test_structured_results_conform_to_the_output_schema() -> None:
    with trio.fail_after(5):
        async with connect(server_with(typed_tool)) as client:
            result = await client.call_tool("typed_tool", {"name": "ann", "count": 2})
            tools = await client.request("tools/list")
    schema = tools.tools[0].output_schema
    assert result.structured_content == {"count": 2, "names": ["ann", "fast", "red"]}
    jsonschema.validate(result.structured_content, schema)
    # Spec: the same JSON as a text block, for clients that do not read structuredContent.
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]


@spec("2025-06-18/server/tools#output-schema.1")
async def test_a_result_that_breaks_its_declared_type_is_never_sent_as_structured() -> None:
    def liar() -> int:
        """Claims an int."""
        return "not an int"  # type: ignore[return-value]

    def hand(**kw: Any) -> dict[str, Any]:
        return {"value": "text"}

    server = server_with(liar)
    server.add_tool(
        hand,
        description="Hand-written output schema.",
        output_schema={
            "type": "object",
            "properties": {"value": {"type": "integer"}},
            "required": ["value"],
        },
    )
    with trio.fail_after(5):
        async with connect(server) as client:
            bad_type = await client.call_tool("liar", {})
            bad_schema = await client.call_tool("hand", {})
    for result in (bad_type, bad_schema):
        assert result.is_error is True
        assert result.structured_content is None
        assert "produced an invalid result" in result.content[0].text  # type: ignore[union-attr]


async def test_int_results_are_wrapped() -> None:
    def number() -> int:
        """A number."""
        return 42

    with trio.fail_after(5):
        async with connect(server_with(number)) as client:
            result = await client.call_tool("number", {})
    assert result.structured_content == {"result": 42}
    assert result.content == [t.TextContent(text='{"result": 42}')]


async def test_content_results() -> None:
    def many() -> list[t.ContentBlock]:
        """Many."""
        return [t.TextContent(text="a"), image(b"\x89PNG", "image/png")]

    def calls() -> t.CallToolResult:
        """A whole result."""
        return t.CallToolResult(content=[], is_error=False)

    def wrong() -> list[t.ContentBlock]:
        """Returns something that is not content."""
        return [42]  # type: ignore[list-item]

    with trio.fail_after(5):
        async with connect(server_with(many, calls, wrong)) as client:
            many_result = await client.call_tool("many", {})
            calls_result = await client.call_tool("calls", {})
            wrong_result = await client.call_tool("wrong", {})
    assert many_result.content[1] == t.ImageContent(data="iVBORw==", mime_type="image/png")
    assert calls_result == t.CallToolResult(content=[], is_error=False)
    assert wrong_result.is_error is True


async def test_exceptions_are_tool_execution_errors_but_mcp_errors_are_not() -> None:
    def tool_error() -> str:
        """Fails on purpose."""
        raise ToolError("the service is down")

    def crash() -> str:
        """Crashes."""
        raise ValueError("boom")

    def protocol() -> str:
        """Raises an MCP error."""
        raise McpError(INVALID_PARAMS, "go away", {"why": "test"})

    with trio.fail_after(5):
        async with connect(server_with(tool_error, crash, protocol)) as client:
            a = await client.call_tool("tool_error", {})
            b = await client.call_tool("crash", {})
            with pytest.raises(McpError) as info:
                await client.call_tool("protocol", {})
    assert a == t.CallToolResult(content=[t.TextContent(text="the service is down")], is_error=True)
    assert b == t.CallToolResult(content=[t.TextContent(text="ValueError: boom")], is_error=True)
    assert (info.value.code, info.value.data) == (INVALID_PARAMS, {"why": "test"})


# ---------------------------------------------------------- hand-written schemas

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {"n": {"type": "integer", "minimum": 1}, "s": {"type": "string"}},
    "required": ["n"],
    "additionalProperties": False,
}


def hand_written(**arguments: Any) -> str:
    return json.dumps(arguments, sort_keys=True)


async def test_hand_written_input_schema_is_published_and_enforced() -> None:
    server = Server("s", "1")
    server.add_tool(hand_written, input_schema=SCHEMA, description="Hand-written.")
    assert server.tools["hand_written"].tool.input_schema == SCHEMA
    with trio.fail_after(5):
        async with connect(server) as client:
            ok = await client.call_tool("hand_written", {"n": 2, "s": "x"})
            low = await client.call_tool("hand_written", {"n": 0})
            extra = await client.call_tool("hand_written", {"n": 1, "q": 1})
    assert ok.content == [t.TextContent(text='{"n": 2, "s": "x"}')]
    assert low.is_error and "@ $.n" in low.content[0].text  # type: ignore[union-attr]
    assert extra.is_error and "'q'" in extra.content[0].text  # type: ignore[union-attr]


async def test_without_jsonschema_only_the_top_level_is_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tools_module, "_jsonschema", None)
    server = Server("s", "1")
    server.add_tool(hand_written, input_schema=SCHEMA, description="Hand-written.")
    assert server.tools["hand_written"].input_validator is None
    with trio.fail_after(5):
        async with connect(server) as client:
            missing = await client.call_tool("hand_written", {})
            extra = await client.call_tool("hand_written", {"n": 1, "q": 1})
            unchecked = await client.call_tool("hand_written", {"n": 0})
    assert missing.is_error and "missing required argument @ $.n" in missing.content[0].text  # type: ignore[union-attr]
    assert extra.is_error and "unknown argument(s): q" in extra.content[0].text  # type: ignore[union-attr]
    assert not unchecked.is_error  # "minimum" needs jsonschema


# ------------------------------------------------------------ sync and async handlers


async def test_sync_tools_run_in_threads_and_do_not_block_other_requests() -> None:
    release = threading.Event()
    threads: dict[str, int] = {}

    def blocking() -> str:
        """Blocks until released."""
        threads["blocking"] = threading.get_ident()
        release.wait(5)
        return "released"

    def inline() -> str:
        """Trivially fast."""
        threads["inline"] = threading.get_ident()
        return "inline"

    server = server_with(blocking)
    server.add_tool(inline, blocking=False)
    with trio.fail_after(5):
        async with connect(server) as client, trio.open_nursery() as nursery:
            results: list[t.CallToolResult] = []

            async def call_blocking() -> None:
                results.append(await client.call_tool("blocking", {}))

            nursery.start_soon(call_blocking)
            # The blocked thread does not stop this request from being answered.
            assert (await client.call_tool("inline", {})).content == [t.TextContent(text="inline")]
            release.set()
    assert results[0].content == [t.TextContent(text="released")]
    assert threads["inline"] == threading.get_ident()
    assert threads["blocking"] != threading.get_ident()


async def test_cancelling_a_sync_tool_abandons_its_thread() -> None:
    started = threading.Event()
    release = threading.Event()

    def stuck() -> str:
        """Never finishes on its own."""
        started.set()
        release.wait(5)
        return "late"

    def quick() -> str:
        """Quick."""
        return "quick"

    with trio.fail_after(5):
        async with connect(server_with(stuck, quick)) as client:
            with trio.move_on_after(0.01) as scope:
                await client.call_tool("stuck", {})  # the client cancels it
            assert scope.cancelled_caught
            await trio.to_thread.run_sync(started.wait)
            # The server carries on while the abandoned thread still sleeps.
            assert (await client.call_tool("quick", {})).content == [t.TextContent(text="quick")]
            release.set()


@spec("2025-06-18/basic/utilities/cancellation#behavior-requirements.3")
async def test_cancelling_an_async_tool_stops_it() -> None:
    entered = trio.Event()
    stopped = trio.Event()

    async def forever(ctx: Context) -> str:
        """Waits forever."""
        entered.set()
        try:
            await trio.sleep_forever()
        finally:
            assert ctx.cancelled
            stopped.set()
        return ""

    with trio.fail_after(5):
        async with connect(server_with(forever)) as client:
            async with trio.open_nursery() as nursery:

                async def call() -> None:
                    await client.call_tool("forever", {})

                nursery.start_soon(call)
                await entered.wait()
                nursery.cancel_scope.cancel()  # sends notifications/cancelled
            await stopped.wait()


# ---------------------------------------------------------------------- the context


@spec("2025-06-18/basic/utilities/progress#progress-flow.4")
async def test_context_progress_and_logging() -> None:
    async def work(ctx: Context) -> str:
        """Works."""
        await ctx.report_progress(1, 3, "one")
        await ctx.report_progress(3, 3)
        with pytest.raises(LocalProtocolError, match="increase"):  # not sent: no increase
            await ctx.report_progress(3, 3)
        await ctx.log("info", {"done": True}, logger="work")
        return "done"

    progress: list[Any] = []
    with trio.fail_after(5):
        async with connect(server_with(work)) as client:
            result = await client.session.send_request(
                "tools/call",
                t.CallToolRequestParams(name="work", arguments={}),
                on_progress=progress.append,
            )
            logs = await client.wait_for("notifications/message")
    assert result.content == [t.TextContent(text="done")]
    assert [(p.progress, p.total, p.message) for p in progress] == [(1, 3, "one"), (3, 3, None)]
    assert logs[0] == t.LoggingMessageNotificationParams(
        level="info", data={"done": True}, logger="work"
    )


async def test_context_sampling_and_elicitation_reach_the_client() -> None:
    async def ask(ctx: Context) -> str:
        """Asks the client."""
        sampled = await ctx.sample("hello?", max_tokens=5)
        answer = await ctx.elicit(
            "name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
        assert isinstance(sampled.content, t.TextContent)
        return f"{sampled.content.text} / {answer.action} / {answer.content}"

    responders = {
        "sampling/createMessage": lambda p: t.CreateMessageResult(
            role="assistant",
            content=t.TextContent(text=f"got {p.messages[0].content.text}"),
            model="m",
        ),
        "elicitation/create": lambda p: t.ElicitResult(action="accept", content={"name": "Ann"}),
    }
    with trio.fail_after(5):
        async with connect(server_with(ask), responders=responders) as client:
            result = await client.call_tool("ask", {})
    assert result.content == [t.TextContent(text="got hello? / accept / {'name': 'Ann'}")]
    methods = [m for m, _ in client.requests]
    assert methods == ["sampling/createMessage", "elicitation/create"]
    assert client.requests[0][1].max_tokens == 5


async def test_requests_to_a_client_without_the_capability_fail_the_tool() -> None:
    async def ask(ctx: Context) -> str:
        """Asks for sampling."""
        assert not ctx.client_supports("sampling")
        await ctx.sample("hello?")
        return "unreachable"

    with trio.fail_after(5):
        async with connect(server_with(ask), capabilities=t.ClientCapabilities()) as client:
            result = await client.call_tool("ask", {})
    assert result.is_error is True
    assert "LocalProtocolError" in result.content[0].text  # type: ignore[union-attr]


# ------------------------------------------------------------- listing and changes


@spec("2025-06-18/server/tools#capabilities.1")
async def test_tools_capability_follows_registrations() -> None:
    with trio.fail_after(5):
        async with connect(server_with(typed_tool)) as client:
            assert client.init.capabilities.tools == t.ServerCapabilitiesTools(list_changed=True)
        async with connect(Server("empty", "1")) as client:
            assert client.init.capabilities.tools is None
            with pytest.raises(LocalProtocolError, match="not negotiated"):
                await client.request("tools/list")  # so the client cannot even ask
        async with connect(Server("declared", "1", declare=["tools"])) as client:
            assert client.init.capabilities.tools is not None
            assert (await client.request("tools/list")).tools == []


@spec(
    "2025-06-18/server/utilities/pagination#error-handling.1",
    "2025-06-18/server/utilities/pagination#implementation-guidelines.1",
)
async def test_tools_list_is_paginated() -> None:
    server = Server("s", "1", page_size=2)
    for i in range(5):
        server.add_tool(lambda: "", name=f"tool{i}", description="d")
    names: list[str] = []
    with trio.fail_after(5):
        async with connect(server) as client:
            cursor = None
            for _ in range(5):
                page = await client.request("tools/list", t.PaginatedRequestParams(cursor=cursor))
                names += [tool.name for tool in page.tools]
                cursor = page.next_cursor
                if cursor is None:
                    break
            with pytest.raises(McpError) as info:
                await client.request("tools/list", t.PaginatedRequestParams(cursor="bogus"))
    assert names == [f"tool{i}" for i in range(5)]
    assert info.value.code == INVALID_PARAMS


@spec("2025-06-18/server/tools#list-changed-notification.1")
async def test_list_changed_is_sent_when_tools_change() -> None:
    server = server_with(typed_tool)
    with trio.fail_after(5):
        async with connect(server) as client:
            server.add_tool(lambda: "", name="late", description="Added later.")
            await client.wait_for("notifications/tools/list_changed", 1)
            server.remove_tool("late")
            await client.wait_for("notifications/tools/list_changed", 2)
            names = [tool.name for tool in (await client.request("tools/list")).tools]
    assert names == ["typed_tool"]


async def test_list_changed_from_a_worker_thread() -> None:
    server = Server("s", "1")

    def add_another() -> str:
        """Registers a tool from a worker thread."""
        server.add_tool(lambda: "", name="from_thread", description="d")
        return "added"

    server.add_tool(add_another)
    with trio.fail_after(5):
        async with connect(server) as client:
            await client.call_tool("add_another", {})
            await client.wait_for("notifications/tools/list_changed")


@spec("2025-06-18/server/prompts#implementation-considerations.3")
async def test_no_list_changed_for_a_list_the_session_did_not_negotiate() -> None:
    server = Server("s", "1")
    with trio.fail_after(5):
        async with connect(server) as client:
            server.add_tool(lambda: "", name="late", description="d")
            server.add_prompt(lambda: "p", name="prompt")  # prompts were not declared either
            # A round trip lets the notifier run; nothing may have been sent.
            await client.request("ping")
            await trio.testing.wait_all_tasks_blocked()
            assert client.notifications == []


async def test_tool_call_rate_limit() -> None:
    server = server_with(typed_tool, rate_limits={"tools/call": RateLimit(per_second=1, burst=2)})
    args = {"name": "n", "count": 1}
    with trio.fail_after(5):
        async with connect(server) as client:
            await client.call_tool("typed_tool", args)
            await client.call_tool("typed_tool", args)
            with pytest.raises(McpError) as info:
                await client.call_tool("typed_tool", args)
    assert info.value.code == INTERNAL_ERROR
    assert 0 < info.value.data["retryAfter"] <= 1  # type: ignore[index]


async def test_a_sync_tool_uses_the_context_through_trio_from_thread() -> None:
    def threaded(ctx: Context) -> str:
        """Logs from its worker thread."""
        sent = trio.from_thread.run(ctx.log, "warning", "from a thread")
        return f"sent={sent}"

    with trio.fail_after(5):
        async with connect(server_with(threaded)) as client:
            result = await client.call_tool("threaded", {})
            (log,) = await client.wait_for("notifications/message")
    assert result.content == [t.TextContent(text="sent=True")]
    assert log.data == "from a thread"


@spec("2025-06-18/basic/utilities/progress#implementation-notes.2")
async def test_context_progress_is_rate_limited(autojump_clock: trio.testing.MockClock) -> None:
    sent: list[bool] = []

    async def work(ctx: Context) -> str:
        """Reports progress faster than the limit."""
        for value in (1, 2, 3):  # no time passes: only the first goes
            sent.append(await ctx.report_progress(value))
        await trio.sleep(Context.MIN_PROGRESS_INTERVAL)
        sent.append(await ctx.report_progress(4))
        sent.append(await ctx.report_progress(5, 5))  # final: always sent
        return "done"

    progress: list[Any] = []
    with trio.fail_after(5):
        async with connect(server_with(work)) as client:
            await client.session.send_request(
                "tools/call",
                t.CallToolRequestParams(name="work", arguments={}),
                on_progress=progress.append,
            )
    assert sent == [True, False, False, True, True]
    assert [p.progress for p in progress] == [1, 4, 5]


# Issue 13: each clause's tests kill the mutants of its lines.


@spec("2025-06-18/server/tools#security-considerations.1")
async def test_tool_calls_are_rate_limited_per_session(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """``rate_limits={"tools/call": ...}``: a session gets its burst of calls, the next
    is refused -32603 naming tools/call with ``retryAfter``, another session still has
    its own burst, and the bucket refills with time."""

    async def ping() -> str:  # async: a worker thread would let the clock jump
        """Answer pong."""
        return "pong"

    server = server_with(ping, rate_limits={"tools/call": RateLimit(per_second=1, burst=2)})
    with trio.fail_after(100):
        async with connect(server) as a, connect(server) as b:
            for _ in range(2):
                assert not (await a.call_tool("ping")).is_error
            with pytest.raises(McpError) as info:
                await a.call_tool("ping")
            assert info.value.code == INTERNAL_ERROR
            assert "rate limit exceeded for tools/call" in info.value.message
            assert isinstance(info.value.data, dict) and info.value.data["retryAfter"] > 0
            assert not (await b.call_tool("ping")).is_error
            autojump_clock.jump(info.value.data["retryAfter"])  # a token is back
            assert not (await a.call_tool("ping")).is_error


@spec(
    "2025-11-25/server/tools#tool.1",
    "2025-11-25/basic/index#schema-validation.1",
    "2025-11-25/basic/index#implementation-requirements.1",
    "2025-11-25/basic/index#implementation-requirements.2",
    "2025-11-25/basic/index#implementation-requirements.3",
)
async def test_input_schemas_in_the_2025_11_25_handshake_era() -> None:
    """Hand-written input schemas: an object schema valid in its dialect (2020-12 when
    none is declared), an unknown dialect refused with an error naming it, and the
    arguments of a 2025-11-25 session validated by the dialect's rules."""
    server = Server("schemas", "1")
    bad: Any
    for bad in ([], "object", {"type": "string"}):
        with pytest.raises(ValueError, match="JSON Schema object"):
            server.add_tool(lambda **kw: "x", name="bad", input_schema=bad)
    with pytest.raises(ValueError, match="invalid input_schema"):
        server.add_tool(
            lambda **kw: "x", name="bad", input_schema={"type": "object", "properties": {"a": 1}}
        )
    with pytest.raises(ValueError, match="unsupported JSON Schema dialect"):
        server.add_tool(
            lambda **kw: "x",
            name="mine",
            input_schema={"$schema": "https://example.com/my-dialect", "type": "object"},
        )
    pair = {"type": "array", "prefixItems": [{"type": "integer"}]}  # 2020-12 only
    server.add_tool(
        lambda **kw: "ok", name="pair", input_schema={"type": "object", "properties": {"p": pair}}
    )
    draft7 = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"p": {"type": "array", "items": [{"type": "integer"}]}},
    }
    server.add_tool(lambda **kw: "ok", name="old", input_schema=draft7)
    with trio.fail_after(5):
        async with connect(server, version="2025-11-25") as client:
            assert not (await client.call_tool("pair", {"p": [1]})).is_error
            assert (await client.call_tool("pair", {"p": ["x"]})).is_error
            assert not (await client.call_tool("old", {"p": [1]})).is_error
            assert (await client.call_tool("old", {"p": ["x"]})).is_error  # draft-07 items

"""The typed methods of the async clients (mcp_ref._client_methods.TypedMethods), tested
without I/O: a subclass whose ``request`` records each call and returns canned results.

Each method must put the right method name, the right typed params and the caller's
timeout (and progress callback) on the wire, return the result it got, and the list
methods must walk every page and stop where ``nextCursor`` is missing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest

from mcp_ref import RemoteProtocolError
from mcp_ref import types as t
from mcp_ref._client import DEFAULT, Timeout
from mcp_ref._client_methods import TypedMethods
from mcp_ref.events import Progress

spec = pytest.mark.spec

TIMEOUT = 7.5  # a timeout no default equals: it must reach request unchanged


@attrs.define
class Call:
    method: str
    params: Any
    timeout: Any
    on_progress: Any


class Recorder(TypedMethods):
    """A client whose ``request`` records each call and answers from ``answers``."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.calls: list[Call] = []

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: Timeout = DEFAULT,
        on_progress: Callable[[Progress], Any] | None = None,
    ) -> Any:
        self.calls.append(Call(method, params, timeout, on_progress))
        return self.answers.pop(0) if self.answers else None


async def test_the_base_has_no_request_of_its_own() -> None:
    with pytest.raises(AttributeError):  # each client brings its request
        await TypedMethods().request("ping")


def progress(report: Progress) -> None:  # a callback to pass through
    pass


# -- tools -------------------------------------------------------------------------------


async def test_call_tool_sends_its_name_arguments_timeout_and_progress_callback() -> None:
    answer = t.CallToolResult(content=[t.TextContent(text="ok")])
    client = Recorder(answer, answer, answer)
    arguments = {"x": 1}
    got = await client.call_tool("echo", arguments, on_progress=progress, timeout=TIMEOUT)
    assert got is answer
    (call,) = client.calls
    assert call == Call(
        "tools/call", t.CallToolRequestParams(name="echo", arguments={"x": 1}), TIMEOUT, progress
    )
    assert call.params.arguments is not arguments  # a copy: the caller's dict is theirs
    await client.call_tool("bare")
    assert client.calls[1] == Call(
        "tools/call", t.CallToolRequestParams(name="bare", arguments=None), DEFAULT, None
    )
    await client.call_tool("empty", {})  # an empty object is sent, not left out
    assert client.calls[2].params.arguments == {}


async def test_list_tools_page_sends_the_cursor_and_returns_the_page() -> None:
    page = t.ListToolsResult(tools=[t.Tool(name="a", input_schema={})], next_cursor="n")
    client = Recorder(page, page)
    assert await client.list_tools_page(timeout=TIMEOUT) is page
    assert await client.list_tools_page("c1") is page
    assert client.calls == [
        Call("tools/list", None, TIMEOUT, None),
        Call("tools/list", t.PaginatedRequestParams(cursor="c1"), DEFAULT, None),
    ]


# -- every list: its pages and its walk -----------------------------------------------------


def tool(name: str) -> t.Tool:
    return t.Tool(name=name, input_schema={})


LISTS: list[tuple[str, str, str, Callable[[str], Any], Callable[..., Any]]] = [
    ("list_tools", "list_tools_page", "tools/list", tool, t.ListToolsResult),
    (
        "list_resources",
        "list_resources_page",
        "resources/list",
        lambda n: t.Resource(uri=f"file:///{n}", name=n),
        t.ListResourcesResult,
    ),
    (
        "list_resource_templates",
        "list_resource_templates_page",
        "resources/templates/list",
        lambda n: t.ResourceTemplate(uri_template=f"file:///{n}/{{x}}", name=n),
        t.ListResourceTemplatesResult,
    ),
    (
        "list_prompts",
        "list_prompts_page",
        "prompts/list",
        lambda n: t.Prompt(name=n),
        t.ListPromptsResult,
    ),
]
FIELD = {
    "tools/list": "tools",
    "resources/list": "resources",
    "resources/templates/list": "resource_templates",
    "prompts/list": "prompts",
}


def page(method: str, result: Callable[..., Any], items: list[Any], cursor: str | None) -> Any:
    return result(**{FIELD[method]: items, "next_cursor": cursor})


@spec("2025-06-18/server/prompts#implementation-considerations.2")
@pytest.mark.parametrize(
    ("walk", "one", "method", "item", "result"), LISTS, ids=[x[0] for x in LISTS]
)
async def test_a_list_walks_every_page_until_no_cursor(
    walk: str, one: str, method: str, item: Callable[[str], Any], result: Callable[..., Any]
) -> None:
    a, b, c = item("a"), item("b"), item("c")
    client = Recorder(
        page(method, result, [a], "c1"),
        page(method, result, [b, c], "c2"),
        page(method, result, [], None),
        page(method, result, [item("never")], None),  # never asked for
    )
    assert await getattr(client, walk)(timeout=TIMEOUT) == [a, b, c]
    assert client.calls == [
        Call(method, None, TIMEOUT, None),
        Call(method, t.PaginatedRequestParams(cursor="c1"), TIMEOUT, None),
        Call(method, t.PaginatedRequestParams(cursor="c2"), TIMEOUT, None),
    ]
    # One page, with the default timeout.
    client = Recorder(page(method, result, [a], None))
    assert await getattr(client, walk)() == [a]
    assert client.calls == [Call(method, None, DEFAULT, None)]
    # One page at a cursor: the page as it came.
    only = page(method, result, [b], "next")
    client = Recorder(only, only)
    assert await getattr(client, one)("here", timeout=TIMEOUT) is only
    assert await getattr(client, one)() is only
    assert client.calls == [
        Call(method, t.PaginatedRequestParams(cursor="here"), TIMEOUT, None),
        Call(method, None, DEFAULT, None),
    ]


async def test_a_walk_refuses_a_repeated_cursor() -> None:
    again = t.ListPromptsResult(prompts=[], next_cursor="same")
    client = Recorder(again, again, again)
    with pytest.raises(RemoteProtocolError):
        await client.list_prompts()


# -- resources, prompts, completion, logging, ping ------------------------------------------


async def test_resource_methods_send_the_uri() -> None:
    contents = t.ReadResourceResult(contents=[t.TextResourceContents(uri="file:///a", text="x")])
    client = Recorder(contents)
    assert await client.read_resource("file:///a", timeout=TIMEOUT) is contents
    assert await client.subscribe("file:///b", timeout=TIMEOUT) is None
    assert await client.unsubscribe("file:///c", timeout=TIMEOUT) is None
    await client.read_resource("file:///d")
    await client.subscribe("file:///e")
    await client.unsubscribe("file:///f")
    assert client.calls == [
        Call("resources/read", t.ReadResourceRequestParams(uri="file:///a"), TIMEOUT, None),
        Call("resources/subscribe", t.SubscribeRequestParams(uri="file:///b"), TIMEOUT, None),
        Call("resources/unsubscribe", t.UnsubscribeRequestParams(uri="file:///c"), TIMEOUT, None),
        Call("resources/read", t.ReadResourceRequestParams(uri="file:///d"), DEFAULT, None),
        Call("resources/subscribe", t.SubscribeRequestParams(uri="file:///e"), DEFAULT, None),
        Call("resources/unsubscribe", t.UnsubscribeRequestParams(uri="file:///f"), DEFAULT, None),
    ]


async def test_get_prompt_sends_its_name_and_arguments() -> None:
    answer = t.GetPromptResult(messages=[])
    client = Recorder(answer, answer, answer)
    arguments = {"who": "you"}
    assert await client.get_prompt("greet", arguments, timeout=TIMEOUT) is answer
    assert client.calls[0].params.arguments is not arguments
    await client.get_prompt("plain")
    await client.get_prompt("empty", {})
    assert client.calls == [
        Call(
            "prompts/get",
            t.GetPromptRequestParams(name="greet", arguments=arguments),
            TIMEOUT,
            None,
        ),
        Call("prompts/get", t.GetPromptRequestParams(name="plain", arguments=None), DEFAULT, None),
        Call("prompts/get", t.GetPromptRequestParams(name="empty", arguments={}), DEFAULT, None),
    ]


async def test_complete_sends_the_reference_argument_and_context() -> None:
    answer = t.CompleteResult(completion=t.CompleteResultCompletion(values=["py"]))
    client = Recorder(answer, answer, answer)
    ref = t.PromptReference(name="code")
    context = {"kind": "lang"}
    assert await client.complete(ref, "language", "p", context, timeout=TIMEOUT) is answer
    assert client.calls[0].params.context.arguments is not context
    template = t.ResourceTemplateReference(uri="file:///{x}")
    assert await client.complete(template, "x", "") is answer
    await client.complete(ref, "language", "p", {})
    argument = t.CompleteRequestParamsArgument
    assert client.calls == [
        Call(
            "completion/complete",
            t.CompleteRequestParams(
                ref=ref,
                argument=argument(name="language", value="p"),
                context=t.CompleteRequestParamsContext(arguments={"kind": "lang"}),
            ),
            TIMEOUT,
            None,
        ),
        Call(
            "completion/complete",
            t.CompleteRequestParams(
                ref=template, argument=argument(name="x", value=""), context=None
            ),
            DEFAULT,
            None,
        ),
        Call(
            "completion/complete",
            t.CompleteRequestParams(
                ref=ref,
                argument=argument(name="language", value="p"),
                context=t.CompleteRequestParamsContext(arguments={}),
            ),
            DEFAULT,
            None,
        ),
    ]


async def test_set_logging_level_and_ping() -> None:
    client = Recorder()
    assert await client.set_logging_level("warning", timeout=TIMEOUT) is None
    assert await client.ping(timeout=TIMEOUT) is None
    await client.set_logging_level("debug")
    await client.ping()
    assert client.calls == [
        Call("logging/setLevel", t.SetLevelRequestParams(level="warning"), TIMEOUT, None),
        Call("ping", None, TIMEOUT, None),
        Call("logging/setLevel", t.SetLevelRequestParams(level="debug"), DEFAULT, None),
        Call("ping", None, DEFAULT, None),
    ]

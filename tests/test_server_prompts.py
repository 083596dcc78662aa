"""server/prompts: listing, getting, argument checks, content helpers, list changes.
(2025-06-18/server/prompts)"""

from __future__ import annotations

import base64
from typing import Any, Literal

import pytest
import trio

from mcp_ref import INTERNAL_ERROR, INVALID_PARAMS, McpError
from mcp_ref import types as t
from mcp_ref.client import open_client
from mcp_ref.server import Context, Server, assistant, embedded, image, user
from mcp_ref.trio import memory_channel_pair

from ._server_harness import connect

spec = pytest.mark.spec

calls: list[str] = []


def make_server(**kw: Any) -> Server:
    server = Server("prompts", "1", **kw)

    @server.prompt()
    def simple() -> str:
        """A simple prompt."""
        return "Hello."

    @server.prompt("review", title="Code review")
    def review_code(
        code: str, language: Literal["python", "rust"] = "python"
    ) -> list[t.PromptMessage]:
        """Ask for a review.

        Args:
            code: the code to review.
            language: its language.
        """
        calls.append(code)
        return [user(f"Review this {language}:\n{code}"), assistant("Looking at it.")]

    @server.prompt()
    async def whole(ctx: Context, topic: str | None = None) -> t.GetPromptResult:
        """Returns a whole result."""
        return t.GetPromptResult(messages=[user(topic or "nothing")])

    @server.prompt()
    def broken() -> Any:
        """Returns something that is not a message."""
        return 42

    return server


async def get(client: Any, name: str, arguments: dict[str, str] | None = None) -> t.GetPromptResult:
    result: t.GetPromptResult = await client.request(
        "prompts/get", t.GetPromptRequestParams(name=name, arguments=arguments)
    )
    return result


@spec("2025-06-18/server/prompts#capabilities.1")
async def test_prompts_capability_follows_registrations() -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as client:
            assert client.init.capabilities.prompts == t.ServerCapabilitiesPrompts(
                list_changed=True
            )
        async with connect(Server("none", "1")) as client:
            assert client.init.capabilities.prompts is None


async def test_list_prompts_describes_arguments() -> None:
    with trio.fail_after(5):
        async with connect(make_server(page_size=3)) as client:
            first = await client.request("prompts/list")
            rest = await client.request(
                "prompts/list", t.PaginatedRequestParams(cursor=first.next_cursor)
            )
    prompts = {p.name: p for p in first.prompts + rest.prompts}
    assert list(prompts) == ["simple", "review", "whole", "broken"]
    assert prompts["simple"] == t.Prompt(name="simple", description="A simple prompt.")
    assert prompts["review"].title == "Code review"
    assert prompts["review"].arguments == [
        t.PromptArgument(name="code", description="the code to review.", required=True),
        t.PromptArgument(name="language", description="its language.", required=False),
    ]
    assert prompts["whole"].arguments == [t.PromptArgument(name="topic", required=False)]


async def test_get_prompt_messages() -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as client:
            simple = await get(client, "simple")
            review = await get(client, "review", {"code": "x = 1", "language": "rust"})
            whole = await get(client, "whole", {"topic": "trio"})
    assert simple == t.GetPromptResult(
        messages=[t.PromptMessage(role="user", content=t.TextContent(text="Hello."))],
        description="A simple prompt.",
    )
    assert [m.role for m in review.messages] == ["user", "assistant"]
    assert review.messages[0].content == t.TextContent(text="Review this rust:\nx = 1")
    assert whole.messages[0].content == t.TextContent(text="trio")
    assert whole.description == "Returns a whole result."


@spec(
    "2025-06-18/server/prompts#error-handling.1",
    "2025-06-18/server/prompts#implementation-considerations.1",
    "2025-06-18/server/prompts#security.1",
)
@pytest.mark.parametrize(
    ("name", "arguments", "fault"),
    [
        ("nothing", None, "Unknown prompt: nothing"),
        ("review", None, "missing required argument 'code'"),
        ("review", {"code": "x", "colour": "red"}, "unknown argument(s) 'colour'"),
        ("review", {"code": "x", "language": "cobol"}, "expected one of ['python', 'rust']"),
    ],
)
async def test_bad_prompt_requests_are_32602_and_never_reach_the_function(
    name: str, arguments: dict[str, str] | None, fault: str
) -> None:
    calls.clear()
    with trio.fail_after(5):
        async with connect(make_server()) as client:
            with pytest.raises(McpError) as info:
                await get(client, name, arguments)
    assert info.value.code == INVALID_PARAMS
    assert fault in info.value.message
    assert calls == []


@spec("2025-06-18/server/prompts#security.1")
async def test_prompt_outputs_are_checked_too() -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as client:
            with pytest.raises(McpError) as info:
                await get(client, "broken")
    assert info.value.code == INTERNAL_ERROR


@spec("2025-06-18/server/prompts#image-content.1")
def test_image_content_is_base64_with_an_image_mime_type() -> None:
    block = image(b"\x89PNG\r\n", "image/png")
    assert block.mime_type == "image/png"
    assert base64.b64decode(block.data, validate=True) == b"\x89PNG\r\n"
    with pytest.raises(ValueError, match="image/"):
        image(b"x", "text/plain")


@spec("2025-06-18/server/prompts#embedded-resources.1")
def test_embedded_resources_carry_uri_mime_type_and_data() -> None:
    text_block = embedded("test://doc", "words")
    assert text_block.resource == t.TextResourceContents(
        uri="test://doc", text="words", mime_type="text/plain"
    )
    blob_block = embedded("test://raw", b"\x00\x01", "application/octet-stream")
    assert isinstance(blob_block.resource, t.BlobResourceContents)
    assert blob_block.resource.uri == "test://raw"
    assert blob_block.resource.mime_type == "application/octet-stream"
    assert base64.b64decode(blob_block.resource.blob) == b"\x00\x01"


@spec("2025-06-18/server/prompts#implementation-considerations.2")
async def test_the_client_walks_every_page_of_a_long_prompt_list() -> None:
    server = Server("many", "1", page_size=2)
    for i in range(5):
        server.add_prompt(lambda: "p", name=f"p{i}", description="d")
    client_end, server_end = memory_channel_pair()
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server.serve, server_end)
            async with open_client(client_end) as client:
                first = await client.list_prompts_page()
                prompts = await client.list_prompts()
            nursery.cancel_scope.cancel()
    assert len(first.prompts) == 2 and first.next_cursor is not None  # three pages
    assert [p.name for p in prompts] == [f"p{i}" for i in range(5)]


@spec("2025-06-18/server/prompts#list-changed-notification.1")
async def test_list_changed_when_prompts_change() -> None:
    server = make_server()
    with trio.fail_after(5):
        async with connect(server) as client:

            @server.prompt()
            def late() -> str:
                """Late."""
                return "late"

            await client.wait_for("notifications/prompts/list_changed", 1)
            server.remove_prompt("late")
            await client.wait_for("notifications/prompts/list_changed", 2)


def test_duplicate_prompts_are_refused() -> None:
    server = make_server()
    with pytest.raises(ValueError, match="already registered"):
        server.add_prompt(lambda: "", name="simple")


# Issue 13: each clause's tests kill the mutants of its lines.


@spec("2025-06-18/server/prompts#embedded-resources.1")
def test_an_embedded_blob_always_carries_a_mime_type() -> None:
    """Bytes embedded without a MIME type still say one (application/octet-stream);
    one given is kept."""
    plain = embedded("test://raw", b"\x00\x01")
    assert isinstance(plain.resource, t.BlobResourceContents)
    assert plain.resource.mime_type == "application/octet-stream"
    png = embedded("test://img", b"\x89PNG", "image/png")
    assert isinstance(png.resource, t.BlobResourceContents)
    assert png.resource.mime_type == "image/png"
    assert base64.b64decode(png.resource.blob, validate=True) == b"\x89PNG"


@spec("2025-06-18/server/prompts#capabilities.1")
async def test_a_server_declaring_prompts_declares_them_before_any_is_registered() -> None:
    """``declare=("prompts",)``: a server that will serve prompts declares the
    capability even while none is registered yet; one that does not, does not."""
    with trio.fail_after(5):
        async with connect(Server("p", "1", declare=("prompts",))) as client:
            assert client.init.capabilities.prompts == t.ServerCapabilitiesPrompts(
                list_changed=True
            )
        async with connect(Server("p", "1", declare=("tools",))) as client:
            assert client.init.capabilities.prompts is None

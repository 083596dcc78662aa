"""The everything server: each name the official conformance suite calls behaves as its
scenario expects (see the conformance package's server scenarios), every message the
server writes validates against the official schema, and the extra tools work."""

from __future__ import annotations

import base64
import hashlib
import json
import wave
from io import BytesIO
from typing import Any

import pytest
import trio
import trio.testing

from mcp_ref import INVALID_PARAMS, RESOURCE_NOT_FOUND, McpError
from mcp_ref import types as t
from mcp_ref.examples.everything import PNG_1X1, make_server

from ._server_harness import RecordingChannel, connect
from ._spec import schema_for

jsonschema = pytest.importorskip("jsonschema")
spec = pytest.mark.spec

SAMPLED = t.CreateMessageResult(
    role="assistant",
    content=t.TextContent(text="This is a test response from the client"),
    model="test-model",
    stop_reason="endTurn",
)


_FILL: dict[str, Any] = {"string": "x", "boolean": True, "number": 1, "integer": 1}


def _form_answer(params: Any) -> dict[str, Any]:
    """Content for a form: one value of the right type for each property of the
    2026-07-28 diagnostic tools' forms, else the usual username/email."""
    properties = params.requested_schema.properties
    if not set(properties) <= {"name", "ok", "color", "context"}:
        return {"username": "testuser", "email": "test@example.com"}
    return {name: _FILL.get(getattr(p, "type", "string"), "x") for name, p in properties.items()}


def responders(elicited: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "sampling/createMessage": lambda params: SAMPLED,
        "elicitation/create": lambda params: t.ElicitResult(
            action="accept", content=elicited or _form_answer(params)
        ),
        "roots/list": lambda params: t.ListRootsResult(roots=[t.Root(uri="file:///work")]),
    }


def text_of(result: t.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, t.TextContent))


# --------------------------------------------------------------------- tools


async def test_tools_list_has_names_descriptions_and_schemas(autojump_clock: Any) -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as client:
            tools = (await client.request("tools/list")).tools
    names = {tool.name for tool in tools}
    assert {
        "test_simple_text",
        "test_image_content",
        "test_audio_content",
        "test_embedded_resource",
        "test_multiple_content_types",
        "test_tool_with_logging",
        "test_tool_with_progress",
        "test_error_handling",
        "test_sampling",
        "test_elicitation",
        "test_elicitation_sep1034_defaults",
        "test_elicitation_sep1330_enums",
        "json_schema_2020_12_tool",
        "test_reconnection",
        "echo",
    } <= names
    for tool in tools:
        assert tool.description, tool.name
        assert tool.input_schema["type"] == "object"
        assert 1 <= len(tool.name) <= 64 and all(c.isalnum() or c in "_.-/" for c in tool.name)
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)


async def test_simple_image_audio_embedded_and_mixed_content(autojump_clock: Any) -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as client:
            simple = await client.call_tool("test_simple_text")  # no arguments key at all
            picture = await client.call_tool("test_image_content", {})
            sound = await client.call_tool("test_audio_content", {})
            embedded = await client.call_tool("test_embedded_resource", {})
            mixed = await client.call_tool("test_multiple_content_types", {})
    assert simple.content == [t.TextContent(text="This is a simple text response for testing.")]
    (img,) = picture.content
    assert isinstance(img, t.ImageContent) and img.mime_type == "image/png"
    assert base64.b64decode(img.data).startswith(b"\x89PNG\r\n\x1a\n")
    (snd,) = sound.content
    assert isinstance(snd, t.AudioContent) and snd.mime_type == "audio/wav"
    with wave.open(BytesIO(base64.b64decode(snd.data))) as w:
        assert w.getnframes() > 0
    (res,) = embedded.content
    assert isinstance(res, t.EmbeddedResource)
    assert res.resource == t.TextResourceContents(
        uri="test://embedded-resource",
        mime_type="text/plain",
        text="This is an embedded resource content.",
    )
    assert [c.type for c in mixed.content] == ["text", "image", "resource"]
    assert mixed.content[0] == t.TextContent(text="Multiple content types test:")
    last = mixed.content[2]
    assert isinstance(last, t.EmbeddedResource)
    assert last.resource == t.TextResourceContents(
        uri="test://mixed-content-resource",
        mime_type="application/json",
        text='{"test":"data","value":123}',
    )


async def test_logging_tool_sends_three_info_messages(autojump_clock: Any) -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as client:
            await client.request("logging/setLevel", t.SetLevelRequestParams(level="debug"))
            start = trio.current_time()
            result = await client.call_tool("test_tool_with_logging", {})
            elapsed = trio.current_time() - start
            logs = await client.wait_for("notifications/message", 4)
    assert not result.is_error and text_of(result)
    info = [n.data for n in logs if n.level == "info"]
    assert info == ["Tool execution started", "Tool processing data", "Tool execution completed"]
    assert elapsed >= 0.1  # about 50 ms between the messages


@spec("2025-06-18/basic/utilities/progress#progress-flow.6")
async def test_progress_tool_reports_0_50_100(autojump_clock: Any) -> None:
    progress: list[Any] = []
    with trio.fail_after(5):
        async with connect(make_server()) as client:
            result = await client.session.send_request(
                "tools/call",
                t.CallToolRequestParams(name="test_tool_with_progress", arguments={}),
                on_progress=progress.append,
            )
            quiet = await client.call_tool("test_tool_with_progress", {})  # no token: no progress
    assert [(p.progress, p.total) for p in progress] == [(0, 100), (50, 100), (100, 100)]
    assert [p.message for p in progress] == ["Started", "Half way", "Done"]
    assert text_of(result) and text_of(quiet)


async def test_error_tool_is_a_tool_execution_error(autojump_clock: Any) -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as client:
            result = await client.call_tool("test_error_handling", {})
    assert result.is_error is True
    assert text_of(result) == "This tool intentionally returns an error for testing"


async def test_sampling_tool(autojump_clock: Any) -> None:
    with trio.fail_after(5):
        async with connect(make_server(), responders=responders()) as client:
            result = await client.call_tool("test_sampling", {"prompt": "Test prompt for sampling"})
        async with connect(make_server(), capabilities=t.ClientCapabilities()) as unable:
            refused = await unable.call_tool("test_sampling", {"prompt": "x"})
    ((method, params),) = client.requests
    assert method == "sampling/createMessage"
    assert params.max_tokens == 100
    assert params.messages == [
        t.SamplingMessage(role="user", content=t.TextContent(text="Test prompt for sampling"))
    ]
    assert text_of(result) == "LLM response: This is a test response from the client"
    assert refused.is_error and "does not support sampling" in text_of(refused)


async def test_elicitation_tool(autojump_clock: Any) -> None:
    with trio.fail_after(5):
        async with connect(make_server(), responders=responders()) as client:
            result = await client.call_tool(
                "test_elicitation", {"message": "Please provide your information"}
            )
    ((method, params),) = client.requests
    assert method == "elicitation/create"
    assert params.message == "Please provide your information"
    schema = params.requested_schema
    assert schema.required == ["username", "email"]
    assert set(schema.properties) == {"username", "email"}
    assert text_of(result).startswith("User response: action=accept, content=")
    assert "testuser" in text_of(result)


async def test_sep1034_defaults(autojump_clock: Any) -> None:
    record = RecordingChannel()
    accepted = {
        "name": "Jane Smith",
        "age": 25,
        "score": 88,
        "status": "inactive",
        "verified": False,
    }
    with trio.fail_after(5):
        async with connect(make_server(), responders=responders(accepted), record=record) as client:
            result = await client.call_tool("test_elicitation_sep1034_defaults", {})
    (request,) = [m for m in record.sent if m.get("method") == "elicitation/create"]
    props = request["params"]["requestedSchema"]["properties"]
    assert props["name"] == {"type": "string", "description": "Your name", "default": "John Doe"}
    assert (props["age"]["type"], props["age"]["default"]) == ("integer", 30)
    assert (props["score"]["type"], props["score"]["default"]) == ("number", 95.5)
    assert props["status"]["default"] == "active"
    assert props["status"]["enum"] == ["active", "inactive", "pending"]
    assert (props["verified"]["type"], props["verified"]["default"]) == ("boolean", True)
    assert text_of(result).startswith("Elicitation completed: action=accept, content=")


async def test_sep1330_enums(autojump_clock: Any) -> None:
    record = RecordingChannel()
    with trio.fail_after(5):
        async with connect(make_server(), responders=responders({}), record=record) as client:
            await client.call_tool("test_elicitation_sep1330_enums", {})
    (request,) = [m for m in record.sent if m.get("method") == "elicitation/create"]
    props = request["params"]["requestedSchema"]["properties"]
    untitled = props["untitledSingle"]
    assert untitled["type"] == "string" and untitled["enum"] and "oneOf" not in untitled
    assert "enumNames" not in untitled
    titled = props["titledSingle"]
    assert titled["type"] == "string" and "enum" not in titled
    assert all(set(o) == {"const", "title"} for o in titled["oneOf"])
    legacy = props["legacyEnum"]
    assert len(legacy["enum"]) == len(legacy["enumNames"]) == 3
    multi = props["untitledMulti"]
    assert multi["type"] == "array" and multi["items"]["enum"] and "anyOf" not in multi["items"]
    titled_multi = props["titledMulti"]
    assert titled_multi["type"] == "array" and "enum" not in titled_multi["items"]
    assert all(set(o) == {"const", "title"} for o in titled_multi["items"]["anyOf"])


async def test_json_schema_2020_12_tool(autojump_clock: Any) -> None:
    record = RecordingChannel()
    with trio.fail_after(5):
        async with connect(make_server(), record=record) as client:
            await client.request("tools/list")
            ok = await client.call_tool(
                "json_schema_2020_12_tool",
                {"name": "Ann", "address": {"street": "Main", "city": "X"}, "email": "a@x"},
            )
            no_contact = await client.call_tool("json_schema_2020_12_tool", {"name": "Ann"})
            bad = await client.call_tool("json_schema_2020_12_tool", {"name": 5})
    (listing,) = [m for m in record.sent if "tools" in m.get("result", {})]
    (tool,) = [x for x in listing["result"]["tools"] if x["name"] == "json_schema_2020_12_tool"]
    schema = tool["inputSchema"]
    assert tool["description"] == "Tool with JSON Schema 2020-12 features"
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$defs"]["address"]["properties"] == {
        "street": {"type": "string"},
        "city": {"type": "string"},
    }
    assert schema["properties"]["address"] == {"$ref": "#/$defs/address"}
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["address"]["$anchor"] == "addressDef"
    assert {"allOf", "if", "then", "else"} <= set(schema)  # kept as written (SEP-2106)
    assert not ok.is_error and "Ann" in text_of(ok)
    assert no_contact.is_error  # allOf/anyOf: a phone or an email is required
    assert bad.is_error and "@ $.name" in text_of(bad)


async def test_reconnection_tool_answers(autojump_clock: Any) -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as client:
            result = await client.call_tool("test_reconnection", {})
    assert not result.is_error and text_of(result)


# ----------------------------------------------------------- resources, prompts


async def test_resources(autojump_clock: Any) -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as client:
            listed = (await client.request("resources/list")).resources
            templates = (await client.request("resources/templates/list")).resource_templates

            async def read(uri: str) -> Any:
                result = await client.request(
                    "resources/read", t.ReadResourceRequestParams(uri=uri)
                )
                return result.contents[0]

            static_text = await read("test://static-text")
            static_binary = await read("test://static-binary")
            template = await read("test://template/123/data")
            with pytest.raises(McpError) as missing:
                await read("test://nonexistent-resource-for-conformance-testing")
            assert (
                await client.request(
                    "resources/subscribe", t.SubscribeRequestParams(uri="test://watched-resource")
                )
                == t.Result()
            )
            assert (
                await client.request(
                    "resources/unsubscribe",
                    t.UnsubscribeRequestParams(uri="test://watched-resource"),
                )
                == t.Result()
            )
    assert all(r.uri and r.name for r in listed)
    assert {r.uri for r in listed} >= {
        "test://static-text",
        "test://static-binary",
        "test://watched-resource",
    }
    assert [x.uri_template for x in templates] == ["test://template/{id}/data"]
    assert static_text == t.TextResourceContents(
        uri="test://static-text",
        mime_type="text/plain",
        text="This is the content of the static text resource.",
    )
    assert static_binary.mime_type == "image/png"
    assert base64.b64decode(static_binary.blob) == PNG_1X1
    assert template.mime_type == "application/json"
    assert json.loads(template.text) == {
        "id": "123",
        "templateTest": True,
        "data": "Data for ID: 123",
    }
    assert missing.value.code == RESOURCE_NOT_FOUND
    assert missing.value.data == {"uri": "test://nonexistent-resource-for-conformance-testing"}


async def test_watched_resource_updates(autojump_clock: Any) -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as client:
            await client.request(
                "resources/subscribe", t.SubscribeRequestParams(uri="test://watched-resource")
            )
            await client.call_tool("update_watched_resource", {"text": "version 2"})
            (update,) = await client.wait_for("notifications/resources/updated")
            contents = await client.request(
                "resources/read", t.ReadResourceRequestParams(uri="test://watched-resource")
            )
    assert update.uri == "test://watched-resource"
    assert contents.contents[0].text == "version 2"


async def test_prompts(autojump_clock: Any) -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as client:
            prompts = (await client.request("prompts/list")).prompts

            async def get(name: str, arguments: dict[str, str] | None = None) -> t.GetPromptResult:
                result: t.GetPromptResult = await client.request(
                    "prompts/get", t.GetPromptRequestParams(name=name, arguments=arguments)
                )
                return result

            simple = await get("test_simple_prompt")
            with_args = await get(
                "test_prompt_with_arguments", {"arg1": "testValue1", "arg2": "testValue2"}
            )
            embedded = await get(
                "test_prompt_with_embedded_resource", {"resourceUri": "test://example-resource"}
            )
            with_image = await get("test_prompt_with_image")
            with pytest.raises(McpError) as missing:
                await get("test_prompt_with_arguments", {"arg1": "only one"})
    assert all(p.description for p in prompts)
    by_name = {p.name: p for p in prompts}
    assert [a.name for a in by_name["test_prompt_with_arguments"].arguments or []] == [
        "arg1",
        "arg2",
    ]
    assert all(a.required for a in by_name["test_prompt_with_arguments"].arguments or [])
    assert simple.messages == [
        t.PromptMessage(
            role="user", content=t.TextContent(text="This is a simple prompt for testing.")
        )
    ]
    assert with_args.messages[0].content == t.TextContent(
        text="Prompt with arguments: arg1='testValue1', arg2='testValue2'"
    )
    first, second = embedded.messages
    assert isinstance(first.content, t.EmbeddedResource)
    assert first.content.resource == t.TextResourceContents(
        uri="test://example-resource",
        mime_type="text/plain",
        text="Embedded resource content for testing.",
    )
    assert second.content == t.TextContent(text="Please process the embedded resource above.")
    picture, words = with_image.messages
    assert isinstance(picture.content, t.ImageContent) and picture.content.mime_type == "image/png"
    assert words.content == t.TextContent(text="Please analyze the image above.")
    assert missing.value.code == INVALID_PARAMS


async def test_completion(autojump_clock: Any) -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as client:

            async def complete(ref: Any, name: str, value: str) -> list[str]:
                params = t.CompleteRequestParams(
                    ref=ref, argument=t.CompleteRequestParamsArgument(name=name, value=value)
                )
                return list((await client.request("completion/complete", params)).completion.values)

            arg1 = await complete(
                t.PromptReference(name="test_prompt_with_arguments"), "arg1", "test"
            )
            ids = await complete(
                t.ResourceTemplateReference(uri="test://template/{id}/data"), "id", "1"
            )
    assert arg1 == ["test", "testValue1", "testing"]
    assert ids == ["1", "123"]


# ----------------------------------------------------------------- the rest


async def test_realistic_tools(autojump_clock: Any) -> None:
    with trio.fail_after(5):
        async with connect(make_server(), responders=responders()) as client:
            echo = await client.call_tool("echo", {"text": "héllo"})
            added = await client.call_tool("add", {"a": 1.5, "b": 2})
            weather = await client.call_tool("get_weather", {"city": "Chicago"})
            nowhere = await client.call_tool("get_weather", {"city": "Paris"})
            roots = await client.call_tool("list_client_roots", {})
            toggled = await client.call_tool("toggle_extra_tool", {})
            await client.wait_for("notifications/tools/list_changed")
            extra = await client.call_tool("extra_tool", {})
            await client.call_tool("toggle_extra_tool", {})
            await client.wait_for("notifications/tools/list_changed", 2)
            with pytest.raises(McpError):
                await client.call_tool("extra_tool", {})
    assert echo.content == [t.TextContent(text="héllo")] and echo.structured_content is None
    assert added.structured_content == {"result": 3.5}
    assert weather.structured_content == {
        "temperature": 18.0,
        "conditions": "Windy",
        "humidity": 50.0,
    }
    assert nowhere.is_error and "@ $.city" in text_of(nowhere)
    assert roots.structured_content == {"result": ["file:///work"]}
    assert text_of(toggled) == "extra_tool added" and text_of(extra)


async def test_sha256_runs_in_a_thread() -> None:  # real clock: a worker thread runs
    with trio.fail_after(5):
        async with connect(make_server()) as client:
            result = await client.call_tool("sha256", {"text": "abc"})
    assert text_of(result) == hashlib.sha256(b"abc").hexdigest()


async def test_long_running_operation_progress_and_cancellation(autojump_clock: Any) -> None:
    progress: list[Any] = []
    with trio.fail_after(30):
        async with connect(make_server()) as client:
            result = await client.session.send_request(
                "tools/call",
                t.CallToolRequestParams(
                    name="long_running_operation", arguments={"duration": 0.3, "steps": 3}
                ),
                on_progress=progress.append,
            )
            with trio.move_on_after(1) as scope:
                await client.call_tool("long_running_operation", {"duration": 60, "steps": 2})
            assert scope.cancelled_caught  # the client gave up; the server stopped
            bad = await client.call_tool("long_running_operation", {"duration": 1000})
    assert [(p.progress, p.total) for p in progress] == [(1, 3), (2, 3), (3, 3)]
    assert "Steps: 3" in text_of(result)
    assert bad.is_error


# ------------------------------------------------------- every message, the schema


def schema_validator(version: str, definition: str) -> Any:
    schema = schema_for(version)
    defs = "$defs" if "$defs" in schema else "definitions"
    root = {**schema, "$ref": f"#/{defs}/{definition}"}
    return jsonschema.validators.validator_for(schema)(root)


RESULT_TYPES = {
    "initialize": "InitializeResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "completion/complete": "CompleteResult",
}


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"])
@spec("2025-06-18/basic#messages.1", "2025-06-18/server/tools#embedded-resources.2")
async def test_every_message_validates_against_the_schema(
    version: str, autojump_clock: Any
) -> None:
    record = RecordingChannel()
    with trio.fail_after(30):
        async with connect(
            make_server(), version=version, responders=responders(), record=record
        ) as client:
            assert client.init.protocol_version == version
            # Spec: a server with embedded resources declares resources.
            assert client.init.capabilities.resources is not None
            await client.request("logging/setLevel", t.SetLevelRequestParams(level="debug"))
            await client.request(
                "resources/subscribe", t.SubscribeRequestParams(uri="test://watched-resource")
            )
            for tool in (await client.request("tools/list")).tools:
                if tool.name in ("sha256", "extra_tool", "long_running_operation"):
                    continue
                arguments = {
                    "test_sampling": {"prompt": "p"},
                    "test_elicitation": {"message": "m"},
                    "echo": {"text": "e"},
                    "add": {"a": 1, "b": 2},
                    "get_weather": {"city": "New York"},
                    "update_watched_resource": {"text": "new"},
                    "json_schema_2020_12_tool": {"name": "n"},
                }.get(tool.name, {})
                await client.session.send_request(
                    "tools/call",
                    t.CallToolRequestParams(name=tool.name, arguments=arguments),
                    on_progress=lambda p: None,
                )
            await client.request("resources/list")
            await client.request("resources/templates/list")
            for uri in ("test://static-text", "test://static-binary", "test://template/1/data"):
                await client.request("resources/read", t.ReadResourceRequestParams(uri=uri))
            for prompt in (await client.request("prompts/list")).prompts:
                arguments = {a.name: "x" for a in prompt.arguments or []}
                await client.request(
                    "prompts/get", t.GetPromptRequestParams(name=prompt.name, arguments=arguments)
                )
            await client.request(
                "completion/complete",
                t.CompleteRequestParams(
                    ref=t.PromptReference(name="test_prompt_with_arguments"),
                    argument=t.CompleteRequestParamsArgument(name="arg1", value="t"),
                ),
            )
            with pytest.raises(McpError):
                await client.request(
                    "resources/read", t.ReadResourceRequestParams(uri="test://none")
                )
            await client.wait_for("notifications/resources/updated")
    methods = {m["id"]: m["method"] for m in record.received if "id" in m and "method" in m}
    message = schema_validator(version, "JSONRPCMessage")
    seen: set[str] = set()
    for sent in record.sent:
        message.validate(sent)
        if "result" in sent and sent["id"] in methods:
            method = methods[sent["id"]]
            if method in RESULT_TYPES:
                schema_validator(version, RESULT_TYPES[method]).validate(sent["result"])
                seen.add(method)
        elif "method" in sent:
            kind = "ServerRequest" if "id" in sent else "ServerNotification"
            schema_validator(version, kind).validate(sent)
            seen.add(sent["method"])
    expected = set(RESULT_TYPES) | {
        "notifications/message",
        "notifications/progress",
        "notifications/resources/updated",
        "sampling/createMessage",
    }
    if version >= "2025-06-18":  # elicitation came in 2025-06-18
        expected.add("elicitation/create")
    assert seen >= expected


async def test_content_an_old_revision_lacks_is_left_out_with_a_note(autojump_clock: Any) -> None:
    with trio.fail_after(5):
        async with connect(make_server(), version="2024-11-05") as old:
            sound = await old.call_tool("test_audio_content", {})
        async with connect(make_server(), version="2025-03-26") as newer:
            kept = await newer.call_tool("test_audio_content", {})
    assert sound.content == [
        t.TextContent(text="[audio content left out: it needs protocol 2025-03-26]")
    ]
    assert isinstance(kept.content[0], t.AudioContent)

"""Interop with the official Python SDK (``mcp`` on PyPI), both directions.

* The SDK's client against our everything server: ``sdk_scripts/sdk_client.py`` runs in
  the SDK's own virtualenv (:func:`tests.interop.peers.python_sdk_python`), starts our
  server with the command it is given (or connects to our Streamable HTTP server, run
  in the test, in JSON and SSE modes), makes a fixed list of requests and prints a JSON
  summary, on which the test asserts.
* Our client against servers written with the SDK: ``sdk_scripts/sdk_server.py`` in its
  ``mcpserver`` mode (the high-level ``MCPServer``) and its ``lowlevel`` mode (a
  paginated tool list, and a tool whose structured content breaks its output schema).

The SDK never enters the project's own environment.  Tests skip with the installer's
reason when the SDK venv cannot be made.  Real processes and real time: every test runs
under ``trio.fail_after(LIMIT)``.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from mcp_ref import SUPPORTED_VERSIONS, McpError, Progress
from mcp_ref import types as t
from mcp_ref.client import JSONSCHEMA_AVAILABLE, Client, OutputSchemaError, open_stdio_client

from . import peers

pytestmark = [
    pytest.mark.interop,
    pytest.mark.skipif(sys.platform == "win32", reason="stdio interop tests need POSIX"),
]
spec = pytest.mark.spec

LIMIT = 30.0
"""Seconds allowed for one test (an SDK process starts in about 0.5 s)."""

SCRIPTS = Path(__file__).resolve().parent / "sdk_scripts"
REPO = peers.repo_root()

# The PNG that sdk_server.py serves as sdk://logo.
LOGO_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de"
    "0000000c4944415478da63f8cfc000000301010018dd8db00000000049454e44ae426082"
)


@pytest.fixture(autouse=True, scope="module")
def _need_python_sdk() -> None:
    """Skip every test here, with the installer's reason, when the SDK venv is missing.
    (A sync fixture: a skip raised inside a trio test loses its reason.)"""
    if peers.python_sdk_python() is None:
        pytest.skip(peers.why_missing("python-sdk") or "the Python SDK venv is unavailable")


def sdk_python() -> str:
    """The SDK venv's python (the fixture above made sure it exists)."""
    python = peers.python_sdk_python()
    assert python is not None
    return str(python)


def our_server_cmd() -> list[str]:
    """argv starting our everything server on stdio: ``python -m mcp_ref serve`` once the
    CLI exists, else the example module directly."""
    if importlib.util.find_spec("mcp_ref.__main__") is not None:
        return [sys.executable, "-m", "mcp_ref", "serve"]
    return [sys.executable, "-m", "mcp_ref.examples.everything"]


async def run_sdk_client(server_cmd: list[str], script: str = "sdk_client.py") -> dict[str, Any]:
    """Run ``script`` (sdk_scripts/) with the arguments ``server_cmd``; return its JSON
    summary."""
    proc = await trio.run_process(
        [sdk_python(), str(SCRIPTS / script), *server_cmd],
        cwd=REPO,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    stderr = proc.stderr.decode(errors="replace")[-3000:]
    assert proc.returncode == 0, f"{script} exited with {proc.returncode}:\n{stderr}"
    summary = json.loads(proc.stdout)
    assert isinstance(summary, dict), proc.stdout[:500]
    return summary


def texts(result: dict[str, Any]) -> list[str]:
    """The texts of a wire-format CallToolResult / GetPromptResult message list."""
    return [c["text"] for c in result["content"] if c["type"] == "text"]


# ------------------------------------------------ the SDK's client against our server


@spec(
    "2025-06-18/basic/lifecycle#initialization.3",
    "2025-06-18/basic/utilities/ping#behavior-requirements.1",
    "2025-06-18/server/tools#capabilities.1",
    "2025-06-18/server/tools#output-schema.1",
    "2025-06-18/server/resources#capabilities.1",
    "2025-06-18/server/prompts#capabilities.1",
    "2025-06-18/server/utilities/completion#capabilities.1",
    "2025-06-18/server/utilities/logging#capabilities.1",
)
async def test_sdk_client_against_our_server() -> None:
    with trio.fail_after(LIMIT):
        summary = await run_sdk_client(our_server_cmd())
    check_everything(summary)


@spec(
    "2025-06-18/basic/transports#sending-messages-to-the-server.8",
    "2025-06-18/basic/transports#sending-messages-to-the-server.11",
    "2025-06-18/basic/lifecycle#version-negotiation.3",
)
@pytest.mark.parametrize(
    ("json_response", "version"),
    [(False, None), (False, "2025-06-18"), (True, "2025-06-18")],
    ids=["sse-latest", "sse-2025-06-18", "json-2025-06-18"],
)
async def test_sdk_client_against_our_http_server(json_response: bool, version: str | None) -> None:
    # Up to 2025-06-18 the server runs a POST's handler in the POST's own task (a writer
    # task takes over when the handler sends something first); the SDK's client must
    # see the same session as over stdio: progress, logs and sampling in order.
    from mcp_ref.examples.everything import make_server
    from mcp_ref.trio import open_http_server

    with trio.fail_after(LIMIT):
        async with open_http_server(make_server(), json_response=json_response) as info:
            summary = await run_sdk_client(["--url", info.url, *([version] if version else [])])
    if version is not None:
        assert summary["initialize"]["protocolVersion"] == version
    check_everything(summary)


def check_everything(summary: dict[str, Any]) -> None:
    """What the SDK client's run against our everything server must show."""
    steps: dict[str, Any] = summary["steps"]
    errors: dict[str, str] = summary["errors"]
    # The only step meant to fail: calling a tool that does not exist.
    assert set(errors) == {"unknown_tool"}, errors
    assert "-32602" in errors["unknown_tool"]

    init = summary["initialize"]
    assert init["serverInfo"]["name"] == "mcp-ref-everything"
    # The SDK asks for its latest version; we speak it, so we answer with the same.
    assert init["protocolVersion"] in SUPPORTED_VERSIONS
    caps = init["capabilities"]
    assert {"tools", "resources", "prompts", "logging", "completions"} <= set(caps)
    assert steps["ping"] == {}

    tool_names = {tool["name"] for tool in steps["list_tools"]["tools"]}
    assert {
        "echo",
        "test_simple_text",
        "test_tool_with_progress",
        "test_error_handling",
        "test_sampling",
        "get_weather",
    } <= tool_names
    resource_uris = {r["uri"] for r in steps["list_resources"]["resources"]}
    assert {"test://static-text", "test://static-binary"} <= resource_uris
    templates = {r["uriTemplate"] for r in steps["list_resource_templates"]["resourceTemplates"]}
    assert "test://template/{id}/data" in templates
    prompt_names = {p["name"] for p in steps["list_prompts"]["prompts"]}
    assert "test_prompt_with_arguments" in prompt_names

    assert texts(steps["echo"]) == ["hello from the SDK"]
    assert texts(steps["test_simple_text"]) == ["This is a simple text response for testing."]
    assert not steps["test_simple_text"].get("isError")

    # Progress: 0, 50, 100 of 100, in order, each with its message.
    assert summary["progress"] == [
        [0.0, 100.0, "Started"],
        [50.0, 100.0, "Half way"],
        [100.0, 100.0, "Done"],
    ]
    assert texts(steps["test_tool_with_progress"]) == ["Tool with progress executed successfully"]

    error = steps["test_error_handling"]
    assert error["isError"] is True
    assert texts(error) == ["This tool intentionally returns an error for testing"]

    # Structured output, validated by the SDK against our outputSchema on its side.
    assert steps["get_weather"]["structuredContent"] == {
        "temperature": 18.0,
        "conditions": "Windy",
        "humidity": 50,
    }

    # Logging at debug: three info messages and one debug, in order.
    assert steps["set_logging_level"] == {}
    assert [(log["level"], log["data"]) for log in summary["logs"]] == [
        ("info", "Tool execution started"),
        ("info", "Tool processing data"),
        ("debug", {"step": 2, "detail": "processing"}),
        ("info", "Tool execution completed"),
    ]

    # Sampling round trip: our server asked the SDK client's callback.
    (sampling,) = summary["sampling"]
    assert sampling["maxTokens"] == 100
    assert sampling["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Say something"}}
    ]
    assert texts(steps["test_sampling"]) == [
        "LLM response: This is a test response from the SDK client"
    ]

    (static,) = steps["read_static_text"]["contents"]
    assert static == {
        "uri": "test://static-text",
        "mimeType": "text/plain",
        "text": "This is the content of the static text resource.",
    }
    (binary,) = steps["read_static_binary"]["contents"]
    assert binary["mimeType"] == "image/png"
    assert base64.b64decode(binary["blob"]).startswith(b"\x89PNG\r\n\x1a\n")
    (templated,) = steps["read_template"]["contents"]
    assert templated["uri"] == "test://template/42/data"
    assert json.loads(templated["text"])["id"] == "42"

    (message,) = steps["get_prompt"]["messages"]
    assert message["role"] == "user"
    assert message["content"] == {
        "type": "text",
        "text": "Prompt with arguments: arg1='alpha', arg2='beta'",
    }
    completion = steps["complete"]["completion"]
    assert completion["values"] and all(v.startswith("te") for v in completion["values"])


# ------------------------------------------------ our client against SDK servers


async def test_our_client_against_sdk_mcpserver() -> None:
    logs: list[t.LoggingMessageNotificationParams] = []
    command = [sdk_python(), str(SCRIPTS / "sdk_server.py"), "mcpserver"]
    with trio.fail_after(LIMIT):
        async with open_stdio_client(command, on_log=logs.append, shutdown_grace=2.0) as client:
            await _check_mcpserver(client, logs)


async def _check_mcpserver(client: Client, logs: list[t.LoggingMessageNotificationParams]) -> None:
    assert client.server_info.name == "sdk-interop-server"
    assert client.server_info.version == "9.9.9"
    assert client.instructions == "An SDK test server."
    assert client.protocol_version in SUPPORTED_VERSIONS

    tools = {tool.name: tool for tool in await client.list_tools()}
    assert {"add", "forecast", "count_to", "explode"} <= set(tools)
    assert tools["add"].input_schema["required"] == ["a", "b"]
    add_schema = tools["add"].output_schema
    assert add_schema is not None and add_schema["properties"]["result"]["type"] == "integer"

    # Typed results: structured content, checked by our client against the outputSchema.
    added = await client.call_tool("add", {"a": 1, "b": 2})
    assert not added.is_error
    assert added.structured_content == {"result": 3}
    assert [c.text for c in added.content if isinstance(c, t.TextContent)] == ["3"]
    forecast = await client.call_tool("forecast", {"city": "Oslo"})
    assert forecast.structured_content == {
        "city": "Oslo",
        "temperature": 21.5,
        "conditions": "Sunny",
    }

    progress: list[Progress] = []
    counted = await client.call_tool("count_to", {"n": 3}, on_progress=progress.append)
    assert counted.structured_content == {"result": "counted to 3"}
    assert [(p.progress, p.total, p.message) for p in progress] == [
        (1, 3, "step 1 of 3"),
        (2, 3, "step 2 of 3"),
        (3, 3, "step 3 of 3"),
    ]
    # MCPServer 2.3.0 sends notifications/message (ctx.info) without declaring the
    # logging capability; we never would, but we deliver what it sends.
    assert client.server_capabilities.logging is None
    assert logs, "log notifications of an undeclared capability are delivered"

    exploded = await client.call_tool("explode", {})
    assert exploded.is_error
    assert exploded.structured_content is None

    resources = {r.uri: r for r in await client.list_resources()}
    assert set(resources) == {"sdk://greeting", "sdk://logo"}
    greeting = await client.read_resource("sdk://greeting")
    (text,) = greeting.contents
    assert isinstance(text, t.TextResourceContents)
    assert text.text == "Hello from the Python SDK"
    logo = await client.read_resource("sdk://logo")
    (blob,) = logo.contents
    assert isinstance(blob, t.BlobResourceContents)
    assert blob.mime_type == "image/png"
    assert base64.b64decode(blob.blob) == LOGO_PNG

    (template,) = await client.list_resource_templates()
    assert template.uri_template == "sdk://items/{item_id}"
    item = await client.read_resource("sdk://items/7")
    (item_text,) = item.contents
    assert isinstance(item_text, t.TextResourceContents)
    assert json.loads(item_text.text) == {"id": "7", "source": "sdk"}
    with pytest.raises(McpError):
        await client.read_resource("sdk://nothing-here")

    (prompt,) = await client.list_prompts()
    assert prompt.name == "review"
    assert [(a.name, bool(a.required)) for a in prompt.arguments or []] == [
        ("code", True),
        ("language", False),
    ]
    review = await client.get_prompt("review", {"code": "x = 1"})
    (message,) = review.messages
    assert isinstance(message.content, t.TextContent)
    assert message.content.text == "Please review this python code:\nx = 1"
    rust = await client.get_prompt("review", {"code": "let x = 1;", "language": "rust"})
    assert isinstance(rust.messages[0].content, t.TextContent)
    assert rust.messages[0].content.text.startswith("Please review this rust code:")

    completed = await client.complete(t.PromptReference(name="review"), "language", "p")
    assert completed.completion.values == ["python", "perl"]
    assert completed.completion.total == 2


@spec(
    "2025-06-18/server/tools#output-schema.2",
    "2025-06-18/server/utilities/pagination#implementation-guidelines.3",
)
@pytest.mark.skipif(
    not JSONSCHEMA_AVAILABLE, reason="the output-schema check needs the optional jsonschema"
)
async def test_our_client_walks_pages_and_rejects_a_lying_sdk_tool() -> None:
    command = [sdk_python(), str(SCRIPTS / "sdk_server.py"), "lowlevel"]
    with trio.fail_after(LIMIT):
        async with open_stdio_client(command, shutdown_grace=2.0) as client:
            # Two pages, the second asked for with the server's opaque cursor.
            first = await client.list_tools_page()
            assert [tool.name for tool in first.tools] == ["honest"]
            assert first.next_cursor == "page-2"
            tools = await client.list_tools()
            assert [tool.name for tool in tools] == ["honest", "liar"]

            honest = await client.call_tool("honest", {})
            assert honest.structured_content == {"count": 3}

            with pytest.raises(OutputSchemaError) as info:
                await client.call_tool("liar", {})
            assert info.value.tool == "liar"
            assert info.value.result.structured_content == {"count": "many"}
            assert "count" in info.value.message

            # The connection is fine afterwards.
            await client.ping()

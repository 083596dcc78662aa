"""The stdio transport, client side: what our client writes to a server's stdin.

Page: 2025-06-18/basic/transports, section stdio.  The interop tests prove the same
rule against the official "everything" server when Node is installed; this test proves
it on any machine.  A child process records its stdin with ``tee`` and passes it on to
the test server (tests/_stdio_server.py); the high-level client then goes through
everything it can write: initialization, paginated lists, tool calls with progress,
answers to the server's sampling, roots and elicitation requests, an error, a
cancellation, a roots change and a ping.  Every byte it wrote must be one valid MCP
message per line, valid against the official schema of the negotiated revision.

Real time (a child process does not follow a MockClock), under ``fail_after``.  POSIX
only (``sh`` and ``tee``).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import trio

from mcp_ref import McpError
from mcp_ref import types as t
from mcp_ref.client import open_stdio_client

from ._spec import schema_for

pytestmark = pytest.mark.skipif(
    sys.platform == "win32" or shutil.which("tee") is None, reason="needs POSIX sh and tee"
)

SERVER = str(Path(__file__).resolve().parent / "_stdio_server.py")
LIMIT = 30


def message_validator(version: str) -> Any:
    """A validator of ``JSONRPCMessage`` in the official schema of ``version``."""
    schema = schema_for(version)
    defs_key = "$defs" if "$defs" in schema else "definitions"
    root = {**schema, "$ref": f"#/{defs_key}/JSONRPCMessage"}
    return jsonschema.validators.validator_for(schema)(root)


def sample(params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
    return t.CreateMessageResult(role="assistant", content=t.TextContent(text="a"), model="m")


def elicit(params: Any) -> t.ElicitResult:
    return t.ElicitResult(action="accept", content={"name": "Ada"})


async def talk(log: Path) -> str:
    """Run a session through the child that tees its stdin to ``log``; return the
    negotiated protocol version."""
    command = ["sh", "-c", 'tee "$0" | exec "$@"', str(log), sys.executable, SERVER, "normal"]
    progress: list[float] = []
    async with open_stdio_client(
        command,
        sampling_handler=sample,
        elicitation_handler=elicit,
        roots=[t.Root(uri="file:///tmp/a")],
        shutdown_grace=5,
    ) as client:
        version = client.protocol_version
        assert len(await client.list_tools()) > 4  # more than one page
        echoed = await client.call_tool("echo", {"text": "é\n\u2028"})
        assert json.loads(echoed.content[0].text) == {"text": "é\n\u2028"}
        await client.call_tool("progress", on_progress=lambda p: progress.append(p.progress))
        assert progress == [1, 2, 3]
        assert (await client.call_tool("sample")).content[0].text == "a"
        assert (await client.call_tool("roots")).content[0].text == '["file:///tmp/a"]'
        assert "Ada" in (await client.call_tool("elicit")).content[0].text
        await client.set_logging_level("debug")
        with pytest.raises(McpError):
            await client.read_resource("mem://missing")
        await client.subscribe("mem://a")
        await client.get_prompt("greet", {"who": "you"})
        with trio.move_on_after(0.2) as cancelled:
            await client.call_tool("silent")
        assert cancelled.cancelled_caught
        await client.set_roots([t.Root(uri="file:///tmp/b")])
        await client.ping()
    return version


@pytest.mark.spec("2025-06-18/basic/transports#stdio.5")
async def test_client_writes_only_valid_messages_to_stdin(tmp_path: Path) -> None:
    log = tmp_path / "stdin.log"
    with trio.fail_after(LIMIT):
        version = await talk(log)
    data = log.read_bytes()
    # Spec: "The client MUST NOT write anything to the server's stdin that is not a
    # valid MCP message": newline-delimited, so every line is one whole message.
    assert data.endswith(b"\n")
    lines = data[:-1].split(b"\n")
    validator = message_validator(version)
    messages = []
    for line in lines:
        message = json.loads(line.decode("utf-8"))  # one JSON value a line, no blank line
        assert isinstance(message, dict), line
        errors = [e.message for e in validator.iter_errors(message)]
        assert not errors, (line, errors)
        messages.append(message)
    methods = {m["method"] for m in messages if "method" in m}
    # The session really covered requests, notifications and answers to the server.
    assert {
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/call",
        "logging/setLevel",
        "resources/read",
        "resources/subscribe",
        "prompts/get",
        "notifications/cancelled",
        "notifications/roots/list_changed",
        "ping",
    } <= methods
    answers = [m for m in messages if "result" in m]
    assert len(answers) >= 3  # sampling, roots and elicitation results


@pytest.mark.spec("2025-06-18/basic/transports#stdio.5")
async def test_a_message_larger_than_the_pipe_reaches_stdin_whole(tmp_path: Path) -> None:
    """A message of 300 KB is more than the child's stdin pipe holds at once (64 KiB on
    Linux): what the pipe does not take at once is written after, and stdin still holds
    only whole, valid messages, one a line, this one byte for byte."""
    log = tmp_path / "stdin.log"
    command = ["sh", "-c", 'tee "$0" | exec "$@"', str(log), sys.executable, SERVER, "normal"]
    text = "x" * 300_000
    with trio.fail_after(LIMIT):
        async with open_stdio_client(command, shutdown_grace=5) as client:
            version = client.protocol_version
            echoed = await client.call_tool("echo", {"text": text})
            assert json.loads(echoed.content[0].text) == {"text": text}  # type: ignore[union-attr]
    data = log.read_bytes()
    assert data.endswith(b"\n")
    validator = message_validator(version)
    messages = [json.loads(line) for line in data[:-1].split(b"\n")]
    for message in messages:
        assert not list(validator.iter_errors(message))
    calls = [m for m in messages if m.get("method") == "tools/call"]
    assert [c["params"]["arguments"] for c in calls] == [{"text": text}]

"""The ``mcp-ref`` command: serve, demo, inspect, call; errors as one line."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from functools import partial
from importlib.metadata import entry_points
from typing import Any

import pytest
import trio

from mcp_ref import cli
from mcp_ref.cli import Transcript, main, parse_arguments, parse_value

PYTHON = sys.executable
SERVE = [PYTHON, "-m", "mcp_ref", "serve"]


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``python -m mcp_ref ARGS`` (the same entry as the ``mcp-ref`` script)."""
    return subprocess.run(
        [PYTHON, "-m", "mcp_ref", *args], capture_output=True, text=True, timeout=timeout
    )


def assert_one_line_error(stderr: str, fragment: str) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("mcp-ref: "), stderr
    assert fragment in lines[-1]
    assert "Traceback" not in stderr


# ------------------------------------------------------------------ pure helpers


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("3", 3),
        ("2.5", 2.5),
        ("true", True),
        ("null", None),
        ('"7"', "7"),
        ("[1,2]", [1, 2]),
        ('{"a":1}', {"a": 1}),
        ("hello", "hello"),
        ("", ""),
    ],
)
def test_values_are_json_when_they_parse(text: str, value: Any) -> None:
    assert parse_value(text) == value


def test_call_arguments_are_the_trailing_key_value_words() -> None:
    command, tool, arguments = parse_arguments(
        ["--", "python", "server.py", "--flag=x", "add", "a=1", "b=two", "c=[1]"]
    )
    assert command == ["python", "server.py", "--flag=x"]
    assert tool == "add"
    assert arguments == {"a": 1, "b": "two", "c": [1]}
    assert parse_arguments(["python", "s.py", "ping"]) == (["python", "s.py"], "ping", {})
    with pytest.raises(cli.CliError, match="usage"):
        parse_arguments(["--", "tool_only"])


class _Lines:
    framing = "lines"

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.sent: list[bytes] = []

    async def receive(self) -> bytes:
        return self.chunks.pop(0) if self.chunks else b""

    async def send(self, data: bytes, *, related_request_id: Any = None) -> None:
        self.sent.append(data)

    async def aclose(self) -> None:
        pass


async def test_transcript_annotates_messages_split_across_chunks() -> None:
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    result = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}).encode() + b"\n"
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}).encode()
    inner = _Lines([result[:7], result[7:] + note[:3], note[3:] + b"\n"])
    out = io.StringIO()
    transcript = Transcript(inner, out)
    await transcript.send(json.dumps(request).encode() + b"\n")
    while await transcript.receive():
        pass
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("C→S  request #1 tools/list")
    assert lines[0].endswith("2025-06-18/server/tools#listing-tools")
    assert lines[2].startswith("S→C  result #1 of tools/list")
    assert lines[4].startswith("S→C  notification notifications/tools/list_changed")
    assert lines[4].endswith("2025-06-18/server/tools#list-changed-notification")
    assert transcript.count == 3 and inner.sent


# ------------------------------------------------------------- against a server


def test_inspect_lists_everything() -> None:
    done = run("inspect", "--", *SERVE)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("server: mcp-ref-everything 1.0")
    assert "capabilities: tools, resources, prompts, completions, logging" in out
    assert "  echo(text: string)  - Returns the text unchanged." in out
    assert "  test://static-text  (static-text)" in out
    assert "  test://template/{id}/data  (template-data)" in out
    assert "  test_prompt_with_arguments(arg1, arg2)" in out


def test_inspect_json() -> None:
    done = run("inspect", "--json", "--", *SERVE)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["serverInfo"]["name"] == "mcp-ref-everything"
    assert "echo" in [tool["name"] for tool in data["tools"]]
    assert data["templates"][0]["uriTemplate"] == "test://template/{id}/data"


def test_call_prints_the_result() -> None:
    done = run("call", "--", *SERVE, "add", "a=2", "b=3.5")
    assert (done.returncode, done.stdout) == (0, '{"result": 5.5}\n'), done.stderr
    done = run("call", "--json", "--", *SERVE, "echo", "text=hi there")
    assert json.loads(done.stdout) == {"content": [{"type": "text", "text": "hi there"}]}


def test_call_a_failing_tool_exits_1_after_printing() -> None:
    done = run("call", "--", *SERVE, "test_error_handling")
    assert done.returncode == 1
    assert done.stdout == "This tool intentionally returns an error for testing\n"
    assert_one_line_error(done.stderr, "tool test_error_handling reported an error")


def test_call_errors_are_one_line() -> None:
    unknown = run("call", "--", *SERVE, "no_such_tool")
    assert unknown.returncode == 1
    assert_one_line_error(unknown.stderr, "error -32602: Unknown tool: no_such_tool")
    missing = run("call", "--", "/nonexistent/program", "tool")
    assert missing.returncode == 1
    assert_one_line_error(missing.stderr, "cannot start the server")
    died = run("call", "--", PYTHON, "-c", "import sys; sys.exit(3)", "tool")
    assert died.returncode == 1
    assert_one_line_error(died.stderr, "")


def test_a_server_that_crashes_is_one_line_naming_its_error() -> None:
    """The child's traceback (its last stderr lines) becomes one line ending with the
    line that names its error."""
    crash = run("call", "--", PYTHON, "-c", "raise RuntimeError('boom')", "tool")
    assert crash.returncode == 1
    assert crash.stderr.count("\n") == 1, crash.stderr
    assert crash.stderr.startswith("mcp-ref: ")
    assert crash.stderr.endswith("... RuntimeError: boom\n")


def test_demo_prints_an_annotated_transcript() -> None:
    done = run("demo")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    messages = [line for line in lines if line[:4] in ("C→S ", "S→C ")]
    assert len(messages) >= 40
    for line in messages:
        section = line.rsplit(" ", 1)[-1]
        assert section.startswith("2025-"), line
    text = done.stdout
    for expected in (
        "C→S  request #1 initialize",
        "S→C  result #1 of initialize",
        "C→S  notification notifications/initialized",
        "S→C  notification notifications/message",
        "S→C  notification notifications/progress",
        "S→C  request #1 sampling/createMessage",
        "C→S  result #1 of sampling/createMessage",
        "S→C  notification notifications/resources/updated",
        "(code -32602)",
        "(code -32002)",
    ):
        assert expected in text, expected
    assert lines[-1] == f"{len(messages)} messages."


# ----------------------------------------------------------------------- serve


async def test_serve_speaks_mcp_on_stdio() -> None:
    requests = [
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
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "x"}},
        },
    ]
    stdin = "".join(json.dumps(r) + "\n" for r in requests).encode()
    with trio.fail_after(30):
        process = await trio.lowlevel.open_process(
            SERVE, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        assert process.stdin is not None and process.stdout is not None
        await process.stdin.send_all(stdin)
        output = b""
        while output.count(b"\n") < 2:
            chunk = await process.stdout.receive_some()
            assert chunk, "the server stopped before answering"
            output += chunk
        await process.stdin.aclose()  # end of input: the server exits
        assert await process.wait() == 0
        output += b"".join([chunk async for chunk in process.stdout])
    replies = [json.loads(line) for line in output.splitlines()]
    assert [r["id"] for r in replies] == [1, 2]  # nothing but MCP messages on stdout
    assert replies[0]["result"]["protocolVersion"] == "2025-06-18"
    assert replies[1]["result"]["content"] == [{"type": "text", "text": "x"}]


def test_http_options_need_http(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--stateless"]) == 1
    assert_one_line_error(capsys.readouterr().err, "need --http")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--keepalive", "0"], "--keepalive: Keepalive.interval must be > 0"),
        (["--keepalive", "5", "--http", "127.0.0.1:0"], "--keepalive works on stdio"),
    ],
)
def test_bad_keepalive_options_are_one_line_errors(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", *args]) == 1
    assert_one_line_error(capsys.readouterr().err, message)


@pytest.mark.parametrize(
    "extra",
    [
        ["--http", "127.0.0.1:0"],
        ["--http", "127.0.0.1:0", "--json-response"],
        ["--http", "127.0.0.1:0", "--stateless"],
        ["--ws", "127.0.0.1:0"],
    ],
)
async def test_serve_over_the_network_for_real(extra: list[str]) -> None:
    """``mcp-ref serve --http|--ws 127.0.0.1:0`` prints its URL once it listens; a client
    calls the reference server's echo tool there."""
    import re
    import sys

    import trio

    from mcp_ref.client import open_http_client, open_websocket_client

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            proc = await nursery.start(
                partial(
                    trio.run_process,
                    [sys.executable, "-m", "mcp_ref", "serve", *extra],
                    stderr=subprocess.PIPE,
                    check=False,
                )
            )
            buf = b""
            while b"\n" not in buf:
                chunk = await proc.stderr.receive_some()
                assert chunk, f"the server exited: {buf!r}"
                buf += chunk
            match = re.search(rb"((?:http|ws)://\S+)", buf)
            assert match, buf
            url = match.group(1).decode()
            opener = open_websocket_client if url.startswith("ws:") else open_http_client
            async with opener(url) as client:
                result = await client.call_tool("echo", {"text": "over the network"})
            assert result.content[0].text == "over the network"
            proc.terminate()


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["serve", "--server", "nowhere"], "MODULE:ATTR"),
        (["serve", "--server", "no_such_module_xyz:app"], "cannot import"),
        (["serve", "--server", "mcp_ref.cli:nothing"], "no attribute"),
        (["serve", "--server", "mcp_ref.cli:DEFAULT_SERVER"], "not an MCP server"),
        (["serve", "--http", "nowhere"], "HOST:PORT"),
        (["inspect"], "after --"),
        (["call", "--", "tool"], "usage"),
        ([], "give a command"),
    ],
)
def test_usage_errors_are_one_line(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 1
    assert_one_line_error(capsys.readouterr().err, fragment)


def test_console_script_is_declared() -> None:
    scripts = {ep.name: ep.value for ep in entry_points(group="console_scripts")}
    if "mcp-ref" not in scripts:
        pytest.skip("mcp-ref is not installed in this environment (pip install -e .)")
    assert scripts["mcp-ref"] == "mcp_ref.cli:main"


def test_a_reader_that_goes_away_is_not_an_error() -> None:
    """``mcp-ref demo | head -1``: the closed pipe ends the command quietly, exit 0."""
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_ref", "demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # like `head -1` exiting
    rc = proc.wait(timeout=60)
    err = proc.stderr.read().decode()
    assert rc == 0, err
    assert "BrokenPipe" not in err and "Traceback" not in err

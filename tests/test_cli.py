"""The ``mcp-ref`` command: serve, demo, inspect, call, read, prompt; errors as one line."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from functools import partial
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest
import trio

from mcp_ref import cli
from mcp_ref.cli import Transcript, coerce_arguments, main, parse_arguments, parse_value
from mcp_ref.cli.client import (
    ClientOptions,
    call_command,
    inspect_command,
    prompt_command,
    read_command,
)
from mcp_ref.cli.errors import explain, first_error
from mcp_ref.cli.serve import load_server
from mcp_ref.server import Server

PYTHON = sys.executable
SERVE = [PYTHON, "-m", "mcp_ref", "serve"]
ROOT = str(Path(__file__).resolve().parents[1])
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
"""Children import this checkout's mcp_ref, whatever their working directory."""


def run(
    *args: str, timeout: float = 60, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m mcp_ref ARGS`` (the same entry as the ``mcp-ref`` script)."""
    return subprocess.run(
        [PYTHON, "-m", "mcp_ref", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=ENV,
        cwd=cwd,
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


SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "flags": {"type": "array", "items": {"type": "string"}},
        "maybe": {"type": ["string", "null"]},
        "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        "color": {"enum": ["red", "green"]},
        "any": {},
    },
}


@pytest.mark.parametrize(
    ("key", "text", "value"),
    [
        ("name", "123", "123"),  # a string property keeps the text
        ("name", "true", "true"),
        ("name", '"quoted"', '"quoted"'),
        ("count", "123", 123),
        ("ratio", "2", 2),
        ("count", "many", "many"),  # not JSON: the text, for the server to refuse
        ("flags", '["a","b"]', ["a", "b"]),
        ("maybe", "null", None),
        ("maybe", "7", "7"),  # 7 is no string and no null: the text
        ("either", "7", 7),
        ("either", "[7]", "[7]"),
        ("color", "red", "red"),
        ("any", "3", 3),  # a schema that says nothing: today's rule
        ("unknown", "3", 3),
        ("unknown", "three", "three"),
    ],
)
def test_key_values_are_read_by_the_input_schema(key: str, text: str, value: Any) -> None:
    assert coerce_arguments({key: text}, SCHEMA) == {key: value}
    assert coerce_arguments({key: text}, None) == {key: parse_value(text)}


def test_an_error_of_a_group_is_its_first_that_is_not_a_cancellation() -> None:
    async def cancelled() -> trio.Cancelled:
        with trio.CancelScope() as scope:
            scope.cancel()
            try:
                await trio.lowlevel.checkpoint()
            except trio.Cancelled as exc:
                return exc
        raise AssertionError("not cancelled")

    cancel = trio.run(cancelled)
    boom = OSError(98, "Address already in use")
    group = BaseExceptionGroup("outer", [BaseExceptionGroup("inner", [cancel, boom])])
    assert first_error(BaseExceptionGroup("x", [cancel, group])) is boom
    assert explain(group) == "OSError: [Errno 98] Address already in use"
    assert explain(BaseExceptionGroup("only", [cancel])) == "cancelled"


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


def test_demo_legacy_prints_the_handshake_eras_annotated_transcript() -> None:
    done = run("demo", "--era", "legacy")
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


def test_demo_speaks_the_2026_07_28_era_by_default() -> None:
    done = run("demo")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    messages = [line for line in lines if line[:4] in ("C→S ", "S→C ")]
    assert len(messages) >= 40
    for line in messages:  # every section is the modern revision's
        assert line.rsplit(" ", 1)[-1].startswith("2026-07-28/"), line
    text = done.stdout
    assert not [line for line in messages if "initialize" in line]
    for expected in (
        "C→S  request #1 server/discover",
        '"io.modelcontextprotocol/protocolVersion":"2026-07-28"',
        "(input_required)         2026-07-28/basic/patterns/mrtr",
        '"inputResponses":{"sampling-1"',
        '"inputResponses":{"elicitation-1"',
        "S→C  notification notifications/subscriptions/acknowledged",
        "S→C  notification notifications/resources/updated",
        "(code -32602)",
    ):
        assert expected in text, expected
    assert "(code -32002)" not in text  # an unknown resource is -32602 in 2026-07-28
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


@pytest.fixture
def occupied_port() -> Iterator[int]:
    """A loopback port some other socket is listening on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


@pytest.mark.parametrize("transport", ["--http", "--ws"])
def test_an_address_in_use_is_one_line_naming_it(
    transport: str, occupied_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", transport, f"127.0.0.1:{occupied_port}"]) == 1
    assert capsys.readouterr().err == (
        f"mcp-ref: cannot listen on 127.0.0.1:{occupied_port}: address already in use\n"
    )


def test_an_address_in_use_is_one_line_from_the_console_too(occupied_port: int) -> None:
    """The same through ``python -m mcp_ref``: no traceback from the process either."""
    done = run("serve", "--http", f"127.0.0.1:{occupied_port}")
    assert done.returncode == 1
    assert done.stderr == (
        f"mcp-ref: cannot listen on 127.0.0.1:{occupied_port}: address already in use\n"
    )


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["serve", "--server", "nowhere"], "cannot import nowhere: no module 'nowhere'"),
        (["serve", "nowhere.py"], "cannot load nowhere.py: no such file"),
        (["serve", "json"], "no server in json: no Server instance"),
        (["serve", "mcp_ref.cli", "--server", "mcp_ref.cli"], "give the server once"),
        (["serve", "--server", "no_such_module_xyz:app"], "cannot import"),
        (["serve", "--server", "mcp_ref.cli:nothing"], "no attribute"),
        (["serve", "--server", "mcp_ref.cli:DEFAULT_SERVER"], "not an MCP server"),
        (["serve", "--http", "nowhere"], "HOST:PORT"),
        (["inspect"], "after --"),
        (["call", "--", "tool"], "usage"),
        (["call", "--", "python", "server.py"], "server.py looks like the server's file"),
        (["call", "--", "node", "build/index"], "build/index looks like the server's file"),
        (["call", "--url", "http://x/mcp", "--", "python", "tool"], "with --url, no command"),
        (["call", "--url", "ftp://x/mcp", "tool"], "--url takes http://"),
        (["inspect", "--url", "http://x/mcp", "--", "python"], "not both"),
        (["read", "--", "python"], "usage: mcp-ref read"),
        (["prompt", "--url", "http://x/mcp"], "usage: mcp-ref prompt"),
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


# ------------------------------------------------------------- serve FILE and MODULE

SERVER_FILE = """
from mcp_ref.server import Server

{name} = Server("{label}", "1.0")


@{name}.tool()
def hello(name: str) -> str:
    \"\"\"Greet.\"\"\"
    return "hello " + name


def make_other() -> Server:
    return Server("made", "1.0")


if __name__ == "__main__":
    raise SystemExit("the __main__ block must not run")
"""


@pytest.fixture
def isolated_imports(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """Run in ``tmp_path``; ``sys.path`` and the modules imported are put back after."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        del sys.modules[name]


@pytest.mark.parametrize("name", ["server", "mcp", "app", "my_only_server"])
def test_serve_finds_the_server_of_a_file(isolated_imports: Path, name: str) -> None:
    (isolated_imports / f"file_{name}.py").write_text(SERVER_FILE.format(name=name, label=name))
    found = load_server(f"file_{name}.py")
    assert isinstance(found, Server) and found.info.name == name


def test_serve_takes_file_attr_and_module_attr_from_the_current_directory(
    isolated_imports: Path,
) -> None:
    (isolated_imports / "sub").mkdir()
    (isolated_imports / "sub" / "deep.py").write_text(SERVER_FILE.format(name="s", label="deep"))
    (isolated_imports / "here_mod.py").write_text(SERVER_FILE.format(name="x", label="here"))
    assert load_server("sub/deep.py:s").info.name == "deep"
    assert load_server("sub/deep.py:make_other").info.name == "made"  # a factory is called
    # As under the console script: the current directory is not on sys.path.
    sys.path[:] = [p for p in sys.path if p not in ("", str(isolated_imports))]
    assert load_server("here_mod:x").info.name == "here"
    assert sys.path[0] == str(isolated_imports)
    assert load_server("here_mod").info.name == "here"


@pytest.mark.parametrize(
    ("source", "target", "fragment"),
    [
        ("a = 1\n", "f.py", "no server in f.py: no Server instance, and no server, mcp, app"),
        ("a = 1\n", "f.py", "(it holds: a)"),
        (
            "from mcp_ref.server import Server\na = Server('a', '1')\nb = Server('b', '1')\n",
            "f.py",
            "f.py holds several servers (a, b): name one, as f.py:ATTR",
        ),
        ("def server(x):\n    pass\n", "f.py", "f.py:server needs arguments"),
        ("app = 3\n", "f.py:app", "f.py:app is a int, not an MCP server"),
        ("def app():\n    return 3\n", "f.py:app", "f.py:app() made a int, not an MCP server"),
        ("raise RuntimeError('broken')\n", "f.py", "cannot load f.py: RuntimeError: broken"),
        ("x = \n", "f.py", "cannot load f.py: SyntaxError"),
        ("a = 1\n", "f.py:b", "f.py has no attribute 'b'"),
    ],
)
def test_serve_says_what_it_found_when_there_is_no_server(
    isolated_imports: Path, source: str, target: str, fragment: str
) -> None:
    (isolated_imports / "f.py").write_text(source)
    with pytest.raises(cli.CliError) as caught:
        load_server(target)
    message = str(caught.value)
    assert fragment in message and "\n" not in message


def test_serve_a_file_for_real(tmp_path: Path) -> None:
    """``mcp-ref serve FILE.py`` as a stdio server; ``call`` reads ``name=123`` by the
    tool's schema (a string)."""
    (tmp_path / "greeter.py").write_text(SERVER_FILE.format(name="mcp", label="greeter"))
    done = run("call", "--", *SERVE, "greeter.py", "hello", "name=123", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "hello 123\n"), done.stderr


# ----------------------------------------------------------------- read and prompt


def test_read_prints_text_as_is_and_blobs_as_one_line() -> None:
    text = run("read", "--", *SERVE, "test://static-text")
    assert (text.returncode, text.stdout) == (
        0,
        "This is the content of the static text resource.\n",
    ), text.stderr
    blob = run("read", "--", *SERVE, "test://static-binary")
    assert (blob.returncode, blob.stdout) == (
        0,
        "[blob test://static-binary (image/png), 69 bytes]\n",
    ), blob.stderr
    missing = run("read", "--", *SERVE, "test://no-such-resource")
    assert missing.returncode == 1
    assert_one_line_error(missing.stderr, "error -32002")


def test_prompt_prints_its_messages() -> None:
    done = run("prompt", "--", *SERVE, "test_prompt_with_arguments", "arg1=1", "arg2=two")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "# A prompt with two required arguments.\n"
        "user: Prompt with arguments: arg1='1', arg2='two'\n"  # prompt arguments stay text
    )


def test_call_shows_progress_and_log_messages_on_stderr() -> None:
    progress = run("call", "--", *SERVE, "test_tool_with_progress")
    assert progress.returncode == 0, progress.stderr
    assert progress.stderr.splitlines() == [
        "[progress] 0/100 Started",
        "[progress] 50/100 Half way",
        "[progress] 100/100 Done",
        "[era] legacy era (initialize), protocol 2025-11-25",
    ]
    logs = run("call", "--", *SERVE, "test_tool_with_logging")
    assert logs.returncode == 0, logs.stderr
    assert logs.stderr.splitlines() == [
        "[info] test_tool_with_logging: Tool execution started",
        "[info] test_tool_with_logging: Tool processing data",
        "[info] test_tool_with_logging: Tool execution completed",
        "[era] legacy era (initialize), protocol 2025-11-25",
    ]


# ------------------------------------------------------------------------ --url


@pytest.mark.parametrize("transport", ["http", "ws"])
async def test_client_commands_take_a_url(
    transport: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``inspect``, ``call``, ``read`` and ``prompt`` with ``--url`` against the reference
    server over Streamable HTTP and WebSocket, in this process."""
    from mcp_ref.examples.everything import make_server
    from mcp_ref.trio import serve_http, serve_websocket

    server = make_server()
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            if transport == "http":
                info = await nursery.start(serve_http, server)
                url = info.url
            else:
                port = await nursery.start(serve_websocket, server, "127.0.0.1", 0)
                url = f"ws://127.0.0.1:{port}/mcp"
            out = io.StringIO()
            assert await inspect_command(None, ClientOptions(out=out, url=url)) == 0
            assert "  echo(text: string)  - Returns the text unchanged." in out.getvalue()
            out = io.StringIO()
            assert await call_command(["echo", "text=42"], ClientOptions(out=out, url=url)) == 0
            assert out.getvalue() == "42\n"  # echo's text is a string: not the number 42
            out = io.StringIO()
            assert await read_command(["test://static-text"], ClientOptions(out=out, url=url)) == 0
            assert out.getvalue() == "This is the content of the static text resource.\n"
            out = io.StringIO()
            assert (
                await prompt_command(
                    ["test_simple_prompt"], ClientOptions(out=out, as_json=True, url=url)
                )
                == 0
            )
            assert json.loads(out.getvalue())["messages"][0]["role"] == "user"
            nursery.cancel_scope.cancel()
    assert "Traceback" not in capsys.readouterr().err

"""One-line serving: ``Server.run()``, ``Server.run_http()``, ``mcp-ref serve FILE`` and
``connect_in_memory``.

Signals go to real child processes (a signal handler is per process); each test waits
for the child's "listening on" line, never for a fixed time.  The rest runs in-process.
Every test is bounded by ``trio.fail_after``.

Source: 2025-06-18/basic/lifecycle#shutdown, 2025-06-18/basic/lifecycle#stdio.1 (a
client may send SIGTERM), 2025-06-18/basic/transports#streamable-http.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from mcp_ref import McpError
from mcp_ref import types as t
from mcp_ref.client import connect_in_memory, open_http_client
from mcp_ref.server import Context, Server
from mcp_ref.trio import RequestContext

ROOT = str(Path(__file__).resolve().parents[1])
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}

SCRIPT = '''
import sys

import trio

from mcp_ref.server import Context, Server

server = Server("signals", "1.0")


@server.tool()
async def slow(seconds: float, ctx: Context) -> str:
    """Say "started" (a log message), wait ``seconds``, answer "finished"."""
    await ctx.log("info", "started")
    await trio.sleep(seconds)
    return "finished"


if __name__ == "__main__":
    if sys.argv[1] == "http":
        server.run_http(port=int(sys.argv[2]), grace_seconds=float(sys.argv[3]))
    else:
        server.run(grace_seconds=float(sys.argv[2]))
'''


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "signals_server.py"
    path.write_text(SCRIPT)
    return path


async def _first_line(stream: Any) -> tuple[str, bytes]:
    """The child's first stderr line, and whatever came after it in the same reads."""
    buf = b""
    while b"\n" not in buf:
        chunk = await stream.receive_some()
        assert chunk, f"the child exited before its first line: {buf!r}"
        buf += chunk
    line, _, rest = buf.partition(b"\n")
    return line.decode(), rest


async def _rest(stream: Any) -> str:
    buf = b""
    while chunk := await stream.receive_some():
        buf += chunk
    return buf.decode()


def _command(kind: str, script: Path, grace: float) -> list[str]:
    if kind == "run_http":
        return [sys.executable, str(script), "http", "0", str(grace)]
    return [
        *(sys.executable, "-m", "mcp_ref", "serve", str(script)),
        *("--http", "127.0.0.1:0", "--grace", str(grace), "--no-access-log"),
    ]


# Each case: how the server runs, the signal, the tool's seconds, the grace seconds, the
# exit status, the last stderr line, and what the request in flight gets.
CASES = [
    ("run_http", signal.SIGTERM, 0.2, 20, 0, None, "finished"),
    ("run_http", signal.SIGINT, 60, 0.2, 130, "interrupted", -32603),
    ("cli", signal.SIGTERM, 0.2, 20, 0, "mcp-ref: stopped (SIGTERM)", "finished"),
    ("cli", signal.SIGINT, 60, 0.2, 130, "mcp-ref: interrupted", -32603),
]


@pytest.mark.parametrize(
    ("kind", "signum", "seconds", "grace", "status", "last_line", "answer"),
    CASES,
    ids=[f"{case[0]}-{case[1].name}" for case in CASES],
)
async def test_a_signal_ends_http_serving_with_one_line(
    script: Path,
    kind: str,
    signum: signal.Signals,
    seconds: float,
    grace: float,
    status: int,
    last_line: str | None,
    answer: str | int,
) -> None:
    """SIGTERM: the request in flight is answered within the grace, exit 0.  SIGINT:
    the one still running after the grace is answered with -32603, exit 130.  Either
    way, after the "listening" line, at most one line on stderr and no traceback."""
    with trio.fail_after(30):
        process = await trio.lowlevel.open_process(
            _command(kind, script, grace), stderr=subprocess.PIPE, env=ENV
        )
        try:
            assert process.stderr is not None
            line, rest = await _first_line(process.stderr)
            match = re.fullmatch(r"(?:listening on|mcp-ref: serving \S+ on) (http://\S+/mcp)", line)
            assert match, line
            started = trio.Event()
            got: list[Any] = []

            async def call(client: Any) -> None:
                try:
                    result = await client.call_tool("slow", {"seconds": seconds})
                    got.append(result.content[0].text)
                except McpError as exc:
                    got.append(exc.code)

            async with open_http_client(
                match.group(1), on_log=lambda params: started.set()
            ) as client:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(call, client)
                    await started.wait()  # the request is in flight
                    process.send_signal(signum)
            assert got == [answer]
            assert await process.wait() == status
            err = rest.decode() + await _rest(process.stderr)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    lines = err.splitlines()
    assert lines == ([last_line] if last_line else []), err


@pytest.fixture
def occupied_port() -> Iterator[int]:
    """A loopback port some other socket is listening on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


async def test_run_http_names_an_address_it_cannot_bind(script: Path, occupied_port: int) -> None:
    with trio.fail_after(30):
        done = await trio.run_process(
            [sys.executable, str(script), "http", str(occupied_port), "1"],
            capture_stderr=True,
            check=False,
            env=ENV,
        )
    assert done.returncode == 1
    assert done.stderr.decode() == (
        f"cannot listen on 127.0.0.1:{occupied_port}: address already in use\n"
    )


def _message(message_id: int, method: str, params: Any) -> bytes:
    message = {"jsonrpc": "2.0", "id": message_id, "method": method, "params": params}
    return json.dumps(message).encode()


STDIO_CASES = [
    (signal.SIGTERM, 0.2, 20, 0, "", {"content": [{"type": "text", "text": "finished"}]}),
    (signal.SIGINT, 60, 0.2, 130, "interrupted\n", -32603),
]


@pytest.mark.parametrize(
    ("signum", "seconds", "grace", "status", "stderr", "answer"),
    STDIO_CASES,
    ids=[case[0].name for case in STDIO_CASES],
)
async def test_a_signal_ends_run_on_stdio_with_one_line(
    script: Path,
    signum: signal.Signals,
    seconds: float,
    grace: float,
    status: int,
    stderr: str,
    answer: Any,
) -> None:
    """``server.run()`` (stdio): the same stop as ``run_http``, the request in flight
    answered on stdout, nothing but MCP messages there."""
    initialize = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    }
    call = {"name": "slow", "arguments": {"seconds": seconds}}
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    stdin = b"\n".join(
        [_message(1, "initialize", initialize), note, _message(2, "tools/call", call)]
    )
    with trio.fail_after(30):
        process = await trio.lowlevel.open_process(
            [sys.executable, str(script), "stdio", str(grace)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=ENV,
        )
        try:
            assert process.stdin and process.stdout and process.stderr
            await process.stdin.send_all(stdin + b"\n")
            out = b""
            while b'"started"' not in out:  # the tool's log message: it is running
                chunk = await process.stdout.receive_some()
                assert chunk, out
                out += chunk
            process.send_signal(signum)
            out += (await _rest(process.stdout)).encode()
            assert await process.wait() == status
            err = await _rest(process.stderr)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    replies = {m.get("id"): m for m in map(json.loads, out.splitlines())}
    reply = replies[2]
    assert reply.get("result", reply.get("error", {}).get("code")) == answer
    assert err == stderr


# ------------------------------------------------------------------ in memory


def _server() -> Server:
    server = Server("memory", "1.0")

    @server.tool()
    async def add(a: float, b: float, ctx: Context) -> float:
        """Add two numbers, saying so in a log message."""
        await ctx.log("info", f"adding {a} and {b}")
        return a + b

    @server.tool()
    async def ask(question: str, ctx: Context) -> str:
        """Ask the client's model."""
        result = await ctx.sample(question, max_tokens=10)
        assert isinstance(result.content, t.TextContent)
        return result.content.text

    return server


async def test_connect_in_memory_gives_an_initialized_client() -> None:
    server = _server()
    logs: list[Any] = []
    with trio.fail_after(10):
        async with connect_in_memory(server, on_log=logs.append) as client:
            assert client.server_info.name == "memory"
            assert [tool.name for tool in await client.list_tools()] == ["add", "ask"]
            result = await client.call_tool("add", {"a": 2, "b": 3})
            assert result.structured_content == {"result": 5.0}
            assert len(server.sessions) == 1
        assert server.sessions == ()  # the server's session ended with the block
    assert [log.data for log in logs] == ["adding 2.0 and 3.0"]


async def test_connect_in_memory_takes_the_client_options() -> None:
    """Client options (here a sampling handler) reach :func:`open_client`; the server's
    requests to the client go through memory too."""

    def sample(params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        return t.CreateMessageResult(
            role="assistant", content=t.TextContent(text="forty-two"), model="test"
        )

    with trio.fail_after(10):
        async with connect_in_memory(_server(), sampling_handler=sample) as client:
            result = await client.call_tool("ask", {"question": "why?"})
    assert result.content[0].text == "forty-two"


async def test_connect_in_memory_serves_any_handler() -> None:
    """A plain :class:`~mcp_ref.trio.Handler` (no ``serve`` method) gets a session."""

    class Echo:
        async def handle_request(self, ctx: RequestContext) -> Any:
            if ctx.method == "initialize":
                return t.InitializeResult(
                    protocol_version=ctx.params.protocol_version,
                    capabilities=t.ServerCapabilities(),
                    server_info=t.Implementation(name="bare", version="0"),
                )
            raise McpError(-32601, f"no {ctx.method}")

    with trio.fail_after(10):
        async with connect_in_memory(Echo()) as client:
            assert client.server_info.name == "bare"
            await client.ping()


async def test_leaving_connect_in_memory_ends_a_tool_in_progress() -> None:
    """A request still running when the block exits does not keep it open."""
    server = Server("stuck", "1.0")
    running = trio.Event()

    @server.tool()
    async def forever() -> str:
        running.set()
        await trio.sleep_forever()
        return "never"

    with trio.fail_after(10):
        async with connect_in_memory(server) as client, trio.open_nursery() as nursery:
            nursery.start_soon(client.call_tool, "forever")
            await running.wait()
            nursery.cancel_scope.cancel()
    assert server.sessions == ()

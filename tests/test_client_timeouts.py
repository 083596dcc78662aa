"""Client timeouts that tell the truth: "the server never answered" (NoAnswerError) is
not "the server answered with an error" (McpError), in the trio, asyncio and blocking
clients and on the ``mcp-ref inspect``/``call`` command line (``--timeout``)."""

from __future__ import annotations

import asyncio
import shlex
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from mcp_ref import McpError, RequestTimeout, cli
from mcp_ref import asyncio as mcp_asyncio
from mcp_ref._errors import REQUEST_TIMEOUT
from mcp_ref.blocking import connect_stdio
from mcp_ref.client import Client, NoAnswerError, open_client
from mcp_ref.trio import StreamChannel

from . import _stdio_server
from .test_trio_session import RawPeer

spec = pytest.mark.spec
PYTHON = sys.executable
SILENT = [PYTHON, "-c", "import sys; sys.stdin.read()"]
"""A program that reads its stdin and never writes: no MCP server."""
LIMIT = 60  # seconds of real time for one command-line run, at most

INIT_RESULT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "raw", "version": "0"},
}


@asynccontextmanager
async def raw_server(**client_kw: Any) -> AsyncIterator[tuple[Client, RawPeer]]:
    """A Client in memory against a raw peer that answered ``initialize``."""
    a, b = trio.testing.memory_stream_pair()
    peer = RawPeer(b)

    initialized = trio.Event()

    async def initialize() -> None:
        init = await peer.receive()
        await peer.send({"jsonrpc": "2.0", "id": init["id"], "result": INIT_RESULT})
        assert (await peer.receive())["method"] == "notifications/initialized"
        initialized.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(initialize)
        async with open_client(StreamChannel(a), **client_kw) as client:
            await initialized.wait()  # the peer is read by one task at a time
            yield client, peer


# ------------------------------------------------------------------ the trio client


@spec("2025-06-18/basic/lifecycle#timeouts.3")
async def test_no_answer_to_initialize(autojump_clock: trio.testing.MockClock) -> None:
    """A peer that never answers ``initialize``: NoAnswerError after the
    ``initialize_timeout`` given (not the per-request default), not an error answer."""
    with trio.fail_after(1000):
        a, b = trio.testing.memory_stream_pair()
        peer = RawPeer(b)
        start = trio.current_time()
        with pytest.raises(NoAnswerError) as info:
            async with open_client(
                StreamChannel(a),
                timeout=RequestTimeout(seconds=60),
                initialize_timeout=RequestTimeout(seconds=5),
            ):
                raise AssertionError("must not get here")
        assert trio.current_time() - start == 5
        assert (await peer.receive())["method"] == "initialize"
    error = info.value
    assert (error.method, error.elapsed, error.code) == ("initialize", 5, REQUEST_TIMEOUT)
    assert error.message == "no answer to initialize within 5 s"
    assert isinstance(error, McpError)  # callers that caught McpError still do


@spec("2025-06-18/basic/lifecycle#timeouts.2")
async def test_no_answer_to_a_request(autojump_clock: trio.testing.MockClock) -> None:
    """A request the peer leaves unanswered: NoAnswerError, and the peer is told
    (``notifications/cancelled``) that we stopped waiting."""
    with trio.fail_after(1000):
        async with raw_server(timeout=RequestTimeout(seconds=30)) as (client, peer):
            start = trio.current_time()
            with pytest.raises(NoAnswerError) as info:
                await client.ping(timeout=RequestTimeout(seconds=2))
            assert trio.current_time() - start == 2
            ping = await peer.receive()
            cancelled = await peer.receive()
    assert (info.value.method, info.value.elapsed) == ("ping", 2)
    assert cancelled["method"] == "notifications/cancelled"
    assert cancelled["params"]["requestId"] == ping["id"]


async def test_an_error_answer_with_the_timeout_code_stays_an_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A server's own -32001 answer, even one dressed like our timeout, is an answer:
    a plain McpError, before the timeout and for a request with no timeout."""
    with trio.fail_after(1000):
        async with raw_server(timeout=RequestTimeout(seconds=5)) as (client, peer):

            async def answer(after: float, elapsed: float) -> None:
                request = await peer.receive()
                await trio.sleep(after)
                error = {
                    "code": REQUEST_TIMEOUT,
                    "message": "upstream timed out",
                    "data": {"method": "ping", "elapsed": elapsed},
                }
                await peer.send({"jsonrpc": "2.0", "id": request["id"], "error": error})

            async with trio.open_nursery() as nursery:
                nursery.start_soon(answer, 1, 5.0)
                with pytest.raises(McpError) as info:
                    await client.ping()
            assert not isinstance(info.value, NoAnswerError)
            assert info.value.message == "upstream timed out"

            async with trio.open_nursery() as nursery:
                nursery.start_soon(answer, 100, 100.0)
                with pytest.raises(McpError) as info:
                    await client.ping(timeout=None)
            assert not isinstance(info.value, NoAnswerError)


async def test_a_late_error_with_other_data_is_an_answer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """After progress restarted the clock, a server's -32001 may come later than the
    timeout's seconds; with its own data it is still its answer."""
    with trio.fail_after(1000):
        limit = RequestTimeout(seconds=2, reset_on_progress=True, maximum=20)
        async with raw_server(timeout=limit) as (client, peer):

            async def answer() -> None:
                request = await peer.receive()
                token = request["params"]["_meta"]["progressToken"]
                for step in range(1, 4):
                    await trio.sleep(1.5)
                    params = {"progressToken": token, "progress": step}
                    await peer.send(
                        {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}
                    )
                error = {"code": REQUEST_TIMEOUT, "message": "slow", "data": {"why": "busy"}}
                await peer.send({"jsonrpc": "2.0", "id": request["id"], "error": error})

            async with trio.open_nursery() as nursery:
                nursery.start_soon(answer)
                with pytest.raises(McpError) as info:
                    await client.call_tool("slow", on_progress=lambda p: None)
    assert not isinstance(info.value, NoAnswerError)
    assert info.value.data == {"why": "busy"}


# ------------------------------------------------------------ asyncio and blocking


def test_blocking_client_no_answer_to_initialize() -> None:
    with pytest.raises(NoAnswerError) as info, connect_stdio(SILENT, timeout=0.5):
        raise AssertionError("must not get here")
    assert info.value.method == "initialize"
    assert info.value.message.startswith("no answer to initialize within 0.5")


def test_asyncio_client_no_answer_to_initialize() -> None:
    async def run() -> None:
        async with asyncio.timeout(LIMIT), mcp_asyncio.open_stdio_client(SILENT, timeout=0.5):
            raise AssertionError("must not get here")

    with pytest.raises(NoAnswerError) as info:
        asyncio.run(run())
    assert info.value.method == "initialize"
    assert info.value.message.startswith("no answer to initialize within 0.5")


# ------------------------------------------------------------------ the command line


async def mcp_ref(*args: str) -> tuple[int, str]:
    """Run ``python -m mcp_ref ARGS``; return its exit status and stderr."""
    with trio.fail_after(LIMIT):
        done = await trio.run_process(
            [PYTHON, "-m", "mcp_ref", *args],
            stdin=subprocess.DEVNULL,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    return done.returncode, done.stderr.decode()


async def test_cli_inspect_a_program_that_never_answers() -> None:
    status, err = await mcp_ref("inspect", "--timeout", "0.5", "--", *SILENT)
    assert status == 1
    assert err == (
        f"mcp-ref: no answer to initialize from {shlex.join(SILENT)} within 0.5 s: "
        "is it an MCP server?\n"
    )


async def test_cli_call_a_program_that_never_answers() -> None:
    status, err = await mcp_ref("call", "--timeout", "0.5", "--", *SILENT, "tool", "a=1")
    assert status == 1
    assert err == (
        f"mcp-ref: no answer to initialize from {shlex.join(SILENT)} within 0.5 s: "
        "is it an MCP server?\n"
    )


async def test_cli_call_with_the_tool_name_forgotten() -> None:
    """``mcp-ref call -- python server.py``: the script would be taken for the tool and
    a bare ``python`` would wait for its script on stdin, so nothing is started and the
    usage line says what went wrong at once (no wait for ``initialize``)."""
    with trio.fail_after(5):
        status, err = await mcp_ref("call", "--timeout", "30", "--", PYTHON, "server.py")
    assert status == 1
    assert err == (
        "mcp-ref: usage: mcp-ref call [--url URL | -- CMD [ARGS...]] TOOL [key=value ...] "
        "(server.py looks like the server's file, not a tool's name: give the tool after "
        "the command)\n"
    )


async def test_cli_call_a_tool_that_never_answers() -> None:
    """A server that answers ``initialize`` but not the call (``--timeout`` bounds
    both: 5 s, so that a loaded machine still starts the server in time)."""
    server = [PYTHON, _stdio_server.__file__, "normal"]
    status, err = await mcp_ref("call", "--timeout", "5", "--", *server, "silent")
    assert status == 1
    assert err == f"mcp-ref: no answer to tools/call from {shlex.join(server)} within 5 s\n"


def test_cli_initialize_waits_briefly_by_default(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --timeout, initialize gets INITIALIZE_TIMEOUT (10 s; made short here)."""
    assert cli.INITIALIZE_TIMEOUT == 10
    monkeypatch.setattr(cli, "INITIALIZE_TIMEOUT", 0.25)
    assert cli.main(["inspect", "--", *SILENT]) == 1
    assert capsys.readouterr().err == (
        f"mcp-ref: no answer to initialize from {shlex.join(SILENT)} within 0.25 s: "
        "is it an MCP server? (a server slow to start needs a longer --timeout SECONDS)\n"
    )


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan", "inf"])
def test_cli_timeout_must_be_seconds_above_zero(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["call", "--timeout", value, "--", "server", "tool"])
    assert info.value.code == 2
    assert "--timeout: expected seconds above 0" in capsys.readouterr().err

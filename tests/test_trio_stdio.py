"""The stdio transport with a real child process (tests/_stdio_server.py, run with
``sys.executable``): round trip, shutdown (stdin close, SIGTERM, SIGKILL), a crashing
server, a server writing garbage, a server that never answers.

These tests use real time (a child process does not follow a MockClock), each under
``fail_after``; grace periods are small.  Unix only."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from mcp_ref import CLIENT, RequestTimeout
from mcp_ref import types as t
from mcp_ref._errors import REQUEST_TIMEOUT
from mcp_ref.events import Notification
from mcp_ref.trio import (
    ProcessChannel,
    RequestContext,
    Session,
    SessionClosed,
    open_session,
    open_stdio_process,
)

from ._pair import init_request

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="stdio tests need POSIX")
spec = pytest.mark.spec

SERVER = str(Path(__file__).resolve().parent / "_stdio_server.py")
LIMIT = 30


def command(mode: str = "normal") -> list[str]:
    return [sys.executable, SERVER, mode]


class Quiet:
    """A client handler that refuses everything (declares no capabilities)."""

    def __init__(self) -> None:
        self.notes: list[Notification] = []

    async def handle_request(self, ctx: RequestContext) -> Any:
        raise AssertionError("no server requests expected")

    async def handle_notification(self, session: Session, notification: Notification) -> None:
        self.notes.append(notification)


async def initialize(session: Session) -> t.InitializeResult:
    result = await session.send_request(
        "initialize", init_request(caps=t.ClientCapabilities()).params
    )
    await session.send_notification("notifications/initialized")
    assert isinstance(result, t.InitializeResult)
    return result


async def call(session: Session, name: str, **kw: Any) -> Any:
    return await session.send_request("tools/call", t.CallToolRequestParams(name=name), **kw)


@spec(
    "2025-06-18/basic/transports#stdio.1",
    "2025-06-18/basic/transports#stdio.2",
    "2025-06-18/basic/transports#stdio.3",
    "2025-06-18/basic/lifecycle#stdio.1",
)
async def test_round_trip_and_clean_exit_on_stdin_close() -> None:
    with trio.fail_after(LIMIT):
        async with open_stdio_process(command(), shutdown_grace=5) as (channel, process):
            assert isinstance(channel, ProcessChannel)
            async with open_session(channel, CLIENT, Quiet()) as session:
                result = await initialize(session)
                assert result.server_info.name == "stdio-test-server"
                assert result.instructions == "test server"
                echoed = await session.send_request(
                    "tools/call", t.CallToolRequestParams(name="echo", arguments={"x": [1, "é"]})
                )
                assert echoed.content[0].text == '{"x": [1, "\\u00e9"]}'
                assert await session.send_request("ping") == t.Result()
            start = trio.current_time()
        # Closing stdin was enough: serve_stdio returned and the process exited 0.
        assert process.returncode == 0
        assert trio.current_time() - start < 5
        assert "test server starting in normal mode" in channel.stderr_tail
        assert channel.stderr_tail[-1] == "test server: end of input"


@spec("2025-06-18/basic/lifecycle#stdio.1")
async def test_stubborn_server_is_killed() -> None:
    grace = 0.3
    with trio.fail_after(LIMIT):
        async with open_stdio_process(command("stubborn"), shutdown_grace=grace) as (
            channel,
            process,
        ):
            async with open_session(channel, CLIENT, Quiet()) as session:
                await initialize(session)  # the server is up and ignores SIGTERM now
            start = trio.current_time()
        elapsed = trio.current_time() - start
        assert process.returncode == -signal.SIGKILL  # reaped: no zombie
        assert elapsed >= 2 * grace
        assert "test server: end of input" in channel.stderr_tail


@spec("2025-06-18/basic/lifecycle#stdio.1")
async def test_sigterm_is_enough_for_a_server_that_ignores_stdin_close() -> None:
    """A server blocked in a non-trio loop (here: a `sleep` process) gets SIGTERM."""
    with trio.fail_after(LIMIT):
        async with open_stdio_process(["sleep", "60"], shutdown_grace=0.2) as (_, process):
            pass
        assert process.returncode == -signal.SIGTERM


@spec("2025-06-18/basic/lifecycle#stdio.2")
async def test_server_crash_mid_request() -> None:
    with trio.fail_after(LIMIT):
        async with open_stdio_process(command()) as (channel, process):
            async with open_session(channel, CLIENT, Quiet()) as session:
                await initialize(session)
                with pytest.raises(SessionClosed) as info:
                    await call(session, "crash")
                message = info.value.reason
                assert "exited with code 3" in message
                assert "about to crash: boom" in message
                assert session.closed
                with pytest.raises(SessionClosed):
                    await session.send_request("ping")
        assert process.returncode == 3


async def test_garbage_lines_from_server_are_survived() -> None:
    with trio.fail_after(LIMIT):
        async with open_stdio_process(command("garbage")) as (channel, process):
            async with open_session(channel, CLIENT, Quiet()) as session:
                await initialize(session)
                for _ in range(3):
                    echoed = await call(session, "echo")
                    assert echoed.content[0].text == "{}"
                assert not session.closed
        assert process.returncode == 0


@spec(
    "2025-06-18/basic/lifecycle#timeouts.1",
    "2025-06-18/basic/lifecycle#timeouts.2",
)
async def test_server_that_never_answers_times_out() -> None:
    with trio.fail_after(LIMIT):
        async with open_stdio_process(command()) as (channel, process):
            async with open_session(channel, CLIENT, Quiet(), default_timeout=None) as session:
                await initialize(session)  # no timeout: the child may start slowly
                start = trio.current_time()
                with pytest.raises(Exception) as info:
                    await call(session, "silent", timeout=RequestTimeout(seconds=0.3))
                assert getattr(info.value, "code", None) == REQUEST_TIMEOUT
                assert 0.3 <= trio.current_time() - start < 5
                # the session is still usable after the timeout
                assert await session.send_request("ping") == t.Result()
        assert process.returncode == 0


async def test_server_closing_output_ends_session() -> None:
    """A child that exits at once: the session ends with its exit code."""
    script = "import sys; sys.stderr.write('no thanks\\n'); sys.exit(5)"
    with trio.fail_after(LIMIT):
        async with open_stdio_process([sys.executable, "-c", script]) as (channel, process):
            async with open_session(channel, CLIENT, Quiet()) as session:
                await session.wait_closed()
                assert session.close_reason is not None
                assert "exited with code 5" in session.close_reason
                assert "no thanks" in session.close_reason
        assert process.returncode == 5


async def test_bad_commands() -> None:
    with pytest.raises(OSError):
        async with open_stdio_process(["/nonexistent/mcp-server"]):
            pass
    with pytest.raises(TypeError):
        async with open_stdio_process("python server.py"):  # type: ignore[arg-type]
            pass


async def test_cancelled_caller_still_reaps_child() -> None:
    with trio.fail_after(LIMIT):
        procs = []
        with trio.move_on_after(0.5):
            async with open_stdio_process(command("stubborn"), shutdown_grace=0.1) as (
                _,
                process,
            ):
                procs.append(process)
                await trio.sleep_forever()
        assert procs[0].returncode is not None


async def test_stderr_modes(capfd: pytest.CaptureFixture[str]) -> None:
    script = "import sys; sys.stderr.write('line one\\nline two\\n' + 'x' * 5000 + '\\n')"
    with trio.fail_after(LIMIT):
        async with open_stdio_process([sys.executable, "-c", script], stderr="forward") as (
            channel,
            process,
        ):
            await process.wait()
        assert channel.stderr_tail[:2] == ["line one", "line two"]
        assert len(channel.stderr_tail[2]) == 1000  # bounded line length
        assert "line two" in capfd.readouterr().err
        async with open_stdio_process([sys.executable, "-c", script], stderr="discard") as (
            channel,
            process,
        ):
            await process.wait()
        assert channel.stderr_tail == []
        async with open_stdio_process(
            [sys.executable, "-c", script], stderr="capture", stderr_lines=1
        ) as (channel, process):
            await process.wait()
        assert channel.stderr_tail == ["x" * 1000]

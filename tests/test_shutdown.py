"""Graceful shutdown (lifecycle page, "Shutdown"): a server told to stop lets the
requests in progress finish for a grace period, answers those still running with a
JSON-RPC error, ends every SSE response whole, and exits cleanly.

In process, on memory streams with trio's autojump clock: the grace logic of the
session (:meth:`Session.finish_requests`) and of a stdio-like channel stopped by an
event.  Out of process: real ``mcp-ref serve`` processes (stdio and ``--http``) sent
real SIGTERM and SIGINT.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from typing import Any

import h11
import pytest
import trio
import trio.testing

from mcp_ref import SERVER
from mcp_ref import types as t
from mcp_ref._convert import unstructure
from mcp_ref.trio import RequestContext, Session, StreamChannel, open_session, serve_channel

from ._http_raw import RawConnection, request_body
from ._http_raw import open_session as open_http_session
from ._pair import init_request, init_result

spec = pytest.mark.spec

LIMIT = 20  # seconds any one process test may take, at most


class Sleepy:
    """Answers initialize at once; ``tools/call`` sleeps ``arguments["seconds"]``."""

    def __init__(self) -> None:
        self.started = 0
        self.cancelled = 0
        self.running = trio.Event()

    async def handle_request(self, ctx: RequestContext) -> Any:
        if ctx.method == "initialize":
            return init_result()
        assert ctx.method == "tools/call"
        self.started += 1
        self.running.set()
        try:
            await trio.sleep(ctx.params.arguments["seconds"])
        except trio.Cancelled:
            self.cancelled += 1
            raise
        return t.CallToolResult(content=[t.TextContent(text="done")])

    async def handle_notification(self, session: Session, notification: Any) -> None:
        pass


def line(obj: Any) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def call(rid: int, seconds: float) -> bytes:
    return line(
        {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "tools/call",
            "params": {"name": "sleep", "arguments": {"seconds": seconds}},
        }
    )


def opening() -> bytes:
    init = init_request()
    return line(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": unstructure(init.params)}
    ) + line({"jsonrpc": "2.0", "method": "notifications/initialized"})


async def read_until(stream: trio.abc.ReceiveStream, ids: set[int]) -> dict[int, Any]:
    """The answers (by id) of the requests ``ids``, read from a newline stream."""
    got: dict[int, Any] = {}
    buf = b""
    while not ids <= got.keys():
        chunk = await stream.receive_some()
        assert chunk, f"the stream ended before the answers to {ids - got.keys()}"
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for raw in lines:
            if raw.strip():
                msg = json.loads(raw)
                if "id" in msg and ("result" in msg or "error" in msg):
                    got[msg["id"]] = msg
    return got


# ------------------------------------------------------------------ in process


@spec("2025-06-18/basic#responses.4")
async def test_finish_requests_waits_the_grace_then_answers_with_errors(
    autojump_clock: trio.testing.MockClock,
) -> None:
    handler = Sleepy()
    client_end, server_end = trio.testing.memory_stream_pair()
    with trio.fail_after(60):
        async with open_session(StreamChannel(server_end), SERVER, handler) as session:
            await client_end.send_all(opening() + call(1, 2.0) + call(2, 1000.0))
            await read_until(client_end, {0})
            while session.requests_in_progress < 2:
                await trio.testing.wait_all_tasks_blocked()
            start = trio.current_time()
            stopped = await session.finish_requests(5.0, reason="the server is shutting down")
            elapsed = trio.current_time() - start
            answers = await read_until(client_end, {1, 2})
    assert stopped == 1
    assert 5.0 <= elapsed < 5.5  # the whole grace, and no more
    assert answers[1]["result"]["content"][0]["text"] == "done"  # finished within it
    assert answers[2]["error"]["code"] == -32603  # cancelled at its end, and answered
    assert answers[2]["error"]["message"] == "the server is shutting down"
    assert handler.cancelled == 1


async def test_finish_requests_returns_at_once_when_nothing_runs(
    autojump_clock: trio.testing.MockClock,
) -> None:
    handler = Sleepy()
    client_end, server_end = trio.testing.memory_stream_pair()
    with trio.fail_after(60):
        async with open_session(StreamChannel(server_end), SERVER, handler) as session:
            await client_end.send_all(opening())
            await read_until(client_end, {0})
            start = trio.current_time()
            assert await session.finish_requests(5.0, reason="stop") == 0
            assert trio.current_time() == start


@spec("2025-06-18/basic/lifecycle#stdio.2")
async def test_stop_event_ends_input_and_answers_within_the_grace(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """serve_channel with a stop (serve_stdio's core): the stop ends the input as end of
    input would; the request that ends within the grace is answered, the other gets
    an error; the server returns though the client never closed its side."""
    handler = Sleepy()
    client_end, server_end = trio.testing.memory_stream_pair()
    stop = trio.Event()
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            done = trio.Event()

            async def serve() -> None:
                await serve_channel(handler, StreamChannel(server_end), stop, drain_timeout=3.0)
                done.set()

            nursery.start_soon(serve)
            await client_end.send_all(opening() + call(1, 1.0) + call(2, 1000.0))
            await read_until(client_end, {0})
            while handler.started < 2:
                await trio.testing.wait_all_tasks_blocked()
            start = trio.current_time()
            stop.set()
            answers = await read_until(client_end, {1, 2})
            await done.wait()
            elapsed = trio.current_time() - start
    assert answers[1]["result"]["content"][0]["text"] == "done"
    assert answers[2]["error"]["code"] == -32603
    assert 3.0 <= elapsed < 3.5


# --------------------------------------------------------------- real processes


def _serve_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "mcp_ref", "serve", *args]


class StderrLines:
    """A child's stderr, read line by line."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self.stream = stream
        self.buf = b""
        self.lines: list[str] = []

    async def next_line(self) -> str | None:
        while b"\n" not in self.buf:
            chunk = await self.stream.receive_some()
            if not chunk:
                return None
            self.buf += chunk
        raw, self.buf = self.buf.split(b"\n", 1)
        text = raw.decode("utf-8", "replace")
        self.lines.append(text)
        return text

    async def rest(self) -> list[str]:
        """Every line still to come, until the child closes stderr."""
        start = len(self.lines)
        while await self.next_line() is not None:
            pass
        if self.buf.strip():
            self.lines.append(self.buf.decode("utf-8", "replace"))
        return self.lines[start:]


async def _start_http(grace: float) -> tuple[trio.Process, StderrLines, int]:
    proc = await trio.lowlevel.open_process(
        _serve_command("--http", "127.0.0.1:0", "--grace", str(grace), "--no-access-log"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    err = StderrLines(proc.stderr)
    first = await err.next_line()
    assert first is not None, "the server exited before listening"
    found = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", first)
    assert found is not None, first
    return proc, err, int(found.group(1))


async def _slow_call(conn: RawConnection, sid: str, rid: int, duration: float, steps: int) -> Any:
    """POST a call of the everything server's long_running_operation with a progress
    token; return the SSE answer once its first progress notification has come (the
    tool is running)."""
    body = request_body(
        rid,
        "tools/call",
        {
            "name": "long_running_operation",
            "arguments": {"duration": duration, "steps": steps},
            "_meta": {"progressToken": f"p{rid}"},
        },
    )
    ans = await conn.request("POST", body=body, session_id=sid, version="2025-06-18")
    assert ans.status == 200
    assert ans.content_type == "text/event-stream"
    got = await ans.message()
    assert got is not None and got[1]["method"] == "notifications/progress", got
    return ans


async def _answer_of(ans: Any, rid: int) -> Any:
    """Read an SSE answer to its response (skipping progress); then check that the
    response ended whole: the terminating chunk came, not a dropped connection."""
    while True:
        got = await ans.message()
        assert got is not None, "the stream ended without the response"
        msg = got[1]
        if msg.get("id") == rid:
            break
    assert await ans.message() is None
    # h11 raises for a chunked body cut short; a whole one leaves the peer DONE.
    assert ans.conn.h11.their_state in (h11.DONE, h11.MUST_CLOSE)
    return msg


def _check_clean_stderr(lines: list[str], expected: str) -> None:
    text = "\n".join(lines)
    assert "Traceback" not in text and "ExceptionGroup" not in text, text
    assert lines == [expected], text


async def test_http_sigterm_finishes_requests_within_the_grace() -> None:
    with trio.fail_after(LIMIT):
        proc, err, port = await _start_http(grace=2.0)
        try:
            sid, _ = await open_http_session(port, version="2025-06-18")
            quick_conn = await RawConnection.open(port)
            slow_conn = await RawConnection.open(port)
            idle_conn = await RawConnection.open(port)
            quick = await _slow_call(quick_conn, sid, 10, duration=1.0, steps=10)
            slow = await _slow_call(slow_conn, sid, 11, duration=30.0, steps=100)
            proc.send_signal(signal.SIGTERM)
            done = await _answer_of(quick, 10)
            assert "completed" in done["result"]["content"][0]["text"]
            stopped = await _answer_of(slow, 11)
            assert stopped["error"]["code"] == -32603
            assert "shutting down" in stopped["error"]["message"]
            # The idle keep-alive connection is closed, and nothing listens any more.
            assert await idle_conn.stream.receive_some() == b""
            assert await proc.wait() == 0
            _check_clean_stderr(await err.rest(), "mcp-ref: stopped (SIGTERM)")
            with pytest.raises(OSError):
                await trio.open_tcp_stream("127.0.0.1", port)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


async def test_http_sigint_exits_130_without_traceback() -> None:
    with trio.fail_after(LIMIT):
        proc, err, port = await _start_http(grace=1.0)
        try:
            sid, _ = await open_http_session(port, version="2025-06-18")
            proc.send_signal(signal.SIGINT)
            assert await proc.wait() == 130
            _check_clean_stderr(await err.rest(), "mcp-ref: interrupted")
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


async def _start_stdio(grace: float) -> tuple[trio.Process, StderrLines]:
    proc = await trio.lowlevel.open_process(
        _serve_command("--grace", str(grace)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    return proc, StderrLines(proc.stderr)


def _stdio_call(rid: int, duration: float, steps: int) -> bytes:
    return line(
        {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "tools/call",
            "params": {
                "name": "long_running_operation",
                "arguments": {"duration": duration, "steps": steps},
                "_meta": {"progressToken": rid},
            },
        }
    )


async def _read_stdio(proc: trio.Process, until: Any) -> list[Any]:
    """Messages from the child's stdout until ``until(messages)`` holds."""
    assert proc.stdout is not None
    messages: list[Any] = []
    buf = b""
    while not until(messages):
        chunk = await proc.stdout.receive_some()
        assert chunk, f"stdout ended; got {messages}"
        buf += chunk
        *lines, buf = buf.split(b"\n")
        messages += [json.loads(raw) for raw in lines if raw.strip()]
    return messages


@pytest.mark.parametrize(
    ("signum", "status", "last_line"),
    [
        (signal.SIGTERM, 0, "mcp-ref: stopped (SIGTERM)"),
        (signal.SIGINT, 130, "mcp-ref: interrupted"),
    ],
)
@spec("2025-06-18/basic/lifecycle#stdio.2")
async def test_stdio_signal_finishes_requests_within_the_grace(
    signum: int, status: int, last_line: str
) -> None:
    with trio.fail_after(LIMIT):
        proc, err = await _start_stdio(grace=1.5)
        try:
            assert proc.stdin is not None
            await proc.stdin.send_all(opening() + _stdio_call(1, 0.5, 5) + _stdio_call(2, 30, 100))

            def both_running(msgs: list[Any]) -> bool:
                tokens = {m["params"]["progressToken"] for m in msgs if "params" in m}
                return {1, 2} <= tokens

            await _read_stdio(proc, both_running)
            proc.send_signal(signum)
            # stdin stays open: the signal alone stops the server.
            answers = await _read_stdio(
                proc, lambda msgs: {1, 2} <= {m.get("id") for m in msgs if "id" in m}
            )
            by_id = {m["id"]: m for m in answers if "id" in m}
            assert "completed" in by_id[1]["result"]["content"][0]["text"]
            assert by_id[2]["error"]["code"] == -32603
            assert await proc.wait() == status
            _check_clean_stderr(await err.rest(), last_line)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


# -- in process: open_http_server's shutdown(), and serve_websocket's stop ----------------


async def test_open_http_server_shutdown_finishes_then_answers_the_rest() -> None:
    """``info.shutdown()`` under ``open_http_server``: leaving the block waits for the
    graceful stop; a quick request is answered, an endless one gets -32603, and both
    SSE answers end whole."""
    from mcp_ref.examples.everything import make_server
    from mcp_ref.trio import open_http_server

    with trio.fail_after(LIMIT):
        async with open_http_server(make_server(), grace_seconds=1.5) as info:
            sid, _ = await open_http_session(info.port, version="2025-06-18")
            quick_conn = await RawConnection.open(info.port)
            slow_conn = await RawConnection.open(info.port)
            quick = await _slow_call(quick_conn, sid, 20, duration=0.5, steps=5)
            slow = await _slow_call(slow_conn, sid, 21, duration=30.0, steps=100)
            info.shutdown()
            done = await _answer_of(quick, 20)
            assert "completed" in done["result"]["content"][0]["text"]
            stopped = await _answer_of(slow, 21)
            assert stopped["error"]["code"] == -32603
        with pytest.raises(OSError):
            await trio.open_tcp_stream("127.0.0.1", info.port)


async def test_serve_websocket_stop_answers_then_closes() -> None:
    """``serve_websocket(stop=...)``: a request that outlasts the grace is answered
    with -32603, then the connection closes with the closing handshake (1001 or
    1000), and serve_websocket returns."""
    from mcp_ref.examples.everything import make_server
    from mcp_ref.trio import serve_websocket
    from mcp_ref.trio.websocket import open_websocket_channel

    stop = trio.Event()
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(
                lambda task_status: serve_websocket(
                    make_server(),
                    "127.0.0.1",
                    0,
                    stop=stop,
                    grace_seconds=0.5,
                    task_status=task_status,
                )
            )
            async with open_websocket_channel(f"ws://127.0.0.1:{port}/mcp") as channel:
                init, initialized = opening().splitlines()
                await channel.send(init)
                got = json.loads(await channel.receive())
                assert got["id"] == 0
                await channel.send(initialized)
                await channel.send(
                    request_body(
                        5,
                        "tools/call",
                        {
                            "name": "long_running_operation",
                            "arguments": {"duration": 30, "steps": 3},
                        },
                    )
                )
                # The server has read the request (it runs, asleep) before the stop.
                await trio.testing.wait_all_tasks_blocked()
                stop.set()
                while True:
                    data = await channel.receive()
                    assert data, "the connection ended before the answer"
                    msg = json.loads(data)
                    if msg.get("id") == 5:
                        break
                assert msg["error"]["code"] == -32603
                assert await channel.receive() == b""

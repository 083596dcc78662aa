"""The blocking stdio client: subprocess pipes and a selector, no threads, no event loop.

Servers: the asyncio example server (so the two drivers check each other), the raw
JSON-lines script of test_asyncio_drivers, and the reference server when it exists.
Every test runs under a hard wall-clock bound (``bounded``) so a hang fails, not stalls.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_ref import INTERNAL_ERROR, INVALID_PARAMS, McpError, Notification, Progress
from mcp_ref import types as t
from mcp_ref._errors import REQUEST_TIMEOUT
from mcp_ref.blocking import SessionClosed, connect_stdio

from .test_asyncio_drivers import (
    EXAMPLE,
    REFERENCE,
    echo_arguments,
    raw_server,
    reference_server_missing,
    text_of,
)

spec = pytest.mark.spec


@pytest.fixture(autouse=True)
def bounded() -> Iterator[None]:
    """Fail (by SIGALRM) any test of this module that runs longer than 30 s."""

    def expire(signum: int, frame: Any) -> None:
        raise TimeoutError("blocking client test took longer than 30 s")

    assert threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(30)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@spec(
    "2025-06-18/basic/lifecycle#initialization.4",
    "2025-06-18/server/utilities/pagination#implementation-guidelines.3",
    "2025-06-18/basic/utilities/ping#behavior-requirements.1",
    "2025-06-18/basic/lifecycle#stdio.1",
)
def test_blocking_client_example_server() -> None:
    notes: list[Notification] = []
    with connect_stdio(EXAMPLE, on_notification=notes.append) as client:
        assert client.initialize_result is not None
        assert client.initialize_result.protocol_version == "2025-11-25"
        tools = client.list_tools()
        echoed = client.call_tool("echo", {"text": "grüße"})
        raw = client.request("tools/call", {"name": "echo", "arguments": {"text": "dict"}})
        client.ping()
        with pytest.raises(McpError) as failed:
            client.call_tool("fail")
        with pytest.raises(McpError) as unknown:
            client.call_tool("no-such-tool")
    assert [tool.name for tool in tools] == ["echo", "sleep", "cancellations", "fail"]
    assert text_of(echoed) == "grüße" and text_of(raw) == "dict"
    assert failed.value.code == INTERNAL_ERROR
    assert unknown.value.code == INVALID_PARAMS
    assert client.process.returncode == 0  # it exited on its own when stdin closed
    assert client.closed and notes == []
    with pytest.raises(SessionClosed):
        client.ping()


@spec(
    "2025-06-18/basic/lifecycle#timeouts.2",
    "2025-06-18/basic/lifecycle#timeouts.3",
)
def test_blocking_client_timeout_cancels_on_the_server() -> None:
    with connect_stdio(EXAMPLE) as client:
        start = time.monotonic()
        with pytest.raises(McpError) as expired:
            client.call_tool("sleep", {"seconds": 60}, timeout=0.3)
        elapsed = time.monotonic() - start
        cancelled = json.loads(text_of(client.call_tool("cancellations")))
        assert client.connection.requests_in_flight() == ([], [])
    assert expired.value.code == REQUEST_TIMEOUT
    assert 0.3 <= elapsed < 5
    assert [reason for _, reason in cancelled] == ["timed out"]


@spec("2025-06-18/basic/utilities/cancellation#behavior-requirements.3")
def test_blocking_client_interrupt_sends_cancelled() -> None:
    """An exception raised while the client waits (in a script: KeyboardInterrupt)
    cancels the request on the server before it propagates.  It is raised here at the
    first progress notification, so the server's handler is known to be running."""

    class Interrupt(Exception):
        pass

    with connect_stdio(EXAMPLE) as client:
        dispatch = client._dispatch

        def interrupt_at_progress(event: Any) -> None:
            if isinstance(event, Progress):
                raise Interrupt
            dispatch(event)

        client._dispatch = interrupt_at_progress  # type: ignore[method-assign]
        params = t.CallToolRequestParams(
            name="sleep", arguments={"seconds": 60}, meta={"progressToken": "p"}
        )
        with pytest.raises(Interrupt):
            client.request("tools/call", params)
        client._dispatch = dispatch  # type: ignore[method-assign]
        cancelled = json.loads(text_of(client.call_tool("cancellations")))
    assert [reason for _, reason in cancelled] == ["cancelled by the client"]


@spec(
    "2025-06-18/basic/utilities/ping#behavior-requirements.1",
    "2025-06-18/basic/lifecycle#operation.1",
)
def test_blocking_client_answers_ping_and_refuses_sampling() -> None:
    with connect_stdio(raw_server("ask")) as client:
        result = client.call_tool("anything")
    answers = {a["id"]: a for a in json.loads(text_of(result))}
    assert answers["s1"] == {"jsonrpc": "2.0", "id": "s1", "result": {}}
    assert answers["s2"]["error"]["code"] == -32601  # no sampling capability declared
    assert client.process.returncode == 0


def test_blocking_client_server_exit_fails_the_request() -> None:
    with connect_stdio(raw_server("exit")) as client:
        with pytest.raises(SessionClosed):
            client.call_tool("anything")
        with pytest.raises(SessionClosed):
            client.ping()
    assert client.process.returncode == 3


def test_blocking_client_server_that_never_answers_initialize() -> None:
    with pytest.raises(SessionClosed):
        with connect_stdio([sys.executable, "-c", "pass"]):
            raise AssertionError("not reached")


@spec("2025-06-18/basic/lifecycle#stdio.1")
def test_blocking_client_kills_a_stubborn_server() -> None:
    with connect_stdio(raw_server("stubborn"), shutdown_grace=0.2) as client:
        pass
    assert client.process.returncode == -signal.SIGKILL


def test_blocking_client_large_messages_both_ways() -> None:
    """A 1 MiB argument: the write waits on the selector (the pipe holds 64 KiB)."""
    text = "x" * (1024 * 1024)
    with connect_stdio(EXAMPLE) as client:
        assert text_of(client.call_tool("echo", {"text": text})) == text


def test_blocking_client_one_request_at_a_time() -> None:
    with connect_stdio(EXAMPLE) as client:
        client._waiting = 99  # as if inside another request's wait
        with pytest.raises(RuntimeError, match="one request at a time"):
            client.ping()
        client._waiting = None
        client.ping()


def test_importing_blocking_loads_no_event_loop() -> None:
    code = (
        "import sys, json, mcp_ref.blocking\n"
        "names = ('asyncio', 'trio', 'selectors', 'subprocess', 'socket', 'threading')\n"
        "print(json.dumps([n for n in names if n in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # attrs imports threading (for a lock); nothing else may be loaded
    assert set(json.loads(out.stdout)) <= {"threading"}


def test_blocking_client_reference_server() -> None:
    missing = reference_server_missing()
    if missing:
        pytest.skip(missing)
    with connect_stdio(REFERENCE) as client:
        tools = client.list_tools()
        result = client.call_tool("echo", echo_arguments(tools, "from a script"))
        client.ping()
    assert "from a script" in text_of(result)
    assert client.process.returncode == 0


@spec("2025-06-18/basic/utilities/progress#progress-flow.1")
def test_blocking_client_on_progress() -> None:
    seen: list[Progress] = []
    with connect_stdio(raw_server("progress")) as client:
        token = json.loads(text_of(client.call_tool("anything", on_progress=seen.append)))
    assert isinstance(token, (str, int)) and not isinstance(token, bool)
    assert [(p.progress_token, p.progress, p.total, p.message) for p in seen] == [
        (token, 1, 2, "a"),
        (token, 2, 2, "b"),
    ]  # the progress for another token was dropped by the core


@spec("2025-06-18/basic/lifecycle#version-negotiation.1")
def test_blocking_client_protocol_version() -> None:
    with pytest.raises(ValueError, match="2025-06-18"):  # refused before anything starts
        with connect_stdio(["/no/such/program"], protocol_version="1999-01-01"):
            pass
    with connect_stdio(EXAMPLE, protocol_version="2024-11-05") as client:
        assert client.initialize_result is not None
        assert client.initialize_result.protocol_version == "2024-11-05"
        assert text_of(client.call_tool("echo", {"text": "old"})) == "old"


@spec("2025-06-18/client/sampling#capabilities.1")
def test_blocking_client_takes_sync_handlers() -> None:
    """The client core's options are the blocking client's too: a sampling handler
    declares ``sampling`` and answers the server's request on the waiting thread."""

    def sample(params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        return t.CreateMessageResult(role="assistant", content=t.TextContent(text="ok"), model="m")

    with connect_stdio(raw_server("ask"), sampling_handler=sample) as client:
        result = client.call_tool("anything")
    answers = {a["id"]: a for a in json.loads(text_of(result))}
    assert answers["s1"]["result"] == {}
    assert answers["s2"]["result"]["content"] == {"type": "text", "text": "ok"}

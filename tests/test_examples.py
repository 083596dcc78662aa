"""The files under examples/ run as the examples README says, and print what they show.

Each runs in a fresh interpreter (as a user would start it), with a time bound, on this
tree's mcp_ref (``PYTHONPATH``), not whichever one is installed.  A server example is
run against a client here: the HTTP one listens on a free port, is used, and is stopped
with SIGTERM, all within ``fail_after``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import trio

from mcp_ref.client import open_http_client

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def _run(name: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=_env(),
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_notes_client_uses_the_notes_server_over_stdio() -> None:
    out = _run("notes_client.py").splitlines()
    assert out == [
        "tools: ['add_note', 'summarize_note', 'forget_note']",
        "add_note: 1 note(s)",
        "note://todo: buy milk",
        "prompt: Summarize this note in one sentence:",
    ]


def test_the_assistant_client_answers_sampling_and_elicitation() -> None:
    out = _run("assistant_client.py").splitlines()
    assert out == [
        "log [info] notes: kept note 'todo'",
        "summary: A note: buy milk",
        "the server asks: Forget the note 'todo'?",
        "forget_note: forgot 'todo'",
    ]


def test_the_blocking_client_needs_no_event_loop() -> None:
    out = _run("blocking_client.py").splitlines()
    assert out == [
        "tools: ['add_note', 'summarize_note', 'forget_note']",
        "add_note: 1 note(s)",
        "note://todo: buy milk",
    ]


def test_the_core_runs_with_no_event_loop_over_a_socket_pair() -> None:
    out = _run("sans_io_socketpair.py").splitlines()
    assert out == [
        "server got: initialize 2025-11-25",
        "client got: example-server 2025-11-25",
        "states: INITIALIZED INITIALIZED",
    ]


async def test_the_notes_server_over_http_serves_a_client_and_stops_on_sigterm() -> None:
    with trio.fail_after(30):
        process = await trio.lowlevel.open_process(
            [sys.executable, str(EXAMPLES / "notes_http.py"), "0"],
            stderr=subprocess.PIPE,
            env=_env(),
        )
        try:
            assert process.stderr is not None
            said = b""
            while b"\n" not in said:  # the first line: "listening on URL"
                chunk = await process.stderr.receive_some()
                assert chunk, f"notes_http.py exited first: {said!r}"
                said += chunk
            line = said.decode().splitlines()[0]
            assert line.startswith("listening on http://127.0.0.1:"), line
            url = line.removeprefix("listening on ")
            async with open_http_client(url) as client:
                added = await client.call_tool("add_note", {"name": "todo", "text": "milk"})
                read = await client.read_resource("note://todo")
            process.send_signal(signal.SIGTERM)
            assert await process.wait() == 0
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert added.content[0].text == "1 note(s)"
    assert read.contents[0].text == "milk"


# Each example and the test that runs it (a new example needs a test).
RUN_BY = {
    "notes_server.py": test_the_notes_client_uses_the_notes_server_over_stdio,
    "notes_client.py": test_the_notes_client_uses_the_notes_server_over_stdio,
    "assistant_client.py": test_the_assistant_client_answers_sampling_and_elicitation,
    "blocking_client.py": test_the_blocking_client_needs_no_event_loop,
    "sans_io_socketpair.py": test_the_core_runs_with_no_event_loop_over_a_socket_pair,
    "notes_http.py": test_the_notes_server_over_http_serves_a_client_and_stops_on_sigterm,
    # Served under Hypercorn (trio and asyncio workers) and Uvicorn, each a real process.
    "asgi_server.py": "test_asgi_servers.py::test_a_real_asgi_server_serves_a_tool_call",
}


def test_every_example_is_run_by_a_test() -> None:
    assert sorted(path.name for path in EXAMPLES.glob("*.py")) == sorted(RUN_BY)
    for test in RUN_BY.values():
        if isinstance(test, str):  # a test in another file: it must exist there
            module, _, name = test.partition("::")
            assert f"def {name}(" in (ROOT / "tests" / module).read_text(encoding="utf-8")


def test_the_examples_readme_lists_every_example() -> None:
    listed = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    for path in EXAMPLES.glob("*.py"):
        assert f"`{path.name}`" in listed, path.name

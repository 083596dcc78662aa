"""The files under examples/ run as the examples README says, and print what they show.

Each runs in a fresh interpreter (as a user would start it), with a time bound.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _run(name: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_notes_client_uses_the_notes_server_over_stdio() -> None:
    out = _run("notes_client.py").splitlines()
    assert out == [
        "tools: ['add_note']",
        "add_note: 1 note(s)",
        "note://todo: buy milk",
        "prompt: Summarize this note in one sentence:",
    ]


def test_the_core_runs_with_no_event_loop_over_a_socket_pair() -> None:
    out = _run("sans_io_socketpair.py").splitlines()
    assert out == [
        "server got: initialize 2025-11-25",
        "client got: example-server 2025-11-25",
        "states: INITIALIZED INITIALIZED",
    ]


def test_the_examples_readme_lists_every_example() -> None:
    listed = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    for path in EXAMPLES.glob("*.py"):
        assert f"`{path.name}`" in listed, path.name

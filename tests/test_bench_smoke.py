"""Smoke test of ``python -m bench``: with tiny counts, every row produces a number.

Speed is never checked here (the numbers of a tiny run mean nothing); only that each
section runs end to end and fills its table.  A row may instead say ``n/a (not built
yet ...)`` when the piece of mcp-ref it measures does not exist yet, or name a missing
peer SDK; it may never say ``failed``.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

ROOT = Path(__file__).resolve().parent.parent


def run_bench(tmp_path: Path, *args: str) -> list[dict[str, Any]]:
    out = tmp_path / "bench.json"
    env = {**os.environ, "MCP_REF_PEERS_NO_INSTALL": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--tiny", "--json", str(out), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows: list[dict[str, Any]] = json.loads(out.read_text())["rows"]
    assert rows, "the bench produced no rows"
    return rows


def has_number(row: dict[str, Any]) -> bool:
    return any(isinstance(v, (int, float)) and math.isfinite(v) for v in row["metrics"].values())


def check_rows(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        note = row["note"] or ""
        assert "failed" not in note, f"{row['section']} / {row['name']}: {note}"
        if not has_number(row):
            assert note.startswith("n/a"), f"{row['section']} / {row['name']} has no number"


def test_core_e2e_leak_and_own_server(tmp_path: Path) -> None:
    server = f"{sys.executable} -m bench.echo_server session"
    rows = run_bench(
        tmp_path, "--only", "core", "--only", "e2e", "--only", "leak", "--server", server
    )
    check_rows(rows)
    by_section: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_section.setdefault(row["section"], []).append(row)
    core = by_section["core"]
    assert len(core) == 7
    for row in core:  # the core needs nothing but itself: every row has every number
        assert all(v is not None for v in row["metrics"].values()), row
    assert any(has_number(r) for r in by_section["e2e"]), "no end-to-end row ran"
    # The floors (bench/floor.py) need only trio, h11 and json: all eight always run.
    floors = [r for r in by_section["e2e"] if r["name"].startswith("floor: ")]
    assert len(floors) == 8, [r["name"] for r in floors]
    for row in floors:
        assert row["metrics"]["req_per_s"], row
    assert all(has_number(r) for r in by_section["leak"])
    server_rows = by_section["server"]
    assert [r["name"].rsplit(" ", 1)[1] for r in server_rows] == ["x1", "x100"]
    assert all(has_number(r) for r in server_rows)


def test_compare(tmp_path: Path) -> None:
    rows = run_bench(tmp_path, "--only", "compare")
    check_rows(rows)
    assert len(rows) == 10
    in_process = [r for r in rows if r["name"].startswith(("in-process", "stdio"))]
    for row in in_process:  # our side of these rows exists today
        assert row["metrics"].get("ours_req_per_s"), row
    for row in rows:  # every row has its transport's floor beside it
        assert row["metrics"].get("floor_req_per_s"), row
        if row["metrics"].get("theirs_req_per_s"):
            assert row["metrics"].get("floor_ratio"), row
    if not any(r["metrics"].get("theirs_req_per_s") for r in rows):
        pytest.skip("no official SDK is installed in the peers cache; only our side ran")


# --- --fuzz-http ---------------------------------------------------------------------------


async def _bench_main(*args: str) -> int:
    """``python -m bench ARGS`` in a worker thread (it runs trio of its own there)."""
    from bench.cli import main

    return await trio.to_thread.run_sync(main, list(args))


async def test_fuzz_http_against_an_in_process_server(tmp_path: Path) -> None:
    """Every family runs against our server, and no POST is left unanswered (exit 0)."""
    from mcp_ref.examples.everything import make_server
    from mcp_ref.trio import open_http_server

    out = tmp_path / "fuzz.json"
    with trio.fail_after(120):
        async with open_http_server(make_server()) as info:
            code = await _bench_main(
                "--tiny", "--fuzz-http", info.url, "--fuzz-count", "80", "--json", str(out)
            )
    assert code == 0
    rows = json.loads(out.read_text())["rows"]
    names = [r["name"] for r in rows]
    for family in ("body (new session): ", "body (in session): ", "headers: ", "slow: "):
        assert any(n.startswith(family) for n in names), (family, names)
    assert sum(r["metrics"]["sent"] for r in rows) >= 80
    assert sum(r["metrics"]["unanswered"] for r in rows) == 0
    for row in rows:
        assert row["metrics"]["answered"] == row["metrics"]["sent"], row


async def test_fuzz_http_counts_a_silent_server_as_unanswered() -> None:
    """A server that reads and never answers: every POST unanswered, exit status 1."""

    async def silent(stream: trio.SocketStream) -> None:
        async with stream:
            while await stream.receive_some(65536):
                pass

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(partial(trio.serve_tcp, silent, 0, host="127.0.0.1"))
            port = listeners[0].socket.getsockname()[1]
            code = await _bench_main(
                "--fuzz-http",
                f"http://127.0.0.1:{port}/mcp",
                "--fuzz-count",
                "4",
                "--fuzz-timeout",
                "0.3",
            )
            nursery.cancel_scope.cancel()
    assert code == 1


async def test_fuzz_http_refuses_a_remote_url() -> None:
    assert await _bench_main("--fuzz-http", "http://192.0.2.1/mcp") == 2

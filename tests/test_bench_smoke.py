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
from pathlib import Path
from typing import Any

import pytest

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

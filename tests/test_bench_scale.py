"""Smoke test of ``python -m bench --only scale`` (bench/scale.py): with tiny counts,
the scale-out rows (a baseline without a store, 1 and 2 worker processes on one Redis) produce their numbers, and
the sessions row has no error.  Speed is never checked here.  Skipped, with the reason,
without ``redis-server`` on PATH or the ``redis`` client."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.test_bench_smoke import check_rows, run_bench


def test_scale_rows(tmp_path: Path) -> None:
    if shutil.which("redis-server") is None:
        pytest.skip("no redis-server on PATH (Debian: apt-get install redis-server)")
    pytest.importorskip("redis", reason="the redis client is not installed (mcp-ref[redis])")
    rows = run_bench(tmp_path, "--only", "scale")
    check_rows(rows)
    assert [r["metrics"]["workers"] for r in rows] == [1, 1, 2]  # baseline, 1 and 2 on Redis
    assert "no store" in rows[0]["name"]
    for row in rows:
        assert row["metrics"]["req_per_s"], row
        assert row["metrics"]["sessions"] == 20 and row["metrics"]["errors"] == 0, row

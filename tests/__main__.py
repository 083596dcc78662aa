"""Run every check of the project: ``python -m tests``.

In order: ruff lint, ruff format check, mypy --strict on the library, the pytest suite
(which records the clauses each passing test proves), ``python -m spec_map check``, and a
seeded sample of the mutation proof (``python -m spec_map prove --sample``).
Extra arguments go to pytest.  After the steps it lists every skipped test with its
reason, and the last line gives pytest's counts, each kind apart
("tests: N passed, N failed, N errors, N skipped, N xfailed, N xpassed"), so the closing
line of the run is the test count whatever the later steps print.  The counts come from
the plugin tests/_outcomes.py (JUnit XML cannot tell an expected failure from a skip).
Exits non-zero if any step fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PROVE_SAMPLE = 12
"""Mutants of the sans-IO core's traced lines run on every check (seeded, so the same
ones each time until the code changes); ``python -m spec_map prove`` runs them all."""
KINDS = ("passed", "failed", "errors", "skipped", "xfailed", "xpassed")
"""The counts of the summary line, in its order (see tests/_outcomes.py)."""


def summary(outcomes: dict[str, Any]) -> str:
    """The closing line: ``tests: N passed, N failed, ...`` (every kind, zeros too)."""
    return "tests: " + ", ".join(f"{outcomes.get(k, 0)} {k}" for k in KINDS)


def main() -> int:
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "outcomes.json"
        env = {**os.environ, "MCP_REF_OUTCOMES": str(report)}
        steps = [
            ("ruff check", [py, "-m", "ruff", "check", "."]),
            ("ruff format --check", [py, "-m", "ruff", "format", "--check", "."]),
            ("mypy --strict mcp_ref", [py, "-m", "mypy", "--strict", "mcp_ref"]),
            (
                "pytest",
                [
                    py,
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    "-p",
                    "tests._outcomes",
                    *sys.argv[1:],
                ],
            ),
            ("spec_map check", [py, "-m", "spec_map", "check"]),
            (
                # A bounded, seeded sample of the mutation proof (spec_map/proof.json):
                # fails if a mutant the committed proof records as killed survives now.
                "spec_map prove --sample (mutation proof, a sample)",
                [
                    *(py, "-m", "spec_map", "prove", "--sample", str(PROVE_SAMPLE)),
                    *("--jobs", "2", "--files", "mcp_ref/*.py"),
                ],
            ),
        ]
        status = 0
        for name, cmd in steps:
            print(f"==> {name}", flush=True)
            rc = subprocess.call(cmd, cwd=ROOT, env=env)
            if rc != 0:
                print(f"==> {name} failed (exit {rc})", flush=True)
                status = rc
                break
        if report.exists():
            outcomes = json.loads(report.read_text(encoding="utf-8"))
            for nodeid, reason in outcomes["skips"]:
                print(f"skipped: {nodeid}: {reason}", flush=True)
            print(summary(outcomes), flush=True)
        elif status == 0:
            print("==> pytest wrote no report", flush=True)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())

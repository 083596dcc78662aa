"""Run every check of the project: ``python -m tests``.

In order: ruff lint, ruff format check, mypy --strict on the library, the pytest suite
(which records the clauses each passing test proves), and ``python -m spec_map check``.
Extra arguments go to pytest.  The last line repeats pytest's counts
("tests: N passed, N failed, N skipped"), so the closing line of the run is the test
count whatever the later steps print.  Exits non-zero if any step fails.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _counts(junit: Path) -> tuple[int, int, int]:
    """(passed, failed, skipped) from a JUnit XML report."""
    root = ET.parse(junit).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    total = failed = skipped = 0
    for s in suites:
        total += int(s.get("tests", 0))
        failed += int(s.get("failures", 0)) + int(s.get("errors", 0))
        skipped += int(s.get("skipped", 0))
    return total - failed - skipped, failed, skipped


def main() -> int:
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
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
                    f"--junitxml={junit}",
                    *sys.argv[1:],
                ],
            ),
            ("spec_map check", [py, "-m", "spec_map", "check"]),
        ]
        status = 0
        for name, cmd in steps:
            print(f"==> {name}", flush=True)
            rc = subprocess.call(cmd, cwd=ROOT)
            if rc != 0:
                print(f"==> {name} failed (exit {rc})", flush=True)
                status = rc
                break
        if junit.exists():
            passed, failed, skipped = _counts(junit)
            print(f"tests: {passed} passed, {failed} failed, {skipped} skipped", flush=True)
        elif status == 0:
            print("==> pytest wrote no report", flush=True)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())

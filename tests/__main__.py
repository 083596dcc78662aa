"""Run every check of the project: ``python -m tests``.

In order: ruff lint, ruff format check, mypy --strict on the library, the pytest suite
(which records the clauses each passing test proves), and ``python -m spec_map check``.
Extra arguments go to pytest.  Exits non-zero on the first failing step.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    py = sys.executable
    steps = [
        ("ruff check", [py, "-m", "ruff", "check", "."]),
        ("ruff format --check", [py, "-m", "ruff", "format", "--check", "."]),
        ("mypy --strict mcp_ref", [py, "-m", "mypy", "--strict", "mcp_ref"]),
        ("pytest", [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", *sys.argv[1:]]),
        ("spec_map check", [py, "-m", "spec_map", "check"]),
    ]
    for name, cmd in steps:
        print(f"==> {name}", flush=True)
        rc = subprocess.call(cmd, cwd=ROOT)
        if rc != 0:
            print(f"==> {name} failed (exit {rc})", flush=True)
            return rc
    print("==> all checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

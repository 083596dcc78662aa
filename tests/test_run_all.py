"""``python -m tests``: its summary counts each outcome apart (tests/_outcomes.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from .__main__ import summary

REPO = Path(__file__).resolve().parent.parent

SAMPLE = textwrap.dedent(
    """\
    import pytest

    def test_pass():
        pass

    def test_fail():
        assert False

    def test_skip():
        pytest.skip("no peer here")

    @pytest.mark.xfail(reason="not built", strict=True)
    def test_xfail():
        assert False

    @pytest.mark.xfail(reason="lax", strict=False)
    def test_xpass():
        pass

    @pytest.mark.xfail(reason="strict", strict=True)
    def test_xpass_strict():
        pass

    @pytest.fixture
    def broken():
        raise RuntimeError("setup")

    def test_error(broken):
        pass
    """
)


def test_outcomes_are_counted_apart(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    out = tmp_path / "outcomes.json"
    env = {
        **os.environ,
        "MCP_REF_OUTCOMES": str(out),
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    argv += ["-p", "tests._outcomes", "-c", str(tmp_path / "pytest.ini"), str(tmp_path)]
    run = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 1, run.stdout + run.stderr
    got = json.loads(out.read_text())
    # A strict XPASS is a failure; the lax one stays an xpass.
    assert {k: got[k] for k in ("passed", "failed", "errors", "skipped", "xfailed", "xpassed")} == {
        "passed": 1,
        "failed": 2,
        "errors": 1,
        "skipped": 1,
        "xfailed": 1,
        "xpassed": 1,
    }
    [(nodeid, reason)] = got["skips"]
    assert nodeid.endswith("test_sample.py::test_skip")
    assert reason == "no peer here"


def test_summary_line_names_every_kind() -> None:
    line = summary({"passed": 3, "xfailed": 2, "skips": []})
    assert line == "tests: 3 passed, 0 failed, 0 errors, 0 skipped, 2 xfailed, 0 xpassed"

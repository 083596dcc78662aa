"""The official conformance suite's 2026-07-28 client scenarios against mcp-ref's client.

``conformance client --spec-version 2026-07-28 --scenario NAME`` (the pinned 0.2.0
alpha of tests/interop/peers.py) runs each of the seven non-auth client scenarios the
2026-07-28 revision requires, one at a time, against ``tests/interop/conformance_client.py``
(which opens with ``era="auto"`` when the suite says 2026-07-28: the ``server/discover``
probe, then the modern era).  Each scenario is one test: it passes when its checks hold
no FAILURE and no WARNING and the checks it exists for succeeded.  The auth scenarios
of the requirement set are the OAuth client's (test_conformance.py runs them for
2025-11-25).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from . import peers
from .test_conformance import _bad, _results, _run

pytestmark = pytest.mark.interop

GROUP = "conformance-next"

# scenario -> the check ids that must be there and SUCCESS
SCENARIOS = {
    "tools_call": ["tool-add-numbers"],
    "request-metadata": [
        "sep-2575-http-client-sends-version-header",
        "sep-2575-client-populates-meta",
        "sep-2575-http-version-header-matches-meta",
        "sep-2575-client-retry-supported-version",
    ],
    "sep-2322-client-request-state": [
        "sep-2322-client-request-state-echoed",
        "sep-2322-client-jsonrpc-id-different",
        "sep-2322-client-no-state-omitted",
        "sep-2322-client-parallel-isolation",
    ],
    "http-standard-headers": ["sep-2243-client-includes-standard-headers"],
    "http-custom-headers": ["sep-2243-client-supports-custom-headers"],
    "http-invalid-tool-headers": ["sep-2243-client-reject-invalid-tool"],
    "json-schema-ref-no-deref": [],
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_client_scenario_2026(scenario: str, tmp_path: Path) -> None:
    cmd = peers.conformance_cmd(GROUP)
    if cmd is None:
        pytest.skip(peers.why_missing(GROUP) or "conformance 0.2.0-alpha.12 is unavailable")
    script = peers.repo_root() / "tests" / "interop" / "conformance_client.py"
    if " " in sys.executable or " " in str(script):
        pytest.skip("the conformance client command cannot hold paths with spaces")
    argv = [
        *cmd,
        "client",
        "--command",
        f"{sys.executable} {script}",
        "--scenario",
        scenario,
        "--spec-version",
        "2026-07-28",
        "-o",
        str(tmp_path),
    ]
    tail = _run(argv, tmp_path)
    got = _results(tmp_path, "").get(scenario)
    assert got is not None, f"{scenario} did not run; suite output: {tail}"
    checks = got["checks"]
    assert checks and not _bad(checks), _bad(checks) or tail
    succeeded = {c.get("id") for c in checks if c.get("status") == "SUCCESS"}
    assert succeeded, f"{scenario}: no check succeeded"
    assert set(SCENARIOS[scenario]) <= succeeded, (SCENARIOS[scenario], got["stderr"][-2000:])

"""pytest plugin for ``python -m tests``: write the run's outcomes, counted apart.

JUnit XML reports an expected failure as a skip and an unexpected pass as a pass, so
``python -m tests`` loads this plugin instead (``-p tests._outcomes``) and reads the
JSON it writes to ``$MCP_REF_OUTCOMES`` at the end of the session::

    {"passed": N, "failed": N, "errors": N, "skipped": N, "xfailed": N, "xpassed": N,
     "skips": [[node id, reason], ...]}

Counts are of tests (node ids), from pytest's own terminal statistics: ``failed`` are
tests whose call failed (a strict XPASS is one), ``errors`` tests whose setup or
teardown failed.  Without ``$MCP_REF_OUTCOMES`` the plugin writes nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

ENV = "MCP_REF_OUTCOMES"
"""The environment variable naming the JSON file to write."""

KINDS = {
    "passed": "passed",
    "failed": "failed",
    "error": "errors",
    "skipped": "skipped",
    "xfailed": "xfailed",
    "xpassed": "xpassed",
}
"""pytest's statistics keys and the names this plugin writes them under."""


def _reason(report: Any) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def outcomes(stats: dict[str, list[Any]]) -> dict[str, Any]:
    """The counts (of distinct node ids) and the skip reasons, from
    ``terminalreporter.stats``."""
    out: dict[str, Any] = {}
    for key, name in KINDS.items():
        out[name] = len({getattr(r, "nodeid", id(r)) for r in stats.get(key, [])})
    skips: dict[str, str] = {}
    for report in stats.get("skipped", []):
        skips.setdefault(report.nodeid, _reason(report))
    out["skips"] = sorted([nodeid, reason] for nodeid, reason in skips.items())
    return out


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Write :func:`outcomes` to ``$MCP_REF_OUTCOMES`` if it is set."""
    target = os.environ.get(ENV)
    if target:
        text = json.dumps(outcomes(terminalreporter.stats), indent=1)
        Path(target).write_text(text + "\n", encoding="utf-8")

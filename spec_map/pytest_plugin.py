"""pytest plugin: check ``@pytest.mark.spec`` ids and record which clauses passing tests prove.

Load it from ``tests/conftest.py``::

    pytest_plugins = ["spec_map.pytest_plugin"]

What it does:

* registers the ``spec(*clause_ids)`` marker (also declared in pyproject.toml);
* when the catalog (``spec_map/clauses/*.json``, every revision) is present, a test
  whose ``spec`` marker names an id that is not a clause of the catalog, of whatever
  revision (or an argument that is not a string), **fails at setup** with a message
  naming the bad ids -- other tests still run;
* at the end of the session, writes ``spec_map/results.json`` (gitignored)::

      {"passed":  {clause id: [node ids]},
       "failed":  {clause id: [node ids]},
       "skipped": {clause id: [node ids]},
       "tests":   {node id: {"outcome": "passed"|"failed"|"skipped", "ids": [...]}},
       "unknown": {node id: [unknown ids or bad arguments]}}

  A test counts as passed only if its setup, call and teardown all passed and it was
  not an expected failure (xfail/xpass count as skipped).  Each run replaces the file,
  so ``python -m spec_map check`` reflects the last run: run the whole suite before
  trusting it.

Environment: ``SPEC_MAP_RESULTS`` and ``SPEC_MAP_CATALOG`` override the two paths
(tests of this plugin use them to stay out of the real files); ``SPEC_MAP_CATALOG`` may
name the folder or a single catalog file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

__all__ = ["SpecRecorder", "pytest_configure"]

_HERE = Path(__file__).resolve().parent


class SpecRecorder:
    """The plugin object registered per session: catalog ids, each test's ids, outcomes."""

    def __init__(self, known: set[str] | None, results_path: Path) -> None:
        self.known = known
        """Clause ids of the catalog, or None when there is no catalog (no checking)."""
        self.results_path = results_path
        self.ids: dict[str, list[str]] = {}
        self.bad: dict[str, list[str]] = {}
        self.outcome: dict[str, str] = {}

    def record(self, nodeid: str, outcome: str) -> None:
        """Keep the worst outcome seen for a test: failed > skipped > passed."""
        rank = {"passed": 0, "skipped": 1, "failed": 2}
        if rank[outcome] >= rank.get(self.outcome.get(nodeid, "passed"), 0):
            self.outcome[nodeid] = outcome

    def to_json(self) -> dict[str, Any]:
        """The results.json content."""
        by_outcome: dict[str, dict[str, list[str]]] = {"passed": {}, "failed": {}, "skipped": {}}
        tests: dict[str, Any] = {}
        for nodeid, ids in self.ids.items():
            outcome = self.outcome.get(nodeid)
            if outcome is None:  # deselected or not run (e.g. -x stopped early)
                continue
            tests[nodeid] = {"outcome": outcome, "ids": ids}
            for cid in ids:
                by_outcome[outcome].setdefault(cid, []).append(nodeid)
        return {**by_outcome, "tests": tests, "unknown": dict(self.bad)}

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Collect each test's clause ids and note the unknown ones."""
        for item in items:
            ids: list[str] = []
            bad: list[str] = []
            for mark in item.iter_markers("spec"):
                if not mark.args:
                    bad.append("(spec marker without ids)")
                for arg in mark.args:
                    if not isinstance(arg, str):
                        bad.append(repr(arg))
                    elif self.known is not None and arg not in self.known:
                        bad.append(arg)
                    elif arg not in ids:
                        ids.append(arg)
            if ids:
                self.ids[item.nodeid] = ids
            if bad:
                self.bad[item.nodeid] = bad

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Fail a test whose spec marker names unknown clause ids."""
        bad = self.bad.get(item.nodeid)
        if bad:
            pytest.fail(
                "spec marker names clause id(s) not in the catalog (spec_map/clauses/): "
                + ", ".join(bad)
                + " -- ids look like 2025-06-18/basic/lifecycle#version-negotiation.2; "
                "`python -m spec_map check` suggests the nearest ones",
                pytrace=False,
            )

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Track each test's outcome across setup, call and teardown."""
        if report.failed:
            self.record(report.nodeid, "failed")
        elif report.skipped or hasattr(report, "wasxfail"):
            self.record(report.nodeid, "skipped")
        elif report.when == "call":
            self.record(report.nodeid, "passed")

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Write results.json (not on xdist workers; the controller writes it)."""
        if hasattr(session.config, "workerinput"):
            return
        text = json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n"
        try:
            self.results_path.write_text(text, encoding="utf-8")
        except OSError as exc:
            session.config.get_terminal_writer().line(
                f"spec_map: could not write {self.results_path}: {exc}", red=True
            )


def _load_known(path: Path) -> set[str] | None:
    from .catalog import load_catalog

    try:
        return set(load_catalog(path).clauses)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker and the per-session :class:`SpecRecorder`."""
    config.addinivalue_line(
        "markers", "spec(*clause_ids): the spec clause(s) this test proves (see spec_map/)"
    )
    catalog = Path(os.environ.get("SPEC_MAP_CATALOG", _HERE / "clauses"))
    results = Path(os.environ.get("SPEC_MAP_RESULTS", _HERE / "results.json"))
    config.pluginmanager.register(SpecRecorder(_load_known(catalog), results), "spec_map_recorder")

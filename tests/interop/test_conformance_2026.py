"""The official conformance suite's 2026-07-28 server requirements against mcp-ref.

``conformance server --requirements 2026-07-28`` (the pinned 0.2.0 alpha of
tests/interop/peers.py) runs exactly the server scenarios the 2026-07-28 revision
requires (37, scored), and some it runs without scoring (the tasks extension, pending
scenarios).  The reference server (``mcp_ref.examples.everything``) is served over
Streamable HTTP in a child process, as in test_conformance.py, whose helpers and
``server_url`` fixture this module shares.  Each scored scenario is one test: it passes
when its checks hold no FAILURE and no WARNING; so do the three pending scenarios the
server passes (the tasks extension is not built).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from . import peers
from .test_conformance import (
    _bad,
    _results,
    _run,
    server_url,  # noqa: F401 - the fixture, shared
)

pytestmark = pytest.mark.interop

GROUP = "conformance-next"

# The 37 server scenarios conformance 0.2.0-alpha.12 scores for 2026-07-28.
SCORED = [
    "server-stateless",
    "completion-complete",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-error",
    "tools-call-with-progress",
    "server-sse-multiple-streams",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "sep-2164-resource-not-found",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "dns-rebinding-protection",
    "caching",
    "input-required-result-basic-elicitation",
    "input-required-result-basic-sampling",
    "input-required-result-basic-list-roots",
    "input-required-result-request-state",
    "input-required-result-multiple-input-requests",
    "input-required-result-multi-round",
    "input-required-result-missing-input-response",
    "input-required-result-non-tool-request",
    "input-required-result-result-type",
    "input-required-result-unsupported-methods",
    "input-required-result-tampered-state",
    "input-required-result-capability-check",
    "input-required-result-ignore-extra-params",
    "input-required-result-validate-input",
]
# Run unscored (pending), and passed all the same.
PENDING = ["json-schema-2020-12", "http-header-validation", "http-custom-header-server-validation"]


@pytest.fixture(scope="module")
def results_2026(tmp_path_factory: pytest.TempPathFactory, server_url: str) -> dict[str, Any]:  # noqa: F811
    """The one server run of ``--requirements 2026-07-28``."""
    cmd = peers.conformance_cmd(GROUP)
    if cmd is None:
        pytest.skip(peers.why_missing(GROUP) or "the conformance suite is unavailable")
    out_dir: Path = tmp_path_factory.mktemp("conformance-2026-server")
    argv = [*cmd, "server", "--url", server_url, "--requirements", "2026-07-28"]
    tail = _run([*argv, "-o", str(out_dir)], out_dir)
    return {**_results(out_dir, "server-"), "_tail": tail}


@pytest.mark.parametrize("scenario", SCORED + PENDING)
def test_server_scenario_2026(results_2026: dict[str, Any], scenario: str) -> None:
    found = results_2026.get(scenario)
    assert found is not None, f"{scenario} did not run:\n{results_2026['_tail']}"
    assert _bad(found["checks"]) == [], found["stderr"][-2000:]
    assert found["checks"], f"{scenario} reported no checks"

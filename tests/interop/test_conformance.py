"""The official MCP conformance suite (@modelcontextprotocol/conformance) against mcp-ref.

Both pinned versions run (tests/interop/peers.py): 0.1.16 with ``--suite all``, and
0.2.0-alpha.12 twice: with ``--requirements 2025-11-25`` (exactly the scenarios the
2025-11-25 revision requires, plus those it runs and reports without scoring:
extensions, scenarios added after its release, and pending ones), and with
``--requirements 2026-07-28`` (the stateless era, run at the 2026-07-28 wire; its tasks
extension scenarios belong to another issue and are only checked to be listed).  Each
test id starts with the suite's version (``0.2.0-alpha.12@2026-07-28`` for the second).

Server mode: the reference server (``mcp_ref.examples.everything``) is served over
Streamable HTTP by :func:`mcp_ref.trio.serve_http` in a child process, and
``conformance server --url http://localhost:PORT/mcp <selection>`` runs the version's
server scenarios against it.  Client mode: ``conformance client --command "<python>
tests/interop/conformance_client.py" <selection>`` starts our HTTP client once per
scenario; it exits non-zero on a scenario it does not know, so none passes by default.
Both runs write ``checks.json`` per scenario (``-o DIR``); each scenario is one test
here, which passes when its checks hold no FAILURE and no WARNING (and, in
client mode, when the checks the scenario exists for are there and succeeded: a client
that does nothing passes some scenarios with zero checks).

The OAuth client scenarios (``auth/...``): our client signs in
(:class:`mcp_ref.client.OAuthClientOptions`), and each must pass, except those whose
mechanism is not built (``conformance_client.UNSUPPORTED_AUTH``, empty now), which are
strict expected failures.  One scenario (``auth/resource-mismatch``) checks only that the client did not
authorize against a mismatched resource, which a client that never tries "passes"; so
an auth scenario counts as passed only when its checks hold *and* the client did not
report that it cannot authorize (``conformance_client.NO_OAUTH`` on its stderr).  A version's tests are skipped, with
the installer's reason, when Node 22 or that version of the suite cannot be installed.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from . import peers
from .conformance_client import NO_OAUTH, UNSUPPORTED_AUTH

pytestmark = pytest.mark.interop

SUITE_TIMEOUT_SECONDS = 240.0
SERVER_START_SECONDS = 30.0

# The scenarios of conformance 0.1.16 (peers.PINS), run with --suite all.
SERVER_SCENARIOS = [
    "server-initialize",
    "logging-set-level",
    "ping",
    "completion-complete",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "json-schema-2020-12",
    "elicitation-sep1034-defaults",
    "server-sse-polling",
    "server-sse-multiple-streams",
    "elicitation-sep1330-enums",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "dns-rebinding-protection",
]

# Client scenarios that need no OAuth, with the check ids each must report as SUCCESS.
CLIENT_SCENARIOS = {
    "initialize": ["mcp-client-initialization"],
    "tools_call": ["tool-add-numbers"],
    "elicitation-sep1034-client-defaults": [
        "client-elicitation-sep1034-string-default",
        "client-elicitation-sep1034-integer-default",
        "client-elicitation-sep1034-number-default",
        "client-elicitation-sep1034-enum-default",
        "client-elicitation-sep1034-boolean-default",
    ],
    "sse-retry": [
        "client-sse-graceful-reconnect",
        "client-sse-retry-timing",
        "client-sse-last-event-id",
    ],
}

AUTH_SCENARIOS = [
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "auth/cross-app-access-complete-flow",
]
# The scenarios of conformance 0.2.0-alpha.12 (peers.PINS), run with
# --requirements 2025-11-25: the 30 scored server scenarios (0.1.16's, less the two
# pending ones) and three more it runs unscored (server-session-lifecycle, added after
# the release; json-schema-2020-12 and server-sse-polling, pending).  All must pass.
NEXT_SERVER_SCENARIOS = [
    *(s for s in SERVER_SCENARIOS if s not in ("json-schema-2020-12", "server-sse-polling")),
    "server-session-lifecycle",
    "json-schema-2020-12",
    "server-sse-polling",
]
NEXT_CLIENT_SCENARIOS = {
    **CLIENT_SCENARIOS,
    # Run unscored (added after the release), and taught to our client: it must echo
    # a tool's JSON Schema 2020-12 inputSchema unchanged.
    "json-schema-2020-12-preservation": [
        "json-schema-2020-12-client-tool-found",
        "json-schema-2020-12-client-echo-completed",
        "json-schema-2020-12-client-$schema-preserved",
        "json-schema-2020-12-client-$defs-preserved",
        "json-schema-2020-12-client-additionalProperties-preserved",
        "wire-schema-valid",
    ],
}
# The 14 scored auth scenarios (0.1.16's first 14: metadata-default ... pre-registration),
# then the six OAuth extensions it runs unscored (all pass).
NEXT_AUTH_SCENARIOS = [
    *AUTH_SCENARIOS[: AUTH_SCENARIOS.index("auth/pre-registration") + 1],
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "auth/enterprise-managed-authorization",
    "auth/dpop",
    "auth/dpop-nonce",
    "auth/wif-jwt-bearer",
]

# The scenarios of conformance 0.2.0-alpha.12 run with --requirements 2026-07-28 (the
# stateless era, run "at the 2026-07-28 wire"): its 37 scored server scenarios and the
# three pending ones it runs unscored (all must pass); the tasks extension's ten belong
# to another issue (listed, not scored).
MODERN_SERVER_SCENARIOS = [
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
    "json-schema-2020-12",
    "http-header-validation",
    "http-custom-header-server-validation",
]
MODERN_TASKS_SCENARIOS = (
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
)
# Its client scenarios that are not authorization, and the checks each exists for.
MODERN_CLIENT_SCENARIOS: dict[str, list[str]] = {
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
    "json-schema-2020-12-preservation": NEXT_CLIENT_SCENARIOS["json-schema-2020-12-preservation"],
}
# Its 25 scored auth scenarios (0.1.16's, less the two 2025-03-26 fallbacks, then what
# 2026-07-28 adds: authorization-server migration and the RFC 9207 iss checks), and the
# same six extensions as the 2025-11-25 run.
MODERN_AUTH_SCENARIOS = [
    *(
        s
        for s in AUTH_SCENARIOS[: AUTH_SCENARIOS.index("auth/client-credentials-jwt")]
        if "2025-03-26" not in s
    ),
    "auth/authorization-server-migration",
    "auth/iss-supported",
    "auth/iss-not-advertised",
    "auth/iss-supported-missing",
    "auth/iss-wrong-issuer",
    "auth/iss-unexpected",
    "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
    *NEXT_AUTH_SCENARIOS[NEXT_AUTH_SCENARIOS.index("auth/client-credentials-jwt") :],
]

AUTH_REASON = "this scenario's mechanism is not built: the client connects without signing in"

# A child process serving the everything server over HTTP; prints its URL when listening.
SERVER_CODE = """
import sys, trio
from mcp_ref.examples.everything import make_server
from mcp_ref.trio.http.server import serve_http

async def main():
    async with trio.open_nursery() as nursery:
        info = await nursery.start(serve_http, make_server(), "127.0.0.1", 0)
        print(info.port, flush=True)

trio.run(main)
"""

_TIME_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}T[0-9-]+Z$")


@dataclass(frozen=True)
class Suite:
    """One pinned version of the conformance suite and what it must report."""

    group: str  # its group in peers.GROUPS
    selection: tuple[str, ...]  # the CLI options choosing the scenarios to run
    server: list[str]
    client: Mapping[str, list[str]]  # scenario -> check ids that must be SUCCESS
    auth: list[str]
    # Client scenarios run once more, on their own, after the parallel batch (whose
    # ~25 Python clients starting at once starve a timed one); that run's result counts.
    alone: tuple[str, ...] = ()
    # Scenarios the suite lists and runs but that belong to another issue (the tasks
    # extension): checked against the suite's list, never scored here.
    elsewhere: tuple[str, ...] = ()
    # Told apart in test ids when one version runs twice (two requirement sets).
    tag: str = ""

    @property
    def version(self) -> str:
        (name,) = peers.GROUPS[self.group]
        return peers.PINS[name]

    @property
    def label(self) -> str:
        """The version, and the requirement set when it is not the first run's."""
        return f"{self.version}@{self.tag}" if self.tag else self.version


SUITES = [
    # 0.1.16's sse-retry fails a reconnection more than 2 x the 500 ms retry late; the
    # alpha checks only that the client does not reconnect early.
    Suite(
        "conformance",
        ("--suite", "all"),
        SERVER_SCENARIOS,
        CLIENT_SCENARIOS,
        AUTH_SCENARIOS,
        alone=("sse-retry",),
    ),
    Suite(
        "conformance-next",
        ("--requirements", "2025-11-25"),
        NEXT_SERVER_SCENARIOS,
        NEXT_CLIENT_SCENARIOS,
        NEXT_AUTH_SCENARIOS,
    ),
    Suite(
        "conformance-next",
        ("--requirements", "2026-07-28"),
        MODERN_SERVER_SCENARIOS,
        MODERN_CLIENT_SCENARIOS,
        MODERN_AUTH_SCENARIOS,
        elsewhere=MODERN_TASKS_SCENARIOS,
        tag="2026-07-28",
    ),
]


def _conformance(suite: Suite) -> list[str]:
    cmd = peers.conformance_cmd(suite.group)
    if cmd is None:
        pytest.skip(peers.why_missing(suite.group) or f"conformance {suite.version} is unavailable")
    return cmd


def _read_line(proc: subprocess.Popen[bytes], seconds: float) -> str:
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + seconds
    buf = b""
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while b"\n" not in buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not sel.select(remaining):
                pytest.fail(f"the HTTP server did not start within {seconds} s")
            chunk = os.read(fd, 4096)
            if not chunk:
                err = proc.stderr.read().decode() if proc.stderr else ""
                pytest.fail(f"the HTTP server exited early: {err[-2000:]}")
            buf += chunk
    return buf.split(b"\n", 1)[0].decode()


def _results(out_dir: Path, prefix: str) -> dict[str, dict[str, Any]]:
    """``{scenario: {"checks": [...], "stderr": str}}`` from a conformance output dir."""
    found: dict[str, dict[str, Any]] = {}
    for checks in out_dir.rglob("checks.json"):
        rel = checks.parent.relative_to(out_dir).as_posix()
        name = _TIME_SUFFIX.sub("", rel).removeprefix(prefix)
        stderr_file = checks.parent / "stderr.txt"
        found[name] = {
            "checks": json.loads(checks.read_text()),
            "stderr": stderr_file.read_text() if stderr_file.exists() else "",
        }
    return found


def _run(argv: list[str], out_dir: Path) -> str:
    try:
        proc = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=SUITE_TIMEOUT_SECONDS,
            check=False,
            cwd=peers.repo_root(),
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the conformance suite ran longer than {SUITE_TIMEOUT_SECONDS} s")
    return proc.stdout[-3000:] + proc.stderr[-3000:]


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    """The everything server over HTTP in a child process, shared by both versions."""
    env = dict(os.environ, PYTHONPATH=str(peers.repo_root()))
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER_CODE],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=peers.repo_root(),
    )
    try:
        port = int(_read_line(proc, SERVER_START_SECONDS))
        # A localhost URL: the DNS-rebinding scenario only runs against one.
        yield f"http://localhost:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


Runs = Callable[[Suite], dict[str, Any]]


@pytest.fixture(scope="module")
def server_results(tmp_path_factory: pytest.TempPathFactory, server_url: str) -> Runs:
    """Each version's server run, made once on first use."""
    done: dict[str, dict[str, Any]] = {}

    def results(suite: Suite) -> dict[str, Any]:
        if suite.label not in done:
            cmd = _conformance(suite)
            out_dir = tmp_path_factory.mktemp(f"{suite.group}{suite.tag}-server")
            argv = [*cmd, "server", "--url", server_url, *suite.selection, "-o", str(out_dir)]
            tail = _run(argv, out_dir)
            done[suite.label] = {**_results(out_dir, "server-"), "_tail": tail}
        return done[suite.label]

    return results


@pytest.fixture(scope="module")
def client_results(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """Each version's client run, made once on first use."""
    done: dict[str, dict[str, Any]] = {}

    def results(suite: Suite) -> dict[str, Any]:
        if suite.label not in done:
            cmd = _conformance(suite)
            out_dir = tmp_path_factory.mktemp(f"{suite.group}{suite.tag}-client")
            script = peers.repo_root() / "tests" / "interop" / "conformance_client.py"
            # The suite splits the command on spaces: the paths must have none.
            if " " in sys.executable or " " in str(script):
                pytest.skip("the conformance client command cannot hold paths with spaces")
            command = f"{sys.executable} {script}"
            argv = [*cmd, "client", "--command", command, *suite.selection, "-o", str(out_dir)]
            tail = _run(argv, out_dir)
            found = _results(out_dir, "")
            for name in suite.alone:
                alone_dir = tmp_path_factory.mktemp(f"{suite.group}-client-alone")
                argv = [*cmd, "client", "--command", command, "--scenario", name]
                _run([*argv, "-o", str(alone_dir)], alone_dir)
                found.pop(name, None)  # only the run on its own counts
                found.update(_results(alone_dir, ""))
            done[suite.label] = {**found, "_tail": tail}
        return done[suite.label]

    return results


def _bad(checks: list[dict[str, Any]]) -> list[str]:
    return [
        f"{c.get('id')}: {c.get('status')}: {c.get('errorMessage') or c.get('description')}"
        for c in checks
        if c.get("status") in ("FAILURE", "WARNING")
    ]


def _params(kind: str) -> list[Any]:
    """``(suite, scenario)`` pairs of every version, with ids ``<version>-<scenario>``."""
    params = []
    for suite in SUITES:
        names = sorted(suite.client) if kind == "client" else getattr(suite, kind)
        for name in names:
            marks = []
            if kind == "auth" and name in UNSUPPORTED_AUTH:
                marks.append(
                    pytest.mark.xfail(reason=AUTH_REASON, strict=True, raises=AssertionError)
                )
            params.append(pytest.param(suite, name, id=f"{suite.label}-{name}", marks=marks))
    return params


@pytest.mark.parametrize("suite", SUITES, ids=lambda suite: suite.label)
def test_the_scenario_lists_match_the_installed_suite(suite: Suite) -> None:
    cmd = _conformance(suite)
    version = subprocess.run(
        [*cmd, "--version"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert version.strip() == suite.version
    # --suite is not an option of "list"; --requirements is (and lists the unscored too).
    selection = [] if suite.selection[0] == "--suite" else list(suite.selection)
    out = subprocess.run(
        [*cmd, "list", *selection], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    names = set(re.findall(r"^\s*- (\S+)", out, re.MULTILINE))
    assert names == set(suite.server) | set(suite.client) | set(suite.auth) | set(suite.elsewhere)


@pytest.mark.parametrize(("suite", "scenario"), _params("server"))
def test_server_scenario(server_results: Runs, suite: Suite, scenario: str) -> None:
    results = server_results(suite)
    got = results.get(scenario)
    assert got is not None, f"{scenario} did not run; suite output: {results['_tail']}"
    checks = got["checks"]
    assert checks, f"{scenario} reported no checks"
    assert not _bad(checks), _bad(checks)
    assert any(c.get("status") == "SUCCESS" for c in checks)


@pytest.mark.parametrize(("suite", "scenario"), _params("client"))
def test_client_scenario(client_results: Runs, suite: Suite, scenario: str) -> None:
    results = client_results(suite)
    got = results.get(scenario)
    assert got is not None, f"{scenario} did not run; suite output: {results['_tail']}"
    checks = got["checks"]
    assert not _bad(checks), (_bad(checks), got["stderr"][-2000:])
    # One id may repeat (a check per method, some SKIPPED): each must have succeeded once.
    succeeded = {c.get("id") for c in checks if c.get("status") == "SUCCESS"}
    for check_id in suite.client[scenario]:
        assert check_id in succeeded, (check_id, checks, got["stderr"][-2000:])
    assert "conformance client failed" not in got["stderr"], got["stderr"][-2000:]


@pytest.mark.parametrize(("suite", "scenario"), _params("auth"))
def test_client_auth_scenario(client_results: Runs, suite: Suite, scenario: str) -> None:
    got = client_results(suite).get(scenario)
    assert got is not None, f"{scenario} did not run"
    assert got["checks"] and not _bad(got["checks"]), _bad(got["checks"])
    # A pass must come from a client that can authorize, not from one that never tried.
    assert NO_OAUTH not in got["stderr"], f"{scenario} held only because the client never signed in"


def test_the_client_fails_a_scenario_it_does_not_know(server_url: str) -> None:
    # Needs no node: a scenario a new suite adds must fail until the client is taught it.
    script = peers.repo_root() / "tests" / "interop" / "conformance_client.py"
    env = dict(
        os.environ,
        PYTHONPATH=str(peers.repo_root()),
        MCP_CONFORMANCE_SCENARIO="no-such-scenario",
    )
    proc = subprocess.run(
        [sys.executable, str(script), server_url],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "unknown scenario 'no-such-scenario'" in proc.stderr, proc.stderr[-2000:]

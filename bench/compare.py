"""Part 4 (``--compare``) and part 5 (``--server``, ``--url``): servers side by side.

Theory of operation
-------------------
The official SDKs are installed on demand into the peers cache by
``tests/interop/peers.py`` (the project's one installer: a separate venv for the Python
SDK ``mcp``, an npm prefix for ``@modelcontextprotocol/sdk``), reused here as is.

Rows, each with the same load (N echo calls, 1 or 100 in flight) on both sides:

* **in-process**: our client and server in one process (:mod:`bench.ours`) against the
  SDK's own client and server in one process (its in-memory streams, the ``initialize``
  handshake and JSON-RPC, ``mode="legacy"``), run by :mod:`bench.peers.sdk_py_peer` in
  the SDK's venv.  Both sides pay for their client and their server.
* **stdio**, **Streamable HTTP (JSON)**, **Streamable HTTP (SSE)**: one server process
  each (our :mod:`bench.echo_server`, the SDK's ``MCPServer``, the TypeScript SDK's
  ``McpServer``), all driven by the same neutral load generator
  (:mod:`bench.loadgen`), so only the server differs.

``ratio`` is ours/theirs requests per second; beside it, when the floors were measured
(:mod:`bench.floor`), ``floor_ratio`` is floor/theirs on the same transport (the best
ratio any trio/h11 implementation could show) and ``target_ratio`` issue 6's target.  A side that cannot run (an SDK that did
not install, a transport we have not built) leaves its cells empty with the reason in
the row's note.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .loadgen import HttpTarget, StdioTarget, TargetError, free_port, wait_for_port
from .report import E2E_KEYS, Row

__all__ = ["compare_rows", "server_rows"]

ROOT = Path(__file__).resolve().parent.parent
PEERS = Path(__file__).resolve().parent / "peers"


def _peers() -> Any:
    """The project's peer installer module (tests/interop/peers.py)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.interop import peers

    return peers


def sdk_python() -> tuple[str | None, str]:
    """(python of the official Python SDK's venv, or None; why not)."""
    try:
        peers = _peers()
    except ImportError as exc:
        return None, f"installer not found ({exc})"
    path = peers.python_sdk_python()
    if path is None:
        return None, peers.why_missing("python-sdk")
    return str(path), ""


def ts_server_command() -> tuple[list[str] | None, str | None, str]:
    """(argv of the TypeScript SDK echo server, its cwd, why not)."""
    try:
        peers = _peers()
    except ImportError as exc:
        return None, None, f"installer not found ({exc})"
    prefix = peers.ts_sdk_dir()
    if prefix is None:
        return None, None, peers.why_missing("ts-sdk")
    node = peers.system_node() or peers.node22()
    if node is None:
        return None, None, "no node >= 18 on PATH and the node22 peer is unavailable"
    # ESM resolves bare imports from the script's own folder upwards: put it in the prefix.
    script = Path(prefix) / "mcp_ref_bench_echo.mjs"
    source = (PEERS / "ts_echo_server.mjs").read_bytes()
    if not script.exists() or script.read_bytes() != source:
        script.write_bytes(source)
    return [str(node), script.name], str(prefix), ""


def _ours_stdio_command() -> tuple[list[str], str]:
    """Our echo server command, and which layer it runs (``api`` or ``session``)."""
    from .ours import NotBuilt, make_echo_server

    try:
        server = make_echo_server()
        layer = "api" if hasattr(server, "run_stdio") else "session"
    except NotBuilt:
        layer = "session"
    return [sys.executable, "-m", "bench.echo_server", layer], layer


RUN_ERRORS = (TargetError, OSError, subprocess.SubprocessError, ValueError)
"""What a failed measurement raises: the row gets a note instead of a number."""


def _env() -> dict[str, str]:
    return {"PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


@contextlib.contextmanager
def _http_server(argv: list[str], port: int, *, env: dict[str, str] | None = None) -> Iterator[int]:
    """Start an HTTP server process, wait for its port, yield its pid; stop it after."""
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        cwd=str(ROOT),
    )
    try:
        wait_for_port("127.0.0.1", port, proc=proc)
        yield proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


Measure = Callable[[int, Sequence[int]], dict[int, dict[str, Any]]]
"""``measure(requests, concurrencies) -> {concurrency: metrics}``: one server start (or
one SDK process) serves every concurrency, after a warm-up."""


def _median_runs(
    measure: Measure, requests: int, concurrencies: Sequence[int], repeats: int
) -> dict[int, dict[str, Any]]:
    """Per concurrency, the median run (by requests per second) of ``repeats`` runs."""
    return _medians([measure(requests, concurrencies) for _ in range(repeats)], concurrencies)


def _medians(
    runs: Sequence[dict[int, dict[str, Any]]], concurrencies: Sequence[int]
) -> dict[int, dict[str, Any]]:
    """Per concurrency, the median (by requests per second) of ``runs``."""
    out = {}
    for c in concurrencies:
        mine = sorted((r[c] for r in runs), key=lambda r: r["req_per_s"])
        out[c] = mine[(len(mine) - 1) // 2]
    return out


def _drive(
    target: StdioTarget | HttpTarget, requests: int, concurrencies: Sequence[int]
) -> dict[int, dict[str, Any]]:
    target.run(requests=min(200, requests), concurrency=max(concurrencies))  # warm-up
    return {c: target.run(requests=requests, concurrency=c) for c in concurrencies}


def _stdio_measure(
    argv: list[str], cwd: str | None = None, env: dict[str, str] | None = None
) -> Measure:
    def measure(requests: int, concurrencies: Sequence[int]) -> dict[int, dict[str, Any]]:
        with StdioTarget(argv, cwd=cwd, env=env) as target:
            return _drive(target, requests, concurrencies)

    return measure


def _http_measure(argv: list[str], port: int, env: dict[str, str] | None = None) -> Measure:
    def measure(requests: int, concurrencies: Sequence[int]) -> dict[int, dict[str, Any]]:
        with (
            _http_server(argv, port, env=env) as pid,
            HttpTarget(f"http://127.0.0.1:{port}/mcp", pid=pid) as target,
        ):
            return _drive(target, requests, concurrencies)

    return measure


def child_json(
    argv: list[str], *, why: Callable[[str], str], cwd: Path | None = None
) -> dict[int, dict[str, Any]]:
    """Run a measuring child process (at most 600 s) and read the ``{concurrency:
    metrics}`` JSON object on the last line of its stdout.

    Raises:
        TargetError: the child exited with an error; the message is ``why(its stderr)``.
    """
    out = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=cwd, check=False)
    if out.returncode != 0:
        raise TargetError(why(out.stderr))
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return {int(k): v for k, v in result.items()}


def _sdk_inproc(python: str) -> Measure:
    def measure(requests: int, concurrencies: Sequence[int]) -> dict[int, dict[str, Any]]:
        levels = ",".join(map(str, concurrencies))
        return child_json(
            [python, str(PEERS / "sdk_py_peer.py"), "inproc", str(requests), levels],
            why=lambda err: f"SDK in-process run failed: {err.strip()[-500:]}",
        )

    return measure


def _ours_inproc() -> tuple[Measure | None, str, str]:
    import trio

    from .load import run_load
    from .ours import NotBuilt, need, open_inproc, open_inproc_session

    opener: Any = open_inproc
    label = "client+server"
    try:
        need("mcp_ref.client", "open_client")
        need("mcp_ref.server", "Server")
    except NotBuilt:
        opener, label = open_inproc_session, "session layer"
        try:
            need("mcp_ref.trio", "open_session")
        except NotBuilt as exc:
            return None, label, f"n/a (not built yet: {exc})"

    def measure(requests: int, concurrencies: Sequence[int]) -> dict[int, dict[str, Any]]:
        async def main() -> dict[int, dict[str, Any]]:
            async with opener() as target:
                return {
                    c: await run_load(target, requests=requests, concurrency=c, in_process=True)
                    for c in concurrencies
                }

        result: dict[int, dict[str, Any]] = trio.run(main)
        return result

    return measure, label, ""


def _pair_rows(
    name: str,
    ours: Measure | None,
    theirs: Measure | None,
    *,
    requests: int,
    repeats: int,
    why_not_ours: str = "",
    why_not_theirs: str = "",
    log: Callable[[str], None],
    concurrencies: Sequence[int] = (1, 100),
    floor: dict[int, dict[str, Any]] | str | None = None,
    target: float | None = None,
) -> list[Row]:
    """One row per concurrency: ``name`` with ``{c}`` replaced by it.

    ``floor`` is the matching floor's ``{concurrency: metrics}`` (or why it has none;
    see :mod:`bench.floor`): its requests per second, server CPU and ratio to theirs
    (``floor_ratio``) join the row, with the issue's ``target`` ratio when there is one.
    """
    notes: list[str] = []
    sides: dict[str, Measure] = {}
    for side, measure, why in (("ours", ours, why_not_ours), ("theirs", theirs, why_not_theirs)):
        if measure is None:
            notes.append(f"{side}: {why}")
        else:
            sides[side] = measure
    # The sides' runs alternate, so a machine that slows down for a while slows both.
    runs: dict[str, list[dict[int, dict[str, Any]]]] = {side: [] for side in sides}
    for i in range(repeats):
        for side, measure in list(sides.items()):
            log(f"  {name.format(c='*')} [{side} {i + 1}/{repeats}]")
            try:
                runs[side].append(measure(requests, concurrencies))
            except RUN_ERRORS as exc:
                notes.append(f"{side}: failed: {exc}")
                del sides[side], runs[side]
    results = {side: _medians(got, concurrencies) for side, got in runs.items()}
    if isinstance(floor, str):
        notes.append(f"floor: {floor}")
    rows = []
    for c in concurrencies:
        metrics: dict[str, float | None] = {}
        detail: dict[str, Any] = {"requests": requests, "concurrency": c}
        for side, per_c in results.items():
            result = per_c[c]
            detail[side] = result
            metrics[f"{side}_req_per_s"] = result.get("req_per_s")
            metrics[f"{side}_p50_ms"] = result.get("p50_ms")
            metrics[f"{side}_server_cpu_us"] = result.get("server_cpu_us")
        ours_rate, theirs_rate = metrics.get("ours_req_per_s"), metrics.get("theirs_req_per_s")
        if ours_rate and theirs_rate:
            metrics["ratio"] = ours_rate / theirs_rate
        if isinstance(floor, dict):
            detail["floor"] = floor[c]
            floor_rate = floor[c].get("req_per_s")
            metrics["floor_req_per_s"] = floor_rate
            metrics["floor_server_cpu_us"] = floor[c].get("server_cpu_us")
            if floor_rate and theirs_rate:
                metrics["floor_ratio"] = floor_rate / theirs_rate
        if target is not None:
            metrics["target_ratio"] = target
        rows.append(
            Row("compare", name.format(c=c), metrics, note="; ".join(notes) or None, detail=detail)
        )
    return rows


TARGETS = {"in-process": 10.0, "stdio": 8.0, "HTTP": 5.0}
"""Issue 6's targets, ours/theirs against the official Python SDK, by transport."""


def compare_rows(
    *,
    requests: int,
    slow_requests: int,
    repeats: int,
    log: Callable[[str], None],
    floors: dict[str, Any] | None = None,
) -> list[Row]:
    """Every side-by-side row.

    Args:
        requests: calls per run against our servers and the TypeScript SDK.
        slow_requests: calls per run where the official Python SDK is one side (it is
            several times slower; fewer calls keep the run short).
        repeats: runs per side; the median is kept.
        log: progress messages (to stderr).
        floors: :func:`bench.floor.measure_floors`'s result, shown beside each row
            (the in-process floor beside in-process, and so on); None: no floor columns.
    """
    rows: list[Row] = []
    floors = floors or {}
    python, why_py = sdk_python()
    ours_in, layer, why_in = _ours_inproc()
    ours_argv, stdio_layer = _ours_stdio_command()
    ours_stdio = _stdio_measure(ours_argv, cwd=str(ROOT), env=_env())
    common: dict[str, Any] = {"repeats": repeats, "log": log}
    rows += _pair_rows(
        f"in-process x{{c}} vs Python SDK ({layer})",
        ours_in,
        _sdk_inproc(python) if python else None,
        requests=slow_requests,
        why_not_ours=why_in,
        why_not_theirs=f"n/a ({why_py})",
        floor=floors.get("inproc"),
        target=TARGETS["in-process"],
        **common,
    )
    sdk_stdio = (
        _stdio_measure([python, str(PEERS / "sdk_py_peer.py"), "serve-stdio"]) if python else None
    )
    rows += _pair_rows(
        f"stdio x{{c}} vs Python SDK ({stdio_layer})",
        ours_stdio,
        sdk_stdio,
        requests=slow_requests,
        why_not_theirs=f"n/a ({why_py})",
        floor=floors.get("stdio"),
        target=TARGETS["stdio"],
        **common,
    )
    ts_argv, ts_cwd, why_ts = ts_server_command()
    rows += _pair_rows(
        f"stdio x{{c}} vs TypeScript SDK ({stdio_layer})",
        ours_stdio,
        _stdio_measure(ts_argv, cwd=ts_cwd) if ts_argv else None,
        requests=requests,
        why_not_theirs=f"n/a ({why_ts})",
        floor=floors.get("stdio"),
        **common,
    )
    for mode in ("json", "sse"):
        ours_http, why_http = _ours_http(mode)
        theirs_http = None
        if python:
            port = free_port()
            argv = [python, str(PEERS / "sdk_py_peer.py"), "serve-http", str(port), mode]
            theirs_http = _http_measure(argv, port)
        rows += _pair_rows(
            f"HTTP {mode.upper()} x{{c}} vs Python SDK",
            ours_http,
            theirs_http,
            requests=slow_requests,
            why_not_ours=why_http,
            why_not_theirs=f"n/a ({why_py})",
            floor=floors.get(f"http-{mode}"),
            target=TARGETS["HTTP"],
            **common,
        )
    return rows


def _ours_http(mode: str) -> tuple[Measure | None, str]:
    """Our Streamable HTTP echo server, when built (see :mod:`bench.echo_server`)."""
    from .echo_server import http_server_available

    ok, _why = http_server_available()
    if not ok:
        return None, "n/a (our HTTP server is not built yet)"
    port = free_port()
    argv = [sys.executable, "-m", "bench.echo_server", "http", str(port), mode]
    return _http_measure(argv, port, env=_env()), ""


def server_rows(
    *, command: str | None, url: str | None, requests: int, repeats: int, log: Callable[[str], None]
) -> list[Row]:
    """Part 5: the load against the user's server (``--server "CMD"`` or ``--url URL``)."""
    import shlex

    rows: list[Row] = []
    targets: list[tuple[str, Measure]] = []
    if command:
        argv = shlex.split(command)
        if argv and shutil.which(argv[0]) is None and not Path(argv[0]).exists():
            rows.append(Row("server", f"stdio: {command}", note=f"n/a ({argv[0]} not found)"))
        else:
            targets.append((f"stdio: {command}", _stdio_measure(argv)))
    if url:

        def measure_url(requests: int, concurrencies: Sequence[int]) -> dict[int, dict[str, Any]]:
            with HttpTarget(url) as target:
                return _drive(target, requests, concurrencies)

        targets.append((f"HTTP: {url}", measure_url))
    for name, measure in targets:
        log(f"  {name}")
        try:
            results = _median_runs(measure, requests, (1, 100), repeats)
        except RUN_ERRORS as exc:
            rows.append(Row("server", name, note=f"failed: {exc}"))
            continue
        for c, result in results.items():
            rows.append(
                Row(
                    "server",
                    f"{name} x{c}",
                    {k: result.get(k) for k in E2E_KEYS},
                    detail={"requests": requests, "concurrency": c},
                )
            )
    return rows

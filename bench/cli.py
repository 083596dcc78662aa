"""``python -m bench``: run the measurements, print the tables, write JSON.

Theory of operation
-------------------
Sections run in order, each producing :class:`~bench.report.Row` objects:

1-2. ``core``: the sans-IO hot path against the floor (:mod:`bench.hotpath`);
3.   ``e2e`` and ``leak``: our client and server end to end (:mod:`bench.ours`,
     :mod:`bench.load`), the floors (:mod:`bench.floor`: the least any trio/h11
     implementation must do on each transport), then long runs that show whether
     memory stays flat;
4.   ``compare`` (``--compare``): the same loads against the official SDKs
     (:mod:`bench.compare`), with the floors' ratio to the SDK beside ours and the
     issue's target;
5.   ``server`` (``--server CMD`` / ``--url URL``): the same load against any server;
     given alone, only this section runs.

``leak`` also holds the load row of :func:`bench.fuzz_http.sessions_row`: many
concurrent HTTP sessions against ``mcp-ref serve --http`` (``http_sessions`` of the size,
1,000 outside ``--tiny``), with its errors and memory per session.

``--fuzz-http URL`` (:mod:`bench.fuzz_http`) runs alone: it sends damaged bodies, odd
headers and slow clients to a running endpoint (loopback only unless
``--allow-remote``; at most ``--fuzz-count`` cases and ``--fuzz-seconds`` of wall time),
prints sent / answered / unanswered per family, and exits 1 when any POST went
unanswered (2 when it refuses the URL or cannot start).

``--profile`` prints where the time goes in the core and in-process paths
(:mod:`bench.profile`).  Progress goes to stderr, the tables to stdout.  A row that
cannot be measured keeps its place with the reason, so the table always renders.

Sizes: ``--quick`` (well under a minute), the default full run (a few minutes on 2
cores), and ``--tiny`` (hidden; a few seconds, for the smoke test: the numbers mean
nothing, only that every row produces one).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import report
from ._measure import describe_machine
from .report import E2E_KEYS, Row

__all__ = ["SIZES", "main"]

ROOT = Path(__file__).resolve().parent.parent

SIZES: dict[str, dict[str, Any]] = {
    # core_scale: multiplies the hot path's messages per run; e2e: calls per e2e run;
    # compare/slow: calls per compare run (slow = the Python SDK is one side);
    # leak_requests / leak_sessions: the long runs; repeats: runs per figure (median);
    # http_sessions: concurrent sessions of the HTTP load row (at most the server's
    # max_sessions, 1000 by default).
    "tiny": {
        "core_scale": 0.005,
        "core_repeats": 1,
        "e2e": 30,
        "e2e_repeats": 1,
        "warmup": 5,
        "compare": 30,
        "slow": 30,
        "compare_repeats": 1,
        "leak_requests": 200,
        "leak_sessions": 5,
        "server": 30,
        "http_sessions": 20,
    },
    "quick": {
        "core_scale": 0.1,
        "core_repeats": 3,
        "e2e": 1000,
        "e2e_repeats": 1,
        "warmup": 50,
        "compare": 1000,
        "slow": 500,
        "compare_repeats": 1,
        "leak_requests": 5000,
        "leak_sessions": 50,
        "server": 1000,
        "http_sessions": 1000,
    },
    "full": {
        "core_scale": 1.0,
        "core_repeats": 5,
        "e2e": 10000,
        "e2e_repeats": 3,
        "warmup": 200,
        "compare": 10000,
        "slow": 3000,
        "compare_repeats": 3,
        "leak_requests": 100000,
        "leak_sessions": 1000,
        "server": 5000,
        "http_sessions": 1000,
    },
}


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --- part 3 -----------------------------------------------------------------------------------


def e2e_rows(size: dict[str, Any], log: Callable[[str], None] = _log) -> list[Row]:
    """Part 3: our client and server, every transport, 1 and 100 in flight.

    Each row runs in a fresh child process (``python -m bench.ours``), so an in-process
    row's peak RSS is its own and not the bench's; the two concurrencies share one
    session, after a warm-up.
    """
    import json
    import subprocess

    rows: list[Row] = []
    transports: list[tuple[str, str, bool]] = [
        ("in-process, session layer", "inproc-session", True),
        ("in-process, client+server", "inproc", True),
        ("stdio", "stdio", False),
        ("HTTP JSON", "http-json", False),
        ("HTTP SSE", "http-sse", False),
        ("WebSocket", "websocket", False),
        # The 2026-07-28 era: no initialize, _meta on every request, no HTTP session.
        ("stdio, 2026-07-28", "stdio-modern", False),
        ("HTTP JSON, 2026-07-28", "http-json-modern", False),
    ]
    levels = (1, 100)
    for name, key, in_process in transports:
        log(f"  {name}")
        argv = [
            sys.executable,
            "-m",
            "bench.ours",
            key,
            str(size["e2e"]),
            ",".join(map(str, levels)),
            str(size["warmup"]),
        ]
        runs: list[dict[str, Any]] = []
        note = None
        for _ in range(size["e2e_repeats"]):
            proc = subprocess.run(
                argv, capture_output=True, text=True, timeout=600, cwd=ROOT, check=False
            )
            if proc.returncode == 3:
                note = f"n/a (not built yet: {proc.stderr.strip()})"
                break
            if proc.returncode != 0:
                tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
                note = f"failed: {tail[0]}"
                break
            runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        for c in levels:
            label = f"{name} x{c}"
            if note is not None:
                rows.append(Row("e2e", label, note=note))
                continue
            mine = sorted((r[str(c)] for r in runs), key=lambda r: r["req_per_s"])
            best = mine[(len(mine) - 1) // 2]
            rows.append(
                Row(
                    "e2e",
                    label,
                    {k: best.get(k) for k in E2E_KEYS},
                    note="client column = client+server" if in_process else None,
                    detail={"requests": size["e2e"], "runs": mine},
                )
            )
    return rows


def floor_rows(floors: dict[str, Any], size: dict[str, Any]) -> list[Row]:
    """Part 3, the floors (:mod:`bench.floor`): one row per floor and concurrency.

    ``floors`` is what :func:`bench.floor.measure_floors` returned.  The in-process
    floor's client column is client and server together, like our in-process rows; the
    stdio and HTTP floors are driven by the load generator of section 4, whose CPU is
    the client column.
    """
    from .floor import FLOORS

    rows: list[Row] = []
    for key, label in FLOORS.items():
        got = floors.get(key, "n/a (not measured)")
        remark = "client column = client+server" if key == "inproc" else "loadgen client"
        for c in (1, 100):
            name = f"floor: {label} x{c}"
            if isinstance(got, str):
                rows.append(Row("e2e", name, note=got))
                continue
            best = got[c]
            rows.append(
                Row(
                    "e2e",
                    name,
                    {k: best.get(k) for k in E2E_KEYS},
                    note=remark,
                    detail={"requests": size["e2e"], "floor": key, "run": best},
                )
            )
    return rows


def leak_rows(size: dict[str, Any], log: Callable[[str], None] = _log) -> list[Row]:
    """Part 3, long runs: RSS before and after many requests, and many sessions."""

    import json
    import subprocess

    from ._measure import proc_rss

    rows: list[Row] = []
    n, m = size["leak_requests"], size["leak_sessions"]
    log(f"  in-process long run ({n} requests) and {m} sessions, in a child process")
    proc = subprocess.run(
        [sys.executable, "-m", "bench.ours", "leak", str(n), str(m)],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=ROOT,
        check=False,
    )
    if proc.returncode == 0:
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        layer = got["layer"]
        rows.append(_leak_row(f"in-process {layer}: requests", *got["requests"], requests=n))
        rows.append(_leak_row(f"in-process {layer}: sessions", *got["sessions"], sessions=m))
    else:
        why = proc.stderr.strip().splitlines()[-1:] or ["no output"]
        note = f"n/a (not built yet: {why[0]})" if proc.returncode == 3 else f"failed: {why[0]}"
        rows.append(Row("leak", "in-process: requests", note=note))
        rows.append(Row("leak", "in-process: sessions", note=note))

    from .compare import _env, _ours_stdio_command
    from .loadgen import StdioTarget, TargetError
    from .ours import leak_warmup

    argv, stdio_layer = _ours_stdio_command()
    log(f"  stdio server long run ({n} requests)")
    try:
        with StdioTarget(argv, env=_env(), cwd=str(ROOT)) as t:
            t.run(requests=leak_warmup(n), concurrency=10)
            before = proc_rss(t.pid)[0] if t.pid else None
            t.run(requests=n, concurrency=10)
            after = proc_rss(t.pid)[0] if t.pid else None
        rows.append(_leak_row(f"stdio server ({stdio_layer}): requests", before, after, requests=n))
    except TargetError as exc:
        rows.append(Row("leak", "stdio server: requests", note=f"failed: {exc}"))
    from .fuzz_http import sessions_row

    rows.append(sessions_row(size["http_sessions"], log=log))
    return rows


def _leak_row(
    name: str, before: int | None, after: int | None, *, requests: int = 0, sessions: int = 0
) -> Row:
    metrics: dict[str, float | None] = {
        "requests": requests or None,
        "sessions": sessions or None,
        "rss_start_mb": before / 2**20 if before else None,
        "rss_end_mb": after / 2**20 if after else None,
    }
    if before is not None and after is not None:
        growth = after - before
        if requests:
            metrics["growth_bytes_per_req"] = growth / requests
        if sessions:
            metrics["growth_kb_per_session"] = growth / 1024 / sessions
    return Row("leak", name, metrics)


# --- profile ----------------------------------------------------------------------------------


def run_profile(size: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Profile the core hot path and the in-process path; the text and the data."""
    import trio

    from . import ours
    from .hotpath import profile_target
    from .profile import profile_call, summarize

    n = max(200, int(20000 * size["core_scale"]))
    text_parts, data = [], {}
    run = profile_target("tools/call", n)
    run()  # warm-up on other connections' caches
    text, entries = summarize(profile_call(profile_target("tools/call", n)))
    text_parts.append(f"== core hot path, tools/call x{n} ==\n{text}")
    data["core"] = entries[:40]

    calls = max(200, size["e2e"])

    async def inproc(opener: Any) -> Any:
        async with opener() as target:
            for _ in range(50):
                await target.call("hello")

            async def loop() -> None:
                for _ in range(calls):
                    await target.call("hello")

            import cProfile
            import pstats

            prof = cProfile.Profile()
            prof.enable()
            await loop()
            prof.disable()
            return pstats.Stats(prof)

    for name, opener in (
        ("in-process, session layer", ours.open_inproc_session),
        ("in-process, client+server", ours.open_inproc),
    ):
        try:
            stats = trio.run(inproc, opener)
        except ours.NotBuilt as exc:
            text_parts.append(f"== {name}: n/a (not built yet: {exc}) ==")
            continue
        text, entries = summarize(stats)
        text_parts.append(f"== {name}, {calls} round trips, 1 in flight ==\n{text}")
        data[name] = entries[:40]
    return "\n\n".join(text_parts), data


# --- main -------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line (see ``python -m bench --help``)."""
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="Measure MCP message throughput: mcp-ref's core, end to end, "
        "side by side with the official SDKs, or any server.",
    )
    p.add_argument("--quick", action="store_true", help="small counts: under a minute")
    p.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--json", metavar="FILE", help="also write every row as JSON to FILE")
    p.add_argument(
        "--compare", action="store_true", help="run the same loads against the official SDKs"
    )
    p.add_argument("--profile", action="store_true", help="print where the time goes")
    p.add_argument("--server", metavar="CMD", help='benchmark a stdio server: --server "node x.js"')
    p.add_argument("--url", metavar="URL", help="benchmark a Streamable HTTP server at URL")
    p.add_argument(
        "--only",
        choices=["core", "e2e", "leak", "compare", "scale"],
        action="append",
        help="run only these sections (repeatable)",
    )
    p.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    p.add_argument(
        "--fuzz-http",
        metavar="URL",
        help="send damaged POSTs, odd headers and slow clients to the Streamable HTTP "
        "endpoint at URL (loopback only) and count the unanswered; runs alone",
    )
    p.add_argument(
        "--allow-remote", action="store_true", help="let --fuzz-http target a non-loopback host"
    )
    p.add_argument(
        "--fuzz-count",
        type=int,
        metavar="N",
        help="--fuzz-http: cases sent at most (default 2000; 100 with --tiny)",
    )
    p.add_argument(
        "--fuzz-seconds",
        type=float,
        metavar="S",
        help="--fuzz-http: no new case after this many seconds (default 60)",
    )
    p.add_argument(
        "--fuzz-timeout",
        type=float,
        metavar="S",
        help="--fuzz-http: seconds each POST has to be answered whole (default 5)",
    )
    return p.parse_args(argv)


def run_fuzz(args: argparse.Namespace, mode: str) -> int:
    """``--fuzz-http``: the fuzz run, its table on stdout (and JSON); the exit code:
    0, 1 when a POST went unanswered, 2 when the run could not start."""
    from . import fuzz_http

    count = args.fuzz_count or (100 if mode == "tiny" else fuzz_http.DEFAULT_COUNT)
    seconds = args.fuzz_seconds or fuzz_http.DEFAULT_SECONDS
    timeout = args.fuzz_timeout or fuzz_http.DEFAULT_TIMEOUT
    _log(f"fuzzing {args.fuzz_http}: at most {count} cases, {seconds:.0f} s")
    started = time.perf_counter()
    try:
        rows = fuzz_http.fuzz_http(
            args.fuzz_http,
            count=count,
            seconds=seconds,
            timeout=timeout,
            allow_remote=args.allow_remote,
        )
    except (ValueError, RuntimeError, OSError) as exc:
        _log(f"bench: --fuzz-http: {exc}")
        return 2
    print(fuzz_http.render(rows))
    unanswered = sum(int(r.metrics["unanswered"] or 0) for r in rows)
    if args.json:
        settings = {
            "mode": "fuzz-http",
            "url": args.fuzz_http,
            "count": count,
            "seconds": seconds,
            "timeout": timeout,
            "elapsed_s": time.perf_counter() - started,
            "argv": sys.argv[1:],
        }
        text = report.to_json(rows, machine=describe_machine(), settings=settings)
        Path(args.json).write_text(text + "\n")
        _log(f"wrote {args.json}")
    return 1 if unanswered else 0


def main(argv: list[str] | None = None) -> int:
    """Run the bench; exit code 0 (1 when a requested section produced no numbers; for
    ``--fuzz-http`` see :func:`run_fuzz`)."""
    args = parse_args(argv)
    mode = "tiny" if args.tiny else "quick" if args.quick else "full"
    if args.fuzz_http:
        return run_fuzz(args, mode)
    size = SIZES[mode]
    machine = describe_machine()
    started = time.perf_counter()
    _log(
        f"mcp-ref bench ({mode}) on {machine['cpu']}, {machine['cores']} cores, "
        f"{machine['implementation']} {machine['python']}"
    )
    if args.only:
        sections = set(args.only)
    elif args.server or args.url:
        sections = set()
    else:
        sections = {"core", "e2e", "leak"} | ({"compare"} if args.compare else set())
    rows: list[Row] = []
    floors: dict[str, Any] | None = None  # measured once, shown in sections 3 and 4

    def measure_floors() -> dict[str, Any]:
        from .floor import measure_floors

        _log("3-4. floors: the least any trio/h11 implementation must do")
        return measure_floors(
            requests=size["e2e"], repeats=size["e2e_repeats"], warmup=size["warmup"], log=_log
        )

    if "core" in sections:
        _log("1-2. core hot path vs floor")
        from .hotpath import run_hotpath

        rows += run_hotpath(scale=size["core_scale"], repeats=size["core_repeats"])
    if "e2e" in sections:
        _log("3. end to end")
        rows += e2e_rows(size)
        floors = measure_floors()
        rows += floor_rows(floors, size)
    if "leak" in sections:
        _log("3. long runs")
        rows += leak_rows(size)
    if "scale" in sections:  # (opt-in: needs redis-server and the redis client)
        _log("6. scale-out over Redis")
        from .scale import scale_rows

        rows += scale_rows(size, log=_log)
    if "compare" in sections:
        _log("4. side by side with the official SDKs")
        from .compare import compare_rows

        if floors is None:
            floors = measure_floors()
        rows += compare_rows(
            requests=size["compare"],
            slow_requests=size["slow"],
            repeats=size["compare_repeats"],
            log=_log,
            floors=floors,
        )
    if args.server or args.url:
        _log("5. your server")
        from .compare import server_rows

        rows += server_rows(
            command=args.server,
            url=args.url,
            requests=size["server"],
            repeats=size["compare_repeats"],
            log=_log,
        )
    profile_text, profile_data = ("", {})
    if args.profile:
        _log("profiling")
        profile_text, profile_data = run_profile(size)
    elapsed = time.perf_counter() - started
    print(report.render(rows, markdown=args.markdown))
    if profile_text:
        print("\n" + profile_text)
    print(
        f"\n{mode} run, {elapsed:.0f} s, on {machine['cpu']} ({machine['cores']} cores), "
        f"{machine['implementation']} {machine['python']}; gc enabled, collected before "
        "each timed run; medians of "
        f"{size['core_repeats']} (core) / {size['e2e_repeats']} (e2e) / "
        f"{size['compare_repeats']} (compare) runs"
    )
    if args.json:
        settings = {"mode": mode, **size, "elapsed_s": elapsed, "argv": sys.argv[1:]}
        text = report.to_json(rows, machine=machine, settings=settings)
        if profile_data:
            import json

            obj = json.loads(text)
            obj["profile"] = profile_data
            text = json.dumps(obj, indent=2)
        Path(args.json).write_text(text + "\n")
        _log(f"wrote {args.json}")
    return 0

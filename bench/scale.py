"""Scale-out rows (``python -m bench --only scale``): our Streamable HTTP echo server as
1 and as 2 worker processes sharing one Redis (``serve_http(stores=RedisStores...)``,
:mod:`mcp_ref.stores`), each row measured twice over:

* a baseline first: 1 process without a store;
* throughput: ``tools/call`` of ``echo`` with 10 requests in flight in all (one load
  generator session per worker, 10 / workers in flight on each, one thread each), SSE
  answers, every event written through to Redis;
* many sessions: ``http_sessions`` of the size (1,000 outside ``--tiny``) at once,
  spread round robin over the workers (initialize, initialized, one ``tools/call``, and
  once every session is live, DELETE), with the errors (must be 0) and the workers'
  RSS before and with every session live (*KB/session*, all workers together; Redis'
  own memory not counted).

Needs ``redis-server`` on PATH and the ``redis`` client (``mcp-ref[redis]``); without
them the rows say ``n/a``.  Redis runs on a Unix socket in a temporary directory, with
no persistence.  ``python -m bench.scale serve PORT URL`` is the worker process.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import trio

from .report import Row

__all__ = ["main", "scale_rows"]

WORKERS = (0, 1, 2)
"""Worker processes per row; 0: one process without a store (the baseline)."""
IN_FLIGHT = 10


@contextmanager
def redis_server() -> Iterator[str]:
    """A throwaway ``redis-server`` on a Unix socket: yields its URL.

    Raises:
        OSError: it did not start.
    """
    exe = shutil.which("redis-server")
    if exe is None:
        raise FileNotFoundError("no redis-server on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        sock = os.path.join(tmp, "redis.sock")
        args = [exe, "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no"]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            assert proc.stdout is not None
            for line in proc.stdout:  # it says when it is ready
                if b"ready to accept connections" in line.lower():
                    break
            else:
                raise OSError("redis-server ended before it was ready")
            yield f"unix://{sock}"
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def _throughput(ports: list[int], pids: list[int], requests: int, warmup: int) -> dict[str, Any]:
    """Every worker loaded at once by a thread of its own; totals over the workers."""
    from .loadgen import HttpTarget

    per = max(1, IN_FLIGHT // len(ports))
    targets = [
        HttpTarget(f"http://127.0.0.1:{p}/mcp", pid=pid) for p, pid in zip(ports, pids, strict=True)
    ]
    results: list[dict[str, Any]] = [{} for _ in targets]
    try:
        for t in targets:
            t.run(requests=warmup, concurrency=per)

        def load(i: int) -> None:
            results[i] = targets[i].run(requests=requests // len(targets), concurrency=per)

        threads = [threading.Thread(target=load, args=(i,)) for i in range(len(targets))]
        t0 = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        wall = time.perf_counter() - t0
    finally:
        for t in targets:
            t.close()
    done = sum(r.get("requests", 0) for r in results)
    p50 = sorted(r.get("p50_ms") or 0.0 for r in results)[len(results) // 2]
    return {"req_per_s": done / wall if wall else None, "p50_ms": p50, "requests": done}


def _sessions(ports: list[int], pids: list[int], n: int, timeout: float = 60.0) -> dict[str, Any]:
    """``n`` sessions at once over the workers, round robin (module docstring)."""
    from ._measure import proc_rss
    from .fuzz_http import _Barrier, _session_life

    def rss() -> float | None:
        got = [proc_rss(pid)[0] for pid in pids]
        return None if None in got else float(sum(g for g in got if g is not None))

    before = rss()
    errors: list[str] = []
    live: list[float | None] = [None]

    async def run() -> float:
        barrier = _Barrier(n)
        t0 = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for i in range(n):
                port = ports[i % len(ports)]
                nursery.start_soon(
                    _session_life, "127.0.0.1", port, "/mcp", i, barrier, errors, timeout
                )
            await barrier.all_called.wait()
            live[0] = rss()
            barrier.sampled.set()
        return time.perf_counter() - t0

    seconds = trio.run(run)
    peak = live[0]
    return {
        "sessions": n,
        "errors": len(errors),
        "seconds": seconds,
        "rss_start_mb": before / 2**20 if before else None,
        "rss_end_mb": peak / 2**20 if peak else None,
        "growth_kb_per_session": (peak - before) / 1024 / n if peak and before else None,
        "first_errors": errors[:5],
    }


def scale_rows(size: dict[str, Any], log: Callable[[str], None] | None = None) -> list[Row]:
    """The two rows (module docstring); ``n/a`` rows without Redis."""
    from .compare import RUN_ERRORS, _http_server
    from .loadgen import free_port

    names = [
        f"HTTP SSE on Redis, {w} worker process{'es' if w > 1 else ''}"
        if w
        else "HTTP SSE, 1 process, no store (baseline)"
        for w in WORKERS
    ]
    try:
        import redis  # noqa: F401
    except ImportError:
        return [
            Row("scale", n, note="n/a (no redis client: pip install 'mcp-ref[redis]')")
            for n in names
        ]
    if shutil.which("redis-server") is None:
        return [Row("scale", n, note="n/a (no redis-server on PATH)") for n in names]
    rows = []
    with redis_server() as url:
        for workers, name in zip(WORKERS, names, strict=True):
            if log:
                log(f"  {name}: {size['e2e']} calls, {size['http_sessions']} sessions")
            try:
                with ExitStack() as stack:
                    ports = [free_port() for _ in range(max(1, workers))]
                    shared = url if workers else "-"
                    pids = [
                        stack.enter_context(
                            _http_server(
                                [sys.executable, "-m", "bench.scale", "serve", str(p), shared], p
                            )
                        )
                        for p in ports
                    ]
                    speed = _throughput(ports, pids, size["e2e"], size["warmup"])
                    many = _sessions(ports, pids, size["http_sessions"])
            except RUN_ERRORS as exc:
                rows.append(Row("scale", name, note=f"failed: {exc}"))
                continue
            metrics = {"workers": float(max(1, workers)), **speed, **many}
            first = metrics.pop("first_errors")
            note = f"{many['errors']} errors, {many['seconds']:.1f} s for the sessions"
            rows.append(Row("scale", name, metrics, note=note, detail={"errors": first}))
    return rows


async def _serve(port: int, url: str) -> None:
    """A worker: the bench's echo server on ``port``, sharing the Redis at ``url``
    (``"-"``: no store)."""
    from mcp_ref._http import HttpLimits
    from mcp_ref.stores.redis import RedisStores
    from mcp_ref.trio import serve_http

    from .ours import make_echo_server

    limits = HttpLimits(max_streams_per_session=256, max_requests_per_connection=10**9)
    stores = RedisStores.from_url(url) if url != "-" else None
    serve = functools.partial(
        serve_http, make_echo_server(), "127.0.0.1", port, limits=limits, stores=stores
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(serve)


def main(argv: list[str]) -> int:
    """``python -m bench.scale serve PORT URL``: one worker (until killed)."""
    if len(argv) == 3 and argv[0] == "serve":
        trio.run(_serve, int(argv[1]), argv[2])
        return 0
    print("usage: python -m bench.scale serve PORT REDIS_URL", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

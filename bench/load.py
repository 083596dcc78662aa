"""The load loop: N echo calls with C in flight, against any :class:`~bench.rawclient.Target`.

Theory of operation
-------------------
``concurrency`` worker tasks share ``requests`` calls; each worker makes its calls one
after another and times each with ``time.perf_counter_ns``, so with 1 worker the
latency is the round trip of a lone request, and with 100 it includes queueing behind
the 99 others (that is what a loaded server's client sees).

Around the timed part the loop reads:

* wall time (``perf_counter_ns``) -> requests per second;
* this process's CPU time (``process_time_ns``) -> client CPU per request (for an
  in-process pair that is client *and* server, and the row says so);
* the server process's CPU time from ``/proc/<pid>/stat`` when its pid is known ->
  server CPU per request (clock-tick resolution: the runs are long enough);
* RSS of the server process (or of this process for in-process rows) before and after,
  and its peak (``VmHWM``).

A short warm-up (``warmup`` calls, 1 in flight) runs first and is not counted.
"""

from __future__ import annotations

import gc
import os
import time
from array import array
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from ._measure import percentile, proc_cpu_ns, proc_rss

__all__ = ["Target", "run_load"]


class Target:
    """A server ready for echo calls, driven from trio.

    Attributes:
        call: ``await call(text) -> str``: one ``tools/call`` of ``echo``.
        pid: the server's process id when it runs in another process, else None.
        label: a short description.
    """

    def __init__(self, call: Callable[[str], Awaitable[str]], pid: int | None, label: str) -> None:
        self.call = call
        self.pid = pid
        self.label = label


async def run_load(
    target: Target,
    *,
    requests: int,
    concurrency: int,
    text: str = "hello",
    warmup: int = 50,
    in_process: bool = False,
) -> dict[str, Any]:
    """Run the load and return its metrics.

    Returns a dict with ``req_per_s``, ``p50_ms``, ``p99_ms``, ``client_cpu_us``,
    ``server_cpu_us`` (None when the server's pid is unknown or it runs in this
    process), ``peak_rss_mb`` (the server's, or this process's for in-process pairs),
    ``rss_growth_kb`` (same process, after minus before the timed part) and
    ``requests``.

    Raises:
        AssertionError: the echo came back different; whatever the call raises.
    """
    for _ in range(warmup):
        if await target.call(text) != text:
            raise AssertionError("echo returned other text")
    # Latencies go into a preallocated array, so recording them does not grow the RSS
    # this loop reports.
    latencies = array("q", bytes(8 * requests))
    done = [0]
    per_worker = [requests // concurrency] * concurrency
    for i in range(requests % concurrency):
        per_worker[i] += 1
    call = target.call
    clock = time.perf_counter_ns

    async def worker(n: int) -> None:
        for _ in range(n):
            t0 = clock()
            got = await call(text)
            latencies[done[0]] = clock() - t0
            done[0] += 1
            if got != text:
                raise AssertionError("echo returned other text")

    watched: int | str = "self" if in_process or target.pid is None else target.pid
    gc.collect()
    rss0, _ = proc_rss(watched)
    server0 = proc_cpu_ns(target.pid) if target.pid and not in_process else None
    w0, c0 = time.perf_counter_ns(), time.process_time_ns()
    async with trio.open_nursery() as nursery:
        for n in per_worker:
            if n:
                nursery.start_soon(worker, n)
    c1, w1 = time.process_time_ns(), time.perf_counter_ns()
    server1 = proc_cpu_ns(target.pid) if server0 is not None and target.pid else None
    gc.collect()
    rss1, peak = proc_rss(watched)
    count = done[0]
    ms = [v / 1e6 for v in latencies[:count]]
    return {
        "req_per_s": count * 1e9 / max(w1 - w0, 1),
        "p50_ms": percentile(ms, 50),
        "p99_ms": percentile(ms, 99),
        "client_cpu_us": (c1 - c0) / 1e3 / max(count, 1),
        "server_cpu_us": (server1 - server0) / 1e3 / max(count, 1)
        if server0 is not None and server1 is not None
        else None,
        "peak_rss_mb": peak / 2**20 if peak else None,
        "rss_growth_kb": (rss1 - rss0) / 1024 if rss0 is not None and rss1 is not None else None,
        "requests": count,
        "pid": os.getpid() if watched == "self" else watched,
    }

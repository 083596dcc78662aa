"""Clocks, statistics and memory readings shared by every part of the bench.

Theory of operation
-------------------
Every figure is taken with two clocks at once: ``time.perf_counter_ns`` (wall time, for
messages or requests per second and latency) and ``time.process_time_ns`` (CPU time of
this process, all threads, for CPU microseconds per message).  A measurement is run
several times and the *median* run is reported, so one run disturbed by the machine does
not move the figure.

Garbage collection stays enabled during timed loops (it is part of the real cost), but
``gc.collect()`` runs before each timed run so a run does not pay for the garbage of the
previous one.

Memory: the resident set size is read from ``/proc/<pid>/status`` (``VmRSS`` now,
``VmHWM`` the peak), in bytes; on a system without /proc, ``resource.getrusage`` gives
this process's peak and the current value is unknown (None).  CPU time of another
process (a server subprocess) is read from ``/proc/<pid>/stat`` (utime + stime, in clock
ticks).  No third-party package is needed.
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "TICK_NS",
    "Sample",
    "median_sample",
    "percentile",
    "proc_cpu_ns",
    "proc_rss",
    "timed",
]

TICK_NS = 1_000_000_000 // os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 10_000_000
"""Nanoseconds per clock tick of ``/proc/<pid>/stat`` CPU counters."""


class Sample:
    """One timed run: ``count`` operations in ``wall_ns`` of wall time and ``cpu_ns`` of
    this process's CPU time (both in nanoseconds)."""

    __slots__ = ("count", "cpu_ns", "wall_ns")

    def __init__(self, count: int, wall_ns: int, cpu_ns: int) -> None:
        self.count = count
        self.wall_ns = max(wall_ns, 1)
        self.cpu_ns = cpu_ns

    @property
    def per_second(self) -> float:
        """Operations per second of wall time."""
        return self.count * 1e9 / self.wall_ns

    @property
    def cpu_us(self) -> float:
        """CPU microseconds per operation."""
        return self.cpu_ns / 1e3 / max(self.count, 1)


def timed(fn: Callable[[], int]) -> Sample:
    """Run ``fn`` once after a ``gc.collect()``; ``fn`` returns how many operations it did."""
    gc.collect()
    w0, c0 = time.perf_counter_ns(), time.process_time_ns()
    count = fn()
    c1, w1 = time.process_time_ns(), time.perf_counter_ns()
    return Sample(count, w1 - w0, c1 - c0)


def median_sample(samples: Sequence[Sample]) -> Sample:
    """The run with the median throughput (the lower median for an even number)."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples, key=lambda s: s.per_second)
    return ordered[(len(ordered) - 1) // 2]


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of ``values``, nearest-rank; NaN when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def median(values: Sequence[float]) -> float:
    """The median of ``values``; NaN when empty."""
    return statistics.median(values) if values else float("nan")


def proc_rss(pid: int | str = "self") -> tuple[int | None, int | None]:
    """``(current, peak)`` resident set size of a process, in bytes.

    Reads ``VmRSS`` and ``VmHWM`` from ``/proc/<pid>/status``.  Without /proc (or for a
    process that has exited) returns what ``resource.getrusage`` can tell for this
    process (peak only), else ``(None, None)``.
    """
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            text = fh.read()
    except OSError:
        if pid == "self" or pid == os.getpid():
            return None, _rusage_peak()
        return None, None
    cur = peak = None
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            cur = int(line.split()[1]) * 1024
        elif line.startswith("VmHWM:"):
            peak = int(line.split()[1]) * 1024
    return cur, peak


def _rusage_peak() -> int | None:
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Linux/macOS
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def proc_cpu_ns(pid: int) -> int | None:
    """User plus system CPU time of process ``pid`` so far, in nanoseconds (None if
    unknown).  Resolution is one clock tick (usually 10 ms): measure long runs."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces; fields after the last ')' are fixed.
    fields = text[text.rfind(")") + 2 :].split()
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) * TICK_NS


def describe_machine() -> dict[str, Any]:
    """What the bench ran on: CPU model, cores, Python version, platform."""
    model = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import platform

    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
    }

"""``--profile``: where the time goes, under cProfile.

Theory of operation
-------------------
Runs one path under :mod:`cProfile` and prints a short summary: the functions with the
most *own* time (``tottime``: time spent in the function itself, not in what it calls),
grouped by file, as a percentage of the whole run, and the top cumulative entries inside
``mcp_ref``.  Paths:

* ``core``: the hot-path ``tools/call`` loop of :mod:`bench.hotpath` (no I/O);
* ``inproc``: in-process round trips of our client and server over trio memory streams
  (:mod:`bench.e2e`), once those exist.

cProfile adds a fixed cost to every call, so it overstates code made of many small
calls; use the percentages to rank, and the hot-path table (no profiler) for speed.
"""

from __future__ import annotations

import cProfile
import io
import os
import pstats
from collections import defaultdict
from collections.abc import Callable
from typing import Any

__all__ = ["profile_call", "summarize"]


def _short(filename: str) -> str:
    """``mcp_ref/_connection.py`` rather than an absolute path; builtins as is."""
    norm = filename.replace(os.sep, "/")
    for marker in ("/mcp_ref/", "/bench/", "/trio/", "/cattrs/", "/attr/", "/json/"):
        i = norm.rfind(marker)
        if i >= 0:
            return norm[i + 1 :]
    return os.path.basename(norm) if "/" in norm else norm


def profile_call(fn: Callable[[], Any]) -> pstats.Stats:
    """Run ``fn()`` under cProfile and return its statistics."""
    prof = cProfile.Profile()
    prof.enable()
    try:
        fn()
    finally:
        prof.disable()
    return pstats.Stats(prof)


def summarize(stats: pstats.Stats, *, top: int = 25) -> tuple[str, list[dict[str, Any]]]:
    """A text summary of ``stats`` and the same as data.

    Returns:
        ``(text, entries)``; each entry is ``{"where": "file:function", "own_pct": float,
        "cum_pct": float, "calls": int}`` sorted by own time, biggest first.
    """
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in raw.values()) or 1e-12
    entries = []
    by_file: dict[str, float] = defaultdict(float)
    for (filename, line, func), (_cc, ncalls, tottime, cumtime, _callers) in raw.items():
        where = f"{_short(filename)}:{func}" if line else func
        entries.append(
            {
                "where": where,
                "own_pct": 100 * tottime / total,
                "cum_pct": 100 * cumtime / total,
                "calls": ncalls,
            }
        )
        by_file[_short(filename) if line else "(builtins)"] += tottime
    entries.sort(key=lambda e: -e["own_pct"])
    out = io.StringIO()
    out.write(f"total profiled time {total:.3f} s (cProfile overhead included)\n\n")
    out.write("own time by file:\n")
    for name, secs in sorted(by_file.items(), key=lambda kv: -kv[1])[:12]:
        out.write(f"  {100 * secs / total:5.1f}%  {name}\n")
    out.write(f"\ntop {top} functions by own time (own% / cumulative% / calls):\n")
    for e in entries[:top]:
        out.write(f"  {e['own_pct']:5.1f}%  {e['cum_pct']:5.1f}%  {e['calls']:>8}  {e['where']}\n")
    ours = [e for e in entries if e["where"].startswith("mcp_ref/")]
    ours.sort(key=lambda e: -e["cum_pct"])
    out.write("\ninside mcp_ref, by cumulative time:\n")
    for e in ours[:15]:
        out.write(f"  {e['cum_pct']:5.1f}%  own {e['own_pct']:5.1f}%  {e['where']}\n")
    return out.getvalue(), entries

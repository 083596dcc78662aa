"""Rows, the terminal table and the JSON file.

Theory of operation
-------------------
Every measurement ends as a :class:`Row`: a section (``core``, ``e2e``, ``compare``,
``target``), a row name, a dict of numeric metrics, and an optional note.  A row that
could not be measured carries a note instead of numbers (``"n/a (not built yet)"``), so
the table always renders and says why a figure is missing.

:func:`render` prints one table per section with the columns of :data:`COLUMNS`;
:func:`to_json` writes every row, with the machine description and the settings, for
tools that compare runs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["COLUMNS", "Row", "render", "to_json"]


class Row:
    """One line of a results table.

    Args:
        section: which table: ``"core"``, ``"e2e"``, ``"compare"``, ``"server"``.
        name: the row label (a case, or ``"<transport> x<in flight>"``).
        metrics: metric key -> number (NaN or None when not measured).
        note: why the row has no numbers (e.g. ``"n/a (not built yet)"``), or a remark.
        detail: extra facts for the JSON file (counts, commands), not shown in the table.
    """

    __slots__ = ("detail", "metrics", "name", "note", "section")

    def __init__(
        self,
        section: str,
        name: str,
        metrics: dict[str, float | None] | None = None,
        *,
        note: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> None:
        self.section = section
        self.name = name
        self.metrics: dict[str, float | None] = dict(metrics or {})
        self.note = note
        self.detail: dict[str, Any] = dict(detail or {})

    @property
    def measured(self) -> bool:
        """True when the row holds at least one finite number."""
        return any(_finite(v) for v in self.metrics.values())

    def as_dict(self) -> dict[str, Any]:
        """The row as JSON-ready data (NaN becomes null)."""
        return {
            "section": self.section,
            "name": self.name,
            "metrics": {k: (v if _finite(v) else None) for k, v in self.metrics.items()},
            "note": self.note,
            "detail": self.detail,
        }

    def __repr__(self) -> str:
        return f"Row({self.section!r}, {self.name!r}, {self.metrics!r}, note={self.note!r})"


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# (metric key, header, format) per section
COLUMNS: dict[str, list[tuple[str, str, str]]] = {
    "core": [
        ("msgs_per_s", "msgs/s", "rate"),
        ("cpu_us", "CPU us/msg", "f2"),
        ("floor_msgs_per_s", "floor msgs/s", "rate"),
        ("floor_cpu_us", "floor us/msg", "f2"),
        ("ratio", "core/floor", "pct"),
    ],
    "e2e": [
        ("req_per_s", "req/s", "rate"),
        ("p50_ms", "p50 ms", "f3"),
        ("p99_ms", "p99 ms", "f3"),
        ("client_cpu_us", "client us/req", "f1"),
        ("server_cpu_us", "server us/req", "f1"),
        ("peak_rss_mb", "peak RSS MB", "f1"),
        ("rss_growth_kb", "RSS growth KB", "f0"),
    ],
    "compare": [
        ("ours_req_per_s", "ours req/s", "rate"),
        ("theirs_req_per_s", "theirs req/s", "rate"),
        ("ratio", "ours/theirs", "x"),
        ("floor_ratio", "floor/theirs", "x"),
        ("target_ratio", "target", "x"),
        ("ours_p50_ms", "ours p50 ms", "f3"),
        ("theirs_p50_ms", "theirs p50 ms", "f3"),
        ("ours_server_cpu_us", "ours srv us", "f1"),
        ("theirs_server_cpu_us", "theirs srv us", "f1"),
        ("floor_req_per_s", "floor req/s", "rate"),
        ("floor_server_cpu_us", "floor srv us", "f1"),
    ],
    "leak": [
        ("requests", "requests", "f0"),
        ("sessions", "sessions", "f0"),
        ("rss_start_mb", "RSS start MB", "f1"),
        ("rss_end_mb", "RSS end MB", "f1"),
        ("growth_bytes_per_req", "bytes/req", "f2"),
        ("growth_kb_per_session", "KB/session", "f2"),
    ],
    "scale": [
        ("workers", "workers", "f0"),
        ("req_per_s", "req/s", "rate"),
        ("p50_ms", "p50 ms", "f3"),
        ("sessions", "sessions", "f0"),
        ("errors", "errors", "f0"),
        ("rss_start_mb", "RSS start MB", "f1"),
        ("rss_end_mb", "RSS end MB", "f1"),
        ("growth_kb_per_session", "KB/session", "f2"),
    ],
}
COLUMNS["server"] = COLUMNS["e2e"]

E2E_KEYS: tuple[str, ...] = tuple(key for key, _, _ in COLUMNS["e2e"])
"""The metrics an end-to-end row (ours, a floor, or a user's server) keeps from a load run."""

TITLES = {
    "core": "1-2. Sans-IO core hot path vs the floor (json.loads + dict lookup + json.dumps)",
    "e2e": "3. End to end, mcp-ref client <-> mcp-ref server (echo tool)",
    "leak": "3. Long runs: RSS growth (must stay flat)",
    "compare": "4. Side by side with the official SDKs (same load, ratio = ours/theirs; "
    "floor = bench.floor on the same transport)",
    "server": "5. Your server",
    "scale": "6. Scale-out: worker processes sharing one Redis (sessions, resumable streams)",
}

_ORDER = ["core", "e2e", "leak", "compare", "server", "scale"]


def fmt(value: Any, kind: str) -> str:
    """Format one metric for the table; ``-`` for a missing value."""
    if not _finite(value):
        return "-"
    v = float(value)
    if kind == "rate":
        if v >= 1e6:
            return f"{v / 1e6:.2f} M"
        if v >= 1e4:
            return f"{v / 1e3:.1f} k"
        return f"{v:.0f}"
    if kind == "pct":
        return f"{v * 100:.0f}%"
    if kind == "x":
        return f"{v:.1f}x"
    if kind == "f0":
        return f"{v:.0f}"
    if kind == "f1":
        return f"{v:.1f}"
    if kind == "f2":
        return f"{v:.2f}"
    return f"{v:.3f}"


def table(section: str, rows: Sequence[Row], *, markdown: bool = False) -> str:
    """One section's rows as an aligned text (or Markdown) table."""
    cols = COLUMNS[section]
    header = ["", *[h for _, h, _ in cols]]
    body = []
    for row in rows:
        if not row.measured and row.note:
            cells = [row.name, row.note, *[""] * (len(cols) - 1)]
        else:
            cells = [row.name, *[fmt(row.metrics.get(k), f) for k, _, f in cols]]
            if row.note:
                cells[0] += f" ({row.note})"
        body.append(cells)
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(c for c in cells) + " |" for cells in body]
        return "\n".join(lines)
    widths = [len(h) for h in header]
    for cells in body:
        for i, c in enumerate(cells):
            # a note spills over the empty cells to its right
            if i < len(widths) and not (i == 1 and cells[2:] and not any(cells[2:])):
                widths[i] = max(widths[i], len(c))
    out = [
        "  ".join(
            h.rjust(w) if i else h.ljust(w)
            for i, (h, w) in enumerate(zip(header, widths, strict=True))
        )
    ]
    for cells in body:
        if len(cells) > 2 and not any(cells[2:]):
            out.append(cells[0].ljust(widths[0]) + "  " + cells[1])
        else:
            out.append(
                "  ".join(
                    c.rjust(w) if i else c.ljust(w)
                    for i, (c, w) in enumerate(zip(cells, widths, strict=True))
                )
            )
    return "\n".join(out)


def render(rows: Iterable[Row], *, markdown: bool = False) -> str:
    """Every section that has rows, in order, each with its title."""
    rows = list(rows)
    parts = []
    for section in _ORDER:
        mine = [r for r in rows if r.section == section]
        if not mine:
            continue
        title = TITLES[section]
        parts.append(
            f"### {title}\n\n{table(section, mine, markdown=True)}"
            if markdown
            else f"{title}\n{table(section, mine)}"
        )
    return "\n\n".join(parts)


def to_json(rows: Iterable[Row], *, machine: dict[str, Any], settings: dict[str, Any]) -> str:
    """Every row with the machine and the settings, as indented JSON text."""
    return json.dumps(
        {"machine": machine, "settings": settings, "rows": [r.as_dict() for r in rows]},
        indent=2,
    )

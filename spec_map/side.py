"""Two revisions side by side, page by page (``check`` and the report).

2026-07-28 moved and split pages: the utilities became ``basic/patterns/``, the one
transports page became ``basic/transports/{index,stdio,streamable-http}``, lifecycle's
version negotiation became ``basic/versioning``, authorization became a folder, and some
pages are new (``server/discover``, ``basic/patterns/mrtr``, ...) or gone (``ping``,
``tasks``, now an extension).  :data:`PAGE_MAP` says, for each page of the newer
revision, which page of the older one holds the same subject (or None), and why;
:func:`pairs` lines up their per-page counts (:class:`~spec_map.check.PageSummary`),
the older page's counts shown once even when several newer pages split it.

Source: 2026-07-28/changelog (major changes 1 to 9, deprecations).
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .check import Analysis, PageSummary

__all__ = ["PAGE_MAP", "SIDE_BY_SIDE", "Pair", "format_pairs", "pairs", "pairs_html"]

SIDE_BY_SIDE = ("2025-11-25", "2026-07-28")
"""The two revisions ``check`` and the report put side by side: older, newer."""

PAGE_MAP: dict[tuple[str, str], dict[str, tuple[str | None, str]]] = {
    SIDE_BY_SIDE: {
        "basic/index": ("basic/index", "same page"),
        "basic/versioning": ("basic/lifecycle", "version negotiation; no handshake now"),
        "basic/patterns/index": (None, "new: the server asks nothing of its own"),
        "basic/patterns/cancellation": ("basic/utilities/cancellation", "moved"),
        "basic/patterns/progress": ("basic/utilities/progress", "moved"),
        "basic/patterns/mrtr": (None, "new: replaces server-initiated requests"),
        "basic/patterns/subscriptions": (None, "new: replaces resources/subscribe, GET"),
        "basic/transports/index": ("basic/transports", "split"),
        "basic/transports/stdio": ("basic/transports", "split"),
        "basic/transports/streamable-http": ("basic/transports", "split; no sessions"),
        "basic/authorization/index": ("basic/authorization", "split (issue 16)"),
        "basic/authorization/authorization-server-discovery": (
            "basic/authorization",
            "split (issue 16)",
        ),
        "basic/authorization/client-registration": ("basic/authorization", "split (issue 16)"),
        "basic/authorization/security-considerations": (
            "basic/authorization",
            "split (issue 16)",
        ),
        "server/discover": (None, "new: replaces initialize's answer"),
        "server/utilities/caching": (None, "new: ttlMs, cacheScope"),
    },
}
"""``(older, newer)`` -> newer page -> ``(older page or None, note)``.  A newer page not
listed has the same path in the older revision (if it exists there)."""


@dataclass(frozen=True, slots=True)
class Pair:
    """One row: a newer page (or None) beside its older counterpart (or None)."""

    new: PageSummary | None
    old: PageSummary | None
    note: str
    repeated: bool = False
    """True when :attr:`old` was already shown on an earlier row (a split page)."""


def pairs(analysis: Analysis, old: str, new: str) -> list[Pair]:
    """The rows of ``new``'s pages (catalog order) beside ``old``'s, then ``old``'s
    pages that no ``new`` page continues.  Pages outside both revisions' scope with no
    required clause are left out (architecture, changelog, index...)."""
    mapping = PAGE_MAP.get((old, new), {})
    olds = {row.page: row for row in analysis.summaries(old)}
    shown: set[str] = set()
    out = []
    for row in analysis.summaries(new):
        page, note = mapping.get(row.page, (row.page, "same page"))
        before = olds.get(page) if page is not None else None
        if before is None and page is not None:
            note = "new"
        if not (row.scope or (before is not None and before.scope)):
            continue
        repeated = before is not None and before.page in shown
        if before is not None:
            shown.add(before.page)
        out.append(Pair(new=row, old=before, note=note, repeated=repeated))
    for page, row in olds.items():
        if page not in shown and row.scope:
            out.append(Pair(new=None, old=row, note=f"gone from {new}"))
    return out


def _new_cells(row: PageSummary | None) -> list[str]:
    if row is None:
        return ["-"] * 6
    if not row.scope:
        return [row.page + " (not implemented)", *("-",) * 5]
    done = row.must - row.open - row.waived - row.carried
    return [row.page, *(str(n) for n in (row.must, done, row.carried, row.waived, row.open))]


def _old_cells(pair: Pair) -> list[str]:
    row = pair.old
    if row is None:
        return ["-"] * 5
    if pair.repeated:
        return [row.page, *('"',) * 4]
    if not row.scope:
        return [row.page + " (not implemented)", *("-",) * 4]
    done = row.must - row.open - row.waived - row.carried
    return [row.page, str(row.must), str(done), str(row.waived), str(row.open)]


_HEAD = ("MUST", "done", "carried", "waived", "open")
_TEXT_COLUMNS = (0, 6, 11)  # the two pages and the note: left-aligned


def format_pairs(rows: list[Pair], old: str, new: str) -> str:
    """The rows as aligned text: the newer page's library-binding MUSTs (done, carried,
    waived, open), then the older page's (done, waived, open); ``"`` where a split
    older page was counted on a row above."""
    head = (new, *_HEAD, old, "MUST", "done", "waived", "open", "note")
    lines: list[tuple[str, ...]] = [head]
    for pair in rows:
        lines.append((*_new_cells(pair.new), *_old_cells(pair), pair.note))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = []
    for index, line in enumerate(lines):
        cells = [
            c.ljust(w) if i in _TEXT_COLUMNS else c.rjust(w)
            for i, (c, w) in enumerate(zip(line, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
        if index == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def pairs_html(rows: list[Pair], old: str, new: str) -> list[str]:
    """The rows as an HTML table, each page linking to its section of the report."""
    heads = (new, *_HEAD, old, "MUST", "done", "waived")
    html = ['<table class="summary"><tr>']
    html.append("".join(f"<th>{escape(h)}</th>" for h in (*heads, "open", "note")) + "</tr>")
    for pair in rows:
        cells = []
        for revision, values in ((new, _new_cells(pair.new)), (old, _old_cells(pair))):
            first, *nums = values
            if first != "-":
                page = first.removesuffix(" (not implemented)")
                anchor = f"{revision}/{page}".replace("/", "-")
                first = f'<a href="#{escape(anchor)}">{escape(first)}</a>'
            cells.append(f"<td>{first}</td>")
            cells += [f'<td class="n">{escape(n)}</td>' for n in nums]
        html.append("<tr>" + "".join(cells) + f"<td>{escape(pair.note)}</td></tr>")
    html.append("</table>")
    return html

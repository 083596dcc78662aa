"""Read ``spec_map/proof.json`` (written by ``python -m spec_map prove``) for check and report.

``proof.json`` holds, per traced clause, the mutants of its lines and whether the tests
citing it kill them (see :mod:`spec_map.prove` for how it is made)::

    {"summary": {...},
     "clauses": {clause id: {"status": "proven" | "tested-only" | "no-mutants" | "open",
                             "level", "page", "tags", "tests", "baseline", "note",
                             "mutants": [{"key", "where", "function", "diff",
                                          "result": "killed" | "survived" | "equivalent"
                                                    | "not-run", ...}]}}}

For a required (MUST) clause, this module gives one word (:func:`proof_status`):

``proven``       its tests kill every non-equivalent mutant of its lines;
``tested-only``  its tests pass, but some mutant survives them;
``no-mutants``   its tests pass, but mutmut makes no mutant on its lines;
``open``         no passing test (or no ``# Spec:`` comment) for it;
``not run``      cited in code, but outside the last ``prove`` run's selection;
``waived``       waived in ``waivers.toml``.

These figures are printed, never failing ``check`` (the lead decides when they should).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from .catalog import PACKAGE_DIR
from .check import aligned

__all__ = [
    "PROOF_PATH",
    "PROOF_WORDS",
    "PageProof",
    "check_text",
    "clause_mutants",
    "format_proof_table",
    "load_proof",
    "page_proofs",
    "proof_clause_html",
    "proof_status",
    "proof_table_html",
    "report_html",
]

PROOF_PATH = PACKAGE_DIR / "proof.json"
"""The committed results of the last full ``prove`` run."""

PROOF_WORDS = ("proven", "tested-only", "no-mutants", "open", "not run", "waived")
"""The words :func:`proof_status` returns, in table order."""


_cache: dict[Path, tuple[int, dict[str, Any] | None]] = {}


def load_proof(path: Path = PROOF_PATH) -> dict[str, Any] | None:
    """The content of ``proof.json``; None when it is missing or not a JSON object.

    The parsed file is kept while its modification time (ns) stays the same, so the
    report can ask once per clause.
    """
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        return None
    cached = _cache.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("clauses"), dict):
        data = None
    result: dict[str, Any] | None = data
    _cache[path] = (stamp, result)
    return result


def proof_status(
    proof: dict[str, Any] | None, clause_id: str, *, implemented: bool, waived: bool = False
) -> str:
    """One of :data:`PROOF_WORDS` for a clause (see the module docstring).

    Args:
        proof: ``proof.json`` content (None: nothing was proven, every traced clause is
            ``not run``).
        clause_id: the clause.
        implemented: the clause is cited by a ``# Spec:`` comment.
        waived: the clause is waived.
    """
    if waived:
        return "waived"
    entry = (proof or {}).get("clauses", {}).get(clause_id)
    if entry is not None:
        return str(entry.get("status", "open"))
    return "not run" if implemented else "open"


def clause_mutants(proof: dict[str, Any] | None, clause_id: str) -> dict[str, list[dict[str, Any]]]:
    """A clause's mutants grouped by result (killed, survived, equivalent, not-run)."""
    entry = (proof or {}).get("clauses", {}).get(clause_id) or {}
    out: dict[str, list[dict[str, Any]]] = {}
    for mutant in entry.get("mutants", []):
        out.setdefault(str(mutant.get("result")), []).append(mutant)
    return out


@dataclass(slots=True, kw_only=True)
class PageProof:
    """Counts of required clauses on one page, by :func:`proof_status` word."""

    page: str
    counts: dict[str, int]

    @property
    def total(self) -> int:
        """Required clauses on the page."""
        return sum(self.counts.values())


def page_proofs(
    proof: dict[str, Any] | None, clauses: Iterable[tuple[str, str, bool, bool]]
) -> list[PageProof]:
    """Per page, how many of ``clauses`` are proven, tested-only, ... (in input order).

    Args:
        clauses: ``(clause id, page, implemented, waived)`` of the required clauses.
    """
    rows: dict[str, PageProof] = {}
    for cid, page, implemented, waived in clauses:
        row = rows.setdefault(page, PageProof(page=page, counts=dict.fromkeys(PROOF_WORDS, 0)))
        row.counts[proof_status(proof, cid, implemented=implemented, waived=waived)] += 1
    return list(rows.values())


def format_proof_table(rows: Iterable[PageProof]) -> str:
    """The per-page table of required clauses by proof status, as aligned text."""
    head = ("page", "MUST", *PROOF_WORDS)
    lines: list[tuple[str, ...]] = [head]
    total = dict.fromkeys(PROOF_WORDS, 0)
    for row in rows:
        for word in PROOF_WORDS:
            total[word] += row.counts[word]
        lines.append((row.page, str(row.total), *(str(row.counts[w]) for w in PROOF_WORDS)))
    lines.append(("TOTAL", str(sum(total.values())), *(str(total[w]) for w in PROOF_WORDS)))
    return aligned(lines)


def proof_table_html(rows: Iterable[PageProof]) -> str:
    """The per-page proof table as an HTML ``<table class="summary">`` with a heading."""
    head = ("page", "MUST", *PROOF_WORDS)
    html = [
        '<h2 id="proof">Mutation proof (spec_map/proof.json)</h2>',
        "<p>Required clauses by what their tests kill among mutmut's mutants of the lines "
        "each <code># Spec:</code> tag covers (<code>python -m spec_map prove</code>).</p>",
        '<table class="summary"><tr>' + "".join(f"<th>{h}</th>" for h in head) + "</tr>",
    ]
    for row in rows:
        cells = [str(row.total), *(str(row.counts[w]) for w in PROOF_WORDS)]
        html.append(
            f"<tr><td>{escape(row.page)}</td>"
            + "".join(f'<td class="n">{c}</td>' for c in cells)
            + "</tr>"
        )
    html.append("</table>")
    return "\n".join(html)


def proof_clause_html(proof: dict[str, Any] | None, clause_id: str) -> list[str]:
    """HTML lines for one clause in the report: its proof status, killed count, survivors."""
    entry = (proof or {}).get("clauses", {}).get(clause_id)
    if entry is None:
        return []
    groups = clause_mutants(proof, clause_id)
    killed, survived = groups.get("killed", []), groups.get("survived", [])
    equivalent = groups.get("equivalent", [])
    text = f"mutation proof: <b>{escape(str(entry.get('status')))}</b>"
    text += f"; its tests kill {len(killed)} of {len(killed) + len(survived)} mutant(s)"
    if equivalent:
        text += f" ({len(equivalent)} equivalent)"
    if entry.get("note"):
        text += f"; {escape(str(entry['note']))}"
    out = [text]
    for label, group in (("killed", killed), ("survived", survived)):
        if group:
            items = "".join(
                f"<li><code>{escape(str(m.get('where')))}</code> "
                f"<code>{escape(str(m.get('diff')))}</code></li>"
                for m in group
            )
            css = "failed" if label == "survived" else "passed"
            out.append(f'<span class="{css}">{label}:</span><ul>{items}</ul>')
    return out


def _required(analysis: Any) -> list[tuple[str, str, bool, bool]]:
    """``(id, page, implemented, waived)`` of an :class:`~spec_map.check.Analysis`'s
    required clauses: every one of the ``required`` revisions (the page without its
    revision), then the ones of ``citable`` revisions that a ``# Spec:`` tag cites (the
    page with its revision: ``2025-11-25/basic/authorization``)."""
    return [
        (
            s.id,
            s.clause["page"] if s.enforced else f"{s.revision}/{s.clause['page']}",
            s.implemented,
            s.waiver is not None,
        )
        for s in sorted(analysis.statuses.values(), key=lambda s: not s.enforced)
        if s.required and (s.enforced or s.implemented)
    ]


def check_text(analysis: Any, path: Path = PROOF_PATH) -> str:
    """What ``python -m spec_map check`` prints about the mutation proof."""
    proof = load_proof(path)
    head = (
        "\nMutation proof of the MUST clauses of the required revisions, and of the cited"
        "\nones of the others (spec_map/proof.json, `python -m spec_map prove`):"
    )
    if proof is None:
        return head + f"\n  no readable {path}: run `python -m spec_map prove`"
    note = (
        "\nproven: its tests kill every non-equivalent mutant of its lines; tested-only: some "
        "survive (reported, not failing yet); not run: outside the last prove run."
    )
    return head + "\n" + format_proof_table(page_proofs(proof, _required(analysis))) + note


def report_html(analysis: Any, path: Path = PROOF_PATH) -> str:
    """The report's proof section (empty when there is no proof.json)."""
    proof = load_proof(path)
    if proof is None:
        return ""
    return proof_table_html(page_proofs(proof, _required(analysis)))

"""Write the static HTML coverage report (``python -m spec_map report``).

One self-contained page, ``<out>/index.html``: inline CSS, no scripts, nothing fetched
from the network.  It holds the rule, a table of every catalogued revision (its setting
from :mod:`spec_map.revisions`, its clauses by level, its required clauses done, waived
and open), 2025-11-25 and 2026-07-28 side by side page by page (:mod:`spec_map.side`),
the mutation proof, the lifecycle diagram (inline SVG drawn from
``mcp_ref/_state.py``), then each revision in turn: its per-page summary table and its
spec page by page: every clause with its id, keyword, whom it binds, its text, and
coloured by status, with relative links (``file#Lnn``) to the code lines and tests that
cite it and the waiver reason.  An open required clause is red in a ``required``
revision, pale red in a ``citable`` one (it does not fail the check).  A clause carried
from an earlier revision's (``carried.toml``, :mod:`spec_map.carried`) has its own colour
and says "done via <source>", linking to the source, whose code and tests it lists.
"""

from __future__ import annotations

import os
import re
from html import escape
from pathlib import Path

from .check import RULE, Analysis, ClauseStatus, PageSummary

__all__ = ["render_report", "write_report"]

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1150px;
       padding: 0 18px 60px; color: #1d1d1d; }
h1 { margin-top: 24px; } h2 { border-bottom: 1px solid #ccc; margin-top: 36px; }
h3 { margin: 22px 0 6px; font-size: 16px; }
h4 { margin: 18px 0 6px; font-size: 15px; color: #333; }
h2.revision { border-bottom: 3px solid #555; margin-top: 48px; }
code, .id { font-family: ui-monospace, monospace; font-size: 12.5px; }
pre.rule { background: #f6f6f6; padding: 10px; white-space: pre-wrap; font-size: 12.5px; }
table.summary { border-collapse: collapse; font-size: 13px; }
table.summary td, table.summary th { border: 1px solid #ddd; padding: 3px 8px; }
table.summary td.n { text-align: right; } table.summary tr.out { color: #888; }
.clause { border-left: 6px solid #ccc; margin: 8px 0; padding: 6px 10px; background: #fafafa; }
.clause .head { font-size: 12.5px; color: #444; }
.clause .text { margin: 3px 0; } .clause ul { margin: 2px 0 4px 18px; padding: 0; }
.clause .refs { font-size: 12.5px; color: #333; }
.kw { font-weight: bold; padding: 0 4px; border-radius: 3px; background: #e8e8e8; }
.badge { font-weight: bold; padding: 0 5px; border-radius: 3px; color: #fff; }
.done { border-left-color: #2e8b3d; } .done .badge { background: #2e8b3d; }
.carried { border-left-color: #2a7f9e; } .carried .badge { background: #2a7f9e; }
.waived { border-left-color: #7a7a7a; } .waived .badge { background: #7a7a7a; }
.untested, .unimplemented { border-left-color: #d29a00; }
.untested .badge, .unimplemented .badge { background: #d29a00; }
.open { border-left-color: #c62828; } .open .badge { background: #c62828; }
.open.soft { border-left-color: #e58a8a; } .open.soft .badge { background: #e58a8a; }
.host { border-left-color: #7b61b3; } .host .badge { background: #7b61b3; }
.unchecked { border-left-color: #bbb; } .unchecked .badge { background: #aaa; }
.legend span.badge { margin-right: 6px; }
.passed { color: #2e8b3d; } .failed { color: #c62828; } .skipped { color: #888; }
/* The diagram is wider than the text column: it takes the window's width (full bleed,
   24px from each edge, clear of a scroll bar) and shrinks to fit it, keeping its
   proportions; the container still scrolls if the window is very narrow. */
.diagram { overflow-x: auto; border: 1px solid #e3e3e3; padding: 6px;
           margin-left: calc(50% - 50vw + 24px); margin-right: calc(50% - 50vw + 24px); }
.diagram svg { display: block; max-width: 100%; height: auto; margin: 0 auto; }
"""

_STATUS_TEXT = {
    "done": "implemented and tested",
    "carried": "done via an earlier revision's clause",
    "waived": "waived",
    "untested": "implemented, not tested",
    "unimplemented": "tested, not cited in code",
    "open": "open",
    "host": "binds the host application",
    "unchecked": "page not implemented",
}


def _anchor(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")


def _link(root: Path, out: Path, path: str, line: int) -> str:
    target = os.path.relpath(root / path, out)
    href = Path(target).as_posix() + f"#L{line}"
    return f'<a href="{escape(href)}"><code>{escape(path)}:{line}</code></a>'


def _clause_html(status: ClauseStatus, root: Path, out: Path) -> str:
    c = status.clause
    word = status.status
    classes = ["clause", word]
    if word == "open" and not (status.required and status.enforced):
        classes.append("soft")
    badge = _STATUS_TEXT[word]
    if word == "carried":
        badge = f"done via {status.done_via}"
    head = (
        f'<span class="id">{escape(status.id)}</span> '
        f'<span class="kw">{escape(c["keyword"])}</span> binds <b>{escape(c["binds"])}</b> '
        f'<span class="badge">{escape(badge)}</span>'
    )
    if status.required:
        head += (
            " <small>(required)</small>"
            if status.enforced
            else " <small>(required of a library; its revision is citable)</small>"
        )
    parts = [
        f'<div class="{" ".join(classes)}" id="{_anchor(status.id)}" data-id="{escape(status.id)}">',
        f'<div class="head">{head}</div>',
        f'<div class="text">{_inline(c["text"])}</div>',
    ]
    if c["detail"]:
        items = "".join(f"<li>{_inline(d)}</li>" for d in c["detail"])
        parts.append(f"<ul>{items}</ul>")
    refs = []
    if status.code:
        refs.append("code: " + ", ".join(_link(root, out, x.path, x.line) for x in status.code))
    if status.tests:
        refs.append("tests: " + ", ".join(_link(root, out, x.path, x.line) for x in status.tests))
    for outcome in ("passed", "failed", "skipped"):
        nodes = getattr(status, outcome)
        if nodes:
            refs.append(
                f'<span class="{outcome}">{outcome}:</span> '
                + ", ".join(f"<code>{escape(n)}</code>" for n in nodes)
            )
    if status.waiver is not None:
        refs.append(f"waiver: {escape(status.waiver)}")
    source = status.source
    if source is not None and status.carried is not None:
        link = f'<a href="#{_anchor(source.id)}"><code>{escape(source.id)}</code></a>'
        if status.done_via is not None:
            refs.append(f"carried from {link}: {escape(status.carried.note)}")
            refs.append(
                "its code: " + ", ".join(_link(root, out, x.path, x.line) for x in source.code)
            )
            refs.append(
                '<span class="passed">its passing tests:</span> '
                + ", ".join(f"<code>{escape(n)}</code>" for n in source.passed)
            )
        else:
            refs.append(
                f"listed as carried from {link}, which is {escape(source.status)}: "
                "it counts as open until its source is done"
            )
    from .proof import load_proof, proof_clause_html

    refs.extend(proof_clause_html(load_proof(), status.id))
    if refs:
        parts.append('<div class="refs">' + "<br>".join(refs) + "</div>")
    parts.append("</div>")
    return "\n".join(parts)


def _inline(text: str) -> str:
    """Escape text, showing `code spans` as <code>."""
    pieces = re.split(r"(`[^`]+`)", text)
    out = []
    for piece in pieces:
        if piece.startswith("`") and piece.endswith("`") and len(piece) > 1:
            out.append(f"<code>{escape(piece[1:-1])}</code>")
        else:
            out.append(escape(piece))
    return "".join(out)


def _diagram() -> str:
    try:
        from .diagram import render_svg

        svg = render_svg()
    except (ImportError, AttributeError) as exc:  # mcp_ref missing or without the table
        return f"<p>(lifecycle diagram unavailable: {escape(repr(exc))})</p>"
    return f'<div class="diagram">{svg}</div>'


def _page_table(rows: list[PageSummary]) -> list[str]:
    """One revision's per-page summary table."""
    html = ['<table class="summary"><tr>']
    heads = (
        "page",
        "clauses",
        "MUST",
        "impl",
        "tested",
        "carried",
        "waived",
        "open",
        "SHOULD",
        "ok",
        "host",
    )
    html.append("".join(f"<th>{h}</th>" for h in heads) + "</tr>")
    for row in rows:
        cls = "" if row.scope else ' class="out"'
        anchor = _anchor(f"{row.revision}/{row.page}")
        name = f'<a href="#{anchor}">{escape(row.page)}</a>'
        nums = (
            (
                row.must,
                row.implemented,
                row.tested,
                row.carried,
                row.waived,
                row.open,
                row.should,
                row.should_ok,
            )
            if row.scope
            else ("-",) * 8
        )
        cells = [str(row.clauses), *map(str, nums), str(row.host)]
        html.append(
            f"<tr{cls}><td>{name}</td>"
            + "".join(f'<td class="n">{c}</td>' for c in cells)
            + "</tr>"
        )
    html.append("</table>")
    return html


def _revision_table(analysis: Analysis) -> list[str]:
    """The table of every revision's counts, each row linking to its section."""
    heads = (
        "revision",
        "setting",
        "clauses",
        "MUST",
        "SHOULD",
        "MAY",
        "required",
        "done",
        "carried",
        "waived",
        "open",
        "cited",
    )
    html = [
        '<h2 id="revisions">Revisions</h2>',
        "<p>Every revision is catalogued, and any of its clauses may be cited (unknown ids "
        "and wrong quotes are errors in all of them). Open required clauses fail the check "
        "only in a <b>required</b> revision; a <b>citable</b> one is counted the same way "
        "and shown here, never failing (settings: <code>spec_map/revisions.py</code>). "
        "MUST/SHOULD/MAY count clauses by their strongest keyword; <i>required</i> are the "
        "library-binding MUSTs on pages the project implements in that revision, or "
        "cited; <i>done</i> are implemented and tested; <i>carried</i> are done through the "
        "same sentence of an earlier revision whose code both eras share "
        "(<code>spec_map/carried.toml</code>), never counted as done; <i>cited</i> counts "
        "clauses of any level cited by a tag or a test.</p>",
        '<table class="summary"><tr>' + "".join(f"<th>{h}</th>" for h in heads) + "</tr>",
    ]
    for r in analysis.revision_summaries():
        name = f'<a href="#{_anchor("rev-" + r.revision)}">{escape(r.revision)}</a>'
        cells = (
            r.clauses,
            r.must,
            r.should,
            r.may,
            r.required,
            r.done,
            r.carried,
            r.waived,
            r.open,
            r.cited,
        )
        html.append(
            f"<tr><td>{name}</td><td>{escape(r.setting)}</td>"
            + "".join(f'<td class="n">{c}</td>' for c in cells)
            + "</tr>"
        )
    html.append("</table>")
    return html


def _side_by_side(analysis: Analysis) -> list[str]:
    """2025-11-25 and 2026-07-28 page by page (:mod:`spec_map.side`)."""
    from .side import SIDE_BY_SIDE, pairs, pairs_html

    old, new = SIDE_BY_SIDE
    if old not in analysis.policies or new not in analysis.policies:
        return []
    return [
        f'<h2 id="side-by-side">{escape(old)} and {escape(new)} side by side</h2>',
        f"<p>Library-binding MUSTs per page. {escape(new)} moved and split pages "
        "(the note says how); a split page of "
        f'{escape(old)} is counted once, <code>"</code> on the rows after. '
        "<i>carried</i>: done via an earlier revision's clause.</p>",
        *pairs_html(pairs(analysis, old, new), old, new),
    ]


def render_report(analysis: Analysis, *, root: Path, out: Path) -> str:
    """The report as one HTML document (``out`` is where it will be written)."""
    catalog = analysis.catalog
    tested = "a passing test (results.json)" if analysis.use_results else "a test marker"
    enforced = [r for r, p in analysis.policies.items() if p.setting == "required"]
    html = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>mcp_ref spec coverage (every revision)</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>mcp_ref: coverage of the MCP specification, revision by revision</h1>",
        f"<p>{len(catalog.clauses)} normative sentences in {len(catalog.revisions)} "
        f"revisions ({escape(', '.join(catalog.revisions))}); "
        f"<b>{len(analysis.open_required)} required clause(s) open</b> in the revisions "
        f"the check holds the tree to ({escape(', '.join(enforced) or 'none')}); "
        f"{len(analysis.errors)} error(s) in citations or waivers. 'Tested' here means "
        f"cited by {tested}.</p>",
        f'<pre class="rule">{escape(RULE)}</pre>',
        '<p class="legend">'
        + "".join(
            f'<span class="{k}{" soft" if k == "open" else ""}"><span class="badge">'
            f"{escape(v)}</span></span>"
            for k, v in _STATUS_TEXT.items()
        )
        + " (pale red: an open SHOULD/MAY, or an open MUST of a citable revision)</p>",
    ]
    if analysis.errors:
        html.append("<h2>Errors</h2><ul>")
        html += [f"<li><code>{escape(e)}</code></li>" for e in analysis.errors]
        html.append("</ul>")
    html += _revision_table(analysis)
    html += _side_by_side(analysis)
    from .proof import report_html

    html.append(report_html(analysis))
    html.append('<h2 id="lifecycle">Lifecycle (from mcp_ref/_state.py)</h2>')
    html.append(_diagram())
    for revision, pages in catalog.revisions.items():
        rev = analysis.policies[revision]
        html.append(
            f'<h2 class="revision" id="{_anchor("rev-" + revision)}">Revision '
            f"{escape(revision)} <small>({escape(rev.setting)}: {escape(rev.why)})</small></h2>"
        )
        html += _page_table(analysis.summaries(revision))
        for qualified, clauses in catalog.by_page(revision).items():
            if not clauses:
                continue
            page = clauses[0]["page"]
            title = pages[page]["title"]
            note = "" if rev.in_scope(page) else " <small>(not implemented by mcp_ref)</small>"
            html.append(
                f'<h3 id="{_anchor(qualified)}">{escape(title)} '
                f"<small><code>{escape(qualified)}</code></small>{note}</h3>"
            )
            section = None
            for clause in clauses:
                if clause["section"] != section:
                    section = clause["section"]
                    html.append(
                        f"<h4>{escape(clause['section_title'])} "
                        f"<small><code>#{escape(section)}</code></small></h4>"
                    )
                html.append(_clause_html(analysis.statuses[clause["id"]], root, out))
    html.append("</body></html>")
    return "\n".join(html) + "\n"


def write_report(analysis: Analysis, out: Path, *, root: Path) -> Path:
    """Write ``out/index.html`` (creating ``out``); returns the file written."""
    out.mkdir(parents=True, exist_ok=True)
    target = out / "index.html"
    target.write_text(render_report(analysis, root=root, out=out.resolve()), encoding="utf-8")
    return target

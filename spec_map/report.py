"""Write the static HTML coverage report (``python -m spec_map report``).

One self-contained page, ``<out>/index.html``: inline CSS, no scripts, nothing fetched
from the network.  It holds the rule, a per-page summary table, the lifecycle diagram
(inline SVG drawn from ``mcp_ref/_state.py``), then the spec page by page: every clause
with its id, keyword, whom it binds, its text, and coloured by status, with relative
links (``file#Lnn``) to the code lines and tests that cite it and the waiver reason.
"""

from __future__ import annotations

import os
import re
from html import escape
from pathlib import Path

from .check import RULE, Analysis, ClauseStatus, in_scope

__all__ = ["render_report", "write_report"]

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1150px;
       padding: 0 18px 60px; color: #1d1d1d; }
h1 { margin-top: 24px; } h2 { border-bottom: 1px solid #ccc; margin-top: 36px; }
h3 { margin: 22px 0 6px; font-size: 15px; color: #333; }
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
    if word == "open" and not status.required:
        classes.append("soft")
    head = (
        f'<span class="id">{escape(status.id)}</span> '
        f'<span class="kw">{escape(c["keyword"])}</span> binds <b>{escape(c["binds"])}</b> '
        f'<span class="badge">{escape(_STATUS_TEXT[word])}</span>'
    )
    if status.required:
        head += " <small>(required)</small>"
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


def render_report(analysis: Analysis, *, root: Path, out: Path) -> str:
    """The report as one HTML document (``out`` is where it will be written)."""
    catalog = analysis.catalog
    rows = analysis.summaries()
    tested = "a passing test (results.json)" if analysis.use_results else "a test marker"
    html = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>mcp_ref spec coverage ({escape(catalog.revision)})</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>mcp_ref: coverage of the MCP {escape(catalog.revision)} specification</h1>",
        f"<p>{len(catalog.clauses)} normative sentences; "
        f"{sum(1 for s in analysis.statuses.values() if s.required)} required of a protocol "
        f"library; <b>{len(analysis.open_required)} open</b>; {len(analysis.errors)} error(s) "
        f"in citations or waivers. 'Tested' here means cited by {tested}.</p>",
        f'<pre class="rule">{escape(RULE)}</pre>',
        '<p class="legend">'
        + "".join(
            f'<span class="{k}{" soft" if k == "open" else ""}"><span class="badge">'
            f"{escape(v)}</span></span>"
            for k, v in _STATUS_TEXT.items()
        )
        + " (pale red: an open SHOULD/MAY)</p>",
    ]
    if analysis.errors:
        html.append("<h2>Errors</h2><ul>")
        html += [f"<li><code>{escape(e)}</code></li>" for e in analysis.errors]
        html.append("</ul>")
    html.append('<h2 id="summary">Summary</h2><table class="summary"><tr>')
    heads = ("page", "clauses", "MUST", "impl", "tested", "waived", "open", "SHOULD", "ok", "host")
    html.append("".join(f"<th>{h}</th>" for h in heads) + "</tr>")
    for row in rows:
        cls = "" if row.scope else ' class="out"'
        name = f'<a href="#{_anchor(row.page)}">{escape(row.page)}</a>'
        nums = (
            (row.must, row.implemented, row.tested, row.waived, row.open, row.should, row.should_ok)
            if row.scope
            else ("-",) * 7
        )
        cells = [str(row.clauses), *map(str, nums), str(row.host)]
        html.append(
            f"<tr{cls}><td>{name}</td>"
            + "".join(f'<td class="n">{c}</td>' for c in cells)
            + "</tr>"
        )
    html.append("</table>")
    from .proof import report_html

    html.append(report_html(analysis))
    html.append('<h2 id="lifecycle">Lifecycle (from mcp_ref/_state.py)</h2>')
    html.append(_diagram())
    for page, clauses in catalog.by_page().items():
        if not clauses:
            continue
        title = catalog.pages[page]["title"]
        note = "" if in_scope(page) else " <small>(not implemented by mcp_ref)</small>"
        html.append(
            f'<h2 id="{_anchor(page)}">{escape(title)} <small><code>{escape(page)}</code></small>{note}</h2>'
        )
        section = None
        for clause in clauses:
            if clause["section"] != section:
                section = clause["section"]
                html.append(
                    f"<h3>{escape(clause['section_title'])} <small><code>#{escape(section)}</code></small></h3>"
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

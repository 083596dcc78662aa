"""The ``python -m spec_map`` command line.

Commands: ``extract`` (regenerate ``clauses/<revision>.json`` for every revision),
``check`` (coverage of the MUST clauses, per revision; fails on the ``required``
revisions' open ones), ``carried`` (propose ``carried.toml`` entries), ``open`` (write
``open-<revision>.md``, what is left), ``report`` (static HTML page), ``modules`` (clauses cited per
module), ``diagram`` (regenerate the committed lifecycle diagram), ``quotes`` (the
quote under every tag), ``prove`` (mutation proof).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from . import check as check_mod
from .catalog import (
    CATALOG_DIR,
    PACKAGE_DIR,
    REPO_ROOT,
    find_spec_dir,
    load_catalog,
    write_catalogs,
)
from .revisions import REQUIRED

__all__ = ["build_parser", "main"]

WAIVERS_PATH = PACKAGE_DIR / "waivers.toml"
CARRIED_PATH = PACKAGE_DIR / "carried.toml"
RESULTS_PATH = PACKAGE_DIR / "results.json"


def _cmd_extract(args: argparse.Namespace) -> int:
    spec = Path(args.spec) if args.spec else find_spec_dir()
    if spec is None:
        print("spec_map: no spec folder ($MCP_SPEC_DIR or ../shared/spec)", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else CATALOG_DIR
    try:
        written = write_catalogs(spec, out)
    except FileNotFoundError as exc:
        print(f"spec_map: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    return 0


def _analysis(args: argparse.Namespace) -> check_mod.Analysis:
    catalog = load_catalog(Path(args.catalog))
    results = None if args.no_results else Path(args.results)
    return check_mod.analyze(
        root=Path(args.root),
        catalog=catalog,
        waivers_path=Path(args.waivers),
        results_path=results,
        carried_path=_carried_path(args),
    )


def _carried_path(args: argparse.Namespace) -> Path | None:
    """``--carried``; by default ``spec_map/carried.toml`` with the committed catalog,
    none with another (its ids name the committed catalog's clauses)."""
    if args.carried:
        return Path(args.carried)
    return CARRIED_PATH if Path(args.catalog).resolve() == CATALOG_DIR.resolve() else None


def _cmd_check(args: argparse.Namespace) -> int:
    try:
        analysis = _analysis(args)
    except (OSError, ValueError) as exc:
        print(f"spec_map: cannot load the catalog: {exc}", file=sys.stderr)
        return 2
    shown = _shown(analysis, args.revision)
    for index, revision in enumerate(shown):
        setting = analysis.policies[revision].setting
        print(("" if index == 0 else "\n") + f"{revision} ({setting}):")
        print(check_mod.format_table(analysis.summaries(revision)))
    tested = "passing tests (results.json)" if analysis.use_results else "test markers"
    print(f"\nMUST = library-binding MUST-level clauses; 'tested' counts {tested}.")
    print("\nEvery revision (only a 'required' one's open clauses fail; settings in")
    print("spec_map/revisions.py; --revision REV shows a revision's pages):")
    print(check_mod.format_revisions(analysis.revision_summaries()))
    from .side import SIDE_BY_SIDE, format_pairs, pairs

    old, new = SIDE_BY_SIDE
    if old in analysis.policies and new in analysis.policies:
        print(f"\n{old} and {new} side by side (library-binding MUSTs per page; carried =")
        print("done through an earlier revision's clause, spec_map/carried.toml):")
        print(format_pairs(pairs(analysis, old, new), old, new))
    from .proof import check_text

    print(check_text(analysis))
    if args.list_open:
        listed = [s for r in shown for s in analysis.open_in(r)]
        if args.include_should:
            listed += [s for s in analysis.open_should if s.revision in shown]
        if listed:
            print(f"\nOpen clauses ({len(listed)}):")
            print(check_mod.format_open(listed))
    for warning in analysis.warnings:
        print(f"warning: {warning}" if "warning:" not in warning else warning, file=sys.stderr)
    for error in analysis.errors:
        print(error, file=sys.stderr)
    open_count = len(analysis.open_required)
    enforced = [r for r, p in analysis.policies.items() if p.setting == REQUIRED]
    print(
        f"\n{open_count} required clause(s) open in {', '.join(enforced) or 'no revision'}, "
        f"{len(analysis.errors)} error(s)"
        + ("" if args.list_open or not open_count else "; --list-open shows them")
    )
    return 0 if analysis.ok else 1


def _cmd_carried(args: argparse.Namespace) -> int:
    from .carried import CarriedError, CarriedTable, candidates, format_candidates, load_carried

    try:
        analysis = _analysis(args)
        path = _carried_path(args)
        table = load_carried(path) if path is not None else CarriedTable()
    except (OSError, ValueError, CarriedError) as exc:
        print(f"spec_map: {exc}", file=sys.stderr)
        return 2
    done = [s.id for s in analysis.statuses.values() if s.status == "done"]
    levels = ("MUST", "SHOULD") if args.include_should else ("MUST",)
    found = candidates(analysis.catalog, done, args.revision, table, levels)
    where = {
        s.id: ", ".join(f"{c.path}:{c.line}" for c in s.code)
        for s in analysis.statuses.values()
        if s.code
    }
    text = format_candidates(found, where)
    if args.append and found:
        path = path or CARRIED_PATH
        with path.open("a", encoding="utf-8") as out:
            out.write("\n# --- proposed by `python -m spec_map carried`: review each ---\n\n")
            out.write(text)
        print(f"appended {len(found)} entr(ies) to {path}; review them")
    else:
        print(text or f"no new candidates in {args.revision}")
    return 0


def _cmd_open(args: argparse.Namespace) -> int:
    from .openlist import render_open

    try:
        analysis = _analysis(args)
    except (OSError, ValueError) as exc:
        print(f"spec_map: cannot load the catalog: {exc}", file=sys.stderr)
        return 2
    text = render_open(analysis, args.revision)
    if args.out == "-":
        print(text, end="")
        return 0
    out = Path(args.out or PACKAGE_DIR / f"open-{args.revision}.md")
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}")
    return 0


def _shown(analysis: check_mod.Analysis, asked: list[str] | None) -> list[str]:
    """The revisions whose page tables ``check`` prints: the ``required`` ones, and the
    ones asked for with ``--revision`` (``all``: every one), in catalog order."""
    wanted = set(asked or ())
    return [
        r
        for r, p in analysis.policies.items()
        if p.setting == REQUIRED or r in wanted or "all" in wanted
    ]


def _cmd_report(args: argparse.Namespace) -> int:
    from .report import write_report

    try:
        analysis = _analysis(args)
    except (OSError, ValueError) as exc:
        print(f"spec_map: cannot load the catalog: {exc}", file=sys.stderr)
        return 2
    out = write_report(analysis, Path(args.out), root=Path(args.root))
    print(f"wrote {out}")
    return 0


def _cmd_modules(args: argparse.Namespace) -> int:
    from .modules import format_modules, modules_of

    try:
        analysis = _analysis(args)
    except (OSError, ValueError) as exc:
        print(f"spec_map: cannot load the catalog: {exc}", file=sys.stderr)
        return 2
    print(format_modules(modules_of(analysis), analysis))
    return 0


def _cmd_diagram(args: argparse.Namespace) -> int:
    from .diagram import DIAGRAM_MD, DIAGRAM_SVG, render_markdown, render_svg

    DIAGRAM_SVG.write_text(render_svg(), encoding="utf-8")
    DIAGRAM_MD.write_text(render_markdown(), encoding="utf-8")
    print(f"wrote {DIAGRAM_SVG} and {DIAGRAM_MD}")
    return 0


def _cmd_quotes(args: argparse.Namespace) -> int:
    from .quotes import add_missing, problems

    catalog = load_catalog(Path(args.catalog))
    root = Path(args.root)
    if args.add:
        print(f"added {add_missing(root / 'mcp_ref', catalog.clauses)} quote(s)")
    found = problems(root / "mcp_ref", root, catalog.clauses)
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", default=str(REPO_ROOT), help="repository root to scan")
    p.add_argument(
        "--catalog",
        default=str(CATALOG_DIR),
        help="catalog to use: a folder of <revision>.json files, or one such file",
    )
    p.add_argument("--waivers", default=str(WAIVERS_PATH), help="waivers.toml to use")
    p.add_argument(
        "--carried",
        help="carried.toml to use (default: spec_map/carried.toml with the committed "
        "catalog, none with another)",
    )
    p.add_argument("--results", default=str(RESULTS_PATH), help="results.json to use")
    p.add_argument(
        "--no-results",
        action="store_true",
        help="ignore test results: a test marker citing a clause counts as tested",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m spec_map``."""
    parser = argparse.ArgumentParser(prog="python -m spec_map", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser(
        "extract", help="regenerate the catalog (clauses/<revision>.json) from the spec text"
    )
    p.add_argument("--spec", help="spec folder (default: $MCP_SPEC_DIR or ../shared/spec)")
    p.add_argument("--out", help=f"output folder (default: {CATALOG_DIR})")
    p.set_defaults(func=_cmd_extract)

    p = sub.add_parser(
        "check",
        help="check that every required clause is implemented and tested, or waived",
        description="Print a per-page coverage table of the spec clauses.\n\n" + check_mod.RULE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(p)
    p.add_argument("--list-open", action="store_true", help="print the open clauses, with text")
    p.add_argument(
        "--include-should", action="store_true", help="with --list-open, list SHOULDs too"
    )
    p.add_argument(
        "--revision",
        action="append",
        metavar="REV",
        help="also show this citable revision's pages (and, with --list-open, its open "
        "clauses); 'all' for every one; repeatable",
    )
    p.set_defaults(func=_cmd_check)

    p = sub.add_parser(
        "carried",
        help="propose carried.toml entries: clauses repeating a done clause of an earlier "
        "revision word for word (to review by hand)",
    )
    _common(p)
    p.add_argument("--revision", default="2026-07-28", help="the later revision")
    p.add_argument("--include-should", action="store_true", help="propose SHOULDs too")
    p.add_argument(
        "--append",
        action="store_true",
        help="append the proposals to carried.toml (an empty 'shared' fails check until "
        "a reviewer fills it in or moves the entry to [[not_carried]])",
    )
    p.set_defaults(func=_cmd_carried)

    p = sub.add_parser(
        "open",
        help="write open-<revision>.md: the revision's open required clauses, by page",
    )
    _common(p)
    p.add_argument("--revision", default="2026-07-28", help="the revision to list")
    p.add_argument("--out", help="output file (default spec_map/open-<revision>.md; - for stdout)")
    p.set_defaults(func=_cmd_open)

    p = sub.add_parser(
        "report",
        help="write a static HTML report (spec text coloured by status, lifecycle diagram)",
        description="Write report/index.html.  Statuses follow the check rule:\n\n"
        + check_mod.RULE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(p)
    p.add_argument("--out", default=str(PACKAGE_DIR / "report"), help="output folder")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("modules", help="list, per mcp_ref module, the clauses it cites")
    _common(p)
    p.set_defaults(func=_cmd_modules)

    p = sub.add_parser("diagram", help="regenerate lifecycle.svg and lifecycle.md")
    p.set_defaults(func=_cmd_diagram)

    p = sub.add_parser(
        "quotes", help="check the quote under every '# Spec:' tag (--add writes missing ones)"
    )
    _common(p)
    p.add_argument("--add", action="store_true", help="write the clause's text under tags")
    p.set_defaults(func=_cmd_quotes)

    from .prove import add_parser as add_prove_parser

    add_prove_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    status: int = args.func(args)
    return status

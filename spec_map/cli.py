"""The ``python -m spec_map`` command line.

Commands: ``extract`` (regenerate catalog.json), ``check`` (coverage of the MUST
clauses), ``report`` (static HTML page), ``modules`` (clauses cited per module),
``diagram`` (regenerate the committed lifecycle diagram).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from . import check as check_mod
from .catalog import (
    CATALOG_PATH,
    PACKAGE_DIR,
    REPO_ROOT,
    build_catalog,
    dump_catalog,
    find_spec_dir,
    load_catalog,
)

__all__ = ["build_parser", "main"]

WAIVERS_PATH = PACKAGE_DIR / "waivers.toml"
RESULTS_PATH = PACKAGE_DIR / "results.json"


def _cmd_extract(args: argparse.Namespace) -> int:
    spec = Path(args.spec) if args.spec else find_spec_dir()
    if spec is None:
        print("spec_map: no spec folder ($MCP_SPEC_DIR or ../shared/spec)", file=sys.stderr)
        return 2
    text = dump_catalog(build_catalog(spec))
    out = Path(args.out) if args.out else CATALOG_PATH
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}")
    return 0


def _analysis(args: argparse.Namespace) -> check_mod.Analysis:
    catalog = load_catalog(Path(args.catalog))
    results = None if args.no_results else Path(args.results)
    return check_mod.analyze(
        root=Path(args.root),
        catalog=catalog,
        waivers_path=Path(args.waivers),
        results_path=results,
    )


def _cmd_check(args: argparse.Namespace) -> int:
    try:
        analysis = _analysis(args)
    except (OSError, ValueError) as exc:
        print(f"spec_map: cannot load the catalog: {exc}", file=sys.stderr)
        return 2
    print(check_mod.format_table(analysis.summaries()))
    tested = "passing tests (results.json)" if analysis.use_results else "test markers"
    print(f"\nMUST = library-binding MUST-level clauses; 'tested' counts {tested}.")
    from .proof import check_text

    print(check_text(analysis))
    if args.list_open:
        listed = analysis.open_required
        if args.include_should:
            listed = listed + analysis.open_should
        if listed:
            print(f"\nOpen clauses ({len(listed)}):")
            print(check_mod.format_open(listed))
    for warning in analysis.warnings:
        print(f"warning: {warning}" if "warning:" not in warning else warning, file=sys.stderr)
    for error in analysis.errors:
        print(error, file=sys.stderr)
    open_count = len(analysis.open_required)
    print(
        f"\n{open_count} required clause(s) open, {len(analysis.errors)} error(s)"
        + ("" if args.list_open or not open_count else "; --list-open shows them")
    )
    return 0 if analysis.ok else 1


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
    p.add_argument("--catalog", default=str(CATALOG_PATH), help="catalog.json to use")
    p.add_argument("--waivers", default=str(WAIVERS_PATH), help="waivers.toml to use")
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
    p = sub.add_parser("extract", help="regenerate catalog.json from the spec text")
    p.add_argument("--spec", help="spec folder (default: $MCP_SPEC_DIR or ../shared/spec)")
    p.add_argument("--out", help=f"output file (default: {CATALOG_PATH})")
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
    p.set_defaults(func=_cmd_check)

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

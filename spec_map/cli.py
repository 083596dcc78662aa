"""The ``python -m spec_map`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .catalog import CATALOG_PATH, build_catalog, dump_catalog, find_spec_dir

__all__ = ["main"]


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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m spec_map``."""
    parser = argparse.ArgumentParser(prog="python -m spec_map", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("extract", help="regenerate catalog.json from the spec text")
    p.add_argument("--spec", help="spec folder (default: $MCP_SPEC_DIR or ../shared/spec)")
    p.add_argument("--out", help=f"output file (default: {CATALOG_PATH})")
    p.set_defaults(func=_cmd_extract)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    status: int = args.func(args)
    return status

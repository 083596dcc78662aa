"""Refresh (or compare) the vendored spec files from a spec folder.

Usage::

    python tests/vendor/refresh.py [--check] [SPEC_DIR]

SPEC_DIR defaults to ``$MCP_SPEC_DIR``, else ``../shared/spec`` beside the repository.
Without ``--check`` it copies the files listed in README.md over the vendored ones;
with ``--check`` it changes nothing and exits 1 if any vendored file differs from the
source (or is missing on either side), naming each.  Exit status 2: no spec folder.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import sys
from pathlib import Path

VENDOR = Path(__file__).resolve().parent
REPO = VENDOR.parent.parent
REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
EXAMPLES = "2026-07-28"
PAGES = (*REVISIONS, "extensions")
"""The folders whose spec pages spec_map extracts its catalog from (spec_map/revisions.py)."""
NOT_PAGES = ("server-features-reference.md",)
"""Markdown files of those folders spec_map does not extract (besides ``schema*``)."""


def _is_page(path: Path) -> bool:
    return (
        path.suffix == ".md" and not path.name.startswith("schema") and path.name not in NOT_PAGES
    )


def wanted(spec: Path) -> list[str]:
    """The vendored paths, relative to both roots: schemas, examples, spec pages (only
    the ``*.md`` pages spec_map reads: ``schema*`` and :data:`NOT_PAGES` left out), from
    either side so removals show too."""
    rels = {f"schema/{r}/schema.json" for r in REVISIONS}
    for root in (spec, VENDOR):
        for sub in (f"examples/{EXAMPLES}", *PAGES):
            rels |= {
                p.relative_to(root).as_posix()
                for p in (root / sub).rglob("*")
                if p.is_file() and (sub not in PAGES or _is_page(p))
            }
    return sorted(rels)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    env = os.environ.get("MCP_SPEC_DIR")
    spec = Path(args[0]) if args else Path(env) if env else REPO.parent / "shared" / "spec"
    if not (spec / "schema").is_dir():
        print(f"no spec folder at {spec}", file=sys.stderr)
        return 2
    differ = []
    for rel in wanted(spec):
        src, dst = spec / rel, VENDOR / rel
        same = src.is_file() and dst.is_file() and filecmp.cmp(src, dst, shallow=False)
        if same:
            continue
        differ.append(rel)
        if not check and src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
        elif not check:
            dst.unlink()
    for rel in differ:
        print(("differs: " if check else "updated: ") + rel)
    return 1 if check and differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

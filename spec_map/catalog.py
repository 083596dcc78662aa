"""The committed clause catalog (``spec_map/catalog.json``): build, write, load, look up.

The catalog is generated from the spec text by :func:`build_catalog` and committed, so
the project (and its checks) work without ``/work/shared``.  A test regenerates it when
the spec is present and fails if the committed file differs.

Shape of ``catalog.json``::

    {"revision": "2025-06-18",
     "pages": {"basic/lifecycle": {"title": "Lifecycle",
                                   "sections": [{"slug", "title", "level", "line"}, ...]},
               ...},
     "clauses": [{"id", "page", "section", "section_title", "n", "keyword",
                  "keywords", "level", "binds", "binds_why", "text", "detail",
                  "line"}, ...]}
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .extract import Clause, Section, extract_page, extract_revision

__all__ = [
    "CATALOG_PATH",
    "PACKAGE_DIR",
    "REPO_ROOT",
    "REVISION",
    "Catalog",
    "build_catalog",
    "catalog_from_pages",
    "dump_catalog",
    "find_spec_dir",
    "load_catalog",
]

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent
CATALOG_PATH = PACKAGE_DIR / "catalog.json"
REVISION = "2025-06-18"
"""The revision the project implements; only its clauses are catalogued."""

ID_PATTERN = re.compile(
    r"(?P<rev>\d{4}-\d{2}-\d{2})/(?P<page>[a-z0-9_/-]+)#(?P<slug>[\w-]+)(?:\.(?P<n>\d+))?"
)
"""A clause id (``rev/page#slug.n``) or a section reference (``rev/page#slug``)."""


def find_spec_dir() -> Path | None:
    """The spec folder: ``$MCP_SPEC_DIR``, else ``<repo>/../shared/spec``; None if absent."""
    env = os.environ.get("MCP_SPEC_DIR")
    candidates = [Path(env)] if env else []
    candidates.append(REPO_ROOT.parent / "shared" / "spec")
    for candidate in candidates:
        if (candidate / REVISION).is_dir():
            return candidate
    return None


def build_catalog(spec_dir: Path, revision: str = REVISION) -> dict[str, Any]:
    """Extract the catalog of ``spec_dir/<revision>`` as a JSON-ready dict.

    Raises:
        FileNotFoundError: the revision folder is missing.
    """
    sections, clauses, titles = extract_revision(spec_dir / revision)
    return _catalog_dict(revision, sections, clauses, titles)


def catalog_from_pages(pages: dict[str, str], revision: str = REVISION) -> dict[str, Any]:
    """A catalog dict from in-memory pages ``{page path: markdown}`` (for tests and tools)."""
    sections: dict[str, list[Section]] = {}
    titles: dict[str, str] = {}
    clauses: list[Clause] = []
    for page in sorted(pages):
        secs, found = extract_page(pages[page], page, revision)
        sections[page] = secs
        titles[page] = secs[0].title if secs else page
        clauses.extend(found)
    return _catalog_dict(revision, sections, clauses, titles)


def _catalog_dict(
    revision: str,
    sections: dict[str, list[Section]],
    clauses: list[Clause],
    titles: dict[str, str],
) -> dict[str, Any]:
    return {
        "revision": revision,
        "generated_by": "python -m spec_map extract",
        "pages": {
            page: {
                "title": titles[page],
                "sections": [
                    {"slug": s.slug, "title": s.title, "level": s.level, "line": s.line}
                    for s in secs
                ],
            }
            for page, secs in sections.items()
        },
        "clauses": [c.to_json() for c in clauses],
    }


def dump_catalog(catalog: dict[str, Any]) -> str:
    """The catalog as the exact text committed (stable key order, trailing newline)."""
    return json.dumps(catalog, indent=1, ensure_ascii=False) + "\n"


@dataclass(frozen=True, slots=True)
class Catalog:
    """The loaded catalog with lookups."""

    revision: str
    pages: dict[str, dict[str, Any]]
    """Page path -> ``{"title", "sections"}``, in page order."""
    clauses: dict[str, dict[str, Any]]
    """Clause id -> clause dict, in catalog order."""

    @property
    def sections(self) -> set[str]:
        """Every ``<revision>/<page>#<slug>`` of the catalog."""
        return {
            f"{self.revision}/{page}#{section['slug']}"
            for page, info in self.pages.items()
            for section in info["sections"]
        }

    def knows(self, ref: str) -> bool:
        """True if ``ref`` is a clause id of the catalog."""
        return ref in self.clauses

    def knows_reference(self, ref: str) -> bool:
        """True if ``ref`` is a clause id, a section reference or a page reference."""
        if ref in self.clauses or ref in self.sections:
            return True
        prefix = f"{self.revision}/"
        return ref.startswith(prefix) and ref[len(prefix) :] in self.pages

    def by_page(self) -> dict[str, list[dict[str, Any]]]:
        """Clauses grouped by page, pages in catalog order."""
        out: dict[str, list[dict[str, Any]]] = {page: [] for page in self.pages}
        for clause in self.clauses.values():
            out.setdefault(clause["page"], []).append(clause)
        return out


def load_catalog(path: Path = CATALOG_PATH) -> Catalog:
    """Load ``catalog.json``.

    Raises:
        FileNotFoundError: no catalog at ``path``.
        ValueError: the file is not a catalog.
    """
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or "clauses" not in data or "pages" not in data:
        raise ValueError(f"{path} is not a spec_map catalog")
    clauses = {c["id"]: c for c in data["clauses"]}
    return Catalog(revision=data["revision"], pages=data["pages"], clauses=clauses)

"""The committed clause catalog (``spec_map/clauses/*.json``): build, write, load, look up.

The catalog is generated from the spec text by :func:`build_catalog` and committed, so
the project (and its checks) work without ``/work/shared``.  A test regenerates it from
the pages vendored under ``tests/vendor/`` and fails if a committed file differs.

One file per revision of :data:`spec_map.revisions.REVISIONS`
(``clauses/2025-06-18.json``, ..., ``clauses/extensions.json``), each of this shape::

    {"revision": "2025-06-18",
     "generated_by": "python -m spec_map extract",
     "pages": {"basic/lifecycle": {"title": "Lifecycle",
                                   "sections": [{"slug", "title", "level", "line"}, ...]},
               ...},
     "clauses": [{"id", "page", "section", "section_title", "n", "keyword",
                  "keywords", "level", "binds", "binds_why", "text", "detail",
                  "line"}, ...]}

Ids start with the revision (``2025-06-18/basic/lifecycle#version-negotiation.2``), so
the files never share one.  :func:`load_catalog` reads the folder (every ``*.json`` in
it) or a single file of that shape (the tests' synthetic catalogs) into one
:class:`Catalog`; each clause dict it holds gains a ``"revision"`` key.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .extract import Clause, Section, extract_page, extract_revision
from .revisions import REVISION_PATTERN, REVISIONS

__all__ = [
    "CATALOG_DIR",
    "ID_PATTERN",
    "PACKAGE_DIR",
    "PRIMARY",
    "REPO_ROOT",
    "Catalog",
    "build_catalog",
    "build_catalogs",
    "catalog_from_pages",
    "dump_catalog",
    "find_spec_dir",
    "load_catalog",
    "page_of",
    "write_catalogs",
]

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent
CATALOG_DIR = PACKAGE_DIR / "clauses"
"""The committed catalog: one ``<revision>.json`` per catalogued revision."""
PRIMARY = "2025-06-18"
"""The revision :func:`find_spec_dir` looks for, and the default of :func:`build_catalog`."""

ID_PATTERN = re.compile(
    rf"(?P<rev>{REVISION_PATTERN})/(?P<page>[a-z0-9_/-]+)#(?P<slug>[\w-]+)(?:\.(?P<n>\d+))?"
)
"""A clause id (``rev/page#slug.n``) or a section reference (``rev/page#slug``)."""


def find_spec_dir() -> Path | None:
    """The spec folder: ``$MCP_SPEC_DIR``, else ``<repo>/../shared/spec``; None if absent."""
    env = os.environ.get("MCP_SPEC_DIR")
    candidates = [Path(env)] if env else []
    candidates.append(REPO_ROOT.parent / "shared" / "spec")
    for candidate in candidates:
        if (candidate / PRIMARY).is_dir():
            return candidate
    return None


def build_catalog(spec_dir: Path, revision: str = PRIMARY) -> dict[str, Any]:
    """Extract the catalog of ``spec_dir/<revision>`` as a JSON-ready dict (the shape
    of one ``clauses/<revision>.json``).

    Raises:
        FileNotFoundError: the revision folder is missing.
    """
    sections, clauses, titles = extract_revision(spec_dir / revision)
    return _catalog_dict(revision, sections, clauses, titles)


def build_catalogs(spec_dir: Path) -> dict[str, dict[str, Any]]:
    """The catalog of every revision of :data:`~spec_map.revisions.REVISIONS`, as
    ``{revision: catalog dict}`` in table order.

    Raises:
        FileNotFoundError: a revision folder is missing from ``spec_dir``.
    """
    return {r.name: build_catalog(spec_dir, r.name) for r in REVISIONS}


def write_catalogs(spec_dir: Path, out: Path = CATALOG_DIR) -> list[Path]:
    """Regenerate ``out/<revision>.json`` for every revision; remove any other ``*.json``
    there (a revision dropped from the table).  Deterministic: the same pages give the
    same bytes.

    Returns:
        The files written, in table order.

    Raises:
        FileNotFoundError: a revision folder is missing from ``spec_dir``.
    """
    catalogs = build_catalogs(spec_dir)  # all extracted before anything is written
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, catalog in catalogs.items():
        path = out / f"{name}.json"
        path.write_text(dump_catalog(catalog), encoding="utf-8")
        written.append(path)
    for stale in sorted(out.glob("*.json")):
        if stale not in written:
            stale.unlink()
    return written


def catalog_from_pages(pages: dict[str, str], revision: str = PRIMARY) -> dict[str, Any]:
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
    """The loaded catalog of one or more revisions, with lookups."""

    revisions: dict[str, dict[str, dict[str, Any]]]
    """Revision -> its pages (page path -> ``{"title", "sections"}``), in load order."""
    clauses: dict[str, dict[str, Any]]
    """Clause id -> clause dict (with ``"revision"``), revision by revision in catalog
    order."""

    @property
    def pages(self) -> dict[str, dict[str, Any]]:
        """Every page as ``<revision>/<page>`` -> ``{"title", "sections"}``."""
        return {
            f"{revision}/{page}": info
            for revision, pages in self.revisions.items()
            for page, info in pages.items()
        }

    @property
    def sections(self) -> set[str]:
        """Every ``<revision>/<page>#<slug>`` of the catalog."""
        return {
            f"{qualified}#{section['slug']}"
            for qualified, info in self.pages.items()
            for section in info["sections"]
        }

    def knows(self, ref: str) -> bool:
        """True if ``ref`` is a clause id of the catalog."""
        return ref in self.clauses

    def knows_reference(self, ref: str) -> bool:
        """True if ``ref`` is a clause id, a section reference or a page reference."""
        return ref in self.clauses or ref in self.sections or ref in self.pages

    def by_page(self, revision: str | None = None) -> dict[str, list[dict[str, Any]]]:
        """Clauses grouped by ``<revision>/<page>``, pages in catalog order; only
        ``revision``'s when given."""
        out: dict[str, list[dict[str, Any]]] = {
            f"{rev}/{page}": []
            for rev, pages in self.revisions.items()
            if revision in (None, rev)
            for page in pages
        }
        for clause in self.clauses.values():
            if revision in (None, clause["revision"]):
                out.setdefault(page_of(clause), []).append(clause)
        return out


def page_of(clause: dict[str, Any]) -> str:
    """A clause's page with its revision: ``2025-06-18/basic/lifecycle``."""
    return f"{clause['revision']}/{clause['page']}"


def _read(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("clauses"), list)
        or not isinstance(data.get("pages"), dict)
        or not isinstance(data.get("revision"), str)
    ):
        raise ValueError(f"{path} is not a spec_map catalog")
    return data


def load_catalog(path: Path = CATALOG_DIR) -> Catalog:
    """Load the catalog: a folder of ``<revision>.json`` files (revisions in the order
    of :data:`~spec_map.revisions.REVISIONS`, others after them by name), or one file.

    Raises:
        FileNotFoundError: nothing at ``path``, or a folder without ``*.json``.
        ValueError: a file is not a catalog, or two files hold one revision or one id.
    """
    if path.is_dir():
        order = {r.name: i for i, r in enumerate(REVISIONS)}
        files = sorted(path.glob("*.json"), key=lambda p: (order.get(p.stem, len(order)), p.stem))
        if not files:
            raise FileNotFoundError(f"no catalog files (*.json) in {path}")
    else:
        files = [path]
    revisions: dict[str, dict[str, dict[str, Any]]] = {}
    clauses: dict[str, dict[str, Any]] = {}
    for file in files:
        data = _read(file)
        revision = data["revision"]
        if revision in revisions:
            raise ValueError(f"{file}: revision {revision} is already loaded")
        revisions[revision] = data["pages"]
        for clause in data["clauses"]:
            if clause["id"] in clauses:
                raise ValueError(f"{file}: clause {clause['id']} is already loaded")
            clauses[clause["id"]] = {**clause, "revision": revision}
    return Catalog(revisions=revisions, clauses=clauses)

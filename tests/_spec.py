"""The vendored copies of the official MCP files that tests read (tests/vendor/).

Tests never read ``../shared``: everything they need from the MCP specification is
copied under ``tests/vendor/`` (see its README.md for the source, licence and how to
refresh it), so a fresh clone runs every schema test instead of skipping it.

Layout, the same as the spec folder's so one root serves every reader:

* ``schema/<revision>/schema.json``: the official JSON Schema of each revision;
* ``examples/<revision>/<Type>/*.json``: the official example messages (2026-07-28);
* ``2025-06-18/**.md``: the spec pages of the catalogued revision (``schema*.md`` left
  out), which spec_map extracts its clause catalog from.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
VENDOR = Path(__file__).resolve().parent / "vendor"
"""The vendored spec folder (tests/vendor)."""

REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
"""The revisions whose schema.json is vendored, oldest first."""


def spec_dir() -> Path:
    """The vendored spec folder, laid out as the spec folder is (see the module doc)."""
    return VENDOR


def schema_path(revision: str) -> Path:
    """The path of ``revision``'s vendored schema.json.

    Raises:
        FileNotFoundError: ``revision`` is not one of :data:`REVISIONS`.
    """
    path = VENDOR / "schema" / revision / "schema.json"
    if not path.is_file():
        raise FileNotFoundError(f"no vendored schema for revision {revision!r} at {path}")
    return path


@cache
def _schema_text(revision: str) -> str:
    return schema_path(revision).read_text(encoding="utf-8")


def schema_for(revision: str) -> Any:
    """The official JSON Schema of ``revision`` (a fresh dict on every call, so callers
    may change it).

    Raises:
        FileNotFoundError: ``revision`` is not vendored.
    """
    return json.loads(_schema_text(revision))


def examples_dir(revision: str = "2026-07-28") -> Path:
    """The folder of official example messages of ``revision``: one sub-folder per
    schema type, one JSON document per file."""
    return VENDOR / "examples" / revision

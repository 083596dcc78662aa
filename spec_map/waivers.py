"""Read ``waivers.toml``: clauses deliberately not implemented, each with a reason.

Format (TOML, read with :mod:`tomllib`)::

    [[waiver]]
    ids = ["2025-06-18/server/tools#user-interaction-model.1"]   # or: id = "..."
    reason = "What the host application must do instead, and why the library cannot."

    [[waiver]]
    page = "2025-06-18/basic/authorization"   # every clause of one page of one revision
    except = ["2025-06-18/basic/authorization#overview.4"]   # ... but these
    reason = "..."

Every waiver needs a non-empty ``reason`` and at least one of ``id``, ``ids``, ``page``.
A page is named with its revision, as ids are: the catalog holds every revision, and a
page waiver reaches no other revision's copy of the page.  ``except`` (only beside
``page``) lists clauses of that page the waiver leaves out, because the project now does
them.  An id or page the catalog does not know, an unqualified page, and an ``except``
id outside its page are errors (reported by the checker).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from .catalog import Catalog, page_of

__all__ = ["Waiver", "WaiverError", "expand", "load_waivers"]


class WaiverError(ValueError):
    """``waivers.toml`` is malformed (the message names the entry)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Waiver:
    """One ``[[waiver]]`` entry."""

    ids: tuple[str, ...]
    """Clause ids named one by one."""
    page: str | None
    """A page (``<revision>/<page path>``) whose every clause is waived, or None."""
    exceptions: tuple[str, ...] = ()
    """Clause ids of :attr:`page` left out of the waiver (``except``)."""
    reason: str
    """Why the clauses are not implemented."""
    index: int
    """1-based position of the entry in the file (for messages)."""


def load_waivers(path: Path) -> list[Waiver]:
    """Parse ``waivers.toml``; a missing file means no waivers.

    Raises:
        WaiverError: the file is not valid TOML or an entry is malformed.
    """
    if not path.exists():
        return []
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise WaiverError(f"{path}: {exc}") from exc
    entries = data.get("waiver", [])
    if not isinstance(entries, list):
        raise WaiverError(f"{path}: 'waiver' must be an array of tables ([[waiver]])")
    out = []
    for index, entry in enumerate(entries, start=1):
        where = f"{path}: waiver #{index}"
        if not isinstance(entry, dict):
            raise WaiverError(f"{where}: not a table")
        unknown = set(entry) - {"id", "ids", "page", "except", "reason"}
        if unknown:
            raise WaiverError(f"{where}: unknown keys {sorted(unknown)}")
        reason = entry.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise WaiverError(f"{where}: needs a non-empty 'reason'")
        ids = entry.get("ids", [])
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise WaiverError(f"{where}: 'ids' must be a list of strings")
        if "id" in entry:
            if not isinstance(entry["id"], str):
                raise WaiverError(f"{where}: 'id' must be a string")
            ids = [entry["id"], *ids]
        page = entry.get("page")
        if page is not None and not isinstance(page, str):
            raise WaiverError(f"{where}: 'page' must be a string")
        if not ids and page is None:
            raise WaiverError(f"{where}: needs 'id', 'ids' or 'page'")
        exceptions = entry.get("except", [])
        if not isinstance(exceptions, list) or not all(isinstance(i, str) for i in exceptions):
            raise WaiverError(f"{where}: 'except' must be a list of strings")
        if exceptions and page is None:
            raise WaiverError(f"{where}: 'except' needs a 'page'")
        out.append(
            Waiver(
                ids=tuple(ids),
                page=page,
                exceptions=tuple(exceptions),
                reason=reason.strip(),
                index=index,
            )
        )
    return out


def expand(waivers: list[Waiver], catalog: Catalog) -> tuple[dict[str, str], list[str]]:
    """Map every waived clause id to its reason.

    Returns:
        ``(reasons by clause id, errors)``; errors name unknown ids and pages, pages
        given without their revision, and ``except`` ids that are not clauses of the
        waiver's page.
    """
    reasons: dict[str, str] = {}
    errors: list[str] = []
    pages = catalog.pages
    for waiver in waivers:
        where = f"waivers.toml: waiver #{waiver.index}"
        if waiver.page is not None:
            if waiver.page not in pages:
                hint = ""
                qualified = [p for p in pages if p.split("/", 1)[1] == waiver.page]
                if qualified:
                    hint = f" (name its revision: {', '.join(repr(p) for p in qualified)})"
                errors.append(f"{where}: unknown page {waiver.page!r}{hint}")
            of_page = [
                cid for cid, clause in catalog.clauses.items() if page_of(clause) == waiver.page
            ]
            for cid in waiver.exceptions:
                if cid not in of_page:
                    errors.append(f"{where}: 'except' names {cid!r}, not a clause of {waiver.page}")
            for cid in of_page:
                if cid not in waiver.exceptions:
                    reasons.setdefault(cid, waiver.reason)
        for cid in waiver.ids:
            if cid not in catalog.clauses:
                errors.append(f"{where}: unknown clause id {cid!r}")
            else:
                reasons[cid] = waiver.reason
    return reasons, errors

"""Read ``waivers.toml``: clauses deliberately not implemented, each with a reason.

Format (TOML, read with :mod:`tomllib`)::

    [[waiver]]
    ids = ["2025-06-18/server/tools#user-interaction-model.1"]   # or: id = "..."
    reason = "What the host application must do instead, and why the library cannot."

    [[waiver]]
    page = "basic/authorization"      # every clause of one page
    reason = "..."

Every waiver needs a non-empty ``reason`` and at least one of ``id``, ``ids``, ``page``.
An id or page the catalog does not know is an error (reported by the checker).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from .catalog import Catalog

__all__ = ["Waiver", "WaiverError", "expand", "load_waivers"]


class WaiverError(ValueError):
    """``waivers.toml`` is malformed (the message names the entry)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Waiver:
    """One ``[[waiver]]`` entry."""

    ids: tuple[str, ...]
    """Clause ids named one by one."""
    page: str | None
    """A page path whose every clause is waived, or None."""
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
        unknown = set(entry) - {"id", "ids", "page", "reason"}
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
        out.append(Waiver(ids=tuple(ids), page=page, reason=reason.strip(), index=index))
    return out


def expand(waivers: list[Waiver], catalog: Catalog) -> tuple[dict[str, str], list[str]]:
    """Map every waived clause id to its reason.

    Returns:
        ``(reasons by clause id, errors)``; errors name unknown ids and pages.
    """
    reasons: dict[str, str] = {}
    errors: list[str] = []
    for waiver in waivers:
        if waiver.page is not None:
            if waiver.page not in catalog.pages:
                errors.append(f"waivers.toml: waiver #{waiver.index}: unknown page {waiver.page!r}")
            for cid, clause in catalog.clauses.items():
                if clause["page"] == waiver.page:
                    reasons.setdefault(cid, waiver.reason)
        for cid in waiver.ids:
            if cid not in catalog.clauses:
                errors.append(f"waivers.toml: waiver #{waiver.index}: unknown clause id {cid!r}")
            else:
                reasons[cid] = waiver.reason
    return reasons, errors

"""Per module: the clauses its ``# Spec:`` comments cite (``python -m spec_map modules``).

A module's docstring can point here instead of repeating the list; the output is
regenerated from the code, so it never goes stale.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .check import Analysis

__all__ = ["ModuleCites", "format_modules", "modules_of"]


@dataclass(slots=True)
class ModuleCites:
    """The clauses one module cites."""

    module: str
    """Dotted name (``mcp_ref._state``)."""
    path: str
    """File path relative to the repository root."""
    lines: dict[str, list[int]] = field(default_factory=dict)
    """Clause id -> the lines citing it, in first-cited order."""


def _module_name(path: str) -> str:
    name = path.removesuffix(".py").replace("/", ".")
    return name.removesuffix(".__init__")


def modules_of(analysis: Analysis) -> list[ModuleCites]:
    """Group the code citations of an analysis by module, sorted by module name."""
    out: dict[str, ModuleCites] = {}
    for cite in analysis.citations:
        if cite.kind != "code":
            continue
        entry = out.setdefault(cite.path, ModuleCites(_module_name(cite.path), cite.path))
        entry.lines.setdefault(cite.ref, []).append(cite.line)
    return sorted(out.values(), key=lambda m: m.module)


def format_modules(modules: list[ModuleCites], analysis: Analysis) -> str:
    """Text listing: one block per module, one line per clause (keyword, lines, text)."""
    blocks = []
    for module in modules:
        lines = [f"{module.module} ({module.path}): {len(module.lines)} clause(s)"]
        for cid, where in module.lines.items():
            clause = analysis.catalog.clauses.get(cid)
            keyword = clause["keyword"] if clause else "UNKNOWN"
            text = clause["text"] if clause else "(not in the catalog)"
            if len(text) > 70:
                text = text[:67] + "..."
            at = ", ".join(str(n) for n in where)
            lines.append(f"  {cid}  {keyword}  (line {at})\n      {text}")
        blocks.append("\n".join(lines))
    if not blocks:
        return "no '# Spec:' comments found"
    return "\n\n".join(blocks)

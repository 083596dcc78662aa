"""Draw the lifecycle state diagram from the table in ``mcp_ref/_state.py``.

Theory of operation
-------------------
``mcp_ref._state.TRANSITIONS[role][(state, direction, kind)] -> next state`` is the one
truth about the handshake era's lifecycle, and
``mcp_ref._state_modern.MODERN_TRANSITIONS`` about the modern era's (2026-07-28); the
picture holds both, one after the other.  From each we draw, per role, one lane:

* the states that have a way out, left to right in :class:`State` order, as boxes;
  each box lists its self-loops (what may be sent / received without changing state);
* an arrow for every change of state, labelled ``send <kind>`` / ``recv <kind>``:
  to the next box as a straight arrow, otherwise as an arc above the boxes;
* the states with no way out (``CLOSED``) in a second row, each reached by a line from
  every box; when all those lines carry the same label it is written once.

The layout is computed, not hand-placed, so a change to the table changes the picture.
Output is a self-contained SVG (no scripts, no external fonts) and a Markdown page with
the same table in text.  Both are committed (``lifecycle.svg``, ``lifecycle.md``); a
test fails when they are stale: run ``python -m spec_map diagram``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import Enum
from html import escape
from pathlib import Path
from typing import Any

from .catalog import PACKAGE_DIR

__all__ = ["DIAGRAM_MD", "DIAGRAM_SVG", "Lane", "lanes", "render_markdown", "render_svg"]

DIAGRAM_SVG = PACKAGE_DIR / "lifecycle.svg"
DIAGRAM_MD = PACKAGE_DIR / "lifecycle.md"

_CHAR_W = 6.7  # width of one character of 11px monospace, in px
_BOX_H = 58
_TOP = 30
_LINE = 13


def _name(member: Any) -> str:
    """A readable name for an enum member (its value when it is a string)."""
    if isinstance(member, Enum):
        value = member.value
        return str(value) if isinstance(value, str) else member.name
    return str(member)


_SHORT = {
    "request": "req",
    "notification": "notif",
    "response": "resp",
}


def _short(kind: str) -> str:
    return _SHORT.get(kind, kind)


def _dir(direction: Any) -> str:
    name = _name(direction).lower()
    return "send" if name.startswith("send") else "recv"


@dataclass(frozen=True, slots=True)
class Lane:
    """One role's diagram, as data.

    ``states`` are the state names in table order; ``loops[state]`` maps ``send``/``recv``
    to the kinds allowed without a change of state; ``edges[(src, dst)]`` lists the
    labels of the changes ``src -> dst``; ``era`` names the table's era when the
    picture holds both (``""`` otherwise).
    """

    role: str
    states: tuple[str, ...]
    loops: dict[str, dict[str, list[str]]]
    edges: dict[tuple[str, str], list[str]]
    era: str = ""


def lanes(
    transitions: Mapping[Any, Mapping[tuple[Any, Any, Any], Any]] | None = None,
) -> list[Lane]:
    """Turn the transition table into one :class:`Lane` per role.

    Args:
        transitions: ``{role: {(state, direction, kind): next_state}}``; by default
            ``mcp_ref._state.TRANSITIONS``.
    """
    if transitions is None:
        from mcp_ref._state import TRANSITIONS

        transitions = TRANSITIONS
    out = []
    for role, table in transitions.items():
        order: list[Any] = []
        for state, _direction, _kind in table:
            if state not in order:
                order.append(state)
        for new in table.values():
            if new not in order:
                order.append(new)
        if order and isinstance(order[0], Enum):
            members = list(type(order[0]))
            order.sort(key=members.index)
        states = tuple(_name(s) for s in order)
        loops: dict[str, dict[str, list[str]]] = {s: {"send": [], "recv": []} for s in states}
        edges: dict[tuple[str, str], list[str]] = {}
        for (state, direction, kind), new in table.items():
            src, dst, d, k = _name(state), _name(new), _dir(direction), _name(kind)
            if src == dst:
                loops[src][d].append(k)
            else:
                edges.setdefault((src, dst), []).append(f"{d} {k}")
        for key, labels in edges.items():
            edges[key] = _merge_directions(labels)
        out.append(Lane(role=_name(role), states=states, loops=loops, edges=edges))
    return out


def _both_eras(
    transitions: Mapping[Any, Mapping[tuple[Any, Any, Any], Any]] | None,
) -> list[Lane]:
    """The lanes to draw: of ``transitions`` when given; by default both tables, the
    handshake era's (``mcp_ref._state``) then the modern era's (``mcp_ref._state_modern``)."""
    if transitions is not None:
        return lanes(transitions)
    from mcp_ref._state import TRANSITIONS
    from mcp_ref._state_modern import MODERN_TRANSITIONS

    handshake = [replace(lane, era="handshake era") for lane in lanes(TRANSITIONS)]
    modern = [replace(lane, era="modern era, 2026-07-28") for lane in lanes(MODERN_TRANSITIONS)]
    return handshake + modern


def _merge_directions(labels: list[str]) -> list[str]:
    """``["send close", "recv close"]`` -> ``["send/recv close"]``."""
    merged: list[str] = []
    for label in labels:
        d, k = label.split(" ", 1)
        other = ("recv" if d == "send" else "send") + " " + k
        if other in labels:
            both = f"send/recv {k}"
            if both not in merged:
                merged.append(both)
        else:
            merged.append(label)
    return merged


def _text_w(text: str) -> float:
    return len(text) * _CHAR_W


def _loop_lines(loops: dict[str, list[str]]) -> list[str]:
    return [f"{d}: " + " ".join(_short(k) for k in kinds) for d, kinds in loops.items() if kinds]


@dataclass(slots=True)
class _Box:
    name: str
    x: float
    y: float
    w: float
    lines: list[str]

    @property
    def cx(self) -> float:
        return self.x + self.w / 2


def _lane_svg(lane: Lane, top: float) -> tuple[list[str], float, float]:
    """SVG elements of one lane; returns ``(elements, width, height)``."""
    sinks = [s for s in lane.states if not any(src == s for (src, _dst) in lane.edges) and s != ""]
    row = [s for s in lane.states if s not in sinks]
    boxes: dict[str, _Box] = {}
    x = 20.0
    arcs = [
        (src, dst)
        for (src, dst) in lane.edges
        if src in row and dst in row and row.index(dst) != row.index(src) + 1
    ]
    arc_room = 22 + 30 * len(arcs) + _LINE * sum(len(lane.edges[a]) for a in arcs)
    y = top + _TOP + arc_room
    for index, state in enumerate(row):
        lines = _loop_lines(lane.loops[state])
        w = max(150.0, _text_w(state) + 24, *(_text_w(line) + 16 for line in lines))
        boxes[state] = _Box(state, x, y, w, lines)
        gap = 70.0
        if index + 1 < len(row):
            labels = lane.edges.get((state, row[index + 1]), [])
            if labels:
                gap = max(gap, max(_text_w(label) for label in labels) + 24)
        x += w + gap
    width = x - 70.0 + 20
    el: list[str] = [
        f'<text x="20" y="{top + 18}" class="lc-lane">{escape(lane.role)} '
        f"(our_role = {escape(lane.role.upper())}){escape(', ' + lane.era if lane.era else '')}"
        "</text>"
    ]
    box_h = _BOX_H if max((len(b.lines) for b in boxes.values()), default=0) <= 2 else 72
    for box in boxes.values():
        el.append(
            f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" height="{box_h}" '
            'rx="6" class="lc-state"/>'
        )
        el.append(
            f'<text x="{box.cx:.1f}" y="{box.y + 17:.1f}" class="lc-name">{escape(box.name)}</text>'
        )
        for i, line in enumerate(box.lines):
            el.append(
                f'<text x="{box.cx:.1f}" y="{box.y + 34 + i * _LINE:.1f}" class="lc-loop">'
                f"{escape(line)}</text>"
            )
    # Straight arrows between neighbours.
    for index, state in enumerate(row[:-1]):
        nxt = row[index + 1]
        labels = lane.edges.get((state, nxt), [])
        if not labels:
            continue
        a, b = boxes[state], boxes[nxt]
        ay = a.y + box_h / 2
        el.append(
            f'<line x1="{a.x + a.w:.1f}" y1="{ay:.1f}" x2="{b.x - 2:.1f}" y2="{ay:.1f}" '
            'class="lc-edge" marker-end="url(#lc-arrow)"/>'
        )
        mid = (a.x + a.w + b.x) / 2
        for i, label in enumerate(reversed(labels)):
            el.append(
                f'<text x="{mid:.1f}" y="{ay - 6 - i * _LINE:.1f}" class="lc-label">'
                f"{escape(label)}</text>"
            )
    # Arcs above the row for every other change between row states.
    for level, (src, dst) in enumerate(arcs, start=1):
        a, b = boxes[src], boxes[dst]
        x1 = a.cx + (12 if a.cx > b.cx else -12)
        x2 = b.cx + (12 if b.cx > a.cx else -12)
        lift = 24 + 30 * level + _LINE * len(lane.edges[(src, dst)])
        el.append(
            f'<path d="M {x1:.1f} {a.y:.1f} C {x1:.1f} {a.y - lift:.1f} {x2:.1f} '
            f'{b.y - lift:.1f} {x2:.1f} {b.y - 2:.1f}" class="lc-edge" marker-end="url(#lc-arrow)"/>'
        )
        apex = a.y - lift * 0.75
        for i, label in enumerate(lane.edges[(src, dst)]):
            el.append(
                f'<text x="{(x1 + x2) / 2:.1f}" y="{apex - 4 - i * _LINE:.1f}" '
                f'class="lc-label">{escape(label)}</text>'
            )
    bottom = y + box_h
    # Sinks in a second row, centred, reached from every box that leads there.
    if sinks:
        sink_y = bottom + 70
        total = sum(max(150.0, _text_w(s) + 24) for s in sinks) + 60 * (len(sinks) - 1)
        sx = max(20.0, (width - total) / 2)
        for sink in sinks:
            w = max(150.0, _text_w(sink) + 24)
            box = _Box(sink, sx, sink_y, w, [])
            el.append(
                f'<rect x="{sx:.1f}" y="{sink_y:.1f}" width="{w:.1f}" height="34" rx="6" '
                'class="lc-state lc-sink"/>'
            )
            el.append(
                f'<text x="{box.cx:.1f}" y="{sink_y + 21:.1f}" class="lc-name">{escape(sink)}</text>'
            )
            sources = [src for (src, dst) in lane.edges if dst == sink and src in boxes]
            label_sets = {tuple(lane.edges[(src, sink)]) for src in sources}
            for i, src in enumerate(sources):
                a = boxes[src]
                tx = box.x + w * (i + 1) / (len(sources) + 1)
                el.append(
                    f'<line x1="{a.cx:.1f}" y1="{bottom:.1f}" x2="{tx:.1f}" y2="{sink_y - 2:.1f}" '
                    'class="lc-edge lc-faint" marker-end="url(#lc-arrow)"/>'
                )
                if len(label_sets) > 1:
                    el.append(
                        f'<text x="{a.cx:.1f}" y="{bottom + 14:.1f}" class="lc-label">'
                        f"{escape(', '.join(lane.edges[(src, sink)]))}</text>"
                    )
            if len(label_sets) == 1:
                (common,) = label_sets
                el.append(
                    f'<text x="{sx + w + 10:.1f}" y="{sink_y + 21:.1f}" class="lc-label lc-start">'
                    f"{escape(', '.join(common))} (from every state above)</text>"
                )
            sx += w + 60
        bottom = sink_y + 34
    return el, width, bottom - top + 16


_STYLE = """
  .lc-lane { font: bold 14px sans-serif; fill: #222; }
  .lc-name { font: bold 12px monospace; fill: #111; text-anchor: middle; }
  .lc-loop { font: 11px monospace; fill: #555; text-anchor: middle; }
  .lc-label { font: 11px monospace; fill: #1a4d8f; text-anchor: middle; }
  .lc-label.lc-start { text-anchor: start; }
  .lc-state { fill: #f4f7fb; stroke: #4a6a8a; stroke-width: 1.2; }
  .lc-sink { fill: #eeeeee; }
  .lc-edge { fill: none; stroke: #1a4d8f; stroke-width: 1.3; }
  .lc-faint { stroke: #8899aa; stroke-dasharray: 4 3; }
  .lc-legend { font: 11px sans-serif; fill: #444; }
"""


def render_svg(
    transitions: Mapping[Any, Mapping[tuple[Any, Any, Any], Any]] | None = None,
) -> str:
    """The lifecycle diagram as a standalone SVG document (deterministic text)."""
    parts: list[str] = []
    top = 0.0
    width = 400.0
    for lane in _both_eras(transitions):
        el, w, h = _lane_svg(lane, top)
        parts.extend(el)
        width = max(width, w)
        top += h + 10
    legend = (
        "Boxes list self-loops: what may be sent (send:) or received (recv:) without a "
        "change of state; req/notif/resp = any other request/notification/response."
    )
    parts.append(f'<text x="20" y="{top + 8:.1f}" class="lc-legend">{escape(legend)}</text>')
    parts.append(
        f'<text x="20" y="{top + 24:.1f}" class="lc-legend">Drawn by python -m spec_map diagram '
        "from the tables of mcp_ref/_state.py and _state_modern.py.</text>"
    )
    height = top + 36
    width = max(width, _text_w(legend) * 0.95 + 40)
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" '
        'aria-label="MCP lifecycle state diagram, per role">'
    )
    defs = (
        '<defs><marker id="lc-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" '
        'fill="#1a4d8f"/></marker></defs>'
    )
    return "\n".join([head, f"<style>{_STYLE}</style>", defs, *parts, "</svg>"]) + "\n"


def render_markdown(
    transitions: Mapping[Any, Mapping[tuple[Any, Any, Any], Any]] | None = None,
) -> str:
    """The lifecycle as a Markdown page: the SVG plus the table in text, per role."""
    out = [
        "# MCP lifecycle, as mcp_ref implements it",
        "",
        "Generated by `python -m spec_map diagram` from `TRANSITIONS` in",
        "`mcp_ref/_state.py` (the handshake era) and `MODERN_TRANSITIONS` in",
        "`mcp_ref/_state_modern.py` (the modern era, 2026-07-28); do not edit (a test",
        "fails when this file is stale).",
        "Spec: 2025-06-18/basic/lifecycle, 2026-07-28/basic/versioning.",
        "",
        "![lifecycle state diagram](lifecycle.svg)",
        "",
    ]
    for lane in _both_eras(transitions):
        title = f"{lane.role}, {lane.era}" if lane.era else lane.role
        out += [f"## {title}", "", "| state | send | receive |", "| --- | --- | --- |"]
        for state in lane.states:
            cells = []
            for d in ("send", "recv"):
                items = list(lane.loops[state][d])
                for (src, dst), labels in lane.edges.items():
                    if src != state:
                        continue
                    for label in labels:
                        ld, kind = label.split(" ", 1)
                        if d in ld.split("/"):
                            items.append(f"{kind} -> **{dst}**")
                cells.append(", ".join(items) if items else "-")
            out.append(f"| {state} | {cells[0]} | {cells[1]} |")
        out.append("")
    out.append(
        "A kind without an arrow keeps the state; anything not listed is refused "
        "(LocalProtocolError on send, RemoteProtocolError on receive)."
    )
    return "\n".join(out) + "\n"


def write(folder: Path = PACKAGE_DIR) -> tuple[Path, Path]:
    """Write ``lifecycle.svg`` and ``lifecycle.md`` into ``folder``."""
    svg, md = folder / "lifecycle.svg", folder / "lifecycle.md"
    svg.write_text(render_svg(), encoding="utf-8")
    md.write_text(render_markdown(), encoding="utf-8")
    return svg, md

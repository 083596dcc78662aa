"""The spec_map report's lifecycle diagram fits the window (spec_map/report.py).

The diagram is about 1,650 px wide; the report's text column is 1,150 px.  Drawn at
its own size it was cut off at the right edge of a 1,400 px window.  It must shrink to
the width it is given, keeping its proportions, which needs the inline ``<svg>`` to
carry a ``viewBox`` and the report's CSS to bound its width with an automatic height.
(Checked by eye with headless Chromium at 1,400 px; this test keeps what made it work.)
"""

from __future__ import annotations

import re
from pathlib import Path

from spec_map import cli
from spec_map.catalog import REPO_ROOT, load_catalog
from spec_map.check import analyze
from spec_map.report import write_report


def _rules(css: str) -> dict[str, str]:
    """``{selector: declarations}`` of a flat stylesheet (comments dropped)."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    return {sel.strip(): body for sel, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css)}


def test_lifecycle_diagram_scales_to_the_window(tmp_path: Path) -> None:
    analysis = analyze(
        root=REPO_ROOT,
        catalog=load_catalog(),
        waivers_path=Path(cli.WAIVERS_PATH),
        results_path=None,
    )
    html = write_report(analysis, tmp_path / "out", root=REPO_ROOT).read_text(encoding="utf-8")
    style = html.split("<style>", 1)[1].split("</style>", 1)[0]
    rules = _rules(style)
    svg_rule = re.sub(r"\s+", " ", rules[".diagram svg"])
    assert "max-width: 100%" in svg_rule
    assert "height: auto" in svg_rule
    diagram = html.split('<div class="diagram">', 1)[1]
    open_tag = diagram[: diagram.index(">")]
    assert open_tag.startswith("<svg") and "viewBox=" in open_tag

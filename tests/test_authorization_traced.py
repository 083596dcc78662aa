"""Every authorization page of every revision is traced: each MUST is tagged and tested,
or waived one clause at a time.

``python -m spec_map check`` counts a clause of a page outside a revision's scope only
once something cites it, and the authorization pages are outside every revision's
scope: an uncited MUST there would go unnoticed.  This test closes that gap for them
(and for 2025-06-18's security best practices): every MUST that binds a protocol
library is done (a ``# Spec:`` tag under mcp_ref/ and a test marker; whether the test
passed is ``check``'s business) or waived, and no page waiver hides any.
"""

from __future__ import annotations

from pathlib import Path

from spec_map import cli
from spec_map.catalog import REPO_ROOT, load_catalog
from spec_map.check import analyze
from spec_map.waivers import load_waivers


def _traced_page(revision: str, page: str) -> bool:
    return revision != "extensions" and (
        page.startswith("basic/authorization") or page == "basic/security_best_practices"
    )


def test_every_authorization_must_is_done_or_waived_one_by_one() -> None:
    catalog = load_catalog()
    analysis = analyze(
        root=REPO_ROOT,
        catalog=catalog,
        waivers_path=Path(cli.WAIVERS_PATH),
        results_path=None,
    )
    assert analysis.errors == []
    pages = set()
    untraced = []
    for status in analysis.statuses.values():
        clause = status.clause
        if not _traced_page(status.revision, clause["page"]):
            continue
        if status.level != "MUST" or not status.library:
            continue
        pages.add(f"{status.revision}/{clause['page']}")
        if not status.satisfied:
            untraced.append(f"{status.id} ({status.status})")
    assert untraced == []
    assert {
        "2025-03-26/basic/authorization",
        "2025-06-18/basic/authorization",
        "2025-06-18/basic/security_best_practices",
        "2025-11-25/basic/authorization",
        "2026-07-28/basic/authorization/index",
        "2026-07-28/basic/authorization/security-considerations",
    } <= pages
    assert all(w.page is None for w in load_waivers(Path(cli.WAIVERS_PATH)))

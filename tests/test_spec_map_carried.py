"""spec_map's carried-over clauses (spec_map/carried.py), the 2025-11-25 / 2026-07-28
side-by-side table (spec_map/side.py) and the list of what is left (spec_map/openlist.py).

A later revision's clause counts as done *through* an earlier, done clause only when
``carried.toml`` lists it, the two sentences are the same once normalised, nothing in it
is about the handshake era's own machinery, and the source is done; otherwise it stays
as it would be without the table.  The synthetic revisions are 2099-01-01 (older) and
2099-02-02 (newer), so that no id here is taken for a real citation.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from spec_map import cli
from spec_map.carried import (
    HANDSHAKE_ERA,
    Carried,
    CarriedError,
    CarriedTable,
    apply,
    candidates,
    format_candidates,
    load_carried,
    normalised,
    same_handshake_era,
)
from spec_map.catalog import CATALOG_DIR, catalog_from_pages, dump_catalog, load_catalog
from spec_map.check import Analysis, analyze, format_open
from spec_map.openlist import render_open
from spec_map.report import render_report
from spec_map.revisions import CITABLE, REQUIRED, Revision
from spec_map.side import PAGE_MAP, SIDE_BY_SIDE, format_pairs, pairs

OLD, NEW = "2099-01-01", "2099-02-02"
PAGES = {
    OLD: {
        "basic/lifecycle": "# Rules\n\n## Ids\n\nRequest ids **MUST** be strings or integers.\n"
        "The client **MUST** send `initialize` first.\n"
        "Progress **MUST** increase.\n",
    },
    NEW: {
        # Same sentences (one with other markup and line breaks), one changed.
        "basic/lifecycle": "# Rules\n\n## Ids\n\nRequest ids **MUST** be *strings*\n or integers.\n"
        "The client **MUST** send `initialize` first.\n"
        "Progress **MUST** increase strictly.\n",
    },
}
TABLE = (
    Revision(OLD, REQUIRED, ("basic/lifecycle",), "synthetic"),
    Revision(NEW, CITABLE, ("basic/lifecycle",), "synthetic"),
)
IDS, INIT, PROGRESS = (f"basic/lifecycle#ids.{n}" for n in (1, 2, 3))


def _tree(
    tmp_path: Path,
    carried: str,
    *,
    source_passes: bool = True,
    names: tuple[str, str] = (OLD, NEW),
) -> Analysis:
    """Both revisions catalogued (under ``names``, older first); every clause of the
    older one tagged in code and cited by one test, which passed (or failed:
    ``source_passes``); nothing of the newer one cited."""
    folder = tmp_path / "clauses"
    folder.mkdir()
    renamed = dict(zip((OLD, NEW), names, strict=True))
    catalogs = {
        renamed[rev]: catalog_from_pages(pages, renamed[rev]) for rev, pages in PAGES.items()
    }
    for rev, catalog in catalogs.items():
        (folder / f"{rev}.json").write_text(dump_catalog(catalog), encoding="utf-8")
    old = [c for c in catalogs[names[0]]["clauses"]]
    code = "".join(f'# Spec: {c["id"]}\n# "{c["text"]}"\n' for c in old)
    (tmp_path / "mcp_ref").mkdir()
    (tmp_path / "mcp_ref" / "m.py").write_text(code, encoding="utf-8")
    (tmp_path / "tests").mkdir()
    marker = ", ".join(f'"{c["id"]}"' for c in old)
    test = f"import pytest\n\n@pytest.mark.spec({marker})\ndef test_x(): ...\n"
    (tmp_path / "tests" / "test_m.py").write_text(test, encoding="utf-8")
    outcome = "passed" if source_passes else "failed"
    results = {outcome: {c["id"]: ["tests/test_m.py::test_x"] for c in old}}
    (tmp_path / "results.json").write_text(json.dumps(results), encoding="utf-8")
    (tmp_path / "carried.toml").write_text(textwrap.dedent(carried), encoding="utf-8")
    return analyze(
        root=tmp_path,
        catalog=load_catalog(folder),
        waivers_path=tmp_path / "waivers.toml",
        results_path=tmp_path / "results.json",
        revisions=tuple(Revision(renamed[r.name], r.setting, r.scope, r.why) for r in TABLE),
        carried_path=tmp_path / "carried.toml",
    )


def _entry(cid: str, via: str | None = None, shared: str = "the one envelope reader") -> str:
    return (
        f'[[carried]]\nid = "{NEW}/{cid}"\nvia = "{via or f"{OLD}/{cid}"}"\nshared = "{shared}"\n'
    )


def test_a_listed_identical_clause_of_a_done_source_is_carried_not_done(tmp_path: Path) -> None:
    analysis = _tree(tmp_path, _entry(IDS))
    assert analysis.errors == []
    status = analysis.statuses[f"{NEW}/{IDS}"]
    assert not status.implemented and not status.tested
    assert status.status == "carried" and status.done_via == f"{OLD}/{IDS}"
    assert status.satisfied and status not in analysis.open_in(NEW)
    (row,) = [r for r in analysis.revision_summaries() if r.revision == NEW]
    assert (row.required, row.done, row.carried, row.open) == (3, 0, 1, 2)
    (page,) = analysis.summaries(NEW)
    assert (page.must, page.carried, page.open) == (3, 1, 2)
    # An unlisted identical clause is not carried: the table is a review, not a rule of
    # thumb.
    assert analysis.statuses[f"{NEW}/{INIT}"].status == "open"


def test_a_carried_clause_whose_source_is_not_done_stays_open(tmp_path: Path) -> None:
    analysis = _tree(tmp_path, _entry(IDS), source_passes=False)
    assert analysis.errors == []
    source = analysis.statuses[f"{OLD}/{IDS}"]
    assert source.status == "untested"  # tagged, but its test failed
    status = analysis.statuses[f"{NEW}/{IDS}"]
    assert status.carried is not None and status.done_via is None
    assert status.status == "open" and not status.satisfied
    assert status in analysis.open_in(NEW)
    (row,) = [r for r in analysis.revision_summaries() if r.revision == NEW]
    assert (row.carried, row.open) == (0, 3)
    assert f"carried from {OLD}/{IDS}, which is untested" in format_open([status])
    assert f"carried from `{OLD}/{IDS}`, which is untested" in render_open(analysis, NEW)


def test_a_waived_source_carries_nothing(tmp_path: Path) -> None:
    (tmp_path / "waivers.toml").write_text(
        f'[[waiver]]\nid = "{OLD}/{IDS}"\nreason = "synthetic: the peer does it"\n',
        encoding="utf-8",
    )
    analysis = _tree(tmp_path, _entry(IDS))
    assert analysis.statuses[f"{OLD}/{IDS}"].status == "waived"
    assert analysis.statuses[f"{NEW}/{IDS}"].status == "open"


@pytest.mark.parametrize(
    ("carried", "error"),
    [
        # The handshake's machinery is never carried, whatever a reviewer wrote.
        (_entry(INIT), "touches 'initiali'"),
        # The sentence changed: it is a new rule.
        (_entry(PROGRESS), "its text differs"),
        # A source of the same or a later revision.
        (_entry(IDS, via=f"{NEW}/{IDS}"), "not of an earlier revision"),
        (_entry(IDS, via=f"{OLD}/basic/lifecycle#ids.9"), "unknown clause id"),
        (_entry(IDS) + _entry(IDS), "listed twice"),
    ],
)
def test_entries_breaking_the_rule_are_errors_and_carry_nothing(
    tmp_path: Path, carried: str, error: str
) -> None:
    analysis = _tree(tmp_path, carried)
    assert any(error in e for e in analysis.errors), analysis.errors
    assert not analysis.ok
    assert all(s.status != "carried" for s in analysis.statuses.values())


@pytest.mark.parametrize(
    "text",
    [
        f'[[carried]]\nid = "{NEW}/{IDS}"\nvia = "{OLD}/{IDS}"\nshared = ""\n',  # unreviewed
        f'[[carried]]\nid = "{NEW}/{IDS}"\nshared = "x"\n',
        f'[[not_carried]]\nid = "{NEW}/{IDS}"\nvia = "{OLD}/{IDS}"\n',
        f'[[carried]]\nid = "{NEW}/{IDS}"\nvia = "{OLD}/{IDS}"\nshared = "x"\nwhy = "y"\n',
        '[[carry]]\nid = "x"\n',
        "not toml [",
    ],
)
def test_malformed_tables_are_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "carried.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CarriedError):
        load_carried(path)


def test_the_generator_proposes_identical_done_musts_and_forbidden_ones_as_not_carried(
    tmp_path: Path,
) -> None:
    analysis = _tree(tmp_path, "")
    done = [s.id for s in analysis.statuses.values() if s.status == "done"]
    found = candidates(analysis.catalog, done, NEW, CarriedTable())
    assert found == [
        (f"{NEW}/{IDS}", f"{OLD}/{IDS}", None),
        (f"{NEW}/{INIT}", f"{OLD}/{INIT}", "initiali"),
    ]
    text = format_candidates(found, {f"{OLD}/{IDS}": "mcp_ref/m.py:1"})
    assert "# source tagged at mcp_ref/m.py:1" in text
    path = tmp_path / "proposed.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CarriedError, match="shared"):  # a proposal counts only once reviewed
        load_carried(path)
    # A decided entry, carried or not, is not proposed again.
    refused = Carried(id=f"{NEW}/{IDS}", via=f"{OLD}/{IDS}", note="x", carried=False, index=1)
    decided = CarriedTable(not_carried=(refused,))
    assert [c for c, _, _ in candidates(analysis.catalog, done, NEW, decided)] == [f"{NEW}/{INIT}"]


def test_within_the_handshake_era_the_era_words_do_not_stop_a_carry(tmp_path: Path) -> None:
    """2025-11-25 repeating 2025-06-18: one core serves both (initialize, sessions,
    capabilities alike), so a sentence about ``initialize`` is carried like any other;
    across the eras (the synthetic pair above, as 2026-07-28 from 2025-06-18) it is not."""
    older, newer = HANDSHAKE_ERA[2], HANDSHAKE_ERA[3]
    entry = (
        f'[[carried]]\nid = "{newer}/{INIT}"\nvia = "{older}/{INIT}"\n'
        'shared = "the one handshake of the client and server cores"\n'
    )
    analysis = _tree(tmp_path, entry, names=(older, newer))
    assert analysis.errors == []
    assert analysis.statuses[f"{newer}/{INIT}"].status == "carried"
    done = [s.id for s in analysis.statuses.values() if s.status == "done"]
    found = candidates(analysis.catalog, done, newer, CarriedTable())
    assert found == [  # no era word stops a proposal either
        (f"{newer}/{IDS}", f"{older}/{IDS}", None),
        (f"{newer}/{INIT}", f"{older}/{INIT}", None),
    ]
    assert same_handshake_era(older, newer) and not same_handshake_era(OLD, NEW)
    assert not same_handshake_era(older, "2026-07-28")


def test_normalising_drops_markup_links_case_and_spacing() -> None:
    one = {"text": "Request ids **MUST** be `strings`\n or [integers](/x).", "detail": []}
    two = {"text": "request IDS MUST be strings or integers.", "detail": []}
    assert normalised(one) == normalised(two)
    assert normalised({**two, "detail": ["and more"]}) != normalised(two)


def test_the_report_shows_a_carried_clause_as_done_via_its_source(tmp_path: Path) -> None:
    analysis = _tree(tmp_path, _entry(IDS))
    html = render_report(analysis, root=tmp_path, out=tmp_path / "out")
    anchor = f"{NEW}/{IDS}".replace("/", "-").replace("#", "-")
    block = html.split(f'id="{anchor}"')[1].split("</div>\n</div>")[0]
    assert f"done via {OLD}/{IDS}" in block and "implemented and tested" not in block
    assert f'<div class="clause carried" id="{anchor}"' in html
    assert "the one envelope reader" in block and "test_m.py::test_x" in block


# --- the committed table ----------------------------------------------------------------


def test_the_committed_table_holds_only_reviewed_allowed_entries() -> None:
    catalog = load_catalog(CATALOG_DIR)
    table = load_carried(cli.CARRIED_PATH)
    kept, errors = apply(table, catalog)
    assert errors == []
    assert len(kept) == len(table.carried) > 10
    for entry in table.carried:
        assert entry.id.startswith(("2026-07-28/", "2025-11-25/")) and len(entry.note) > 40, entry
        # Issue 16 decides the authorization pages; nothing of theirs is carried.
        assert "/basic/authorization" not in entry.id
    assert all(len(e.note) > 40 for e in table.not_carried)


# --- side by side and the open list ---------------------------------------------------------


def test_the_page_map_names_real_pages_of_both_revisions() -> None:
    catalog = load_catalog(CATALOG_DIR)
    old, new = SIDE_BY_SIDE
    for page, (before, note) in PAGE_MAP[SIDE_BY_SIDE].items():
        assert page in catalog.revisions[new] and note
        assert before is None or before in catalog.revisions[old], before


def test_side_by_side_lines_up_moved_split_new_and_gone_pages(tmp_path: Path) -> None:
    old, new = SIDE_BY_SIDE
    pages_old = {
        "basic/utilities/progress": "# Progress\n\n## Flow\n\nTokens **MUST** be unique.\n",
        "basic/transports": "# Transports\n\n## Stdio\n\nNo newlines **MUST** be sent.\n",
        "basic/utilities/ping": "# Ping\n\n## Ping\n\nThe receiver **MUST** answer.\n",
    }
    pages_new = {
        "basic/patterns/progress": "# Progress\n\n## Flow\n\nTokens **MUST** be unique.\n",
        "basic/transports/stdio": "# Stdio\n\n## Stdio\n\nNo newlines **MUST** be sent.\n",
        "basic/transports/streamable-http": "# HTTP\n\n## Post\n\nClients **MUST** POST.\n",
        "server/discover": "# Discover\n\n## Discover\n\nServers **MUST** implement it.\n",
    }
    folder = tmp_path / "clauses"
    folder.mkdir()
    for rev, pages in ((old, pages_old), (new, pages_new)):
        text = dump_catalog(catalog_from_pages(pages, rev))
        (folder / f"{rev}.json").write_text(text, encoding="utf-8")
    analysis = analyze(
        root=tmp_path,
        catalog=load_catalog(folder),
        waivers_path=tmp_path / "none.toml",
        results_path=None,
    )
    rows = [
        (p.new.page if p.new else None, p.old.page if p.old else None, p.repeated, p.note)
        for p in pairs(analysis, old, new)
    ]
    assert rows == [
        ("basic/patterns/progress", "basic/utilities/progress", False, "moved"),
        ("basic/transports/stdio", "basic/transports", False, "split"),
        ("basic/transports/streamable-http", "basic/transports", True, "split; no sessions"),
        ("server/discover", None, False, "new: replaces initialize's answer"),
        (None, "basic/utilities/ping", False, f"gone from {new}"),
    ]
    text = format_pairs(pairs(analysis, old, new), old, new)
    (split,) = [line for line in text.splitlines() if "streamable-http" in line]
    assert split.split()[6:11] == ["basic/transports", '"', '"', '"', '"']


def test_the_open_list_is_grouped_by_page_and_counts_what_is_settled(tmp_path: Path) -> None:
    analysis = _tree(tmp_path, _entry(IDS))
    text = render_open(analysis, NEW)
    assert text.startswith(f"# Open clauses of {NEW}\n")
    assert "0 done, 1 carried" in text and "**2 open**" in text
    assert "| [basic/lifecycle](#basiclifecycle) | 2 |" in text
    body = text.split("## basic/lifecycle\n", 1)[1]
    assert f"`{NEW}/{INIT}`" in body and f"`{NEW}/{PROGRESS}`" in body
    assert f"`{NEW}/{IDS}`" not in body  # carried: settled


def test_the_commands_read_the_table_given_and_none_with_another_catalog(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _tree(tmp_path, _entry(IDS))
    args = ["--root", str(tmp_path), "--catalog", str(tmp_path / "clauses")]
    args += ["--waivers", str(tmp_path / "waivers.toml")]
    args += ["--results", str(tmp_path / "results.json")]
    out = tmp_path / "open.md"
    # Another catalog than the committed one: no carried table unless one is named.
    assert cli.main(["open", *args, "--revision", NEW, "--out", str(out)]) == 0
    assert "0 carried" in out.read_text(encoding="utf-8")
    given = [*args, "--carried", str(tmp_path / "carried.toml")]
    assert cli.main(["open", *given, "--revision", NEW, "--out", str(out)]) == 0
    assert "1 carried" in out.read_text(encoding="utf-8")
    capsys.readouterr()
    # The generator proposes only what the table does not decide yet.
    assert cli.main(["carried", *given, "--revision", NEW]) == 0
    proposed = capsys.readouterr().out
    assert f'id = "{NEW}/{INIT}"' in proposed and f'id = "{NEW}/{IDS}"' not in proposed
    # Appended: the forbidden one comes as [[not_carried]], its reason filled in.
    assert cli.main(["carried", *given, "--revision", NEW, "--append"]) == 0
    (refused,) = load_carried(tmp_path / "carried.toml").not_carried
    assert refused.id == f"{NEW}/{INIT}" and "initiali" in refused.note
    capsys.readouterr()
    assert cli.main(["carried", *given, "--revision", NEW]) == 0
    assert capsys.readouterr().out.strip() == f"no new candidates in {NEW}"

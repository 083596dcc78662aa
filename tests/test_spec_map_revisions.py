"""spec_map over every revision: one catalog of 2024-11-05 .. 2026-07-28 and the
extensions, ids of any revision checked alike, and open clauses counted per revision but
failing the check only in a ``required`` one (spec_map/revisions.py)."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from spec_map import cli
from spec_map.catalog import (
    ID_PATTERN,
    catalog_from_pages,
    dump_catalog,
    load_catalog,
)
from spec_map.check import Analysis, analyze
from spec_map.cites import scan_code
from spec_map.extract import extract_page
from spec_map.quotes import problems
from spec_map.revisions import CITABLE, REQUIRED, REVISIONS, Revision, policy, revision_of
from spec_map.waivers import expand, load_waivers

CATALOG = load_catalog()

# The ids this file gets wrong on purpose are written with these prefixes, so that the
# checker's scan of tests/ (which reads literal ids as mentions) does not take them for
# real citations.
EXT, R1125, R0728 = "extensions", "2025-11-25", "2026-07-28"

# A real 2026-07-28 clause (what the OAuth client cites) and its text.
MODERN = "2026-07-28/basic/authorization/index#refresh-tokens.3"
MODERN_TEXT = CATALOG.clauses[MODERN]["text"]


# --- the committed catalog ------------------------------------------------------------------


def test_every_revision_of_the_table_is_catalogued_with_its_own_ids() -> None:
    assert [r.name for r in REVISIONS] == [
        "2024-11-05",
        "2025-03-26",
        "2025-06-18",
        "2025-11-25",
        "2026-07-28",
        "extensions",
    ]
    assert list(CATALOG.revisions) == [r.name for r in REVISIONS]
    for cid, clause in CATALOG.clauses.items():
        m = ID_PATTERN.fullmatch(cid)
        assert m is not None, cid
        assert m.group("rev") == clause["revision"] and m.group("page") == clause["page"]
    per = {r: sum(c["revision"] == r for c in CATALOG.clauses.values()) for r in CATALOG.revisions}
    assert all(n > 100 for n in per.values()), per
    assert per["2025-06-18"] == 270  # unchanged by cataloguing the others


def test_the_required_revisions_are_2025_06_18_and_2026_07_28() -> None:
    assert {r.name for r in REVISIONS if r.setting == REQUIRED} == {"2025-06-18", "2026-07-28"}
    assert all(r.setting in (REQUIRED, CITABLE) for r in REVISIONS)


@pytest.mark.parametrize(
    ("cid", "words"),
    [
        # Opening sentences under front matter (no '#' heading): the title's section.
        ("2024-11-05/basic/index#overview.1", "All messages between MCP clients and servers"),
        ("2026-07-28/server/discover#discovery.1", "Servers MUST implement it."),
        # A keyword split over two lines (**SHOULD\n NOT**) is still one keyword.
        ("2026-07-28/server/discover#discoverresult.2", "Clients SHOULD NOT use it"),
        ("extensions/tasks/tasks-spec#capability-negotiation.2", "MUST NOT return"),
        ("2025-03-26/basic/authorization#implementation-requirements.2", "PKCE is REQUIRED"),
    ],
)
def test_clauses_of_other_revisions_are_where_their_ids_say(cid: str, words: str) -> None:
    clause = CATALOG.clauses.get(cid)
    assert clause is not None, cid
    assert words in clause["text"]


def test_server_features_digest_and_schema_pages_are_not_catalogued() -> None:
    pages = CATALOG.pages
    assert "2025-11-25/server-features-reference" not in pages
    assert "2026-07-28/schema" not in pages and "2025-11-25/schema" not in pages


def test_front_matter_title_heads_the_page_unless_a_heading_does() -> None:
    page = "---\ntitle: Some Page\nsidebarTitle: x\n---\n\nServers **MUST** go.\n\n## A\n\nB **MAY** c.\n"
    sections, clauses = extract_page(page, "p", "2099-01-01")
    assert [(s.slug, s.level, s.line) for s in sections] == [("some-page", 1, 2), ("a", 2, 8)]
    assert [c.id for c in clauses] == ["2099-01-01/p#some-page.1", "2099-01-01/p#a.1"]
    own = "---\ntitle: Tasks\n---\n\n# Tasks\n\nServers **MUST** go.\n"
    sections, clauses = extract_page(own, "p", "2099-01-01")
    assert [s.slug for s in sections] == ["tasks"]
    assert [c.id for c in clauses] == ["2099-01-01/p#tasks.1"]


# --- ids and quotes of any revision ---------------------------------------------------------


def test_revision_of_reads_dated_revisions_and_extensions() -> None:
    assert revision_of("2026-07-28/basic/index#_meta.3") == "2026-07-28"
    assert revision_of(f"{EXT}/tasks/tasks-spec#x.1") == "extensions"
    assert revision_of("basic/index#_meta.3") is None


def test_a_url_path_is_not_a_mention_but_an_id_is(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(
        '"""See [x](/specification/2025-11-25/basic/index#meta) and '
        f"{R1125}/basic/index#nope.\n\n"
        f"{EXT}/tasks/tasks-spec#nope.1\n"
        '"""\n'
        "# Spec: extensions/tasks/tasks-spec#capability-negotiation.1\n",
        encoding="utf-8",
    )
    cites, found = scan_code(tmp_path / "pkg", tmp_path)
    assert found == []
    assert [(c.kind, c.ref) for c in cites] == [
        ("code", "extensions/tasks/tasks-spec#capability-negotiation.1"),
        ("mention", f"{R1125}/basic/index#nope"),
        ("mention", f"{EXT}/tasks/tasks-spec#nope.1"),
    ]


def _quote_package(tmp_path: Path, cid: str, quote: str) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "mod.py").write_text(f'# Spec: {cid}\n# "{quote}"\nx = 1\n', encoding="utf-8")
    return pkg


def test_a_wrong_quote_of_a_2026_07_28_clause_is_an_error(tmp_path: Path) -> None:
    pkg = _quote_package(tmp_path, MODERN, "MUST add `offline_access` to every request")
    (error,) = problems(pkg, tmp_path, CATALOG.clauses)
    assert error.startswith("pkg/mod.py:1: error:") and "is not the clause's text" in error
    right = _quote_package(tmp_path, MODERN, MODERN_TEXT)
    assert problems(right, tmp_path, CATALOG.clauses) == []


def test_a_quote_may_come_from_the_list_a_clause_introduces(tmp_path: Path) -> None:
    cid = "2025-11-25/basic/authorization#client-registration-approaches.1"
    assert CATALOG.clauses[cid]["detail"]
    pkg = _quote_package(
        tmp_path, cid, "Use pre-registered client information ... Use Dynamic Client Registration"
    )
    assert problems(pkg, tmp_path, CATALOG.clauses) == []
    backwards = _quote_package(
        tmp_path, cid, "Use Dynamic Client Registration ... Use pre-registered client information"
    )
    assert len(problems(backwards, tmp_path, CATALOG.clauses)) == 1


def _repo(tmp_path: Path, code: str, test: str = "") -> Path:
    (tmp_path / "mcp_ref").mkdir()
    (tmp_path / "mcp_ref" / "m.py").write_text(textwrap.dedent(code), encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_m.py").write_text(textwrap.dedent(test), encoding="utf-8")
    return tmp_path


def _real(root: Path, waivers: Path | None = None) -> Analysis:
    return analyze(
        root=root,
        catalog=CATALOG,
        waivers_path=waivers or root / "waivers.toml",
        results_path=None,
    )


def test_an_unknown_id_of_another_revision_is_an_error_in_code_tests_and_prose(
    tmp_path: Path,
) -> None:
    root = _repo(
        tmp_path,
        f"""\
        # Spec: {R0728}/basic/authorization/index#refresh-tokens.99
        # "MUST NOT assume refresh tokens will be issued"
        # Spec: {MODERN}
        # "{MODERN_TEXT}"
        '''Mentions {R1125}/basic/lifecycel#initialization.1 too.'''
        """,
        f"""\
        import pytest

        @pytest.mark.spec("{EXT}/tasks/tasks-spec#no-such-section.1")
        def test_x(): ...
        """,
    )
    analysis = _real(root)
    assert len(analysis.errors) == 3, analysis.errors
    tag, mention, marker = analysis.errors
    assert tag.startswith("mcp_ref/m.py:1: error: '# Spec:' comment cites unknown clause")
    assert "refresh-tokens.99" in tag and "has clauses .1 to .5" in tag
    assert "mcp_ref/m.py:5:" in mention and "did you mean 'basic/lifecycle'" in mention
    assert marker.startswith("tests/test_m.py:3: error: spec marker cites unknown clause")
    assert analysis.statuses[MODERN].implemented
    assert not analysis.ok  # errors fail the check whatever the revision's setting


def test_an_id_of_an_uncatalogued_revision_is_an_error_naming_the_catalogued_ones(
    tmp_path: Path,
) -> None:
    root = _repo(tmp_path, '# Spec: 2031-01-01/basic/index#overview.1\n# "x"\n')
    (error,) = _real(root).errors
    assert "revision '2031-01-01' is not catalogued" in error and "2026-07-28" in error


# --- per-revision accounting ----------------------------------------------------------------

OLD, NEW = "2099-01-01", "2099-02-02"
PAGES = {
    "basic/lifecycle": "# Lifecycle\n\n## Rules\n\nThe client **MUST** do a. "
    "The server **MUST** do b. Clients **SHOULD** do c.\n",
    "basic/authorization": "# Authorization\n\n## Tokens\n\nClients **MUST** send tokens.\n",
}
TABLE = (
    Revision(OLD, REQUIRED, ("basic/lifecycle",), "synthetic"),
    Revision(NEW, CITABLE, ("basic/lifecycle",), "synthetic"),
)


def _said(catalog: dict[str, object], cid: str) -> str:
    (text,) = [c["text"] for c in catalog["clauses"] if c["id"] == cid]  # type: ignore[attr-defined]
    return '"' + text + '"'


def _two_revisions(
    tmp_path: Path, *, waivers: str = "", table: tuple[Revision, ...] = TABLE
) -> Analysis:
    """A tree citing (code and passing test) rules.1 of both revisions and tokens.1 of
    the newer one; rules.2 of both is open."""
    folder = tmp_path / "clauses"
    folder.mkdir()
    catalogs = {rev: catalog_from_pages(PAGES, rev) for rev in (OLD, NEW)}
    for rev, catalog in catalogs.items():
        (folder / f"{rev}.json").write_text(dump_catalog(catalog), encoding="utf-8")
    cited = [f"{OLD}/basic/lifecycle#rules.1", f"{NEW}/basic/lifecycle#rules.1"]
    cited.append(f"{NEW}/basic/authorization#tokens.1")
    code = "".join(f"# Spec: {cid}\n# {_said(catalogs[cid[:10]], cid)}\n" for cid in cited)
    marker = ", ".join(f'"{cid}"' for cid in cited)
    root = _repo(
        tmp_path, code, f"import pytest\n\n@pytest.mark.spec({marker})\ndef test_x(): ...\n"
    )
    (root / "waivers.toml").write_text(textwrap.dedent(waivers), encoding="utf-8")
    results = {"passed": {cid: ["tests/test_m.py::test_x"] for cid in cited}}
    (root / "results.json").write_text(json.dumps(results), encoding="utf-8")
    return analyze(
        root=root,
        catalog=load_catalog(folder),
        waivers_path=root / "waivers.toml",
        results_path=root / "results.json",
        revisions=table,
    )


def test_open_clauses_fail_only_in_a_required_revision(tmp_path: Path) -> None:
    analysis = _two_revisions(tmp_path)
    assert analysis.errors == []
    assert [s.id for s in analysis.open_required] == [f"{OLD}/basic/lifecycle#rules.2"]
    assert [s.id for s in analysis.open_in(NEW)] == [f"{NEW}/basic/lifecycle#rules.2"]
    assert not analysis.ok
    rows = {r.revision: r for r in analysis.revision_summaries()}
    old, new = rows[OLD], rows[NEW]
    assert (old.setting, old.clauses, old.must, old.should, old.may) == (REQUIRED, 4, 3, 1, 0)
    assert (old.required, old.done, old.waived, old.open, old.cited) == (2, 1, 0, 1, 1)
    assert old.fails
    # The newer revision: its cited authorization clause is required (and done) too.
    assert (new.setting, new.required, new.done, new.open, new.cited) == (CITABLE, 3, 2, 1, 2)
    assert not new.fails


def test_only_the_citable_revision_open_passes_the_check(tmp_path: Path) -> None:
    waivers = f"""\
    [[waiver]]
    id = "{OLD}/basic/lifecycle#rules.2"
    reason = "Synthetic: the other side's duty, not ours."
    """
    analysis = _two_revisions(tmp_path, waivers=waivers)
    assert analysis.open_required == [] and analysis.ok
    assert len(analysis.open_in(NEW)) == 1  # counted, not failing


def test_flipping_a_revision_to_required_makes_its_open_clauses_fail(tmp_path: Path) -> None:
    waivers = f'[[waiver]]\nid = "{OLD}/basic/lifecycle#rules.2"\nreason = "Synthetic reason."\n'
    strict = tuple(Revision(r.name, REQUIRED, r.scope, r.why) for r in TABLE)
    analysis = _two_revisions(tmp_path, waivers=waivers, table=strict)
    assert [s.id for s in analysis.open_required] == [f"{NEW}/basic/lifecycle#rules.2"]
    assert not analysis.ok


def test_a_revision_missing_from_the_table_is_held_strictly() -> None:
    assert policy("2099-03-03").setting == REQUIRED
    assert policy("2099-03-03").in_scope("basic/lifecycle")
    assert policy("2025-11-25").setting == CITABLE


def test_a_page_waiver_reaches_one_revision_and_warns_of_its_own_cited_clauses(
    tmp_path: Path,
) -> None:
    waivers = f"""\
    [[waiver]]
    page = "{OLD}/basic/authorization"
    reason = "Synthetic: authorization comes later."
    """
    analysis = _two_revisions(tmp_path, waivers=waivers)
    assert analysis.errors == []
    assert analysis.statuses[f"{OLD}/basic/authorization#tokens.1"].waiver is not None
    assert analysis.statuses[f"{NEW}/basic/authorization#tokens.1"].waiver is None
    assert analysis.warnings == []  # NEW's tokens.1 is cited, but not waived


def test_waived_but_cited_warns_for_the_waived_revision_only(tmp_path: Path) -> None:
    waivers = f"""\
    [[waiver]]
    page = "{NEW}/basic/authorization"
    reason = "Synthetic: authorization comes later."
    """
    analysis = _two_revisions(tmp_path, waivers=waivers)
    assert analysis.warnings == [
        f"{NEW}/basic/authorization#tokens.1 is waived but cited in code (mcp_ref/m.py)"
    ]


def test_page_waivers_name_their_revision_and_except_only_their_page(tmp_path: Path) -> None:
    waivers = f"""\
    [[waiver]]
    page = "basic/authorization"
    reason = "Synthetic: unqualified."

    [[waiver]]
    page = "{OLD}/basic/lifecycle"
    except = ["{OLD}/basic/lifecycle#rules.1", "{NEW}/basic/lifecycle#rules.2"]
    reason = "Synthetic: all but what we do."
    """
    analysis = _two_revisions(tmp_path, waivers=waivers)
    unqualified, foreign = analysis.errors
    assert "unknown page 'basic/authorization'" in unqualified
    assert f"'{OLD}/basic/authorization', '{NEW}/basic/authorization'" in unqualified
    assert f"'except' names '{NEW}/basic/lifecycle#rules.2'" in foreign
    st = analysis.statuses
    assert st[f"{OLD}/basic/lifecycle#rules.1"].waiver is None  # excepted: done instead
    assert st[f"{OLD}/basic/lifecycle#rules.2"].waiver is not None
    assert analysis.warnings == []


def test_the_committed_waivers_leave_other_revisions_alone() -> None:
    reasons, errors = expand(load_waivers(Path(cli.WAIVERS_PATH)), CATALOG)
    assert errors == []
    # 2025-06-18's, 2026-07-28's and 2025-11-25's named one by one (issue 15), and the
    # authorization pages' of every revision, each named one by one (issue 16): no page
    # waiver is left, and another revision is waived on its authorization page only.
    named = ("2025-06-18/", f"{R0728}/", "2025-11-25/")
    others = {cid for cid in reasons if not cid.startswith(named)}
    assert reasons and others and all("/basic/authorization" in cid for cid in others)
    assert all(waiver.page is None for waiver in load_waivers(Path(cli.WAIVERS_PATH)))


def test_check_prints_every_revision_and_fails_on_the_required_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "clauses"
    folder.mkdir()
    pages = {"server/tools": PAGES["basic/lifecycle"], "basic/authorization": "# A\n"}
    for rev in ("2025-06-18", "2025-11-25"):  # real names: the real table's settings
        catalog = catalog_from_pages(pages, rev)
        (folder / f"{rev}.json").write_text(dump_catalog(catalog), encoding="utf-8")
    root = _repo(tmp_path, "")
    args = ["--root", str(root), "--catalog", str(folder), "--no-results"]
    args += ["--waivers", str(root / "none.toml")]
    assert cli.main(["check", *args]) == 1
    out = capsys.readouterr().out
    assert "2025-06-18 (required):" in out and "2025-11-25 (citable):" not in out
    (old_row,) = [line for line in out.splitlines() if line.startswith("2025-06-18  required")]
    (new_row,) = [line for line in out.splitlines() if line.startswith("2025-11-25  citable")]
    assert old_row.split()[2:] == ["3", "2", "1", "0", "2", "0", "0", "0", "2", "0"]
    assert new_row.split()[2:] == ["3", "2", "1", "0", "2", "0", "0", "0", "2", "0"]
    assert "2 required clause(s) open in 2025-06-18" in out
    assert cli.main(["check", "--revision", "2025-11-25", "--list-open", *args]) == 1
    out = capsys.readouterr().out
    assert "2025-11-25 (citable):" in out and f"{R1125}/server/tools#rules.2" in out


PLUGIN = ("-p", "spec_map.pytest_plugin", "-p", "no:cacheprovider")


def test_the_plugin_knows_every_revision_of_a_catalog_folder(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from spec_map.catalog import REPO_ROOT

    folder = tmp_path / "clauses"
    folder.mkdir()
    for rev in (OLD, NEW):
        catalog = catalog_from_pages(PAGES, rev)
        (folder / f"{rev}.json").write_text(dump_catalog(catalog), encoding="utf-8")
    (tmp_path / "test_inner.py").write_text(
        "import pytest\n\n"
        f'@pytest.mark.spec("{NEW}/basic/authorization#tokens.1")\n'
        "def test_known(): pass\n\n"
        f'@pytest.mark.spec("{NEW}/basic/authorization#tokens.2")\n'
        "def test_unknown(): pass\n",
        encoding="utf-8",
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")])
    env["SPEC_MAP_CATALOG"] = str(folder)
    env["SPEC_MAP_RESULTS"] = str(tmp_path / "results.json")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "test_inner.py", *PLUGIN],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert results["passed"] == {
        f"{NEW}/basic/authorization#tokens.1": ["test_inner.py::test_known"]
    }
    assert results["unknown"] == {
        "test_inner.py::test_unknown": [f"{NEW}/basic/authorization#tokens.2"]
    }


def test_a_section_reference_to_no_section_says_so(tmp_path: Path) -> None:
    root = _repo(tmp_path, f'"""See {R1125}/basic/index#metta and {R1125}/basic/index#auth."""\n')
    (error,) = _real(root).errors  # '#auth' is a real section: a fine reference
    assert error.endswith("(no section 'metta' in basic/index; did you mean '_meta'?)"), error


def test_the_report_shows_each_revision_s_counts_and_pages(tmp_path: Path) -> None:
    from spec_map.report import write_report

    analysis = _two_revisions(tmp_path)
    html = write_report(analysis, tmp_path / "out", root=tmp_path).read_text(encoding="utf-8")
    rows = re.findall(
        r'<tr><td><a href="#rev-([^"]+)">[^<]+</a></td><td>(\w+)</td>(.*?)</tr>', html
    )
    cells = {rev: (setting, re.findall(r">(\d+)<", rest)) for rev, setting, rest in rows}
    # clauses, MUST, SHOULD, MAY, required, done, carried, waived, open, cited
    assert cells == {
        OLD: (REQUIRED, ["4", "3", "1", "0", "2", "1", "0", "0", "1", "1"]),
        NEW: (CITABLE, ["4", "3", "1", "0", "3", "2", "0", "0", "1", "2"]),
    }
    for rev in (OLD, NEW):
        assert f'id="rev-{rev}"' in html and f'id="{rev}-basic-lifecycle"' in html
    # An open MUST fails (red) in the required revision, and is pale in the citable one.
    assert f'<div class="clause open" id="{OLD}-basic-lifecycle-rules.2"' in html
    assert f'<div class="clause open soft" id="{NEW}-basic-lifecycle-rules.2"' in html

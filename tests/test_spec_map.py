"""Tests of spec_map: extraction, the committed catalog, the checker, plugin, report, diagram.

The catalog of every revision, per-revision accounting and its settings are tested in
``tests/test_spec_map_revisions.py``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path

import pytest

from spec_map import cli
from spec_map.binds import guess_binds
from spec_map.catalog import (
    CATALOG_DIR,
    REPO_ROOT,
    build_catalog,
    catalog_from_pages,
    dump_catalog,
    find_spec_dir,
    load_catalog,
)
from spec_map.check import Analysis, analyze, format_table
from spec_map.cites import scan_code, scan_tests
from spec_map.diagram import DIAGRAM_MD, DIAGRAM_SVG, lanes, render_markdown, render_svg
from spec_map.extract import Clause, extract_page, page_files, plain_text, slugify
from spec_map.report import write_report
from spec_map.revisions import REVISIONS
from spec_map.waivers import WaiverError, expand, load_waivers

VENDORED_SPEC = REPO_ROOT / "tests" / "vendor"  # the spec pages tests read (tests/_spec.py)
SPEC_DIR = VENDORED_SPEC if (VENDORED_SPEC / "2025-06-18").is_dir() else find_spec_dir()
needs_spec = pytest.mark.skipif(
    SPEC_DIR is None,
    reason="spec text not found: set $MCP_SPEC_DIR or put it at <repo>/../shared/spec",
)
KNOWN_ID = "2025-06-18/basic/lifecycle#version-negotiation.2"
KNOWN_TEXT = "This SHOULD be the latest version supported by the client."

# A synthetic page exercising every construct the extractor handles.  Its revision is
# "2099-01-01" so that ids quoted in this file are never mistaken for real citations.
DEMO = textwrap.dedent(
    """\
    # Demo Page

    <div id="enable-section-numbers" />

    <Info>**Protocol Revision**: 2099-01-01</Info>

    Servers **MUST** answer. Plain sentence here. See the **MCP endpoint** (e.g. The
    one above) which **MAY** vary.

    ## First Section

    The client **MUST** send x. Not normative. The server **MAY** do y and **MUST NOT**
    do z.

    ```json
    {"note": "servers **MUST** ignore this, it is code"}
    ```

    - Item one **SHOULD** hold.
    - Item two has no keyword.

    Both parties **MUST**:

    - Respect the _negotiated_ version
    - Use [capabilities](/spec/caps) only
      - nested detail is not listed

    <Note>
      Inside a note, clients **SHOULD NOT** sleep.
    </Note>

    | Column | Rule |
    | ------ | ---- |
    | x      | it **MAY** be omitted |

    #### Trust & Safety (v2)

    Text with _emphasis_, `code_span` and [a link](https://example.com/x) is **REQUIRED**.

    ~~~
    # Not a heading, and **MUST** is skipped
    ~~~

    ## First Section

    A repeated heading **SHOULD** get a suffix.
    """
)


def _demo() -> dict[str, Clause]:
    _sections, clauses = extract_page(DEMO, "demo/page", "2099-01-01")
    return {c.id: c for c in clauses}


# --- extraction --------------------------------------------------------------------------


def test_extract_ids_numbering_and_keywords() -> None:
    clauses = _demo()
    assert list(clauses) == [
        "2099-01-01/demo/page#demo-page.1",
        "2099-01-01/demo/page#demo-page.2",
        "2099-01-01/demo/page#first-section.1",
        "2099-01-01/demo/page#first-section.2",
        "2099-01-01/demo/page#first-section.3",
        "2099-01-01/demo/page#first-section.4",
        "2099-01-01/demo/page#first-section.5",
        "2099-01-01/demo/page#first-section.6",
        "2099-01-01/demo/page#trust--safety-v2.1",
        "2099-01-01/demo/page#first-section-1.1",
    ]
    c = clauses
    assert c["2099-01-01/demo/page#demo-page.2"].text == (
        "See the MCP endpoint (e.g. The one above) which MAY vary."
    )
    multi = c["2099-01-01/demo/page#first-section.2"]
    assert multi.keyword == "MUST NOT"
    assert multi.keywords == ("MAY", "MUST NOT")
    assert multi.text == "The server MAY do y and MUST NOT do z."
    assert c["2099-01-01/demo/page#first-section.3"].text == "Item one SHOULD hold."
    lead = c["2099-01-01/demo/page#first-section.4"]
    assert lead.text == "Both parties MUST:"
    assert lead.detail == ("Respect the negotiated version", "Use capabilities only")
    assert lead.binds == "both"
    note = c["2099-01-01/demo/page#first-section.5"]
    assert note.text == "Inside a note, clients SHOULD NOT sleep."
    assert note.binds == "client"
    assert c["2099-01-01/demo/page#first-section.6"].text == "x; it MAY be omitted"
    trust = c["2099-01-01/demo/page#trust--safety-v2.1"]
    assert trust.text == "Text with emphasis, `code_span` and a link is REQUIRED."
    assert trust.keyword == "REQUIRED"
    assert trust.level == "MUST"


def test_code_blocks_are_skipped() -> None:
    texts = " ".join(c.text for c in _demo().values())
    assert "ignore this" not in texts
    assert "Not a heading" not in texts
    sections, _ = extract_page(DEMO, "demo/page", "2099-01-01")
    assert [s.slug for s in sections] == [
        "demo-page",
        "first-section",
        "trust--safety-v2",
        "first-section-1",
    ]


def test_numbering_restarts_per_section_and_ignores_unmarked_keywords() -> None:
    page = "# T\n\n## A\n\nOne **MUST** a. Two MUST b (not bold).\n\n## B\n\nThree **MAY** c.\n"
    _, clauses = extract_page(page, "p", "2099-01-01")
    assert [c.id for c in clauses] == ["2099-01-01/p#a.1", "2099-01-01/p#b.1"]


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("Version Negotiation", "version-negotiation"),
        ("Security and Trust & Safety", "security-and-trust--safety"),
        (plain_text("`_meta`"), "_meta"),
        (plain_text(r"https\://"), "https"),
        ("stdio", "stdio"),
    ],
)
def test_slugify(title: str, slug: str) -> None:
    assert slugify(title) == slug


@pytest.mark.parametrize(
    ("text", "page", "previous", "binds"),
    [
        ("The client MUST send x.", "basic/lifecycle", None, "client"),
        ("Servers SHOULD return errors:", "client/roots", None, "server"),
        ("If the server supports it, it MUST respond.", "basic/lifecycle", "client", "server"),
        ("This SHOULD be the latest.", "basic/lifecycle", "client", "client"),
        ("Implementations SHOULD log.", "basic/utilities/ping", None, "both"),
        ("Applications SHOULD:", "server/tools", None, "host"),
        ("Clients SHOULD allow users to decline requests.", "client/elicitation", None, "host"),
        ("The session ID MUST be ASCII.", "basic/transports", None, "transport"),
        ("The `initialize` request MUST NOT be cancelled by clients", "basic", None, "client"),
        ("The image data MUST be base64.", "server/prompts", None, "server"),
        (
            "The client MUST include an `Accept` header listing `application/json`.",
            "basic/transports",
            None,
            "client",
        ),
    ],
)
def test_binds_heuristics(text: str, page: str, previous: str | None, binds: str) -> None:
    assert guess_binds(text, page=page, previous=previous)[0] == binds


# --- the committed catalog and the real spec ----------------------------------------------


def test_committed_catalog_has_the_known_example() -> None:
    catalog = load_catalog()
    clause = catalog.clauses[KNOWN_ID]
    assert clause["text"] == KNOWN_TEXT
    assert clause["keyword"] == "SHOULD"
    assert clause["page"] == "basic/lifecycle"
    assert clause["section"] == "version-negotiation"
    assert clause["revision"] == "2025-06-18"
    assert "2025-06-18/basic/lifecycle" in catalog.pages
    assert "2025-06-18/schema" not in catalog.pages
    assert "2025-06-18/schema-reference" not in catalog.pages


@needs_spec
def test_known_example_from_the_spec_text() -> None:
    assert SPEC_DIR is not None
    text = (SPEC_DIR / "2025-06-18" / "basic" / "lifecycle.md").read_text(encoding="utf-8")
    _, clauses = extract_page(text, "basic/lifecycle")
    by_id = {c.id: c for c in clauses}
    assert by_id[KNOWN_ID].text == KNOWN_TEXT
    assert by_id["2025-06-18/basic/lifecycle#version-negotiation.1"].keyword == "MUST"


@needs_spec
@pytest.mark.parametrize("revision", [r.name for r in REVISIONS])
def test_committed_catalog_is_not_stale(revision: str) -> None:
    assert SPEC_DIR is not None
    fresh = dump_catalog(build_catalog(SPEC_DIR, revision))
    committed = CATALOG_DIR / f"{revision}.json"
    assert committed.read_text(encoding="utf-8") == fresh, (
        f"spec_map/clauses/{revision}.json is stale: run `python -m spec_map extract` and commit it"
    )


def test_the_catalog_folder_holds_exactly_the_table_s_revisions() -> None:
    assert sorted(p.stem for p in CATALOG_DIR.glob("*.json")) == sorted(r.name for r in REVISIONS)
    assert list(load_catalog().revisions) == [r.name for r in REVISIONS]


_BOLD = re.compile(
    r"\*\*(?:MUST\s+NOT|MUST|REQUIRED|SHALL\s+NOT|SHALL|SHOULD\s+NOT|SHOULD|"
    r"NOT\s+RECOMMENDED|RECOMMENDED|MAY|OPTIONAL)\*\*"
)


@needs_spec
@pytest.mark.parametrize("revision", [r.name for r in REVISIONS])
def test_every_bold_keyword_of_the_spec_is_in_some_clause(revision: str) -> None:
    """Nothing bold is lost: count keywords outside code blocks against the catalog,
    revision by revision (front matter and text before the first heading included)."""
    assert SPEC_DIR is not None
    expected = 0
    for _page, path in page_files(SPEC_DIR / revision):
        text = re.sub(r"^\s*```.*?^\s*```", "", path.read_text(encoding="utf-8"), flags=re.M | re.S)
        expected += len(_BOLD.findall(text))
    clauses = load_catalog().clauses.values()
    found = sum(len(c["keywords"]) for c in clauses if c["revision"] == revision)
    assert expected > 0 and found == expected


# --- citations -------------------------------------------------------------------------------


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")


def test_scan_code_reads_comments_only(tmp_path: Path) -> None:
    _write(
        tmp_path / "pkg" / "m.py",
        '''\
        """Docstring mentioning 2099-01-01/demo/page#first-section."""
        # Spec: 2099-01-01/demo/page#first-section.1
        x = "# Spec: 2099-01-01/demo/page#not-a-comment.1"
        # Spec: WHATWG 9.2.6 -- another spec, left alone
        # Spec: 2099-01-01/demo/page#a.1 2099-01-01/demo/page#a.2
        # Spec: see above
        ''',
    )
    cites, problems = scan_code(tmp_path / "pkg", tmp_path)
    code = [(c.ref, c.line) for c in cites if c.kind == "code"]
    assert code == [
        ("2099-01-01/demo/page#first-section.1", 2),
        ("2099-01-01/demo/page#a.1", 5),
        ("2099-01-01/demo/page#a.2", 5),
    ]
    mentions = [(c.ref, c.line) for c in cites if c.kind == "mention"]
    assert ("2099-01-01/demo/page#first-section", 1) in mentions
    assert [(p.line, "one clause id" in p.message) for p in problems] == [(5, True)]


def test_scan_code_rejects_a_malformed_mcp_id(tmp_path: Path) -> None:
    _write(tmp_path / "pkg" / "m.py", "# Spec: 2099-01-01/demo page\n")
    _, problems = scan_code(tmp_path / "pkg", tmp_path)
    assert len(problems) == 1 and problems[0].error and problems[0].line == 1


def test_scan_tests_reads_markers_aliases_and_fstrings(tmp_path: Path) -> None:
    _write(
        tmp_path / "tests" / "test_m.py",
        """\
        import pytest

        P = "2099-01-01/demo/page"
        IDS = (P + "#a.1", f"{P}#a.2")
        spec = pytest.mark.spec
        pytestmark = pytest.mark.spec(f"{P}#module.1")

        @pytest.mark.spec("2099-01-01/demo/page#first-section.1")
        def test_a(): ...

        @spec(f"{P}#first-section.2", *IDS)
        def test_b(): ...

        @pytest.mark.parametrize("x", [pytest.param(1, marks=pytest.mark.spec(P + "#p.1"))])
        def test_c(x): ...

        def helper(n):
            return pytest.mark.spec(n)
        """,
    )
    cites, problems = scan_tests(tmp_path / "tests", tmp_path)
    assert sorted(c.ref for c in cites if c.kind == "test") == sorted(
        [
            "2099-01-01/demo/page#module.1",
            "2099-01-01/demo/page#first-section.1",
            "2099-01-01/demo/page#first-section.2",
            "2099-01-01/demo/page#a.1",
            "2099-01-01/demo/page#a.2",
            "2099-01-01/demo/page#p.1",
        ]
    )
    assert [(p.line, p.error) for p in problems] == [(18, False)]


# --- waivers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "[[waiver]]\nid = 'x'\n",
        "[[waiver]]\nid = 'x'\nreason = '  '\n",
        "[[waiver]]\nreason = 'r'\n",
        "[[waiver]]\nids = [1]\nreason = 'r'\n",
        "[[waiver]]\nid = 'x'\nreason = 'r'\nextra = 1\n",
        "waiver = 3\n",
        "not toml [",
    ],
)
def test_malformed_waivers_are_rejected(tmp_path: Path, text: str) -> None:
    path = tmp_path / "waivers.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(WaiverError):
        load_waivers(path)


def test_committed_waivers_name_real_clauses_with_reasons() -> None:
    waivers = load_waivers(Path(cli.WAIVERS_PATH))
    reasons, errors = expand(waivers, load_catalog())
    assert errors == []
    assert all(len(w.reason) > 40 for w in waivers)
    catalog = load_catalog()
    # Issue 16: no page waiver is left; the authorization pages of every revision are
    # waived clause by clause, MUSTs only (each binds a party mcp_ref is not, or the
    # application), and most of their MUSTs are done instead.
    assert all(w.page is None for w in waivers)
    auth = {cid for cid, c in catalog.clauses.items() if "basic/authorization" in c["page"]}
    waived = auth & set(reasons)
    musts = {cid for cid in auth if catalog.clauses[cid]["level"] == "MUST"}
    assert waived and waived <= musts and len(waived) < len(musts) / 3


# --- the checker on a synthetic tree --------------------------------------------------------

REV = "2099-01-01"
SYNTH_PAGES = {
    "basic/lifecycle": textwrap.dedent(
        """\
        # Lifecycle

        ## Rules

        The client **MUST** do a. The server **MUST** do b. Servers **MUST** do c.
        Clients **MUST** do d. The server **MUST NOT** do e. Clients **SHOULD** do f.
        Applications **MUST** show g to the user.
        """
    ),
    "basic/authorization": "# Authorization\n\n## Tokens\n\nServers **MUST** check tokens. "
    "Clients **MUST** send tokens.\n",
}


def _tree(
    tmp_path: Path, *, waivers: str = "", results: Mapping[str, object] | None = None
) -> Path:
    catalog = catalog_from_pages(SYNTH_PAGES, REV)
    _write(tmp_path / "catalog.json", dump_catalog(catalog))

    def said(clause: str) -> str:  # the clause's words, quoted as a tag's quote
        (text,) = [c["text"] for c in catalog["clauses"] if c["id"] == clause]
        return '"' + text.replace('"', "'") + '"'

    _write(
        tmp_path / "mcp_ref" / "core.py",
        f"""\
        def a():  # Spec: {REV}/basic/lifecycle#rules.1 {said(f"{REV}/basic/lifecycle#rules.1")}
            pass
        # Spec: {REV}/basic/lifecycle#rules.2
        # {said(f"{REV}/basic/lifecycle#rules.2")}
        # Spec: {REV}/basic/lifecycle#rules.99
        # Spec: {REV}/basic/authorization#tokens.1
        # {said(f"{REV}/basic/authorization#tokens.1")}
        # Spec: {REV}/basic/lifecycle#rules.6
        # {said(f"{REV}/basic/lifecycle#rules.6")}
        """,
    )
    _write(
        tmp_path / "tests" / "test_core.py",
        f"""\
        import pytest

        @pytest.mark.spec("{REV}/basic/lifecycle#rules.1", "{REV}/basic/lifecycle#rules.3")
        def test_one(): ...

        @pytest.mark.spec("{REV}/basic/lifecycle#rules.2")
        def test_two(): ...

        @pytest.mark.spec("{REV}/basic/authorization#tokens.1", "{REV}/basic/lifecycle#rules.6")
        def test_three(): ...
        """,
    )
    _write(tmp_path / "waivers.toml", waivers)
    if results is not None:
        _write(tmp_path / "results.json", json.dumps(results))
    return tmp_path


def _analyze(root: Path, *, use_results: bool = True) -> Analysis:
    return analyze(
        root=root,
        catalog=load_catalog(root / "catalog.json"),
        waivers_path=root / "waivers.toml",
        results_path=root / "results.json" if use_results else None,
    )


def _rid(n: int) -> str:
    return f"{REV}/basic/lifecycle#rules.{n}"


PASSED_ONE_FAILED_TWO = {
    "passed": {
        _rid(1): ["tests/test_core.py::test_one"],
        _rid(3): ["tests/test_core.py::test_one"],
        _rid(6): ["tests/test_core.py::test_three"],
        f"{REV}/basic/authorization#tokens.1": ["tests/test_core.py::test_three"],
    },
    "failed": {_rid(2): ["tests/test_core.py::test_two"]},
    "skipped": {},
}


def test_checker_statuses_follow_the_rule(tmp_path: Path) -> None:
    root = _tree(tmp_path, results=PASSED_ONE_FAILED_TWO)
    analysis = _analyze(root)
    st = analysis.statuses
    assert st[_rid(1)].status == "done"  # code + passing test
    assert st[_rid(2)].status == "untested"  # code, but its test failed
    assert st[_rid(2)].failed == ["tests/test_core.py::test_two"]
    assert st[_rid(3)].status == "unimplemented"  # passing test, no code
    assert st[_rid(4)].status == "open"
    assert st[_rid(6)].level == "SHOULD" and not st[_rid(6)].required
    assert st[_rid(7)].clause["binds"] == "host" and not st[_rid(7)].required
    # Out-of-scope page: only the cited clause is checked.
    assert st[f"{REV}/basic/authorization#tokens.1"].required
    assert st[f"{REV}/basic/authorization#tokens.1"].status == "done"
    assert not st[f"{REV}/basic/authorization#tokens.2"].required
    assert [s.id for s in analysis.open_required] == [_rid(2), _rid(3), _rid(4), _rid(5)]
    assert len(analysis.errors) == 1
    assert analysis.errors[0].startswith("mcp_ref/core.py:5: error:")
    assert "rules.99" in analysis.errors[0] and ".1 to .7" in analysis.errors[0]
    assert not analysis.ok
    table = format_table(analysis.summaries())
    assert "basic/lifecycle" in table and "TOTAL" in table


def test_checker_without_results_counts_markers(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    analysis = _analyze(root, use_results=False)
    assert analysis.statuses[_rid(2)].status == "done"
    with_missing = _analyze(root)  # results requested but absent: nothing is tested
    assert with_missing.statuses[_rid(1)].status == "untested"
    assert any("no readable" in w for w in with_missing.warnings)


def test_checker_passes_when_everything_is_waived_or_done(tmp_path: Path) -> None:
    waivers = f"""\
    [[waiver]]
    ids = ["{_rid(2)}", "{_rid(3)}", "{_rid(4)}", "{_rid(5)}"]
    reason = "Synthetic: the peer's side, not ours."
    """
    root = _tree(tmp_path, waivers=waivers, results=PASSED_ONE_FAILED_TWO)
    core = (root / "mcp_ref" / "core.py").read_text(encoding="utf-8")
    kept = [line for line in core.splitlines() if "rules.99" not in line]  # known clauses only
    (root / "mcp_ref" / "core.py").write_text("\n".join(kept) + "\n", encoding="utf-8")
    analysis = _analyze(root)
    assert analysis.errors == [] and analysis.open_required == []
    assert analysis.ok
    args = ["--root", str(root), "--catalog", str(root / "catalog.json")]
    args += ["--waivers", str(root / "waivers.toml"), "--results", str(root / "results.json")]
    assert cli.main(["check", *args]) == 0
    (root / "waivers.toml").write_text("", encoding="utf-8")
    assert cli.main(["check", "--list-open", *args]) == 1


def test_unknown_waiver_id_is_an_error(tmp_path: Path) -> None:
    waivers = '[[waiver]]\nid = "2099-01-01/basic/lifecycle#nope.1"\nreason = "r"\n'
    analysis = _analyze(_tree(tmp_path, waivers=waivers))
    assert any("unknown clause id" in e for e in analysis.errors)


def test_modules_lists_citations_per_module(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _tree(tmp_path)
    args = ["--root", str(root), "--catalog", str(root / "catalog.json")]
    assert cli.main(["modules", *args]) == 0
    out = capsys.readouterr().out
    assert "mcp_ref.core (mcp_ref/core.py)" in out
    assert _rid(1) in out and "UNKNOWN" in out


# --- report and diagram --------------------------------------------------------------------


def test_report_is_static_html_with_every_clause(tmp_path: Path) -> None:
    analysis = analyze(
        root=REPO_ROOT,
        catalog=load_catalog(),
        waivers_path=Path(cli.WAIVERS_PATH),
        results_path=None,
    )
    page = write_report(analysis, tmp_path / "out", root=REPO_ROOT)
    html = page.read_text(encoding="utf-8")
    for cid in analysis.catalog.clauses:
        assert f'data-id="{cid}"' in html
    assert "<script" not in html.lower()
    assert "<link" not in html.lower()
    assert "<svg" in html and "PRE_INIT" in html


def test_report_links_to_citing_lines(tmp_path: Path) -> None:
    root = _tree(tmp_path, results=PASSED_ONE_FAILED_TWO)
    page = write_report(_analyze(root), root / "out", root=root)
    html = page.read_text(encoding="utf-8")
    assert 'href="../mcp_ref/core.py#L1"' in html
    assert 'href="../tests/test_core.py#L3"' in html


def test_committed_lifecycle_diagram_is_not_stale() -> None:
    assert DIAGRAM_SVG.read_text(encoding="utf-8") == render_svg(), (
        "spec_map/lifecycle.svg is stale: run `python -m spec_map diagram` and commit it"
    )
    assert DIAGRAM_MD.read_text(encoding="utf-8") == render_markdown(), (
        "spec_map/lifecycle.md is stale: run `python -m spec_map diagram` and commit it"
    )


def test_diagram_follows_the_table() -> None:
    import enum

    class S(enum.Enum):
        A = "A"
        B = "B"
        Z = "Z"

    class D(enum.Enum):
        SEND = "send"
        RECEIVE = "recv"

    table = {
        "r": {
            (S.A, D.SEND, "go"): S.B,
            (S.A, D.RECEIVE, "ping"): S.A,
            (S.B, D.RECEIVE, "back"): S.A,
            (S.A, D.SEND, "close"): S.Z,
            (S.A, D.RECEIVE, "close"): S.Z,
            (S.B, D.SEND, "close"): S.Z,
        }
    }
    (lane,) = lanes(table)
    assert lane.states == ("A", "B", "Z")
    assert lane.edges[("A", "B")] == ["send go"]
    assert lane.edges[("A", "Z")] == ["send/recv close"]
    assert lane.loops["A"]["recv"] == ["ping"]
    svg = render_svg(table)
    assert "send go" in svg and "recv back" in svg and "recv: ping" in svg


# --- the pytest plugin ------------------------------------------------------------------------


PLUGIN_ARGS = ("-p", "spec_map.pytest_plugin", "-p", "no:cacheprovider")


def test_plugin_records_outcomes_and_fails_unknown_ids(tmp_path: Path) -> None:
    catalog = catalog_from_pages(SYNTH_PAGES, REV)
    (tmp_path / "catalog.json").write_text(dump_catalog(catalog), encoding="utf-8")
    _write(
        tmp_path / "test_inner.py",
        f"""\
        import pytest

        @pytest.mark.spec("{_rid(1)}")
        def test_ok():
            pass

        @pytest.mark.spec("{_rid(2)}")
        def test_fails():
            assert False

        @pytest.mark.spec("{_rid(3)}")
        @pytest.mark.skip(reason="synthetic")
        def test_skipped():
            pass

        @pytest.mark.spec("{REV}/basic/lifecycle#nope.1")
        def test_unknown():
            pass
        """,
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")])
    env["SPEC_MAP_CATALOG"] = str(tmp_path / "catalog.json")
    env["SPEC_MAP_RESULTS"] = str(tmp_path / "results.json")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rA", "test_inner.py", *PLUGIN_ARGS],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "not in the catalog (spec_map/clauses/)" in proc.stdout
    assert f"{REV}/basic/lifecycle#nope.1" in proc.stdout
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert results["passed"] == {_rid(1): ["test_inner.py::test_ok"]}
    assert results["failed"] == {_rid(2): ["test_inner.py::test_fails"]}
    assert results["skipped"] == {_rid(3): ["test_inner.py::test_skipped"]}
    assert results["unknown"] == {"test_inner.py::test_unknown": [f"{REV}/basic/lifecycle#nope.1"]}

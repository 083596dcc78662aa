"""Which clauses are implemented, tested, waived or still open.

The rule
--------
A clause is *required* when all of these hold:

* its strongest keyword is MUST, MUST NOT, REQUIRED, SHALL or SHALL NOT;
* it binds a protocol library: ``client``, ``server``, ``both``, ``transport`` (or
  ``unknown``, counted in to be safe) -- not ``host``;
* its page is one the project implements in its revision (the revision's ``scope`` in
  :mod:`spec_map.revisions`), or the clause is cited somewhere (a cited clause of
  ``basic/authorization`` is checked like any other).

A required clause is *satisfied* when it is **waived** in ``waivers.toml``, or when it is
both **implemented** (cited by a ``# Spec:`` comment under ``mcp_ref/``) **and tested**
(cited by the ``spec`` marker of a test that passed in the last recorded run,
``spec_map/results.json``), or when it is **carried**: listed in ``carried.toml`` as the
same sentence as a done clause of an earlier revision whose code both eras share (the
rule is in :mod:`spec_map.carried`; shown apart as "done via <source>", never as done).
With ``--no-results`` (or no results file), a test marker citing it is enough for
"tested".  The project implements both roles, so a clause
binding only one side still counts; one we choose not to do needs a waiver.

SHOULD-level clauses follow the same rule but are only counted, never failing.
Unknown ids (in ``# Spec:`` comments, markers, docstrings or waivers) are errors.

Revisions
---------
The catalog holds every revision (:mod:`spec_map.revisions`), and the rule above is
applied to each one's clauses alike: any catalogued clause may be cited, and its tag's
quote is verified.  The accounting is per revision.  The check *fails* on an open
required clause only in a revision whose setting is ``required`` (2025-06-18); in a
``citable`` one (2024-11-05, 2025-03-26, 2025-11-25, 2026-07-28, ``extensions``) the
same figures are shown (:meth:`Analysis.revision_summaries`) and never fail.  A clause
id names exactly one revision: citing ``2025-06-18/basic/lifecycle#timeouts.1`` says
nothing of 2025-11-25's copy of that sentence, which is counted on its own.
"""

from __future__ import annotations

import difflib
import json
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .binds import LIBRARY_BINDS
from .carried import Carried, CarriedError, apply, load_carried
from .catalog import ID_PATTERN, Catalog, page_of
from .cites import Citation, scan
from .quotes import problems as quote_problems
from .revisions import DEFAULT_SCOPE, REQUIRED, REVISIONS, Revision, policy, revision_of
from .waivers import WaiverError, expand, load_waivers

__all__ = [
    "IN_SCOPE",
    "RULE",
    "Analysis",
    "ClauseStatus",
    "PageSummary",
    "RevisionSummary",
    "analyze",
    "format_open",
    "format_revisions",
    "format_table",
    "in_scope",
    "load_results",
]

IN_SCOPE = DEFAULT_SCOPE
"""2025-06-18's implemented pages; every revision's are in :mod:`spec_map.revisions`."""


RULE = textwrap.dedent(
    """\
    rule: a MUST / MUST NOT / REQUIRED / SHALL / SHALL NOT clause that binds a protocol
    library (client, server, both, transport, or unknown) on a page the project
    implements (in 2025-06-18: basic, basic/lifecycle, basic/transports,
    basic/utilities/*, server/*, client/*; each revision's list is in
    spec_map/revisions.py; other pages only for clauses that are cited) is satisfied
    when it is waived in waivers.toml, or when it is BOTH cited by a '# Spec: <id>'
    comment under mcp_ref/ AND cited by @pytest.mark.spec on a test that passed in the
    last run (spec_map/results.json, written by the pytest plugin), or when it is
    carried: listed in carried.toml as the same sentence as a done clause of an earlier
    revision whose code both eras share (shown as 'done via <source>'; initialize,
    sessions, the handshake, capabilities, logging/setLevel and resources/subscribe are
    never carried).  With --no-results a test marker alone counts as tested.  Clauses
    binding only one side still count
    (mcp_ref implements both); one we do not do needs a waiver.  Host-bound clauses (UI,
    user consent) are counted apart.  SHOULD clauses are counted, never failing.  Every
    revision is catalogued and citable, and counted on its own; only a revision whose
    setting is 'required' in spec_map/revisions.py (2025-06-18) fails the check.  Exit
    status 1 if a required clause of such a revision is open, or any id (of any
    revision) is unknown, or a tag's quote is not its clause's text.
    """
)
"""The rule, as printed by ``check --help`` and in the report."""


def in_scope(page: str, revision: str = "2025-06-18") -> bool:
    """True if ``page`` (a path within ``revision``) is one the project implements in
    that revision (:mod:`spec_map.revisions`)."""
    return policy(revision).in_scope(page)


@dataclass(slots=True, kw_only=True)
class ClauseStatus:
    """Everything known about one clause."""

    clause: dict[str, Any]
    code: list[Citation] = field(default_factory=list)
    """``# Spec:`` comments citing it."""
    tests: list[Citation] = field(default_factory=list)
    """Test markers citing it (static scan)."""
    passed: list[str] = field(default_factory=list)
    """Node ids of tests that cite it and passed (results.json)."""
    failed: list[str] = field(default_factory=list)
    """Node ids of tests that cite it and failed."""
    skipped: list[str] = field(default_factory=list)
    """Node ids of tests that cite it and were skipped (or xfailed)."""
    waiver: str | None = None
    """The waiver reason, or None."""
    carried: Carried | None = None
    """Its ``carried.toml`` entry (checked by :func:`spec_map.carried.apply`), or None."""
    source: ClauseStatus | None = None
    """With :attr:`carried`, the status of the clause it is carried from."""
    scope: bool = False
    """True if the clause's page is implemented or the clause is cited."""
    enforced: bool = True
    """True if the clause's revision is ``required`` (open required clauses fail)."""
    use_results: bool = True

    @property
    def id(self) -> str:
        """The clause id."""
        return str(self.clause["id"])

    @property
    def revision(self) -> str:
        """The clause's revision (``2025-06-18``, ``extensions``)."""
        return str(self.clause["revision"])

    @property
    def level(self) -> str:
        """``MUST``, ``SHOULD`` or ``MAY``."""
        return str(self.clause["level"])

    @property
    def library(self) -> bool:
        """True if the clause binds a protocol library (not the host)."""
        return self.clause["binds"] in LIBRARY_BINDS

    @property
    def implemented(self) -> bool:
        """Cited by at least one ``# Spec:`` comment."""
        return bool(self.code)

    @property
    def tested(self) -> bool:
        """Cited by a passing test (or, without results, by any test marker)."""
        return bool(self.passed) if self.use_results else bool(self.tests)

    @property
    def checked(self) -> bool:
        """True if the clause is counted by the checker (in scope, library-binding)."""
        return self.scope and self.library and self.level in ("MUST", "SHOULD")

    @property
    def done_via(self) -> str | None:
        """The id of the done clause this one is carried from, or None: listed in
        ``carried.toml``, not done itself, and its source done (not carried, not
        waived)."""
        if self.source is None or (self.implemented and self.tested):
            return None
        return self.source.id if self.source.status == "done" else None

    @property
    def satisfied(self) -> bool:
        """Waived, implemented and tested, or carried from a done clause."""
        return (
            self.waiver is not None
            or (self.implemented and self.tested)
            or self.done_via is not None
        )

    @property
    def required(self) -> bool:
        """A checked MUST-level clause: open ones fail the check if :attr:`enforced`."""
        return self.checked and self.level == "MUST"

    @property
    def status(self) -> str:
        """One word for reports.

        ``waived``, ``done`` (implemented and tested), ``carried`` (done through an
        earlier revision's clause, :attr:`done_via`), ``untested`` (implemented only),
        ``unimplemented`` (tested only), ``open`` (neither), ``host`` (binds the host and
        is not cited), ``unchecked`` (a page outside the project, not cited).
        """
        if self.waiver is not None:
            return "waived"
        if self.implemented and self.tested:
            return "done"
        if self.done_via is not None:
            return "carried"
        if self.implemented:
            return "untested"
        if self.tested:
            return "unimplemented"
        if not self.library:
            return "host"
        if not self.scope:
            return "unchecked"
        return "open"


@dataclass(slots=True, kw_only=True)
class PageSummary:
    """Counts for one page (the checker's table row)."""

    page: str
    """The page path within its revision (``basic/lifecycle``), or ``TOTAL``."""
    scope: bool
    revision: str = ""
    clauses: int = 0
    must: int = 0
    implemented: int = 0
    tested: int = 0
    carried: int = 0
    """MUSTs done through an earlier revision's clause (``carried.toml``)."""
    waived: int = 0
    open: int = 0
    should: int = 0
    should_ok: int = 0
    host: int = 0


@dataclass(slots=True, kw_only=True)
class RevisionSummary:
    """Counts for one revision (the checker's per-revision table row)."""

    revision: str
    setting: str
    """``required`` or ``citable`` (:mod:`spec_map.revisions`)."""
    clauses: int = 0
    must: int = 0
    """Clauses whose strongest keyword is MUST-level (MUST, MUST NOT, REQUIRED, SHALL)."""
    should: int = 0
    """SHOULD-level (SHOULD, SHOULD NOT, RECOMMENDED, NOT RECOMMENDED)."""
    may: int = 0
    """MAY-level (MAY, OPTIONAL)."""
    required: int = 0
    """Required clauses: library-binding MUSTs on implemented pages, or cited."""
    done: int = 0
    """Required clauses implemented and tested (not waived)."""
    carried: int = 0
    """Required clauses done through an earlier revision's clause (``carried.toml``)."""
    waived: int = 0
    open: int = 0
    """Required clauses neither waived nor implemented and tested."""
    cited: int = 0
    """Clauses (any level) cited by a ``# Spec:`` tag or a test marker."""

    @property
    def fails(self) -> bool:
        """True when this revision's open clauses fail the check."""
        return self.setting == REQUIRED and self.open > 0


@dataclass(slots=True, kw_only=True)
class Analysis:
    """The result of :func:`analyze`."""

    catalog: Catalog
    statuses: dict[str, ClauseStatus]
    citations: list[Citation]
    errors: list[str]
    warnings: list[str]
    use_results: bool
    results_found: bool
    policies: dict[str, Revision] = field(default_factory=dict)
    """Revision -> its table entry, for every revision of the catalog."""

    @property
    def open_required(self) -> list[ClauseStatus]:
        """Required clauses not satisfied in the ``required`` revisions, in catalog
        order: the ones that fail the check."""
        return [s for s in self.statuses.values() if s.required and s.enforced and not s.satisfied]

    def open_in(self, revision: str) -> list[ClauseStatus]:
        """Required clauses of ``revision`` not satisfied, whatever its setting."""
        return [
            s
            for s in self.statuses.values()
            if s.revision == revision and s.required and not s.satisfied
        ]

    @property
    def open_should(self) -> list[ClauseStatus]:
        """Checked SHOULD-level clauses not satisfied."""
        return [
            s
            for s in self.statuses.values()
            if s.enforced and s.checked and s.level == "SHOULD" and not s.satisfied
        ]

    @property
    def ok(self) -> bool:
        """True when nothing required is open and there are no errors."""
        return not self.errors and not self.open_required

    def revision_summaries(self) -> list[RevisionSummary]:
        """One row per revision of the catalog, in catalog order."""
        rows = {
            name: RevisionSummary(revision=name, setting=self.policies[name].setting)
            for name in self.catalog.revisions
        }
        for status in self.statuses.values():
            row = rows[status.revision]
            row.clauses += 1
            setattr(row, status.level.lower(), getattr(row, status.level.lower()) + 1)
            row.cited += bool(status.code or status.tests)
            if status.required:
                row.required += 1
                if status.waiver is not None:
                    row.waived += 1
                elif status.done_via is not None:
                    row.carried += 1
                elif status.satisfied:
                    row.done += 1
                else:
                    row.open += 1
        return list(rows.values())

    def summaries(self, revision: str | None = None) -> list[PageSummary]:
        """One row per page that has clauses, in catalog order: ``revision``'s pages,
        or every revision's when None (then the rows' pages repeat across revisions:
        tell them apart by :attr:`PageSummary.revision`)."""
        rows: dict[str, PageSummary] = {}
        for status in self.statuses.values():
            if revision not in (None, status.revision):
                continue
            page = status.clause["page"]
            row = rows.setdefault(
                page_of(status.clause),
                PageSummary(
                    page=page,
                    revision=status.revision,
                    scope=self.policies[status.revision].in_scope(page),
                ),
            )
            row.clauses += 1
            if not status.library:
                row.host += 1
            if not status.checked:
                continue
            row.scope = True
            if status.level == "MUST":
                row.must += 1
                row.implemented += status.implemented
                row.tested += status.tested
                row.waived += status.waiver is not None
                row.carried += status.status == "carried"
                row.open += not status.satisfied
            else:
                row.should += 1
                row.should_ok += status.satisfied
        return list(rows.values())


def load_results(path: Path) -> dict[str, dict[str, list[str]]] | None:
    """Read ``results.json`` written by the pytest plugin; None if absent or unreadable.

    Returns:
        ``{"passed": {clause id: [node ids]}, "failed": {...}, "skipped": {...}}``.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    out: dict[str, dict[str, list[str]]] = {}
    for key in ("passed", "failed", "skipped"):
        value = data.get(key, {})
        out[key] = value if isinstance(value, dict) else {}
    return out


def _hint(ref: str, catalog: Catalog) -> str:
    """A suggestion for an unknown reference."""
    m = ID_PATTERN.fullmatch(ref)
    if m is None:
        return "not a clause id (expected <revision>/<page>#<section-slug>.<n>)"
    revision, page, slug = m.group("rev"), m.group("page"), m.group("slug")
    if revision not in catalog.revisions:
        known = ", ".join(catalog.revisions)
        return f"revision {revision!r} is not catalogued (the catalog has {known})"
    pages = catalog.revisions[revision]
    if page not in pages:
        close = difflib.get_close_matches(page, list(pages), n=1)
        return f"no page {page!r} in {revision}" + (
            f"; did you mean {close[0]!r}?" if close else ""
        )
    in_section = [
        cid
        for cid, c in catalog.clauses.items()
        if c["revision"] == revision and c["page"] == page and c["section"] == slug
    ]
    slugs = [s["slug"] for s in pages[page]["sections"]]
    if slug not in slugs:
        close = difflib.get_close_matches(slug, slugs, n=1)
        return f"no section {slug!r} in {page}" + (f"; did you mean {close[0]!r}?" if close else "")
    if m.group("n") is None:
        if len(in_section) == 1:
            return f"a section, not a clause; its only clause is {in_section[0]}"
        if in_section:
            return f"a section, not a clause; cite one of {in_section[0]} .. {in_section[-1]}"
        return "a section with no normative sentence; cite the clause you implement"
    if in_section:
        return f"section {slug!r} has clauses .1 to .{len(in_section)}"
    return f"section {slug!r} of {page} has no normative sentence"


def analyze(
    *,
    root: Path,
    catalog: Catalog,
    waivers_path: Path,
    results_path: Path | None,
    package: str = "mcp_ref",
    tests: str = "tests",
    revisions: Iterable[Revision] = REVISIONS,
    carried_path: Path | None = None,
) -> Analysis:
    """Scan ``root`` and combine citations, waivers and test results with the catalog.

    Args:
        root: the repository root (holds ``package`` and ``tests``).
        catalog: the loaded catalog (any number of revisions).
        waivers_path: ``waivers.toml`` (missing means none).
        results_path: ``results.json``, or None to ignore test results (then a test
            marker alone counts as "tested").
        revisions: the settings table (default :data:`spec_map.revisions.REVISIONS`);
            a catalog revision missing from it is ``required``
            (:func:`spec_map.revisions.policy`).
        carried_path: ``carried.toml`` (:mod:`spec_map.carried`), or None for none.

    Returns:
        The :class:`Analysis`; problems are in its ``errors`` and ``warnings``, never
        raised.
    """
    table = tuple(revisions)
    policies = {name: policy(name, table) for name in catalog.revisions}
    errors: list[str] = []
    warnings: list[str] = []
    citations, problems = scan(root, package=package, tests=tests)
    for problem in problems:
        (errors if problem.error else warnings).append(str(problem))
    # Every '# Spec:' tag quotes its clause's words (spec_map/quotes.py).
    errors.extend(quote_problems(root / package, root, catalog.clauses))
    statuses = {cid: ClauseStatus(clause=c) for cid, c in catalog.clauses.items()}
    for cite in citations:
        status = statuses.get(cite.ref)
        if cite.kind == "mention":
            catalogued = revision_of(cite.ref) in catalog.revisions
            if catalogued and not catalog.knows_reference(cite.ref):
                errors.append(
                    f"{cite.path}:{cite.line}: error: unknown spec reference {cite.ref} "
                    f"({_hint(cite.ref, catalog)})"
                )
            continue
        if status is None:
            what = "'# Spec:' comment" if cite.kind == "code" else "spec marker"
            errors.append(
                f"{cite.path}:{cite.line}: error: {what} cites unknown clause {cite.ref} "
                f"({_hint(cite.ref, catalog)})"
            )
            continue
        (status.code if cite.kind == "code" else status.tests).append(cite)
    try:
        reasons, waiver_errors = expand(load_waivers(waivers_path), catalog)
    except WaiverError as exc:
        reasons, waiver_errors = {}, [str(exc)]
    errors.extend(waiver_errors)
    for cid, reason in reasons.items():
        statuses[cid].waiver = reason
    try:
        listed = load_carried(carried_path) if carried_path is not None else None
        carried, carried_errors = apply(listed, catalog) if listed is not None else ({}, [])
    except CarriedError as exc:
        carried, carried_errors = {}, [str(exc)]
    errors.extend(carried_errors)
    for cid, entry in carried.items():
        statuses[cid].carried, statuses[cid].source = entry, statuses[entry.via]
    results = load_results(results_path) if results_path is not None else None
    use_results = results_path is not None
    if results_path is not None and results is None:
        warnings.append(
            f"no readable {results_path} (run the test suite first, or pass --no-results): "
            "no clause counts as tested"
        )
    if results is not None:
        for key in ("passed", "failed", "skipped"):
            for cid, nodes in results[key].items():
                if cid in statuses and isinstance(nodes, list):
                    getattr(statuses[cid], key).extend(str(n) for n in nodes)
    for status in statuses.values():
        status.use_results = use_results
        rev = policies[status.revision]
        status.enforced = rev.setting == REQUIRED
        status.scope = rev.in_scope(status.clause["page"]) or bool(status.code or status.tests)
        if status.waiver is not None and status.implemented:
            warnings.append(f"{status.id} is waived but cited in code ({status.code[0].path})")
        if status.carried is not None and status.implemented and status.tested:
            warnings.append(f"{status.id} is done itself: its carried.toml row is redundant")
    return Analysis(
        catalog=catalog,
        statuses=statuses,
        citations=citations,
        errors=errors,
        warnings=warnings,
        use_results=use_results,
        results_found=results is not None,
        policies=policies,
    )


def format_table(rows: Iterable[PageSummary]) -> str:
    """The per-page table, as aligned text, with a total row."""
    head = (
        "page",
        "clauses",
        "MUST",
        "impl",
        "tested",
        "carried",
        "waived",
        "open",
        "SHOULD",
        "ok",
        "host",
    )
    lines: list[tuple[str, ...]] = [head]
    total = PageSummary(page="TOTAL", scope=True)
    for row in rows:
        for name in ("clauses", "must", "implemented", "tested", "carried", "waived", "open"):
            setattr(total, name, getattr(total, name) + getattr(row, name))
        for name in ("should", "should_ok", "host"):
            setattr(total, name, getattr(total, name) + getattr(row, name))
        lines.append(_row(row))
    lines.append(_row(total))
    return aligned(lines)


def aligned(lines: list[tuple[str, ...]]) -> str:
    """Rows of cells as aligned text: the first column left, the others right, a rule
    under the head (the first row) and above the total (the last)."""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    out = []
    for index, line in enumerate(lines):
        cells = [line[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(line[1:], widths[1:], strict=True)
        ]
        out.append("  ".join(cells).rstrip())
        if index in (0, len(lines) - 2):
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def _row(row: PageSummary) -> tuple[str, ...]:
    if not row.scope:
        return (row.page + " (not implemented)", str(row.clauses), *("-",) * 8, str(row.host))
    return (
        row.page,
        str(row.clauses),
        str(row.must),
        str(row.implemented),
        str(row.tested),
        str(row.carried),
        str(row.waived),
        str(row.open),
        str(row.should),
        str(row.should_ok),
        str(row.host),
    )


def format_revisions(rows: Iterable[RevisionSummary]) -> str:
    """The per-revision table, as aligned text (no total: revisions are not summed)."""
    head = (
        "revision",
        "setting",
        "clauses",
        "MUST",
        "SHOULD",
        "MAY",
        "required",
        "done",
        "carried",
        "waived",
        "open",
        "cited",
    )
    lines: list[tuple[str, ...]] = [head]
    for r in rows:
        lines.append(
            (
                r.revision,
                r.setting,
                *(str(n) for n in (r.clauses, r.must, r.should, r.may, r.required)),
                *(str(n) for n in (r.done, r.carried, r.waived, r.open, r.cited)),
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = []
    for index, line in enumerate(lines):
        cells = [line[0].ljust(widths[0]), line[1].ljust(widths[1])]
        cells += [c.rjust(w) for c, w in zip(line[2:], widths[2:], strict=True)]
        out.append("  ".join(cells).rstrip())
        if index == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def format_open(statuses: Iterable[ClauseStatus]) -> str:
    """The given clauses with their text, one paragraph each, for ``--list-open``."""
    out = []
    for s in statuses:
        got = []
        if s.implemented:
            got.append("implemented at " + ", ".join(f"{c.path}:{c.line}" for c in s.code))
        if s.tests:
            got.append("test markers at " + ", ".join(f"{c.path}:{c.line}" for c in s.tests))
        if s.failed:
            got.append("failing: " + ", ".join(s.failed))
        if s.source is not None:
            got.append(f"carried from {s.source.id}, which is {s.source.status}")
        state = "; ".join(got) if got else "not cited"
        text = s.clause["text"]
        if s.clause["detail"]:
            text += " " + " / ".join(s.clause["detail"])
        out.append(
            f"{s.id}  [{s.clause['keyword']}, binds {s.clause['binds']}] {state}\n    {text}"
        )
    return "\n".join(out)

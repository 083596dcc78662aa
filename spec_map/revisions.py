"""The revisions spec_map catalogues, and what ``check`` demands of each: the one table.

Every folder of the spec listed in :data:`REVISIONS` is extracted into its own file,
``spec_map/clauses/<name>.json``, and every clause of every one of them may be cited:
by a ``# Spec:`` tag (whose quote is checked against the clause), a test marker, a
waiver or a mention.  An id of a listed revision that the catalog does not hold is an
error, whatever the revision's setting.

What differs per revision is the *setting*:

``required``
    A required clause (a library-binding MUST on an implemented page, or cited
    anywhere; see :mod:`spec_map.check`) that is neither implemented and tested nor
    waived fails ``python -m spec_map check``.  Today 2025-06-18 and 2026-07-28.
``citable``
    The same counts are made and shown (per revision by ``check``, per page by the
    report), but open clauses do not fail the check.  A revision whose work is still to
    come (2025-11-25: its tasks page, and its own authorization page) stays here until it
    lands; then flipping the word here is all it takes to hold the tree to it.

*scope* lists the pages (fnmatch patterns, ``*`` spanning folders) the project
implements in that revision: their library-binding MUSTs are counted whether cited or
not; a clause of another page counts only once something cites it.  Page paths differ
between revisions (2025-06-18's ``basic.md`` is ``basic/index.md`` elsewhere; 2026-07-28
splits the transports and adds ``basic/patterns/``), hence one list per revision.

``extensions`` is the spec folder's ``extensions/`` (official extensions and their SEPs),
catalogued as one more revision: ids such as
``extensions/tasks/tasks-spec#capability-negotiation.1``.  It has no page in scope.

A catalog revision that is not in the table (the synthetic catalogs of the tests) is
``required`` with 2025-06-18's scope: unknown means strict.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "CITABLE",
    "DEFAULT_SCOPE",
    "REQUIRED",
    "REVISIONS",
    "REVISION_PATTERN",
    "SETTINGS",
    "Revision",
    "policy",
    "revision_of",
]

REQUIRED = "required"
"""Setting: an open required clause of the revision fails ``check``."""
CITABLE = "citable"
"""Setting: the revision's clauses may be cited and are counted, never failing."""
SETTINGS = (REQUIRED, CITABLE)

REVISION_PATTERN = r"(?:\d{4}-\d{2}-\d{2}|extensions)"
"""What may stand before the first ``/`` of a clause id: a dated revision or
``extensions``."""


@dataclass(frozen=True, slots=True)
class Revision:
    """One catalogued revision and what ``check`` demands of it."""

    name: str
    """The spec folder's name, and the first part of every id (``2025-06-18``)."""
    setting: str
    """:data:`REQUIRED` or :data:`CITABLE`."""
    scope: tuple[str, ...]
    """Page patterns the project implements in this revision."""
    why: str
    """Why this setting, for the report."""

    def in_scope(self, page: str) -> bool:
        """True if ``page`` (a path within the revision) matches :attr:`scope`."""
        return any(fnmatch.fnmatchcase(page, pattern) for pattern in self.scope)


DEFAULT_SCOPE = (
    "basic",
    "basic/lifecycle",
    "basic/transports",
    "basic/utilities/*",
    "server/*",
    "client/*",
)
"""2025-06-18's implemented pages (its overview is ``basic.md``; ``server.md``,
``architecture.md``, the changelog, authorization and security best practices are out)."""

_HANDSHAKE_SCOPE = (
    "basic/index",
    "basic/messages",
    "basic/lifecycle",
    "basic/transports",
    "basic/utilities/*",
    "server/prompts",
    "server/resources",
    "server/tools",
    "server/utilities/*",
    "client/*",
)
"""The same pages in the folders laid out as 2024-11-05, 2025-03-26 and 2025-11-25 are
(the overview is ``basic/index.md``; ``server/index.md`` is out like 2025-06-18's
``server.md``; 2024-11-05 alone has ``basic/messages.md``)."""

REVISIONS: tuple[Revision, ...] = (
    Revision(
        "2024-11-05",
        CITABLE,
        _HANDSHAKE_SCOPE,
        "negotiated (stdio, HTTP+SSE); its rules are traced through the 2025-06-18 "
        "clauses that carry them",
    ),
    Revision(
        "2025-03-26",
        CITABLE,
        _HANDSHAKE_SCOPE,
        "negotiated (batches); traced through 2025-06-18 like 2024-11-05",
    ),
    Revision(
        "2025-06-18",
        REQUIRED,
        DEFAULT_SCOPE,
        "the revision the project was built to; every library-binding MUST is done or waived",
    ),
    Revision(
        "2025-11-25",
        CITABLE,
        _HANDSHAKE_SCOPE,
        "negotiated; its new rules (tasks, URL elicitation, sampling with tools, "
        "authorization) are issues 15 and 16",
    ),
    Revision(
        "2026-07-28",
        REQUIRED,
        (
            "basic/index",
            "basic/versioning",
            "basic/patterns/*",
            "basic/transports/*",
            "server/discover",
            "server/prompts",
            "server/resources",
            "server/tools",
            "server/utilities/*",
            "client/*",
        ),
        "the stateless era (issue 15) and its authorization pages (issue 16): every "
        "library-binding MUST is done, carried or waived",
    ),
    Revision(
        "extensions",
        CITABLE,
        (),
        "official extensions (tasks, auth) and their SEPs: cited where implemented",
    ),
)
"""Every catalogued revision, oldest first, ``extensions`` last."""

_BY_NAME = {r.name: r for r in REVISIONS}
_REVISION_OF = re.compile(rf"^({REVISION_PATTERN})/")


def policy(name: str, table: Iterable[Revision] | None = None) -> Revision:
    """The table entry of revision ``name`` (default table: :data:`REVISIONS`); a
    revision not in it is ``required`` with :data:`DEFAULT_SCOPE`."""
    found = _BY_NAME.get(name) if table is None else {r.name: r for r in table}.get(name)
    if found is not None:
        return found
    return Revision(name, REQUIRED, DEFAULT_SCOPE, "not in spec_map/revisions.py: held strictly")


def revision_of(ref: str) -> str | None:
    """The revision part of a clause id or reference (``2025-06-18``, ``extensions``),
    or None when ``ref`` does not start with one."""
    m = _REVISION_OF.match(ref)
    return m.group(1) if m else None

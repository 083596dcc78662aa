"""spec_map: the MCP spec's normative sentences, and which code and tests cover them.

Theory of operation
-------------------
``clauses/<revision>.json`` lists every normative sentence ("clause") of one revision's
spec pages, for every revision the project speaks or is about to speak (2024-11-05,
2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28) and for the official extensions
(``extensions``), each with a stable id such as
``2025-06-18/basic/lifecycle#version-negotiation.2`` (see :mod:`spec_map.extract`).
Code cites clauses with ``# Spec: <id>`` comments (each followed by a quote of the
clause, :mod:`spec_map.quotes`), tests with ``@pytest.mark.spec("<id>")``;
``waivers.toml`` lists clauses deliberately left out, and ``carried.toml`` the clauses of
a later revision done *through* the identical, done clause of an earlier one on code
both eras share (:mod:`spec_map.carried`; shown apart, "done via <source>").  Any catalogued clause may be
cited; an unknown id is an error.  ``python -m spec_map check`` tells, revision by
revision, which library-binding MUST clauses are neither implemented and tested nor
waived, and fails when such a clause is open in a revision whose setting is
``required`` (:mod:`spec_map.revisions`, the one table of settings: today 2025-06-18);
``report`` draws it as a static HTML page (both print 2025-11-25 and 2026-07-28 side by
side per page, :mod:`spec_map.side`); ``open`` writes ``open-<revision>.md``, what is
left (:mod:`spec_map.openlist`); ``carried`` proposes ``carried.toml`` entries to review;
``modules`` lists the clauses each ``mcp_ref`` module cites.  The pytest plugin (:mod:`spec_map.pytest_plugin`) records
which cited clauses passing tests prove.

Standard library only.
"""

from __future__ import annotations

from .catalog import CATALOG_DIR, Catalog, build_catalog, find_spec_dir, load_catalog

__all__ = ["CATALOG_DIR", "Catalog", "build_catalog", "find_spec_dir", "load_catalog"]

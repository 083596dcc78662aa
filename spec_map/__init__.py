"""spec_map: the MCP spec's normative sentences, and which code and tests cover them.

Theory of operation
-------------------
``catalog.json`` lists every normative sentence ("clause") of the 2025-06-18 spec pages,
each with a stable id such as ``2025-06-18/basic/lifecycle#version-negotiation.2``
(see :mod:`spec_map.extract`).  Code cites clauses with ``# Spec: <id>`` comments,
tests with ``@pytest.mark.spec("<id>")``; ``waivers.toml`` lists clauses deliberately
left out.  ``python -m spec_map check`` tells which library-binding MUST clauses are
neither implemented and tested nor waived; ``report`` draws it as a static HTML page;
``modules`` lists the clauses each ``mcp_ref`` module cites.  The pytest plugin
(:mod:`spec_map.pytest_plugin`) records which cited clauses passing tests prove.

Standard library only.
"""

from __future__ import annotations

from .catalog import CATALOG_PATH, Catalog, build_catalog, find_spec_dir, load_catalog

__all__ = ["CATALOG_PATH", "Catalog", "build_catalog", "find_spec_dir", "load_catalog"]

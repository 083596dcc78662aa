"""Sphinx configuration of the API reference (``python -m sphinx docs/api docs/_build``).

Built with no network: no intersphinx, no remote images.  ``tests/test_docs_build.py``
builds it with ``-W --keep-going`` (every warning is an error).
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import re
import sys
from pathlib import Path

# Document the mcp_ref of this checkout, not an installed copy.
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

project = "mcp-ref"
author = "the mcp-ref authors"
copyright = "the mcp-ref authors"
release = "0.1.0"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "myst_parser",
]

# The docstrings are Google style (Args:, Raises:, Returns:).
napoleon_google_docstring = True
napoleon_numpy_docstring = False

# Only the public names: each page's automodule has :members:, which follows the
# package's __all__; the names with no docstring of their own (constants) are listed too.
# (Not "members" here: Sphinx 9 lets a default of True override a directive's list.)
autodoc_default_options = {
    "undoc-members": True,
    "member-order": "bysource",
}
# Type hints go in the signature, as written (the modules use
# `from __future__ import annotations`; a name autodoc cannot resolve stays text).
autodoc_typehints = "signature"

# A cross-reference that finds no target is not a warning (nitpicky is off, Sphinx's
# default): docstrings name private modules (mcp_ref._client, ...) and the standard
# library, which this reference does not document and, with no intersphinx, cannot link.
nitpicky = False

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]

html_theme = "alabaster"
html_title = "mcp-ref API reference"
# The index links to the README, copied into the build as it is.
html_extra_path = [str(ROOT / "README.md")]


# A class's Google-style "Attributes:" section describes its fields.  Napoleon would
# render each entry as an `.. attribute::` of the class while autodoc lists the same
# attribute again (from the slots, the annotations, a property), and Sphinx warns of the
# duplicate.  So the entries autodoc lists are taken out of the class's docstring, and
# each becomes the description of autodoc's own entry, unless that entry has one (a
# property's docstring).  Entries autodoc does not list stay in the section.
_SECTION = re.compile(r"^(\s*)Attributes:\s*$")
_ENTRY = re.compile(r"^(\w+)(?:\s*\(([^)]*)\))?:\s*(.*)$")


def _attributes_section(lines: list[str]) -> tuple[int, int, dict[str, list[str]]] | None:
    """Where a docstring's Attributes section is, and its entries (name -> lines)."""
    for start, line in enumerate(lines):
        header = _SECTION.match(line)
        if header is None:
            continue
        indent = len(header.group(1))
        entries: dict[str, list[str]] = {}
        end = start + 1
        while end < len(lines):
            line = lines[end]
            if line.strip() and len(line) - len(line.lstrip()) <= indent:
                break
            entry = _ENTRY.match(line.strip())
            if entry and len(line) - len(line.lstrip()) <= indent + 4:
                entries[entry.group(1)] = [entry.group(3)]
            elif entries and line.strip():
                entries[list(entries)[-1]].append(line.strip())
            end += 1
        return start, end, entries
    return None


def _listed_by_autodoc(cls: type, name: str) -> bool:
    """Whether autodoc lists ``name`` among ``cls``'s own members."""
    return name in getattr(cls, "__annotations__", {}) or name in vars(cls)


def _resolve(dotted: str) -> object | None:
    """The object a documented dotted name names (module, then attributes)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            obj = getattr(obj, part, None)
        return obj
    return None


def _attributes(app, what, name, obj, options, lines):
    """autodoc-process-docstring: move a class's Attributes entries to autodoc's own."""
    if what in ("class", "exception") and isinstance(obj, type):
        found = _attributes_section(lines)
        if found is None:
            return
        start, end, entries = found
        keep = [n for n in entries if not _listed_by_autodoc(obj, n)]
        if keep == list(entries):
            return
        section = [lines[start]]
        for n in keep:
            section += [f"    {n}: {entries[n][0]}", *(f"        {x}" for x in entries[n][1:])]
        lines[start:end] = [*(section if keep else []), ""]
    elif what in ("attribute", "property") and not any(line.strip() for line in lines):
        owner, _, attr = name.rpartition(".")
        cls = _resolve(owner)
        doc = inspect.getdoc(cls) if isinstance(cls, type) else None
        found = _attributes_section(doc.splitlines()) if doc else None
        if found and attr in found[2]:
            lines[:] = [" ".join(found[2][attr])]


# A name that a module imports only under `if TYPE_CHECKING:` cannot be evaluated in its
# annotations, so autodoc leaves it bare in the signature; a bare name that two packages
# define (RequestContext: trio's and asyncio's) is then an ambiguous reference, which
# Sphinx warns of.  Such names are qualified with the module they are imported from.
@functools.cache
def _type_checking_imports(module_name: str) -> dict[str, str]:
    """The names ``module_name`` imports under ``if TYPE_CHECKING:`` (name -> dotted)."""
    module = sys.modules.get(module_name)
    try:
        tree = ast.parse(inspect.getsource(module)) if module else None
    except (OSError, TypeError):
        tree = None
    names: dict[str, str] = {}
    for node in ast.walk(tree) if tree else ():
        test = node.test if isinstance(node, ast.If) else None
        if not (
            (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
            or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
        ):
            continue
        for stmt in node.body:
            if isinstance(stmt, ast.ImportFrom):
                package = (
                    module_name if hasattr(module, "__path__") else module_name.rpartition(".")[0]
                )
                base = importlib.util.resolve_name("." * stmt.level + (stmt.module or ""), package)
                for alias in stmt.names:
                    names[alias.asname or alias.name] = f"{base}.{alias.name}"
    return names


def _qualify(app, what, name, obj, options, signature, return_annotation):
    """autodoc-process-signature: qualify the names imported under TYPE_CHECKING."""
    target = obj.fget if isinstance(obj, property) else obj
    module_name = getattr(target, "__module__", None)
    imports = _type_checking_imports(module_name) if module_name else {}
    if not imports or (signature is None and not return_annotation):
        return None
    bare = re.compile(r"(?<![\w.~])(" + "|".join(map(re.escape, imports)) + r")\b")

    def qualified(text: str | None) -> str | None:
        return bare.sub(lambda m: "~" + imports[m.group(1)], text) if text else text

    return qualified(signature), qualified(return_annotation)


# autodoc reads a constant's docstring (the string below its assignment) from the module
# being documented; a package that re-exports a constant has none there, so it is read
# from the module that defines it, found by following the `from .x import NAME` imports.
@functools.cache
def _defined_in(module_name: str, name: str) -> str | None:
    """The module that assigns ``name``, reached from ``module_name`` by its imports."""
    module = sys.modules.get(module_name)
    try:
        tree = ast.parse(inspect.getsource(module)) if module else None
    except (OSError, TypeError):
        return None
    package = module_name if hasattr(module, "__path__") else module_name.rpartition(".")[0]
    for stmt in tree.body if tree else ():
        if isinstance(stmt, ast.ImportFrom) and stmt.level:
            for alias in stmt.names:
                if (alias.asname or alias.name) == name:
                    source = "." * stmt.level + (stmt.module or "")
                    return _defined_in(importlib.util.resolve_name(source, package), alias.name)
    return module_name


def _constant_docs(app, what, name, obj, options, lines):
    """autodoc-process-docstring: a re-exported constant's docstring, from its module;
    never the docstring of the constant's type (autodoc's fallback: ``dict``'s, ...)."""
    if what != "data":
        return
    module_name, _, attr = name.rpartition(".")
    source = _defined_in(module_name, attr)
    if source is not None and source != module_name:
        from sphinx.pycode import ModuleAnalyzer, PycodeError

        try:
            own = ModuleAnalyzer.for_module(source).find_attr_docs().get(("", attr))
        except PycodeError:
            own = None
        if own:
            lines[:] = list(own)
            return
    type_doc = inspect.getdoc(type(obj)) or ""
    first = next((line.strip() for line in lines if line.strip()), None)
    if first is not None and type_doc.strip().startswith(first):
        lines[:] = []


# Napoleon reads the first line of an attribute's, a constant's or a property's docstring
# as Google's inline "type: description" form whenever it has a colon, so "``DEFAULT``: the
# client's default" would render as a type.  This project's such docstrings are prose, never
# that form: napoleon gets them as plain objects (its sections, Raises: etc., still apply).
def _napoleon_prose(app, what, name, obj, options, lines):
    """autodoc-process-docstring: napoleon's, without the inline-type form."""
    from sphinx.ext.napoleon import _process_docstring

    kind = "object" if what in {"attribute", "data", "property"} else what
    _process_docstring(app, kind, name, obj, options, lines)


def setup(app):
    from sphinx.ext.napoleon import _process_docstring

    for listener in list(app.events.listeners["autodoc-process-docstring"]):
        if listener.handler is _process_docstring:
            app.disconnect(listener.id)
    app.connect("autodoc-process-docstring", _napoleon_prose)
    # Before napoleon (priority 500), which turns the section into directives.
    app.connect("autodoc-process-docstring", _attributes, priority=400)
    app.connect("autodoc-process-signature", _qualify)
    app.connect("autodoc-process-docstring", _constant_docs, priority=400)

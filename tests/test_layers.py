"""The package's layers, read from the source: who may import whom, and who reads JSON.

mcp_ref has three layers: the sans-IO core (``mcp_ref/*.py``), the drivers that run it
(``mcp_ref/trio/``, ``mcp_ref/asyncio/``, ``mcp_ref/blocking/``), and the high-level
server and client built on them (``mcp_ref/server/``, ``mcp_ref/client/``).  These tests
read every module's imports with :mod:`ast` (imports inside functions included; those
under ``if TYPE_CHECKING:`` are annotations only, and listed apart) and check:

* no driver imports the high-level server or client;
* no transport module parses JSON: only the core reads messages
  (:mod:`mcp_ref._http_messages` for what the HTTP transports must know of them);
* the modules' run-time imports form no cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "mcp_ref"

DRIVERS = sorted(
    [*PACKAGE.glob("trio/**/*.py"), *PACKAGE.glob("asyncio/*.py"), *PACKAGE.glob("blocking/*.py")]
)
HIGH_LEVEL = ("mcp_ref.client", "mcp_ref.server")
JSON_READERS = {"loads", "load", "JSONDecoder", "raw_decode", "scan_once"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


_ALL = {_module_name(p) for p in PACKAGE.rglob("*.py")}


def _in_type_checking(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def imports_of(path: Path) -> tuple[set[str], set[str]]:
    """(run-time imports, TYPE_CHECKING-only imports) of one module, as absolute module
    names (``from .x import y`` gives ``pkg.x.y`` when that is a module, else
    ``pkg.x``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    runtime: set[str] = set()
    typing_only: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            stem = ".".join([*base, *(node.module.split(".") if node.module else [])])
            # ``from pkg import mod`` imports the module pkg.mod; ``from mod import
            # name`` imports mod (a package's __init__ runs first in any case, so it
            # is not an edge of its own).
            names = [
                f"{stem}.{alias.name}" if f"{stem}.{alias.name}" in _ALL else stem
                for alias in node.names
            ]
        else:
            continue
        target = typing_only if _in_type_checking(node, parents) else runtime
        target.update(n for n in names if n.startswith("mcp_ref"))
    return runtime, typing_only


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _edges(typing: bool) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        runtime, typing_only = imports_of(path)
        found = runtime | typing_only if typing else runtime
        graph[name] = {n for n in found if n in MODULES and n != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_reader_of_imports_sees_what_it_must() -> None:
    """The checks below are only as good as this reader: it resolves relative imports,
    finds imports inside functions and tells TYPE_CHECKING ones apart."""
    runtime, typing_only = imports_of(PACKAGE / "trio" / "http" / "endpoint.py")
    assert "mcp_ref.trio.http.sessions" in runtime and "mcp_ref._http_streams" in runtime
    assert "mcp_ref.trio._session_api" in imports_of(PACKAGE / "trio" / "http" / "server.py")[0]
    guarded = [p for p in MODULES.values() if "if TYPE_CHECKING:" in p.read_text("utf-8")]
    assert guarded and any(imports_of(p)[1] for p in guarded)
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("path", DRIVERS, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_driver_imports_the_high_level_server_or_client(path: Path) -> None:
    runtime, typing_only = imports_of(path)
    wrong = sorted(n for n in runtime | typing_only if n.startswith(HIGH_LEVEL))
    assert wrong == [], f"{path.name} imports {wrong}"


@pytest.mark.parametrize("path", DRIVERS, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_transport_module_parses_json(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    readers = [
        f"line {node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr in JSON_READERS
        and isinstance(node.value, ast.Name)
        and node.value.id == "json"
    ]
    imported = [
        f"line {node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and node.module == "json"
        and any(a.name in JSON_READERS for a in node.names)
    ]
    assert readers + imported == [], f"{path.name} reads JSON itself"


def test_run_time_imports_form_no_cycle() -> None:
    assert cycles(_edges(typing=False)) == []


def test_no_two_modules_import_each_other_even_for_annotations() -> None:
    """Imports go one way everywhere in ``mcp_ref/``, ``if TYPE_CHECKING:`` imports
    included (issue 14): e.g. the trio session's modules go ``_session -> _session_api
    -> _requests``."""
    assert cycles(_edges(typing=True)) == []


SIZED_MODULES = sorted([*PACKAGE.glob("trio/**/*.py"), *PACKAGE.glob("_http*.py")])


@pytest.mark.parametrize("path", SIZED_MODULES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_each_driver_and_http_module_can_be_read_in_one_sitting(path: Path) -> None:
    """The trio drivers and the sans-IO HTTP core: no module over 450 lines (issue 14)."""
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= 450, f"{path.name} has {lines} lines"

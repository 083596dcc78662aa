"""Find where code and tests cite spec clauses.

Three kinds of reference are collected, each with its file and line:

``code``
    a ``# Spec: <clause-id>`` comment in a ``.py`` file under the package folder
    (``mcp_ref/``).  One id per comment; put several comments for several clauses.
    Found with :mod:`tokenize`, so text inside strings never counts.  A ``# Spec:``
    comment citing another document (``# Spec: WHATWG 9.2.6 ...``, anything not
    starting with a ``YYYY-MM-DD/`` revision or ``extensions/``) is left alone.
``test``
    a string argument of ``pytest.mark.spec(...)`` in a ``.py`` file under ``tests/``
    (decorators, ``pytestmark = ...`` and ``pytest.param(..., marks=...)`` alike, and
    calls through a module-level alias such as ``spec = pytest.mark.spec``).  Found
    with :mod:`ast`; module-level string constants and f-strings of them are resolved.
``mention``
    any other text that looks like a clause id or section reference (docstrings, prose
    comments), in either folder.  Mentions do not count as implementing or testing
    anything, but one of a catalogued revision must name a real clause, section or page
    (mentions of other revisions, such as the tests' synthetic ``2099-01-01``, are left
    alone).  Text glued to a ``/``, ``.``, ``-`` or word character before it is part of
    something else (a URL path such as ``/specification/2025-11-25/basic/index#meta``,
    whose anchor is the site's, not a section slug) and is not a mention.

Problems found while scanning (a file that does not parse, a ``# Spec:`` comment with
no id or several, a marker argument that is not a string literal) are returned as
:class:`Problem` records, never raised.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .revisions import REVISION_PATTERN

__all__ = ["Citation", "Problem", "scan", "scan_code", "scan_tests"]

_SPEC_COMMENT = re.compile(r"#\s*Spec\s*:\s*(.*)$")
_REF = re.compile(rf"(?<![\w./-]){REVISION_PATTERN}/[a-z0-9_/-]+#[\w-]+(?:\.\d+)?")
_REVISION = re.compile(rf"{REVISION_PATTERN}/")
_TRAILING = re.compile(r"[.,;:)]+$")


@dataclass(frozen=True, slots=True, kw_only=True)
class Citation:
    """One reference to a clause from a source file."""

    ref: str
    """The clause id or reference as written."""
    kind: str
    """``code``, ``test`` or ``mention``."""
    path: str
    """File path relative to the scanned root, with ``/`` separators."""
    line: int
    """1-based line number."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Problem:
    """Something wrong in a source file, found while scanning."""

    path: str
    line: int
    message: str
    error: bool = True
    """False for a warning (reported, but does not fail the check)."""

    def __str__(self) -> str:
        level = "error" if self.error else "warning"
        return f"{self.path}:{self.line}: {level}: {self.message}"


def _py_files(folder: Path) -> Iterator[Path]:
    if folder.is_dir():
        yield from sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def _mentions(text: str, rel: str, skip: set[int]) -> list[Citation]:
    out = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if lineno in skip:
            continue
        for m in _REF.finditer(line):
            ref = _TRAILING.sub("", m.group(0))
            out.append(Citation(ref=ref, kind="mention", path=rel, line=lineno))
    return out


def scan_code(package: Path, root: Path) -> tuple[list[Citation], list[Problem]]:
    """``# Spec:`` comments and other mentions in every ``.py`` file under ``package``.

    Args:
        package: the folder to scan (``<repo>/mcp_ref``).
        root: the folder paths are reported relative to (the repo root).
    """
    cites: list[Citation] = []
    problems: list[Problem] = []
    for path in _py_files(package):
        rel = _rel(path, root)
        text = path.read_text(encoding="utf-8", errors="replace")
        spec_lines: set[int] = set()
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        except (tokenize.TokenError, SyntaxError) as exc:
            problems.append(Problem(path=rel, line=1, message=f"cannot tokenize: {exc}"))
            continue
        for tok in tokens:
            if tok.type != tokenize.COMMENT:
                continue
            m = _SPEC_COMMENT.match(tok.string)
            if not m:
                continue
            line = tok.start[0]
            spec_lines.add(line)
            words = m.group(1).split()
            first = _TRAILING.sub("", words[0]) if words else ""
            if words and not _REVISION.match(first):
                continue  # another spec (e.g. "# Spec: WHATWG 9.2.6 ..."): not ours to check
            ids = [_TRAILING.sub("", w) for w in words if _REF.fullmatch(_TRAILING.sub("", w))]
            if not _REF.fullmatch(first):
                problems.append(
                    Problem(
                        path=rel,
                        line=line,
                        message=f"'# Spec:' must be followed by a clause id, got {tok.string!r}",
                    )
                )
                continue
            if len(ids) > 1:
                problems.append(
                    Problem(
                        path=rel,
                        line=line,
                        message="one clause id per '# Spec:' comment; write one comment per id",
                    )
                )
            cites.extend(Citation(ref=i, kind="code", path=rel, line=line) for i in ids)
        cites.extend(_mentions(text, rel, spec_lines))
    return cites, problems


def _is_spec_marker(func: ast.expr, aliases: set[str]) -> bool:
    """True for ``pytest.mark.spec``, ``mark.spec``, or a name bound to one of them."""
    if isinstance(func, ast.Name):
        return func.id in aliases
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "spec"
        and (
            (isinstance(func.value, ast.Attribute) and func.value.attr == "mark")
            or (isinstance(func.value, ast.Name) and func.value.id == "mark")
        )
    )


def _string(node: ast.expr, consts: dict[str, object]) -> str | None:
    """The value of a string expression made of literals and module-level constants."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        value = consts.get(node.id)
        return value if isinstance(value, str) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _string(node.left, consts), _string(node.right, consts)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                if value.conversion != -1 or value.format_spec is not None:
                    return None
                part = _string(value.value, consts)
            else:
                part = _string(value, consts)
            if part is None:
                return None
            parts.append(part)
        return "".join(parts)
    return None


def _module_constants(tree: ast.Module) -> tuple[dict[str, object], set[str]]:
    """Module-level string (or tuple/list of strings) constants, and spec marker aliases."""
    consts: dict[str, object] = {}
    aliases: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            target, value = stmt.target, stmt.value
        else:
            continue
        if not isinstance(target, ast.Name):
            continue
        if _is_spec_marker(value, aliases):
            aliases.add(target.id)
            continue
        text = _string(value, consts)
        if text is not None:
            consts[target.id] = text
        elif isinstance(value, ast.Tuple | ast.List):
            items = [_string(e, consts) for e in value.elts]
            if all(i is not None for i in items):
                consts[target.id] = tuple(items)
    return consts, aliases


def _marker_args(
    node: ast.Call, consts: dict[str, object]
) -> Iterator[tuple[ast.expr, str | None]]:
    for arg in node.args:
        if isinstance(arg, ast.Starred):
            value = consts.get(arg.value.id) if isinstance(arg.value, ast.Name) else None
            if isinstance(value, tuple):
                yield from ((arg, str(v)) for v in value)
            else:
                yield arg, None
        else:
            yield arg, _string(arg, consts)


def scan_tests(tests: Path, root: Path) -> tuple[list[Citation], list[Problem]]:
    """``pytest.mark.spec("<id>", ...)`` arguments and other mentions under ``tests``.

    Marker arguments may be string literals, module-level string constants, or
    f-strings and ``+`` of those (``f"{T}#stdio.1"``); ``spec = pytest.mark.spec``
    aliases are followed.  Anything else is reported as a warning.

    Args:
        tests: the folder to scan (``<repo>/tests``).
        root: the folder paths are reported relative to (the repo root).
    """
    cites: list[Citation] = []
    problems: list[Problem] = []
    for path in _py_files(tests):
        rel = _rel(path, root)
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            tree = ast.parse(text, filename=rel)
        except SyntaxError as exc:
            problems.append(Problem(path=rel, line=exc.lineno or 1, message=f"syntax error: {exc}"))
            continue
        consts, aliases = _module_constants(tree)
        marker_lines: set[int] = set()
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and _is_spec_marker(node.func, aliases)):
                continue
            if not node.args:
                problems.append(
                    Problem(path=rel, line=node.lineno, message="spec marker without clause ids")
                )
            for arg, value in _marker_args(node, consts):
                if value is not None:
                    cites.append(Citation(ref=value, kind="test", path=rel, line=arg.lineno))
                    marker_lines.update(range(arg.lineno, (arg.end_lineno or arg.lineno) + 1))
                else:
                    problems.append(
                        Problem(
                            path=rel,
                            line=arg.lineno,
                            message="spec marker argument is not a string the checker can "
                            "read statically (the pytest plugin still checks it at run time)",
                            error=False,
                        )
                    )
        cites.extend(_mentions(text, rel, marker_lines))
    return cites, problems


def scan(
    root: Path, package: str = "mcp_ref", tests: str = "tests"
) -> tuple[list[Citation], list[Problem]]:
    """Scan ``root/package`` for code citations and ``root/tests`` for test citations."""
    code, code_problems = scan_code(root / package, root)
    test, test_problems = scan_tests(root / tests, root)
    return code + test, code_problems + test_problems

"""Find where code and tests cite spec clauses.

Three kinds of reference are collected, each with its file and line:

``code``
    a ``# Spec: <clause-id>`` comment in a ``.py`` file under the package folder
    (``mcp_ref/``).  One id per comment; put several comments for several clauses.
    Found with :mod:`tokenize`, so text inside strings never counts.  A ``# Spec:``
    comment citing another document (``# Spec: WHATWG 9.2.6 ...``, anything not
    starting with a ``YYYY-MM-DD/`` revision) is left alone.
``test``
    a string argument of ``pytest.mark.spec(...)`` in a ``.py`` file under ``tests/``
    (decorators, ``pytestmark = ...`` and ``pytest.param(..., marks=...)`` alike).
    Found with :mod:`ast`.
``mention``
    any other text that looks like a clause id or section reference of the catalog's
    revision (docstrings, prose comments), in either folder.  Mentions do not count as
    implementing or testing anything, but must name a real clause, section or page.

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

__all__ = ["Citation", "Problem", "scan", "scan_code", "scan_tests"]

_SPEC_COMMENT = re.compile(r"#\s*Spec\s*:\s*(.*)$")
_REF = re.compile(r"\b\d{4}-\d{2}-\d{2}/[a-z0-9_/-]+#[\w-]+(?:\.\d+)?")
_REVISION = re.compile(r"\d{4}-\d{2}-\d{2}/")
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


def _is_spec_marker(func: ast.expr) -> bool:
    """True for ``pytest.mark.spec``, ``mark.spec`` and the like."""
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "spec"
        and (
            (isinstance(func.value, ast.Attribute) and func.value.attr == "mark")
            or (isinstance(func.value, ast.Name) and func.value.id == "mark")
        )
    )


def scan_tests(tests: Path, root: Path) -> tuple[list[Citation], list[Problem]]:
    """``pytest.mark.spec("<id>", ...)`` arguments and other mentions under ``tests``.

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
        marker_lines: set[int] = set()
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and _is_spec_marker(node.func)):
                continue
            if not node.args:
                problems.append(
                    Problem(path=rel, line=node.lineno, message="spec marker without clause ids")
                )
            for arg in node.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    cites.append(Citation(ref=arg.value, kind="test", path=rel, line=arg.lineno))
                    marker_lines.update(range(arg.lineno, (arg.end_lineno or arg.lineno) + 1))
                else:
                    problems.append(
                        Problem(
                            path=rel,
                            line=arg.lineno,
                            message="spec marker argument is not a string literal; "
                            "the checker cannot read it (the pytest plugin still can)",
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

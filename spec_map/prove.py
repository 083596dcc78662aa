"""``python -m spec_map prove``: each traced clause's tests must kill the mutants of its lines.

A test marker (``@pytest.mark.spec(ID)``) says a test is *about* a clause; it does not
say the test would notice if the code broke the rule.  This command checks that: it
makes small deliberate bugs (mutants) in the lines that honour each clause, runs only the
tests that cite the clause against each one, and records which bugs the tests catch.

Theory of operation
-------------------
1. **Tags and their lines.**  Every ``# Spec: <clause-id>`` comment under ``mcp_ref/``
   (found with :mod:`tokenize`, as :mod:`spec_map.cites` does) covers a span of lines,
   :func:`tag_spans`:

   * a comment on a line of its own covers **the next statement** after it, whole: the
     first statement (or ``except`` clause) whose keyword is on a later line, with the
     block it opens (an ``if`` with its body and ``elif``/``else`` branches, a ``def``
     with its decorators and body, even when the tag sits between decorator and ``def``).  Several tags stacked above one statement all cover it;
     comment lines between the tag and the statement (the quoted sentence) are skipped.
   * a comment that trails code on its line covers **the innermost statement containing
     that line** (for ``if x:  # Spec: ...``, the whole ``if``).

   A clause's lines are the union of its tags' spans.  A tag followed by no statement
   covers nothing and is reported.

2. **Mutants.**  Mutants come from mutmut's engine (mutmut 3.8.1,
   ``mutmut.mutation``): its libcst :class:`MutationVisitor` with its
   ``mutation_operators`` makes the mutations of a file, and its
   :func:`combine_mutations_to_source` writes the "trampolined" copy of the file in which
   each mutant is a copy of its function, switched on at call time by the environment
   variable ``MUTANT_UNDER_TEST=<module>.<mangled function>__mutmut_<n>``.  We do not call
   ``mutate_file_contents``/``create_mutations`` themselves: they build the libcst
   metadata wrapper internally and do not return it, and we need the wrapper's positions
   to know which lines a mutation changes.  :func:`mutants_of_file` therefore repeats
   ``create_mutations``' four calls (``get_ignored_lines``, ``MutationVisitor``,
   ``wrapper.visit``) and keeps the wrapper.  mutmut's limits are ours: it mutates only
   code inside top-level functions and methods of top-level classes, never decorated
   functions (other than ``@staticmethod``/``@classmethod``: so no ``@property``),
   module-level tables, class bodies or type annotations.  A clause whose lines hold no
   mutant is reported as ``no-mutants``, not as proven.

   A mutation **belongs to a clause** when one of the source lines it changes (a
   line-by-line diff of the mutated node against the original node) is one of the
   clause's lines.

3. **Identity.**  mutmut numbers mutants per function, and the numbers shift when code
   moves.  A mutant's stable identity, its *key*, is
   ``file | function | text of its first changed line | change`` (``| #n`` appended for
   the n-th identical one), where *change* is the original and mutated code of the node,
   whitespace collapsed, e.g. ``obj.get("id") -> obj.get("XXidXX")``.  Keys name
   mutants in ``spec_map/equivalent_mutants.toml`` and ``proof.json``.

4. **Running.**  The current working tree is copied to a temporary folder (the package,
   ``tests/``, ``spec_map/``, ``pyproject.toml`` and the other top-level files; never
   ``.git``, ``.venv``, ``.cache``), the trampolined files are written over the copies,
   and every test run happens there with ``PYTHONPATH`` pointing at it: the working
   tree's ``mcp_ref/`` is never touched.  The tests citing each clause are found by
   collecting, with a small plugin, the test files that cite the selected clauses
   (tests marked ``interop``, which need real peers, are left out).  Work is cut into
   units (one clause, up to :data:`UNIT_MUTANTS` of its mutants), run by up to ``--jobs``
   worker processes.  A worker imports the tests once (``pytest --collect-only``), runs
   them unmutated (the *baseline*; its duration sets the timeout), then for each mutant
   forks a child that sets ``MUTANT_UNDER_TEST`` and runs ``pytest -x`` on the tests that
   passed the baseline.  A mutant is **killed** when the child exits non-zero (a test
   failed or errored) or runs past the per-mutant timeout (its process group is then
   killed); it **survives** when every test passes.

5. **Verdicts**, per clause (``proof.json``):

   ``proven``       at least one mutant, and every one not listed as equivalent is killed;
   ``tested-only``  tests pass unmutated, but some mutant survives them;
   ``no-mutants``   tests pass, but mutmut makes no mutant on the clause's lines;
   ``open``         no test cites it, or none of its tests passed unmutated here (the
                    entry says which).

The clauses run are those cited by ``# Spec:`` comments (all levels: MUST, SHOULD, MAY);
``python -m spec_map check`` counts the MUST ones.

Source: tracker issue 13 ("every traced clause killed by mutation").
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tokenize
import tomllib
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from .catalog import CATALOG_DIR, PACKAGE_DIR, REPO_ROOT, load_catalog

__all__ = [
    "DEFAULT_JOBS",
    "EQUIVALENT_PATH",
    "PROOF_PATH",
    "UNIT_MUTANTS",
    "Mutant",
    "TagSpan",
    "add_parser",
    "clause_verdict",
    "load_equivalents",
    "mutants_of_file",
    "prove",
    "tag_spans",
]

PROOF_PATH = PACKAGE_DIR / "proof.json"
"""Where the results of a full run are written (committed)."""
EQUIVALENT_PATH = PACKAGE_DIR / "equivalent_mutants.toml"
"""The reviewed list of equivalent mutants."""
DEFAULT_JOBS = 2
"""Worker processes run at once (``--jobs``)."""
UNIT_MUTANTS = 25
"""At most this many mutants of one clause per unit of work (one worker process)."""
TIMEOUT_FLOOR = 10.0
"""Per-mutant timeout, seconds, when ``--timeout`` is not given: this, plus
:data:`TIMEOUT_FACTOR` times the baseline run's duration."""
TIMEOUT_FACTOR = 3.0
BASELINE_TIMEOUT = 900.0
"""Seconds the unmutated run of one clause's tests may take before it counts as failed."""

_SPEC_COMMENT = re.compile(r"#\s*Spec\s*:\s*(\d{4}-\d{2}-\d{2}/[a-z0-9_/-]+#[\w-]+\.\d+)")
_SKIP_DIRS = {".git", ".venv", ".cache", ".mypy_cache", ".ruff_cache", ".hypothesis", "mutants"}


# ---------------------------------------------------------------------------------------
# 1. Tags and the lines they cover


@dataclass(frozen=True, slots=True, kw_only=True)
class TagSpan:
    """The lines one ``# Spec:`` comment covers (see the module docstring, step 1)."""

    clause: str
    """The clause id."""
    path: str
    """The file, relative to the repository root, ``/`` separated."""
    line: int
    """The comment's line (1-based)."""
    first: int
    """First covered line (1-based), or 0 when the tag covers nothing."""
    last: int
    """Last covered line (inclusive), or 0."""

    @property
    def lines(self) -> range:
        """The covered line numbers."""
        return range(self.first, self.last + 1) if self.first else range(0)


def _statement_spans(tree: ast.AST) -> list[tuple[int, int, int]]:
    """(line of the keyword, first line, last line) of every statement and ``except``
    clause; the first line includes decorators."""
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt | ast.ExceptHandler):
            first = node.lineno
            for deco in getattr(node, "decorator_list", None) or []:
                first = min(first, deco.lineno)
            spans.append((node.lineno, first, node.end_lineno or node.lineno))
    return spans


def tag_spans(text: str, path: str) -> list[TagSpan]:
    """The span of every ``# Spec: <clause-id>`` comment of one source file.

    Args:
        text: the file's source.
        path: its path relative to the repository root (copied into the result).

    Returns:
        One :class:`TagSpan` per tag, in file order; ``first == 0`` for a tag that covers
        no statement.  A file that does not parse or tokenize gives an empty list.
    """
    try:
        tree = ast.parse(text)
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (SyntaxError, tokenize.TokenError):
        return []
    spans = _statement_spans(tree)
    out = []
    for tok in tokens:
        if tok.type != tokenize.COMMENT:
            continue
        m = _SPEC_COMMENT.match(tok.string)
        if m is None:
            continue
        line, col = tok.start
        trailing = tok.line[:col].strip() != ""
        if trailing:
            containing = [s for s in spans if s[1] <= line <= s[2]]
            best = min(containing, key=lambda s: s[2] - s[1], default=None)
        else:
            after = [s for s in spans if s[0] > line]
            start = min((s[0] for s in after), default=None)
            best = max((s for s in after if s[0] == start), key=lambda s: s[2] - s[1], default=None)
        first, last = best[1:] if best is not None else (0, 0)
        out.append(TagSpan(clause=m.group(1), path=path, line=line, first=first, last=last))
    return out


# ---------------------------------------------------------------------------------------
# 2-3. Mutants (mutmut's engine) and their stable identity


@dataclass(slots=True, kw_only=True)
class Mutant:
    """One mutation of a traced line (see the module docstring, steps 2 and 3)."""

    name: str
    """mutmut's name, the value of ``MUTANT_UNDER_TEST`` that switches it on
    (``mcp_ref._framing.x_encode__mutmut_3``); shifts when code moves."""
    key: str
    """The stable identity: ``file | function | line text | change`` (``| #n``)."""
    file: str
    function: str
    """``name`` or ``Class.name``."""
    line: int
    """The first source line the mutation changes (1-based)."""
    line_text: str
    """That line, stripped."""
    change: str
    """``<original code> -> <mutated code>``, one line."""
    changed_lines: tuple[int, ...]
    clauses: list[str] = field(default_factory=list)
    """The clauses whose lines it changes."""

    def to_json(self) -> dict[str, Any]:
        """The fields ``proof.json`` keeps for a mutant."""
        return {
            "key": self.key,
            "where": f"{self.file}:{self.line}",
            "function": self.function,
            "diff": f"{self.line_text}  ~~  {self.change}",
            "mutmut_name": self.name,
        }


_config_loaded = False


def _load_mutmut_config() -> None:
    """mutmut's engine reads its global config (``do_not_mutate_patterns``); load the
    defaults once from an empty ``setup.cfg`` section, with no file of ours involved."""
    global _config_loaded
    if _config_loaded:
        return
    from mutmut.configuration import config

    old = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="spec_map_mutmut_") as folder:
        Path(folder, "setup.cfg").write_text("[mutmut]\nsource_paths = src\n", encoding="utf-8")
        os.chdir(folder)
        try:
            config()
        finally:
            os.chdir(old)
    _config_loaded = True


def _one_line(code: str) -> str:
    return " ".join(code.split())


def _describe(old: str, new: str, limit: int = 90) -> str:
    """``old -> new`` on one line; long sides are cut to their differing middle."""
    a, b = _one_line(old), _one_line(new)
    if len(a) + len(b) > limit:
        head = 0
        while head < min(len(a), len(b)) and a[head] == b[head]:
            head += 1
        tail = 0
        while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
            tail += 1
        start = max(0, head - 15)
        a = ("…" if start else "") + a[start : len(a) - tail] + ("…" if tail else "")
        b = ("…" if start else "") + b[start : len(b) - tail] + ("…" if tail else "")
    return f"{a} -> {b}"


def _changed_lines(old: str, new: str, start: int) -> tuple[int, ...]:
    """Original line numbers a node's rewrite changes (an insertion counts at its place)."""
    import difflib

    a, b = old.splitlines() or [""], new.splitlines() or [""]
    lines: set[int] = set()
    for tag, i1, i2, _j1, _j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        lines.update(range(start + i1, start + max(i2, i1 + 1)))
    return tuple(sorted(lines)) or (start,)


def _module_name(path: str) -> str:
    name = path.removesuffix(".py").replace("/", ".")
    return name.removesuffix(".__init__")


def mutants_of_file(
    text: str, path: str, clause_lines: dict[str, set[int]]
) -> tuple[list[Mutant], str | None]:
    """mutmut's mutants of one file that change a traced line, and the trampolined source.

    Args:
        text: the file's source.
        path: its path relative to the repository root (``mcp_ref/_framing.py``); gives
            the module name mutmut's trampoline matches ``MUTANT_UNDER_TEST`` against.
        clause_lines: clause id -> the lines its tags cover in this file.

    Returns:
        The mutants (each with the clauses it belongs to), and the trampolined source
        holding exactly those mutants (None when there are none).

    Raises:
        RuntimeError: mutmut named the mutants differently than this module computes
            (a mutmut version whose trampoline layout changed).
    """
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider
    from mutmut.mutation.file_mutation import (
        MutationVisitor,
        combine_mutations_to_source,
        group_by_top_level_node,
    )
    from mutmut.mutation.mutators import mutation_operators
    from mutmut.mutation.pragma_handling import get_ignored_lines
    from mutmut.mutation.trampoline_templates import mangle_function_name

    _load_mutmut_config()
    traced = set().union(*clause_lines.values()) if clause_lines else set()
    if not traced:
        return [], None
    wrapper = MetadataWrapper(cst.parse_module(text))
    visitor = MutationVisitor(mutation_operators, get_ignored_lines(path, text, wrapper), None)
    module = wrapper.visit(visitor)
    positions = wrapper.resolve(PositionProvider)
    # The functions mutmut trampolines: top-level functions and methods of top-level
    # classes (combine_mutations_to_source drops every other mutation).
    owner: dict[Any, str | None] = {}
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef):
            owner[stmt] = None
        elif isinstance(stmt, cst.ClassDef) and isinstance(stmt.body, cst.IndentedBlock):
            for method in stmt.body.body:
                if isinstance(method, cst.FunctionDef):
                    owner[method] = stmt.name.value
    source_lines = text.splitlines()
    # A line's text in a key leaves out its comment (a tag may be reworded).
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            row, col = tok.start
            source_lines[row - 1] = source_lines[row - 1][:col]
    kept = []
    info = {}
    for mutation in visitor.mutations:
        func = mutation.contained_by_top_level_function
        if func not in owner:
            continue
        pos = positions.get(mutation.original_node)
        if pos is None:
            continue
        old = module.code_for_node(mutation.original_node)
        new = module.code_for_node(mutation.mutated_node)
        changed = _changed_lines(old, new, pos.start.line)
        if not traced.intersection(changed):
            continue
        kept.append(mutation)
        info[id(mutation)] = (old, new, changed)
    if not kept:
        return [], None
    mutants: list[Mutant] = []
    seen: dict[str, int] = {}
    module_name = _module_name(path)
    for node, func_mutations in group_by_top_level_node(kept).items():
        assert isinstance(node, cst.FunctionDef)  # kept mutations are all in `owner`
        cls = owner[node]
        fname = node.name.value
        mangled = mangle_function_name(name=fname, class_name=cls) + "__mutmut"
        qualname = f"{cls}.{fname}" if cls else fname
        for index, mutation in enumerate(func_mutations, start=1):
            old, new, changed = info[id(mutation)]
            line_text = (
                source_lines[changed[0] - 1].strip() if changed[0] <= len(source_lines) else ""
            )
            change = _describe(old, new)
            key = f"{path} | {qualname} | {line_text} | {change}"
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > 1:
                key += f" | #{seen[key]}"
            mutants.append(
                Mutant(
                    name=f"{module_name}.{mangled}_{index}",
                    key=key,
                    file=path,
                    function=qualname,
                    line=changed[0],
                    line_text=line_text,
                    change=change,
                    changed_lines=changed,
                    clauses=sorted(c for c, ls in clause_lines.items() if ls.intersection(changed)),
                )
            )
    mutated = combine_mutations_to_source(
        module, kept, visitor.ignored_classes, visitor.ignored_functions
    )
    expected = {m.name.rpartition(".")[2] for m in mutants}
    if set(mutated.mutant_names) != expected:
        raise RuntimeError(
            f"{path}: mutmut named its mutants {sorted(mutated.mutant_names)[:3]}..., "
            f"expected {sorted(expected)[:3]}...: is mutmut 3.8.1 installed?"
        )
    return mutants, mutated.code


# ---------------------------------------------------------------------------------------
# Equivalent mutants


def load_equivalents(path: Path) -> dict[str, str]:
    """The reviewed equivalent mutants: key -> reason.

    ``equivalent_mutants.toml`` holds ``[[mutant]]`` tables with ``key`` (a mutant's key
    as ``proof.json`` prints it) and ``reason`` (one line: why no test can tell the
    mutant from the original).  A missing file means none.

    Raises:
        ValueError: the file is not valid TOML, or an entry lacks a key or a reason.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: {exc}") from None
    out: dict[str, str] = {}
    for n, entry in enumerate(data.get("mutant", []), start=1):
        key, reason = entry.get("key"), entry.get("reason")
        if not isinstance(key, str) or not isinstance(reason, str) or not reason.strip():
            raise ValueError(f"{path}: [[mutant]] number {n} needs a 'key' and a one-line 'reason'")
        out[key] = reason.strip()
    return out


# ---------------------------------------------------------------------------------------
# 4. Running: the scratch tree, test collection, and the worker


class _Collector:
    """pytest plugin: node id -> clause ids of its ``spec`` markers (collection only)."""

    def __init__(self) -> None:
        self.ids: dict[str, list[str]] = {}

    def pytest_collection_modifyitems(self, items: list[Any]) -> None:
        for item in items:
            if item.get_closest_marker("interop") is not None:
                continue
            ids = [a for m in item.iter_markers("spec") for a in m.args if isinstance(a, str)]
            if ids:
                self.ids[item.nodeid] = sorted(set(ids))


class _Outcomes:
    """pytest plugin: the node ids whose setup, call and teardown all passed."""

    def __init__(self) -> None:
        self.failed: set[str] = set()
        self.passed: set[str] = set()

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.failed or report.skipped or hasattr(report, "wasxfail"):
            self.failed.add(report.nodeid)
        elif report.when == "call":
            self.passed.add(report.nodeid)


_PYTEST_ARGS = ["-q", "-p", "no:cacheprovider", "-o", "addopts=", "--no-header", "-W", "ignore"]


def _quiet() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)


def _run_forked(
    nodeids: list[str], mutant: str, timeout: float | None
) -> tuple[str, float, set[str]]:
    """Run ``pytest -x nodeids`` in a forked child with ``mutant`` switched on.

    Returns ``(how, seconds, passed node ids)``; ``how`` is ``passed``, ``failed``,
    ``timeout`` or ``exit <n>``/``signal <n>``.  The passed ids are known only for the
    baseline (``mutant == ""``), which runs without ``-x``.
    """
    import pytest

    read_fd, write_fd = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child
        code = 3
        try:
            os.close(read_fd)
            os.setpgid(0, 0)
            _quiet()
            os.environ["MUTANT_UNDER_TEST"] = mutant
            outcomes = _Outcomes()
            args = [*nodeids, *_PYTEST_ARGS] + (["-x"] if mutant else [])
            code = int(pytest.main(args, plugins=[outcomes]))
            if not mutant:
                os.write(write_fd, json.dumps(sorted(outcomes.passed - outcomes.failed)).encode())
        finally:
            os._exit(code)
    os.close(write_fd)
    how = ""
    status = 0
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if timeout is not None and time.monotonic() - start > timeout:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            how = "timeout"
            break
        time.sleep(0.02)
    seconds = time.monotonic() - start
    with os.fdopen(read_fd, "rb") as pipe:
        data = pipe.read()
    if not how:
        if os.WIFSIGNALED(status):
            how = f"signal {os.WTERMSIG(status)}"
        else:
            code = os.WEXITSTATUS(status)
            how = {0: "passed", 1: "failed"}.get(code, f"exit {code}")
    passed = set(json.loads(data)) if data else set()
    return how, seconds, passed


def _worker(job_path: Path) -> int:
    """Run one unit of work (inside the scratch tree): baseline, then each mutant.

    The job file holds ``{"nodeids": [...], "mutants": [names], "timeout": seconds or
    null, "out": path}``; the result file gets ``{"baseline": how, "baseline_seconds",
    "passed": [...], "results": {name: {"how", "seconds"}}}``.
    """
    import pytest

    job = json.loads(job_path.read_text(encoding="utf-8"))
    nodeids: list[str] = job["nodeids"]
    os.environ["MUTANT_UNDER_TEST"] = ""
    # Import the tests once here, so each forked run starts warm (as mutmut does).
    saved = os.dup(1), os.dup(2)
    _quiet()
    pytest.main([*nodeids, *_PYTEST_ARGS, "--collect-only"])
    os.dup2(saved[0], 1)
    os.dup2(saved[1], 2)
    how, seconds, passed = _run_forked(nodeids, "", BASELINE_TIMEOUT)
    result: dict[str, Any] = {
        "baseline": how,
        "baseline_seconds": round(seconds, 2),
        "passed": sorted(passed),
        "results": {},
    }
    if how == "passed" and passed:
        timeout = job["timeout"] or TIMEOUT_FLOOR + TIMEOUT_FACTOR * seconds
        run = sorted(passed)
        for name in job["mutants"]:
            m_how, m_seconds, _ = _run_forked(run, name, timeout)
            result["results"][name] = {"how": m_how, "seconds": round(m_seconds, 2)}
    Path(job["out"]).write_text(json.dumps(result), encoding="utf-8")
    return 0


def _copy_tree(root: Path, dest: Path) -> None:
    """Copy the working tree's files (not .git, .venv, caches) to ``dest``."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "report")
    for entry in root.iterdir():
        if entry.name in _SKIP_DIRS or entry.name.endswith(".egg-info"):
            continue
        if entry.is_dir():
            shutil.copytree(entry, dest / entry.name, ignore=ignore, symlinks=True)
        elif entry.is_file():
            shutil.copy2(entry, dest / entry.name)


def _env(scratch: Path) -> dict[str, str]:
    env = dict(os.environ)
    # The scratch tree first; then this spec_map's own folder, for a tree without one.
    extra = [str(scratch), str(PACKAGE_DIR.parent), *filter(None, [env.get("PYTHONPATH")])]
    env["PYTHONPATH"] = os.pathsep.join(extra)
    env["MUTANT_UNDER_TEST"] = ""
    env["SPEC_MAP_RESULTS"] = os.devnull
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("PYTEST_ADDOPTS", None)
    return env


def _collect(scratch: Path, files: list[str], python: str) -> dict[str, list[str]]:
    """Node id -> clause ids, for the tests of ``files`` (run in the scratch tree)."""
    out = scratch / ".spec_map_collect.json"
    code = (
        "import json, sys, pytest\n"
        "from spec_map.prove import _Collector\n"
        "c = _Collector()\n"
        f"pytest.main([*{files!r}, '--collect-only', '-q', '-p', 'no:cacheprovider'], plugins=[c])\n"
        f"open({str(out)!r}, 'w').write(json.dumps(c.ids))\n"
    )
    subprocess.run(
        [python, "-c", code], cwd=scratch, env=_env(scratch), capture_output=True, check=False
    )
    try:
        data: dict[str, list[str]] = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data


# ---------------------------------------------------------------------------------------
# 5. Verdicts and the whole run


def _pages_of(clause_id: str) -> tuple[str, str]:
    """A clause id's page with its revision and without: ``("2025-06-18/basic/lifecycle",
    "basic/lifecycle")``."""
    qualified = clause_id.partition("#")[0]
    return qualified, qualified.partition("/")[2]


def clause_verdict(entry: dict[str, Any]) -> str:
    """``proven``, ``tested-only``, ``no-mutants`` or ``open`` for one clause's entry.

    ``entry`` has ``tests`` (node ids), ``baseline`` (how the unmutated run went) and
    ``mutants`` (each with a ``result``: killed, survived, equivalent, or not-run).
    """
    if not entry.get("tests") or entry.get("baseline") not in ("passed", None):
        return "open"
    results = [m["result"] for m in entry.get("mutants", [])]
    if not results:
        return "no-mutants"
    if any(r in ("survived", "not-run") for r in results):
        return "tested-only"
    return "proven"


@dataclass(slots=True)
class _Unit:
    clause: str
    nodeids: list[str]
    mutants: list[str]
    result: dict[str, Any] | None = None


def prove(
    *,
    root: Path,
    package: str = "mcp_ref",
    tests: str = "tests",
    clauses: Iterable[str] | None = None,
    page: str | None = None,
    files: str | None = None,
    sample: int | None = None,
    seed: int = 0,
    jobs: int = DEFAULT_JOBS,
    timeout: float | None = None,
    equivalents: dict[str, str] | None = None,
    catalog_path: Path = CATALOG_DIR,
    python: str = sys.executable,
    log: Any = None,
) -> dict[str, Any]:
    """Mutate each traced clause's lines and run its tests; the ``proof.json`` content.

    Args:
        root: the repository root (holds ``package`` and ``tests``); read, never written.
        clauses: only these clause ids; ``page``: only clauses of this page, of any
            revision (``basic/lifecycle``) or of one (``2025-06-18/basic/lifecycle``);
            both None: every clause cited by ``# Spec:``.
        files: only tags in files matching this pattern (``PurePosixPath.match``,
            ``mcp_ref/*.py``: the sans-IO core), relative to ``root``.
        sample: run only this many mutants, drawn at random (``seed``) from all of the
            selected clauses' mutants; the others are recorded as ``not-run``.
        jobs: worker processes at once.
        timeout: seconds per mutant run; None: :data:`TIMEOUT_FLOOR` +
            :data:`TIMEOUT_FACTOR` x the clause's baseline run.
        equivalents: key -> reason (from :func:`load_equivalents`); those mutants are
            not run.
        log: a callable taking one line of progress text, or None.

    Returns:
        ``{"tool", "rule", "selection", "summary", "clauses": {id: entry}, "warnings"}``
        where an entry is ``{"level", "page", "status", "tags", "tests", "baseline",
        "note", "mutants": [{"key", "where", "function", "diff", "mutmut_name",
        "result", "how"/"reason"}]}``.
    """
    say = log or (lambda _line: None)
    equivalents = equivalents or {}
    info = load_catalog(catalog_path).clauses
    warnings: list[str] = []
    # 1. tags
    spans: list[TagSpan] = []
    for path in sorted((root / package).rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        rel = path.relative_to(root).as_posix()
        spans.extend(tag_spans(path.read_text(encoding="utf-8"), rel))
    wanted = set(clauses) if clauses is not None else None
    spans = [
        s
        for s in spans
        if (wanted is None or s.clause in wanted)
        and (page is None or page in _pages_of(s.clause))
        and (files is None or PurePosixPath(s.path).match(files))
    ]
    for s in spans:
        if not s.first:
            warnings.append(f"{s.path}:{s.line}: '# Spec: {s.clause}' is followed by no statement")
    selected = sorted({s.clause for s in spans})
    # 2. mutants
    by_file: dict[str, dict[str, set[int]]] = {}
    for s in spans:
        by_file.setdefault(s.path, {}).setdefault(s.clause, set()).update(s.lines)
    mutants: list[Mutant] = []
    sources: dict[str, str] = {}
    for rel, lines in sorted(by_file.items()):
        found, code = mutants_of_file((root / rel).read_text(encoding="utf-8"), rel, lines)
        mutants.extend(found)
        if code is not None:
            sources[rel] = code
    say(
        f"{len(selected)} clause(s), {len(spans)} tag(s), {len(mutants)} mutant(s) in {len(sources)} file(s)"
    )
    chosen: set[str] | None = None
    if sample is not None:
        candidates = sorted(m.name for m in mutants if m.key not in equivalents)
        chosen = set(random.Random(seed).sample(candidates, min(sample, len(candidates))))
    # 4. run
    from .cites import scan_tests

    test_cites, _ = scan_tests(root / tests, root)
    test_files = sorted({c.path for c in test_cites if c.ref in set(selected)})
    entries: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="spec_map_prove_") as folder:
        scratch = Path(folder)
        _copy_tree(root, scratch)
        for rel, code in sources.items():
            (scratch / rel).write_text(code, encoding="utf-8")
        collected = _collect(scratch, test_files, python) if test_files else {}
        by_clause: dict[str, list[str]] = {}
        for nodeid, ids in collected.items():
            for cid in ids:
                by_clause.setdefault(cid, []).append(nodeid)
        units: list[_Unit] = []
        for cid in selected:
            names = [
                m.name
                for m in mutants
                if cid in m.clauses
                and m.key not in equivalents
                and (chosen is None or m.name in chosen)
            ]
            nodeids = sorted(by_clause.get(cid, []))
            if not nodeids:
                continue
            if sample is not None and not names:
                continue
            for i in range(0, max(len(names), 1), UNIT_MUTANTS):
                units.append(_Unit(cid, nodeids, names[i : i + UNIT_MUTANTS]))
        say(f"{len(units)} unit(s) of work on {jobs} job(s), in {scratch}")
        done = [0]

        def run(unit: _Unit) -> None:
            job = scratch / f".job_{id(unit)}.json"
            out = scratch / f".out_{id(unit)}.json"
            job.write_text(
                json.dumps(
                    {
                        "nodeids": unit.nodeids,
                        "mutants": unit.mutants,
                        "timeout": timeout,
                        "out": str(out),
                    }
                ),
                encoding="utf-8",
            )
            limit = 600 + len(unit.mutants) * (timeout or 120)
            try:
                subprocess.run(
                    [python, "-m", "spec_map.prove", "_worker", str(job)],
                    cwd=scratch,
                    env=_env(scratch),
                    capture_output=True,
                    timeout=limit,
                    check=False,
                )
                unit.result = json.loads(out.read_text(encoding="utf-8"))
            except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
                unit.result = {"baseline": f"worker error: {exc}", "results": {}, "passed": []}
            done[0] += 1
            killed = sum(r["how"] != "passed" for r in unit.result["results"].values())
            say(
                f"[{done[0]}/{len(units)}] {unit.clause}: baseline {unit.result['baseline']}, "
                f"{killed}/{len(unit.mutants)} killed"
            )

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            list(pool.map(run, units))
    # 5. verdicts
    results: dict[str, dict[str, dict[str, Any]]] = {}
    baselines: dict[str, list[str]] = {}
    passed_tests: dict[str, set[str]] = {}
    for unit in units:
        assert unit.result is not None
        results.setdefault(unit.clause, {}).update(unit.result["results"])
        baselines.setdefault(unit.clause, []).append(unit.result["baseline"])
        passed_tests.setdefault(unit.clause, set()).update(unit.result.get("passed", []))
    for cid in selected:
        clause = info.get(cid, {})
        nodeids = sorted(by_clause.get(cid, []))
        runs = baselines.get(cid, [])
        baseline = (
            "passed" if runs and all(b == "passed" for b in runs) else (runs[0] if runs else None)
        )
        note = ""
        if not nodeids:
            note = "no test cites it (interop tests are not run)"
        elif baseline is not None and baseline != "passed":
            note = f"its tests did not pass unmutated: {baseline}"
        elif runs and not passed_tests.get(cid):
            baseline, note = "skipped", "every test citing it was skipped here"
        entry_mutants = []
        for m in (m for m in mutants if cid in m.clauses):
            row = m.to_json()
            if m.key in equivalents:
                row.update(result="equivalent", reason=equivalents[m.key])
            elif m.name in results.get(cid, {}):
                how = results[cid][m.name]["how"]
                row.update(result="survived" if how == "passed" else "killed", how=how)
            else:
                row.update(result="not-run")
            entry_mutants.append(row)
        if sample is not None:
            entry_mutants = [r for r in entry_mutants if r["result"] != "not-run"]
        entry = {
            "level": clause.get("level"),
            "page": clause.get("page"),
            "tags": [f"{s.path}:{s.first}-{s.last}" for s in spans if s.clause == cid and s.first],
            "tests": sorted(passed_tests.get(cid, set())) or nodeids,
            "baseline": baseline if nodeids else None,
            "note": note,
            "mutants": entry_mutants,
        }
        entry["status"] = clause_verdict(entry)
        entries[cid] = entry
    known = {m.key for m in mutants}
    if clauses is None and page is None and files is None:
        for key in sorted(set(equivalents) - known):
            warnings.append(f"equivalent_mutants.toml lists a mutant that no longer exists: {key}")
    return {
        "tool": "mutmut 3.8.1 (mutmut.mutation engine)",
        "rule": "a clause is proven when its tests kill every mutant of its lines not listed "
        "in equivalent_mutants.toml (see spec_map/prove.py)",
        "selection": {
            "clauses": sorted(wanted) if wanted is not None else None,
            "page": page,
            "files": files,
            "sample": sample,
            "seed": seed if sample is not None else None,
        },
        "summary": summarize(entries),
        "clauses": entries,
        "warnings": warnings,
    }


def summarize(entries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Counts of clauses by status (all levels and MUST only) and of mutants by result."""
    statuses: dict[str, int] = {}
    must: dict[str, int] = {}
    results: dict[str, int] = {}
    for entry in entries.values():
        statuses[entry["status"]] = statuses.get(entry["status"], 0) + 1
        if entry.get("level") == "MUST":
            must[entry["status"]] = must.get(entry["status"], 0) + 1
        for m in entry["mutants"]:
            results[m["result"]] = results.get(m["result"], 0) + 1
    return {"clauses": statuses, "must_clauses": must, "mutants": results}


def merge(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``old`` proof with the clauses of ``new`` replaced (for ``--clause``/``--page``)."""
    entries = dict(old.get("clauses", {}))
    entries.update(new["clauses"])
    merged = dict(old or new)
    merged.update(clauses=dict(sorted(entries.items())), summary=summarize(entries))
    merged["warnings"] = new.get("warnings", [])
    # The runs merged so far, oldest first.
    runs = old.get("selection", [])
    merged["selection"] = [*(runs if isinstance(runs, list) else [runs]), new["selection"]]
    return merged


# ---------------------------------------------------------------------------------------
# The command line


def _survivors(proof: dict[str, Any], top: int) -> list[str]:
    lines = []
    for cid, entry in proof["clauses"].items():
        survived = [m for m in entry["mutants"] if m["result"] == "survived"]
        if survived:
            lines.append(f"{cid}  ({entry.get('level')}, {len(survived)} survivor(s))")
            lines.extend(f"    {m['where']}: {m['diff']}" for m in survived[:top])
    return lines


def _cmd_prove(args: argparse.Namespace) -> int:
    try:
        equivalents = load_equivalents(Path(args.equivalents))
    except ValueError as exc:
        print(f"spec_map: {exc}", file=sys.stderr)
        return 2
    partial = bool(args.clause or args.page or args.files)
    proof = prove(
        root=Path(args.root),
        clauses=args.clause or None,
        page=args.page,
        files=args.files,
        sample=args.sample,
        seed=args.seed,
        jobs=args.jobs,
        timeout=args.timeout,
        equivalents=equivalents,
        log=lambda line: print(line, file=sys.stderr, flush=True),
    )
    out = Path(args.out) if args.out else (None if args.sample is not None else PROOF_PATH)
    previous: dict[str, Any] = {}
    if PROOF_PATH.exists():
        try:
            previous = json.loads(PROOF_PATH.read_text(encoding="utf-8"))
        except ValueError:
            previous = {}
    if out is not None:
        if partial and args.sample is None and out.exists():
            proof = merge(json.loads(out.read_text(encoding="utf-8")), proof)
        out.write_text(json.dumps(proof, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {out}")
    print(json.dumps(proof["summary"]))
    for line in _survivors(proof, args.top):
        print(line)
    for warning in proof["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    if args.sample is not None:
        # For CI: a sampled mutant that proof.json records as killed must still be killed.
        was_killed = {
            m["key"]
            for e in previous.get("clauses", {}).values()
            for m in e["mutants"]
            if m["result"] == "killed"
        }
        regressed = [
            f"{cid}: {m['where']}: {m['diff']}"
            for cid, e in proof["clauses"].items()
            for m in e["mutants"]
            if m["result"] == "survived" and m["key"] in was_killed
        ]
        for line in regressed:
            print(f"regression (killed in proof.json, survives now): {line}", file=sys.stderr)
        return 1 if regressed else 0
    return 0


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the ``prove`` subcommand to ``python -m spec_map``'s subparsers."""
    p: argparse.ArgumentParser = sub.add_parser(
        "prove",
        help="mutation-test each traced clause with the tests that cite it (writes proof.json)",
        description=(__doc__ or "").split("\n\n")[0],
    )
    p.add_argument("--root", default=str(REPO_ROOT), help="repository root")
    p.add_argument("--clause", action="append", help="only this clause id (repeatable)")
    p.add_argument(
        "--page",
        help="only the clauses of this page, e.g. basic/lifecycle (every revision's) or "
        "2025-06-18/basic/lifecycle",
    )
    p.add_argument("--files", help="only tags in files matching this pattern, e.g. 'mcp_ref/*.py'")
    p.add_argument("--sample", type=int, help="run only N mutants drawn at random (for CI)")
    p.add_argument("--seed", type=int, default=0, help="random seed of --sample (default 0)")
    p.add_argument("--jobs", type=int, default=DEFAULT_JOBS, help="worker processes (default 2)")
    p.add_argument(
        "--timeout",
        type=float,
        help="seconds per mutant run (default: 10 + 3 x the baseline run of the clause's tests)",
    )
    p.add_argument("--equivalents", default=str(EQUIVALENT_PATH), help="equivalent_mutants.toml")
    p.add_argument(
        "--out",
        help="output file (default spec_map/proof.json; --clause/--page merge into it; "
        "--sample writes nothing unless --out is given)",
    )
    p.add_argument("--top", type=int, default=30, help="survivors printed per clause (default 30)")
    p.set_defaults(func=_cmd_prove)
    return p


def _main(argv: Sequence[str]) -> int:
    if len(argv) == 2 and argv[0] == "_worker":
        return _worker(Path(argv[1]))
    parser = argparse.ArgumentParser(prog="python -m spec_map.prove")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    args = parser.parse_args(["prove", *argv])
    status: int = args.func(args)
    return status


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))

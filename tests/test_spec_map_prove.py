"""``python -m spec_map prove``: tag spans, mutmut's mutants, and verdicts on a tiny package.

The end-to-end test builds a fake ``mcp_ref`` package and its tests in ``tmp_path`` and
runs the whole pipeline (copy, trampolines, collection, baseline, one forked run per
mutant) on it: one clause whose mutant is killed, one whose mutants survive, one whose
only surviving mutant is listed as equivalent, and one with no test.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from spec_map.prove import (
    clause_verdict,
    load_equivalents,
    merge,
    mutants_of_file,
    prove,
    tag_spans,
)

REQ1 = "2025-06-18/basic#requests.1"
REQ2 = "2025-06-18/basic#requests.2"
MSG1 = "2025-06-18/basic#messages.1"
NOTE1 = "2025-06-18/basic#notifications.1"

CORE = """\
def check_id(rid):
    # Spec: 2025-06-18/basic#requests.2
    # "The request ID MUST NOT be null."
    if rid is None:
        raise ValueError
    return rid


def scale(x):
    # Spec: 2025-06-18/basic#requests.1
    return x * 2


def greet(name):
    text = "hi " + name  # Spec: 2025-06-18/basic#messages.1
    return text.upper()


def untraced(a):
    # Spec: 2025-06-18/basic#notifications.1
    b = a - 1
    return a + 1
"""

TESTS = """\
import pytest

from mcp_ref.core import check_id, greet, scale


@pytest.mark.spec("2025-06-18/basic#requests.2")
def test_null_id_refused():
    with pytest.raises(ValueError):
        check_id(None)
    assert check_id(5) == 5


@pytest.mark.spec("2025-06-18/basic#requests.1")
def test_scale_weak():
    assert scale(0) == 0  # too weak: x / 2 and x * 3 give 0 too


@pytest.mark.spec("2025-06-18/basic#messages.1")
def test_greet():
    assert greet("x") == "HI X"


def test_unmarked():
    assert scale(1) == 2
"""

PYPROJECT = """\
[tool.pytest.ini_options]
testpaths = ["tests"]
markers = ["spec(clause_id): clauses", "interop: real peers"]
"""


def _tree(root: Path) -> None:
    (root / "mcp_ref").mkdir()
    (root / "mcp_ref" / "__init__.py").write_text("", encoding="utf-8")
    (root / "mcp_ref" / "core.py").write_text(CORE, encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "__init__.py").write_text("", encoding="utf-8")
    (root / "tests" / "test_core.py").write_text(TESTS, encoding="utf-8")
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")


def _lines(text: str) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for span in tag_spans(text, "mcp_ref/core.py"):
        out.setdefault(span.clause, set()).update(span.lines)
    return out


def test_tag_spans_cover_the_next_statement_or_the_trailed_one() -> None:
    text = textwrap.dedent(
        """\
        import x


        @decorator
        # Spec: 2025-06-18/basic#requests.3
        def f(a):
            # Spec: 2025-06-18/basic#requests.1
            # Spec: 2025-06-18/basic#requests.2
            # "a quoted sentence" (comment lines are skipped)

            if a:  # Spec: 2025-06-18/basic#responses.1
                return 1
            else:
                pass
            try:
                g()
            # Spec: 2025-06-18/basic#responses.2
            except E:
                h()
            return g(  # Spec: 2025-06-18/basic#responses.3
                a,
            )
            # Spec: WHATWG 9.2 is another document
        # Spec: 2025-06-18/basic#responses.4
        """
    )
    got = {
        (s.clause.rpartition("#")[2], s.line): (s.first, s.last) for s in tag_spans(text, "m.py")
    }
    assert got == {
        # between a decorator and its def: the def with its decorator (lines 4-22)
        ("requests.3", 5): (4, 22),
        # stacked tags both cover the next statement, the whole if/else
        ("requests.1", 7): (11, 14),
        ("requests.2", 8): (11, 14),
        # trailing a compound statement's header: the whole statement
        ("responses.1", 11): (11, 14),
        # before an except clause: the clause with its body
        ("responses.2", 17): (18, 19),
        # trailing the first line of a multi-line statement: that statement
        ("responses.3", 20): (20, 22),
        # followed by nothing: covers nothing
        ("responses.4", 24): (0, 0),
    }


def test_mutants_belong_to_the_clause_whose_lines_they_change() -> None:
    mutants, code = mutants_of_file(CORE, "mcp_ref/core.py", _lines(CORE))
    assert code is not None and "_mutmut_mutated" in code
    by_clause: dict[str, list[str]] = {}
    for m in mutants:
        assert len(m.clauses) == 1
        by_clause.setdefault(m.clauses[0], []).append(m.change)
        # mutmut's trampoline name: module, mangled function, number
        assert m.name.startswith(f"mcp_ref.core.x_{m.function}__mutmut_")
        assert f"def {m.name.rpartition('.')[2]}(" in code
    assert by_clause[REQ2] == ["is -> is not"]
    assert sorted(by_clause[REQ1]) == ["2 -> 3", "x * 2 -> x / 2"]
    assert '"hi " -> "HI "' in by_clause[MSG1]
    # the traced b = a - 1 (line 21) gives mutants; the untraced return line after it none
    assert by_clause[NOTE1]
    assert {m.line for m in mutants if m.clauses == [NOTE1]} == {21}
    # keys are stable: no mutmut number, no comment text
    keys = [m.key for m in mutants]
    assert len(set(keys)) == len(keys)
    assert 'mcp_ref/core.py | greet | text = "hi " + name | "hi " -> "HI "' in keys
    assert not any("__mutmut" in k or "Spec:" in k for k in keys)


def test_mutants_of_untraced_file_are_none() -> None:
    assert mutants_of_file(CORE, "mcp_ref/core.py", {}) == ([], None)


def test_equivalents_file(tmp_path: Path) -> None:
    path = tmp_path / "eq.toml"
    assert load_equivalents(path) == {}
    path.write_text('[[mutant]]\nkey = "k"\nreason = "same output"\n', encoding="utf-8")
    assert load_equivalents(path) == {"k": "same output"}
    path.write_text('[[mutant]]\nkey = "k"\n', encoding="utf-8")
    with pytest.raises(ValueError, match="reason"):
        load_equivalents(path)


def test_verdicts() -> None:
    killed = {"result": "killed"}
    assert clause_verdict({"tests": [], "mutants": [killed]}) == "open"
    assert clause_verdict({"tests": ["t"], "baseline": "failed", "mutants": [killed]}) == "open"
    assert clause_verdict({"tests": ["t"], "baseline": "passed", "mutants": []}) == "no-mutants"
    assert (
        clause_verdict({"tests": ["t"], "mutants": [killed, {"result": "equivalent"}]}) == "proven"
    )
    assert clause_verdict({"tests": ["t"], "mutants": [killed, {"result": "survived"}]}) == (
        "tested-only"
    )


def test_prove_a_tiny_package(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    _tree(root)
    before = (root / "mcp_ref" / "core.py").read_text(encoding="utf-8")
    equivalent = 'mcp_ref/core.py | greet | text = "hi " + name | "hi " -> "HI "'
    proof = prove(
        root=root,
        jobs=2,
        timeout=30,
        equivalents={equivalent: "upper() makes both spellings the same"},
    )
    # the working tree is never modified
    assert (root / "mcp_ref" / "core.py").read_text(encoding="utf-8") == before
    clauses = proof["clauses"]
    assert set(clauses) == {REQ1, REQ2, MSG1, NOTE1}

    req2 = clauses[REQ2]
    assert req2["status"] == "proven"
    assert req2["tests"] == ["tests/test_core.py::test_null_id_refused"]
    assert req2["tags"] == ["mcp_ref/core.py:4-5"]
    assert [(m["result"], m["how"]) for m in req2["mutants"]] == [("killed", "failed")]

    req1 = clauses[REQ1]
    assert req1["status"] == "tested-only"
    assert sorted(m["result"] for m in req1["mutants"]) == ["survived", "survived"]
    assert req1["mutants"][0]["where"] == "mcp_ref/core.py:11"

    msg1 = clauses[MSG1]
    assert msg1["status"] == "proven"
    results = {m["key"]: m["result"] for m in msg1["mutants"]}
    assert results.pop(equivalent) == "equivalent"
    assert set(results.values()) == {"killed"}

    assert clauses[NOTE1]["status"] == "open"
    assert clauses[NOTE1]["mutants"] and all(
        m["result"] == "not-run" for m in clauses[NOTE1]["mutants"]
    )
    assert proof["summary"]["clauses"] == {"proven": 2, "tested-only": 1, "open": 1}
    json.dumps(proof)  # proof.json content

    # --clause: one clause, merged into the earlier proof without touching the others
    again = prove(root=root, clauses=[REQ2], jobs=1, timeout=30)
    assert set(again["clauses"]) == {REQ2}
    merged = merge(proof, again)
    assert merged["clauses"][REQ1] == req1 and merged["clauses"][REQ2]["status"] == "proven"


def test_prove_a_seeded_sample(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    _tree(root)
    first = prove(root=root, sample=2, seed=7, jobs=2, timeout=30)
    ran = sorted(m["key"] for e in first["clauses"].values() for m in e["mutants"])
    assert len(ran) == 2
    assert all(
        m["result"] in ("killed", "survived")
        for e in first["clauses"].values()
        for m in e["mutants"]
    )
    assert first["selection"]["sample"] == 2 and first["selection"]["seed"] == 7

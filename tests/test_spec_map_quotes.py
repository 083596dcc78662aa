"""spec_map/quotes.py: every '# Spec:' tag quotes its clause, and the check catches a
missing or wrong quote."""

from __future__ import annotations

from pathlib import Path

from spec_map.quotes import add_missing, find_tags, matches, problems

CLAUSES = {
    "2025-06-18/basic#requests.1": {
        "text": 'Requests MUST include a string or integer ID, not `null` ("id").'
    },
    "2025-06-18/basic#requests.2": {"text": "The ID MUST NOT have been previously used."},
}


def _package(tmp_path: Path, source: str) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "mod.py").write_text(source, encoding="utf-8")
    return pkg


def test_matches_words_case_and_marks_aside() -> None:
    text = CLAUSES["2025-06-18/basic#requests.1"]["text"]
    assert matches("requests MUST include a string or integer ID", text)
    assert matches("Requests ... not null ('id')", text)
    assert not matches("Requests MAY include a string", text)
    assert not matches("not null ... Requests", text)  # pieces in order
    assert not matches("", text)


def test_a_missing_and_a_wrong_quote_are_errors(tmp_path: Path) -> None:
    pkg = _package(
        tmp_path,
        "# Spec: 2025-06-18/basic#requests.1\n"
        "x = 1\n"
        "# Spec: 2025-06-18/basic#requests.2\n"
        '# "The ID MAY be reused."\n'
        "y = 2\n",
    )
    found = problems(pkg, tmp_path, CLAUSES)
    assert len(found) == 2
    assert found[0].startswith("pkg/mod.py:1: error:") and "quotes no words" in found[0]
    assert found[1].startswith("pkg/mod.py:3: error:") and "is not the clause's text" in found[1]


def test_add_missing_writes_a_quote_the_check_accepts(tmp_path: Path) -> None:
    pkg = _package(
        tmp_path,
        "def f():\n"
        "    # Spec: 2025-06-18/basic#requests.1\n"
        "    # Spec: 2025-06-18/basic#requests.2\n"
        '    # "The ID MUST NOT have been previously used."\n'
        "    return 1\n",
    )
    assert add_missing(pkg, CLAUSES) == 1
    source = (pkg / "mod.py").read_text()
    assert "    # \"Requests MUST include a string or integer ID, not `null` ('id').\"\n" in source
    assert problems(pkg, tmp_path, CLAUSES) == []
    assert [t.quote is not None for t in find_tags(pkg)] == [True, True]
    compile(source, "mod.py", "exec")

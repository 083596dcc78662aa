"""The spec's own words beside the code: every ``# Spec:`` tag quotes its clause.

A tag names a clause; the quote under it says what the code honours, so a reader needs
no catalog open.  The form, in the package's comments::

    # Spec: 2025-06-18/basic/lifecycle#timeouts.2
    # "the sender SHOULD issue a cancellation notification for that request and stop
    # waiting for a response"
    <the code that honours it>

The quote is the first double-quoted text of the comment lines that follow the tag
(or of the tag line itself, after the id), up to the next ``# Spec:`` line or the
first line that is not a whole-line comment.  It may be the whole sentence or its key
words; ``...`` joins pieces quoted in order.  It must be the clause's text, as
:func:`matches` compares them: case, whitespace, Markdown emphasis and the kind of
quote marks inside aside (a double quote inside a quote is written as a single one).
A clause whose sentence introduces a list (``MCP clients SHOULD follow this priority
order:``) holds the list's items as its ``detail``; the quote may be taken from the
sentence and those items, read as one text in that order.

``python -m spec_map check`` reports a tag without a quote, and a quote that is not its
clause's text, as errors (:func:`problems`), for a clause of any catalogued revision
(2024-11-05 to 2026-07-28 and ``extensions/``): the setting of a revision
(:mod:`spec_map.revisions`) changes what is counted, never what is verified.  ``python -m spec_map quotes --add`` writes
the clause's whole sentence under every tag that has none (:func:`add_missing`).
"""

from __future__ import annotations

import io
import re
import textwrap
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .revisions import REVISION_PATTERN

__all__ = ["Tag", "add_missing", "find_tags", "matches", "problems"]

_TAG = re.compile(rf"#\s*Spec\s*:\s*({REVISION_PATTERN}/[a-z0-9_/-]+#[\w-]+(?:\.\d+)?)(.*)$")
_WIDTH = 100


@dataclass(frozen=True, slots=True)
class Tag:
    """One ``# Spec:`` tag of the package, with the quote under it."""

    path: Path
    """The source file."""
    line: int
    """1-based line of the tag."""
    clause: str
    """The clause id it cites."""
    indent: str
    """The whitespace before the ``#`` (for lines added under it)."""
    quote: str | None
    """The quoted text (joined over its lines), or None when there is none."""
    inline: bool
    """Whether the tag shares its line with code (then nothing can be added under it)."""


def _comment_lines(tokens: list[tokenize.TokenInfo]) -> dict[int, tuple[str, bool]]:
    """Line number -> (comment text, whether the comment is the whole line)."""
    out: dict[int, tuple[str, bool]] = {}
    code_lines: set[int] = set()
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = (tok.string, False)
        elif tok.type not in (
            tokenize.NL,
            tokenize.NEWLINE,
            tokenize.INDENT,
            tokenize.DEDENT,
            tokenize.ENDMARKER,
        ):
            code_lines.update(range(tok.start[0], tok.end[0] + 1))
    return {n: (text, n not in code_lines) for n, (text, _) in out.items()}


def _quote_of(texts: list[str]) -> str | None:
    """The first double-quoted text in ``texts`` (comment bodies, joined by spaces)."""
    joined = " ".join(t.strip() for t in texts)
    start = joined.find('"')
    if start < 0:
        return None
    end = joined.find('"', start + 1)
    if end < 0:
        return None
    return joined[start + 1 : end]


def find_tags(package: Path) -> list[Tag]:
    """Every ``# Spec: <clause id>`` tag under ``package``, with its quote."""
    tags: list[Tag] = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        except (tokenize.TokenError, SyntaxError):
            continue  # cites.py reports files that do not tokenize
        comments = _comment_lines(tokens)
        lines = text.splitlines()
        for number in sorted(comments):
            comment, whole = comments[number]
            m = _TAG.match(comment)
            if m is None:
                continue
            body = [m.group(2)]
            follow = number + 1
            while follow in comments and comments[follow][1]:
                nxt = comments[follow][0]
                if _TAG.match(nxt):
                    break
                body.append(nxt.lstrip("#"))
                follow += 1
            source = lines[number - 1]
            tags.append(
                Tag(
                    path=path,
                    line=number,
                    clause=re.sub(r"[.,;:)]+$", "", m.group(1)),
                    indent=source[: len(source) - len(source.lstrip())],
                    quote=_quote_of(body),
                    inline=not whole,
                )
            )
    return tags


def _normal(text: str) -> str:
    text = re.sub(r"[`*_]", "", text)
    text = text.replace("\u201c", "'").replace("\u201d", "'").replace('"', "'")
    text = text.replace("\u2019", "'").replace("\u2018", "'")
    return " ".join(text.split()).lower()


def matches(quote: str, clause_text: str) -> bool:
    """Whether ``quote`` is ``clause_text``'s words: each ``...``-separated piece occurs
    in it, in order (case, whitespace, Markdown emphasis and quote marks aside)."""
    text = _normal(clause_text)
    at = 0
    pieces = [p.strip(" .,;:") for p in re.split(r"\.\.\.|\u2026", _normal(quote))]
    pieces = [p for p in pieces if p]
    if not pieces:
        return False
    for piece in pieces:
        found = text.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def problems(package: Path, root: Path, clauses: dict[str, Any]) -> list[str]:
    """Errors, one line each (``path:line: error: ...``): tags with no quote, and quotes
    that are not their clause's text.  Tags citing unknown clauses are left to the
    citation check."""
    out: list[str] = []
    for tag in find_tags(package):
        clause = clauses.get(tag.clause)
        if clause is None:
            continue
        where = f"{tag.path.relative_to(root).as_posix()}:{tag.line}"
        text = clause.text if hasattr(clause, "text") else clause["text"]
        detail = clause.detail if hasattr(clause, "detail") else clause.get("detail", ())
        if tag.quote is None:
            out.append(
                f"{where}: error: '# Spec: {tag.clause}' quotes no words of the clause "
                f'(add # "..." under it; python -m spec_map quotes --add writes them)'
            )
        elif not matches(tag.quote, " ".join([text, *detail])):
            out.append(
                f"{where}: error: the quote under '# Spec: {tag.clause}' is not the "
                f"clause's text: {tag.quote!r} (the clause: {text!r})"
            )
    return out


def _quote_lines(indent: str, text: str) -> list[str]:
    quoted = '"' + " ".join(text.replace('"', "'").split()) + '"'
    width = max(_WIDTH - len(indent) - 2, 40)
    return [f"{indent}# {part}" for part in textwrap.wrap(quoted, width, break_on_hyphens=False)]


def add_missing(package: Path, clauses: dict[str, Any]) -> int:
    """Write each quote-less tag's clause sentence under it; returns how many were added
    (tags sharing a line with code are skipped: move them to a line of their own)."""
    added = 0
    by_file: dict[Path, list[Tag]] = {}
    for tag in find_tags(package):
        if tag.quote is None and not tag.inline and tag.clause in clauses:
            by_file.setdefault(tag.path, []).append(tag)
    for path, tags in by_file.items():
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        for tag in sorted(tags, key=lambda t: t.line, reverse=True):
            clause = clauses[tag.clause]
            text = clause.text if hasattr(clause, "text") else clause["text"]
            new = [line + "\n" for line in _quote_lines(tag.indent, text)]
            lines[tag.line : tag.line] = new
            added += 1
        path.write_text("".join(lines), encoding="utf-8")
    return added

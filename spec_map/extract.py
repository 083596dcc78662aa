"""Extract the normative sentences of the MCP specification into a catalog.

Theory of operation
-------------------
The spec pages are Markdown (with a few MDX components such as ``<Note>``).  Every
revision folder is read the same way (see :mod:`spec_map.revisions` for which are
catalogued); ``extensions/`` is read as if it were one more revision.  RFC 2119
keywords count only where the spec marks them: **bold** and upper-case, e.g.
``**MUST NOT**``.  An unmarked "MUST" in running text is not extracted.

We read a page line by line into *blocks* (paragraphs, list items, table rows), each
tagged with the section it sits in.  A section starts at any heading (``#`` to
``######``) and runs to the next heading of any level; its slug is the GitHub-style
slug of the heading text (lower-case, punctuation dropped, each space a hyphen, ``-1``,
``-2``... appended to repeated headings of one page).  Text before the first heading
belongs to no section and is not numbered.  Most pages start with YAML front matter
(``---``, ``title: Lifecycle``, ``---``) instead of a ``#`` heading: its ``title`` then
stands as the page's level-1 heading, at the line of the ``title:`` key, so a page's
opening sentences get ids just as those of the 2025-06-18 pages (converted with a ``#``
title) do: ``2025-11-25/basic/lifecycle#lifecycle.1``.  When the page opens with its own
``#`` heading anyway, that heading is the title and the front matter's is dropped.

Fenced code blocks are skipped whole.  MDX component tags (``<Note>``, ``<Warning>``,
``<Info>``, ``<div .../>``) are dropped and their content read as ordinary Markdown.
Each block is split into sentences; a sentence holding at least one bold keyword is a
*clause*.  Clauses are numbered 1, 2, ... within their section in reading order, giving
the stable id ``<revision>/<page>#<slug>.<n>``.

A sentence that ends with a colon and is followed by a list (``Both parties MUST:``)
keeps that list's items as ``detail``; the items are still clauses of their own when
they hold keywords.

Who a clause binds (client, server, both, host, transport) is guessed by
:mod:`spec_map.binds`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .binds import guess_binds

__all__ = [
    "EXCLUDED_FILES",
    "KEYWORDS",
    "STRENGTH",
    "Clause",
    "Section",
    "extract_page",
    "extract_revision",
    "front_matter",
    "plain_text",
    "slugify",
]

KEYWORDS = (
    "MUST NOT",
    "MUST",
    "REQUIRED",
    "SHALL NOT",
    "SHALL",
    "SHOULD NOT",
    "SHOULD",
    "NOT RECOMMENDED",
    "RECOMMENDED",
    "MAY",
    "OPTIONAL",
)
"""The RFC 2119 keywords, longest first so that ``MUST NOT`` wins over ``MUST``."""

STRENGTH: dict[str, int] = {
    "MUST NOT": 5,
    "SHALL NOT": 5,
    "MUST": 4,
    "REQUIRED": 4,
    "SHALL": 4,
    "SHOULD NOT": 3,
    "NOT RECOMMENDED": 3,
    "SHOULD": 2,
    "RECOMMENDED": 2,
    "MAY": 1,
    "OPTIONAL": 1,
}
"""Rank of each keyword; a clause records the strongest keyword it holds.

The order is MUST NOT > MUST/REQUIRED/SHALL > SHOULD NOT > SHOULD/RECOMMENDED >
MAY/OPTIONAL.  SHALL NOT ranks with MUST NOT and NOT RECOMMENDED with SHOULD NOT, as
RFC 2119 makes them synonyms.
"""

EXCLUDED_FILES = frozenset({"schema.md", "schema-reference.md", "server-features-reference.md"})
"""Files of a revision folder that are not extracted: the generated schema reference,
and 2025-11-25's ``server-features-reference.md`` (an older digest of its server pages,
not a page of the specification)."""

_BOLD_KEYWORD = re.compile(r"\*\*(" + "|".join(KEYWORDS) + r")\*\*")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d{1,9}[.)])\s+(.*)$")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_TAG = re.compile(r"</?(?:[A-Z][A-Za-z]*|div|span|p|br|details|summary)\b[^<>]*?/?>")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_LINK = re.compile(
    r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\((?:[^()\s]|\([^()]*\))*(?:\s+\"[^\"]*\")?\)"
)
_AUTOLINK = re.compile(r"<(https?://[^<>\s]+)>")
_PLACEHOLDER = re.compile(r"\x00(\d+)\x00")
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "cf", "approx", "incl", "resp", "Dr", "Mr"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Section:
    """One heading of a page."""

    slug: str
    """GitHub-style anchor, unique within the page."""
    title: str
    """Heading text, as plain text."""
    level: int
    """1 for ``#``, up to 6."""
    line: int
    """1-based line number of the heading in the page file."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Clause:
    """One normative sentence of the spec."""

    id: str
    """``<revision>/<page>#<section-slug>.<n>``, e.g. ``2025-06-18/basic/lifecycle#version-negotiation.2``."""
    revision: str
    """The revision folder name, e.g. ``2025-06-18``."""
    page: str
    """File path under the revision folder without ``.md`` (``basic/lifecycle``)."""
    section: str
    """Section slug (``version-negotiation``)."""
    section_title: str
    """Heading text of the section (``Version Negotiation``)."""
    n: int
    """1-based index among the keyword-bearing sentences of the section."""
    keyword: str
    """The strongest keyword in the sentence (see :data:`STRENGTH`)."""
    keywords: tuple[str, ...]
    """Every bold keyword in the sentence, in reading order (repeats kept)."""
    text: str
    """The sentence as plain text (emphasis and link targets removed, code spans kept)."""
    detail: tuple[str, ...] = ()
    """List items introduced by the sentence when it ends with a colon."""
    line: int
    """1-based line number in the page file of the block the sentence starts in."""
    binds: str
    """``client``, ``server``, ``both``, ``host``, ``transport`` or ``unknown``."""
    binds_why: str
    """How ``binds`` was decided (the matched words, or the fallback used)."""

    @property
    def level(self) -> str:
        """``MUST``, ``SHOULD`` or ``MAY``: the RFC 2119 level of :attr:`keyword`."""
        rank = STRENGTH[self.keyword]
        return "MUST" if rank >= 4 else "SHOULD" if rank >= 2 else "MAY"

    def to_json(self) -> dict[str, object]:
        """The clause as a JSON-ready dict (the catalog.json shape)."""
        return {
            "id": self.id,
            "page": self.page,
            "section": self.section,
            "section_title": self.section_title,
            "n": self.n,
            "keyword": self.keyword,
            "keywords": list(self.keywords),
            "level": self.level,
            "binds": self.binds,
            "binds_why": self.binds_why,
            "text": self.text,
            "detail": list(self.detail),
            "line": self.line,
        }


def slugify(title: str) -> str:
    """GitHub-style slug of a heading's plain text.

    Lower-case; every character that is not a letter, digit, space, hyphen or underscore
    is dropped; each space becomes a hyphen (so ``Trust & Safety`` gives ``trust--safety``).
    """
    out = []
    for ch in title.strip().lower():
        if ch == " ":
            out.append("-")
        elif ch.isalnum() or ch in "-_":
            out.append(ch)
    return "".join(out)


def plain_text(markdown: str) -> str:
    """Inline Markdown to plain text: links to their text, emphasis and escapes dropped.

    Code spans keep their backticks (they name methods and fields).  Whitespace runs
    become one space.
    """
    spans: list[str] = []
    text = _protect_code(markdown, spans)
    text = _strip_inline(text)
    return _restore_code(text, spans)


def _protect_code(text: str, spans: list[str]) -> str:
    def keep(m: re.Match[str]) -> str:
        spans.append(m.group(0))
        return f"\x00{len(spans) - 1}\x00"

    return _CODE_SPAN.sub(keep, text)


def _restore_code(text: str, spans: list[str]) -> str:
    return _PLACEHOLDER.sub(lambda m: spans[int(m.group(1))], text)


def _protect_links(text: str, links: list[str]) -> str:
    """Replace each link by a placeholder holding its text, so no sentence ends inside it."""

    def keep(m: re.Match[str]) -> str:
        links.append(m.group(1))
        return f"\x01{len(links) - 1}\x01"

    return _LINK.sub(keep, text)


def _restore_links(text: str, links: list[str]) -> str:
    return re.sub("\x01(\\d+)\x01", lambda m: links[int(m.group(1))], text)


def _strip_inline(text: str) -> str:
    text = _TAG.sub("", text)
    text = _AUTOLINK.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = re.sub(r"\*\*(.+?)\*\*", r"\1", text)
    text = re.sub(r"(?<![\w\\])__(\S(?:.*?\S)?)__(?!\w)", r"\1", text)
    text = re.sub(r"(?<![\w*\\])\*(\S(?:.*?\S)?)\*(?![\w*])", r"\1", text)
    text = re.sub(r"(?<![\w\\])_(\S(?:.*?\S)?)_(?!\w)", r"\1", text)
    text = re.sub(r"\\([\\`*_{}\[\]()#+\-.!:|<>~\"'])", r"\1", text)
    return re.sub(r"\s+", " ", text).strip()


@dataclass(slots=True)
class _Block:
    kind: str  # "para", "item", "row"; "code" and "tag" only mark a boundary
    line: int
    section: int  # index into the page's sections, -1 before the first heading
    indent: int = 0
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return " ".join(s.strip() for s in self.lines)


def front_matter(lines: list[str]) -> tuple[int, str | None, int]:
    """The page's YAML front matter (``---`` first line, ``---`` closing it), if any.

    Returns:
        ``(lines it takes, its title or None, 1-based line of the title)``; ``(0, None,
        0)`` when the page has none.  Only the ``title:`` key is read (quotes around its
        value dropped); a ``---`` first line never closed is not front matter.
    """
    if not lines or lines[0].strip() != "---":
        return 0, None, 0
    title: str | None = None
    title_line = 0
    for index, raw in enumerate(lines[1:], start=1):
        if raw.strip() == "---":
            return index + 1, title, title_line
        m = re.match(r"^title\s*:\s*(.*?)\s*$", raw)
        if m and title is None:
            title = m.group(1).strip("'\"").strip() or None
            title_line = index + 1
    return 0, None, 0


def _blocks(lines: list[str]) -> tuple[list[Section], list[_Block]]:
    """Split a page into sections and blocks, skipping code blocks and front matter."""
    sections: list[Section] = []
    seen: dict[str, int] = {}
    blocks: list[_Block] = []
    current: _Block | None = None
    fence: str | None = None
    skip, pending, pending_line = front_matter(lines)
    for lineno, raw in enumerate(lines, start=1):
        if lineno <= skip:
            continue
        if pending is not None and raw.strip() and fence is None:
            # The front matter's title heads the page, unless the page opens with its
            # own level-1 heading (then that heading is the title).
            h = _HEADING.match(raw.rstrip())
            if not (h and len(h.group(1)) == 1):
                title = plain_text(pending)
                seen[slugify(title)] = 1
                sections.append(
                    Section(slug=slugify(title), title=title, level=1, line=pending_line)
                )
            pending = None
        if fence is not None:
            m = _FENCE.match(raw)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                if not raw.strip()[len(m.group(1)) :].strip():
                    fence = None
            continue
        m = _FENCE.match(raw)
        if m:
            fence = m.group(1)
            blocks.append(_Block("code", lineno, len(sections) - 1))
            current = None
            continue
        line = raw.rstrip()
        quote = re.match(r"^\s*>\s?", line)
        if quote:
            line = line[quote.end() :]
        if not line.strip() or _RULE.match(line):
            current = None
            continue
        h = _HEADING.match(line)
        if h:
            title = plain_text(h.group(2))
            base = slugify(title)
            count = seen.get(base, 0)
            seen[base] = count + 1
            slug = base if count == 0 else f"{base}-{count}"
            sections.append(Section(slug=slug, title=title, level=len(h.group(1)), line=lineno))
            current = None
            continue
        section = len(sections) - 1
        stripped = line.strip()
        # A line made only of component tags (<Note>, </Warning>, <div .../>) is a boundary.
        if _TAG.fullmatch(stripped) or not _TAG.sub("", stripped).strip():
            blocks.append(_Block("tag", lineno, section))
            current = None
            continue
        if stripped.startswith("|"):
            if _TABLE_SEP.match(stripped):
                continue
            cells = [c.strip() for c in stripped.strip("|").split("|")]
            row = _Block("row", lineno, section, lines=["; ".join(c for c in cells if c)])
            blocks.append(row)
            current = None
            continue
        item = _ITEM.match(line)
        if item:
            current = _Block("item", lineno, section, indent=len(item.group(1)))
            current.lines.append(item.group(2))
            blocks.append(current)
            continue
        if current is None:
            indent = len(line) - len(line.lstrip())
            current = _Block("para", lineno, section, indent=indent)
            blocks.append(current)
        current.lines.append(line)
    return sections, blocks


def _split_sentences(text: str) -> list[str]:
    """Split one block's text (code spans already replaced) into sentences."""
    out: list[str] = []
    start = 0
    for m in re.finditer(r"[.!?][\"')\]*_]*(\s+)", text):
        after = text[m.end() : m.end() + 1]
        if not after or not (after.isupper() or after in '*_"[\x00\x01'):
            continue
        before = text[start : m.start()]
        word = re.search(r"([\w.]+)$", before)
        if word and word.group(1) in _ABBREVIATIONS:
            continue
        out.append(text[start : m.start(1)])
        start = m.end()
    out.append(text[start:])
    return [s.strip() for s in out if s.strip()]


def _detail_items(blocks: list[_Block], index: int) -> tuple[str, ...]:
    """Plain text of the list that follows block ``index`` (its first level only)."""
    items: list[str] = []
    indent: int | None = None
    section = blocks[index].section
    for block in blocks[index + 1 :]:
        if block.kind != "item" or block.section != section:
            break
        if indent is None:
            if blocks[index].kind == "item" and block.indent <= blocks[index].indent:
                break
            indent = block.indent
        if block.indent < indent:
            break
        if block.indent == indent:
            items.append(plain_text(block.text))
    return tuple(items)


def extract_page(
    markdown: str, page: str, revision: str = "2025-06-18"
) -> tuple[list[Section], list[Clause]]:
    """Extract the sections and clauses of one page.

    Args:
        markdown: the page text.
        page: the page path (``basic/lifecycle``), used in ids.
        revision: the revision folder name, used in ids.

    Returns:
        ``(sections, clauses)`` in reading order.
    """
    sections, blocks = _blocks(markdown.splitlines())
    clauses: list[Clause] = []
    counters: dict[int, int] = {}
    previous_binds: dict[int, str] = {}
    for index, block in enumerate(blocks):
        if block.section < 0 or block.kind in ("code", "tag"):
            continue
        spans: list[str] = []
        links: list[str] = []
        text = _protect_links(_protect_code(block.text, spans), links)
        sentences = [_restore_links(s, links) for s in _split_sentences(text)]
        for position, sentence in enumerate(sentences):
            found = _BOLD_KEYWORD.findall(sentence)
            if not found:
                continue
            section = sections[block.section]
            n = counters.get(block.section, 0) + 1
            counters[block.section] = n
            strongest = max(found, key=lambda k: STRENGTH[k])
            plain = _restore_code(_strip_inline(sentence), spans)
            detail: tuple[str, ...] = ()
            if position == len(sentences) - 1 and plain.endswith(":"):
                detail = _detail_items(blocks, index)
            binds, why = guess_binds(
                plain,
                detail=detail,
                page=page,
                previous=previous_binds.get(block.section),
            )
            previous_binds[block.section] = binds
            clauses.append(
                Clause(
                    id=f"{revision}/{page}#{section.slug}.{n}",
                    revision=revision,
                    page=page,
                    section=section.slug,
                    section_title=section.title,
                    n=n,
                    keyword=strongest,
                    keywords=tuple(found),
                    text=plain,
                    detail=detail,
                    line=block.line,
                    binds=binds,
                    binds_why=why,
                )
            )
    return sections, clauses


def page_files(revision_dir: Path) -> Iterator[tuple[str, Path]]:
    """``(page, path)`` for every extracted page of a revision folder, sorted by page."""
    found = []
    for path in revision_dir.rglob("*.md"):
        rel = path.relative_to(revision_dir)
        if rel.as_posix() in EXCLUDED_FILES:
            continue
        found.append((rel.with_suffix("").as_posix(), path))
    yield from sorted(found)


def extract_revision(
    revision_dir: Path,
) -> tuple[dict[str, list[Section]], list[Clause], dict[str, str]]:
    """Extract every page of a revision folder (``schema*.md`` excepted).

    Returns:
        ``(sections by page, clauses, page titles)``; clauses ordered by page then
        reading order.

    Raises:
        FileNotFoundError: ``revision_dir`` does not exist.
    """
    if not revision_dir.is_dir():
        raise FileNotFoundError(f"no spec revision folder at {revision_dir}")
    revision = revision_dir.name
    sections: dict[str, list[Section]] = {}
    titles: dict[str, str] = {}
    clauses: list[Clause] = []
    for page, path in page_files(revision_dir):
        secs, found = extract_page(path.read_text(encoding="utf-8"), page, revision)
        sections[page] = secs
        titles[page] = secs[0].title if secs else page
        clauses.extend(found)
    return sections, clauses, titles


def keyword_counts(clauses: Iterable[Clause]) -> dict[str, int]:
    """Number of clauses per strongest keyword."""
    counts: dict[str, int] = {}
    for clause in clauses:
        counts[clause.keyword] = counts.get(clause.keyword, 0) + 1
    return counts

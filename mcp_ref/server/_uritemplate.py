"""RFC 6570 URI templates: parse, expand (levels 1-4) and match (read a URI back).

Theory of operation
-------------------
MCP resource templates are RFC 6570 URI templates
(2025-06-18/server/resources#resource-templates).  A server needs the *reverse* of
what RFC 6570 defines: given a URI a client wants to read, decide whether a template
produced it and with which variable values.  :class:`UriTemplate` parses a template
once into literals and expressions and compiles one regular expression for the whole
URI; :meth:`UriTemplate.match` runs it and then reads each expression's part of the
URI back into values.  :meth:`UriTemplate.expand` does the forward direction exactly
as the RFC says (all operators, prefixes, explode), so tests can check that
``match(expand(values)) == values`` wherever that is decidable.

What ``match`` recovers, operator by operator (RFC 6570 section 3.2):

=========  ==================  =======================================================
operator   example             matched as
=========  ==================  =======================================================
(none)     ``{var}``           unreserved and %-encoded characters; ``,`` separates
                               variables or list items
``+``      ``{+path}``         any URI character (``/``, ``?``, ``#``... included)
``#``      ``{#frag}``         ``#`` then any URI character
``.``      ``{.ext}``          ``.`` before each value
``/``      ``{/seg}``          ``/`` before each value
``;``      ``{;p}``            ``;name=value`` (``;name`` for an empty value)
``?``      ``{?q}``            ``?name=value&name=value``
``&``      ``{&q}``            ``&name=value`` (continues a query)
=========  ==================  =======================================================

Values are %-decoded.  A variable that expanded to nothing is absent from the result.

What cannot be matched unambiguously, and what ``match`` does instead:

* **List or string.**  In ``{var}`` an unencoded ``,`` can only come from a list, so a
  value with a comma comes back as ``list[str]``; but a one-item list expands like a
  string and comes back as ``str``.
* **Associative arrays** (dicts) come back as dicts only when exploded: in the named
  operators (``;``, ``?``, ``&``) items whose names are not variables of the
  expression are collected into a ``dict`` for the (single) exploded variable; in
  ``{/var*}``, ``{.var*}`` and ``{var*}`` items that all hold an unencoded ``=`` are
  ``key=value`` pairs.  A dict that is not exploded comes back as a flat list.
* **``.`` inside label values** (``{.x}``): ``.`` is unreserved, so it is never
  encoded, and ``{.x,y}`` against ``.a.b.c`` cannot know where ``x`` ends.  Items are
  dealt one per variable in order and the *last* variable (or the exploded one) takes
  the rest, joined with the separator.
* **Reserved expansion** (``{+x}``, ``{#x}``) allows ``,`` inside values: a single
  variable takes the whole part as one string; with several variables the commas are
  dealt as above.
* **Where one expression ends and the next begins**: each expression's part of the URI
  is matched *lazily*, so the earliest split that lets the rest of the URI match wins
  (``{+a}/{+b}`` on ``x/y/z`` gives ``a="x"``, ``b="y/z"``).
* **Prefix modifiers** (``{var:3}``): only the prefix is in the URI, so only the prefix
  comes back (a match fails if the part is longer than the prefix length).
* **Named operators** require the names in the URI to be the expression's variables
  (or an exploded variable's keys, see above), in any order; unknown names fail the
  match rather than being dropped.

Every URI is matched against one compiled regular expression.  :meth:`UriTemplate.match`
refuses URIs longer than ``MAX_URI_LENGTH`` characters, and less for templates whose
neighbouring expressions can each claim the same characters (``{a}{b}``, ``{x}.{y}``):
each such pair multiplies the backtracking on a URI that does not match, so the limit
is chosen to keep the worst case near 10**7 regex steps.

Source: RFC 6570 (URI Template), sections 2 and 3, and appendix A.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final, TypeAlias
from urllib.parse import quote, unquote

import attrs

__all__ = ["MAX_URI_LENGTH", "UriTemplate", "UriTemplateError", "Value"]

MAX_URI_LENGTH: Final = 8192
"""The longest URI (in characters) :meth:`UriTemplate.match` will try to match."""

Value: TypeAlias = str | list[str] | dict[str, str]
"""A variable's value: a string, a list of strings, or an associative array."""


class UriTemplateError(ValueError):
    """A template that is not valid RFC 6570 syntax; the message names the position."""


@attrs.frozen
class _Op:
    first: str
    sep: str
    named: bool
    ifemp: str
    reserved: bool  # True: allow reserved characters (U+R); False: unreserved only (U)


# RFC 6570 appendix A, the table of expansion rules per operator.
_OPS: Final[dict[str, _Op]] = {
    "": _Op("", ",", False, "", False),
    "+": _Op("", ",", False, "", True),
    ".": _Op(".", ".", False, "", False),
    "/": _Op("/", "/", False, "", False),
    ";": _Op(";", ";", True, "", False),
    "?": _Op("?", "&", True, "=", False),
    "&": _Op("&", "&", True, "=", False),
    "#": _Op("#", ",", False, "", True),
}
_FUTURE_OPS: Final = frozenset("=,!@|")  # reserved by RFC 6570 section 2.2 for future use

_VARNAME: Final = re.compile(
    r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*"
)
# Characters allowed in literals: RFC 6570 section 2.1 (no CTL, SP, DQUOTE, "'", "<",
# ">", "\", "^", "`", "{", "|", "}"; "%" only as a pct-encoding).
_LITERAL_BAD: Final = re.compile(r"""[\x00-\x20\x7f"'<>\\^`{|}]|%(?![0-9A-Fa-f]{2})""")

_UNRESERVED_SAFE: Final = "-._~"
_RESERVED_SAFE: Final = "-._~:/?#[]@!$&'()*+,;=%"

_PCT: Final = r"%[0-9A-Fa-f]{2}"
_U: Final = rf"(?:[A-Za-z0-9\-._~]|{_PCT})"
_UR: Final = rf"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|{_PCT})"


@attrs.frozen
class _VarSpec:
    name: str
    prefix: int | None
    explode: bool


@attrs.frozen
class _Expression:
    op: str
    variables: tuple[_VarSpec, ...]

    @property
    def rules(self) -> _Op:
        return _OPS[self.op]


_Part: TypeAlias = str | _Expression


def _parse(template: str) -> list[_Part]:
    parts: list[_Part] = []
    pos = 0
    while pos < len(template):
        start = template.find("{", pos)
        end_literal = len(template) if start < 0 else start
        literal = template[pos:end_literal]
        if "}" in literal:
            raise UriTemplateError(f"unmatched '}}' at position {pos + literal.index('}')}")
        bad = _LITERAL_BAD.search(literal)
        if bad:
            raise UriTemplateError(
                f"character {bad.group()!r} at position {pos + bad.start()} is not allowed "
                "in a URI template literal"
            )
        if literal:
            parts.append(literal)
        if start < 0:
            break
        close = template.find("}", start)
        if close < 0:
            raise UriTemplateError(f"unclosed '{{' at position {start}")
        parts.append(_parse_expression(template[start + 1 : close], start))
        pos = close + 1
    return parts


def _parse_expression(body: str, where: int) -> _Expression:
    if "{" in body:
        raise UriTemplateError(f"nested '{{' in the expression at position {where}")
    op = body[:1] if body[:1] in _OPS and body[:1] != "" else ""
    if body[:1] in _FUTURE_OPS:
        raise UriTemplateError(f"operator {body[0]!r} at position {where} is reserved")
    rest = body[len(op) :]
    if not rest:
        raise UriTemplateError(f"empty expression at position {where}")
    specs: list[_VarSpec] = []
    for raw in rest.split(","):
        explode = raw.endswith("*")
        name, _, prefix_text = (raw[:-1] if explode else raw).partition(":")
        if not _VARNAME.fullmatch(name):
            raise UriTemplateError(f"invalid variable name {name!r} at position {where}")
        prefix: int | None = None
        if prefix_text or ":" in raw:
            if explode or not prefix_text.isdigit() or prefix_text.startswith("0"):
                raise UriTemplateError(f"invalid prefix modifier in {raw!r} at position {where}")
            prefix = int(prefix_text)
            if prefix > 9999:
                raise UriTemplateError(f"prefix {prefix} exceeds 9999 at position {where}")
        specs.append(_VarSpec(name, prefix, explode))
    return _Expression(op, tuple(specs))


class UriTemplate:
    """A parsed RFC 6570 URI template.

    Args:
        template: the template text, e.g. ``"test://template/{id}/data"``.

    Raises:
        UriTemplateError: the text is not a valid template (the message says where).

    Attributes:
        template: the text it was built from.
        variables: the variable names, in order of appearance.

    Source: RFC 6570 sections 2 (syntax) and 3 (expansion).
    """

    __slots__ = ("_expressions", "_max_length", "_parts", "_regex", "template", "variables")

    def __init__(self, template: str) -> None:
        self.template = template
        self._parts = _parse(template)
        self._expressions = [p for p in self._parts if isinstance(p, _Expression)]
        names = [v.name for e in self._expressions for v in e.variables]
        self.variables: tuple[str, ...] = tuple(dict.fromkeys(names))
        self._regex = re.compile(self._pattern(), re.DOTALL)
        self._max_length = self._longest_uri()

    def __repr__(self) -> str:
        return f"UriTemplate({self.template!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UriTemplate) and other.template == self.template

    def __hash__(self) -> int:
        return hash(self.template)

    @property
    def is_literal(self) -> bool:
        """True when the template has no expressions (it names exactly one URI)."""
        return not self._expressions

    # -- expansion ------------------------------------------------------------------

    def expand(self, values: Mapping[str, Value | None]) -> str:
        """Expand the template with ``values`` exactly as RFC 6570 section 3 says.

        Args:
            values: variable name -> string, list of strings, or dict of strings;
                missing, None, empty lists and empty dicts are undefined.

        Returns:
            The URI (str).
        """
        out: list[str] = []
        for part in self._parts:
            if isinstance(part, str):
                out.append(part)
            else:
                out.append(_expand_expression(part, values))
        return "".join(out)

    # -- matching -------------------------------------------------------------------

    def match(self, uri: str) -> dict[str, Value] | None:
        """Read ``uri`` back into variable values, or None when the template cannot
        have produced it.

        Returns:
            ``{name: value}`` for every variable that is defined in ``uri`` (strings,
            lists of strings, or dicts; %-decoded).  See the module docstring for what
            is ambiguous and how it is resolved.
        """
        if len(uri) > self._max_length:
            return None
        m = self._regex.fullmatch(uri)
        if m is None:
            return None
        result: dict[str, Value] = {}
        prefixed: dict[str, Value] = {}
        for i, expr in enumerate(self._expressions):
            if not _read_expression(expr, m.group(f"e{i}"), result, prefixed):
                return None
        for name, short in prefixed.items():
            full = result.get(name)
            if full is None:
                result[name] = short
            elif not (isinstance(full, str) and isinstance(short, str) and full.startswith(short)):
                return None  # {var:3} and {var} disagree
        return result

    def _pattern(self) -> str:
        pieces: list[str] = []
        index = 0
        for part in self._parts:
            if isinstance(part, str):
                pieces.append(re.escape(part))
            else:
                pieces.append(f"(?P<e{index}>{_expression_pattern(part)})")
                index += 1
        return "".join(pieces)

    def _longest_uri(self) -> int:
        """The longest URI worth matching: lower when parts of the URI could belong to
        either of two neighbouring expressions, since each such pair multiplies the
        regex's backtracking on a URI that does not match (n ** (pairs + 1) <= 1e7)."""
        pairs = 0
        previous: _Expression | None = None
        between = ""
        for part in self._parts:
            if isinstance(part, str):
                between += part
                continue
            if previous is not None and _absorbs(previous, between):
                pairs += 1
            previous, between = part, ""
        return min(MAX_URI_LENGTH, int(10 ** (7 / (pairs + 1))))


def _absorbs(expr: _Expression, literal: str) -> bool:
    """Whether the URI part of ``expr`` could also contain ``literal``."""
    if expr.rules.reserved:
        return True
    return all(c.isalnum() or c in "-._~,=&;%" for c in literal)


def _expression_pattern(expr: _Expression) -> str:
    """A lazy regex for the part of a URI one expression can produce."""
    rules = expr.rules
    first = re.escape(rules.first)
    sep = re.escape(rules.sep)
    exploded = any(v.explode for v in expr.variables)
    if rules.named:
        names = "|".join(re.escape(v.name) for v in expr.variables)
        name = f"(?:{names}|{_U}+)" if exploded else f"(?:{names})"
        item = rf"{name}(?:=(?:{_U}|,)*?)?"
        return rf"(?:{first}{item}(?:{sep}{item})*?)?"
    if rules.reserved:
        chars = _UR
    elif exploded:
        chars = rf"(?:{_U}|[,=])"  # an exploded dict writes key=value
    else:
        chars = rf"(?:{_U}|,)"
    if rules.sep == "/":  # the only separator the value characters do not include
        body = rf"{chars}*?(?:{sep}{chars}*?)*?"
    else:
        body = rf"{chars}*?"
    return rf"(?:{first}{body})?" if first else body


def _put(
    result: dict[str, Value], prefixed: dict[str, Value], spec: _VarSpec, value: Value
) -> bool:
    """Record one variable's value; False when it contradicts an earlier one."""
    target = prefixed if spec.prefix is not None and isinstance(value, str) else result
    if target.get(spec.name, value) != value:
        return False
    target[spec.name] = value
    return True


def _read_expression(
    expr: _Expression, text: str | None, result: dict[str, Value], prefixed: dict[str, Value]
) -> bool:
    """Read one expression's part of the URI into ``result`` (``prefixed`` for values of
    ``{var:N}``); False when the part cannot be read."""
    if not text:
        return True
    rules = expr.rules
    body = text[len(rules.first) :]
    if rules.named:
        return _read_named(expr, body, result, prefixed)
    items = body.split(rules.sep)
    specs = list(expr.variables)
    # Deal items: one per variable; the first exploded variable (else the last one)
    # takes whatever is left over.
    spare = len(items) - len(specs)
    greedy = next((i for i, s in enumerate(specs) if s.explode), len(specs) - 1)
    if spare < 0:
        specs = specs[: len(items)]  # trailing variables were undefined
        spare = 0
    pos = 0
    for i, spec in enumerate(specs):
        take = 1 + spare if i == greedy else 1
        chunk = items[pos : pos + take]
        pos += take
        value = _value_from_items(spec, chunk, rules)
        if value is None or not _put(result, prefixed, spec, value):
            return False
    return True


def _value_from_items(spec: _VarSpec, chunk: list[str], rules: _Op) -> Value | None:
    if spec.explode:
        if not rules.reserved and all("=" in c for c in chunk):
            # An unencoded "=" can only come from an exploded associative array.
            return dict((unquote(k), unquote(v)) for k, _, v in (c.partition("=") for c in chunk))
        decoded = [unquote(c) for c in chunk]
        return decoded if len(decoded) > 1 else decoded[0]
    raw = rules.sep.join(chunk)
    if not rules.reserved and "," in raw:
        return [unquote(p) for p in raw.split(",")]
    value = unquote(raw)
    if spec.prefix is not None and len(value) > spec.prefix:
        return None
    return value


def _read_named(
    expr: _Expression, body: str, result: dict[str, Value], prefixed: dict[str, Value]
) -> bool:
    rules = expr.rules
    by_name = {v.name: v for v in expr.variables}
    exploded = [v for v in expr.variables if v.explode]
    lists: dict[str, list[str]] = {}
    extra: dict[str, str] = {}
    for item in body.split(rules.sep):
        name, eq, raw = item.partition("=")
        spec = by_name.get(name)
        if spec is None:
            if len(exploded) != 1 or not eq:
                return False
            extra[unquote(name)] = unquote(raw)
        elif spec.explode:
            lists.setdefault(name, []).append(unquote(raw))
        else:
            one: Value = [unquote(p) for p in raw.split(",")] if "," in raw else unquote(raw)
            if isinstance(one, str) and spec.prefix is not None and len(one) > spec.prefix:
                return False
            if not _put(result, prefixed, spec, one):
                return False  # a non-exploded variable given two different values
    for name, values in lists.items():
        if not _put(result, prefixed, by_name[name], values if len(values) > 1 else values[0]):
            return False
    if extra:
        target = exploded[0]
        if target.name in lists:
            return False  # both a list under its own name and foreign keys: ambiguous
        if not _put(result, prefixed, target, extra):
            return False
    return True


# -- expansion helpers (RFC 6570 section 3.2.1 and appendix A) -------------------------


def _encode(text: str, reserved: bool) -> str:
    if reserved:
        # Keep reserved characters and existing pct-encodings; encode everything else.
        return re.sub(
            r"%(?![0-9A-Fa-f]{2})|[^%]+",
            lambda m: "%25" if m.group() == "%" else quote(m.group(), safe=_RESERVED_SAFE),
            text,
        )
    return quote(text, safe=_UNRESERVED_SAFE)


def _expand_expression(expr: _Expression, values: Mapping[str, Value | None]) -> str:
    rules = expr.rules
    pieces: list[str] = []
    for spec in expr.variables:
        value = values.get(spec.name)
        if value is None or (not isinstance(value, str) and len(value) == 0):
            continue
        pieces.append(_expand_var(spec, value, rules))
    if not pieces:
        return ""
    return rules.first + rules.sep.join(pieces)


def _expand_var(spec: _VarSpec, value: Value, rules: _Op) -> str:
    enc = rules.reserved
    name = spec.name
    if isinstance(value, str):
        text = value if spec.prefix is None else value[: spec.prefix]
        encoded = _encode(text, enc)
        if rules.named:
            return f"{name}={encoded}" if encoded else f"{name}{rules.ifemp}"
        return encoded
    pairs: Sequence[tuple[str | None, str]]
    if isinstance(value, dict):
        pairs = [(k, v) for k, v in value.items()]
    else:
        pairs = [(None, v) for v in value]
    if spec.explode:
        out: list[str] = []
        for key, item in pairs:
            encoded = _encode(item, enc)
            if key is not None:
                out.append(f"{_encode(key, enc)}={encoded}")
            elif rules.named:
                out.append(f"{name}={encoded}" if encoded else f"{name}{rules.ifemp}")
            else:
                out.append(encoded)
        return rules.sep.join(out)
    flat: list[str] = []
    for key, item in pairs:
        if key is not None:
            flat.append(_encode(key, enc))
        flat.append(_encode(item, enc))
    joined = ",".join(flat)
    if rules.named:
        return f"{name}={joined}" if joined else f"{name}{rules.ifemp}"
    return joined

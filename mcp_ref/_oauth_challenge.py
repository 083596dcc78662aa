"""OAuth sign-in, part 2: reading ``WWW-Authenticate`` challenges.

Theory of operation
-------------------
A protected MCP server answers ``401`` (no or bad token) or ``403`` (too few scopes)
with a ``WWW-Authenticate`` header.  Its grammar is RFC 9110 section 11.6.1::

    challenge  = auth-scheme [ 1*SP ( token68 / #auth-param ) ]
    auth-param = token BWS "=" BWS ( token / quoted-string )

One header field may hold several challenges separated by commas, and a response may
carry several fields; the commas that separate challenges are the same ones that
separate parameters.  :func:`parse_challenges` resolves that the way the grammar does:
after a comma, ``name=`` continues the current challenge, and a bare token starts a new
one.  Parameter names are case-insensitive (kept lowercased); a name given twice in one
challenge, an unterminated quoted string or a stray character is a
:class:`~mcp_ref._oauth_http.MalformedChallenge`, and nothing else is ever raised (a
property test feeds it arbitrary text).

:func:`bearer_challenge` picks the ``Bearer`` challenge out of a response's fields and
returns what MCP reads from it: ``resource_metadata`` (RFC 9728 section 5.1), ``scope``
(RFC 6750 section 3, split on spaces), ``error`` and ``error_description``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from ._oauth_http import MalformedChallenge

__all__ = ["BearerChallenge", "Challenge", "bearer_challenge", "parse_challenges"]

_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_TOKEN68: Final = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_OWS: Final = re.compile(r"[ \t]*")
_MAX_HEADER: Final = 16 * 1024
"""Longest challenge text read (characters); a longer one is malformed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Challenge:
    """One challenge of a ``WWW-Authenticate`` header."""

    scheme: str
    """The auth scheme, lowercased (``"bearer"``)."""
    params: dict[str, str]
    """Parameters, names lowercased, values unquoted."""
    token68: str | None = None
    """The token68 form's value, when the challenge uses it instead of parameters."""


def _skip(text: str, i: int) -> int:
    return _OWS.match(text, i).end()  # type: ignore[union-attr]


def _quoted(text: str, i: int) -> tuple[str, int]:
    """The quoted-string starting at ``text[i] == '"'``: (value, index after it)."""
    out: list[str] = []
    i += 1
    while i < len(text):
        ch = text[i]
        if ch == '"':
            return "".join(out), i + 1
        if ch == "\\":
            if i + 1 >= len(text):
                break
            ch = text[i + 1]
            i += 1
        if (ord(ch) < 0x20 and ch != "\t") or ord(ch) == 0x7F:
            raise MalformedChallenge(f"control character in a quoted string at {i}")
        out.append(ch)
        i += 1
    raise MalformedChallenge("unterminated quoted string in WWW-Authenticate")


def _param_ahead(text: str, i: int) -> bool:
    """Whether ``text[i:]`` starts ``token BWS "="`` (a parameter, not a new scheme)."""
    m = _TOKEN.match(text, i)
    if m is None:
        return False
    j = _skip(text, m.end())
    return j < len(text) and text[j] == "="


def _params(text: str, i: int, scheme: str) -> tuple[dict[str, str], int]:
    """Parameters of one challenge from ``i``; stops before the next challenge."""
    params: dict[str, str] = {}
    while True:
        name_m = _TOKEN.match(text, i)
        if name_m is None:
            raise MalformedChallenge(f"expected a parameter name at {i} in {scheme!r}")
        name = name_m.group(0).lower()
        i = _skip(text, name_m.end()) + 1  # past "="
        i = _skip(text, i)
        if i < len(text) and text[i] == '"':
            value, i = _quoted(text, i)
        else:
            value_m = _TOKEN.match(text, i)
            if value_m is None:
                raise MalformedChallenge(f"expected a value for {name!r} at {i}")
            value, i = value_m.group(0), value_m.end()
        if name in params:
            raise MalformedChallenge(f"parameter {name!r} given twice in one challenge")
        params[name] = value
        i = _skip(text, i)
        if i >= len(text):
            return params, i
        if text[i] != ",":
            raise MalformedChallenge(f"unexpected {text[i]!r} at {i} in WWW-Authenticate")
        # Empty list elements (",,") are allowed by the list syntax.
        while i < len(text) and text[i] in ", \t":
            i += 1
        if i >= len(text) or not _param_ahead(text, i):
            return params, i


def parse_challenges(header: str) -> list[Challenge]:
    """Every challenge of one ``WWW-Authenticate`` field value, in order.

    Args:
        header: the field value (text; at most 16 KiB).

    Returns:
        The challenges (empty for an empty or all-blank value).

    Raises:
        MalformedChallenge: the value does not follow RFC 9110 section 11.6.1.
    """
    if len(header) > _MAX_HEADER:
        raise MalformedChallenge(f"WWW-Authenticate is over {_MAX_HEADER} characters")
    out: list[Challenge] = []
    i = 0
    while True:
        while i < len(header) and header[i] in ", \t":
            i += 1
        if i >= len(header):
            return out
        scheme_m = _TOKEN.match(header, i)
        if scheme_m is None:
            raise MalformedChallenge(f"expected an auth scheme at {i}: {header[i]!r}")
        scheme = scheme_m.group(0).lower()
        i = scheme_m.end()
        if i < len(header) and header[i] not in " \t,":
            raise MalformedChallenge(f"unexpected {header[i]!r} after scheme {scheme!r}")
        i = _skip(header, i)
        if i >= len(header) or header[i] == ",":
            out.append(Challenge(scheme=scheme, params={}))
            continue
        t68 = _TOKEN68.match(header, i)
        after = _skip(header, t68.end()) if t68 else i
        is_token68 = t68 is not None and (after >= len(header) or header[after] == ",")
        # "abc==" also reads as a parameter "abc" with an empty value; a token68 ends
        # with its "="s, a parameter needs a value after its "=".
        if not is_token68 and _param_ahead(header, i):
            params, i = _params(header, i, scheme)
            out.append(Challenge(scheme=scheme, params=params))
            continue
        if t68 is None or not is_token68:
            raise MalformedChallenge(f"expected parameters or a token68 after {scheme!r}")
        i = after
        out.append(Challenge(scheme=scheme, params={}, token68=t68.group(0)))


@dataclass(frozen=True, slots=True, kw_only=True)
class BearerChallenge:
    """What MCP reads from a ``Bearer`` challenge (every field None when absent)."""

    resource_metadata: str | None = None
    """The protected resource metadata URL (RFC 9728 section 5.1)."""
    scope: tuple[str, ...] | None = None
    """The scopes the server asks for (RFC 6750 section 3), split on spaces."""
    error: str | None = None
    """``invalid_token``, ``insufficient_scope``, ... (RFC 6750 section 3.1)."""
    error_description: str | None = None
    """The human-readable explanation, if any."""


def bearer_challenge(values: Iterable[str]) -> BearerChallenge | None:
    """The first ``Bearer`` (or ``DPoP``, RFC 9449 section 7.1: the same parameters)
    challenge among a response's ``WWW-Authenticate`` values.

    Args:
        values: every ``WWW-Authenticate`` field value of the response, in order.

    Returns:
        Its parameters, or None when no challenge uses the Bearer or DPoP scheme.

    Raises:
        MalformedChallenge: a field value is malformed (see :func:`parse_challenges`).
    """
    # Spec: 2025-11-25/basic/authorization#protected-resource-metadata-discovery-requirements.8
    # "MCP clients MUST be able to parse `WWW-Authenticate` headers and respond appropriately to
    # `HTTP 401 Unauthorized` responses from the MCP server."
    # Spec: 2026-07-28/basic/authorization/authorization-server-discovery#protected-resource-metadata-discovery-requirements.3
    # "MCP clients MUST be able to parse `WWW-Authenticate` headers and respond appropriately to
    # `HTTP 401 Unauthorized` responses from the MCP server."
    # Spec: 2025-06-18/basic/authorization#authorization-server-location.4
    # "MCP clients MUST be able to parse `WWW-Authenticate` headers and respond
    # appropriately to `HTTP 401 Unauthorized` responses from the MCP server."
    for value in values:
        for challenge in parse_challenges(value):
            if challenge.scheme not in ("bearer", "dpop"):
                continue
            p = challenge.params
            scope = p.get("scope")
            return BearerChallenge(
                resource_metadata=p.get("resource_metadata") or None,
                scope=tuple(scope.split()) if scope is not None else None,
                error=p.get("error"),
                error_description=p.get("error_description"),
            )
    return None

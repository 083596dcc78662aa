"""Which protocol revisions allow a definition or a field of :mod:`mcp_ref.types`.

Theory of operation
-------------------
:mod:`mcp_ref.types` is one model for every revision the project reads: a class holds
the fields of every revision that defines it (``CallToolRequestParams`` has 2025-11-25's
``task`` and 2026-07-28's ``input_responses`` side by side).  The generator
(``spec_map/gen_types.py``) writes down, beside each piece, the revisions whose schema
has it:

* each field's attrs metadata: ``{"revisions": (...)}`` always, and ``{"required_in":
  (...)}`` when the revisions that require the field are not simply "all that allow it"
  (for a field without a default) or "none" (for an optional one);
* ``types.DEFINED_IN[name]``: the revisions whose schema defines ``name`` with the shape
  generated (a class, a union, an alias).

This module only reads those records, so the answer is the schemas' own: nothing here
is written by hand but the list of revisions and the two eras.  The two eras are the
versioning page's: the four revisions negotiated by ``initialize`` (the handshake era)
and the revisions that carry their version in every request's ``_meta`` (the modern
era, 2026-07-28 on).

Source: the official schema.json of each revision (``$defs``/``definitions``);
2026-07-28/basic/versioning (the eras).
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from . import types

__all__ = [
    "HANDSHAKE_REVISIONS",
    "MODERN_REVISIONS",
    "REVISIONS",
    "allowed_in",
    "fields_in",
    "required_in",
    "revisions_of",
]

REVISIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
"""Every revision whose schema :mod:`mcp_ref.types` is generated from, oldest first."""

HANDSHAKE_REVISIONS: Final = REVISIONS[:4]
"""The revisions negotiated once, by ``initialize`` (2024-11-05 to 2025-11-25)."""

MODERN_REVISIONS: Final = REVISIONS[4:]
"""The revisions whose every request names its version in ``_meta`` (2026-07-28)."""


def _check_revision(revision: str) -> None:
    if revision not in REVISIONS:
        raise ValueError(f"unknown revision {revision!r}; known: {', '.join(REVISIONS)}")


def revisions_of(thing: Any) -> tuple[str, ...]:
    """The revisions that allow ``thing``, oldest first.

    ``thing`` is a class or alias of :mod:`mcp_ref.types` (or its name, ``"Tool"``), or
    one of a class's fields (an ``attrs.Attribute``, from ``attrs.fields(Tool).icons``).
    A class or alias: the revisions whose schema defines the name with the shape
    generated (an alias object equal to another, ``RequestId`` and ``ProgressToken``,
    is looked up under the first name bound to it: pass the name to be exact).  A field: the revisions whose schema has that property on that object.

    Raises:
        KeyError: a name or class that :mod:`mcp_ref.types` does not define.
        ValueError: an attribute without revision metadata (``extra``, or a field of a
            class from elsewhere).
    """
    if isinstance(thing, attrs.Attribute):
        found = thing.metadata.get("revisions")
        if found is None:
            raise ValueError(f"field {thing.name!r} records no revisions (not a schema field)")
        return tuple(found)
    if isinstance(thing, str):
        name: str | None = thing
    elif isinstance(thing, type):
        own: str = thing.__name__
        name = own if getattr(types, own, None) is thing else None
    else:  # a union or alias object: the first name bound to an equal value
        name = next((n for n in types.DEFINED_IN if getattr(types, n) == thing), None)
    if name is None or name not in types.DEFINED_IN:
        raise KeyError(f"{thing!r} is not a definition of mcp_ref.types")
    return types.DEFINED_IN[name]


def allowed_in(thing: Any, revision: str) -> bool:
    """Whether ``revision``'s schema has ``thing`` (see :func:`revisions_of`).

    ``allowed_in(types.DiscoverRequest, "2025-11-25")`` is False;
    ``allowed_in(attrs.fields(types.Result).result_type, "2026-07-28")`` is True.

    Raises:
        ValueError: ``revision`` is not one of :data:`REVISIONS`; a field without
            revision metadata.
        KeyError: ``thing`` is not a definition of :mod:`mcp_ref.types`.
    """
    _check_revision(revision)
    return revision in revisions_of(thing)


def required_in(field: attrs.Attribute[Any], revision: str) -> bool:
    """Whether ``revision``'s schema requires the property ``field`` stands for.

    False where the revision does not allow it.  Otherwise the ``required_in`` metadata
    when the field has it, else what the field itself says: a field without a default,
    or a constant with one (``type: Literal["text"] = "text"``), is required.

    Raises:
        ValueError: ``revision`` is not one of :data:`REVISIONS`; a field without
            revision metadata.
    """
    _check_revision(revision)
    if revision not in revisions_of(field):
        return False
    listed = field.metadata.get("required_in")
    if listed is not None:
        return revision in listed
    if field.default is attrs.NOTHING:
        return True
    return field.default is not None


def fields_in(cls: type, revision: str) -> tuple[attrs.Attribute[Any], ...]:
    """The fields of the attrs class ``cls`` that ``revision`` allows, in class order
    (``extra`` is never one).

    Raises:
        ValueError: ``revision`` is not one of :data:`REVISIONS`.
    """
    _check_revision(revision)
    return tuple(
        f
        for f in attrs.fields(cls)
        if f.name != "extra" and revision in f.metadata.get("revisions", ())
    )

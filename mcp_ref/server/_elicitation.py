"""Checking the content a client returns for ``elicitation/create`` against the schema
the server asked with.

Theory of operation
-------------------
A form elicitation asks for a flat object whose properties are primitive JSON Schemas
(string, number, integer, boolean, single- or multi-select enum).  The client answers
``action: "accept"`` with ``content``; the spec asks both parties to check that content
against the requested schema (2025-06-18/client/elicitation#security-considerations.3).
:func:`elicited_content_problem` does so for that restricted subset, without any JSON
Schema library: types, ``required``, ``enum`` / ``oneOf`` / ``anyOf`` consts, string
lengths, number bounds and item counts.  ``format`` is not checked (a hint for the UI).
Properties the schema does not name are let through, as JSON Schema does without
``additionalProperties: false``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["elicited_content_problem"]


def _consts(schema: Mapping[str, Any]) -> list[Any] | None:
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    for key in ("oneOf", "anyOf"):
        options = schema.get(key)
        if isinstance(options, list):
            return [o.get("const") for o in options if isinstance(o, Mapping)]
    return None


# The bounds JSON Schema puts on each kind: (keyword, is the value under it too small,
# the words of the problem).  Numbers are bounded by value, strings by length, arrays by
# item count.
_BOUNDS: dict[str, tuple[tuple[str, bool, str], ...]] = {
    "number": (
        ("minimum", True, "below the minimum {}"),
        ("maximum", False, "above the maximum {}"),
    ),
    "string": (
        ("minLength", True, "shorter than {} characters"),
        ("maxLength", False, "longer than {} characters"),
    ),
    "array": (("minItems", True, "fewer than {} items"), ("maxItems", False, "more than {} items")),
}
_BOUNDS["integer"] = _BOUNDS["number"]


def _bound_problem(name: str, kind: str, schema: Mapping[str, Any], value: Any) -> str | None:
    """The first bound of ``_BOUNDS[kind]`` that ``value`` breaks, as a problem."""
    measure = value if kind in ("number", "integer") else len(value)
    for keyword, is_minimum, words in _BOUNDS[kind]:
        if keyword in schema:
            limit = schema[keyword]
            if (measure < limit) if is_minimum else (measure > limit):
                return f"{name}: " + words.format(limit)
    return None


def _value_problem(name: str, schema: Mapping[str, Any], value: Any) -> str | None:
    kind = schema.get("type")
    if kind == "boolean":
        return None if type(value) is bool else f"{name}: expected a boolean"
    if kind in ("number", "integer"):
        if type(value) is bool or not isinstance(value, int | float):
            return f"{name}: expected a {kind}"
        if kind == "integer" and not (isinstance(value, int) or value.is_integer()):
            return f"{name}: expected an integer"
        return _bound_problem(name, kind, schema, value)
    if kind == "string":
        if not isinstance(value, str):
            return f"{name}: expected a string"
        consts = _consts(schema)
        if consts is not None and value not in consts:
            return f"{name}: {value!r} is not one of the allowed values"
        return _bound_problem(name, kind, schema, value)
    if kind == "array":
        if not isinstance(value, list):
            return f"{name}: expected an array"
        items = schema.get("items")
        consts = _consts(items) if isinstance(items, Mapping) else None
        if consts is not None and any(v not in consts for v in value):
            return f"{name}: holds a value that is not one of the allowed values"
        return _bound_problem(name, kind, schema, value)
    return f"{name}: the requested schema has an unsupported type {kind!r}"


def elicited_content_problem(requested_schema: Mapping[str, Any], content: Any) -> str | None:
    """What is wrong with ``content`` for ``requested_schema``, or None when it fits.

    Args:
        requested_schema: the ``requestedSchema`` as JSON (a dict with ``properties``
            and optional ``required``).
        content: the ``content`` of an accepted ``ElicitResult``.

    Returns:
        A short description of the first problem found (naming the field), or None.

    Source: 2025-06-18/client/elicitation#security-considerations.3.
    """
    if not isinstance(content, Mapping):
        return "content: expected an object"
    properties = requested_schema.get("properties") or {}
    for name in requested_schema.get("required") or ():
        if name not in content:
            return f"{name}: required but missing"
    for name, value in content.items():
        schema = properties.get(name)
        if not isinstance(schema, Mapping):
            continue
        problem = _value_problem(name, schema, value)
        if problem is not None:
            return problem
    return None

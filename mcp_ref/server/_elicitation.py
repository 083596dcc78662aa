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


def _value_problem(name: str, schema: Mapping[str, Any], value: Any) -> str | None:
    kind = schema.get("type")
    if kind == "boolean":
        return None if type(value) is bool else f"{name}: expected a boolean"
    if kind in ("number", "integer"):
        if type(value) is bool or not isinstance(value, int | float):
            return f"{name}: expected a {kind}"
        if kind == "integer" and not (isinstance(value, int) or value.is_integer()):
            return f"{name}: expected an integer"
        if "minimum" in schema and value < schema["minimum"]:
            return f"{name}: below the minimum {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{name}: above the maximum {schema['maximum']}"
        return None
    if kind == "string":
        if not isinstance(value, str):
            return f"{name}: expected a string"
        consts = _consts(schema)
        if consts is not None and value not in consts:
            return f"{name}: {value!r} is not one of the allowed values"
        if "minLength" in schema and len(value) < schema["minLength"]:
            return f"{name}: shorter than {schema['minLength']} characters"
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"{name}: longer than {schema['maxLength']} characters"
        return None
    if kind == "array":
        if not isinstance(value, list):
            return f"{name}: expected an array"
        items = schema.get("items")
        consts = _consts(items) if isinstance(items, Mapping) else None
        if consts is not None and any(v not in consts for v in value):
            return f"{name}: holds a value that is not one of the allowed values"
        if "minItems" in schema and len(value) < schema["minItems"]:
            return f"{name}: fewer than {schema['minItems']} items"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            return f"{name}: more than {schema['maxItems']} items"
        return None
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

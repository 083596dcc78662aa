"""JSON Schema (2020-12) from Python annotations, and descriptions from docstrings.

Theory of operation
-------------------
A tool written as a typed function describes its input with its parameters and its
output with its return annotation.  :func:`schema_for` turns one annotation into a JSON
Schema (dialect 2020-12, the default for MCP tool schemas from 2025-11-25 on); the
tool layer puts one per parameter into an ``object`` schema.  Every definition is
inlined (no ``$ref``), so the schema reads the same under older dialects too, and a
recursive type is refused at registration rather than producing a schema no client
can walk.

Annotation -> schema (the same set :mod:`._arguments` converts):

==============================  ========================================================
``str`` / ``int`` / ``float``   ``{"type": "string" | "integer" | "number"}``
``bool`` / ``None``             ``{"type": "boolean" | "null"}``
``Any``                         ``{}`` (anything)
``list[X]``, ``Sequence[X]``    ``{"type": "array", "items": X}``
``set[X]``, ``frozenset[X]``    the same plus ``"uniqueItems": true``
``tuple[X, ...]``               ``{"type": "array", "items": X}``
``tuple[A, B]``                 ``prefixItems``, ``minItems``/``maxItems``, no more items
``dict[str, X]``                ``{"type": "object", "additionalProperties": X}``
``Literal[a, b]``               ``{"enum": [a, b]}`` (``const`` for one value)
``Enum`` subclass               ``{"enum": [values], "title": name}``
``X | Y``, ``Optional[X]``      ``{"anyOf": [X, Y]}``
attrs class, dataclass          ``object`` with ``properties``, ``required``,
                                ``additionalProperties: false``; field descriptions
                                from attrs ``metadata={"description": ...}`` or the
                                class docstring's ``Attributes:`` section
``TypedDict``                   the same; ``required`` from its required keys
``Annotated[X, "text"]``        X with ``"description": "text"``
==============================  ========================================================

Anything else raises :class:`TypeError` naming the annotation.

Docstrings: :func:`parse_docstring` reads Google-style sections (``Args:``,
``Arguments:``, ``Parameters:``, ``Attributes:``, ``Returns:``) into a summary and a
description per name.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import re
import typing
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Final, Literal, get_args, get_origin

import attrs

from ._arguments import _is_mapping, _is_sequence, _is_typeddict, _is_union, unstructure

__all__ = ["Docstring", "json_default", "parse_docstring", "schema_for"]

_NONE: Final = type(None)
_FACTORY: Final[type] = type(attrs.Factory(list))
_NO_DEFAULT: Final = object()  # an optional key without a default value (TypedDict)
_PRIMITIVES: Final[dict[Any, str]] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    _NONE: "null",
}


@attrs.frozen
class Docstring:
    """A parsed docstring.

    Attributes:
        summary: the text before the first section (may be several paragraphs), or "".
        params: name -> description, from ``Args:``/``Arguments:``/``Parameters:``.
        attributes: name -> description, from ``Attributes:``.
        returns: the ``Returns:`` section's text, or "".
    """

    summary: str = ""
    params: dict[str, str] = attrs.field(factory=dict)
    attributes: dict[str, str] = attrs.field(factory=dict)
    returns: str = ""


_SECTION: Final = re.compile(r"^([A-Z][A-Za-z ]*):\s*$")
_ITEM: Final = re.compile(r"^\*{0,2}([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_PARAM_SECTIONS: Final = frozenset({"Args", "Arguments", "Parameters", "Params"})
_ATTR_SECTIONS: Final = frozenset({"Attributes", "Attrs"})
_RETURN_SECTIONS: Final = frozenset({"Returns", "Return", "Yields"})


def parse_docstring(doc: str | None) -> Docstring:
    """Split a Google-style docstring into summary, per-name descriptions and returns.

    Items look like ``name: text`` or ``name (type): text``; lines indented deeper
    than the item continue it.  Unknown sections (``Raises:``, ``Example:``...) end the
    summary and are otherwise ignored.
    """
    if not doc:
        return Docstring()
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    attributes: dict[str, str] = {}
    returns: list[str] = []
    section: str | None = None
    target: dict[str, str] | None = None
    current: str | None = None
    item_indent = 0
    for line in lines:
        header = _SECTION.match(line)
        if header and not line.startswith(" "):
            section = header.group(1)
            target = (
                params
                if section in _PARAM_SECTIONS
                else attributes
                if section in _ATTR_SECTIONS
                else None
            )
            current = None
            continue
        if section is None:
            summary.append(line)
            continue
        if section in _RETURN_SECTIONS:
            returns.append(line.strip())
            continue
        if target is None:
            continue
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        item = _ITEM.match(stripped)
        if item and (current is None or indent <= item_indent):
            current = item.group(1)
            item_indent = indent
            target[current] = item.group(2).strip()
        elif current is not None and stripped:
            target[current] = f"{target[current]} {stripped}".strip()
    return Docstring(
        summary="\n".join(summary).strip(),
        params=params,
        attributes=attributes,
        returns=" ".join(r for r in returns if r).strip(),
    )


def json_default(value: Any, tp: Any) -> tuple[bool, Any]:
    """``(True, json_value)`` when a default value can be written in a schema."""
    try:
        data = unstructure(value, tp)
        json.dumps(data, allow_nan=False)
    except (TypeError, ValueError):
        return False, None
    return True, data


def _class_doc(cls: type) -> Docstring:
    doc = cls.__doc__
    # dataclasses invent "Name(field: type, ...)"; that is not a description.
    if doc and dataclasses.is_dataclass(cls) and doc.startswith(f"{cls.__name__}("):
        return Docstring()
    return parse_docstring(doc)


def schema_for(tp: Any, *, _stack: tuple[Any, ...] = ()) -> dict[str, Any]:
    """The JSON Schema (2020-12) of values of annotation ``tp``.

    Raises:
        TypeError: ``tp`` is not one of the supported annotations (see the module
            docstring), or is recursive.
    """
    if get_origin(tp) in (typing.Required, typing.NotRequired):
        return schema_for(get_args(tp)[0], _stack=_stack)
    if get_origin(tp) is Annotated:
        base, *meta = get_args(tp)
        schema = schema_for(base, _stack=_stack)
        texts = [m for m in meta if isinstance(m, str)]
        if texts:
            schema = {**schema, "description": " ".join(texts)}
        return schema
    if tp is Any or tp is object:
        return {}
    if tp is None or tp in _PRIMITIVES:
        return {"type": _PRIMITIVES[_NONE if tp is None else tp]}
    if get_origin(tp) is Literal:
        values = list(get_args(tp))
        if len(values) == 1:
            return {**_value_type(values), "const": values[0]}
        return {**_value_type(values), "enum": values}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        values = [m.value for m in tp]
        described: dict[str, Any] = {"title": tp.__name__, **_value_type(values), "enum": values}
        doc = _class_doc(tp).summary
        if doc and doc != "An enumeration.":
            described["description"] = doc
        return described
    if _is_union(tp):
        return {"anyOf": [schema_for(a, _stack=_stack) for a in get_args(tp)]}
    if _is_sequence(tp):
        return _sequence_schema(tp, _stack)
    if _is_mapping(tp):
        args = get_args(tp)
        key, value = args if len(args) == 2 else (str, Any)
        if key is not str:
            raise TypeError(f"JSON object keys are strings: {tp!r} needs str keys")
        schema = {"type": "object"}
        value_schema = schema_for(value, _stack=_stack)
        if value_schema:
            schema["additionalProperties"] = value_schema
        return schema
    if isinstance(tp, type) and (
        attrs.has(tp) or dataclasses.is_dataclass(tp) or _is_typeddict(tp)
    ):
        if tp in _stack:
            raise TypeError(f"recursive type {tp.__name__} cannot be described without $ref")
        return _object_schema(tp, (*_stack, tp))
    raise TypeError(
        f"cannot describe {tp!r} in JSON Schema; use str, int, float, bool, None, list, "
        "dict[str, ...], Literal, Enum, unions, attrs classes, dataclasses or TypedDicts"
    )


def _value_type(values: list[Any]) -> dict[str, Any]:
    """``{"type": ...}`` when every value has the same JSON type, else ``{}``."""
    kinds = {_PRIMITIVES.get(type(v)) for v in values}
    if len(kinds) == 1 and None not in kinds:
        return {"type": kinds.pop()}
    return {}


def _sequence_schema(tp: Any, stack: tuple[Any, ...]) -> dict[str, Any]:
    origin = get_origin(tp) or tp
    args = get_args(tp)
    if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
        return {
            "type": "array",
            "prefixItems": [schema_for(a, _stack=stack) for a in args],
            "minItems": len(args),
            "maxItems": len(args),
        }
    schema: dict[str, Any] = {"type": "array"}
    item = schema_for(args[0], _stack=stack) if args else {}
    if item:
        schema["items"] = item
    if origin in (set, frozenset, typing.AbstractSet, typing.MutableSet):
        schema["uniqueItems"] = True
    return schema


def _object_schema(cls: type, stack: tuple[Any, ...]) -> dict[str, Any]:
    doc = _class_doc(cls)
    hints = typing.get_type_hints(cls, include_extras=True)
    properties: dict[str, Any] = {}
    required: list[str] = []
    fields: Sequence[tuple[str, Any, Any, Mapping[str, Any]]]
    if attrs.has(cls):
        fields = [
            (
                f.alias or f.name,
                hints.get(f.name, f.type),
                f.default,
                f.metadata,
            )
            for f in attrs.fields(cls)
            if f.init
        ]
    elif dataclasses.is_dataclass(cls):
        fields = [
            (
                f.name,
                hints.get(f.name, f.type),
                f.default
                if f.default is not dataclasses.MISSING
                else attrs.Factory(f.default_factory)
                if f.default_factory is not dataclasses.MISSING
                else attrs.NOTHING,
                f.metadata,
            )
            for f in dataclasses.fields(cls)
            if f.init
        ]
    else:
        required_keys = getattr(cls, "__required_keys__", frozenset(hints))
        fields = [
            (name, hint, attrs.NOTHING if name in required_keys else _NO_DEFAULT, {})
            for name, hint in hints.items()
        ]
    for name, hint, default, metadata in fields:
        prop = schema_for(hint, _stack=stack)
        description = metadata.get("description") or doc.attributes.get(name)
        if description and "description" not in prop:
            prop = {**prop, "description": description}
        if default is attrs.NOTHING:
            required.append(name)
        elif default is not _NO_DEFAULT and not isinstance(default, _FACTORY):
            ok, value = json_default(default, hint)
            if ok:
                prop = {**prop, "default": value}
        properties[name] = prop
    schema: dict[str, Any] = {"type": "object", "title": cls.__name__, "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    if doc.summary:
        schema["description"] = doc.summary
    return schema

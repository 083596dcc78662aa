"""Wire JSON <-> typed messages: one strict cattrs converter, configured once.

Theory of operation
-------------------
:func:`structure` turns JSON that ``json.loads`` produced into the attrs classes of
:mod:`mcp_ref.types`; :func:`unstructure` turns them back into dicts and lists ready for
``json.dumps``.  Both go through one :class:`cattrs.Converter`, ``_CONVERTER``, whose
only hooks are two factories registered below.  For each type the factories *compile*
a converter once (cattrs caches the result per type), so no call reflects on a class:

* an attrs class gets two functions written as Python source and ``exec``-ed: they read
  and write every field by its wire name, in straight-line code;
* ``list[X]``, ``dict[str, X]``, unions and ``Literal`` get small closures built from the
  compiled converters of their parts; a part that needs no work (``str``, ``Any``,
  ``dict[str, Any]``...) is checked inline and passed through without a copy.

The conventions, shared by every class:

* wire names are the camelCase of the field names (``protocol_version`` ->
  ``protocolVersion``), ``meta`` is ``_meta``; a field whose wire name the rule cannot
  rebuild says so in its attrs metadata (``{"wire": "$schema"}``);
* a field without a default is required, and so is a ``Literal`` field with a default
  (``type: Literal["text"] = "text"``): it must be present and equal to one of its values;
* a field whose default is ``None`` is optional: absent on the wire means ``None``, and
  ``None`` is never written (no ``null``).  A present value must have the field's type:
  ``null`` is refused unless the type itself allows ``None`` (``Task.ttl``);
* primitives are strict: a ``str`` field takes only a string, ``int`` only an integer
  (never a boolean), ``float`` an integer or a float (kept as given, so ``50`` stays
  ``50``), ``bool`` only a boolean.  ``str | int`` ids keep their JSON type: ``"7"``
  stays ``"7"``;
* the JSON keys a class does not know go into its ``extra`` dict and are written back at
  the top level of the same object, so a message round-trips unchanged;
* a union of classes that all carry a distinct constant (``type`` for content blocks,
  ``method`` for requests) is dispatched on that key; any other union tries the classes
  whose required keys are all present, those that leave the fewest keys unknown first;
* values typed ``Any`` (``data``, ``arguments``, ``_meta``...) are passed through as
  they are, not copied and not inspected.

Every failure raises :class:`ConversionError` (a ``ValueError``) whose one-line message
names the JSON path of the first bad value, e.g. ``arguments: expected object, got
array`` or ``content[2].type: expected one of "text", "image", ...; got "video"``.

Source: 2025-06-18/basic#requests (ids are strings or integers), the 2025-11-25 schema
(``schema.json``) for every shape.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Callable
from typing import Any, Final, Literal, TypeVar, Union

import attrs
import cattrs

__all__ = [
    "ConversionError",
    "json_type_name",
    "structure",
    "structure_fn",
    "unstructure",
    "unstructure_fn",
]

T = TypeVar("T")
Fn = Callable[[Any], Any]


class ConversionError(ValueError):
    """A JSON value does not fit the type it was converted to.

    ``path`` is the JSON path of the bad value relative to the converted object
    (``"content[2].type"``; ``""`` for the object itself), ``reason`` what is wrong with
    it.  ``str(exc)`` is ``"<path>: <reason>"``, one line.  The core answers a request
    whose params fail with -32602 (Invalid params) and this message.

    Source: JSON-RPC 2.0 section 5.1 (-32602); 2025-06-18/basic#requests.
    """

    def __init__(self, reason: str, path: str = "") -> None:
        self.reason = reason
        self.path = path
        super().__init__(f"{path}: {reason}" if path else reason)

    def prefixed(self, key: str | int) -> ConversionError:
        """Return the same error seen from one level up: ``key`` is the object member
        (a wire name) or array index the bad value sat under."""
        if isinstance(key, int):
            head = f"[{key}]"
        elif key.isidentifier() or key == "_meta":
            head = key
        else:
            head = "[" + json.dumps(key) + "]"
        if not self.path:
            path = head
        elif self.path.startswith("["):
            path = head + self.path
        else:
            path = head + "." + self.path
        return ConversionError(self.reason, path)


# --- error helpers (cold path) ---------------------------------------------------------


def json_type_name(value: Any) -> str:
    """The JSON type name of a decoded value: ``"null"``, ``"boolean"``, ``"string"``,
    ``"integer"``, ``"number"``, ``"array"``, ``"object"``, or ``"a Python <type>"``."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "boolean"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return f"a Python {type(value).__name__}"


def _show(value: Any) -> str:
    """A short rendering of a scalar for messages; the type name for anything else."""
    if isinstance(value, (str, int, float)) or value is None:
        text = json.dumps(value)
        return text if len(text) <= 40 else text[:37] + '..."'
    return json_type_name(value)


def _wrong(expected: str, value: Any, path: str | int | None = None) -> ConversionError:
    exc = ConversionError(f"expected {expected}, got {json_type_name(value)}")
    return exc if path is None else exc.prefixed(path)


def _missing(wire: str) -> ConversionError:
    return ConversionError("required field missing").prefixed(wire)


def _bad_literal(values: tuple[Any, ...], value: Any, path: str | None) -> ConversionError:
    if len(values) == 1:
        exc = ConversionError(f"expected {_show(values[0])}, got {_show(value)}")
    else:
        shown = ", ".join(_show(v) for v in values)
        exc = ConversionError(f"expected one of {shown}; got {_show(value)}")
    return exc if path is None else exc.prefixed(path)


def _locate(fn: Fn, items: Any, keys: Any) -> ConversionError:
    """Re-run ``fn`` over ``items`` to find which element failed (slow path only)."""
    for key in keys:
        try:
            fn(items[key])
        except ConversionError as exc:
            return exc.prefixed(key)
    return ConversionError("conversion failed")  # pragma: no cover - fn is pure


_MISSING: Final = object()


# --- type analysis ---------------------------------------------------------------------

_NONE = type(None)
_PRIMITIVE_NAMES: Final = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _camel(name: str) -> str:
    """``protocol_version`` -> ``protocolVersion``; ``meta`` -> ``_meta``."""
    if name == "meta":
        return "_meta"
    first, *rest = name.split("_")
    return first + "".join(p[:1].upper() + p[1:] for p in rest)


def _wire_name(field: attrs.Attribute[Any]) -> str:
    wire = field.metadata.get("wire")
    return wire if isinstance(wire, str) else _camel(field.name)


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType)


def _is_literal(tp: Any) -> bool:
    return typing.get_origin(tp) is Literal


def _list_arg(tp: Any) -> Any:
    """The item type of a list type, or _MISSING if ``tp`` is not one."""
    if tp is list:
        return Any
    if typing.get_origin(tp) is list:
        return typing.get_args(tp)[0]
    return _MISSING


def _dict_arg(tp: Any) -> Any:
    """The value type of a ``dict[str, V]`` type, or _MISSING if ``tp`` is not one."""
    if tp is dict:
        return Any
    if typing.get_origin(tp) is dict:
        key, value = typing.get_args(tp)
        if key is not str:
            raise TypeError(f"only dict[str, ...] can be converted, not {tp!r}")
        return value
    return _MISSING


def _has_class(tp: Any) -> bool:
    """Whether values of ``tp`` can hold an attrs instance (so need converting)."""
    if isinstance(tp, type) and attrs.has(tp):
        return True
    return any(_has_class(arg) for arg in typing.get_args(tp) if not _is_literal(tp))


def _describe(tp: Any) -> str:
    """What a type expects, in JSON words, for error messages."""
    if tp is Any:
        return "any value"
    if tp in _PRIMITIVE_NAMES:
        return _PRIMITIVE_NAMES[tp]
    if tp is _NONE or tp is None:
        return "null"
    if _is_literal(tp):
        values = typing.get_args(tp)
        if len(values) == 1:
            return _show(values[0])
        return "one of " + ", ".join(_show(v) for v in values)
    if _list_arg(tp) is not _MISSING:
        return "array"
    if _dict_arg(tp) is not _MISSING or (isinstance(tp, type) and attrs.has(tp)):
        return "object"
    if _is_union(tp):
        names: list[str] = []
        for arg in typing.get_args(tp):
            name = _describe(arg)
            if name not in names:
                names.append(name)
        return " or ".join(names)
    return repr(tp)


def _check_expr(tp: Any, var: str) -> str | None:
    """A Python expression true when ``var`` is a valid JSON value of ``tp`` (for types
    whose values pass through unchanged), or None when ``tp`` needs a function."""
    if tp is Any:
        return "True"
    if tp is str:
        return f"isinstance({var}, str)"
    if tp is int:
        return f"(isinstance({var}, int) and {var}.__class__ is not bool)"
    if tp is float:
        return f"(isinstance({var}, (int, float)) and {var}.__class__ is not bool)"
    if tp is bool:
        return f"{var}.__class__ is bool"
    if tp is _NONE or tp is None:
        return f"{var} is None"
    if _is_literal(tp):
        values = typing.get_args(tp)
        if len(values) > 2 and all(v.__class__ is str for v in values):
            # One hashed lookup: CPython folds ``in {constants}`` into a frozenset.
            members = ", ".join(repr(v) for v in values)
            return f"({var}.__class__ is str and {var} in {{{members}}})"
        parts = [
            f"({var}.__class__ is {type(v).__name__} and {var} == {v!r})"
            for v in typing.get_args(tp)
        ]
        return "(" + " or ".join(parts) + ")"
    if _dict_arg(tp) is Any:
        return f"isinstance({var}, dict)"
    if _list_arg(tp) is Any:
        return f"isinstance({var}, list)"
    if _is_union(tp):
        checks = [_check_expr(arg, var) for arg in typing.get_args(tp)]
        if all(c is not None for c in checks):
            return "(" + " or ".join(c for c in checks if c is not None) + ")"
    return None


# --- the compiler ----------------------------------------------------------------------


@attrs.define
class _ClassInfo:
    """What the union dispatcher needs to know about one class."""

    cls: type
    required: frozenset[str]
    known: frozenset[str]
    consts: dict[str, tuple[Any, ...]]  # wire name -> allowed values, for Literal fields
    required_consts: frozenset[str]


class _Compiler:
    """Builds and caches one structure and one unstructure function per type.

    The caches are keyed by types, which come from code, never from input: their size
    is bounded by the number of types the program names.
    """

    def __init__(self) -> None:
        self._structure: dict[Any, Fn] = {}
        self._unstructure: dict[Any, Fn] = {}
        self._class_info: dict[type, _ClassInfo] = {}
        self._counter = 0

    # -- public entry points (called by the cattrs factories) --

    def structure_fn(self, tp: Any) -> Fn:
        """The function turning JSON into a value of ``tp``; raises ConversionError.

        Raises TypeError (once, when compiling) for a type the converter cannot handle.
        """
        try:
            return self._structure[tp]
        except KeyError:
            pass
        try:
            fn = self._build_structure(tp)
        except BaseException:
            self._structure.pop(tp, None)  # drop a half-built class's trampoline
            raise
        self._structure[tp] = fn
        return fn

    def unstructure_fn(self, tp: Any) -> Fn | None:
        """The function turning a value of ``tp`` into JSON, or None when values of
        ``tp`` are JSON already."""
        if not _has_class(tp):
            return None
        try:
            return self._unstructure[tp]
        except KeyError:
            pass
        try:
            fn = self._build_unstructure(tp)
        except BaseException:
            self._unstructure.pop(tp, None)
            raise
        self._unstructure[tp] = fn
        return fn

    # -- structure --

    def _build_structure(self, tp: Any) -> Fn:
        if isinstance(tp, type) and attrs.has(tp):
            return self._structure_class(tp)
        check = _check_expr(tp, "v")
        if check is not None:
            return self._structure_checked(tp, check)
        item = _list_arg(tp)
        if item is not _MISSING:
            return self._structure_list(item)
        value = _dict_arg(tp)
        if value is not _MISSING:
            return self._structure_dict(value)
        if _is_union(tp):
            return self._structure_union(tp)
        raise TypeError(f"mcp_ref cannot convert values of type {tp!r}")

    def _structure_checked(self, tp: Any, check: str) -> Fn:
        if _is_literal(tp):
            values = typing.get_args(tp)
            src = f"def f(v):\n    if not {check}:\n        raise _bad_literal(values, v, None)\n    return v\n"
            return self._exec(src, "f", {"values": values, "_bad_literal": _bad_literal})
        src = f"def f(v):\n    if not {check}:\n        raise _wrong(expected, v)\n    return v\n"
        return self._exec(src, "f", {"expected": _describe(tp), "_wrong": _wrong})

    def _structure_list(self, item: Any) -> Fn:
        check = _check_expr(item, "x")
        if check is not None:
            src = (
                "def f(v):\n"
                "    if not isinstance(v, list):\n"
                "        raise _wrong('array', v)\n"
                "    for i, x in enumerate(v):\n"
                f"        if not {check}:\n"
                "            raise _item_error(x, i)\n"
                "    return v\n"
            )
            item_fn = self.structure_fn(item)

            def item_error(x: Any, i: int) -> ConversionError:
                try:
                    item_fn(x)
                except ConversionError as exc:
                    return exc.prefixed(i)
                return _wrong(_describe(item), x, i)  # pragma: no cover

            return self._exec(src, "f", {"_wrong": _wrong, "_item_error": item_error})
        g = self.structure_fn(item)

        def structure_list(v: Any) -> Any:
            if not isinstance(v, list):
                raise _wrong("array", v)
            try:
                return list(map(g, v))
            except ConversionError:
                raise _locate(g, v, range(len(v))) from None

        tagged = self._tagged_items(item)
        if tagged is None:
            return structure_list
        key, table = tagged

        def structure_tagged_list(v: Any) -> Any:
            # A list of tagged objects (content blocks): look each one's class up by its
            # tag directly.  Anything odd (not a dict, no or unknown tag, a bad field)
            # takes the general path, which reports the error with its place.
            if v.__class__ is list:
                try:
                    return [table[x[key]](x) for x in v]
                except (KeyError, TypeError, ConversionError):
                    pass
            return structure_list(v)

        return structure_tagged_list

    def _structure_dict(self, value: Any) -> Fn:
        g = self.structure_fn(value)
        converts = _has_class(value)

        def structure_dict(v: Any) -> Any:
            if not isinstance(v, dict):
                raise _wrong("object", v)
            try:
                if converts:
                    return {k: g(x) for k, x in v.items()}
                for x in v.values():
                    g(x)
                return v
            except ConversionError:
                raise _locate(g, v, list(v)) from None

        return structure_dict

    def _structure_union(self, tp: Any) -> Fn:
        args = typing.get_args(tp)
        allows_none = _NONE in args
        classes = [a for a in args if isinstance(a, type) and attrs.has(a)]
        dict_arg = next((a for a in args if _dict_arg(a) is not _MISSING), None)
        list_arg = next((a for a in args if _list_arg(a) is not _MISSING), None)
        scalars = [
            a
            for a in args
            if a not in classes and a is not dict_arg and a is not list_arg and a is not _NONE
        ]
        expected = _describe(tp)
        object_fn: Fn | None = None
        if classes and dict_arg is not None:
            raise TypeError(f"cannot convert a union of classes and dicts: {tp!r}")
        if classes:
            object_fn = self._class_union(classes)
        elif dict_arg is not None:
            object_fn = self.structure_fn(dict_arg)
        list_fn = self.structure_fn(list_arg) if list_arg is not None else None
        scalar_fn = self.structure_fn(Union[tuple(scalars)]) if scalars else None  # noqa: UP007
        scalar_types = tuple(
            {str: (str,), int: (int,), float: (int, float), bool: (bool,)}.get(s, ())
            for s in scalars
        )
        literal_types = tuple(
            type(v) for s in scalars if _is_literal(s) for v in typing.get_args(s)
        )
        accepts_scalar = tuple({t for group in scalar_types for t in group} | set(literal_types))

        def structure_union(v: Any) -> Any:
            if isinstance(v, dict):
                if object_fn is not None:
                    return object_fn(v)
            elif isinstance(v, list):
                if list_fn is not None:
                    return list_fn(v)
            elif v is None:
                if allows_none:
                    return None
            elif scalar_fn is not None and isinstance(v, accepts_scalar):
                return scalar_fn(v)
            raise _wrong(expected, v)

        return structure_union

    def _info(self, cls: type) -> _ClassInfo:
        try:
            return self._class_info[cls]
        except KeyError:
            pass
        required: set[str] = set()
        known: set[str] = set()
        consts: dict[str, tuple[Any, ...]] = {}
        required_consts: set[str] = set()
        for field in attrs.fields(cls):
            if field.name == "extra":
                continue
            wire = _wire_name(field)
            known.add(wire)
            wire_required = _wire_required(field)
            if wire_required:
                required.add(wire)
            lit = field.type
            if _is_union(lit):
                lits = [a for a in typing.get_args(lit) if _is_literal(a)]
                lit = lits[0] if len(lits) == 1 else None
            if _is_literal(lit):
                consts[wire] = typing.get_args(lit)
                if wire_required:
                    required_consts.add(wire)
        info = _ClassInfo(
            cls, frozenset(required), frozenset(known), consts, frozenset(required_consts)
        )
        self._class_info[cls] = info
        return info

    def _class_union(self, classes: list[type]) -> Fn:
        tagged = self._tag_table(classes)
        if tagged is not None:
            key, table = tagged
            return self._dispatch_on(key, table, tuple(table))
        infos = [self._info(c) for c in classes]
        fns = [self.structure_fn(c) for c in classes]
        return self._try_in_order(infos, fns)

    def _tag_table(self, classes: list[type]) -> tuple[str, dict[Any, Fn]] | None:
        """A key every class requires with its own single constant (e.g. ``type`` of
        the content blocks): ``(key, {constant: structure function})``, or None."""
        infos = [self._info(c) for c in classes]
        for key in sorted(set.intersection(*(set(i.required_consts) for i in infos))):
            values = [i.consts[key] for i in infos]
            if all(len(v) == 1 for v in values) and len({v[0] for v in values}) == len(values):
                fns = [self.structure_fn(c) for c in classes]
                return key, {v[0]: fn for v, fn in zip(values, fns, strict=True)}
        return None

    def _tagged_items(self, item: Any) -> tuple[str, dict[Any, Fn]] | None:
        """For a union made only of classes with a tag key: its tag table."""
        if not _is_union(item):
            return None
        args = typing.get_args(item)
        if not all(isinstance(a, type) and attrs.has(a) for a in args):
            return None
        return self._tag_table(list(args))

    @staticmethod
    def _dispatch_on(key: str, table: dict[Any, Fn], allowed: tuple[Any, ...]) -> Fn:
        def dispatch(v: Any) -> Any:
            if not isinstance(v, dict):
                raise _wrong("object", v)
            tag = v.get(key, _MISSING)
            if tag is _MISSING:
                raise _missing(key)
            fn = table.get(tag) if isinstance(tag, str) else None
            if fn is None:
                raise _bad_literal(allowed, tag, key)
            return fn(v)

        return dispatch

    @staticmethod
    def _try_in_order(infos: list[_ClassInfo], fns: list[Fn]) -> Fn:
        names = ", ".join(i.cls.__name__ for i in infos)
        entries = list(zip(infos, fns, strict=True))

        def try_in_order(v: Any) -> Any:
            if not isinstance(v, dict):
                raise _wrong("object", v)
            keys = v.keys()
            ranked: list[tuple[int, int, int, Fn]] = []
            for n, (info, fn) in enumerate(entries):
                if not info.required <= keys:
                    continue
                if any(k in v and not _const_ok(v[k], info.consts[k]) for k in info.consts):
                    continue
                unknown = sum(1 for k in keys if k not in info.known)
                ranked.append((unknown, -len(info.required), n, fn))
            ranked.sort(key=lambda r: r[:3])
            first: ConversionError | None = None
            for *_, fn in ranked:
                try:
                    return fn(v)
                except ConversionError as exc:
                    first = first or exc
            if first is not None:
                raise first
            # No class has all its required keys: report the nearest one's complaint.
            nearest = min(entries, key=lambda e: len(e[0].required - keys))
            try:
                nearest[1](v)
            except ConversionError as exc:
                closest = nearest[0].cls.__name__
                reason = f"{exc.reason} (closest of {names}: {closest})"
                raise ConversionError(reason, exc.path) from None
            raise ConversionError(f"matches none of {names}")  # pragma: no cover

        return try_in_order

    def _structure_class(self, cls: type) -> Fn:
        attrs.resolve_types(cls)
        # Register a trampoline first so self-referencing classes compile.
        cell: list[Fn] = []
        self._structure[cls] = lambda v: cell[0](v)
        ns: dict[str, Any] = {
            "ConversionError": ConversionError,
            "_MISSING": _MISSING,
            "_missing": _missing,
            "_wrong": _wrong,
            "_bad_literal": _bad_literal,
            "CLS": cls,
        }
        lines = [
            "def structure(d):",
            "    if not isinstance(d, dict):",
            "        raise _wrong('object', d)",
        ]
        optional_lines: list[str] = []
        args: list[str] = []
        required_args: list[str] = []
        absent_args: list[str] = []  # the optional fields' values when none is present
        known: list[str] = []
        has_extra = False
        # Required fields first, then a fast exit when the object holds nothing else
        # (the common case: most results carry only their required keys), then the
        # optional fields one by one.
        for i, field in enumerate(attrs.fields(cls)):
            if field.name == "extra":
                has_extra = True
                continue
            wire = _wire_name(field)
            known.append(wire)
            tp = field.type
            local = f"a{i}"
            args.append(f"{field.name}={local}")
            if _wire_required(field):
                required_args.append(f"{field.name}={local}")
                lines += [
                    "    try:",
                    f"        v = d[{wire!r}]",
                    "    except KeyError:",
                    f"        raise _missing({wire!r}) from None",
                ]
                lines += self._field_lines(tp, wire, local, ns, i, "    ")
            else:
                if field.default is None:
                    absent = "None"
                    tp = _without_none(tp)
                else:
                    ns[f"default{i}"] = field.default
                    absent = f"default{i}"
                absent_args.append(f"{field.name}={absent}")
                optional_lines += [
                    f"    v = d.get({wire!r}, _MISSING)",
                    "    if v is _MISSING:",
                    f"        {local} = {absent}",
                    "    else:",
                    "        n += 1",
                ]
                optional_lines += self._field_lines(tp, wire, local, ns, i, "        ")
        ns["KNOWN"] = frozenset(known)
        n_required = len(required_args)
        if optional_lines:
            extra_arg = ["extra={}"] if has_extra else []
            lines += [
                f"    if len(d) == {n_required}:",
                f"        return CLS({', '.join(required_args + absent_args + extra_arg)})",
                "    n = 0",
                *optional_lines,
            ]
        else:
            lines.append("    n = 0")
        lines.append(f"    if len(d) != n + {n_required}:")
        if has_extra:
            lines.append("        extra = {k: x for k, x in d.items() if k not in KNOWN}")
            lines.append("    else:")
            lines.append("        extra = {}")
            args.append("extra=extra")
        else:
            lines.append("        k = next(k for k in d if k not in KNOWN)")
            lines.append("        raise ConversionError('unknown field').prefixed(k)")
        lines.append(f"    return CLS({', '.join(args)})")
        fn = self._exec("\n".join(lines) + "\n", "structure", ns, cls.__name__)
        cell.append(fn)
        return fn

    def _field_lines(
        self, tp: Any, wire: str, local: str, ns: dict[str, Any], i: int, indent: str
    ) -> list[str]:
        check = _check_expr(tp, "v")
        if check == "True":
            return [f"{indent}{local} = v"]
        if check is not None:
            if _is_literal(tp):
                ns[f"values{i}"] = typing.get_args(tp)
                raise_line = f"raise _bad_literal(values{i}, v, {wire!r})"
            else:
                ns[f"expected{i}"] = _describe(tp)
                raise_line = f"raise _wrong(expected{i}, v, {wire!r})"
            return [
                f"{indent}if not {check}:",
                f"{indent}    {raise_line}",
                f"{indent}{local} = v",
            ]
        ns[f"s{i}"] = self.structure_fn(tp)
        return [
            f"{indent}try:",
            f"{indent}    {local} = s{i}(v)",
            f"{indent}except ConversionError as e:",
            f"{indent}    raise e.prefixed({wire!r}) from None",
        ]

    # -- unstructure --

    def _build_unstructure(self, tp: Any) -> Fn:
        if isinstance(tp, type) and attrs.has(tp):
            return self._unstructure_class(tp)
        item = _list_arg(tp)
        if item is not _MISSING:
            g = self.unstructure_fn(item)
            assert g is not None
            return lambda v: [g(x) for x in v]
        value = _dict_arg(tp)
        if value is not _MISSING:
            h = self.unstructure_fn(value)
            assert h is not None
            return lambda v: {k: h(x) for k, x in v.items()}
        if _is_union(tp):
            table: dict[type, Fn] = {}
            list_fn: Fn | None = None
            for arg in typing.get_args(tp):
                if isinstance(arg, type) and attrs.has(arg):
                    fn = self.unstructure_fn(arg)
                    assert fn is not None
                    table[arg] = fn
                elif _list_arg(arg) is not _MISSING:
                    list_fn = self.unstructure_fn(arg)

            def unstructure_union(v: Any) -> Any:
                fn = table.get(v.__class__)
                if fn is not None:
                    return fn(v)
                if list_fn is not None and isinstance(v, list):
                    return list_fn(v)
                if attrs.has(v.__class__):  # not a member of the union: still convert it
                    return _CONVERTER.unstructure(v)
                return v

            return unstructure_union
        raise TypeError(f"mcp_ref cannot convert values of type {tp!r}")  # pragma: no cover

    def _unstructure_class(self, cls: type) -> Fn:
        attrs.resolve_types(cls)
        cell: list[Fn] = []
        self._unstructure[cls] = lambda v: cell[0](v)
        ns: dict[str, Any] = {}
        always: list[str] = []
        optional: list[str] = []
        known: list[str] = []
        has_extra = False
        for i, field in enumerate(attrs.fields(cls)):
            if field.name == "extra":
                has_extra = True
                continue
            wire = _wire_name(field)
            known.append(wire)
            fn = self.unstructure_fn(field.type)
            value = f"o.{field.name}"
            if field.default is None:
                expr = "v" if fn is None else f"u{i}(v)"
                optional += [
                    f"    v = o.{field.name}",
                    "    if v is not None:",
                    f"        d[{wire!r}] = {expr}",
                ]
            else:
                expr = value if fn is None else f"u{i}({value})"
                always.append(f"{wire!r}: {expr}")
            if fn is not None:
                ns[f"u{i}"] = fn
        ns["KNOWN"] = frozenset(known)
        lines = ["def unstructure(o):", "    d = {" + ", ".join(always) + "}", *optional]
        if has_extra:
            lines += [
                "    e = o.extra",
                "    if e:",
                "        for k in e:",
                "            if k not in KNOWN:",
                "                d[k] = e[k]",
            ]
        lines.append("    return d")
        fn = self._exec("\n".join(lines) + "\n", "unstructure", ns, cls.__name__)
        cell.append(fn)
        return fn

    # -- helpers --

    def _exec(self, src: str, name: str, ns: dict[str, Any], label: str = "") -> Fn:
        self._counter += 1
        filename = f"<mcp_ref._convert {name} {label or self._counter}>"
        exec(compile(src, filename, "exec"), ns)  # the source is built above, from attrs fields
        fn: Fn = ns[name]
        return fn


def _wire_required(field: attrs.Attribute[Any]) -> bool:
    """Whether a field must be present on the wire (see the module docstring)."""
    if field.default is attrs.NOTHING:
        return True
    if field.default is None:
        return False
    tp = field.type
    return _is_literal(tp) or (_is_union(tp) and any(_is_literal(a) for a in typing.get_args(tp)))


def _without_none(tp: Any) -> Any:
    """``X | None`` -> ``X`` (the type a present optional value must have)."""
    if _is_union(tp):
        args = tuple(a for a in typing.get_args(tp) if a is not _NONE)
        if len(args) == 1:
            return args[0]
        return Union[args]  # noqa: UP007
    return tp


def _const_ok(value: Any, allowed: tuple[Any, ...]) -> bool:
    return any(value.__class__ is type(a) and value == a for a in allowed)


# --- the converter ---------------------------------------------------------------------

_COMPILER: Final = _Compiler()
_CONVERTER: Final = cattrs.Converter()


def _structure_factory(tp: Any) -> Callable[[Any, Any], Any]:
    fn = _COMPILER.structure_fn(tp)
    return lambda data, _cls: fn(data)


def _unstructure_factory(tp: Any) -> Fn:
    fn = _COMPILER.unstructure_fn(tp)
    assert fn is not None
    return fn


_CONVERTER.register_structure_hook_factory(lambda _tp: True, _structure_factory)
# cattrs looks primitives up before any factory (and would coerce: int(True) == 1).
for _primitive in (str, int, float, bool):
    _CONVERTER.register_structure_hook(_primitive, _structure_factory(_primitive))
_CONVERTER.register_unstructure_hook_factory(attrs.has, _unstructure_factory)


def structure_fn(cls: Any) -> Callable[[Any], Any]:
    """The compiled structure function of ``cls``: ``structure_fn(cls)(data)`` is
    ``structure(data, cls)`` without the converter's dispatch (for hot paths).

    Raises (when called): :class:`ConversionError`, as :func:`structure`.
    """
    return _COMPILER.structure_fn(cls)


def unstructure_fn(cls: Any) -> Callable[[Any], Any]:
    """The compiled unstructure function of the attrs class ``cls`` (for hot paths):
    ``unstructure_fn(type(obj))(obj)`` is ``unstructure(obj)``."""
    fn = _COMPILER.unstructure_fn(cls)
    if fn is None:
        return unstructure
    return fn


def structure(data: Any, cls: type[T]) -> T:
    """Turn decoded wire JSON into a value of ``cls`` (usually a class of
    :mod:`mcp_ref.types`; also a union alias, ``list[...]``, ``str``...).

    ``data`` is what ``json.loads`` returned (dicts, lists, str, int, float, bool,
    None); it is not modified, and ``Any``-typed parts of it are shared, not copied.
    Raises :class:`ConversionError` naming the path of the first bad value; never
    anything else for any JSON input.  See the module docstring for the rules.
    """
    result: T = _CONVERTER.structure(data, cls)
    return result


def unstructure(obj: Any) -> Any:
    """Turn a typed value into JSON-ready dicts and lists (for ``json.dumps``).

    camelCase keys, ``meta`` written as ``_meta``, optional fields that are ``None``
    left out, ``extra`` keys merged back into their object (never over a known key).
    Lists and dicts are walked; other values are returned as they are.  Raises nothing
    of its own: values are not checked on the way out (the attrs classes are built by
    our own code or checked by the core before sending).
    """
    return _CONVERTER.unstructure(obj)

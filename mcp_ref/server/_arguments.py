"""A strict cattrs converter for tool arguments and tool results.

Theory of operation
-------------------
Tool arguments arrive as JSON (dicts, lists, str, int, float, bool, None).  A tool
written as a typed Python function wants Python values: ``int``, ``list[str]``, an
``Enum`` member, an attrs class.  :data:`CONVERTER` does that conversion with cattrs,
and does it *strictly*, like the core's converter (``mcp_ref._convert``): nothing is
coerced.  ``"5"`` is not an ``int``, ``True`` is not an ``int``, a string is not a
``list``, a dict with a key the class does not know is refused.  The one widening JSON
itself needs: an integer is accepted where a ``float`` is expected.

What it converts (the same set :mod:`._schema` describes):
``str``, ``int``, ``float``, ``bool``, ``None``, ``Any``; ``list[X]`` (and
``Sequence``), ``set[X]``/``frozenset[X]`` (from an array), ``tuple[X, ...]`` and
``tuple[A, B]``; ``dict[str, X]`` (and ``Mapping``); ``Literal[...]``; unions and
``Optional`` (members tried in order, first that fits wins); ``Enum`` subclasses (by
value); attrs classes, dataclasses and ``TypedDict`` (extra keys refused);
``Annotated[X, ...]`` (as ``X``).

Errors: :func:`structure` raises :class:`ArgumentError` whose ``messages`` name each
bad value by its JSON path (``"expected an integer, got a string @ $.count"``).

The other direction, :func:`unstructure`, turns a typed tool result into JSON-ready
values (attrs classes and dataclasses to dicts, enums to values, sets and tuples to
lists) for ``structuredContent``.
"""

from __future__ import annotations

import dataclasses
import enum
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal, Union, get_args, get_origin

import attrs
import cattrs
from cattrs.cols import list_structure_factory, mapping_structure_factory
from cattrs.gen import make_dict_structure_fn
from cattrs.gen.typeddicts import make_dict_structure_fn as make_typeddict_structure_fn

from .._convert import json_type_name

__all__ = ["CONVERTER", "ArgumentError", "StrictTypeError", "structure", "unstructure"]

_NONE: Final = type(None)


class StrictTypeError(TypeError):
    """One value has the wrong JSON type or is not an allowed value."""


class ArgumentError(ValueError):
    """Arguments that do not fit the parameters' types.

    Attributes:
        messages: one line per fault, each ending with ``@ <JSON path>``.
    """

    def __init__(self, messages: list[str]) -> None:
        super().__init__("; ".join(messages))
        self.messages = messages


def _json_kind(value: Any) -> str:
    """``json_type_name`` with its article ("a string", "an object"), for messages."""
    name = json_type_name(value)
    if name == "null":
        return name
    if name.startswith("a Python "):
        return type(value).__name__
    return ("an " if name[0] in "aeiou" else "a ") + name


def _wrong(expected: str, value: Any) -> StrictTypeError:
    return StrictTypeError(f"expected {expected}, got {_json_kind(value)}")


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and typing.is_typeddict(tp)


def _is_record(tp: Any) -> bool:
    """attrs classes and dataclasses (converted from JSON objects)."""
    return isinstance(tp, type) and (attrs.has(tp) or dataclasses.is_dataclass(tp))


def _is_literal(tp: Any) -> bool:
    origin: Any = get_origin(tp)
    return origin is Literal


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (Union, _UnionType)


_UnionType: Final = type(int | str)


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)

    def s_str(v: Any, _: Any) -> str:
        if not isinstance(v, str):
            raise _wrong("a string", v)
        return v

    def s_int(v: Any, _: Any) -> int:
        if type(v) is not int:
            raise _wrong("an integer", v)
        return v

    def s_float(v: Any, _: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise _wrong("a number", v)
        return float(v)

    def s_bool(v: Any, _: Any) -> bool:
        if type(v) is not bool:
            raise _wrong("a boolean", v)
        return v

    def s_none(v: Any, _: Any) -> None:
        if v is not None:
            raise _wrong("null", v)

    conv.register_structure_hook(str, s_str)
    conv.register_structure_hook(int, s_int)
    conv.register_structure_hook(float, s_float)
    conv.register_structure_hook(bool, s_bool)
    conv.register_structure_hook(_NONE, s_none)
    conv.register_structure_hook(Any, lambda v, _: v)

    def literal_factory(tp: Any) -> Callable[[Any, Any], Any]:
        allowed = get_args(tp)

        def s_literal(v: Any, _: Any) -> Any:
            for a in allowed:
                if type(v) is type(a) and v == a:
                    return a
            raise StrictTypeError(f"expected one of {list(allowed)!r}, got {v!r}")

        return s_literal

    conv.register_structure_hook_factory(_is_literal, literal_factory)

    def enum_factory(tp: Any) -> Callable[[Any, Any], Any]:
        members = list(tp)

        def s_enum(v: Any, _: Any) -> Any:
            for m in members:
                if type(v) is type(m.value) and v == m.value:
                    return m
            raise StrictTypeError(f"expected one of {[m.value for m in members]!r}, got {v!r}")

        return s_enum

    conv.register_structure_hook_factory(
        lambda tp: isinstance(tp, type) and issubclass(tp, enum.Enum), enum_factory
    )

    def union_factory(tp: Any) -> Callable[[Any, Any], Any]:
        members = get_args(tp)
        if _NONE in members:  # try None first, so Optional[X] is cheap for null
            members = (_NONE, *(m for m in members if m is not _NONE))
        hooks = [(m, conv.get_structure_hook(m)) for m in members]
        names = " or ".join(_describe(m) for m in members)

        def s_union(v: Any, _: Any) -> Any:
            for member, hook in hooks:
                try:
                    return hook(v, member)
                except (StrictTypeError, cattrs.BaseValidationError, ValueError, KeyError):
                    continue
            raise StrictTypeError(f"expected {names}, got {_json_kind(v)}")

        return s_union

    conv.register_structure_hook_factory(_is_union, union_factory)

    def sequence_factory(tp: Any) -> Callable[[Any, Any], Any]:
        origin = get_origin(tp)
        args = get_args(tp)
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            return _hetero_tuple(conv, args)
        item = args[0] if args else Any
        inner = list_structure_factory(list[item], conv)  # type: ignore[valid-type]
        build: Callable[[list[Any]], Any] = {
            tuple: tuple,
            set: set,
            frozenset: frozenset,
        }.get(origin, list)

        def s_sequence(v: Any, _: Any) -> Any:
            if not isinstance(v, list):
                raise _wrong("an array", v)
            return build(inner(v, list))

        return s_sequence

    conv.register_structure_hook_factory(_is_sequence, sequence_factory)

    def mapping_factory(tp: Any) -> Callable[[Any, Any], Any]:
        args = get_args(tp)
        key, value = args if len(args) == 2 else (str, Any)
        inner = mapping_structure_factory(dict[key, value], conv)  # type: ignore[valid-type]

        def s_mapping(v: Any, _: Any) -> Any:
            if not isinstance(v, dict):
                raise _wrong("an object", v)
            return inner(v, dict)

        return s_mapping

    conv.register_structure_hook_factory(_is_mapping, mapping_factory)

    def object_factory(tp: Any) -> Callable[[Any, Any], Any]:
        if _is_typeddict(tp):
            inner = make_typeddict_structure_fn(tp, conv, _cattrs_forbid_extra_keys=True)
        else:
            inner = make_dict_structure_fn(tp, conv, _cattrs_forbid_extra_keys=True)

        def s_object(v: Any, t: Any) -> Any:
            if not isinstance(v, dict):
                raise _wrong("an object", v)
            return inner(v, t)

        return s_object

    conv.register_structure_hook_factory(
        lambda tp: _is_record(tp) or _is_typeddict(tp), object_factory
    )

    # Unstructure: JSON-ready values only.
    conv.register_unstructure_hook_factory(
        lambda tp: isinstance(tp, type) and issubclass(tp, set | frozenset | tuple),
        lambda tp: lambda v: [conv.unstructure(x) for x in v],
    )
    return conv


def _is_sequence(tp: Any) -> bool:
    origin = get_origin(tp) or tp
    return origin in (list, tuple, set, frozenset) or origin in (
        Sequence,
        typing.AbstractSet,
        typing.MutableSequence,
        typing.MutableSet,
    )


def _is_mapping(tp: Any) -> bool:
    origin = get_origin(tp) or tp
    return origin in (dict, Mapping, typing.MutableMapping)


def _hetero_tuple(conv: cattrs.Converter, args: tuple[Any, ...]) -> Callable[[Any, Any], Any]:
    hooks = [(a, conv.get_structure_hook(a)) for a in args]

    def s_tuple(v: Any, _: Any) -> Any:
        if not isinstance(v, list):
            raise _wrong("an array", v)
        if len(v) != len(hooks):
            raise StrictTypeError(f"expected an array of {len(hooks)} items, got {len(v)}")
        out: list[Any] = []
        errors: list[Exception] = []
        for i, ((tp, hook), item) in enumerate(zip(hooks, v, strict=True)):
            try:
                out.append(hook(item, tp))
            except Exception as exc:
                exc.__notes__ = [
                    *getattr(exc, "__notes__", []),
                    cattrs.IterableValidationNote(f"Structuring item @ index {i}", i, tp),
                ]
                errors.append(exc)
        if errors:
            raise cattrs.IterableValidationError("While structuring a tuple", errors, tuple)
        return tuple(out)

    return s_tuple


def _describe(tp: Any) -> str:
    if tp is _NONE:
        return "null"
    if isinstance(tp, type):
        return tp.__name__
    return repr(tp).replace("typing.", "")


def _format(exc: BaseException, tp: type | None) -> str:
    if isinstance(exc, StrictTypeError):
        return str(exc)
    if isinstance(exc, cattrs.ForbiddenExtraKeysError):
        return f"unknown field(s): {', '.join(sorted(exc.extra_fields))}"
    if isinstance(exc, KeyError):
        return "required field missing"
    return str(exc) or f"invalid value for {_describe(tp)}"


CONVERTER: Final = _make_converter()
"""The strict converter (one per process, separate from the core's)."""


def structure(value: Any, tp: Any, *, path: str = "$") -> Any:
    """Convert JSON ``value`` to ``tp`` strictly.

    Args:
        value: decoded JSON.
        tp: the target annotation (see the module docstring for what is supported).
        path: the JSON path to name ``value`` by in messages (default ``"$"``).

    Raises:
        ArgumentError: the value does not fit; ``messages`` says where and why.
    """
    try:
        return CONVERTER.structure(value, tp)
    except (cattrs.BaseValidationError, StrictTypeError, ValueError, KeyError) as exc:
        messages = cattrs.transform_error(exc, path=path, format_exception=_format)
        raise ArgumentError(messages) from None


def unstructure(value: Any, tp: Any = None) -> Any:
    """Turn a typed value into JSON-ready data (dicts, lists, str, int, float, bool, None)."""
    return CONVERTER.unstructure(value, tp) if tp is not None else CONVERTER.unstructure(value)

"""cattrs' own generated hooks, configured to do what ``mcp_ref._convert`` does, and measured
against it on the core hot path (issue 14).

Theory of operation
-------------------
Issue 14 asks whether ``mcp_ref/_convert.py`` (a hand-written code generator: Python
source per schema class, ``exec``-ed) earns its place: it stays only if cattrs' own
generated hooks are more than 20% slower on the core hot path.  This module answers it
in three parts.

1. **A cattrs converter as strict as ours** (:func:`make_converter`).  Every class hook
   is cattrs' own ``make_dict_structure_fn_from_attrs`` / ``make_dict_unstructure_fn``
   output; what cattrs cannot be told through its options is added around it, and each
   addition is named here because each one is a cost the measurement includes:

   * wire names: ``override(rename=...)`` per field (camelCase, ``_meta``, ``$schema``);
   * a ``Literal`` field with a default (``type: Literal["text"] = "text"``) must be
     present on the wire: cattrs makes a field with a default optional, so the hook is
     generated from the class's attributes with that default removed;
   * an optional field (default ``None``) takes ``null`` only when its type allows it:
     ``override(struct_hook=...)`` with the hook of the type without ``None``;
   * scalars are strict: hooks for ``str``, ``int``, ``float``, ``bool`` and ``Literal``
     that check the JSON type (cattrs' defaults call ``str(v)``, ``int(v)``...); unions of
     scalars (``str | int`` ids) use cattrs' ``configure_union_passthrough``;
   * ``list[X]`` and ``dict[str, X]`` must be a JSON array / object (cattrs' defaults take
     any iterable, so ``"abc"`` would become ``["a", "b", "c"]``): a type check in front of
     cattrs' own list and mapping hooks; ``dict[str, Any]`` and ``Any`` pass through;
   * unknown keys go to ``extra`` and come back on the way out: cattrs has no catch-all
     field, so each class hook is wrapped (``d.keys() <= KNOWN`` after cattrs' hook, and
     a merge after its unstructure hook);
   * unions of classes tagged by a constant (``type`` of the content blocks, ``method``
     of the requests): cattrs' ``configure_tagged_union`` (a dict lookup on the tag);
     the other unions: cattrs' own disambiguation picks a class by one unique required
     key and tries no other (and cannot resolve ``ServerResult`` at all), so they get a
     hook applying ``_convert``'s rule; a union of classes and a list
     (``SamplingMessage.content``) gets a hook that picks by JSON type (all listed by
     :func:`build_all`);
   * errors: cattrs raises ``KeyError``, ``TypeError`` or its own exception groups; the
     class wrapper turns any of them into :class:`~mcp_ref._convert.ConversionError`
     (what the connection answers -32602 with), explained by a second converter built
     with ``detailed_validation=True`` and ``cattrs.transform_error`` (on the cold path
     only, as ``_convert`` re-walks a list only after a failure).

2. **Agreement** (:func:`agreement`): both converters over the hot path's messages,
   the official example messages (``tests/vendor/examples``), inputs that tell union
   rules apart, and damaged copies of all of them (one value replaced, one key removed
   or added, as ``tests/test_core_convert.py`` does): the same refusals, equal objects,
   equal JSON back.

3. **Speed**: structure and unstructure of each hot-path message with ``timeit`` on
   CPU time (:func:`measure_messages`), then the core loops of :mod:`bench.hotpath`
   with each converter plugged into the connection (:func:`measure_hotpath`;
   ``mcp_ref._connection._structurer`` / ``_unstructurer`` swapped for the run, never
   edited).  Variants alternate run to run; medians and ranges are reported.  Besides
   ours and this converter, two more cattrs variants show what a cattrs feature costs:
   the same with ``detailed_validation=True`` (cattrs' default), and cattrs' own
   defaults with only the wire names configured (not as strict: a lower bound).

Run it: ``python -m bench.convert_cattrs`` (``--quick`` for a short run, ``--agree`` for
the agreement counts alone).
"""

from __future__ import annotations

import argparse
import copy
import functools
import importlib.metadata
import json
import statistics
import sys
import time
import timeit
import types
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, Literal

import attrs
import cattrs
from cattrs.cols import list_structure_factory
from cattrs.disambiguators import create_default_dis_func
from cattrs.fns import identity
from cattrs.gen import (
    make_dict_structure_fn_from_attrs,
    make_dict_unstructure_fn,
    override,
)
from cattrs.strategies import configure_tagged_union, configure_union_passthrough

from mcp_ref import _connection, _convert
from mcp_ref import types as t
from mcp_ref._convert import ConversionError, json_type_name

from . import hotpath
from ._measure import timed

__all__ = [
    "DETAILED",
    "FAST",
    "HAND_RESOLVED",
    "HOT",
    "LOOSE",
    "agreement",
    "build_all",
    "hooks",
    "make_converter",
    "measure_hotpath",
    "measure_messages",
    "structure_fn",
    "unstructure_fn",
]

Fn = Callable[[Any], Any]

# --- what a type is ---------------------------------------------------------------------
# The same reading of the schema's types as _convert's (wire names, required fields):
# these decide *what* to configure, never how a value is converted.


def _is_class(tp: Any) -> bool:
    return isinstance(tp, type) and attrs.has(tp)


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def _is_literal(tp: Any) -> bool:
    return typing.get_origin(tp) is Literal


def _origin_is(tp: Any, kind: type) -> bool:
    return tp is kind or typing.get_origin(tp) is kind


def _has_class(tp: Any) -> bool:
    """Whether values of ``tp`` can hold an attrs instance."""
    if _is_class(tp):
        return True
    return not _is_literal(tp) and any(_has_class(a) for a in typing.get_args(tp))


def _wire(field: attrs.Attribute[Any]) -> str:
    """The field's JSON key: ``protocol_version`` -> ``protocolVersion``, ``meta`` ->
    ``_meta``, or the name in its metadata (``$schema``)."""
    wire = field.metadata.get("wire")
    if isinstance(wire, str):
        return wire
    if field.name == "meta":
        return "_meta"
    first, *rest = field.name.split("_")
    return first + "".join(p[:1].upper() + p[1:] for p in rest)


def _required_literal(field: attrs.Attribute[Any]) -> bool:
    """A constant field with a default (``type: Literal["text"] = "text"``): required on
    the wire all the same."""
    if field.default is attrs.NOTHING or field.default is None:
        return False
    tp = field.type
    return _is_literal(tp) or (_is_union(tp) and any(_is_literal(a) for a in typing.get_args(tp)))


def _without_none(tp: Any) -> Any:
    if _is_union(tp):
        args = tuple(a for a in typing.get_args(tp) if a is not type(None))
        return args[0] if len(args) == 1 else typing.Union[args]  # noqa: UP007
    return tp


# --- the strict scalar hooks -------------------------------------------------------------


def _wrong(expected: str, v: Any) -> ConversionError:
    return ConversionError(f"expected {expected}, got {json_type_name(v)}")


def _structure_str(v: Any, _: Any = None) -> str:
    if isinstance(v, str):
        return v
    raise _wrong("string", v)


def _structure_int(v: Any, _: Any = None) -> int:
    if isinstance(v, int) and v.__class__ is not bool:
        return v
    raise _wrong("integer", v)


def _structure_float(v: Any, _: Any = None) -> float:
    if isinstance(v, (int, float)) and v.__class__ is not bool:
        return v  # kept as given: 50 stays 50, as _convert keeps it
    raise _wrong("number", v)


def _structure_bool(v: Any, _: Any = None) -> bool:
    if v.__class__ is bool:
        return v
    raise _wrong("boolean", v)


def _literal_factory(tp: Any) -> Callable[[Any, Any], Any]:
    """``Literal["a", "b"]``: the value's JSON type and value (cattrs' own check is
    ``v in values``, which lets ``True`` through for ``Literal[1]``)."""
    values = typing.get_args(tp)
    kinds = frozenset(type(v) for v in values)

    def structure_literal(v: Any, _: Any = None) -> Any:
        if v.__class__ in kinds and v in values:
            return v
        raise ConversionError(f"expected one of {values!r}, got {v!r}")

    return structure_literal


# --- unions of classes ----------------------------------------------------------------------

HAND_RESOLVED: dict[Any, str] = {}
"""The unions cattrs cannot resolve as ``_convert`` does, given a hook of our own (filled
in as hooks are built; :func:`build_all` builds them all): union -> why."""


def _literal_tagged(classes: tuple[Any, ...]) -> bool:
    """Whether cattrs' own disambiguation dispatches this union on a ``Literal`` field
    that every class has (``type`` of the content blocks, ``method`` of the requests)."""
    shared = set.intersection(
        *({f.name for f in attrs.fields(c) if _is_literal(f.type)} for c in classes)
    )
    for name in shared:
        groups: dict[Any, int] = {}
        for c in classes:
            for value in typing.get_args(attrs.fields_dict(c)[name].type):
                groups[value] = groups.get(value, 0) + 1
        if max(groups.values()) < len(classes):
            return True
    return False


def _tag_of(classes: tuple[Any, ...]) -> str | None:
    """The field every class requires with its own single constant (``type`` of the
    content blocks), or None."""
    fields = [attrs.fields_dict(c) for c in classes]
    for name in sorted(set.intersection(*(set(f) for f in fields))):
        values = [typing.get_args(f[name].type) for f in fields]
        if all(_is_literal(f[name].type) for f in fields) and all(len(v) == 1 for v in values):
            if len({v[0] for v in values}) == len(classes):
                return name
    return None


def _tag_value(cls: type, tag: str) -> str:
    """The constant of ``cls``'s tag field (its default): ``"text"`` for TextContent."""
    return str(attrs.fields_dict(cls)[tag].default)


@functools.cache
def _tagged_unions() -> list[tuple[Any, str]]:
    """Every union of classes in :mod:`mcp_ref.types` (an alias, or inside a field's
    type) that a constant field tags, ``(union, field name)``, inner unions first:
    configuring a union builds its members' hooks, which must find the unions inside
    them configured already."""
    found: dict[Any, str] = {}
    seen: set[type] = set()

    def visit(tp: Any) -> None:
        if _is_class(tp):
            if tp not in seen:
                seen.add(tp)
                attrs.resolve_types(tp)
                for field in attrs.fields(tp):
                    visit(field.type)
            return
        args = () if _is_literal(tp) else typing.get_args(tp)
        for arg in args:
            visit(arg)
        if _is_union(tp) and all(_is_class(a) for a in args):
            tag = _tag_of(args)
            if tag is not None:
                found.setdefault(tp, tag)

    for value in vars(t).values():
        if _is_class(value) or _is_union(value):
            visit(value)
    return list(found.items())


def _rule_union(conv: cattrs.Converter, tp: Any) -> Callable[[Any, Any], Any]:
    """``_convert``'s rule for a union without a distinct constant: try the classes
    whose required keys are all present, those leaving the fewest keys unknown first."""
    infos = []
    for n, cls in enumerate(typing.get_args(tp)):
        fields = [f for f in attrs.fields(cls) if f.name != "extra"]
        required = frozenset(
            _wire(f) for f in fields if f.default is attrs.NOTHING or _required_literal(f)
        )
        infos.append((n, cls, required, frozenset(_wire(f) for f in fields)))

    def structure_by_rule(v: Any, _: Any = tp) -> Any:
        if not isinstance(v, dict):
            raise _wrong("object", v)
        ranked = sorted(
            (sum(1 for k in v if k not in known), -len(required), n, cls)
            for n, cls, required, known in infos
            if required <= v.keys()
        )
        first: Exception | None = None
        for *_, cls in ranked:
            try:
                return conv.structure(v, cls)
            except Exception as exc:  # this class does not fit: try the next one
                first = first or exc
        raise first or ConversionError(f"matches none of {tp}")

    return structure_by_rule


# --- errors --------------------------------------------------------------------------------


def _describe(exc: BaseException, tp: Any) -> str:
    if isinstance(exc, ConversionError):
        return str(exc)
    if isinstance(exc, KeyError):
        return "required field missing"
    return cattrs.v.format_exception(exc, tp)


def _explained(detailed: cattrs.Converter, data: Any, tp: Any) -> ConversionError:
    """The error for ``data``, which the fast converter refused: re-run the detailed
    converter and render its exception group as one line (the cold path only)."""
    try:
        detailed.structure(data, tp)
    except ConversionError as exc:
        return exc
    except cattrs.BaseValidationError as exc:
        return ConversionError("; ".join(cattrs.transform_error(exc, "", _describe)))
    except Exception as exc:  # a bare KeyError or TypeError from a hook
        return ConversionError(f"{type(exc).__name__}: {exc}")
    return ConversionError("refused")  # pragma: no cover - both converters agree


# --- the converter -----------------------------------------------------------------------


def make_converter(
    *,
    strict: bool = True,
    detailed_validation: bool = False,
    explain: cattrs.Converter | None = None,
) -> cattrs.Converter:
    """A ``cattrs.Converter`` for :mod:`mcp_ref.types` (see the module docstring).

    Args:
        strict: configure it as strictly as :mod:`mcp_ref._convert` (the default).  With
            False, only what valid messages need (wire names, omitted optionals, ``str |
            int`` ids, unions): cattrs' own hooks for the rest, which coerce scalars,
            drop unknown keys and take any iterable for a list.  Not a replacement: a
            lower bound on what cattrs' generated code costs.
        detailed_validation: cattrs' option: per-field exception groups with paths,
            built on every call.
        explain: a converter built with ``detailed_validation=True`` that explains this
            one's refusals as one-line :class:`ConversionError` messages.
    """
    conv = cattrs.Converter(detailed_validation=detailed_validation, forbid_extra_keys=False)

    if strict:
        # Scalars and constants: strict JSON types.
        for tp, hook in (
            (str, _structure_str),
            (int, _structure_int),
            (float, _structure_float),
            (bool, _structure_bool),
        ):
            conv.register_structure_hook(tp, hook)
        conv.register_structure_hook_factory(_is_literal, _literal_factory)
    # str | int ids and progress tokens: cattrs' own strategy checks the value's class and
    # passes it through.  It also takes the subclasses of a member, and bool is a subclass
    # of int: so bool is configured apart, and the strategy configured last (which cattrs
    # consults first) leaves it out; a union with bool in it (ElicitResult.content's
    # values) hands the bool part on to the first one.
    configure_union_passthrough(str | int | float | bool | None, conv)
    if strict:
        configure_union_passthrough(str | int | float | None, conv)

        # Containers: a JSON array / object, then cattrs' own hook for the items.
        def list_factory(tp: Any) -> Callable[[Any, Any], Any]:
            inner = list_structure_factory(tp, conv)

            def structure_list(v: Any, _: Any = tp) -> Any:
                if isinstance(v, list):
                    return inner(v, tp)
                raise _wrong("array", v)

            return structure_list

        def dict_factory(tp: Any) -> Callable[[Any, Any], Any]:
            args = typing.get_args(tp)
            if not args or args[1] is Any:

                def structure_json_object(v: Any, _: Any = tp) -> Any:
                    if isinstance(v, dict):
                        return v  # shared, not copied, as _convert does for Any
                    raise _wrong("object", v)

                return structure_json_object
            inner = conv.gen_structure_mapping(tp)

            def structure_dict(v: Any, _: Any = tp) -> Any:
                if isinstance(v, dict):
                    return inner(v, tp)
                raise _wrong("object", v)

            return structure_dict

        conv.register_structure_hook_factory(lambda tp: _origin_is(tp, list), list_factory)
        conv.register_structure_hook_factory(lambda tp: _origin_is(tp, dict), dict_factory)

    # Unions of classes: cattrs' own disambiguation where it dispatches on a shared
    # Literal field (the content blocks' `type`): those are left to cattrs.  Elsewhere it
    # would pick a class by one key unique to it (which key, when a class has several,
    # follows set order, so it changes with PYTHONHASHSEED) and never try another:
    # {"message", "requestedSchema", "url"} is refused as ElicitRequestURLParams where
    # _convert takes the form params.  Those unions, and those it cannot resolve at all
    # (ServerResult: several classes without a unique required key), get _convert's rule.
    def rule_union_factory(tp: Any) -> Callable[[Any, Any], Any]:
        try:
            create_default_dis_func(conv, *typing.get_args(tp))
        except TypeError:
            HAND_RESOLVED[tp] = "cattrs cannot disambiguate it (no unique required key)"
        else:
            HAND_RESOLVED[tp] = "cattrs picks a class by one unique key and tries no other"
        return _rule_union(conv, tp)

    conv.register_structure_hook_factory(
        lambda tp: (
            _is_union(tp)
            and all(_is_class(a) for a in typing.get_args(tp))
            and not _literal_tagged(typing.get_args(tp))
        ),
        rule_union_factory,
    )

    # A union of classes and a list (SamplingMessage.content: a content block or a list
    # of them): cattrs has no hook for it; the JSON type picks the part.
    def mixed_union_factory(tp: Any) -> Callable[[Any, Any], Any]:
        args = typing.get_args(tp)
        classes = tuple(a for a in args if _is_class(a))
        lists = [a for a in args if _origin_is(a, list)]
        if len(classes) + len(lists) != len(args) or len(lists) != 1:
            raise TypeError(f"no hook for {tp!r}")  # no such type in the schema
        object_tp = classes[0] if len(classes) == 1 else typing.Union[classes]  # noqa: UP007
        object_hook = conv.get_structure_hook(object_tp)
        list_tp = lists[0]
        list_hook = conv.get_structure_hook(list_tp)
        HAND_RESOLVED[tp] = "cattrs has no hook for a union of classes and a list"

        def structure_mixed(v: Any, _: Any = tp) -> Any:
            if isinstance(v, dict):
                return object_hook(v, object_tp)
            if isinstance(v, list):
                return list_hook(v, list_tp)
            raise _wrong("object or array", v)

        return structure_mixed

    conv.register_structure_hook_factory(
        lambda tp: (
            _is_union(tp)
            and any(_is_class(a) for a in typing.get_args(tp))
            and not all(_is_class(a) or a is type(None) for a in typing.get_args(tp))
        ),
        mixed_union_factory,
    )

    # Classes: cattrs' generated hook, from the attributes with a constant's default
    # removed (so `type` is required), every field renamed to its wire name, `extra` left
    # to the wrapper below.
    def structure_factory(cls: type) -> Callable[..., Any]:
        attrs.resolve_types(cls)
        adapted = []
        overrides: dict[str, Any] = {}
        known = set()
        for field in attrs.fields(cls):
            if field.name == "extra":
                overrides["extra"] = override(omit=True)
                adapted.append(field)
                continue
            wire = _wire(field)
            known.add(wire)
            if _required_literal(field):
                adapted.append(field.evolve(default=attrs.NOTHING))
                overrides[field.name] = override(rename=wire)
            elif field.default is None and strict:
                # Absent means None; a present null only where the type allows it.
                adapted.append(field)
                hook = conv.get_structure_hook(_without_none(field.type))
                overrides[field.name] = override(rename=wire, struct_hook=hook)
            else:
                adapted.append(field)
                overrides[field.name] = override(rename=wire)
        base: Callable[..., Any] = make_dict_structure_fn_from_attrs(
            adapted, cls, conv, **overrides
        )
        if not strict:
            return base
        known_keys = frozenset(known)
        evolve = attrs.evolve

        def structure(d: Any, _: Any = cls) -> Any:
            # No isinstance(d, dict) check: what JSON gives that is not an object fails
            # in here (d["name"], "k" in 5, or d.keys() on a list or string).
            try:
                obj = base(d)
                if d.keys() <= known_keys:
                    return obj
            except Exception:
                if explain is None:
                    if isinstance(d, dict):
                        raise  # the detailed converter: cattrs' exception group as it is
                    raise _wrong("object", d) from None
                raise _explained(explain, d, cls) from None
            # Unknown keys (rare): kept in `extra`, as _convert keeps them.
            return evolve(obj, extra={k: x for k, x in d.items() if k not in known_keys})

        structure.overrides = base.overrides  # type: ignore[attr-defined]  # read by cattrs' disambiguation
        return structure

    conv.register_structure_hook_factory(_is_class, structure_factory)

    # Unstructure: values of types that hold no class are JSON already (passed through,
    # not copied, as _convert does); classes by cattrs' generated hooks, with `extra`
    # merged back by a wrapper.
    conv.register_unstructure_hook_func(
        lambda tp: tp not in (dict, list) and not _has_class(tp), identity
    )

    def unstructure_factory(cls: type) -> Fn:
        attrs.resolve_types(cls)
        overrides: dict[str, Any] = {}
        known = set()
        for field in attrs.fields(cls):
            if field.name == "extra":
                overrides["extra"] = override(omit=True)
                continue
            wire = _wire(field)
            known.add(wire)
            # Only a field whose default is None is left out (when None); a constant
            # (type: "text") is always written.
            overrides[field.name] = override(rename=wire, omit_if_default=field.default is None)
        base: Fn = make_dict_unstructure_fn(cls, conv, _cattrs_omit_if_default=False, **overrides)
        if not strict:
            return base
        known_keys = frozenset(known)

        def unstructure(o: Any) -> Any:
            d = base(o)
            e = o.extra
            if e:
                for k in e:
                    if k not in known_keys:
                        d[k] = e[k]
            return d

        return unstructure

    conv.register_unstructure_hook_factory(_is_class, unstructure_factory)

    # Unions whose classes each carry their own constant in one field (`type` of the
    # content blocks): cattrs' tagged-union strategy looks the class up by that value
    # (without copying the dict when extra keys are allowed), both ways.
    for union, tag in _tagged_unions():
        configure_tagged_union(
            union,
            conv,
            tag_generator=functools.partial(_tag_value, tag=tag),
            tag_name=tag,
        )
    return conv


DETAILED = make_converter(detailed_validation=True)
"""As strict, with cattrs' ``detailed_validation`` (its default) on every call."""
FAST = make_converter(explain=DETAILED)
"""The converter measured against ours: as strict, no detailed validation on the happy
path; a refusal is explained by :data:`DETAILED`."""
LOOSE = make_converter(strict=False)
"""cattrs' own defaults with wire names: not as strict (a lower bound, for the table)."""


def hooks(conv: cattrs.Converter) -> tuple[Callable[[Any], Fn], Callable[[Any], Fn]]:
    """``(structurer, unstructurer)`` of ``conv``, shaped as the connection's
    ``_structurer`` / ``_unstructurer``: type -> one-argument function, cached; the
    structure functions raise :class:`ConversionError` on bad input."""

    @functools.cache
    def structurer(tp: Any) -> Fn:
        hook: Callable[..., Any] = conv.get_structure_hook(tp)
        if _is_class(tp):
            return hook  # cattrs' generated functions take the type as an optional argument

        def structure(v: Any) -> Any:
            try:
                return hook(v, tp)
            except ConversionError:
                raise
            except Exception as exc:
                raise ConversionError(f"{type(exc).__name__}: {exc}") from None

        return structure

    @functools.cache
    def unstructurer(tp: Any) -> Fn:
        hook: Fn = conv.get_unstructure_hook(tp)
        return hook

    return structurer, unstructurer


structure_fn, unstructure_fn = hooks(FAST)


def build_all() -> dict[Any, str]:
    """Build the hooks of every class and union of :mod:`mcp_ref.types` (both ways);
    return :data:`HAND_RESOLVED`."""
    for value in vars(t).values():
        if _is_class(value) or _is_union(value):
            structure_fn(value)
            if _is_class(value):
                unstructure_fn(value)
    return HAND_RESOLVED


# --- the messages -------------------------------------------------------------------------

_TOOL = {
    "name": "echo",
    "description": "Echo the text back.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}

HOT: list[tuple[str, Any, Any]] = [
    # (row name, type, wire JSON): what the core converts per message on its hot path.
    (
        "tools/call params",
        t.CallToolRequestParams,
        {"name": "echo", "arguments": {"text": "hello"}},
    ),
    ("CallToolResult", t.CallToolResult, {"content": [{"type": "text", "text": "hello"}]}),
    ("ping result (Result)", t.Result, {}),
    (
        "notifications/message params",
        t.LoggingMessageNotificationParams,
        {"level": "info", "logger": "bench", "data": "tick 1"},
    ),
    (
        "notifications/progress params",
        t.ProgressNotificationParams,
        {"progressToken": "call-7", "progress": 50, "total": 100, "message": "halfway"},
    ),
    (
        "ListToolsResult (3 tools)",
        t.ListToolsResult,
        {"tools": [{**_TOOL, "name": f"tool{i}"} for i in range(3)], "nextCursor": "c2"},
    ),
]
"""The hot path's messages: the bench's ``tools/call`` request params and result, the
ping's empty result, the ``notifications/message`` of the notification case, a progress
notification and a tools list page."""

_EXAMPLES = Path(__file__).resolve().parent.parent / "tests" / "vendor" / "examples" / "2026-07-28"
_WRONG: tuple[Any, ...] = (None, True, 7, 2.5, "s", [], {}, [{}], {"k": []})


def examples() -> list[tuple[str, Any, Any]]:
    """The official example messages whose type is a class of :mod:`mcp_ref.types`:
    ``(file, class, JSON)``."""
    out = []
    for folder in sorted(_EXAMPLES.iterdir()):
        cls = getattr(t, folder.name, None)
        if not _is_class(cls):
            continue
        for path in sorted(folder.glob("*.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            out.append((f"{folder.name}/{path.name}", cls, data))
    return out


def damaged(data: Any, depth: int = 0) -> Iterator[Any]:
    """Copies of ``data`` with one value replaced, one key removed or one key added (the
    same damage as ``tests/test_core_convert.py``)."""
    if isinstance(data, dict):
        for key in data:
            for wrong in _WRONG:
                yield {**data, key: wrong}
            yield {k: v for k, v in data.items() if k != key}
            if depth < 3:
                for inner in damaged(data[key], depth + 1):
                    yield {**data, key: inner}
        yield {**data, "zzUnknown": 1}
    elif isinstance(data, list) and data:
        for wrong in _WRONG:
            yield [wrong, *data[1:]]
        if depth < 3:
            for inner in damaged(data[0], depth + 1):
                yield [inner, *data[1:]]


_URL = {"mode": "url", "message": "m", "url": "https://x.example", "elicitationId": "e"}
_FORM = {"message": "m", "requestedSchema": {"type": "object", "properties": {}}}

UNIONS: list[tuple[str, Any, Any]] = [
    # Unions resolved without a distinct constant, and inputs that tell the rules apart.
    *(
        (f"PrimitiveSchemaDefinition {i}", t.PrimitiveSchemaDefinition, d)
        for i, d in enumerate(
            [
                {"type": "string", "enum": ["a"], "enumNames": ["A"]},
                {"type": "string", "enum": ["a"]},
                {"type": "string", "oneOf": [{"const": "a", "title": "A"}]},
                {"type": "string", "format": "email"},
                {"type": "number", "minimum": 1},
                {"type": "boolean"},
                {"type": "array", "items": {"type": "string", "enum": ["a"]}},
                {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}},
            ]
        )
    ),
    *(
        (f"ServerResult {i}", t.ServerResult, d)
        for i, d in enumerate(
            [{}, {"tools": []}, {"tools": [], "zz": 1}, {"tools": [], "nextCursor": 5}]
        )
    ),
    *(
        (f"ElicitRequestParams {i}", t.ElicitRequestParams, d)
        for i, d in enumerate(
            [
                _URL,
                _FORM,
                {**_URL, "mode": 1},
                {**_URL, "mode": "form"},
                {"message": "m"},
                {**_FORM, "url": "https://x.example"},
                {**_FORM, "elicitationId": "e"},
            ]
        )
    ),
    (
        "ResourceContents",
        t.TextResourceContents | t.BlobResourceContents,
        {"uri": "u", "blob": 5, "text": "t"},
    ),
]
"""Inputs for the unions resolved by a rule (and their damaged copies)."""


# --- agreement ------------------------------------------------------------------------------

_REFUSED: Final = object()


def _outcome(fn: Fn, data: Any, refusals: tuple[type[BaseException], ...]) -> Any:
    try:
        return fn(copy.deepcopy(data))
    except refusals:
        return _REFUSED


def _refused_by_ours(tp: Any, data: Any) -> bool:
    return _outcome(lambda d: _convert.structure(d, tp), data, (ConversionError,)) is _REFUSED


def compare_one(
    tp: Any,
    data: Any,
    structurer: Callable[[Any], Fn] = structure_fn,
    unstructurer: Callable[[Any], Fn] = unstructure_fn,
    refusals: tuple[type[BaseException], ...] = (ConversionError,),
) -> str | None:
    """None when ``_convert`` and the other converter agree on ``data``: both refuse it,
    or both give equal objects that give equal JSON back; else what differs.  A refusal
    raising anything but ``refusals`` is a disagreement too."""
    ours = _REFUSED if _refused_by_ours(tp, data) else _convert.structure(data, tp)
    try:
        theirs = _outcome(structurer(tp), data, refusals)
    except Exception as exc:
        return f"refused with {type(exc).__name__}, not ConversionError: {exc}"
    if ours is _REFUSED or theirs is _REFUSED:
        if ours is theirs:
            return None
        if ours is _REFUSED:
            return "_convert refuses, cattrs accepts"
        return "cattrs refuses, _convert accepts"
    if ours != theirs:
        return f"different objects: {ours!r} vs {theirs!r}"
    if _is_class(type(ours)):
        ours_json = _convert.unstructure(ours)
        theirs_json = unstructurer(type(theirs))(theirs)
        if ours_json != theirs_json:
            return f"different JSON back: {ours_json!r} vs {theirs_json!r}"
    return None


def agreement(
    *,
    damage: bool = True,
    converter: cattrs.Converter | None = None,
) -> dict[str, Any]:
    """``_convert`` and a cattrs converter (:data:`FAST` by default) over the hot path's
    messages, the official examples and the union inputs, each with its damaged copies:
    ``{"counts": {...}, "disagreements": [(name, input, what differs), ...]}``."""
    refusals: tuple[type[BaseException], ...]
    if converter is None:
        structurer, unstructurer, refusals = structure_fn, unstructure_fn, (ConversionError,)
    else:  # a converter not configured to refuse with ConversionError: any exception
        structurer, unstructurer = hooks(converter)
        refusals = (Exception,)
    cases: list[tuple[str, Any, Any]] = [*HOT, *examples(), *UNIONS]
    counts = {"inputs": 0, "agree": 0, "both_refuse": 0, "disagree": 0}
    disagreements: list[tuple[str, Any, str]] = []
    for name, tp, data in cases:
        inputs = [("", data)]
        if damage:
            inputs += [(" (damaged)", d) for d in damaged(data)]
        for suffix, item in inputs:
            counts["inputs"] += 1
            diff = compare_one(tp, item, structurer, unstructurer, refusals)
            if diff is None:
                counts["agree"] += 1
                if _refused_by_ours(tp, item):
                    counts["both_refuse"] += 1
            else:
                counts["disagree"] += 1
                disagreements.append((name + suffix, item, diff))
    return {"counts": counts, "disagreements": disagreements}


# --- speed ----------------------------------------------------------------------------------

VARIANTS: list[tuple[str, cattrs.Converter | None]] = [
    ("ours", None),
    ("cattrs", FAST),
    ("cattrs detailed", DETAILED),
    ("cattrs loose", LOOSE),
]
"""The converters timed: ``_convert``; cattrs as strict (the candidate); the same with
``detailed_validation=True``; cattrs' own defaults with wire names (not as strict)."""


_OURS_HOOKS: Final = (_connection._structurer, _connection._unstructurer)
"""The connection's own lookups (``_convert``'s compiled functions), kept at import."""


def _variant_hooks(
    conv: cattrs.Converter | None,
) -> tuple[Callable[[Any], Fn], Callable[[Any], Fn]]:
    if conv is None:
        return _OURS_HOOKS
    if conv is FAST:
        return structure_fn, unstructure_fn
    return hooks(conv)


@contextmanager
def plugged(conv: cattrs.Converter | None) -> Iterator[None]:
    """Make the connection convert with ``conv`` (None: ours) inside the block, by
    swapping ``mcp_ref._connection._structurer`` / ``_unstructurer`` (the cached
    per-type lookups it calls; plans are per connection, so build connections inside)."""
    structurer, unstructurer = _variant_hooks(conv)
    _connection._structurer, _connection._unstructurer = structurer, unstructurer
    try:
        yield
    finally:
        _connection._structurer, _connection._unstructurer = _OURS_HOOKS


class Spread:
    """The median of several runs and their range."""

    __slots__ = ("high", "low", "median")

    def __init__(self, values: list[float]) -> None:
        self.median = statistics.median(values)
        self.low, self.high = min(values), max(values)

    def show(self, unit_digits: int = 0) -> str:
        f = f"{{:.{unit_digits}f}}"
        return f"{f.format(self.median)} ({f.format(self.low)}-{f.format(self.high)})"


def _orders(repeats: int, names: list[str]) -> Iterator[list[str]]:
    """Alternate the order of the variants run to run (a busy moment hits all)."""
    for r in range(repeats):
        yield names if r % 2 == 0 else names[::-1]


def measure_messages(
    *, repeats: int = 7, run_s: float = 0.03
) -> list[tuple[str, str, dict[str, Spread]]]:
    """Per hot-path message and direction, CPU nanoseconds per call of each variant's
    function (what the connection calls), with ``timeit`` on ``time.process_time``:
    ``[(message, "structure" | "unstructure", {variant: Spread})]``."""
    names = [name for name, _ in VARIANTS]
    out = []
    for label, tp, data in HOT:
        obj = _convert.structure(data, tp)
        for op in ("structure", "unstructure"):
            fns = {}
            for name, conv in VARIANTS:
                structurer, unstructurer = _variant_hooks(conv)
                fns[name] = structurer(tp) if op == "structure" else unstructurer(tp)
            arg = data if op == "structure" else obj
            timers = {
                name: timeit.Timer("f(a)", globals={"f": fn, "a": arg}, timer=time.process_time)
                for name, fn in fns.items()
            }
            once = min(timers["ours"].repeat(3, 200)) / 200
            number = max(100, int(run_s / max(once, 1e-9)))
            samples: dict[str, list[float]] = {name: [] for name in names}
            for order in _orders(repeats, names):
                for name in order:
                    samples[name].append(timers[name].timeit(number) / number * 1e9)
            out.append((label, op, {name: Spread(v) for name, v in samples.items()}))
    return out


HOTPATH_CASES = ("tools/call", "ping", "notification", "response to our request")
"""The cases of :mod:`bench.hotpath` whose messages are small (the converter's share is
largest there; with 10 KB or 1 MB of text JSON dominates)."""


def measure_hotpath(
    *, repeats: int = 7, messages: int = 5000
) -> list[tuple[str, dict[str, Spread]]]:
    """The core loops of :mod:`bench.hotpath` (bytes in, event out, result in, bytes out)
    with each variant plugged into the connection: CPU microseconds per message,
    ``[(case, {variant: Spread})]``."""
    names = [name for name, _ in VARIANTS]
    convs = dict(VARIANTS)
    out = []
    for case, make, core, _floor, _count in hotpath.CASES:
        if case not in HOTPATH_CASES:
            continue
        msgs = make(messages)
        for name in names:  # warm up: compile every hook the loop needs
            with plugged(convs[name]):
                timed(core(msgs[:50]))
        samples: dict[str, list[float]] = {name: [] for name in names}
        for order in _orders(repeats, names):
            for name in order:
                with plugged(convs[name]):
                    samples[name].append(timed(core(msgs)).cpu_us)
        out.append((case, {name: Spread(v) for name, v in samples.items()}))
    return out


# --- the table ------------------------------------------------------------------------------


def _ratio(spread: Spread, base: Spread) -> str:
    return f"{spread.median / base.median:.2f}x"


def render(
    messages: list[tuple[str, str, dict[str, Spread]]],
    hot: list[tuple[str, dict[str, Spread]]],
    agree: dict[str, Any] | None,
) -> str:
    """The Markdown tables and the verdict by issue 14's 20% rule."""
    names = [name for name, _ in VARIANTS]
    lines = []
    if agree is not None:
        c = agree["counts"]
        lines += [
            f"Agreement (_convert vs cattrs, {c['inputs']} inputs: hot-path messages, "
            f"official examples, union cases, and their damaged copies): {c['agree']} agree "
            f"({c['both_refuse']} refused by both), {c['disagree']} disagree.",
            "",
        ]
        for name, item, diff in agree["disagreements"]:
            lines.append(f"- {name}: {json.dumps(item)[:120]}: {diff[:160]}")
        if agree["disagreements"]:
            lines.append("")
    if not messages and not hot:
        return "\n".join(lines)
    lines += [
        "Per message: CPU ns per call, median (min-max); ratio = variant / ours",
        "",
        "| message | op | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for label, op, spreads in messages:
        base = spreads["ours"]
        cells = [base.show()] + [
            f"{spreads[n].show()} {_ratio(spreads[n], base)}" for n in names[1:]
        ]
        lines.append(f"| {label} | {op} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Core hot path (bench.hotpath loops, converter plugged in): CPU us per message, "
        "median (min-max); ratio = variant / ours",
        "",
        "| case | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    worst = 0.0
    for case, spreads in hot:
        base = spreads["ours"]
        cells = [base.show(2)] + [
            f"{spreads[n].show(2)} {_ratio(spreads[n], base)}" for n in names[1:]
        ]
        lines.append(f"| {case} | " + " | ".join(cells) + " |")
        worst = max(worst, spreads["cattrs"].median / base.median)
    if hot:
        ratios = [s["cattrs"].median / s["ours"].median for _, s in hot]
        mean = statistics.geometric_mean(ratios)
        verdict = (
            "more than 20% slower: _convert.py stays"
            if mean > 1.2
            else "within 20%: by the issue's rule, use cattrs"
        )
        lines += [
            "",
            f"Verdict (issue 14): cattrs, as strict, is {100 * (mean - 1):+.0f}% on the core "
            f"hot path (geometric mean of the {len(ratios)} cases; worst case "
            f"{100 * (worst - 1):+.0f}%): {verdict}.",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.convert_cattrs [--quick] [--agree]``: print the tables."""
    p = argparse.ArgumentParser(
        prog="python -m bench.convert_cattrs",
        description="cattrs' generated hooks vs mcp_ref._convert: agreement and speed",
    )
    p.add_argument("--quick", action="store_true", help="fewer, shorter runs (about 10 s)")
    p.add_argument("--agree", action="store_true", help="only the agreement counts")
    args = p.parse_args(argv)
    print(
        f"cattrs {importlib.metadata.version('cattrs')}, attrs "
        f"{importlib.metadata.version('attrs')}, Python {sys.version.split()[0]}",
        file=sys.stderr,
    )
    agree = agreement()
    if args.agree:
        print(render([], [], agree))
        return 1 if agree["counts"]["disagree"] else 0
    repeats = 5 if args.quick else 9
    msgs = measure_messages(repeats=repeats, run_s=0.01 if args.quick else 0.03)
    hot = measure_hotpath(repeats=repeats, messages=1000 if args.quick else 5000)
    print(render(msgs, hot, agree))
    hand = build_all()
    print(f"\nUnions given _convert's rule or a hook of our own ({len(hand)}):")
    for tp, why in hand.items():
        print(f"- {_name(tp)}: {why}")
    return 0


def _name(tp: Any) -> str:
    for name, value in vars(t).items():
        if value is tp and not name.startswith("_"):
            return name
    return " | ".join(getattr(a, "__name__", repr(a)) for a in typing.get_args(tp))


if __name__ == "__main__":
    sys.exit(main())

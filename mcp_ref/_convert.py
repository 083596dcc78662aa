"""Wire JSON <-> typed messages: one strict cattrs converter, configured once.

Theory of operation
-------------------
:func:`structure` turns JSON that ``json.loads`` produced into the attrs classes of
:mod:`mcp_ref.types`; :func:`unstructure` turns them back into dicts and lists ready for
``json.dumps``.  The work is cattrs': :func:`make_converter` configures a
:class:`cattrs.Converter` and everything else is cattrs' own code.

* Each class gets the hooks cattrs generates for it (``make_dict_structure_fn_from_attrs``
  / ``make_dict_unstructure_fn``), told the wire names with ``override(rename=...)``.
  cattrs builds them the first time a class is converted and caches them.
* Unions of classes tagged by a constant (``type`` of the content blocks, ``method`` of
  the requests) use cattrs' ``configure_tagged_union``; ``str | int`` ids use its
  ``configure_union_passthrough``.
* What cattrs' options cannot say is a few small hooks here: strict scalars and
  containers, the ``extra`` dict of unknown keys, the rule for the unions without a tag,
  and ``SamplingMessage.content`` (a content block or a list of them).

Refusals: the converter keeps cattrs' ``detailed_validation`` (its default), so a bad
value makes cattrs raise exception groups whose notes name each attribute and item on
the way down to it.  :func:`explain` follows the first error down, writes its path with
wire names and the reason from the type expected there.  On a valid message the option
costs under 100 ns, within the noise of the core hot path (``python -m
bench.convert_cattrs`` measures it).

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
  the top level of the same object, so a message round-trips unchanged (a class without
  an ``extra`` field refuses them);
* a union of classes that all carry a distinct constant (``type`` for content blocks,
  ``method`` for requests) is dispatched on that key; any other union tries the classes
  whose required keys are all present, those that leave the fewest keys unknown first;
* values typed ``Any`` (``data``, ``arguments``, ``_meta``...) are passed through as
  they are, not copied and not inspected.

Revisions: :mod:`mcp_ref.types` is one model for every revision, and each field records
the revisions that allow it (:mod:`mcp_ref._revisions`).  A converter reads the messages
of some revisions (:func:`make_converter`'s ``revisions``): a field none of them allows
is not read (its key, if sent, is an unknown key and goes to ``extra``, as before that
field existed), and a field with ``required_in`` metadata is required when every one
of them that allows it requires it.  The module's default converter reads the four handshake-era revisions, so
for them the model's 2026-07-28 fields change nothing; ``structure(..., revision=
"2026-07-28")`` uses one built for that revision.  Writing ignores revisions: a field
that is set is written.

Every failure raises :class:`ConversionError` (a ``ValueError``) whose one-line message
names the JSON path of the first bad value, e.g. ``arguments: expected object, got
array`` or ``content[2].type: expected one of "text", "image", ...; got "video"``.

Source: 2025-06-18/basic#requests (ids are strings or integers), the 2025-11-25 schema
(``schema.json``) for every shape.
"""

from __future__ import annotations

import functools
import json
import types
import typing
from collections.abc import Callable
from typing import Any, Final, Literal, TypeVar, Union

import attrs
import cattrs
from cattrs.cols import list_structure_factory
from cattrs.errors import AttributeValidationNote, IterableValidationNote
from cattrs.fns import identity
from cattrs.gen import make_dict_structure_fn_from_attrs, make_dict_unstructure_fn, override
from cattrs.strategies import configure_tagged_union, configure_union_passthrough

from . import types as schema
from ._revisions import HANDSHAKE_REVISIONS, MODERN_REVISIONS, REVISIONS

__all__ = [
    "ConversionError",
    "explain",
    "json_type_name",
    "make_converter",
    "structure",
    "structure_fn",
    "unstructure",
    "unstructure_fn",
]

T = TypeVar("T")
Fn = Callable[[Any], Any]
Hook = Callable[[Any, Any], Any]  # cattrs' structure hooks: (value, type) -> object
Revisions = tuple[str, ...]


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


# --- reading the types: what to configure -----------------------------------------------

_NONE = type(None)


def _is_class(tp: Any) -> bool:
    return isinstance(tp, type) and attrs.has(tp)


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType)


def _is_literal(tp: Any) -> bool:
    return typing.get_origin(tp) is Literal


def _is_class_union(tp: Any) -> bool:
    return _is_union(tp) and all(_is_class(a) for a in typing.get_args(tp))


def _origin_is(tp: Any, kind: type) -> bool:
    return tp is kind or typing.get_origin(tp) is kind


def _has_class(tp: Any) -> bool:
    """Whether values of ``tp`` can hold an attrs instance (so need unstructuring)."""
    if _is_class(tp):
        return True
    return not _is_literal(tp) and any(_has_class(a) for a in typing.get_args(tp))


def _wire_name(field: attrs.Attribute[Any]) -> str:
    """The field's JSON key: ``protocol_version`` -> ``protocolVersion``, ``meta`` ->
    ``_meta``, or the name in its metadata (``$schema``)."""
    wire = field.metadata.get("wire")
    if isinstance(wire, str):
        return wire
    if field.name == "meta":
        return "_meta"
    first, *rest = field.name.split("_")
    return first + "".join(p[:1].upper() + p[1:] for p in rest)


def _reads(field: attrs.Attribute[Any], revisions: Revisions) -> bool:
    """Whether a converter for ``revisions`` reads the field: one of them allows it
    (its ``revisions`` metadata; a field without any is read everywhere)."""
    allowed = field.metadata.get("revisions")
    return allowed is None or any(r in allowed for r in revisions)


def _wire_required(field: attrs.Attribute[Any], revisions: Revisions = HANDSHAKE_REVISIONS) -> bool:
    """Whether a field must be present on the wire (see the module docstring), for a
    converter that reads ``revisions``: a field with ``required_in`` metadata is
    required when every one of them that allows it requires it (``resultType`` for
    2026-07-28; ``CreateMessageRequest.id`` for the handshake era, not for 2026-07-28)."""
    if field.default is attrs.NOTHING:
        return True
    required_in = field.metadata.get("required_in")
    if required_in is not None:
        allowed = field.metadata.get("revisions", ())
        seen = [r for r in revisions if r in allowed]
        return bool(seen) and all(r in required_in for r in seen)
    if field.default is None:
        return False
    tp = field.type
    return _is_literal(tp) or (_is_union(tp) and any(_is_literal(a) for a in typing.get_args(tp)))


def _keeps(field: attrs.Attribute[Any], revisions: Revisions) -> bool:
    """Whether a converter for ``revisions`` gives the field its own key: it reads it,
    or the field is not optional (a class is only built with it, and a constant is
    always written: ``jsonrpc`` of a 2026-07-28 input request, see its docstring)."""
    return field.default is not None or _reads(field, revisions)


def _without_none(tp: Any) -> Any:
    """``X | None`` -> ``X`` (the type a present optional value must have)."""
    if _is_union(tp):
        args = tuple(a for a in typing.get_args(tp) if a is not _NONE)
        return args[0] if len(args) == 1 else Union[args]  # noqa: UP007
    return tp


def _field_type(field: attrs.Attribute[Any]) -> Any:
    """The type a field's value is structured as: an optional field's without None."""
    return _without_none(field.type) if field.default is None else field.type


def _tag_of(classes: tuple[Any, ...]) -> tuple[str, tuple[Any, ...]] | None:
    """The wire name every class requires with its own single constant, and the
    constants in the union's order (``("type", ("text", "image", ...))`` for the content
    blocks); None when there is no such key."""
    by_wire = [{_wire_name(f): f for f in attrs.fields(c)} for c in classes]
    for wire in sorted(set.intersection(*(set(fields) for fields in by_wire))):
        tag = [fields[wire] for fields in by_wire]
        if all(_is_literal(f.type) and len(f.type.__args__) == 1 for f in tag):
            constants = tuple(f.type.__args__[0] for f in tag)
            if all(_wire_required(f) for f in tag) and len(set(constants)) == len(tag):
                return wire, constants
    return None


@attrs.frozen
class _ClassInfo:
    """What the union rule needs to know about one class, by wire names."""

    required: frozenset[str]
    known: frozenset[str]
    consts: dict[str, tuple[Any, ...]]  # the Literal fields' allowed values


@functools.cache
def _class_info(cls: type, revisions: Revisions = HANDSHAKE_REVISIONS) -> _ClassInfo:
    attrs.resolve_types(cls)
    fields = [f for f in attrs.fields(cls) if f.name != "extra" and _keeps(f, revisions)]
    consts = {}
    for f in fields:
        tp = _without_none(f.type)
        if _is_literal(tp):
            consts[_wire_name(f)] = typing.get_args(tp)
    return _ClassInfo(
        required=frozenset(_wire_name(f) for f in fields if _wire_required(f, revisions)),
        known=frozenset(_wire_name(f) for f in fields),
        consts=consts,
    )


# --- messages -------------------------------------------------------------------------


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


_PRIMITIVE_NAMES: Final = {str: "string", int: "integer", float: "number", bool: "boolean"}


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
    if _origin_is(tp, list):
        return "array"
    if _origin_is(tp, dict) or _is_class(tp):
        return "object"
    if _is_union(tp):
        names: list[str] = []
        for arg in typing.get_args(tp):
            name = _describe(arg)
            if name not in names:
                names.append(name)
        return " or ".join(names)
    return repr(tp)


def _wrong(expected: str, value: Any) -> ConversionError:
    return ConversionError(f"expected {expected}, got {json_type_name(value)}")


def _bad_literal(values: tuple[Any, ...], value: Any) -> ConversionError:
    if len(values) == 1:
        return ConversionError(f"expected {_show(values[0])}, got {_show(value)}")
    shown = ", ".join(_show(v) for v in values)
    return ConversionError(f"expected one of {shown}; got {_show(value)}")


# --- strict scalars -----------------------------------------------------------------------
# cattrs' own hooks coerce (str(123), int("7")) and its Literal check is ``v in values``,
# which lets True through for Literal[1].


def _structure_str(v: Any, _: Any = None) -> str:
    if v.__class__ is str:
        return v
    raise _wrong("string", v)


def _structure_int(v: Any, _: Any = None) -> int:
    if v.__class__ is int:
        return v
    raise _wrong("integer", v)


def _structure_float(v: Any, _: Any = None) -> float:
    if v.__class__ is float or v.__class__ is int:
        return v  # kept as given: 50 stays 50
    raise _wrong("number", v)


def _structure_bool(v: Any, _: Any = None) -> bool:
    if v.__class__ is bool:
        return v
    raise _wrong("boolean", v)


def _literal_factory(tp: Any) -> Hook:
    values = typing.get_args(tp)
    kinds = frozenset(type(v) for v in values)
    allowed = frozenset(values)  # the schema's constants are strings: no True == 1 here

    def structure_literal(v: Any, _: Any = tp) -> Any:
        if v.__class__ in kinds and v in allowed:
            return v
        raise _bad_literal(values, v)

    return structure_literal


# --- unions cattrs resolves otherwise ---------------------------------------------------


def _rule_union_factory(conv: cattrs.Converter, revisions: Revisions) -> Callable[[Any], Hook]:
    """Unions of classes without a tag (``ServerResult``, ``ElicitRequestParams``, the
    enum schemas): try the classes whose required keys are all present and whose
    constants match, those leaving the fewest keys unknown first, then those with the
    most required keys.  cattrs' own disambiguation picks a class by one key unique to
    it and tries no other, and cannot resolve a union where no such key exists."""

    def factory(tp: Any) -> Hook:
        classes = typing.get_args(tp)
        infos = [_class_info(c, revisions) for c in classes]
        hooks = [conv.get_structure_hook(c) for c in classes]
        names = ", ".join(c.__name__ for c in classes)

        def structure_by_rule(v: Any, _: Any = tp) -> Any:
            if not isinstance(v, dict):
                raise _wrong("object", v)
            keys = v.keys()
            ranked = sorted(
                (sum(1 for k in keys if k not in info.known), -len(info.required), n)
                for n, info in enumerate(infos)
                if info.required <= keys
                and all(k not in v or _const_ok(v[k], c) for k, c in info.consts.items())
            )
            first: ConversionError | None = None
            for *_, n in ranked:
                try:
                    return hooks[n](v, classes[n])
                except Exception as exc:  # this class does not fit: try the next one
                    first = first or explain(exc, classes[n], v)
            if first is not None:
                raise first
            # No class has all its required keys: tell the nearest one's complaint.
            n = min(range(len(classes)), key=lambda n: len(infos[n].required - keys))
            try:
                hooks[n](v, classes[n])
            except Exception as exc:
                why = explain(exc, classes[n], v)
                closest = f"(closest of {names}: {classes[n].__name__})"
                raise ConversionError(f"{why.reason} {closest}", why.path) from None
            raise ConversionError(f"matches none of {names}")  # pragma: no cover

        return structure_by_rule

    return factory


def _const_ok(value: Any, allowed: tuple[Any, ...]) -> bool:
    return any(value.__class__ is type(a) and value == a for a in allowed)


def _class_or_list_factory(conv: cattrs.Converter) -> Callable[[Any], Hook]:
    """A union of classes and one list (``SamplingMessage.content``: a content block or
    a list of them), which cattrs has no hook for: the JSON type picks the part."""

    def factory(tp: Any) -> Hook:
        args = typing.get_args(tp)
        classes = tuple(a for a in args if _is_class(a))
        lists = [a for a in args if _origin_is(a, list)]
        if len(classes) + len(lists) != len(args) or len(lists) != 1:
            raise TypeError(f"mcp_ref cannot convert values of type {tp!r}")
        object_tp = classes[0] if len(classes) == 1 else Union[classes]  # noqa: UP007
        object_hook = conv.get_structure_hook(object_tp)
        list_hook = conv.get_structure_hook(lists[0])

        def structure_class_or_list(v: Any, _: Any = tp) -> Any:
            if isinstance(v, dict):
                return object_hook(v, object_tp)
            if isinstance(v, list):
                return list_hook(v, lists[0])
            raise _wrong("object or array", v)

        return structure_class_or_list

    return factory


@functools.cache
def _tagged_unions() -> dict[Any, tuple[str, tuple[Any, ...]]]:
    """Every union of classes in :mod:`mcp_ref.types` (an alias, or inside a field's
    type) whose classes carry a distinct constant: ``{union: (tag, constants)}``, inner
    unions first (configuring a union builds its classes' hooks, which must find the
    unions inside them configured already)."""
    found: dict[Any, tuple[str, tuple[Any, ...]]] = {}
    seen: set[type] = set()

    def visit(tp: Any) -> None:
        if _is_class(tp):
            if tp not in seen:
                seen.add(tp)
                attrs.resolve_types(tp)
                for field in attrs.fields(tp):
                    visit(field.type)
            return
        if not _is_literal(tp):
            for arg in typing.get_args(tp):
                visit(arg)
        if _is_class_union(tp):
            tag = _tag_of(typing.get_args(tp))
            if tag is not None:
                found.setdefault(tp, tag)

    for value in vars(schema).values():
        if _is_class(value) or _is_union(value):
            visit(value)
    return found


# --- the converter ----------------------------------------------------------------------


def make_converter(
    *, detailed_validation: bool = True, revisions: Revisions = HANDSHAKE_REVISIONS
) -> cattrs.Converter:
    """A new ``cattrs.Converter`` configured for :mod:`mcp_ref.types` (see the module
    docstring); ``detailed_validation`` is cattrs' option (exception groups that name
    each attribute and item that failed), which :func:`explain` needs.

    ``revisions`` are the revisions whose messages it reads (see "Revisions" in the
    module docstring): the handshake era's four by default, or ``("2026-07-28",)``.

    Its structure hooks raise on a bad value, but not always :class:`ConversionError`:
    use :func:`structure` / :func:`structure_fn`, which :func:`explain` what they catch.
    """
    conv = cattrs.Converter(detailed_validation=detailed_validation)

    # Scalars and constants: strict JSON types.
    for scalar, hook in (
        (str, _structure_str),
        (int, _structure_int),
        (float, _structure_float),
        (bool, _structure_bool),
    ):
        conv.register_structure_hook(scalar, hook)
    conv.register_structure_hook_factory(_is_literal, _literal_factory)

    # str | int ids and progress tokens: cattrs' strategy checks the value's class and
    # passes it through.  It also takes a member's subclasses, and bool is a subclass of
    # int, so bool is configured apart: the strategy configured last (consulted first)
    # leaves bool out and hands a union with bool in it (ElicitResult.content's values)
    # on to the first.
    configure_union_passthrough(str | int | float | bool | None, conv)
    configure_union_passthrough(str | int | float | None, conv)

    # Containers: a JSON array or object, then cattrs' own hook for the items.
    def list_factory(tp: Any) -> Hook:
        items = list_structure_factory(tp, conv)

        def structure_list(v: Any, _: Any = tp) -> Any:
            if isinstance(v, list):
                return items(v, tp)
            raise _wrong("array", v)

        return structure_list

    def dict_factory(tp: Any) -> Hook:
        args = typing.get_args(tp)
        if args and args[0] is not str:
            raise TypeError(f"only dict[str, ...] can be converted, not {tp!r}")
        values = conv.gen_structure_mapping(tp) if args and args[1] is not Any else None

        def structure_dict(v: Any, _: Any = tp) -> Any:
            if not isinstance(v, dict):
                raise _wrong("object", v)
            return v if values is None else values(v, tp)  # dict[str, Any]: shared

        return structure_dict

    conv.register_structure_hook_factory(lambda tp: _origin_is(tp, list), list_factory)
    conv.register_structure_hook_factory(lambda tp: _origin_is(tp, dict), dict_factory)

    # Unions of classes: those with a tag are configured at the end; the others follow
    # the rule.  A union of classes and a list gets its own hook.
    tagged = _tagged_unions()
    conv.register_structure_hook_factory(
        lambda tp: _is_class_union(tp) and tp not in tagged, _rule_union_factory(conv, revisions)
    )
    conv.register_structure_hook_factory(
        lambda tp: (
            _is_union(tp)
            and any(_is_class(a) for a in typing.get_args(tp))
            and not all(_is_class(a) or a is _NONE for a in typing.get_args(tp))
        ),
        _class_or_list_factory(conv),
    )

    # Classes: cattrs' generated hooks, by wire names, `extra` left to the wrappers.
    def structure_class_factory(cls: type) -> Hook:
        attrs.resolve_types(cls)
        fields: list[attrs.Attribute[Any]] = []
        overrides: dict[str, Any] = {}
        for field in attrs.fields(cls):
            if field.name == "extra":
                overrides["extra"] = override(omit=True)
            elif not _keeps(field, revisions):
                # Another era's field: its key, if sent, is an unknown one (to `extra`).
                overrides[field.name] = override(omit=True)
            elif _wire_required(field, revisions) and field.default is not attrs.NOTHING:
                # A constant with a default (type: "text"), or a field these revisions
                # require (resultType in 2026-07-28): cattrs would make it optional.
                # An optional field's None is its absence: a present null is refused.
                hook = conv.get_structure_hook(_field_type(field))
                field = field.evolve(default=attrs.NOTHING)
                overrides[field.name] = override(rename=_wire_name(field), struct_hook=hook)
            elif field.default is None:
                # Absent means None; a present null only where the type allows it.
                hook = conv.get_structure_hook(_without_none(field.type))
                overrides[field.name] = override(rename=_wire_name(field), struct_hook=hook)
            else:
                overrides[field.name] = override(rename=_wire_name(field))
            fields.append(field)
        generated: Fn = make_dict_structure_fn_from_attrs(fields, cls, conv, **overrides)
        known = _class_info(cls, revisions).known
        required = len(_class_info(cls, revisions).required)
        keeps_extra = "extra" in attrs.fields_dict(cls)
        evolve = attrs.evolve

        def structure_class(d: Any, _: Any = cls) -> Any:
            if not isinstance(d, dict):
                raise _wrong("object", d)
            obj = generated(d)
            if len(d) == required or known.issuperset(d):  # no key but the known ones
                return obj
            unknown = {k: x for k, x in d.items() if k not in known}
            if not keeps_extra:
                raise ConversionError("unknown field").prefixed(next(iter(unknown)))
            return evolve(obj, extra=unknown)

        return structure_class

    conv.register_structure_hook_factory(_is_class, structure_class_factory)

    # Unstructure: values of types that hold no class are JSON already (passed through,
    # not copied); classes by cattrs' generated hooks, with `extra` merged back.
    conv.register_unstructure_hook_func(
        lambda tp: tp not in (dict, list) and not _has_class(tp), identity
    )

    def unstructure_class_factory(cls: type) -> Fn:
        attrs.resolve_types(cls)
        overrides: dict[str, Any] = {}
        for field in attrs.fields(cls):
            if field.name == "extra":
                overrides["extra"] = override(omit=True)
            else:  # None is left out; a constant (type: "text") is always written.
                omit = field.default is None
                overrides[field.name] = override(rename=_wire_name(field), omit_if_default=omit)
        generated: Fn = make_dict_unstructure_fn(
            cls, conv, _cattrs_omit_if_default=False, **overrides
        )
        if "extra" not in attrs.fields_dict(cls):
            return generated
        known = _class_info(cls, revisions).known

        def unstructure_class(o: Any) -> Any:
            d = generated(o)
            extra = o.extra
            if extra:
                for k in extra:
                    if k not in known and k not in d:  # never over a field read or written
                        d[k] = extra[k]
            return d

        return unstructure_class

    conv.register_unstructure_hook_factory(_is_class, unstructure_class_factory)

    # Tagged unions last: configuring one builds its classes' hooks with everything above.
    for union, (tag, constants) in tagged.items():
        tags = dict(zip(typing.get_args(union), constants, strict=True))
        configure_tagged_union(union, conv, tag_generator=tags.__getitem__, tag_name=tag)

    # On the way out, a union holding classes (tagged or not, `X | None` too) is
    # unstructured by the value's own class: the class hooks write a tag themselves (it
    # is a required constant), and a value the type does not announce (a block of another
    # union, a plain dict) is still written, as values are not checked on the way out.
    def unstructure_union_factory(tp: Any) -> Fn:
        hooks: dict[Any, Fn] = {a: conv.get_unstructure_hook(a) for a in typing.get_args(tp)}
        hooks[_NONE] = identity
        by_value = conv.unstructure

        def unstructure_by_class(v: Any) -> Any:
            return hooks.get(v.__class__, by_value)(v)

        return unstructure_by_class

    conv.register_unstructure_hook_factory(
        lambda tp: _is_union(tp) and _has_class(tp), unstructure_union_factory
    )
    return conv


# --- refusals: cattrs' detailed exceptions -> one line ----------------------------------

_ABSENT: Final = object()


def _note(exc: BaseException, kind: type[T]) -> T | None:
    """The note cattrs attached to ``exc`` when it passed one attribute or item."""
    notes = [n for n in getattr(exc, "__notes__", ()) if isinstance(n, kind)]
    return notes[-1] if notes else None


def explain(exc: BaseException, tp: Any, value: Any) -> ConversionError:
    """The :class:`ConversionError` for ``exc``, which structuring ``value`` as ``tp``
    raised: the path of the first bad value, by wire names, and what is wrong with it.

    The path comes from cattrs' ``detailed_validation``: its ``ClassValidationError``
    / ``IterableValidationError`` groups list the attributes and items that failed, in
    order, each with a note naming it.  The reason comes from the type expected at the
    end of that path and the value found there.  Pure; never raises.
    """
    if isinstance(exc, cattrs.ClassValidationError):
        sub = exc.exceptions[0]
        attribute = _note(sub, AttributeValidationNote)
        if attribute is None:  # pragma: no cover - the classes' __init__ checks nothing
            return ConversionError(f"invalid {exc.cl.__name__}: {sub}")
        field = attrs.fields_dict(exc.cl)[attribute.name]
        wire = _wire_name(field)
        inner = value.get(wire, _ABSENT)
        return explain(sub, _field_type(field), inner).prefixed(wire)
    if isinstance(exc, cattrs.IterableValidationError):
        sub = exc.exceptions[0]
        item = _note(sub, IterableValidationNote)
        if item is None:  # pragma: no cover - cattrs notes every item
            return ConversionError(str(sub))
        return explain(sub, item.type, value[item.index]).prefixed(item.index)
    # The first bad value itself.
    if value is _ABSENT:
        return ConversionError("required field missing")
    if isinstance(exc, ConversionError) and exc.path:
        return exc  # told by a hook of ours, from further down (a union's class)
    classes = tuple(a for a in typing.get_args(tp) if _is_class(a)) if _is_union(tp) else ()
    if classes and isinstance(value, dict):
        tag = _tag_of(classes)
        if tag is not None:  # a tagged union: the tag is missing or unknown
            key, constants = tag
            if key not in value:
                return ConversionError("required field missing").prefixed(key)
            return _bad_literal(constants, value[key]).prefixed(key)
    if isinstance(exc, ConversionError) and not _is_union(tp):
        return exc
    if _is_literal(tp):
        return _bad_literal(typing.get_args(tp), value)
    return _wrong(_describe(tp), value)  # a union: what all its members expect


# --- the module's converters --------------------------------------------------------------

_CONVERTER: Final = make_converter()


@functools.cache
def _modern_converter() -> cattrs.Converter:
    return make_converter(revisions=MODERN_REVISIONS)  # built on first use


def _converter_for(revision: str | None) -> cattrs.Converter:
    if revision is None or revision in HANDSHAKE_REVISIONS:
        return _CONVERTER
    if revision in MODERN_REVISIONS:
        return _modern_converter()
    raise ValueError(f"unknown revision {revision!r}; known: {', '.join(REVISIONS)}")


@functools.cache
def structure_fn(tp: Any, revision: str | None = None) -> Fn:
    """The structure function of ``tp`` (a class, union alias, ``list[...]``...):
    ``structure_fn(tp)(data)`` is ``structure(data, tp)`` without the converter's
    lookup (for hot paths).  Built once per type (and revision), cached.

    Raises (when called): :class:`ConversionError`, as :func:`structure`.
    Raises (at once): ValueError for a ``revision`` mcp_ref does not know.
    """
    hook = _converter_for(revision).get_structure_hook(tp)

    def structure_value(data: Any) -> Any:
        try:
            return hook(data, tp)
        except Exception as exc:
            raise explain(exc, tp, data) from None

    return structure_value


@functools.cache
def unstructure_fn(cls: Any, revision: str | None = None) -> Fn:
    """The unstructure function of the attrs class ``cls`` (for hot paths):
    ``unstructure_fn(type(obj))(obj)`` is ``unstructure(obj)``; for any other type,
    :func:`unstructure` itself.  ``revision`` as for :func:`unstructure`."""
    if not _is_class(cls):
        return (
            unstructure if revision is None else functools.partial(unstructure, revision=revision)
        )
    hook: Fn = _converter_for(revision).get_unstructure_hook(cls)
    return hook


def structure(data: Any, cls: type[T], revision: str | None = None) -> T:
    """Turn decoded wire JSON into a value of ``cls`` (usually a class of
    :mod:`mcp_ref.types`; also a union alias, ``list[...]``, ``str``...).

    ``revision`` is the protocol revision of the message: None (the default) or any
    handshake-era revision reads it as every handshake-era revision would, 2026-07-28
    as that revision does (its fields typed, the others' keys unknown; see "Revisions"
    in the module docstring).  ValueError for a revision mcp_ref does not know.

    ``data`` is what ``json.loads`` returned (dicts, lists, str, int, float, bool,
    None); it is not modified, and ``Any``-typed parts of it are shared, not copied.
    Raises :class:`ConversionError` naming the path of the first bad value; never
    anything else for any JSON input.  See the module docstring for the rules.
    """
    tp: Any = cls  # a union alias is not a type[T] to mypy
    result: T = (structure_fn(tp) if revision is None else structure_fn(tp, revision))(data)
    return result


def unstructure(obj: Any, revision: str | None = None) -> Any:
    """Turn a typed value into JSON-ready dicts and lists (for ``json.dumps``).

    camelCase keys, ``meta`` written as ``_meta``, optional fields that are ``None``
    left out, ``extra`` keys merged back into their object (never over a known key).
    Lists and dicts are walked; other values are returned as they are.  Values are not
    checked on the way out (the attrs classes are built by our own code or checked by
    the core before sending).

    ``revision`` as for :func:`structure`: it decides only which ``extra`` keys count as
    known (a 2026-07-28 message's ``id`` on an input request is an unknown key there,
    kept in ``extra``, and written back); every field that is set is written.
    """
    return _converter_for(revision).unstructure(obj)

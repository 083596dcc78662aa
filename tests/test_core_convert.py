"""A converter built afresh (mcp_ref._convert.make_converter) on real messages.

The module builds its cattrs converter once, at import, and cattrs caches each type's
hooks.  These tests build a new converter in the test and check it on the official example messages
(tests/vendor/examples) and on damaged copies of them: what round-trips must
round-trip, and what is refused must be refused with the same one-line message naming
the JSON path.  Asking a fresh converter for the types in another order also checks
that hook caching and the order the unions are configured in do not change what a
converter does.

Source: the 2025-11-25 schema (every shape); 2025-06-18/basic#requests (ids keep their
JSON type); mcp_ref/_convert.py's rules (camelCase, ``_meta``, omitted optionals,
``extra``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from typing import Any, Literal

import pytest

from mcp_ref import types as t
from mcp_ref._convert import (
    ConversionError,
    explain,
    make_converter,
    structure,
    unstructure,
    unstructure_fn,
)

from ._spec import spec_dir

_ROOT = spec_dir() / "examples" / "2026-07-28"


def _fresh() -> tuple[Callable[[Any, Any], Any], Callable[[Any], Any]]:
    """``(structure, unstructure)`` of a converter built now, its refusals explained as
    the module explains its own."""
    conv = make_converter()

    def fresh_structure(data: Any, tp: Any) -> Any:
        try:
            return conv.structure(data, tp)
        except Exception as exc:
            raise explain(exc, tp, data) from None

    return fresh_structure, conv.unstructure


def _corpus() -> list[tuple[type, Any]]:
    """The examples whose class exists and which the module's converter round-trips."""
    out = []
    for folder in sorted(_ROOT.iterdir()):
        cls = getattr(t, folder.name, None)
        if not isinstance(cls, type):
            continue
        for path in sorted(folder.glob("*.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            try:
                ok = unstructure(structure(copy.deepcopy(data), cls)) == data
            except ConversionError:
                ok = False
            if ok:
                out.append((cls, data))
    return out


CORPUS = _corpus()
WRONG: tuple[Any, ...] = (None, True, 7, 2.5, "s", [], {}, [{}], {"k": []})


def _outcome(fn: Any, data: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(copy.deepcopy(data))
    except ConversionError as exc:
        return "refused", str(exc)


def _damaged(data: Any, depth: int = 0) -> Iterator[Any]:
    """Copies of ``data`` with one value replaced, one key removed or one key added."""
    if isinstance(data, dict):
        for key in data:
            for wrong in WRONG:
                yield {**data, key: wrong}
            yield {k: v for k, v in data.items() if k != key}
            if depth < 3:
                for inner in _damaged(data[key], depth + 1):
                    yield {**data, key: inner}
        yield {**data, "zzUnknown": 1}
    elif isinstance(data, list) and data:
        for wrong in WRONG:
            yield [wrong, *data[1:]]
        if depth < 3:
            for inner in _damaged(data[0], depth + 1):
                yield [inner, *data[1:]]


def test_the_corpus_is_real() -> None:
    assert len(CORPUS) >= 40
    assert len({cls for cls, _ in CORPUS}) >= 30


def test_a_fresh_converter_round_trips_the_examples() -> None:
    fresh_structure, fresh_unstructure = _fresh()
    for cls, data in CORPUS:
        obj = fresh_structure(copy.deepcopy(data), cls)
        assert obj == structure(copy.deepcopy(data), cls)
        assert fresh_unstructure(obj) == data


def test_a_fresh_converter_agrees_on_damaged_examples() -> None:
    fresh_structure, fresh_unstructure = _fresh()
    checked = refused = 0
    for cls, data in reversed(CORPUS):  # another order than the module's first use
        for damaged in _damaged(data):
            got = _outcome(lambda d, cls=cls: fresh_structure(d, cls), damaged)
            assert got == _outcome(lambda d, cls=cls: structure(d, cls), damaged), damaged
            checked += 1
            if got[0] == "refused":
                refused += 1
            else:
                assert fresh_unstructure(got[1]) == unstructure(got[1])
    assert checked > 1000 and refused > checked // 4


@pytest.mark.parametrize(
    ("tp", "good", "bad", "message"),
    [
        (list[str], ["a"], ["a", 1], "[1]: expected string, got integer"),
        (dict[str, int], {"a": 1}, {"a": True}, "a: expected integer, got boolean"),
        (str | int, "7", 7.5, "expected string or integer, got number"),
        (
            t.ContentBlock,
            {"type": "text", "text": "x"},
            {"type": "video"},
            'type: expected one of "text", "image", "audio", "resource_link", "resource"; '
            'got "video"',
        ),
    ],
)
def test_a_fresh_converter_on_containers_and_unions(
    tp: Any, good: Any, bad: Any, message: str
) -> None:
    fresh_structure, _ = _fresh()
    assert fresh_structure(copy.deepcopy(good), tp) == structure(copy.deepcopy(good), tp)
    with pytest.raises(ConversionError) as caught:
        fresh_structure(bad, tp)
    with pytest.raises(ConversionError) as cached:
        structure(bad, tp)
    assert str(caught.value) == str(cached.value) == message


def test_a_fresh_converter_picks_the_closest_class_of_a_union() -> None:
    """Unions without a distinct constant try the classes whose required keys are all
    there, those leaving the fewest keys unknown first (then the most required keys)."""
    fresh_structure, _ = _fresh()

    def schema(data: Any) -> Any:
        return fresh_structure(data, t.PrimitiveSchemaDefinition)

    def results(data: Any) -> Any:
        return fresh_structure(data, t.ServerResult)

    def params(data: Any) -> Any:
        return fresh_structure(data, t.ElicitRequestParams)

    legacy = {"type": "string", "enum": ["a"], "enumNames": ["A"]}
    assert type(schema(legacy)) is t.LegacyTitledEnumSchema
    assert type(schema({"type": "string", "enum": ["a"]})) is t.UntitledSingleSelectEnumSchema
    assert type(schema({"type": "string", "format": "email"})) is t.StringSchema
    assert type(schema({"type": "number", "minimum": 1})) is t.NumberSchema
    assert type(schema({"type": "boolean"})) is t.BooleanSchema
    assert type(results({"tools": []})) is t.ListToolsResult
    assert type(results({})) is t.Result
    assert type(results({"tools": [], "zz": 1})) is t.ListToolsResult
    url = {"mode": "url", "message": "m", "url": "https://x.example", "elicitationId": "e"}
    assert type(params(url)) is t.ElicitRequestURLParams
    form = {"message": "m", "requestedSchema": {"type": "object", "properties": {}}}
    assert type(params(form)) is t.ElicitRequestFormParams
    # cattrs' own disambiguation would pick ElicitRequestURLParams by a key unique to it
    # (url or elicitationId) and refuse; the rule takes the form params.
    for extra in ({"url": "https://x.example"}, {"elicitationId": "e"}):
        assert type(params({**form, **extra})) is t.ElicitRequestFormParams
    # A constant of the wrong JSON type does not select its class: 1 is not "url".
    with pytest.raises(ConversionError):
        params({**url, "mode": 1})
    # Nor does another string: no class fits, and the nearest one's complaint is told.
    with pytest.raises(ConversionError) as caught:
        params({**url, "mode": "form"})
    assert str(caught.value) == (
        'mode: expected "url", got "form" (closest of ElicitRequestURLParams, '
        "ElicitRequestFormParams: ElicitRequestURLParams)"
    )
    with pytest.raises(ConversionError) as caught:
        params({"message": "m"})
    assert str(caught.value).startswith("requestedSchema: required field missing")
    for bad, name in ((5, "integer"), ([], "array"), ("s", "string"), (None, "null")):
        with pytest.raises(ConversionError) as caught:
            schema(bad)
        assert str(caught.value).startswith(f"expected object, got {name}")


@pytest.mark.parametrize("fresh", [False, True], ids=["module", "fresh"])
def test_a_class_never_seen_gets_its_hooks_on_first_use(fresh: bool) -> None:
    import attrs

    @attrs.frozen(kw_only=True)
    class Fresh:
        """A class defined here, so no converter has built its hooks before."""

        kind: Literal["fresh"] = "fresh"
        count: int
        label: str | None = None
        items: list[t.TextContent] = attrs.field(factory=list)
        meta: dict[str, Any] | None = None
        extra: dict[str, Any] = attrs.field(factory=dict)

    @attrs.frozen(kw_only=True)
    class Closed:
        """A class without ``extra``: unknown keys are refused."""

        count: int

    convert, back = _fresh() if fresh else (structure, unstructure)
    wire = {
        "kind": "fresh",
        "count": 2,
        "items": [{"type": "text", "text": "x"}],
        "_meta": {"m": 1},
        "other": True,
    }
    obj = convert(copy.deepcopy(wire), Fresh)
    assert obj == Fresh(
        count=2, items=[t.TextContent(text="x")], meta={"m": 1}, extra={"other": True}
    )
    assert back(obj) == wire
    with pytest.raises(ConversionError) as caught:
        convert({"kind": "fresh", "count": True}, Fresh)
    assert str(caught.value) == "count: expected integer, got boolean"
    with pytest.raises(ConversionError) as caught:
        convert({"kind": "stale", "count": 1}, Fresh)
    assert str(caught.value) == 'kind: expected "fresh", got "stale"'
    with pytest.raises(ConversionError) as caught:
        convert({"count": 1, "items": [{"type": "text", "text": 5}]}, Fresh)
    assert str(caught.value) == "kind: required field missing"
    with pytest.raises(ConversionError) as caught:
        convert({"kind": "fresh", "count": 1, "items": [{"type": "text", "text": 5}]}, Fresh)
    assert str(caught.value) == "items[0].text: expected string, got integer"
    assert convert({"count": 1}, Closed) == Closed(count=1)
    with pytest.raises(ConversionError) as caught:
        convert({"count": 1, "z z": 2}, Closed)
    assert str(caught.value) == '["z z"]: unknown field'


def test_unstructure_fn_is_the_class_hook_for_classes() -> None:
    fn = unstructure_fn(t.TextContent)
    assert fn is not unstructure
    assert fn(t.TextContent(text="x")) == {"type": "text", "text": "x"}
    assert unstructure_fn(str) is unstructure


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("x" * 38, '"' + "x" * 38 + '"'),  # 40 characters with its quotes: shown whole
        ("x" * 39, '"' + "x" * 36 + '..."'),  # 41: cut to 40
        (None, "null"),
        (1.5, "1.5"),
        ([1], "array"),
        ({"a": 1}, "object"),
    ],
)
def test_a_wrong_constant_is_shown_short(value: Any, shown: str) -> None:
    with pytest.raises(ConversionError) as caught:
        structure({"type": value, "text": "a"}, t.TextContent)
    assert str(caught.value) == f'type: expected "text", got {shown}'


# -- the hooks of a fresh converter, called without explain ------------------------------
# Our own hooks refuse with a ConversionError that already says what was expected (the
# reason explain would give); cattrs' generated class hooks raise its exception groups.


@pytest.mark.parametrize(
    ("tp", "bad", "message"),
    [
        (str, 1, "expected string, got integer"),
        (int, True, "expected integer, got boolean"),
        (int, 1.0, "expected integer, got number"),
        (float, "1", "expected number, got string"),
        (bool, 1, "expected boolean, got integer"),
        (list[int], {}, "expected array, got object"),
        (dict[str, int], [], "expected object, got array"),
        (t.TextContent, 5, "expected object, got integer"),
        (Literal["a", "b"], "c", 'expected one of "a", "b"; got "c"'),
        (Literal["a"], 1, 'expected "a", got 1'),
        (t.PrimitiveSchemaDefinition, 5, "expected object, got integer"),
        (t.ElicitRequestParams, [], "expected object, got array"),
        (t.TextContent | list[t.TextContent], "s", "expected object or array, got string"),
        (
            t.SamplingMessage.__attrs_attrs__.content.type,
            5,
            "expected object or array, got integer",
        ),
    ],
)
def test_our_hooks_refuse_with_a_conversion_error(tp: Any, bad: Any, message: str) -> None:
    conv = make_converter()
    with pytest.raises(ConversionError) as caught:
        conv.structure(bad, tp)
    assert str(caught.value) == message and caught.value.path == ""


def test_scalars_pass_through_unchanged() -> None:
    conv = make_converter()
    assert conv.structure(50, float) == 50 and type(conv.structure(50, float)) is int
    assert conv.structure(2.5, float) == 2.5
    assert conv.structure(False, bool) is False
    assert conv.structure("7", str | int) == "7" and conv.structure(7, str | int) == 7


def test_a_union_of_classes_and_a_list_takes_either() -> None:
    """One class or several, and a list of them; anything else cannot be converted."""
    conv = make_converter()
    text = {"type": "text", "text": "x"}
    image = {"type": "image", "data": "AA==", "mimeType": "image/png"}
    one = t.TextContent | list[t.TextContent]
    assert conv.structure(text, one) == t.TextContent(text="x")
    assert conv.structure([text], one) == [t.TextContent(text="x")]
    two = t.TextContent | t.ImageContent | list[t.TextContent]
    assert conv.structure(image, two) == t.ImageContent(data="AA==", mime_type="image/png")
    assert conv.structure(text, two) == t.TextContent(text="x")
    assert conv.structure([text], two) == [t.TextContent(text="x")]
    for tp in (t.TextContent | list[int] | list[str], t.TextContent | str):
        with pytest.raises(TypeError) as caught:
            conv.structure(text, tp)
        assert str(caught.value) == f"mcp_ref cannot convert values of type {tp!r}"


# -- explain, on its own --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tp", "value", "message"),
    [
        (Any, 1, "expected any value, got integer"),
        (None, 5, "expected null, got integer"),
        (type(None), 5, "expected null, got integer"),
        (int | None, "x", "expected integer or null, got string"),
        (Literal["a"] | int, 2.5, 'expected "a" or integer, got number'),
        (Literal["a", "b"] | int, 2.5, 'expected one of "a", "b" or integer, got number'),
        (list[int] | list[str], 1, "expected array, got integer"),  # said once
        (Literal["a", "b"], "c", 'expected one of "a", "b"; got "c"'),
        (bytes, 1, "expected <class 'bytes'>, got integer"),
        (list[int] | dict[str, int], 1, "expected array or object, got integer"),
    ],
)
def test_explain_says_what_the_type_expects(tp: Any, value: Any, message: str) -> None:
    assert str(explain(ValueError("inner"), tp, value)) == message


def test_json_type_names() -> None:
    from mcp_ref._convert import json_type_name

    names = [None, True, False, "s", 1, 1.5, [], {}, b"x", (1,)]
    assert [json_type_name(v) for v in names] == [
        "null",
        "boolean",
        "boolean",
        "string",
        "integer",
        "number",
        "array",
        "object",
        "a Python bytes",
        "a Python tuple",
    ]


def test_a_union_without_a_constant_tag_is_not_explained_as_tagged() -> None:
    """Two classes whose only shared required key holds a list, not a constant."""
    import attrs

    @attrs.frozen(kw_only=True)
    class Ints:
        items: list[int]

    @attrs.frozen(kw_only=True)
    class Strs:
        items: list[str]
        name: str

    union = Ints | Strs
    assert str(explain(ValueError(), union, {"items": 5})) == "expected object, got object"
    assert structure({"items": [1]}, union) == Ints(items=[1])


def test_a_tie_on_unknown_keys_goes_to_the_class_with_more_required_keys_in_any_converter() -> None:
    import attrs

    @attrs.frozen(kw_only=True)
    class Loose:
        x: int
        y: int | None = None

    @attrs.frozen(kw_only=True)
    class Tight:
        x: int
        y: int

    fresh_structure, _ = _fresh()
    for convert in (structure, fresh_structure):
        for tp in (Loose | Tight, Tight | Loose):
            assert convert({"x": 1, "y": 2}, tp) == Tight(x=1, y=2)
            assert convert({"x": 1}, tp) == Loose(x=1)


def test_objects_of_any_values_are_shared_not_copied() -> None:
    conv = make_converter()
    data = {"a": [1], "b": {"c": None}}
    assert conv.structure(data, dict[str, Any]) is data
    assert conv.structure(data, dict) is data
    assert structure(data, dict[str, Any]) is data
    typed = conv.structure({"a": 1}, dict[str, int])
    assert typed == {"a": 1}
    with pytest.raises(TypeError) as caught:
        conv.structure({}, dict[int, str])
    assert str(caught.value) == "only dict[str, ...] can be converted, not dict[int, str]"


@pytest.mark.parametrize("fresh", [False, True], ids=["module", "fresh"])
def test_wire_names_of_constants_and_a_key_named_extra(fresh: bool) -> None:
    """A constant field of two words has a camelCase wire name too; a JSON key that
    happens to be called "extra" is an unknown key like any other, kept in ``extra``."""
    import attrs

    @attrs.frozen(kw_only=True)
    class Kinded:
        the_kind: Literal["k"] = "k"
        max_count: int
        extra: dict[str, Any] = attrs.field(factory=dict)

    convert, back = _fresh() if fresh else (structure, unstructure)
    wire = {"theKind": "k", "maxCount": 1, "extra": 5}
    obj = convert(copy.deepcopy(wire), Kinded)
    assert obj == Kinded(max_count=1, extra={"extra": 5})
    assert back(obj) == wire
    with pytest.raises(ConversionError) as caught:
        convert({"maxCount": 1, "the_kind": "k"}, Kinded)
    assert str(caught.value) == "theKind: required field missing"


@pytest.mark.parametrize("fresh", [False, True], ids=["module", "fresh"])
def test_a_closed_class_takes_its_optional_fields(fresh: bool) -> None:
    import attrs

    @attrs.frozen(kw_only=True)
    class Closed:
        count: int
        label: str | None = None

    convert, _ = _fresh() if fresh else (structure, unstructure)
    assert convert({"count": 1, "label": "x"}, Closed) == Closed(count=1, label="x")
    with pytest.raises(ConversionError) as caught:
        convert({"count": 1, "label": "x", "zz": 0}, Closed)
    assert str(caught.value) == "zz: unknown field"


def test_unstructure_passes_json_values_through_without_copying() -> None:
    arguments = {"a": [1, 2]}
    meta = {"progressToken": 1}
    params = t.CallToolRequestParams(name="x", arguments=arguments, meta=meta)
    values = ["a", "b"]
    completion = t.CompleteResultCompletion(values=values)
    for back in (make_converter().unstructure, unstructure):
        out = back(params)
        assert out == {"name": "x", "arguments": {"a": [1, 2]}, "_meta": {"progressToken": 1}}
        assert out["arguments"] is arguments and out["_meta"] is meta
        assert back(completion)["values"] is values


def test_a_union_is_written_by_the_values_own_class() -> None:
    """Values are not checked on the way out: a block the field's union does not list,
    or a plain dict, is written as it is; None in a required union field is null."""
    import attrs

    @attrs.frozen(kw_only=True)
    class Holder:
        block: t.TextContent | None

    result = t.CallToolResult(
        content=[
            {"type": "text", "text": "raw"},
            t.ToolUseContent(id="u", name="n", input={}),  # not a ContentBlock
            t.TextContent(text="x"),
        ]
    )
    wire = {
        "content": [
            {"type": "text", "text": "raw"},
            {"type": "tool_use", "id": "u", "name": "n", "input": {}},
            {"type": "text", "text": "x"},
        ]
    }
    for back in (make_converter().unstructure, unstructure):
        assert back(result) == wire
        assert back(Holder(block=None)) == {"block": None}
        assert back(Holder(block=t.TextContent(text="y"))) == {
            "block": {"type": "text", "text": "y"}
        }


def test_null_where_the_type_allows_it_and_nowhere_else() -> None:
    """``Task.ttl`` is required and may be null; ``pollInterval`` is optional and may
    not: a present value must have the type without None."""
    task = {"createdAt": "a", "lastUpdatedAt": "b", "status": "working", "taskId": "t"}
    fresh_structure, _ = _fresh()
    for convert in (structure, fresh_structure):
        assert convert({**task, "ttl": None}, t.Task).ttl is None
        for key, value, message in (
            ("ttl", "x", "ttl: expected integer or null, got string"),
            ("pollInterval", None, "pollInterval: expected integer, got null"),
        ):
            with pytest.raises(ConversionError) as caught:
                convert({**task, "ttl": 5, key: value}, t.Task)
            assert str(caught.value) == message


def test_an_object_where_a_list_of_classes_was_expected() -> None:
    """The tag rule is for unions only: a list of tagged classes given an object that
    carries the right tag is still "expected array"."""
    fresh_structure, _ = _fresh()
    for convert in (structure, fresh_structure):
        with pytest.raises(ConversionError) as caught:
            convert({"type": "text", "text": "x"}, list[t.TextContent])
        assert str(caught.value) == "expected array, got object"


@pytest.mark.parametrize("fresh", [False, True], ids=["module", "fresh"])
def test_a_union_with_a_constant_and_a_default_is_required(fresh: bool) -> None:
    """A field whose union holds a Literal is required even with a default (as a plain
    Literal field is); a union without one, with a default, is optional."""
    import attrs

    @attrs.frozen(kw_only=True)
    class Odd:
        kind: Literal["x"] | int = "x"
        count: int | str = 0

    convert, _ = _fresh() if fresh else (structure, unstructure)
    assert convert({"kind": 5}, Odd) == Odd(kind=5, count=0)
    assert convert({"kind": "x", "count": "s"}, Odd) == Odd(kind="x", count="s")
    with pytest.raises(ConversionError) as caught:
        convert({"count": 1}, Odd)
    assert str(caught.value) == "kind: required field missing"


def test_a_field_whose_wire_name_no_rule_makes_keeps_it() -> None:
    """``schema`` is ``$schema`` on the wire (attrs metadata ``{"wire": "$schema"}``),
    which neither camelCase nor the ``_meta`` rule can make; a fresh converter reads and
    writes it under that name."""
    conv = make_converter()
    uri = "https://json-schema.org/draft/2020-12/schema"
    wire = {"$schema": uri, "type": "object", "properties": {}}
    value = conv.structure(wire, t.ElicitRequestFormParamsRequestedSchema)
    assert value.schema == uri
    assert conv.unstructure(value) == wire

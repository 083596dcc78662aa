"""A converter compiled afresh (mcp_ref._convert._Compiler) on real messages.

The module compiles one structure and one unstructure function per type, once, and
caches them.  These tests compile them again in the test, from nothing, and check the
result on the official example messages (tests/vendor/examples) and on damaged copies of
them: what round-trips must round-trip, and what is refused must be refused with the
same one-line message naming the JSON path.  Compiling again in another order also
checks that the trampolines for self-referencing classes and the per-type caches do not
change what a converter does.

Source: the 2025-11-25 schema (every shape); 2025-06-18/basic#requests (ids keep their
JSON type); mcp_ref/_convert.py's rules (camelCase, ``_meta``, omitted optionals,
``extra``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any, Literal

import pytest

from mcp_ref import types as t
from mcp_ref._convert import (
    ConversionError,
    _Compiler,
    structure,
    unstructure,
    unstructure_fn,
)

from ._spec import spec_dir

_ROOT = spec_dir() / "examples" / "2026-07-28"


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
WRONG = (None, True, 7, 2.5, "s", [], {}, [{}], {"k": []})


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


def test_a_fresh_compiler_round_trips_the_examples() -> None:
    compiler = _Compiler()
    for cls, data in CORPUS:
        obj = compiler.structure_fn(cls)(copy.deepcopy(data))
        assert obj == structure(copy.deepcopy(data), cls)
        unstructure_fn = compiler.unstructure_fn(cls)
        assert unstructure_fn is not None
        assert unstructure_fn(obj) == data


def test_a_fresh_compiler_agrees_on_damaged_examples() -> None:
    compiler = _Compiler()
    checked = refused = 0
    for cls, data in CORPUS:
        fresh = compiler.structure_fn(cls)
        for damaged in _damaged(data):
            got = _outcome(fresh, damaged)
            assert got == _outcome(lambda d, cls=cls: structure(d, cls), damaged), damaged
            checked += 1
            if got[0] == "refused":
                refused += 1
            else:
                unstructure_fn = compiler.unstructure_fn(cls)
                assert unstructure_fn is not None
                assert unstructure_fn(got[1]) == unstructure(got[1])
    assert checked > 1000 and refused > checked // 4


@pytest.mark.parametrize(
    ("tp", "good", "bad", "message"),
    [
        (list[str], ["a"], ["a", 1], "[1]: expected string, got integer"),
        (dict[str, int], {"a": 1}, {"a": True}, "a: expected integer, got boolean"),
        (str | int, "7", 7.5, None),
        (t.ContentBlock, {"type": "text", "text": "x"}, {"type": "video"}, None),
    ],
)
def test_a_fresh_compiler_on_containers_and_unions(
    tp: Any, good: Any, bad: Any, message: str | None
) -> None:
    compiler = _Compiler()
    fn = compiler.structure_fn(tp)
    assert fn(copy.deepcopy(good)) == structure(copy.deepcopy(good), tp)
    with pytest.raises(ConversionError) as caught:
        fn(bad)
    with pytest.raises(ConversionError) as cached:
        structure(bad, tp)
    assert str(caught.value) == str(cached.value)
    if message is not None:
        assert str(caught.value) == message


def test_a_fresh_compiler_picks_the_closest_class_of_a_union() -> None:
    """Unions without a distinct constant try the classes whose required keys are all
    there, those leaving the fewest keys unknown first (then the most required keys)."""
    compiler = _Compiler()
    schema = compiler.structure_fn(t.PrimitiveSchemaDefinition)
    legacy = {"type": "string", "enum": ["a"], "enumNames": ["A"]}
    assert type(schema(legacy)) is t.LegacyTitledEnumSchema
    assert type(schema({"type": "string", "enum": ["a"]})) is t.UntitledSingleSelectEnumSchema
    assert type(schema({"type": "string", "format": "email"})) is t.StringSchema
    assert type(schema({"type": "number", "minimum": 1})) is t.NumberSchema
    assert type(schema({"type": "boolean"})) is t.BooleanSchema
    results = compiler.structure_fn(t.ServerResult)
    assert type(results({"tools": []})) is t.ListToolsResult
    assert type(results({})) is t.Result
    assert type(results({"tools": [], "zz": 1})) is t.ListToolsResult
    params = compiler.structure_fn(t.ElicitRequestParams)
    url = {"mode": "url", "message": "m", "url": "https://x.example", "elicitationId": "e"}
    assert type(params(url)) is t.ElicitRequestURLParams
    form = {"message": "m", "requestedSchema": {"type": "object", "properties": {}}}
    assert type(params(form)) is t.ElicitRequestFormParams
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


def test_a_class_never_seen_is_compiled_on_first_use() -> None:
    import attrs

    @attrs.frozen(kw_only=True)
    class Fresh:
        """A class defined here, so no converter has compiled it before."""

        kind: Literal["fresh"] = "fresh"
        count: int
        label: str | None = None
        items: list[t.TextContent] = attrs.field(factory=list)
        meta: dict[str, Any] | None = None
        extra: dict[str, Any] = attrs.field(factory=dict)

    wire = {
        "kind": "fresh",
        "count": 2,
        "items": [{"type": "text", "text": "x"}],
        "_meta": {"m": 1},
        "other": True,
    }
    obj = structure(copy.deepcopy(wire), Fresh)
    assert obj == Fresh(
        count=2, items=[t.TextContent(text="x")], meta={"m": 1}, extra={"other": True}
    )
    assert unstructure(obj) == wire
    with pytest.raises(ConversionError) as caught:
        structure({"kind": "fresh", "count": True}, Fresh)
    assert str(caught.value).startswith("count: expected integer, got boolean")
    with pytest.raises(ConversionError) as caught:
        structure({"kind": "stale", "count": 1}, Fresh)
    assert str(caught.value).startswith('kind: expected "fresh"')


def test_unstructure_fn_is_the_compiled_function_for_classes() -> None:
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

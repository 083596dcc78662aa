"""mcp_ref._convert: strict structuring, lossless unstructuring, clear errors.

These tests need no spec files; tests/test_schema.py checks the same converter against
the official schema and examples.
"""

from __future__ import annotations

import json
import types
import typing
from typing import Any, Literal

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_ref import types as t
from mcp_ref._convert import (
    ConversionError,
    _reads,
    _wire_required,
    _without_none,
    structure,
    unstructure,
)
from mcp_ref._revisions import HANDSHAKE_REVISIONS
from tests._examples import examples


def loose(data: Any, cls: Any) -> Any:
    """``structure`` for union aliases, which mypy does not take as ``type[T]``."""
    return structure(data, cls)


def fails(data: Any, cls: Any) -> str:
    """Structure ``data`` as ``cls``, expecting a ConversionError; return its message."""
    with pytest.raises(ConversionError) as info:
        structure(data, cls)
    message = str(info.value)
    assert "\n" not in message
    return message


# --- the classes ----------------------------------------------------------------------


def test_classes_are_frozen_slotted_and_keyword_only() -> None:
    text = t.TextContent(text="hi")
    assert text.type == "text"
    assert text.extra == {}
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        text.text = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        positional: Any = t.TextContent
        positional("hi")
    assert not hasattr(text, "__dict__")
    assert t.TextContent(text="a").extra is not t.TextContent(text="b").extra


def test_aliases() -> None:
    assert typing.get_args(t.Role) == ("assistant", "user")
    assert "debug" in typing.get_args(t.LoggingLevel)
    assert t.RequestId == str | int
    assert t.ProgressToken == str | int
    assert t.Cursor is str
    assert t.EmptyResult is t.Result
    assert set(typing.get_args(t.ContentBlock)) == {
        t.TextContent,
        t.ImageContent,
        t.AudioContent,
        t.ResourceLink,
        t.EmbeddedResource,
    }


# --- ids and primitives ---------------------------------------------------------------


@pytest.mark.spec("2025-06-18/basic#requests.1", "2025-06-18/basic#requests.2")
@pytest.mark.parametrize("rid", ["7", 7, "", 0, -3, "x" * 100, 2**53 + 1])
def test_request_ids_are_kept_exactly(rid: Any) -> None:
    params = structure({"requestId": rid}, t.CancelledNotificationParams)
    assert params.request_id == rid
    assert type(params.request_id) is type(rid)
    assert unstructure(params) == {"requestId": rid}
    assert json.dumps(unstructure(params)) == json.dumps({"requestId": rid})


@pytest.mark.spec("2025-06-18/basic#requests.1", "2025-06-18/basic#requests.2")
@pytest.mark.parametrize("rid", [None, True, False, 7.0, 1.5, [], {}])
def test_request_ids_of_other_types_are_refused(rid: Any) -> None:
    message = fails({"requestId": rid}, t.CancelledNotificationParams)
    assert message.startswith("requestId: expected string or integer, got ")


def test_progress_token_kept_exactly() -> None:
    for token in ("7", 7):
        params = structure({"progressToken": token, "progress": 1}, t.ProgressNotificationParams)
        assert params.progress_token == token
        assert type(params.progress_token) is type(token)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": 3}, "name: expected string, got integer"),
        ({"name": None}, "name: expected string, got null"),
        ({"name": True}, "name: expected string, got boolean"),
        ({"name": "x", "arguments": []}, "arguments: expected object, got array"),
        ({"name": "x", "arguments": "a=1"}, "arguments: expected object, got string"),
        ({"name": "x", "_meta": []}, "_meta: expected object, got array"),
        ({"name": "x", "task": {"ttl": True}}, "task.ttl: expected integer, got boolean"),
        ({"name": "x", "task": {"ttl": 1.5}}, "task.ttl: expected integer, got number"),
        ({"name": "x", "task": {"ttl": "60"}}, "task.ttl: expected integer, got string"),
        ({}, "name: required field missing"),
        ([], "expected object, got array"),
        (None, "expected object, got null"),
    ],
)
def test_wrong_primitives_are_refused_with_the_path(data: Any, message: str) -> None:
    assert fails(data, t.CallToolRequestParams) == message


def test_bool_is_not_an_int_and_int_is_not_a_bool() -> None:
    assert fails({"name": "r", "uri": "a://b", "size": True}, t.Resource) == (
        "size: expected integer, got boolean"
    )
    assert fails({"content": [], "isError": 1}, t.CallToolResult) == (
        "isError: expected boolean, got integer"
    )
    assert fails({"content": [], "isError": "true"}, t.CallToolResult) == (
        "isError: expected boolean, got string"
    )
    assert fails({"progressToken": 1, "progress": False}, t.ProgressNotificationParams) == (
        "progress: expected number, got boolean"
    )


@pytest.mark.parametrize(
    ("tp", "data", "message"),
    [
        (t.CallToolRequestParams, {"name": 123}, "name: expected string, got integer"),
        (
            t.CallToolRequestParams,
            {"name": "x", "arguments": []},
            "arguments: expected object, got array",
        ),
        (
            t.ProgressNotificationParams,
            {"progressToken": True, "progress": 1},
            "progressToken: expected string or integer, got boolean",
        ),
        (
            t.ProgressNotificationParams,
            {"progressToken": "p", "progress": "1"},
            "progress: expected number, got string",
        ),
        (t.TextContent, {"text": "x"}, "type: required field missing"),
        (
            t.TextContent,
            {"type": "text", "text": "x", "annotations": None},
            "annotations: expected object, got null",
        ),
        (t.CallToolResult, {"content": "abc"}, "content: expected array, got string"),
        (
            t.ListToolsResult,
            {"tools": [], "nextCursor": 5},
            "nextCursor: expected string, got integer",
        ),
        (t.Result, [], "expected object, got array"),
        (t.Result, "_meta", "expected object, got string"),
        (t.Result, None, "expected object, got null"),
    ],
)
def test_what_cattrs_defaults_would_accept_is_refused(tp: Any, data: Any, message: str) -> None:
    """cattrs' own hooks coerce (``str(123)``), take any iterable for a list (``"abc"``
    -> ``["a", "b", "c"]``), make a constant with a default optional, take ``True`` for
    an ``int`` id; the converter is configured not to."""
    assert fails(data, tp) == message


def test_float_fields_take_ints_and_keep_them() -> None:
    params = structure(
        {"progressToken": 1, "progress": 50, "total": 99.5}, t.ProgressNotificationParams
    )
    assert params.progress == 50 and type(params.progress) is int
    assert json.dumps(unstructure(params)) == '{"progress": 50, "progressToken": 1, "total": 99.5}'


def test_literals_are_checked() -> None:
    assert fails({"level": "verbose"}, t.SetLevelRequestParams).startswith(
        'level: expected one of "alert", "critical", "debug"'
    )
    assert fails({"level": 3}, t.SetLevelRequestParams).endswith("; got 3")
    assert fails({"type": "image", "text": "x"}, t.TextContent) == (
        'type: expected "text", got "image"'
    )
    assert fails({"text": "x"}, t.TextContent) == "type: required field missing"


def test_required_nullable_field_keeps_its_null() -> None:
    wire = {
        "taskId": "t1",
        "status": "working",
        "createdAt": "2025-11-25T00:00:00Z",
        "lastUpdatedAt": "2025-11-25T00:00:00Z",
        "ttl": None,
    }
    task = structure(wire, t.GetTaskResult)
    assert task.ttl is None
    assert unstructure(task) == wire
    assert fails({k: v for k, v in wire.items() if k != "ttl"}, t.GetTaskResult) == (
        "ttl: required field missing"
    )


# --- paths in nested values -------------------------------------------------------------


def test_paths_name_the_first_bad_value() -> None:
    result = {"content": [{"type": "text", "text": "ok"}, {"type": "text"}]}
    assert fails(result, t.CallToolResult) == "content[1].text: required field missing"
    result = {"content": [{"type": "video"}]}
    assert fails(result, t.CallToolResult) == (
        'content[0].type: expected one of "text", "image", "audio", "resource_link", '
        '"resource"; got "video"'
    )
    result = {"content": [{"text": "x"}]}
    assert fails(result, t.CallToolResult) == "content[0].type: required field missing"
    assert fails({"content": {}}, t.CallToolResult) == "content: expected array, got object"
    embedded = {"content": [{"type": "resource", "resource": {"uri": "a://b", "blob": 5}}]}
    assert fails(embedded, t.CallToolResult).startswith("content[0].resource.blob: ")
    elicit = {"action": "accept", "content": {"a b": 1.5}}
    assert fails(elicit, t.ElicitResult) == (
        'content["a b"]: expected array or string or integer or boolean, got number'
    )
    assert fails({"action": "accept", "content": {"tags": ["x", 1]}}, t.ElicitResult) == (
        "content.tags[1]: expected string, got integer"
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ([{"type": "text", "text": "a"}, 5], "content[1]: expected object, got integer"),
        (["text"], "content[0]: expected object, got string"),
        ([[{"type": "text"}]], "content[0]: expected object, got array"),
        ([{"type": ["text"], "text": "a"}], 'content[0].type: expected one of "text", '),
        ([{"type": "text", "text": "a"}, {"type": 1}], "content[1].type: expected one of "),
        ("abc", "content: expected array, got string"),
    ],
)
def test_lists_of_tagged_objects_report_odd_items_like_any_list(content: Any, message: str) -> None:
    # A list of content blocks takes a fast path (the class looked up by its "type");
    # whatever it cannot take must get the same error, with its place, as any list.
    assert fails({"content": content}, t.CallToolResult).startswith(message)
    good = [{"type": "text", "text": "a"}, {"type": "image", "data": "AA==", "mimeType": "x/y"}]
    got = structure({"content": good}, t.CallToolResult).content
    assert [type(c) for c in got] == [t.TextContent, t.ImageContent]
    assert structure({"content": []}, t.CallToolResult).content == []


def test_conversion_error_is_a_value_error_with_path_and_reason() -> None:
    with pytest.raises(ValueError) as info:
        structure({"content": [{"type": "text", "text": 1}]}, t.CallToolResult)
    exc = info.value
    assert isinstance(exc, ConversionError)
    assert exc.path == "content[0].text"
    assert exc.reason == "expected string, got integer"
    assert ConversionError("params: required").args == ("params: required",)


# --- unions -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wire", "cls"),
    [
        ({"type": "text", "text": "hi"}, t.TextContent),
        ({"type": "image", "data": "AA==", "mimeType": "image/png"}, t.ImageContent),
        ({"type": "audio", "data": "AA==", "mimeType": "audio/wav"}, t.AudioContent),
        ({"type": "resource_link", "uri": "a://b", "name": "b"}, t.ResourceLink),
        ({"type": "resource", "resource": {"uri": "a://b", "text": "x"}}, t.EmbeddedResource),
    ],
)
def test_content_blocks_are_dispatched_on_type(wire: dict[str, Any], cls: type) -> None:
    block = loose(wire, t.ContentBlock)
    assert type(block) is cls
    assert unstructure(block) == wire


def test_sampling_content_single_or_list() -> None:
    use = {"type": "tool_use", "id": "u1", "name": "echo", "input": {"a": 1}}
    res = {"type": "tool_result", "toolUseId": "u1", "content": [{"type": "text", "text": "x"}]}
    one = structure({"role": "assistant", "content": use}, t.SamplingMessage)
    assert isinstance(one.content, t.ToolUseContent)
    many = structure({"role": "user", "content": [res, use]}, t.SamplingMessage)
    assert isinstance(many.content, list)
    assert [type(c) for c in many.content] == [t.ToolResultContent, t.ToolUseContent]
    assert unstructure(many) == {"role": "user", "content": [res, use]}
    assert fails({"role": "user", "content": "hi"}, t.SamplingMessage).startswith(
        "content: expected object or array, got string"
    )


def test_resource_contents_text_or_blob() -> None:
    result = structure(
        {"contents": [{"uri": "a://1", "text": "x"}, {"uri": "a://2", "blob": "AA=="}]},
        t.ReadResourceResult,
    )
    first, second = result.contents
    assert isinstance(first, t.TextResourceContents)
    assert isinstance(second, t.BlobResourceContents)


def test_undiscriminated_unions_pick_the_closest_class() -> None:
    assert type(loose({"tools": []}, t.ServerResult)) is t.ListToolsResult
    assert type(loose({}, t.ServerResult)) is t.Result
    assert type(loose({"roots": []}, t.ClientResult)) is t.ListRootsResult
    legacy = {"type": "string", "enum": ["a"], "enumNames": ["A"]}
    untitled = {"type": "string", "enum": ["a"]}
    plain = {"type": "string", "format": "email"}
    schema = t.PrimitiveSchemaDefinition
    assert type(loose(legacy, schema)) is t.LegacyTitledEnumSchema
    assert type(loose(untitled, schema)) is t.UntitledSingleSelectEnumSchema
    assert type(loose(plain, schema)) is t.StringSchema
    form = {"message": "m", "requestedSchema": {"type": "object", "properties": {}}}
    url = {"mode": "url", "message": "m", "url": "https://x.example", "elicitationId": "e"}
    assert type(loose(form, t.ElicitRequestParams)) is t.ElicitRequestFormParams
    assert type(loose(url, t.ElicitRequestParams)) is t.ElicitRequestURLParams
    message = fails({"message": "m"}, t.ElicitRequestParams)
    assert message.startswith("requestedSchema: required field missing")


def test_requests_are_dispatched_on_method() -> None:
    wire = {"jsonrpc": "2.0", "id": "1", "method": "tools/call", "params": {"name": "x"}}
    request = loose(wire, t.ClientRequest)
    assert isinstance(request, t.CallToolRequest)
    assert request.id == "1"
    assert unstructure(request) == wire
    assert fails({**wire, "method": "tools/dance"}, t.ClientRequest).startswith(
        'method: expected one of "initialize", "ping"'
    )


# --- unknown fields, None, _meta ----------------------------------------------------------


def test_unknown_fields_are_kept_at_every_level() -> None:
    wire = {
        "content": [{"type": "text", "text": "x", "future": {"a": [1]}}],
        "resultType": "complete",
        "_meta": {"io.example/trace": "abc", "progressToken": 3},
    }
    result = structure(wire, t.CallToolResult)
    assert result.extra == {"resultType": "complete"}
    assert isinstance(result.content[0], t.TextContent)
    assert result.content[0].extra == {"future": {"a": [1]}}
    assert result.meta == {"io.example/trace": "abc", "progressToken": 3}
    assert unstructure(result) == wire


def test_extra_never_overrides_a_known_field() -> None:
    text = t.TextContent(text="real", extra={"text": "fake", "x": 1, "_meta": {}})
    assert unstructure(text) == {"type": "text", "text": "real", "x": 1}


def test_a_class_outside_its_union_is_still_written() -> None:
    """Values are not checked on the way out: a block of another union is written by its
    own class."""
    use = t.ToolUseContent(id="u1", name="echo", input={})
    result = t.CallToolResult(content=[t.TextContent(text="x"), use])  # type: ignore[list-item]
    assert unstructure(result)["content"][1] == {
        "type": "tool_use",
        "id": "u1",
        "name": "echo",
        "input": {},
    }


def test_none_optionals_are_left_out() -> None:
    tool = t.Tool(name="echo", input_schema={"type": "object"})
    assert unstructure(tool) == {"name": "echo", "inputSchema": {"type": "object"}}
    caps = t.ServerCapabilities(tools=t.ServerCapabilitiesTools())
    assert unstructure(caps) == {"tools": {}}
    assert unstructure(t.EmptyResult()) == {}


def test_meta_is_a_plain_dict_written_as_underscore_meta() -> None:
    params = t.CallToolRequestParams(name="x", meta={"progressToken": "p1"})
    assert unstructure(params) == {"name": "x", "_meta": {"progressToken": "p1"}}
    assert structure({"name": "x", "_meta": {"k": [1]}}, t.CallToolRequestParams).meta == {"k": [1]}


def test_renamed_wire_names() -> None:
    wire = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {},
    }
    schema = structure(wire, t.ElicitRequestFormParamsRequestedSchema)
    assert schema.schema == wire["$schema"]
    assert unstructure(schema) == wire
    result = t.InitializeResult(
        protocol_version="2025-11-25",
        capabilities=t.ServerCapabilities(),
        server_info=t.Implementation(name="s", version="1", website_url="https://x.example"),
    )
    assert unstructure(result) == {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "serverInfo": {"name": "s", "version": "1", "websiteUrl": "https://x.example"},
    }


def test_top_level_generic_types() -> None:
    blocks = structure([{"type": "text", "text": "a"}], list[t.ContentBlock])
    assert blocks == [t.TextContent(text="a")]
    assert unstructure(blocks) == [{"type": "text", "text": "a"}]
    assert unstructure({"k": t.TextContent(text="a")}) == {"k": {"type": "text", "text": "a"}}
    assert structure("x", str) == "x"
    assert fails(True, int) == "expected integer, got boolean"
    assert fails(["a", 1], list[str]) == "[1]: expected string, got integer"


# --- revisions: the handshake era's converter and 2026-07-28's -------------------------


SAMPLING = {
    "method": "sampling/createMessage",
    "params": {"messages": [], "maxTokens": 5},
}


def test_the_handshake_converter_requires_what_those_revisions_require() -> None:
    """``CreateMessageRequest.id`` is optional in the model (a 2026-07-28 input request
    has none) but every handshake revision requires it: the default converter refuses a
    request without it, or with a null one, as before 2026-07-28 was in the model."""
    full = {"jsonrpc": "2.0", "id": 4, **SAMPLING}
    assert structure(full, t.CreateMessageRequest).id == 4
    assert fails({**full, "id": None}, t.CreateMessageRequest).startswith("id: expected ")
    assert fails(SAMPLING, t.CreateMessageRequest) in (
        "jsonrpc: required field missing",
        "id: required field missing",
    )
    url = {"mode": "url", "message": "m", "url": "https://x.example"}
    assert fails(url, t.ElicitRequestURLParams) == "elicitationId: required field missing"
    result = {"content": []}  # no resultType: fine before 2026-07-28
    assert structure(result, t.CallToolResult).result_type is None


def test_the_modern_converter_reads_2026_07_28_shapes() -> None:
    """With ``revision="2026-07-28"``: an input request needs no envelope, a URL
    elicitation no id, a result needs ``resultType``; a handshake-only field's key is
    an unknown one, kept in ``extra``."""
    request = structure(SAMPLING, t.CreateMessageRequest, "2026-07-28")
    assert (request.id, request.jsonrpc) == (None, None)
    assert unstructure(request) == SAMPLING
    url = {"mode": "url", "message": "m", "url": "https://x.example"}
    assert structure(url, t.ElicitRequestURLParams, "2026-07-28").elicitation_id is None
    with pytest.raises(ConversionError, match="resultType: required field missing"):
        structure({"content": []}, t.CallToolResult, "2026-07-28")
    done = structure({"content": [], "resultType": "complete"}, t.CallToolResult, "2026-07-28")
    assert done.result_type == "complete"
    params = {"name": "x", "task": {"ttl": 5}, "_meta": {}}
    read = structure(params, t.CallToolRequestParams, "2026-07-28")
    assert read.task is None and read.extra == {"task": {"ttl": 5}}
    assert unstructure(read, "2026-07-28") == params
    assert structure(params, t.CallToolRequestParams).task == t.TaskMetadata(ttl=5)
    with pytest.raises(ConversionError, match="_meta: required field missing"):
        structure({"name": "x"}, t.CallToolRequestParams, "2026-07-28")
    with pytest.raises(ValueError, match="unknown revision"):
        structure({}, t.Result, "1999-01-01")


# --- arbitrary input ----------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=6)
    | st.sampled_from(["text", "image", "2.0", "tools/call", "user", "working"]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["type", "text", "name", "content", "uri", "_meta", "x"])
            | st.text(max_size=4),
            inner,
            max_size=5,
        )
    ),
    max_leaves=12,
)

ALL_TYPES = [getattr(t, name) for name in t.__all__ if name in t.DEFINED_IN]


@settings(max_examples=examples(600), deadline=None)
@given(cls=st.sampled_from(ALL_TYPES), data=json_values)
def test_arbitrary_json_gives_a_value_or_a_conversion_error(cls: Any, data: Any) -> None:
    """Never another exception (no cattrs ExceptionGroup, no KeyError); and whatever is
    accepted round-trips unchanged."""
    try:
        obj = structure(data, cls)
    except ConversionError as exc:
        assert "\n" not in str(exc)
    else:
        assert unstructure(obj) == data


NOT_A_STRING = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.lists(st.text())
    | st.dictionaries(st.text(), st.text())
)


@given(value=NOT_A_STRING)
def test_string_fields_take_only_strings(value: Any) -> None:
    assert fails({"name": value}, t.CallToolRequestParams).startswith("name: expected string, got ")


@given(value=st.none() | st.booleans() | st.floats() | st.text() | st.lists(st.integers()))
def test_integer_fields_take_only_integers(value: Any) -> None:
    assert fails({"ttl": value}, t.TaskMetadata).startswith("ttl: expected integer, got ")


@given(value=st.integers())
def test_integer_fields_take_any_integer(value: int) -> None:
    assert structure({"ttl": value}, t.TaskMetadata).ttl == value


# --- round trip of generated values -----------------------------------------------------


def value_strategy(tp: Any, revision: str | None = None) -> st.SearchStrategy[Any]:
    """Valid values of a types.py annotation, built from the annotation alone, for the
    converter of ``revision`` (None: the handshake era's)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if attrs.has(tp):
        return st.deferred(lambda: instances(tp, revision))
    if tp is Any:
        return json_values
    if tp is str:
        return st.text(max_size=5)
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers()
    if tp is float:
        return st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    if origin is Literal:
        return st.sampled_from(args)
    if origin in (typing.Union, types.UnionType):
        return st.one_of([value_strategy(a, revision) for a in args])
    if origin is list:
        return st.lists(value_strategy(args[0], revision), max_size=2)
    if origin is dict:
        return st.dictionaries(st.text(max_size=4), value_strategy(args[1], revision), max_size=2)
    if tp is type(None):
        return st.none()
    raise NotImplementedError(tp)


UNKNOWN_KEYS = st.sampled_from(["x-new", "futureField", "x"])  # no class has these keys


def instances(cls: Any, revision: str | None = None) -> st.SearchStrategy[Any]:
    """Instances of one attrs class: every required field, each optional one present or
    None, and sometimes unknown keys in ``extra``; for the converter of ``revision``
    (None: the handshake era's), whose fields only: another era's optional fields are
    None, and the optional ones it requires (``resultType`` in 2026-07-28) are set."""
    revisions = HANDSHAKE_REVISIONS if revision is None else (revision,)
    kwargs: dict[str, st.SearchStrategy[Any]] = {}
    for f in attrs.fields(cls):
        if f.name == "extra":
            kwargs["extra"] = st.dictionaries(UNKNOWN_KEYS, json_values, max_size=2)
        elif f.default is None and not _reads(f, revisions):
            kwargs[f.name] = st.none()
        elif f.default is None and not _wire_required(f, revisions):
            kwargs[f.name] = st.none() | value_strategy(f.type, revision)
        elif f.default is None:  # optional, but required by this revision
            kwargs[f.name] = value_strategy(_without_none(f.type), revision)
        else:
            kwargs[f.name] = value_strategy(f.type, revision)
    return st.builds(cls, **kwargs)


CLASSES = [c for c in ALL_TYPES if attrs.has(c)]


def wire_names(obj: Any, *, omitted: bool) -> set[str]:
    """Wire names (camelCase, ``_meta``, or the field's own) of ``obj``'s optional fields
    that are None (``omitted=True``), or of all its other fields."""
    names = set()
    for f in attrs.fields(type(obj)):
        if f.name != "extra" and (f.default is None and getattr(obj, f.name) is None) == omitted:
            head, *rest = f.name.split("_")
            camel = "_meta" if f.name == "meta" else head + "".join(p.capitalize() for p in rest)
            names.add(f.metadata.get("wire", camel))
    return names


@settings(max_examples=examples(500), deadline=None)
@given(data=st.data())
def test_generated_values_round_trip(data: st.DataObject) -> None:
    """structure(unstructure(x)) == x for values of every class (on the wire always),
    by the converter of either era; the wire form is plain JSON, leaves out the
    optionals that are None (never null) and carries ``extra``'s unknown keys at the
    top level."""
    revision = data.draw(st.sampled_from([None, "2026-07-28"]))
    cls = data.draw(st.sampled_from(CLASSES))
    obj = data.draw(instances(cls, revision))
    wire = unstructure(obj)
    assert json.loads(json.dumps(wire)) == wire
    assert set(wire) == wire_names(obj, omitted=False) | set(obj.extra)
    assert not wire_names(obj, omitted=True) & set(wire)
    assert {k: wire[k] for k in obj.extra} == obj.extra
    back = structure(wire, cls, revision)
    assert unstructure(back, revision) == wire
    # Equal on the wire; as objects too, except where two schema definitions share a
    # wire form (LegacyTitledEnumSchema without enumNames reads back as
    # UntitledSingleSelectEnumSchema inside a union): the wire cannot tell them apart.
    assert type(back) is cls and unstructure(back) == wire
    assert back == obj or "EnumSchema" in repr(obj)

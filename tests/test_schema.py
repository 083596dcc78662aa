"""mcp_ref.types against the official schema (2025-11-25): names, round trips, validity.

Reads the vendored copies of the official schema.json files and example messages
(tests/vendor/, see tests/_spec.py), so nothing here depends on ``../shared``.
"""

from __future__ import annotations

import ast
import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mcp_ref import types as t
from mcp_ref._convert import ConversionError, structure, unstructure
from tests._examples import examples

from ._spec import REPO, VENDOR, examples_dir, schema_for

REVISION = "2025-11-25"
NEWEST = "2026-07-28"

DEFS: dict[str, Any] = schema_for(REVISION)["$defs"]
NEW_DEFS: dict[str, Any] = schema_for(NEWEST)["$defs"]


def _validator(name: str, defs: dict[str, Any] | None = None) -> Any:
    return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": defs or DEFS})


# --- every definition has a name -------------------------------------------------------


def test_schema_has_145_definitions() -> None:
    assert len(DEFS) == 145


# Every definition of every revision, its fields and the revisions recorded for them:
# tests/test_types_revisions.py.


def test_every_class_and_field_has_a_docstring() -> None:
    tree = ast.parse((REPO / "mcp_ref" / "types.py").read_text())
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert len(classes) > 145
    for cls in classes:
        assert ast.get_docstring(cls), cls.name
        body = cls.body
        for i, node in enumerate(body):
            if isinstance(node, ast.AnnAssign):
                after = body[i + 1] if i + 1 < len(body) else None
                assert isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant), (
                    f"{cls.name}.{ast.unparse(node.target)} has no docstring"
                )


def test_generated_file_is_not_stale() -> None:
    """types.py is exactly what spec_map/gen_types.py makes of the schema."""
    import importlib
    import shutil
    import sys

    ruff = Path(sys.executable).parent / "ruff"
    if not ruff.exists() and shutil.which("ruff") is None:
        pytest.skip("ruff is not installed; the generator formats its output with it")
    gen = importlib.import_module("spec_map.gen_types")
    fresh = gen.generate(VENDOR / "schema")
    assert fresh == (REPO / "mcp_ref" / "types.py").read_text(), (
        "mcp_ref/types.py is stale: run python spec_map/gen_types.py"
    )


# --- the official examples round-trip ---------------------------------------------------


def _strip_descriptions(node: Any) -> Any:
    """The schema without its prose (``description`` annotations; a *property* called
    ``description`` is kept)."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                continue
            if key == "properties" and isinstance(value, dict):
                out[key] = {k: _strip_descriptions(v) for k, v in value.items()}
            else:
                out[key] = _strip_descriptions(value)
        return out
    if isinstance(node, list):
        return [_strip_descriptions(v) for v in node]
    return node


def _closure(name: str) -> set[str]:
    """``name`` and every definition it refers to, transitively."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        text = json.dumps(DEFS[current])
        todo += [ref.split('"', 1)[0] for ref in text.split('"#/$defs/')[1:]]
    return seen


def _changed(name: str) -> list[str]:
    """The definitions in ``name``'s closure whose JSON differs between the revisions."""
    return sorted(
        n
        for n in _closure(name)
        if n not in NEW_DEFS or _strip_descriptions(DEFS[n]) != _strip_descriptions(NEW_DEFS[n])
    )


def _examples() -> list[tuple[str, str]]:
    root = examples_dir(NEWEST)
    return [
        (folder.name, path.name)
        for folder in sorted(root.iterdir())
        if folder.is_dir() and folder.name in DEFS
        for path in sorted(folder.glob("*.json"))
    ]


def _example(type_name: str, file_name: str) -> Any:
    return json.loads((examples_dir(NEWEST) / type_name / file_name).read_text())


EXAMPLES = _examples()
EXAMPLES_ALL = [
    (folder.name, path.name)
    for folder in sorted(examples_dir(NEWEST).iterdir())
    if folder.is_dir()
    for path in sorted(folder.glob("*.json"))
]
# The examples whose type (and everything it refers to) did not change from 2025-11-25
# to 2026-07-28, and those that are valid 2025-11-25 messages: chosen when collecting,
# so the tests below run on real vectors instead of skipping the rest.
UNCHANGED = [(n, f) for n, f in EXAMPLES if not _changed(n)]
VALID_IN_REVISION = [(n, f) for n, f in EXAMPLES if _validator(n).is_valid(_example(n, f))]


@pytest.mark.parametrize(("type_name", "file_name"), UNCHANGED)
def test_unchanged_examples_round_trip(type_name: str, file_name: str) -> None:
    """Examples of types whose schema (and everything it refers to) did not change from
    2025-11-25 to 2026-07-28 round-trip losslessly."""
    data = _example(type_name, file_name)
    obj = structure(copy.deepcopy(data), getattr(t, type_name))
    assert unstructure(obj) == data


@pytest.mark.parametrize(("type_name", "file_name"), VALID_IN_REVISION)
def test_examples_valid_in_2025_11_25_round_trip(type_name: str, file_name: str) -> None:
    """Any example that is also a valid 2025-11-25 message round-trips losslessly
    (newer fields, such as ``resultType``, land in ``extra`` and come back)."""
    data = _example(type_name, file_name)
    obj = structure(copy.deepcopy(data), getattr(t, type_name))
    assert unstructure(obj) == data


VALID_IN_NEWEST = [
    (n, f) for n, f in EXAMPLES_ALL if _validator(n, NEW_DEFS).is_valid(_example(n, f))
]
# The one shape the model keeps from 2025-11-25 against 2026-07-28 (rule 3 of
# spec_map/gen_types.py): CallToolResult.structuredContent is an object there, any JSON
# value here.
REFUSED_IN_NEWEST = {("CallToolResult", "result-with-array-structured-content.json")}


@pytest.mark.parametrize(("type_name", "file_name"), VALID_IN_NEWEST)
def test_examples_read_by_the_2026_07_28_converter_round_trip(
    type_name: str, file_name: str
) -> None:
    """Every official 2026-07-28 example, read as that revision (input requests
    without an envelope, ``resultType``, ``ttlMs``...), round-trips losslessly; the
    one shape the model does not serve is refused, as listed."""
    data = _example(type_name, file_name)
    if (type_name, file_name) in REFUSED_IN_NEWEST:
        with pytest.raises(ConversionError):
            structure(copy.deepcopy(data), getattr(t, type_name), NEWEST)
        return
    obj = structure(copy.deepcopy(data), getattr(t, type_name), NEWEST)
    assert unstructure(obj, NEWEST) == data


def test_enough_examples_are_test_vectors() -> None:
    """The selection above must leave real test vectors: at least 5 unchanged examples,
    and at least 20 that are valid 2025-11-25 messages."""
    assert len(UNCHANGED) >= 5
    assert len(VALID_IN_REVISION) >= 20
    assert len(VALID_IN_NEWEST) == len(EXAMPLES_ALL) >= 120  # every example is valid


# --- what we produce validates -----------------------------------------------------------


def _produced() -> list[tuple[str, Any]]:
    tool = t.Tool(
        name="echo",
        title="Echo",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
        annotations=t.ToolAnnotations(read_only_hint=True),
        execution=t.ToolExecution(task_support="optional"),
        icons=[t.Icon(src="https://example.com/i.png", theme="dark")],
    )
    return [
        ("TextContent", t.TextContent(text="hi")),
        ("Tool", tool),
        ("ListToolsResult", t.ListToolsResult(tools=[tool], next_cursor="c1")),
        (
            "CallToolResult",
            t.CallToolResult(
                content=[
                    t.TextContent(text="hi", annotations=t.Annotations(priority=0.5)),
                    t.ImageContent(data="AA==", mime_type="image/png"),
                    t.EmbeddedResource(resource=t.BlobResourceContents(uri="a://b", blob="AA==")),
                    t.ResourceLink(uri="a://c", name="c"),
                ],
                structured_content={"a": 1},
                is_error=False,
                meta={"k": 1},
            ),
        ),
        (
            "InitializeResult",
            t.InitializeResult(
                protocol_version=REVISION,
                capabilities=t.ServerCapabilities(
                    tools=t.ServerCapabilitiesTools(list_changed=True),
                    logging={},
                    tasks=t.ServerCapabilitiesTasks(
                        requests=t.ServerCapabilitiesTasksRequests(
                            tools=t.ServerCapabilitiesTasksRequestsTools(call={})
                        )
                    ),
                ),
                server_info=t.Implementation(name="s", version="1"),
            ),
        ),
        (
            "InitializeRequest",
            t.InitializeRequest(
                id=0,
                params=t.InitializeRequestParams(
                    protocol_version=REVISION,
                    capabilities=t.ClientCapabilities(
                        roots=t.ClientCapabilitiesRoots(list_changed=True),
                        elicitation=t.ClientCapabilitiesElicitation(form={}),
                    ),
                    client_info=t.Implementation(name="c", version="1"),
                ),
            ),
        ),
        (
            "GetTaskResult",
            t.GetTaskResult(
                task_id="t", status="working", created_at="x", last_updated_at="y", ttl=None
            ),
        ),
        (
            "CreateMessageResult",
            t.CreateMessageResult(
                role="assistant",
                model="m",
                content=[t.ToolUseContent(id="u1", name="echo", input={"text": "x"})],
            ),
        ),
        (
            "ElicitRequestFormParams",
            t.ElicitRequestFormParams(
                message="Name?",
                requested_schema=t.ElicitRequestFormParamsRequestedSchema(
                    properties={
                        "name": t.StringSchema(min_length=1),
                        "age": t.NumberSchema(type="integer", minimum=0),
                        "color": t.TitledSingleSelectEnumSchema(
                            one_of=[t.TitledSingleSelectEnumSchemaOneOf(const="r", title="Red")]
                        ),
                    },
                    required=["name"],
                ),
            ),
        ),
        (
            "URLElicitationRequiredError",
            t.URLElicitationRequiredError(
                id="7",
                error=t.URLElicitationRequiredErrorError(
                    message="go",
                    data=t.URLElicitationRequiredErrorErrorData(
                        elicitations=[
                            t.ElicitRequestURLParams(
                                elicitation_id="e", message="m", url="https://x.example"
                            )
                        ]
                    ),
                ),
            ),
        ),
    ]


@pytest.mark.spec("2025-06-18/basic#messages.1")
@pytest.mark.parametrize(
    ("name", "obj"), _produced(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_unstructured_messages_validate_against_the_schema(name: str, obj: Any) -> None:
    data = unstructure(obj)
    errors = [e.message for e in _validator(name).iter_errors(data)]
    assert not errors
    assert "null" not in json.dumps(data) or name == "GetTaskResult"  # only ttl may be null
    assert structure(data, type(obj)) == obj


# --- the converter accepts what the schema accepts --------------------------------------


def _as_converted(node: Any) -> Any:
    """The schema as the converter reads it: no ``minimum``/``maximum`` (ranges are not
    checked) and ``_meta`` a plain object (the core checks ``progressToken`` itself)."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key in ("minimum", "maximum") and isinstance(value, (int, float)):
                continue
            if key == "properties" and isinstance(value, dict) and "_meta" in value:
                value = {**value, "_meta": {"type": "object"}}
            out[key] = _as_converted(value)
        return out
    if isinstance(node, list):
        return [_as_converted(v) for v in node]
    return node


CONVERTED_DEFS = _as_converted(DEFS)

# Examples that are valid 2025-11-25 messages: the seeds of the mutation test.
SEEDS = VALID_IN_REVISION

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.integers(-1000, 1000).map(lambda i: i + 0.25),  # integral floats: see below
    st.text(max_size=5),
    st.sampled_from(["text", "image", "object", "string", "2.0", "user", "info"]),
)
# JSON Schema counts 1.0 as an integer; the converter does not (int fields take only
# ints), so the mutations never use integral floats.
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


FREE_FORM_KEYS = {"inputSchema", "outputSchema"}


def _mutate_and_compare(
    data: st.DataObject,
    seeds: list[tuple[str, str]],
    defs: dict[str, Any],
    revision: str | None,
    free_form: set[str],
) -> None:
    """Mutate a valid example (replace, delete or add one value) and check that the
    converter of ``revision`` accepts it exactly when ``defs`` does, and that what it
    accepts round-trips losslessly."""
    assert seeds, "no valid example to mutate"
    type_name, file_name = data.draw(st.sampled_from(seeds))
    doc = _example(type_name, file_name)
    path = data.draw(st.sampled_from(_paths(doc)))
    action = data.draw(st.sampled_from(["replace", "delete", "add"]))
    value = data.draw(json_values)
    if free_form & {p for p in path if isinstance(p, str)}:
        return  # free-form on purpose (see the callers)
    if not path:
        doc = value if action == "replace" else doc
    else:
        parent = doc
        for p in path[:-1]:
            parent = parent[p]
        last = path[-1]
        if action == "replace":
            parent[last] = value
        elif action == "delete":
            del parent[last]
        elif isinstance(parent[last], dict):
            parent[last][data.draw(st.text(min_size=1, max_size=4))] = value
        elif isinstance(parent[last], list):
            parent[last].append(value)
    schema_ok = jsonschema.Draft202012Validator(
        {"$ref": f"#/$defs/{type_name}", "$defs": defs}
    ).is_valid(doc)
    try:
        obj = structure(copy.deepcopy(doc), getattr(t, type_name), revision)
    except ConversionError as exc:
        event("refused")
        assert not schema_ok, f"converter refused a schema-valid {type_name}: {exc}"
        assert "\n" not in str(exc)
    else:
        event("accepted")
        assert schema_ok, f"converter accepted a schema-invalid {type_name}"
        out = unstructure(obj, revision)
        if out != doc and action == "replace" and value is None and path:
            # A field of any JSON type (an error's ``data``) given as null: attrs has
            # one None for "null" and "absent", so it reads as absent and is written so
            # (a null inside a free-form map, e.g. ``_meta``, is kept as it is).
            assert isinstance(path[-1], str)
            del parent[path[-1]]
        assert out == doc


@settings(max_examples=examples(1000), suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(data=st.data())
def test_converter_accepts_exactly_what_the_schema_accepts(data: st.DataObject) -> None:
    """The default converter (the handshake era's) against the 2025-11-25 schema, on
    the examples valid there: the same verdict on every mutation (ranges and ``_meta``
    contents aside); Tool input/output schemas are free-form dicts on purpose."""
    _mutate_and_compare(data, SEEDS, CONVERTED_DEFS, None, FREE_FORM_KEYS)


# 2026-07-28 as the converter reads it: the recursive JSON values are not looked into
# (spec_map/gen_types.py maps them to Any, dict[str, Any] and list[Any]).
CONVERTED_NEW_DEFS = {
    **_as_converted(NEW_DEFS),
    "JSONValue": {},
    "JSONObject": {"type": "object"},
    "JSONArray": {"type": "array"},
}


@settings(max_examples=examples(1000), suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(data=st.data())
def test_the_2026_07_28_converter_accepts_exactly_what_its_schema_accepts(
    data: st.DataObject,
) -> None:
    """The converter of ``revision="2026-07-28"`` against the 2026-07-28 schema, on every
    official example it reads: the same verdict on every mutation (ranges, ``_meta``
    contents and JSON values aside; ``structuredContent`` keeps 2025-11-25's object
    type, see REFUSED_IN_NEWEST)."""
    seeds = [s for s in VALID_IN_NEWEST if s not in REFUSED_IN_NEWEST]
    free = FREE_FORM_KEYS | {"structuredContent"}
    _mutate_and_compare(data, seeds, CONVERTED_NEW_DEFS, NEWEST, free)

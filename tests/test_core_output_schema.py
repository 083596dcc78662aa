"""Checking a tool's structured result against its outputSchema
(mcp_ref._output_schema.OutputSchemas), without I/O: which results are checked, what
is remembered and forgotten, and the error a mismatch raises (code, message, data)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mcp_ref import INTERNAL_ERROR, McpError, _output_schema
from mcp_ref import types as t
from mcp_ref._output_schema import OutputSchemaError, OutputSchemas

jsonschema = pytest.importorskip("jsonschema")

spec = pytest.mark.spec

COUNT = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
WORDS = {"type": "object", "properties": {"n": {"type": "string"}}, "required": ["n"]}


def tool(name: str, schema: dict[str, Any] | None) -> t.Tool:
    return t.Tool(name=name, input_schema={"type": "object"}, output_schema=schema)


def result(content: Any, is_error: bool | None = None) -> t.CallToolResult:
    return t.CallToolResult(content=[], structured_content=content, is_error=is_error)


def refusal(schemas: OutputSchemas, name: str, res: t.CallToolResult) -> OutputSchemaError:
    with pytest.raises(OutputSchemaError) as caught:
        schemas.check(name, res)
    return caught.value


def prefix(name: str) -> str:
    return f"the structured result of tool {name!r} does not match its outputSchema: "


def test_the_optional_dependency_is_imported_on_first_use() -> None:
    assert _output_schema.JSONSCHEMA_AVAILABLE is True
    assert _output_schema._jsonschema() is jsonschema


@spec("2025-06-18/server/tools#output-schema.2")
def test_a_mismatch_is_an_internal_error_naming_the_tool_and_the_place() -> None:
    schemas = OutputSchemas()
    deep = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}}
    schemas.remember([tool("count", COUNT), tool("deep", deep)])
    good = result({"n": 1})
    schemas.check("count", good)  # no error
    bad = result({"n": "one"})
    error = refusal(schemas, "count", bad)
    assert isinstance(error, McpError)
    assert error.code == INTERNAL_ERROR
    assert error.message == prefix("count") + "at n: 'one' is not of type 'integer'"
    assert str(error) == f"{error.message} (code {INTERNAL_ERROR})"
    assert error.data == {"tool": "count"}
    assert error.tool == "count" and error.result is bad
    error = refusal(schemas, "deep", result({"a": [1, "x"]}))
    assert error.message == prefix("deep") + "at a/1: 'x' is not of type 'integer'"
    error = refusal(schemas, "count", result({}))
    assert error.message == prefix("count") + "at (root): 'n' is a required property"


def test_an_invalid_schema_or_an_unresolvable_ref_is_reported_not_raised_raw() -> None:
    schemas = OutputSchemas()
    schemas.remember([tool("bad", {"type": 5}), tool("ref", {"$ref": "https://example.com/s"})])
    res = result({"n": 1})
    error = refusal(schemas, "bad", res)
    assert error.message == (
        prefix("bad") + "invalid outputSchema: 5 is not valid under any of the given schemas"
    )
    assert error.result is res and error.tool == "bad" and error.code == INTERNAL_ERROR
    error = refusal(schemas, "ref", res)  # remote refs are never fetched
    assert error.message == prefix("ref") + "cannot check it: Unresolvable: https://example.com/s"
    assert error.data == {"tool": "ref"} and error.result is res


def test_the_schemas_own_draft_is_used_else_2020_12() -> None:
    """``items`` as a list is a tuple in draft 7 and an invalid schema in 2020-12."""
    schemas = OutputSchemas()
    tuple_items = {"type": "array", "items": [{"type": "integer"}]}
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", **tuple_items}
    schemas.remember([tool("old", draft7), tool("new", tuple_items)])
    schemas.check("old", result([1, "anything"]))
    error = refusal(schemas, "old", result(["x"]))
    assert error.message == prefix("old") + "at 0: 'x' is not of type 'integer'"
    error = refusal(schemas, "new", result([1]))
    assert error.message.startswith(prefix("new") + "invalid outputSchema: ")


@spec("2025-06-18/server/tools#output-schema.2")
def test_what_is_not_checked() -> None:
    schemas = OutputSchemas()
    schemas.remember([tool("count", COUNT), tool("free", None)])
    bad = {"n": "one"}
    schemas.check("free", result(bad))  # declared no schema
    schemas.check("never-listed", result(bad))
    schemas.check("count", result(None))  # no structured content
    schemas.check("count", result(bad, is_error=True))  # an error result
    refusal(schemas, "count", result(bad, is_error=False))
    refusal(schemas, "count", result(bad))


def test_without_jsonschema_nothing_is_checked(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    schemas = OutputSchemas()
    schemas.remember([tool("count", COUNT)])
    monkeypatch.setattr(_output_schema, "_jsonschema", lambda: None)
    with caplog.at_level(logging.DEBUG, logger="mcp_ref.client"):
        schemas.check("count", result({"n": "one"}))
    assert [r.getMessage() for r in caplog.records] == [
        "jsonschema is not installed: not checking the result of 'count'"
    ]
    assert caplog.records[0].name == "mcp_ref.client"


def test_remember_replaces_forgets_and_clear_empties() -> None:
    schemas = OutputSchemas()
    schemas.remember([tool("count", COUNT), tool("other", WORDS)])
    assert schemas.schema_of("count") == COUNT and schemas.schema_of("other") == WORDS
    assert schemas.schema_of("nothing") is None
    refusal(schemas, "count", result({"n": "one"}))  # compiles and keeps a validator
    # Listed again with another schema: the new one is used, not the old validator.
    schemas.remember([tool("count", WORDS)])
    assert schemas.schema_of("count") == WORDS
    schemas.check("count", result({"n": "one"}))
    refusal(schemas, "count", result({"n": 1}))
    # Listed again without a schema: forgotten, so nothing is checked.
    schemas.remember([tool("count", None)])
    assert schemas.schema_of("count") is None
    schemas.check("count", result({"n": 1}))
    assert schemas.schema_of("other") == WORDS  # a tool not in the list stays
    refusal(schemas, "other", result({"n": 1}))
    schemas.clear()
    assert schemas.schema_of("other") is None
    schemas.check("other", result({"n": 1}))
    # A tool forgotten by clear() and listed again gets a fresh validator.
    schemas.remember([tool("other", COUNT)])
    schemas.check("other", result({"n": 1}))


def test_at_most_max_tools_are_remembered(caplog: pytest.LogCaptureFixture) -> None:
    assert OutputSchemas().max_tools == 10_000
    schemas = OutputSchemas(max_tools=2)
    assert schemas.max_tools == 2
    with caplog.at_level(logging.WARNING, logger="mcp_ref.client"):
        schemas.remember([tool("a", COUNT), tool("b", COUNT), tool("c", COUNT)])
    assert schemas.schema_of("a") == COUNT and schemas.schema_of("b") == COUNT
    assert schemas.schema_of("c") is None
    schemas.check("c", result({"n": "one"}))
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.WARNING, "more than 2 tools with an outputSchema: not checking 'c'")
    ]
    # A tool already remembered is updated even when the table is full.
    schemas.remember([tool("b", WORDS)])
    assert schemas.schema_of("b") == WORDS
    # A forgotten one makes room.
    schemas.remember([tool("a", None), tool("c", WORDS)])
    assert schemas.schema_of("c") == WORDS

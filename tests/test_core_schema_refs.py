"""No schema validator of mcp_ref fetches a network ``$ref`` (2026-07-28/basic/index
#ref-resolution.1): a tool's published ``outputSchema`` checked by the client core,
the server's hand-written schemas.  ``urllib.request.urlopen`` (what jsonschema's own
retrieval would call) is replaced by a recorder; no socket is opened."""

from __future__ import annotations

import urllib.request
from typing import Any

import pytest

from mcp_ref import types as t
from mcp_ref._output_schema import OutputSchemaError, OutputSchemas

REMOTE = {"type": "object", "properties": {"a": {"$ref": "http://127.0.0.1:9/a.json"}}}


@pytest.mark.spec("2026-07-28/basic/index#ref-resolution.1")
def test_a_peers_output_schema_never_makes_the_client_fetch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fetched: list[Any] = []
    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **kw: fetched.append(a))
    schemas = OutputSchemas()
    tool = t.Tool(name="r", input_schema={"type": "object"}, output_schema=REMOTE)
    schemas.remember([tool])
    result = t.CallToolResult(content=[], structured_content={"a": 1})
    with pytest.raises(OutputSchemaError, match="cannot check it"):
        schemas.check("r", result)
    assert fetched == []

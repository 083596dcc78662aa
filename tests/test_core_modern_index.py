"""The base protocol's rules of 2026-07-28 (basic/index) that the client core and the
request reader keep, without I/O: error codes given no meaning they were not defined
with, and the values at reserved ``_meta`` keys read, never assumed.
Page: 2026-07-28/basic/index."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_ref import McpError, NoAnswerError
from mcp_ref._client import probe_era, result_of
from mcp_ref._modern import RequestContext, read_request_meta
from mcp_ref.events import ErrorResponse

spec = pytest.mark.spec

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


@spec("2026-07-28/basic/index#error-codes.2")
@pytest.mark.parametrize("code", [-32000, -32001, -32010, -32019])
def test_a_legacy_range_code_is_the_servers_error_and_nothing_more(code: int) -> None:
    with pytest.raises(McpError) as exc:
        result_of(ErrorResponse(id=1, code=code, message="m", data={"x": 1}))
    assert type(exc.value) is McpError and not isinstance(exc.value, NoAnswerError)
    assert (exc.value.code, exc.value.message, exc.value.data) == (code, "m", {"x": 1})
    assert probe_era(exc.value) == "legacy"  # says nothing of the server's era


@spec("2026-07-28/basic/index#_meta.1")
@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("io.modelcontextprotocol/clientInfo", "c 1"),
        ("io.modelcontextprotocol/clientInfo", {"name": 7}),
        ("io.modelcontextprotocol/clientCapabilities", ["sampling"]),
        ("io.modelcontextprotocol/clientCapabilities", None),
        ("io.modelcontextprotocol/logLevel", "loud"),
        ("io.modelcontextprotocol/protocolVersion", 20260728),
    ],
)
def test_values_at_reserved_keys_are_read_never_assumed(key: str, value: Any) -> None:
    got = read_request_meta({"_meta": {**META, key: value}}, request_id=3)
    assert isinstance(got, ErrorResponse) and got.code == -32602 and got.id == 3
    assert "_meta" in got.message
    # A reserved key no rule here reads is left alone, whatever it holds.
    other = {**META, "io.modelcontextprotocol/future": {"anything": [1, None]}}
    assert isinstance(read_request_meta({"_meta": other}, request_id=3), RequestContext)

"""The Streamable HTTP client core in the modern era (2026-07-28), without I/O: the
headers mirroring a request's body, the ``x-mcp-header`` tool definitions, and the
modern errors of a ``400``.  Page: 2026-07-28/basic/transports/streamable-http (request
metadata, backward compatibility)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_ref import CLIENT, Connection, Request
from mcp_ref import types as t
from mcp_ref._http_client import HttpClientCore
from mcp_ref._http_client_modern import (
    ToolHeaders,
    encode_header_value,
    header_annotations,
    request_headers,
)
from mcp_ref._jsonrpc import encode
from mcp_ref._modern import decode_header_value

spec = pytest.mark.spec
URL = "http://127.0.0.1:8000/mcp"


def _modern_bytes(rid: int, method: str, params: Any = None) -> bytes:
    conn = Connection(CLIENT, era="modern", newline_framing=False)
    return conn.send(Request(id=rid, method=method, params=params))


def _headers(core: HttpClientCore, body: bytes) -> dict[bytes, bytes]:
    got = core.headers(b"POST", body=body)
    names = [n for n, _ in got]
    assert len(names) == len(set(names)), got  # each header once
    return dict(got)


@spec("2026-07-28/basic/transports/streamable-http#value-encoding.2")
@pytest.mark.parametrize(
    ("value", "plain"),
    [
        ("us-west1", True),
        ("us west 1", True),
        ("", True),
        ("Hello, 世界", False),
        (" padded ", False),
        ("line1\nline2", False),
        ("line1\r\nline2", False),
        ("\tindented", False),
        ("trailing ", False),
    ],
)
def test_values_are_plain_or_base64_and_read_back(value: str, plain: bool) -> None:
    encoded = encode_header_value(value)
    assert (encoded == value) is plain
    assert encoded.isascii() and "\n" not in encoded and "\r" not in encoded
    assert decode_header_value(encoded) == value


@spec("2026-07-28/basic/transports/streamable-http#value-encoding.7")
def test_a_value_like_the_sentinel_is_encoded() -> None:
    encoded = encode_header_value("=?base64?literal?=")
    assert encoded == "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="


@spec(
    "2026-07-28/basic/transports/streamable-http#protocol-version-header.1",
    "2026-07-28/basic/transports/streamable-http#protocol-version-header.2",
    "2026-07-28/basic/transports/streamable-http#standard-request-headers.1",
    "2026-07-28/basic/transports/streamable-http#standard-request-headers.2",
    "2026-07-28/basic/transports/streamable-http#sending-messages.4",
)
def test_a_modern_request_mirrors_its_body_in_headers() -> None:
    core = HttpClientCore(URL)
    body = _modern_bytes(1, "tools/call", t.CallToolRequestParams(name="get_weather"))
    got = _headers(core, body)
    assert got[b"mcp-protocol-version"] == b"2026-07-28"
    assert got[b"mcp-method"] == b"tools/call"
    assert got[b"mcp-name"] == b"get_weather"
    assert b"mcp-session-id" not in got
    got = _headers(
        core, _modern_bytes(2, "resources/read", t.ReadResourceRequestParams(uri="file:///é"))
    )
    assert decode_header_value(got[b"mcp-name"].decode()) == "file:///é"
    got = _headers(core, _modern_bytes(3, "tools/list"))
    assert got[b"mcp-method"] == b"tools/list" and b"mcp-name" not in got
    # a notification of the modern session names the version too
    note = encode(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}
    )
    assert _headers(core, note)[b"mcp-protocol-version"] == b"2026-07-28"


def test_a_handshake_request_gets_none_of_them() -> None:
    core = HttpClientCore(URL)
    conn = Connection(CLIENT, newline_framing=False)
    init = t.InitializeRequestParams(
        protocol_version="2025-11-25",
        capabilities=t.ClientCapabilities(),
        client_info=t.Implementation(name="c", version="1"),
    )
    got = _headers(core, conn.send(Request(id=0, method="initialize", params=init)))
    assert b"mcp-method" not in got and b"mcp-protocol-version" not in got


def _tool(name: str, properties: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object", "properties": properties, **more}}


@spec(
    "2026-07-28/basic/transports/streamable-http#schema-extension.1",
    "2026-07-28/basic/transports/streamable-http#schema-extension.4",
    "2026-07-28/basic/transports/streamable-http#schema-extension.5",
    "2026-07-28/basic/transports/streamable-http#schema-extension.7",
    "2026-07-28/basic/transports/streamable-http#schema-extension.10",
    "2026-07-28/server/tools#x-mcp-header.9",
)
def test_invalid_annotations_drop_the_tool_from_the_list() -> None:
    tools = [
        _tool("ok", {"region": {"type": "string", "x-mcp-header": "Region"}}),
        _tool("empty", {"v": {"type": "string", "x-mcp-header": ""}}),
        _tool("space", {"v": {"type": "string", "x-mcp-header": "A B"}}),
        _tool("number", {"v": {"type": "number", "x-mcp-header": "N"}}),
        _tool("object", {"v": {"type": "object", "x-mcp-header": "O"}}),
        _tool(
            "twice",
            {
                "a": {"type": "string", "x-mcp-header": "MyField"},
                "b": {"type": "string", "x-mcp-header": "myfield"},
            },
        ),
        _tool(
            "in-items",
            {"v": {"type": "array", "items": {"type": "string", "x-mcp-header": "I"}}},
        ),
        _tool(
            "in-anyof", {}, anyOf=[{"properties": {"v": {"type": "string", "x-mcp-header": "V"}}}]
        ),
        _tool(
            "nested",
            {
                "outer": {
                    "type": "object",
                    "properties": {"id": {"type": "integer", "x-mcp-header": "Id"}},
                }
            },
        ),
        _tool("named-like-it", {"x-mcp-header": {"type": "string"}}),
    ]
    headers = ToolHeaders()
    kept = headers.filter_result({"tools": tools, "resultType": "complete"})
    assert kept is not None and kept["resultType"] == "complete"
    assert [tool["name"] for tool in kept["tools"]] == ["ok", "nested", "named-like-it"]
    assert header_annotations(tools[8]["inputSchema"]) == [(("outer", "id"), "Id")]
    assert headers.filter_result({"tools": tools[:1]}) is None  # nothing dropped


@spec(
    "2026-07-28/basic/transports/streamable-http#client-behavior.1",
    "2026-07-28/basic/transports/streamable-http#custom-headers-from-tool-parameters.3",
    "2026-07-28/basic/transports/streamable-http#schema-extension.6",
    "2026-07-28/basic/transports/streamable-http#value-encoding.1",
)
def test_annotated_arguments_become_mcp_param_headers() -> None:
    headers = ToolHeaders()
    schema = {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "priority": {"type": "integer", "x-mcp-header": "Priority"},
        "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
        "text": {"type": "string", "x-mcp-header": "Text"},
        "big": {"type": "integer", "x-mcp-header": "Big"},
        "query": {"type": "string"},
    }
    headers.filter_result({"tools": [_tool("sql", schema)]})
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "sql",
            "arguments": {
                "region": "us-west1",
                "priority": 42,
                "verbose": None,
                "text": " padded ",
                "big": 2**60,
                "query": "SELECT 1",
            },
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"},
        },
    }
    got = dict(request_headers(message, headers, None))
    assert got[b"mcp-param-region"] == b"us-west1"
    assert got[b"mcp-param-priority"] == b"42"
    assert got[b"mcp-param-text"] == encode_header_value(" padded ").encode()
    assert b"mcp-param-verbose" not in got  # null: omitted
    assert b"mcp-param-big" not in got  # outside JavaScript's safe integers
    assert b"mcp-param-query" not in got  # not annotated


@spec(
    "2026-07-28/basic/transports/streamable-http#schema-extension.9",
    "2026-07-28/basic/transports/streamable-http#custom-headers-from-tool-parameters.2",
    "2026-07-28/server/tools#x-mcp-header.8",
)
def test_the_core_filters_the_answer_to_a_modern_tools_list() -> None:
    core = HttpClientCore(URL)
    body = _modern_bytes(5, "tools/list")
    out = core.outgoing(body)
    tools = [
        _tool("ok", {"r": {"type": "string", "x-mcp-header": "R"}}),
        _tool("bad", {"r": {"type": "number", "x-mcp-header": "R"}}),
    ]
    answer = encode({"jsonrpc": "2.0", "id": 5, "result": {"tools": tools}})
    seen = core.modern.inbound(answer, out.key)
    assert [tool["name"] for tool in json.loads(seen)["result"]["tools"]] == ["ok"]
    assert core.modern.inbound(answer, out.key) == answer  # once: the key is forgotten


@spec("2026-07-28/basic/transports/streamable-http#backward-compatibility.2")
def test_a_400_with_a_modern_error_reaches_the_caller_whole() -> None:
    core = HttpClientCore(URL)
    out = core.outgoing(_modern_bytes(9, "server/discover"))
    error = {"code": -32022, "message": "Unsupported", "data": {"supported": ["2026-07-28"]}}
    core.modern.refused(out.key, encode({"jsonrpc": "2.0", "id": None, "error": error}))
    reply = json.loads(core.failure(9, "HTTP 400: Unsupported"))
    assert reply == {"jsonrpc": "2.0", "id": 9, "error": error}
    # any other error body: -32603, as before (the probe then falls back)
    core.modern.refused(
        out.key, encode({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "x"}})
    )
    assert json.loads(core.failure(9, "HTTP 400: x"))["error"]["code"] == -32603


def test_a_modern_cancellation_is_not_posted() -> None:
    """2026-07-28/basic/patterns/cancellation (transport-specific): on Streamable HTTP
    closing the request's stream cancels it; no notifications/cancelled is expected.
    A handshake session still POSTs it (2025-06-18)."""
    from mcp_ref._http_client_flows import MessageFlow
    from mcp_ref._http_client_steps import Done, HttpRequest

    cancel = encode(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    )
    core = HttpClientCore(URL)
    assert isinstance(MessageFlow(core, cancel).start(), HttpRequest)  # no modern request yet
    core.headers(b"POST", body=_modern_bytes(1, "tools/list"))
    assert isinstance(MessageFlow(core, cancel).start(), Done)
    other = encode({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}})
    assert isinstance(MessageFlow(core, other).start(), HttpRequest)


@spec(
    "2026-07-28/basic/transports/streamable-http#sending-messages.1",
    "2026-07-28/basic/transports/streamable-http#sending-messages.2",
    "2026-07-28/basic/transports/streamable-http#sending-messages.3",
    "2026-07-28/basic/transports/streamable-http#sending-messages.11",
)
def test_each_modern_request_is_a_post_of_its_own_and_either_answer_is_read() -> None:
    from mcp_ref._http_client_flows import RequestFlow
    from mcp_ref._http_client_steps import Done

    from .test_core_http_client_flows import JSON, SSE, Answer, run

    core = HttpClientCore(URL)
    posts = []
    for rid, kind in ((1, JSON), (2, SSE)):
        body = _modern_bytes(rid, "tools/list")
        answer = encode({"jsonrpc": "2.0", "id": rid, "result": {"tools": []}})
        chunks = [answer] if kind is JSON else [b"data: " + answer + b"\n\n"]
        reply = Answer(200, kind, chunks)
        got = run(RequestFlow(core, core.outgoing(body), body), lambda r, reply=reply: reply)
        assert got.done == Done() and got.delivered == [answer]
        (post,) = got.requests
        posts.append(post)
        assert (post.method, post.target, post.body) == (b"POST", "/mcp", body)
        accept = dict(post.headers)[b"accept"].decode()
        assert {"application/json", "text/event-stream"} <= {
            part.strip() for part in accept.split(",")
        }
    assert posts[0] is not posts[1]

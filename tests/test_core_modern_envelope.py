"""The JSON-RPC envelope of a modern (2026-07-28) server's answers: a result or an
error carries the id of the request it answers (2026-07-28/basic/index#result-responses,
#error-responses).  A dual-era server Connection, bytes in and out; no I/O."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_ref import SERVER, Connection, ErrorResponse, Response
from mcp_ref import types as t
from mcp_ref._jsonrpc import encode
from mcp_ref._modern import PROTOCOL_VERSION_KEY

from ._pair import deliver

META = {PROTOCOL_VERSION_KEY: "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def _server_with(*ids: Any) -> Connection:
    server = Connection(SERVER)
    for rid in ids:
        message = {"jsonrpc": "2.0", "id": rid, "method": "tools/list", "params": {"_meta": META}}
        (req,) = deliver(encode(message) + b"\n", server)
        assert req.id == rid
    return server


@pytest.mark.spec(
    "2026-07-28/basic/index#result-responses.1", "2026-07-28/basic/index#result-responses.2"
)
@pytest.mark.parametrize("rid", ["abc", 7, 0])
def test_a_result_carries_the_requests_id_and_a_result(rid: Any) -> None:
    server = _server_with("other", rid)
    result = t.ListToolsResult(tools=[], ttl_ms=0, cache_scope="public")
    wire = json.loads(server.send(Response(id=rid, result=result)))
    assert wire["id"] == rid and type(wire["id"]) is type(rid)
    assert wire["result"]["tools"] == [] and "error" not in wire


@pytest.mark.spec(
    "2026-07-28/basic/index#error-responses.1", "2026-07-28/basic/index#error-responses.2"
)
@pytest.mark.parametrize("rid", ["abc", 7])
def test_an_error_carries_the_requests_id_a_code_and_a_message(rid: Any) -> None:
    server = _server_with(rid)
    wire = json.loads(server.send(ErrorResponse(id=rid, code=-32603, message="broke")))
    assert wire["id"] == rid and "result" not in wire
    assert wire["error"] == {"code": -32603, "message": "broke"}


@pytest.mark.spec("2026-07-28/basic/index#requests.3")
def test_a_modern_client_never_reuses_the_id_of_a_request_in_flight() -> None:
    from mcp_ref import CLIENT, LocalProtocolError, Request

    client = Connection(CLIENT, era="modern", client_info=t.Implementation(name="c", version="1"))
    assert client.send(Request(id=5, method="tools/list"))
    with pytest.raises(LocalProtocolError):
        client.send(Request(id=5, method="prompts/list"))
    assert client.send(Request(id=6, method="prompts/list"))

"""The base protocol's envelopes in a 2025-11-25 session, without I/O: a response
carries its request's id, and a result or an error with a code and a message.
Page: 2025-11-25/basic/index."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_ref import ErrorResponse, Request, Response
from mcp_ref import types as t

from ._pair import deliver, initialized_pair

spec = pytest.mark.spec


@spec(
    "2025-11-25/basic/index#result-responses.1",
    "2025-11-25/basic/index#result-responses.2",
    "2025-11-25/basic/index#error-responses.1",
    "2025-11-25/basic/index#error-responses.2",
)
@pytest.mark.parametrize("rid", ["abc", 7, -1])
def test_responses_carry_the_requests_id_and_a_result_or_an_error(rid: Any) -> None:
    client, server = initialized_pair(version="2025-11-25")
    assert server.protocol_version == "2025-11-25"
    for answer in ("result", "error"):
        (req,) = deliver(client.send(Request(id=rid, method="tools/list")), server)
        assert req.id == rid
        if answer == "result":
            data = server.send(Response(id=rid, result=t.ListToolsResult(tools=[])))
        else:
            data = server.send(ErrorResponse(id=rid, code=-32603, message="broke"))
        wire = json.loads(data)
        assert wire["id"] == rid and type(wire["id"]) is type(rid)
        if answer == "result":
            assert wire["result"] == {"tools": []} and "error" not in wire
        else:
            assert wire["error"] == {"code": -32603, "message": "broke"} and "result" not in wire
        deliver(data, client)
        rid = f"{rid}-again" if isinstance(rid, str) else rid + 100

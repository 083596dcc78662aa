"""Progress in the modern era (2026-07-28), without I/O: the token a client puts in a
request's ``_meta`` beside the era's keys.  Page: 2026-07-28/basic/patterns/progress."""

from __future__ import annotations

import json

import pytest

from mcp_ref import CLIENT, Connection, LocalProtocolError, Request
from mcp_ref import types as t
from mcp_ref._client import with_progress_token
from mcp_ref._modern import PROTOCOL_VERSION_KEY

spec = pytest.mark.spec


@spec("2026-07-28/basic/patterns/progress#progress-flow.2")
def test_a_modern_clients_tokens_are_unique_across_its_active_requests() -> None:
    conn = Connection(CLIENT, era="modern", newline_framing=False)
    tokens = []
    for rid in (1, 2, "3"):
        params = with_progress_token("tools/call", t.CallToolRequestParams(name="x"), rid)
        sent = json.loads(conn.send(Request(id=rid, method="tools/call", params=params)))
        assert sent["params"]["_meta"][PROTOCOL_VERSION_KEY] == "2026-07-28"
        tokens.append(sent["params"]["_meta"]["progressToken"])
    assert tokens == [1, 2, "3"]  # each request's own id: unique while it is active
    reused = t.CallToolRequestParams(name="x", meta={"progressToken": 2})
    with pytest.raises(LocalProtocolError, match="in use"):
        conn.send(Request(id=4, method="tools/call", params=reused))

"""Pagination as a modern (2026-07-28) client walks it, without I/O: cursors are opaque,
and only a null ``nextCursor`` ends the list.  Page: 2026-07-28/server/utilities/pagination."""

from __future__ import annotations

import json

import pytest

from mcp_ref import CLIENT, Connection, Request
from mcp_ref import types as t
from mcp_ref._client import ListWalk
from mcp_ref._jsonrpc import encode
from mcp_ref.events import Response

spec = pytest.mark.spec


@spec(
    "2026-07-28/server/utilities/pagination#implementation-guidelines.3",
    "2026-07-28/server/utilities/pagination#implementation-guidelines.4",
)
def test_an_empty_cursor_is_a_cursor_and_only_null_ends_the_list() -> None:
    conn = Connection(CLIENT, era="modern", newline_framing=False)
    pages = {None: ("a", ""), "": ("b", "  odd cursor ="), "  odd cursor =": ("c", None)}
    walk = ListWalk("tools/list")
    sent_cursors = []
    rid = 0
    while (params := walk.next_params()) is not ListWalk.DONE:
        rid += 1
        wire = json.loads(conn.send(Request(id=rid, method="tools/list", params=params)))
        cursor = wire["params"].get("cursor")
        sent_cursors.append(cursor)
        name, nxt = pages[cursor]
        result = {"tools": [{"name": name, "inputSchema": {"type": "object"}}], "ttlMs": 0}
        result |= {"cacheScope": "private", "resultType": "complete"}
        if nxt is not None:
            result["nextCursor"] = nxt
        conn.receive_message(encode({"jsonrpc": "2.0", "id": rid, "result": result}))
        event = conn.next_event()
        assert isinstance(event, Response), event
        walk.add(event.result)
    assert sent_cursors == [None, "", "  odd cursor ="]  # each sent back exactly as given
    assert [tool.name for tool in walk.items] == ["a", "b", "c"]
    assert isinstance(walk.items[0], t.Tool)

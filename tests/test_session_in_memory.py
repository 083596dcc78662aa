"""The whole core, message by message, between two in-memory connections: initialize,
tools/list with pagination, a tools/call with progress, a cancelled request and a
timed-out request."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_ref import (
    CLIENT,
    SERVER,
    Connection,
    Notification,
    Progress,
    Request,
    RequestCancelled,
    RequestTimedOut,
    RequestTimeout,
    Response,
    State,
)
from mcp_ref import types as t
from mcp_ref._pagination import PageWalker, paginate

from ._pair import deliver, events, init_request, init_result

spec = pytest.mark.spec

TOOLS = [t.Tool(name=f"tool{i}", input_schema={"type": "object"}) for i in range(5)]


def wire(data: bytes) -> Any:
    return json.loads(data)


@spec(
    "2025-06-18/basic#overview.1",
    "2025-06-18/server/utilities/pagination#implementation-guidelines.3",
    "2025-06-18/basic/utilities/cancellation#behavior-requirements.3",
    "2025-06-18/basic/lifecycle#timeouts.2",
)
def test_full_session() -> None:
    client, server = Connection(CLIENT), Connection(SERVER)

    # initialize
    data = client.send(init_request(rid=client.next_request_id()))
    assert wire(data)["id"] == 1
    (req,) = deliver(data, server)
    data = server.send(Response(id=req.id, result=init_result()))
    assert wire(data)["result"]["protocolVersion"] == "2025-11-25"
    deliver(data, client)
    deliver(client.send(Notification(method="notifications/initialized")), server)
    assert client.state is server.state is State.OPERATING

    # tools/list, two pages
    walker = PageWalker()
    pages = 0
    while (cursor := walker.next_cursor()) is not PageWalker.DONE:
        params = t.PaginatedRequestParams(cursor=cursor) if cursor else None
        data = client.send(Request(id=client.next_request_id(), method="tools/list", params=params))
        assert ("cursor" in wire(data).get("params", {})) == (cursor is not None)
        (req,) = deliver(data, server)
        page, nxt = paginate(
            TOOLS, req.params.cursor if req.params else None, tag="tools", page_size=3
        )
        data = server.send(
            Response(id=req.id, result=t.ListToolsResult(tools=page, next_cursor=nxt))
        )
        assert ("nextCursor" in wire(data)["result"]) == (nxt is not None)
        (resp,) = deliver(data, client)
        walker.add_page(resp.result.tools, resp.result.next_cursor)
        pages += 1
    assert pages == 2 and [x.name for x in walker.items] == [x.name for x in TOOLS]

    # tools/call with progress
    call_id = client.next_request_id()
    data = client.send(
        Request(
            id=call_id,
            method="tools/call",
            params=t.CallToolRequestParams(
                name="tool1", arguments={"n": 2}, meta={"progressToken": "p1"}
            ),
        )
    )
    (req,) = deliver(data, server)
    assert req.params.arguments == {"n": 2}
    for step in (1, 2):
        data = server.send(
            Notification(
                method="notifications/progress",
                params=t.ProgressNotificationParams(progress_token="p1", progress=step, total=2),
            )
        )
        (ev,) = deliver(data, client)
        assert ev == Progress(request_id=call_id, progress_token="p1", progress=step, total=2)
    data = server.send(
        Response(id=req.id, result=t.CallToolResult(content=[t.TextContent(text="done")]))
    )
    assert wire(data)["result"] == {"content": [{"type": "text", "text": "done"}]}
    (resp,) = deliver(data, client)
    assert resp.result.content[0].text == "done"

    # a cancelled request
    cid = client.next_request_id()
    (req,) = deliver(
        client.send(
            Request(id=cid, method="tools/call", params=t.CallToolRequestParams(name="slow"))
        ),
        server,
    )
    data = client.send(
        Notification(
            method="notifications/cancelled", params=t.CancelledNotificationParams(request_id=cid)
        )
    )
    assert deliver(data, server) == [RequestCancelled(id=cid)]
    assert server.send(Response(id=cid, result=t.CallToolResult(content=[]))) == b""

    # a timed-out request
    tid = client.next_request_id()
    deliver(
        client.send(Request(id=tid, method="ping"), now=10.0, timeout=RequestTimeout(seconds=2)),
        server,
    )
    assert client.next_deadline() == 12.0
    (data,) = client.handle_timeout(12.5)
    assert wire(data)["params"]["requestId"] == tid
    assert events(client) == [RequestTimedOut(id=tid, method="ping", elapsed=2.5)]
    assert deliver(data, server) == [RequestCancelled(id=tid, reason="timed out")]
    assert client.requests_in_flight() == ([], [])
    assert server.requests_in_flight() == ([], [])

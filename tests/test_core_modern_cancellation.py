"""Cancellation in the modern era (2026-07-28/basic/patterns/cancellation), on a modern
client Connection and a dual-era server Connection talking through bytes: what may be
cancelled, and the races between a cancellation and the answer it crosses.  No I/O."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_ref import (
    CLIENT,
    SERVER,
    Connection,
    LocalProtocolError,
    Notification,
    Request,
    Response,
)
from mcp_ref import types as t

from ._pair import deliver, events

P = "2026-07-28/basic/patterns/cancellation#"
RESULT = t.ListToolsResult(tools=[], ttl_ms=0, cache_scope="public")


def _pair() -> tuple[Connection, Connection]:
    client = Connection(CLIENT, era="modern", client_info=t.Implementation(name="c", version="1"))
    return client, Connection(SERVER)


def _cancel(rid: Any) -> Notification:
    return Notification(
        method="notifications/cancelled", params=t.CancelledNotificationParams(request_id=rid)
    )


@pytest.mark.spec(P + "behavior-requirements.1")
def test_a_client_cancels_only_its_requests_in_flight() -> None:
    client, server = _pair()
    (req,) = deliver(client.send(Request(id=1, method="tools/list")), server)
    deliver(server.send(Response(id=1, result=RESULT)), client)
    assert client.send(_cancel(1)) == b""  # answered: nothing to cancel
    with pytest.raises(LocalProtocolError, match="no such request"):
        client.send(_cancel(42))  # never issued
    deliver(client.send(Request(id=2, method="tools/list")), server)
    assert client.send(_cancel(2)) != b""  # in flight: sent


@pytest.mark.spec(P + "timing-considerations.1")
def test_a_cancellation_crossing_the_answer_is_harmless_on_both_sides() -> None:
    client, server = _pair()
    deliver(client.send(Request(id=1, method="tools/list")), server)
    answer = server.send(Response(id=1, result=RESULT))  # written...
    late_cancel = client.send(_cancel(1))  # ...while the client gives up
    assert late_cancel != b""
    assert deliver(late_cancel, server) == []  # the server ignores it
    assert deliver(answer, client) == []  # the client drops the late answer
    # Both go on.
    deliver(client.send(Request(id=2, method="tools/list")), server)
    (ev,) = deliver(server.send(Response(id=2, result=RESULT)), client)
    assert ev.id == 2
    assert events(client) == []

"""2025-06-18/basic/lifecycle#timeouts: per-request timeouts, tested without a clock."""

from __future__ import annotations

import json

import pytest

from mcp_ref import (
    LocalProtocolError,
    Notification,
    Request,
    RequestTimedOut,
    RequestTimeout,
    Response,
)
from mcp_ref import types as t

from ._pair import deliver, events, initialized_pair

spec = pytest.mark.spec


def call(rid: object, token: object = None) -> Request:
    meta = {"progressToken": token} if token is not None else None
    return Request(
        id=rid, method="tools/call", params=t.CallToolRequestParams(name="slow", meta=meta)
    )


@spec(
    "2025-06-18/basic/lifecycle#timeouts.1",
    "2025-06-18/basic/lifecycle#timeouts.2",
    "2025-06-18/basic/lifecycle#timeouts.3",
    "2025-06-18/basic/lifecycle#error-handling.1",
)
def test_timed_out_request_message_by_message() -> None:
    client, server = initialized_pair()
    deliver(client.send(call(1), now=100.0, timeout=RequestTimeout(seconds=5)), server)
    assert client.next_deadline() == 105.0
    assert client.handle_timeout(104.9) == []
    (data,) = client.handle_timeout(105.0)
    assert json.loads(data) == {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "timed out"},
    }
    assert events(client) == [RequestTimedOut(id=1, method="tools/call", elapsed=5.0)]
    assert client.next_deadline() is None
    (ev,) = deliver(data, server)
    assert ev.id == 1
    # A late response is dropped.
    assert deliver(b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}\n', client) == []


def test_default_timeout_and_answered_requests_do_not_expire() -> None:
    client, server = initialized_pair()
    client.default_timeout = RequestTimeout(seconds=1)
    deliver(client.send(Request(id=1, method="ping"), now=0.0), server)
    deliver(server.send(Response(id=1, result=t.EmptyResult())), client)
    assert client.next_deadline() is None
    assert client.handle_timeout(50.0) == [] and events(client) == []
    with pytest.raises(LocalProtocolError, match="now"):
        client.send(Request(id=2, method="ping"))
    client.send(Request(id=3, method="ping"), timeout=None)


@spec("2025-06-18/basic/lifecycle#timeouts.4", "2025-06-18/basic/lifecycle#timeouts.5")
def test_progress_resets_the_clock_up_to_the_maximum() -> None:
    client, server = initialized_pair()
    policy = RequestTimeout(seconds=10, reset_on_progress=True, maximum=25)
    deliver(client.send(call(1, "p"), now=0.0, timeout=policy), server)
    n = 0.0

    def tick() -> None:
        nonlocal n
        n += 1
        deliver(
            server.send(
                Notification(
                    method="notifications/progress",
                    params=t.ProgressNotificationParams(progress_token="p", progress=n),
                )
            ),
            client,
        )

    tick()  # progress before the first deadline
    assert client.handle_timeout(10.0) == []  # reset: new deadline 20
    assert client.next_deadline() == 20.0
    tick()
    assert client.handle_timeout(20.0) == []  # reset, capped at the hard maximum 25
    assert client.next_deadline() == 25.0
    tick()
    assert len(client.handle_timeout(25.0)) == 1  # the maximum holds despite progress
    assert [type(e) for e in events(client)] == [RequestTimedOut]


def test_no_progress_no_reset() -> None:
    client, server = initialized_pair()
    policy = RequestTimeout(seconds=10, reset_on_progress=True)
    deliver(client.send(call(1, "p"), now=0.0, timeout=policy), server)
    assert len(client.handle_timeout(10.0)) == 1


def test_initialize_timeout_sends_no_cancel() -> None:
    from mcp_ref import CLIENT, Connection

    from ._pair import init_request

    client = Connection(CLIENT)
    client.send(init_request(), now=0.0, timeout=RequestTimeout(seconds=1))
    assert client.handle_timeout(1.0) == []
    (ev,) = events(client)
    assert isinstance(ev, RequestTimedOut) and ev.method == "initialize"


def test_timeout_policy_validation() -> None:
    with pytest.raises(ValueError):
        RequestTimeout(seconds=0)
    with pytest.raises(ValueError):
        RequestTimeout(seconds=5, maximum=1)
    assert RequestTimeout(seconds=2, reset_on_progress=True).hard_limit == 20

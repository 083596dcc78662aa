"""JSON-RPC batches (protocol 2025-03-26) read from a byte stream: every item is handled,
and the replies go back as one array once the last is sent (JSON-RPC 2.0 section 6).
The core is driven by hand; one test runs the trio session over an in-memory stream."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing

from mcp_ref import (
    NEED_DATA,
    SERVER,
    ErrorResponse,
    RemoteProtocolError,
    Request,
    RequestCancelled,
    Response,
)
from mcp_ref import types as t
from mcp_ref._errors import INVALID_PARAMS, INVALID_REQUEST
from mcp_ref.trio import StreamChannel, open_session

from ._pair import initialized_pair

VERSION = "2025-03-26"


def ping(rid: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "ping"})


def batch(*items: str) -> bytes:
    return ("[" + ",".join(items) + "]\n").encode()


def test_replies_to_a_batch_go_back_as_one_array_in_the_order_sent() -> None:
    _, server = initialized_pair(VERSION)
    note = '{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}'
    server.receive_data(batch(ping(1), note, ping("b")))
    got = [server.next_event() for _ in range(3)]
    assert [type(e).__name__ for e in got] == ["Request", "Notification", "Request"]
    assert server.next_event() is NEED_DATA
    assert server.send(Response(id="b", result=t.EmptyResult())) == b""  # held
    out = server.send(Response(id=1, result=t.EmptyResult()))
    assert out.endswith(b"\n") and out.count(b"\n") == 1
    assert json.loads(out) == [
        {"jsonrpc": "2.0", "id": "b", "result": {}},
        {"jsonrpc": "2.0", "id": 1, "result": {}},
    ]
    # Outside a batch, replies go out one by one again.
    server.receive_data((ping(2) + "\n").encode())
    assert server.next_event().id == 2
    assert json.loads(server.send(Response(id=2, result=t.EmptyResult())))["id"] == 2


def test_a_refused_item_is_raised_in_its_turn_and_its_error_joins_the_array() -> None:
    _, server = initialized_pair(VERSION)
    server.receive_data(batch(ping(1), "5", '{"jsonrpc":"2.0","id":7,"method":"no/such"}'))
    first = server.next_event()
    assert isinstance(first, Request) and first.id == 1
    hints = []
    for _ in range(2):
        with pytest.raises(RemoteProtocolError) as exc:
            server.next_event()
        assert exc.value.event_hint is not None
        hints.append(exc.value.event_hint)
    assert server.next_event() is NEED_DATA
    assert [h.id for h in hints] == [None, 7]
    assert hints[0].code == INVALID_REQUEST
    assert server.send(hints[0]) == b""
    assert server.send(hints[1]) == b""
    array = json.loads(server.send(Response(id=1, result=t.EmptyResult())))
    assert [m["id"] for m in array] == [None, 7, 1]
    assert [m["error"]["code"] for m in array[:2]] == [INVALID_REQUEST, -32601]


def test_a_batch_owed_nothing_gets_nothing() -> None:
    _, server = initialized_pair(VERSION)
    note = '{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}'
    server.receive_data(batch(note, note))
    assert len([server.next_event(), server.next_event()]) == 2
    assert server.next_event() is NEED_DATA
    assert not server.has_data_to_send and server.data_to_send() == b""


def test_cancelling_the_last_request_of_a_batch_releases_the_others() -> None:
    client, server = initialized_pair(VERSION)
    server.receive_data(batch(ping(1), ping(2)))
    assert [e.id for e in (server.next_event(), server.next_event())] == [1, 2]
    assert server.send(Response(id=1, result=t.EmptyResult())) == b""
    cancel = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 2, "reason": "enough"},
    }
    server.receive_data((json.dumps(cancel) + "\n").encode())
    ev = server.next_event()
    assert isinstance(ev, RequestCancelled) and ev.id == 2
    assert server.has_data_to_send
    assert json.loads(server.data_to_send()) == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
    assert server.data_to_send() == b""
    # A late answer to the cancelled request is not sent.
    assert server.send(Response(id=2, result=t.EmptyResult())) == b""


def test_a_cancelled_request_in_a_batch_is_left_out_of_the_array() -> None:
    _, server = initialized_pair(VERSION)
    server.receive_data(batch(ping(1), ping(2)))
    server.next_event(), server.next_event()
    cancel = '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}'
    server.receive_data((cancel + "\n").encode())
    assert isinstance(server.next_event(), RequestCancelled)
    assert not server.has_data_to_send  # request 2 is still owed
    assert server.send(ErrorResponse(id=1, code=-1, message="late")) == b""
    out = server.send(Response(id=2, result=t.EmptyResult()))
    assert json.loads(out) == [{"jsonrpc": "2.0", "id": 2, "result": {}}]


class Echo:
    async def handle_request(self, ctx: Any) -> Any:
        if ctx.method == "initialize":
            return t.InitializeResult(
                protocol_version=VERSION,
                capabilities=t.ServerCapabilities(tools={}),
                server_info=t.Implementation(name="s", version="1"),
            )
        await trio.sleep(0.01 * ctx.params.arguments["n"])  # answers out of order
        return t.CallToolResult(content=[t.TextContent(text=str(ctx.params.arguments["n"]))])

    async def handle_notification(self, session: Any, notification: Any) -> None:
        pass


async def test_a_session_on_a_byte_stream_answers_a_batch_with_one_line(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ours, theirs = trio.testing.memory_stream_pair()
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        },
    }

    def call(rid: int, n: int) -> str:
        params = {"name": "echo", "arguments": {"n": n}}
        return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})

    with trio.fail_after(10):
        async with open_session(StreamChannel(ours), SERVER, Echo()):
            await theirs.send_all((json.dumps(init) + "\n").encode())
            await theirs.send_all(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
            await theirs.send_all(batch(call(1, 3), ping(2), call(3, 1)))
            received = b""
            while received.count(b"\n") < 2:
                received += await theirs.receive_some()
    lines = received.splitlines()
    assert json.loads(lines[0])["id"] == 0
    array = json.loads(lines[1])
    assert isinstance(array, list) and sorted(m["id"] for m in array) == [1, 2, 3]
    assert [m["id"] for m in array] == [2, 3, 1]  # in the order they were answered


@pytest.mark.spec("2025-06-18/basic#requests.3")
def test_refusing_a_large_batch_of_reused_ids_leaves_the_genuine_request_open() -> None:
    # Every item reuses the id of a request still in flight: each is refused, and its
    # error reply (id 1 too) must not count as the answer to the genuine request 1,
    # however many refusals are waiting to be sent.
    _, server = initialized_pair(VERSION)
    server.receive_data((ping(1) + "\n").encode())
    assert server.next_event().id == 1
    n = 70
    server.receive_data(batch(*[ping(1)] * n))
    hints = []
    for _ in range(n):
        with pytest.raises(RemoteProtocolError) as exc:
            server.next_event()
        assert exc.value.event_hint is not None and exc.value.event_hint.id == 1
        hints.append(exc.value.event_hint)
    assert server.next_event() is NEED_DATA
    assert all(server.send(hint) == b"" for hint in hints[:-1])
    array = json.loads(server.send(hints[-1]))
    assert len(array) == n and all(m["error"]["code"] == INVALID_REQUEST for m in array)
    assert server.requests_in_flight()[1] == [1]
    out = server.send(Response(id=1, result=t.EmptyResult()))
    assert json.loads(out) == {"jsonrpc": "2.0", "id": 1, "result": {}}


@pytest.mark.spec("2025-06-18/basic#requests.3")
def test_a_refusal_outside_a_batch_stays_out_of_its_array() -> None:
    # A lone message reuses the id of a batch's request still in flight: its error
    # reply goes out alone, and the batch's array still waits for the genuine answer.
    _, server = initialized_pair(VERSION)
    server.receive_data(batch(ping(1), ping(2)))
    assert [e.id for e in (server.next_event(), server.next_event())] == [1, 2]
    server.receive_data((ping(1) + "\n").encode())
    with pytest.raises(RemoteProtocolError) as exc:
        server.next_event()
    hint = exc.value.event_hint
    assert hint is not None and hint.id == 1
    assert json.loads(server.send(hint))["error"]["code"] == INVALID_REQUEST
    assert server.send(Response(id=2, result=t.EmptyResult())) == b""
    array = json.loads(server.send(Response(id=1, result=t.EmptyResult())))
    assert array == [
        {"jsonrpc": "2.0", "id": 2, "result": {}},
        {"jsonrpc": "2.0", "id": 1, "result": {}},
    ]


@pytest.mark.spec("2025-06-18/basic#requests.3")
def test_a_malformed_message_reusing_an_id_in_flight_leaves_that_request_open() -> None:
    # Refused by the JSON-RPC envelope check (params must be structured), with the id
    # of a request still in flight: its error reply answers that request no more than
    # a method-level refusal's does.
    _, server = initialized_pair(VERSION)
    server.receive_data((ping(1) + "\n").encode())
    assert server.next_event().id == 1
    server.receive_data(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":5}\n')
    with pytest.raises(RemoteProtocolError) as exc:
        server.next_event()
    hint = exc.value.event_hint
    assert hint is not None and hint.id == 1
    assert json.loads(server.send(hint))["error"]["code"] == INVALID_PARAMS
    assert server.requests_in_flight()[1] == [1]
    out = server.send(Response(id=1, result=t.EmptyResult()))
    assert json.loads(out) == {"jsonrpc": "2.0", "id": 1, "result": {}}


@pytest.mark.spec("2025-06-18/basic#requests.3")
def test_a_reply_sent_before_an_items_refusal_is_raised_answers_the_request() -> None:
    # The second item reuses the first's id and is refused; until next_event raises
    # that refusal, an error reply with id 1 answers the genuine request 1.
    _, server = initialized_pair(VERSION)
    server.receive_data(batch(ping(1), ping(1)))
    assert server.next_event().id == 1
    assert server.send(ErrorResponse(id=1, code=-1, message="failed")) == b""
    assert server.requests_in_flight()[1] == []
    with pytest.raises(RemoteProtocolError) as exc:
        server.next_event()
    hint = exc.value.event_hint
    assert hint is not None and hint.id == 1
    array = json.loads(server.send(hint))
    assert [m["error"]["code"] for m in array] == [-1, INVALID_REQUEST]

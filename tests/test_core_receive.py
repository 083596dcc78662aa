"""What the core refuses to receive (mcp_ref._receive), refusal by refusal: the message,
the code, and the reply owed (a request's refusal carries the error response to send, a
notification's none), then that the connection goes on.

Source: 2025-06-18/basic (requests, notifications: never answered);
2025-06-18/basic/lifecycle (capabilities, version negotiation); JSON-RPC 2.0 sections 5
and 6 (batches, 2025-03-26).
"""

from __future__ import annotations

from typing import Any

import pytest

from mcp_ref import (
    CLIENT,
    SERVER,
    Connection,
    ErrorResponse,
    RemoteProtocolError,
    Request,
    State,
)
from mcp_ref import types as t

from ._pair import deliver, init_request, initialized_pair


def _refused(conn: Connection, line: str) -> RemoteProtocolError:
    conn.receive_data(line.encode() + b"\n")
    with pytest.raises(RemoteProtocolError) as caught:
        conn.next_event()
    return caught.value


def _reply(err: RemoteProtocolError) -> tuple[Any, int, str] | None:
    hint = err.event_hint
    if hint is None:
        return None
    assert isinstance(hint, ErrorResponse)
    return hint.id, hint.code, hint.message


def _req(rid: Any, method: str, params: str | None = None) -> str:
    tail = "" if params is None else f',"params":{params}'
    rid_json = f'"{rid}"' if isinstance(rid, str) else str(rid)
    return f'{{"jsonrpc":"2.0","id":{rid_json},"method":"{method}"{tail}}}'


def _note(method: str, params: str | None = None) -> str:
    tail = "" if params is None else f',"params":{params}'
    return f'{{"jsonrpc":"2.0","method":"{method}"{tail}}}'


def test_request_refusals_carry_their_reply() -> None:
    client, server = initialized_pair(server_caps=t.ServerCapabilities(), max_requests_in_flight=2)
    cases = [
        (_req(1, "no/such"), -32601, "method not found: no/such"),
        (
            _req(2, "notifications/initialized"),
            -32601,
            "method not found: notifications/initialized",
        ),
        (
            _req(3, "tools/list"),
            -32601,
            "method not available: tools/list needs the server capability tools, "
            "which was not negotiated",
        ),
        (
            _req(4, "initialize", "{}"),
            -32600,
            "server cannot receive initialize in state OPERATING (2025-06-18/basic/lifecycle)",
        ),
        (
            _req(5, "ping", '{"_meta":{"progressToken":1.5}}'),
            -32602,
            "progressToken must be a string or an integer",
        ),
        (
            _req(6, "ping", '{"_meta":[]}'),
            -32602,
            "invalid params for ping: _meta: expected object, got array",
        ),
    ]
    for line, code, message in cases:
        err = _refused(server, line)
        assert (err.message, err.code) == (message, code)
        assert _reply(err) == (err.request_id, code, message)
    deliver(_req(10, "ping", '{"_meta":{"progressToken":"t"}}').encode() + b"\n", server)
    err = _refused(server, _req(11, "ping", '{"_meta":{"progressToken":"t"}}'))
    assert (err.message, err.code) == ("progress token 't' is already in use", -32602)
    err = _refused(server, _req(10, "ping"))
    assert (err.message, err.code) == ("request id 10 was already used", -32600)
    deliver(_req(12, "ping").encode() + b"\n", server)  # two in flight: the bound
    err = _refused(server, _req(13, "ping"))
    assert (err.message, err.code) == ("too many requests in flight", -32603)
    assert _reply(err) == (13, -32603, "too many requests in flight")


def test_a_request_before_initialize_names_the_state() -> None:
    server = Connection(SERVER)
    err = _refused(server, _req(1, "tools/list"))
    assert (
        err.message
        == "server cannot receive request in state PRE_INIT (2025-06-18/basic/lifecycle)"
    )
    assert _reply(err) == (1, -32600, err.message)


def test_notification_refusals_owe_no_reply() -> None:
    client, server = initialized_pair()
    cases = [
        (_note("no/such"), -32601, "unknown notification: no/such"),
        (
            _note("notifications/tools/list_changed"),
            -32601,
            "unknown notification: notifications/tools/list_changed",
        ),
        (
            _note("notifications/progress", "{}"),
            -32602,
            "invalid params for notifications/progress: progress: required field missing",
        ),
        (
            _note("notifications/cancelled"),
            -32602,
            "invalid params for notifications/cancelled: params: required",
        ),
    ]
    for line, code, message in cases:
        err = _refused(server, line)
        assert (err.message, err.code, err.event_hint) == (message, code, None)
    fresh = Connection(SERVER)
    err = _refused(fresh, _note("notifications/initialized"))
    assert (err.message, err.event_hint) == (
        "server cannot receive notifications/initialized in state PRE_INIT"
        " (2025-06-18/basic/lifecycle)",
        None,
    )


def test_batch_refusals() -> None:
    client, server = initialized_pair()
    err = _refused(server, "[" + _req(1, "ping") + "]")
    assert err.message == "JSON-RPC batches are not allowed in protocol version 2025-11-25"
    assert _reply(err) == (None, -32600, "batches are not supported")
    client, server = initialized_pair("2025-03-26", max_requests_in_flight=2)
    err = _refused(server, "[]")
    assert (err.message, _reply(err)) == ("empty batch", (None, -32600, "empty batch"))
    err = _refused(server, "[" + ",".join(_req(i, "ping") for i in range(3)) + "]")
    assert (err.message, _reply(err)) == ("batch too large", (None, -32600, "batch too large"))
    assert err.code == -32600
    # As many items as requests may be in flight: accepted.
    server.receive_data(("[" + ",".join(_req(i, "ping") for i in (7, 8)) + "]\n").encode())
    assert [e.id for e in (server.next_event(), server.next_event())] == [7, 8]


def test_an_unsupported_version_in_the_initialize_answer_closes_the_connection() -> None:
    client = Connection(CLIENT)
    client.send(init_request(rid=0))
    line = (
        '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"1999-01-01","capabilities":{},'
        '"serverInfo":{"name":"s","version":"1"}}}'
    )
    err = _refused(client, line)
    assert err.code == -32602
    assert err.message == (
        "server answered protocol version '1999-01-01', which mcp-ref does not support "
        "(2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05); disconnect"
    )
    assert client.state is State.CLOSED


def test_an_invalid_result_fails_its_request() -> None:
    client, server = initialized_pair()
    deliver(client.send(Request(id=1, method="tools/list")), server)
    (ev,) = deliver(b'{"jsonrpc":"2.0","id":1,"result":{"tools":3}}\n', client)
    assert isinstance(ev, ErrorResponse)
    assert (ev.id, ev.code, ev.method) == (1, -32603, "tools/list")
    assert (
        ev.message == "invalid result from peer for tools/list: tools: expected array, got integer"
    )
    assert ev.data == {"result": {"tools": 3}}


def test_a_batch_item_that_makes_no_event_does_not_stop_the_others() -> None:
    client, server = initialized_pair("2025-03-26")
    cancel_unknown = _note("notifications/cancelled", '{"requestId":99}')
    server.receive_data(("[" + cancel_unknown + "," + _req(1, "ping") + "]\n").encode())
    event = server.next_event()
    assert isinstance(event, Request) and event.id == 1

"""What the core refuses to send (mcp_ref._send), refusal by refusal: the message and the
code of each LocalProtocolError, and that nothing changed after it.

Source: 2025-06-18/basic (requests, responses, notifications); 2025-06-18/basic/lifecycle
(version negotiation, capabilities, timeouts); 2025-06-18/basic/utilities/progress.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from mcp_ref import (
    CLIENT,
    SERVER,
    Connection,
    ErrorResponse,
    LocalProtocolError,
    Notification,
    Request,
    RequestTimeout,
    Response,
    State,
)
from mcp_ref import types as t

from ._pair import deliver, init_request, init_result, initialized_pair


def _refusal(send: Callable[[], Any]) -> tuple[str, int]:
    with pytest.raises(LocalProtocolError) as caught:
        send()
    return caught.value.message, caught.value.code


def test_request_refusals() -> None:
    bare = t.ServerCapabilities()  # no tools, no resources
    client, server = initialized_pair(server_caps=bare, max_message_bytes=400)
    call = t.CallToolRequestParams
    assert _refusal(lambda: client.send(Request(id=True, method="ping"))) == (
        "request id must be a str or an int, not True",
        -32600,
    )
    assert _refusal(lambda: client.send(Request(id=1, method="sampling/createMessage"))) == (
        "client cannot send request 'sampling/createMessage' in protocol version 2025-11-25",
        -32601,
    )
    assert _refusal(lambda: client.send(Request(id=1, method="tools/list"))) == (
        "tools/list needs the server capability tools, which was not negotiated",
        -32601,
    )
    # Before initialize no version is negotiated, and the refusal names none.
    assert _refusal(lambda: Connection(CLIENT).send(Request(id=1, method="no/such"))) == (
        "client cannot send request 'no/such'",
        -32601,
    )
    caps = t.ServerCapabilities(tools=t.ServerCapabilitiesTools())
    client, server = initialized_pair(server_caps=caps, max_message_bytes=400)
    assert _refusal(lambda: client.send(Request(id=1, method="tools/call"))) == (
        "tools/call requires params",
        -32602,
    )
    wrong = t.PaginatedRequestParams()
    assert _refusal(lambda: client.send(Request(id=1, method="tools/call", params=wrong))) == (
        "tools/call params must be CallToolRequestParams, not PaginatedRequestParams",
        -32602,
    )
    token = call(name="x", meta={"progressToken": 1.5})
    assert _refusal(lambda: client.send(Request(id=1, method="tools/call", params=token))) == (
        "progressToken must be a str or an int",
        -32600,
    )
    unserializable = call(name="x", arguments={"a": {1}})
    assert _refusal(
        lambda: client.send(Request(id=1, method="tools/call", params=unserializable))
    ) == ("cannot serialize the message: Object of type set is not JSON serializable", -32600)
    big = call(name="x", arguments={"a": "b" * 500})
    message, _ = _refusal(lambda: client.send(Request(id=1, method="tools/call", params=big)))
    assert message.startswith("message of ") and message.endswith(" bytes exceeds the limit of 400")
    with pytest.raises(TypeError, match=r"^timeout must be a RequestTimeout or None$"):
        client.send(Request(id=1, method="ping"), now=0.0, timeout=5)  # type: ignore[arg-type]
    assert _refusal(
        lambda: client.send(Request(id=1, method="ping"), timeout=RequestTimeout(seconds=1))
    ) == ("a request with a timeout needs now=", -32600)
    # None of these changed anything: id 1 is still fresh.
    assert client.requests_in_flight() == ([], [])
    deliver(client.send(Request(id=1, method="ping")), server)


def test_initialize_must_ask_for_a_supported_version() -> None:
    client = Connection(CLIENT)
    assert _refusal(lambda: client.send(init_request(version="1999-01-01"))) == (
        "initialize must ask for a version we support, not '1999-01-01'",
        -32600,
    )
    client.send(init_request())  # nothing changed: the right one goes out


def test_notification_refusals() -> None:
    client, server = initialized_pair(server_caps=t.ServerCapabilities())
    assert _refusal(
        lambda: client.send(Notification(method="notifications/tools/list_changed"))
    ) == (
        "client cannot send notification 'notifications/tools/list_changed' "
        "in protocol version 2025-11-25",
        -32601,
    )
    assert _refusal(
        lambda: server.send(Notification(method="notifications/tools/list_changed"))
    ) == (
        "notifications/tools/list_changed needs the server capability tools.list_changed, "
        "which was not negotiated",
        -32601,
    )
    fresh = Connection(CLIENT)
    assert _refusal(lambda: fresh.send(Notification(method="notifications/initialized"))) == (
        "client cannot send notifications/initialized in state PRE_INIT"
        " (2025-06-18/basic/lifecycle)",
        -32600,
    )


def test_response_refusals() -> None:
    client, server = initialized_pair()
    deliver(client.send(Request(id=1, method="ping")), server)
    assert _refusal(lambda: server.send(Response(id=1.5, result=t.EmptyResult()))) == (  # type: ignore[arg-type]
        "response id must be a str or an int, not 1.5",
        -32600,
    )
    assert _refusal(lambda: server.send(Response(id=99, result=t.EmptyResult()))) == (
        "no request with id 99 awaits a response",
        -32600,
    )
    assert _refusal(lambda: server.send(Response(id=1, result=t.ListToolsResult(tools=[])))) == (
        "the result of ping must be Result, not ListToolsResult",
        -32600,
    )
    assert _refusal(
        lambda: server.send(ErrorResponse(id=1.5, code=-1, message="m"))  # type: ignore[arg-type]
    ) == ("error response id must be a str, an int or None: 1.5", -32600)
    assert _refusal(
        lambda: server.send(ErrorResponse(id=1, code=1.0, message="m"))  # type: ignore[arg-type]
    ) == ("error codes must be integers", -32600)
    server.send(Response(id=1, result=t.EmptyResult()))  # still answerable


def test_the_initialize_answer_names_a_version_we_support() -> None:
    client, server = Connection(CLIENT), Connection(SERVER)
    deliver(client.send(init_request(version="2025-06-18")), server)
    assert _refusal(
        lambda: server.send(Response(id=0, result=init_result(version="2025-03-26")))
    ) == ("the client asked for 2025-06-18, which we support: answer it, not 2025-03-26", -32600)
    client, server = Connection(CLIENT), Connection(SERVER)
    server.receive_data(
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"1999-01-01",'
        b'"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}\n'
    )
    server.next_event()
    assert _refusal(
        lambda: server.send(Response(id=0, result=init_result(version="1999-01-01")))
    ) == ("cannot answer with unsupported version '1999-01-01'", -32600)
    server.send(Response(id=0, result=init_result(version="2025-11-25")))


def test_an_error_answer_to_initialize_returns_the_server_to_pre_init() -> None:
    client, server = Connection(CLIENT), Connection(SERVER)
    deliver(client.send(init_request(rid=0)), server)
    (ev,) = deliver(server.send(ErrorResponse(id=0, code=-32602, message="no")), client)
    assert isinstance(ev, ErrorResponse) and ev.id == 0
    assert server.state is State.PRE_INIT and client.state is State.PRE_INIT
    # Both may start again.
    (again,) = deliver(client.send(init_request(rid=1)), server)
    assert isinstance(again, Request) and again.method == "initialize"


def test_an_error_answer_carries_its_data_and_ends_the_request() -> None:
    client, server = initialized_pair()
    deliver(client.send(Request(id=4, method="ping")), server)
    data = server.send(ErrorResponse(id=4, code=-32000, message="busy", data={"retry": 1}))
    assert json.loads(data) == {
        "jsonrpc": "2.0",
        "id": 4,
        "error": {"code": -32000, "message": "busy", "data": {"retry": 1}},
    }
    assert server.requests_in_flight() == ([], [])
    (ev,) = deliver(data, client)
    assert isinstance(ev, ErrorResponse) and ev.data == {"retry": 1}

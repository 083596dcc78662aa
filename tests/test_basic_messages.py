"""2025-06-18/basic: JSON-RPC messages, ids, responses, notifications, batches."""

from __future__ import annotations

import json

import pytest

from mcp_ref import (
    CLIENT,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    NEED_DATA,
    PARSE_ERROR,
    Connection,
    ErrorResponse,
    LocalProtocolError,
    Notification,
    RemoteProtocolError,
    Request,
    Response,
    UnexpectedResponse,
)
from mcp_ref import types as t

from ._pair import deliver, events, initialized_pair

spec = pytest.mark.spec


def refused(conn: Connection, line: bytes) -> RemoteProtocolError:
    conn.receive_data(line + b"\n")
    with pytest.raises(RemoteProtocolError) as exc:
        conn.next_event()
    return exc.value


def test_parse_error_answers_32700_with_null_id_and_survives() -> None:
    client, server = initialized_pair()
    err = refused(server, b'{"jsonrpc": "2.0", "method": "ping", "id": ')
    assert err.code == PARSE_ERROR
    assert err.event_hint is not None and err.event_hint.id is None
    reply = json.loads(server.send(err.event_hint))
    assert reply == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": err.message},
    }
    # The next good message still works.
    (req,) = deliver(client.send(Request(id=1, method="ping")), server)
    assert req.id == 1


def test_parse_error_answers_the_id_its_first_bytes_show() -> None:
    """A request broken after its id (truncated, trailing bytes, nested too deep) is
    answered -32700 with that id, so its sender can tell which request failed."""
    client, server = initialized_pair()
    deep = b"[" * 5000 + b"]" * 5000
    for rid, line in [
        (3, b'{"jsonrpc": "2.0", "id": 3, "method": '),
        ("a", b'{"jsonrpc":"2.0","id":"a","method":"ping"} trailing'),
        (4, b'{"jsonrpc":"2.0","id":4,"method":"ping","params":{"x":' + deep + b"}}"),
    ]:
        err = refused(server, line)
        assert err.code == PARSE_ERROR
        assert err.event_hint is not None and err.event_hint.id == rid
        assert json.loads(server.send(err.event_hint))["id"] == rid
    # A broken response (no method) names no request of the peer's: id null.
    err = refused(server, b'{"jsonrpc":"2.0","id":5,"result":')
    assert err.event_hint is not None and err.event_hint.id is None
    (req,) = deliver(client.send(Request(id=1, method="ping")), server)
    assert req.id == 1


def test_invalid_utf8_is_a_parse_error() -> None:
    _, server = initialized_pair()
    assert refused(server, b'{"jsonrpc":"2.0","method":"x\xff"}').code == PARSE_ERROR


@spec("2025-06-18/basic#messages.1")
@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"1.0","id":1,"method":"ping"}',
        b'{"id":1,"method":"ping"}',
        b"[1,2]",
        b'"just a string"',
        b'{"jsonrpc":"2.0","id":1,"method":5}',
    ],
)
def test_bad_envelopes_answer_32600(line: bytes) -> None:
    _, server = initialized_pair()
    assert refused(server, line).code == INVALID_REQUEST


@spec("2025-06-18/basic#requests.1", "2025-06-18/basic#requests.2")
@pytest.mark.parametrize("bad_id", [b"null", b"true", b"1.5", b"[1]", b"{}"])
def test_request_ids_must_be_string_or_integer(bad_id: bytes) -> None:
    _, server = initialized_pair()
    err = refused(server, b'{"jsonrpc":"2.0","id":' + bad_id + b',"method":"ping"}')
    assert err.code == INVALID_REQUEST and err.event_hint.id is None
    client = Connection(CLIENT)
    with pytest.raises(LocalProtocolError):
        client.send(Request(id=json.loads(bad_id), method="ping"))


@spec("2025-06-18/basic#requests.1")
def test_ids_are_kept_exactly() -> None:
    client, server = initialized_pair()
    (a,) = deliver(client.send(Request(id="7", method="ping")), server)
    (b,) = deliver(client.send(Request(id=7, method="ping")), server)
    assert a.id == "7" and type(a.id) is str and b.id == 7 and type(b.id) is int
    (ra,) = deliver(server.send(Response(id=7, result=t.EmptyResult())), client)
    (rb,) = deliver(server.send(Response(id="7", result=t.EmptyResult())), client)
    assert ra.id == 7 and type(ra.id) is int and rb.id == "7"
    assert json.loads(server.send(ErrorResponse(id="x", code=1, message="m")))["id"] == "x"


@spec("2025-06-18/basic#requests.3")
def test_request_ids_are_never_reused_by_the_sender() -> None:
    client, server = initialized_pair()
    deliver(client.send(Request(id=1, method="ping")), server)
    with pytest.raises(LocalProtocolError, match="already used"):
        client.send(Request(id=1, method="ping"))
    deliver(server.send(Response(id=1, result=t.EmptyResult())), client)
    with pytest.raises(LocalProtocolError, match="already used"):
        client.send(Request(id=1, method="ping"))
    # next_request_id() never hands out a used id
    assert client.next_request_id() != 1


@spec("2025-06-18/basic#requests.3")
def test_duplicate_incoming_ids_are_refused() -> None:
    client, server = initialized_pair()
    deliver(b'{"jsonrpc":"2.0","id":9,"method":"ping"}\n', server)
    err = refused(server, b'{"jsonrpc":"2.0","id":9,"method":"ping"}')
    assert err.code == INVALID_REQUEST and err.event_hint.id == 9
    server.send(err.event_hint)
    # The first request is still in flight and can be answered.
    assert json.loads(server.send(Response(id=9, result=t.EmptyResult())))["id"] == 9


@spec("2025-06-18/basic#responses.1")
def test_response_to_unknown_id_is_reported_not_raised() -> None:
    client, _ = initialized_pair()
    (ev,) = deliver(b'{"jsonrpc":"2.0","id":42,"result":{}}\n', client)
    assert isinstance(ev, UnexpectedResponse) and ev.id == 42
    with pytest.raises(LocalProtocolError):
        client.send(Response(id=42, result=t.EmptyResult()))


@spec("2025-06-18/basic#responses.2", "2025-06-18/basic#responses.3")
def test_response_has_result_or_error_never_both() -> None:
    client, server = initialized_pair()
    client.send(Request(id=1, method="ping"))
    err = refused(client, b'{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}')
    assert err.event_hint is None  # responses are never answered
    # With neither method nor result nor error it may be a request missing its
    # method: answered with -32600 and its id (an error response is never answered,
    # so this cannot loop).
    err = refused(client, b'{"jsonrpc":"2.0","id":1}')
    assert err.event_hint is not None and err.event_hint.id == 1


@spec("2025-06-18/basic#responses.4", "2025-06-18/basic#responses.5")
def test_errors_need_integer_code_and_message() -> None:
    client, server = initialized_pair()
    client.send(Request(id=1, method="ping"))
    refused(client, b'{"jsonrpc":"2.0","id":1,"error":{"code":"1","message":"x"}}')
    refused(client, b'{"jsonrpc":"2.0","id":1,"error":{"code":1}}')
    (ev,) = deliver(
        b'{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no","data":[1]}}\n', client
    )
    assert (
        isinstance(ev, ErrorResponse) and ev.code == -1 and ev.data == [1] and ev.method == "ping"
    )
    with pytest.raises(LocalProtocolError):
        server.send(ErrorResponse(id=None, code="x", message="m"))  # type: ignore[arg-type]


@spec("2025-06-18/basic#notifications.1", "2025-06-18/basic#notifications.2")
def test_notifications_have_no_id_and_get_no_response() -> None:
    client, server = initialized_pair()
    data = server.send(Notification(method="notifications/tools/list_changed"))
    assert "id" not in json.loads(data)
    (note,) = deliver(data, client)
    assert isinstance(note, Notification)
    # A bad notification raises without a reply to send.
    err = refused(client, b'{"jsonrpc":"2.0","method":"notifications/unknown"}')
    assert err.code == METHOD_NOT_FOUND and err.event_hint is None


def test_unknown_method_answers_32601_with_id() -> None:
    _, server = initialized_pair()
    err = refused(server, b'{"jsonrpc":"2.0","id":"a","method":"no/such"}')
    assert err.code == METHOD_NOT_FOUND and err.event_hint.id == "a"
    # A method the other role sends is unknown here too.
    err = refused(
        server, b'{"jsonrpc":"2.0","id":"b","method":"sampling/createMessage","params":{}}'
    )
    assert err.code == METHOD_NOT_FOUND


def test_bad_params_answer_32602_with_id() -> None:
    _, server = initialized_pair()
    err = refused(server, b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":5}}')
    assert err.code == INVALID_PARAMS and err.event_hint.id == 3
    err = refused(server, b'{"jsonrpc":"2.0","id":4,"method":"tools/call"}')
    assert err.code == INVALID_PARAMS and err.event_hint.id == 4
    err = refused(server, b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":[1]}')
    assert err.code == INVALID_PARAMS and err.event_hint.id == 5


def test_send_checks_params_type() -> None:
    client, _ = initialized_pair()
    with pytest.raises(LocalProtocolError):
        client.send(Request(id=1, method="tools/call", params={"name": "x"}))
    with pytest.raises(LocalProtocolError):
        client.send(Request(id=1, method="tools/call"))


def test_batches_only_in_2025_03_26() -> None:
    client, server = initialized_pair("2025-03-26")
    batch = b'[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]\n'
    evs = deliver(batch, server)
    assert [e.id for e in evs] == [1, 2]
    _, server2 = initialized_pair("2025-06-18")
    assert refused(server2, batch.strip()).code == INVALID_REQUEST
    assert refused(server, b"[]").code == INVALID_REQUEST


def test_invalid_result_from_peer_becomes_error_event() -> None:
    client, server = initialized_pair()
    client.send(Request(id=1, method="tools/list"))
    (ev,) = deliver(b'{"jsonrpc":"2.0","id":1,"result":{"tools":5}}\n', client)
    assert isinstance(ev, ErrorResponse) and ev.id == 1 and "tools" in ev.message


def test_response_type_is_checked_on_send() -> None:
    client, server = initialized_pair()
    deliver(client.send(Request(id=1, method="tools/list")), server)
    with pytest.raises(LocalProtocolError):
        server.send(Response(id=1, result=t.EmptyResult()))
    server.send(Response(id=1, result=t.ListToolsResult(tools=[])))


def test_unknown_fields_are_preserved() -> None:
    client, server = initialized_pair()
    line = (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{},'
        b'"future":{"a":1},"_meta":{"k":"v"}}}\n'
    )
    (req,) = deliver(line, server)
    assert req.params.extra == {"future": {"a": 1}} and req.params.meta == {"k": "v"}
    resent = json.loads(client.send(Request(id=2, method="tools/call", params=req.params)))
    assert resent["params"] == {
        "name": "x",
        "arguments": {},
        "future": {"a": 1},
        "_meta": {"k": "v"},
    }


def test_blank_lines_are_skipped() -> None:
    client, server = initialized_pair()
    server.receive_data(b"\n  \n\r\n")
    assert server.next_event() is NEED_DATA
    assert events(server) == []


@pytest.mark.parametrize(
    ("line", "ok"),
    [
        (b'  {"jsonrpc":"2.0","id":1,"method":"ping"}  ', True),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping"} x', False),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping"}{}', False),
        (b"\t{}", False),  # parses, but is no message: -32600, not -32700
    ],
)
def test_one_json_value_per_line(line: bytes, ok: bool) -> None:
    _, server = initialized_pair()
    server.receive_data(line + b"\n")
    if ok:
        assert server.next_event().id == 1
        return
    with pytest.raises(RemoteProtocolError) as exc:
        server.next_event()
    assert exc.value.code == (INVALID_REQUEST if line.strip() == b"{}" else PARSE_ERROR)


def test_a_refused_send_leaves_the_connection_unchanged() -> None:
    """LocalProtocolError means nothing was sent and nothing changed: the same id can
    then be sent small, and the peer's request can still be answered."""
    client, server = initialized_pair(max_message_bytes=600)
    big = t.CallToolRequestParams(name="x", arguments={"text": "a" * 1000})
    with pytest.raises(LocalProtocolError, match="exceeds"):
        client.send(Request(id=7, method="tools/call", params=big))
    assert client.requests_in_flight() == ([], [])
    deliver(
        client.send(Request(id=7, method="tools/call", params=t.CallToolRequestParams(name="x"))),
        server,
    )
    huge = t.CallToolResult(content=[t.TextContent(text="b" * 1000)])
    with pytest.raises(LocalProtocolError, match="exceeds"):
        server.send(Response(id=7, result=huge))
    assert server.requests_in_flight() == ([], [7])
    (resp,) = deliver(server.send(Response(id=7, result=t.CallToolResult(content=[]))), client)
    assert resp.id == 7


# ---------------------------------------------------------------------------------------
# Refusals checked field by field (issue 13: each clause's tests kill its mutants).

_MESSAGES_1 = "2025-06-18/basic#messages.1"
_REQUESTS_1 = "2025-06-18/basic#requests.1"
_REQUESTS_2 = "2025-06-18/basic#requests.2"
_RESPONSES_1 = "2025-06-18/basic#responses.1"
_RESPONSES_2 = "2025-06-18/basic#responses.2"
_RESPONSES_3 = "2025-06-18/basic#responses.3"
_RESPONSES_4 = "2025-06-18/basic#responses.4"
_RESPONSES_5 = "2025-06-18/basic#responses.5"
_NOTIFICATIONS_1 = "2025-06-18/basic#notifications.1"


def _case(obj: object, code: int, rid: object, answered: bool, *, marks: object) -> object:
    """One refusal case; its marks name its clause and responses.4, since every case
    checks the error we send."""
    return pytest.param(obj, code, rid, answered, marks=marks, id=json.dumps(obj))


def _assert_error_body(body: dict[str, object], code: int, rid: object) -> None:
    """``body`` is a JSON-RPC error with an integer code, a string message and ``rid``."""
    error = body["error"]
    assert isinstance(error, dict)
    assert body["jsonrpc"] == "2.0" and body.get("id") == rid
    assert type(error["code"]) is int and error["code"] == code
    assert type(error["message"]) is str and error["message"]


_PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
_GOOD_ERROR = {"code": 1, "message": "x"}


@pytest.mark.parametrize(
    ("obj", "code", "rid", "answered"),
    [
        # A message that is not JSON-RPC 2.0: a request (or what may be one: an id and
        # no result or error) is answered -32600 with its id, as JSON-RPC 2.0 section 5
        # asks; one with a method but no id with id null; a response never.
        _case(
            {**_PING, "jsonrpc": "1.0"},
            INVALID_REQUEST,
            1,
            True,
            marks=spec(_MESSAGES_1, _RESPONSES_4),
        ),
        _case(
            {"id": "a", "method": "ping"},
            INVALID_REQUEST,
            "a",
            True,
            marks=spec(_MESSAGES_1, _RESPONSES_4),
        ),
        _case(
            {"jsonrpc": "1.0", "method": "x"},
            INVALID_REQUEST,
            None,
            True,
            marks=spec(_MESSAGES_1, _RESPONSES_4),
        ),
        _case(
            {"jsonrpc": "1.0", "id": 1},
            INVALID_REQUEST,
            1,
            True,
            marks=spec(_MESSAGES_1, _RESPONSES_4),
        ),
        _case(
            {"jsonrpc": "1.0", "id": 1, "result": {}},
            INVALID_REQUEST,
            1,
            False,
            marks=spec(_MESSAGES_1, _RESPONSES_4),
        ),
        _case(
            {"jsonrpc": "1.0", "id": 1, "error": _GOOD_ERROR},
            INVALID_REQUEST,
            1,
            False,
            marks=spec(_MESSAGES_1, _RESPONSES_4),
        ),
        _case(
            {"jsonrpc": "1.0"}, INVALID_REQUEST, None, False, marks=spec(_MESSAGES_1, _RESPONSES_4)
        ),
        # A request's id: a string or an integer, never null; answered with id null.
        _case(
            {**_PING, "id": None},
            INVALID_REQUEST,
            None,
            True,
            marks=spec(_REQUESTS_2, _RESPONSES_4),
        ),
        _case(
            {**_PING, "id": True},
            INVALID_REQUEST,
            None,
            True,
            marks=spec(_REQUESTS_1, _RESPONSES_4),
        ),
        _case(
            {**_PING, "id": 1.5}, INVALID_REQUEST, None, True, marks=spec(_REQUESTS_1, _RESPONSES_4)
        ),
        _case(
            {**_PING, "id": [1]}, INVALID_REQUEST, None, True, marks=spec(_REQUESTS_1, _RESPONSES_4)
        ),
        # A notification is never answered, even when refused.
        _case(
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": [1]},
            INVALID_PARAMS,
            None,
            False,
            marks=spec(_NOTIFICATIONS_1, _RESPONSES_4),
        ),
        _case(
            {"jsonrpc": "2.0", "method": "notifications/initialized", "params": "x"},
            INVALID_PARAMS,
            None,
            False,
            marks=spec(_NOTIFICATIONS_1, _RESPONSES_4),
        ),
        # A response: its id names one of our requests (string or integer) ...
        _case(
            {"jsonrpc": "2.0", "id": None, "result": {}},
            INVALID_REQUEST,
            None,
            False,
            marks=spec(_RESPONSES_1, _RESPONSES_4),
        ),
        _case(
            {"jsonrpc": "2.0", "id": 1.5, "result": {}},
            INVALID_REQUEST,
            None,
            False,
            marks=spec(_RESPONSES_1, _RESPONSES_4),
        ),
        _case(
            {"jsonrpc": "2.0", "id": True, "result": {}},
            INVALID_REQUEST,
            None,
            False,
            marks=spec(_RESPONSES_1, _RESPONSES_4),
        ),
        # ... it has a result or an error ...
        _case(
            {"jsonrpc": "2.0", "id": 1},
            INVALID_REQUEST,
            1,
            True,
            marks=spec(_RESPONSES_2, _RESPONSES_4),
        ),
        _case(
            {"jsonrpc": "2.0"}, INVALID_REQUEST, None, False, marks=spec(_RESPONSES_2, _RESPONSES_4)
        ),
        # ... never both ...
        _case(
            {"jsonrpc": "2.0", "id": 1, "result": {}, "error": _GOOD_ERROR},
            INVALID_REQUEST,
            1,
            False,
            marks=spec(_RESPONSES_3, _RESPONSES_4),
        ),
        # ... and an error has an integer code and a string message.
        _case(
            {"jsonrpc": "2.0", "id": 1, "error": "x"},
            INVALID_REQUEST,
            1,
            False,
            marks=spec(_RESPONSES_4),
        ),
        _case(
            {"jsonrpc": "2.0", "id": 1, "error": {"code": 1}},
            INVALID_REQUEST,
            1,
            False,
            marks=spec(_RESPONSES_4),
        ),
        _case(
            {"jsonrpc": "2.0", "id": 1, "error": {"message": "m"}},
            INVALID_REQUEST,
            1,
            False,
            marks=spec(_RESPONSES_4),
        ),
        _case(
            {"jsonrpc": "2.0", "id": "r", "error": {"code": 1, "message": 5}},
            INVALID_REQUEST,
            "r",
            False,
            marks=spec(_RESPONSES_4),
        ),
        _case(
            {"jsonrpc": "2.0", "id": 1, "error": {"code": "1", "message": "m"}},
            INVALID_REQUEST,
            1,
            False,
            marks=spec(_RESPONSES_5, _RESPONSES_4),
        ),
        _case(
            {"jsonrpc": "2.0", "id": 1, "error": {"code": 1.5, "message": "m"}},
            INVALID_REQUEST,
            1,
            False,
            marks=spec(_RESPONSES_5, _RESPONSES_4),
        ),
    ],
)
def test_refusals_carry_the_code_the_id_and_a_reply_only_when_owed(
    obj: object, code: int, rid: object, answered: bool
) -> None:
    """Each malformed message is refused with its JSON-RPC code and the id it names; a
    reply is owed only to what may be a request.  Every error we send for it (the reply
    on a byte stream, the body of the 400 over Streamable HTTP) has an integer code and
    a string message."""
    from mcp_ref._http import HttpError
    from mcp_ref._http_messages import read_post_body

    line = json.dumps(obj).encode()
    client, server = initialized_pair()
    client.send(Request(id=1, method="ping"))  # a request a response with id 1 may answer
    for conn in (server, client):
        err = refused(conn, line)
        assert err.code == code
        assert err.request_id == rid
        if answered:
            assert err.event_hint is not None and err.event_hint.id == rid
            _assert_error_body(json.loads(conn.send(err.event_hint)), code, rid)
        else:
            assert err.event_hint is None
    out = read_post_body(line)
    assert isinstance(out, HttpError) and out.status == 400
    _assert_error_body(json.loads(out.body), code, rid)


@spec(_MESSAGES_1)
def test_a_batch_is_not_a_message_from_2025_06_18() -> None:
    """2025-06-18 removed JSON-RPC batching: an array is refused whole with -32600 and
    an id-null reply (JSON-RPC 2.0 section 5: the ids cannot be told), while a
    2025-03-26 connection handles it item by item."""
    batch = json.dumps([_PING, {**_PING, "id": 2}]).encode()
    _, server = initialized_pair("2025-06-18")
    err = refused(server, batch)
    assert err.code == INVALID_REQUEST and err.event_hint is not None
    _assert_error_body(json.loads(server.send(err.event_hint)), INVALID_REQUEST, None)
    _, old = initialized_pair("2025-03-26")
    assert [e.id for e in deliver(batch + b"\n", old)] == [1, 2]


@spec(_RESPONSES_5)
def test_we_send_only_integer_error_codes() -> None:
    _, server = initialized_pair()
    for bad in ("1", 1.0, True, None):
        with pytest.raises(LocalProtocolError):
            server.send(ErrorResponse(id=None, code=bad, message="m"))  # type: ignore[arg-type]
    sent = json.loads(server.send(ErrorResponse(id=None, code=-32000, message="m")))
    assert sent["error"] == {"code": -32000, "message": "m"}


@spec(_NOTIFICATIONS_1)
def test_a_notification_is_delivered_or_refused_never_answered() -> None:
    """A notification with object params is delivered; one with params of another
    type is refused without a reply (there is no request to answer)."""
    client, server = initialized_pair()
    client.send(Request(id=1, method="ping"))
    line = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info"}}
    (note,) = deliver(
        json.dumps({**line, "params": {"level": "info", "data": 1}}).encode() + b"\n", client
    )
    assert isinstance(note, Notification) and note.method == "notifications/message"
    for params in ([1], "x", 5, True):
        err = refused(client, json.dumps({**line, "params": params}).encode())
        assert err.code == INVALID_PARAMS and err.event_hint is None


# ---------------------------------------------------------------------------------------
# Issue 13: the HTTP server's own batch check (mcp_ref/_http_server.py, check_batch).


@spec(_MESSAGES_1)
async def test_the_http_server_refuses_batches_from_2025_06_18_with_a_json_rpc_error() -> None:
    """JSON-RPC batches left the protocol in 2025-06-18: the HTTP server answers a batch
    POSTed in a 2025-06-18 session 400 with a JSON-RPC 2.0 error body (-32600, a
    string message), and still answers the same batch in a 2025-03-26 session."""
    import trio

    from mcp_ref.server import Server
    from mcp_ref.trio.http.server import open_http_server

    from ._http_raw import RawConnection, open_session, request_body

    batch = b"[" + request_body(2, "ping") + b"," + request_body(3, "ping") + b"]"
    with trio.fail_after(10):
        async with open_http_server(Server("batch-test", "1"), json_response=True) as info:
            sid, _ = await open_session(info.port, version="2025-06-18")
            conn = await RawConnection.open(info.port)
            ans = await conn.request("POST", body=batch, session_id=sid, version="2025-06-18")
            assert ans.status == 400
            assert ans.headers["content-type"] == "application/json"
            body = json.loads(await ans.body())
            assert set(body) == {"jsonrpc", "error"} and body["jsonrpc"] == "2.0"
            assert body["error"]["code"] == INVALID_REQUEST
            assert "2025-06-18" in body["error"]["message"]
            old, _ = await open_session(info.port, version="2025-03-26")
            ans = await conn.request("POST", body=batch, session_id=old, version="2025-03-26")
            assert ans.status == 200
            assert sorted(m["id"] for m in await ans.json()) == [2, 3]
            await conn.aclose()

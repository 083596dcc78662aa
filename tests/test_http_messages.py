"""How Streamable HTTP reads a POST body (mcp_ref._http_messages), without I/O.

The transport must read a body exactly as the session's connection will: the requests
a POST waits for must be the requests the connection answers, or the POST waits
forever.  The property test holds :func:`read_post_body` against a real server
connection fed the same bytes (the reference model); the examples pin the answers to
the damaged bodies that used to leave a POST unanswered.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_ref import (
    CLIENT,
    NEED_DATA,
    SERVER,
    Connection,
    Notification,
    RemoteProtocolError,
    Request,
    Response,
)
from mcp_ref._http import HttpError, MessageKind
from mcp_ref._http_messages import message_info, read_post_body, with_request_id
from tests._examples import examples

from ._pair import init_request, init_result

T = "2025-06-18/basic/transports#"


def _msg(**fields: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **fields}).encode()


CALL = _msg(id=5, method="tools/call", params={"name": "echo", "arguments": {"text": "hi"}})
INIT = _msg(
    id=7,
    method="initialize",
    params={
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"},
    },
)
PING = _msg(id="p", method="ping")
NOTE = _msg(method="notifications/initialized")
CANCEL = _msg(method="notifications/cancelled", params={"requestId": 3, "reason": "x"})
RESULT = _msg(id=1, result={})
BATCH = b"[" + CALL + b"," + PING + b"," + CANCEL + b"]"
REAL = [CALL, INIT, PING, NOTE, CANCEL, RESULT, BATCH]


def _body_of(err: HttpError) -> dict[str, Any]:
    body = json.loads(err.body)
    assert isinstance(body, dict)
    return body


# -- the damaged bodies of issue 12, one by one ------------------------------------------

DEEP = (
    b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":'
    + b"[" * 1000
    + b"]" * 1000
    + b"}}"
)
DEEP_CANCEL = (
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":'
    + b"[" * 100_000
    + b"]" * 100_000
    + b"}"
)


@pytest.mark.spec(T + "sending-messages-to-the-server.6")
@pytest.mark.parametrize(
    ("body", "code", "rid"),
    [
        pytest.param(INIT[:40], -32700, 7, id="truncated-initialize"),
        pytest.param(CALL[:-3], -32700, 5, id="truncated-call"),
        pytest.param(b"\xef\xbb\xbf" + CALL, -32700, None, id="utf8-bom"),
        pytest.param(CALL.decode().encode("utf-16"), -32700, None, id="utf16"),
        pytest.param(CALL.decode().encode("utf-32"), -32700, None, id="utf32"),
        pytest.param(CALL + b"xx", -32700, 5, id="trailing-bytes"),
        pytest.param(CALL[:-5] + b"\xff" + CALL[-4:], -32700, 5, id="late-bad-utf8"),
        pytest.param(DEEP, -32700, 9, id="arguments-1000-deep"),
        pytest.param(DEEP_CANCEL, -32700, None, id="cancel-params-100000-deep"),
        pytest.param(b"[]", -32600, None, id="empty-batch"),
        pytest.param(_msg(id=None, method="ping"), -32600, None, id="null-id"),
        pytest.param(_msg(id=4, method="ping", params=[1]), -32602, 4, id="array-params"),
        pytest.param(b'{"id":4,"method":"ping"}', -32600, 4, id="no-jsonrpc"),
    ],
)
def test_damaged_body_is_refused_with_its_code(body: bytes, code: int, rid: Any) -> None:
    """A body the connection refuses is refused here, as a 400 whose JSON-RPC error
    has the connection's code, and the request's id wherever it can be read."""
    got = read_post_body(body)
    assert isinstance(got, HttpError)
    assert got.status == 400
    err = _body_of(got)
    assert err["error"]["code"] == code
    assert err.get("id") == rid
    assert (b"content-length", str(len(got.body)).encode()) in got.headers


def test_a_second_id_key_is_read_as_the_connection_reads_it() -> None:
    """JSON's last duplicate key wins, for the transport as for the connection."""
    (info,) = read_post_body(CALL[:-1] + b',"id":"x"}')  # type: ignore[misc]
    assert info.id == "x"
    assert info.kind is MessageKind.REQUEST


def test_batch_bound() -> None:
    big = b"[" + b",".join([NOTE] * 65) + b"]"
    got = read_post_body(big, max_items=64)
    assert isinstance(got, HttpError)
    assert _body_of(got)["error"]["code"] == -32600
    assert len(read_post_body(big, max_items=65)) == 65  # type: ignore[arg-type]


def test_kinds_ids_and_cancels() -> None:
    infos = read_post_body(BATCH)
    assert isinstance(infos, list)
    assert [(i.kind, i.id, i.method, i.cancels) for i in infos] == [
        (MessageKind.REQUEST, 5, "tools/call", None),
        (MessageKind.REQUEST, "p", "ping", None),
        (MessageKind.NOTIFICATION, None, "notifications/cancelled", 3),
    ]
    assert message_info(RESULT) == message_info(_msg(id=1, error={"code": 1, "message": "m"}))
    assert message_info(b"[" + RESULT + b"]") is None  # one message only
    assert message_info(b"\xef\xbb\xbf" + RESULT) is None


def test_with_request_id_keeps_status_code_and_length() -> None:
    (err,) = [read_post_body(b"[]")]
    assert isinstance(err, HttpError)
    named = with_request_id(err, "r1")
    body = _body_of(named)
    assert body["id"] == "r1"
    assert body["error"]["code"] == -32600
    assert named.status == 400
    assert (b"content-length", str(len(named.body)).encode()) in named.headers


# -- the property: the transport reads as the connection does ------------------------------


def _connection_reading(body: bytes) -> tuple[list[tuple[str, Any]], list[int]]:
    """What an operating 2025-03-26 server connection does with ``body`` as one message:
    the ids it dispatches or answers with an error, and the codes of its refusals."""
    client = Connection(CLIENT, newline_framing=False)
    server = Connection(SERVER, newline_framing=False)
    server.receive_message(client.send(init_request("2025-03-26")))
    assert isinstance(server.next_event(), Request)
    client.receive_message(server.send(Response(id=0, result=init_result("2025-03-26"))))
    assert isinstance(client.next_event(), Response)
    server.receive_message(client.send(Notification(method="notifications/initialized")))
    assert isinstance(server.next_event(), Notification)
    server.receive_message(body)
    answered: list[tuple[str, Any]] = []
    codes: list[int] = []
    while True:
        try:
            event = server.next_event()
        except RemoteProtocolError as exc:
            codes.append(exc.code)
            if exc.event_hint is not None:
                answered.append(("refused", exc.event_hint.id))
            continue
        if event is NEED_DATA:
            return answered, codes
        if isinstance(event, Request):
            answered.append(("request", event.id))


def _damage(draw: st.DrawFn) -> bytes:
    base = draw(st.sampled_from(REAL))
    how = draw(st.sampled_from(["cut", "insert", "delete", "bom", "utf16", "trail", "dupid"]))
    at = draw(st.integers(0, len(base)))
    if how == "cut":
        return base[:at]
    if how == "insert":
        return base[:at] + draw(st.binary(min_size=1, max_size=4)) + base[at:]
    if how == "delete":
        return base[:at] + base[at + draw(st.integers(1, 8)) :]
    if how == "bom":
        return b"\xef\xbb\xbf" + base
    if how == "utf16":
        return base.decode().encode(draw(st.sampled_from(["utf-16", "utf-32", "utf-16-le"])))
    if how == "trail":
        return base + draw(st.binary(min_size=1, max_size=4))
    return base[:-1] + b',"id":' + draw(st.sampled_from([b"1", b'"z"', b"null", b"true"])) + b"}"


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_envelope = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "1.0"])},
    optional={
        "id": st.one_of(st.integers(-3, 3), st.text(max_size=2), st.none(), st.booleans()),
        "method": st.sampled_from(["ping", "tools/list", "nope", "notifications/cancelled"])
        | st.integers(),
        "params": st.fixed_dictionaries({}, optional={"requestId": st.integers(0, 3)}) | _json,
        "result": _json,
        "error": _json,
    },
)
BODIES = st.one_of(
    st.binary(max_size=64),
    _json.map(lambda v: json.dumps(v).encode()),
    _envelope.map(lambda v: json.dumps(v).encode()),
    st.lists(_envelope, max_size=4).map(lambda v: json.dumps(v).encode()),
    st.composite(lambda draw: _damage(draw))(),
)


@pytest.mark.spec(T + "sending-messages-to-the-server.4")
@settings(max_examples=examples(3000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(BODIES)
def test_transport_reads_a_body_as_the_connection_does(body: bytes) -> None:
    """Every request the transport would wait for is one the connection dispatches or
    answers with an error carrying its id; a body the transport refuses is refused by
    the connection with the same code; nothing else escapes either reader."""
    got = read_post_body(body)
    answered, codes = _connection_reading(body)
    if isinstance(got, HttpError):
        assert got.status == 400
        assert _body_of(got)["error"]["code"] in codes
        return
    request_ids = [i.id for i in got if i.kind is MessageKind.REQUEST]
    if len(set(map(repr, request_ids))) != len(request_ids):
        return  # duplicate ids in one body: the HTTP server refuses those itself
    assert sorted(map(repr, request_ids)) == sorted(repr(rid) for _, rid in answered)
    assert ("refused", None) not in answered  # no refusal the POST could not match

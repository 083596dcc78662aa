"""JSON-RPC envelopes (mcp_ref._jsonrpc), refusal by refusal: the message, the code, the
id it carries, and whether a reply is owed.

Source: 2025-06-18/basic#messages, #requests, #responses, #notifications; JSON-RPC 2.0
sections 4, 5 and 5.1 (an id that cannot be read is answered with null; a notification
is never answered); 2025-06-18/basic/transports#transports.1 (UTF-8).
"""

from __future__ import annotations

from typing import Any

import pytest

from mcp_ref import RemoteProtocolError
from mcp_ref._jsonrpc import (
    ERROR,
    NOTIFICATION,
    REQUEST,
    RESPONSE,
    classify,
    decode,
    encode,
    error,
    error_event,
    error_reply,
    notification,
    peek,
    request,
    result,
)
from mcp_ref.events import ErrorResponse

BAD_ID = "invalid request: id must be a string or an integer, not "
BAD_ERROR = (
    "invalid error response: error must be an object with an integer code and a string message"
)
NO_JSONRPC = 'invalid request: "jsonrpc" must be "2.0"'


@pytest.mark.parametrize(
    ("obj", "message", "code", "request_id", "reply_id"),
    [
        ([], "invalid request: a message must be a JSON object", -32600, None, None),
        ({"id": 1, "method": "ping"}, NO_JSONRPC, -32600, 1, 1),
        ({"jsonrpc": "1.0", "method": "x"}, NO_JSONRPC, -32600, None, None),
        ({"jsonrpc": "1.0", "id": 2}, NO_JSONRPC, -32600, 2, 2),
        ({"jsonrpc": "1.0", "id": 2, "result": {}}, NO_JSONRPC, -32600, 2, "none"),
        ({"jsonrpc": "1.0", "id": 2, "error": {}}, NO_JSONRPC, -32600, 2, "none"),
        ({"jsonrpc": "1.0"}, NO_JSONRPC, -32600, None, "none"),
        (
            {"jsonrpc": "2.0", "id": 1, "method": 5},
            'invalid request: "method" must be a string',
            -32600,
            1,
            1,
        ),
        ({"jsonrpc": "2.0", "id": None, "method": "x"}, BAD_ID + "null", -32600, None, None),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "x"}, BAD_ID + "float", -32600, None, None),
        ({"jsonrpc": "2.0", "id": True, "method": "x"}, BAD_ID + "bool", -32600, None, None),
        (
            {"jsonrpc": "2.0", "id": "7", "method": "x", "params": []},
            'invalid params: "params" must be an object',
            -32602,
            "7",
            "7",
        ),
        (
            {"jsonrpc": "2.0", "method": "x", "params": 3},
            'invalid params: "params" must be an object',
            -32602,
            None,
            "none",
        ),
        (
            {"jsonrpc": "2.0", "id": 3, "result": {}, "error": {}},
            "invalid response: both result and error",
            -32600,
            3,
            "none",
        ),
        (
            {"jsonrpc": "2.0", "id": 4},
            "invalid message: neither a method nor a result or error",
            -32600,
            4,
            4,
        ),
        (
            {"jsonrpc": "2.0"},
            "invalid message: neither a method nor a result or error",
            -32600,
            None,
            "none",
        ),
        (
            {"jsonrpc": "2.0", "id": None, "result": {}},
            "invalid response: id must be a string or an integer",
            -32600,
            None,
            "none",
        ),
        ({"jsonrpc": "2.0", "id": 5, "error": "x"}, BAD_ERROR, -32600, 5, "none"),
        (
            {"jsonrpc": "2.0", "id": 5, "error": {"code": True, "message": "m"}},
            BAD_ERROR,
            -32600,
            5,
            "none",
        ),
        (
            {"jsonrpc": "2.0", "id": 5, "error": {"code": 1, "message": None}},
            BAD_ERROR,
            -32600,
            5,
            "none",
        ),
        (
            {"jsonrpc": "2.0", "id": 1.5, "error": {"code": 1, "message": "m"}},
            "invalid error response: bad id",
            -32600,
            None,
            "none",
        ),
    ],
)
def test_classify_refusals(
    obj: Any, message: str, code: int, request_id: Any, reply_id: Any
) -> None:
    with pytest.raises(RemoteProtocolError) as caught:
        classify(obj)
    err = caught.value
    assert (err.message, err.code, err.request_id) == (message, code, request_id)
    if reply_id == "none":
        assert err.event_hint is None  # not a request: never answered
    else:
        assert err.event_hint == error_reply(reply_id, code, message)


def test_classify_accepts_the_four_kinds() -> None:
    assert classify({"jsonrpc": "2.0", "id": "a", "method": "m"}) == (REQUEST, "a", "m", None)
    assert classify({"jsonrpc": "2.0", "id": 0, "method": "m", "params": {"x": 1}}) == (
        REQUEST,
        0,
        "m",
        {"x": 1},
    )
    assert classify({"jsonrpc": "2.0", "method": "n", "params": {}}) == (
        NOTIFICATION,
        None,
        "n",
        {},
    )
    assert classify({"jsonrpc": "2.0", "id": 1, "result": []}) == (RESPONSE, 1, None, [])
    error = {"code": -1, "message": "m"}
    assert classify({"jsonrpc": "2.0", "id": None, "error": error}) == (ERROR, None, None, error)


def test_error_reply_drops_an_id_that_is_not_legal() -> None:
    assert error_reply(True, -32600, "m").id is None
    assert error_reply(1.0, -32600, "m").id is None
    assert error_reply(3, -32601, "m", {"d": 1}).data == {"d": 1}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"\xff{}", "parse error: invalid UTF-8 at byte 0"),
        (b"[" * 100_000 + b"]" * 100_000, "parse error: JSON nested too deeply"),
        (b" " + b"[" * 100_000 + b"]" * 100_000, "parse error: JSON nested too deeply"),
        (b"{} x", "parse error: Extra data: line 1 column 4 (char 3)"),
        (b"", "parse error: Expecting value: line 1 column 1 (char 0)"),
    ],
)
def test_decode_refusals(line: bytes, message: str) -> None:
    with pytest.raises(RemoteProtocolError) as caught:
        decode(line)
    err = caught.value
    assert (err.message, err.code, err.request_id) == (message, -32700, None)
    assert err.event_hint == error_reply(None, -32700, message)


def test_decode_takes_whitespace_around_one_value() -> None:
    assert decode(b' {"a": [1, 2.5, "x"]}\r') == {"a": [1, 2.5, "x"]}
    assert decode(b"7") == 7


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"x":"', ("abc", True)),
        (b' {"id" : 12 , "result":{"a', (12, False)),
        (b'{"params":{"id":1,"method":"x"},"id":2,', (2, False)),
        # Two levels closed at once leave the walk one level down, not at the top:
        (b'{"id":5,"params":{"a":{"c":1},"id":9},"method":"x"', (5, True)),
        (b'{"a":"\\"id\\":3","id":4}', (4, False)),
        (b'{"a":["id",5],"id":6,', (6, False)),
        (b'{"id":1.5,"method":"m",', (None, True)),
        (b'{"id":true,', (None, False)),
        (b'{"id":12', (None, False)),  # the id may go on: not read
        (b'{"id":"ab', (None, False)),
        (b'{"id"', (None, False)),
        (b'{"id" 5', (None, False)),
        (b"[1,2", (None, False)),
        (b"   ", (None, False)),
        (b'{"method"', (None, False)),
        (b'{"method":"m","id":[' + b"[" * 50_000, (None, True)),
        (b'{"x":1, "id":"\xff"}', ("\ufffd", False)),
        (b'X{"id":1,', (None, False)),  # only whitespace may come before the object
        (b'{"id":1X,', (None, False)),  # the id must end with the value
        (b'{"a":X,"id":1,', (1, False)),  # stray characters change no depth
        (b'{"a":0 "id":3,', (None, False)),  # a string after a value is not a key
        (b' \t\r\n{"id":1,', (1, False)),
    ],
)
def test_peek_reads_the_top_level_id(prefix: bytes, expected: tuple[Any, bool]) -> None:
    assert peek(prefix) == expected


def test_encode() -> None:
    assert encode({"a": [1, "é"]}) == '{"a":[1,"é"]}'.encode()
    assert encode({"a": 1}, newline=True) == b'{"a":1}\n'
    assert encode({"a": "\ud800"}, newline=True) == b'{"a":"\\ud800"}\n'
    assert encode({"a": "\ud800"}) == b'{"a":"\\ud800"}'
    with pytest.raises(ValueError, match=r"^Object of type set is not JSON serializable$"):
        encode({"a": {1}})
    with pytest.raises(ValueError, match="Out of range float values"):
        encode({"a": float("nan")})
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    with pytest.raises(ValueError, match=r"^message nested too deeply \(or cyclic\)$"):
        encode(cyclic)


def test_the_four_envelopes_leave_out_what_is_none() -> None:
    assert request(1, "ping", None) == {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert request("a", "x", {}) == {"jsonrpc": "2.0", "id": "a", "method": "x", "params": {}}
    assert notification("n", None) == {"jsonrpc": "2.0", "method": "n"}  # never an id
    assert notification("n", {"a": 1}) == {"jsonrpc": "2.0", "method": "n", "params": {"a": 1}}
    assert result(7, {}) == {"jsonrpc": "2.0", "id": 7, "result": {}}
    assert error(None, -1, "m") == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -1, "message": "m"},
    }
    assert error(2, -1, "m", []) == {
        "jsonrpc": "2.0",
        "id": 2,
        "error": {"code": -1, "message": "m", "data": []},
    }
    assert error_event(3, {"code": -1, "message": "m", "data": 0}, "ping") == ErrorResponse(
        id=3, code=-1, message="m", data=0, method="ping"
    )
    assert error_event(None, {"code": -1, "message": "m"}) == ErrorResponse(
        id=None, code=-1, message="m"
    )


@pytest.mark.parametrize(
    "obj",
    [
        {"jsonrpc": "2.0", "id": 1.5, "method": 5},
        {"jsonrpc": "2.0", "id": True, "method": 5},
        {"jsonrpc": "1.0", "id": [1], "method": "x"},
    ],
)
def test_a_refusal_names_no_request_id_that_is_not_legal(obj: dict[str, Any]) -> None:
    """The refusal's ``request_id`` (what a driver reports and keys on) is None when
    the id is not a string or an integer, as its reply's id is."""
    with pytest.raises(RemoteProtocolError) as caught:
        classify(obj)
    assert caught.value.request_id is None
    assert caught.value.event_hint is not None and caught.value.event_hint.id is None


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        (b'{"a":"{[}","id":7,"method":"x"', (7, True)),  # brackets inside a string
        (b'{"a":{"b":{},"id":9},"id":3,', (3, False)),  # a nested "id" is not the id
        (b'{"x":"q\\"id\\":8","id":5,', (5, False)),  # escaped quotes inside a string
        (b'{"x":"\\\\","id":6,', (6, False)),  # an escaped backslash ends before the quote
        (b'{"x":"\\"","id":4,', (4, False)),
    ],
)
def test_peek_reads_strings_and_nesting_as_json_does(prefix: bytes, expected: Any) -> None:
    assert peek(prefix) == expected

"""Reading a POST body as the connection will (mcp_ref._http_messages): what each refusal
says and answers, the batch bound, and a refusal re-addressed to a request's id.

Source: 2025-06-18/basic/transports#sending-messages-to-the-server.4 and .6 (one message
per body; an HTTP error status when the input cannot be accepted); 2025-03-26 (batches);
JSON-RPC 2.0 section 5 (the error carries the id when it can be read).
"""

from __future__ import annotations

import json
from typing import Any

from mcp_ref._http import HttpError, http_error
from mcp_ref._http_messages import (
    error_of,
    message_info,
    negotiated_version,
    read_post_body,
    with_request_id,
)

CLAUSE = "2025-06-18/basic/transports#sending-messages-to-the-server.4"


def _answer(result: object) -> tuple[int, str, Any, dict[str, Any]]:
    assert isinstance(result, HttpError), result
    body = json.loads(result.body)
    assert dict(result.headers)[b"content-length"] == str(len(result.body)).encode()
    assert result.clause == CLAUSE
    return result.status, result.detail, body.get("id"), body["error"]


def _ping(rid: int) -> str:
    return f'{{"jsonrpc":"2.0","id":{rid},"method":"ping"}}'


def test_refusals_say_why_and_answer_the_id_they_can_read() -> None:
    status, detail, rid, error = _answer(
        read_post_body(b'{"jsonrpc":"2.0","id":"a","method":"x","params":{')
    )
    assert (status, rid, error["code"]) == (400, "a", -32700)
    assert detail == error["message"] and detail.startswith("parse error: ")
    # A broken response: its id is not answered.
    _, _, rid, error = _answer(read_post_body(b'{"jsonrpc":"2.0","id":"a","result":{'))
    assert (rid, error["code"]) == (None, -32700)
    assert _answer(read_post_body(b"[]")) == (
        400,
        "invalid request: empty batch",
        None,
        {"code": -32600, "message": "invalid request: empty batch"},
    )
    _, detail, rid, error = _answer(
        read_post_body(b'{"jsonrpc":"2.0","id":7,"method":"x","params":[]}')
    )
    assert (detail, rid, error["code"]) == ('invalid params: "params" must be an object', 7, -32602)
    batch = "[" + _ping(1) + ',{"jsonrpc":"2.0","id":8,"method":3}]'
    _, detail, rid, error = _answer(read_post_body(batch.encode()))
    assert (detail, rid, error["code"]) == ('invalid request: "method" must be a string', 8, -32600)
    # In a batch as alone: params that are not an object are -32602, not -32600.
    batch = "[" + _ping(1) + ',{"jsonrpc":"2.0","id":9,"method":"x","params":[]}]'
    _, detail, rid, error = _answer(read_post_body(batch.encode()))
    assert (detail, rid, error["code"]) == ('invalid params: "params" must be an object', 9, -32602)


def test_batches_hold_at_most_64_messages_by_default() -> None:
    body = ("[" + ",".join(_ping(i) for i in range(64)) + "]").encode()
    result = read_post_body(body)
    assert isinstance(result, list) and len(result) == 64
    body = ("[" + ",".join(_ping(i) for i in range(65)) + "]").encode()
    assert _answer(read_post_body(body)) == (
        400,
        "invalid request: batch of more than 64 messages",
        None,
        {"code": -32600, "message": "invalid request: batch of more than 64 messages"},
    )
    assert isinstance(read_post_body(body, max_items=65), list)


def test_a_cancellation_names_only_a_legal_id() -> None:
    for bad in ("true", "null", "1.5", "[1]"):
        line = (
            f'{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{bad}}}}}'
        )
        info = message_info(line.encode())
        assert info is not None and info.cancels is None


def test_only_a_cancellation_names_a_request_it_cancels() -> None:
    for method in ("tools/call", "notifications/progress"):
        line = f'{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{"requestId":3}}}}'
        info = message_info(line.encode())
        assert info is not None and info.cancels is None
    line = '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}'
    info = message_info(line.encode())
    assert info is not None and info.cancels == 3


def test_with_request_id_rewrites_the_body_and_its_length() -> None:
    base = http_error(400, "bad thing", clause=None, headers=[(b"x-extra", b"1")])
    moved = with_request_id(base, "req-1")
    assert json.loads(moved.body) == {
        "jsonrpc": "2.0",
        "id": "req-1",
        "error": {"code": -32600, "message": "bad thing"},
    }
    assert moved.headers == (
        (b"x-extra", b"1"),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(moved.body)).encode()),
    )
    params = http_error(400, "bad thing", clause=None, code=-32602)
    assert (base.code, params.code) == (-32600, -32602)
    assert json.loads(with_request_id(params, 3).body)["error"]["code"] == -32602
    empty = http_error(405, "no", clause=None, body=False)
    assert empty.code is None
    assert with_request_id(empty, 1) is empty


def test_error_of_reads_code_and_message() -> None:
    body = b'{"jsonrpc":"2.0","error":{"code":-32600,"message":"bad","data":1}}'
    assert error_of(body) == (-32600, "bad")
    for bad in (
        b"{",
        b"[]",
        b'{"error":"x"}',
        b'{"error":{"code":"1","message":"m"}}',
        b'{"error":{"code":1,"message":2}}',
        b'{"result":{}}',
    ):
        assert error_of(bad) is None


def test_negotiated_version_reads_an_initialize_result() -> None:
    ok = b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{}}}'
    assert negotiated_version(ok) == "2025-06-18"
    for bad in (
        b"{",
        b'{"jsonrpc":"2.0","id":0,"result":[]}',
        b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":7}}',
        b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025\\n"}}',
        b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"caf\\u00e9"}}',
        b'{"jsonrpc":"2.0","id":0,"error":{"code":1,"message":"m"}}',
        b'{"jsonrpc":"2.0","method":"x","params":{"protocolVersion":"2025-06-18"}}',
    ):
        assert negotiated_version(bad) is None, bad

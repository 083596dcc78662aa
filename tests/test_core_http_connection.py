"""One HTTP/1.1 connection of the Streamable HTTP server (mcp_ref._http_connection),
bytes in and events out, without sockets or a clock: the exact bytes of each refusal,
the deadlines the driver reports with ``timed_out``, and when the connection goes on.

Source: RFC 9110 section 15 (status codes and reason phrases), RFC 9112 section 9.6
(``Connection: close``); 2025-06-18/basic/transports (the MCP endpoint).
"""

from __future__ import annotations

from typing import Any

import attrs
import h11
import pytest

from mcp_ref._http import HttpLimits
from mcp_ref._http_connection import CLOSED, NEED_DATA, Refusal, RequestReady, ServerConnection
from mcp_ref._http_server import Endpoint, gone

from ._http_core import CFG

HOST = b"host: localhost:8000\r\n"
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
POST = (
    b"POST /mcp HTTP/1.1\r\n" + HOST + b"accept: application/json, text/event-stream\r\n"
    b"content-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(PING)
)


def connection(**limits: Any) -> ServerConnection:
    return ServerConnection(attrs.evolve(CFG, limits=HttpLimits(**limits)), {})


def error_body(message: str) -> bytes:
    return b'{"jsonrpc":"2.0","error":{"code":-32000,"message":"%s"}}' % message.encode()


def test_closed_reads_as_its_name() -> None:
    assert repr(CLOSED) == "CLOSED"


def test_a_body_that_stops_coming_is_408_with_its_reason_and_connection_close() -> None:
    conn = connection()
    conn.receive_data(POST + PING[:5])
    assert conn.next_event() is NEED_DATA and conn.waiting_for == "body"
    late = conn.timed_out()
    assert isinstance(late, Refusal) and late.close
    assert late.error.status == 408 and late.error.clause is None
    assert late.error.detail == "request body not received in time"
    body = error_body("request body not received in time")
    assert late.data == (
        b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body)
    )
    assert conn.waiting_for is None


def test_a_head_that_stops_coming_is_408_with_its_reason() -> None:
    conn = connection()
    conn.receive_data(b"GET /mcp HTT")
    assert conn.next_event() is NEED_DATA and conn.waiting_for == "head"
    late = conn.timed_out()
    assert isinstance(late, Refusal) and late.close
    assert late.error.detail == "request head not received in time"
    assert late.data.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert late.data.endswith(b"connection: close\r\n\r\n" + error_body(late.error.detail))


def test_after_a_failed_write_a_late_head_closes_with_nothing_to_write() -> None:
    conn = connection()
    conn.receive_data(b"GET /mcp HTT")
    assert conn.next_event() is NEED_DATA
    conn.send_failed()
    late = conn.timed_out()
    assert isinstance(late, Refusal) and late.error.status == 408
    assert late.data == b"" and late.close


def test_a_refusal_says_its_status_and_reason_phrase() -> None:
    conn = connection()
    conn.receive_data(b"GET /nowhere HTTP/1.1\r\n" + HOST + b"\r\n")
    refused = conn.next_event()
    assert isinstance(refused, Refusal)
    assert refused.data.startswith(b"HTTP/1.1 404 Not Found\r\n")


def answer(conn: ServerConnection, *, finish: bool = True) -> None:
    conn.h11.send(h11.Response(status_code=202, headers=[(b"content-length", b"0")]))
    if finish:
        conn.h11.send(h11.EndOfMessage())


def test_requests_are_counted_and_the_last_allowed_is_marked() -> None:
    conn = connection(max_requests_per_connection=2)
    conn.receive_data(POST + PING + POST + PING)
    first = conn.next_event()
    assert isinstance(first, RequestReady) and first.body == PING and first.last is False
    assert conn.served == 1
    answer(conn)
    assert conn.next_cycle(first.last)
    second = conn.next_event()
    assert isinstance(second, RequestReady) and second.last is True and conn.served == 2
    answer(conn)
    assert not conn.next_cycle(second.last)  # the last: even a finished exchange ends


def test_no_next_request_while_the_answer_is_unfinished() -> None:
    conn = connection()
    conn.receive_data(POST + PING)
    assert isinstance(conn.next_event(), RequestReady)
    answer(conn, finish=False)
    assert not conn.next_cycle(last=False)


def test_a_get_is_ready_with_its_query_and_no_body() -> None:
    conn = connection(max_requests_per_connection=1)
    conn.receive_data(b"GET /mcp?a=1 HTTP/1.1\r\n" + HOST + b"accept: text/event-stream\r\n\r\n")
    ready = conn.next_event()
    assert isinstance(ready, RequestReady) and ready.endpoint is Endpoint.GET
    assert (ready.query, ready.body, ready.last) == ("a=1", b"", True)


def test_a_post_is_ready_with_its_query() -> None:
    conn = connection()
    conn.receive_data(POST.replace(b"/mcp", b"/messages?session_id=abc") + PING)
    ready = conn.next_event()
    assert isinstance(ready, RequestReady) and ready.endpoint is Endpoint.LEGACY_POST
    assert (ready.query, ready.body) == ("session_id=abc", PING)


def test_a_post_that_is_not_json_is_415_before_its_body() -> None:
    conn = connection()
    conn.receive_data(
        POST.replace(b"application/json\r\ncontent-length", b"text/plain\r\ncontent-length")
    )
    refused = conn.next_event()
    assert isinstance(refused, Refusal) and refused.error.status == 415 and refused.close


CHUNKED = POST.replace(b"content-length: %d" % len(PING), b"transfer-encoding: chunked")


def chunks(*parts: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def test_a_chunked_body_of_exactly_the_limit_passes_and_one_byte_more_is_413() -> None:
    conn = connection(max_body_bytes=len(PING))
    conn.receive_data(CHUNKED + chunks(PING[:20], PING[20:]))
    ready = conn.next_event()
    assert isinstance(ready, RequestReady) and ready.body == PING
    conn = connection(max_body_bytes=len(PING) - 1)
    conn.receive_data(CHUNKED + chunks(PING[:20], PING[20:]))  # each chunk under the limit
    refused = conn.next_event()
    assert isinstance(refused, Refusal) and refused.error.status == 413 and refused.close
    assert refused.error.detail == f"body larger than {len(PING) - 1} bytes"
    assert conn.waiting_for is None


def test_the_limit_counts_each_request_body_afresh() -> None:
    conn = connection(max_body_bytes=len(PING))
    conn.receive_data(POST + PING + CHUNKED + chunks(PING[:20], PING[20:]))
    first = conn.next_event()
    assert isinstance(first, RequestReady)
    answer(conn)
    assert conn.next_cycle(last=False)
    second = conn.next_event()
    assert isinstance(second, RequestReady) and second.body == PING


def test_a_head_still_arriving_past_the_limit_is_431() -> None:
    conn = connection(max_header_bytes=100)
    conn.receive_data(b"GET /mcp HTTP/1.1\r\nx-pad: " + b"a" * 200)
    refused = conn.next_event()
    assert isinstance(refused, Refusal) and refused.error.status == 431 and refused.close
    assert refused.data.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")


def h11_complaint(data: bytes) -> str:
    plain = h11.Connection(h11.SERVER)
    plain.receive_data(data)
    with pytest.raises(h11.RemoteProtocolError) as exc:
        while plain.next_event() is not h11.NEED_DATA:
            pass
    return str(exc.value)


@pytest.mark.parametrize(
    "data",
    [
        b"GARBAGE\r\n\r\n",
        CHUNKED + b"zz\r\n",  # a bad chunk-size line, mid-body
    ],
)
def test_a_request_that_breaks_http_is_400_with_h11s_reason_then_closes(data: bytes) -> None:
    conn = connection()
    conn.receive_data(data)
    refused = conn.next_event()
    assert isinstance(refused, Refusal) and refused.close
    assert refused.error.status == 400 and refused.error.detail == h11_complaint(data)
    assert refused.data.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert b"connection: close\r\n" in refused.data
    assert conn.waiting_for is None


def test_the_peer_gone_mid_body_is_400_then_closes() -> None:
    conn = connection()
    conn.receive_data(POST + PING[:3])
    assert conn.next_event() is NEED_DATA
    conn.receive_data(b"")
    refused = conn.next_event()
    assert isinstance(refused, Refusal) and refused.error.status == 400 and refused.close
    assert conn.waiting_for is None


def test_a_closed_connection_stays_closed() -> None:
    conn = connection()
    conn.receive_data(b"")
    assert conn.next_event() is CLOSED and conn.next_event() is CLOSED


def test_a_request_without_a_body_leaves_the_connection_ready_for_the_next() -> None:
    conn = connection()
    delete = b"DELETE /mcp HTTP/1.1\r\n" + HOST + b"mcp-session-id: abc\r\n\r\n"
    conn.receive_data(delete + POST + PING)
    ready = conn.next_event()
    assert isinstance(ready, RequestReady) and ready.endpoint is Endpoint.DELETE
    assert ready.body == b"" and conn.waiting_for is None
    answer(conn)
    assert conn.next_cycle(ready.last)
    after = conn.next_event()
    assert isinstance(after, RequestReady) and after.body == PING


def test_a_body_sent_with_a_get_is_read_and_ignored() -> None:
    conn = connection()
    get = (
        b"GET /mcp HTTP/1.1\r\n" + HOST + b"accept: text/event-stream\r\ncontent-length: 3\r\n\r\n"
    )
    conn.receive_data(get + b"ab")
    assert conn.next_event() is NEED_DATA and conn.waiting_for == "body"
    conn.receive_data(b"c")
    ready = conn.next_event()
    assert isinstance(ready, RequestReady) and ready.endpoint is Endpoint.GET
    assert ready.body == b""


def test_a_refusal_once_the_answer_has_begun_writes_nothing() -> None:
    conn = connection()
    conn.receive_data(POST + PING)
    ready = conn.next_event()
    assert isinstance(ready, RequestReady)
    err = gone()
    assert conn.refuse(err, last=False).startswith(b"HTTP/1.1 404 Not Found\r\n")
    conn = connection()
    conn.receive_data(POST + PING)
    assert isinstance(conn.next_event(), RequestReady)
    answer(conn, finish=False)
    assert conn.refuse(err, last=False) == b""


def test_a_refusal_after_the_body_keeps_the_connection_unless_last() -> None:
    for last in (False, True):
        conn = connection()
        conn.receive_data(POST + PING)
        assert isinstance(conn.next_event(), RequestReady)
        data = conn.refuse(gone(), last=last)
        assert (b"connection: close\r\n" in data) is last
        assert conn.next_cycle(last) is not last

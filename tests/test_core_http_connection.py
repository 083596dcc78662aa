"""One HTTP/1.1 connection of the Streamable HTTP server (mcp_ref._http_connection),
bytes in and events out, without sockets or a clock: the exact bytes of each refusal,
the deadlines the driver reports with ``timed_out``, and when the connection goes on.

Source: RFC 9110 section 15 (status codes and reason phrases), RFC 9112 section 9.6
(``Connection: close``); 2025-06-18/basic/transports (the MCP endpoint).
"""

from __future__ import annotations

from typing import Any

import attrs

from mcp_ref._http import HttpLimits
from mcp_ref._http_connection import CLOSED, NEED_DATA, Refusal, RequestReady, ServerConnection
from mcp_ref._http_server import ServerConfig

CFG = ServerConfig(
    path="/mcp",
    json_response=False,
    stateless=False,
    enable_get_stream=True,
    allowed_origins=("http://localhost:*",),
    allowed_hosts=("localhost:*",),
    limits=HttpLimits(),
    legacy_sse=True,
    legacy_sse_path="/sse",
    legacy_messages_path="/messages",
    retry_ms=1000,
)
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


def test_a_request_served_then_the_next_on_the_same_connection() -> None:
    conn = connection()
    conn.receive_data(POST + PING + POST + PING)
    first = conn.next_event()
    assert isinstance(first, RequestReady) and first.body == PING
    assert conn.served == 1

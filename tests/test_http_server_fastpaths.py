"""The Streamable HTTP server's fast paths keep its behaviour.

A response waits for its answer and watches its socket in one task (no watcher task);
head and body go out in one write; a body that came with its head is read without a
timer.  These tests pin down what that must not change: a client that leaves (half-closes)
while its answer is pending ends the response, and requests pipelined behind a pending
one are served, in order, once it is answered.
"""

from __future__ import annotations

import json
from typing import Any

import h11
import pytest
import trio

from mcp_ref.trio._http_server import open_http_server

from ._http_raw import ACCEPT_BOTH, open_session
from .test_transports_http import Control, call, make_server

TIMEOUT = 10


def _post(sid: str, body: bytes, port: int) -> bytes:
    """The bytes of one POST, framed by h11 (a fresh client connection object)."""
    conn = h11.Connection(h11.CLIENT)
    headers = [
        ("host", f"127.0.0.1:{port}"),
        ("accept", ACCEPT_BOTH),
        ("content-type", "application/json"),
        ("mcp-session-id", sid),
        ("mcp-protocol-version", "2025-06-18"),
        ("content-length", str(len(body))),
    ]
    out = conn.send(h11.Request(method="POST", target="/mcp", headers=headers))
    out += conn.send(h11.Data(data=body))
    out += conn.send(h11.EndOfMessage())
    return out


async def _read_all(stream: trio.SocketStream) -> bytes:
    """Everything the server sends until it closes the connection."""
    got = b""
    while chunk := await stream.receive_some(65536):
        got += chunk
    return got


@pytest.mark.parametrize("json_response", [True, False])
async def test_a_client_that_leaves_ends_its_pending_answer(json_response: bool) -> None:
    """The client half-closes while its request (which never finishes) is pending: the
    server stops waiting, sends no answer and closes the connection."""
    ctrl = Control()
    with trio.fail_after(TIMEOUT):
        async with open_http_server(make_server(ctrl), json_response=json_response) as info:
            sid, _ = await open_session(info.port, version="2025-06-18")
            stream = await trio.open_tcp_stream("127.0.0.1", info.port)
            await stream.send_all(_post(sid, call(2, "block"), info.port))
            if not json_response:
                # The SSE response starts before the answer: wait for its head.
                head = b""
                while b"\r\n\r\n" not in head:
                    head += await stream.receive_some(65536)
                assert head.startswith(b"HTTP/1.1 200")
            await stream.send_eof()
            rest = await _read_all(stream)
            assert b'"id":2' not in rest
            if json_response:
                assert rest == b""  # no response at all
            await stream.aclose()


@pytest.mark.parametrize("json_response", [True, False])
async def test_pipelined_requests_are_answered_in_order(json_response: bool) -> None:
    """Three POSTs in one write: the second and third wait (read into h11 meanwhile)
    and are answered after the first, on the same connection."""
    ctrl = Control()
    with trio.fail_after(TIMEOUT):
        async with open_http_server(make_server(ctrl), json_response=json_response) as info:
            sid, _ = await open_session(info.port, version="2025-06-18")
            stream = await trio.open_tcp_stream("127.0.0.1", info.port)
            await stream.send_all(
                b"".join(
                    _post(sid, call(rid, "echo", {"text": f"t{rid}"}), info.port)
                    for rid in (2, 3, 4)
                )
            )
            answers: list[Any] = []
            pending = b""
            for _ in range(3):
                # A fresh h11 client per response (h11 itself never pipelines).
                parser = h11.Connection(h11.CLIENT)
                parser.send(h11.Request(method="POST", target="/", headers=[("host", "x")]))
                parser.send(h11.EndOfMessage())
                if pending:
                    parser.receive_data(pending)  # b"" would mean end of input
                body = b""
                while True:
                    event = parser.next_event()
                    if event is h11.NEED_DATA:
                        parser.receive_data(await stream.receive_some(65536))
                    elif isinstance(event, h11.Response):
                        assert event.status_code == 200
                    elif isinstance(event, h11.Data):
                        body += event.data
                    elif isinstance(event, h11.EndOfMessage):
                        break
                pending = parser.trailing_data[0]
                if json_response:
                    answers.append(json.loads(body))
                else:
                    (line,) = [x for x in body.split(b"\n") if x.startswith(b"data: {")]
                    answers.append(json.loads(line[len(b"data: ") :]))
            assert [a["id"] for a in answers] == [2, 3, 4]
            assert [a["result"]["content"][0]["text"] for a in answers] == ["t2", "t3", "t4"]
            await stream.aclose()

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


def _bare_server() -> Any:
    from mcp_ref._http import HttpLimits
    from mcp_ref.trio._http_server import _HttpServer

    return _HttpServer(
        make_server(Control()),
        path="/mcp",
        json_response=True,
        stateless=False,
        enable_get_stream=True,
        allowed_origins=(),
        allowed_hosts=("*",),
        limits=HttpLimits(),
        legacy_sse=False,
        legacy_sse_path="/sse",
        legacy_messages_path="/messages",
        retry_ms=1000,
        session_kw={},
    )


def _request(target: bytes = b"/mcp", **headers: str) -> h11.Request:
    items = [("host", "x")] + [(k.replace("_", "-"), v) for k, v in headers.items()]
    return h11.Request(method="POST", target=target, headers=items)


async def test_header_rule_outcomes_are_shared_per_header_set_and_bounded() -> None:
    from mcp_ref.trio._http_server import _MAX_MEMOS

    server = _bare_server()
    a = server.headers_of(_request(content_length="10", accept="a"))
    b = server.headers_of(_request(content_length="99", accept="a"))
    c = server.headers_of(_request(content_length="10", accept="b"))
    d = server.headers_of(_request(b"/other", content_length="10", accept="a"))
    assert a.memo is b.memo  # only Content-Length differs
    assert a.memo is not c.memo and a.memo is not d.memo
    assert list(b) == [(b"host", b"x"), (b"accept", b"a"), (b"content-length", b"99")]
    assert b.size == len(b"/mcp") + sum(len(k) + len(v) + 4 for k, v in b)
    calls: list[int] = []
    assert a.rule("r", lambda: calls.append(1) or "x") == "x"
    assert b.rule("r", lambda: calls.append(2) or "y") == "x"  # computed once
    assert c.rule("r", lambda: calls.append(3) or "z") == "z"
    assert calls == [1, 3]
    for i in range(3 * _MAX_MEMOS):
        server.headers_of(_request(x_n=str(i)))
        assert len(server._memos) <= _MAX_MEMOS


async def test_json_headers_are_the_rules_headers() -> None:
    from mcp_ref import _http as rules
    from mcp_ref.trio._http_server import _HttpSession

    server = _bare_server()
    sess = _HttpSession(server, "ab" * 16, kind="streamable")
    for sid in ("ab" * 16, None):
        for length in (0, 7, 1234, 10**7):
            assert sess.json_headers(sid, length) == rules.response_headers(
                rules.PostReply.JSON, session_id=sid, content_length=length
            )

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
import hypothesis
import hypothesis.strategies as st
import pytest
import trio
import trio.testing

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


# -- requests served without h11: the same requests, states and bytes as h11 -------------


def _h11_parse(data: bytes) -> tuple[Any, bytes] | None:
    """What h11 makes of ``data``: (Request, body) when it holds one whole request."""
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(data)
    try:
        request = conn.next_event()
        if not isinstance(request, h11.Request):
            return None
        body = b""
        while True:
            event = conn.next_event()
            if isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                return request, body
            else:
                return None
    except h11.RemoteProtocolError:
        return None


def _fast_parse(data: bytes) -> tuple[Any, Any] | None:
    from mcp_ref.trio._http_common import H11Stream

    h = H11Stream(trio.testing.memory_stream_pair()[0], h11.SERVER, fast_requests=True)
    request = h._fast_cycle(data)
    return None if request is None else (request, h)


def _same_as_h11(data: bytes) -> bool:
    """Fast path taken: it must equal h11's reading.  Returns whether it was taken."""
    fast = _fast_parse(data)
    if fast is None:
        return False
    request, h = fast
    expected = _h11_parse(data)
    assert expected is not None, data
    want, body = expected
    assert request.method == want.method
    assert request.target == want.target
    assert request.http_version == want.http_version
    assert list(request.headers) == list(want.headers)
    got_body = b""
    while not isinstance(event := h.conn.next_event(), h11.EndOfMessage):
        got_body += event.data
    assert got_body == body
    assert h.conn.their_state is h11.DONE and h.conn.our_state is h11.SEND_RESPONSE
    return True


PLAIN = (
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nContent-Type: application/json\r\n"
    b"Accept: application/json, text/event-stream\r\nContent-Length: 2\r\n\r\n{}"
)


@pytest.mark.parametrize(
    "data",
    [
        PLAIN,
        PLAIN.replace(b"Content-Length: 2", b"content-length:2  "),
        PLAIN.replace(b"Host: 127.0.0.1:8000\r\n", b"").replace(
            b"Content-Length: 2\r\n", b"Content-Length: 2\r\nHost: h\r\n"
        ),
        b"GET /mcp HTTP/1.1\r\nhost: x\r\naccept: text/event-stream\r\n\r\n",
        b"DELETE /mcp?a=b HTTP/1.1\r\nHost: x\r\nX-Empty:\r\nX-Tab:\tv  a\t\r\n\r\n",
        b"POST /mcp HTTP/1.1\r\nHost: x\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n",
        b"POST /mcp HTTP/1.1\r\nHost: x\r\nX-Obs: \xe9t\xe9\r\nContent-Length: 3\r\n\r\nabc",
        b"POST /mcp HTTP/1.1\r\nContent-Length: 00003\r\nHost: x\r\n\r\nabcNEXT",
    ],
)
async def test_plain_requests_are_read_as_h11_reads_them(data: bytes) -> None:
    assert _same_as_h11(data)


@pytest.mark.parametrize(
    "data",
    [
        PLAIN[:-1],  # the body is not all here
        PLAIN[:40],  # nor the head
        PLAIN.replace(b"HTTP/1.1", b"HTTP/1.0"),
        PLAIN.replace(b"POST", b"HEAD"),
        PLAIN.replace(b"POST", b"PUT"),
        PLAIN.replace(b"Content-Length: 2", b"Transfer-Encoding: chunked"),
        PLAIN.replace(b"Content-Length: 2", b"Content-Length: 2\r\nContent-Length: 2"),
        PLAIN.replace(b"Content-Length: 2", b"Content-Length: 2, 2"),
        PLAIN.replace(b"Content-Length: 2", b"Content-Length: 2\r\nExpect: 100-continue"),
        PLAIN.replace(b"Content-Length: 2", b"Content-Length: 2\r\nConnection: close"),
        PLAIN.replace(b"Content-Length: 2", b"Content-Length: 2\r\nUpgrade: h2c"),
        PLAIN.replace(b"Content-Length: 2", b"Content-Length: 2\r\nHost: again"),
        PLAIN.replace(b"Host: 127.0.0.1:8000\r\n", b""),
        PLAIN.replace(b"Accept:", b" Accept:"),  # obs-fold
        PLAIN.replace(b"Accept:", b"Accept :"),
        PLAIN.replace(b"\r\n", b"\n"),
        PLAIN.replace(b"/mcp", b"/m cp"),
        PLAIN.replace(b"Accept: ", b"Accept: \x00"),
    ],
)
async def test_other_requests_are_left_to_h11(data: bytes) -> None:
    assert _fast_parse(data) is None


def _responses() -> list[list[Any]]:
    sid = (b"mcp-session-id", b"ab" * 16)
    return [
        [
            h11.Response(
                status_code=200,
                headers=[(b"content-type", b"application/json"), (b"content-length", b"5"), sid],
                reason=b"OK",
            ),
            h11.Data(data=b"12345"),
            h11.EndOfMessage(),
        ],
        [
            h11.Response(
                status_code=200,
                headers=[(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")],
                reason=b"OK",
            ),
            h11.Data(data=b"event: message\ndata: {}\n\n"),
            h11.Data(data=b""),
            h11.Data(data=b": keepalive\n\n"),
            h11.EndOfMessage(),
        ],
        [
            h11.Response(
                status_code=202,
                headers=[(b"content-length", b"0"), (b"connection", b"close")],
                reason=b"Accepted",
            ),
            h11.EndOfMessage(),
        ],
        [
            h11.Response(status_code=204, headers=[(b"x-a", b"1")], reason=b"No Content"),
            h11.EndOfMessage(),
        ],
        [
            h11.Response(
                status_code=200,
                headers=[
                    (b"Transfer-Encoding", b"chunked"),
                    (b"content-length", b"7"),
                    (b"x-b", b"2"),
                ],
            ),
            h11.Data(data=b"abc"),
            h11.EndOfMessage(),
        ],
        [
            h11.Response(
                status_code=404,
                headers=[(b"Content-Type", b"application/json"), (b"Content-Length", b"2")],
                reason=b"Not Found",
            ),
            h11.Data(data=b"{}"),
            h11.EndOfMessage(),
        ],
    ]


@pytest.mark.parametrize("case", range(6))
async def test_fast_cycles_write_h11s_bytes_and_states(case: int) -> None:
    events = _responses()[case]
    fast = _fast_parse(PLAIN)
    assert fast is not None
    _request, h = fast
    real = h11.Connection(h11.SERVER)
    real.receive_data(PLAIN)
    for _ in range(3):
        real.next_event()  # Request, Data, EndOfMessage
        h.conn.next_event()
    for event in events:
        assert h.conn.send(event) == (real.send(event) or b"")
        assert (h.conn.our_state, h.conn.their_state) == (real.our_state, real.their_state)
    assert h.conn.trailing_data == real.trailing_data


async def test_a_fast_cycle_refuses_what_h11_refuses() -> None:
    for events in (
        [h11.Data(data=b"x")],  # no response yet
        [h11.Response(status_code=200, headers=[(b"content-length", b"1")]), h11.EndOfMessage()],
        [
            h11.Response(status_code=200, headers=[(b"content-length", b"1")]),
            h11.Data(data=b"xy"),
        ],
    ):
        fast = _fast_parse(PLAIN)
        assert fast is not None
        conn = fast[1].conn
        with pytest.raises(h11.LocalProtocolError):
            for event in events:
                conn.send(event)


_TOKEN = "-!#$%&'*+.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_names = st.sampled_from(["accept", "X-A", "connection", "host", "content-length", "Expect"]) | (
    st.text(alphabet=_TOKEN, min_size=1, max_size=6)
)
_values = (
    st.sampled_from([b"", b"keep-alive", b"close", b"a\tb", b"\xff\x80", b" x "])
    | (st.binary(max_size=6).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b"")))
    | st.text(alphabet="abc ,;=\t/*", max_size=8).map(str.encode)
)


@st.composite
def _requests(draw: st.DrawFn) -> bytes:
    """Mostly plain requests (one Host, a Content-Length matching the body), with odd
    names, values, spacing and bytes mixed in."""
    method = draw(st.sampled_from([b"POST", b"GET", b"DELETE", b"HEAD"]))
    target = draw(st.sampled_from([b"/mcp", b"/m?x=1", b"*", b"/\x80", b"/a b"]))
    body = draw(st.binary(max_size=8))
    lines = [
        n.encode() + b":" + v for n, v in draw(st.lists(st.tuples(_names, _values), max_size=4))
    ]
    lines.insert(draw(st.integers(0, len(lines))), b"Host: " + draw(_values))
    if draw(st.booleans()):
        pad = draw(st.sampled_from([b"", b" ", b"\t", b"  "]))
        zeros = draw(st.sampled_from([b"", b"0", b"00"]))
        name = draw(st.sampled_from([b"Content-Length", b"content-length", b"CONTENT-length"]))
        cl = name + b":" + pad + zeros + str(len(body)).encode() + pad
        lines.insert(draw(st.integers(0, len(lines))), cl)
    head = method + b" " + target + b" HTTP/1.1\r\n" + b"".join(x + b"\r\n" for x in lines)
    return head + b"\r\n" + body + draw(st.sampled_from([b"", b"GET / HTTP/1.1\r\n"]))


@hypothesis.settings(max_examples=500, deadline=None)
@hypothesis.given(data=_requests())
def test_any_request_the_fast_path_takes_is_h11s(data: bytes) -> None:
    _same_as_h11(data)


async def test_pipelined_leftover_starts_the_next_cycle() -> None:
    """What follows a fast request stays for the next cycle, fast or not."""
    from mcp_ref.trio._http_common import FastRequest, H11Stream

    left, right = trio.testing.memory_stream_pair()
    h = H11Stream(left, h11.SERVER, fast_requests=True)
    chunked = PLAIN.replace(b"Content-Length: 2", b"Transfer-Encoding: chunked").replace(
        b"\r\n\r\n{}", b"\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
    )
    await right.send_all(PLAIN + PLAIN + chunked)
    for expected in (FastRequest, FastRequest, h11.Request):
        request = await h.next_event()
        assert type(request) is expected
        events = []
        while not isinstance(event := await h.next_event(), h11.EndOfMessage):
            events.append(event)
        assert b"".join(e.data for e in events) == b"{}"
        await h.send(
            h11.Response(status_code=202, headers=[(b"content-length", b"0")]),
            h11.EndOfMessage(),
        )
        h.conn.start_next_cycle()
    await right.send_eof()
    assert isinstance(await h.next_event(), h11.ConnectionClosed)


@pytest.mark.parametrize(
    ("status", "headers", "body"),
    [
        (200, [(b"content-type", b"application/json"), (b"content-length", b"2")], b"{}"),
        (
            200,
            [
                (b"content-type", b"application/json"),
                (b"content-length", b"2"),
                (b"mcp-session-id", b"ab" * 16),
                (b"connection", b"close"),
            ],
            b"{}",
        ),
        (200, [(b"content-length", b"3"), (b"x-host", b"h"), (b"host", b"odd")], b"abc"),
        (200, [(b"content-length", b"9")], b"abc"),  # wrong length: h11 refuses it
        (200, [(b"content-type", b"text/plain")], b"abc"),  # no length: chunked, by h11
        (204, [(b"content-length", b"0")], b""),
    ],
)
async def test_send_whole_writes_what_the_three_events_write(
    status: int, headers: list[tuple[bytes, bytes]], body: bytes
) -> None:
    """send_whole on a fast cycle gives h11's bytes and states, or h11's error."""
    from mcp_ref.trio._http_common import H11Stream

    async def run(fast: bool) -> tuple[bytes, Any, Any] | type[Exception]:
        left, right = trio.testing.memory_stream_pair()
        h = H11Stream(left, h11.SERVER, fast_requests=fast)
        await right.send_all(PLAIN)
        await h.next_event()
        while not isinstance(await h.next_event(), h11.EndOfMessage):
            pass
        try:
            await h.send_whole(status, b"OK", list(headers), body, valid_headers=True)
        except h11.LocalProtocolError:
            return h11.LocalProtocolError
        got = b""
        while chunk := await _drain(right):
            got += chunk
        return got, h.conn.our_state, h.conn.their_state

    assert await run(True) == await run(False)


async def _drain(stream: Any) -> bytes:
    with trio.move_on_after(0.01):
        return bytes(await stream.receive_some(65536))
    return b""


@pytest.mark.parametrize("first", [None, b"event: endpoint\ndata: /messages\n\n"])
@pytest.mark.parametrize("close", [False, True])
async def test_send_head_writes_what_the_response_event_writes(
    first: bytes | None, close: bool
) -> None:
    from mcp_ref import _http as rules
    from mcp_ref.trio._http_common import H11Stream
    from mcp_ref.trio._http_server import _HttpSession

    sess = _HttpSession(_bare_server(), "cd" * 16, kind="streamable")
    for sid in ("cd" * 16, None):
        assert sess.sse_headers(sid) == rules.response_headers(rules.PostReply.SSE, session_id=sid)

    async def run(fast: bool) -> tuple[bytes, Any, Any]:
        left, right = trio.testing.memory_stream_pair()
        h = H11Stream(left, h11.SERVER, fast_requests=fast)
        await right.send_all(PLAIN)
        await h.next_event()
        while not isinstance(await h.next_event(), h11.EndOfMessage):
            pass
        headers = sess.sse_headers("cd" * 16)
        if close:
            headers.append((b"connection", b"close"))
        then = None if first is None else h11.Data(data=first)
        await h.send_head(200, b"OK", headers, valid_headers=True, then=then)
        await h.send(h11.Data(data=b"data: x\n\n"), h11.EndOfMessage())
        got = b""
        while chunk := await _drain(right):
            got += chunk
        return got, h.conn.our_state, h.conn.their_state

    assert await run(True) == await run(False)

"""Arbitrary HTTP requests to the Streamable HTTP server: every one gets a whole answer.

Where tests/test_http_fuzz.py damages bodies, this file damages everything around them:
the method, the target (origin-form, absolute-form, asterisk, junk), the headers (the
ones MCP reads, with odd, repeated or missing values), the framing (a Content-Length
that lies, chunked encoding whole or broken) and the pace (a request sent a few bytes at
a time).  The invariant, for each request: within a bound the server sends a complete
HTTP response (status line, headers, and the whole body, except for an event stream it
keeps open by design, whose head is enough) or closes the connection after a response
it could not finish; it never stays silent.  And the server still serves: a clean
``ping`` session works after every batch.
"""

from __future__ import annotations

import os
from typing import Any

import h11
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_ref.examples.everything import make_server
from mcp_ref.trio import open_http_server

from ._http_raw import RawConnection, open_session, request_body

EXAMPLES = int(os.environ.get("MCP_REF_FUZZ_EXAMPLES", "300"))
ANSWER_SECONDS = 5.0
VERSION = "2025-06-18"

_methods = st.sampled_from([b"POST", b"GET", b"DELETE", b"PUT", b"OPTIONS", b"HEAD", b"PATCH"])
_targets = st.sampled_from(
    [
        b"/mcp",
        b"/mcp?x=1",
        b"/sse",
        b"/messages",
        b"/messages?session_id=nope",
        b"http://127.0.0.1/mcp",
        b"http://evil.example/mcp",
        b"//evil.example/mcp",
        b"*",
        b"/",
        b"/%00",
        b"/mcp/../mcp",
    ]
)
_values = st.one_of(
    st.sampled_from(
        [
            b"application/json",
            b"text/event-stream",
            b"application/json, text/event-stream",
            b"*/*",
            b"text/plain",
            b"application/json; charset=utf-16",
            b"2025-06-18",
            b"1999-01-01",
            b"",
            b"0",
            b"-1",
            b"99999999999999999999",
            b"localhost",
            b"127.0.0.1",
            b"evil.example",
            b"http://evil.example",
            b"null",
            b"p1/1",
            b"abc",
        ]
    ),
    st.binary(max_size=12).map(lambda b: bytes(c for c in b if c not in b"\r\n")),
)
_names = st.sampled_from(
    [
        b"accept",
        b"content-type",
        b"mcp-session-id",
        b"mcp-protocol-version",
        b"origin",
        b"last-event-id",
        b"host",
        b"x-junk",
        b"expect",
    ]
)
_bodies = st.one_of(
    st.just(request_body(1, "ping")),
    st.just(b""),
    st.binary(max_size=40),
    st.just(b'{"jsonrpc":"2.0","method":"notifications/initialized"}'),
)
_framings = st.sampled_from(["length", "short", "long", "chunked", "bad-chunked", "none"])


@st.composite
def requests(draw: st.DrawFn) -> tuple[bytes, int]:
    """The bytes of one request, and the size of the pieces to send it in."""
    method = draw(_methods)
    target = draw(_targets)
    headers = [(b"host", draw(st.sampled_from([b"127.0.0.1", b"localhost", b"evil.example"])))]
    headers += draw(st.lists(st.tuples(_names, _values), max_size=5))
    body = draw(_bodies)
    framing = draw(_framings)
    if framing == "length":
        headers.append((b"content-length", str(len(body)).encode()))
        tail = body
    elif framing == "short":  # says more than comes: the server must time out or not wait
        headers.append((b"content-length", str(len(body) + 1).encode()))
        tail = body
    elif framing == "long":  # says less than comes: the rest is a (bad) next request
        headers.append((b"content-length", str(max(len(body) - 1, 0)).encode()))
        tail = body
    elif framing == "chunked":
        headers.append((b"transfer-encoding", b"chunked"))
        tail = (b"%x\r\n%s\r\n" % (len(body), body) if body else b"") + b"0\r\n\r\n"
    elif framing == "bad-chunked":
        headers.append((b"transfer-encoding", b"chunked"))
        tail = b"zz\r\n" + body + b"\r\n0\r\n\r\n"
    else:
        tail = body
    head = method + b" " + target + b" HTTP/1.1\r\n"
    head += b"".join(name + b": " + value + b"\r\n" for name, value in headers)
    piece = draw(st.sampled_from([1 << 20, 1 << 20, 7, 1]))
    return head + b"\r\n" + tail, piece


async def _answer_of(port: int, data: bytes, piece: int) -> str:
    """Send one request; return what came back: ``"answered <status>"``, or the reason
    it was not a whole answer."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    client = h11.Connection(h11.CLIENT)
    # Let h11 parse the server's answer whatever we sent: it expects the answer to a GET
    # (to a HEAD for a HEAD: that answer has no body, whatever its Content-Length).
    method = "HEAD" if data.startswith(b"HEAD ") else "GET"
    client.send(h11.Request(method=method, target="/", headers=[("host", "x")]))
    client.send(h11.EndOfMessage())
    async with stream:
        with trio.move_on_after(ANSWER_SECONDS):
            for start in range(0, len(data), piece):
                try:
                    await stream.send_all(data[start : start + piece])
                except trio.BrokenResourceError:
                    break  # the server answered and closed before the rest: read it
            status = None
            while True:
                try:
                    event = client.next_event()
                except h11.RemoteProtocolError as exc:
                    return f"broken answer: {exc}"
                if event is h11.NEED_DATA:
                    try:
                        chunk = await stream.receive_some(65536)
                    except trio.BrokenResourceError:
                        chunk = b""
                    client.receive_data(chunk)
                    continue
                if isinstance(event, h11.Response):
                    status = event.status_code
                    media = dict(event.headers).get(b"content-type", b"")
                    if status == 200 and media.startswith(b"text/event-stream"):
                        return "answered 200 stream"  # open by design: the head is enough
                elif isinstance(event, h11.EndOfMessage):
                    return f"answered {status}"
                elif isinstance(event, h11.ConnectionClosed):
                    if status is None:
                        return "closed without an answer"
                    return f"closed mid-answer after {status}"
        return "no answer in time"


def _acceptable(outcome: str, data: bytes) -> bool:
    if outcome.startswith("answered"):
        return True
    # A Content-Length that promises more than comes: the server cannot know the body
    # ended; it answers 408 only after its idle timeout (longer than this test waits).
    return outcome == "no answer in time" and b"content-length" in data.lower()


@pytest.mark.parametrize("mode", ["sse", "json", "stateless"])
def test_every_request_head_gets_a_whole_answer(mode: str) -> None:
    kw: dict[str, Any] = {
        "sse": {},
        "json": {"json_response": True},
        "stateless": {"stateless": True},
    }[mode]

    async def batch(cases: list[tuple[bytes, int]]) -> list[str]:
        problems: list[str] = []
        with trio.fail_after(ANSWER_SECONDS * (len(cases) + 4)):
            async with open_http_server(make_server(), **kw) as info:
                outcomes: list[tuple[str, bytes]] = []

                async def one(data: bytes, piece: int) -> None:
                    outcomes.append((await _answer_of(info.port, data, piece), data))

                async with trio.open_nursery() as nursery:
                    for data, piece in cases:
                        nursery.start_soon(one, data, piece)
                problems += [f"{o}: {d[:300]!r}" for o, d in outcomes if not _acceptable(o, d)]
                if mode != "stateless":
                    await open_session(info.port, version=VERSION)  # still serving
                else:
                    conn = await RawConnection.open(info.port)
                    ans = await conn.request("POST", body=request_body(1, "ping"), version=VERSION)
                    assert ans.status == 200
                    await conn.aclose()
        return problems

    @settings(
        max_examples=max(EXAMPLES // 10, 5),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.lists(requests(), min_size=1, max_size=10))
    def run(cases: list[tuple[bytes, int]]) -> None:
        problems = trio.run(batch, cases)
        assert not problems, "\n".join(problems)

    run()

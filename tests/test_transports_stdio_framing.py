"""2025-06-18/basic/transports#stdio: newline-delimited framing, bounded and linear."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_ref import INVALID_REQUEST, SERVER, Connection, LocalProtocolError, RemoteProtocolError
from mcp_ref._framing import TOO_LONG, LineBuffer, frame

spec = pytest.mark.spec


def lines_of(buf: LineBuffer) -> list[object]:
    out = []
    while (line := buf.next_line()) is not None:
        out.append(line)
    return out


def test_whole_and_byte_at_a_time_and_trailing() -> None:
    data = b'{"a":1}\n{"b":2}\r\n{"c":'
    buf = LineBuffer(100)
    buf.feed(data)
    assert lines_of(buf) == [b'{"a":1}', b'{"b":2}']
    assert buf.take_rest() == b'{"c":'
    buf = LineBuffer(100)
    got = []
    for i in range(len(data)):
        buf.feed(data[i : i + 1])
        got += lines_of(buf)
    assert got == [b'{"a":1}', b'{"b":2}'] and len(buf) == 5


@given(
    st.lists(st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")), max_size=20),
    st.integers(min_value=1, max_value=17),
)
def test_any_chunking_gives_the_same_lines(lines: list[bytes], chunk: int) -> None:
    data = b"".join(line + b"\n" for line in lines)
    buf = LineBuffer(1000)
    got = []
    for i in range(0, len(data), chunk):
        buf.feed(data[i : i + chunk])
        got += lines_of(buf)
    assert got == [line[:-1] if line.endswith(b"\r") else line for line in lines]


def test_over_long_lines_are_reported_once_and_skipped() -> None:
    buf = LineBuffer(10)
    buf.feed(b"x" * 25)
    assert lines_of(buf) == [TOO_LONG]
    assert len(buf) == 0  # nothing of it is kept
    buf.feed(b"y" * 1000)
    assert lines_of(buf) == [] and len(buf) == 0
    buf.feed(b"zz\nok\n")
    assert lines_of(buf) == [b"ok"]
    buf.feed(b"a" * 11 + b"\nfine\n")  # too long but complete in one feed
    assert lines_of(buf) == [TOO_LONG, b"fine"]


def test_byte_at_a_time_is_linear() -> None:
    # 200 KB fed one byte at a time stays fast because the scan position is kept.
    buf = LineBuffer()
    for _ in range(200_000):
        buf.feed(b"a")
        assert buf.next_line() is None
    buf.feed(b"\n")
    assert buf.next_line() == b"a" * 200_000


@spec("2025-06-18/basic/transports#stdio.1")
def test_sending_refuses_embedded_newlines() -> None:
    with pytest.raises(LocalProtocolError):
        frame(b'{"a":\n1}')
    assert frame(b"{}") == b"{}\n"


def test_connection_refuses_oversized_message_and_survives() -> None:
    conn = Connection(SERVER, max_message_bytes=64)
    conn.receive_data(
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * 100 + b'"}}\n'
    )
    with pytest.raises(RemoteProtocolError) as exc:
        conn.next_event()
    assert exc.value.code == INVALID_REQUEST and exc.value.event_hint is not None
    conn.receive_data(b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
    assert conn.next_event().id == 2


def test_oversized_request_is_refused_with_its_id() -> None:
    conn = Connection(SERVER, max_message_bytes=160)
    big = b'{"jsonrpc":"2.0","id":"big-1","method":"ping","params":{"x":"' + b"a" * 400 + b'"}}\n'
    # Whole, then in two pieces (the second piece completes the line).
    for data, complete in ((big, True), (big[:30], False), (big[30:], True)):
        conn.receive_data(data)
        if not complete:
            continue
        with pytest.raises(RemoteProtocolError) as exc:
            conn.next_event()
        assert exc.value.event_hint is not None and exc.value.event_hint.id == "big-1"
        assert exc.value.code == INVALID_REQUEST
        conn.send(exc.value.event_hint)


def test_oversized_response_fails_our_request_at_once() -> None:
    from mcp_ref import CLIENT, ErrorResponse, Request

    from ._pair import initialized_pair

    client, _ = initialized_pair(max_message_bytes=400)
    client.send(Request(id=9, method="tools/list"))
    client.receive_data(b'{"jsonrpc":"2.0","id":9,"result":{"tools":[' + b"{}," * 200 + b"{}]}}\n")
    ev = client.next_event()
    assert isinstance(ev, ErrorResponse) and ev.id == 9 and ev.method == "tools/list"
    assert client.requests_in_flight() == ([], [])
    assert CLIENT is client.our_role

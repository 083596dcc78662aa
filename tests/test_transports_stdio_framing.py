"""2025-06-18/basic/transports#stdio: newline-delimited framing, bounded and linear."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_ref import INVALID_REQUEST, SERVER, Connection, RemoteProtocolError
from mcp_ref._framing import TOO_LONG, LineBuffer
from mcp_ref.events import ErrorResponse
from tests._examples import examples

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


# -- the buffer against a reference model, fed in random chunks ------------------------

COMPACT_AFTER = 65536  # bytes consumed before LineBuffer may compact (see next_line)


def model_lines(data: bytes, limit: int) -> tuple[list[object], bytes]:
    """What a newline-delimited reader must produce: the reference model.

    Split on b"\n"; a line drops one trailing b"\r"; a line longer than ``limit`` bytes
    is TOO_LONG (once); an unterminated tail longer than ``limit`` is TOO_LONG too (it
    can never become a valid line), else it is what ``take_rest`` returns.
    """
    *complete, rest = data.split(b"\n")
    out: list[object] = []
    for line in complete:
        line = line[:-1] if line.endswith(b"\r") else line
        out.append(TOO_LONG if len(line) > limit else line)
    if len(rest) > limit:
        out.append(TOO_LONG)
        rest = b""
    return out, rest


@st.composite
def framing_cases(draw: st.DrawFn) -> tuple[int, bytes, list[int]]:
    """(limit, stream, cut points): lines of exactly ``limit`` bytes and one over, short
    and blank lines, CRLF ends, and lines long enough (with big enough chunks) that the
    buffer consumes more than COMPACT_AFTER bytes and must compact."""
    limit = draw(st.integers(1, 64) | st.integers(1000, 30000))
    length = (
        st.integers(0, 5)
        | st.sampled_from([max(limit - 1, 0), limit, limit + 1])
        | st.integers(limit + 2, 2 * limit + 3)
        | st.integers(COMPACT_AFTER - 1000, COMPACT_AFTER + 30000)
    )
    specs = draw(
        st.lists(st.tuples(length, st.booleans(), st.sampled_from(b"ax{} \t\x00\xff")), max_size=12)
    )
    parts = []
    for n, crlf, fill in specs:
        end = b"\r\n" if crlf else b"\n"
        parts.append(bytes([fill]) * n + end)
    tail = draw(st.sampled_from([0, 1, limit, limit + 1]))  # an unterminated last line
    data = b"".join(parts) + b"y" * tail
    if len(data) <= 600 and draw(st.booleans()):
        return limit, data, list(range(1, len(data)))  # one byte at a time
    ends = [i for i, b in enumerate(data) if b == 0x0A]
    near = st.tuples(st.sampled_from(ends), st.integers(-2, 1)).map(sum) if ends else st.nothing()
    cuts = draw(st.lists(st.integers(0, len(data)) | near, max_size=30))
    return limit, data, sorted({c for c in cuts if 0 < c < len(data)})


@settings(max_examples=examples(400), deadline=None)
@given(framing_cases())
def test_random_chunks_match_the_reference_model(case: tuple[int, bytes, list[int]]) -> None:
    """Any chunking gives the model's lines (exactly ``limit`` bytes accepted, one more
    refused once as TOO_LONG); after each drain the buffer holds at most ``limit``
    bytes (one more: the CR of a CRLF whose LF is still to come), and its consumed-but-kept prefix is at most max(COMPACT_AFTER, held)
    (compaction works)."""
    limit, data, cuts = case
    buf = LineBuffer(limit)
    got: list[object] = []
    for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True):
        buf.feed(data[a:b])
        got += lines_of(buf)
        assert len(buf) <= limit + 1  # a line of ``limit`` bytes and the CR of its CRLF
        assert len(buf._buf) - len(buf) <= max(COMPACT_AFTER, len(buf))
    want, rest = model_lines(data, limit)
    assert got == want
    assert buf.take_rest() == rest
    assert len(buf) == 0


def test_line_of_exactly_max_bytes_with_crlf_split_between_cr_and_lf() -> None:
    """A held trailing CR is not counted against the limit before its LF arrives; a CR
    followed by more of the line is."""
    buf = LineBuffer(3)
    buf.feed(b"abc\r")
    assert lines_of(buf) == []
    buf.feed(b"\n")
    assert lines_of(buf) == [b"abc"]
    buf.feed(b"abc\r")
    buf.feed(b"d\n")
    assert lines_of(buf) == [TOO_LONG]


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
def test_sent_messages_hold_no_embedded_newline() -> None:
    # A newline inside a string is escaped: the message is one line, then its newline.
    data = Connection(SERVER).send(ErrorResponse(id=None, code=INVALID_REQUEST, message="a\nb"))
    assert data.endswith(b"\n")
    assert data.count(b"\n") == 1
    assert b"a\\nb" in data


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

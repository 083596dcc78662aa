"""The SSE codec (mcp_ref._sse): WHATWG event-stream interpretation, the parts MCP uses.

Readers are tested whole, one byte at a time, and with trailing bytes; the encoder and
decoder are round-tripped with Hypothesis; arbitrary bytes give events or
RemoteProtocolError, nothing else.
"""

from __future__ import annotations

import re

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_ref._errors import LocalProtocolError, RemoteProtocolError
from mcp_ref._sse import (
    DEFAULT_MAX_EVENT_SIZE,
    NEED_DATA,
    SSEDecoder,
    SSEEvent,
    encode_comment,
    encode_event,
)
from tests._examples import examples

# -- helpers ---------------------------------------------------------------------------


def drain(dec: SSEDecoder) -> list[SSEEvent]:
    """Every event available now; asserts the decoder then wants more data."""
    out: list[SSEEvent] = []
    while True:
        ev = dec.next_event()
        if ev is NEED_DATA:
            return out
        assert ev is not None, "stream not ended yet, None is wrong here"
        out.append(ev)


def finish(dec: SSEDecoder) -> list[SSEEvent]:
    """Signal end of stream and return the remaining events (then None for ever)."""
    dec.receive_data(b"")
    out: list[SSEEvent] = []
    while (ev := dec.next_event()) is not None:
        assert ev is not NEED_DATA, "after end of stream the decoder must not ask for data"
        out.append(ev)
    assert dec.next_event() is None
    return out


def decode(chunks: list[bytes], **kw: int) -> tuple[list[SSEEvent], SSEDecoder]:
    dec = SSEDecoder(**kw)
    events: list[SSEEvent] = []
    for chunk in chunks:
        if chunk:  # b"" would mean end of stream; finish() sends that
            dec.receive_data(chunk)
            events += drain(dec)
    events += finish(dec)
    return events, dec


def bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


STREAM = (
    b": keepalive\n"
    b"event: message\n"
    b"id: s/1\n"
    b'data: {"a": 1}\n'
    b"\n"
    b"data: first\n"
    b"data: second\n"
    b"\n"
    b"retry: 2500\n"
    b"id: s/2\n"
    b"data\n"
    b"\n"
)
EXPECTED = [
    SSEEvent(event="message", id="s/1", data='{"a": 1}'),
    SSEEvent(data="first\nsecond"),
    SSEEvent(id="s/2", retry=2500, data=""),
]


# -- reading whole, byte by byte, with trailing bytes ----------------------------------


def test_whole() -> None:
    events, dec = decode([STREAM])
    assert events == EXPECTED
    assert dec.last_event_id == "s/2"
    assert dec.retry == 2500


def test_one_byte_at_a_time() -> None:
    events, dec = decode(bytewise(STREAM))
    assert events == EXPECTED
    assert dec.last_event_id == "s/2"


def test_every_split_point() -> None:
    for i in range(len(STREAM) + 1):
        events, _ = decode([STREAM[:i], STREAM[i:]])
        assert events == EXPECTED, i


def test_trailing_bytes_wait_for_more_and_are_dropped_at_end() -> None:
    dec = SSEDecoder()
    dec.receive_data(STREAM + b"id: lost\ndata: unfinished")
    assert drain(dec) == EXPECTED
    assert dec.next_event() is NEED_DATA
    dec.receive_data(b"\n")
    assert dec.next_event() is NEED_DATA  # still no blank line
    # Spec: WHATWG 9.2.6 -- an event cut off by the end of the stream is not dispatched,
    # and its id is not taken over.
    assert finish(dec) == []
    assert dec.last_event_id == "s/2"


def test_completed_by_trailing_blank_line() -> None:
    dec = SSEDecoder()
    dec.receive_data(b"data: x\n")
    assert drain(dec) == []
    dec.receive_data(b"\n")
    assert drain(dec) == [SSEEvent(data="x")]


# -- line ends -------------------------------------------------------------------------


@pytest.mark.parametrize("eol", [b"\n", b"\r", b"\r\n"], ids=["LF", "CR", "CRLF"])
@pytest.mark.parametrize("split", ["whole", "bytewise"])
def test_line_end_styles(eol: bytes, split: str) -> None:
    text = STREAM.replace(b"\n", eol)
    events, _ = decode([text] if split == "whole" else bytewise(text))
    assert events == EXPECTED


def test_mixed_line_ends() -> None:
    events, _ = decode([b"data: a\rdata: b\r\ndata: c\n\r\n"])
    assert events == [SSEEvent(data="a\nb\nc")]


def test_cr_at_chunk_boundary_then_lf_is_one_line_end() -> None:
    # If the LF after a chunk-final CR were read as a blank line, "a" would be
    # dispatched on its own.
    dec = SSEDecoder()
    dec.receive_data(b"data: a\r")
    assert drain(dec) == []
    dec.receive_data(b"\ndata: b\r")
    assert drain(dec) == []
    dec.receive_data(b"\n\r")
    assert drain(dec) == [SSEEvent(data="a\nb")]
    dec.receive_data(b"\ndata: c\n\n")
    assert drain(dec) == [SSEEvent(data="c")]


def test_cr_cr_is_a_blank_line() -> None:
    events, _ = decode([b"data: a\r", b"\r"])
    assert events == [SSEEvent(data="a")]


# -- fields ----------------------------------------------------------------------------


def test_bom_at_start_is_skipped_even_split() -> None:
    body = b"\xef\xbb\xbfdata: x\n\n"
    assert decode([body])[0] == [SSEEvent(data="x")]
    assert decode(bytewise(body))[0] == [SSEEvent(data="x")]


def test_bom_later_is_not_skipped() -> None:
    # The second BOM makes the field name "\ufeffdata", which is unknown and ignored.
    events, _ = decode([b"\xef\xbb\xbfdata: x\n\n\xef\xbb\xbfdata: y\n\n"])
    assert events == [SSEEvent(data="x")]


def test_short_stream_that_only_looks_like_a_bom_start() -> None:
    assert decode([b"\xef"])[0] == []
    assert decode([b"\xef\xbb"])[0] == []
    assert decode([b"\xef\xbbdata: x\n\n"])[0] == []  # not a BOM: field name is garbage


def test_comments_and_unknown_fields_are_ignored() -> None:
    events, _ = decode([b":c1\n: c2\nfoo: bar\nDATA: no\ndata: yes\n:\n\n"])
    assert events == [SSEEvent(data="yes")]


def test_only_one_leading_space_is_stripped() -> None:
    events, _ = decode([b"data:  two\ndata:none\nevent:   e\n\n"])
    assert events == [SSEEvent(data=" two\nnone", event="  e")]


def test_empty_event_name_means_none() -> None:
    events, _ = decode([b"event:\ndata: x\n\nevent: a\nevent:\ndata: y\n\n"])
    assert events == [SSEEvent(data="x"), SSEEvent(data="y")]


def test_block_without_data_is_not_dispatched_but_sets_last_event_id() -> None:
    dec = SSEDecoder()
    dec.receive_data(b"id: 7\nevent: ignored\n\ndata: x\n\n")
    assert drain(dec) == [SSEEvent(data="x")]  # the event name did not carry over
    assert dec.last_event_id == "7"


def test_id_with_nul_is_ignored() -> None:
    dec = SSEDecoder()
    dec.receive_data(b"id: good\ndata: 1\n\nid: b\x00ad\ndata: 2\n\n")
    assert drain(dec) == [SSEEvent(id="good", data="1"), SSEEvent(data="2")]
    assert dec.last_event_id == "good"


def test_empty_id_resets_last_event_id() -> None:
    dec = SSEDecoder()
    dec.receive_data(b"id: 5\ndata: 1\n\nid\ndata: 2\n\n")
    assert drain(dec) == [SSEEvent(id="5", data="1"), SSEEvent(id="", data="2")]
    assert dec.last_event_id == ""


def test_last_event_id_persists_across_events_without_id() -> None:
    dec = SSEDecoder()
    dec.receive_data(b"id: 5\ndata: 1\n\ndata: 2\n\n")
    events = drain(dec)
    assert events[1].id is None  # not sent in that block
    assert dec.last_event_id == "5"


@pytest.mark.parametrize(
    "value",
    [b"abc", b"1a", b"", b" 100", b"-1", b"1.5", "\u0661\u0662".encode(), b"9" * 13],
)
def test_bad_retry_is_ignored(value: bytes) -> None:
    dec = SSEDecoder()
    dec.receive_data(b"retry: 42\n\nretry: " + value + b"\ndata: x\n\n")
    assert drain(dec) == [SSEEvent(data="x")]
    assert dec.retry == 42


def test_retry_alone_sets_reconnection_time() -> None:
    dec = SSEDecoder()
    dec.receive_data(b"retry:0\n\n")
    assert drain(dec) == []
    assert dec.retry == 0


def test_invalid_utf8_is_replaced() -> None:
    events, _ = decode([b"data: \xff\xfe ok\n\n"])
    assert events == [SSEEvent(data="\ufffd\ufffd ok")]


def test_multibyte_utf8_split_across_chunks() -> None:
    text = "data: caf\u00e9 \u2603\n\n".encode()
    assert decode(bytewise(text))[0] == [SSEEvent(data="caf\u00e9 \u2603")]


# -- bounds and misuse -----------------------------------------------------------------


def test_oversized_event_raises_and_is_sticky() -> None:
    dec = SSEDecoder(max_event_size=64)
    dec.receive_data(b"data: " + b"x" * 40 + b"\n")
    assert drain(dec) == []
    dec.receive_data(b"data: " + b"y" * 40 + b"\n\n")
    with pytest.raises(RemoteProtocolError, match="larger than 64"):
        dec.next_event()
    dec.receive_data(b"data: small\n\n")
    with pytest.raises(RemoteProtocolError):
        dec.next_event()


def test_oversized_unfinished_line_raises() -> None:
    dec = SSEDecoder(max_event_size=100)
    for _ in range(10):
        dec.receive_data(b"0123456789")
        assert dec.next_event() is NEED_DATA
    dec.receive_data(b"x")
    with pytest.raises(RemoteProtocolError):
        dec.next_event()


def test_limit_is_per_event_not_per_stream() -> None:
    block = b"data: " + b"z" * 50 + b"\n\n"
    events, _ = decode([block * 100], max_event_size=64)
    assert len(events) == 100


def test_comments_do_not_count_toward_the_event() -> None:
    events, _ = decode([(b": " + b"k" * 50 + b"\n") * 10 + b"data: x\n\n"], max_event_size=64)
    assert events == [SSEEvent(data="x")]


def test_default_limit() -> None:
    assert SSEDecoder().max_event_size == DEFAULT_MAX_EVENT_SIZE
    with pytest.raises(ValueError):
        SSEDecoder(max_event_size=0)


def test_data_after_end_is_refused() -> None:
    dec = SSEDecoder()
    dec.receive_data(b"")
    dec.receive_data(b"")  # a second end is harmless
    with pytest.raises(LocalProtocolError):
        dec.receive_data(b"data: x\n\n")


def test_search_resumes_where_it_stopped() -> None:
    # Linear time: feeding a long line one byte at a time must not rescan it.  We
    # check the mechanism (the search position follows the buffer end) rather than time.
    dec = SSEDecoder()
    for _ in range(5000):
        dec.receive_data(b"a")
        assert dec.next_event() is NEED_DATA
        assert dec._search == len(dec._buf)
    dec.receive_data(b"\n\ndata: done\n\n")
    # "aaa..." is an unknown field name: ignored; the next event comes through.
    assert drain(dec) == [SSEEvent(data="done")]


def test_buffer_is_compacted() -> None:
    dec = SSEDecoder()
    for _ in range(1000):
        dec.receive_data(b"data: 0123456789\n\n")
        assert drain(dec) == [SSEEvent(data="0123456789")]
    assert len(dec._buf) < 100


# -- encoding --------------------------------------------------------------------------


def test_encode_layout() -> None:
    ev = SSEEvent(event="message", id="s/3", retry=10, data="a\r\nb\rc\nd")
    assert (
        encode_event(ev)
        == b"event: message\nid: s/3\nretry: 10\ndata: a\ndata: b\ndata: c\ndata: d\n\n"
    )
    assert encode_event(SSEEvent(data="")) == b"data:\n\n"
    assert encode_event(SSEEvent(data="x", id="")) == b"id:\ndata: x\n\n"


@pytest.mark.parametrize("bad", ["a\nb", "a\rb", "a\x00b"])
def test_encode_refuses_control_chars_in_id_and_event(bad: str) -> None:
    with pytest.raises(LocalProtocolError):
        encode_event(SSEEvent(data="x", id=bad))
    with pytest.raises(LocalProtocolError):
        encode_event(SSEEvent(data="x", event=bad))


def test_encode_refuses_lone_surrogates() -> None:
    with pytest.raises(LocalProtocolError):
        encode_event(SSEEvent(data="\ud800"))


@pytest.mark.parametrize("bad", [-1, True, 1.5, "10"])
def test_retry_must_be_non_negative_int(bad: object) -> None:
    with pytest.raises(LocalProtocolError):
        SSEEvent(data="x", retry=bad)  # type: ignore[arg-type]


def test_comment() -> None:
    assert encode_comment("ping") == b": ping\n"
    assert encode_comment() == b":\n"
    for bad in ("a\nb", "a\r"):
        with pytest.raises(LocalProtocolError):
            encode_comment(bad)
    dec = SSEDecoder()
    dec.receive_data(encode_comment("ping") + encode_event(SSEEvent(data="x")))
    assert drain(dec) == [SSEEvent(data="x")]


# -- properties ------------------------------------------------------------------------

_field_text = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x00"), max_size=20
)
events_strategy = st.builds(
    SSEEvent,
    data=st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)
    | st.lists(st.sampled_from(["", "x", "\r", "\n", "\r\n", " ", ":"]), max_size=8).map("".join),
    event=st.none() | _field_text,
    id=st.none() | _field_text,
    retry=st.none() | st.integers(min_value=0, max_value=10**12 - 1),
)


def normalized(ev: SSEEvent) -> SSEEvent:
    """What the receiver sees: line ends become LF, an empty event name means none."""
    return SSEEvent(
        data=re.sub(r"\r\n|\r", "\n", ev.data), event=ev.event or None, id=ev.id, retry=ev.retry
    )


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(data)) for c in cuts})
    chunks, last = [], 0
    for p in points:
        chunks.append(data[last:p])
        last = p
    chunks.append(data[last:])
    return [c for c in chunks if c]


def event_size(ev: SSEEvent) -> int:
    """What ``max_event_size`` counts for one encoded event: its field lines' bytes,
    line ends excluded (the encoder ends every line with a single LF)."""
    wire = encode_event(ev)
    return len(wire) - wire.count(b"\n")


@st.composite
def round_trip_cases(draw: st.DrawFn) -> tuple[list[SSEEvent], list[str], int, list[int]]:
    """Events, a comment before each (a keepalive, or none), a size limit at, just under
    or just over one event's size (or the default), and cut points."""
    events = draw(st.lists(events_strategy, max_size=5))
    limit = DEFAULT_MAX_EVENT_SIZE
    if events and draw(st.booleans()):
        size = event_size(draw(st.sampled_from(events)))
        limit = max(1, size + draw(st.sampled_from([-1, 0, 1])))
    comments = draw(st.lists(st.none() | _field_text, min_size=len(events), max_size=len(events)))
    # A comment line being received counts toward the bound: keep each within it.
    kept = [c if c is not None and len(encode_comment(c)) <= limit else "" for c in comments]
    cuts = draw(st.lists(st.integers(0, 2000), max_size=10))
    return events, kept, limit, cuts


@given(round_trip_cases())
@settings(max_examples=examples(500), deadline=None)
def test_round_trip(case: tuple[list[SSEEvent], list[str], int, list[int]]) -> None:
    """encode -> decode, in any chunking, with comments between events: the same events
    (line ends as LF), the last id; and exactly the events within ``max_event_size``
    before the first one over it, which raises -32600."""
    events, comments, limit, cuts = case
    wire = b"".join(
        (encode_comment(c) if c else b"") + encode_event(ev)
        for c, ev in zip(comments, events, strict=True)
    )
    got, error, dec = decode_bounded(split_at(wire, cuts), limit)
    over = [i for i, ev in enumerate(events) if event_size(ev) > limit]
    expected = events[: over[0]] if over else events
    assert got == [normalized(ev) for ev in expected]
    if over:
        assert error is not None and error.code == -32600
    else:
        assert error is None
        ids = [ev.id for ev in events if ev.id is not None]
        assert dec.last_event_id == (ids[-1] if ids else "")


# -- a reference model: WHATWG 9.2.6 written out plainly, on the whole input ---------------


@attrs.frozen
class Model:
    events: list[SSEEvent]
    last_event_id: str
    retry: int | None
    block_peak: int  # the largest block: sum of its field lines (never over the bound)
    line_peak: int  # the largest block-so-far plus the next line of any kind


def model_decode(data: bytes) -> Model:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    *lines, tail = re.split(rb"\r\n|\r|\n", data)  # the tail has no line end: dropped
    events: list[SSEEvent] = []
    data_lines: list[str] = []
    name, block_id, block_retry, id_buffer, last_id = "", None, None, "", ""
    retry: int | None = None
    size = block_peak = line_peak = 0
    for raw in lines:
        line_peak = max(line_peak, size + len(raw))
        if raw == b"":
            last_id = id_buffer
            if data_lines:
                events.append(
                    SSEEvent(
                        data="\n".join(data_lines),
                        event=name or None,
                        id=block_id,
                        retry=block_retry,
                    )
                )
            data_lines, name, block_id, block_retry, size = [], "", None, None, 0
            continue
        if raw.startswith(b":"):
            continue
        size += len(raw)
        block_peak = max(block_peak, size)
        field, colon, value_bytes = raw.partition(b":")
        if value_bytes.startswith(b" "):
            value_bytes = value_bytes[1:]
        field_name = field.decode("utf-8", "replace")
        value = value_bytes.decode("utf-8", "replace")
        if field_name == "data":
            data_lines.append(value)
        elif field_name == "event":
            name = value
        elif field_name == "id" and "\x00" not in value:
            block_id = id_buffer = value
        elif field_name == "retry" and value.isascii() and value.isdigit() and len(value) <= 12:
            block_retry = retry = int(value)
    line_peak = max(line_peak, size + len(tail))
    return Model(events, last_id, retry, block_peak, line_peak)


def decode_bounded(
    chunks: list[bytes], limit: int
) -> tuple[list[SSEEvent], RemoteProtocolError | None, SSEDecoder]:
    """Decode with ``max_event_size=limit``; stop at the first RemoteProtocolError (and
    check that it is sticky)."""
    dec = SSEDecoder(max_event_size=limit)
    got: list[SSEEvent] = []
    try:
        for chunk in [*chunks, b""]:  # b"": the end of the stream
            dec.receive_data(chunk)
            while isinstance(ev := dec.next_event(), SSEEvent):
                got.append(ev)  # one at a time: keep those before an error
            assert ev is (NEED_DATA if chunk else None)
            # The bound holds memory too: what is held of the line being read fits
            # (a possible BOM start, 2 bytes, is held before anything is checked).
            assert len(dec._buf) - dec._start <= max(limit, 2)
    except RemoteProtocolError as exc:
        with pytest.raises(RemoteProtocolError):
            dec.next_event()
        return got, exc, dec
    return got, None, dec


SSE_TOKENS = [
    b"data", b"data:", b"data: ", b"event:", b"event: ", b"id:", b"id: ", b"retry:",
    b"retry: ", b":", b" ", b"x", b"7", b"\x00", b"\xff", b"\xc3\xa9", b"\xef\xbb\xbf",
    b"\r", b"\n", b"\r\n", b"\n\n",
]  # fmt: skip
sse_bytes = st.binary(max_size=300) | st.lists(st.sampled_from(SSE_TOKENS), max_size=80).map(
    b"".join
)


@given(sse_bytes, st.lists(st.integers(0, 300), max_size=6), st.integers(1, 130))
@settings(max_examples=examples(500), deadline=None)
def test_arbitrary_bytes_give_events_or_remote_error(
    data: bytes, cuts: list[int], limit: int
) -> None:
    """Against the model, with a small bound: without an error, exactly the model's events
    and state; with one (code -32600), a prefix of them, and only when a block plus the
    line being read went over the bound; never an error when every block and line fits."""
    model = model_decode(data)
    got, error, dec = decode_bounded(split_at(data, cuts), limit)
    if error is None:
        assert got == model.events
        assert (dec.last_event_id, dec.retry) == (model.last_event_id, model.retry)
        assert model.block_peak <= limit
    else:
        assert error.code == -32600
        assert got == model.events[: len(got)]
        assert model.line_peak > limit
    if model.line_peak <= limit:
        assert error is None


@given(sse_bytes)
@settings(max_examples=examples(500), deadline=None)
def test_chunking_does_not_change_the_result(data: bytes) -> None:
    """Whole and one byte at a time give the model's events, last id and retry."""
    model = model_decode(data)
    for chunks in ([data], bytewise(data)):
        got, dec = decode(chunks)
        assert got == model.events
        assert (dec.last_event_id, dec.retry) == (model.last_event_id, model.retry)

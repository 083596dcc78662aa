"""Encoding server-sent events (mcp_ref._sse): what each refusal says, and blank lines.

Source: WHATWG HTML 9.2.6 (event stream fields; a line starting with a colon is a
comment); 2025-06-18/basic/transports#resumability-and-redelivery.1 (event ids).
"""

from __future__ import annotations

import pytest

from mcp_ref import LocalProtocolError
from mcp_ref._sse import NEED_DATA, SSEDecoder, SSEEvent, encode_comment, encode_data


def test_blank_lines_inside_data_are_empty_data_lines() -> None:
    assert encode_data("a\n\nb") == b"data: a\ndata:\ndata: b\n\n"
    assert encode_data("a\r\n", event="m", id="") == b"event: m\nid:\ndata: a\ndata:\n\n"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"event": "a\nb"}, "SSE event name must not contain CR, LF or NUL: 'a\\nb'"),
        ({"id": "1\x00"}, "SSE event id must not contain CR, LF or NUL: '1\\x00'"),
        ({"retry": -1}, "SSE retry must be a non-negative int (ms), not -1"),
        ({"retry": True}, "SSE retry must be a non-negative int (ms), not True"),
    ],
)
def test_encode_data_refusals_name_the_field(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(LocalProtocolError) as caught:
        encode_data("x", **kwargs)  # type: ignore[arg-type]
    assert caught.value.message == message


def test_text_that_is_not_unicode_is_refused() -> None:
    with pytest.raises(LocalProtocolError) as caught:
        encode_data("\ud800")
    assert caught.value.message.startswith("SSE event text is not valid Unicode: ")
    with pytest.raises(LocalProtocolError) as caught:
        encode_comment("\ud800")
    assert caught.value.message.startswith("SSE comment is not valid Unicode: ")
    with pytest.raises(LocalProtocolError) as caught:
        encode_comment("a\rb")
    assert caught.value.message == "SSE comment must not contain CR or LF: 'a\\rb'"
    assert encode_comment() == b":\n"
    assert encode_comment("keepalive") == b": keepalive\n"


def test_the_decoder_refusals_say_why() -> None:
    with pytest.raises(ValueError, match=r"^max_event_size must be positive$"):
        SSEDecoder(max_event_size=0)
    decoder = SSEDecoder()
    decoder.receive_data(b"")
    with pytest.raises(LocalProtocolError) as caught:
        decoder.receive_data(b"data: x\n\n")
    assert caught.value.message == "SSE data received after the end of the stream"


def test_a_stream_may_start_with_a_blank_line() -> None:
    decoder = SSEDecoder()
    decoder.receive_data(b"\ndata: x\n\n")
    assert decoder.next_event() == SSEEvent(data="x")
    assert decoder.next_event() is NEED_DATA


def test_the_size_bound_counts_each_event_afresh() -> None:
    """The bound is per event: two events of exactly the bound both pass."""
    line = b"data: " + b"x" * 10  # 16 bytes: the bound below
    decoder = SSEDecoder(max_event_size=len(line))
    decoder.receive_data(line + b"\n\n" + line + b"\n\n")
    first, second = decoder.next_event(), decoder.next_event()
    assert isinstance(first, SSEEvent) and isinstance(second, SSEEvent)
    assert first.data == second.data == "x" * 10


def test_a_retry_of_twelve_digits_is_taken_and_of_thirteen_ignored() -> None:
    decoder = SSEDecoder()
    decoder.receive_data(b"retry: " + b"9" * 12 + b"\ndata: a\n\n")
    decoder.next_event()
    assert decoder.retry == int("9" * 12)
    decoder.receive_data(b"retry: " + b"1" * 13 + b"\ndata: b\n\n")
    decoder.next_event()
    assert decoder.retry == int("9" * 12)


def test_a_retry_of_zero_milliseconds_is_legal() -> None:
    assert encode_data("x", retry=0) == b"retry: 0\ndata: x\n\n"


def test_a_lone_cr_in_data_splits_it_into_lines() -> None:
    # A CR alone ends a line in SSE: data holding one is written as several data lines.
    assert encode_data("a\rb") == b"data: a\ndata: b\n\n"
    assert encode_data("a\r\nb\nc") == b"data: a\ndata: b\ndata: c\n\n"

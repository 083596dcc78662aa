"""LineBuffer at the end of input, and message_info on whole messages (mcp_ref._framing,
mcp_ref._http_messages).

Source: 2025-06-18/basic/transports#stdio (newline-delimited messages);
2025-06-18/basic#messages (the three kinds of message and their fields).
"""

from __future__ import annotations

import pytest

from mcp_ref._framing import PEEK_BYTES, TOO_LONG, LineBuffer
from mcp_ref._http import MessageKind
from mcp_ref._http_messages import MessageInfo, message_info


def test_take_rest_leaves_a_fresh_buffer_even_after_an_over_long_tail() -> None:
    buf = LineBuffer(max_line_bytes=4)
    buf.feed(b"abcdefgh")  # over-long and unterminated
    assert buf.next_line() is TOO_LONG
    assert buf.take_rest() == b""  # the skipped line is not returned
    buf.feed(b"ok\n")  # not skipped as the rest of the old line
    assert buf.next_line() == b"ok"
    buf.feed(b"tail")
    assert buf.take_rest() == b"tail"
    assert len(buf) == 0 and buf.next_line() is None


def test_message_info_of_whole_messages() -> None:
    assert message_info(b'{"jsonrpc":"2.0","id":1,"method":"ping"}') == MessageInfo(
        MessageKind.REQUEST, 1, "ping", None
    )
    cancel = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"7"}}'
    assert message_info(cancel) == MessageInfo(
        MessageKind.NOTIFICATION, None, "notifications/cancelled", "7"
    )
    assert message_info(b'{"jsonrpc":"2.0","id":"x","result":{}}') == MessageInfo(
        MessageKind.RESPONSE, "x", None, None
    )
    assert message_info(b"[]") is None
    assert message_info(b"{") is None


def test_a_buffer_must_hold_at_least_one_byte() -> None:
    with pytest.raises(ValueError, match=r"^max_line_bytes must be positive$"):
        LineBuffer(0)


def test_an_over_long_line_still_without_its_newline_keeps_its_first_bytes() -> None:
    """The first bytes of a line dropped for its length are kept, so the connection
    can answer the request by the id they show."""
    buf = LineBuffer(16)
    start = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":'
    buf.feed(start + b"x" * (PEEK_BYTES * 2))
    assert buf.next_line() is TOO_LONG
    assert buf.too_long_prefix == (start + b"x" * PEEK_BYTES)[:PEEK_BYTES]


def test_an_empty_line_at_the_start_is_empty_even_if_the_buffer_ends_with_a_cr() -> None:
    buf = LineBuffer(64)
    buf.feed(b'\n{"a":1}\r')
    assert buf.next_line() == b""
    buf.feed(b"\n")
    assert buf.next_line() == b'{"a":1}'

"""LineBuffer at the end of input, and message_info on whole messages (mcp_ref._framing,
mcp_ref._http_messages).

Source: 2025-06-18/basic/transports#stdio (newline-delimited messages);
2025-06-18/basic#messages (the three kinds of message and their fields).
"""

from __future__ import annotations

from mcp_ref._framing import TOO_LONG, LineBuffer
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

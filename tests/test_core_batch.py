"""The replies to a JSON-RPC batch (mcp_ref._batch.BatchReplies), unit by unit.

Source: JSON-RPC 2.0 section 6 (the replies come back as one array once every request is
processed; an empty array MUST NOT be sent); 2025-03-26/basic (batches).
"""

from __future__ import annotations

from mcp_ref._batch import BatchReplies


def test_the_array_comes_when_the_last_reply_is_owed_no_more() -> None:
    replies = BatchReplies(owed=3)
    assert replies.add(b'{"id":1}\n') == b""
    assert replies.drop() == b""  # one request cancelled: one reply is still owed
    assert replies.owed == 1
    assert replies.add(b'{"id":3}\n') == b'[{"id":1},{"id":3}]\n'
    assert replies.owed == 0
    assert replies.parts == []  # nothing held once the array is out


def test_a_batch_whose_requests_are_all_cancelled_sends_nothing() -> None:
    replies = BatchReplies(owed=2)
    assert replies.drop() == b""
    assert replies.drop() == b""  # never "[]"
    assert replies.owed == 0


def test_the_last_drop_sends_what_was_held() -> None:
    replies = BatchReplies(owed=2)
    assert replies.add(b'{"id":"a"}\n') == b""
    assert replies.drop() == b'[{"id":"a"}]\n'

"""The batch stage (mcp_ref._batch): the replies to one batch (BatchReplies) and the
stage that splits batches and routes replies by id (Batches), unit by unit.

Source: JSON-RPC 2.0 section 6 (the replies come back as one array once every request is
processed; an empty array MUST NOT be sent); 2025-03-26/basic (batches).
"""

from __future__ import annotations

from typing import Any

import pytest

from mcp_ref import ErrorResponse, Notification, RemoteProtocolError, Request
from mcp_ref._batch import Batches, BatchReplies
from mcp_ref._errors import INVALID_REQUEST

VERSION = "2025-03-26"


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


def _handle(item: Any) -> Any:
    """A stand-in for the connection's reader: ints are requests, "n" a notification,
    None a message that makes no event, "x" a refusal without a reply, other strings
    refusals with a reply carrying the string as id."""
    if type(item) is int:
        return Request(id=item, method="ping")
    if item == "n":
        return Notification(method="notifications/initialized")
    if item is None:
        return None
    hint = None if item == "x" else ErrorResponse(id=item, code=INVALID_REQUEST, message="no")
    raise RemoteProtocolError("refused", code=INVALID_REQUEST, event_hint=hint)


def _stage(collect: bool = True, max_items: int = 8, max_refused: int = 64) -> Batches:
    return Batches(max_items=max_items, collect=collect, max_refused=max_refused)


def test_split_returns_events_and_refusals_in_order_and_refuses_whole_batches() -> None:
    stage = _stage(max_items=5)
    out = stage.split([1, "n", None, "a", "x"], VERSION, _handle)
    assert [type(o).__name__ for o in out] == [
        "Request",
        "Notification",
        "RemoteProtocolError",
        "RemoteProtocolError",
    ]
    for items, version, why in [
        ([], VERSION, "empty batch"),
        ([1] * 6, VERSION, "batch too large"),
        ([1], "2025-06-18", "JSON-RPC batches are not allowed in protocol version 2025-06-18"),
    ]:
        with pytest.raises(RemoteProtocolError) as exc:
            stage.split(items, version, _handle)
        assert exc.value.message == why and exc.value.code == INVALID_REQUEST
    assert len(stage.split([1, 2, 3, 4, 5], VERSION, _handle)) == 5  # at the bound


def test_replies_owed_to_a_batch_come_back_as_one_array() -> None:
    stage = _stage()
    stage.split([1, "a", "n", "x", 2], VERSION, _handle)
    assert stage.reply(3, b'{"id":3}\n', refused=False) == b'{"id":3}\n'  # not the batch's
    assert stage.reply("b", b'{"id":"b"}\n', refused=True) == b'{"id":"b"}\n'
    assert stage.reply("a", b'{"id":"a"}\n', refused=False) == b'{"id":"a"}\n'
    assert stage.reply(2, b'{"id":2}\n', refused=False) == b""
    assert stage.reply("a", b'{"e":"a"}\n', refused=True) == b""
    assert stage.reply(1, b'{"id":1}\n', refused=False) == b'[{"id":2},{"e":"a"},{"id":1}]\n'
    # Everything is settled: the same ids pass unchanged now.
    assert stage.reply(1, b"1\n", refused=False) == b"1\n"
    assert stage.reply("a", b"a\n", refused=True) == b"a\n"


def test_refusals_of_one_id_go_to_their_batches_oldest_first() -> None:
    stage = _stage()
    stage.split(["a", 1], VERSION, _handle)
    stage.split(["a", 2], VERSION, _handle)
    assert stage.reply("a", b"A1\n", refused=True) == b""
    assert stage.reply(2, b"R2\n", refused=False) == b""  # the second batch still owes "a"
    assert stage.reply("a", b"A2\n", refused=True) == b"[R2,A2]\n"
    assert stage.reply(1, b"R1\n", refused=False) == b"[A1,R1]\n"


def test_a_cancelled_request_is_owed_nothing() -> None:
    stage = _stage()
    stage.split([1, 2], VERSION, _handle)
    assert stage.cancelled(3) == b""  # not a batch's
    assert stage.reply(1, b"R1\n", refused=False) == b""
    assert stage.cancelled(2) == b"[R1]\n"
    assert stage.cancelled(2) == b""  # already settled


def test_a_message_transport_gets_its_replies_one_by_one() -> None:
    stage = _stage(collect=False)
    assert len(stage.split([1, "a", 2], VERSION, _handle)) == 3
    assert stage.reply(1, b"R1", refused=False) == b"R1"
    assert stage.reply("a", b"A", refused=True) == b"A"
    assert stage.cancelled(2) == b""


def test_replies_to_refusals_are_remembered_up_to_the_bound() -> None:
    stage = _stage(max_refused=2)
    stage.split(["a", "b", 1], VERSION, _handle)
    stage.split(["c"], VERSION, _handle)  # "a" is forgotten: its reply goes out alone
    assert stage.reply("a", b"A\n", refused=True) == b"A\n"
    assert stage.reply("b", b"B\n", refused=True) == b""
    assert stage.reply("c", b"C\n", refused=True) == b"[C]\n"
    stage.split(["d", "e"], VERSION, _handle)  # at the bound: both kept
    assert stage.reply("d", b"D\n", refused=True) == b""
    assert stage.reply("e", b"E\n", refused=True) == b"[D,E]\n"


def test_the_refusal_memory_counts_what_it_forgets_and_what_is_sent() -> None:
    stage = _stage(max_refused=2)
    stage.split(["a", "a", "b"], VERSION, _handle)  # both of "a" are forgotten: 1 left
    stage.split(["c"], VERSION, _handle)  # 2: at the bound, nothing forgotten
    # Still remembered: held for its batch (which waits for the forgotten two forever).
    assert stage.reply("b", b"B\n", refused=True) == b""
    stage = _stage(max_refused=2)
    stage.split(["a", "b"], VERSION, _handle)
    assert stage.reply("a", b"A\n", refused=True) == b""  # 1 left
    stage.split(["c"], VERSION, _handle)
    stage.split(["d"], VERSION, _handle)  # 3: "b", the oldest, is forgotten
    assert stage.reply("b", b"B\n", refused=True) == b"B\n"

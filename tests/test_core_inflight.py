"""The in-flight tables' deadlines (mcp_ref._inflight), driven directly with times.

Source: 2025-06-18/basic/lifecycle#timeouts (per-request timeouts; progress may reset the
clock; a maximum timeout is always enforced, timeouts.5).
"""

from __future__ import annotations

import pytest

from mcp_ref import LocalProtocolError
from mcp_ref._inflight import InFlight, Outgoing, Refusals, RequestTimeout


def _table() -> InFlight:
    return InFlight(max_outgoing=10_000, max_incoming=10, remember=4)


def _send(table: InFlight, rid: object, now: float, timeout: RequestTimeout) -> Outgoing:
    req = Outgoing(
        id=rid,
        method="tools/call",
        structure_result=lambda x: x,
        timeout=timeout,
        sent_at=now,
        deadline=now + timeout.seconds,
    )
    table.add_outgoing(req)
    return req


def test_request_timeout_settings_are_checked() -> None:
    with pytest.raises(ValueError, match=r"^RequestTimeout\.seconds must be positive$"):
        RequestTimeout(seconds=0)
    with pytest.raises(ValueError, match=r"^RequestTimeout\.maximum must be at least seconds$"):
        RequestTimeout(seconds=5, maximum=4.5)
    assert RequestTimeout(seconds=5, maximum=5).hard_limit == 5


def test_equal_deadlines_expire_in_sending_order_whatever_the_ids() -> None:
    table = _table()
    timeout = RequestTimeout(seconds=1.0)
    for rid in (3, "a", 1, "b"):  # ids of both types: they must never be compared
        _send(table, rid, 10.0, timeout)
    assert [o.id for o in table.expire(11.0)] == [3, "a", 1, "b"]


def test_answered_requests_leave_entries_that_expire_skips() -> None:
    table = _table()
    timeout = RequestTimeout(seconds=5.0)
    _send(table, 1, 0.0, timeout)  # deadline 5
    _send(table, 2, 10.0, timeout)  # deadline 15
    assert table.pop_outgoing(1, "answered") is not None
    _send(table, 3, 12.0, timeout)  # deadline 17
    # The answered request's entry (deadline 5) comes out first and is skipped.
    assert [o.id for o in table.expire(20.0)] == [2, 3]
    assert table.next_deadline() is None


def test_next_deadline_skips_answered_requests() -> None:
    table = _table()
    timeout = RequestTimeout(seconds=5.0)
    _send(table, 1, 0.0, timeout)  # deadline 5
    _send(table, 2, 10.0, timeout)  # deadline 15
    table.pop_outgoing(1, "answered")
    assert table.next_deadline() == 15.0


def test_a_reused_id_keeps_only_its_new_deadline() -> None:
    # finished ids are remembered 4 deep, so after 5 more an id may come back: the entry
    # of its first life (deadline 1) must not expire its second (deadline 101).
    table = _table()
    timeout = RequestTimeout(seconds=1.0)
    _send(table, "x", 0.0, timeout)
    table.pop_outgoing("x", "answered")
    for n in range(5):
        _send(table, n, 0.0, RequestTimeout(seconds=1000.0))
        table.pop_outgoing(n, "answered")
    _send(table, "x", 100.0, timeout)
    assert table.expire(50.0) == []
    assert table.next_deadline() == 101.0
    assert [o.id for o in table.expire(101.0)] == ["x"]


def test_progress_resets_the_clock_once_per_progress() -> None:
    table = _table()
    timeout = RequestTimeout(seconds=10.0, reset_on_progress=True, maximum=100.0)
    req = _send(table, 1, 0.0, timeout)
    other = _send(table, 2, 0.0, RequestTimeout(seconds=10.0))
    req.progressed = True  # progress arrived before the first deadline
    # At 10 the first request gets a new deadline (20), the second expires in the same call.
    assert table.expire(10.0) == [other]
    assert req.deadline == 20.0 and not req.progressed
    # No progress since: it expires at 20, not at the hard limit.
    assert table.expire(20.0) == [req]


def test_progress_never_passes_the_hard_limit() -> None:
    table = _table()
    timeout = RequestTimeout(seconds=10.0, reset_on_progress=True, maximum=15.0)
    req = _send(table, 1, 0.0, timeout)
    req.progressed = True
    assert table.expire(10.0) == []
    assert req.deadline == 15.0
    req.progressed = True
    assert table.expire(15.0) == [req]


def test_stale_deadline_entries_stay_bounded() -> None:
    table = _table()
    timeout = RequestTimeout(seconds=1.0)
    live = _send(table, "live", 0.0, RequestTimeout(seconds=500.0))
    for n in range(300):
        _send(table, n, float(n), timeout)
        # Entries of answered requests are dropped once they pass this bound.
        assert len(table._heap) <= 2 * len(table.outgoing) + 64
        table.pop_outgoing(n, "answered")
    assert table.next_deadline() == live.deadline == 500.0
    assert table.expire(499.0) == []
    assert table.expire(500.0) == [live]


def test_finished_ids_are_remembered_up_to_the_bound_oldest_out_first() -> None:
    table = _table()  # remember=4
    timeout = RequestTimeout(seconds=1.0)
    for rid in range(4):
        _send(table, rid, 0.0, timeout)
        table.pop_outgoing(rid, "answered")
    assert [table.finished_out.get(rid) for rid in range(4)] == ["answered"] * 4
    _send(table, 4, 0.0, timeout)
    table.pop_outgoing(4, "cancelled")
    assert table.finished_out.get(0) is None
    assert [table.finished_out.get(rid) for rid in range(1, 5)] == ["answered"] * 3 + ["cancelled"]
    assert table.pop_outgoing("never sent", "answered") is None
    assert table.pop_incoming("never received", "answered") is None


def test_the_outgoing_table_is_bounded() -> None:
    table = InFlight(max_outgoing=2, max_incoming=1, remember=1)
    timeout = RequestTimeout(seconds=1.0)
    _send(table, 1, 0.0, timeout)
    _send(table, 2, 0.0, timeout)
    with pytest.raises(LocalProtocolError) as caught:
        _send(table, 3, 0.0, timeout)
    assert caught.value.message == "too many requests in flight (at most 2)"


def test_start_clock_sets_the_deadline_from_now_or_refuses() -> None:
    req = Outgoing(id=1, method="ping", structure_result=lambda x: x)
    req.start_clock(None, None)  # no timeout: no clock
    assert (req.timeout, req.sent_at, req.deadline) == (None, 0.0, None)
    with pytest.raises(TypeError, match=r"^timeout must be a RequestTimeout or None$"):
        req.start_clock(5, 1.0)  # type: ignore[arg-type]
    with pytest.raises(LocalProtocolError, match=r"^a request with a timeout needs now=$"):
        req.start_clock(RequestTimeout(seconds=5), None)
    req.start_clock(RequestTimeout(seconds=5), 100.0)
    assert (req.sent_at, req.deadline) == (100.0, 105.0)


def test_fresh_ids_skip_the_ids_in_use_and_the_remembered_ones() -> None:
    table = _table()
    assert table.fresh_id() == 1
    _send(table, 2, 0.0, RequestTimeout(seconds=1))
    table.finished_out.add(3, "answered")
    assert table.fresh_id() == 4


def test_refusals_are_owed_per_reply_and_forgotten_oldest_first() -> None:
    owed = Refusals(3)
    owed.owe(1)
    owed.owe(1)
    owed.owe(None)
    owed.paid(1)
    assert 1 in owed and None in owed  # one reply to 1 is still owed
    owed.paid(1)
    assert 1 not in owed
    owed.owe(2)
    owed.owe(3)
    owed.owe(4)  # a fourth: the oldest (None) is forgotten
    assert None not in owed and all(rid in owed for rid in (2, 3, 4))
    assert owed.maximum == 3

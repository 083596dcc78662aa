"""The session bounds of the Streamable HTTP server (mcp_ref._http_sessions.SessionBook),
with the time passed in: who may open a session, which idle one makes room, the
``Retry-After`` of a refusal, and which sessions expire.

Source: 2025-06-18/basic/transports#session-management.6 (the server MAY terminate a
session at any time: the bounds end idle, uninitialized and evicted sessions so).
"""

from __future__ import annotations

import math

from mcp_ref._http import HttpError, HttpLimits
from mcp_ref._http_sessions import SessionBook

from ._http_core import Tenant


def book(**limits: float) -> SessionBook[Tenant]:
    return SessionBook(HttpLimits(**limits))  # type: ignore[arg-type]


def retry_after(got: object) -> bytes:
    assert isinstance(got, HttpError), got
    return dict(got.headers)[b"retry-after"]


# -- seats per address ---------------------------------------------------------------


def test_seats_are_counted_per_address_and_freed_once() -> None:
    b = book()
    a1, a2, other = Tenant(), Tenant(), Tenant()
    assert b.peer_count("10.0.0.1") == 0
    b.add(a1, "10.0.0.1", 0.0)
    b.add(a2, "10.0.0.1", 0.0)
    b.add(other, "10.0.0.2", 0.0)
    assert (b.peer_count("10.0.0.1"), b.peer_count("10.0.0.2")) == (2, 1)
    b.remove(a1)
    assert b.peer_count("10.0.0.1") == 1 and a1 not in b.seats
    b.remove(a1)  # a second remove of the same session changes nothing
    assert b.peer_count("10.0.0.1") == 1
    b.remove(Tenant())  # nor does one of a session never added
    b.remove(a2)
    assert b.peer_count("10.0.0.1") == 0 and b.peer_count("10.0.0.2") == 1
    assert list(b.seats) == [other]


def test_an_address_under_its_share_may_open_after_a_removal() -> None:
    b = book(max_sessions_per_peer=1)
    t = Tenant()
    b.add(t, "10.0.0.1", 0.0)
    assert isinstance(b.room_for("10.0.0.1", [], now=0.0), HttpError)
    b.remove(t)
    assert b.room_for("10.0.0.1", [], now=0.0) is None


# -- which session makes room ----------------------------------------------------------


def full_book(*tenants: Tenant) -> SessionBook[Tenant]:
    b = book(max_sessions=len(tenants), session_evictable_seconds=5.0)
    for t in tenants:
        b.add(t, None, 0.0)
    return b


def test_a_busy_or_queued_session_is_never_evicted_however_long_idle() -> None:
    busy, queued = Tenant(is_busy=True), Tenant(queued=1)
    b = full_book(busy, queued)
    got = b.room_for(None, [busy, queued], now=1000.0)
    assert isinstance(got, HttpError) and got.status == 503


def test_a_session_not_evictable_does_not_hide_those_after_it() -> None:
    busy, recent, idle = Tenant(is_busy=True), Tenant(last_used=99.0), Tenant(last_used=10.0)
    b = full_book(busy, recent, idle)
    assert b.room_for(None, [busy, recent, idle], now=100.0) is idle


def test_uninitialized_go_first_then_the_longest_idle_then_the_first_named() -> None:
    fresh = Tenant(last_used=50.0, done_init=False)
    old, older = Tenant(last_used=20.0), Tenant(last_used=10.0)
    b = full_book(fresh, old, older)
    assert b.room_for(None, [fresh, old, older], now=100.0) is fresh
    assert b.room_for(None, [old, fresh, older], now=100.0) is fresh
    assert b.room_for(None, [older, old], now=100.0) is older
    assert b.room_for(None, [old, older], now=100.0) is older
    twin_a, twin_b = Tenant(last_used=10.0), Tenant(last_used=10.0)
    b = full_book(twin_a, twin_b)
    assert b.room_for(None, [twin_a, twin_b], now=100.0) is twin_a
    assert b.room_for(None, [twin_b, twin_a], now=100.0) is twin_b


def test_only_candidates_with_a_seat_and_of_the_address_are_evicted() -> None:
    b = book(max_sessions=10, max_sessions_per_peer=1, session_evictable_seconds=5.0)
    mine, theirs = Tenant(), Tenant()
    b.add(mine, "10.0.0.1", 0.0)
    b.add(theirs, "10.0.0.2", 0.0)
    assert b.room_for("10.0.0.1", [theirs, mine], now=100.0) is mine
    assert b.room_for("10.0.0.1", [Tenant(), theirs], now=100.0) == b.room_for(
        "10.0.0.1", [], now=100.0
    )


# -- Retry-After -----------------------------------------------------------------------


def test_retry_after_is_when_an_idle_session_becomes_evictable() -> None:
    t = Tenant(last_used=2.0)
    b = full_book(t)
    assert retry_after(b.room_for(None, [t], now=3.0)) == b"4"  # 2 + 5 - 3
    assert retry_after(b.room_for(None, [t], now=6.5)) == b"1"  # 0.5, rounded up


def test_retry_after_is_when_an_uninitialized_busy_session_is_reaped() -> None:
    b = book(max_sessions=1, uninitialized_session_seconds=10.0, session_evictable_seconds=5.0)
    t = Tenant(is_busy=True, done_init=False)
    b.add(t, None, 1.0)
    assert retry_after(b.room_for(None, [t], now=3.0)) == b"8"  # 1 + 10 - 3


def test_retry_after_takes_the_soonest_of_both() -> None:
    b = book(max_sessions=2, uninitialized_session_seconds=10.0, session_evictable_seconds=5.0)
    uninit, idle = Tenant(is_busy=True, done_init=False), Tenant(last_used=20.0)
    b.add(uninit, None, 20.0)
    b.add(idle, None, 0.0)
    assert retry_after(b.room_for(None, [uninit, idle], now=21.0)) == b"4"  # idle at 25
    b2 = book(max_sessions=2, uninitialized_session_seconds=3.0, session_evictable_seconds=5.0)
    b2.add(uninit, None, 20.0)
    b2.add(idle, None, 0.0)
    assert retry_after(b2.room_for(None, [idle, uninit], now=21.0)) == b"2"  # reaped at 23


def test_retry_after_is_the_evictable_time_when_every_session_is_busy() -> None:
    b = book(max_sessions=1, session_evictable_seconds=7.0)
    t = Tenant(is_busy=True)
    b.add(t, None, 0.0)
    assert retry_after(b.room_for(None, [t], now=100.0)) == b"7"


def test_the_refusal_names_the_bound_it_hit() -> None:
    b = book(max_sessions=3, max_sessions_per_peer=1, session_evictable_seconds=5.0)
    t = Tenant(is_busy=True)
    b.add(t, "10.0.0.1", 0.0)
    got = b.room_for("10.0.0.1", [t], now=1.0)
    assert isinstance(got, HttpError) and got.status == 429
    assert got.detail == "too many sessions from this address (at most 1)"
    b.add(Tenant(), "10.0.0.2", 0.0)
    b.add(Tenant(), "10.0.0.3", 0.0)
    got = b.room_for("10.0.0.4", [t], now=1.0)
    assert isinstance(got, HttpError) and got.status == 503
    assert got.detail == "too many sessions (at most 3)"


# -- expiry ----------------------------------------------------------------------------


def test_nothing_to_expire_asks_again_never() -> None:
    assert book().expired([], now=0.0) == ([], math.inf)


def test_a_busy_session_does_not_expire_however_long_ago_its_last_request() -> None:
    # A request in progress (or a stream written) is use: a long call, or a GET stream
    # listening for hours, keeps its session.  The initialization bound holds all the same.
    b = book(session_idle_seconds=100.0, uninitialized_session_seconds=10.0)
    working, starting = Tenant(is_busy=True), Tenant(is_busy=True, done_init=False)
    b.add(working, None, 0.0)
    b.add(starting, None, 0.0)
    ends, next_at = b.expired([working, starting], now=500.0)
    assert ends == [(starting, "not initialized within 10.0 s")] and next_at == 600.0
    working.is_busy = False  # done: idle from its last use on (the driver counts it)
    ends, _ = b.expired([working], now=500.0)
    assert [t for t, _ in ends] == [working]


def test_an_address_that_is_no_ip_tells_its_clients_apart() -> None:
    # A peer named otherwise than by an IP address (a proxy's name, a socket path) is
    # one client's: held to its share.
    b = book(max_sessions_per_peer=1)
    b.add(Tenant(is_busy=True), "client.example", 0.0)
    got = b.room_for("client.example", [], now=0.0)
    assert isinstance(got, HttpError) and got.status == 429


# -- parked 2026-07-28 sessions ------------------------------------------------------


def test_a_parked_session_goes_to_the_next_post_of_its_key_only() -> None:
    b = book()
    mine, theirs = Tenant(), Tenant()
    assert b.park(mine, ("10.0.0.1", "alice")) is None
    assert b.park(theirs, ("10.0.0.1", "bob")) is None
    assert b.take(("10.0.0.2", "alice")) is None  # another address
    assert b.take(("10.0.0.1", "alice")) is mine
    assert b.take(("10.0.0.1", "alice")) is None  # taken: parked no more
    assert b.take(("10.0.0.1", "bob")) is theirs


def test_the_newest_parked_is_taken_first_and_past_the_bound_the_oldest_ends() -> None:
    b = book(max_parked_sessions=2)
    first, second, third = Tenant(), Tenant(), Tenant()
    assert b.park(first, "k") is None
    assert b.park(second, "k") is None
    assert b.park(third, "k") is first  # the driver ends it
    assert b.take("k") is third
    assert b.take("k") is second
    assert b.take("k") is None


def test_a_removed_session_is_parked_no_more() -> None:
    b = book()
    gone = Tenant()
    b.add(gone, None, 0.0)
    b.park(gone, "k")
    b.remove(gone)
    assert b.take("k") is None and not b.parked

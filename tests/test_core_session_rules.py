"""The session's decisions, sans-IO (``mcp_ref/_session_rules.py``): the answers made for
the peer's requests, the cancellation of our own, and when a keepalive pings.  No event
loop: every function takes its inputs, time included, as arguments."""

from __future__ import annotations

from collections import deque

import pytest

from mcp_ref import CLIENT, INTERNAL_ERROR, SERVER, Connection, McpError, SessionClosed
from mcp_ref import types as t
from mcp_ref._pagination import InvalidCursor
from mcp_ref._session_rules import (
    MAX_QUEUED_PROGRESS,
    Callers,
    Handling,
    Keepalive,
    answer_bytes,
    busy_reply,
    cancel_bytes,
    check_session_options,
    checked_grace,
    end_reason,
    error_reply,
    key_of,
    progress_token_of,
    reply_at_once,
)
from mcp_ref.events import ErrorResponse, Progress, Request, RequestTimedOut, Response

from ._pair import init_request, initialized_pair

spec = pytest.mark.spec


@spec("2025-06-18/basic#responses.4")
def test_a_handlers_failure_becomes_its_error_and_never_leaks_details() -> None:
    own = error_reply(McpError(-32602, "no such thing", {"k": 1}), 7, "tools/call")
    assert (own.id, own.code, own.message, own.data) == (7, -32602, "no such thing", {"k": 1})
    group = ExceptionGroup("g", [McpError(-32602, "first"), McpError(-32000, "second")])
    assert error_reply(group, 7, "tools/call").message == "first"
    other = error_reply(RuntimeError("secret detail"), "7", "tools/call")
    assert other.id == "7" and other.code == INTERNAL_ERROR
    assert "secret" not in other.message and "RuntimeError" in other.message
    mixed = ExceptionGroup("g", [McpError(-32602, "x"), RuntimeError("secret")])
    assert error_reply(mixed, 1, "tools/call").code == INTERNAL_ERROR


@spec("2025-06-18/server/utilities/pagination#error-handling.1")
def test_an_invalid_cursor_is_invalid_params() -> None:
    assert error_reply(InvalidCursor("invalid cursor: 'x'"), 1, "tools/list").code == -32602


def test_busy_and_keys() -> None:
    busy = busy_reply(3, SERVER, 256)
    assert busy.code == INTERNAL_ERROR and busy.message.startswith("server busy: 256")
    assert busy_reply(3, CLIENT, 1).message.startswith("client busy")
    call = Request(id=4, method="tools/call", params=t.CallToolRequestParams(name="x"))
    assert reply_at_once(call, SERVER, 0, accepting=True) is None
    refused = reply_at_once(call, SERVER, 256, accepting=False)
    assert isinstance(refused, ErrorResponse) and refused.message.startswith("server busy")
    assert key_of("7") != key_of(7)


@spec("2025-06-18/basic/utilities/ping#behavior-requirements.1")
def test_a_ping_is_answered_at_once_even_when_busy() -> None:
    pong = reply_at_once(Request(id=5, method="ping"), SERVER, 256, accepting=False)
    assert isinstance(pong, Response) and pong.id == 5 and pong.result == t.Result()


@spec(
    "2025-06-18/basic/utilities/cancellation#behavior-requirements.1",
    "2025-06-18/basic/utilities/cancellation#behavior-requirements.2",
)
def test_the_cancellation_of_our_request_unless_the_core_refuses_it() -> None:
    client, _server = initialized_pair()
    rid = client.next_request_id()
    client.send(Request(id=rid, method="tools/list"), now=0.0)
    data = cancel_bytes(client, rid, "cancelled by the caller")
    assert b'"notifications/cancelled"' in data and f'"requestId":{rid}'.encode() in data
    assert cancel_bytes(client, 12345, "never sent") == b""  # not a request in flight
    fresh = Connection(CLIENT)
    fresh.send(init_request(), now=0.0)
    assert cancel_bytes(fresh, 0, "too late") == b""  # initialize is never cancelled


@spec("2025-06-18/basic/utilities/progress#progress-flow.1")
def test_the_progress_token_comes_from_meta() -> None:
    params = t.CallToolRequestParams(name="x", meta={"progressToken": "tok"})
    assert progress_token_of(params) == "tok"
    assert progress_token_of(t.CallToolRequestParams(name="x")) is None
    assert progress_token_of(None) is None


def test_an_answer_the_core_refuses_becomes_internal_error() -> None:
    conn = Connection(SERVER)
    conn.receive_data(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    conn.next_event()  # a ping may come before initialize: its id is open
    wrong = Response(id=1, result=t.ListToolsResult(tools=[]))  # not ping's result type
    data = answer_bytes(conn, wrong, "ping")
    assert b'"code":-32603' in data and b"could not be sent" in data


@spec(
    "2025-06-18/basic/utilities/ping#implementation-considerations.2",
    "2025-06-18/basic/utilities/ping#implementation-considerations.4",
)
def test_keepalive_pings_once_per_interval_of_silence() -> None:
    keepalive = Keepalive(interval=10.0)
    assert keepalive.next_ping_at(heard_at=100.0, last_ping_at=0.0) == 110.0
    assert keepalive.next_ping_at(heard_at=100.0, last_ping_at=105.0) == 115.0
    for bad in (
        {"interval": 0},
        {"interval": 1, "timeout": -1},
        {"interval": 1, "max_failures": 0},
    ):
        with pytest.raises(ValueError):
            Keepalive(**bad)


def test_the_requests_handled_are_counted_by_id_and_a_string_id_is_not_a_number() -> None:
    handling: Handling[str] = Handling(limit=2)
    handling.add(7, "seven")
    assert not handling.full and handling.handle_of("7") is None
    handling.add("7", "the string")
    assert handling.full and len(handling) == 2 and handling.handle_of(7) == "seven"
    handling.remove(7)
    assert not handling.full and handling.handle_of(7) is None
    assert handling.handle_of("7") == "the string"


@spec("2025-06-18/basic#responses.4")
def test_a_graceful_stop_gives_up_on_each_request_with_its_first_reason() -> None:
    handling: Handling[str] = Handling(limit=4)
    handling.add(1, "one")
    assert handling.stopped_by_us(1) is None  # a cancel by the peer: no answer
    assert handling.give_up("stopping") == ["one"]
    handling.add(2, "two")
    assert handling.give_up("later") == ["one", "two"]
    assert (handling.stopped_by_us(1), handling.stopped_by_us(2)) == ("stopping", "later")
    handling.remove(1)
    assert handling.stopped_by_us(1) is None  # gone: its answer was sent
    assert handling.close() == ["two"] and handling.closed


@spec("2025-06-18/basic/utilities/ping#error-handling.2")
def test_unanswered_pings_end_the_session_at_max_failures_and_each_is_logged() -> None:
    keepalive = Keepalive(interval=10.0, timeout=2.0, max_failures=2)
    assert keepalive.missed(1) == ("no answer to ping within 2 s (1 of 2)", None)
    note, lost = keepalive.missed(2)
    assert note.endswith("(2 of 2)") and lost is not None and "2 ping(s)" in lost


def test_an_end_reason_adds_the_channels_cause_once() -> None:
    assert end_reason("the peer closed the connection", None) == "the peer closed the connection"
    assert end_reason("write failed", "exit 1") == "write failed; exit 1"
    assert end_reason("write failed; exit 1", "exit 1") == "write failed; exit 1"


def test_a_session_refuses_unknown_framing_and_limits_below_one() -> None:
    check_session_options("lines", 1, 1)
    check_session_options("messages", 256, 64)
    with pytest.raises(ValueError, match="framing 'bytes'"):
        check_session_options("bytes", 1, 1)
    for limits in ((0, 1), (1, 0)):
        with pytest.raises(ValueError, match="must be >= 1"):
            check_session_options("lines", *limits)


def test_a_graceful_stop_takes_no_negative_grace() -> None:
    assert checked_grace(0) == 0
    assert checked_grace(2.5) == 2.5
    with pytest.raises(ValueError, match="must not be negative"):
        checked_grace(-0.1)


class _Waiter:
    """A waiter as a driver keeps one: what ended the wait, the queued progress."""

    def __init__(self, takes_progress: bool = True) -> None:
        self.answer: object = None
        self.on_progress = print if takes_progress else None
        self.progress: deque[Progress] = deque(maxlen=MAX_QUEUED_PROGRESS)
        self.woken = 0
        self.wake = self

    def set(self) -> None:
        self.woken += 1

    def finish(self, answer: object) -> None:
        if self.answer is None:
            self.answer = answer


def _progress(request_id: int | str, n: float) -> Progress:
    return Progress(request_id=request_id, progress_token="tok", progress=n)


@pytest.mark.spec("2025-06-18/basic/lifecycle#timeouts.2")
def test_callers_end_a_wait_with_its_answer_or_timeout_and_nothing_else() -> None:
    callers: Callers[_Waiter] = Callers()
    seven, text_seven = callers.expect(7, _Waiter()), callers.expect("7", _Waiter())
    callers.deliver(Response(id=7, result=t.EmptyResult()))
    assert isinstance(seven.answer, Response) and text_seven.answer is None
    callers.deliver(RequestTimedOut(id="7", method="tools/call", elapsed=60.0))
    assert isinstance(text_seven.answer, RequestTimedOut)
    callers.deliver(Response(id=8, result=t.EmptyResult()))  # nobody waits: dropped
    callers.deliver(ErrorResponse(id=None, code=-32700, message="Parse error"))  # logged


def test_callers_queue_progress_only_for_a_caller_that_takes_it_and_still_waits() -> None:
    callers: Callers[_Waiter] = Callers()
    taker, other = callers.expect(1, _Waiter()), callers.expect(2, _Waiter(False))
    for n in range(MAX_QUEUED_PROGRESS + 2):
        callers.deliver(_progress(1, n))
    callers.deliver(_progress(2, 1))
    assert [p.progress for p in taker.progress][:1] == [2]  # the oldest dropped
    assert taker.woken == MAX_QUEUED_PROGRESS + 2 and not other.progress and not other.woken
    callers.deliver(Response(id=1, result=t.EmptyResult()))
    callers.deliver(_progress(1, 99))  # answered already: not queued
    assert taker.progress[-1].progress == MAX_QUEUED_PROGRESS + 1


def test_callers_fail_every_wait_and_forget_one_that_left() -> None:
    callers: Callers[_Waiter] = Callers()
    one, two = callers.expect(1, _Waiter()), callers.expect(2, _Waiter())
    callers.forget(2)
    callers.fail_all("the peer closed the connection")
    assert isinstance(one.answer, SessionClosed) and two.answer is None
    assert str(one.answer) == "the peer closed the connection"

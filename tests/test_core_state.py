"""The close rows of the lifecycle table (mcp_ref._state), written out again.

The rows that end a connection are ``SHUTDOWN_ROWS`` (and, for a server,
``SERVER_CLOSING_ROWS``); this file states them once more, built another way, for both
roles, and checks both tables against them.

Source: 2025-06-18/basic/lifecycle#shutdown (the connection ends; for stdio the input
closes); mcp_ref/_state.py's diagram: any state --recv CLOSE--> CLOSING --send
CLOSE--> CLOSED, any state --send CLOSE--> CLOSED, and in CLOSING we may still answer.
"""

from __future__ import annotations

import pytest

from mcp_ref._state import (
    CLIENT,
    RECEIVE,
    SEND,
    SERVER,
    TRANSITIONS,
    Kind,
    Role,
    State,
    describe_refusal,
    kind_of,
)

OPEN = (State.PRE_INIT, State.INITIALIZING, State.INITIALIZED, State.OPERATING)


def _expected_close_rows(role: Role) -> dict[tuple[State, object, Kind], State]:
    rows: dict[tuple[State, object, Kind], State] = {}
    for state in OPEN:
        rows[(state, RECEIVE, Kind.CLOSE)] = State.CLOSING
        rows[(state, SEND, Kind.CLOSE)] = State.CLOSED
    answers = [Kind.RESPONSE, Kind.NOTIFICATION]
    if role is SERVER:
        answers += [Kind.INITIALIZE_RESULT, Kind.INITIALIZE_ERROR]
    for kind in answers:
        rows[(State.CLOSING, SEND, kind)] = State.CLOSING
    rows[(State.CLOSING, SEND, Kind.CLOSE)] = State.CLOSED
    return rows


@pytest.mark.parametrize("role", [CLIENT, SERVER])
def test_the_close_rows_are_exactly_these(role: Role) -> None:
    expected = _expected_close_rows(role)
    table = TRANSITIONS[role]
    # Every row about closing, or leaving CLOSING/CLOSED, is one of them.
    closing_rows = {
        key: value
        for key, value in table.items()
        if key[2] is Kind.CLOSE or key[0] in (State.CLOSING, State.CLOSED)
    }
    assert closing_rows == expected


@pytest.mark.parametrize("role", [CLIENT, SERVER])
def test_nothing_leaves_closed_and_closing_only_answers(role: Role) -> None:
    table = TRANSITIONS[role]
    assert not [key for key in table if key[0] is State.CLOSED]
    assert not [key for key in table if key[0] is State.CLOSING and key[1] is RECEIVE]


def test_a_refusal_names_role_direction_kind_and_state() -> None:
    assert describe_refusal(CLIENT, State.PRE_INIT, SEND, Kind.REQUEST) == (
        "client cannot send request in state PRE_INIT (2025-06-18/basic/lifecycle)"
    )
    assert describe_refusal(SERVER, State.INITIALIZED, RECEIVE, Kind.PING) == (
        "server cannot receive ping in state INITIALIZED (2025-06-18/basic/lifecycle)"
    )


def test_the_table_has_a_next_state_or_no_row() -> None:
    assert TRANSITIONS[CLIENT].get((State.OPERATING, SEND, Kind.REQUEST)) is State.OPERATING
    assert TRANSITIONS[CLIENT].get((State.PRE_INIT, SEND, Kind.REQUEST)) is None
    assert TRANSITIONS[SERVER].get((State.PRE_INIT, RECEIVE, Kind.INITIALIZE)) is State.INITIALIZING
    assert TRANSITIONS[SERVER].get((State.PRE_INIT, SEND, Kind.INITIALIZE)) is None


def test_only_a_client_turns_an_unsupported_version_into_closed() -> None:
    key = (State.INITIALIZING, RECEIVE, Kind.UNSUPPORTED_VERSION)
    assert TRANSITIONS[CLIENT][key] is State.CLOSED
    assert key not in TRANSITIONS[SERVER]


def test_kind_of_answers_to_initialize_and_defaults() -> None:
    assert kind_of(None, is_request=False) is Kind.RESPONSE
    assert kind_of(None, is_request=False, answers_initialize=True) is Kind.INITIALIZE_RESULT
    assert (
        kind_of(None, is_request=False, answers_initialize=True, is_error=True)
        is Kind.INITIALIZE_ERROR
    )
    assert kind_of(None, is_request=False, is_error=True) is Kind.RESPONSE
    assert kind_of("initialize", is_request=True) is Kind.INITIALIZE
    assert kind_of("ping", is_request=True) is Kind.PING
    assert kind_of("notifications/initialized", is_request=False) is Kind.INITIALIZED


def test_the_rows_become_the_look_up_table_and_a_repeated_key_is_refused() -> None:
    from mcp_ref._state import _table

    row = (State.OPERATING, SEND, Kind.PING, State.OPERATING)
    other = (State.OPERATING, RECEIVE, Kind.PING, State.OPERATING)
    assert _table([row], [other]) == {row[:3]: row[3], other[:3]: other[3]}
    with pytest.raises(ValueError, match="two rows for OPERATING, SEND, PING"):
        _table([row], [row])

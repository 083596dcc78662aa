"""Every (role, state, direction, kind): the lifecycle table says what the spec's
sentences say, and the connection refuses exactly what the table leaves out.

The expected rules are written out here, apart from the table, from
2025-06-18/basic/lifecycle#initialization: initialize first and only once, by the
client; ``notifications/initialized`` by the client after the result; pings at any
time; other requests only in operation (the client waits for the result and sends
initialized first, the server waits for initialized); notifications (logging,
progress, cancellation) once initialize is under way; after end of input only the
answers (and notifications) of accepted requests; nothing after close.
The space is finite, so it is enumerated whole rather than sampled."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from mcp_ref import (
    CLIENT,
    SERVER,
    Connection,
    LocalProtocolError,
    Notification,
    RemoteProtocolError,
    Request,
    Response,
    Role,
    State,
)
from mcp_ref import types as t
from mcp_ref._state import RECEIVE, SEND, TRANSITIONS, Direction, Kind

from ._pair import deliver, init_request, init_result

spec = pytest.mark.spec


def in_state(role: Role, state: State) -> Connection:
    """A connection of ``role`` driven into ``state`` by real messages."""
    client, server = Connection(CLIENT), Connection(SERVER)
    steps = [State.PRE_INIT, State.INITIALIZING, State.INITIALIZED, State.OPERATING]
    if state is State.CLOSING:
        conn = client if role is CLIENT else server
        conn.receive_data(b"")
        conn.next_event()
        assert conn.state is State.CLOSING
        return conn
    if state is not State.CLOSED:
        for _ in range(steps.index(state)):
            if client.state is State.PRE_INIT:
                deliver(client.send(init_request()), server)
            elif client.state is State.INITIALIZING:
                deliver(server.send(Response(id=0, result=init_result())), client)
            else:
                deliver(client.send(Notification(method="notifications/initialized")), server)
        # Server and client advance one step apart; line each up with the target.
        conn = client if role is CLIENT else server
        if conn.state is not state:
            # The server reaches INITIALIZING/INITIALIZED one message before the client.
            conn = server if role is SERVER else client
        assert conn.state is state, (role, state, conn.state)
        return conn
    conn = client if role is CLIENT else server
    conn.close()
    return conn


def message(role_sending: Role, kind: Kind) -> Any:
    if kind is Kind.INITIALIZE:
        return init_request(rid="init-2")
    if kind is Kind.INITIALIZED:
        return Notification(method="notifications/initialized")
    if kind is Kind.PING:
        return Request(id="ping-x", method="ping")
    if kind is Kind.REQUEST:
        if role_sending is CLIENT:
            return Request(id="req-x", method="tools/list")
        return Request(id="req-x", method="roots/list")
    if kind is Kind.NOTIFICATION:
        if role_sending is CLIENT:
            return Notification(method="notifications/roots/list_changed")
        return Notification(
            method="notifications/message",
            params=t.LoggingMessageNotificationParams(level="info", data="x"),
        )
    raise AssertionError(kind)


def wire(ev: Any) -> bytes:
    """Serialize an event as a peer would, without the peer's own checks."""
    from mcp_ref._convert import unstructure
    from mcp_ref._jsonrpc import encode

    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": ev.method}
    if isinstance(ev, Request):
        msg["id"] = ev.id
    if ev.params is not None:
        msg["params"] = unstructure(ev.params)
    return encode(msg) + b"\n"


KINDS = [Kind.INITIALIZE, Kind.INITIALIZED, Kind.PING, Kind.REQUEST, Kind.NOTIFICATION]
CASES = list(itertools.product([CLIENT, SERVER], list(State), [SEND, RECEIVE], KINDS))


@spec("2025-06-18/basic/lifecycle#initialization.1")
@pytest.mark.parametrize(("role", "state", "direction", "kind"), CASES, ids=str)
def test_table_decides(role: Role, state: State, direction: Direction, kind: Kind) -> None:
    allowed = (state, direction, kind) in TRANSITIONS[role]
    conn = in_state(role, state)
    sender = role if direction is SEND else role.peer
    ev = message(sender, kind)
    refused_by_lifecycle = False
    try:
        if direction is SEND:
            conn.send(ev)
        else:
            conn.receive_data(wire(ev))
            conn.next_event()
    except (LocalProtocolError, RemoteProtocolError) as exc:
        # Other layers (the method table: wrong sender or missing capability; a
        # closed connection) may refuse too; only "in state" refusals are the table's.
        refused_by_lifecycle = (
            "in state" in exc.message
            or (state is State.CLOSED and "closed" in exc.message)
            # After end of input nothing can be received at all.
            or (state is State.CLOSING and "end of input" in exc.message)
        )
    if allowed:
        assert not refused_by_lifecycle
    elif state is not State.CLOSED and sender in _senders(kind):
        # (In CLOSING every refused send is the table's; receives fail at end of input.)
        assert refused_by_lifecycle, "table has no entry but the message was accepted"


def expected(role: Role, state: State, direction: Direction, kind: Kind) -> bool:
    sender = role if direction is SEND else role.peer
    if state is State.CLOSED:
        return False
    if state is State.CLOSING:
        # Input ended: nothing is received; we only finish what we accepted.
        return direction is SEND and kind is Kind.NOTIFICATION
    if kind is Kind.INITIALIZE:
        return state is State.PRE_INIT and sender is CLIENT
    if kind is Kind.INITIALIZED:
        return state is State.INITIALIZED and sender is CLIENT
    if kind is Kind.PING:
        return True
    if kind is Kind.REQUEST:
        return state is State.OPERATING
    if kind is Kind.NOTIFICATION:
        return state in (State.INITIALIZING, State.INITIALIZED, State.OPERATING)
    raise AssertionError(kind)


@spec(
    "2025-06-18/basic/lifecycle#initialization.4",
    "2025-06-18/basic/lifecycle#initialization.5",
    "2025-06-18/basic/lifecycle#initialization.6",
)
@pytest.mark.parametrize(("role", "state", "direction", "kind"), CASES, ids=str)
def test_table_says_what_the_spec_says(
    role: Role, state: State, direction: Direction, kind: Kind
) -> None:
    sender = role if direction is SEND else role.peer
    if sender not in _senders(kind):
        assert (state, direction, kind) not in TRANSITIONS[role]
        return
    assert ((state, direction, kind) in TRANSITIONS[role]) == expected(role, state, direction, kind)


def _senders(kind: Kind) -> set[Role]:
    return {CLIENT} if kind in (Kind.INITIALIZE, Kind.INITIALIZED) else {CLIENT, SERVER}


# -- the modern era's table (2026-07-28) ----------------------------------------------------
# Written out apart from mcp_ref/_state_modern.py, from 2026-07-28/basic/versioning (no
# handshake: operating from the first request), 2026-07-28/basic/patterns/index (the
# server sends no requests, the client no responses) and the shutdown rules above.

MODERN_CASES = list(itertools.product([CLIENT, SERVER], list(State), [SEND, RECEIVE], list(Kind)))


def expected_modern(role: Role, state: State, direction: Direction, kind: Kind) -> State | None:
    """The next state the modern era allows, or None."""
    sender = role if direction is SEND else role.peer
    if kind in (Kind.INITIALIZE, Kind.INITIALIZE_RESULT, Kind.INITIALIZE_ERROR):
        return None  # no handshake
    if kind in (Kind.UNSUPPORTED_VERSION, Kind.INITIALIZED, Kind.PING):
        return None  # removed with it
    if kind is Kind.CLOSE:
        if state in (State.PRE_INIT, State.OPERATING) and (
            role is SERVER or state is not State.PRE_INIT
        ):
            return State.CLOSING if direction is RECEIVE else State.CLOSED
        return State.CLOSED if state is State.CLOSING and direction is SEND else None
    if kind is Kind.REQUEST and sender is SERVER:
        return None
    if kind is Kind.RESPONSE and sender is CLIENT:
        return None
    if state is State.PRE_INIT:  # only a server's, before its first request
        if role is not SERVER:
            return None
        if kind is Kind.REQUEST:
            return State.OPERATING  # the request that opens the era
        return State.PRE_INIT if (direction, kind) == (SEND, Kind.RESPONSE) else None
    if state is State.OPERATING:
        return State.OPERATING
    if state is State.CLOSING:  # a server finishes what it accepted
        return State.CLOSING if role is SERVER and direction is SEND else None
    return None


@pytest.mark.parametrize(("role", "state", "direction", "kind"), MODERN_CASES, ids=str)
def test_modern_table_says_what_the_spec_says(
    role: Role, state: State, direction: Direction, kind: Kind
) -> None:
    """2026-07-28/basic/versioning; 2026-07-28/basic/transports/stdio#sending-messages.1
    and #receiving-messages.2."""
    from mcp_ref._state_modern import MODERN_TRANSITIONS

    got = MODERN_TRANSITIONS[role].get((state, direction, kind))
    assert got == expected_modern(role, state, direction, kind)

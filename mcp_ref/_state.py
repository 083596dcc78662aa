"""The MCP lifecycle as a table: which message may go which way in which state.

Theory of operation
-------------------
An MCP connection goes through three phases (2025-06-18/basic/lifecycle#lifecycle-phases):
initialization, operation and shutdown.  We track it per connection with one
:class:`State` and one table per role, keyed by ``(state, direction, kind)``:

    TRANSITIONS[our_role][(state, SEND | RECEIVE, kind)] -> next state

A key that is missing means "not allowed here": on SEND the core raises
:class:`LocalProtocolError`, on RECEIVE :class:`RemoteProtocolError` (with a ready
-32600 error response when the message was a request).  Both name role, state,
direction and kind.  The tables are literal rows, self-loops written out, and the
connection changes state only through them, so the rows are the whole truth.

Client (ours = CLIENT)::

    PRE_INIT --send initialize--> INITIALIZING --recv initialize result--> INITIALIZED
        ^                              |                                        |
        +----recv initialize error-----+                       send notifications/initialized
                                       |                                        v
            CLOSED <--recv result of an unsupported version                OPERATING
Server (ours = SERVER)::

    PRE_INIT --recv initialize--> INITIALIZING --send initialize result--> INITIALIZED
        ^                              |                                        |
        +----send initialize error-----+                       recv notifications/initialized
                                                                                v
                                                                           OPERATING

Any state --recv CLOSE (end of input)--> CLOSING --send CLOSE--> CLOSED, and any
state --send CLOSE (we stop, or a write failed)--> CLOSED.  In CLOSING the peer will
send nothing more, but we may still answer the requests we accepted (with their
progress and log notifications): nothing accepted is lost.

The special cases, kept beside the table rather than in it:

1. Which *kind* a message is depends on its method: ``initialize`` and
   ``notifications/initialized`` are their own kinds, ``ping`` is apart from other
   requests because it is allowed before initialization, and a response to
   ``initialize`` is INITIALIZE_RESULT or INITIALIZE_ERROR.  :func:`kind_of` decides.
2. Capability and version checks are not lifecycle: ``_methods.py`` holds them.
3. Cancellation of ``initialize`` is refused in ``_connection.py``.
"""

from __future__ import annotations

import enum

__all__ = [
    "CLIENT",
    "RECEIVE",
    "SEND",
    "SERVER",
    "TRANSITIONS",
    "Direction",
    "Kind",
    "Role",
    "State",
    "describe_refusal",
    "kind_of",
]


class _FastHashEnum(enum.Enum):
    """An Enum hashed by identity in C (``Enum.__hash__`` is Python code, and the table
    is looked up twice per message)."""

    __hash__ = object.__hash__


class Role(_FastHashEnum):
    """Which side of the connection we are."""

    CLIENT = "client"
    SERVER = "server"

    @property
    def peer(self) -> Role:
        """The other role."""
        return Role.SERVER if self is Role.CLIENT else Role.CLIENT


CLIENT = Role.CLIENT
SERVER = Role.SERVER


class Direction(_FastHashEnum):
    """Whether a message is being sent by us or received from the peer."""

    SEND = "send"
    RECEIVE = "recv"


SEND = Direction.SEND
RECEIVE = Direction.RECEIVE


class State(_FastHashEnum):
    """The lifecycle state of one connection (the same names for both roles)."""

    PRE_INIT = "PRE_INIT"
    """Nothing but ``initialize`` and ``ping`` has happened."""
    INITIALIZING = "INITIALIZING"
    """``initialize`` is in flight; no result yet."""
    INITIALIZED = "INITIALIZED"
    """The initialize result went out; ``notifications/initialized`` has not yet."""
    OPERATING = "OPERATING"
    """Normal operation under the negotiated version and capabilities."""
    CLOSING = "CLOSING"
    """The peer's input ended; we may still answer requests we accepted, then close."""
    CLOSED = "CLOSED"
    """End of input; nothing more is read or written."""


class Kind(_FastHashEnum):
    """What a message is, as far as the lifecycle cares."""

    INITIALIZE = "initialize"
    """The ``initialize`` request."""
    INITIALIZE_RESULT = "initialize result"
    """The success response to ``initialize``."""
    INITIALIZE_ERROR = "initialize error"
    """The error response to ``initialize``, or a result that is not a valid one."""
    UNSUPPORTED_VERSION = "unsupported version"
    """A valid ``initialize`` result naming a protocol version we do not support."""
    INITIALIZED = "notifications/initialized"
    """The client's ``notifications/initialized``."""
    PING = "ping"
    """A ``ping`` request."""
    REQUEST = "request"
    """Any other request."""
    NOTIFICATION = "notification"
    """Any other notification (log messages, progress, cancellation, ...)."""
    RESPONSE = "response"
    """A response or error to anything but ``initialize``."""
    CLOSE = "close"
    """End of input (RECEIVE) or the driver closing (SEND)."""


_T = dict[tuple[State, Direction, Kind], State]

# Bare names, so each row reads as a sentence: "in PRE_INIT, SEND INITIALIZE leads to
# INITIALIZING".
PRE_INIT, INITIALIZING, INITIALIZED, OPERATING, CLOSING, CLOSED = State
# (Kind.INITIALIZED, whose bare name is the state's, is written out in full.)
(INITIALIZE, INITIALIZE_RESULT, INITIALIZE_ERROR, UNSUPPORTED_VERSION, _, PING, REQUEST,
 NOTIFICATION, RESPONSE, CLOSE) = Kind  # fmt: skip

# Source: 2025-06-18/basic/lifecycle#lifecycle-phases (initialization, operation, shutdown).
# The rows are in three parts: the handshake, which differs by role (CLIENT_ROWS,
# SERVER_ROWS); what both roles may do in each state without changing it (SELF_LOOPS);
# and shutdown (SHUTDOWN_ROWS, SERVER_CLOSING_ROWS).
CLIENT_ROWS: list[tuple[State, Direction, Kind, State]] = [
    # state       direction kind                 next state
    # Spec: 2025-06-18/basic/lifecycle#initialization.1
    # "The initialization phase MUST be the first interaction between client and server."
    # Spec: 2025-06-18/basic/lifecycle#initialization.2
    # "The client MUST initiate this phase by sending an `initialize` request containing:"
    (PRE_INIT, SEND, INITIALIZE, INITIALIZING),
    (INITIALIZING, RECEIVE, INITIALIZE_RESULT, INITIALIZED),
    (INITIALIZING, RECEIVE, INITIALIZE_ERROR, PRE_INIT),
    # Spec: 2025-06-18/basic/lifecycle#version-negotiation.6
    # "If the client does not support the version in the server's response, it SHOULD
    # disconnect."
    (INITIALIZING, RECEIVE, UNSUPPORTED_VERSION, CLOSED),
    # Spec: 2025-06-18/basic/lifecycle#initialization.4
    # "After successful initialization, the client MUST send an `initialized` notification to
    # indicate it is ready to begin normal operations:"
    (INITIALIZED, SEND, Kind.INITIALIZED, OPERATING),
]

SERVER_ROWS: list[tuple[State, Direction, Kind, State]] = [
    # state       direction kind                 next state
    # Spec: 2025-06-18/basic/lifecycle#initialization.1
    # "The initialization phase MUST be the first interaction between client and server."
    (PRE_INIT, RECEIVE, INITIALIZE, INITIALIZING),
    # Spec: 2025-06-18/basic/lifecycle#initialization.3
    # "The server MUST respond with its own capabilities and information:"
    (INITIALIZING, SEND, INITIALIZE_RESULT, INITIALIZED),
    (INITIALIZING, SEND, INITIALIZE_ERROR, PRE_INIT),
    # Spec: 2025-06-18/basic/lifecycle#initialization.4
    # "After successful initialization, the client MUST send an `initialized` notification to
    # indicate it is ready to begin normal operations:"
    # (requests other than ping wait for it)
    (INITIALIZED, RECEIVE, Kind.INITIALIZED, OPERATING),
]

SELF_LOOPS: list[tuple[State, Direction, Kind, State]] = [
    # -- before and during the handshake: pings, answers, and (once initialize is in
    # flight) notifications, both ways; no other request --
    (PRE_INIT, SEND, PING, PRE_INIT),
    (PRE_INIT, SEND, RESPONSE, PRE_INIT),
    (PRE_INIT, RECEIVE, PING, PRE_INIT),
    (PRE_INIT, RECEIVE, RESPONSE, PRE_INIT),
    # Spec: 2025-06-18/basic/lifecycle#initialization.5
    # "The client SHOULD NOT send requests other than pings before the server has responded to the
    # `initialize` request."
    # Spec: 2025-06-18/basic/lifecycle#initialization.6
    # "The server SHOULD NOT send requests other than pings and logging before receiving the
    # `initialized` notification."
    (INITIALIZING, SEND, PING, INITIALIZING),
    (INITIALIZING, SEND, NOTIFICATION, INITIALIZING),
    (INITIALIZING, SEND, RESPONSE, INITIALIZING),
    (INITIALIZING, RECEIVE, PING, INITIALIZING),
    (INITIALIZING, RECEIVE, NOTIFICATION, INITIALIZING),
    (INITIALIZING, RECEIVE, RESPONSE, INITIALIZING),
    (INITIALIZED, SEND, PING, INITIALIZED),
    (INITIALIZED, SEND, NOTIFICATION, INITIALIZED),
    (INITIALIZED, SEND, RESPONSE, INITIALIZED),
    (INITIALIZED, RECEIVE, PING, INITIALIZED),
    (INITIALIZED, RECEIVE, NOTIFICATION, INITIALIZED),
    (INITIALIZED, RECEIVE, RESPONSE, INITIALIZED),
    # -- operation: anything the method table and the capabilities allow --
    (OPERATING, SEND, PING, OPERATING),
    (OPERATING, SEND, REQUEST, OPERATING),
    (OPERATING, SEND, NOTIFICATION, OPERATING),
    (OPERATING, SEND, RESPONSE, OPERATING),
    (OPERATING, RECEIVE, PING, OPERATING),
    (OPERATING, RECEIVE, REQUEST, OPERATING),
    (OPERATING, RECEIVE, NOTIFICATION, OPERATING),
    (OPERATING, RECEIVE, RESPONSE, OPERATING),
]

# Source: 2025-06-18/basic/lifecycle#shutdown ("one side (usually the client) cleanly
# terminates the protocol connection"; for stdio, by closing the input).
SHUTDOWN_ROWS: list[tuple[State, Direction, Kind, State]] = [
    # End of input: the peer is done; we may still answer what we accepted.
    (PRE_INIT, RECEIVE, CLOSE, CLOSING),
    (INITIALIZING, RECEIVE, CLOSE, CLOSING),
    (INITIALIZED, RECEIVE, CLOSE, CLOSING),
    (OPERATING, RECEIVE, CLOSE, CLOSING),
    # We stop, or a write failed: nothing more either way.
    (PRE_INIT, SEND, CLOSE, CLOSED),
    (INITIALIZING, SEND, CLOSE, CLOSED),
    (INITIALIZED, SEND, CLOSE, CLOSED),
    (OPERATING, SEND, CLOSE, CLOSED),
    # While closing: answers to accepted requests, with their notifications, then close.
    (CLOSING, SEND, RESPONSE, CLOSING),
    (CLOSING, SEND, NOTIFICATION, CLOSING),
    (CLOSING, SEND, CLOSE, CLOSED),
]

SERVER_CLOSING_ROWS: list[tuple[State, Direction, Kind, State]] = [
    # A server may still answer an initialize it accepted before the input ended.
    (CLOSING, SEND, INITIALIZE_RESULT, CLOSING),
    (CLOSING, SEND, INITIALIZE_ERROR, CLOSING),
]


def _table(*rows: list[tuple[State, Direction, Kind, State]]) -> _T:
    """The rows as a look-up dict; ValueError when a key is given twice."""
    table: _T = {}
    for state, direction, kind, next_ in (row for part in rows for row in part):
        if (state, direction, kind) in table:
            raise ValueError(f"two rows for {state.name}, {direction.name}, {kind.name}")
        table[(state, direction, kind)] = next_
    return table


TRANSITIONS: dict[Role, _T] = {
    CLIENT: _table(CLIENT_ROWS, SELF_LOOPS, SHUTDOWN_ROWS),
    SERVER: _table(SERVER_ROWS, SELF_LOOPS, SHUTDOWN_ROWS, SERVER_CLOSING_ROWS),
}
"""Both tables, by our role: ``(state, direction, kind) -> next state``.  spec_map draws
the lifecycle diagram from this."""


def kind_of(
    method: str | None,
    *,
    is_request: bool,
    answers_initialize: bool = False,
    is_error: bool = False,
) -> Kind:
    """The :class:`Kind` of a message: ``method`` None for a response, which
    ``answers_initialize`` or not, and ``is_error`` or not."""
    if method is None:
        if answers_initialize:
            return INITIALIZE_ERROR if is_error else INITIALIZE_RESULT
        return RESPONSE
    if is_request:
        if method == "initialize":
            return INITIALIZE
        if method == "ping":
            return PING
        return REQUEST
    if method == "notifications/initialized":
        return Kind.INITIALIZED
    return NOTIFICATION


def describe_refusal(role: Role, state: State, direction: Direction, kind: Kind) -> str:
    """A one-line message naming role, state, direction and kind of a refused message."""
    verb = "send" if direction is SEND else "receive"
    where = f"in state {state.value} (2025-06-18/basic/lifecycle)"
    return f"{role.value} cannot {verb} {kind.value} {where}"

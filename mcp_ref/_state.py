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
direction and kind.  Self-loops are written out, so the table is the whole truth.

Client (ours = CLIENT)::

    PRE_INIT --send initialize--> INITIALIZING --recv initialize result--> INITIALIZED
        ^                              |                                        |
        +----recv initialize error-----+                       send notifications/initialized
                                                                                v
                                                                           OPERATING
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
3. Cancellation of ``initialize`` is refused in ``_inflight.py``.
"""

from __future__ import annotations

import enum

from ._errors import LocalProtocolError

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
    "next_state",
]


class _FastHashEnum(enum.Enum):
    """An Enum hashed by identity in C (members compare by identity anyway).

    ``Enum.__hash__`` is a Python-level function; the lifecycle table is looked up
    twice per message with tuples of these, so the C hash matters on the hot path.
    """

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
    """The error response to ``initialize``."""
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

PRE, ING, ED, OP, CLOSING, CLOSED = (
    State.PRE_INIT,
    State.INITIALIZING,
    State.INITIALIZED,
    State.OPERATING,
    State.CLOSING,
    State.CLOSED,
)
K = Kind


def _loops(state: State, direction: Direction, *kinds: Kind) -> _T:
    return {(state, direction, kind): state for kind in kinds}


def _close_from_everywhere(role: Role) -> _T:
    table: _T = {}
    for state in State:
        if state in (CLOSING, CLOSED):
            continue
        # End of input: the peer is done, we may still answer (CLOSING).
        table[(state, RECEIVE, K.CLOSE)] = CLOSING
        # We stop (or a write failed): nothing more either way.
        table[(state, SEND, K.CLOSE)] = CLOSED
    # While CLOSING: answers to accepted requests, with their notifications, then close.
    table.update(_loops(CLOSING, SEND, K.RESPONSE, K.NOTIFICATION))
    if role is SERVER:
        table.update(_loops(CLOSING, SEND, K.INITIALIZE_RESULT, K.INITIALIZE_ERROR))
    table[(CLOSING, SEND, K.CLOSE)] = CLOSED
    return table


CLIENT_TRANSITIONS: _T = {
    # Spec: 2025-06-18/basic/lifecycle#initialization.1
    # "The initialization phase MUST be the first interaction between client and server."
    # Spec: 2025-06-18/basic/lifecycle#initialization.2
    # "The client MUST initiate this phase by sending an `initialize` request containing:"
    (PRE, SEND, K.INITIALIZE): ING,
    **_loops(PRE, SEND, K.PING, K.RESPONSE),
    **_loops(PRE, RECEIVE, K.PING, K.RESPONSE),
    (ING, RECEIVE, K.INITIALIZE_RESULT): ED,
    (ING, RECEIVE, K.INITIALIZE_ERROR): PRE,
    # Spec: 2025-06-18/basic/lifecycle#initialization.5
    # "The client SHOULD NOT send requests other than pings before the server has responded to the
    # `initialize` request."
    # Only pings (and notifications such as cancelling a ping) before the result.
    **_loops(ING, SEND, K.PING, K.NOTIFICATION, K.RESPONSE),
    # Spec: 2025-06-18/basic/lifecycle#initialization.6
    # "The server SHOULD NOT send requests other than pings and logging before receiving the
    # `initialized` notification."
    # The server may ping and log before it has our initialized notification.
    **_loops(ING, RECEIVE, K.PING, K.NOTIFICATION, K.RESPONSE),
    # Spec: 2025-06-18/basic/lifecycle#initialization.4
    # "After successful initialization, the client MUST send an `initialized` notification to
    # indicate it is ready to begin normal operations:"
    (ED, SEND, K.INITIALIZED): OP,
    **_loops(ED, SEND, K.PING, K.NOTIFICATION, K.RESPONSE),
    **_loops(ED, RECEIVE, K.PING, K.NOTIFICATION, K.RESPONSE),
    **_loops(OP, SEND, K.PING, K.REQUEST, K.NOTIFICATION, K.RESPONSE),
    **_loops(OP, RECEIVE, K.PING, K.REQUEST, K.NOTIFICATION, K.RESPONSE),
    **_close_from_everywhere(CLIENT),
}
"""The client's table: ``(state, direction, kind) -> next state``."""

SERVER_TRANSITIONS: _T = {
    # Spec: 2025-06-18/basic/lifecycle#initialization.1
    # "The initialization phase MUST be the first interaction between client and server."
    (PRE, RECEIVE, K.INITIALIZE): ING,
    **_loops(PRE, RECEIVE, K.PING, K.RESPONSE),
    **_loops(PRE, SEND, K.PING, K.RESPONSE),
    # Spec: 2025-06-18/basic/lifecycle#initialization.3
    # "The server MUST respond with its own capabilities and information:"
    (ING, SEND, K.INITIALIZE_RESULT): ED,
    (ING, SEND, K.INITIALIZE_ERROR): PRE,
    **_loops(ING, RECEIVE, K.PING, K.NOTIFICATION, K.RESPONSE),
    # Spec: 2025-06-18/basic/lifecycle#initialization.6
    # "The server SHOULD NOT send requests other than pings and logging before receiving the
    # `initialized` notification."
    **_loops(ING, SEND, K.PING, K.NOTIFICATION, K.RESPONSE),
    (ED, RECEIVE, K.INITIALIZED): OP,
    # Spec: 2025-06-18/basic/lifecycle#initialization.4
    # "After successful initialization, the client MUST send an `initialized` notification to
    # indicate it is ready to begin normal operations:"
    # Requests other than ping must wait for the client's initialized notification.
    **_loops(ED, RECEIVE, K.PING, K.NOTIFICATION, K.RESPONSE),
    **_loops(ED, SEND, K.PING, K.NOTIFICATION, K.RESPONSE),
    **_loops(OP, SEND, K.PING, K.REQUEST, K.NOTIFICATION, K.RESPONSE),
    **_loops(OP, RECEIVE, K.PING, K.REQUEST, K.NOTIFICATION, K.RESPONSE),
    **_close_from_everywhere(SERVER),
}
"""The server's table: ``(state, direction, kind) -> next state``."""

TRANSITIONS: dict[Role, _T] = {CLIENT: CLIENT_TRANSITIONS, SERVER: SERVER_TRANSITIONS}
"""Both tables, by our role.  spec_map draws the lifecycle diagram from this."""


def kind_of(
    method: str | None,
    *,
    is_request: bool,
    answers_initialize: bool = False,
    is_error: bool = False,
) -> Kind:
    """Classify a message for the table.

    Args:
        method: the request/notification method, or None for a response.
        is_request: True for a request, False for a notification or response.
        answers_initialize: for responses, whether it answers our/their ``initialize``.
        is_error: for responses, whether it is an error response.

    Returns:
        The :class:`Kind`.
    """
    if method is None:
        if answers_initialize:
            return K.INITIALIZE_ERROR if is_error else K.INITIALIZE_RESULT
        return K.RESPONSE
    if is_request:
        if method == "initialize":
            return K.INITIALIZE
        if method == "ping":
            return K.PING
        return K.REQUEST
    if method == "notifications/initialized":
        return K.INITIALIZED
    return K.NOTIFICATION


def next_state(role: Role, state: State, direction: Direction, kind: Kind) -> State | None:
    """Look up the table.

    Returns:
        The next state, or None when the message is not allowed (the caller raises the
        Local or Remote error that fits the direction).
    """
    return TRANSITIONS[role].get((state, direction, kind))


def describe_refusal(role: Role, state: State, direction: Direction, kind: Kind) -> str:
    """A one-line message naming role, state, direction and kind of a refused message."""
    verb = "send" if direction is SEND else "receive"
    return (
        f"{role.value} cannot {verb} {kind.value} in state {state.value} "
        "(2025-06-18/basic/lifecycle)"
    )


def check_send(role: Role, state: State, kind: Kind) -> State:
    """Return the next state for sending ``kind``, or raise LocalProtocolError.

    Raises:
        LocalProtocolError: the table has no entry for (role, state, SEND, kind).
    """
    new = next_state(role, state, SEND, kind)
    if new is None:
        raise LocalProtocolError(describe_refusal(role, state, SEND, kind))
    return new

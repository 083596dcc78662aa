"""The modern era's lifecycle (2026-07-28) as a table, beside the handshake one.

Theory of operation
-------------------
From 2026-07-28 there is no ``initialize``: "There is no negotiation handshake. Every
request carries its protocol version, and the server accepts or rejects each request
independently" (2026-07-28/basic/versioning).  So the modern lifecycle has no
initialization phase: a connection is operating from its first request until it
closes.  It is a second table keyed exactly like the handshake one
(:data:`mcp_ref._state.TRANSITIONS`)::

    MODERN_TRANSITIONS[our_role][(state, SEND | RECEIVE, kind)] -> next state

with the same :class:`~mcp_ref._state.State` and :class:`~mcp_ref._state.Kind` values,
and a missing key meaning "not allowed here".  A connection follows one table at a
time, the one of its peer's era; it changes state only by a row of that table.

Client (ours = CLIENT), opened in the modern era::

    OPERATING --recv CLOSE--> CLOSING --send CLOSE--> CLOSED    (and send CLOSE: CLOSED)
      self-loops: send request, send notification (cancellation),
                  recv response, recv notification

Server (ours = SERVER)::

    PRE_INIT --recv request (modern _meta)--> OPERATING --recv CLOSE--> CLOSING --> CLOSED
      self-loop in PRE_INIT: send response (the reply to a refused message)
      self-loops in OPERATING: recv request, recv notification (cancellation),
                               send response, send notification

The special cases, kept beside the table rather than in it:

1. A server starts in PRE_INIT with its era undecided: the era is the peer's, decided
   once (2026-07-28/basic/versioning, backward compatibility).  Until then it follows
   the handshake table, except for a request whose ``params._meta`` carries the
   protocol version: the one row out of PRE_INIT here takes it, and from then on this
   table alone.  An ``initialize`` accepted first decides the handshake era instead
   (``_connection.py`` sets ``era``; :mod:`mcp_ref._modern_connection` reads the
   ``_meta``).  A modern request refused for its ``_meta`` (-32602, -32022) decides
   nothing: the client may retry with another version, or fall back to ``initialize``.
2. ``initialize``, ``notifications/initialized`` and ``ping`` have no rows: they are
   their own kinds (:func:`~mcp_ref._state.kind_of`), so the table refuses them by kind
   once the era is modern, and the message names the era.
3. No SEND REQUEST row for the server, no SEND RESPONSE row for the client: "Servers
   MUST NOT initiate JSON-RPC requests, and clients do not send JSON-RPC responses"
   (2026-07-28/basic/patterns/index).  What the server used to ask (sampling,
   elicitation, roots) travels inside an ``input_required`` result instead.
"""

from __future__ import annotations

from typing import Final

from ._state import CLIENT, RECEIVE, SEND, SERVER, Direction, Kind, Role, State, _table

__all__ = ["MODERN_TRANSITIONS", "describe_modern_refusal"]

PRE_INIT, OPERATING, CLOSING, CLOSED = State.PRE_INIT, State.OPERATING, State.CLOSING, State.CLOSED
REQUEST, NOTIFICATION, RESPONSE, CLOSE = Kind.REQUEST, Kind.NOTIFICATION, Kind.RESPONSE, Kind.CLOSE

# Spec: 2026-07-28/basic/transports/stdio#sending-messages.1
# "The client MUST NOT write JSON-RPC responses."
MODERN_CLIENT_ROWS: list[tuple[State, Direction, Kind, State]] = [
    # state      direction kind          next state
    (OPERATING, SEND, REQUEST, OPERATING),
    # (cancellation: the one notification a client sends, 2026-07-28/basic/patterns/cancellation)
    (OPERATING, SEND, NOTIFICATION, OPERATING),
    (OPERATING, RECEIVE, RESPONSE, OPERATING),
    (OPERATING, RECEIVE, NOTIFICATION, OPERATING),
    # End of input: nothing more will be answered; we only close.
    (OPERATING, RECEIVE, CLOSE, CLOSING),
    (OPERATING, SEND, CLOSE, CLOSED),
    (CLOSING, SEND, CLOSE, CLOSED),
]

MODERN_SERVER_ROWS: list[tuple[State, Direction, Kind, State]] = [
    # state      direction kind          next state
    # Source: 2026-07-28/basic/versioning (compatibility matrix: "A request carrying
    # modern per-request `_meta` is served statelessly according to this revision.")
    (PRE_INIT, RECEIVE, REQUEST, OPERATING),
    # Before it (a server pinned to this era): the replies to refused messages; closing.
    (PRE_INIT, SEND, RESPONSE, PRE_INIT),
    (PRE_INIT, RECEIVE, CLOSE, CLOSING),
    (PRE_INIT, SEND, CLOSE, CLOSED),
    (OPERATING, RECEIVE, REQUEST, OPERATING),
    (OPERATING, RECEIVE, NOTIFICATION, OPERATING),
    # Spec: 2026-07-28/basic/transports/stdio#receiving-messages.2
    # "The server MUST NOT write JSON-RPC requests to `stdout`."
    # Spec: 2026-07-28/basic/patterns/index#overview.1
    # "Servers MUST NOT initiate JSON-RPC requests"
    # Spec: 2026-07-28/basic/transports/streamable-http#receiving-messages.3
    # "The server MUST NOT send independent JSON-RPC requests on this stream."
    # (no SEND REQUEST row, on any transport: 2026-07-28/basic/patterns/index)
    (OPERATING, SEND, RESPONSE, OPERATING),
    # (progress and log messages scoped to a request; subscription notifications)
    (OPERATING, SEND, NOTIFICATION, OPERATING),
    # End of input: we may still answer what we accepted, then close.
    (OPERATING, RECEIVE, CLOSE, CLOSING),
    (OPERATING, SEND, CLOSE, CLOSED),
    (CLOSING, SEND, RESPONSE, CLOSING),
    (CLOSING, SEND, NOTIFICATION, CLOSING),
    (CLOSING, SEND, CLOSE, CLOSED),
]

MODERN_TRANSITIONS: Final[dict[Role, dict[tuple[State, Direction, Kind], State]]] = {
    CLIENT: _table(MODERN_CLIENT_ROWS),
    SERVER: _table(MODERN_SERVER_ROWS),
}
"""Both modern tables, by our role: ``(state, direction, kind) -> next state``."""


def describe_modern_refusal(role: Role, state: State, direction: Direction, kind: Kind) -> str:
    """A one-line message naming role, era, state, direction and kind of a message the
    modern table refuses (``initialize`` and ``ping`` say they are not of this era)."""
    verb = "send" if direction is SEND else "receive"
    gone = kind in (Kind.INITIALIZE, Kind.INITIALIZED, Kind.PING)
    why = "which 2026-07-28 removed" if gone else f"in state {state.value}"
    return (
        f"{role.value} cannot {verb} {kind.value} {why}: this connection is in the modern "
        "era, decided by its first request (2026-07-28/basic/versioning)"
    )

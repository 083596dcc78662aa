"""What one :class:`~mcp_ref.Connection` keeps, and the look-ups both directions share.

Theory of operation
-------------------
The connection is written in three parts, by direction, as the spec states its rules:
:mod:`._receive` holds what we accept from the peer, :mod:`._send` what we let ourselves
send, and :mod:`._connection` the public API (h11's shape) that runs them.  This module
holds what they share: the buffers, the lifecycle state and our role's table, the
in-flight tables, the per-method plans, the negotiated version and capabilities, and the
method-table look-ups (known method, right sender, revision, negotiated capability).
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable
from typing import Any, Final

from . import _jsonrpc as rpc
from ._batch import BatchReplies
from ._convert import ConversionError, structure_fn, unstructure_fn
from ._errors import RemoteProtocolError
from ._framing import DEFAULT_MAX_MESSAGE_BYTES, LineBuffer
from ._inflight import InFlight, RequestTimeout
from ._methods import METHODS, MethodSpec, capability_present
from ._state import CLIENT, SERVER, TRANSITIONS, Kind, Role, State
from .events import ErrorResponse, Event

__all__ = ["ConnectionState"]

_DEFAULT: Final = object()
"""The ``timeout=`` default of ``send``: the connection's ``default_timeout``."""

_CANCELLED: Final = "notifications/cancelled"
_PROGRESS: Final = "notifications/progress"
# Enum members and module constants as globals: the hot paths read them per message.
_K_INITIALIZE: Final = Kind.INITIALIZE
_K_INIT_RESULT: Final = Kind.INITIALIZE_RESULT
_K_INIT_ERROR: Final = Kind.INITIALIZE_ERROR
_K_RESPONSE: Final = Kind.RESPONSE
_CLOSED: Final = State.CLOSED
_REQUEST: Final = rpc.REQUEST
_NOTIFICATION: Final = rpc.NOTIFICATION
_ERROR: Final = rpc.ERROR

# The compiled (un)structure function of each class, looked up once per class (the
# classes are the schema's: a fixed, finite set).
_structurer: Callable[[Any], Callable[[Any], Any]] = functools.cache(structure_fn)
_unstructurer: Callable[[Any], Callable[[Any], Any]] = functools.cache(unstructure_fn)


class ConnectionState:
    """The state of one connection; :class:`~mcp_ref.Connection` documents the
    arguments."""

    def __init__(
        self,
        our_role: Role,
        *,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        max_requests_in_flight: int = 1024,
        default_timeout: RequestTimeout | None = None,
        newline_framing: bool = True,
        remember_ids: int = 4096,
    ) -> None:
        if our_role not in (CLIENT, SERVER):
            raise ValueError("our_role must be CLIENT or SERVER")
        # Spec: 2025-06-18/basic#overview.1
        # "All implementations MUST support the base protocol and lifecycle management components."
        # The base protocol and the lifecycle are this class; every role gets both.
        self.our_role: Final = our_role
        self.their_role: Final = our_role.peer
        self.state = State.PRE_INIT
        self.default_timeout = default_timeout
        self.newline_framing = newline_framing
        self.max_message_bytes = max_message_bytes
        #: The most requests in flight in each direction (also the largest batch).
        self.max_requests_in_flight = max_requests_in_flight
        self._lines = LineBuffer(max_message_bytes)
        self._messages: deque[bytes] = deque()
        # Events ready for next_event; a batch's refused items wait here as the
        # RemoteProtocolError to raise in their turn.
        self._events: deque[Event | RemoteProtocolError] = deque()
        # Batches (2025-03-26): the replies owed, by request id (refusals: _refusals).
        self._batch_of: dict[Any, BatchReplies] = {}
        self._outbox: list[bytes] = []
        self._eof = False
        self._closed_reported = False
        self._inflight = InFlight(
            max_outgoing=max_requests_in_flight,
            max_incoming=max_requests_in_flight,
            remember=remember_ids,
        )
        self._next_id = 0
        self._init_id: Any = None
        # The error replies we suggested (event_hint) for refused messages and not yet
        # sent, by id() of the reply, each with the batch it answers into (None outside
        # a batch); see _note_refusal.  The bound holds a whole batch (at most
        # max_incoming items) several times over.
        self._refusals: dict[int, tuple[ErrorResponse, BatchReplies | None]] = {}
        self._max_refusals = max(64, 4 * max_requests_in_flight)
        # Our role's lifecycle table, and per-method receive decisions (see _plan_request).
        self._table = TRANSITIONS[our_role]
        self._request_plans: dict[str, tuple[MethodSpec, Kind]] = {}
        self._notification_plans: dict[str, tuple[MethodSpec, Kind, Callable[[Any], Any]]] = {}
        self._send_plans: dict[str, tuple[MethodSpec, Kind, Callable[[Any], Any]]] = {}
        #: The negotiated protocol version (None until initialize completes).
        self.protocol_version: str | None = None
        #: The version the client asked for in ``initialize``.
        self.requested_version: str | None = None
        #: Capabilities by role: typed ClientCapabilities / ServerCapabilities.
        self.capabilities: dict[Role, Any] = {CLIENT: None, SERVER: None}
        #: The peer's ``Implementation`` (clientInfo or serverInfo).
        self.peer_info: Any = None
        #: The server's instructions, when we are the client.
        self.instructions: str | None = None

    def _note_refusal(self, hint: ErrorResponse, replies: BatchReplies | None) -> None:
        """Remember ``hint``, the error reply suggested for a refused message, with the
        batch it answers into: None outside a batch (``_refuse`` notes every hint it
        makes so), then ``_split_batch`` notes a batch item's hint again with its batch.

        Sending it then answers no request of ours in flight with the same id (the
        refused message may have reused that id), and puts it in its batch's array.
        The entry holds the hint, so its ``id()`` is not reused while it is kept.  Past
        the bound the oldest entry is forgotten: a driver sends each hint when
        ``next_event`` raises, so only one that sends none lets entries pile up.
        """
        refusals = self._refusals
        refusals[id(hint)] = (hint, replies)
        if len(refusals) > self._max_refusals:
            del refusals[next(iter(refusals))]

    def _refusal(self, event: ErrorResponse) -> tuple[ErrorResponse, BatchReplies | None] | None:
        """The entry :meth:`_note_refusal` keeps for ``event`` (that very object), or
        None when ``event`` is not a refusal's reply still to be sent."""
        entry = self._refusals.get(id(event))
        return entry if entry is not None and entry[0] is event else None

    def _lookup(self, method: str, *, sender: Role) -> MethodSpec | None:
        spec = METHODS.get(method)
        if (
            spec is None
            or sender not in spec.senders
            or not spec.available_in(self.protocol_version)
        ):
            return None
        return spec

    def _capability_ok(self, spec: MethodSpec) -> bool:
        if not spec.capability or spec.capability_of is None:
            return True
        version = self.protocol_version
        if version is not None and version < spec.capability_since:
            return True
        # Spec: 2025-06-18/basic/lifecycle#operation.1
        # "Both parties MUST:"
        return capability_present(self.capabilities[spec.capability_of], spec.capability)

    def _structure_params(self, spec: MethodSpec, payload: Any) -> Any:
        if payload is None:
            if spec.params_required:
                raise ConversionError("params: required")
            return None
        return _structurer(spec.params_type)(payload)

    def _forget_plans(self) -> None:
        """Version or capabilities changed: what may be received must be decided anew."""
        self._request_plans.clear()
        self._notification_plans.clear()
        self._send_plans.clear()

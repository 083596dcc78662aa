"""What Streamable HTTP server processes share to scale out, sans-IO: the two store
interfaces, their in-memory implementation, and the decisions around them.

Theory of operation
-------------------
One process keeps everything about a session in memory (its
:class:`~mcp_ref._http_streams.SessionStreams`, its running MCP session).  Behind a load
balancer a client's next request may reach another process, which then needs two
things only, each behind a small interface with ``async`` methods (a driver awaits
them; an implementation may do I/O):

* a :class:`SessionRegistry`: does this session id exist, and what did its
  ``initialize`` negotiate (:class:`SessionRecord`: the protocol version, the client's
  capabilities and info)?  A process that finds a record *adopts* the session: it starts
  a local MCP session and brings it to the operating state with a synthetic
  ``initialize`` naming the same version and client (:func:`adoption_preamble`, whose
  answer is dropped, as a stateless session's is), so requests are handled as in the
  process that created it.
* an :class:`EventLog`: the SSE events of each session's streams, so that a stream
  broken on one process is resumed on another (``Last-Event-ID``).  Each process
  writes every event of a shared session through (:class:`SharedEventStore` collects
  them in ``outbox``; the driver appends them to the log before it wakes the response
  that writes them, so a client never holds an event id the log lacks).  A process
  asked to resume a stream it does not hold loads that stream from the log
  (:meth:`SharedEventStore.load`) and answers as for a finished stream: the events
  after the client's, then the end.  A client that resumes again later gets what came
  since.

Event ids must stay unique across the processes that write one session's streams
(2025-06-18/basic/transports#resumability-and-redelivery.2): a process adopting a
session names its streams with a prefix of its own (``SessionStreams.prefix``) and
counts its sequence numbers from a random start (:func:`adoption_start`), so its ids
never meet the creator's.

The registry keeps a record ``ttl_seconds`` (the servers' idle bound) after it was
last written: when the session is created or adopted, and again by a process sending
on it once half that time has passed; a session idle that long everywhere is then
unknown to the others (they answer 404, and the client starts a new
session, as the spec has it: 2025-06-18/basic/transports#session-management.7).

A third interface, the :class:`TaskStore`, keeps the tasks of task-augmented
``tools/call`` requests (2025-11-25/basic/utilities/tasks): one :class:`TaskRecord` per
task (its status, its owner, and once it ended the JSON-RPC outcome as bytes), so that
``tasks/get``, ``tasks/result``, ``tasks/list`` and ``tasks/cancel`` are answered by any
process (:mod:`mcp_ref.server._tasks` says how the server uses it).

What is not shared: the running handler's state (subscriptions, requests in progress:
a request is answered by the process it reached; a task runs on the process that
accepted it), the standalone GET stream (each process has its own; a resumption of
another process's is refused 409 and the client opens a fresh one).

The default is to share nothing (``stores=None``): behaviour unchanged.
:class:`MemoryStores` implements the three interfaces in memory, for servers sharing
one process (tests); :mod:`mcp_ref.stores.redis` on Redis.
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol

import attrs

from ._convert import unstructure
from ._errors import RemoteProtocolError
from ._http_events import EventStore, _Stream, parse_event_id
from ._http_post import STATELESS_INIT_ID
from ._state import CLIENT

if TYPE_CHECKING:
    from ._connection import Connection

__all__ = [
    "EventLog",
    "MemoryStores",
    "SessionRecord",
    "SessionRegistry",
    "SharedEventStore",
    "TaskRecord",
    "TaskStore",
    "adoption_preamble",
    "adoption_start",
    "record_of",
    "stream_of",
]

_ADOPTED_SEQ_BITS: Final = 60
"""An adopting process counts event sequence numbers from a random start below
2**60 (far below the 19-digit bound of event ids)."""


@attrs.frozen(kw_only=True)
class SessionRecord:
    """What the :class:`SessionRegistry` keeps of one session: enough to adopt it."""

    session_id: str
    """The ``Mcp-Session-Id``."""
    protocol_version: str
    """The version ``initialize`` negotiated."""
    client_capabilities: dict[str, Any]
    """The client's capabilities (JSON, as it sent them)."""
    client_info: dict[str, Any]
    """The client's ``Implementation`` (JSON)."""

    def to_bytes(self) -> bytes:
        """The record as compact JSON."""
        return json.dumps(attrs.asdict(self), separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> SessionRecord | None:
        """The record of :meth:`to_bytes`; None for anything else (a store written by
        another version)."""
        try:
            return cls(**json.loads(data))
        except (ValueError, TypeError):
            return None


class SessionRegistry(Protocol):
    """Which sessions exist, across processes (module docstring)."""

    async def put(self, record: SessionRecord, ttl_seconds: float) -> None:
        """Record a session (or refresh it); it is forgotten ``ttl_seconds`` after the
        last put."""

    async def get(self, session_id: str) -> SessionRecord | None:
        """The record of ``session_id``, or None."""

    async def forget(self, session_id: str) -> None:
        """The session ended (DELETE): forget it and its events."""


class EventLog(Protocol):
    """The SSE events of the sessions' streams, across processes (module docstring)."""

    async def append(self, session_id: str, events: Sequence[tuple[str, str, str]]) -> None:
        """Append ``(stream id, event id, data)`` events, in order."""

    async def stream(self, session_id: str, stream_id: str) -> list[tuple[str, str]]:
        """The ``(event id, data)`` events held of one stream, oldest first (the oldest
        may have been dropped past the log's bound)."""


TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})
"""The task statuses no task leaves (2025-11-25/basic/utilities/tasks#task-status-lifecycle)."""


@attrs.frozen(kw_only=True)
class TaskRecord:
    """What the :class:`TaskStore` keeps of one task.  Times are seconds since the
    epoch (the server's clock); ``ttl_ms`` and ``poll_ms`` are milliseconds, as on the
    wire."""

    task_id: str
    """The ``taskId`` (random: :mod:`mcp_ref.server._tasks`)."""
    owner: str
    """Who may see it: the caller's authorization context, else the session."""
    status: str
    """``working``, ``input_required``, ``completed``, ``failed`` or ``cancelled``."""
    created_at: float
    """When the task was created."""
    updated_at: float
    """When its status last changed."""
    ttl_ms: int
    """How long it is kept after ``created_at`` (milliseconds)."""
    poll_ms: int | None = None
    """The ``pollInterval`` suggested to requestors (milliseconds)."""
    status_message: str | None = None
    """The ``statusMessage``."""
    result: bytes | None = None
    """Once terminal: the outcome as JSON, ``{"result": {...}}`` or ``{"error": {"code":
    ..., "message": ..., "data": ...}}``."""

    @property
    def terminal(self) -> bool:
        """Whether the status is final (completed, failed, cancelled)."""
        return self.status in TERMINAL

    def expired(self, now: float) -> bool:
        """Whether its TTL has run out at ``now`` (seconds since the epoch)."""
        return now >= self.created_at + self.ttl_ms / 1000

    def to_bytes(self) -> bytes:
        """The record as compact JSON (``result`` as a string)."""
        fields = attrs.asdict(self)
        if self.result is not None:
            fields["result"] = self.result.decode("utf-8", "surrogatepass")
        return json.dumps(fields, separators=(",", ":")).encode("utf-8", "surrogatepass")

    @classmethod
    def from_bytes(cls, data: bytes) -> TaskRecord | None:
        """The record of :meth:`to_bytes`; None for anything else."""
        try:
            fields = json.loads(data)
            if fields.get("result") is not None:
                fields["result"] = fields["result"].encode("utf-8", "surrogatepass")
            return cls(**fields)
        except (ValueError, TypeError, AttributeError):
            return None


class TaskStore(Protocol):
    """The tasks of task-augmented requests, across processes (module docstring).
    A record is kept at least until :meth:`TaskRecord.expired` (the server treats an
    expired record as gone) and may be dropped after; a store has a bound and may drop
    its oldest records past it."""

    async def put_task(self, record: TaskRecord, ttl_seconds: float) -> None:
        """Write ``record`` (a new task, or a new status of one), to be dropped
        ``ttl_seconds`` from now (what remains of its TTL)."""

    async def get_task(self, task_id: str) -> TaskRecord | None:
        """The record of ``task_id``, or None."""

    async def list_tasks(self, owner: str) -> list[TaskRecord]:
        """The records of ``owner``'s tasks, oldest first."""

    async def forget_task(self, task_id: str) -> None:
        """Drop the record of ``task_id`` (expired)."""


def record_of(session_id: str, version: str, connection: Connection) -> SessionRecord:
    """The record of a session whose ``initialize`` negotiated ``version`` on
    ``connection`` (the server's; it holds the client's capabilities and info)."""
    caps = connection.capabilities.get(CLIENT)
    return SessionRecord(
        session_id=session_id,
        protocol_version=version,
        client_capabilities=unstructure(caps) if caps is not None else {},
        client_info=unstructure(connection.peer_info) if connection.peer_info else {},
    )


def adoption_preamble(record: SessionRecord) -> list[bytes]:
    """The messages that bring an adopted session's new MCP session to the operating
    state: ``initialize`` (id :data:`~mcp_ref._http_post.STATELESS_INIT_ID`, its answer
    to be dropped) with the recorded version, capabilities and client, then
    ``notifications/initialized``."""
    info = record.client_info or {"name": "adopted-http-client", "version": "0"}
    init = {
        "jsonrpc": "2.0",
        "id": STATELESS_INIT_ID,
        "method": "initialize",
        "params": {
            "protocolVersion": record.protocol_version,
            "capabilities": record.client_capabilities,
            "clientInfo": info,
        },
    }
    return [
        json.dumps(init, separators=(",", ":")).encode(),
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
    ]


def adoption_start(random_bytes: bytes) -> tuple[str, int]:
    """The stream-id prefix and first sequence number of a process adopting a
    session, from at least 8 random bytes the driver drew: e.g. ``("a1b2c3d4.", n)``.

    Raises:
        ValueError: fewer than 8 bytes.
    """
    if len(random_bytes) < 8:
        raise ValueError("adoption_start needs 8 random bytes or more")
    # Spec: 2025-06-18/basic/transports#resumability-and-redelivery.2
    # "If present, the ID MUST be globally unique across all streams within that session—or all
    # streams with that specific client, if session management is not in use."
    # Two processes write one session's streams: their stream ids and counts stay apart.
    first = int.from_bytes(random_bytes[:8], "big") % (1 << _ADOPTED_SEQ_BITS)
    return random_bytes[:4].hex() + ".", first


def stream_of(last_event_id: bytes) -> str | None:
    """The stream a ``Last-Event-ID`` names, or None for a malformed one."""
    try:
        return parse_event_id(last_event_id)[0]
    except RemoteProtocolError:
        return None


class SharedEventStore(EventStore):
    """A session's :class:`~mcp_ref._http_events.EventStore` whose events are written
    through to an :class:`EventLog`: each append is also put in :attr:`outbox` for the
    driver to append to the log.

    Args:
        first_seq: the first sequence number (:func:`adoption_start`; 0 for the process
            that created the session).
        **bounds: :class:`~mcp_ref._http_events.EventStore`'s.
    """

    def __init__(self, *, first_seq: int = 0, **bounds: int) -> None:
        super().__init__(**bounds)
        self._next_seq = first_seq
        self.outbox: list[tuple[str, str, str]] = []
        """``(stream id, event id, data)`` appended and not yet in the log."""
        self.registered = first_seq != 0
        """The session's record is in the registry (an adopted one's always is)."""
        self.registered_at = -math.inf
        """When the record was last put, on the driver's clock (seconds)."""

    def append(self, stream_id: str, data: str) -> str:
        """:meth:`EventStore.append <mcp_ref._http_events.EventStore.append>`, the
        event put in :attr:`outbox` too."""
        event_id = super().append(stream_id, data)
        self.outbox.append((stream_id, event_id, data))
        return event_id

    def load(self, stream_id: str, events: Sequence[tuple[str, str]]) -> None:
        """Hold ``events`` (from the log, oldest first) as the stream ``stream_id``,
        in place of what was held of it: a resumption from before the first of them
        is then refused (409), as for events evicted here."""
        self.forget_stream(stream_id)
        # Two flushes of one session may reach the log in either order: by seq here.
        ordered = sorted((parse_event_id(eid)[1], eid, data) for eid, data in events)
        kept = [(eid, data) for _, eid, data in ordered[-self.max_events_per_stream :]]
        seqs = [seq for seq, _, _ in ordered[-self.max_events_per_stream :]]
        if not kept or any(seq in self._order for seq in seqs):
            return  # nothing, or ids this store counts itself: not another process's
        while len(self._streams) >= self.max_streams:
            self._evict_stream(next(iter(self._streams)))
        stream = self._streams[stream_id] = _Stream(evicted_through=seqs[0] - 1)
        stream.events = deque()
        for seq, (event_id, data) in zip(seqs, kept, strict=True):
            size = len(data.encode("utf-8", "surrogatepass"))
            stream.events.append((seq, event_id, data, size))
            self._order[seq] = stream_id
            self.total_bytes += size
        stream.last_seq = seqs[-1]
        # _order is oldest first by seq: put the loaded ones in their place.
        self._order = type(self._order)(sorted(self._order.items()))
        while self.total_bytes > self.max_total_bytes:
            oldest = next(iter(self._order.values()))
            self._evict_oldest_of(self._streams[oldest])


class MemoryStores:
    """The three interfaces in memory, for servers sharing one process (tests; one
    process with several listeners).  Bounded: ``max_events_per_stream`` per stream,
    ``max_tasks`` task records (the oldest written dropped first); records and events
    are forgotten on :meth:`forget` only, tasks on :meth:`forget_task` (the TTL is not
    kept: the server drops expired tasks it meets)."""

    def __init__(self, max_events_per_stream: int = 256, max_tasks: int = 4096) -> None:
        self.records: dict[str, bytes] = {}
        self.events: dict[tuple[str, str], deque[tuple[str, str]]] = {}
        self.tasks: dict[str, bytes] = {}
        self.max_events_per_stream = max_events_per_stream
        self.max_tasks = max_tasks

    async def put(self, record: SessionRecord, ttl_seconds: float) -> None:
        """:meth:`SessionRegistry.put`."""
        self.records[record.session_id] = record.to_bytes()

    async def get(self, session_id: str) -> SessionRecord | None:
        """:meth:`SessionRegistry.get`."""
        data = self.records.get(session_id)
        return None if data is None else SessionRecord.from_bytes(data)

    async def forget(self, session_id: str) -> None:
        """:meth:`SessionRegistry.forget`."""
        self.records.pop(session_id, None)
        for key in [k for k in self.events if k[0] == session_id]:
            del self.events[key]

    async def append(self, session_id: str, events: Sequence[tuple[str, str, str]]) -> None:
        """:meth:`EventLog.append`."""
        for stream_id, event_id, data in events:
            key = (session_id, stream_id)
            held = self.events.get(key)
            if held is None:
                held = self.events[key] = deque(maxlen=self.max_events_per_stream)
            held.append((event_id, data))

    async def stream(self, session_id: str, stream_id: str) -> list[tuple[str, str]]:
        """:meth:`EventLog.stream`."""
        return list(self.events.get((session_id, stream_id), ()))

    async def put_task(self, record: TaskRecord, ttl_seconds: float) -> None:
        """:meth:`TaskStore.put_task` (the newest write last; the oldest dropped past
        ``max_tasks``)."""
        self.tasks.pop(record.task_id, None)
        self.tasks[record.task_id] = record.to_bytes()
        while len(self.tasks) > self.max_tasks:
            del self.tasks[next(iter(self.tasks))]

    async def get_task(self, task_id: str) -> TaskRecord | None:
        """:meth:`TaskStore.get_task`."""
        data = self.tasks.get(task_id)
        return None if data is None else TaskRecord.from_bytes(data)

    async def list_tasks(self, owner: str) -> list[TaskRecord]:
        """:meth:`TaskStore.list_tasks`."""
        records = [TaskRecord.from_bytes(data) for data in self.tasks.values()]
        mine = [r for r in records if r is not None and r.owner == owner]
        return sorted(mine, key=lambda r: (r.created_at, r.task_id))

    async def forget_task(self, task_id: str) -> None:
        """:meth:`TaskStore.forget_task`."""
        self.tasks.pop(task_id, None)

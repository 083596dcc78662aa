"""SSE event ids and the event store of Streamable HTTP, sans-IO: what a server keeps
so that a client can resume a broken stream with ``Last-Event-ID``.

Theory of operation
-------------------
Event ids (:func:`make_event_id`) are ``<stream id>/<seq>``: the stream id names the SSE
stream inside the session, the sequence number is unique across the whole session, so
ids never repeat even if a stream id is reused.  :class:`EventStore` keeps a bounded
number of events per stream and in all, and answers a ``Last-Event-ID`` with the events
after it on that stream only (:meth:`EventStore.replay_after`), or with 409 when they
are gone.

Source: 2025-06-18/basic/transports#resumability-and-redelivery.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Final

import attrs

from ._errors import INVALID_REQUEST, LocalProtocolError, RemoteProtocolError
from ._http_errors import HttpError, http_error

_MAX_SEQ_DIGITS: Final = 19
_MAX_STREAM_ID_LENGTH: Final = 128
_SEQ_LIMIT: Final = 10**_MAX_SEQ_DIGITS

# -- event ids and the event store -----------------------------------------------------


def _check_stream_id(stream_id: str) -> None:
    # Visible ASCII ("!".."~"): ASCII, printable (no controls, no DEL), and no space.
    if not (
        isinstance(stream_id, str)
        and 0 < len(stream_id) <= _MAX_STREAM_ID_LENGTH
        and stream_id.isascii()
        and stream_id.isprintable()
        and " " not in stream_id
    ):
        raise LocalProtocolError(
            f"stream id must be 1..{_MAX_STREAM_ID_LENGTH} visible ASCII chars: {stream_id!r}"
        )


def make_event_id(stream_id: str, seq: int) -> str:
    """Make the SSE event id ``"<stream_id>/<seq>"``.

    Args:
        stream_id: names the stream within the session: 1..128 visible ASCII
            characters (may itself contain ``/``; parsing splits at the last one).
        seq: a non-negative int, unique within the session (the :class:`EventStore`
            counts one sequence across all streams).

    Raises:
        LocalProtocolError: bad stream id, or ``seq`` negative, not an int, or a bool.

    Source: 2025-06-18/basic/transports#resumability-and-redelivery.2 (unique across the
    session's streams); "In other words" paragraph (a per-stream cursor).
    """
    _check_stream_id(stream_id)
    if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq < _SEQ_LIMIT:
        raise LocalProtocolError(f"event sequence number must be an int >= 0, not {seq!r}")
    return f"{stream_id}/{seq}"


def _seq_ok(digits: str) -> bool:
    """Whether ``digits`` is a sequence number as :func:`make_event_id` writes it."""
    return (
        0 < len(digits) <= _MAX_SEQ_DIGITS
        and digits.isascii()
        and digits.isdigit()
        and (digits == "0" or not digits.startswith("0"))
    )


def parse_event_id(s: str | bytes) -> tuple[str, int]:
    """Split an event id made by :func:`make_event_id` (e.g. a ``Last-Event-ID`` value).

    Returns:
        ``(stream_id, seq)``.

    Raises:
        RemoteProtocolError: not of the form ``<stream id>/<decimal digits>`` (no sign,
            no leading zeros, at most 19 digits), or the stream id is not 1..128 visible
            ASCII characters.
    """
    if isinstance(s, bytes):
        s = s.decode("latin-1")
    stream_id, sep, digits = s.rpartition("/")
    ok = sep and _seq_ok(digits)
    if ok:
        try:
            _check_stream_id(stream_id)
        except LocalProtocolError:
            ok = False
    if not ok:
        raise RemoteProtocolError(f"malformed event id {s[:200]!r}", code=INVALID_REQUEST)
    return stream_id, int(digits)


@attrs.frozen(kw_only=True)
class Replay:
    """What :meth:`EventStore.replay_after` found: the events to send again, in order."""

    stream_id: str
    """The stream the last event id belongs to (the one to resume)."""
    events: tuple[tuple[str, str], ...]
    """``(event_id, data)`` pairs of that stream after the given id, oldest first."""


@attrs.define
class _Stream:
    # (seq, event id, data, UTF-8 size of data), oldest first
    events: deque[tuple[int, str, str, int]] = attrs.field(factory=deque)
    evicted_through: int = -1  # highest seq of this stream no longer held
    last_seq: int = -1


class EventStore:
    """A bounded store of the SSE events sent on a session's streams, for resumption.

    Use one store per session.  ``append`` records an event and returns its id;
    ``replay_after`` answers a ``Last-Event-ID``.  Oldest first out on every bound:

    * more than ``max_events_per_stream`` in a stream: that stream's oldest event goes;
    * a new stream beyond ``max_streams``: the stream appended to least recently goes,
      whole (a later stream of the same name starts afresh; ids from before it are
      refused, never half-answered);
    * more than ``max_total_bytes`` of data (UTF-8) in all: the oldest events go,
      whichever their stream.  One event larger than the whole budget is not kept.

    Args:
        max_events_per_stream: bound on events kept per stream (default 256).
        max_streams: bound on streams kept (default 64).
        max_total_bytes: bound on the UTF-8 size of all kept data (default 4 MiB).

    Source: 2025-06-18/basic/transports#resumability-and-redelivery (ids unique across
    the session's streams; replay only the disconnected stream's messages).
    """

    def __init__(
        self,
        *,
        max_events_per_stream: int = 256,
        max_streams: int = 64,
        max_total_bytes: int = 4 * 1024 * 1024,
    ) -> None:
        if min(max_events_per_stream, max_streams, max_total_bytes) < 1:
            raise ValueError("EventStore bounds must be positive")
        self.max_events_per_stream = max_events_per_stream
        self.max_streams = max_streams
        self.max_total_bytes = max_total_bytes
        self._streams: OrderedDict[str, _Stream] = OrderedDict()  # least recent first
        self._order: OrderedDict[int, str] = OrderedDict()  # seq -> stream id, oldest first
        self._next_seq = 0
        self.total_bytes = 0
        """UTF-8 bytes of data currently held."""

    def __len__(self) -> int:
        """The number of events held."""
        return len(self._order)

    @property
    def stream_ids(self) -> list[str]:
        """The streams held, least recently appended to first."""
        return list(self._streams)

    def append(self, stream_id: str, data: str) -> str:
        """Record an event sent on ``stream_id``; return its event id.

        Args:
            stream_id: the stream (1..128 visible ASCII characters); new ids start a new
                stream (evicting the least recently used one past ``max_streams``).
            data: the event's data (the JSON text of one message; ``""`` for a priming
                event).

        Returns:
            The event id (``make_event_id(stream_id, seq)``) to put in the SSE ``id``.

        Raises:
            LocalProtocolError: bad stream id; data not a str.

        Source: 2025-06-18/basic/transports#resumability-and-redelivery.2.
        """
        if not isinstance(data, str):
            raise LocalProtocolError("event data must be a str")
        stream = self._streams.get(stream_id)
        if stream is None:
            _check_stream_id(stream_id)  # a stream held was checked when it came
        # Spec: 2025-06-18/basic/transports#resumability-and-redelivery.2
        # "If present, the ID MUST be globally unique across all streams within that session—or all
        # streams with that specific client, if session management is not in use."
        # One counter for the whole store: ids never repeat, even for a reused stream id.
        seq = self._next_seq
        if seq >= _SEQ_LIMIT:
            raise LocalProtocolError("event sequence numbers exhausted")
        self._next_seq += 1
        if stream is None:
            while len(self._streams) >= self.max_streams:
                self._evict_stream(next(iter(self._streams)))
            # Whatever an earlier stream of this name sent (if it was evicted) is lost: a
            # resume from before this event must be refused, not answered in part.
            stream = self._streams[stream_id] = _Stream(evicted_through=seq - 1)
        else:
            self._streams.move_to_end(stream_id)
        event_id = f"{stream_id}/{seq}"  # make_event_id, both parts already checked
        stream.last_seq = seq
        size = len(data) if data.isascii() else len(data.encode("utf-8", "surrogatepass"))
        if size > self.max_total_bytes:
            stream.evicted_through = seq
            return event_id
        stream.events.append((seq, event_id, data, size))
        self._order[seq] = stream_id
        self.total_bytes += size
        if len(stream.events) > self.max_events_per_stream:
            self._evict_oldest_of(stream)
        while self.total_bytes > self.max_total_bytes:
            oldest_stream = next(iter(self._order.values()))
            self._evict_oldest_of(self._streams[oldest_stream])
        return event_id

    def replay_after(self, last_event_id: str | bytes) -> Replay | HttpError:
        """Find the events of ``last_event_id``'s stream sent after it.

        Args:
            last_event_id: the ``Last-Event-ID`` header value.

        Returns:
            A :class:`Replay` (possibly with no events, when the client missed nothing),
            or an :class:`HttpError`:

            * 400 when the id is malformed;
            * 409 when the stream is unknown (never ours, or evicted whole), when the id
              lies beyond what the stream has sent, or when some events after it were
              evicted.  Replaying a partial tail would silently lose messages; 404 would
              tell the client its session is gone.  The client can then carry on
              without the lost messages, e.g. with a fresh GET.

        Source: 2025-06-18/basic/transports#resumability-and-redelivery.4 (replay after
        the last event id, on the stream that was disconnected);
        #resumability-and-redelivery.5 (never another stream's messages).
        """
        try:
            stream_id, seq = parse_event_id(last_event_id)
        except RemoteProtocolError as exc:
            return http_error(
                400,
                exc.message,
                clause="2025-06-18/basic/transports#resumability-and-redelivery.3",
            )
        stream = self._streams.get(stream_id)
        clause = "2025-06-18/basic/transports#resumability-and-redelivery.4"
        if stream is None:
            return http_error(409, f"no stored events for stream {stream_id!r}", clause=clause)
        if seq > stream.last_seq:
            return http_error(409, f"event {seq} was never sent on {stream_id!r}", clause=clause)
        if seq < stream.evicted_through:
            return http_error(
                409, f"events after {seq} on {stream_id!r} are no longer stored", clause=clause
            )
        # Spec: 2025-06-18/basic/transports#resumability-and-redelivery.5
        # "The server MUST NOT replay messages that would have been delivered on a different
        # stream."
        # Only this stream's events; they are in order of seq: read back from the newest.
        later: list[tuple[str, str]] = []
        for s, event_id, data, _ in reversed(stream.events):
            if s <= seq:
                break
            later.append((event_id, data))
        later.reverse()
        return Replay(stream_id=stream_id, events=tuple(later))

    def forget_stream(self, stream_id: str) -> None:
        """Drop a stream and its events (e.g. when the session ends).  Unknown ids pass."""
        if stream_id in self._streams:
            self._evict_stream(stream_id)

    def _evict_oldest_of(self, stream: _Stream) -> None:
        seq, _, _, size = stream.events.popleft()
        del self._order[seq]
        self.total_bytes -= size
        stream.evicted_through = max(stream.evicted_through, seq)

    def _evict_stream(self, stream_id: str) -> None:
        stream = self._streams.pop(stream_id)
        for seq, _, _, size in stream.events:
            del self._order[seq]
            self.total_bytes -= size

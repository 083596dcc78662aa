"""Server-sent events: the event-stream format, encoded and decoded without I/O.

Theory of operation
-------------------
MCP's HTTP transports carry server messages as server-sent events (SSE): the 2024-11-05
HTTP+SSE transport on its GET stream, and Streamable HTTP on POST responses and the
optional GET stream (2025-06-18/basic/transports#streamable-http).  The format is the
WHATWG HTML standard's ``text/event-stream`` (section 9.2.6, "Interpreting an event
stream"): UTF-8 lines ended by CRLF, LF or CR; ``field: value`` lines; a blank line
dispatches the event; lines starting with ``:`` are comments.

:func:`encode_event` turns one :class:`SSEEvent` into bytes; :func:`encode_comment`
makes a keepalive line.  Both refuse what cannot be framed (CR, LF or NUL in an id or
event name, CR or LF in a comment) with :class:`~mcp_ref._errors.LocalProtocolError`.

:class:`SSEDecoder` works like h11's reader: feed bytes with ``receive_data`` (``b""``
means end of stream), then call ``next_event`` until it returns :data:`NEED_DATA`
(feed more) or ``None`` (the stream has ended and every event was returned).  The
decoder keeps one buffer and remembers where its search for a line end stopped, so a
stream fed one byte at a time still costs linear time.  A CR at the end of a chunk ends
the line at once; an LF that follows it in the next chunk is skipped.  The event being
built is bounded by ``max_event_size`` bytes; past it ``next_event`` raises
:class:`~mcp_ref._errors.RemoteProtocolError`, and keeps raising (the error is sticky).

What the decoder keeps across events, per the standard:

* ``last_event_id``: the last ``id`` field of a completed block (``""`` until there is
  one; an ``id`` with NUL is ignored; ``id:`` with an empty value resets it).  This is what a client sends back
  in ``Last-Event-ID`` when it reconnects.
* ``retry``: the last reconnection time the server asked for, in milliseconds (digits
  only; anything else is ignored).

Deliberate differences from a browser's ``EventSource``: :attr:`SSEEvent.id` and
:attr:`SSEEvent.retry` are the fields sent *in that event's block* (None when absent),
not the running values (read those from the decoder); :attr:`SSEEvent.event` is None
when no (or an empty) ``event`` field was sent, where a browser would say "message".

:data:`NEED_DATA` belongs to this module; it is not the connection's sentinel of the
same name.  Compare with ``is`` against ``mcp_ref._sse.NEED_DATA``.
"""

from __future__ import annotations

import enum
import re
from typing import Final, Literal

import attrs

from ._errors import LocalProtocolError, RemoteProtocolError

__all__ = [
    "DEFAULT_MAX_EVENT_SIZE",
    "NEED_DATA",
    "SSEDecoder",
    "SSEEvent",
    "encode_comment",
    "encode_data",
    "encode_event",
]

DEFAULT_MAX_EVENT_SIZE: Final = 4 * 1024 * 1024
"""Default bound on one event's size in bytes (4 MiB): the raw bytes of its field lines,
line ends excluded, plus any line still being received."""

_MAX_RETRY_DIGITS: Final = 12
"""A ``retry`` value with more digits (over 31 years in ms) is ignored, so a hostile
stream cannot make us parse a huge integer."""

_BOM: Final = b"\xef\xbb\xbf"
_LINE_END = re.compile(rb"[\r\n]")
_SPLIT_LINES = re.compile(r"\r\n|\r|\n")


class _Sentinel(enum.Enum):
    NEED_DATA = "NEED_DATA"

    def __repr__(self) -> str:
        return self.value


NEED_DATA: Final = _Sentinel.NEED_DATA
"""Returned by :meth:`SSEDecoder.next_event` when it needs more bytes.

This is the SSE decoder's own sentinel, distinct from the MCP connection's."""

NeedData = Literal[_Sentinel.NEED_DATA]
"""The type of :data:`NEED_DATA`, for annotations."""


def _check_retry(_inst: object, _attr: object, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise LocalProtocolError(f"SSE retry must be a non-negative int (ms), not {value!r}")


@attrs.frozen(kw_only=True)
class SSEEvent:
    """One server-sent event.

    Source: WHATWG HTML, "Server-sent events", section 9.2.6 (event stream interpretation).
    """

    data: str
    """The event's data; several ``data:`` lines are joined with ``"\\n"``.  May be
    empty (an event with an empty ``data:`` line, as sent to prime a stream)."""
    event: str | None = None
    """The event type (``event:`` field), e.g. ``"endpoint"`` or ``"message"``; None
    when absent.  Encoding refuses CR, LF and NUL in it; empty is treated as None."""
    id: str | None = None
    """The ``id:`` field of this event, None when the block had none.  ``""`` resets the
    receiver's last event id.  Encoding refuses CR, LF and NUL in it."""
    retry: int | None = attrs.field(default=None, validator=_check_retry)
    """The ``retry:`` field of this event: the reconnection time the server asks for, in
    milliseconds (non-negative int), or None."""


def _check_field(name: str, value: str) -> None:
    if "\r" in value or "\n" in value or "\x00" in value:
        raise LocalProtocolError(f"SSE {name} must not contain CR, LF or NUL: {value!r}")


def encode_event(ev: SSEEvent) -> bytes:
    """Encode one event as ``text/event-stream`` bytes, ending with the blank line.

    Lines are written in the order ``event``, ``id``, ``retry``, ``data``.  Data is split
    on CRLF, CR and LF into one ``data:`` line each, so the receiver gets back ``data``
    with every line end turned into LF.  An event with data ``""`` becomes one empty
    ``data:`` line (the receiver still dispatches it).

    Args:
        ev: the event.

    Returns:
        UTF-8 bytes, LF line ends.

    Raises:
        LocalProtocolError: ``ev.id`` or ``ev.event`` contains CR, LF or NUL, or a text
            field cannot be encoded as UTF-8 (a lone surrogate).

    Source: WHATWG HTML 9.2.6 (field names; a blank line dispatches);
    2025-06-18/basic/transports#resumability-and-redelivery.1 (event ids).
    """
    return encode_data(ev.data, event=ev.event, id=ev.id, retry=ev.retry)


def encode_data(
    data: str, *, event: str | None = None, id: str | None = None, retry: int | None = None
) -> bytes:
    """``encode_event(SSEEvent(data=data, event=event, id=id, retry=retry))``, without
    building the event (the server's per-message path).

    Raises:
        LocalProtocolError: as :func:`encode_event`, and for a ``retry`` that is not a
            non-negative int.
    """
    head = ""
    if event:
        _check_field("event name", event)
        head = f"event: {event}\n"
    if id is not None:
        _check_field("event id", id)
        head += f"id: {id}\n" if id else "id:\n"
    if retry is not None:
        _check_retry(None, None, retry)
        head += f"retry: {retry}\n"
    if "\r" in data or "\n" in data:
        lines = [f"data: {line}" if line else "data:" for line in _SPLIT_LINES.split(data)]
        text = head + "\n".join(lines) + "\n\n"
    else:
        text = head + (f"data: {data}\n\n" if data else "data:\n\n")  # one line: no split
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise LocalProtocolError(f"SSE event text is not valid Unicode: {exc}") from None


def encode_comment(text: str = "") -> bytes:
    """Encode a comment line, e.g. a keepalive the receiver ignores.

    Args:
        text: the comment (may be empty).

    Returns:
        ``b": <text>\\n"`` (``b":\\n"`` for an empty text), UTF-8.

    Raises:
        LocalProtocolError: ``text`` contains CR or LF, or cannot be encoded as UTF-8.

    Source: WHATWG HTML 9.2.6 (a line starting with a colon is ignored).
    """
    if "\r" in text or "\n" in text:
        raise LocalProtocolError(f"SSE comment must not contain CR or LF: {text!r}")
    try:
        return (f": {text}\n" if text else ":\n").encode("utf-8")
    except UnicodeEncodeError as exc:
        raise LocalProtocolError(f"SSE comment is not valid Unicode: {exc}") from None


class SSEDecoder:
    """Incremental ``text/event-stream`` decoder (h11-style ``receive_data``/``next_event``).

    Args:
        max_event_size: bound, in bytes, on one event: the field lines since the last
            dispatch (comments excluded, line ends excluded) plus the line still being
            received.  Default :data:`DEFAULT_MAX_EVENT_SIZE`.

    Attributes:
        last_event_id: the last event id set by an ``id`` field (str; ``""`` when none
            or after a reset).  Taken over when a block ends with its blank line, even a
            block that dispatches no event (no data).
        retry: the last reconnection time the stream asked for, in milliseconds, or None.

    Source: WHATWG HTML 9.2.6 (event stream interpretation);
    2025-06-18/basic/transports#resumability-and-redelivery.3 (the client sends the last
    event id back on reconnect).
    """

    def __init__(self, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        if max_event_size < 1:
            raise ValueError("max_event_size must be positive")
        self.max_event_size = max_event_size
        self.last_event_id: str = ""
        self.retry: int | None = None
        self._id_buffer = ""  # the standard's "last event ID buffer"
        self._buf = bytearray()
        self._start = 0  # start of the unprocessed part of _buf
        self._search = 0  # where the search for a line end resumes
        self._skip_lf = False  # the previous line ended with CR; drop a leading LF
        self._bom_checked = False
        self._eof = False
        self._error: RemoteProtocolError | None = None
        # The event being built.
        self._data: list[str] = []
        self._event = ""
        self._block_id: str | None = None
        self._block_retry: int | None = None
        self._event_bytes = 0

    def receive_data(self, data: bytes) -> None:
        """Feed bytes from the stream; ``b""`` means the stream has ended.

        Raises:
            LocalProtocolError: data was fed after the end of the stream.
        """
        if self._eof:
            if data:
                raise LocalProtocolError("SSE data received after the end of the stream")
            return
        if not data:
            self._eof = True
            return
        if self._start and self._start * 2 >= len(self._buf):
            # Drop the processed prefix; amortised linear.
            del self._buf[: self._start]
            self._search -= self._start
            self._start = 0
        self._buf += data

    def next_event(self) -> SSEEvent | NeedData | None:
        """Return the next complete event, :data:`NEED_DATA`, or None at the end.

        Returns:
            An :class:`SSEEvent`; :data:`NEED_DATA` when more bytes are needed; None once
            the stream has ended (an event left without its blank line is discarded, as
            the standard says).

        Raises:
            RemoteProtocolError: the event being built is larger than ``max_event_size``.
                Sticky: every later call raises it again.
        """
        if self._error is not None:
            raise self._error
        if not self._bom_checked:
            # Spec: WHATWG 9.2.6 -- one leading U+FEFF BOM is ignored.
            avail = bytes(self._buf[self._start : self._start + 3])
            if len(avail) < 3 and _BOM.startswith(avail) and not self._eof:
                return NEED_DATA
            if avail == _BOM:
                self._start += 3
                self._search = max(self._search, self._start)
            self._bom_checked = True
        while True:
            line = self._next_line()
            if line is None:
                if self._eof:
                    self._discard_pending()
                    return None
                pending = len(self._buf) - self._start
                if self._event_bytes + pending > self.max_event_size:
                    self._fail()
                return NEED_DATA
            event = self._process_line(line)
            if event is not None:
                return event

    # -- internals ---------------------------------------------------------------------

    def _next_line(self) -> bytes | None:
        buf = self._buf
        if self._skip_lf and self._start < len(buf):
            if buf[self._start] == 0x0A:
                self._start += 1
                self._search = max(self._search, self._start)
            self._skip_lf = False
        m = _LINE_END.search(buf, max(self._search, self._start))
        if m is None:
            self._search = len(buf)
            return None
        end = m.start()
        line = bytes(buf[self._start : end])
        if buf[end] == 0x0D:
            if end + 1 < len(buf):
                self._start = end + 2 if buf[end + 1] == 0x0A else end + 1
            else:
                # CR at the end of what we have: the line is complete; an LF arriving
                # next belongs to this line end.
                self._start = end + 1
                self._skip_lf = True
        else:
            self._start = end + 1
        self._search = self._start
        return line

    def _fail(self) -> None:
        self._error = RemoteProtocolError(
            f"SSE event larger than {self.max_event_size} bytes", code=-32600
        )
        self._buf.clear()
        self._start = self._search = 0
        raise self._error

    def _discard_pending(self) -> None:
        self._buf.clear()
        self._start = self._search = 0
        self._reset_block()

    def _reset_block(self) -> None:
        self._data = []
        self._event = ""
        self._block_id = None
        self._block_retry = None
        self._event_bytes = 0

    def _process_line(self, raw: bytes) -> SSEEvent | None:
        if not raw:
            return self._dispatch()
        if raw[0] == 0x3A:  # ":" comment
            return None
        self._event_bytes += len(raw)
        if self._event_bytes > self.max_event_size:
            self._fail()
        line = raw.decode("utf-8", errors="replace")
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            # Spec: WHATWG 9.2.6 -- an id containing NUL is ignored.
            if "\x00" not in value:
                self._block_id = value
                self._id_buffer = value
        elif name == "retry":
            # Spec: WHATWG 9.2.6 -- retry is used only when it is all ASCII digits.
            if value and len(value) <= _MAX_RETRY_DIGITS and value.isascii() and value.isdigit():
                self._block_retry = int(value)
                self.retry = self._block_retry
        # Any other field name is ignored.
        return None

    def _dispatch(self) -> SSEEvent | None:
        # Spec: WHATWG 9.2.6 -- the last event id is taken over when a block ends, even
        # a block without data; a block cut off by the end of the stream changes nothing.
        self.last_event_id = self._id_buffer
        if not self._data:
            # Spec: WHATWG 9.2.6 -- no data: nothing is dispatched (id/retry still apply).
            self._reset_block()
            return None
        event = SSEEvent(
            data="\n".join(self._data),
            event=self._event or None,
            id=self._block_id,
            retry=self._block_retry,
        )
        self._reset_block()
        return event

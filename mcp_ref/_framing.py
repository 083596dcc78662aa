"""Newline-delimited framing: one bounded, linear-time receive buffer.

Theory of operation
-------------------
On stdio (and in every other place mcp-ref carries a byte stream of messages) each
JSON-RPC message is one line of UTF-8 JSON ended by ``\\n``, and messages MUST NOT
contain embedded newlines (2025-06-18/basic/transports#stdio).

:class:`LineBuffer` keeps the bytes received so far and *remembers where it stopped
searching* for the next newline, so feeding a message one byte at a time costs O(n)
in total, not O(n^2).  Consumed lines are not deleted from the front one by one
(also quadratic); a start offset moves instead and the buffer is compacted when more
than half of it is consumed.

The buffer is bounded: a line longer than ``max_line_bytes`` is reported once (the
caller turns that into a JSON-RPC error) and then skipped up to its newline without
being stored, so a peer cannot make us hold more than ``max_line_bytes`` at a time.
"""

from __future__ import annotations

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "PEEK_BYTES", "TOO_LONG", "LineBuffer"]

DEFAULT_MAX_MESSAGE_BYTES = 8 * 1024 * 1024  # bytes of one message, newline excluded


class _TooLong:
    __slots__ = ()

    def __repr__(self) -> str:
        return "TOO_LONG"


TOO_LONG = _TooLong()
"""Returned once by :meth:`LineBuffer.next_line` for each over-long line."""

PEEK_BYTES = 4096  # bytes kept of an over-long message, to find its id


class LineBuffer:
    """Split a byte stream into lines (without their ``\\n``, or a ``\\r`` before it),
    holding at most ``max_line_bytes`` (newline excluded) of a line: ``feed(data)``, then
    ``next_line()`` until it returns None."""

    __slots__ = ("_buf", "_discarding", "_max", "_scan", "_start", "too_long_prefix")

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be positive")
        self._max = max_line_bytes
        self._buf = bytearray()
        self._start = 0  # first unconsumed byte
        self._scan = 0  # bytes before this index hold no newline
        self._discarding = False  # inside an over-long line, until its newline
        #: The first PEEK_BYTES of the last over-long line (for its id, see _jsonrpc.peek).
        self.too_long_prefix = b""

    def __len__(self) -> int:
        """Bytes held and not yet returned."""
        return len(self._buf) - self._start

    def feed(self, data: bytes) -> None:
        """Append received bytes."""
        if self._discarding:
            nl = data.find(b"\n")
            if nl < 0:
                return
            self._discarding = False
            data = data[nl + 1 :]
        self._buf += data

    def next_line(self) -> bytes | _TooLong | None:
        """Return the next complete line, :data:`TOO_LONG`, or None if none is ready."""
        buf = self._buf
        if self._start == len(buf):
            return None  # nothing held (the common case between messages)
        nl = buf.find(b"\n", max(self._scan, self._start))
        if nl < 0:
            self._scan = len(buf)
            held = len(buf) - self._start
            # One byte more than the bound may be the CR of a CRLF whose LF is still to
            # come: that line is not over-long (yet).
            if held > self._max and not (held == self._max + 1 and buf[-1] == 0x0D):
                # Drop what we hold of the over-long line and skip to its newline.
                self.too_long_prefix = bytes(buf[self._start : self._start + PEEK_BYTES])
                self._reset()
                self._discarding = True
                return TOO_LONG
            return None
        end = nl
        if end > self._start and buf[end - 1] == 0x0D:  # tolerate CRLF
            end -= 1
        too_long = end - self._start > self._max
        line = None if too_long else bytes(buf[self._start : end])
        if too_long:
            self.too_long_prefix = bytes(buf[self._start : self._start + PEEK_BYTES])
        self._start = nl + 1
        self._scan = self._start
        if self._start == len(buf):
            self._reset()
        elif self._start > 65536 and self._start * 2 > len(buf):
            del buf[: self._start]
            self._scan -= self._start
            self._start = 0
        return TOO_LONG if line is None else line

    def take_rest(self) -> bytes:
        """At end of input: return the unterminated remainder (maybe b"") and clear."""
        rest = bytes(self._buf[self._start :])
        self._reset()
        if self._discarding:
            self._discarding = False
            return b""
        return rest

    def _reset(self) -> None:
        self._buf = bytearray()
        self._start = 0
        self._scan = 0

"""The Streamable HTTP client's SSE streams, sans-IO: replay cursors and reopening.

Theory of operation
-------------------
A :class:`StreamCursor` is one logical SSE stream as the client reads it, across the
HTTP responses that carry it: the answer to a POSTed request, resumed by GETs with
``Last-Event-ID`` when it breaks off; or the GET stream, reopened when it ends; or the
2024-11-05 stream.  The driver starts each response with :meth:`~StreamCursor.begin`,
feeds its body with :meth:`~StreamCursor.receive_data` (which gives back the data of
each ``message`` event, as bytes for the connection to parse), and when the body ends
asks what next:

* a request's stream, :meth:`~StreamCursor.post_ended`: done (the response came), or
  resume after the ``retry`` time the server gave (else the default), as long as
  streams make progress and an event id names where to resume
  (2025-06-18/basic/transports#resumability-and-redelivery.3), or give up with a
  reason (the request's flow, :class:`~mcp_ref._http_client_flows.RequestFlow`, fails);
* the GET stream, :meth:`~StreamCursor.get_ended` and :meth:`~StreamCursor.get_failed`:
  reopen after a delay that doubles while streams bring nothing (at most
  :data:`MAX_DELAY` seconds), or give up after :data:`MAX_GET_FAILURES` in a row.

The head of each reopening GET is read by :meth:`~StreamCursor.reopened`
(:class:`Reopen`).  The last event id and the ``retry`` time carry over from one
response to the next; each response gets a fresh decoder, so an event cut off by a
broken connection is dropped, never glued to the next response's bytes.  Delays are
seconds for the driver to wait; no clock is read here.
"""

from __future__ import annotations

import enum
from typing import Final

from ._errors import RemoteProtocolError
from ._http import CONTENT_TYPE_SSE, Headers
from ._http_client import media_type
from ._http_legacy import MESSAGE_EVENT
from ._sse import SSEDecoder, SSEEvent

__all__ = [
    "ANSWERED_GRACE",
    "MAX_DELAY",
    "MAX_GET_FAILURES",
    "MAX_RESUMES_WITHOUT_PROGRESS",
    "Reopen",
    "StreamCursor",
]

MAX_RESUMES_WITHOUT_PROGRESS: Final = 3
"""A request's stream is given up when this many resumptions in a row bring no event."""
MAX_GET_FAILURES: Final = 8
"""The GET stream is given up after this many failures (or empty streams) in a row."""
MAX_DELAY: Final = 30.0
"""The longest wait, in seconds, before reopening the GET stream."""
ANSWERED_GRACE: Final = 1.0
"""Seconds a server gets to end a request's stream after the response came (then the
driver closes the connection)."""


class Reopen(enum.Enum):
    """What the head of a GET that reopens (or opens) a stream means."""

    READ = "read"
    """An SSE stream: read it."""
    EXPIRED = "expired"
    """404 to our session id: the session is gone (start a new one)."""
    RESET = "reset"
    """409 to our ``Last-Event-ID``: the events missed are lost; the cursor forgot the
    id, reopen at once."""
    STOP = "stop"
    """Anything else: the server offers no stream here."""


class StreamCursor:
    """One logical SSE stream read across responses (module docstring).

    Args:
        max_event_bytes: the bound on one event (the decoder's ``max_event_size``).
        default_retry: seconds to wait before reopening when the server gave no
            ``retry``.
        expect_endpoint: a 2024-11-05 stream, whose first event (any type) is kept in
            :attr:`first` rather than given back.

    Attributes:
        last_event_id: the last event id received ("" when none, or when it is not
            printable ASCII), sent back as ``Last-Event-ID``.
        retry: the server's last ``retry``, in milliseconds, or None.
        count: events received on the current response.
        error: why the current response's events could not be read (an event past
            the bound), or None.
        first: with ``expect_endpoint``, the first event once it came.
    """

    def __init__(
        self, max_event_bytes: int, default_retry: float, *, expect_endpoint: bool = False
    ) -> None:
        self.max_event_bytes = max_event_bytes
        self.default_retry = default_retry
        self.last_event_id = ""
        self.retry: int | None = None
        self.count = 0
        self.error: str | None = None
        self.first: SSEEvent | None = None
        self._expect_endpoint = expect_endpoint
        self._idle = 0
        self._failures = 0
        self._decoder = SSEDecoder(max_event_bytes)

    def begin(self) -> None:
        """A new response of this stream starts: a fresh decoder, no events yet."""
        self._decoder = SSEDecoder(self.max_event_bytes)
        self.count = 0
        self.error = None

    def receive_data(self, chunk: bytes) -> list[bytes]:
        """Feed a piece of the body (``b""``: its end); returns the data of the
        ``message`` events completed, UTF-8 encoded, one message each.

        After an error (:attr:`error` set) nothing more is read from this response.
        """
        if self.error is not None:
            return []
        decoder = self._decoder
        decoder.receive_data(chunk)
        out: list[bytes] = []
        try:
            while isinstance(event := decoder.next_event(), SSEEvent):
                self.count += 1
                if self._expect_endpoint and self.first is None:
                    self.first = event
                elif event.data and event.event in (None, MESSAGE_EVENT):
                    out.append(event.data.encode())
        except RemoteProtocolError as exc:
            self.error = exc.message
        if event_id := decoder.last_event_id:
            # An id that cannot go in a header (not printable ASCII) names no place to
            # resume from: the stream is then as one without ids.
            self.last_event_id = event_id if event_id.isascii() and event_id.isprintable() else ""
        if decoder.retry is not None:
            self.retry = decoder.retry
        return out

    def retry_seconds(self) -> float:
        """Seconds to wait before reopening: the server's ``retry``, else the default."""
        # Spec: 2025-11-25/basic/transports#sending-messages-to-the-server.14
        # "The client MUST respect the `retry` field, waiting the given number of milliseconds
        # before attempting to reconnect."
        return self.retry / 1000 if self.retry is not None else self.default_retry

    def reopened(self, status: int, headers: Headers, *, session: bool) -> Reopen:
        """What the head of a (re)opening GET means (``session``: it carried a session
        id); a 409 to a ``Last-Event-ID`` makes the cursor forget that id."""
        if status == 404 and session:
            return Reopen.EXPIRED
        if status == 409 and self.last_event_id:
            self.last_event_id = ""
            return Reopen.RESET
        # The server answers a GET with an SSE stream or with 405 (its rule,
        # #listening-for-messages-from-the-server.3, tagged where the server honours it):
        # anything but an SSE stream means there is none to read.
        if status == 200 and media_type(headers) == CONTENT_TYPE_SSE:
            return Reopen.READ
        return Reopen.STOP

    def post_ended(self, answered: bool) -> float | str | None:
        """A response of a request's stream ended (``answered``: the response to the
        request came on it): None when done, else seconds to wait before resuming, or
        why the request cannot be answered any more (str)."""
        if answered:
            return None
        self._idle = 0 if self.count else self._idle + 1
        if not self.last_event_id:
            return "the SSE stream ended before the response and cannot be resumed"
        if self._idle > MAX_RESUMES_WITHOUT_PROGRESS:
            return "the SSE stream keeps ending without progress"
        # Spec: 2025-06-18/basic/transports#resumability-and-redelivery.3
        # "If the client wishes to resume after a broken connection, it SHOULD issue an HTTP GET
        # to the MCP endpoint, and include the `Last-Event-ID` header to indicate the last event
        # ID it received."
        return self.retry_seconds()

    def get_ended(self) -> float | None:
        """A response of the GET stream ended: seconds to wait before reopening it
        (doubling while responses bring no event), or None to give up."""
        self._failures = 0 if self.count else self._failures + 1
        if self._failures > MAX_GET_FAILURES:
            return None
        # Spec: 2025-06-18/basic/transports#resumability-and-redelivery.3
        # "If the client wishes to resume after a broken connection, it SHOULD issue an HTTP GET
        # to the MCP endpoint, and include the `Last-Event-ID` header to indicate the last event
        # ID it received."
        return min(self.retry_seconds() * 2.0 ** max(0, self._failures - 1), MAX_DELAY)

    def get_failed(self) -> float | None:
        """The GET could not be sent or its head read: seconds to wait before trying
        again (doubling), or None to give up."""
        self._failures += 1
        if self._failures > MAX_GET_FAILURES:
            return None
        return min(self.default_retry * 2.0**self._failures, MAX_DELAY)

"""What one HTTP response of the Streamable HTTP server writes, sans-IO: a JSON
answer, an empty one, or an SSE stream from a cursor.

Theory of operation
-------------------
A logical stream (:mod:`mcp_ref._http_streams`) is written by at most one HTTP
response at a time.  An :class:`SseAnswer` is one such response: it attaches the
stream (a response writing it before sees the stream's generation change and stops),
keeps its place in it (:class:`StreamCursor`: the events it has yet to write, encoded,
read from the session's event store), and says what to do next.  The driver loops::

    while (wait := answer.step(keepalive, head_wait)) is not None:
        if answer.ready:                 # else the head waits a moment for events
            send(answer.events()); answer.written()
        got = wait_for_news(answer.seq, wait)   # "changed", "timeout" or "eof"
        if got == "eof": break           # the client left: the rest stays stored
        answer.waited(got)               # "timeout" after a keepalive wait: a comment
    answer.detach(); send(answer.events(end=True)); answer.written()

A POST's answer usually comes within moments, so before 2025-11-25 its head waits
(``head_wait`` seconds) for the first events: a quick answer is one write (head,
events, end).  From 2025-11-25 on the head goes at once, with its priming event.

:class:`ResponseHeads` builds the heads of a session's answers once (h11 validates the
headers of every new response) and the JSON and empty answers whole.  Everything here
returns h11 events; the driver writes them and says when they were written.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import attrs
import h11

from . import _http as rules
from ._http import MESSAGE_EVENT, HttpError, PostReply
from ._http_connection import CONNECTION_CLOSE
from ._http_modern import answer_status
from ._http_streams import LogicalStream, SessionStreams
from ._sse import encode_comment, encode_data

__all__ = [
    "HEAD_WAIT_SECONDS",
    "MAX_PIPELINED",
    "Chunk",
    "ResponseHeads",
    "SseAnswer",
    "StreamCursor",
    "empty_answer",
]

HEAD_WAIT_SECONDS: Final = 0.1
"""Seconds the head of a POST's SSE answer waits for the first events, so that a quick
answer is written at once, head and all."""
MAX_PIPELINED: Final = 64 * 1024
"""Bytes a client may pipeline while its SSE answer is written; past them the server
stops reading its connection."""

_END: Final = h11.EndOfMessage()
_NO_BUFFERING: Final = (b"x-accel-buffering", b"no")
_REASONS: Final = {200: b"OK", 400: b"Bad Request", 404: b"Not Found"}
_ACCEPTED: Final = rules.response_headers(PostReply.ACCEPTED)


def empty_answer(status: Literal[200, 202], last: bool) -> list[Any]:
    """A response without body: ``202 Accepted`` (a POST of notifications and
    responses) or ``200 OK`` (a DELETE), with ``Connection: close`` when ``last``."""
    headers = [*_ACCEPTED, CONNECTION_CLOSE] if last else _ACCEPTED
    reason = b"OK" if status == 200 else b"Accepted"
    return [h11.Response(status_code=status, headers=headers, reason=reason), _END]


class ResponseHeads:
    """The heads of one session's answers, each built (and its session id validated)
    once: a session has few kinds of answers, and only a JSON answer's length changes."""

    def __init__(self) -> None:
        self._json: dict[str | None, list[tuple[bytes, bytes]]] = {}
        self._sse: dict[tuple[str | None, bool, bool], h11.Response] = {}

    def json_answer(
        self, session_id: str | None, body: bytes, last: bool, *, modern: bool = False
    ) -> list[Any]:
        """The answer of a POST in JSON mode: 200 with ``body``
        (``rules.response_headers(PostReply.JSON, session_id=...)``), or 202 when
        ``body`` is empty (every request was cancelled); ``Connection: close`` when
        ``last``.  For a ``modern`` POST (2026-07-28) the status is the one its answer
        asks for (:func:`~mcp_ref._http_modern.answer_status`: 400, 404)."""
        if not body:
            return empty_answer(202, last)
        base = self._json.get(session_id)
        if base is None:
            base = rules.response_headers(PostReply.JSON, session_id=session_id, content_length=0)
            self._json[session_id] = base  # two at most: with and without the id
        length = str(len(body)).encode("ascii")
        headers = [(k, length) if k == rules.CONTENT_LENGTH else (k, v) for k, v in base]
        if last:
            headers.append(CONNECTION_CLOSE)
        status = answer_status(body) if modern else 200
        head = h11.Response(status_code=status, headers=headers, reason=_REASONS[status])
        return [head, h11.Data(data=body), _END]

    def sse(self, session_id: str | None, last: bool, *, post: bool) -> h11.Response:
        """The head of an SSE answer: 200 with ``rules.response_headers(PostReply.SSE,
        session_id=..., post=post)`` and ``X-Accel-Buffering: no`` (proxies pass each
        event on at once), plus ``Connection: close`` when ``last``."""
        key = (session_id, last, post)
        head = self._sse.get(key)
        if head is None:
            headers = rules.response_headers(PostReply.SSE, session_id=session_id, post=post)
            # Spec: 2026-07-28/basic/transports/streamable-http#receiving-messages.5
            # "When initiating an SSE stream, servers SHOULD include the `X-Accel-Buffering:
            # no` header in the HTTP response."
            headers.append(_NO_BUFFERING)
            if last:
                headers.append(CONNECTION_CLOSE)
            head = h11.Response(status_code=200, headers=headers, reason=b"OK")
            self._sse[key] = head  # eight at most
        return head


class SseAnswer:
    """One SSE response writing a logical stream (module docstring).

    Args:
        streams: the session's streams.
        stream: the stream to write; attached now.
        head: the response's head (:meth:`ResponseHeads.sse`).
        cursor: the id of the last event the client holds (None: the last event
            written to the stream's previous response, else its base).
        first: an encoded event to write before the stream's (2024-11-05 ``endpoint``).
        retry_ms: the priming event's ``retry``, in milliseconds.
        post: the answer to the POST that carried the stream's requests.
        modern: the POST is a modern-era (2026-07-28) one: its head waits for the
            first message up to a keepalive time, and an error that is all its stream
            holds by then goes as a JSON answer with the status the error asks for
            (:func:`~mcp_ref._http_modern.answer_status`).
    """

    def __init__(
        self,
        streams: SessionStreams,
        stream: LogicalStream,
        head: h11.Response,
        *,
        cursor: str | None,
        first: bytes = b"",
        retry_ms: int,
        post: bool,
        modern: bool = False,
    ) -> None:
        self.stream = stream
        self._modern = modern
        self._json: list[Any] | None = None  # a modern error answered as JSON instead
        self.generation = streams.attach(stream)
        self._streams = streams
        if cursor is None:
            cursor = stream.delivered_id or stream.base_id
        self._reader = StreamCursor(streams, stream, cursor, self.generation)
        self._head: h11.Response | None = head  # None once handed out
        self._chunks = [c for c in (first, self._reader.opening(retry_ms)) if c]
        self._taken: str | None = None  # id of the last event in _chunks
        self._handed: str | None = None  # id of the last event in events() not yet written
        self.head_waits = post and not streams.primes
        """The head waits for the first events (set while that wait lasts)."""
        self.seq = stream.seq
        """The stream's ``seq`` when :meth:`step` last looked: news came when it moved."""
        self.end: str | None = None
        """Why the response ends (once :meth:`step` returned None)."""

    @property
    def ready(self) -> bool:
        """Whether to write what is pending before waiting (not while the head waits)."""
        return not self.head_waits

    def step(self, keepalive: float, head_wait: float) -> float | None:
        """Take the stream's news: None when the response ends now (:attr:`end` says
        why; write ``events(end=True)``), else the seconds to wait for news: ``head_wait``
        while the head waits for the first events (``keepalive`` for a modern answer),
        else ``keepalive``."""
        self.seq = self.stream.seq
        chunk = self._reader.take()
        if chunk.data:
            self._chunks.append(chunk.data)
        if chunk.last_id is not None:
            self._taken = chunk.last_id
        if chunk.end is not None:
            self.end = chunk.end
            if self._modern and self._head is not None and chunk.end == "answered":
                self._json = self._error_answer()
            return None
        if self.head_waits and self._taken is None:
            # A modern answer's status is its first message's (an error may need 400 or
            # 404): its head waits for it up to a keepalive time.
            return keepalive if self._modern else head_wait
        self.head_waits = False
        return keepalive

    def _error_answer(self) -> list[Any] | None:
        """The JSON answer (head and body) that replaces the whole SSE answer of a
        modern POST whose stream holds one error response asking for a status other
        than 200 (:data:`~mcp_ref._http_modern.ERROR_STATUS`); else None."""
        reader = self._reader
        if reader.taken != 1 or reader.last_data is None:
            return None
        body = reader.last_data.encode()
        status = answer_status(body)
        if status == 200:
            return None
        assert self._head is not None
        headers = rules.response_headers(PostReply.JSON, content_length=len(body))
        if CONNECTION_CLOSE in self._head.headers:
            headers.append(CONNECTION_CLOSE)
        head = h11.Response(status_code=status, headers=headers, reason=_REASONS[status])
        return [head, h11.Data(data=body)]

    def waited(self, got: Literal["changed", "timeout"]) -> None:
        """How the wait :meth:`step` asked for ended: a head that waited in vain goes
        now; a keepalive wait in silence gets a comment (so proxies keep the stream)."""
        if self.head_waits:
            self.head_waits = got == "changed"
        elif got == "timeout":
            self._chunks.append(encode_comment("keepalive"))

    def events(self, *, end: bool = False) -> list[Any]:
        """The h11 events to write now: the head (the first time), the pending events
        as one chunk, and the end of the response when ``end``.  Call
        :meth:`written` once they are."""
        out: list[Any] = []
        if end and self._json is not None:  # a modern error, as JSON instead
            out, self._head, self._chunks = self._json, None, []
        if self._head is not None:
            out.append(self._head)
            self._head = None
        if self._chunks:
            out.append(h11.Data(data=b"".join(self._chunks)))
            self._chunks = []
        if end:
            out.append(_END)
        self._handed, self._taken = self._taken, None
        return out

    def written(self) -> None:
        """The last :meth:`events` reached the socket: the stream's ``delivered_id``
        (where a next response starts) is the last event among them, unless a newer
        response took the stream over."""
        if self._handed is not None and self.stream.generation == self.generation:
            self.stream.delivered_id = self._handed
        self._handed = None

    def detach(self) -> None:
        """This response stops writing the stream (it may be attached again)."""
        self._streams.detach(self.stream, self.generation)


@attrs.frozen
class Chunk:
    """What :meth:`StreamCursor.take` found."""

    data: bytes
    """SSE events to write (``b""``: none)."""
    last_id: str | None
    """The id of the last event among them (None: none)."""
    end: str | None
    """Why the response ends now (None: it goes on)."""


class StreamCursor:
    """One SSE response's place in a logical stream: the events it has yet to write,
    encoded, and when it ends.

    Args:
        streams: the session's streams (its store holds the events).
        stream: the stream the response writes (attached as ``generation``).
        cursor: the id of the last event the client holds (a stream's ``base_id``:
            none).
        generation: what :meth:`SessionStreams.attach` returned.

    Source: 2025-06-18/basic/transports#resumability-and-redelivery (replay after
    ``Last-Event-ID``), #sending-messages-to-the-server.10-14 (the end of a POST's stream).
    """

    def __init__(
        self, streams: SessionStreams, stream: LogicalStream, cursor: str, generation: int
    ) -> None:
        self.streams = streams
        self.stream = stream
        self.cursor = cursor
        self.generation = generation
        self.taken = 0
        """Events with data taken so far."""
        self.last_data: str | None = None
        """The data of the last of them."""

    def opening(self, retry_ms: int) -> bytes:
        """The priming event, from 2025-11-25 on (else ``b""``): the cursor's id and
        empty data, and when to reconnect (``retry_ms``, milliseconds)."""
        if not self.streams.primes:
            return b""
        # Spec: 2025-06-18/basic/transports#resumability-and-redelivery.1
        # "Servers MAY attach an `id` field to their SSE events, as described in the SSE standard."
        return encode_data("", id=self.cursor, retry=retry_ms)

    def take(self) -> Chunk:
        """The events appended after the cursor (which moves past them), and whether
        the response ends: taken over by a newer one, its events lost from the store,
        the stream answered whole, the session ended, or the handler closed it."""
        stream, store = self.stream, self.streams.store
        if stream.generation != self.generation:
            return Chunk(b"", None, "another response took the stream over")
        parts: list[bytes] = []
        last: str | None = None
        if self.cursor != stream.last_id:
            replay = store.replay_after(self.cursor)
            if isinstance(replay, HttpError):
                return Chunk(b"", None, f"events lost: {replay.detail}")
            for event_id, data in replay.events:
                if data:
                    parts.append(encode_data(data, event=MESSAGE_EVENT, id=event_id))
                    self.taken += 1
                    self.last_data = data
                self.cursor = last = event_id
        end: str | None = None
        if stream.finished and self.cursor == stream.last_id:
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.10
            # "The SSE stream SHOULD eventually include JSON-RPC response for the JSON-RPC request
            # sent in the POST body."
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.13
            # "The server SHOULD NOT close the SSE stream before sending the JSON-RPC response for
            # the received JSON-RPC request, unless the session expires."
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.14
            # "After the JSON-RPC response has been sent, the server SHOULD close the SSE stream."
            store.forget_stream(stream.id)
            end = "answered"
        elif self.streams.ended:
            end = "the session ended"
        elif stream.close_requested:
            stream.close_requested = False
            end = "closed by its handler"
        return Chunk(b"".join(parts), last, end)

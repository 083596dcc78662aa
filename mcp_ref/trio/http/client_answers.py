"""The Streamable HTTP client's input: answers to POSTed requests, SSE streams, resumption.

Theory of operation
-------------------
Every message the server sends reaches the session through ``_deliver`` and ``_feed``:
one bounded queue, so a slow session makes the readers wait.  ``_feed_error`` answers
one of our own requests with an error response made here when the server cannot answer
it any more (HTTP error, stream lost without an event id, connection failure), so the
caller is not left waiting for its timeout.

A request's answer is read by a task of its own (``_read_answer``; an outgoing
``notifications/cancelled`` cancels it through ``_readers``).  An error status becomes an
error response; ``202`` is accepted (the response may come on the GET stream); a JSON
body is the response (2025-06-18/basic/transports#sending-messages-to-the-server.9); an
SSE stream is read (``_read_sse``) until the response to that request came, after which
the server gets one second to end the stream (then the connection can be reused).  A
stream that ends first is resumed by a GET carrying ``Last-Event-ID`` after the server's
``retry`` (else ``default_retry``), as long as it makes progress
(#resumability-and-redelivery.3).  A 404 starts a new session
(:mod:`.client_sessions`) and sends the request again, once.
"""

from __future__ import annotations

import logging
import math
from typing import Any, Final

import trio

from ... import _http as rules
from ..._errors import INTERNAL_ERROR
from ..._http import CONTENT_TYPE_JSON, CONTENT_TYPE_SSE, MessageKind
from ..._http_messages import message_info
from ..._sse import NEED_DATA as SSE_NEED_DATA
from ..._sse import SSEDecoder, SSEEvent
from ...events import RequestId
from .client_connections import (
    _IO_FAILURES,
    _MAX_ERROR_BODY,
    _TRANSPORT_FAILURES,
    _error_message,
    _Exchange,
)
from .client_sessions import ClientSessions
from .common import request_key

__all__ = ["ClientAnswers"]

log = logging.getLogger("mcp_ref.trio.http")


_MAX_RESUMES_WITHOUT_PROGRESS: Final = 3


class ClientAnswers(ClientSessions):
    """The input of an HTTP client channel: the answers to its requests, read from JSON
    bodies and SSE streams (resumed when they end early)."""

    # -- input -----------------------------------------------------------------------------

    async def _feed(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            try:
                self._in_send.send_nowait(data)
            except trio.WouldBlock:
                await self._in_send.send(data)  # the session reads slowly: wait for room
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass

    async def _feed_error(self, rid: RequestId, message: str) -> None:
        """Answer our own request with an error: the server cannot answer it any more."""
        log.warning("request %r failed on the HTTP transport: %s", rid, message)
        await self._feed(rules.error_response_body(INTERNAL_ERROR, message, rid))

    async def _deliver(self, data: bytes, waiting: Any) -> bool:
        """Pass one received message on; True when it is the response to ``waiting``."""
        info = message_info(data)
        answered = (
            info is not None
            and info.kind is MessageKind.RESPONSE
            and request_key(info.id) == waiting
        )
        if answered and waiting == self._init_key and self.protocol_version is None:
            self._note_version(data)
        await self._feed(data)
        return answered

    # -- reading answers -------------------------------------------------------------------

    async def _read_answer(
        self, ex: _Exchange, rid: RequestId | None, generation: int, release: bool
    ) -> None:
        key = request_key(rid)
        scope = trio.CancelScope()
        self._readers[key] = scope
        try:
            with scope:
                failure = await self._answer(ex, rid, key, generation)
                if failure is not None and rid is not None:
                    await self._feed_error(rid, failure)
        finally:
            if self._readers.get(key) is scope:
                del self._readers[key]
            if release:
                self._posts.release()

    async def _answer(
        self, ex: _Exchange, rid: RequestId | None, key: Any, generation: int
    ) -> str | None:
        """Read one request's answer; None when answered, else why it failed."""
        retried = False
        while True:
            try:
                if ex.response is None:
                    ex = await self._head(ex)  # a new exchange when it had to resend
                if ex.status == 404 and generation != self._generation:
                    return "the session expired"
                if (
                    ex.status == 404
                    and self.session_id is not None
                    and not retried
                    and self._init_body is not None
                    and key != self._init_key
                ):
                    # Spec: 2025-06-18/basic/transports#session-management.7
                    # "When a client receives HTTP 404 in response to a request containing an
                    # `Mcp-Session-Id`, it MUST start a new session by sending a new
                    # `InitializeRequest` without a session ID attached."
                    await ex.conn.aclose()
                    if not await self._session_expired(generation):
                        return "the session expired and a new one could not be started"
                    retried = True
                    generation = self._generation
                    ex = await self._start(b"POST", self._post_target, ex.body, fresh=False)
                    continue
                return await self._answer_of(ex, key)
            except _TRANSPORT_FAILURES as exc:
                await ex.conn.aclose()
                return f"the HTTP exchange failed: {exc}"

    async def _answer_of(self, ex: _Exchange, key: Any) -> str | None:
        status, media = ex.status, ex.media_type()
        if status >= 400:
            body = await ex.read_body(_MAX_ERROR_BODY)
            await ex.conn.aclose()
            return f"HTTP {status}: {_error_message(body)}"
        if status == 202:
            self._give_back(ex)
            log.warning("a request was answered 202: its response may come on the GET stream")
            return None
        if media == CONTENT_TYPE_JSON:
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.9
            # "The client MUST support both these cases."
            body = await ex.read_body(self._limits.max_event_bytes)
            self._give_back(ex)
            if key == self._init_key:
                self._note_session(ex)
            if not await self._deliver(body, key):
                return "the JSON answer was not the response to the request"
            return None
        if media == CONTENT_TYPE_SSE:
            return await self._read_post_stream(ex, key)
        await ex.conn.aclose()
        return f"unexpected answer: HTTP {status} {media.decode('latin-1')!r}"

    async def _read_sse(self, ex: _Exchange, decoder: SSEDecoder, key: Any) -> tuple[bool, int]:
        """Feed the events of one SSE response; (answered, events received).

        After the awaited response the server should end the stream; it gets one second
        to do so (then the connection can be reused), else the connection is closed.
        """
        answered = False
        count = 0
        try:
            # One scope for the whole stream: its deadline is set once answered.
            with trio.CancelScope() as scope:
                while (chunk := await ex.next_chunk()) is not None:
                    decoder.receive_data(chunk)
                    while (event := decoder.next_event()) is not SSE_NEED_DATA and event:
                        assert isinstance(event, SSEEvent)
                        count += 1
                        if event.data and event.event in (None, "message"):
                            data = event.data.encode("utf-8")
                            answered = await self._deliver(data, key) or answered
                    if answered and scope.deadline == math.inf:
                        scope.deadline = trio.current_time() + 1.0
        except _IO_FAILURES as exc:
            log.debug("SSE stream broke: %r", exc)
        except Exception as exc:  # the decoder's RemoteProtocolError (event too large)
            log.warning("bad SSE stream: %s", exc)
        if ex.complete:
            self._give_back(ex)
        else:
            await ex.conn.aclose()
        return answered, count

    async def _read_post_stream(self, ex: _Exchange, key: Any) -> str | None:
        decoder = SSEDecoder(self._limits.max_event_bytes)
        idle = 0
        generation = self._generation
        while True:
            answered, count = await self._read_sse(ex, decoder, key)
            if answered:
                return None
            idle = 0 if count else idle + 1
            if not decoder.last_event_id:
                return "the SSE stream ended before the response and cannot be resumed"
            if idle > _MAX_RESUMES_WITHOUT_PROGRESS:
                return "the SSE stream keeps ending without progress"
            # Spec: 2025-06-18/basic/transports#resumability-and-redelivery.3
            # "If the client wishes to resume after a broken connection, it SHOULD issue an HTTP GET
            # to the MCP endpoint, and include the `Last-Event-ID` header to indicate the last event
            # ID it received."
            await trio.sleep(self._retry_seconds(decoder))
            ex = await self._request(
                b"GET", self._target, b"", fresh=True, last_event_id=decoder.last_event_id
            )
            if ex.status == 404 and self.session_id is not None:
                await ex.conn.aclose()
                self._supervisor.start_soon(self._session_expired, generation)
                return "the session expired before the response came"
            if ex.status != 200 or ex.media_type() != CONTENT_TYPE_SSE:
                body = await ex.read_body(_MAX_ERROR_BODY)
                await ex.conn.aclose()
                return f"resuming the stream failed: HTTP {ex.status}: {_error_message(body)}"

    def _retry_seconds(self, decoder: SSEDecoder) -> float:
        return decoder.retry / 1000 if decoder.retry is not None else self._default_retry

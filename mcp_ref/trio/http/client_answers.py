"""The Streamable HTTP client's input: answers, SSE streams, the GET stream, a new
session, the 2024-11-05 fallback -- the I/O of what :mod:`mcp_ref._http_client` decides.

Theory of operation
-------------------
Every message the server sends reaches the session through ``_deliver`` and ``_feed``:
one bounded queue, so a slow session makes the readers wait.  A request the server can
no longer answer gets the core's error response (``_feed_error``), so its caller is not
left waiting for its timeout.

* **A request's answer** is read by a task of its own (``_read_answer``; an outgoing
  ``notifications/cancelled`` cancels it through ``_readers``): the core reads the head
  (:meth:`~mcp_ref._http_client.HttpClientCore.answer`), then a JSON body is the
  response, an SSE stream is read through a
  :class:`~mcp_ref._http_client_streams.StreamCursor` until the response came (the
  server then gets ``ANSWERED_GRACE`` seconds to end it), and resumed with a GET
  carrying ``Last-Event-ID`` when the cursor says so.
* **A 404 to our session id** (``_session_expired``, once per expired session, under a
  lock): the core's handshake bytes are POSTed again, their answers passed on to no
  one; the request is then sent again, once.
* **The GET stream** (``_get_stream``) is opened after ``notifications/initialized``
  and reopened by the cursor's policy until it gives up or the server offers none.
* **2024-11-05** (``_fall_back``): GET the same URL, the first event names the POST
  endpoint, every message comes on that one stream; when it ends, input ends.
"""

from __future__ import annotations

import logging
import math

import trio

from ..._errors import RemoteProtocolError
from ..._http_client import MAX_ERROR_BODY, Answer, Outgoing, failure, refusal_message
from ..._http_client_streams import ANSWERED_GRACE, Reopen, StreamCursor
from ...events import RequestId
from .client_connections import (
    _IO_FAILURES,
    _TRANSPORT_FAILURES,
    ClientConnections,
    HttpTransportError,
    _Exchange,
)

__all__ = ["ClientAnswers"]

log = logging.getLogger("mcp_ref.trio.http")


class ClientAnswers(ClientConnections):
    """The input of an HTTP client channel (module docstring)."""

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
        await self._feed(failure(rid, message))

    async def _deliver(self, data: bytes, key: object) -> bool:
        """Pass one received message on; True when it is the response awaited."""
        answered = self.core.received(data, key)
        await self._feed(data)
        return answered

    def _cursor(self, *, expect_endpoint: bool = False) -> StreamCursor:
        core = self.core
        return StreamCursor(
            core.limits.max_event_bytes, core.default_retry, expect_endpoint=expect_endpoint
        )

    # -- a request's answer ----------------------------------------------------------------

    async def _read_answer(
        self, ex: _Exchange, out: Outgoing, generation: int, release: bool
    ) -> None:
        scope = trio.CancelScope()
        self._readers[out.key] = scope
        try:
            with scope:
                why = await self._answer(ex, out, generation)
                if why is not None and out.id is not None:
                    await self._feed_error(out.id, why)
        finally:
            if self._readers.get(out.key) is scope:
                del self._readers[out.key]
            if release:
                self._posts.release()

    async def _answer(self, ex: _Exchange, out: Outgoing, generation: int) -> str | None:
        """Read one request's answer; None when answered, else why it failed."""
        retried = False
        while True:
            try:
                if ex.response is None:
                    ex = await self._head(ex)  # a new exchange when it had to resend
                what = self.core.answer(ex.status, ex.headers, key=out.key, retried=retried)
                if what is not Answer.EXPIRED:
                    return await self._answer_of(ex, what, out.key)
                await ex.conn.aclose()
                if not await self._session_expired(generation):
                    return "the session expired and a new one could not be started"
                retried, generation = True, self.core.generation
                ex = await self._start(b"POST", self.core.post_target, ex.body, fresh=False)
            except _TRANSPORT_FAILURES as exc:
                await ex.conn.aclose()
                return f"the HTTP exchange failed: {exc}"

    async def _answer_of(self, ex: _Exchange, what: Answer, key: object) -> str | None:
        if what is Answer.ACCEPTED:
            self._give_back(ex)
            log.warning("a request was answered 202: its response may come on the GET stream")
            return None
        if what is Answer.JSON:
            body = await ex.read_body(self.core.limits.max_event_bytes)
            self._give_back(ex)
            if not await self._deliver(body, key):
                return "the JSON answer was not the response to the request"
            return None
        if what is Answer.SSE:
            return await self._read_post_stream(ex, key)
        if what is Answer.UNEXPECTED:
            await ex.conn.aclose()
            return f"unexpected answer: HTTP {ex.status} {ex.media_type().decode('latin-1')!r}"
        body = await ex.read_body(MAX_ERROR_BODY)
        await ex.conn.aclose()
        return refusal_message(ex.status, body)

    async def _read_sse(self, ex: _Exchange, cursor: StreamCursor, key: object) -> bool:
        """Feed the events of one SSE response; True when the response to ``key`` came.

        After it came the server should end the stream; it gets ``ANSWERED_GRACE``
        seconds to do so (then the connection can be reused), else the connection is
        closed.
        """
        answered = False
        cursor.begin()
        try:
            # One scope for the whole stream: its deadline is set once answered.
            with trio.CancelScope() as scope:
                while (chunk := await ex.next_chunk()) is not None:
                    for data in cursor.receive_data(chunk):
                        answered = await self._deliver(data, key) or answered
                    if cursor.error is not None:
                        log.warning("bad SSE stream: %s", cursor.error)
                        break
                    if answered and scope.deadline == math.inf:
                        scope.deadline = trio.current_time() + ANSWERED_GRACE
        except _IO_FAILURES as exc:
            log.debug("SSE stream broke: %r", exc)
        if ex.complete:
            self._give_back(ex)
        else:
            await ex.conn.aclose()
        return answered

    async def _read_post_stream(self, ex: _Exchange, key: object) -> str | None:
        core = self.core
        cursor = self._cursor()
        generation = core.generation
        while True:
            then = cursor.post_ended(await self._read_sse(ex, cursor, key))
            if then is None or isinstance(then, str):
                return then
            await trio.sleep(then)
            ex = await self._request(
                b"GET", core.target, b"", fresh=True, last_event_id=cursor.last_event_id
            )
            what = cursor.reopened(ex.status, ex.headers, session=core.session_id is not None)
            if what is Reopen.EXPIRED:
                await ex.conn.aclose()
                self._supervisor.start_soon(self._session_expired, generation)
                return "the session expired before the response came"
            if what is not Reopen.READ:
                body = await ex.read_body(MAX_ERROR_BODY)
                await ex.conn.aclose()
                return f"resuming the stream failed: {refusal_message(ex.status, body)}"

    # -- a new session after 404 -------------------------------------------------------------

    async def _session_expired(self, generation: int) -> bool:
        """Start a new session (once per expired one); False when that failed."""
        async with self._reinit_lock:
            if self.closed:
                return False
            begin = self.core.begin_new_session(generation)
            if begin is not True:
                return begin is None  # another task did it, or nothing to replay
            try:
                with trio.fail_after(self._io_timeout):
                    ok = await self._replay_handshake()
            except _TRANSPORT_FAILURES as exc:
                log.warning("starting a new session failed: %s", exc)
                ok = False
            except trio.TooSlowError:
                log.warning("starting a new session took longer than %s s", self._io_timeout)
                ok = False
            reason = self.core.end_new_session(ok)
            if reason is not None:
                self.eof_reason = reason
                self._in_send.close()
                return False
            log.info("started a new HTTP session %s after a 404", self.session_id)
            return True

    async def _replay_handshake(self) -> bool:
        core = self.core
        assert core.init_body is not None and core.initialized_body is not None
        ex = await self._request(b"POST", core.post_target, core.init_body, fresh=False)
        what = core.replay_answer(ex.status, ex.headers)
        same: bool | None = None
        if what is Answer.JSON:
            same = core.replayed(await ex.read_body(core.limits.max_event_bytes))
            self._give_back(ex)
        elif what is Answer.SSE:
            cursor = self._cursor()
            try:
                while same is None and (chunk := await ex.next_chunk()) is not None:
                    for data in cursor.receive_data(chunk):
                        same = core.replayed(data) if same is None else same
            finally:
                await ex.conn.aclose()
        else:
            await ex.conn.aclose()
        if not same:
            log.warning("the new session was refused or negotiated another version")
            return False
        ex, _ = await self._post_message(core.initialized_body)
        return core.one_way(ex.status, retried=True) is Answer.ACCEPTED

    # -- the GET stream ----------------------------------------------------------------------

    async def _open_get_stream(self) -> None:
        """Open the GET stream before ``send`` returns, so that it is there before the
        next request: a server may send on it what it has for us (an elicitation) as soon
        as the request arrives.  Waits at most ``min(io_timeout, 5)`` s for its head."""
        # Spec: 2025-06-18/basic/transports#listening-for-messages-from-the-server.1
        # "The client MAY issue an HTTP GET to the MCP endpoint."
        first: _Exchange | None = None
        try:
            first = await self._start(b"GET", self.core.target, b"", fresh=True)
            with trio.move_on_after(min(self._io_timeout, 5.0)):
                first = await self._head(first)
        except _IO_FAILURES as exc:
            log.debug("the GET stream could not be opened now: %s", exc)
            first = None
        if not self._supervisor.start_soon(self._get_stream, first) and first is not None:
            await first.conn.aclose()

    async def _get_stream(self, first: _Exchange | None = None) -> None:
        """Keep the GET stream open (when the server offers one) until the channel closes."""
        core = self.core
        with trio.CancelScope() as scope:
            self._get_scope = scope
            cursor, generation = self._cursor(), core.generation
            while not self.closed:
                if generation != core.generation:
                    cursor, generation = self._cursor(), core.generation
                try:
                    if first is not None:
                        ex, first = first, None
                        if ex.response is None:
                            ex = await self._head(ex)
                    else:
                        last = cursor.last_event_id or None
                        ex = await self._request(
                            b"GET", core.target, b"", fresh=True, last_event_id=last
                        )
                except _IO_FAILURES as exc:
                    delay = cursor.get_failed()
                    if delay is None:
                        log.warning("GET stream given up: %s", exc)
                        return
                    await trio.sleep(delay)
                    continue
                what = cursor.reopened(ex.status, ex.headers, session=core.session_id is not None)
                if what is not Reopen.READ:
                    await ex.conn.aclose()
                    if what is Reopen.STOP:
                        log.debug("no GET stream (HTTP %s)", ex.status)
                        return
                    if what is Reopen.EXPIRED and not await self._session_expired(generation):
                        return
                    continue
                await self._read_sse(ex, cursor, None)
                delay = cursor.get_ended()
                if delay is None:
                    return
                await trio.sleep(delay)

    # -- 2024-11-05 HTTP+SSE -------------------------------------------------------------------

    async def _fall_back(self, init_body: bytes) -> None:
        core = self.core
        try:
            ex = await self._request(b"GET", core.target, b"", fresh=True)
        except _IO_FAILURES as exc:
            raise HttpTransportError(f"2024-11-05 fallback: GET failed: {exc}") from exc
        cursor = self._cursor(expect_endpoint=True)
        early: list[bytes] = []
        try:
            core.fall_back(ex.status, ex.headers)
            with trio.move_on_after(self._io_timeout):
                while cursor.first is None and (chunk := await ex.next_chunk()) is not None:
                    early += cursor.receive_data(chunk)
            if cursor.first is None:
                raise RemoteProtocolError("no endpoint event on the 2024-11-05 SSE stream")
            core.endpoint(cursor.first)
        except RemoteProtocolError as exc:
            await ex.conn.aclose()
            raise HttpTransportError(exc.message) from exc
        self._supervisor.start_soon(self._legacy_stream, ex, cursor, early)
        await self._legacy_send(init_body)

    async def _legacy_stream(self, ex: _Exchange, cursor: StreamCursor, early: list[bytes]) -> None:
        try:
            for data in early:
                await self._deliver(data, self.core.init_key)
            while cursor.error is None and (chunk := await ex.next_chunk()) is not None:
                for data in cursor.receive_data(chunk):
                    await self._deliver(data, self.core.init_key)
            if cursor.error is not None:
                log.warning("bad 2024-11-05 SSE stream: %s", cursor.error)
        except _IO_FAILURES as exc:
            log.debug("the 2024-11-05 SSE stream broke: %r", exc)
        finally:
            await ex.conn.aclose()
            self.eof_reason = "the 2024-11-05 SSE stream ended"
            self._in_send.close()

    async def _legacy_send(self, data: bytes) -> None:
        with trio.move_on_after(self._io_timeout):
            try:
                ex, body = await self._post_message(data)
            except _TRANSPORT_FAILURES as exc:
                raise HttpTransportError(f"POST to the 2024-11-05 endpoint failed: {exc}") from exc
            if self.core.one_way(ex.status) is not Answer.ACCEPTED:
                log.warning(
                    "2024-11-05 server refused a message: %s", refusal_message(ex.status, body)
                )
            return
        raise HttpTransportError("POST to the 2024-11-05 endpoint timed out")

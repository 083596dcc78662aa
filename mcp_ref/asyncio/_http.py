"""A Streamable HTTP client on asyncio streams.

**Not standard library only**: HTTP/1.1 is parsed and produced by h11, a sans-IO
library (no I/O of its own; already a dependency of mcp-ref).  Sockets are asyncio's
(``asyncio.open_connection``, TLS from :mod:`ssl` for ``https``).  Every decision of
the HTTP client -- the headers, what a response head means, the SSE events, a new
session after 404 -- is the sans-IO :class:`mcp_ref._http_client.HttpClientCore` the
trio client also runs on.  So the stack is asyncio + three sans-IO layers: h11 for
HTTP, the HTTP client core, and the MCP core.

How it drives the core, step by step
------------------------------------
1. ``conn = Connection(CLIENT, newline_framing=False)``: HTTP delimits messages, so
   ``send`` returns one message without its newline and input goes in with
   ``receive_message``.
2. Every message the core produces is POSTed on its own HTTP request (a new TCP
   connection each time; no pooling), with ``Accept: application/json,
   text/event-stream``, ``Mcp-Session-Id`` once the server gave one, and
   ``MCP-Protocol-Version`` once initialization negotiated it
   (:meth:`~mcp_ref._http_client.HttpClientCore.headers`).
3. The answer: ``202`` (nothing to read); ``200`` with ``application/json`` (the whole
   body is one message: ``conn.receive_message(body)``); ``200`` with
   ``text/event-stream`` (each chunk into a
   :class:`~mcp_ref._http_client_streams.StreamCursor`, each message it gives into
   ``conn.receive_message``); :meth:`~mcp_ref._http_client.HttpClientCore.answer`
   says which.  After each message, drain the client core's events
   (``ClientSession._process_events``), as on any transport.  Server requests on the stream (``ping``, and those the declared
   handlers take) are answered by POSTing the core's response; a server's
   ``notifications/cancelled`` reaches us only on a request's stream, as this client
   opens no GET stream.
4. A request's POST runs in a task of its own while the caller waits for the answer
   or for the POST to end; the caller's cancellation (or the core's timeout) ends the
   POST and POSTs ``notifications/cancelled``.  Timeouts come from
   ``conn.next_deadline()`` and ``conn.handle_timeout(loop.time())`` as on stdio.
5. Closing sends ``DELETE`` with the session id.  :meth:`HttpClient.abort` instead
   resets every open connection and sends nothing more (no DELETE): the server sees
   its streams break off, as when a client crashes.
6. A 404 to a request that carried the session id means the server ended the session:
   the client replays, without a session id, the ``initialize`` request and
   ``notifications/initialized`` it sent first (the HTTP client core kept their bytes
   and checks the new session's version), then POSTs
   the message again (once per ended session, under a lock).  The core never learns
   of it: it stays in the operating state, with what the first handshake negotiated.

7. An SSE answer that ends before its response is resumed with a GET carrying
   ``Last-Event-ID`` after the server's ``retry``, while the stream makes progress
   (:meth:`~mcp_ref._http_client_streams.StreamCursor.post_ended`); one that cannot be
   resumed fails the call.

Not done: the optional GET stream.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final, cast

import h11

from .. import _http as rules
from .._client import DEFAULT_TIMEOUT, SessionClosed, as_timeout
from .._connection import Connection
from .._errors import McpError
from .._http_client import MAX_ERROR_BODY, Answer, HttpClientCore, Send, media_type
from .._http_client_streams import Reopen, StreamCursor
from .._http_messages import error_of
from .._inflight import RequestTimeout
from .._state import CLIENT
from ..events import Event, Notification
from ._client import ClientSession

__all__ = ["HttpClient", "open_http_client"]

log = logging.getLogger("mcp_ref.asyncio")

_CHUNK: Final = 65536
_MAX_BACKGROUND: Final = 64


class _SessionGone(McpError):
    """404 for a request that carried our session id: the server ended the session."""


class _Refused(McpError):
    """The server answered a POST with an HTTP error status: it did not take the message."""


class _Exchange:
    """One HTTP request/response on its own TCP connection, driven through h11."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.h11 = h11.Connection(h11.CLIENT)

    async def next_event(self) -> h11.Event:
        """The next h11 event of the response, reading as needed."""
        while True:
            event = self.h11.next_event()
            if event is h11.PAUSED:  # only after the response ended: nothing more to read
                return h11.ConnectionClosed()
            if event is not h11.NEED_DATA:
                return cast(h11.Event, event)
            self.h11.receive_data(await self.reader.read(_CHUNK))

    async def body(self) -> AsyncIterator[bytes]:
        """The response body, chunk by chunk."""
        while True:
            event = await self.next_event()
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                return


class HttpClient(ClientSession):
    """A :class:`~mcp_ref.asyncio.ClientSession` over Streamable HTTP.

    Attributes:
        url: the MCP endpoint.
        session_id: the ``Mcp-Session-Id`` the server assigned, or None.

    Source: 2025-06-18/basic/transports#streamable-http.
    """

    def __init__(
        self,
        url: str,
        connection: Connection,
        *,
        headers: Sequence[tuple[str, str]] = (),
        io_timeout: float | None = DEFAULT_TIMEOUT.seconds,
        **session_kw: Any,
    ) -> None:
        super().__init__(connection, **session_kw)
        self.http = HttpClientCore(url, headers=headers, legacy_fallback=False, get_stream=False)
        """The HTTP client core: its decisions and the session's state."""
        self.url = url
        self._io_timeout = io_timeout
        self._background: set[asyncio.Task[None]] = set()
        self._sockets: set[asyncio.StreamWriter] = set()
        """The open connections (bounded: one per POST, and POSTs are bounded)."""
        self._aborted = False
        self._reinit = asyncio.Lock()

    @property
    def session_id(self) -> str | None:
        """The ``Mcp-Session-Id`` the server assigned, or None."""
        return self.http.session_id

    @asynccontextmanager
    async def _http(
        self, method: bytes, body: bytes, *, last_event_id: str | None = None
    ) -> AsyncIterator[tuple[h11.Response, _Exchange]]:
        """Send one HTTP request; yield its response head and the exchange to read on."""
        if self._aborted:
            raise SessionClosed("the client aborted the session")
        http = self.http
        reader, writer = await asyncio.open_connection(http.host, http.port, ssl=http.tls)
        self._sockets.add(writer)
        try:
            ex = _Exchange(reader, writer)
            mcp = http.headers(method, body=body, last_event_id=last_event_id)
            headers = [*mcp, (b"connection", b"close")]
            target = http.target.encode()
            writer.write(ex.h11.send(h11.Request(method=method, target=target, headers=headers)))
            if body:
                writer.write(ex.h11.send(h11.Data(data=body)))
            writer.write(ex.h11.send(h11.EndOfMessage()))
            await writer.drain()
            while not isinstance(response := await ex.next_event(), h11.Response):
                if not isinstance(response, h11.InformationalResponse):
                    raise h11.RemoteProtocolError(f"expected a response, got {response!r}")
            yield response, ex
        finally:
            self._sockets.discard(writer)
            writer.close()

    async def _post(self, body: bytes) -> None:
        """POST one message and feed whatever comes back to the core (steps 2 and 3);
        after a 404, start a new session and POST it again, once (step 6)."""
        generation = self.http.generation
        try:
            await self._post_once(body)
            return
        except _SessionGone:
            await self._new_session(generation)
        try:
            await self._post_once(body)
        except _SessionGone:
            self.http.session_id = None  # nothing left to DELETE
            reason = "the server ended the session (HTTP 404), and the new one too"
            raise self._close(reason) from None

    async def _new_session(self, generation: int) -> None:
        """Step 6: the server ended our session (404).  Replay the handshake without a
        session id, once per ended session; its answers go to no one (the core stays in
        the operating state it reached the first time).

        Raises:
            SessionClosed: there is no handshake to replay, or the server refused it.
        """
        http = self.http
        async with self._reinit:
            # Spec: 2025-06-18/basic/transports#session-management.7
            # "it MUST start a new session by sending a new `InitializeRequest` without a
            # session ID attached"
            begin = http.begin_new_session(generation)
            if begin is None:
                return  # another POST did it
            if begin is False or http.init_body is None or http.initialized_body is None:
                raise self._close("the server ended the session (HTTP 404) before it began")
            try:
                for body in (http.init_body, http.initialized_body):
                    await self._post_once(body, feed=False)
            except (McpError, OSError, h11.ProtocolError) as exc:
                http.end_new_session(False)
                reason = f"the server ended the session (HTTP 404); a new one failed: {exc}"
                raise self._close(reason) from exc
            http.end_new_session(True)

    async def _post_once(self, body: bytes, *, feed: bool = True) -> None:
        """POST one message; feed the answer to the core (``feed``) or, for a replayed
        handshake, only check it.

        Raises:
            _SessionGone: 404 for our session id.
            _Refused: any other HTTP error.
        """
        http = self.http
        out = http.outgoing(body)
        async with self._http(b"POST", body) as (response, ex):
            status, headers = response.status_code, response.headers
            if out.send in (Send.INITIALIZE, Send.REQUEST):
                what = http.answer(status, headers, key=out.key)
            else:
                what = http.one_way(status)
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.5
            # "If the server accepts the input, the server MUST return HTTP status code 202
            # Accepted with no body."
            if what is Answer.ACCEPTED:
                return
            if what is Answer.EXPIRED:
                raise _SessionGone(
                    rules.HTTP_SERVER_ERROR, "the server ended the session (HTTP 404)"
                )
            if what not in (Answer.JSON, Answer.SSE):
                await self._fail(response, ex)
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.9
            # "The client MUST support both these cases."
            if what is Answer.JSON:
                data = b""
                async for chunk in ex.body():
                    data += chunk
                    if len(data) > self.connection.max_message_bytes:
                        raise McpError(rules.HTTP_SERVER_ERROR, "JSON answer too large")
                self._receive(data, out.key, feed)
            else:
                await self._read_stream(ex, out.key, feed)

    async def _read_stream(self, ex: _Exchange, key: object, feed: bool) -> None:
        """Step 3's SSE case: read the stream until the response to ``key`` came; when
        it ends first, resume it with a GET carrying ``Last-Event-ID`` as the cursor
        says (after the server's ``retry``), or fail (step 7).

        Raises:
            McpError: the stream cannot be resumed, or its resumption was refused.
        """
        cursor = StreamCursor(self.connection.max_message_bytes, self.http.default_retry)
        answered = await self._read_events(ex, cursor, key, feed)
        while (then := cursor.post_ended(answered)) is not None:
            if isinstance(then, str):
                raise McpError(rules.HTTP_SERVER_ERROR, then)
            await asyncio.sleep(then)
            last = cursor.last_event_id
            async with self._http(b"GET", b"", last_event_id=last) as (response, ex):
                session = self.http.session_id is not None
                what = cursor.reopened(response.status_code, response.headers, session=session)
                if what is not Reopen.READ:
                    why = f"resuming the stream failed: HTTP {response.status_code}"
                    raise McpError(rules.HTTP_SERVER_ERROR, why)
                answered = await self._read_events(ex, cursor, key, feed)

    async def _read_events(
        self, ex: _Exchange, cursor: StreamCursor, key: object, feed: bool
    ) -> bool:
        """Feed one SSE response's messages; True when the response to ``key`` came."""
        answered = False
        cursor.begin()
        async for chunk in ex.body():
            for data in cursor.receive_data(chunk):
                answered = self._receive(data, key, feed) or answered
            if cursor.error is not None:
                raise McpError(rules.HTTP_SERVER_ERROR, cursor.error)
        for data in cursor.receive_data(b""):
            answered = self._receive(data, key, feed) or answered
        return answered

    def _receive(self, data: bytes, key: object, feed: bool) -> bool:
        """One message of an answer: to the core (``feed``), or, for a replayed
        ``initialize``, checked by the HTTP client core (same version).  True when it
        is the response to ``key``."""
        if not feed:
            same = self.http.replayed(data)
            if same is False:
                raise McpError(
                    rules.HTTP_SERVER_ERROR, "the new session negotiated another version"
                )
            return same is not None
        answered = self.http.received(data, key)  # the initialize result names the version
        self.connection.receive_message(data)
        self._process_events()
        return answered

    async def _fail(self, response: h11.Response, ex: _Exchange) -> None:
        status = response.status_code
        if status < 300:
            ctype = media_type(response.headers).decode("latin-1")
            raise McpError(rules.HTTP_SERVER_ERROR, f"unexpected content type {ctype!r}")
        body = b""
        async for chunk in ex.body():
            body += chunk
            if len(body) > MAX_ERROR_BODY:
                break
        code, message = rules.HTTP_SERVER_ERROR, f"HTTP {status} {response.reason.decode()}"
        # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.7
        # "The HTTP response body MAY comprise a JSON-RPC error response that has no `id`."
        error = error_of(bytes(body))
        if error is not None:
            code, message = error[0], f"{message}: {error[1]}"
        raise _Refused(code, message, {"http_status": status})

    def _never_accepted(self, exc: BaseException) -> bool:
        # Spec: 2025-06-18/basic/utilities/cancellation#behavior-requirements.1
        # "Cancellation notifications MUST only reference requests that:"
        # (a refused POST is no request in progress: the core forgets it, nothing is sent)
        return isinstance(exc, _Refused | ConnectionRefusedError)

    async def _exchange(self, data: bytes, answer: asyncio.Future[Event]) -> Event:
        post = asyncio.create_task(self._post(data))
        try:
            await asyncio.wait((post, answer), return_when=asyncio.FIRST_COMPLETED)
            if answer.done():
                return answer.result()
            try:
                post.result()  # raises what ended the POST
            except (h11.ProtocolError, OSError) as exc:
                if self._never_accepted(exc):
                    raise
                # The server's answer broke off (it died, or the connection was cut):
                # the session is gone, as on every other transport.
                raise self._close(f"the server's HTTP answer broke off: {exc}") from exc
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.16
            # "Disconnection SHOULD NOT be interpreted as the client cancelling its request."
            raise McpError(
                rules.HTTP_SERVER_ERROR, "the server ended its answer without a response"
            )
        finally:
            if not post.done():
                post.cancel()  # the answer came, or we gave up: stop reading
                self._track(post)
            elif not post.cancelled():
                post.exception()  # seen: the answer (or _close) already told the caller

    async def _transmit(self, data: bytes) -> None:
        if data:
            self._check_open()
            async with asyncio.timeout(self._io_timeout):
                await self._post(data)

    def _transmit_soon(self, data: bytes) -> None:
        if not data or self.closed:
            return
        if len(self._background) >= _MAX_BACKGROUND:
            log.warning("too many messages being POSTed; dropping one")
            return
        self._track(asyncio.create_task(self._transmit(data)))

    def _track(self, task: asyncio.Task[None]) -> None:
        self._background.add(task)
        task.add_done_callback(self._untrack)

    def _untrack(self, task: asyncio.Task[None]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("POST in the background failed: %r", task.exception())

    def _drop_transport(self) -> None:
        self._aborted = True  # no new connection, no DELETE
        for writer in list(self._sockets):
            writer.transport.abort()  # reset, without flushing or a FIN handshake

    async def aclose(self) -> None:
        """End the session: fail pending requests, stop background POSTs, send DELETE
        (not after :meth:`abort`).

        Source: 2025-06-18/basic/transports#session-management.8.
        """
        self._close("the client was closed")
        await self._stop_handlers()
        tasks = list(self._background)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.session_id is None or self._aborted:
            return
        try:
            async with asyncio.timeout(self._io_timeout):
                # Spec: 2025-06-18/basic/transports#session-management.8
                # "Clients that no longer need a particular session (e.g., because the user is
                # leaving the client application) SHOULD send an HTTP DELETE to the MCP endpoint
                # with the `Mcp-Session-Id` header, to explicitly terminate the session."
                async with self._http(b"DELETE", b"") as (response, _):
                    log.debug("DELETE answered %d", response.status_code)
        except (OSError, h11.ProtocolError) as exc:  # TimeoutError is an OSError
            log.info("DELETE of the session failed: %r", exc)


@asynccontextmanager
async def open_http_client(
    url: str,
    *,
    timeout: float | RequestTimeout | None = DEFAULT_TIMEOUT,
    headers: Sequence[tuple[str, str]] = (),
    on_notification: Callable[[Notification], object] | None = None,
    **options: Any,
) -> AsyncIterator[HttpClient]:
    """Yield an initialized Streamable HTTP client for the MCP endpoint ``url``.

    Usage::

        async with open_http_client("http://127.0.0.1:8000/mcp") as client:
            result = await client.call_tool("echo", {"text": "hi"})

    Args:
        url: ``http://`` or ``https://`` URL of the MCP endpoint.
        timeout: default per-request timeout (seconds or a RequestTimeout; default
            :data:`mcp_ref._client.DEFAULT_TIMEOUT`); its seconds also bound POSTs of
            notifications and the closing DELETE (None: none).
        headers: extra request headers, e.g. ``[("authorization", "Bearer ...")]``.
        on_notification: see :class:`~mcp_ref.asyncio.ClientSession`.
        **options: the client core's (:class:`mcp_ref._client.ClientCore`):
            ``client_info``, ``protocol_version`` (the server may answer another
            supported one, which later POSTs carry in ``MCP-Protocol-Version``),
            ``sampling_handler``, ``elicitation_handler``, ``roots``, the rate limits.

    Raises:
        ValueError: not an http(s) URL, an unsupported ``protocol_version``, or a root
            that is not an absolute ``file://`` URI.
        OSError: the server could not be reached.
        h11.RemoteProtocolError: the server's HTTP is malformed (while connecting).
        McpError: an HTTP error status (its JSON-RPC error when the body has one), or
            an error response; SessionClosed: as for any ClientSession, and when an
            answer breaks off mid-call (the server died or the connection was cut).

    Source: 2025-06-18/basic/transports#streamable-http.
    """
    default = as_timeout(timeout)
    client = HttpClient(
        url,
        Connection(CLIENT, newline_framing=False, default_timeout=default),
        headers=headers,
        io_timeout=None if default is None else default.seconds,
        on_notification=on_notification,
        **options,
    )
    clock = asyncio.create_task(client._clock())
    try:
        await client.initialize()
        yield client
    finally:
        clock.cancel()
        await asyncio.gather(clock, return_exceptions=True)
        await client.aclose()

"""A Streamable HTTP client on asyncio streams.

**Not standard library only**: HTTP/1.1 is parsed and produced by h11, a sans-IO
library (no I/O of its own; already a dependency of mcp-ref).  Sockets are asyncio's
(``asyncio.open_connection``, TLS from :mod:`ssl` for ``https``).  Every decision of
the HTTP client -- the headers, what a response head means, how to read a body, when
to resume a stream, a new session after 404 -- is the sans-IO HTTP client core the trio
client also runs on (:mod:`mcp_ref._http_client` and its flows,
:mod:`mcp_ref._http_client_flows`).  So the stack is asyncio + three sans-IO layers: h11
for HTTP, the HTTP client core, and the MCP core.

How it drives the cores, step by step
-------------------------------------
1. ``conn = Connection(CLIENT, newline_framing=False)``: HTTP delimits messages, so
   ``send`` returns one message without its newline and input goes in with
   ``receive_message``.
2. Every message the core produces is POSTed on its own HTTP request (a new TCP
   connection each time; no pooling), as a flow of the HTTP client core: a request's
   :class:`~mcp_ref._http_client_flows.RequestFlow` (a JSON body, or an SSE stream
   resumed with ``Last-Event-ID`` when it ends early), a notification's or response's
   :class:`~mcp_ref._http_client_flows.MessageFlow`.  ``_run`` is the one loop: make
   the request the flow says, give it the head and each body chunk, pass the messages
   it gives to ``conn.receive_message`` and drain the client core's events
   (``ClientSession._process_events``), wait when it says so.  A flow that gives up
   fails the call with an McpError (an HTTP error's status in its ``data``).
3. Server requests on a stream (``ping``, and those the declared handlers take) are
   answered by POSTing the core's response; a server's ``notifications/cancelled``
   reaches us only on a request's stream, as this client opens no GET stream.
4. A request's POST runs in a task of its own while the caller waits for the answer
   or for the POST to end; the caller's cancellation (or the core's timeout) ends the
   POST and POSTs ``notifications/cancelled``.  Timeouts come from
   ``conn.next_deadline()`` and ``conn.handle_timeout(loop.time())`` as on stdio.
5. Closing sends ``DELETE`` with the session id.  :meth:`HttpClient.abort` instead
   resets every open connection and sends nothing more (no DELETE): the server sees
   its streams break off, as when a client crashes.
6. A 404 to our session id: ``_new_session`` replays the handshake sent first, once per
   ended session, under a lock (:class:`~mcp_ref._http_client_flows.ReplayFlow`), and
   the flow POSTs the message again.  The MCP core never learns of it: it stays in the
   operating state, with what the first handshake negotiated.  A 404 once more ends
   the session.

7. Signing in (``auth=``, :class:`~mcp_ref._http_client_auth.OAuthClientOptions`): a
   401, or a 403 ``insufficient_scope``, is the flow's
   :class:`~mcp_ref._http_client_steps.Authorize` step; ``_sign_in`` refreshes the token
   or runs :class:`~mcp_ref._oauth_flow.SignIn` (its requests on connections of their
   own, redirects not followed, bodies bounded), under a lock, and the flow POSTs the
   message again with the bearer token.  An expired token is refreshed before a POST.

Not done: the optional GET stream.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final, cast

import h11

from .._client import DEFAULT_TIMEOUT, SessionClosed, as_timeout
from .._connection import Connection
from .._errors import McpError
from .._http import HTTP_SERVER_ERROR
from .._http_client import HttpClientCore, Send
from .._http_client_auth import ClientAuth, OAuthClientOptions, SignInRunner
from .._http_client_flows import MessageFlow, ReplayFlow, RequestFlow
from .._http_client_steps import (
    Authorize,
    Done,
    Flow,
    HttpRequest,
    NewSession,
    Read,
    Step,
    Wait,
    delete_request,
)
from .._inflight import RequestTimeout
from .._oauth_http import HttpRequest as OAuthRequest
from .._oauth_http import HttpResponse as OAuthResponse
from .._oauth_http import read_answer
from .._state import CLIENT
from ..events import Event, Notification
from ._client import ClientSession

__all__ = ["HttpClient", "open_http_client"]

log = logging.getLogger("mcp_ref.asyncio")

_EXCHANGE_FAILURES = (TimeoutError, OSError, h11.ProtocolError)
"""What a sign-in or refresh exchange raises when it fails (or takes too long)."""

_CHUNK: Final = 65536
_MAX_BACKGROUND: Final = 64


class _Refused(McpError):
    """The server answered a POST with an HTTP error status: it did not take the message."""


class _Exchange:
    """One HTTP request/response on its own TCP connection, driven through h11."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.h11 = h11.Connection(h11.CLIENT)
        self.complete = False
        """True once the whole response was read."""

    async def next_event(self) -> h11.Event:
        """The next h11 event of the response, reading as needed."""
        while True:
            event = self.h11.next_event()
            if event is h11.PAUSED:  # only after the response ended: nothing more to read
                return h11.ConnectionClosed()
            if event is not h11.NEED_DATA:
                return cast(h11.Event, event)
            self.h11.receive_data(await self.reader.read(_CHUNK))

    async def send(
        self, method: str | bytes, target: str | bytes, headers: Any, body: bytes
    ) -> h11.Response:
        """Send one request (``body`` may be empty) and read to its response's head,
        past any 1xx.

        Raises:
            OSError: the connection failed.
            h11.ProtocolError: the peer answered something other than an HTTP response.
        """
        head = h11.Request(method=method, target=target, headers=headers)
        self.writer.write(self.h11.send(head))
        if body:
            self.writer.write(self.h11.send(h11.Data(data=body)))
        self.writer.write(self.h11.send(h11.EndOfMessage()))
        await self.writer.drain()
        while not isinstance(response := await self.next_event(), h11.Response):
            if not isinstance(response, h11.InformationalResponse):
                raise h11.RemoteProtocolError(f"expected a response, got {response!r}")
        return response

    async def body(self) -> AsyncIterator[bytes]:
        """The response body, chunk by chunk."""
        while True:
            event = await self.next_event()
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                self.complete = isinstance(event, h11.EndOfMessage)
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
        auth: OAuthClientOptions | None = None,
        **session_kw: Any,
    ) -> None:
        super().__init__(connection, **session_kw)
        self.http = HttpClientCore(
            url,
            headers=headers,
            legacy_fallback=False,
            get_stream=False,
            auth=None if auth is None else ClientAuth(url, auth),
        )
        """The HTTP client core: its decisions and the session's state."""
        self.url = url
        self._io_timeout = io_timeout
        self._background: set[asyncio.Task[None]] = set()
        self._sockets: set[asyncio.StreamWriter] = set()
        """The open connections (bounded: one per POST, and POSTs are bounded)."""
        self._aborted = False
        self._reinit = asyncio.Lock()
        self._auth_lock = asyncio.Lock()
        self.clock: Callable[[], float] = time.time
        """Wall-clock seconds, for token expiry (tests may set another)."""

    @property
    def session_id(self) -> str | None:
        """The ``Mcp-Session-Id`` the server assigned, or None."""
        return self.http.session_id

    @asynccontextmanager
    async def _http(self, request: HttpRequest) -> AsyncIterator[tuple[h11.Response, _Exchange]]:
        """Make one HTTP request; yield its response head and the exchange to read on."""
        if self._aborted:
            raise SessionClosed("the client aborted the session")
        http = self.http
        reader, writer = await asyncio.open_connection(http.host, http.port, ssl=http.tls)
        self._sockets.add(writer)
        try:
            ex = _Exchange(reader, writer)
            headers = [*request.headers, (b"connection", b"close")]
            response = await ex.send(request.method, request.target, headers, request.body)
            yield response, ex
        finally:
            self._sockets.discard(writer)
            writer.close()

    async def _post(self, data: bytes) -> None:
        """Steps 2 and 6: POST one message and take its answer, as the core's flow says.

        Raises:
            McpError: the server refused it (its HTTP status in ``data``), or the
                answer could not be read.
            SessionClosed: the session ended, and a new one too (404 twice).
        """
        http = self.http
        await self._keep_token_fresh()
        out = http.outgoing(data)
        flow: Flow = MessageFlow(http, data)
        if out.send in (Send.INITIALIZE, Send.REQUEST):
            flow = RequestFlow(http, out, data, max_bytes=self.connection.max_message_bytes)
        done = await self._run(flow)
        if done.session_lost:
            http.session_id = None  # nothing left to DELETE
            reason = "the server ended the session (HTTP 404), and the new one too"
            raise self._close(reason)
        if done.error is not None and done.http_status is not None:
            # a modern error (-32022...) keeps its data: the era probe and a retry read it
            error = http.modern.take_error(out.key)
            more = (error or {}).get("data")
            status = {"http_status": done.http_status}
            raise _Refused(
                done.code, done.error, {**status, **more} if isinstance(more, dict) else status
            )
        if done.error is not None:
            raise McpError(done.code, done.error)

    async def _run(self, flow: Flow) -> Done:
        """Do what ``flow`` says until it is done: the one loop of this client."""
        step: Step = flow.start()
        while not isinstance(step, Done):
            if isinstance(step, HttpRequest):
                async with self._http(step) as (response, ex):
                    step = flow.head(response.status_code, response.headers)
                    if isinstance(step, Read):
                        async for chunk in ex.body():
                            self._receive(flow.receive_data(chunk))
                            if flow.stop:
                                break
                        else:
                            self._receive(flow.receive_data(b""))
                        step = flow.ended(ex.complete)
            elif isinstance(step, Wait):
                await asyncio.sleep(step.seconds)
                step = flow.waited()
            elif isinstance(step, Authorize):
                step = flow.signed_in(await self._sign_in(step))
            else:  # a NewSession (a Read comes only after a head, above)
                assert isinstance(step, NewSession)
                await self._new_session(step.generation)
                step = flow.new_session(True)
        return step

    async def _new_session(self, generation: int) -> None:
        """Step 6: the server ended our session (404).  Replay the handshake without a
        session id, once per ended session (:class:`~mcp_ref._http_client_flows.ReplayFlow`).

        Raises:
            SessionClosed: there is no handshake to replay, or the server refused it.
        """
        http = self.http
        async with self._reinit:
            begin = http.begin_new_session(generation)
            if begin is None:
                return  # another POST did it
            if begin is False:
                raise self._close("the server ended the session (HTTP 404) before it began")
            try:
                done = await self._run(ReplayFlow(http))
            except (OSError, h11.ProtocolError) as exc:
                done = Done(error=str(exc) or repr(exc))
            if http.end_new_session(done.error is None) is not None:
                reason = f"the server ended the session (HTTP 404); a new one failed: {done.error}"
                raise self._close(reason)

    def _tokens(self) -> SignInRunner | None:
        """The token work (:class:`~mcp_ref._http_client_auth.SignInRunner`) on this
        loop's lock, exchange and clock; None without ``auth=``."""
        auth = self.http.auth
        if auth is None:
            return None
        return SignInRunner(
            auth, self._auth_lock, self._oauth_exchange, self.clock, _EXCHANGE_FAILURES
        )

    async def _keep_token_fresh(self) -> None:
        """Step 7: before a POST, refresh an expired token (wall clock) that can be."""
        if (tokens := self._tokens()) is not None:
            await tokens.keep_fresh()

    async def _sign_in(self, step: Authorize) -> str | None:
        """Step 7: sign in after the refusal ``step``, one POST at a time.  None when signed
        in, else why not."""
        tokens = self._tokens()
        assert tokens is not None
        return await tokens.after_refusal(step.status, step.www_authenticate, step.generation)

    async def _oauth_exchange(self, request: OAuthRequest) -> OAuthResponse:
        """One request of the sign-in flow on a connection of its own, sent as it is
        (redirects not followed), its body cut at ``request.max_body_bytes + 1``;
        bounded by ``io_timeout``.

        Raises:
            OSError, h11.ProtocolError: the exchange failed.
            asyncio.TimeoutError: it took longer than ``io_timeout`` seconds.
        """
        wire = request.on_the_wire()

        async def exchange() -> OAuthResponse:
            context = ssl.create_default_context() if wire.tls else None
            reader, writer = await asyncio.open_connection(wire.host, wire.port, ssl=context)
            try:
                ex = _Exchange(reader, writer)
                response = await ex.send(request.method, wire.target, wire.headers, request.body)
                body, size = [], 0
                async for chunk in ex.body():
                    body.append(chunk)
                    size += len(chunk)
                    if size > request.max_body_bytes:
                        break  # enough to refuse it
            finally:
                writer.close()
            return read_answer(
                response.status_code, list(response.headers), body, request.max_body_bytes
            )

        return await asyncio.wait_for(exchange(), self._io_timeout)

    def _receive(self, messages: list[bytes]) -> None:
        """Messages of an answer: to the core, then its events drained."""
        for data in messages:
            self.connection.receive_message(data)
            self._process_events()

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
            raise McpError(HTTP_SERVER_ERROR, "the server ended its answer without a response")
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
                async with self._http(delete_request(self.http)) as (response, _):
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
    auth: OAuthClientOptions | None = None,
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
        auth: sign in when the server answers 401 (or 403 ``insufficient_scope``):
            :class:`~mcp_ref.client.OAuthClientOptions` (None: such an answer fails
            the call with its HTTP status).
        **options: the client core's (:class:`mcp_ref._client.ClientCore`):
            ``client_info``, ``era`` (``"legacy"``, ``"modern"`` or ``"auto"``:
            :data:`mcp_ref._client.EraArg`), ``protocol_version`` (the server may answer another
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
        auth=auth,
        on_notification=on_notification,
        **options,
    )
    clock = asyncio.create_task(client._clock())
    try:
        await client.open()
        yield client
    finally:
        clock.cancel()
        await asyncio.gather(clock, return_exceptions=True)
        await client.aclose()

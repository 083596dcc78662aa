"""The Streamable HTTP client (with the 2024-11-05 HTTP+SSE fallback) on trio and h11.

Theory of operation
-------------------
:class:`HttpClientChannel` is a ``"messages"`` :class:`~mcp_ref.trio.MessageChannel`:
the session hands it one message at a time, and it turns each into one HTTP POST
(2025-06-18/basic/transports#sending-messages-to-the-server.1).  Everything the server
sends -- JSON answers, events of POST streams, events of the GET stream -- goes into one
bounded queue that ``receive`` reads.  The session never learns HTTP exists.

``send`` returns quickly so the session's send lock is never held across a long
exchange:

* a *request* is written (connect, headers, body) and ``send`` returns; a background
  task reads the answer: a JSON body, or an SSE stream read until the response to that
  request arrived.  When the stream ends first, the task waits the ``retry`` time the
  server gave (else ``default_retry``) and resumes with a GET carrying
  ``Last-Event-ID`` (#resumability-and-redelivery.3), as often as it makes progress.
  A request that cannot be answered any more (HTTP error, stream lost without an event
  id, connection failure) gets the core's error response
  (:func:`~mcp_ref._http_client.failure`), so the caller is not left waiting for its
  timeout;
* a *notification* or *response* is POSTed and its ``202`` awaited before ``send``
  returns, so they reach the server in order;
* after ``notifications/initialized`` a background task opens the GET stream and keeps
  it open, reconnecting (with ``Last-Event-ID``) when it ends, as the core's
  :class:`~mcp_ref._http_client_streams.StreamCursor` says; an answer that is no SSE
  stream (other than 404 and 409) means the server offers none, and the task stops.

The channel never reads a message itself: the HTTP client core
(:class:`~mcp_ref._http_client.HttpClientCore`, in ``self.core``) reads each with the
connection's own reader -- kind, id and method; the ``protocolVersion`` of the
``initialize`` result, which every later request carries in ``MCP-Protocol-Version``
(#protocol-version-header.1); the ``requestId`` of an outgoing
``notifications/cancelled``, to stop reading that request's stream -- and the channel
does what it decides.

Sessions: the ``Mcp-Session-Id`` of the ``initialize`` answer goes on every later
request (#session-management.4).  A 404 to a request that carried it means the session
is gone (#session-management.7): the channel starts a new one by replaying the
``initialize`` request and ``notifications/initialized`` it sent at the start (their
answers are not passed on), then retries the message once.  The session layer does not
learn it: its core stays in the operating state, with the capabilities negotiated the
first time (a server answering the replay with another protocol version ends the
channel).  Requests in flight in the old session are answered with errors.  Closing
sends DELETE (#session-management.8).

Fallback (2025-06-18/basic/transports#backwards-compatibility): when the POST of
``initialize`` gets a 4xx, the channel GETs the same URL, expects an SSE stream whose
first event is ``endpoint`` (:func:`~mcp_ref._http.resolve_endpoint`), POSTs every
message there, and reads every answer from that stream.

Connections: a small pool of keep-alive connections for POSTs (idle ones are dropped
after ``pool_idle_seconds``; a request that meets a connection the server had closed is
sent again on a new one, only when nothing was received); SSE streams use their own
connections.  ``https`` URLs use TLS with the default trust store.

Modules: the decisions (headers, what a head means, SSE cursors and their replay, a new
session, the fallback) are the sans-IO :mod:`mcp_ref._http_client` and
:mod:`mcp_ref._http_client_streams`; here are their loops: :mod:`.client_connections`
(the pool, one exchange), :mod:`.client_answers` (answers, streams, the GET stream, a
new session, 2024-11-05) and this one (the channel and its entry point).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import trio

from ..._http_client import MAX_ERROR_BODY, Answer, Outgoing, Send, refusal_message
from ...events import RequestId
from .client_answers import ClientAnswers
from .client_connections import _IO_FAILURES, _TRANSPORT_FAILURES, HttpTransportError
from .common import Supervisor

__all__ = ["HttpClientChannel", "HttpTransportError", "open_http_channel"]

log = logging.getLogger("mcp_ref.trio.http")


class HttpClientChannel(ClientAnswers):
    """A :class:`~mcp_ref.trio.MessageChannel` speaking Streamable HTTP to one URL.

    Make it with :func:`open_http_channel` (or use
    :func:`mcp_ref.client.open_http_client`), which runs its background tasks.  The
    constructor, ``(url, supervisor, **options)`` with the options of
    ``open_http_channel``, is :class:`~.client_connections.ClientConnections`'s.

    Attributes:
        url: the MCP endpoint.
        session_id: the ``Mcp-Session-Id`` the server assigned, or None.
        protocol_version: the negotiated version (None before ``initialize``).
        mode: ``"streamable"``, or ``"legacy"`` after falling back to 2024-11-05.
        reinitializations: how many times a new session was started after a 404.

    Source: 2025-06-18/basic/transports#streamable-http.
    """

    framing: Literal["lines", "messages"] = "messages"

    async def receive(self) -> bytes:
        """The next message from the server; ``b""`` once the channel is closed."""
        try:
            return await self._in_receive.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            return b""

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """POST one message (see the module docstring for what is awaited).

        Raises:
            trio.ClosedResourceError: the channel is closed.
            HttpTransportError: ``initialize`` could not be sent or was refused.
        """
        if self.closed:
            raise trio.ClosedResourceError("the HTTP channel is closed")
        out = self.core.outgoing(data)
        if out.send is Send.LEGACY:
            await self._legacy_send(data)
        elif out.send is Send.INITIALIZE:
            await self._send_initialize(data, out)
        elif out.send is Send.REQUEST:
            await self._send_request(data, out)
        else:
            if out.cancels is not None and (scope := self._readers.get(out.cancels)):
                scope.cancel()  # stop reading the cancelled request's answer
            if await self._send_one_way(data) and out.opens_get:
                await self._open_get_stream()

    async def aclose(self) -> None:
        """DELETE the session (when there is one), close connections and end input.
        Idempotent."""
        if self.closed:
            return
        self.closed = True
        if self._get_scope is not None:
            self._get_scope.cancel()
        for scope in self._readers.values():
            scope.cancel()
        if self.session_id is not None and self.mode == "streamable":
            # Spec: 2025-06-18/basic/transports#session-management.8
            # "Clients that no longer need a particular session (e.g., because the user is leaving
            # the client application) SHOULD send an HTTP DELETE to the MCP endpoint with the
            # `Mcp-Session-Id` header, to explicitly terminate the session."
            with trio.move_on_after(min(self._io_timeout, 2.0)):
                try:
                    ex = await self._request(b"DELETE", self.core.target, b"", fresh=False)
                    await ex.read_body(MAX_ERROR_BODY)
                    log.debug("DELETE answered %s", ex.status)
                except _TRANSPORT_FAILURES:
                    pass
        for _, conn in self._pool:
            await conn.aclose()
        self._pool.clear()
        self._in_send.close()
        self._supervisor.close()

    # -- sending ---------------------------------------------------------------------------

    async def _send_initialize(self, data: bytes, out: Outgoing) -> None:
        core = self.core
        try:
            ex = await self._request(b"POST", core.post_target, data, fresh=False)
        except _IO_FAILURES as exc:
            raise HttpTransportError(f"cannot reach {self.url}: {exc}") from exc
        what = core.answer(ex.status, ex.headers, key=out.key)
        if what is Answer.FALLBACK:
            await ex.conn.aclose()
            log.info("POST initialize got %s: trying the 2024-11-05 HTTP+SSE transport", ex.status)
            await self._fall_back(data)
        elif what is Answer.UNAUTHORIZED:
            body = await ex.read_body(MAX_ERROR_BODY)
            await ex.conn.aclose()
            raise HttpTransportError(
                "the server wants authorization, which mcp-ref does not implement yet: "
                + refusal_message(ex.status, body)
            )
        else:
            self._supervisor.start_soon(self._read_answer, ex, out, core.generation, False)

    async def _send_request(self, data: bytes, out: Outgoing) -> None:
        try:
            # Never wait here: the session holds its send lock while we run, and a wait
            # could keep back the answer a pending request needs (an elicitation).
            self._posts.acquire_nowait()
        except trio.WouldBlock:
            if out.id is not None:
                why = f"more than {self._max_posts} requests awaiting answers"
                self._supervisor.start_soon(self._feed_error, out.id, why)
            return
        try:
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.1
            # "Every JSON-RPC message sent from the client MUST be a new HTTP POST request to the
            # MCP endpoint."
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.2
            # "The client MUST use HTTP POST to send JSON-RPC messages to the MCP endpoint."
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.4
            # "The body of the POST request MUST be a single JSON-RPC request, notification, or
            # response."
            # One POST per message: the session hands us exactly one message per send.
            ex = await self._start(b"POST", self.core.post_target, data, fresh=False)
        except _IO_FAILURES as exc:
            self._posts.release()
            if out.id is not None:
                self._supervisor.start_soon(self._feed_error, out.id, f"POST failed: {exc}")
            return
        if not self._supervisor.start_soon(self._read_answer, ex, out, self.core.generation, True):
            self._posts.release()
            await ex.conn.aclose()

    async def _send_one_way(self, data: bytes) -> bool:
        """POST a notification or response and wait for its answer (bounded); True
        when the server took it."""
        for attempt in range(2):
            generation = self.core.generation
            with trio.move_on_after(self._io_timeout):
                try:
                    ex, body = await self._post_message(data)
                except _TRANSPORT_FAILURES as exc:
                    log.warning("POST of a message failed: %s", exc)
                    return False
                what = self.core.one_way(ex.status, retried=attempt > 0)
                if what is Answer.EXPIRED and await self._session_expired(generation):
                    continue
                if what is not Answer.ACCEPTED:
                    log.warning("server refused a message: %s", refusal_message(ex.status, body))
                return what is Answer.ACCEPTED
            log.warning("POST of a message took longer than %s s: given up", self._io_timeout)
            return False
        return False


@asynccontextmanager
async def open_http_channel(url: str, **channel_kw: Any) -> AsyncIterator[HttpClientChannel]:
    """Open a :class:`HttpClientChannel` to ``url`` and run its background tasks.

    Args:
        url: the MCP endpoint, e.g. ``"http://127.0.0.1:8000/mcp"``.
        **channel_kw: ``headers`` (extra request headers, e.g. authorization), ``limits``
            (:class:`~mcp_ref._http.HttpLimits`), ``legacy_fallback`` (default True),
            ``get_stream`` (open the GET stream; default True), ``max_concurrent_posts``
            (64; a request past it is answered at once with an error), ``connect_timeout`` (10 s), ``io_timeout`` (20 s per one-way POST),
            ``default_retry`` (1 s when the server gave no ``retry``),
            ``pool_idle_seconds`` (4 s), ``ssl_context``.

    Yields:
        The channel; give it to :func:`~mcp_ref.trio.open_session` or
        :func:`mcp_ref.client.open_client`.  On exit it is closed (DELETE) and its tasks
        end.

    Raises:
        ValueError: not an http(s) URL.
    """
    supervisor = Supervisor()
    channel = HttpClientChannel(url, supervisor, **channel_kw)
    body_error: BaseException | None = None
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        try:
            yield channel
        except BaseException as exc:
            if isinstance(exc, GeneratorExit):
                raise
            body_error = exc  # re-raised below, not wrapped in an exception group
        finally:
            with trio.CancelScope(shield=True):
                await channel.aclose()
            nursery.cancel_scope.cancel()
    if body_error is not None:
        raise body_error

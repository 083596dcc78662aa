"""The Streamable HTTP client's channel: what the session sees, and one POST per message.

Theory of operation
-------------------
:class:`HttpClientChannel` joins the parts of the client (one mixin class per module:
connections, sessions, answers, GET stream, 2024-11-05 fallback; see
:mod:`.client_connections`) and adds the :class:`~mcp_ref.trio.MessageChannel`
side: ``receive``, ``send`` and ``aclose``.

``send`` turns one message into one POST
(2025-06-18/basic/transports#sending-messages-to-the-server.1) and returns quickly, so
the session's send lock is never held across a long exchange: a request is written and
its answer read by a background task (at most ``max_concurrent_posts`` at once; one
past it is answered at once with an error, never waits); a notification or response
waits for its ``202``, so they reach the server in order.  The POST of ``initialize``
may switch to the 2024-11-05 fallback; ``notifications/initialized`` opens the GET
stream; ``notifications/cancelled`` stops reading the cancelled request's answer.
``aclose`` sends DELETE (#session-management.8).
"""

from __future__ import annotations

import logging
from typing import Literal

import trio

from ..._http import MessageKind
from ..._http_messages import message_info
from ...events import RequestId
from .client_connections import (
    _IO_FAILURES,
    _MAX_ERROR_BODY,
    _TRANSPORT_FAILURES,
    HttpTransportError,
    _error_message,
)
from .client_get import ClientGetStream
from .client_legacy import ClientLegacy
from .common import request_key

__all__ = ["HttpClientChannel"]

log = logging.getLogger("mcp_ref.trio.http")


class HttpClientChannel(ClientGetStream, ClientLegacy):
    """A :class:`~mcp_ref.trio.MessageChannel` speaking Streamable HTTP to one URL.

    Make it with :func:`~.client.open_http_channel` (or use
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

    # -- the MessageChannel side ---------------------------------------------------------

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
        info = message_info(data)
        if self.mode == "legacy":
            await self._legacy_send(data)
            return
        if info is not None and info.kind is MessageKind.REQUEST:
            if info.method == "initialize":
                await self._send_initialize(data, info.id)
            else:
                await self._send_request(data, info.id)
            return
        if info is not None and info.method == "notifications/cancelled":
            self._stop_reader_for(data)
        ok = await self._send_one_way(data)
        if info is not None and info.method == "notifications/initialized":
            self._initialized_body = data
            if ok and self._want_get and self.mode == "streamable":
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
                    ex = await self._request(b"DELETE", self._target, b"", fresh=False)
                    await ex.read_body(_MAX_ERROR_BODY)
                    log.debug("DELETE answered %s", ex.status)
                except _TRANSPORT_FAILURES:
                    pass
        for _, conn in self._pool:
            await conn.aclose()
        self._pool.clear()
        self._in_send.close()
        self._supervisor.close()

    # -- sending ---------------------------------------------------------------------------

    async def _send_initialize(self, data: bytes, rid: RequestId | None) -> None:
        self._init_body = data
        self._init_key = request_key(rid)
        try:
            ex = await self._request(b"POST", self._post_target, data, fresh=False)
        except _IO_FAILURES as exc:
            raise HttpTransportError(f"cannot reach {self.url}: {exc}") from exc
        if 400 <= ex.status < 500 and ex.status not in (401, 403) and self._legacy_fallback:
            # 2025-06-18/basic/transports, "Backwards compatibility": a 4xx to the POST
            # of initialize means an old server; try its GET stream.
            await ex.conn.aclose()
            log.info("POST initialize got %s: trying the 2024-11-05 HTTP+SSE transport", ex.status)
            await self._fall_back(data)
            return
        if ex.status in (401, 403):
            body = await ex.read_body(_MAX_ERROR_BODY)
            await ex.conn.aclose()
            raise HttpTransportError(
                f"the server wants authorization (HTTP {ex.status}), which mcp-ref does not "
                f"implement yet: {_error_message(body)}"
            )
        self._note_session(ex)
        self._supervisor.start_soon(self._read_answer, ex, rid, self._generation, False)

    async def _send_request(self, data: bytes, rid: RequestId | None) -> None:
        try:
            # Never wait here: the session holds its send lock while we run, and a wait
            # could keep back the answer a pending request needs (an elicitation).
            self._posts.acquire_nowait()
        except trio.WouldBlock:
            if rid is not None:
                self._supervisor.start_soon(
                    self._feed_error,
                    rid,
                    f"more than {self._max_posts} requests awaiting answers",
                )
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
            ex = await self._start(b"POST", self._post_target, data, fresh=False)
        except _IO_FAILURES as exc:
            self._posts.release()
            if rid is not None:
                self._supervisor.start_soon(self._feed_error, rid, f"POST failed: {exc}")
            return
        if not self._supervisor.start_soon(self._read_answer, ex, rid, self._generation, True):
            self._posts.release()
            await ex.conn.aclose()

    async def _send_one_way(self, data: bytes) -> bool:
        """POST a notification or response and wait for its answer (bounded)."""
        for attempt in range(2):
            generation = self._generation
            with trio.move_on_after(self._io_timeout):
                try:
                    ex, body = await self._post_message(data)
                except _TRANSPORT_FAILURES as exc:
                    log.warning("POST of a message failed: %s", exc)
                    return False
                if ex.status == 404 and self.session_id is not None and attempt == 0:
                    if await self._session_expired(generation):
                        continue
                    return False
                if ex.status >= 300:
                    log.warning("server refused a message with HTTP %s: %r", ex.status, body[:200])
                    return False
                return True
            log.warning("POST of a message took longer than %s s: given up", self._io_timeout)
            return False
        return False

    def _stop_reader_for(self, data: bytes) -> None:
        info = message_info(data)
        if info is None or info.cancels is None:
            return
        scope = self._readers.get(request_key(info.cancels))
        if scope is not None:
            scope.cancel()

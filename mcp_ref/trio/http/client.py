"""The Streamable HTTP client (with the 2024-11-05 HTTP+SSE fallback) on trio and h11.

Theory of operation
-------------------
:class:`HttpClientChannel` is a ``"messages"`` :class:`~mcp_ref.trio.MessageChannel`
that turns each message the session hands it into one HTTP POST; everything the server
sends goes into one bounded queue that ``receive`` reads.  It reads no message and
decides nothing: the core (:class:`~mcp_ref._http_client.HttpClientCore`, in
``self.core``) says how to POST each one, and each job is a flow of
:mod:`mcp_ref._http_client_flows`, run by ``_run``, the one loop of this module
(:mod:`mcp_ref._http_client_steps` shows it).

``send`` returns quickly, so the session's send lock is never held across a long
exchange: a request's flow runs in a background task (an outgoing
``notifications/cancelled`` stops it); a notification or response is POSTed and its
``202`` awaited, so they reach the server in order.  Connections:
:mod:`.client_connections`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any, Literal

import trio

from ... import _http_client_steps as steps
from ..._http_client import Send
from ..._http_client_flows import GetStreamFlow, LegacyFlow, MessageFlow, ReplayFlow, RequestFlow
from ...events import RequestId
from .._channel import open_running, receive_or_eof
from .client_connections import _IO_FAILURES, ClientConnections, HttpTransportError, _Exchange
from .common import Supervisor

__all__ = ["HttpClientChannel", "HttpTransportError", "open_http_channel"]

log = logging.getLogger("mcp_ref.trio.http")


class HttpClientChannel(ClientConnections):
    """A :class:`~mcp_ref.trio.MessageChannel` speaking Streamable HTTP to one URL.

    Make it with :func:`open_http_channel` (or use
    :func:`mcp_ref.client.open_http_client`), which runs its background tasks.  Its
    constructor and properties are :class:`~.client_connections.ClientConnections`'s.

    Source: 2025-06-18/basic/transports#streamable-http.
    """

    framing: Literal["lines", "messages"] = "messages"

    async def receive(self) -> bytes:
        """The next message from the server; ``b""`` once the channel is closed."""
        return await receive_or_eof(self._in_receive)

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """POST one message (see the module docstring for what is awaited).

        Raises:
            trio.ClosedResourceError: the channel is closed.
            HttpTransportError: ``initialize`` could not be sent or was refused.
        """
        if self.closed:
            raise trio.ClosedResourceError("the HTTP channel is closed")
        await self._keep_token_fresh()
        out = self.core.outgoing(data)
        if out.send is Send.INITIALIZE:
            return await self._send_initialize(RequestFlow(self.core, out, data))
        if out.send is Send.REQUEST:
            return await self._send_request(RequestFlow(self.core, out, data))
        if out.cancels is not None and (scope := self._readers.get(out.cancels)):
            scope.cancel()  # stop reading the cancelled request's answer
        # A notification or response (any message in 2024-11-05 mode), awaited: in order.
        done = steps.Done(error=f"the POST took longer than {self._io_timeout} s")
        with trio.move_on_after(self._io_timeout):
            done = await self._run(MessageFlow(self.core, data))
        if done.error is None and out.opens_get:
            await self._open_get_stream()
        elif done.error is not None and out.send is Send.LEGACY and not done.http_status:
            raise HttpTransportError(f"POST to the 2024-11-05 endpoint failed: {done.error}")
        elif done.error is not None:
            log.warning("the server did not take a message: %s", done.error)

    async def aclose(self) -> None:
        """DELETE the session (when there is one), close connections and end input.
        Idempotent."""
        if self.closed:
            return
        self.closed = True
        for scope in self._readers.values():
            scope.cancel()
        if self.session_id is not None and self.mode == "streamable":
            # Spec: 2025-06-18/basic/transports#session-management.8
            # "Clients that no longer need a particular session (e.g., because the user is leaving
            # the client application) SHOULD send an HTTP DELETE to the MCP endpoint with the
            # `Mcp-Session-Id` header, to explicitly terminate the session."
            with trio.move_on_after(min(self._io_timeout, 2.0)), suppress(*_IO_FAILURES):
                ex = await self._request(steps.delete_request(self.core))
                log.debug("DELETE answered %s", ex.status)
                await ex.conn.aclose()
        for conn in self._pool.clear():
            await conn.aclose()
        self._in_send.close()
        self._supervisor.close()

    # -- the one loop --------------------------------------------------------------------

    async def _run(
        self, flow: steps.Flow, step: steps.Step | None = None, ex: _Exchange | None = None
    ) -> steps.Done:
        """Do what ``flow`` says until it is done (:mod:`mcp_ref._http_client_steps`).

        ``step`` and ``ex``: where an earlier part left off; ``ex`` is the exchange of
        ``step`` (its request written, its head maybe read) or of the body to read.
        """
        step = flow.start() if step is None else step
        try:
            while True:
                if ex is not None and step is not steps.READ and step is not ex.request:
                    self._finish(ex)  # done with it: back to the pool, or closed
                    ex = None
                if isinstance(step, steps.Done):
                    return step
                if isinstance(step, steps.HttpRequest):
                    try:
                        ex = await self._head(ex or await self._start(step))
                    except _IO_FAILURES as exc:
                        step, ex = flow.broken(str(exc) or repr(exc)), None
                        continue
                    step = flow.head(ex.status, ex.headers)
                elif isinstance(step, steps.Read):
                    assert ex is not None
                    step = await self._read(flow, ex)
                elif isinstance(step, steps.Wait):
                    await trio.sleep(step.seconds)
                    step = flow.waited()
                elif isinstance(step, steps.Authorize):
                    step = flow.signed_in(await self._sign_in(step))
                else:
                    step = flow.new_session(await self._new_session(step.generation))
        finally:
            if ex is not None:
                self._finish(ex)

    async def _read(self, flow: steps.Flow, ex: _Exchange) -> steps.Step:
        """Feed one body to ``flow``, passing on the messages it gives.  Once the
        response came the server gets ``flow.grace`` seconds to end the stream: then
        the flow's own scope (``_readers``) ends it, as nothing else of it matters."""
        try:
            while (chunk := await ex.next_chunk()) is not None:
                for data in flow.receive_data(chunk):
                    await self._feed(data)
                if flow.stop:
                    break
                if flow.grace is not None and (scope := self._readers.get(flow.key)):
                    scope.deadline = min(scope.deadline, trio.current_time() + flow.grace)
            else:
                for data in flow.receive_data(b""):
                    await self._feed(data)
        except _IO_FAILURES as exc:
            log.debug("an HTTP answer broke off: %r", exc)
        return flow.ended(ex.complete)

    async def _feed(self, data: bytes) -> None:
        """Pass one message on to ``receive`` (a bounded queue: readers wait for room)."""
        with suppress(trio.ClosedResourceError, trio.BrokenResourceError):  # closed: dropped
            try:
                self._in_send.send_nowait(data)  # no schedule point when there is room
            except trio.WouldBlock:
                await self._in_send.send(data)

    async def _feed_error(self, rid: RequestId, message: str) -> None:
        """Answer our own request with an error: the server cannot answer it any more."""
        log.warning("request %r failed on the HTTP transport: %s", rid, message)
        await self._feed(self.core.failure(rid, message))

    # -- requests and messages -----------------------------------------------------------

    async def _send_initialize(self, flow: RequestFlow) -> None:
        try:
            ex = await self._request(flow.start())
        except _IO_FAILURES as exc:
            raise HttpTransportError(f"cannot reach {self.url}: {exc}") from exc
        then = flow.head(ex.status, ex.headers)
        if flow.fallback:
            await ex.conn.aclose()
            log.info("POST initialize got %s: trying the 2024-11-05 HTTP+SSE transport", ex.status)
            await self._fall_back(flow.data)
        elif flow.fatal or flow.signing_in:
            # Authorization: sign in now (a failed sign-in fails initialize here), or,
            # without auth= to sign in, the channel cannot go on (the flow's error).
            done = await self._run(flow, then, ex)
            if done.error is not None:
                raise HttpTransportError(done.error)
        else:
            self._supervisor.start_soon(self._in_background, flow, then, ex)

    async def _send_request(self, flow: RequestFlow) -> None:
        """Write the request; its answer is read in a task of its own (module docstring)."""
        try:
            # Never wait here: the session holds its send lock while we run, and a wait
            # could keep back the answer a pending request needs (an elicitation).
            self._posts.acquire_nowait()
        except trio.WouldBlock:
            why = f"more than {self._max_posts} requests awaiting answers"
            self._supervisor.start_soon(self._feed_error, flow.id, why)
            return
        try:
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.2
            # "The client MUST use HTTP POST to send JSON-RPC messages to the MCP endpoint."
            # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.4
            # "The body of the POST request MUST be a single JSON-RPC request, notification, or
            # response."
            # One POST per message: the session hands us exactly one message per send.
            ex = await self._start(step := flow.start())
        except _IO_FAILURES as exc:
            self._posts.release()
            self._supervisor.start_soon(self._feed_error, flow.id, f"POST failed: {exc}")
            return
        if not self._supervisor.start_soon(self._in_background, flow, step, ex, True):
            self._posts.release()
            await ex.conn.aclose()

    async def _in_background(
        self, flow: steps.Flow, step: steps.Step, ex: _Exchange | None, release: bool = False
    ) -> None:
        """Run a request's flow (or the GET stream's) in a task of its own, which an
        outgoing ``notifications/cancelled`` (or closing) cancels through ``_readers``.
        A request the flow gives up on gets the core's error response."""
        scope = self._readers[flow.key] = trio.CancelScope()
        try:
            with scope:
                done = await self._run(flow, step, ex)
                log.debug("an HTTP flow ended: %s", done.error)
                if done.error is not None and flow.id is not None:
                    await self._feed_error(flow.id, done.error)
        finally:
            if self._readers.get(flow.key) is scope:
                del self._readers[flow.key]
            if release:
                self._posts.release()

    # -- a new session after 404 ---------------------------------------------------------

    async def _new_session(self, generation: int) -> bool:
        """Start a new session, once per expired one (:class:`ReplayFlow`); False when
        that failed (input then ends)."""
        async with self._reinit_lock:
            begin = False if self.closed else self.core.begin_new_session(generation)
            if begin is not True:
                return begin is None  # another task did it, or nothing to replay
            done = steps.Done(error=f"took longer than {self._io_timeout} s, or was cancelled")
            try:
                with trio.move_on_after(self._io_timeout):
                    done = await self._run(ReplayFlow(self.core))
            finally:  # even when cancelled: the core must not stay between sessions
                if reason := self.core.end_new_session(done.error is None):
                    log.warning("%s: %s", reason, done.error)
                    self.eof_reason = reason
                    self._in_send.close()
            return reason is None

    # -- the GET stream ------------------------------------------------------------------

    async def _open_get_stream(self) -> None:
        """Open the GET stream before ``send`` returns, so that it is there before the
        next request: a server may send on it what it has for us (an elicitation) as soon
        as the request arrives.  Waits at most ``min(io_timeout, 5)`` s for its head."""
        flow = GetStreamFlow(self.core)
        ex: _Exchange | None
        try:
            ex = await self._start(step := flow.start())
            with trio.move_on_after(min(self._io_timeout, 5.0)):
                await self._head(ex)  # a fresh connection: never sent again
        except _IO_FAILURES as exc:
            log.debug("the GET stream could not be opened now: %s", exc)
            ex = None
        if not self._supervisor.start_soon(self._in_background, flow, step, ex) and ex:
            await ex.conn.aclose()

    # -- 2024-11-05 HTTP+SSE ---------------------------------------------------------------

    async def _fall_back(self, init_body: bytes) -> None:
        """GET the 2024-11-05 stream, wait for its endpoint (bounded), read the stream
        in the background, POST ``initialize`` to the endpoint."""
        flow = LegacyFlow(self.core)
        try:
            ex = await self._request(flow.start())
        except _IO_FAILURES as exc:
            raise HttpTransportError(f"2024-11-05 fallback: GET failed: {exc}") from exc
        step = flow.head(ex.status, ex.headers)
        with trio.move_on_after(self._io_timeout):
            while step is steps.READ and not (flow.ready or flow.stop):
                if (chunk := await ex.next_chunk()) is None:
                    break
                for data in flow.receive_data(chunk):
                    await self._feed(data)
        if not flow.ready:
            await ex.conn.aclose()
            raise HttpTransportError(flow.error or "no endpoint event on the 2024-11-05 stream")
        self._supervisor.start_soon(self._legacy_stream, flow, ex)
        await self.send(init_body)  # to the endpoint: the core is in 2024-11-05 mode now

    async def _legacy_stream(self, flow: LegacyFlow, ex: _Exchange) -> None:
        try:
            done = await self._run(flow, steps.READ, ex)
            log.info("%s", done.error)
        finally:
            self.eof_reason = "the 2024-11-05 SSE stream ended"
            self._in_send.close()


@asynccontextmanager
async def open_http_channel(url: str, **channel_kw: Any) -> AsyncIterator[HttpClientChannel]:
    """Open a :class:`HttpClientChannel` to ``url`` and run its background tasks.

    Args:
        url: the MCP endpoint, e.g. ``"http://127.0.0.1:8000/mcp"``.
        **channel_kw: ``headers`` (extra request headers, e.g. authorization), ``limits``
            (:class:`~mcp_ref._http.HttpLimits`), ``legacy_fallback`` (default True),
            ``get_stream`` (open the GET stream; default True), ``max_concurrent_posts``
            (64; a request past it is answered at once with an error),
            ``connect_timeout`` (10 s), ``io_timeout`` (20 s per one-way POST),
            ``default_retry`` (1 s when the server gave no ``retry``),
            ``pool_idle_seconds`` (4 s), ``ssl_context``, ``auth``
            (:class:`~mcp_ref.client.OAuthClientOptions`: sign in when the server
            answers 401, or 403 ``insufficient_scope``; None: such an answer to
            ``initialize`` ends the channel).

    Yields:
        The channel; give it to :func:`~mcp_ref.trio.open_session` or
        :func:`mcp_ref.client.open_client`.  On exit it is closed (DELETE) and its tasks
        end.

    Raises:
        ValueError: not an http(s) URL.
    """
    supervisor = Supervisor()
    channel = HttpClientChannel(url, supervisor, **channel_kw)
    async with open_running(channel, supervisor.run):
        yield channel

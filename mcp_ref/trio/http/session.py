"""One MCP session of the HTTP server, seen from trio (:mod:`.server`).

Theory of operation
-------------------
An :class:`HttpSession` is the :class:`~mcp_ref.trio.MessageChannel` its
:class:`~mcp_ref.trio.Session` talks to, joined to the sans-IO
:class:`~mcp_ref._http_streams.SessionStreams` that decides which logical stream carries
each message, and to the HTTP responses writing those streams.

Messages in: :meth:`HttpSession.deliver` hands one POST body to the running session from
the POST's own task when no body is queued (:meth:`Session.push
<mcp_ref.trio.Session.push>`: no task switch), else queues it (a bounded queue: the POST
waits when the session is slow) for :meth:`HttpSession.receive`.  Order holds: a body
the reader has taken is fed to the core before the reader next yields.  Messages out:
``send`` never blocks: the core appends the message to one stream and names it, and
:meth:`HttpSession.wake` wakes the responses writing that stream
(:func:`~.sse.wait_change` registers them in ``waiters``: it cancels the read of an SSE
writer, and sets the event a JSON answer waits on).
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable
from typing import Final, Literal

import trio

from ..._http import HttpLimits
from ..._http_answers import ResponseHeads
from ..._http_messages import MessageInfo
from ..._http_streams import LogicalStream, SessionKind, SessionStreams
from ..._state import State
from ...events import RequestId
from .._session import Session, SessionClosed

__all__ = ["CURRENT", "HttpSession", "close_sse_stream"]

log = logging.getLogger("mcp_ref.trio.http")

_NOT_YET: Final = frozenset({State.PRE_INIT, State.INITIALIZING, State.INITIALIZED})

_INPUT_QUEUE = 64
"""POST bodies queued for a session's reader before a POST waits."""

CURRENT: contextvars.ContextVar[HttpSession | None] = contextvars.ContextVar(
    "mcp_ref_http_session", default=None
)
"""The session whose handlers run in this task (see :func:`close_sse_stream`)."""


def close_sse_stream(request_id: RequestId) -> bool:
    """End the SSE stream of a request being handled, before its response (polling).

    Call it from the request's handler.  The client resumes with a GET carrying
    ``Last-Event-ID`` (after the ``retry`` time of the priming event) and receives what
    was sent meanwhile, the response included.

    Args:
        request_id: the id of the request being handled (``ctx.request_id``).

    Returns:
        True when the stream will end; False when there is nothing to end or the client
        could not resume it: not under Streamable HTTP, a JSON answer, no event id
        written yet, or already answered.

    Source: 2025-11-25 transports (servers may close SSE streams at will; resumption is
    always by GET with ``Last-Event-ID``);
    2025-06-18/basic/transports#resumability-and-redelivery.4.
    """
    sess = CURRENT.get()
    stream = sess.state.request_close(request_id) if sess is not None else None
    if sess is None or stream is None:
        return False
    sess.wake(stream)
    return True


class HttpSession:
    """One MCP session of the HTTP server: the channel its session talks to, its input
    queue and its streams.

    Args:
        session_id: the ``Mcp-Session-Id`` (None for a stateless session).
        kind: ``"streamable"``, ``"stateless"`` or ``"legacy"`` (2024-11-05).
        limits: the bounds (the event store's, the streams per session).
        on_end: called once when the session ends (the session table forgets it).
    """

    framing: Literal["lines", "messages"] = "messages"
    eof_reason: str | None = None

    def __init__(
        self,
        session_id: str | None,
        *,
        kind: SessionKind,
        limits: HttpLimits,
        on_end: Callable[[HttpSession], None],
    ) -> None:
        self.id = session_id
        self.kind = kind
        self.state = SessionStreams(kind, limits)
        self.input_send, self.input_receive = trio.open_memory_channel[bytes](_INPUT_QUEUE)
        self.queued = 0  # bodies in the input queue (an evictable session has none)
        self.session: Session | None = None  # the MCP session, once it runs
        self.last_used = trio.current_time()
        self.ended = False
        self.started = trio.Event()
        self.done = trio.Event()
        self.cancel_scope = trio.CancelScope()
        self.waiters: dict[LogicalStream, set[Callable[[], None]]] = {}
        """What wakes each response waiting for news of a stream (see :meth:`wake`)."""
        self.heads = ResponseHeads()
        """The heads of its answers, each built once."""
        self._on_end = on_end

    def wake(self, stream: LogicalStream) -> None:
        """Tell the responses writing ``stream`` that it changed (call their wakers)."""
        for wake in self.waiters.get(stream, ()):
            wake()

    def initialized(self) -> bool:
        """Whether its core connection received ``notifications/initialized`` (or is
        closing); without an attached session, whether ``initialize`` was answered.
        Source: 2025-06-18/basic/lifecycle#initialization."""
        if self.session is not None:
            return self.session.connection.state not in _NOT_YET
        return self.state.protocol_version is not None

    def busy(self) -> bool:
        """Whether a request is being answered or a response writes a stream."""
        return self.state.busy()

    def touch(self) -> None:
        """The session was used now (the idle reaper counts from here)."""
        self.last_used = trio.current_time()

    def route(self, data: bytes, related: RequestId | None) -> None:
        """Put one outgoing message on its logical stream and wake the response writing
        it.  Never blocks."""
        stream = self.state.route(data, related)
        if stream is None:
            log.debug("message dropped: no stream for it (its POST is gone, or stateless)")
            return
        self.wake(stream)

    def cancel_from(self, infos: list[MessageInfo]) -> None:
        """End the streams of the requests that the ``notifications/cancelled`` among a
        POST body's messages cancel."""
        for stream in self.state.cancel_from(infos):
            self.wake(stream)

    async def deliver(self, body: bytes) -> bool:
        """Give one POST body to the session (module docstring; waits while the queue is
        full); False when the session has ended."""
        if self.ended:
            return False
        if self.session is not None and self.queued == 0:
            # Handlers started by the body see their HTTP session, as when the reader
            # starts them (close_sse_stream reads it).
            token = CURRENT.set(self)
            try:
                await self.session.push(body)
            except SessionClosed:
                return False
            finally:
                CURRENT.reset(token)
            return True
        self.queued += 1
        try:
            await self.input_send.send(body)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            self.queued -= 1
            return False
        except BaseException:
            self.queued -= 1  # cancelled while waiting for room: not queued
            raise
        return True

    def end(self, reason: str) -> None:
        """End the session (idempotent): no more input, every stream wakes and ends."""
        if self.ended:
            return
        self.ended = True
        self.eof_reason = reason
        self.input_send.close()
        for stream in self.state.end():
            self.wake(stream)
        self._on_end(self)

    # -- the MessageChannel its Session talks to -------------------------------------

    async def receive(self) -> bytes:
        """The next queued POST body; ``b""`` once the session was ended."""
        try:
            data = await self.input_receive.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            return b""
        self.queued -= 1
        return data

    def attach_session(self, session: Session) -> None:
        """The MCP session runs (its connection tells the batch bound; a graceful stop
        finishes its requests)."""
        self.session = session

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """Route one message onto its stream (never blocks, never fails)."""
        self.route(data, related_request_id)

    def send_nowait(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """:meth:`send` without the ``await``: the session then writes without a send
        timeout scope (see :class:`~mcp_ref.trio.MessageChannel`).  Never raises."""
        self.route(data, related_request_id)

    async def aclose(self) -> None:
        """End the session's HTTP side."""
        self.end("the session closed")

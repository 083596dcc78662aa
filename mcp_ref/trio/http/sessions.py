"""The sessions of the HTTP server (:mod:`.server`): one MCP session seen from trio
(:class:`HttpSession`), and the table of them all (:class:`SessionTable`).

Theory of operation
-------------------
An :class:`HttpSession` is the :class:`~mcp_ref.trio.MessageChannel` its
:class:`~mcp_ref.trio.Session` talks to, joined to the sans-IO
:class:`~mcp_ref._http_streams.SessionStreams` (which logical stream carries each
message) and to the responses writing those streams: POST bodies go in through
:meth:`~HttpSession.deliver`; ``send`` never blocks, it wakes the responses writing the
message's stream (:meth:`~HttpSession.wake`).  Each session runs in an owner task of
the :class:`SessionTable`'s supervisor, so it outlives the request that created it but
never the server; which sessions to evict or expire is the sans-IO
:class:`~mcp_ref._http_sessions.SessionBook`'s decision.
"""

from __future__ import annotations

import contextvars
import logging
import secrets
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Final, Literal

import trio

from ... import _http as rules
from ..._client import SessionClosed
from ..._http import HttpLimits, Refused, checked, http_error
from ..._http_answers import ResponseHeads
from ..._http_auth import CALLER, Caller, current_owner
from ..._http_messages import MessageInfo
from ..._http_sessions import END_GRACE, EVICT_GRACE, INPUT_QUEUE, SessionBook
from ..._http_streams import LogicalStream, SessionKind, SessionStreams
from ..._state import State
from ...events import RequestId
from .._session import serve_channel
from .._session_api import Handler, Session
from .common import Supervisor

__all__ = ["CURRENT", "PEER", "HttpSession", "SessionTable", "close_sse_stream"]

log = logging.getLogger("mcp_ref.trio.http")

_NOT_YET: Final = frozenset({State.PRE_INIT, State.INITIALIZING, State.INITIALIZED})


CURRENT: contextvars.ContextVar[HttpSession | None] = contextvars.ContextVar(
    "mcp_ref_http_session", default=None
)
"""The session whose handlers run in this task (see :func:`close_sse_stream`)."""

PEER: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "mcp_ref.trio.http.peer", default=None
)
"""The client address of the connection this task serves
(:func:`~mcp_ref.trio._listen.peer_of`); :meth:`SessionTable.open` counts sessions per
value (``HttpLimits.max_sessions_per_peer``)."""


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
        # Each body queued with who sent it (the reader's handlers see it: _http_auth).
        self.input_send, self.input_receive = trio.open_memory_channel[tuple[bytes, Caller | None]](
            INPUT_QUEUE
        )
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
        self.flush: Callable[[], Awaitable[None]] | None = None  # shared (mcp_ref.stores)
        self._on_end = on_end
        self.owner = current_owner()  # who opens it owns it (the request's task: _http_auth)

    def wake(self, stream: LogicalStream) -> None:
        """Tell the responses writing ``stream`` that it changed (call their wakers)."""
        for wake in self.waiters.get(stream, ()):
            wake()

    def initialized(self) -> bool:
        """Whether its connection received ``notifications/initialized`` (or is closing;
        before the session runs: whether ``initialize`` was answered).
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

    def cancel_from(self, infos: list[MessageInfo]) -> None:
        """End the streams of the requests that the ``notifications/cancelled`` among a
        POST body's messages cancel."""
        for stream in self.state.cancel_from(infos):
            self.wake(stream)

    async def deliver(self, body: bytes) -> bool:
        """Give one POST body to the session: from the POST's own task when none is
        queued (:meth:`Session.push <mcp_ref.trio.Session.push>`: no task switch), else
        through the bounded queue :meth:`receive` reads (the POST waits while the session
        is slow).  False when the session has ended."""
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
        try:
            await self.input_send.send((body, CALLER.get()))
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            return False
        return True

    @property
    def queued(self) -> int:
        """Bodies in the input queue or waiting for room in it (an evictable session has
        none)."""
        stats = self.input_send.statistics()
        return stats.current_buffer_used + stats.tasks_waiting_send

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
            data, caller = await self.input_receive.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            return b""
        CALLER.set(caller)
        return data

    def attach_session(self, session: Session) -> None:
        """The MCP session runs: POST bodies go to its ``push``."""
        self.session = session

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """Put one message on the logical stream the core chooses (none: dropped, its POST
        gone) and wake the responses writing it; a shared session's event log is written
        first (:mod:`mcp_ref.stores`)."""
        stream = self.state.route(data, related_request_id)
        if self.flush is not None:
            await self.flush()
        if stream is not None:
            self.wake(stream)

    def send_nowait(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """:meth:`send` without waiting: never blocks, never raises (but
        ``trio.WouldBlock`` when shared: use :meth:`send`)."""
        if self.flush is not None:
            raise trio.WouldBlock
        stream = self.state.route(data, related_request_id)
        if stream is not None:
            self.wake(stream)

    async def aclose(self) -> None:
        """End the session's HTTP side."""
        self.end("the session closed")


class SessionTable:
    """The sessions of one server, and the tasks that run them (``handler`` and
    ``session_kw``: see :func:`~mcp_ref.trio.serve_http`).  Start :attr:`supervisor`'s
    ``run`` and :meth:`reaper` in the server's nursery."""

    def __init__(
        self,
        handler: Handler | Callable[[], Handler],
        *,
        limits: HttpLimits,
        session_kw: dict[str, Any],
    ) -> None:
        self.handler = handler
        self.limits = limits
        self.session_kw = session_kw
        self.sessions: dict[str, HttpSession] = {}  # by id (stateless ones have none)
        self.book: SessionBook[HttpSession] = SessionBook(limits)  # every live one's seat
        self.supervisor = Supervisor()
        self.reaper_nudge = trio.Event()
        self.shared: Any = None  # a mcp_ref.stores.Sharing: the store other processes share

    async def open(self, kind: SessionKind, session_id: str | None = None) -> HttpSession:
        """Start a new session's owner task and return the session once it runs.  It
        counts against the client address in :data:`PEER`; to make room within the
        bounds, the session the book names is evicted first.

        Raises:
            Refused: 503 past ``limits.max_sessions``, 429 past
                ``limits.max_sessions_per_peer``, both with ``Retry-After`` (seconds),
                when no session can be evicted; 503 while shutting down.
        """
        peer, adopted = PEER.get(), session_id is not None  # (adopted: from the registry)
        await self._make_room(peer)
        if kind != "stateless" and session_id is None:
            # Spec: 2025-06-18/basic/transports#session-management.2
            # "The session ID SHOULD be globally unique and cryptographically secure (e.g., a
            # securely generated UUID, a JWT, or a cryptographic hash)."
            # Spec: 2025-06-18/basic/security_best_practices#mitigation-2.3
            # "MCP servers MUST use secure, non-deterministic session IDs."
            session_id = rules.new_session_id(secrets.token_bytes(16))
        sess = HttpSession(session_id, kind=kind, limits=self.limits, on_end=self.forget)
        if self.shared is not None and kind == "streamable":
            self.shared.attach(sess, adopted=adopted)
        if not self.supervisor.start_soon(self._own, sess):
            raise Refused(http_error(503, "the server is shutting down", clause=None))
        self.book.add(sess, peer, trio.current_time())
        if session_id is not None:
            self.sessions[session_id] = sess
            self.reaper_nudge.set()
        await sess.started.wait()
        return sess

    def park(self, sess: HttpSession) -> bool:
        """Keep an answered 2026-07-28 session for the next POST of the same client
        address and caller (:meth:`SessionBook.park
        <mcp_ref._http_sessions.SessionBook.park>`); False, kept not, for one still
        running a request (its client left: the caller cancels it)."""
        if sess.ended or sess.busy() or sess.queued:
            return False
        oldest = self.book.park(sess, (PEER.get(), sess.owner))
        if oldest is not None:
            oldest.end("parked the longest")
        return True

    def take_parked(self) -> HttpSession | None:
        """A session :meth:`park` kept for this task's client address and caller."""
        key = (PEER.get(), current_owner())
        while (sess := self.book.take(key)) is not None and sess.ended:
            pass  # ended since (the server stops): its task is leaving the book
        return sess

    async def _make_room(self, peer: str | None) -> None:
        """Evict sessions until a new one from ``peer`` fits in both bounds, or raise
        :class:`Refused` (503 or 429 with ``Retry-After``)."""
        while True:
            candidates = [*self.sessions.values(), *self.book.parked]
            room = self.book.room_for(peer, candidates, trio.current_time())
            if room is None:
                return
            victim = checked(room)
            victim.end("evicted to make room for a new session")
            await _stop(victim, EVICT_GRACE)

    async def _own(self, sess: HttpSession) -> None:
        """The owner task of one session: runs it until it ends."""
        CURRENT.set(sess)
        try:
            with sess.cancel_scope:
                h = self.handler
                handler: Any = h if hasattr(h, "handle_request") else h()  # (a factory)
                sess.started.set()
                await serve_channel(handler, sess, **self.session_kw)
        except Exception:
            log.exception("session %s failed", sess.id)
        finally:
            sess.started.set()
            sess.end("the session ended")
            self.book.remove(sess)
            sess.done.set()

    def forget(self, sess: HttpSession) -> None:
        """An ended session leaves the table; cancelled if it does not end by itself."""
        if sess.id is not None and self.sessions.get(sess.id) is sess:
            del self.sessions[sess.id]
        # Spec: 2025-06-18/basic/transports#session-management.6
        # "The server MAY terminate the session at any time, after which it MUST respond to requests
        # containing that session ID with HTTP 404 Not Found."
        if not sess.done.is_set():
            self.supervisor.start_soon(_stop, sess, END_GRACE)

    async def finish(self, grace: float, reason: str) -> None:
        """Stop every session gracefully, as :func:`~mcp_ref.trio.serve_http`'s ``stop``
        says; ``reason``: what the sessions' ends and the error answers say."""
        async with trio.open_nursery() as nursery:
            for sess in list(self.book.seats):
                if sess.session is not None:
                    finish = sess.session.finish_requests
                    nursery.start_soon(partial(finish, grace, reason=reason))
        # The lifecycle page, "Shutdown": "the underlying transport mechanism should be
        # used to signal connection termination": each SSE response ends, then its
        # connection.
        for sess in list(self.book.seats):
            sess.end(reason)

    async def reaper(self) -> None:
        """End the sessions the book says have expired
        (:meth:`~mcp_ref._http_sessions.SessionBook.expired`), then sleep until its next
        deadline or until :meth:`open` sets ``reaper_nudge``.  Runs until cancelled."""
        while True:
            nudge = self.reaper_nudge = trio.Event()
            ends, deadline = self.book.expired(list(self.sessions.values()), trio.current_time())
            for sess, reason in ends:
                sess.end(reason)
            with trio.move_on_at(deadline):
                await nudge.wait()


async def _stop(sess: HttpSession, grace: float) -> None:
    """Wait up to ``grace`` seconds for an ended session's owner task to finish; then
    cancel it, and wait as long again."""
    for _ in range(2):
        with trio.move_on_after(grace):
            await sess.done.wait()
            return
        sess.cancel_scope.cancel()

"""The endpoints of the HTTP server (:mod:`.server`): POST, GET and DELETE of the MCP
endpoint, the two of the 2024-11-05 HTTP+SSE transport, and the SSE answer they share.

Theory of operation
-------------------
Each handler in :data:`ENDPOINTS` answers one routed request, or raises
:class:`~mcp_ref._http.Refused`; what a request means is the core's, and each handler
carries it out.  A POST (:func:`~mcp_ref._http_post.read_post`) finds or opens its
session, has the session take it
(:meth:`~mcp_ref._http_streams.SessionStreams.accept_post`: the logical stream that
answers its requests, if any), and hands the body to the session
(:meth:`~.sessions.HttpSession.deliver`): notifications and responses get 202 at once;
requests are answered either as one JSON body (:func:`answer_json`; what is sent while
handling them goes to the standalone stream) or as an SSE stream (:func:`answer_sse`)
that ends after the last response.  A stateless server's session lives for one POST
only.  A GET attaches the standalone stream, or with ``Last-Event-ID`` the stream that
event belongs to (:meth:`~mcp_ref._http_streams.SessionStreams.resume`), and replays
what followed it.

:func:`answer_sse` is the loop around the sans-IO
:class:`~mcp_ref._http_answers.SseAnswer` (what to write, when to wait, when to end):
it writes one logical stream to one HTTP response until the stream ends, the client
leaves, or another response takes the stream over.  Between writes it waits in
:func:`wait_change`: it reads the client's side of the connection (to notice a client
that left, so that events meant for it stay in the store for a resumption) until the
session wakes it (:meth:`~.sessions.HttpSession.wake` cancels the read) or the wait
the answer asked for passes.  A JSON answer, which reads nothing while it waits, waits
on an event instead (a third of the cost of a cancelled wait).

2024-11-05 (``GET /sse``): a session whose one stream starts with an ``endpoint`` event
naming ``/messages?session_id=<id>``; POSTs there are answered 202 and every server
message goes to that one stream.  The session ends when the GET's connection does.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from typing import Final, Literal

import h11
import trio

from ... import _http as rules
from ..._http import LAST_EVENT_ID, Refused, checked
from ..._http_answers import SseAnswer, empty_answer
from ..._http_connection import RequestReady
from ..._http_post import read_messages, read_post
from ..._http_server import Endpoint, ServerConfig, gone, header, legacy_session, session_request
from ..._http_streams import LEGACY, LogicalStream
from ..._sse import encode_event
from .common import H11Stream
from .sessions import HttpSession, SessionTable

__all__ = ["ENDPOINTS", "HEAD_WAIT_SECONDS", "answer_json", "answer_sse", "wait_change"]

log = logging.getLogger("mcp_ref.trio.http")

HEAD_WAIT_SECONDS: Final = 0.1
"""Seconds the head of a POST's SSE answer waits for the first events, so that a quick
answer is written at once, head and all."""

_MAX_PIPELINED: Final = 64 * 1024


async def post(cfg: ServerConfig, table: SessionTable, h: H11Stream, req: RequestReady) -> None:
    """Answer a POST to the MCP endpoint: 202 for notifications and responses, else
    the answer of its request(s) as JSON or an SSE stream (module docstring).

    The body is read by the core's own reader, so every request this POST waits for is
    one the session's connection takes with the same id: it is answered, or the
    session ends.  A refusal of a body holding one request carries that request's id.

    Raises:
        Refused: the request breaks a rule (the error says which).
    """
    post = checked(read_post(cfg, req.headers, req.body))
    try:
        if not post.new_session:
            sess = checked(session_request(req.headers, table.sessions))
        else:
            sess = await table.open("stateless" if cfg.stateless else "streamable")
        try:
            sess.touch()
            most = sess.session.connection.max_requests_in_flight if sess.session else None
            stream = checked(
                sess.state.accept_post(
                    post, json_mode=cfg.json_response, max_requests_in_flight=most
                )
            )
            await _deliver(sess, stream, [*post.preamble, req.body])
            if stream is None:
                sess.cancel_from(post.messages)
                # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.5
                # "If the server accepts the input, the server MUST return HTTP status code 202 Accepted
                # with no body."
                await h.send(*empty_answer(202, req.last))
            elif cfg.json_response:
                await answer_json(h, sess, stream, last=req.last)
            else:
                await answer_sse(cfg, h, sess, stream, sess.id, last=req.last, post=True)
        finally:
            sess.touch()
            if cfg.stateless:
                sess.end("stateless request answered")
            elif post.initialize and sess.state.init_failed:
                sess.end("initialize failed")
    except Refused as exc:
        raise Refused(post.refusal(exc.error)) from None


async def _deliver(sess: HttpSession, stream: LogicalStream | None, bodies: list[bytes]) -> None:
    """Give ``bodies`` to the session in order.

    Raises:
        Refused: 404, the session ended first (``stream``, the POST's, is forgotten).
    """
    for data in bodies:
        if not await sess.deliver(data):
            if stream is not None:
                sess.state.close_post(stream)
            raise Refused(gone())


async def answer_json(
    h: H11Stream, sess: HttpSession, stream: LogicalStream, *, last: bool
) -> None:
    """Wait for the answer(s) collected on ``stream`` and write them as one JSON body
    (:attr:`~mcp_ref._http_streams.LogicalStream.json_body`; 202 when none came).

    Raises:
        Refused: 404, the session ended first.
    """
    # The answer is written whole once it is complete: a client that left meanwhile is
    # noticed then (the write fails), so the socket is not watched while waiting.
    while not stream.finished and not sess.ended:
        await wait_change(None, sess, stream, stream.seq, math.inf)
    if not stream.finished:
        raise Refused(gone())
    # What a handler sent before its answer went to the GET stream: give that stream's
    # writer two passes of the scheduler (at most) to write it first.
    for _ in range(2):
        if not sess.state.standalone_unwritten():
            break
        await trio.lowlevel.checkpoint()
    session_id = None if sess.state.init_failed else sess.id
    await h.send(*sess.heads.json_answer(session_id, stream.json_body, last))


async def get(cfg: ServerConfig, table: SessionTable, h: H11Stream, req: RequestReady) -> None:
    """Answer a GET: the session's standalone stream, or with ``Last-Event-ID`` the
    resumption of the stream that event belongs to.

    Raises:
        Refused: the request breaks a rule (400, 404, 409...).
    """
    sess = checked(session_request(req.headers, table.sessions))
    stream, cursor = checked(sess.state.resume(header(req.headers, LAST_EVENT_ID)))
    sess.touch()
    await answer_sse(cfg, h, sess, stream, sess.id, last=req.last, cursor=cursor)


async def delete(cfg: ServerConfig, table: SessionTable, h: H11Stream, req: RequestReady) -> None:
    """Answer a DELETE (which the core routes here only with sessions): end the session.

    Raises:
        Refused: the request breaks a rule.
    """
    sess = checked(session_request(req.headers, table.sessions))
    # Spec: 2025-06-18/basic/transports#session-management.8
    # "Clients that no longer need a particular session (e.g., because the user is leaving the
    # client application) SHOULD send an HTTP DELETE to the MCP endpoint with the `Mcp-Session-Id`
    # header, to explicitly terminate the session."
    sess.end("terminated by the client (DELETE)")
    await h.send(*empty_answer(200, req.last))


async def legacy_get(
    cfg: ServerConfig, table: SessionTable, h: H11Stream, req: RequestReady
) -> None:
    """Answer ``GET`` of the 2024-11-05 SSE endpoint: a new session whose one stream
    this response writes, starting with the ``endpoint`` event; the session ends with
    the response.

    Raises:
        Refused: 503 past ``limits.max_sessions``, 429 past
            ``limits.max_sessions_per_peer`` (both with ``Retry-After``).

    Source: 2024-11-05/basic/transports "HTTP with SSE";
    2025-06-18/basic/transports#backwards-compatibility.
    """
    sess = await table.open("legacy")
    try:
        # Source: 2024-11-05/basic/transports "HTTP with SSE": the first event names
        # the URL to POST messages to.
        first = encode_event(
            rules.endpoint_event(f"{cfg.legacy_messages_path}?session_id={sess.id}")
        )
        await answer_sse(cfg, h, sess, sess.state.streams[LEGACY], None, last=True, first=first)
    finally:
        sess.end("the SSE connection closed")


async def legacy_post(
    cfg: ServerConfig, table: SessionTable, h: H11Stream, req: RequestReady
) -> None:
    """Answer a POST to the 2024-11-05 message endpoint: 202, the message(s) going to
    the session named by the ``session_id`` query parameter.

    Raises:
        Refused: 400 without ``session_id``, 404 for an unknown or ended session, 400
            for a body that is not a message or a batch of them.
    """
    sess = checked(legacy_session(req.query, table.sessions))
    infos = checked(read_messages(req.body))
    sess.touch()
    await _deliver(sess, None, [req.body])
    sess.cancel_from(infos)
    await h.send(*empty_answer(202, req.last))


async def answer_sse(
    cfg: ServerConfig,
    h: H11Stream,
    sess: HttpSession,
    stream: LogicalStream,
    session_id: str | None,
    *,
    last: bool,
    cursor: str | None = None,
    first: bytes = b"",
    post: bool = False,
) -> None:
    """Attach ``stream`` to this response and write its events from ``cursor`` (default:
    after the last event written) until it ends (module docstring).  ``post``: the
    answer to the POST that carried the stream's requests; ``first``: an encoded event
    to write before them."""
    head = sess.heads.sse(session_id, last, post=post)
    answer = SseAnswer(
        sess.state, stream, head, cursor=cursor, first=first, retry_ms=cfg.retry_ms, post=post
    )
    sess.wake(stream)  # a response writing it before stops
    try:
        keepalive = cfg.limits.keepalive_seconds
        while (wait := answer.step(keepalive, HEAD_WAIT_SECONDS)) is not None:
            if answer.ready:
                await _write(h, answer)
            got = await wait_change(h, sess, stream, answer.seq, wait)
            if got == "eof":
                return  # the client left: what it did not receive stays in the store
            answer.waited(got)
        if answer.end and answer.end.startswith("events lost"):
            log.warning("stream %s of session %s: %s", stream.id, sess.id, answer.end)
    finally:
        answer.detach()
        if not post:
            sess.touch()  # (the POST's handler does, for a POST)
    await _write(h, answer, end=True)


async def _write(h: H11Stream, answer: SseAnswer, *, end: bool = False) -> None:
    """Write what ``answer`` has pending (and its end when ``end``)."""
    events = answer.events(end=end)
    if events:
        await h.send(*events)
    answer.written()


async def wait_change(
    h: H11Stream | None, sess: HttpSession, stream: LogicalStream, seq: int, timeout: float
) -> Literal["changed", "eof", "timeout"]:
    """Wait until ``stream`` changes (its ``seq`` is no longer ``seq``) while reading the
    client's side of the connection ``h`` (None: without), at most ``timeout`` seconds.

    Returns ``"changed"``, ``"eof"`` (the client closed its side: nobody will read the
    rest) or ``"timeout"``.  Input the client pipelines meanwhile goes into h11 for the
    next request (up to ``_MAX_PIPELINED`` bytes; past that the socket is not read).
    :meth:`HttpSession.wake` cancels the read (a cancelled ``receive_some`` loses
    nothing); without ``h`` it sets an event.
    """
    if stream.seq != seq:
        return "changed"
    waiting = sess.waiters.setdefault(stream, set())
    if h is None:  # nothing to read: an event is cheaper to wake than a cancelled wait
        changed = trio.Event()
        waiting.add(changed.set)
        try:
            with trio.move_on_after(timeout):
                await changed.wait()
        finally:
            waiting.discard(changed.set)
            if not waiting:
                sess.waiters.pop(stream, None)
        return "changed" if stream.seq != seq else "timeout"
    with trio.CancelScope(deadline=trio.current_time() + timeout) as scope:
        waiting.add(scope.cancel)
        try:
            while h.conn.their_state is not h11.CLOSED:
                if len(h.conn.trailing_data[0]) > _MAX_PIPELINED:
                    await trio.sleep_forever()  # pipelined input piles up: stop reading
                if not await h.receive_some():
                    return "eof"
            return "eof"
        finally:
            waiting.discard(scope.cancel)
            if not waiting:
                sess.waiters.pop(stream, None)
    return "changed" if stream.seq != seq else "timeout"


ENDPOINTS: Final[
    dict[Endpoint, Callable[[ServerConfig, SessionTable, H11Stream, RequestReady], Awaitable[None]]]
] = {
    Endpoint.POST: post,
    Endpoint.GET: get,
    Endpoint.DELETE: delete,
    Endpoint.LEGACY_GET: legacy_get,
    Endpoint.LEGACY_POST: legacy_post,
}
"""The handler of each endpoint (:func:`~mcp_ref._http_server.route_request`)."""

"""The endpoints of the HTTP server (:mod:`.server`): POST, GET and DELETE of the MCP
endpoint, the two of the 2024-11-05 HTTP+SSE transport, and the answers they write.

Theory of operation
-------------------
Each handler in :data:`ENDPOINTS` carries out what the core decided of one routed
request, or raises :class:`~mcp_ref._http.Refused`.  A POST
(:func:`~mcp_ref._http_post.read_post`) finds or opens its session, which takes it
(:meth:`~mcp_ref._http_streams.SessionStreams.accept_post`: the logical stream that
answers its requests, if any); the body goes to the session
(:meth:`~.sessions.HttpSession.deliver`); the answer is 202, one JSON body
(:func:`answer_json`) or an SSE stream (:func:`answer_sse`).  A GET writes the stream
:meth:`~mcp_ref._http_streams.SessionStreams.resume` names.

:func:`answer_sse` is the loop around the sans-IO
:class:`~mcp_ref._http_answers.SseAnswer` (that module's docstring shows it), waiting
between writes in :func:`wait_change`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from typing import Final, Literal

import h11
import trio

from ..._http import LAST_EVENT_ID, Refused, checked
from ..._http_answers import HEAD_WAIT_SECONDS, MAX_PIPELINED, SseAnswer, empty_answer
from ..._http_connection import RequestReady
from ..._http_legacy import session_endpoint
from ..._http_post import Post, read_messages, read_post
from ..._http_server import Endpoint, ServerConfig, gone, header, legacy_session, session_request
from ..._http_streams import LEGACY, LogicalStream
from .common import H11Stream
from .sessions import HttpSession, SessionTable

__all__ = ["ENDPOINTS", "HEAD_WAIT_SECONDS", "answer_json", "answer_sse", "wait_change"]

log = logging.getLogger("mcp_ref.trio.http")


async def post(cfg: ServerConfig, table: SessionTable, h: H11Stream, req: RequestReady) -> None:
    """Answer a POST to the MCP endpoint (module docstring); a stateless server's
    session lives for this POST only.

    Raises:
        Refused: the request breaks a rule (the error says which; for a body holding
            one request, with that request's id).
    """
    post = checked(read_post(cfg, req.headers, req.body, table.handler))
    if post.accepted_alone:
        return await h.send(*empty_answer(202, req.last))
    try:
        parked = table.take_parked() if post.parks else None  # (SessionTable.park)
        if not post.new_session:
            sess = checked(session_request(req.headers, table.sessions))
        else:
            sess = parked or await table.open(post.session_kind)
        try:
            sess.touch()
            most = sess.session.connection.max_requests_in_flight if sess.session else None
            json_mode = post.json_mode(cfg.json_response)
            stream = checked(
                sess.state.accept_post(post, json_mode=json_mode, max_requests_in_flight=most)
            )
            await _deliver(sess, stream, [*post.preamble, req.body])
            if stream is None:
                sess.cancel_from(post.messages)
                # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.5
                # "If the server accepts the input, the server MUST return HTTP status code 202 Accepted
                # with no body."
                await h.send(*empty_answer(202, req.last))
            elif json_mode:
                await answer_json(h, sess, stream, last=req.last, modern=post.modern)
            else:
                await answer_sse(cfg, h, sess, stream, sess.id, last=req.last, post=post)
        finally:
            sess.touch()
            kept = post.parks and table.park(sess)  # for the next POST
            if post.session_kind == "stateless" and not kept:
                sess.end("stateless request answered")
            if post.cancel_when_done and not kept:  # answered, or its client left
                sess.cancel_scope.cancel()
            elif post.initialize and sess.state.init_failed:
                sess.end("initialize failed")
    except Refused as exc:
        raise Refused(post.refusal(exc.error)) from None


async def _deliver(sess: HttpSession, stream: LogicalStream | None, bodies: list[bytes]) -> None:
    """Give ``bodies`` to the session in order.

    Raises:
        Refused: 404, the session ended first (the POST's ``stream`` is then closed).
    """
    for data in bodies:
        if not await sess.deliver(data):
            if stream is not None:
                sess.state.close_post(stream)
            raise Refused(gone())


async def answer_json(
    h: H11Stream, sess: HttpSession, stream: LogicalStream, *, last: bool, modern: bool = False
) -> None:
    """Wait for the answer(s) collected on ``stream``, then write them as one JSON body
    (:attr:`~mcp_ref._http_streams.LogicalStream.json_body`; 202 when none came).  A
    client that left meanwhile is noticed by the write: the socket is not read.

    Raises:
        Refused: 404, the session ended first.
    """
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
    await h.send(*sess.heads.json_answer(session_id, stream.json_body, last, modern=modern))


async def get(cfg: ServerConfig, table: SessionTable, h: H11Stream, req: RequestReady) -> None:
    """Answer a GET: the stream :meth:`SessionStreams.resume
    <mcp_ref._http_streams.SessionStreams.resume>` names, from its cursor.

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
    this response writes, starting with the ``endpoint`` event that names the URL to
    POST to (``/messages?session_id=<id>``); the session ends with the response.

    Raises:
        Refused: as :meth:`SessionTable.open <.sessions.SessionTable.open>`.

    Source: 2024-11-05/basic/transports "HTTP with SSE";
    2025-06-18/basic/transports#backwards-compatibility.
    """
    sess = await table.open("legacy")
    try:
        first = session_endpoint(cfg.legacy_messages_path, str(sess.id))
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
    post: Post | None = None,
) -> None:
    """Write ``stream`` to this response from ``cursor`` until it ends, another
    response takes it over, or the client leaves (module docstring; the arguments are
    :class:`~mcp_ref._http_answers.SseAnswer`'s; ``post``: the POST it answers)."""
    head = sess.heads.sse(session_id, last, post=post is not None)
    answer = SseAnswer(
        sess.state,
        stream,
        head,
        cursor=cursor,
        first=first,
        retry_ms=cfg.retry_ms,
        post=post is not None,
        modern=post is not None and post.modern,
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
        if post is None:
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
    next request (up to ``MAX_PIPELINED`` bytes; past that the socket is not read).
    :meth:`HttpSession.wake` cancels the read (a cancelled ``receive_some`` loses
    nothing); without ``h`` it sets an event.
    """
    if stream.seq != seq:
        return "changed"
    waiting = sess.waiters.setdefault(stream, set())
    with trio.CancelScope(deadline=trio.current_time() + timeout) as scope:
        if h is None:  # nothing to read: an event is cheaper to wake than a cancelled wait
            changed = trio.Event()
            wake: Callable[[], None] = changed.set
        else:
            wake = scope.cancel
        waiting.add(wake)
        try:
            if h is None:
                await changed.wait()
            else:
                await _read_until_closed(h)
                return "eof"
        finally:
            waiting.discard(wake)
            if not waiting:
                sess.waiters.pop(stream, None)
    return "changed" if stream.seq != seq else "timeout"


async def _read_until_closed(h: H11Stream) -> None:
    """Read the client's side of the connection until the client closes it."""
    while h.conn.their_state is not h11.CLOSED:
        if len(h.conn.trailing_data[0]) > MAX_PIPELINED:
            await trio.sleep_forever()  # pipelined input piles up: stop reading
        if not await h.receive_some():
            return


_Answer = Callable[[ServerConfig, SessionTable, H11Stream, RequestReady], Awaitable[None]]

ENDPOINTS: Final[dict[Endpoint, _Answer]] = {
    Endpoint.POST: post,
    Endpoint.GET: get,
    Endpoint.DELETE: delete,
    Endpoint.LEGACY_GET: legacy_get,
    Endpoint.LEGACY_POST: legacy_post,
}
"""The handler of each endpoint (:func:`~mcp_ref._http_server.route_request`)."""

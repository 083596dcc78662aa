"""The endpoints of the HTTP server (:mod:`.server`): POST, GET and DELETE of the MCP
endpoint, and the two of the 2024-11-05 HTTP+SSE transport.

Theory of operation
-------------------
Each handler in :data:`ENDPOINTS` answers one routed request, or raises
:class:`~.sessions.Refused`.  A POST's body goes to its session
(:meth:`~.session.HttpSession.deliver`); notifications and responses get 202 at once.
Requests get a new logical stream (:meth:`~mcp_ref._http_streams.SessionStreams.open_post`),
answered either as one JSON body (:func:`answer_json`; what is sent while handling them
goes to the standalone stream) or as an SSE stream (:func:`~.sse.answer_sse`) that ends
after the last response.  A GET attaches the standalone stream, or with
``Last-Event-ID`` the stream that event belongs to, and replays what followed it.

Stateless mode: each POST gets a session of its own, for that POST only.  A POST other
than ``initialize`` first has a synthetic ``initialize`` and
``notifications/initialized`` fed before it
(:func:`~mcp_ref._http_server.stateless_preamble`), whose answer is dropped: the core's
lifecycle holds unchanged.

2024-11-05 (``GET /sse``): a session whose one stream starts with an ``endpoint`` event
naming ``/messages?session_id=<id>``; POSTs there are answered 202 and every server
message goes to that one stream.  The session ends when the GET's connection does.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Final

import h11
import trio

from ... import _http as rules
from ..._http import LAST_EVENT_ID, MessageKind, PostReply, http_error
from ..._http_connection import RequestReady
from ..._http_messages import MessageInfo, with_request_id
from ..._http_server import (
    STATELESS_INIT_ID,
    Endpoint,
    ServerConfig,
    check_batch,
    check_initialize_alone,
    gone,
    header,
    legacy_session_id,
    read_messages,
    request_version,
    stateless_preamble,
)
from ..._http_streams import LEGACY, STANDALONE, LogicalStream
from .common import CONNECTION_CLOSE, H11Stream
from .session import HttpSession
from .sessions import Refused, SessionTable, checked
from .sse import answer_sse, wait_change

__all__ = ["ENDPOINTS", "answer_json", "send_empty"]

_MAX_BATCH: Final = 64
"""The most messages of one POSTed batch (2025-03-26), unless the session's connection
allows fewer requests in flight."""

_ACCEPTED: Final = rules.response_headers(PostReply.ACCEPTED)


async def send_empty(
    h: H11Stream, status: int, headers: list[tuple[bytes, bytes]], last: bool
) -> None:
    """Write a response without body (``Connection: close`` when ``last``)."""
    reason = b"OK" if status == 200 else b"Accepted"
    headers = [*headers, CONNECTION_CLOSE] if last else headers
    await h.send(
        h11.Response(status_code=status, headers=headers, reason=reason), h11.EndOfMessage()
    )


async def post(cfg: ServerConfig, table: SessionTable, h: H11Stream, req: RequestReady) -> None:
    """Answer a POST to the MCP endpoint: 202 for notifications and responses, else
    the answer of its request(s) as JSON or an SSE stream.

    The body is read by the core's own reader (:func:`~mcp_ref._http_server.read_messages`),
    so every request this POST waits for is one the session's connection takes with the
    same id: it is answered, or the session ends.  A refusal of a body holding one
    request carries that request's id.

    Raises:
        Refused: the request breaks a rule (the error says which).
    """
    infos = checked(read_messages(req.body, max_items=_MAX_BATCH))
    try:
        checked(check_initialize_alone(infos))
        is_init = any(m.method == "initialize" for m in infos)
        if cfg.stateless:
            extra: list[bytes] = []
            if not is_init:  # bring the one-POST session to operating first
                version = checked(request_version(req.headers))
                if len(infos) > 1:
                    checked(check_batch(version, len(infos), None))
                extra = stateless_preamble(version)
            sess = await table.open("stateless")
            try:
                if extra:
                    sess.state.discard_answer(STATELESS_INIT_ID)  # the synthetic one
                await answer_post(cfg, h, sess, req, infos, is_init=is_init, extra=extra)
            finally:
                sess.end("stateless request answered")
            return
        if is_init:
            checked(rules.check_session(req.headers, is_initialize=True, active_sessions=()))
            sess = await table.open("streamable")
        else:
            sess = table.of_headers(req.headers)
            checked(request_version(req.headers))
            if len(infos) > 1:
                most = sess.session.connection.max_requests_in_flight if sess.session else None
                checked(check_batch(sess.state.protocol_version, len(infos), most))
        sess.touch()
        await answer_post(cfg, h, sess, req, infos, is_init=is_init)
    except Refused as exc:
        requests = [m for m in infos if m.kind is MessageKind.REQUEST]
        if len(requests) == 1 and requests[0].id is not None:
            raise Refused(with_request_id(exc.error, requests[0].id)) from None
        raise


async def answer_post(
    cfg: ServerConfig,
    h: H11Stream,
    sess: HttpSession,
    req: RequestReady,
    infos: list[MessageInfo],
    *,
    is_init: bool,
    extra: Sequence[bytes] = (),
) -> None:
    """Feed ``extra`` then the body to the session and answer the POST."""
    requests = [m for m in infos if m.kind is MessageKind.REQUEST]
    stream: LogicalStream | None = None
    if requests:
        stream = checked(
            sess.state.open_post(requests, json_mode=cfg.json_response, is_init=is_init)
        )
    for data in (*extra, req.body):
        if not await sess.deliver(data):
            if stream is not None:
                sess.state.close_post(stream)
            raise Refused(gone())
    if stream is None:
        sess.cancel_from(infos)
        # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.5
        # "If the server accepts the input, the server MUST return HTTP status code 202 Accepted
        # with no body."
        await send_empty(h, 202, _ACCEPTED, req.last)
        return
    try:
        if cfg.json_response:
            await answer_json(h, sess, stream, batch=len(infos) > 1, last=req.last)
        else:
            await answer_sse(cfg, h, sess, stream, sess.id, last=req.last, post=True)
    finally:
        sess.touch()
        if is_init and sess.state.init_failed:
            sess.end("initialize failed")


async def answer_json(
    h: H11Stream, sess: HttpSession, stream: LogicalStream, *, batch: bool, last: bool
) -> None:
    """Wait for the answer(s) collected on ``stream`` and write them as one JSON body
    (an array for a batch; 202 when none came).

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
    # writer two passes of the scheduler (at most) to write it first, so that the client
    # receives them in order as far as two connections allow.
    for _ in range(2):
        if not sess.get_stream_pending():
            break
        await trio.lowlevel.checkpoint()
    parts = stream.json_parts
    body = b"[" + b",".join(parts) + b"]" if batch else (parts[0] if parts else b"")
    if not body:
        await send_empty(h, 202, _ACCEPTED, last)
        return
    headers = sess.json_headers(None if sess.state.init_failed else sess.id, len(body))
    if last:
        headers.append(CONNECTION_CLOSE)
    await h.send(
        h11.Response(status_code=200, headers=headers, reason=b"OK"),
        h11.Data(data=body),
        h11.EndOfMessage(),
    )


async def get(cfg: ServerConfig, table: SessionTable, h: H11Stream, req: RequestReady) -> None:
    """Answer a GET: the session's standalone stream, or with ``Last-Event-ID`` the
    resumption of the stream that event belongs to.

    Raises:
        Refused: the request breaks a rule (400, 404, 409...).
    """
    sess = table.of_headers(req.headers)
    checked(request_version(req.headers))
    last_event_id = header(req.headers, LAST_EVENT_ID)
    cursor = None
    stream = sess.state.streams[STANDALONE]
    if last_event_id is not None:
        # Spec: 2025-06-18/basic/transports#resumability-and-redelivery.4
        # "The server MAY use this header to replay messages that would have been sent after the
        # last event ID, on the stream that was disconnected, and to resume the stream from that
        # point."
        found = checked(sess.state.store.replay_after(last_event_id))
        live = sess.state.streams.get(found.stream_id)
        if live is None:  # finished: the events left to send, then the end
            live = LogicalStream(found.stream_id, json_mode=False, pending=set(), base="")
            live.finished = True
            live.last_id = found.events[-1][0] if found.events else last_event_id.decode()
        stream = live
        cursor = last_event_id.decode("latin-1")
    sess.touch()
    await answer_sse(cfg, h, sess, stream, sess.id, last=req.last, cursor=cursor)


async def delete(cfg: ServerConfig, table: SessionTable, h: H11Stream, req: RequestReady) -> None:
    """Answer a DELETE (which the core routes here only with sessions): end the session.

    Raises:
        Refused: the request breaks a rule.
    """
    sess = table.of_headers(req.headers)
    checked(request_version(req.headers))
    # Spec: 2025-06-18/basic/transports#session-management.8
    # "Clients that no longer need a particular session (e.g., because the user is leaving the
    # client application) SHOULD send an HTTP DELETE to the MCP endpoint with the `Mcp-Session-Id`
    # header, to explicitly terminate the session."
    sess.end("terminated by the client (DELETE)")
    await send_empty(h, 200, [(b"content-length", b"0")], req.last)


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
        endpoint = rules.endpoint_event(f"{cfg.legacy_messages_path}?session_id={sess.id}")
        await answer_sse(cfg, h, sess, sess.state.streams[LEGACY], None, last=True, first=endpoint)
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
    sess = table.sessions.get(checked(legacy_session_id(req.query)))
    if sess is None or sess.kind != "legacy":
        raise Refused(http_error(404, "session not found", clause=None))
    infos = checked(read_messages(req.body))
    sess.touch()
    if not await sess.deliver(req.body):
        raise Refused(gone())
    sess.cancel_from(infos)
    await send_empty(h, 202, _ACCEPTED, req.last)


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

"""POST, GET and DELETE of the Streamable HTTP endpoint (:mod:`.server`).

Theory of operation
-------------------
A POST's body goes to its session (:meth:`~.session.HttpSession.deliver`);
notifications and responses get 202 at once.  Requests get a new logical stream
(:meth:`~mcp_ref._http_streams.SessionStreams.open_post`), answered either as one JSON
body (:func:`answer_json`) or as an SSE stream (:func:`~.sse.answer_sse`) that ends
after the last response.  A GET attaches the standalone stream, or with
``Last-Event-ID`` the stream that event belongs to, and replays what followed it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Final

import h11
import trio

from ... import _http as rules
from ..._http import LAST_EVENT_ID, HttpError, MessageKind, PostReply
from ..._http_messages import MessageInfo, with_request_id
from ..._http_server import (
    STATELESS_INIT_ID,
    RequestHeaders,
    ServerConfig,
    check_batch,
    check_initialize_alone,
    gone,
    header,
    read_messages,
    request_version,
    stateless_preamble,
)
from ..._http_streams import STANDALONE, LogicalStream
from .common import CONNECTION_CLOSE, H11Stream
from .requests import Refused, checked, send_simple
from .session import HttpSession
from .sessions import SessionTable
from .sse import answer_sse, wait_change

__all__ = ["answer_json", "answer_post", "delete", "get", "post", "stateless_post"]

log = logging.getLogger("mcp_ref.trio.http")

_MAX_BATCH: Final = 64
"""The most messages of one POSTed batch (2025-03-26), unless the session's connection
allows fewer requests in flight."""


async def post(
    cfg: ServerConfig,
    table: SessionTable,
    h: H11Stream,
    headers: RequestHeaders,
    body: bytes,
    last: bool,
) -> None:
    """Answer a POST to the MCP endpoint: 202 for notifications and responses, else
    the answer of its request(s) as JSON or an SSE stream.

    The body is read by the core's own reader
    (:func:`~mcp_ref._http_server.read_messages`), so every request this POST waits for
    is one the session's connection takes with the same id: it is answered, or the
    session ends.  A refusal of a body holding one request carries that request's id.

    Raises:
        Refused: the request breaks a rule (the error says which).
    """
    infos = checked(read_messages(body, max_items=_MAX_BATCH))
    try:
        await _post_messages(cfg, table, h, headers, body, infos, last)
    except Refused as exc:
        requests = [m for m in infos if m.kind is MessageKind.REQUEST]
        if len(requests) == 1 and requests[0].id is not None:
            raise Refused(with_request_id(exc.error, requests[0].id)) from None
        raise


async def _post_messages(
    cfg: ServerConfig,
    table: SessionTable,
    h: H11Stream,
    headers: RequestHeaders,
    body: bytes,
    infos: list[MessageInfo],
    last: bool,
) -> None:
    """The rest of :func:`post`, once the body is read: its session, then its answer."""
    checked(check_initialize_alone(infos))
    is_init = any(m.method == "initialize" for m in infos)
    if cfg.stateless:
        if len(infos) > 1:
            _check_batch(checked(request_version(headers)), len(infos), None)
        await stateless_post(cfg, table, h, headers, body, infos, is_init, last)
        return
    if is_init:
        got = rules.check_session(headers, is_initialize=True, active_sessions=table.sessions)
        if isinstance(got, HttpError):
            raise Refused(got)
        sess = await table.open("streamable")
    else:
        sess = table.of_headers(headers)
        checked(request_version(headers))
        if len(infos) > 1:
            _check_batch(sess.state.protocol_version, len(infos), sess)
    sess.touch()
    await answer_post(cfg, h, sess, body, infos, is_init=is_init, last=last)


def _check_batch(version: str | None, size: int, sess: HttpSession | None) -> None:
    """:func:`mcp_ref._http_server.check_batch` for this session's connection.

    Raises:
        Refused: 400 with a -32600 body.
    """
    session = sess.session if sess is not None else None
    most = session.connection.max_requests_in_flight if session is not None else None
    err = check_batch(version, size, most)
    if err is not None:
        raise Refused(err)


async def answer_post(
    cfg: ServerConfig,
    h: H11Stream,
    sess: HttpSession,
    body: bytes,
    infos: list[MessageInfo],
    *,
    is_init: bool,
    last: bool,
    extra: Sequence[bytes] = (),
) -> None:
    """Feed ``extra`` then ``body`` to the session and answer the POST."""
    requests = [m for m in infos if m.kind is MessageKind.REQUEST]
    if not requests:
        for data in (*extra, body):
            if not await sess.deliver(data):
                raise Refused(gone())
        sess.cancel_from(infos)
        # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.5
        # "If the server accepts the input, the server MUST return HTTP status code 202 Accepted
        # with no body."
        reply = rules.post_reply(infos[0].kind, stream=False)
        await send_simple(h, 202, rules.response_headers(reply), last)
        return
    json_mode = cfg.json_response
    stream = sess.state.open_post(requests, json_mode=json_mode, is_init=is_init)
    if isinstance(stream, HttpError):
        raise Refused(stream)
    for data in (*extra, body):
        if not await sess.deliver(data):
            sess.state.close_post(stream)
            raise Refused(gone())
    session_id = sess.id if sess.kind == "streamable" else None
    try:
        if json_mode:
            await answer_json(h, sess, stream, session_id, batch=len(infos) > 1, last=last)
        else:
            await answer_sse(cfg, h, sess, stream, session_id, last=last, post=True)
    finally:
        sess.touch()
        if is_init and sess.state.init_failed and sess.kind == "streamable":
            sess.end("initialize failed")


async def answer_json(
    h: H11Stream,
    sess: HttpSession,
    stream: LogicalStream,
    session_id: str | None,
    *,
    batch: bool,
    last: bool,
) -> None:
    """Wait for the answer(s) collected on ``stream`` and write them as one JSON body
    (an array for a batch; 202 when none came)."""
    # The answer is written whole once it is complete: a client that left meanwhile is
    # noticed then (the write fails), so the socket is not watched while waiting.
    while not stream.finished and not sess.ended:
        await wait_change(None, sess, stream, stream.seq, math.inf)
    if not stream.finished:
        raise Refused(gone())
    await _let_get_stream_go_first(sess)
    parts = stream.json_parts
    body = b"[" + b",".join(parts) + b"]" if batch else (parts[0] if parts else b"")
    if not body:
        await send_simple(h, 202, rules.response_headers(PostReply.ACCEPTED), last)
        return
    if sess.state.init_failed:
        session_id = None
    headers = sess.json_headers(session_id, len(body))
    if last:
        headers.append(CONNECTION_CLOSE)
    await h.send(
        h11.Response(status_code=200, headers=headers, reason=b"OK"),
        h11.Data(data=body),
        h11.EndOfMessage(),
    )


async def _let_get_stream_go_first(sess: HttpSession) -> None:
    """What a handler sends before its JSON answer goes on the GET stream: give that
    stream's writer two passes of the scheduler (at most, and only when it has events
    to write) to write them before the answer, so that the client receives them in the
    order they were sent as far as two connections allow."""
    for _ in range(2):
        if not sess.get_stream_pending():
            return
        await trio.lowlevel.checkpoint()


async def stateless_post(
    cfg: ServerConfig,
    table: SessionTable,
    h: H11Stream,
    headers: RequestHeaders,
    body: bytes,
    infos: list[MessageInfo],
    is_init: bool,
    last: bool,
) -> None:
    """Answer a POST in stateless mode, with a session of its own for this POST only."""
    extra: list[bytes] = []
    if not is_init:  # the session lives for this POST only: bring it to operating
        extra = stateless_preamble(checked(request_version(headers)))
    sess = await table.open("stateless")
    try:
        if extra:
            sess.state.discard_answer(STATELESS_INIT_ID)  # the synthetic one goes nowhere
        await answer_post(cfg, h, sess, body, infos, is_init=is_init, last=last, extra=extra)
    finally:
        sess.end("stateless request answered")


async def get(
    cfg: ServerConfig, table: SessionTable, h: H11Stream, headers: RequestHeaders, last: bool
) -> None:
    """Answer a GET (routed by :func:`~mcp_ref._http_server.route_request`): the
    session's standalone stream, or with ``Last-Event-ID`` the resumption of the stream
    that event belongs to.

    Raises:
        Refused: the request breaks a rule (400, 404, 409...).
    """
    sess = table.of_headers(headers)
    checked(request_version(headers))
    last_event_id = header(headers, LAST_EVENT_ID)
    if last_event_id is None:
        stream = sess.state.streams[STANDALONE]
        cursor = None
    else:
        # Spec: 2025-06-18/basic/transports#resumability-and-redelivery.4
        # "The server MAY use this header to replay messages that would have been sent after the
        # last event ID, on the stream that was disconnected, and to resume the stream from that
        # point."
        found = sess.state.store.replay_after(last_event_id)
        if isinstance(found, HttpError):
            raise Refused(found)
        live = sess.state.streams.get(found.stream_id)
        if live is None:
            # Finished: the events left to send, then the end.
            live = LogicalStream(found.stream_id, json_mode=False, pending=set(), base="")
            live.finished = True
            live.last_id = found.events[-1][0] if found.events else last_event_id.decode()
        stream = live
        cursor = last_event_id.decode("latin-1")
    sess.touch()
    await answer_sse(cfg, h, sess, stream, sess.id, last=last, cursor=cursor)


async def delete(table: SessionTable, h: H11Stream, headers: RequestHeaders, last: bool) -> None:
    """Answer a DELETE (routed by :func:`~mcp_ref._http_server.route_request`, which
    refuses it in stateless mode): end the session.

    Raises:
        Refused: the request breaks a rule.
    """
    sess = table.of_headers(headers)
    checked(request_version(headers))
    # Spec: 2025-06-18/basic/transports#session-management.8
    # "Clients that no longer need a particular session (e.g., because the user is leaving the
    # client application) SHOULD send an HTTP DELETE to the MCP endpoint with the `Mcp-Session-Id`
    # header, to explicitly terminate the session."
    sess.end("terminated by the client (DELETE)")
    await send_simple(h, 200, [(b"content-length", b"0")], last)

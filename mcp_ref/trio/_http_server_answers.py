"""POST, GET and DELETE of the Streamable HTTP endpoint (:mod:`._http_server`).

Theory of operation
-------------------
A POST's body goes to its session (:meth:`~._http_server_streams.HttpSession.deliver`);
notifications and responses get 202 at once.  Requests get a new logical stream,
answered either as one JSON body (:func:`answer_json`) or as an SSE stream
(:func:`~._http_server_sse.answer_sse`) that ends after the last response.  A GET
attaches the standalone stream, or with ``Last-Event-ID`` the stream that event belongs
to, and replays what followed it.

The handler of a POST's only request runs in the POST's own task
(``Session.push(run_here=...)``; not when streams are primed, since the priming event
must go at once), so a quick answer is read, handled and written with no other task and
no trip through the scheduler.  If the handler sends anything before its response, or
is still running after ``WATCH_AFTER`` seconds or so, a writer task
(:class:`~._http_server_sse.EarlyWriter`) takes its stream over.
"""

from __future__ import annotations

import functools
import json
import logging
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

import h11
import trio

from .. import _http as rules
from .._http import LAST_EVENT_ID, HttpError, MessageKind, PostReply, http_error
from .._http_messages import MessageInfo, with_request_id
from .._methods import BATCH_VERSIONS
from ._http_common import CONNECTION_CLOSE, H11Stream, request_key
from ._http_server_requests import (
    Refused,
    RequestHeaders,
    gone,
    header,
    messages_of,
    read_body,
    send_simple,
    version_of,
)
from ._http_server_sse import EarlyWriter, answer_sse, wait_change
from ._http_server_streams import STANDALONE, HttpSession, LogicalStream

if TYPE_CHECKING:
    from ._http_server_routing import HttpServer

__all__ = ["answer_json", "answer_post", "delete", "get", "post", "stateless_post"]

log = logging.getLogger("mcp_ref.trio.http")

_STATELESS_INIT_ID: Final = "mcp-ref:stateless-initialize"


_MAX_BATCH: Final = 64
"""The most messages of one POSTed batch (2025-03-26), unless the session's connection
allows fewer requests in flight."""


async def post(server: HttpServer, h: H11Stream, headers: RequestHeaders, last: bool) -> None:
    """Answer a POST to the MCP endpoint: 202 for notifications and responses, else
    the answer of its request(s) as JSON or an SSE stream.

    The body is read by the core's own reader (:func:`~._http_server_requests.messages_of`),
    so every request this POST waits for is one the session's connection takes with the
    same id: it is answered, or the session ends.  A refusal of a body holding one
    request carries that request's id.

    Raises:
        Refused: the request breaks a rule (the error says which).
    """
    err = headers.rule("accept POST", lambda: rules.check_accept(headers, b"POST"))
    if err is not None:
        raise Refused(err)
    body = await read_body(h, headers, server.limits)
    infos = messages_of(body, max_items=_MAX_BATCH)
    try:
        await _post_messages(server, h, headers, body, infos, last)
    except Refused as exc:
        requests = [m for m in infos if m.kind is MessageKind.REQUEST]
        if len(requests) == 1 and requests[0].id is not None:
            raise Refused(with_request_id(exc.error, requests[0].id)) from None
        raise


async def _post_messages(
    server: HttpServer,
    h: H11Stream,
    headers: RequestHeaders,
    body: bytes,
    infos: list[MessageInfo],
    last: bool,
) -> None:
    """The rest of :func:`post`, once the body is read: its session, then its answer."""
    is_init = any(m.method == "initialize" for m in infos)
    if is_init and len(infos) > 1:
        raise Refused(
            http_error(
                400,
                "initialize must be sent alone",
                clause="2025-06-18/basic/lifecycle#initialization.1",
            )
        )
    if server.stateless:
        if len(infos) > 1:
            _check_batch(version_of(headers), len(infos), None)
        await stateless_post(server, h, headers, body, infos, is_init, last)
        return
    if is_init:
        got = rules.check_session(
            headers, is_initialize=True, active_sessions=server.table.sessions
        )
        if isinstance(got, HttpError):
            raise Refused(got)
        sess = await server.table.open("streamable")
    else:
        sess = server.table.of_headers(headers)
        version_of(headers)
        if len(infos) > 1:
            _check_batch(sess.protocol_version, len(infos), sess)
    sess.touch()
    await answer_post(server, h, sess, body, infos, is_init=is_init, last=last)


def _check_batch(version: str | None, size: int, sess: HttpSession | None) -> None:
    """Refuse a batch the session's connection would refuse whole (with id null, which
    would answer none of the POST's requests): outside 2025-03-26, or larger than the
    connection takes.

    Raises:
        Refused: 400 with a -32600 body.
    """
    # Spec: 2025-06-18/basic#messages.1 (no batches from 2025-06-18 on)
    # "All messages between MCP clients and servers MUST follow the JSON-RPC 2.0 specification."
    if version not in BATCH_VERSIONS:
        raise Refused(
            http_error(
                400,
                f"JSON-RPC batches are not allowed in protocol version {version}",
                clause="2025-06-18/basic/transports#sending-messages-to-the-server.4",
            )
        )
    session = sess.session if sess is not None else None
    if session is not None and size > session.connection.max_requests_in_flight:
        raise Refused(http_error(400, "batch too large", clause=None))


async def answer_post(
    server: HttpServer,
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
    keys = {request_key(m.id) for m in requests}
    if any(k in sess.routes for k in keys) or len(keys) != len(requests):
        raise Refused(http_error(400, "a request with this id is still being handled", clause=None))
    if len(sess.streams) >= server.limits.max_streams_per_session + 1:
        raise Refused(
            http_error(
                429,
                f"too many requests in progress in this session "
                f"(at most {server.limits.max_streams_per_session})",
                clause=None,
            )
        )
    # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.8
    # "If the input is a JSON-RPC request, the server MUST either return `Content-Type:
    # text/event-stream`, to initiate an SSE stream, or `Content-Type: application/json`, to return
    # one JSON object."
    json_mode = server.json_response
    stream = sess.new_stream(None, json_mode=json_mode, pending=set(keys))
    sess.streams[stream.id] = stream
    for k in keys:
        sess.routes[k] = stream
    if is_init:
        sess.init_key = next(iter(keys))
    session_id = sess.id if sess.kind == "streamable" else None
    # A POST of one request: its handler runs in this task (Session.push(run_here=)),
    # so a quick answer costs no task and no trip through the scheduler.  Not when the
    # session primes its streams: the priming event must go at once.
    inline = requests[0].id if len(infos) == 1 and (json_mode or not sess.primes) else None
    early: EarlyWriter | None = None
    if inline is not None and not json_mode:
        # What the handler sends before its response, or the head of a late response,
        # goes out at once: a writer task then takes the stream over.
        write = functools.partial(
            answer_sse, server, h, sess, stream, session_id, last=last, post=True
        )
        early = EarlyWriter(server.table.supervisor, write)
        stream.on_early = early.start
        server.late_watch.add(stream)
    try:
        for data in (*extra, body):
            if not await sess.deliver(data, run_here=inline if data is body else None):
                for k in keys:
                    sess.routes.pop(k, None)
                sess.streams.pop(stream.id, None)
                if early is not None and early.started:
                    # The writer owns the connection: no answer will come, so it ends
                    # the response, and the refusal goes only if it wrote nothing.
                    stream.finished = True
                    stream.wake()
                    await early.wait()
                raise Refused(gone())
    finally:
        if early is not None:
            stream.on_early = None
            server.late_watch.discard(stream)
    try:
        if early is not None and early.started:
            await early.wait()
        elif json_mode:
            await answer_json(server, h, sess, stream, session_id, batch=len(infos) > 1, last=last)
        else:
            await answer_sse(server, h, sess, stream, session_id, last=last, post=True)
    finally:
        sess.touch()
        if is_init and sess.init_failed and sess.kind == "streamable":
            sess.end("initialize failed")


async def answer_json(
    server: HttpServer,
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
    while not stream.finished and not sess.ended:
        if await wait_change(h, stream, math.inf, late=server.late_watch) == "eof":
            return  # the client went away
    if not stream.finished:
        raise Refused(gone())
    await _let_get_stream_go_first(sess)
    parts = stream.json_parts
    body = b"[" + b",".join(parts) + b"]" if batch else (parts[0] if parts else b"")
    if not body:
        await send_simple(h, 202, rules.response_headers(PostReply.ACCEPTED), last)
        return
    if sess.init_failed:
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
    get_stream = sess.streams.get(STANDALONE)
    for _ in range(2):
        if (
            get_stream is None
            or not get_stream.attached
            or (get_stream.delivered_id or get_stream.base_id) == get_stream.last_id
        ):
            return  # nothing it holds is still to be written
        await trio.lowlevel.checkpoint()


async def stateless_post(
    server: HttpServer,
    h: H11Stream,
    headers: RequestHeaders,
    body: bytes,
    infos: list[MessageInfo],
    is_init: bool,
    last: bool,
) -> None:
    """Answer a POST in stateless mode, with a session of its own for this POST only."""
    extra: list[bytes] = []
    if not is_init:
        version = version_of(headers)
        # The session lives for this POST only: bring it to the operating state.
        init = {
            "jsonrpc": "2.0",
            "id": _STATELESS_INIT_ID,
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "stateless-http-client", "version": "0"},
            },
        }
        extra = [
            json.dumps(init).encode(),
            b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        ]
    sess = await server.table.open("stateless")
    try:
        if extra:
            # The answer to the synthetic initialize goes nowhere.
            discard = sess.new_stream("discard", json_mode=True)
            sess.routes[request_key(_STATELESS_INIT_ID)] = discard
        await answer_post(server, h, sess, body, infos, is_init=is_init, last=last, extra=extra)
    finally:
        sess.end("stateless request answered")


async def get(server: HttpServer, h: H11Stream, headers: RequestHeaders, last: bool) -> None:
    """Answer a GET: the session's standalone stream, or with ``Last-Event-ID`` the
    resumption of the stream that event belongs to.

    Raises:
        Refused: the request breaks a rule (405, 406, 400, 404, 409...).
    """
    # Spec: 2025-06-18/basic/transports#listening-for-messages-from-the-server.3
    # "The server MUST either return `Content-Type: text/event-stream` in response to this HTTP
    # GET, or else return HTTP 405 Method Not Allowed, indicating that the server does not offer
    # an SSE stream at this endpoint."
    # 405 (with its Allow header) when the GET stream is off; else the SSE stream below.
    err = rules.check_method(
        b"GET", allow_get=server.enable_get_stream, allow_delete=not server.stateless
    ) or rules.check_accept(headers, b"GET")
    if err is not None:
        raise Refused(err)
    sess = server.table.of_headers(headers)
    version_of(headers)
    last_event_id = header(headers, LAST_EVENT_ID)
    if last_event_id is None:
        stream = sess.streams[STANDALONE]
        cursor = None
    else:
        # Spec: 2025-06-18/basic/transports#resumability-and-redelivery.4
        # "The server MAY use this header to replay messages that would have been sent after the
        # last event ID, on the stream that was disconnected, and to resume the stream from that
        # point."
        found = sess.store.replay_after(last_event_id)
        if isinstance(found, HttpError):
            raise Refused(found)
        live = sess.streams.get(found.stream_id)
        if live is None:
            # Finished: the events left to send, then the end.
            live = LogicalStream(found.stream_id, json_mode=False, pending=set(), base="")
            live.finished = True
            live.last_id = found.events[-1][0] if found.events else last_event_id.decode()
        stream = live
        cursor = last_event_id.decode("latin-1")
    sess.touch()
    await answer_sse(server, h, sess, stream, sess.id, last=last, cursor=cursor)


async def delete(server: HttpServer, h: H11Stream, headers: RequestHeaders, last: bool) -> None:
    """Answer a DELETE: end the session (405 in stateless mode).

    Raises:
        Refused: the request breaks a rule.
    """
    if server.stateless:
        err = rules.check_method(b"DELETE", allow_get=False, allow_delete=False)
        assert err is not None
        raise Refused(err)
    sess = server.table.of_headers(headers)
    version_of(headers)
    # Spec: 2025-06-18/basic/transports#session-management.8
    # "Clients that no longer need a particular session (e.g., because the user is leaving the
    # client application) SHOULD send an HTTP DELETE to the MCP endpoint with the `Mcp-Session-Id`
    # header, to explicitly terminate the session."
    sess.end("terminated by the client (DELETE)")
    await send_simple(h, 200, [(b"content-length", b"0")], last)

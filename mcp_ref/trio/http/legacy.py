"""The 2024-11-05 HTTP+SSE endpoints of the HTTP server (:mod:`.server`).

Theory of operation
-------------------
``GET /sse`` opens a session whose one stream (``LEGACY``) starts with an ``endpoint``
event naming ``/messages?session_id=<id>``; POSTs there are answered 202 and every server
message goes to that one stream.  The session ends when the GET's connection does.

Source: 2024-11-05/basic/transports "HTTP with SSE";
2025-06-18/basic/transports#backwards-compatibility.
"""

from __future__ import annotations

from ... import _http as rules
from ..._http import PostReply, http_error
from ..._http_server import (
    RequestHeaders,
    ServerConfig,
    gone,
    legacy_session_id,
    read_messages,
)
from ..._http_streams import LEGACY
from .common import H11Stream
from .requests import Refused, checked, send_simple
from .sessions import SessionTable
from .sse import answer_sse

__all__ = ["legacy_get", "legacy_post"]


async def legacy_get(cfg: ServerConfig, table: SessionTable, h: H11Stream, last: bool) -> None:
    """Answer ``GET`` of the SSE endpoint: a new session whose one stream this response
    writes, starting with the ``endpoint`` event; the session ends with the response.

    Raises:
        Refused: 503 past ``limits.max_sessions``, 429 past
            ``limits.max_sessions_per_peer`` (both with ``Retry-After``).
    """
    sess = await table.open("legacy")
    assert sess.id is not None
    try:
        # Source: 2024-11-05/basic/transports "HTTP with SSE": the first event names
        # the URL to POST messages to.
        endpoint = rules.endpoint_event(f"{cfg.legacy_messages_path}?session_id={sess.id}")
        await answer_sse(cfg, h, sess, sess.state.streams[LEGACY], None, last=True, first=endpoint)
    finally:
        sess.end("the SSE connection closed")


async def legacy_post(
    cfg: ServerConfig,
    table: SessionTable,
    h: H11Stream,
    headers: RequestHeaders,
    query: str,
    body: bytes,
    last: bool,
) -> None:
    """Answer a POST to the message endpoint: 202, the message(s) going to the session
    named by the ``session_id`` query parameter.

    Raises:
        Refused: 400 without ``session_id``, 404 for an unknown or ended session, 400
            for a body that is not a message or a batch of them.
    """
    sess = table.sessions.get(checked(legacy_session_id(query)))
    if sess is None or sess.kind != "legacy":
        raise Refused(http_error(404, "session not found", clause=None))
    infos = checked(read_messages(body))
    sess.touch()
    if not await sess.deliver(body):
        raise Refused(gone())
    sess.cancel_from(infos)
    await send_simple(h, 202, rules.response_headers(PostReply.ACCEPTED), last)

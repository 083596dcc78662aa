"""What one POST to the Streamable HTTP endpoint means, sans-IO.

Theory of operation
-------------------
A POST's body is read by the session connection's own reader
(:func:`read_messages`), before anything else happens, so that a body the connection
would refuse gets 400 with the connection's own JSON-RPC error, and every request the
POST then waits for is one the connection takes with the same id.  :func:`read_post`
then decides, from the body and the headers alone, what the POST asks for
(:class:`Post`):

* notifications and responses only: ``202 Accepted`` once the body reached the
  session; requests: a logical stream that answers them
  (:meth:`~mcp_ref._http_streams.SessionStreams.accept_post`), as one JSON body or an
  SSE stream;
* ``initialize`` (alone, without ``Mcp-Session-Id``) opens a session; any other POST
  goes to the session its ``Mcp-Session-Id`` names
  (:func:`~mcp_ref._http_server.session_request`);
* a modern-era (2026-07-28) message, once :func:`~mcp_ref._http_modern.check_modern`
  passes it, opens a session for this POST only, with nothing fed before it
  (:mod:`mcp_ref._http_modern`);
* a stateless server opens a session for every POST; one other than ``initialize``
  first has a synthetic ``initialize`` and ``notifications/initialized`` fed before it
  (:func:`stateless_preamble`), whose answer is dropped: the core's lifecycle holds
  unchanged;
* a batch (2025-03-26 only) is refused whole when the connection would refuse it
  (:func:`check_batch`): its refusal, with id null, would answer none of its requests.

A refusal of a body holding one request carries that request's id
(:meth:`Post.refusal`), so the client's call is answered, not left waiting.
"""

from __future__ import annotations

import json
from typing import Final, Literal

import attrs

from . import _http as rules
from ._batch import refuse_batch
from ._http import HttpError, MessageKind, http_error
from ._http_messages import MessageInfo, read_post_body, with_request_id
from ._http_modern import check_modern, is_listen, read_modern
from ._http_server import RequestHeaders, ServerConfig, request_version
from ._methods import BATCH_VERSIONS
from .events import RequestId

__all__ = [
    "MAX_BATCH",
    "STATELESS_INIT_ID",
    "Post",
    "check_batch",
    "check_initialize_alone",
    "read_messages",
    "read_post",
    "stateless_preamble",
]

MAX_BATCH: Final = 64
"""The most messages of one POSTed batch (2025-03-26), unless the session's connection
allows fewer requests in flight."""


@attrs.frozen(kw_only=True)
class Post:
    """What one POST to the MCP endpoint asks for (:func:`read_post`)."""

    messages: list[MessageInfo]
    """Kind, id and method of each message of the body, as the connection reads them."""
    requests: list[MessageInfo]
    """The requests among them: none, and the answer is 202 once the body reached the
    session; else a logical stream answers them."""
    initialize: bool
    """The body is ``initialize`` (alone)."""
    new_session: bool
    """The POST opens a session (``initialize``, or any POST to a stateless server);
    else it goes to the one its ``Mcp-Session-Id`` names."""
    preamble: list[bytes]
    """What a stateless session is fed before the body (:func:`stateless_preamble`;
    the answer to its ``initialize``, id :data:`STATELESS_INIT_ID`, is dropped)."""
    modern: bool = False
    """The body is a modern-era (2026-07-28) message: it opens a session of its own,
    with no preamble, gone once answered (:mod:`mcp_ref._http_modern`)."""
    stateless: bool = False
    """The server is stateless (``ServerConfig.stateless``)."""

    @property
    def session_kind(self) -> Literal["streamable", "stateless"]:
        """The kind of session the POST opens, if it opens one: ``"stateless"`` (it ends
        once answered) on a stateless server or for a modern POST, else
        ``"streamable"``."""
        return "stateless" if self.stateless or self.modern else "streamable"

    @property
    def parks(self) -> bool:
        """Whether the POST may take a parked session, and its answered session waits
        for the client's next POST (:meth:`~mcp_ref._http_sessions.SessionBook.park`): a
        modern POST to a server that is not stateless."""
        return self.modern and not self.stateless

    @property
    def accepted_alone(self) -> bool:
        """Whether the POST is answered ``202 Accepted`` at once, without a session: a
        modern notification, which no request or session could relate to (2026-07-28
        defines none a client sends over Streamable HTTP: ``notifications/cancelled``
        is for stdio; closing the response stream cancels)."""
        # Spec: 2026-07-28/basic/transports/streamable-http#sending-messages.7
        # "If the server accepts it, the server MUST return HTTP status code `202 Accepted`
        # with no body."
        return self.modern and not self.requests

    @property
    def cancel_when_done(self) -> bool:
        """Whether the POST's session is cancelled once the POST is done (its requests
        answered, or its client gone): a modern POST holding a request, whose session
        serves nothing else."""
        # Spec: 2026-07-28/basic/transports/streamable-http#cancellation.1
        # "Closing the SSE response stream MUST be treated by the server as cancellation of
        # that request."
        # Spec: 2026-07-28/basic/patterns/cancellation#transport-specific-cancellation.1
        # "The server MUST treat a client disconnect as cancellation of that request."
        # Spec: 2026-07-28/basic/transports/streamable-http#cancellation.2
        # "The server SHOULD stop work on the cancelled request as soon as practical and MUST
        # NOT send any further messages for it."
        return self.modern and bool(self.requests)

    def json_mode(self, json_response: bool) -> bool:
        """Whether the POST is answered with one JSON body (the server's
        ``json_response``), or an SSE stream: always for ``subscriptions/listen``,
        whose answer is the stream of its notifications."""
        # Spec: 2026-07-28/basic/transports/streamable-http#receiving-messages.1
        # "The server MAY send JSON-RPC notifications — for example,
        # [`notifications/progress`][notifications-progress] or
        # [`notifications/message`][notifications-message] — before the final response."
        # A JSON answer holds the response only; a listen's answer is its notifications.
        # Spec: 2026-07-28/basic/transports/streamable-http#sending-messages.10
        # "If the body is a JSON-RPC request, the server MUST return either `Content-Type:
        # application/json` (a single JSON object) or `Content-Type: text/event-stream` (an
        # SSE response stream)."
        return json_response and not (self.modern and is_listen(self.requests))

    @property
    def batch(self) -> bool:
        """The body is a batch of several messages (answered, in JSON, as an array)."""
        return len(self.messages) > 1

    def refusal(self, err: HttpError) -> HttpError:
        """``err``, carrying the id of the body's request when it holds exactly one."""
        if len(self.requests) == 1 and self.requests[0].id is not None:
            return with_request_id(err, self.requests[0].id)
        return err


def read_post(
    cfg: ServerConfig, headers: RequestHeaders, body: bytes, handler: object = None
) -> Post | HttpError:
    """What a POST to the MCP endpoint asks for (module docstring), or its refusal:
    400 for a body that is not a message or a batch of at most :data:`MAX_BATCH`
    (:func:`read_messages`), ``initialize`` in a batch or with ``Mcp-Session-Id``, a bad
    ``MCP-Protocol-Version`` or a batch the connection would refuse (stateless).  The
    rules that need the session (it exists, its version, its batch bound) come later
    (:func:`~mcp_ref._http_server.session_request`,
    :meth:`~mcp_ref._http_streams.SessionStreams.accept_post`).  A modern POST is
    judged by :func:`~mcp_ref._http_modern.check_modern`, with the ``handler``'s
    ``tool_input_schema`` method when it has one (:data:`~mcp_ref._http_modern.ToolSchema`).

    Source: 2025-06-18/basic/transports#sending-messages-to-the-server,
    #session-management.7, #protocol-version-header.4; 2025-06-18/basic/lifecycle
    #initialization.1.
    """
    infos = read_messages(body, max_items=MAX_BATCH)
    if isinstance(infos, HttpError):
        return infos
    modern = read_modern(headers, body)
    if modern is not None:
        # No session: the POST gets one of its own, and its connection the modern era.
        # Spec: 2026-07-28/basic/transports/streamable-http#receiving-messages.2
        # "These notifications MUST relate to the originating client request."
        # (the POST's stream carries only what its own session, serving that one
        # request, sends)
        post = Post(
            messages=infos,
            requests=[m for m in infos if m.kind is MessageKind.REQUEST],
            initialize=False,
            new_session=True,
            preamble=[],
            modern=True,
            stateless=cfg.stateless,
        )
        return check_modern(headers, modern, getattr(handler, "tool_input_schema", None)) or post
    is_init = any(m.method == "initialize" for m in infos)
    post = Post(
        messages=infos,
        requests=[m for m in infos if m.kind is MessageKind.REQUEST],
        initialize=is_init,
        new_session=is_init or cfg.stateless,
        preamble=[],
        stateless=cfg.stateless,
    )
    err = check_initialize_alone(infos)
    if err is None and is_init and not cfg.stateless:
        got = rules.check_session(headers, is_initialize=True, active_sessions=())
        err = got if isinstance(got, HttpError) else None
    elif err is None and cfg.stateless and not is_init:
        # A one-POST session is brought to the operating state first.
        version = request_version(headers)
        if isinstance(version, HttpError):
            err = version
        else:
            err = check_batch(version, len(infos), None) if post.batch else None
            post.preamble.extend(stateless_preamble(version))
    return post if err is None else post.refusal(err)


def read_messages(body: bytes, *, max_items: int = 64) -> list[MessageInfo] | HttpError:
    """Kind, id and method of each message of a POST body, as the session's connection
    will read them (:func:`mcp_ref._http_messages.read_post_body`); or 400 for a body
    that is not a message or a batch of at most ``max_items`` of them, with the JSON-RPC
    error body the connection would have sent (-32700, -32600 or -32602; the request's
    id wherever it can be read)."""
    # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.4
    # "The body of the POST request MUST be a single JSON-RPC request, notification, or
    # response."
    return read_post_body(body, max_items=max_items)


def check_initialize_alone(infos: list[MessageInfo]) -> HttpError | None:
    """400 for a batch that holds ``initialize``: it must be sent alone."""
    # Spec: 2025-06-18/basic/lifecycle#initialization.1
    # "The initialization phase MUST be the first interaction between client and server."
    if len(infos) > 1 and any(m.method == "initialize" for m in infos):
        return http_error(
            400,
            "initialize must be sent alone",
            clause="2025-06-18/basic/lifecycle#initialization.1",
        )
    return None


STATELESS_INIT_ID: Final[RequestId] = "mcp-ref:stateless-initialize"
"""The id of the synthetic ``initialize`` of a stateless session (its answer is
dropped)."""


def stateless_preamble(version: str) -> list[bytes]:
    """The messages that bring a stateless session (one POST's) to the operating state
    before the POST's own: a synthetic ``initialize`` (id :data:`STATELESS_INIT_ID`,
    protocol ``version``, no client capabilities, so the server never asks the client
    for anything) and ``notifications/initialized``.  The core's lifecycle then holds
    unchanged, and the request is handled as the first of an operating session."""
    init = {
        "jsonrpc": "2.0",
        "id": STATELESS_INIT_ID,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "stateless-http-client", "version": "0"},
        },
    }
    return [
        json.dumps(init, separators=(",", ":")).encode(),
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
    ]


def check_batch(
    version: str | None, size: int, max_requests_in_flight: int | None
) -> HttpError | None:
    """The refusal of a POSTed batch that the session's connection would refuse whole
    (with id null, which would answer none of the POST's requests): outside
    2025-03-26, or larger than the connection takes (``max_requests_in_flight``;
    None: not known yet).  None when the batch may go to the session.

    The rules are the connection's own (:func:`mcp_ref._batch.refuse_batch`); this
    turns its refusal into the HTTP answer.

    Source: 2025-03-26/basic/transports (batches); 2025-06-18/basic#messages (none
    from 2025-06-18 on).
    """
    refusal = refuse_batch(size, version, max_requests_in_flight or size)
    if refusal is None:
        return None
    # A batch outside 2025-03-26 is the transport's 400 too.
    clause = (
        "2025-06-18/basic/transports#sending-messages-to-the-server.4"
        if version not in BATCH_VERSIONS
        else None
    )
    return http_error(400, refusal.message, clause=clause)

"""The rules of MCP's HTTP transports, as pure functions over header lists.

Theory of operation
-------------------
Streamable HTTP (2025-06-18/basic/transports#streamable-http) puts MCP on one HTTP
endpoint: the client POSTs each JSON-RPC message; the server answers a notification or
response with ``202 Accepted`` and a request with either one JSON body or an SSE stream;
a GET opens an optional server-to-client SSE stream; ``Mcp-Session-Id`` ties requests
to a session, ``MCP-Protocol-Version`` names the negotiated version, and SSE event ids
with ``Last-Event-ID`` let a broken stream resume.

This module holds those rules and nothing else: no sockets, no h11, no clock, no
randomness.  A driver parses HTTP with h11 and hands us what h11 gives it -- the method
and target as bytes, headers as ``[(name, value), ...]`` with lowercased byte names --
and asks, one rule at a time, whether the request may go on.  Each ``check_*`` returns
``None`` when the request passes, or an :class:`HttpError`: the status, the headers and
the body of the response the driver should send, plus the spec clause that decided it.
The driver sends it as it is::

    err = check_origin(h, origins) or check_host(h, hosts) or check_accept(h, method)
    if err is not None:
        send(h11.Response(status_code=err.status, reason=err.reason, headers=err.headers))
        send(h11.Data(data=err.body)); ...

Suggested order for a server: :func:`check_method`, :func:`check_origin`,
:func:`check_host`, :func:`check_accept`, then for POST :func:`check_content_type` and
:func:`check_content_length`, then :func:`check_session` and
:func:`check_protocol_version` (once the body showed whether it is ``initialize``), and
:func:`post_reply` to choose the answer.

Status codes, and why (the spec fixes some; the others are our choice, said here once):

* 400 Bad Request: unsupported ``MCP-Protocol-Version`` (fixed by the spec); missing
  session id (spec: SHOULD); malformed session id, ``Last-Event-ID`` or header repeated.
* 403 Forbidden: an ``Origin`` not allowed (2025-11-25 fixes 403); a ``Host``, or the
  host of an absolute-form request target, not allowed (our choice: the same
  DNS-rebinding refusal).
* 404 Not Found: a session id that is unknown or terminated (fixed by the spec).
* 405 Method Not Allowed: GET when the server offers no GET stream, DELETE when it does
  not let clients end sessions (both named by the spec), any other method (our choice).
* 406 Not Acceptable: an ``Accept`` header that does not list what the spec requires.
* 409 Conflict: ``Last-Event-ID`` names events the :class:`EventStore` no longer holds
  (our choice; 404 would tell the client its *session* is gone, which is false).
* 413 Content Too Large, 415 Unsupported Media Type: body too big, or not JSON.
* 429 Too Many Requests, 503 Service Unavailable: one client's share of the sessions,
  or all of them, in use (:class:`HttpLimits`); both carry ``Retry-After`` in seconds.

Server-sent event ids (:func:`make_event_id`) are ``<stream id>/<seq>``: the stream id
names the SSE stream inside the session, the sequence number is unique across the whole
session, so ids never repeat even if a stream id is reused.

The 2024-11-05 HTTP+SSE transport is covered by :func:`endpoint_event`,
:func:`message_event` and :func:`resolve_endpoint`.

The modules, each a part of these rules: :mod:`mcp_ref._http_errors` (header names,
:class:`HttpError`), :mod:`mcp_ref._http_rules` (the header checks),
:mod:`mcp_ref._http_sessions` (session ids, :class:`HttpLimits`, the session bounds),
:mod:`mcp_ref._http_events` (event ids, :class:`EventStore`),
:mod:`mcp_ref._http_legacy` (2024-11-05); this one holds the answers to a POST and the
headers of responses and client requests, and names them all.
"""

from __future__ import annotations

import enum

from ._errors import LocalProtocolError
from ._http_errors import (
    ACCEPT,
    CONTENT_LENGTH,
    CONTENT_TYPE,
    CONTENT_TYPE_JSON,
    CONTENT_TYPE_SSE,
    DEFAULT_PROTOCOL_VERSION,
    HOST,
    HTTP_SERVER_ERROR,
    LAST_EVENT_ID,
    MCP_PROTOCOL_VERSION,
    MCP_SESSION_ID,
    ORIGIN,
    Headers,
    HttpError,
    Refused,
    checked,
    error_response_body,
    http_error,
)
from ._http_events import EventStore, Replay, make_event_id, parse_event_id
from ._http_legacy import (
    ENDPOINT_EVENT,
    MESSAGE_EVENT,
    endpoint_event,
    message_event,
    resolve_endpoint,
)
from ._http_rules import (
    LOCALHOST_HOSTS,
    LOCALHOST_ORIGINS,
    check_accept,
    check_content_length,
    check_content_type,
    check_host,
    check_method,
    check_origin,
    check_protocol_version,
    split_target,
)
from ._http_sessions import (
    MAX_SESSION_ID_LENGTH,
    MIN_SESSION_ID_ENTROPY_BYTES,
    HttpLimits,
    check_session,
    get_session_id,
    new_session_id,
    validate_session_id,
)

__all__ = [
    "ACCEPT",
    "CONTENT_LENGTH",
    "CONTENT_TYPE",
    "CONTENT_TYPE_JSON",
    "CONTENT_TYPE_SSE",
    "DEFAULT_PROTOCOL_VERSION",
    "ENDPOINT_EVENT",
    "HOST",
    "HTTP_SERVER_ERROR",
    "LAST_EVENT_ID",
    "LOCALHOST_HOSTS",
    "LOCALHOST_ORIGINS",
    "MAX_SESSION_ID_LENGTH",
    "MCP_PROTOCOL_VERSION",
    "MCP_SESSION_ID",
    "MESSAGE_EVENT",
    "MIN_SESSION_ID_ENTROPY_BYTES",
    "ORIGIN",
    "EventStore",
    "Headers",
    "HttpError",
    "HttpLimits",
    "MessageKind",
    "PostReply",
    "Refused",
    "Replay",
    "check_accept",
    "check_content_length",
    "check_content_type",
    "check_host",
    "check_method",
    "check_origin",
    "check_protocol_version",
    "check_session",
    "checked",
    "client_request_headers",
    "endpoint_event",
    "error_response_body",
    "get_session_id",
    "http_error",
    "make_event_id",
    "message_event",
    "new_session_id",
    "parse_event_id",
    "post_reply",
    "resolve_endpoint",
    "response_headers",
    "split_target",
    "validate_session_id",
]

# -- POST answers and response headers -------------------------------------------------


class MessageKind(enum.Enum):
    """What one POSTed JSON-RPC message is, as far as the HTTP answer cares."""

    REQUEST = "request"
    NOTIFICATION = "notification"
    RESPONSE = "response"
    """A response or an error response."""


class PostReply(enum.Enum):
    """How the server answers a POST it accepted."""

    ACCEPTED = "202 Accepted, no body"
    JSON = "200, Content-Type: application/json, one JSON-RPC response"
    SSE = "200, Content-Type: text/event-stream"


def post_reply(kind: MessageKind, *, stream: bool) -> PostReply:
    """Choose the answer to an accepted POST.

    Args:
        kind: what the body was.
        stream: for a request, whether the server wants an SSE stream (to send
            notifications or requests before the response) rather than one JSON body.

    Returns:
        :attr:`PostReply.ACCEPTED` for a notification or a response;
        :attr:`PostReply.SSE` or :attr:`PostReply.JSON` for a request.

    Source: 2025-06-18/basic/transports#sending-messages-to-the-server.5 (202, no body);
    #sending-messages-to-the-server.8 (a request gets SSE or JSON).
    """
    if kind is MessageKind.REQUEST:
        # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.8
        # "If the input is a JSON-RPC request, the server MUST either return `Content-Type:
        # text/event-stream`, to initiate an SSE stream, or `Content-Type: application/json`, to
        # return one JSON object."
        return PostReply.SSE if stream else PostReply.JSON
    # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.5
    # "If the server accepts the input, the server MUST return HTTP status code 202 Accepted with no
    # body."
    return PostReply.ACCEPTED


def response_headers(
    reply: PostReply,
    *,
    session_id: str | None = None,
    content_length: int | None = None,
    post: bool = False,
) -> list[tuple[bytes, bytes]]:
    """Headers of a successful answer (to a POST, or a GET stream with ``PostReply.SSE``).

    Args:
        reply: the answer chosen by :func:`post_reply`.
        session_id: the session id to send (always on the ``initialize`` answer).
        content_length: body length in bytes, for :attr:`PostReply.JSON`.
        post: the SSE stream answers a POST (not a GET).

    Returns:
        ``[(name, value), ...]``: for ACCEPTED ``content-length: 0``; for JSON the
        content type and length; for SSE the content type, and ``cache-control:
        no-cache`` on a GET's stream (h11 frames the stream with chunked encoding);
        plus ``mcp-session-id`` when given.  A POST's stream goes without
        ``cache-control``: a response to POST is cacheable only with explicit
        freshness information and ``Content-Location`` (RFC 9110 section 9.3.3),
        which it never has, so the header would say nothing (and costs h11 a
        validation per answer).

    Raises:
        LocalProtocolError: a malformed ``session_id``; JSON without ``content_length``.

    Source: 2025-06-18/basic/transports#session-management.1 (the session id goes in
    ``Mcp-Session-Id``); #sending-messages-to-the-server.5 and .8.
    """
    out: list[tuple[bytes, bytes]] = []
    if reply is PostReply.ACCEPTED:
        out.append((CONTENT_LENGTH, b"0"))
    elif reply is PostReply.JSON:
        if content_length is None:
            raise LocalProtocolError("a JSON answer needs content_length")
        out.append((CONTENT_TYPE, CONTENT_TYPE_JSON))
        out.append((CONTENT_LENGTH, str(content_length).encode("ascii")))
    else:
        out.append((CONTENT_TYPE, CONTENT_TYPE_SSE))
        if not post:
            out.append((b"cache-control", b"no-cache"))
    if session_id is not None:
        if not validate_session_id(session_id):
            raise LocalProtocolError(f"malformed session id {session_id!r}")
        # Spec: 2025-06-18/basic/transports#session-management.1
        # "A server using the Streamable HTTP transport MAY assign a session ID at initialization
        # time, by including it in an `Mcp-Session-Id` header on the HTTP response containing the
        # `InitializeResult`."
        out.append((MCP_SESSION_ID, session_id.encode("ascii")))
    return out


def client_request_headers(
    method: bytes,
    *,
    session_id: str | None = None,
    protocol_version: str | None = None,
    last_event_id: str | None = None,
) -> list[tuple[bytes, bytes]]:
    """The MCP headers a client puts on a request (Host and framing are the driver's).

    Args:
        method: ``b"POST"``, ``b"GET"`` or ``b"DELETE"``.
        session_id: the session id the server assigned, if any.
        protocol_version: the negotiated version (None only before initialization).
        last_event_id: for a resuming GET, the decoder's ``last_event_id`` ("" = none).

    Returns:
        ``accept`` (both types on POST, SSE on GET), ``content-type`` on POST,
        ``mcp-session-id``, ``mcp-protocol-version``, ``last-event-id`` as given.

    Raises:
        LocalProtocolError: a malformed session id, or a value with CR, LF or NUL.

    Source: 2025-06-18/basic/transports#sending-messages-to-the-server.3;
    #listening-for-messages-from-the-server.2; #session-management.4;
    #protocol-version-header.1; #resumability-and-redelivery.3.
    """
    out: list[tuple[bytes, bytes]] = []
    if method == b"POST":
        # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.3
        # "The client MUST include an `Accept` header, listing both `application/json` and
        # `text/event-stream` as supported content types."
        # Spec: 2026-07-28/basic/transports/streamable-http#sending-messages.3
        # "The client MUST include an `Accept` header listing both `application/json` and
        # `text/event-stream` as supported content types."
        out.append((ACCEPT, CONTENT_TYPE_JSON + b", " + CONTENT_TYPE_SSE))
        out.append((CONTENT_TYPE, CONTENT_TYPE_JSON))
    elif method == b"GET":
        # Spec: 2025-06-18/basic/transports#listening-for-messages-from-the-server.2
        # "The client MUST include an `Accept` header, listing `text/event-stream` as a supported
        # content type."
        out.append((ACCEPT, CONTENT_TYPE_SSE))
    if session_id is not None:
        if not validate_session_id(session_id):
            raise LocalProtocolError(f"malformed session id {session_id!r}")
        # Spec: 2025-06-18/basic/transports#session-management.4
        # "If an `Mcp-Session-Id` is returned by the server during initialization, clients using the
        # Streamable HTTP transport MUST include it in the `Mcp-Session-Id` header on all of their
        # subsequent HTTP requests."
        out.append((MCP_SESSION_ID, session_id.encode("ascii")))
    for name, value in ((MCP_PROTOCOL_VERSION, protocol_version), (LAST_EVENT_ID, last_event_id)):
        if value:
            if not value.isascii() or not value.isprintable():
                raise LocalProtocolError(f"bad {name.decode()} value {value!r}")
            out.append((name, value.encode("ascii")))
    return out

"""The Streamable HTTP client's decisions, sans-IO: headers out, heads and bodies in.

Theory of operation
-------------------
A driver (:mod:`mcp_ref.trio.http.client`, :mod:`mcp_ref.asyncio._http`) owns the
sockets, h11, the connection pool, its tasks and its clock.  :class:`HttpClientCore`
owns everything the client *decides*, the way wsproto sits on h11: the driver asks, at
each step of an exchange, what to do next, and does it.

1. **A message to send** (bytes, as the connection made them) goes through
   :meth:`~HttpClientCore.outgoing`, which reads its kind with the connection's own
   reader (:func:`~mcp_ref._http_messages.message_info`) and says how to POST it
   (:class:`Send`), keeping those of the handshake for step 5.
2. **The request's headers** come from :meth:`~HttpClientCore.headers`: ``Host``, the
   MCP headers of :func:`~mcp_ref._http.client_request_headers`, ``Content-Length``,
   a modern request's (:mod:`mcp_ref._http_client_modern`) and the caller's own.
3. **A response head** to a request's POST becomes an :class:`Answer`
   (:meth:`~HttpClientCore.answer`): accepted, a JSON body, an SSE stream, a session
   gone, the 2024-11-05 fallback, or a refusal.  The head of the ``initialize`` answer
   gives the session id.
4. **Each message received** goes through :meth:`~HttpClientCore.received`: does it
   answer the request awaited (the ``initialize`` result's version is noted)?  A
   request that can no longer be answered gets an error response made here
   (:meth:`~HttpClientCore.failure`), so its caller is never left waiting.
5. **A 404 to our session id** (#session-management.7): under the driver's lock,
   :meth:`~HttpClientCore.begin_new_session` says whether to replay the handshake,
   :meth:`~HttpClientCore.replayed` checks the replay's ``initialize`` answer and
   :meth:`~HttpClientCore.end_new_session` counts the new session (``generation``: a
   task that saw the 404 late learns another one did it).

SSE streams and the GET stream's policy are :mod:`mcp_ref._http_client_streams`; the
jobs that string these decisions together are the flows of
:mod:`mcp_ref._http_client_flows`.  No clock, no sockets, no JSON read here.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, Literal
from urllib.parse import urlsplit

import attrs

from . import _http as rules
from ._errors import INTERNAL_ERROR, RemoteProtocolError
from ._http import (
    CONTENT_TYPE,
    CONTENT_TYPE_JSON,
    CONTENT_TYPE_SSE,
    MCP_SESSION_ID,
    Headers,
    HttpLimits,
    MessageKind,
)
from ._http_client_modern import ModernHttp
from ._http_messages import message_info, negotiated_version
from ._http_streams import request_key
from ._oauth_http import TokenMisdirected
from ._sse import SSEEvent
from .events import RequestId

if TYPE_CHECKING:
    from ._http_client_auth import ClientAuth

__all__ = [
    "MAX_ERROR_BODY",
    "Answer",
    "HttpClientCore",
    "Outgoing",
    "Send",
    "failure",
    "media_type",
]

MAX_ERROR_BODY: Final = 65536
"""The most bytes read of an HTTP error's body."""


class Send(enum.Enum):
    """How to POST one outgoing message."""

    INITIALIZE = "initialize"
    """The ``initialize`` request: its answer may switch to 2024-11-05 (:attr:`Answer.FALLBACK`)."""
    REQUEST = "request"
    """A request: its answer is read apart, until the response to it came."""
    ONE_WAY = "one-way"
    """A notification or response: wait for its ``202`` (so they arrive in order)."""
    LEGACY = "legacy"
    """Any message, in 2024-11-05 mode: POST it to the endpoint the server named."""


@attrs.frozen(kw_only=True)
class Outgoing:
    """What :meth:`HttpClientCore.outgoing` decided about one message."""

    send: Send
    """How to POST it."""
    id: RequestId | None
    """The request id (a request), else None."""
    key: Any
    """``request_key(id)``: the key the answer is awaited under."""
    cancels: Any = None
    """For ``notifications/cancelled``: the key of the request to stop reading."""
    opens_get: bool = False
    """``notifications/initialized``, the GET stream wanted: open it once accepted."""


class Answer(enum.Enum):
    """What a response head to a POST means."""

    ACCEPTED = "accepted"
    """``202``: nothing to read (a request's response may come on the GET stream)."""
    JSON = "json"
    """One JSON body (at most ``limits.max_event_bytes``): the message(s) answering."""
    SSE = "sse"
    """An SSE stream: read it with a :class:`~mcp_ref._http_client_streams.StreamCursor`."""
    EXPIRED = "expired"
    """404 to our session id: start a new session, then POST the message again."""
    FALLBACK = "fallback"
    """A 4xx to ``initialize``: try the 2024-11-05 HTTP+SSE transport."""
    UNAUTHORIZED = "unauthorized"
    """401 or 403: sign in (with ``auth``) and send again; else, to ``initialize``: fatal."""
    REFUSED = "refused"
    """An HTTP error: read at most :data:`MAX_ERROR_BODY` of it, for a refusal message."""
    UNEXPECTED = "unexpected"
    """A success that is neither JSON nor SSE."""


def media_type(headers: Headers) -> bytes:
    """The media type of ``Content-Type`` (lowercased, parameters dropped); ``b""``."""
    for name, value in headers:
        if name == CONTENT_TYPE:
            return bytes(value).split(b";")[0].strip().lower()
    return b""


def failure(rid: RequestId, message: str) -> bytes:
    """The error response (-32603) answering our own request ``rid`` that the server
    can no longer answer: the driver hands it to the connection as if received."""
    return rules.error_response_body(INTERNAL_ERROR, message, rid)


def _body_kind(headers: Headers) -> Answer:
    """A success's body: JSON, SSE, or neither."""
    media = media_type(headers)
    # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.9
    # "The client MUST support both these cases."
    # Spec: 2026-07-28/basic/transports/streamable-http#sending-messages.11
    # "The client MUST support both."
    if media == CONTENT_TYPE_JSON:
        return Answer.JSON
    if media == CONTENT_TYPE_SSE:
        return Answer.SSE
    return Answer.UNEXPECTED


class HttpClientCore:
    """The state and decisions of one Streamable HTTP client (module docstring).

    Args:
        url: the MCP endpoint, ``http://`` or ``https://``.
        headers: extra request headers, e.g. authorization (``str`` pairs).
        limits: the bounds (``max_event_bytes`` bounds a JSON answer and an SSE event).
        legacy_fallback: fall back to 2024-11-05 on a 4xx to ``initialize``.
        get_stream: open the GET stream after ``notifications/initialized``.
        default_retry: seconds to wait before resuming a stream whose server gave no
            ``retry``.

    Raises:
        ValueError: not an http(s) URL.

    Attributes:
        session_id: the ``Mcp-Session-Id`` the server assigned, or None.
        protocol_version: the negotiated version (None before ``initialize``).
        mode: ``"streamable"``, or ``"legacy"`` after falling back to 2024-11-05.
        generation: sessions started after the first (a 404 starts one).
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Sequence[tuple[str, str]] = (),
        limits: HttpLimits | None = None,
        legacy_fallback: bool = True,
        get_stream: bool = True,
        default_retry: float = 1.0,
        auth: ClientAuth | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.url = url
        self.tls = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.tls else 80)
        self.host_header = parts.netloc.rpartition("@")[2].encode("idna")
        self.target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        """The request target of the MCP endpoint (GET, DELETE, and POST in Streamable HTTP)."""
        self.post_target = self.target
        """Where messages are POSTed (the 2024-11-05 endpoint after the fallback)."""
        self.extra = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]
        self.limits = limits or HttpLimits()
        self.legacy_fallback = legacy_fallback
        self.want_get = get_stream
        self.default_retry = default_retry
        self.auth = auth
        """Signing in when the server asks (None: a 401/403 ends the client)."""
        self.origin = f"{parts.scheme}://{self.host_header.decode('ascii')}"
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.mode: Literal["streamable", "legacy"] = "streamable"
        self.generation = 0
        self.init_body: bytes | None = None
        self.init_key: Any = None
        self.initialized_body: bytes | None = None
        self._old_version: str | None = None
        self.modern = ModernHttp()  # the modern era's headers, tools and 400 errors

    # -- requests ------------------------------------------------------------------------

    def outgoing(self, data: bytes) -> Outgoing:
        """How to POST one message (``data``: one JSON-RPC message, no framing); keeps
        the bytes of the handshake for a replay."""
        info = message_info(data)
        rid = info.id if info is not None and info.kind is MessageKind.REQUEST else None
        method = info.method if info is not None else None
        if self.mode == "legacy":
            return Outgoing(send=Send.LEGACY, id=rid, key=request_key(rid))
        if info is not None and info.kind is MessageKind.REQUEST:
            if method == "initialize":
                self.modern.version = None  # (the fallback after a modern probe)
                self.init_body, self.init_key = data, request_key(rid)
                return Outgoing(send=Send.INITIALIZE, id=rid, key=self.init_key)
            self.modern.outgoing(method, data, request_key(rid))
            return Outgoing(send=Send.REQUEST, id=rid, key=request_key(rid))
        cancels = None
        if info is not None and info.cancels is not None:
            cancels = request_key(info.cancels)
        opens = False
        if method == "notifications/initialized":
            self.initialized_body = data
            opens = self.want_get
        return Outgoing(
            send=Send.ONE_WAY, id=None, key=request_key(None), cancels=cancels, opens_get=opens
        )

    def headers(
        self, method: bytes, *, body: bytes = b"", last_event_id: str | None = None
    ) -> list[tuple[bytes, bytes]]:
        """The headers of one request: ``Host``, the MCP headers, ``Content-Length`` on
        POST, then the caller's.  In 2024-11-05 mode neither session id nor version.

        Args:
            method: ``b"POST"``, ``b"GET"`` or ``b"DELETE"``.
            body: the POST's body (its length is sent).
            last_event_id: for a resuming GET, the cursor's last event id.

        Source: 2025-06-18/basic/transports#session-management.4;
        #protocol-version-header.1; #resumability-and-redelivery.3.
        """
        legacy = self.mode == "legacy"
        out = [(b"host", self.host_header)]
        # Spec: 2025-06-18/basic/transports#session-management.4
        # "If an `Mcp-Session-Id` is returned by the server during initialization, clients using
        # the Streamable HTTP transport MUST include it in the `Mcp-Session-Id` header on all of
        # their subsequent HTTP requests."
        # Spec: 2025-06-18/basic/transports#protocol-version-header.1
        # "If using HTTP, the client MUST include the `MCP-Protocol-Version: <protocol-version>`
        # HTTP header on all subsequent requests to the MCP server, allowing the MCP server to
        # respond based on the MCP protocol version."
        # Spec: 2025-06-18/basic/transports#protocol-version-header.2
        # "The protocol version sent by the client SHOULD be the one negotiated during
        # initialization."
        # Spec: 2025-06-18/basic/lifecycle#version-negotiation.7
        # "If using HTTP, the client MUST include the `MCP-Protocol-Version: <protocol-version>`
        # HTTP header on all subsequent requests to the MCP server."
        out += rules.client_request_headers(
            method,
            session_id=None if legacy else self.session_id,
            protocol_version=None if legacy else self.protocol_version,
            last_event_id=last_event_id,
        )
        if method == b"POST":
            out.append((b"content-length", b"%d" % len(body)))
            # Spec: 2026-07-28/basic/transports/streamable-http#sending-messages.4
            # "The client MUST include the request metadata headers on each POST request."
            out += self.modern.headers(
                body, initialized=legacy or self.protocol_version is not None
            )
        if self.auth is not None:
            # Spec: 2025-03-26/basic/authorization#token-requirements.3
            # "authorization MUST be included in every HTTP request from client to server"
            # Spec: 2025-06-18/basic/authorization#token-requirements.3
            # "authorization MUST be included in every HTTP request from client to server"
            # Spec: 2025-11-25/basic/authorization#token-requirements.3
            # "authorization MUST be included in every HTTP request from client to server"
            # Spec: 2026-07-28/basic/authorization/index#token-requirements.3
            # "authorization MUST be included in every HTTP request from client to server"
            target = self.post_target if method == b"POST" else self.target
            try:
                # Bearer, or DPoP with a fresh proof for this method and URL (RFC 9449).
                out += self.auth.headers(method.decode("ascii"), self.origin + target)
            except TokenMisdirected:
                # Outside the token's resource (a 2024-11-05 endpoint elsewhere): never
                # sent there; the server's 401, if any, asks for a sign-in of its own.
                pass
        return out + self.extra

    def failure(self, rid: RequestId, message: str) -> bytes:
        """:func:`failure`, or the modern error of a 400 (:meth:`ModernHttp.failure`)."""
        return self.modern.failure(rid) or failure(rid, message)

    # -- answers -------------------------------------------------------------------------

    def answer(self, status: int, headers: Headers, *, key: Any, retried: bool = False) -> Answer:
        """What the head of the answer to a POSTed request means (``key``: the
        request's :attr:`Outgoing.key`; ``retried``: it was already sent again after
        a 404).  The ``initialize`` answer's session id is noted here.

        Source: 2025-06-18/basic/transports#sending-messages-to-the-server.9;
        #session-management.7; #backwards-compatibility.
        """
        initialize = key == self.init_key and self.init_key is not None
        if status in (401, 403) and (initialize or self.auth is not None):
            # A 401 (or a 403 insufficient_scope: 2025-11-25/basic/authorization
            # #step-up-authorization-flow) starts the sign-in when the client can.
            return Answer.UNAUTHORIZED
        if initialize and 400 <= status < 500:
            if self.legacy_fallback:
                # 2025-06-18/basic/transports#backwards-compatibility: a 4xx to the
                # POST of initialize means a 2024-11-05 server; try its GET stream.
                return Answer.FALLBACK
        if status == 404 and self.session_id is not None and not initialize and not retried:
            # Spec: 2025-06-18/basic/transports#session-management.7
            # "When a client receives HTTP 404 in response to a request containing an
            # `Mcp-Session-Id`, it MUST start a new session by sending a new
            # `InitializeRequest` without a session ID attached."
            return Answer.EXPIRED
        if status >= 400:
            return Answer.REFUSED
        if initialize:
            self.note_session(headers)
        if status == 202:
            return Answer.ACCEPTED
        return _body_kind(headers)

    def one_way(self, status: int, *, retried: bool = False) -> Answer:
        """What the head of the answer to a POSTed notification or response means:
        :attr:`Answer.ACCEPTED` (any success), :attr:`Answer.EXPIRED` (404 to our
        session id, not yet sent again) or :attr:`Answer.REFUSED`.

        Source: 2025-06-18/basic/transports#sending-messages-to-the-server.5;
        #session-management.7.
        """
        if status == 404 and self.session_id is not None and not retried:
            return Answer.EXPIRED
        if status in (401, 403) and self.auth is not None:
            return Answer.UNAUTHORIZED
        return Answer.ACCEPTED if status < 300 else Answer.REFUSED

    def note_session(self, headers: Headers) -> None:
        """Keep the ``Mcp-Session-Id`` of the ``initialize`` answer (a malformed one is
        ignored)."""
        for name, value in headers:
            # Spec: 2025-11-25/basic/transports#session-management.4
            # "The client MUST handle the session ID in a secure manner"
            # (adopted only when well formed; sent to this endpoint alone; never logged)
            if name == MCP_SESSION_ID and rules.validate_session_id(bytes(value)):
                self.session_id = bytes(value).decode()  # validated: ASCII

    def received(self, data: bytes, key: Any) -> bool:
        """One message the server sent: True when it is the response to the request
        awaited under ``key``.  The ``initialize`` result's version is noted."""
        info = message_info(data)
        answered = (
            info is not None and info.kind is MessageKind.RESPONSE and request_key(info.id) == key
        )
        if answered and key == self.init_key and self.protocol_version is None:
            self.protocol_version = negotiated_version(data)
        return answered

    # -- a new session after 404 ---------------------------------------------------------

    def begin_new_session(self, generation: int) -> bool | None:
        """A request of session ``generation`` got a 404: True to replay the handshake
        now (the session id and version are dropped), None when another task started
        the new session already (send again), False when no handshake can be replayed."""
        if generation != self.generation:
            return None
        if self.init_body is None or self.initialized_body is None:
            return False
        self._old_version = self.protocol_version
        self.session_id = None
        self.protocol_version = None
        return True

    def replay_answer(self, status: int, headers: Headers) -> Answer:
        """The head of the answer to the replayed ``initialize``: :attr:`Answer.JSON`
        or :attr:`Answer.SSE` (the new session id noted), else :attr:`Answer.REFUSED`
        or :attr:`Answer.UNEXPECTED`."""
        if status != 200:
            return Answer.REFUSED
        self.note_session(headers)
        return _body_kind(headers)

    def replayed(self, data: bytes) -> bool | None:
        """One message answering the replayed ``initialize``: None when it is not its
        response, else whether the new session negotiated the same version (the
        session layer knows only the first)."""
        if not self.received(data, self.init_key):
            return None
        return self.protocol_version == self._old_version

    def end_new_session(self, ok: bool) -> str | None:
        """The replay ended (``ok``: its ``initialize`` and ``initialized`` were taken
        with the same version); returns why input must end, or None (a new
        ``generation`` begins)."""
        if not ok:
            return "the HTTP session expired and a new one could not be started"
        self.generation += 1
        return None

    # -- 2024-11-05 ----------------------------------------------------------------------

    def fall_back(self, status: int, headers: Headers) -> None:
        """The head of the fallback's GET: the client is in 2024-11-05 mode from now.

        Raises:
            RemoteProtocolError: it is no SSE stream: no 2024-11-05 server either.

        Source: 2025-06-18/basic/transports#backwards-compatibility.
        """
        self.mode = "legacy"
        if status != 200 or media_type(headers) != CONTENT_TYPE_SSE:
            raise RemoteProtocolError(
                f"the server refused initialize (Streamable HTTP) and its GET answered "
                f"HTTP {status}: not a 2024-11-05 HTTP+SSE server either"
            )

    def endpoint(self, event: SSEEvent) -> None:
        """The first event of the 2024-11-05 stream: where to POST from now.

        Raises:
            RemoteProtocolError: not an ``endpoint`` event, or another origin.
        """
        parts = urlsplit(rules.resolve_endpoint(event, self.url))
        self.post_target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")

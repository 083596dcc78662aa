"""The Streamable HTTP client's jobs, sans-IO: what to send, how to read, when to stop.

Theory of operation
-------------------
Everything the client does over HTTP is one of five jobs, each a small state machine
(a *flow*) that the driver runs with one loop, the same in trio and asyncio:

* :class:`RequestFlow`: POST a request and read its answer -- a JSON body, or an SSE
  stream read until the response came, resumed with a GET carrying ``Last-Event-ID``
  when it breaks off (#resumability-and-redelivery.3); after a 404 to our session id a
  new session, then the POST once more (#session-management.7).
* :class:`MessageFlow`: POST a notification or a response and take its ``202``; after
  a 404, a new session and the POST once more.
* :class:`GetStreamFlow`: the GET stream, reopened by the cursor's policy until it
  gives up or the server offers none (#listening-for-messages-from-the-server).
* :class:`ReplayFlow`: a new session's handshake, the ``initialize`` and
  ``notifications/initialized`` sent first, POSTed again; their answers are checked,
  never passed on.
* :class:`LegacyFlow`: the 2024-11-05 fallback's GET stream: its first event names the
  endpoint; every later message arrives on it (#backwards-compatibility).

Each runs with the loop of :mod:`mcp_ref._http_client_steps` (read that module
first): the flow's :meth:`~mcp_ref._http_client_steps.Flow.head` reads what a response
head means with the core's rules, its ``ended`` decides what follows a body.
"""

from __future__ import annotations

from ._errors import RemoteProtocolError
from ._http import Headers
from ._http_client import Answer, HttpClientCore, Outgoing, media_type
from ._http_client_steps import (
    SESSION_NOT_RESTARTED,
    Body,
    Done,
    Flow,
    HttpRequest,
    NewSession,
    Step,
    Wait,
)
from ._http_client_streams import Reopen, StreamCursor

__all__ = ["GetStreamFlow", "LegacyFlow", "MessageFlow", "ReplayFlow", "RequestFlow"]


# -- the jobs -------------------------------------------------------------------------------


class RequestFlow(Flow):
    """POST one request (``data``, as :meth:`HttpClientCore.outgoing` read it into
    ``out``) and read its answer until the response came (module docstring).

    Attributes:
        fatal: the server wants authorization (401/403 to ``initialize``): the driver
            ends the channel with :attr:`Done.error`.
        fallback: a 4xx to ``initialize``: the driver tries 2024-11-05 instead.
        signing_in: a 401/403 came and the core can sign in: the flow asks for it
            (:class:`~mcp_ref._http_client_steps.Authorize`) and sends the request
            again (for ``initialize`` the driver runs this before ``send`` returns).

    Source: 2025-06-18/basic/transports#sending-messages-to-the-server.9;
    #resumability-and-redelivery.3; #session-management.7.
    """

    answer_ends_stream = True

    def __init__(
        self, core: HttpClientCore, out: Outgoing, data: bytes, *, max_bytes: int | None = None
    ) -> None:
        super().__init__(core, max_bytes=max_bytes)
        self.key, self.id, self.data = out.key, out.id, data
        self.fatal = False
        self.fallback = False
        self.signing_in = False
        self._stream: StreamCursor | None = None
        """The answer's SSE stream, once it came (then heads are of resuming GETs)."""

    def start(self) -> HttpRequest:
        # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.1
        # "Every JSON-RPC message sent from the client MUST be a new HTTP POST request to the
        # MCP endpoint."
        # Spec: 2026-07-28/basic/transports/streamable-http#sending-messages.1
        # "Every JSON-RPC message sent from the client MUST be a new HTTP POST request to the MCP
        # endpoint."
        # Spec: 2026-07-28/basic/transports/streamable-http#sending-messages.2
        # "The client MUST use HTTP POST to send JSON-RPC messages."
        return self._post(self.data)

    def head(self, status: int, headers: Headers) -> Step:
        self.status = status
        if self._stream is not None:
            return self._resumed(status, headers, self._stream)
        what = self.core.answer(status, headers, key=self.key, retried=self.retried)
        if what is Answer.ACCEPTED:
            return Done()  # its response may come on the GET stream
        if what is Answer.JSON:
            return self._read(Body.JSON)
        if what is Answer.SSE:
            self._stream = self._cursor_for()
            return self._read(Body.SSE, self._stream)
        if what is Answer.EXPIRED:
            return NewSession(self.generation)
        if what is Answer.FALLBACK:
            self.fallback = True
            return Done(error="the server refused initialize: trying 2024-11-05")
        if what is Answer.UNEXPECTED:
            media = media_type(headers).decode("latin-1")
            return Done(error=f"unexpected answer: HTTP {status} {media!r}")
        if what is Answer.UNAUTHORIZED and self.core.auth is not None:
            self.signing_in = True
            return self._unauthorized(headers)
        self.fatal = what is Answer.UNAUTHORIZED
        return self._read(Body.ERROR)

    def _resumed(self, status: int, headers: Headers, cursor: StreamCursor) -> Step:
        session = self.core.session_id is not None
        what = cursor.reopened(status, headers, session=session)
        if what is Reopen.READ:
            return self._read(Body.SSE, cursor)
        if what is Reopen.EXPIRED:
            return Done(
                error="resuming the stream failed: HTTP 404: the session expired "
                "before the response came",
                http_status=404,
            )
        return self._read(Body.ERROR)

    def ended(self, complete: bool) -> Step:
        if self._body is Body.ERROR:
            if self._stream is not None:
                return self._refusal("resuming the stream failed: ")
            if self._challenge is not None:
                return self._authorize()
            if self.fatal:
                prefix = "the server wants authorization; open the client with auth= to sign in: "
                return self._refusal(prefix)
            return self._refusal()
        if self.error is not None:
            return Done(error=self.error)
        if self._body is Body.JSON:
            if not complete:
                return Done(error="the JSON answer broke off")
            if not self.answered:
                return Done(error="the JSON answer was not the response to the request")
            return Done()
        assert self._stream is not None
        then = self._stream.post_ended(self.answered)
        if then is None:
            return Done()
        if isinstance(then, str):
            return Done(error=then)
        return Wait(then)

    def waited(self) -> Step:
        assert self._stream is not None
        # Spec: 2025-06-18/basic/transports#resumability-and-redelivery.3
        # "If the client wishes to resume after a broken connection, it SHOULD issue an HTTP GET
        # to the MCP endpoint, and include the `Last-Event-ID` header to indicate the last event
        # ID it received."
        return self._get(self._stream.last_event_id)


class MessageFlow(Flow):
    """POST one notification or response (``data``) and take its answer: ``Done()``
    for a success, else the refusal (after a 404 to our session id: a new session,
    then the POST once more).  In 2024-11-05 mode every message goes this way.

    Source: 2025-06-18/basic/transports#sending-messages-to-the-server.5;
    #session-management.7.
    """

    def __init__(self, core: HttpClientCore, data: bytes) -> None:
        super().__init__(core)
        self.data = data

    def start(self) -> Step:
        if self.core.modern.unsent(self.data, initialized=self.core.protocol_version is not None):
            return Done()  # a modern cancellation: the request's stream was closed
        return self._post(self.data)

    def head(self, status: int, headers: Headers) -> Step:
        self.status = status
        if self.core.one_way(status, retried=True) is Answer.UNAUTHORIZED:
            return self._unauthorized(headers)
        return self._read(Body.ERROR)  # read whole, so the connection can be reused

    def broken(self, why: str) -> Step:
        return Done(error=f"POST failed: {why}")

    def ended(self, complete: bool) -> Step:
        # Spec: 2025-06-18/basic/transports#sending-messages-to-the-server.5
        # "If the server accepts the input, the server MUST return HTTP status code 202
        # Accepted with no body."
        if self._challenge is not None:
            return self._authorize()
        what = self.core.one_way(self.status, retried=self.retried)
        if what is Answer.ACCEPTED:
            return Done()
        if what is Answer.EXPIRED:
            return NewSession(self.generation)
        return self._refusal()


class GetStreamFlow(Flow):
    """The GET stream: open it, pass on what it brings, reopen it when it ends (with
    ``Last-Event-ID``), until the cursor gives up or the server offers none.

    Source: 2025-06-18/basic/transports#listening-for-messages-from-the-server.1;
    #resumability-and-redelivery.3.
    """

    def __init__(self, core: HttpClientCore) -> None:
        super().__init__(core)
        self.cursor = self._cursor_for()

    def start(self) -> HttpRequest:
        if self.generation != self.core.generation:  # a new session: a new stream
            self.cursor, self.generation = self._cursor_for(), self.core.generation
        # Spec: 2025-06-18/basic/transports#listening-for-messages-from-the-server.1
        # "The client MAY issue an HTTP GET to the MCP endpoint."
        return self._get(self.cursor.last_event_id)

    def head(self, status: int, headers: Headers) -> Step:
        session = self.core.session_id is not None
        what = self.cursor.reopened(status, headers, session=session)
        if what is Reopen.READ:
            return self._read(Body.SSE, self.cursor)
        if what is Reopen.EXPIRED:
            return NewSession(self.generation)
        if what is Reopen.RESET:
            return self.start()
        return Done(error=f"no GET stream (HTTP {status})")

    def broken(self, why: str) -> Step:
        delay = self.cursor.get_failed()
        return Wait(delay) if delay is not None else Done(error=f"GET stream given up: {why}")

    def ended(self, complete: bool) -> Step:
        delay = self.cursor.get_ended()
        return Wait(delay) if delay is not None else Done(error="GET stream given up")

    def new_session(self, ok: bool) -> Step:
        return self.start() if ok else Done(error=SESSION_NOT_RESTARTED)


class ReplayFlow(Flow):
    """A new session's handshake: POST the ``initialize`` and then the
    ``notifications/initialized`` sent first (the driver called
    :meth:`~mcp_ref._http_client.HttpClientCore.begin_new_session`).  Nothing is passed
    on; ``Done()`` when the new session took both with the same version.

    Source: 2025-06-18/basic/transports#session-management.7.
    """

    def __init__(self, core: HttpClientCore) -> None:
        super().__init__(core)
        assert core.init_body is not None and core.initialized_body is not None
        self.same: bool | None = None
        """The new session's version is the first one's (None: not known yet)."""

    def start(self) -> HttpRequest:
        # Spec: 2025-06-18/basic/transports#session-management.7
        # "it MUST start a new session by sending a new `InitializeRequest` without a
        # session ID attached"
        assert self.core.init_body is not None
        return self._post(self.core.init_body)

    def head(self, status: int, headers: Headers) -> Step:
        self.status = status
        if self.same is not None:  # the answer to notifications/initialized
            return self._read(Body.ERROR)
        what = self.core.replay_answer(status, headers)
        if what is Answer.JSON:
            return self._read(Body.JSON)
        if what is Answer.SSE:
            return self._read(Body.SSE, self._cursor_for())
        return Done(error=f"the new session was refused: HTTP {status}")

    def _take(self, messages: list[bytes]) -> list[bytes]:
        for data in messages:
            if self.same is None:
                self.same = self.core.replayed(data)
        return []

    @property
    def stop(self) -> bool:
        """The ``initialize`` answer came: nothing else on its stream is wanted."""
        return self.error is not None or (self.same is not None and self._body is Body.SSE)

    def ended(self, complete: bool) -> Step:
        if self._body is Body.ERROR:
            if self.core.one_way(self.status, retried=True) is Answer.ACCEPTED:
                return Done()
            return self._refusal("the new session refused notifications/initialized: ")
        if not self.same:
            return Done(error="the new session was refused or negotiated another version")
        assert self.core.initialized_body is not None
        return self._post(self.core.initialized_body)


class LegacyFlow(Flow):
    """The 2024-11-05 fallback's GET stream: its first event names where to POST
    (:attr:`ready` once it came); every later message is passed on.  Ends with the
    stream (``Done.error`` says so) or at once when it is no SSE stream.

    Source: 2025-06-18/basic/transports#backwards-compatibility.
    """

    def __init__(self, core: HttpClientCore) -> None:
        super().__init__(core)
        self.key = core.init_key  # the initialize result comes on the stream
        self.ready = False

    def start(self) -> HttpRequest:
        return self._get()

    def head(self, status: int, headers: Headers) -> Step:
        try:
            self.core.fall_back(status, headers)
        except RemoteProtocolError as exc:
            self.error = exc.message
            return Done(error=exc.message)
        return self._read(Body.SSE, self._cursor_for(expect_endpoint=True))

    def broken(self, why: str) -> Step:
        return Done(error=f"2024-11-05 fallback: GET failed: {why}")

    def _take(self, messages: list[bytes]) -> list[bytes]:
        assert self._cursor is not None
        if not self.ready and self._cursor.first is not None:
            try:
                self.core.endpoint(self._cursor.first)
                self.ready = True
            except RemoteProtocolError as exc:
                self.error = exc.message
                return []
        return super()._take(messages)

    def ended(self, complete: bool) -> Step:
        return Done(error=self.error or "the 2024-11-05 SSE stream ended")

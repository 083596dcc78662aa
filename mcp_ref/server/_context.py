"""The :class:`Context` a handler receives: logging, progress, requests to the client.

Theory of operation
-------------------
A tool, resource, prompt or completion function asks for the context by declaring a
parameter annotated with :class:`Context` (any name: ``ctx: Context``).  The server
builds one per request; it wraps the session's :class:`~mcp_ref.trio.RequestContext`,
so everything sent through it is tagged with the request it belongs to (Streamable
HTTP routes those messages onto the request's stream).

Cancellation: a handler runs inside the request's cancel scope.  When the client sends
``notifications/cancelled`` the scope is cancelled: an async handler is interrupted at
its next checkpoint; a sync handler running in a worker thread cannot be interrupted,
its result is abandoned (:attr:`Context.cancelled` lets it notice and stop early).

The methods are async.  A sync handler in a worker thread calls them through trio:
``trio.from_thread.run(ctx.log, "info", "hello")``.

:data:`current_context` holds the request's Context while its handler runs (in the
request's own task, and in the worker thread of a sync handler, which trio gives a copy
of the task's context variables); :class:`~mcp_ref.server.ClientLogHandler` reads it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import trio

from .. import types as t
from .._convert import unstructure
from .._errors import INTERNAL_ERROR, LocalProtocolError, McpError
from .._methods import capability_present
from .._modern import missing_capabilities
from .._modern_connection import input_capabilities
from ..auth import HttpHeaders, Identity
from ._elicitation import elicited_content_problem
from ._logging import LogPolicy, send_log
from ._modern import Rounds, elicitation, roots, sampling

if TYPE_CHECKING:
    from .._modern import RequestContext as ModernContext
    from ..trio import RequestContext, Session

__all__ = ["Context", "current_context"]

_INPUTS = frozenset({"elicitation/create", "sampling/createMessage", "roots/list"})
"""The requests a handler asks its client for (each needs a client capability)."""


class Context:
    """Per-request access to the session, for handler functions.

    Attributes:
        request: the session's :class:`~mcp_ref.trio.RequestContext`.
        server: the :class:`~mcp_ref.server.Server` handling the request.
        modern: a modern (2026-07-28) request's own context (version, client
            capabilities and info, log level, from its ``_meta``); None in the
            handshake era.
        rounds: a modern request's input rounds (see :mod:`._modern`), on the methods
            that may ask for input; else None.
    """

    __slots__ = (
        "_last_progress_at",
        "_log_policy",
        "_log_queue",
        "modern",
        "request",
        "rounds",
        "server",
    )

    MIN_PROGRESS_INTERVAL = 0.01
    """Seconds between two progress notifications of one request (at most 100 a
    second); the final one (``progress >= total``) always goes."""

    def __init__(
        self,
        request: RequestContext,
        server: Any,
        log_policy: LogPolicy,
        modern: ModernContext | None = None,
        rounds: Rounds | None = None,
    ) -> None:
        self.request = request
        self.server = server
        self.modern = modern
        self.rounds = rounds
        self._log_policy = log_policy
        self._last_progress_at: float | None = None
        self._log_queue: Any = None  # records waiting to be forwarded (._log_forward)

    @property
    def session(self) -> Session:
        """The :class:`~mcp_ref.trio.Session` the request arrived on."""
        return self.request.session

    @property
    def request_id(self) -> Any:
        """The request's id, exactly as the client sent it."""
        return self.request.request_id

    @property
    def progress_token(self) -> str | int | None:
        """The request's ``_meta.progressToken``, or None."""
        return self.request.progress_token

    @property
    def cancel_scope(self) -> trio.CancelScope:
        """The scope the handler runs in; cancelled when the client cancels."""
        return self.request.cancel_scope

    @property
    def cancelled(self) -> bool:
        """True once the client cancelled the request (or the session closed).

        Source: 2025-06-18/basic/utilities/cancellation#behavior-requirements.3.
        """
        return self.request.cancel_scope.cancel_called

    @property
    def client_capabilities(self) -> t.ClientCapabilities | None:
        """What the client declared: in ``initialize``, or in this request's ``_meta``
        (modern era)."""
        if self.modern is not None:
            # Spec: 2026-07-28/basic/index#statelessness.1
            # "Servers MUST NOT rely on prior requests over the same connection to
            # establish context (e.g., capabilities, protocol version, client identity)."
            return self.modern.client_capabilities
        caps = self.request.session.peer_capabilities
        return caps if isinstance(caps, t.ClientCapabilities) else None

    @property
    def auth(self) -> Identity | None:
        """Who the request's access token says is calling (subject, client id, scopes,
        expiry, audience, claims), verified by the server (``serve_http(auth=...)``);
        None when the server verifies no tokens, and over stdio.  Never the token: a
        protected server does not pass it on (2025-11-25/basic/authorization
        #access-token-privilege-restriction)."""
        from .._http_auth import CALLER

        caller = CALLER.get()
        return None if caller is None else caller.identity

    @property
    def http_headers(self) -> HttpHeaders | None:
        """The HTTP headers of the request that carried this message, read-only (a
        protected server leaves ``Authorization`` out); None over stdio and
        WebSocket."""
        from .._http_auth import CALLER

        caller = CALLER.get()
        return None if caller is None else caller.headers

    def client_supports(self, *path: str) -> bool:
        """Whether the client declared a capability, e.g. ``("sampling",)``,
        ``("elicitation",)``, ``("roots", "list_changed")``: in ``initialize``, or in
        this request's ``_meta`` (modern era)."""
        return capability_present(self.client_capabilities, path)

    async def log(self, level: str, data: Any, logger: str | None = None) -> bool:
        """Send a log message to the client, if its level allows (see :mod:`._logging`).

        Args:
            level: ``"debug"``, ``"info"``, ``"notice"``, ``"warning"``, ``"error"``,
                ``"critical"``, ``"alert"`` or ``"emergency"``.
            data: any JSON-serializable value.  Never put secrets or personal data in it
                (2025-06-18/server/utilities/logging#security.1).
            logger: an optional logger name.

        Returns:
            True when sent; False when filtered by level, rate-limited, or the server
            does not declare ``logging``.  A modern request is logged to only when its
            ``_meta`` names a level (``io.modelcontextprotocol/logLevel``), at or above it.

        Raises:
            ValueError: unknown level.
            SessionClosed: the session ended.

        Source: 2025-06-18/server/utilities/logging; 2026-07-28/server/utilities/logging
        (per-request log level).
        """
        modern = self.modern
        return await send_log(
            self.request.session,
            self._log_policy,
            level,
            data,
            logger=logger,
            # Spec: 2026-07-28/server/utilities/logging#per-request-log-level.3
            # "`notifications/message` is request-scoped: the server MUST NOT deliver it on a
            # `subscriptions/listen` stream or on any stream other than the one carrying the
            # response to the request that set the log level."
            related_request_id=self.request.request_id,
            per_request=modern is not None,
            request_level=None if modern is None else modern.log_level,
            declared=bool(getattr(self.server, "logging", True)),
        )

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> bool:
        """Send ``notifications/progress`` (a no-op without a progress token).

        Rate-limited: an update less than :attr:`MIN_PROGRESS_INTERVAL` seconds after
        the last one sent is dropped (returns False), unless it is the final one
        (``total`` given and ``progress >= total``).  Values still must increase.

        Returns:
            True when sent.

        Raises:
            LocalProtocolError: ``progress`` does not increase.
            SessionClosed: the session ended.

        Source: 2025-06-18/basic/utilities/progress#progress-flow.4,
        2025-06-18/basic/utilities/progress#implementation-notes.2.
        """
        now = trio.current_time()
        final = total is not None and progress >= total
        last = self._last_progress_at
        # Spec: 2025-06-18/basic/utilities/progress#implementation-notes.2
        # "Both parties SHOULD implement rate limiting to prevent flooding"
        if not final and last is not None and now - last < self.MIN_PROGRESS_INTERVAL:
            return False
        await self.request.report_progress(progress, total, message)
        self._last_progress_at = now
        return True

    async def send_request(self, method: str, params: Any = None, **kw: Any) -> Any:
        """Send a request to the client (``sampling/createMessage``, ``roots/list``,
        ``elicitation/create``...) and wait for its typed result.

        Raises:
            McpError: the client answered with an error, or the request timed out.
            LocalProtocolError: the client did not declare the needed capability.
            SessionClosed: the session ended.
        """
        return await self.request.send_request(method, params, **kw)

    async def send_notification(self, method: str, params: Any = None) -> None:
        """Send a notification to the client, tagged with this request."""
        await self.request.send_notification(method, params)

    async def ask(self, requests: Mapping[str, Any]) -> dict[str, Any]:
        """Ask the client for several inputs at once; their typed results by id.

        ``requests`` maps ids of your choosing (unique within the request) to input
        requests built with :func:`~mcp_ref.server.elicitation`,
        :func:`~mcp_ref.server.sampling` or :func:`~mcp_ref.server.roots` (typed
        ``ElicitRequest``, ``CreateMessageRequest``, ``ListRootsRequest``).  Write it the
        same in both eras:

        * handshake era: each is sent to the client as a request, in order;
        * modern era (2026-07-28): answers given in earlier rounds are returned; if any
          is missing the handler stops here and the server answers ``input_required``
          with the missing ones; the client retries with the answers and the handler
          runs again from the start (so the code before an ``ask`` runs once per round:
          keep it free of side effects).  On ``tools/call``, ``prompts/get`` and
          ``resources/read`` only.

        Raises:
            McpError: the client answered with an error; -32021 (modern) when the
                request's client capabilities lack what an input needs; -32602
                (modern) when an answer is not the result its request expects.
            LocalProtocolError: the client did not declare the needed capability
                (handshake era: ``sampling.tools`` for a sampling request with tools,
                ``elicitation.url`` for a URL-mode elicitation); asking for input where
                the method does not allow it.
            SessionClosed: the session ended.

        Source: 2026-07-28/basic/patterns/mrtr; 2025-06-18/client/sampling,
        client/roots, client/elicitation.
        """
        if self.modern is not None:
            # Spec: 2026-07-28/basic/patterns/mrtr#multi-round-trip-requests.1
            # "Servers MUST send server-to-client requests (such as `roots/list`,
            # `sampling/createMessage`, or `elicitation/create`) using the MRTR pattern."
            if self.rounds is None:
                raise LocalProtocolError(
                    f"{self.request.method} cannot ask the client for input in 2026-07-28 "
                    "(only tools/call, prompts/get and resources/read can)"
                )
            return self.rounds.take(requests)
        # Spec: 2025-11-25/client/elicitation#capabilities.3
        # "Servers MUST NOT send elicitation requests with modes that are not supported by the
        # client."
        # Spec: 2025-11-25/client/sampling#tools-in-sampling.2
        # "Servers MUST NOT send tool-enabled sampling requests to Clients that have not declared
        # support for tool use via the `sampling.tools` capability."
        declared = self.session.connection.peer_capabilities
        inputs = [r for r in requests.values() if getattr(r, "method", None) in _INPUTS]
        missing = missing_capabilities(declared, input_capabilities(inputs))
        if missing:
            raise LocalProtocolError(f"the client did not declare the capabilities {missing}")
        results: dict[str, Any] = {}
        for key, request in requests.items():
            results[key] = await self.send_request(request.method, request.params)
        return results

    def _input_id(self, key: str | None, method: str) -> str:
        if key is not None:
            return key
        return self.rounds.next_id(method) if self.rounds is not None else method

    async def sample(
        self,
        messages: str | Sequence[t.SamplingMessage],
        *,
        max_tokens: int = 1000,
        system_prompt: str | None = None,
        temperature: float | None = None,
        key: str | None = None,
        **kw: Any,
    ) -> t.CreateMessageResult:
        """Ask the client's LLM for a completion (``sampling/createMessage``).

        Args:
            messages: a prompt (one user text message) or the conversation.
            max_tokens: the most tokens to sample.
            system_prompt, temperature: as in ``CreateMessageRequestParams``.
            key: the input's id in a modern ``input_required`` answer (default
                ``sampling-N``, N its position among this handler's asks).
            kw: any other ``CreateMessageRequestParams`` field.

        Raises:
            LocalProtocolError: the client did not declare ``sampling``.
            McpError, SessionClosed: as :meth:`ask`.

        Source: 2025-06-18/client/sampling#creating-messages.
        """
        request = sampling(
            list(messages) if not isinstance(messages, str) else messages,
            max_tokens=max_tokens,
            system_prompt=system_prompt,
            temperature=temperature,
            **kw,
        )
        key = self._input_id(key, request.method)
        result: t.CreateMessageResult = (await self.ask({key: request}))[key]
        return result

    async def elicit(
        self,
        message: str,
        requested_schema: t.ElicitRequestFormParamsRequestedSchema | dict[str, Any],
        *,
        key: str | None = None,
    ) -> t.ElicitResult:
        """Ask the user for information through the client (form mode).

        Args:
            message: what is being asked, and why.  Never ask for secrets
                (2025-06-18/client/elicitation#security-considerations.1).
            requested_schema: a flat object schema of primitive properties, typed or as
                a JSON dict.
            key: the input's id in a modern ``input_required`` answer (default
                ``elicitation-N``).

        Raises:
            ValueError: ``requested_schema`` is not a valid requested schema.
            LocalProtocolError: the client did not declare ``elicitation``.
            McpError: as :meth:`ask`; also (code -32603) when the client accepted with
                content that does not fit ``requested_schema``.
            SessionClosed: as :meth:`ask`.

        Source: 2025-06-18/client/elicitation#creating-elicitation-requests,
        2025-06-18/client/elicitation#security-considerations.3.
        """
        request = elicitation(message, requested_schema)
        form = request.params
        assert isinstance(form, t.ElicitRequestFormParams)
        key = self._input_id(key, request.method)
        result: t.ElicitResult = (await self.ask({key: request}))[key]
        if result.action == "accept":
            # Spec: 2025-06-18/client/elicitation#security-considerations.3
            # "Both parties SHOULD validate elicitation content against the provided schema"
            schema_json = unstructure(form.requested_schema)
            problem = elicited_content_problem(schema_json, result.content or {})
            if problem is not None:
                raise McpError(
                    INTERNAL_ERROR,
                    f"the client's elicitation content does not match the requested "
                    f"schema: {problem}",
                    {"content": result.content},
                )
        return result

    async def list_roots(self, *, key: str | None = None) -> list[t.Root]:
        """The client's roots (``roots/list``).

        Args:
            key: the input's id in a modern ``input_required`` answer (default
                ``roots-N``).

        Raises:
            LocalProtocolError: the client did not declare ``roots``.
            McpError, SessionClosed: as :meth:`ask`.

        Source: 2025-06-18/client/roots#listing-roots.
        """
        request = roots()
        key = self._input_id(key, request.method)
        result: t.ListRootsResult = (await self.ask({key: request}))[key]
        return list(result.roots)


current_context: ContextVar[Context | None] = ContextVar(
    "mcp_ref.server.current_context", default=None
)
"""The :class:`Context` of the request whose tool, resource, prompt or completion
function is running in this task (or worker thread); None elsewhere."""

"""The high-level MCP client: typed methods over a trio :class:`~mcp_ref.trio.Session`.

Theory of operation
-------------------
:func:`open_client` opens a session in the client role over any
:class:`~mcp_ref.trio.MessageChannel`, performs initialization (``initialize``, then
``notifications/initialized``) and yields a :class:`Client`.  :func:`open_stdio_client`
does the same over a child process started with
:func:`~mcp_ref.trio.open_stdio_process`.

The client's capabilities follow from what it is given: a ``sampling_handler`` declares
``sampling``, an ``elicitation_handler`` declares ``elicitation``, ``roots`` declares
``roots`` with ``listChanged``.  What is not given is not declared, so the core refuses
the server's request for it with -32601 before any code of ours runs
(2025-06-18/basic/lifecycle#operation.1).

Every method sends one request (list methods: one per page, walking every page with
:class:`~mcp_ref._pagination.PageWalker`) and returns the typed result of
:mod:`mcp_ref.types`.  They all raise :class:`~mcp_ref.McpError` for an error response,
:class:`NoAnswerError` (an McpError subclass, code ``REQUEST_TIMEOUT``) when the server
sent no answer within the timeout, :class:`~mcp_ref.trio.SessionClosed` when the session
ended, and :class:`~mcp_ref.LocalProtocolError` when the server did not declare the
capability the method needs.

Telling "no answer" from "an error answer": the trio session reports its own timeout as
:class:`NoAnswerError`, a class no message from the wire becomes, so a server's -32001
answer stays a plain McpError.

Server notifications go to two optional callbacks, sync or async, run one at a time in
arrival order: ``on_log(params)`` for ``notifications/message`` and
``on_notification(notification)`` for every notification (logging, list_changed,
resources/updated, progress-free others).  Callbacks run on the event loop: keep them
short, or hand work to your own tasks.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import trio

from .. import types as t
from .._errors import METHOD_NOT_FOUND, LocalProtocolError, McpError, NoAnswerError
from .._inflight import RequestTimeout
from .._methods import LATEST_PROTOCOL_VERSION
from .._pagination import PageWalker
from .._ratelimit import RateLimit, TokenBucket, take_or_refuse
from .._roots import check_roots
from .._state import CLIENT
from ..events import Notification, Progress
from ..trio import (
    DEFAULT_TIMEOUT,
    SESSION_DEFAULT,
    MessageChannel,
    RequestContext,
    Session,
    StderrMode,
    open_session,
    open_stdio_process,
)
from ..trio._handler import TimeoutArg
from ._schema import OutputSchemas

__all__ = [
    "DEFAULT_CLIENT_INFO",
    "Client",
    "ElicitationHandler",
    "NoAnswerError",
    "RootsArg",
    "SamplingHandler",
    "open_client",
    "open_stdio_client",
]

log = logging.getLogger("mcp_ref.client")

T = TypeVar("T")

try:
    _VERSION = importlib.metadata.version("mcp-ref")
except importlib.metadata.PackageNotFoundError:  # pragma: no cover - not installed
    _VERSION = "0"

DEFAULT_CLIENT_INFO = t.Implementation(name="mcp-ref", version=_VERSION)
"""The ``clientInfo`` sent when none is given."""

SamplingHandler = Callable[
    [t.CreateMessageRequestParams], "t.CreateMessageResult | Awaitable[t.CreateMessageResult]"
]
"""Answers ``sampling/createMessage``: ``(params) -> t.CreateMessageResult``, sync or async."""

ElicitationHandler = Callable[[Any], "t.ElicitResult | Awaitable[t.ElicitResult]"]
"""Answers ``elicitation/create``: ``(params) -> t.ElicitResult``, sync or async; params are
``t.ElicitRequestFormParams`` or (2025-11-25) ``t.ElicitRequestURLParams``."""

DEFAULT_SAMPLING_RATE_LIMIT = RateLimit(per_second=2.0, burst=20)
"""At most 20 ``sampling/createMessage`` requests at once, then 2 per second, per
session (2025-06-18/client/sampling#security-considerations.4)."""

DEFAULT_ELICITATION_RATE_LIMIT = RateLimit(per_second=1.0, burst=10)
"""At most 10 ``elicitation/create`` requests at once, then 1 per second, per session
(2025-06-18/client/elicitation#security-considerations.6)."""

RootsArg = Sequence[t.Root] | Callable[[], "Sequence[t.Root] | Awaitable[Sequence[t.Root]]"] | None
"""The client's roots: a list of ``t.Root``, a (sync or async) callable returning one, or
None for no ``roots`` capability."""


async def _maybe_await(value: T | Awaitable[T]) -> T:
    if inspect.isawaitable(value):
        return await value
    return value


def _kept_roots(roots: RootsArg) -> RootsArg:
    """``roots`` as the client keeps it: a list checked now (:func:`check_roots`, which
    raises ValueError), or a callable (its lists are checked on each call) or None, as
    given."""
    return roots if roots is None or callable(roots) else check_roots(roots)


class _ClientHandler:
    """The session handler of a :class:`Client` (kept apart so it is not public API)."""

    def __init__(self, client: Client) -> None:
        self._client = client

    async def handle_request(self, ctx: RequestContext) -> Any:
        c = self._client
        if ctx.method == "sampling/createMessage" and c._sampling_handler is not None:
            # Spec: 2025-06-18/client/sampling#security-considerations.4
            # "Clients SHOULD implement rate limiting"
            c._check_rate(ctx.method, c._sampling_rate_limit)
            # Spec: 2025-06-18/client/sampling#error-handling.1
            # "Clients SHOULD return errors for common failure cases:"
            # (an McpError from the handler goes back to the server as the error)
            return await _maybe_await(c._sampling_handler(ctx.params))
        if ctx.method == "elicitation/create" and c._elicitation_handler is not None:
            # Spec: 2025-06-18/client/elicitation#security-considerations.6
            # "Clients SHOULD implement rate limiting"
            c._check_rate(ctx.method, c._elicitation_rate_limit)
            return await _maybe_await(c._elicitation_handler(ctx.params))
        if ctx.method == "roots/list" and c._roots is not None:
            return t.ListRootsResult(roots=list(await c._current_roots()))
        raise McpError(METHOD_NOT_FOUND, f"method not found: {ctx.method}")

    async def handle_notification(self, session: Session, notification: Notification) -> None:
        c = self._client
        if notification.method == "notifications/tools/list_changed":
            c._output_schemas.clear()  # re-list before results are checked again
        if notification.method == "notifications/message" and c.on_log is not None:
            await _maybe_await(c.on_log(notification.params))
        if c.on_notification is not None:
            await _maybe_await(c.on_notification(notification))


class Client:
    """A connected, initialized MCP client.  Made by :func:`open_client` or
    :func:`open_stdio_client`.

    Attributes:
        session: the underlying :class:`~mcp_ref.trio.Session` (for raw requests).
        on_log: called with ``t.LoggingMessageNotificationParams`` for each
            ``notifications/message`` (sync or async; may be reassigned).
        on_notification: called with each server :class:`~mcp_ref.Notification`
            (sync or async; may be reassigned).
        process: the server's ``trio.Process`` for :func:`open_stdio_client`, else None.

    Source: 2025-06-18/basic/lifecycle, 2025-06-18/server (the methods), 2025-06-18/client.
    """

    def __init__(
        self,
        *,
        sampling_handler: SamplingHandler | None,
        elicitation_handler: ElicitationHandler | None,
        roots: RootsArg,
        on_log: Callable[[t.LoggingMessageNotificationParams], Any] | None,
        on_notification: Callable[[Notification], Any] | None,
        sampling_rate_limit: RateLimit | None = DEFAULT_SAMPLING_RATE_LIMIT,
        elicitation_rate_limit: RateLimit | None = DEFAULT_ELICITATION_RATE_LIMIT,
    ) -> None:
        self._sampling_handler = sampling_handler
        self._elicitation_handler = elicitation_handler
        self._sampling_rate_limit = sampling_rate_limit
        self._elicitation_rate_limit = elicitation_rate_limit
        self._buckets: dict[str, TokenBucket] = {}
        self._roots = _kept_roots(roots)
        self.on_log = on_log
        self.on_notification = on_notification
        self._output_schemas = OutputSchemas()
        self._session: Session | None = None
        self._init: t.InitializeResult | None = None
        self.process: trio.Process | None = None

    def _check_rate(self, method: str, limit: RateLimit | None) -> None:
        """Refuse a server request beyond its rate limit (McpError -32603 with
        ``data.retryAfter``); None: no limit."""
        if limit is None:
            return
        take_or_refuse(self._buckets, limit, method, trio.current_time())

    # ------------------------------------------------------------- initialization

    @property
    def client_capabilities(self) -> t.ClientCapabilities:
        """The capabilities this client declares, from the handlers it was given.

        Source: 2025-06-18/client/sampling#capabilities.1,
        2025-06-18/client/elicitation#capabilities.1, 2025-06-18/client/roots#capabilities.1.
        """
        return t.ClientCapabilities(
            # A capability for each handler given; the initialize request declares them
            # (the sampling, elicitation and roots capabilities.1 tags are in _initialize:
            # a tag inside this expression would cover the next statement, not this one).
            sampling=t.ClientCapabilitiesSampling() if self._sampling_handler else None,
            elicitation=t.ClientCapabilitiesElicitation() if self._elicitation_handler else None,
            roots=t.ClientCapabilitiesRoots(list_changed=True) if self._roots is not None else None,
        )

    async def _initialize(
        self, client_info: t.Implementation, protocol_version: str, timeout: TimeoutArg
    ) -> None:
        # Spec: 2025-06-18/client/sampling#capabilities.1
        # "Clients that support sampling MUST declare the `sampling` capability during
        # initialization:"
        # Spec: 2025-06-18/client/elicitation#capabilities.1
        # "Clients that support elicitation MUST declare the `elicitation` capability during
        # initialization:"
        # Spec: 2025-06-18/client/roots#capabilities.1
        # "Clients that support roots MUST declare the `roots` capability during
        # initialization:"
        params = t.InitializeRequestParams(
            protocol_version=protocol_version,
            capabilities=self.client_capabilities,
            client_info=client_info,
        )
        # Spec: 2025-06-18/basic/lifecycle#initialization.2
        # "The client MUST initiate this phase by sending an `initialize` request containing:"
        result = await self.request("initialize", params, timeout=timeout)
        assert isinstance(result, t.InitializeResult)
        self._init = result
        # Spec: 2025-06-18/basic/lifecycle#initialization.4
        # "After successful initialization, the client MUST send an `initialized` notification to
        # indicate it is ready to begin normal operations:"
        await self.session.send_notification("notifications/initialized")

    # ------------------------------------------------------------------ properties

    @property
    def session(self) -> Session:
        """The underlying session."""
        if self._session is None:
            raise RuntimeError("the client is not connected")
        return self._session

    @property
    def server_info(self) -> t.Implementation:
        """The server's ``serverInfo``."""
        return self._initialized.server_info

    @property
    def server_capabilities(self) -> t.ServerCapabilities:
        """The server's declared capabilities."""
        return self._initialized.capabilities

    @property
    def protocol_version(self) -> str:
        """The negotiated protocol version."""
        return self._initialized.protocol_version

    @property
    def instructions(self) -> str | None:
        """The server's ``instructions``, if it gave any."""
        return self._initialized.instructions

    @property
    def _initialized(self) -> t.InitializeResult:
        if self._init is None:
            raise RuntimeError("the client is not initialized")
        return self._init

    # --------------------------------------------------------------------- helpers

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: TimeoutArg = SESSION_DEFAULT,
        on_progress: Callable[[Progress], Any] | None = None,
    ) -> Any:
        """Send any request and return its typed result.

        Args:
            method: e.g. ``"tools/call"``.
            params: its typed params (``mcp_ref.types``), or None.
            timeout: a :class:`~mcp_ref.RequestTimeout`, None for none, or
                ``SESSION_DEFAULT`` (the ``timeout`` given to :func:`open_client`).
            on_progress: called (sync or async) with each :class:`~mcp_ref.Progress`.

        Raises:
            NoAnswerError: no answer within the timeout: we stopped waiting (and, but
                for ``initialize``, sent ``notifications/cancelled``).
            McpError: the server answered with an error response.
            SessionClosed, LocalProtocolError: as
                :meth:`~mcp_ref.trio.Session.send_request`.

        Source: 2025-06-18/basic/lifecycle#timeouts.2, #timeouts.3.
        """
        return await self.session.send_request(
            method, params, timeout=timeout, on_progress=on_progress
        )

    async def _page(self, method: str, cursor: str | None, timeout: TimeoutArg) -> Any:
        params = t.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        return await self.request(method, params, timeout=timeout)

    async def _walk(self, method: str, field: str, timeout: TimeoutArg) -> list[Any]:
        # Spec: 2025-06-18/server/utilities/pagination#implementation-guidelines.3
        # "Clients MUST treat cursors as opaque tokens:"
        walker = PageWalker()
        while (cursor := walker.next_cursor()) is not PageWalker.DONE:
            result = await self._page(method, cursor, timeout)
            walker.add_page(getattr(result, field), result.next_cursor)
            if method == "tools/list":
                self._output_schemas.remember(result.tools)
        return walker.items

    # ------------------------------------------------------------------------ tools

    async def list_tools(self, *, timeout: TimeoutArg = SESSION_DEFAULT) -> list[t.Tool]:
        """Every tool of the server, walking all pages; remembers their output schemas.

        Raises:
            RemoteProtocolError: the server repeated a cursor or sent over 1000 pages.

        Source: 2025-06-18/server/tools#listing-tools.
        """
        return await self._walk("tools/list", "tools", timeout)

    async def list_tools_page(
        self, cursor: str | None = None, *, timeout: TimeoutArg = SESSION_DEFAULT
    ) -> t.ListToolsResult:
        """One page of ``tools/list`` (``cursor`` None: the first); remembers the output
        schemas of its tools.  Source: 2025-06-18/server/utilities/pagination."""
        result: t.ListToolsResult = await self._page("tools/list", cursor, timeout)
        self._output_schemas.remember(result.tools)
        return result

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        on_progress: Callable[[Progress], Any] | None = None,
        timeout: TimeoutArg = SESSION_DEFAULT,
    ) -> t.CallToolResult:
        """Call a tool.

        Args:
            name: the tool's name.
            arguments: its arguments (a JSON object), or None.
            on_progress: called (sync or async) with each :class:`~mcp_ref.Progress`.
            timeout: a :class:`~mcp_ref.RequestTimeout`, None, or the session default.

        Returns:
            The ``t.CallToolResult``.  A tool that failed reports it with
            ``is_error=True`` in the result, not as an exception.

        Raises:
            OutputSchemaError: (an McpError, code -32603) the tool declared an
                ``outputSchema`` in the last ``list_tools``/``list_tools_page`` and the
                result's ``structuredContent`` does not match it.  The check needs the
                optional ``jsonschema`` package: without it, and for tools never listed,
                results without ``structuredContent`` or with ``isError``, nothing is
                checked.
            McpError: an error response (unknown tool: -32602).
            NoAnswerError: no answer within the timeout.

        Source: 2025-06-18/server/tools#calling-tools,
        2025-06-18/server/tools#output-schema.2.
        """
        params = t.CallToolRequestParams(
            name=name, arguments=dict(arguments) if arguments is not None else None
        )
        result: t.CallToolResult = await self.request(
            "tools/call", params, timeout=timeout, on_progress=on_progress
        )
        self._output_schemas.check(name, result)
        return result

    # -------------------------------------------------------------------- resources

    async def list_resources(self, *, timeout: TimeoutArg = SESSION_DEFAULT) -> list[t.Resource]:
        """Every resource, walking all pages.
        Source: 2025-06-18/server/resources#listing-resources."""
        return await self._walk("resources/list", "resources", timeout)

    async def list_resources_page(
        self, cursor: str | None = None, *, timeout: TimeoutArg = SESSION_DEFAULT
    ) -> t.ListResourcesResult:
        """One page of ``resources/list``."""
        result: t.ListResourcesResult = await self._page("resources/list", cursor, timeout)
        return result

    async def list_resource_templates(
        self, *, timeout: TimeoutArg = SESSION_DEFAULT
    ) -> list[t.ResourceTemplate]:
        """Every resource template, walking all pages.
        Source: 2025-06-18/server/resources#resource-templates."""
        return await self._walk("resources/templates/list", "resource_templates", timeout)

    async def list_resource_templates_page(
        self, cursor: str | None = None, *, timeout: TimeoutArg = SESSION_DEFAULT
    ) -> t.ListResourceTemplatesResult:
        """One page of ``resources/templates/list``."""
        result: t.ListResourceTemplatesResult = await self._page(
            "resources/templates/list", cursor, timeout
        )
        return result

    async def read_resource(
        self, uri: str, *, timeout: TimeoutArg = SESSION_DEFAULT
    ) -> t.ReadResourceResult:
        """Read a resource.  Raises McpError -32002 when the server has no such resource.
        Source: 2025-06-18/server/resources#reading-resources."""
        result: t.ReadResourceResult = await self.request(
            "resources/read", t.ReadResourceRequestParams(uri=uri), timeout=timeout
        )
        return result

    async def subscribe(self, uri: str, *, timeout: TimeoutArg = SESSION_DEFAULT) -> None:
        """Subscribe to a resource's ``notifications/resources/updated`` (they arrive at
        ``on_notification``).  Needs the server's ``resources.subscribe`` capability.
        Source: 2025-06-18/server/resources#subscriptions."""
        await self.request(
            "resources/subscribe", t.SubscribeRequestParams(uri=uri), timeout=timeout
        )

    async def unsubscribe(self, uri: str, *, timeout: TimeoutArg = SESSION_DEFAULT) -> None:
        """Cancel a subscription.  Source: 2025-06-18/server/resources#subscriptions."""
        await self.request(
            "resources/unsubscribe", t.UnsubscribeRequestParams(uri=uri), timeout=timeout
        )

    # ---------------------------------------------------------------------- prompts

    async def list_prompts(self, *, timeout: TimeoutArg = SESSION_DEFAULT) -> list[t.Prompt]:
        """Every prompt, walking all pages.  Source: 2025-06-18/server/prompts#listing-prompts."""
        # Spec: 2025-06-18/server/prompts#implementation-considerations.2
        # "Clients SHOULD handle pagination for large prompt lists"
        return await self._walk("prompts/list", "prompts", timeout)

    async def list_prompts_page(
        self, cursor: str | None = None, *, timeout: TimeoutArg = SESSION_DEFAULT
    ) -> t.ListPromptsResult:
        """One page of ``prompts/list``."""
        result: t.ListPromptsResult = await self._page("prompts/list", cursor, timeout)
        return result

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: TimeoutArg = SESSION_DEFAULT,
    ) -> t.GetPromptResult:
        """Get a prompt, filled in with ``arguments`` (strings).
        Source: 2025-06-18/server/prompts#getting-a-prompt."""
        params = t.GetPromptRequestParams(
            name=name, arguments=dict(arguments) if arguments is not None else None
        )
        result: t.GetPromptResult = await self.request("prompts/get", params, timeout=timeout)
        return result

    # -------------------------------------------------------------------- utilities

    async def complete(
        self,
        ref: t.PromptReference | t.ResourceTemplateReference,
        argument_name: str,
        value: str,
        context_arguments: Mapping[str, str] | None = None,
        *,
        timeout: TimeoutArg = SESSION_DEFAULT,
    ) -> t.CompleteResult:
        """Ask for completions of one argument of a prompt or resource template.

        Args:
            ref: ``t.PromptReference(name=...)`` or ``t.ResourceTemplateReference(uri=...)``.
            argument_name: the argument being completed.
            value: what the user typed so far.
            context_arguments: arguments already resolved (2025-06-18 on).

        Source: 2025-06-18/server/utilities/completion#requesting-completions.
        """
        params = t.CompleteRequestParams(
            ref=ref,
            argument=t.CompleteRequestParamsArgument(name=argument_name, value=value),
            context=(
                t.CompleteRequestParamsContext(arguments=dict(context_arguments))
                if context_arguments is not None
                else None
            ),
        )
        result: t.CompleteResult = await self.request(
            "completion/complete", params, timeout=timeout
        )
        return result

    async def set_logging_level(
        self, level: t.LoggingLevel, *, timeout: TimeoutArg = SESSION_DEFAULT
    ) -> None:
        """Ask the server to send log messages of ``level`` and above (``"debug"`` ...
        ``"emergency"``); they arrive at ``on_log``.
        Source: 2025-06-18/server/utilities/logging#setting-log-level."""
        await self.request(
            "logging/setLevel", t.SetLevelRequestParams(level=level), timeout=timeout
        )

    async def ping(self, *, timeout: TimeoutArg = SESSION_DEFAULT) -> None:
        """Check the server is alive.  Source: 2025-06-18/basic/utilities/ping."""
        await self.request("ping", timeout=timeout)

    # ------------------------------------------------------------------------ roots

    async def _current_roots(self) -> Sequence[t.Root]:
        roots = self._roots
        if roots is None:
            return []
        if callable(roots):
            return check_roots(await _maybe_await(roots()))
        return roots

    async def set_roots(self, roots: RootsArg) -> None:
        """Replace the client's roots and tell the server with
        ``notifications/roots/list_changed``.

        Args:
            roots: a list of ``t.Root`` (``file://`` URIs) or a callable returning one.

        Raises:
            LocalProtocolError: the client was opened without ``roots`` (the capability
                cannot be added after initialization; open with ``roots=[]``).

        Source: 2025-06-18/client/roots#root-list-changes.1.
        """
        if self._roots is None or roots is None:
            raise LocalProtocolError(
                "this client did not declare the roots capability; open it with roots=[...]"
            )
        self._roots = _kept_roots(roots)
        caps = self.session.our_capabilities
        if caps is not None and caps.roots is not None and caps.roots.list_changed:
            # Spec: 2025-06-18/client/roots#root-list-changes.1
            # "When roots change, clients that support `listChanged` MUST send a notification:"
            await self.session.send_notification("notifications/roots/list_changed")


@asynccontextmanager
async def open_client(
    channel: MessageChannel,
    *,
    client_info: t.Implementation = DEFAULT_CLIENT_INFO,
    protocol_version: str = LATEST_PROTOCOL_VERSION,
    sampling_handler: SamplingHandler | None = None,
    elicitation_handler: ElicitationHandler | None = None,
    roots: RootsArg = None,
    on_log: Callable[[t.LoggingMessageNotificationParams], Any] | None = None,
    on_notification: Callable[[Notification], Any] | None = None,
    timeout: RequestTimeout | None = DEFAULT_TIMEOUT,
    initialize_timeout: TimeoutArg = SESSION_DEFAULT,
    sampling_rate_limit: RateLimit | None = DEFAULT_SAMPLING_RATE_LIMIT,
    elicitation_rate_limit: RateLimit | None = DEFAULT_ELICITATION_RATE_LIMIT,
    **session_kw: Any,
) -> AsyncIterator[Client]:
    """Connect over ``channel``, initialize, and yield a :class:`Client`.

    Args:
        channel: the transport (:class:`~mcp_ref.trio.MessageChannel`).
        client_info: our ``clientInfo``.
        protocol_version: the version we ask for (default the latest we support); the
            server may answer another supported one (``client.protocol_version``).
        sampling_handler: answers ``sampling/createMessage``; declares ``sampling``.
        elicitation_handler: answers ``elicitation/create``; declares ``elicitation``.
        roots: our roots (a list or a callable); declares ``roots`` with ``listChanged``.
        on_log, on_notification: callbacks for server notifications (see :class:`Client`).
        timeout: the default per-request :class:`~mcp_ref.RequestTimeout` (default
            :data:`~mcp_ref.trio.DEFAULT_TIMEOUT`: 60 s, restarted by progress, at most
            600 s); None for none.
        initialize_timeout: how long to wait for the answer to ``initialize``: a
            :class:`~mcp_ref.RequestTimeout`, None for ever, or ``SESSION_DEFAULT``
            (the default: ``timeout``).  A program that is not an MCP server never
            answers; a short wait here says so sooner.
        sampling_rate_limit, elicitation_rate_limit: how many of these requests the
            server may make (:class:`~mcp_ref.client.RateLimit`, per session; defaults
            :data:`DEFAULT_SAMPLING_RATE_LIMIT` and :data:`DEFAULT_ELICITATION_RATE_LIMIT`;
            None for no limit).  One beyond is answered -32603 with ``data.retryAfter``
            (seconds) and never reaches the handler.
        **session_kw: passed to :func:`~mcp_ref.trio.open_session` (``send_timeout``,
            ``max_concurrent_requests``, ...).

    Raises:
        NoAnswerError: no answer to ``initialize`` within ``initialize_timeout``.
        McpError: the server refused ``initialize``.
        SessionClosed: the connection ended during initialization, or the server answered
            a protocol version we do not support (we disconnect, as the spec asks).

    Source: 2025-06-18/basic/lifecycle#initialization; 2025-06-18/basic/lifecycle#timeouts.3
    (``initialize_timeout``: a timeout per request).
    """
    client = Client(
        sampling_handler=sampling_handler,
        elicitation_handler=elicitation_handler,
        roots=roots,
        on_log=on_log,
        on_notification=on_notification,
        sampling_rate_limit=sampling_rate_limit,
        elicitation_rate_limit=elicitation_rate_limit,
    )
    async with open_session(
        channel, CLIENT, _ClientHandler(client), default_timeout=timeout, **session_kw
    ) as session:
        client._session = session
        await client._initialize(client_info, protocol_version, initialize_timeout)
        yield client


@asynccontextmanager
# Spec: 2025-06-18/basic/transports#transports.2 (stdio: the client side)
# "Clients SHOULD support stdio whenever possible."
async def open_stdio_client(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stderr: StderrMode = "capture",
    shutdown_grace: float = 2.0,
    **client_kw: Any,
) -> AsyncIterator[Client]:
    """Start an MCP server as a child process, connect over its stdio, initialize, and
    yield a :class:`Client` (``client.process`` is the child).

    Args:
        command: the program and its arguments, e.g. ``[sys.executable, "server.py"]``.
        env: extra environment variables for the child (added over ours).
        cwd: the child's working directory.
        stderr: the child's stderr: ``"capture"`` (default; its last lines appear in
            :class:`~mcp_ref.trio.SessionClosed` messages), ``"forward"``, ``"inherit"``
            or ``"discard"``.
        shutdown_grace: seconds allowed after closing stdin and after SIGTERM.
        **client_kw: passed to :func:`open_client`.

    On exit the child is shut down per 2025-06-18/basic/lifecycle#stdio.1 and reaped.

    Raises:
        OSError: the program could not be started.
        NoAnswerError, McpError, SessionClosed: as :func:`open_client`.
    """
    async with (
        open_stdio_process(
            command, env=env, cwd=cwd, stderr=stderr, shutdown_grace=shutdown_grace
        ) as (channel, process),
        open_client(channel, **client_kw) as client,
    ):
        client.process = process
        yield client

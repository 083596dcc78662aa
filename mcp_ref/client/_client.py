"""The high-level MCP client: typed methods over a trio :class:`~mcp_ref.trio.Session`.

Theory of operation
-------------------
:func:`open_client` opens a session in the client role over any
:class:`~mcp_ref.trio.MessageChannel`, opens it in its era and yields a
:class:`Client`.  :func:`open_stdio_client` does the same over a child process started
with :func:`~mcp_ref.trio.open_stdio_process`.

The era (``era=``, :data:`mcp_ref._client.EraArg`): ``"legacy"`` (the default)
performs initialization (``initialize``, then ``notifications/initialized``) as every
revision up to 2025-11-25 asks; ``"modern"`` speaks 2026-07-28 at once, with no
handshake and the version, ``clientInfo`` and capabilities in every request's
``_meta``; ``"auto"`` probes with ``server/discover`` and falls back to the handshake
when the server does not answer it as a modern server would.  The steps are the
core's (:meth:`mcp_ref._client.ClientCore.opening`).  In the modern era a request may
be answered ``input_required``: :meth:`Client.request` answers its input requests
through the same handlers as the server's requests of the handshake era and sends
the request again, and ``subscribe`` keeps a ``subscriptions/listen`` open.

This module is a loop around two things it does not decide: the trio session (which
owns the :class:`~mcp_ref.Connection`: reading, writing, timeouts, cancellation) and
the sans-IO client core, :class:`mcp_ref._client.ClientCore`, shared with the asyncio
and blocking clients.  The core makes the ``initialize`` params and the
``notifications/initialized``, turns params into their typed class, checks results
(a tool's ``structuredContent`` against its ``outputSchema``), answers the server's
requests (rate limits, handlers, roots) and holds every option's default.

The client's capabilities follow from what it is given: a ``sampling_handler`` declares
``sampling``, an ``elicitation_handler`` declares ``elicitation``, ``roots`` declares
``roots`` with ``listChanged``.  What is not given is not declared, so the core refuses
the server's request for it with -32601 before any code of ours runs
(2025-06-18/basic/lifecycle#operation.1).

Every method sends one request (list methods: one per page, walking every page with
:class:`~mcp_ref._client.ListWalk`) and returns the typed result of
:mod:`mcp_ref.types`.  They all raise :class:`~mcp_ref.McpError` for an error response,
:class:`NoAnswerError` (an McpError subclass, code ``REQUEST_TIMEOUT``) when the server
sent no answer within the timeout, :class:`~mcp_ref.SessionClosed` when the session
ended, and :class:`~mcp_ref.LocalProtocolError` when the server did not declare the
capability the method needs.

Server notifications go to two optional callbacks, sync or async, run one at a time in
arrival order: ``on_log(params)`` for ``notifications/message`` and
``on_notification(notification)`` for every notification (logging, list_changed,
resources/updated, progress-free others).  Callbacks run on the event loop: keep them
short, or hand work to your own tasks.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, TypeVar

import trio

from .. import types as t
from .._client import (
    DEFAULT,
    DEFAULT_CLIENT_INFO,
    DEFAULT_ELICITATION_RATE_LIMIT,
    DEFAULT_SAMPLING_RATE_LIMIT,
    DEFAULT_SHUTDOWN_GRACE,
    DEFAULT_TIMEOUT,
    ClientCore,
    ElicitationHandler,
    RootsArg,
    SamplingHandler,
    SessionClosed,
    Timeout,
    as_timeout,
    set_log_level,
)
from .._client_methods import TypedMethods
from .._errors import McpError, NoAnswerError
from .._inflight import RequestTimeout
from .._state import CLIENT
from ..events import Notification, Progress
from ..trio import (
    SESSION_DEFAULT,
    MessageChannel,
    RequestContext,
    Session,
    StderrMode,
    open_session,
    open_stdio_process,
)
from ..trio._channel import open_owned_nursery

__all__ = [
    "DEFAULT_CLIENT_INFO",
    "DEFAULT_ELICITATION_RATE_LIMIT",
    "DEFAULT_SAMPLING_RATE_LIMIT",
    "Client",
    "ElicitationHandler",
    "NoAnswerError",
    "RootsArg",
    "SamplingHandler",
    "TimeoutArg",
    "open_client",
    "open_stdio_client",
]

log = logging.getLogger("mcp_ref.client")

T = TypeVar("T")

TimeoutArg = Timeout
"""What ``timeout=`` takes: seconds, a :class:`~mcp_ref.RequestTimeout`, None (no
timeout), or ``DEFAULT`` (the ``timeout`` given to :func:`open_client`; the trio
session's ``SESSION_DEFAULT`` means the same)."""


async def _maybe_await(value: T | Awaitable[T]) -> T:
    if inspect.isawaitable(value):
        return await value
    return value


class _ClientHandler:
    """The session handler of a :class:`Client` (kept apart so it is not public API)."""

    def __init__(self, client: Client) -> None:
        self._client = client

    async def handle_request(self, ctx: RequestContext) -> Any:
        core = self._client.core
        value = await _maybe_await(core.handle(ctx.method, ctx.params, trio.current_time()))
        return core.finish(ctx.method, value)

    async def handle_notification(self, session: Session, notification: Notification) -> None:
        c = self._client
        if not c.core.notified(notification):
            return  # (a completion of no elicitation of ours)
        if notification.method == "notifications/subscriptions/acknowledged":
            c._acknowledged.set()
        if notification.method == "notifications/message" and c.on_log is not None:
            await _maybe_await(c.on_log(notification.params))
        if c.on_notification is not None:
            await _maybe_await(c.on_notification(notification))


class Client(TypedMethods):
    """A connected, initialized MCP client.  Made by :func:`open_client` or
    :func:`open_stdio_client`.

    Its typed methods (``list_tools``, ``call_tool``, ``read_resource``, ``get_prompt``,
    ``complete``, ``ping``, ...) are :class:`mcp_ref._client_methods.TypedMethods`',
    shared with the asyncio client; each sends one request through :meth:`request`.

    Args:
        core: the client core (its options: :class:`mcp_ref._client.ClientCore`).
        on_log, on_notification: as the attributes.

    Attributes:
        core: the sans-IO client core.
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
        core: ClientCore,
        *,
        on_log: Callable[[t.LoggingMessageNotificationParams], Any] | None = None,
        on_notification: Callable[[Notification], Any] | None = None,
    ) -> None:
        self.core = core
        self.on_log = on_log
        self.on_notification = on_notification
        self._session: Session | None = None
        self.process: trio.Process | None = None
        self._subscribed: list[str] = []
        self._own: trio.Nursery | None = None  # open_client's, for the one listen below
        self._listening: trio.CancelScope | None = None
        self._acknowledged = trio.Event()

    @property
    def session(self) -> Session:
        """The underlying session."""
        if self._session is None:
            raise RuntimeError("the client is not connected")
        return self._session

    @property
    def client_capabilities(self) -> t.ClientCapabilities:
        """The capabilities this client declares, from the handlers it was given."""
        return self.core.capabilities

    @property
    def era(self) -> str | None:
        """The era the session speaks: ``"legacy"`` (the handshake) or ``"modern"``
        (2026-07-28, per-request ``_meta``); None before it is open."""
        return self.core.spoken

    @property
    def server_info(self) -> t.Implementation:
        """The server's ``serverInfo`` (modern era: from :meth:`discover`; RuntimeError
        before it, or when the server sent none)."""
        return self._known(self.core.server_info, "serverInfo")

    @property
    def server_capabilities(self) -> t.ServerCapabilities:
        """The server's declared capabilities (modern era: from :meth:`discover`)."""
        return self._known(self.core.server_capabilities, "capabilities")

    @property
    def protocol_version(self) -> str:
        """The negotiated protocol version (modern era: the one every request names)."""
        return self._known(self.core.negotiated_version, "protocol version")

    @property
    def instructions(self) -> str | None:
        """The server's ``instructions``, if it gave any."""
        self._known(self.core.negotiated_version, "instructions")
        return self.core.instructions

    def _known(self, value: T | None, what: str) -> T:
        if value is None:
            if self.core.spoken == "modern":
                raise RuntimeError(f"the server's {what}: call discover() first")
            raise RuntimeError("the client is not initialized")
        return value

    async def _open(self, timeout: TimeoutArg) -> None:
        """Open the session in the era asked for (:meth:`ClientCore.opening
        <mcp_ref._client.ClientCore.opening>`): ``initialize`` (legacy), nothing
        (modern), or the ``server/discover`` probe and, when it says legacy,
        ``initialize`` (auto)."""
        steps = self.core.opening(self.session.connection)
        await self._run_opening(steps, self.session.send_notification, timeout)

    def _log_level(self, level: t.LoggingLevel) -> None:
        set_log_level(self.session.connection, level)

    async def _listen(self, uris: list[str]) -> None:
        """Modern era: close the client's ``subscriptions/listen`` (cancelled: the
        session sends ``notifications/cancelled``) and, when ``uris`` is not empty,
        open a new one for them and wait for its acknowledgment.

        Source: 2026-07-28/basic/patterns/subscriptions#cancellation.
        """
        if self._listening is not None:
            self._listening.cancel()
            self._listening = None
        if not uris:
            return
        assert self._own is not None
        self._acknowledged = trio.Event()
        params = self.core.listen_params(uris)
        self._listening = await self._own.start(self._listen_until_cancelled, params)
        await self._acknowledged.wait()

    async def _listen_until_cancelled(
        self,
        params: t.SubscriptionsListenRequestParams,
        task_status: trio.TaskStatus[trio.CancelScope] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        acknowledged = self._acknowledged
        with trio.CancelScope() as scope:
            task_status.started(scope)
            try:
                await self.request("subscriptions/listen", params, timeout=None)
                log.info("the server ended the subscription")
            except (McpError, SessionClosed) as exc:
                log.warning("subscriptions/listen failed: %s", exc)
            finally:
                acknowledged.set()  # (a listen that ended is waited for no more)

    async def discover(self, *, timeout: TimeoutArg = DEFAULT) -> t.DiscoverResult:
        """Ask a modern server for its versions, capabilities and identity
        (``server/discover``); the properties (``server_info``...) read it after.

        Raises:
            LocalProtocolError: the session is in the handshake era (``initialize``
                told all of this), or the server does not list our version.

        Source: 2026-07-28/server/discover.
        """
        result: t.DiscoverResult = await self.request("server/discover", timeout=timeout)
        self.core.discovered(result)
        return result

    async def _notify(self, note: Notification) -> None:
        await self.session.send_notification(note.method, note.params)

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: TimeoutArg = DEFAULT,
        on_progress: Callable[[Progress], Any] | None = None,
    ) -> Any:
        """Send any request and return its typed result.

        Args:
            method: e.g. ``"tools/call"``.
            params: its typed params (``mcp_ref.types``), a dict in wire form, or None.
            timeout: seconds, a :class:`~mcp_ref.RequestTimeout`, None for none, or
                ``DEFAULT`` (the ``timeout`` given to :func:`open_client`).
            on_progress: called (sync or async) with each :class:`~mcp_ref.Progress`
                (the request carries a progress token: the caller's own in ``_meta``,
                else its id).

        Raises:
            NoAnswerError: no answer within the timeout: we stopped waiting (and, but
                for ``initialize``, sent ``notifications/cancelled``).
            McpError: the server answered with an error response.
            OutputSchemaError: a tool's structured result does not match its schema.
            TooManyInputRounds: (modern era) the server kept answering
                ``input_required`` past :data:`mcp_ref._client.MAX_INPUT_ROUNDS`.
            SessionClosed: the session ended first.
            LocalProtocolError: the request breaks the protocol (nothing was sent).

        In the modern era a ``tools/call``, ``prompts/get`` or ``resources/read`` may
        be answered ``input_required``: each of its ``inputRequests`` goes to the
        handler this client was given (``elicitation_handler``, ``sampling_handler``,
        ``roots``), and the request is sent again, with a new id, carrying the answers
        in ``inputResponses`` and the server's ``requestState`` unchanged.

        Source: 2025-06-18/basic/lifecycle#timeouts.2, #timeouts.3;
        2026-07-28/basic/patterns/mrtr#client-requirements-basic-workflow.
        """
        session_timeout: Any = SESSION_DEFAULT  # the timeout open_client was given
        if timeout is not DEFAULT and not isinstance(timeout, type(SESSION_DEFAULT)):
            session_timeout = as_timeout(timeout)
        send = partial(
            self.session.send_request, method, timeout=session_timeout, on_progress=on_progress
        )
        return await self._rounds(self.core, method, params, send, trio.current_time)

    # ------------------------------------------------------------------------ roots

    async def set_roots(self, roots: RootsArg) -> None:
        """Replace the client's roots and tell the server with
        ``notifications/roots/list_changed``.

        Args:
            roots: a list of ``t.Root`` (``file://`` URIs) or a callable returning one.

        Raises:
            LocalProtocolError: the client was opened without ``roots`` (the capability
                cannot be added after initialization; open with ``roots=[]``).
            ValueError: a root is not an absolute ``file://`` URI.

        Source: 2025-06-18/client/roots#root-list-changes.1.
        """
        await self._notify(self.core.set_roots(roots))


@asynccontextmanager
async def open_client(
    channel: MessageChannel,
    *,
    on_log: Callable[[t.LoggingMessageNotificationParams], Any] | None = None,
    on_notification: Callable[[Notification], Any] | None = None,
    timeout: float | RequestTimeout | None = DEFAULT_TIMEOUT,
    initialize_timeout: TimeoutArg = DEFAULT,
    **options: Any,
) -> AsyncIterator[Client]:
    """Connect over ``channel``, open the session in its era (``initialize``, or
    nothing, or the ``server/discover`` probe: ``era``), and yield a :class:`Client`.

    Args:
        channel: the transport (:class:`~mcp_ref.trio.MessageChannel`).
        on_log, on_notification: callbacks for server notifications (see :class:`Client`).
        timeout: the default per-request timeout (seconds or a
            :class:`~mcp_ref.RequestTimeout`; default
            :data:`mcp_ref._client.DEFAULT_TIMEOUT`: 60 s, restarted by progress, at
            most 600 s); None for none.
        initialize_timeout: how long to wait for the answer to ``initialize`` (as
            ``timeout``, or ``DEFAULT``: ``timeout``).  A program that is not an MCP
            server never answers; a short wait here says so sooner.
        **options: the client core's (:class:`mcp_ref._client.ClientCore`):
            ``client_info``, ``era`` (``"legacy"``: ``initialize`` as before;
            ``"modern"``: 2026-07-28, no handshake, ``_meta`` on every request;
            ``"auto"``: the ``server/discover`` probe, then modern or the handshake),
            ``protocol_version`` (pins its era; in the handshake the server may answer
            another supported one: ``client.protocol_version``), ``sampling_handler``,
            ``elicitation_handler``, ``roots``, ``sampling_rate_limit``,
            ``elicitation_rate_limit``; any other keyword goes to
            :func:`~mcp_ref.trio.open_session` (``send_timeout``,
            ``max_concurrent_requests``, ...).

    Raises:
        ValueError: an unsupported ``protocol_version``, or a bad root.
        NoAnswerError: no answer to ``initialize`` within ``initialize_timeout``.
        McpError: the server refused ``initialize``.
        SessionClosed: the connection ended during initialization, or the server answered
            a protocol version we do not support (we disconnect, as the spec asks).

    Source: 2025-06-18/basic/lifecycle#initialization; 2025-06-18/basic/lifecycle#timeouts.3
    (``initialize_timeout``: a timeout per request).
    """
    core_kw = {k: options.pop(k) for k in _CORE_OPTIONS if k in options}
    client = Client(ClientCore(**core_kw), on_log=on_log, on_notification=on_notification)
    handler = _ClientHandler(client)
    async with open_session(
        channel, CLIENT, handler, default_timeout=as_timeout(timeout), **options
    ) as session:
        client._session = session
        await client._open(initialize_timeout)
        async with open_owned_nursery() as own:  # the modern era's subscriptions/listen
            client._own = own
            yield client


_CORE_OPTIONS = tuple(inspect.signature(ClientCore).parameters)
"""The keywords of :class:`ClientCore`; :func:`open_client` gives the others to the
session."""


@asynccontextmanager
# Spec: 2025-06-18/basic/transports#transports.2 (stdio: the client side)
# "Clients SHOULD support stdio whenever possible."
async def open_stdio_client(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stderr: StderrMode = "capture",
    shutdown_grace: float = DEFAULT_SHUTDOWN_GRACE,
    **client_kw: Any,
) -> AsyncIterator[Client]:
    """Start an MCP server as a child process, connect over its stdio, initialize, and
    yield a :class:`Client` (``client.process`` is the child).

    Args:
        command: the program and its arguments, e.g. ``[sys.executable, "server.py"]``.
        env: extra environment variables for the child (added over ours).
        cwd: the child's working directory.
        stderr: the child's stderr: ``"capture"`` (default; its last lines appear in
            :class:`~mcp_ref.SessionClosed` messages), ``"forward"``, ``"inherit"``
            or ``"discard"``.
        shutdown_grace: seconds allowed after closing stdin and after SIGTERM (default 2).
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

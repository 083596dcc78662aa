"""The high-level :class:`Server`: registries, dispatch, capabilities, live sessions.

Theory of operation
-------------------
A :class:`Server` is a :class:`~mcp_ref.trio.Handler`: a trio session calls
:meth:`Server.handle_request` for every request the client sends (``ping`` excepted,
the session answers it).  The server holds five registries, in registration order:
tools, resources, resource templates, prompts and completions, filled with decorators
(``@server.tool()``...) or ``add_*`` methods and emptied with ``remove_*``.  Requests are
dispatched by method to one small method each.

Capabilities are declared from what is registered when a client initializes
(2025-06-18/server/tools#capabilities.1, resources#capabilities.1, prompts#capabilities.1,
utilities/completion#capabilities.1, utilities/logging#capabilities.1): ``tools`` when
there is a tool, ``resources`` (with ``subscribe``) when there is a resource or a
template, ``prompts`` when there is a prompt, ``completions`` when there is a
completion, ``logging`` unless disabled, ``tasks`` when a tool may be called as a task
(``task_support=``; 2025-11-25 sessions only: :mod:`._tasks`).  ``listChanged`` is
always declared with them: the server does send those notifications.  ``declare=``
forces a capability on when its registry is still empty at initialization (tools added
later).

Every list is cut into pages of ``page_size`` with :func:`mcp_ref._pagination.paginate`
(2025-06-18/server/utilities/pagination); a bad cursor is -32602.

Live sessions and notifications.  The server tracks its sessions (``session_opened`` /
``session_closed``, called by the session).  Registry changes and
:meth:`Server.resource_updated` are synchronous (they may happen in a decorator, in a
tool, even in a worker thread); they bump a generation counter or queue the URI in the
subscribing sessions' state (bounded), then wake the sessions.  Each session run by
:meth:`Server.serve` has one small *notifier* task, in ``serve``'s own nursery, that
sends what changed: ``notifications/{tools,resources,prompts}/list_changed`` when the
session negotiated ``listChanged`` for that list, and ``notifications/resources/updated``
for URIs the session subscribed to.  Sessions opened some other way (``open_session``
directly) get no notifier and so no change notifications: run sessions with ``serve``.

Content blocks a session's protocol revision does not define (audio before 2025-03-26,
resource links before 2025-06-18) are replaced by a short text block in tool results
and prompts, so every message stays valid for the negotiated revision.

Sync handler functions run in worker threads bounded by one ``trio.CapacityLimiter``
(``max_threads``); see :mod:`._functions`.
"""

from __future__ import annotations

import inspect
import logging
import secrets
import signal
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from functools import partial
from typing import Any, Final, TypeVar, overload

import attrs
import trio

from .. import types as t
from .._convert import unstructure
from .._errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    RESOURCE_NOT_FOUND,
    LocalProtocolError,
    McpError,
)
from .._http_auth import CALLER, owner_key
from .._http_client_modern import header_annotations
from .._methods import capability_present
from .._modern import MODERN_VERSIONS, SERVER_INFO_KEY, SUBSCRIPTION_ID_KEY
from .._modern import RequestContext as ModernContext
from .._pagination import DEFAULT_PAGE_SIZE, InvalidCursor, paginate
from .._ratelimit import RateLimit, take_or_refuse
from .._request_state import InvalidRequestState, open_state, seal_state
from .._session_rules import DEFAULT_GRACE_SECONDS
from .._state import SERVER
from .._versions import SUPPORTED_VERSIONS
from ..trio import RequestContext, Session, SessionClosed, open_session, serve_http, serve_stdio
from ..trio._channel import MessageChannel
from ..trio._stdio import serve_until_signal
from ._completion import CompletionDef, make_completion
from ._content import for_version
from ._context import Context, current_context
from ._log_forward import flush_forwarded
from ._logging import LogPolicy, set_level
from ._modern import (
    CACHEABLE,
    CAPABILITY_OF,
    NOT_CACHEABLE,
    REVISION,
    CacheHint,
    InputRequired,
    Rounds,
    modern_context,
    supports_input,
    with_cache_hint,
)
from ._prompts import PromptDef, make_prompt
from ._resources import ResourceDef, TemplateDef, check_uri, make_resource, make_template
from ._session_state import state_of
from ._tasks import NURSERY_KEY, Tasks, declared, owner_of, set_task_support
from ._tools import ToolDef, make_tool

__all__ = ["DEFAULT_RATE_LIMITS", "MAX_COMPLETION_INPUT", "ResourceNotFound", "Server"]

log = logging.getLogger("mcp_ref.server")

F = TypeVar("F", bound=Callable[..., Any])


def _decorator(register: Callable[[Any], object]) -> Callable[[F], F]:
    """The decorator that hands the function it decorates to ``register`` and returns
    it unchanged: what ``@server.tool(...)``, ``@server.resource(...)`` and the other
    registering decorators return."""

    def decorate(fn: F) -> F:
        register(fn)
        return fn

    return decorate


_LISTS: Final = ("tools", "resources", "prompts")
DEFAULT_RATE_LIMITS: Final[Mapping[str, RateLimit]] = {
    "completion/complete": RateLimit(per_second=20, burst=50),
}
"""Rate limits of a server given none: completion requests, per session."""

MAX_COMPLETION_INPUT: Final = 4096
"""The longest ``argument.value`` (characters) a completion request may carry."""

_FEATURES: Final = frozenset({"tools", "resources", "prompts", "completions", "logging"})
_MAX_CALLERS: Final = 4096
"""Callers whose rate-limit buckets a server keeps for modern requests (least recent
dropped first)."""

_request_modern: ContextVar[tuple[ModernContext | None, Rounds | None]] = ContextVar(
    "mcp_ref.server.request_modern", default=(None, None)
)
"""The modern context and input rounds of the request being handled in this task."""


@attrs.define(eq=False)
class _Listener:
    """One open ``subscriptions/listen``: the resource URIs it watches and the updates
    waiting to be sent."""

    uris: frozenset[str]
    pending: dict[str, None] = attrs.field(factory=dict)


class ResourceNotFound(McpError):
    """Raise from a resource function: answers ``-32002 Resource not found``.

    Source: 2025-06-18/server/resources#error-handling.1.
    """

    def __init__(self, uri: str) -> None:
        super().__init__(RESOURCE_NOT_FOUND, "Resource not found", {"uri": uri})


def _input_needed(group: BaseExceptionGroup[Any]) -> InputRequired | None:
    """The :class:`InputRequired` of an exception group made only of input asks (and
    the cancellations they caused), their requests merged; else None."""
    need, rest = group.split(InputRequired)
    if need is None or (rest is not None and rest.split(trio.Cancelled)[1] is not None):
        return None
    requests: dict[str, Any] = {}
    pending: list[BaseException] = [need]
    while pending:
        exc = pending.pop()
        if isinstance(exc, BaseExceptionGroup):
            pending.extend(exc.exceptions)
        elif isinstance(exc, InputRequired):
            requests.update(exc.requests)
    return InputRequired(requests)


class Server:
    """An MCP server built from plain Python functions.

    Args:
        name: ``serverInfo.name``.
        version: ``serverInfo.version``.
        title: ``serverInfo.title`` (display name).
        description: ``serverInfo.description``.
        instructions: ``InitializeResult.instructions`` (a hint for the model).
        website_url, icons: as in ``Implementation``.
        page_size: items per page of every list (default 50).
        logging: declare the ``logging`` capability and deliver ``Context.log``
            messages (default True).
        log_level: the level of sessions that never sent ``logging/setLevel``
            (default ``"info"``).
        log_rate, log_burst: the per-session log rate limit (messages per second, and
            burst size; default 50 and 200).
        max_threads: worker threads for sync handler functions (default 8).
        max_subscriptions: resource subscriptions per session (default 1000).
        max_pending_updates: resource updates queued per session before the oldest is
            dropped (default 256).
        declare: capabilities to declare even while their registry is empty, among
            ``"tools"``, ``"resources"``, ``"prompts"``, ``"completions"``.
        rate_limits: per-session :class:`RateLimit` by request method; default
            :data:`DEFAULT_RATE_LIMITS` (``completion/complete`` only).  Give
            ``{"tools/call": RateLimit(...), ...}`` to limit tool calls too.  Modern
            (2026-07-28) requests are limited per caller (:meth:`principal_of`) instead:
            they have no lasting session.
        cache: the caching hints of the modern era's cacheable results
            (``server/discover`` and the lists; default ``CacheHint(0, "public")``:
            immediately stale, shareable).
        cache_hints: hints by method, overriding ``cache`` (e.g.
            ``{"tools/list": CacheHint(60_000)}``).
        read_cache: the hints of ``resources/read`` results for resources registered
            without their own ``cache=`` (default: ``cache``'s TTL, ``"private"``).
        state_key: the HMAC-SHA256 key that signs ``requestState`` (at least 16 bytes;
            default: 32 random bytes, so only this instance accepts its states; give
            the same key to every instance behind a load balancer).
        state_ttl: seconds a ``requestState`` stays valid (default 300).
        max_input_rounds: ``input_required`` answers one request may get before it is
            refused with -32602 (default 8).

    Raises:
        ValueError: a bad ``page_size``, ``log_level`` or ``declare`` entry, a short
            ``state_key``, a non-positive ``state_ttl`` or ``max_input_rounds``.

    Source: 2025-06-18/basic/lifecycle#initialization.3 (the server answers initialize
    with its capabilities and information).
    """

    def __init__(
        self,
        name: str,
        version: str,
        *,
        title: str | None = None,
        description: str | None = None,
        instructions: str | None = None,
        website_url: str | None = None,
        icons: list[t.Icon] | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        logging: bool = True,
        log_level: t.LoggingLevel = "info",
        log_rate: float = 50.0,
        log_burst: int = 200,
        max_threads: int = 8,
        max_subscriptions: int = 1000,
        max_pending_updates: int = 256,
        declare: Iterable[str] = (),
        rate_limits: Mapping[str, RateLimit] | None = None,
        cache: CacheHint | None = None,
        cache_hints: Mapping[str, CacheHint] | None = None,
        read_cache: CacheHint | None = None,
        state_key: bytes | None = None,
        state_ttl: float = 300.0,
        max_input_rounds: int = 8,
    ) -> None:
        if state_key is not None and len(state_key) < 16:
            raise ValueError("state_key must be at least 16 bytes")
        if state_ttl <= 0 or max_input_rounds < 1:
            raise ValueError("state_ttl and max_input_rounds must be positive")
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        if max_threads < 1 or max_subscriptions < 1 or max_pending_updates < 1:
            raise ValueError("max_threads, max_subscriptions and max_pending_updates must be >= 1")
        declared = frozenset(declare)
        if not declared <= _FEATURES - {"logging"}:
            raise ValueError(f"declare: unknown capabilities {sorted(declared - _FEATURES)}")
        self.info = t.Implementation(
            name=name,
            version=version,
            title=title,
            description=description,
            website_url=website_url,
            icons=icons,
        )
        self.instructions = instructions
        self.page_size = page_size
        self.logging = logging
        self.log_policy = LogPolicy(log_level, log_rate, log_burst)
        self.max_threads = max_threads
        self.max_subscriptions = max_subscriptions
        self.max_pending_updates = max_pending_updates
        self._declare = declared
        self.cache = cache or CacheHint()
        self.cache_hints: dict[str, CacheHint] = dict(cache_hints or {})
        self.read_cache = read_cache or CacheHint(self.cache.ttl_ms, "private")
        self._state_key = state_key or secrets.token_bytes(32)
        self.state_ttl = state_ttl
        self.max_input_rounds = max_input_rounds
        self.clock: Callable[[], float] = time.time
        """Seconds since the epoch, for ``requestState`` expiry (replaceable in tests)."""
        self._listeners: dict[_Listener, None] = {}
        self._listen_epoch = 0
        self._modern_buckets: dict[str | None, dict[str, Any]] = {}
        self.rate_limits: dict[str, RateLimit] = dict(
            DEFAULT_RATE_LIMITS if rate_limits is None else rate_limits
        )
        self._tools: dict[str, ToolDef] = {}
        self._resources: dict[str, ResourceDef] = {}
        self._templates: dict[str, TemplateDef] = {}
        self._prompts: dict[str, PromptDef] = {}
        self._completions: dict[tuple[str, str, str], CompletionDef] = {}
        self._notification_hooks: dict[str, list[Callable[..., Any]]] = {}
        self._sessions: dict[Session, None] = {}
        self._generation: dict[str, int] = dict.fromkeys(_LISTS, 0)
        self._wakeup = trio.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._limiter: trio.CapacityLimiter | None = None
        self._dispatch: dict[str, Callable[[RequestContext], Any]] = {
            "initialize": self._initialize,
            "tools/list": self._list_tools,
            "tools/call": self._call_tool,
            "resources/list": self._list_resources,
            "resources/templates/list": self._list_templates,
            "resources/read": self._read_resource,
            "resources/subscribe": self._subscribe,
            "resources/unsubscribe": self._unsubscribe,
            "prompts/list": self._list_prompts,
            "prompts/get": self._get_prompt,
            "logging/setLevel": self._set_level,
            "completion/complete": self._complete,
            "server/discover": self._discover,
            "subscriptions/listen": self._listen,
            **dict.fromkeys(
                ("tasks/get", "tasks/result", "tasks/list", "tasks/cancel"), self._task
            ),
        }
        self.tasks = Tasks(lambda: self.clock())
        """Task-augmented ``tools/call`` (:mod:`._tasks`): set its bounds or its ``store``."""

    def __repr__(self) -> str:
        return (
            f"<Server {self.info.name} {self.info.version}: {len(self._tools)} tools, "
            f"{len(self._resources)} resources, {len(self._templates)} templates, "
            f"{len(self._prompts)} prompts, {len(self._sessions)} sessions>"
        )

    # ------------------------------------------------------------------ registries

    @property
    def tools(self) -> dict[str, ToolDef]:
        """The registered tools by name (a copy)."""
        return dict(self._tools)

    @property
    def resources(self) -> dict[str, ResourceDef]:
        """The registered resources by URI (a copy)."""
        return dict(self._resources)

    @property
    def resource_templates(self) -> dict[str, TemplateDef]:
        """The registered resource templates by URI template (a copy)."""
        return dict(self._templates)

    @property
    def prompts(self) -> dict[str, PromptDef]:
        """The registered prompts by name (a copy)."""
        return dict(self._prompts)

    @property
    def sessions(self) -> tuple[Session, ...]:
        """The live sessions."""
        return tuple(self._sessions)

    @overload
    def tool(self, name: F, /) -> F: ...

    @overload
    def tool(self, name: str | None = None, /, **options: Any) -> Callable[[F], F]: ...

    def tool(self, name: Any = None, /, **options: Any) -> Any:
        """Register a tool; use as ``@server.tool``, ``@server.tool()`` or
        ``@server.tool("name", title=..., ...)``.

        Options are those of :func:`~mcp_ref.server._tools.make_tool`: ``title``,
        ``description``, ``input_schema``, ``output_schema``, ``annotations``, ``icons``,
        ``meta``, ``structured``, ``blocking``; ``task_support`` (``"optional"`` or
        ``"required"``: it may, or must, be called as a task; 2025-11-25/basic/utilities/
        tasks); and ``replace=True`` to replace a tool of the same name.  The decorated
        function is returned unchanged.

        Raises:
            ValueError, TypeError: see ``make_tool``; ValueError for a duplicate name.
        """
        if callable(name):
            return _decorator(partial(self.add_tool, **options))(name)
        return _decorator(partial(self.add_tool, name=name, **options))

    def add_tool(self, fn: Callable[..., Any], *, replace: bool = False, **options: Any) -> ToolDef:
        """Register ``fn`` as a tool (see :meth:`tool`); returns its :class:`ToolDef`.

        Raises:
            ValueError: as :meth:`tool`; also an ``inputSchema`` whose ``x-mcp-header``
                annotations break the rules of 2026-07-28/server/tools#x-mcp-header (a
                Streamable HTTP client would drop the tool from ``tools/list``).
        """
        support = options.pop("task_support", None)
        tool = make_tool(fn, **options)
        set_task_support(tool, support)
        # Spec: 2026-07-28/server/tools#x-mcp-header.1
        # "MUST NOT be empty"
        # Spec: 2026-07-28/server/tools#x-mcp-header.2
        # "MUST match HTTP field-name token syntax (`1*tchar`, RFC 9110 Section 5.1)"
        # Spec: 2026-07-28/server/tools#x-mcp-header.3
        # "MUST NOT contain control characters"
        # Spec: 2026-07-28/server/tools#x-mcp-header.4
        # "MUST be case-insensitively unique among all `x-mcp-header` values in the
        # `inputSchema`"
        # Spec: 2026-07-28/server/tools#x-mcp-header.5
        # "MUST only be applied to parameters with primitive types (integer, string,
        # boolean)."
        # Spec: 2026-07-28/server/tools#x-mcp-header.7
        # "MUST only be applied to properties that are statically reachable from the
        # schema root"
        invalid = header_annotations(unstructure(tool.tool.input_schema))
        if isinstance(invalid, str):
            raise ValueError(f"tool {tool.name!r}: {invalid}")
        self._put(self._tools, tool.name, tool, replace, "tool")
        self._changed("tools")
        return tool

    def remove_tool(self, name: str) -> None:
        """Unregister a tool.  Raises KeyError when there is none of that name."""
        del self._tools[name]
        self._changed("tools")

    def resource(self, uri: str, /, **options: Any) -> Callable[[F], F]:
        """Register a resource read by the decorated function:
        ``@server.resource("test://static-text", mime_type="text/plain")``.

        Options are those of :func:`~mcp_ref.server._resources.make_resource` (``name``,
        ``title``, ``description``, ``mime_type``, ``size``, ``annotations``, ``icons``,
        ``meta``, ``blocking``) and ``replace``.
        """
        return _decorator(partial(self.add_resource, uri, **options))

    def add_resource(
        self, uri: str, fn_or_value: Any, *, replace: bool = False, **options: Any
    ) -> ResourceDef:
        """Register a resource: a function returning its contents, or the contents
        themselves (str, bytes, dict...)."""
        resource = make_resource(uri, fn_or_value, **options)
        self._put(self._resources, uri, resource, replace, "resource")
        self._changed("resources")
        return resource

    def remove_resource(self, uri: str) -> None:
        """Unregister a resource.  Raises KeyError when there is none."""
        del self._resources[uri]
        self._changed("resources")

    def resource_template(self, uri_template: str, /, **options: Any) -> Callable[[F], F]:
        """Register a resource template read by the decorated function, whose parameters
        are the template's variables: ``@server.resource_template("test://template/{id}/data")``.

        Options are those of :func:`~mcp_ref.server._resources.make_template` and
        ``replace``.
        """
        return _decorator(partial(self.add_resource_template, uri_template, **options))

    def add_resource_template(
        self, uri_template: str, fn: Callable[..., Any], *, replace: bool = False, **options: Any
    ) -> TemplateDef:
        """Register a resource template (see :meth:`resource_template`)."""
        template = make_template(uri_template, fn, **options)
        self._put(self._templates, uri_template, template, replace, "resource template")
        self._changed("resources")
        return template

    def remove_resource_template(self, uri_template: str) -> None:
        """Unregister a resource template.  Raises KeyError when there is none."""
        del self._templates[uri_template]
        self._changed("resources")

    @overload
    def prompt(self, name: F, /) -> F: ...

    @overload
    def prompt(self, name: str | None = None, /, **options: Any) -> Callable[[F], F]: ...

    def prompt(self, name: Any = None, /, **options: Any) -> Any:
        """Register a prompt; use as ``@server.prompt``, ``@server.prompt()`` or
        ``@server.prompt("name", title=...)``.

        Options are those of :func:`~mcp_ref.server._prompts.make_prompt` (``title``,
        ``description``, ``icons``, ``meta``, ``blocking``) and ``replace``.
        """
        if callable(name):
            return _decorator(partial(self.add_prompt, **options))(name)
        return _decorator(partial(self.add_prompt, name=name, **options))

    def add_prompt(
        self, fn: Callable[..., Any], *, replace: bool = False, **options: Any
    ) -> PromptDef:
        """Register ``fn`` as a prompt (see :meth:`prompt`)."""
        prompt = make_prompt(fn, **options)
        self._put(self._prompts, prompt.name, prompt, replace, "prompt")
        self._changed("prompts")
        return prompt

    def remove_prompt(self, name: str) -> None:
        """Unregister a prompt.  Raises KeyError when there is none."""
        del self._prompts[name]
        self._changed("prompts")

    def completion(
        self,
        *,
        prompt: str | None = None,
        template: str | None = None,
        argument: str,
        blocking: bool = True,
    ) -> Callable[[F], F]:
        """Register the decorated function as the completion of one prompt argument
        (``prompt="name"``) or one template variable (``template="test://x/{id}"``):
        ``@server.completion(prompt="test_prompt_with_arguments", argument="arg1")``.

        The function takes ``value``, ``arguments``, ``argument`` and/or a ``Context``
        by name, and returns an iterable of str (see :mod:`._completion`).
        """
        return _decorator(
            lambda fn: self.add_completion(
                prompt=prompt, template=template, argument=argument, fn=fn, blocking=blocking
            )
        )

    def add_completion(
        self,
        *,
        prompt: str | None = None,
        template: str | None = None,
        argument: str,
        fn: Callable[..., Any] | None = None,
        values: Iterable[str] | None = None,
        blocking: bool = True,
    ) -> CompletionDef:
        """Register a completion: a function, or fixed ``values`` offered by prefix.
        A later registration for the same argument replaces the earlier one."""
        completion = make_completion(
            prompt=prompt,
            template=template,
            argument=argument,
            fn=fn,
            values=values,
            blocking=blocking,
        )
        self._completions[completion.key] = completion
        return completion

    def on_notification(self, method: str) -> Callable[[F], F]:
        """Call the decorated function (sync or async) with ``(session, params)`` for
        each notification ``method`` from a client, e.g.
        ``"notifications/roots/list_changed"``."""
        return _decorator(lambda fn: self._notification_hooks.setdefault(method, []).append(fn))

    def _put(self, table: dict[str, Any], key: str, value: Any, replace: bool, what: str) -> None:
        if key in table and not replace:
            raise ValueError(f"a {what} named {key!r} is already registered (pass replace=True)")
        table[key] = value

    # -------------------------------------------------------------- notifications

    def _changed(self, kind: str) -> None:
        self._generation[kind] += 1
        self._wake()

    def resource_updated(self, uri: str) -> None:
        """Tell the sessions subscribed to ``uri`` that it changed.

        Synchronous and thread-safe: the ``notifications/resources/updated`` are sent by
        each session's notifier (see the module docstring).  Per session at most
        ``max_pending_updates`` distinct URIs wait; past that the oldest is dropped.

        Source: 2025-06-18/server/resources#subscriptions.
        """
        for session in tuple(self._sessions):
            state = state_of(session)
            if uri in state.subscriptions:
                pending = state.pending_updates
                pending[uri] = None
                while len(pending) > self.max_pending_updates:
                    oldest = next(iter(pending))
                    del pending[oldest]
                    log.warning("dropped a queued resource update for %s", oldest)
        for listener in tuple(self._listeners):
            if uri in listener.uris and len(listener.pending) < self.max_pending_updates:
                listener.pending[uri] = None
        self._wake()

    def _wake(self) -> None:
        event, self._wakeup = self._wakeup, trio.Event()
        token = self._token
        if token is None:
            event.set()  # no trio run yet: nobody can be waiting
            return
        try:
            in_trio = trio.lowlevel.current_trio_token() is token
        except RuntimeError:
            in_trio = False
        if in_trio:
            event.set()
        else:
            try:
                token.run_sync_soon(event.set)  # thread-safe
            except trio.RunFinishedError:
                pass

    async def _notifier(self, session: Session) -> None:
        """Send one session the change notifications it is owed, until it closes."""
        state = state_of(session)
        for kind, generation in self._generation.items():
            state.seen_generation.setdefault(kind, generation)
        while not session.closed:
            wakeup = self._wakeup
            for kind in _LISTS:
                generation = self._generation[kind]
                if state.seen_generation.get(kind) == generation:
                    continue
                state.seen_generation[kind] = generation
                # Spec: 2025-06-18/server/tools#list-changed-notification.1
                # "When the list of available tools changes, servers that declared the `listChanged`
                # capability SHOULD send a notification:"
                # Spec: 2025-06-18/server/resources#list-changed-notification.1
                # "When the list of available resources changes, servers that declared the
                # `listChanged` capability SHOULD send a notification:"
                # Spec: 2025-06-18/server/prompts#list-changed-notification.1
                # "When the list of available prompts changes, servers that declared the
                # `listChanged` capability SHOULD send a notification:"
                # Only when negotiated for this session:
                # Spec: 2025-06-18/server/prompts#implementation-considerations.3
                # "Both parties SHOULD respect capability negotiation"
                if capability_present(session.our_capabilities, (kind, "list_changed")):
                    await self._notify(session, f"notifications/{kind}/list_changed")
            while state.pending_updates:
                uri = next(iter(state.pending_updates))
                del state.pending_updates[uri]
                if uri in state.subscriptions:
                    params = t.ResourceUpdatedNotificationParams(uri=uri)
                    await self._notify(session, "notifications/resources/updated", params)
            await wakeup.wait()

    async def _notify(self, session: Session, method: str, params: Any = None) -> None:
        try:
            await session.send_notification(method, params)
        except SessionClosed:
            pass
        except LocalProtocolError as exc:  # e.g. not initialized yet: the client lists anyway
            log.debug("not sending %s: %s", method, exc)

    # ------------------------------------------------------------ handler protocol

    def session_opened(self, session: Session) -> None:
        """Called by the session when it starts: track it."""
        self._token = trio.lowlevel.current_trio_token()
        self._sessions[session] = None

    def session_closed(self, session: Session) -> None:
        """Called by the session when it ends: forget it."""
        self._sessions.pop(session, None)

    def capabilities(self) -> t.ServerCapabilities:
        """The capabilities to declare now, from what is registered.

        Source: 2025-06-18/server/tools#capabilities.1, resources#capabilities.1,
        prompts#capabilities.1, utilities/completion#capabilities.1,
        utilities/logging#capabilities.1.
        """
        declare = self._declare
        # Spec: 2025-06-18/server/tools#capabilities.1
        # "Servers that support tools MUST declare the `tools` capability:"
        # Spec: 2026-07-28/server/tools#capabilities.1
        # "Servers that support tools MUST declare the `tools` capability:"
        tools = (
            t.ServerCapabilitiesTools(list_changed=True)
            if self._tools or "tools" in declare
            else None
        )
        # Spec: 2025-06-18/server/resources#capabilities.1
        # "Servers that support resources MUST declare the `resources` capability:"
        # Spec: 2026-07-28/server/resources#capabilities.1
        # "Servers that support resources MUST declare the `resources` capability:"
        resources = (
            t.ServerCapabilitiesResources(subscribe=True, list_changed=True)
            if self._resources or self._templates or "resources" in declare
            else None
        )
        # Spec: 2025-06-18/server/prompts#capabilities.1
        # "Servers that support prompts MUST declare the `prompts` capability during
        # initialization:"
        prompts = (
            t.ServerCapabilitiesPrompts(list_changed=True)
            if self._prompts or "prompts" in declare
            else None
        )
        # Spec: 2025-06-18/server/utilities/completion#capabilities.1
        # "Servers that support completions MUST declare the `completions` capability:"
        # Spec: 2026-07-28/server/utilities/completion#capabilities.1
        # "Servers that support completions MUST declare the `completions` capability:"
        completions: dict[str, Any] | None = (
            {} if self._completions or "completions" in declare else None
        )
        # Spec: 2025-06-18/server/utilities/logging#capabilities.1
        # "Servers that emit log message notifications MUST declare the `logging` capability:"
        logging_cap: dict[str, Any] | None = {} if self.logging else None
        return t.ServerCapabilities(
            tasks=self.tasks.capability(self._tools.values(), self._generation["tools"]),
            tools=tools,
            resources=resources,
            prompts=prompts,
            completions=completions,
            logging=logging_cap,
        )

    async def handle_request(self, ctx: RequestContext) -> Any:
        """Answer one request (the :class:`~mcp_ref.trio.Handler` protocol).

        Returns:
            The typed result for ``ctx.method``.

        Raises:
            McpError: the error response to send (-32601 for a method this server does
                not handle, -32602 for bad params, -32002 for unknown resources).
        """
        handler = self._dispatch.get(ctx.method)
        if handler is None:
            raise McpError(METHOD_NOT_FOUND, f"method not found: {ctx.method}")
        modern = modern_context(ctx)
        if modern is not None:
            self._check_declared(ctx.method)
        limit = self.rate_limits.get(ctx.method)
        if limit is not None:
            self._check_rate(ctx, limit, modern is not None)
        rounds = None
        if modern is not None and supports_input(ctx.method):
            rounds = self._open_rounds(ctx, modern)
        token = _request_modern.set((modern, rounds))
        try:
            try:
                result = await handler(ctx)
            # Spec: 2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.14
            # "Servers MUST NOT assume that clients will fulfill the `inputRequests` or
            # retry the original request." (the handler has unwound; nothing waits)
            except InputRequired as need:
                return self._input_required(ctx, rounds, need)
            except BaseExceptionGroup as group:  # asked inside a nursery of the handler's
                asked = _input_needed(group)
                if asked is None:
                    raise
                return self._input_required(ctx, rounds, asked)
            except McpError as exc:
                if modern is None or exc.code != RESOURCE_NOT_FOUND:
                    raise
                # Spec: 2026-07-28/server/resources#error-handling.1
                # "If the requested resource does not exist, servers MUST return a JSON-RPC
                # error with code `-32602` (Invalid Params)."
                # Spec: 2026-07-28/server/resources#error-handling.4
                # "Servers MUST NOT return an empty `contents` array for a non-existent
                # resource."
                raise McpError(INVALID_PARAMS, exc.message, exc.data) from None
            if modern is not None and ctx.method in CACHEABLE:
                retried = rounds is not None and bool(rounds.rounds or rounds.responses)
                hint = NOT_CACHEABLE if retried else self._cache_hint(ctx.method)
                result = with_cache_hint(result, hint, force=retried)
            return result
        finally:
            _request_modern.reset(token)
            await flush_forwarded()  # log records still queued go before the answer

    def principal_of(self, ctx: RequestContext) -> str | None:
        """Who is calling, as a string bound into every ``requestState`` this server
        signs (a state issued to one caller is refused from another) and keying the
        modern era's rate limits: the verified access token's issuer and subject (its
        client id when it names no subject) on a server that checks tokens
        (``serve_http(auth=...)``); None otherwise.  Override it to name callers some
        other way.

        Source: 2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.9.
        """
        # Spec: 2026-07-28/client/elicitation#statefulness.3
        # "For remote MCP servers, user identification MUST be derived from credentials
        # acquired via MCP authorization when possible (e.g. `sub` claim)"
        caller = CALLER.get()
        owner = owner_key(caller.identity) if caller is not None else None
        return None if owner is None else "\n".join(owner)

    def _state_principal(self, ctx: RequestContext) -> str | None:
        """The principal bound into a ``requestState``: :meth:`principal_of`, plus the
        verified token's client id when it names one, so a state is redeemed only by the
        user and the client it was issued to."""
        principal = self.principal_of(ctx)
        caller = CALLER.get()
        client = caller.identity.client_id if caller and caller.identity else None
        # Spec: 2026-07-28/client/elicitation#security-considerations.1
        # "Servers MUST bind elicitation requests to the client and user identity"
        if principal is None or client is None:
            return principal
        return f"{principal}\nclient:{client}"

    def tool_input_schema(self, name: str) -> dict[str, Any] | None:
        """The ``inputSchema`` (JSON) of the tool ``name``, or None when there is none.
        The Streamable HTTP transport reads it to check a modern ``tools/call``'s
        ``Mcp-Param-*`` headers against its ``x-mcp-header`` arguments."""
        tool = self._tools.get(name)
        if tool is None:
            return None
        schema: dict[str, Any] = unstructure(tool.tool.input_schema)
        return schema

    def _check_declared(self, method: str) -> None:
        """-32601 for a method whose capability this server does not declare (modern
        era: the capabilities of ``server/discover`` match the handlers)."""
        # Spec: 2026-07-28/server/tools#capabilities.2 (and prompts, resources: the
        # declared capability and the methods answered are the same set)
        # "Servers that declare the `tools` capability MUST respond to `tools/list` requests
        # with the set of tools currently available to the requesting client."
        feature = CAPABILITY_OF.get(method)
        if feature is not None and getattr(self.capabilities(), feature) is None:
            raise McpError(METHOD_NOT_FOUND, f"method not found: {method}")

    def _cache_hint(self, method: str) -> CacheHint:
        """The server's caching hints for ``method``'s results (a first request's)."""
        if method == "resources/read":
            return self.read_cache
        # One hint per method, whatever the cursor:
        # Spec: 2026-07-28/server/utilities/caching#interaction-with-pagination.5
        # "Servers MUST apply the same `cacheScope` to all response pages for a given list
        # request."
        # Spec: 2026-07-28/server/utilities/caching#interaction-with-pagination.6
        # "if the first page of a `tools/list` response has `cacheScope: "private"`, all
        # subsequent pages for that request MUST also be `"private"`."
        return self.cache_hints.get(method, self.cache)

    def _open_rounds(self, ctx: RequestContext, modern: ModernContext) -> Rounds:
        """The input rounds of a modern request that may ask for input: the answers its
        verified ``requestState`` carries, and its ``inputResponses``.

        Raises:
            McpError: -32602 for a ``requestState`` that fails verification.
        """
        params = ctx.params
        answers: dict[str, Any] = {}
        done = 0
        state = params.request_state
        if state is not None:
            try:
                opened = open_state(
                    self._state_key,
                    state,
                    method=ctx.method,
                    params=unstructure(params, REVISION),
                    now=self.clock(),
                    principal=self._state_principal(ctx),
                )
            except InvalidRequestState as exc:
                # Spec: 2026-07-28/basic/patterns/mrtr#error-handling.2
                # "Protocol errors (malformed JSON, invalid schema, internal server errors)
                # SHOULD return a JSON-RPC error response with an appropriate error code and
                # message."
                raise McpError(
                    INVALID_PARAMS, f"invalid requestState: {exc}", {"reason": exc.reason}
                ) from None
            answers, done = opened.answers, opened.rounds
        return Rounds(modern, ctx.request_id, answers, params.input_responses or {}, done)

    def _input_required(
        self, ctx: RequestContext, rounds: Rounds | None, need: InputRequired
    ) -> t.InputRequiredResult:
        """The ``input_required`` answer asking for ``need.requests``, with a signed
        state carrying the answers so far.

        Raises:
            McpError: -32602 past ``max_input_rounds``.
            LocalProtocolError: input asked for outside the input rounds.
        """
        if rounds is None:
            raise LocalProtocolError(f"{ctx.method} cannot ask the client for input")
        done = rounds.rounds + 1
        if done > self.max_input_rounds:
            raise McpError(
                INVALID_PARAMS,
                f"{ctx.method} still needs input after {self.max_input_rounds} rounds",
            )
        # Spec: 2026-07-28/basic/index#statelessness.5
        # "State that needs to span multiple requests (e.g., long-running tasks,
        # application-level handles) MUST be referenced by an explicit identifier the
        # client passes on each request." (the answers so far travel in the requestState
        # the client echoes; the server keeps nothing between rounds)
        try:
            state = seal_state(
                self._state_key,
                method=ctx.method,
                params=unstructure(ctx.params, REVISION),
                answers=rounds.answers,
                rounds=done,
                now=self.clock(),
                ttl=self.state_ttl,
                principal=self._state_principal(ctx),
            )
        except ValueError as exc:  # the answers so far are too large to carry
            raise McpError(
                INTERNAL_ERROR, f"{ctx.method} cannot ask for more input: {exc}"
            ) from None
        return t.InputRequiredResult(
            result_type="input_required", input_requests=need.requests, request_state=state
        )

    def _check_rate(self, ctx: RequestContext, limit: RateLimit, modern: bool) -> None:
        # Spec: 2025-06-18/server/tools#security-considerations.1 (rate limit tool calls)
        # "Servers MUST:"
        # Spec: 2025-06-18/server/utilities/completion#security.1 (rate limiting)
        # "Implementations MUST:"
        buckets = state_of(ctx.session).buckets
        if modern:
            # A modern request has no lasting session (over HTTP each POST has its own):
            # its buckets are its caller's (principal_of; one set for unknown callers).
            # Spec: 2026-07-28/server/tools#security-considerations.1 (rate limit, per caller)
            # "Servers MUST:"
            # Spec: 2026-07-28/server/utilities/completion#security.1 (rate limiting)
            # "Implementations MUST:"
            buckets = self._caller_buckets(self.principal_of(ctx))
        take_or_refuse(buckets, limit, ctx.method, trio.current_time())

    def _caller_buckets(self, principal: str | None) -> dict[str, Any]:
        buckets = self._modern_buckets.pop(principal, None)
        if buckets is None:
            buckets = {}
            while len(self._modern_buckets) >= _MAX_CALLERS:  # the least recent goes
                del self._modern_buckets[next(iter(self._modern_buckets))]
        self._modern_buckets[principal] = buckets  # most recent last
        return buckets

    async def handle_notification(self, session: Session, notification: Any) -> None:
        """Run the hooks registered with :meth:`on_notification` for it."""
        for hook in self._notification_hooks.get(notification.method, ()):
            outcome = hook(session, notification.params)
            if inspect.isawaitable(outcome):
                await outcome

    # ----------------------------------------------------------------- requests

    def _context(self, ctx: RequestContext) -> Context:
        modern, rounds = _request_modern.get()
        context = Context(ctx, self, self.log_policy, modern, rounds)
        current_context.set(context)  # in the request's own task (see ._log_forward)
        return context

    def _threads(self) -> trio.CapacityLimiter:
        if self._limiter is None:
            self._limiter = trio.CapacityLimiter(self.max_threads)
        return self._limiter

    def _page(self, items: list[Any], params: Any, tag: str) -> tuple[list[Any], str | None]:
        cursor = getattr(params, "cursor", None)
        # Stable cursors (offset + list fingerprint), bad ones answered with -32602:
        # Spec: 2025-06-18/server/utilities/pagination#implementation-guidelines.1
        # "Servers SHOULD:"
        try:
            return paginate(items, cursor, tag=tag, page_size=self.page_size)
        except InvalidCursor as exc:
            # Spec: 2025-06-18/server/utilities/pagination#error-handling.1
            # "Invalid cursors SHOULD result in an error with code -32602 (Invalid params)."
            raise McpError(INVALID_PARAMS, exc.message) from None

    async def _initialize(self, ctx: RequestContext) -> t.InitializeResult:
        params: t.InitializeRequestParams = ctx.params
        # Spec: 2025-06-18/basic/lifecycle#version-negotiation.3
        # "If the server supports the requested protocol version, it MUST respond with the same
        # version."
        # Spec: 2025-06-18/basic/lifecycle#version-negotiation.4
        # "Otherwise, the server MUST respond with another protocol version it supports."
        version = ctx.session.connection.negotiated_version_for(params.protocol_version)
        # Spec: 2025-06-18/basic/lifecycle#initialization.3
        # "The server MUST respond with its own capabilities and information:"
        return t.InitializeResult(
            protocol_version=version,
            capabilities=Tasks.for_version(self.capabilities(), version),
            server_info=self.info,
            instructions=self.instructions,
        )

    async def _discover(self, ctx: RequestContext) -> t.DiscoverResult:
        # Spec: 2026-07-28/server/discover#discovery.1
        # "Servers MUST implement it."
        # Spec: 2026-07-28/basic/versioning#protocol-version-negotiation.3
        # "Servers MUST implement `server/discover`."
        # Spec: 2026-07-28/server/discover#discoverresult.1 (serverInfo in _meta)
        # "Servers SHOULD include this field."
        hint = self.cache_hints.get("server/discover", self.cache)
        # Spec: 2026-07-28/server/prompts#capabilities.1 (tools, resources... alike)
        # "Servers that support prompts MUST declare the `prompts` capability in their
        # `DiscoverResult`:"
        return t.DiscoverResult(
            result_type="complete",
            supported_versions=[*MODERN_VERSIONS, *SUPPORTED_VERSIONS],
            capabilities=self.capabilities(),
            instructions=self.instructions,
            meta={SERVER_INFO_KEY: unstructure(self.info)},
            ttl_ms=hint.ttl_ms,
            cache_scope=hint.scope,
        )

    def end_subscriptions(self) -> None:
        """End every open ``subscriptions/listen`` gracefully: each is answered with a
        complete result carrying its subscription id (what a client takes for a clean
        end, not a dropped connection).  :meth:`run_stdio`, :meth:`run_http` and
        :meth:`serve_stdio` with ``stop`` call it when told to stop.  Synchronous; call
        it from the trio thread.

        Source: 2026-07-28/basic/patterns/subscriptions#graceful-closure.
        """
        self._listen_epoch += 1
        self._wake()

    async def _end_subscriptions_when(self, stop: trio.Event) -> None:
        await stop.wait()
        self.end_subscriptions()

    async def _listen(self, ctx: RequestContext) -> t.SubscriptionsListenResult:
        """Serve one ``subscriptions/listen`` until the client cancels it or
        :meth:`end_subscriptions` ends it."""
        wanted: t.SubscriptionFilter = ctx.params.notifications
        caps = self.capabilities()
        lists = {
            "tools": bool(wanted.tools_list_changed) and caps.tools is not None,
            "prompts": bool(wanted.prompts_list_changed) and caps.prompts is not None,
            "resources": bool(wanted.resources_list_changed) and caps.resources is not None,
        }
        asked = list(dict.fromkeys(wanted.resource_subscriptions or ()))
        if caps.resources is None:
            asked = []
        if len(asked) > self.max_subscriptions:
            raise McpError(
                INVALID_PARAMS,
                f"too many resource subscriptions: at most {self.max_subscriptions} per listen",
            )
        for uri in asked:
            check_uri(uri)
        # The acknowledgment reflects the subset the server agreed to honor
        # (2026-07-28/basic/patterns/subscriptions#acknowledgment): here, the resources
        # this server has.
        uris = [uri for uri in asked if self._find(uri) is not None]
        # Spec: 2026-07-28/basic/patterns/subscriptions#acknowledgment.1
        # "The server MUST send `notifications/subscriptions/acknowledged` as the first
        # message carrying the subscription's ID in `_meta` under
        # `io.modelcontextprotocol/subscriptionId`, and MUST NOT send any notification on
        # the subscription before it."
        agreed = t.SubscriptionFilter(
            tools_list_changed=lists["tools"] or None,
            prompts_list_changed=lists["prompts"] or None,
            resources_list_changed=lists["resources"] or None,
            resource_subscriptions=uris or None,
        )
        # Spec: 2026-07-28/basic/index#_meta.11
        # "On notifications delivered via a [`subscriptions/listen`][subscriptions-listen]
        # stream, the server MUST include `io.modelcontextprotocol/subscriptionId` in
        # `_meta`"
        tag = {SUBSCRIPTION_ID_KEY: ctx.request_id}
        listener = _Listener(uris=frozenset(uris))
        seen = dict(self._generation)
        epoch = self._listen_epoch
        self._listeners[listener] = None
        try:
            await ctx.send_notification(
                "notifications/subscriptions/acknowledged",
                t.SubscriptionsAcknowledgedNotificationParams(notifications=agreed, meta=tag),
            )
            while True:
                wakeup = self._wakeup
                if self._listen_epoch != epoch:
                    break
                for kind in _LISTS:
                    generation = self._generation[kind]
                    if seen[kind] == generation:
                        continue
                    seen[kind] = generation
                    # Spec: 2026-07-28/basic/patterns/subscriptions#opening-a-stream.1
                    # "The server MUST NOT send notification types the client has not
                    # explicitly requested."
                    # Spec: 2026-07-28/server/tools#list-changed-notification.1
                    # "When the list of available tools changes, servers that declared the
                    # `listChanged` capability SHOULD send a notification to clients that
                    # have opened a `subscriptions/listen` stream with `toolsListChanged:
                    # true`:"
                    # Spec: 2026-07-28/server/prompts#list-changed-notification.1
                    # "When the list of available prompts changes, servers that declared the
                    # `listChanged` capability SHOULD send a notification to clients that
                    # have opened a `subscriptions/listen` stream with `promptsListChanged:
                    # true`:"
                    if lists[kind]:
                        await ctx.send_notification(
                            f"notifications/{kind}/list_changed", t.NotificationParams(meta=tag)
                        )
                while listener.pending:
                    uri = next(iter(listener.pending))
                    del listener.pending[uri]
                    await ctx.send_notification(
                        "notifications/resources/updated",
                        t.ResourceUpdatedNotificationParams(uri=uri, meta=tag),
                    )
                await wakeup.wait()
        finally:
            self._listeners.pop(listener, None)
        # Spec: 2026-07-28/basic/patterns/cancellation#cancellation.2
        # "A server MUST send `notifications/cancelled` referencing a `subscriptions/listen` request
        # ID when it tears down that subscription stream (see [Subscriptions][subscriptions])."
        # (then the completion result below, as graceful closure asks: the client hears
        # both, the cancellation first)
        await ctx.send_notification(
            "notifications/cancelled",
            t.CancelledNotificationParams(
                request_id=ctx.request_id, reason="the server ended the subscription"
            ),
        )
        # Spec: 2026-07-28/basic/patterns/subscriptions#graceful-closure.1
        # "When the server ends a subscription on its own initiative (for example, during
        # shutdown), it SHOULD respond to the original `subscriptions/listen` request with
        # a completion result before closing the stream."
        return t.SubscriptionsListenResult(result_type="complete", meta=tag)

    async def _list_tools(self, ctx: RequestContext) -> t.ListToolsResult:
        # Spec: 2026-07-28/server/tools#capabilities.3
        # "MUST NOT vary per-connection or as a side effect of other requests on the
        # connection." (one registry for the whole server, whoever asks)
        page, cursor = self._page([d.tool for d in self._tools.values()], ctx.params, "tools")
        return t.ListToolsResult(tools=page, next_cursor=cursor)

    async def _call_tool(self, ctx: RequestContext) -> t.CallToolResult | t.CreateTaskResult:
        params: t.CallToolRequestParams = ctx.params
        tool = self._tools.get(params.name)
        if tool is None:
            # An unknown tool is a protocol error, -32602 (tools page, "Error Handling").
            raise McpError(INVALID_PARAMS, f"Unknown tool: {params.name}", {"name": params.name})
        if Tasks.as_task(params, tool, declared(ctx.session)):  # answered now, run later
            owner = owner_of(self.principal_of(ctx), ctx.session.app_state)
            nursery = ctx.session.app_state.get(NURSERY_KEY)
            return await self.tasks.create(owner, params, nursery, partial(self._run, tool), ctx)
        return await self._run(tool, ctx)

    async def _task(self, ctx: RequestContext) -> Any:
        """``tasks/get``, ``/result``, ``/list``, ``/cancel`` (:mod:`._tasks`)."""
        if not declared(ctx.session):
            raise McpError(METHOD_NOT_FOUND, f"method not found: {ctx.method}")
        answer = getattr(self.tasks, ctx.method.removeprefix("tasks/"))
        return await answer(owner_of(self.principal_of(ctx), ctx.session.app_state), ctx.params)

    async def _run(self, tool: ToolDef, ctx: RequestContext) -> t.CallToolResult:
        params: t.CallToolRequestParams = ctx.params
        result = await tool.call(params.arguments, self._context(ctx), self._threads())
        content = for_version(result.content, ctx.session.protocol_version)
        return result if content is result.content else attrs.evolve(result, content=content)

    async def _list_resources(self, ctx: RequestContext) -> t.ListResourcesResult:
        # Spec: 2026-07-28/server/resources#capabilities.3
        # "MUST NOT vary per-connection or as a side effect of other requests on the
        # connection." (one registry for the whole server, whoever asks)
        # Spec: 2026-07-28/server/resources#capabilities.2
        # "Servers that declare the `resources` capability MUST respond to `resources/list`
        # requests with the set of resources currently available to the requesting client."
        items = [d.resource for d in self._resources.values()]
        page, cursor = self._page(items, ctx.params, "resources")
        return t.ListResourcesResult(resources=page, next_cursor=cursor)

    async def _list_templates(self, ctx: RequestContext) -> t.ListResourceTemplatesResult:
        items = [d.template for d in self._templates.values()]
        page, cursor = self._page(items, ctx.params, "resources/templates")
        return t.ListResourceTemplatesResult(resource_templates=page, next_cursor=cursor)

    def _find(self, uri: str) -> tuple[ResourceDef | TemplateDef, dict[str, Any]] | None:
        resource = self._resources.get(uri)
        if resource is not None:
            return resource, {}
        for template in tuple(self._templates.values()):
            kwargs = template.match(uri)
            if kwargs is not None:
                return template, kwargs
        return None

    async def _read_resource(self, ctx: RequestContext) -> t.ReadResourceResult:
        uri = ctx.params.uri
        check_uri(uri)
        found = self._find(uri)
        if found is None:
            # Spec: 2025-06-18/server/resources#error-handling.1
            # "Servers SHOULD return standard JSON-RPC errors for common failure cases:"
            raise ResourceNotFound(uri)
        target, kwargs = found
        context = self._context(ctx)
        if isinstance(target, ResourceDef):
            contents = await target.read(context, self._threads())
        else:
            contents = await target.read(uri, kwargs, context, self._threads())
        result = t.ReadResourceResult(contents=contents)
        if context.modern is not None and target.cache is not None:
            result = with_cache_hint(result, target.cache)
        return result

    async def _subscribe(self, ctx: RequestContext) -> t.Result:
        uri = ctx.params.uri
        check_uri(uri)
        if self._find(uri) is None:
            raise ResourceNotFound(uri)
        subscriptions = state_of(ctx.session).subscriptions
        if uri not in subscriptions and len(subscriptions) >= self.max_subscriptions:
            raise McpError(
                INVALID_PARAMS,
                f"too many subscriptions: at most {self.max_subscriptions} per session",
                {"uri": uri},
            )
        subscriptions[uri] = None
        return t.Result()

    async def _unsubscribe(self, ctx: RequestContext) -> t.Result:
        uri = ctx.params.uri
        check_uri(uri)
        state = state_of(ctx.session)
        state.subscriptions.pop(uri, None)
        state.pending_updates.pop(uri, None)
        return t.Result()

    async def _list_prompts(self, ctx: RequestContext) -> t.ListPromptsResult:
        # Spec: 2026-07-28/server/prompts#capabilities.3
        # "MUST NOT vary per-connection or as a side effect of other requests on the
        # connection." (one registry for the whole server, whoever asks)
        # Spec: 2026-07-28/server/prompts#capabilities.2
        # "Servers that declare the `prompts` capability MUST respond to `prompts/list`
        # requests with the set of prompts currently available to the requesting client."
        items = [d.prompt for d in self._prompts.values()]
        page, cursor = self._page(items, ctx.params, "prompts")
        return t.ListPromptsResult(prompts=page, next_cursor=cursor)

    async def _get_prompt(self, ctx: RequestContext) -> t.GetPromptResult:
        params: t.GetPromptRequestParams = ctx.params
        prompt = self._prompts.get(params.name)
        if prompt is None:
            # Spec: 2025-06-18/server/prompts#error-handling.1
            # "Servers SHOULD return standard JSON-RPC errors for common failure cases:"
            raise McpError(INVALID_PARAMS, f"Unknown prompt: {params.name}", {"name": params.name})
        result = await prompt.render(params.arguments, self._context(ctx), self._threads())
        version = ctx.session.protocol_version
        messages = [
            m
            if for_version([m.content], version)[0] is m.content
            else attrs.evolve(m, content=for_version([m.content], version)[0])
            for m in result.messages
        ]
        return attrs.evolve(result, messages=messages)

    async def _set_level(self, ctx: RequestContext) -> t.Result:
        set_level(ctx.session, ctx.params.level)
        return t.Result()

    async def _complete(self, ctx: RequestContext) -> t.CompleteResult:
        params: t.CompleteRequestParams = ctx.params
        ref = params.ref
        argument = params.argument.name
        resolved = (params.context.arguments if params.context else None) or {}
        # Spec: 2025-06-18/server/utilities/completion#security.1 (validate all inputs)
        # "Implementations MUST:"
        # Spec: 2025-06-18/server/utilities/completion#implementation-considerations.1
        # "Servers SHOULD:"
        # Spec: 2026-07-28/server/utilities/completion#security.1 (validate all inputs)
        # "Implementations MUST:"
        if len(params.argument.value) > MAX_COMPLETION_INPUT or len(resolved) > 64:
            raise McpError(
                INVALID_PARAMS,
                f"completion input too large: the value is limited to "
                f"{MAX_COMPLETION_INPUT} characters and context to 64 arguments",
            )
        # Spec: 2025-06-18/server/utilities/completion#error-handling.1
        # "Servers SHOULD return standard JSON-RPC errors for common failure cases:"
        if isinstance(ref, t.PromptReference):
            key = ("ref/prompt", ref.name, argument)
            prompt = self._prompts.get(ref.name)
            if prompt is None:
                raise McpError(INVALID_PARAMS, f"Unknown prompt: {ref.name}", {"name": ref.name})
            if argument not in prompt.argument_names():
                raise McpError(INVALID_PARAMS, f"prompt {ref.name!r} has no argument {argument!r}")
        else:
            key = ("ref/resource", ref.uri, argument)
            template = self._templates.get(ref.uri)
            if template is None:
                raise McpError(
                    INVALID_PARAMS, f"Unknown resource template: {ref.uri}", {"uri": ref.uri}
                )
            if argument not in template.uri_template.variables:
                raise McpError(INVALID_PARAMS, f"template {ref.uri!r} has no variable {argument!r}")
        completion = self._completions.get(key)
        if completion is None:
            return t.CompleteResult(
                completion=t.CompleteResultCompletion(values=[], has_more=False, total=0)
            )
        values = await completion.complete(
            params.argument.value, resolved, self._context(ctx), self._threads()
        )
        return t.CompleteResult(completion=values)

    # ------------------------------------------------------------------ running

    async def serve(self, channel: MessageChannel, **session_kw: Any) -> None:
        """Serve one session on ``channel`` until it ends.

        Args:
            channel: the transport (see :class:`~mcp_ref.trio.MessageChannel`).
            session_kw: options of :func:`~mcp_ref.trio.open_session`
                (``default_timeout``, ``max_concurrent_requests``...).

        Runs the session and its change notifier (see the module docstring) in a nursery
        of its own; returns when the client closes the connection.
        """
        async with open_session(channel, SERVER, self, **session_kw) as session:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._notifier, session)
                session.app_state[NURSERY_KEY] = nursery  # where its tasks run (._tasks)
                await session.wait_closed()
                nursery.cancel_scope.cancel()

    async def serve_stdio(
        self,
        *,
        stop: trio.Event | None = None,
        grace_seconds: float = DEFAULT_GRACE_SECONDS,
        **session_kw: Any,
    ) -> None:
        """Serve one session on this process's stdin and stdout until stdin ends (or
        ``stop`` is set).

        :func:`mcp_ref.trio.serve_stdio` with this server; it runs through :meth:`serve`,
        so the session gets its change notifier.  Only MCP messages go to stdout
        (2025-06-18/basic/transports#stdio).  Unix only.

        Args:
            stop: set it to stop gracefully (stdin is no longer read; open
                subscriptions are ended with a result, :meth:`end_subscriptions`).
            grace_seconds: at the end, seconds the requests in progress may still take
                (default 5.0); then each one still running is cancelled and answered
                with an error (-32603).
            **session_kw: options of :func:`~mcp_ref.trio.open_session`.
        """
        if stop is None:
            await serve_stdio(self, grace_seconds=grace_seconds, **session_kw)
            return
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._end_subscriptions_when, stop)
            await serve_stdio(self, stop=stop, grace_seconds=grace_seconds, **session_kw)
            nursery.cancel_scope.cancel()

    def run_stdio(self, *, grace_seconds: float = DEFAULT_GRACE_SECONDS, **session_kw: Any) -> None:
        """Run :meth:`serve_stdio` in a new trio run (for ``if __name__ == "__main__"``).

        SIGTERM and SIGINT (Ctrl-C) stop it gracefully: stdin is no longer read, the
        requests in progress get ``grace_seconds`` (default 5.0), those still running
        are answered with an error; a second signal stops it at once.  After SIGTERM it
        returns (exit status 0); after SIGINT it prints one line on stderr and raises
        ``SystemExit(130)``, never a traceback.

        Source: 2025-06-18/basic/lifecycle#stdio.1 (a client may send SIGTERM).
        """
        got = trio.run(self._serve_stdio_main, grace_seconds, session_kw)
        if got == signal.SIGINT:
            print("interrupted", file=sys.stderr)
            raise SystemExit(130)

    async def _serve_stdio_main(
        self, grace_seconds: float, session_kw: dict[str, Any]
    ) -> int | None:
        async def serve(stop: trio.Event) -> None:
            await self.serve_stdio(stop=stop, grace_seconds=grace_seconds, **session_kw)

        return await serve_until_signal(serve)

    def run(self, *, grace_seconds: float = DEFAULT_GRACE_SECONDS, **session_kw: Any) -> None:
        """Serve on stdio until stdin ends or a signal comes: :meth:`run_stdio`, under
        the short name (``if __name__ == "__main__": server.run()``).

        Args:
            grace_seconds: seconds the requests in progress may still take at the end
                (default 5.0).
            **session_kw: options of :func:`~mcp_ref.trio.open_session`.

        Raises:
            SystemExit: 130 after SIGINT (one line on stderr); SIGTERM returns.

        Source: 2025-06-18/basic/transports#stdio; 2025-06-18/basic/lifecycle#stdio.1.
        """
        self.run_stdio(grace_seconds=grace_seconds, **session_kw)

    def run_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        path: str = "/mcp",
        stateless: bool = False,
        json_response: bool = False,
        grace_seconds: float = DEFAULT_GRACE_SECONDS,
        **options: Any,
    ) -> None:
        """Serve Streamable HTTP at ``http://HOST:PORT/PATH`` in a new trio run until a
        signal comes (for ``if __name__ == "__main__"``).

        :func:`mcp_ref.trio.serve_http` with this server.  Once it listens it prints one
        line on stderr, ``listening on http://127.0.0.1:8000/mcp`` (the real port when
        ``port`` is 0).  SIGTERM and SIGINT (Ctrl-C) stop it gracefully: the listeners
        close, the requests in progress get ``grace_seconds``, those still running are
        answered with an error (-32603), every SSE response ends whole; a second
        signal stops it at once.

        Args:
            host: the address to bind (default loopback:
                2025-06-18/basic/transports#security-warning.2).
            port: the TCP port (default 8000; 0 picks a free one).
            path: the MCP endpoint's path (default ``/mcp``).
            stateless: no sessions: each POST is served on its own.
            json_response: answer requests with one JSON body instead of an SSE stream.
            grace_seconds: seconds the requests in progress may still take after a
                signal (default 5.0).
            **options: the other options of :func:`~mcp_ref.trio.serve_http`
                (``allowed_origins``, ``limits``, ``legacy_sse``...) and of
                :func:`~mcp_ref.trio.open_session`.

        Returns:
            After SIGTERM (exit status 0).

        Raises:
            SystemExit: 130 after SIGINT, with one line (``interrupted``) on stderr; 1
                when the address cannot be bound, with one line naming it (``cannot
                listen on 127.0.0.1:8000: address already in use``).  Never a
                traceback for either.
            ValueError: a bad ``path`` or a negative ``grace_seconds``.

        Source: 2025-06-18/basic/transports#streamable-http;
        2025-06-18/basic/lifecycle#shutdown.
        """
        options.update(path=path, stateless=stateless, json_response=json_response)
        got, failure = trio.run(self._serve_http_main, host, port, grace_seconds, options)
        if failure is not None:
            print(failure, file=sys.stderr)
            raise SystemExit(1)
        if got == signal.SIGINT:
            print("interrupted", file=sys.stderr)
            raise SystemExit(130)

    async def _serve_http_main(
        self, host: str, port: int, grace_seconds: float, options: dict[str, Any]
    ) -> tuple[int | None, str | None]:
        """Serve HTTP until a signal; ``(the signal, None)``, or ``(None, the line)``
        when the address cannot be bound."""
        failure: str | None = None

        async def serve(stop: trio.Event) -> None:
            nonlocal failure
            async with trio.open_nursery() as nursery:
                try:
                    info = await nursery.start(
                        partial(
                            serve_http,
                            self,
                            host,
                            port,
                            stop=stop,
                            grace_seconds=grace_seconds,
                            **options,
                        )
                    )
                except OSError as exc:
                    failure = cannot_listen(host, port, exc)
                    return
                nursery.start_soon(self._end_subscriptions_when, stop)
                print(f"listening on {info.url}", file=sys.stderr, flush=True)

        got = await serve_until_signal(serve)
        return got, failure


def cannot_listen(host: str, port: int, exc: OSError) -> str:
    """The one line for an address that cannot be bound: ``cannot listen on
    127.0.0.1:8000: address already in use`` (IPv6 hosts in brackets).

    Args:
        host, port: the address asked for.
        exc: what binding it raised (``EADDRINUSE``, ``EACCES``, a name that does not
            resolve...).
    """
    name = f"[{host}]" if ":" in host else host
    reason = exc.strerror or str(exc) or type(exc).__name__
    return f"cannot listen on {name}:{port}: {reason[:1].lower()}{reason[1:]}"

"""The METHODS table: every MCP request and notification, and what governs it.

Theory of operation
-------------------
One table drives conversion, dispatch, capability checks and spec_map.  Each row
(:class:`MethodSpec`) says who may send the method, its typed params and result
classes (:mod:`mcp_ref.types`), the revisions that define it, whether it paginates,
and which side's negotiated capability it needs: ``tools/list`` needs the *server's*
``tools``.  A request whose capability was not negotiated is refused on both the send
side (LocalProtocolError) and the receive side (-32601)
(2025-06-18/basic/lifecycle#operation.1).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import attrs

from . import types as t
from ._convert import ConversionError
from ._errors import INVALID_PARAMS, LocalProtocolError
from ._state import CLIENT, SERVER, Role
from ._versions import SUPPORTED_VERSIONS

__all__ = [
    "METHODS",
    "MethodSpec",
    "capability_present",
    "lookup",
]

_H: Final = SUPPORTED_VERSIONS[0]  # the last handshake revision: `until` of what 2026-07-28 removed

BATCH_VERSIONS: Final = frozenset({"2025-03-26"})
"""Revisions that allow JSON-RPC batches (added in 2025-03-26, removed in 2025-06-18)."""

REQUEST: Final = "request"
NOTIFICATION: Final = "notification"

_BOTH = frozenset({CLIENT, SERVER})
_FROM_CLIENT = frozenset({CLIENT})
_FROM_SERVER = frozenset({SERVER})


@attrs.frozen
class MethodSpec:
    """One row of :data:`METHODS`: six columns in order, then keywords where a row
    differs from the defaults."""

    method: str
    """The method name on the wire."""
    kind: str
    """``"request"`` or ``"notification"``."""
    senders: frozenset[Role]
    """The roles that may send it."""
    params_type: Any
    """The class params are converted to."""
    result_type: Any
    """For requests: the class of the result (None for notifications)."""
    section: str
    """The spec section that defines it, e.g. ``2025-06-18/server/tools#listing-tools``."""
    capability: tuple[str, ...] = attrs.field(default=(), kw_only=True)
    """Path into the capabilities of :attr:`capability_of` that must be present, e.g.
    ``("resources", "subscribe")``; empty when none is needed."""
    capability_of: Role | None = attrs.field(default=None, kw_only=True)
    """Whose capabilities ``capability`` is looked up in."""
    capability_since: str = attrs.field(default="2024-11-05", kw_only=True)
    """The first revision in which the capability is required (``completions``: 2025-03-26)."""
    paginated: bool = attrs.field(default=False, kw_only=True)
    """Whether params carry ``cursor`` and the result ``nextCursor``."""
    since: str = attrs.field(default="2024-11-05", kw_only=True)
    """The first revision that defines it."""
    until: str = attrs.field(default="2026-07-28", kw_only=True)
    """The last revision that defines it (2026-07-28 dropped the handshake, ``ping``...)."""
    params_required: bool = attrs.field(default=False, kw_only=True)
    """Whether ``params`` must be present."""

    def read_params(self, payload: Any, structurer: Callable[[Any], Callable[[Any], Any]]) -> Any:
        """The typed params of a received message's ``params`` JSON (None: absent);
        ``structurer`` maps a class to its structure function (the connection's cache).

        Raises:
            ConversionError: absent but required, or not of :attr:`params_type`.
        """
        if payload is None:
            if self.params_required:
                raise ConversionError("params: required")
            return None
        return structurer(self.params_type)(payload)

    def params_json(
        self, params: Any, unstructurer: Callable[[Any], Callable[[Any], Any]]
    ) -> dict[str, Any] | None:
        """The JSON of typed ``params`` we send (None: absent); ``unstructurer`` maps a
        class to its unstructure function (the connection's cache).

        Raises:
            LocalProtocolError: (-32602) absent but required, or not of :attr:`params_type`.
        """
        if params is None:
            if self.params_required:
                raise LocalProtocolError(f"{self.method} requires params", code=INVALID_PARAMS)
            return None
        if not isinstance(params, self.params_type):
            raise LocalProtocolError(
                f"{self.method} params must be {self.params_type.__name__}, "
                f"not {type(params).__name__}",
                code=INVALID_PARAMS,
            )
        data: dict[str, Any] = unstructurer(type(params))(params)
        return data

    def available_in(self, version: str | None) -> bool:
        """Whether the method exists in protocol ``version`` (None: not negotiated yet)."""
        return version is None or self.since <= version <= self.until

    def missing_capability(self, version: str | None, capabilities: dict[Role, Any]) -> str | None:
        """Why the capability the method needs is absent, or None when it may be used."""
        owner = self.capability_of
        if not self.capability or owner is None:
            return None
        # (in the modern era nothing is negotiated: clients declare per request, -32021)
        if version is not None and not self.capability_since <= version <= _H:
            return None
        # Spec: 2025-06-18/basic/lifecycle#operation.1
        # "Both parties MUST:"
        if capability_present(capabilities[owner], self.capability):
            return None
        path = ".".join(self.capability)
        return f"{self.method} needs the {owner.value} capability {path}, which was not negotiated"


_V = "2025-06-18/"
# One row per method, in two lines: name, kind, senders, params class, result class; then
# the section that defines it and what differs from the MethodSpec defaults.
# fmt: off
_ROWS = [
    # -- lifecycle and utilities --
    MethodSpec("initialize",                          REQUEST,      _FROM_CLIENT, t.InitializeRequestParams,               t.InitializeResult,
               _V + "basic/lifecycle#initialization", params_required=True, until=_H),
    MethodSpec("notifications/initialized",           NOTIFICATION, _FROM_CLIENT, t.NotificationParams,                    None,
               _V + "basic/lifecycle#initialization", until=_H),
    MethodSpec("ping",                                REQUEST,      _BOTH,        t.RequestParams,                         t.EmptyResult,
               _V + "basic/utilities/ping#overview", until=_H),
    MethodSpec("notifications/cancelled",             NOTIFICATION, _BOTH,        t.CancelledNotificationParams,           None,
               _V + "basic/utilities/cancellation#cancellation-flow", params_required=True),
    MethodSpec("notifications/progress",              NOTIFICATION, _BOTH,        t.ProgressNotificationParams,            None,
               _V + "basic/utilities/progress#progress-flow", params_required=True),
    # -- server features --
    MethodSpec("tools/list",                          REQUEST,      _FROM_CLIENT, t.PaginatedRequestParams,                t.ListToolsResult,
               _V + "server/tools#listing-tools", capability=("tools",), capability_of=SERVER, paginated=True),
    MethodSpec("tools/call",                          REQUEST,      _FROM_CLIENT, t.CallToolRequestParams,                 t.CallToolResult,
               _V + "server/tools#calling-tools", capability=("tools",), capability_of=SERVER, params_required=True),
    MethodSpec("notifications/tools/list_changed",    NOTIFICATION, _FROM_SERVER, t.NotificationParams,                    None,
               _V + "server/tools#list-changed-notification", capability=("tools", "list_changed"), capability_of=SERVER),
    MethodSpec("resources/list",                      REQUEST,      _FROM_CLIENT, t.PaginatedRequestParams,                t.ListResourcesResult,
               _V + "server/resources#listing-resources", capability=("resources",), capability_of=SERVER, paginated=True),
    MethodSpec("resources/templates/list",            REQUEST,      _FROM_CLIENT, t.PaginatedRequestParams,                t.ListResourceTemplatesResult,
               _V + "server/resources#resource-templates", capability=("resources",), capability_of=SERVER, paginated=True),
    MethodSpec("resources/read",                      REQUEST,      _FROM_CLIENT, t.ReadResourceRequestParams,             t.ReadResourceResult,
               _V + "server/resources#reading-resources", capability=("resources",), capability_of=SERVER, params_required=True),
    MethodSpec("resources/subscribe",                 REQUEST,      _FROM_CLIENT, t.SubscribeRequestParams,                t.EmptyResult,
               _V + "server/resources#subscriptions", capability=("resources", "subscribe"), capability_of=SERVER, params_required=True, until=_H),
    MethodSpec("resources/unsubscribe",               REQUEST,      _FROM_CLIENT, t.UnsubscribeRequestParams,              t.EmptyResult,
               _V + "server/resources#subscriptions", capability=("resources", "subscribe"), capability_of=SERVER, params_required=True, until=_H),
    MethodSpec("notifications/resources/list_changed", NOTIFICATION, _FROM_SERVER, t.NotificationParams,                    None,
               _V + "server/resources#list-changed-notification", capability=("resources", "list_changed"), capability_of=SERVER),
    MethodSpec("notifications/resources/updated",     NOTIFICATION, _FROM_SERVER, t.ResourceUpdatedNotificationParams,     None,
               _V + "server/resources#subscriptions", capability=("resources", "subscribe"), capability_of=SERVER, params_required=True),
    MethodSpec("prompts/list",                        REQUEST,      _FROM_CLIENT, t.PaginatedRequestParams,                t.ListPromptsResult,
               _V + "server/prompts#listing-prompts", capability=("prompts",), capability_of=SERVER, paginated=True),
    MethodSpec("prompts/get",                         REQUEST,      _FROM_CLIENT, t.GetPromptRequestParams,                t.GetPromptResult,
               _V + "server/prompts#getting-a-prompt", capability=("prompts",), capability_of=SERVER, params_required=True),
    MethodSpec("notifications/prompts/list_changed",  NOTIFICATION, _FROM_SERVER, t.NotificationParams,                    None,
               _V + "server/prompts#list-changed-notification", capability=("prompts", "list_changed"), capability_of=SERVER),
    MethodSpec("logging/setLevel",                    REQUEST,      _FROM_CLIENT, t.SetLevelRequestParams,                 t.EmptyResult,
               _V + "server/utilities/logging#setting-log-level", capability=("logging",), capability_of=SERVER, params_required=True, until=_H),
    MethodSpec("notifications/message",               NOTIFICATION, _FROM_SERVER, t.LoggingMessageNotificationParams,      None,
               _V + "server/utilities/logging#log-message-notifications", capability=("logging",), capability_of=SERVER, params_required=True),
    MethodSpec("completion/complete",                 REQUEST,      _FROM_CLIENT, t.CompleteRequestParams,                 t.CompleteResult,
               _V + "server/utilities/completion#requesting-completions", capability=("completions",), capability_of=SERVER, capability_since="2025-03-26", params_required=True),
    # -- client features --
    MethodSpec("sampling/createMessage",              REQUEST,      _FROM_SERVER, t.CreateMessageRequestParams,            t.CreateMessageResult,
               _V + "client/sampling#creating-messages", capability=("sampling",), capability_of=CLIENT, params_required=True, until=_H),
    MethodSpec("roots/list",                          REQUEST,      _FROM_SERVER, t.RequestParams,                         t.ListRootsResult,
               _V + "client/roots#listing-roots", capability=("roots",), capability_of=CLIENT, until=_H),
    MethodSpec("notifications/roots/list_changed",    NOTIFICATION, _FROM_CLIENT, t.NotificationParams,                    None,
               _V + "client/roots#root-list-changes", capability=("roots", "list_changed"), capability_of=CLIENT, until=_H),
    # Spec: 2025-11-25/client/elicitation#elicitation-requests.1
    # "All elicitation requests MUST include the following parameters:"
    # Spec: 2025-11-25/client/elicitation#form-mode-elicitation-requests.1
    # "Form mode elicitation requests MUST either specify `mode: 'form'` or omit the `mode` field"
    # Spec: 2025-11-25/client/elicitation#url-mode-elicitation-requests.1
    # "URL mode elicitation requests MUST specify `mode: 'url'`, a `message`"
    # (the params are read strictly by ElicitRequestParams: one of the two modes' classes)
    MethodSpec("elicitation/create",                  REQUEST,      _FROM_SERVER, t.ElicitRequestParams,                   t.ElicitResult,
               _V + "client/elicitation#creating-elicitation-requests", capability=("elicitation",), capability_of=CLIENT, since="2025-06-18", params_required=True, until=_H),
    # -- 2025-11-25 additions --
    # Spec: 2025-11-25/client/elicitation#completion-notifications-for-url-mode-elicitation.3
    # "MUST include the `elicitationId` established in the original `elicitation/create` request."
    MethodSpec("notifications/elicitation/complete",  NOTIFICATION, _FROM_SERVER, t.ElicitationCompleteNotificationParams, None,
               "2025-11-25/client/elicitation", capability=("elicitation",), capability_of=CLIENT, since="2025-11-25", params_required=True, until=_H),
    MethodSpec("tasks/get",                           REQUEST,      _BOTH,        t.GetTaskRequestParams,                  t.GetTaskResult,
               "2025-11-25/basic/utilities/tasks", since="2025-11-25", params_required=True, until=_H),
    MethodSpec("tasks/result",                        REQUEST,      _BOTH,        t.GetTaskPayloadRequestParams,           t.GetTaskPayloadResult,
               "2025-11-25/basic/utilities/tasks", since="2025-11-25", params_required=True, until=_H),
    MethodSpec("tasks/list",                          REQUEST,      _BOTH,        t.PaginatedRequestParams,                t.ListTasksResult,
               "2025-11-25/basic/utilities/tasks", since="2025-11-25", paginated=True, until=_H),
    MethodSpec("tasks/cancel",                        REQUEST,      _BOTH,        t.CancelTaskRequestParams,               t.CancelTaskResult,
               "2025-11-25/basic/utilities/tasks", since="2025-11-25", params_required=True, until=_H),
    MethodSpec("notifications/tasks/status",          NOTIFICATION, _BOTH,        t.TaskStatusNotificationParams,          None,
               "2025-11-25/basic/utilities/tasks", since="2025-11-25", params_required=True, until=_H),
    # -- 2026-07-28 additions (2026-07-28/changelog, major changes 3 and 4) --
    MethodSpec("server/discover",                     REQUEST,      _FROM_CLIENT, t.RequestParams,                         t.DiscoverResult,
               "2026-07-28/server/discover", since="2026-07-28"),  # (params: only the _meta we write)
    MethodSpec("subscriptions/listen",                REQUEST,      _FROM_CLIENT, t.SubscriptionsListenRequestParams,      t.SubscriptionsListenResult,
               "2026-07-28/basic/patterns/subscriptions", since="2026-07-28", params_required=True),
    MethodSpec("notifications/subscriptions/acknowledged", NOTIFICATION, _FROM_SERVER, t.SubscriptionsAcknowledgedNotificationParams, None,
               "2026-07-28/basic/patterns/subscriptions", since="2026-07-28", params_required=True),
]
# fmt: on

METHODS: Final[dict[str, MethodSpec]] = {row.method: row for row in _ROWS}
"""Every MCP method of the supported revisions, by name."""


def lookup(method: str, sender: Role, kind: str, version: str | None) -> MethodSpec | None:
    """The row of ``method`` when ``sender`` may send it as ``kind`` (REQUEST or
    NOTIFICATION) in protocol ``version`` (None: not negotiated yet); else None."""
    spec = METHODS.get(method)
    if spec is None or spec.kind != kind or sender not in spec.senders:
        return None
    return spec if spec.available_in(version) else None


def capability_present(capabilities: Any, path: tuple[str, ...]) -> bool:
    """Whether typed (or dict) ``capabilities`` hold ``path``, e.g. ``("resources",
    "subscribe")``: each step present and not False."""
    node = capabilities
    for name in path:
        if node is None:
            return False
        node = node.get(name) if isinstance(node, dict) else getattr(node, name, None)
    return node is not None and node is not False

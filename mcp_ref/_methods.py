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

from typing import Any, Final

import attrs

from . import types as t
from ._state import CLIENT, SERVER, Role

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "METHODS",
    "SUPPORTED_VERSIONS",
    "MethodSpec",
    "answer_refusal",
    "ask_refusal",
    "capability_present",
    "check_version",
    "lookup",
    "negotiate_version",
]

SUPPORTED_VERSIONS: Final = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
"""Protocol revisions mcp-ref speaks, newest first."""

# Spec: 2025-06-18/basic/lifecycle#version-negotiation.2
# "This SHOULD be the latest version supported by the client."
# (the clients' default protocol_version; a client asks for our newest revision)
LATEST_PROTOCOL_VERSION: Final = SUPPORTED_VERSIONS[0]
"""The revision a client asks for by default and a server falls back to."""

BATCH_VERSIONS: Final = frozenset({"2025-03-26"})
"""Revisions that allow JSON-RPC batches (added in 2025-03-26, removed in 2025-06-18)."""

REQUEST: Final = "request"
NOTIFICATION: Final = "notification"

_BOTH = frozenset({CLIENT, SERVER})
_FROM_CLIENT = frozenset({CLIENT})
_FROM_SERVER = frozenset({SERVER})


@attrs.frozen(kw_only=True)
class MethodSpec:
    """One row of :data:`METHODS`."""

    method: str
    """The method name on the wire."""
    kind: str
    """``"request"`` or ``"notification"``."""
    senders: frozenset[Role]
    """The roles that may send it."""
    params_type: Any
    """The class params are converted to."""
    result_type: Any = None
    """For requests: the class of the result."""
    capability: tuple[str, ...] = ()
    """Path into the capabilities of :attr:`capability_of` that must be present, e.g.
    ``("resources", "subscribe")``; empty when none is needed."""
    capability_of: Role | None = None
    """Whose capabilities ``capability`` is looked up in."""
    capability_since: str = "2024-11-05"
    """The first revision in which the capability is required (``completions``: 2025-03-26)."""
    paginated: bool = False
    """Whether params carry ``cursor`` and the result ``nextCursor``."""
    since: str = "2024-11-05"
    """The first revision that defines it."""
    params_required: bool = False
    """Whether ``params`` must be present."""
    section: str = ""
    """The spec section that defines it, e.g. ``2025-06-18/server/tools#listing-tools``."""

    def available_in(self, version: str | None) -> bool:
        """Whether the method exists in protocol ``version`` (None: not negotiated yet)."""
        return version is None or version >= self.since

    def missing_capability(self, version: str | None, capabilities: dict[Role, Any]) -> str | None:
        """Why the capability the method needs is absent, or None when it may be used."""
        owner = self.capability_of
        if not self.capability or owner is None:
            return None
        if version is not None and version < self.capability_since:
            return None
        # Spec: 2025-06-18/basic/lifecycle#operation.1
        # "Both parties MUST:"
        if capability_present(capabilities[owner], self.capability):
            return None
        path = ".".join(self.capability)
        return f"{self.method} needs the {owner.value} capability {path}, which was not negotiated"


def _req(
    method: str,
    senders: frozenset[Role],
    params_type: Any,
    result_type: Any,
    section: str,
    *,
    kind: str = REQUEST,
    **kw: Any,
) -> MethodSpec:
    return MethodSpec(
        method=method,
        kind=kind,
        senders=senders,
        params_type=params_type,
        result_type=result_type,
        section=section,
        **kw,
    )


def _note(
    method: str, senders: frozenset[Role], params_type: Any, section: str, **kw: Any
) -> MethodSpec:
    return _req(method, senders, params_type, None, section, kind=NOTIFICATION, **kw)


_V = "2025-06-18/"
# One row per method, in two lines: name, senders, params class, result class; then the
# section that defines it and what differs from the MethodSpec defaults.
# fmt: off
_ROWS = [
    # -- lifecycle and utilities --
    _req( "initialize",                           _FROM_CLIENT, t.InitializeRequestParams,               t.InitializeResult,
          _V + "basic/lifecycle#initialization", params_required=True),
    _note("notifications/initialized",            _FROM_CLIENT, t.NotificationParams,
          _V + "basic/lifecycle#initialization"),
    _req( "ping",                                 _BOTH,        t.RequestParams,                         t.EmptyResult,
          _V + "basic/utilities/ping#overview"),
    _note("notifications/cancelled",              _BOTH,        t.CancelledNotificationParams,
          _V + "basic/utilities/cancellation#cancellation-flow", params_required=True),
    _note("notifications/progress",               _BOTH,        t.ProgressNotificationParams,
          _V + "basic/utilities/progress#progress-flow", params_required=True),
    # -- server features --
    _req( "tools/list",                           _FROM_CLIENT, t.PaginatedRequestParams,                t.ListToolsResult,
          _V + "server/tools#listing-tools", capability=("tools",), capability_of=SERVER, paginated=True),
    _req( "tools/call",                           _FROM_CLIENT, t.CallToolRequestParams,                 t.CallToolResult,
          _V + "server/tools#calling-tools", capability=("tools",), capability_of=SERVER, params_required=True),
    _note("notifications/tools/list_changed",     _FROM_SERVER, t.NotificationParams,
          _V + "server/tools#list-changed-notification", capability=("tools", "list_changed"), capability_of=SERVER),
    _req( "resources/list",                       _FROM_CLIENT, t.PaginatedRequestParams,                t.ListResourcesResult,
          _V + "server/resources#listing-resources", capability=("resources",), capability_of=SERVER, paginated=True),
    _req( "resources/templates/list",             _FROM_CLIENT, t.PaginatedRequestParams,                t.ListResourceTemplatesResult,
          _V + "server/resources#resource-templates", capability=("resources",), capability_of=SERVER, paginated=True),
    _req( "resources/read",                       _FROM_CLIENT, t.ReadResourceRequestParams,             t.ReadResourceResult,
          _V + "server/resources#reading-resources", capability=("resources",), capability_of=SERVER, params_required=True),
    _req( "resources/subscribe",                  _FROM_CLIENT, t.SubscribeRequestParams,                t.EmptyResult,
          _V + "server/resources#subscriptions", capability=("resources", "subscribe"), capability_of=SERVER, params_required=True),
    _req( "resources/unsubscribe",                _FROM_CLIENT, t.UnsubscribeRequestParams,              t.EmptyResult,
          _V + "server/resources#subscriptions", capability=("resources", "subscribe"), capability_of=SERVER, params_required=True),
    _note("notifications/resources/list_changed", _FROM_SERVER, t.NotificationParams,
          _V + "server/resources#list-changed-notification", capability=("resources", "list_changed"), capability_of=SERVER),
    _note("notifications/resources/updated",      _FROM_SERVER, t.ResourceUpdatedNotificationParams,
          _V + "server/resources#subscriptions", capability=("resources", "subscribe"), capability_of=SERVER, params_required=True),
    _req( "prompts/list",                         _FROM_CLIENT, t.PaginatedRequestParams,                t.ListPromptsResult,
          _V + "server/prompts#listing-prompts", capability=("prompts",), capability_of=SERVER, paginated=True),
    _req( "prompts/get",                          _FROM_CLIENT, t.GetPromptRequestParams,                t.GetPromptResult,
          _V + "server/prompts#getting-a-prompt", capability=("prompts",), capability_of=SERVER, params_required=True),
    _note("notifications/prompts/list_changed",   _FROM_SERVER, t.NotificationParams,
          _V + "server/prompts#list-changed-notification", capability=("prompts", "list_changed"), capability_of=SERVER),
    _req( "logging/setLevel",                     _FROM_CLIENT, t.SetLevelRequestParams,                 t.EmptyResult,
          _V + "server/utilities/logging#setting-log-level", capability=("logging",), capability_of=SERVER, params_required=True),
    _note("notifications/message",                _FROM_SERVER, t.LoggingMessageNotificationParams,
          _V + "server/utilities/logging#log-message-notifications", capability=("logging",), capability_of=SERVER, params_required=True),
    _req( "completion/complete",                  _FROM_CLIENT, t.CompleteRequestParams,                 t.CompleteResult,
          _V + "server/utilities/completion#requesting-completions", capability=("completions",), capability_of=SERVER, capability_since="2025-03-26", params_required=True),
    # -- client features --
    _req( "sampling/createMessage",               _FROM_SERVER, t.CreateMessageRequestParams,            t.CreateMessageResult,
          _V + "client/sampling#creating-messages", capability=("sampling",), capability_of=CLIENT, params_required=True),
    _req( "roots/list",                           _FROM_SERVER, t.RequestParams,                         t.ListRootsResult,
          _V + "client/roots#listing-roots", capability=("roots",), capability_of=CLIENT),
    _note("notifications/roots/list_changed",     _FROM_CLIENT, t.NotificationParams,
          _V + "client/roots#root-list-changes", capability=("roots", "list_changed"), capability_of=CLIENT),
    _req( "elicitation/create",                   _FROM_SERVER, t.ElicitRequestParams,                   t.ElicitResult,
          _V + "client/elicitation#creating-elicitation-requests", capability=("elicitation",), capability_of=CLIENT, since="2025-06-18", params_required=True),
    # -- 2025-11-25 additions --
    _note("notifications/elicitation/complete",   _FROM_SERVER, t.ElicitationCompleteNotificationParams,
          "2025-11-25/client/elicitation", capability=("elicitation",), capability_of=CLIENT, since="2025-11-25", params_required=True),
    _req( "tasks/get",                            _BOTH,        t.GetTaskRequestParams,                  t.GetTaskResult,
          "2025-11-25/basic/utilities/tasks", since="2025-11-25", params_required=True),
    _req( "tasks/result",                         _BOTH,        t.GetTaskPayloadRequestParams,           t.GetTaskPayloadResult,
          "2025-11-25/basic/utilities/tasks", since="2025-11-25", params_required=True),
    _req( "tasks/list",                           _BOTH,        t.PaginatedRequestParams,                t.ListTasksResult,
          "2025-11-25/basic/utilities/tasks", since="2025-11-25", paginated=True),
    _req( "tasks/cancel",                         _BOTH,        t.CancelTaskRequestParams,               t.CancelTaskResult,
          "2025-11-25/basic/utilities/tasks", since="2025-11-25", params_required=True),
    _note("notifications/tasks/status",           _BOTH,        t.TaskStatusNotificationParams,
          "2025-11-25/basic/utilities/tasks", since="2025-11-25", params_required=True),
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


def negotiate_version(requested: str) -> str:
    """The version a server answers to an ``initialize`` asking for ``requested``: the
    same when supported (see :func:`answer_refusal`), else the latest."""
    # Spec: 2025-06-18/basic/lifecycle#version-negotiation.5
    # "This SHOULD be the latest version supported by the server."
    return requested if requested in SUPPORTED_VERSIONS else LATEST_PROTOCOL_VERSION


def ask_refusal(version: str) -> str | None:
    """Why a client may not ask for ``version`` in its ``initialize``; None when it may."""
    # Spec: 2025-06-18/basic/lifecycle#version-negotiation.1
    # "In the `initialize` request, the client MUST send a protocol version it supports."
    if version not in SUPPORTED_VERSIONS:
        return f"initialize must ask for a version we support, not {version!r}"
    return None


def answer_refusal(requested: str | None, version: str) -> str | None:
    """Why a server may not answer an ``initialize`` asking for ``requested`` with
    ``version``; None when it may."""
    # Spec: 2025-06-18/basic/lifecycle#version-negotiation.3
    # "If the server supports the requested protocol version, it MUST respond with the same
    # version."
    if requested in SUPPORTED_VERSIONS and version != requested:
        return f"the client asked for {requested}, which we support: answer it, not {version}"
    # Spec: 2025-06-18/basic/lifecycle#version-negotiation.4
    # "Otherwise, the server MUST respond with another protocol version it supports."
    if version not in SUPPORTED_VERSIONS:
        return f"cannot answer with unsupported version {version!r}"
    return None


def check_version(version: str) -> str:
    """``version`` if mcp-ref speaks it, else ValueError naming the supported ones."""
    if version not in SUPPORTED_VERSIONS:
        raise ValueError(
            f"protocol version {version!r} is not supported; use one of "
            + ", ".join(SUPPORTED_VERSIONS)
        )
    return version

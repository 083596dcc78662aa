"""Tasks for ``tools/call`` (2025-11-25/basic/utilities/tasks): a call answered at once
with a task, the tool run in the background, its status polled and its result fetched.

Theory of operation
-------------------
A tool registered with ``task_support="optional"`` or ``"required"`` (``forbidden``,
the default, is the spec's) makes the server declare the ``tasks`` capability
(``requests.tools.call``, ``list`` and ``cancel``) to clients that negotiate 2025-11-25.
A ``tools/call`` whose params carry ``task`` is then answered at once with a
``CreateTaskResult``; the tool runs in the nursery of the :meth:`Server.serve
<mcp_ref.server.Server.serve>` that runs the session (every transport serves through
it), so a task ends at the latest with its session (a stateless Streamable HTTP
session ends with its POST: it is offered no tasks, :meth:`Tasks.for_version`).  What
the tool returned (or the JSON-RPC error it raised) is written, as JSON bytes, into the
task's :class:`~mcp_ref._stores.TaskRecord` once it ends.

Every task lives in a :class:`~mcp_ref._stores.TaskStore`: an in-memory one per server
by default, or the store shared by several server processes (``serve_http(stores=...)``
hangs it on each Streamable HTTP session, :meth:`mcp_ref.stores.Sharing.attach`, where
:meth:`Tasks.store_here` finds it).  ``tasks/get``, ``tasks/list`` and
``tasks/cancel`` read and write the store only, so any process answers them.
``tasks/result`` waits for the end: for a task running in this process, on the event
its runner sets when it has written the outcome; for a task running elsewhere, by
reading the store again every ``pollInterval`` (at least :data:`MIN_POLL_SECONDS`).
That wait is bounded by the task's TTL (at most ``max_ttl_ms``): once the record has
expired the request is answered -32602 (the task is gone); the client may also cancel
it.  A ``tasks/cancel`` reaching another process than the one running the task marks it
cancelled in the store; the runner reads a shared store every ``pollInterval`` while the
tool runs and stops the tool once it finds the task ended (a tool that returns first
finds it cancelled, and it stays so).

Who may see a task: it is bound to the caller's authorization context when the server
checks tokens (:meth:`Server.principal_of <mcp_ref.server.Server.principal_of>`), else to
the session (its ``Mcp-Session-Id`` over Streamable HTTP, which every process of a
shared store knows; a random id of the session elsewhere).  Another caller asking for
it is told it does not exist.  Task ids are 192 random bits.

Bounds: ``max_running`` tasks at once per server (one more is refused -32603), the
store's own bound on records, a TTL clamped to [1 s, ``max_ttl_ms``].  Not done: the
``input_required`` status (a task's tool cannot ask the client for input), progress
notifications after the ``CreateTaskResult``, ``notifications/tasks/status``, and
task-augmented requests other than ``tools/call``.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any, Final, TypeVar

import attrs
import trio

from .. import types as t
from .._convert import unstructure
from .._errors import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, McpError
from .._methods import REQUEST, capability_present, lookup
from .._pagination import InvalidCursor, paginate
from .._state import CLIENT
from .._stores import MemoryStores, TaskRecord, TaskStore
from ..trio.http.sessions import CURRENT
from ._tools import ToolDef

__all__ = [
    "MIN_POLL_SECONDS",
    "RELATED_TASK",
    "TASK_SUPPORT",
    "Tasks",
    "set_task_support",
]

log = logging.getLogger("mcp_ref.server.tasks")

RELATED_TASK: Final = "io.modelcontextprotocol/related-task"
"""The ``_meta`` key tying a message to its task."""
TASK_SUPPORT: Final = ("forbidden", "optional", "required")
"""The values of a tool's ``execution.taskSupport``."""
MIN_POLL_SECONDS: Final = 0.1
"""The shortest wait between two reads of the store by a ``tasks/result`` waiting for
a task that runs in another process."""
NURSERY_KEY: Final = "mcp_ref.server.tasks"
"""The ``session.app_state`` key of the nursery the session's tasks run in (set by
``Server.serve``)."""
_T = TypeVar("_T")
_OWNER_KEY: Final = "mcp_ref.server.tasks.owner"
_FINISH_SECONDS: Final = 10.0
"""How long the runner may take to write a task's outcome to the store (shielded)."""


def set_task_support(tool: ToolDef, support: str | None) -> None:
    """Declare the tool's ``execution.taskSupport`` (None: leave it absent, i.e.
    forbidden).

    Raises:
        ValueError: ``support`` is not one of :data:`TASK_SUPPORT`.

    Source: 2025-11-25/basic/utilities/tasks#tool-level-negotiation.
    """
    if support is None:
        return
    if support not in TASK_SUPPORT:
        raise ValueError(f"task_support must be one of {TASK_SUPPORT}, not {support!r}")
    tool.tool = attrs.evolve(tool.tool, execution=t.ToolExecution(task_support=support))  # type: ignore[arg-type]


def declared(session: Any) -> bool:
    """Whether ``session`` (a :class:`~mcp_ref.trio.Session`) negotiated task-augmented
    ``tools/call``: its revision defines tasks and the server declared
    ``tasks.requests.tools.call`` to it."""
    if lookup("tasks/get", CLIENT, REQUEST, session.protocol_version) is None:
        return False
    return capability_present(session.our_capabilities, ("tasks", "requests", "tools", "call"))


def support_of(tool: ToolDef) -> str:
    """The tool's ``execution.taskSupport``, ``"forbidden"`` when absent."""
    execution = tool.tool.execution
    return (execution.task_support if execution is not None else None) or "forbidden"


def owner_of(principal: str | None, app_state: dict[str, Any]) -> str:
    """Whom a task created now belongs to: the caller's authorization context
    (``principal``, see :meth:`Server.principal_of
    <mcp_ref.server.Server.principal_of>`) when there is one, else the Streamable HTTP
    session (known to every process sharing a store), else this session (a random id
    kept in its ``app_state``)."""
    if principal is not None:
        # Spec: 2025-11-25/basic/utilities/tasks#task-isolation-and-access-control.1
        # "When an authorization context is provided, receivers MUST bind tasks to said
        # context."
        return "caller:" + principal
    http = CURRENT.get()
    if http is not None and http.id is not None:
        return "http-session:" + http.id
    own = app_state.get(_OWNER_KEY)
    if own is None:
        own = app_state[_OWNER_KEY] = secrets.token_urlsafe(16)
    return "session:" + str(own)


def iso(seconds: float) -> str:
    """``seconds`` since the epoch as an ISO 8601 UTC timestamp (milliseconds)."""
    stamp = datetime.fromtimestamp(seconds, tz=UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def _outcome_error(code: int, message: str, data: Any = None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return json.dumps({"error": error}, separators=(",", ":")).encode()


_CANCELLED: Final = _outcome_error(INTERNAL_ERROR, "the task was cancelled")


class _TaskSession:
    """The session as a task's tool sees it: what it sends carries the related-task
    ``_meta`` and no longer belongs to the ``tools/call`` (answered already), so over
    Streamable HTTP it goes on the GET stream.  Everything else is the session's."""

    def __init__(self, session: Any, task_id: str) -> None:
        self._session = session
        self._meta = {RELATED_TASK: {"taskId": task_id}}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def _tagged(self, params: Any) -> Any:
        # Spec: 2025-11-25/basic/utilities/tasks#associating-task-related-messages.1
        # "All requests, notifications, and responses related to a task MUST include the
        # `io.modelcontextprotocol/related-task` key in their `_meta` field"
        if params is None or not attrs.has(type(params)) or not hasattr(params, "meta"):
            return params
        return attrs.evolve(params, meta={**(params.meta or {}), **self._meta})

    async def send_notification(self, method: str, params: Any = None, **kw: Any) -> None:
        kw.pop("related_request_id", None)
        await self._session.send_notification(method, self._tagged(params), **kw)

    async def send_request(self, method: str, params: Any = None, **kw: Any) -> Any:
        kw.pop("related_request_id", None)
        return await self._session.send_request(method, self._tagged(params), **kw)


class TaskRequest:
    """What a task's tool gets as its request (through its
    :class:`~mcp_ref.server.Context`): the ``tools/call``'s
    :class:`~mcp_ref.trio.RequestContext` with the session of :class:`_TaskSession`,
    the task's cancel scope (``tasks/cancel``), and no progress: the core ties a progress
    token to a request in flight, and the ``tools/call`` was answered, so
    :meth:`report_progress` sends nothing."""

    def __init__(self, request: Any, task_id: str, scope: trio.CancelScope) -> None:
        self._request = request
        self.task_id = task_id
        self.session = _TaskSession(request.session, task_id)
        self.cancel_scope = scope

    def __getattr__(self, name: str) -> Any:
        return getattr(self._request, name)

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Nothing (class docstring)."""
        log.debug("task %s: progress %s not sent", self.task_id, progress)

    async def send_request(self, method: str, params: Any = None, **kw: Any) -> Any:
        """:meth:`Session.send_request <mcp_ref.trio.Session.send_request>` for the task."""
        return await self.session.send_request(method, params, **kw)

    async def send_notification(self, method: str, params: Any = None) -> None:
        """:meth:`Session.send_notification <mcp_ref.trio.Session.send_notification>`
        for the task."""
        await self.session.send_notification(method, params)


@attrs.define(eq=False)
class _Run:
    """A task running in this process."""

    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    done: trio.Event = attrs.field(factory=trio.Event)


class Tasks:
    """The tasks of one :class:`~mcp_ref.server.Server` (module docstring).

    Args:
        clock: seconds since the epoch (the server's ``clock``).
        store: where tasks are kept (default: in memory, ``max_stored`` records).
        max_running: tasks running at once in this server (more are refused -32603).
        max_stored: the bound of the default in-memory store.
        default_ttl_ms: the TTL of a task whose request names none (milliseconds).
        max_ttl_ms: the longest TTL granted (longer requests are cut to it).
        poll_ms: the ``pollInterval`` suggested to clients (milliseconds).
        page_size: tasks per ``tasks/list`` page.

    Raises:
        ValueError: a bound below 1.
    """

    def __init__(
        self,
        clock: Callable[[], float],
        *,
        store: TaskStore | None = None,
        max_running: int = 16,
        max_stored: int = 1024,
        default_ttl_ms: int = 300_000,
        max_ttl_ms: int = 3_600_000,
        poll_ms: int = 1000,
        page_size: int = 50,
    ) -> None:
        if min(max_running, max_stored, default_ttl_ms, max_ttl_ms, poll_ms, page_size) < 1:
            raise ValueError("task bounds must be at least 1")
        self.clock = clock
        self.store: TaskStore | None = store
        """The store given (None: the shared one of the HTTP session, else :attr:`local`)."""
        self.local: TaskStore = MemoryStores(max_tasks=max_stored)
        """The store of a server sharing none (in memory)."""
        self.max_running = max_running
        self.default_ttl_ms = default_ttl_ms
        self.max_ttl_ms = max_ttl_ms
        self.poll_ms = poll_ms
        self.page_size = page_size
        self._running: dict[str, _Run] = {}
        self._capable: tuple[int, bool] | None = None

    @staticmethod
    def for_version(caps: t.ServerCapabilities, version: str) -> t.ServerCapabilities:
        """``caps`` without ``tasks`` for a revision that does not define tasks, or a
        stateless Streamable HTTP session (it ends with its POST, and its tasks with
        it: calls carrying ``task`` are then answered as plain calls)."""
        stateless = getattr(CURRENT.get(), "kind", None) == "stateless"
        defined = lookup("tasks/get", CLIENT, REQUEST, version) is not None
        return (
            caps
            if caps.tasks is None or (defined and not stateless)
            else attrs.evolve(caps, tasks=None)
        )

    def store_here(self) -> TaskStore:
        """The store of the request being handled: :attr:`store` if given, else the
        store the Streamable HTTP session shares with other processes
        (``serve_http(stores=...)``: :meth:`mcp_ref.stores.Sharing.attach` hangs it on
        the session), else :attr:`local`."""
        if self.store is not None:
            return self.store
        shared: TaskStore | None = getattr(CURRENT.get(), "task_store", None)
        return self.local if shared is None else shared

    @property
    def running(self) -> int:
        """How many tasks run in this server now."""
        return len(self._running)

    # ---------------------------------------------------------------- creation
    def capability(self, tools: Any, generation: int) -> t.ServerCapabilitiesTasks | None:
        """The ``tasks`` capability when one of ``tools`` (ToolDefs) may run as a task;
        ``generation`` counts the tool registry's changes (the answer is kept until it
        changes: modern requests ask on every call)."""
        if self._capable is None or self._capable[0] != generation:
            self._capable = (generation, any(support_of(x) != "forbidden" for x in tools))
        if not self._capable[1]:
            return None
        # Spec: 2025-11-25/basic/utilities/tasks#capabilities.1
        # "Servers and clients that support task-augmented requests MUST declare a `tasks`
        # capability during initialization."
        return t.ServerCapabilitiesTasks(
            list={},
            cancel={},
            requests=t.ServerCapabilitiesTasksRequests(
                tools=t.ServerCapabilitiesTasksRequestsTools(call={})
            ),
        )

    @staticmethod
    def as_task(params: t.CallToolRequestParams, tool: ToolDef, declared: bool) -> bool:
        """Whether this ``tools/call`` runs as a task.  ``declared``: the session
        negotiated the ``tasks.requests.tools.call`` capability.

        Raises:
            McpError: -32601 for a ``required`` tool called without ``task``, or a
                ``forbidden`` one called with it.
        """
        if not declared:
            # Spec: 2025-11-25/basic/utilities/tasks#task-support-and-handling.1
            # "Receivers that do not declare the task capability for a request type MUST
            # process requests of that type normally, ignoring any task-augmentation
            # metadata if present."
            return False
        support = support_of(tool)
        if params.task is None and support == "required":
            # Spec: 2025-11-25/basic/utilities/tasks#tool-level-negotiation.6
            # "Servers MUST return a `-32601` (Method not found) error if a client does not
            # attempt to do so."
            raise McpError(METHOD_NOT_FOUND, f"tool {tool.name!r} must be called as a task")
        if params.task is not None and support == "forbidden":
            # Spec: 2025-11-25/basic/utilities/tasks#tool-level-negotiation.3
            # "Servers SHOULD return a `-32601` (Method not found) error if a client attempts
            # to do so."
            raise McpError(METHOD_NOT_FOUND, f"tool {tool.name!r} cannot be called as a task")
        return params.task is not None

    async def create(
        self,
        owner: str,
        params: t.CallToolRequestParams,
        nursery: trio.Nursery | None,
        work: Callable[[Any], Awaitable[t.CallToolResult]],
        request: Any,
    ) -> t.CreateTaskResult:
        """Accept a task-augmented call: store the task, start ``work`` in ``nursery``
        (the session's), answer with its ``CreateTaskResult``.  ``work`` is given a
        :class:`TaskRequest` standing for ``request`` (the call's
        :class:`~mcp_ref.trio.RequestContext`).

        Raises:
            McpError: -32603 when ``max_running`` tasks run already, or the session has
                no nursery for tasks (not run by ``Server.serve``).
        """
        if nursery is None:
            raise McpError(INTERNAL_ERROR, "tasks run only in sessions served by Server.serve")
        if len(self._running) >= self.max_running:
            raise McpError(
                INTERNAL_ERROR, f"too many tasks running (at most {self.max_running}); retry later"
            )
        asked = params.task.ttl if params.task is not None else None
        # Spec: 2025-11-25/basic/utilities/tasks#ttl-and-resource-management.3
        # "Receivers MAY override the requested `ttl` duration."
        ttl = min(max(asked if asked is not None else self.default_ttl_ms, 1000), self.max_ttl_ms)
        now = self.clock()
        # Spec: 2025-11-25/basic/utilities/tasks#task-isolation-and-access-control.3
        # "receivers MUST generate cryptographically secure task IDs with enough entropy to
        # prevent guessing"
        # Spec: 2025-11-25/basic/utilities/tasks#task-id-requirements.2
        # "Task IDs MUST be generated by the receiver when creating a task."
        task_id = secrets.token_urlsafe(24)
        # Spec: 2025-11-25/basic/utilities/tasks#task-status-lifecycle.1
        # "Tasks MUST begin in the `working` status when created."
        record = TaskRecord(
            task_id=task_id,
            owner=owner,
            status="working",
            created_at=now,
            updated_at=now,
            ttl_ms=ttl,
            poll_ms=self.poll_ms,
        )
        store = self.store_here()
        await store.put_task(record, ttl / 1000)
        run = self._running[task_id] = _Run()
        nursery.start_soon(
            self._run, store, record, run, partial(work, TaskRequest(request, task_id, run.scope))
        )
        log.info("task %s created for %s", task_id, params.name)
        # Spec: 2025-11-25/basic/utilities/tasks#result-retrieval.1
        # "Receivers that accept a task-augmented request MUST return a `CreateTaskResult`
        # as the response."
        return t.CreateTaskResult(task=_task(t.Task, record))

    async def _run(
        self,
        store: TaskStore,
        record: TaskRecord,
        run: _Run,
        work: Callable[[], Awaitable[t.CallToolResult]],
    ) -> None:
        """Run the tool, then write the task's outcome (shielded, bounded)."""
        status: str = "cancelled"
        message: str | None = "the session ended"
        outcome = _CANCELLED
        try:
            with run.scope:
                async with trio.open_nursery() as nursery:
                    if store is not self.local:  # a tasks/cancel may reach another process
                        nursery.start_soon(self._watch, store, record, run.scope)
                    status, message, outcome = await _outcome(work)
                    nursery.cancel_scope.cancel()
            if run.scope.cancelled_caught:
                status, message, outcome = "cancelled", "the task was cancelled", _CANCELLED
        finally:
            with trio.CancelScope(shield=True) as scope:
                scope.deadline = trio.current_time() + _FINISH_SECONDS
                try:
                    await self._finish(store, record, status, message, outcome)
                except Exception:
                    log.exception("task %s: its outcome could not be stored", record.task_id)
            self._running.pop(record.task_id, None)
            run.done.set()

    async def _watch(self, store: TaskStore, record: TaskRecord, scope: trio.CancelScope) -> None:
        """Stop the task once the shared store says it ended (cancelled by a
        ``tasks/cancel`` another process answered) or forgot it: read it every
        ``pollInterval``."""
        while True:
            await trio.sleep(max((record.poll_ms or 0) / 1000, MIN_POLL_SECONDS))
            now = await store.get_task(record.task_id)
            if now is None or now.terminal:
                # Spec: 2025-11-25/basic/utilities/tasks#task-cancellation.2
                # "receivers SHOULD attempt to stop the task execution"
                scope.cancel()
                return

    async def _finish(
        self, store: TaskStore, record: TaskRecord, status: str, message: str | None, outcome: bytes
    ) -> None:
        """Write the task's terminal status, unless the store has one already (a
        ``tasks/cancel`` got there first, maybe on another process)."""
        now_record = await store.get_task(record.task_id)
        if now_record is not None and now_record.terminal:
            # Spec: 2025-11-25/basic/utilities/tasks#task-cancellation.3
            # "Once a task is cancelled, it MUST remain in `cancelled` status even if execution
            # continues to completion or fails."
            # Spec: 2025-11-25/basic/utilities/tasks#task-status-lifecycle.3
            # "Tasks with a `completed`, `failed`, or `cancelled` status are in a terminal state
            # and MUST NOT transition to any other status"
            return
        await self._put(store, record, status, message, outcome)
        log.info("task %s %s", record.task_id, status)

    async def _put(
        self, store: TaskStore, record: TaskRecord, status: str, message: str | None, outcome: bytes
    ) -> TaskRecord:
        now = self.clock()
        new = attrs.evolve(
            record, status=status, status_message=message, updated_at=now, result=outcome
        )
        left = record.created_at + record.ttl_ms / 1000 - now
        await store.put_task(new, max(left, 1.0))
        return new

    # ------------------------------------------------------------------ queries
    async def _find(self, store: TaskStore, owner: str, task_id: str) -> TaskRecord:
        """The record of ``owner``'s task ``task_id``.

        Raises:
            McpError: -32602 when there is none, it is someone else's, or it expired.
        """
        # Spec: 2025-11-25/basic/utilities/tasks#associating-task-related-messages.3
        # "the `taskId` parameter in the request MUST be used as the source of truth for
        # identifying the target task." (the params' taskId; _meta is not read)
        record = await store.get_task(task_id)
        # Spec: 2025-11-25/basic/utilities/tasks#task-isolation-and-access-control.5
        # "receivers MUST reject `tasks/get`, `tasks/result`, and `tasks/cancel` requests for
        # tasks that do not belong to the same authorization context as the requestor."
        # Spec: 2025-11-25/basic/utilities/tasks#protocol-errors.1
        # "Receivers MUST return standard JSON-RPC errors for the following protocol error
        # cases:" (an unknown taskId: -32602)
        if record is None or record.owner != owner:
            raise McpError(INVALID_PARAMS, "Failed to retrieve task: Task not found")
        if record.expired(self.clock()):
            await store.forget_task(task_id)
            raise McpError(INVALID_PARAMS, "Failed to retrieve task: Task has expired")
        return record

    async def get(self, owner: str, params: t.GetTaskRequestParams) -> t.GetTaskResult:
        """Answer ``tasks/get``.  Raises McpError -32602 (see :meth:`_find`)."""
        # Spec: 2025-11-25/basic/utilities/tasks#ttl-and-resource-management.4
        # "Receivers MUST include the actual `ttl` duration (or `null` for unlimited) in
        # `tasks/get` responses."
        return _task(t.GetTaskResult, await self._find(self.store_here(), owner, params.task_id))

    async def result(self, owner: str, params: t.GetTaskPayloadRequestParams) -> Any:
        """Answer ``tasks/result``: wait for the end (module docstring), then the
        tool's result with the related-task ``_meta``.

        Raises:
            McpError: -32602 (see :meth:`_find`); the tool's own JSON-RPC error.
        """
        store = self.store_here()
        record = await self._find(store, owner, params.task_id)
        # Spec: 2025-11-25/basic/utilities/tasks#result-retrieval.4
        # "When a receiver receives a `tasks/result` request for a task in any other
        # non-terminal status (`working` or `input_required`), it MUST block the response
        # until the task reaches a terminal status."
        while not record.terminal:
            run = self._running.get(record.task_id)
            if run is not None:
                await run.done.wait()  # ours: its runner wakes us once it is stored
            else:  # another process runs it: read the store again (bounded by the TTL)
                await trio.sleep(max((record.poll_ms or 0) / 1000, MIN_POLL_SECONDS))
            record = await self._find(store, owner, params.task_id)
        outcome = json.loads(record.result or _CANCELLED)
        if "error" in outcome:
            # Spec: 2025-11-25/basic/utilities/tasks#task-execution-errors.2
            # "If the underlying request resulted in a JSON-RPC error, `tasks/result` MUST
            # return that same JSON-RPC error."
            error = outcome["error"]
            raise McpError(error["code"], error["message"], error.get("data"))
        # Spec: 2025-11-25/basic/utilities/tasks#result-retrieval.3
        # "it MUST return the final result of the underlying request, whether that is a
        # successful result or a JSON-RPC error."
        # Spec: 2025-11-25/basic/utilities/tasks#task-execution-errors.3
        # "If the request completed with a JSON-RPC response, `tasks/result` MUST return a
        # successful JSON-RPC response containing that result."
        # Spec: 2025-11-25/basic/utilities/tasks#result-retrieval.5
        # "receivers MUST return from `tasks/result` exactly what the underlying request
        # would have returned"
        body: dict[str, Any] = outcome["result"]
        meta = dict(body.pop("_meta", None) or {})
        # Spec: 2025-11-25/basic/utilities/tasks#related-task-metadata.3
        # "The `tasks/result` operation MUST include this metadata in its response, as the
        # result structure itself does not contain the task ID."
        meta[RELATED_TASK] = {"taskId": record.task_id}
        return t.GetTaskPayloadResult(meta=meta, extra=body)

    async def list(self, owner: str, params: Any) -> t.ListTasksResult:
        """Answer ``tasks/list``: ``owner``'s unexpired tasks, oldest first, in pages.

        Raises:
            McpError: -32602 for a bad cursor.
        """
        now = self.clock()
        # Spec: 2025-11-25/basic/utilities/tasks#task-isolation-and-access-control.6
        # "For `tasks/list` requests, receivers MUST ensure the returned task list includes
        # only tasks associated with the requestor's authorization context."
        # Spec: 2025-11-25/basic/utilities/tasks#task-listing.4
        # "If a task is retrievable via `tasks/get` for a requestor, it MUST be retrievable
        # via `tasks/list` for that requestor." (the same owner, the same expiry)
        records = [
            r
            for r in await self.store_here().list_tasks(owner)
            if r.owner == owner and not r.expired(now)
        ]
        cursor = getattr(params, "cursor", None)
        try:
            # Spec: 2025-11-25/basic/utilities/tasks#task-listing.2
            # "Receivers MUST include a `nextCursor` in the response if more tasks are
            # available."
            page, next_cursor = paginate(
                records, cursor, tag="tasks/list", page_size=self.page_size
            )
        except InvalidCursor as exc:
            raise McpError(INVALID_PARAMS, exc.message) from None
        return t.ListTasksResult(tasks=[_task(t.Task, r) for r in page], next_cursor=next_cursor)

    async def cancel(self, owner: str, params: t.CancelTaskRequestParams) -> t.CancelTaskResult:
        """Answer ``tasks/cancel``: mark the task cancelled in the store, then stop it
        if it runs here.

        Raises:
            McpError: -32602 (see :meth:`_find`), or the task has ended already.
        """
        store = self.store_here()
        record = await self._find(store, owner, params.task_id)
        if record.terminal:
            # Spec: 2025-11-25/basic/utilities/tasks#task-cancellation.1
            # "Receivers MUST reject cancellation requests for tasks already in a terminal
            # status (`completed`, `failed`, or `cancelled`) with error code `-32602`
            # (Invalid params)."
            raise McpError(
                INVALID_PARAMS, f"Cannot cancel task: already in terminal status {record.status!r}"
            )
        # Spec: 2025-11-25/basic/utilities/tasks#task-cancellation.2
        # "receivers SHOULD attempt to stop the task execution and MUST transition the task
        # to `cancelled` status before sending the response."
        record = await self._put(
            store, record, "cancelled", "The task was cancelled by request.", _CANCELLED
        )
        run = self._running.get(record.task_id)
        if run is not None:
            run.scope.cancel()
        log.info("task %s cancelled", record.task_id)
        return _task(t.CancelTaskResult, record)


async def _outcome(
    work: Callable[[], Awaitable[t.CallToolResult]],
) -> tuple[str, str | None, bytes]:
    """Run ``work``: the task's status, its message and the outcome's JSON bytes."""
    try:
        result = await work()
    except McpError as exc:
        return "failed", exc.message, _outcome_error(exc.code, exc.message, exc.data)
    except Exception as exc:
        log.exception("task failed")
        return (
            "failed",
            f"internal error: {type(exc).__name__}",
            _outcome_error(INTERNAL_ERROR, "internal error"),
        )
    body = json.dumps({"result": unstructure(result)}, separators=(",", ":")).encode()
    if result.is_error:
        text = next((c.text for c in result.content if isinstance(c, t.TextContent)), None)
        return "failed", text or "the tool reported an error", body
    return "completed", None, body


def _task(cls: type[_T], record: TaskRecord) -> _T:
    """``record`` as a ``Task``-shaped result (``Task``, ``GetTaskResult``...)."""
    # Spec: 2025-11-25/basic/utilities/tasks#ttl-and-resource-management.1
    # "Receivers MUST include a `createdAt` ISO 8601-formatted timestamp in all task
    # responses"
    # Spec: 2025-11-25/basic/utilities/tasks#ttl-and-resource-management.2
    # "Receivers MUST include a `lastUpdatedAt` ISO 8601-formatted timestamp in all task
    # responses"
    return cls(  # type: ignore[call-arg]
        task_id=record.task_id,
        status=record.status,
        status_message=record.status_message,
        created_at=iso(record.created_at),
        last_updated_at=iso(record.updated_at),
        ttl=record.ttl_ms,
        poll_interval=record.poll_ms,
    )

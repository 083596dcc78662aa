"""The typed methods of the async clients (trio and asyncio), written once.

Theory of operation
-------------------
Each method builds the typed params of one request (:mod:`mcp_ref.types`), sends it
with the client's own ``request`` and returns the typed result; list methods walk every
page (:class:`~mcp_ref._client.ListWalk`).  Nothing here waits on anything but
``self.request``, so the same code serves the trio client
(:class:`mcp_ref.client.Client`) and the asyncio one
(:class:`mcp_ref.asyncio.ClientSession`): no I/O, no event loop.  What ``request``
checks (a tool's ``outputSchema``, the capability a method needs) is the client
core's (:mod:`mcp_ref._client`).

Every method raises as ``request`` does: McpError for an error response, NoAnswerError
when no answer came in time, SessionClosed when the session ended,
LocalProtocolError when the server did not declare the capability the method needs.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Generator, Mapping
from typing import Any

from . import types as t
from ._client import (
    DEFAULT,
    ClientCore,
    InputRounds,
    ListWalk,
    Timeout,
    page_params,
    typed_params,
)
from ._errors import LocalProtocolError, McpError
from .events import Notification, Progress

__all__ = ["TypedMethods"]


class TypedMethods:
    """The typed MCP methods, over ``request``: a base class of the async clients.

    Source: 2025-06-18/server (the methods a client calls).
    """

    request: Callable[..., Awaitable[Any]]
    """Each client's own ``request(method, params=None, *, timeout=DEFAULT,
    on_progress=None)``: send one request, return its typed result."""

    async def _rounds(
        self,
        core: ClientCore,
        method: str,
        params: Any,
        send: Callable[[Any], Awaitable[Any]],
        now: Callable[[], float],
    ) -> Any:
        """Both clients' ``request``: ``send(params)`` puts one request on the wire and
        returns its result unchecked; ``core`` checks the last one.  An
        ``input_required`` result is answered through ``core``'s handlers (on the clock
        ``now``, seconds) and the request sent again (:class:`InputRounds`); a -32020
        to a ``tools/call`` lists the tools and sends it once more."""
        # Spec: 2026-07-28/basic/patterns/mrtr#client-requirements-basic-workflow.7
        # "They MUST NOT be used for any other request that the client may be sending in parallel."
        # (this request's rounds, and the answers they collect, are its own InputRounds)
        rounds = InputRounds(method, typed_params(method, params))
        params = rounds.params
        while True:  # (more than once only for input_required, or the -32020 relist)
            try:
                # Spec: 2026-07-28/basic/patterns/mrtr#client-requirements-basic-workflow.6
                # "The JSON-RPC `id` MUST be different between the initial request and the retry, as
                # they are independent requests."
                result = await send(params)
            except McpError as exc:
                if not rounds.relist(exc):
                    raise
                await self.list_tools()
                continue
            if not isinstance(result, t.InputRequiredResult):
                return core.check_result(method, rounds.params, result)
            answers = {}
            # Spec: 2026-07-28/basic/patterns/mrtr#client-requirements-basic-workflow.1
            # "If a client receives an `InputRequiredResult` that contains the `inputRequests`
            # field, the client MUST construct the requested inputs before retrying the original
            # request."
            for key, (asked, asked_params) in rounds.asked(result):
                value = core.handle(asked, asked_params, now())
                if inspect.isawaitable(value):
                    value = await value
                answers[key] = core.finish(asked, value)
            params = rounds.retry(answers)

    async def _run_opening(
        self,
        steps: Generator[Any, Any, None],
        notify: Callable[[str, Any], Awaitable[None]],
        timeout: Timeout = DEFAULT,
    ) -> None:
        """Both clients' opening: run the client core's ``opening`` steps
        (:meth:`mcp_ref._client.ClientCore.opening`), each Notification sent with
        ``notify(method, params)``, each request with ``request`` (an McpError is its
        answer too)."""
        answer: Any = None
        while True:
            try:
                step = steps.send(answer)
            except StopIteration:
                return
            if isinstance(step, Notification):
                await notify(step.method, step.params)
                answer = None
                continue
            try:
                answer = await self.request(*step, timeout=timeout)
            except McpError as exc:
                answer = exc

    async def _page(self, method: str, cursor: str | None, timeout: Timeout) -> Any:
        return await self.request(method, page_params(cursor), timeout=timeout)

    async def _walk(self, method: str, timeout: Timeout) -> list[Any]:
        walk = ListWalk(method)
        while (params := walk.next_params()) is not ListWalk.DONE:
            walk.add(await self.request(method, params, timeout=timeout))
        return walk.items

    # ------------------------------------------------------------------------ tools

    async def list_tools(self, *, timeout: Timeout = DEFAULT) -> list[t.Tool]:
        """Every tool of the server, walking all pages; remembers their output schemas.

        Raises:
            RemoteProtocolError: the server repeated a cursor or sent over 1000 pages.

        Source: 2025-06-18/server/tools#listing-tools.
        """
        return await self._walk("tools/list", timeout)

    async def list_tools_page(
        self, cursor: str | None = None, *, timeout: Timeout = DEFAULT
    ) -> t.ListToolsResult:
        """One page of ``tools/list`` (``cursor`` None: the first); remembers the output
        schemas of its tools.  Source: 2025-06-18/server/utilities/pagination."""
        result: t.ListToolsResult = await self._page("tools/list", cursor, timeout)
        return result

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        on_progress: Callable[[Progress], Any] | None = None,
        timeout: Timeout = DEFAULT,
    ) -> t.CallToolResult:
        """Call a tool.

        Args:
            name: the tool's name.
            arguments: its arguments (a JSON object), or None.
            on_progress: called (sync or async) with each :class:`~mcp_ref.Progress`.
            timeout: seconds, a :class:`~mcp_ref.RequestTimeout`, None, or the client's default.

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
        return result

    # -------------------------------------------------------------------- resources

    async def list_resources(self, *, timeout: Timeout = DEFAULT) -> list[t.Resource]:
        """Every resource, walking all pages.
        Source: 2025-06-18/server/resources#listing-resources."""
        return await self._walk("resources/list", timeout)

    async def list_resources_page(
        self, cursor: str | None = None, *, timeout: Timeout = DEFAULT
    ) -> t.ListResourcesResult:
        """One page of ``resources/list``."""
        result: t.ListResourcesResult = await self._page("resources/list", cursor, timeout)
        return result

    async def list_resource_templates(
        self, *, timeout: Timeout = DEFAULT
    ) -> list[t.ResourceTemplate]:
        """Every resource template, walking all pages.
        Source: 2025-06-18/server/resources#resource-templates."""
        return await self._walk("resources/templates/list", timeout)

    async def list_resource_templates_page(
        self, cursor: str | None = None, *, timeout: Timeout = DEFAULT
    ) -> t.ListResourceTemplatesResult:
        """One page of ``resources/templates/list``."""
        result: t.ListResourceTemplatesResult = await self._page(
            "resources/templates/list", cursor, timeout
        )
        return result

    async def read_resource(self, uri: str, *, timeout: Timeout = DEFAULT) -> t.ReadResourceResult:
        """Read a resource.  Raises McpError -32002 when the server has no such resource.
        Source: 2025-06-18/server/resources#reading-resources."""
        result: t.ReadResourceResult = await self.request(
            "resources/read", t.ReadResourceRequestParams(uri=uri), timeout=timeout
        )
        return result

    era: Any
    """Each client's era (``"legacy"``, ``"modern"``, None before it is open)."""
    _subscribed: list[str]
    """Modern era: the URIs :meth:`subscribe` asked for."""

    async def _listen(self, uris: list[str]) -> None:
        """Modern era: (re)open the client's one ``subscriptions/listen`` for ``uris``
        (and the list changes), or close it when ``uris`` is empty; each client's own."""
        raise LocalProtocolError("this client does not keep subscriptions/listen open")

    async def subscribe(self, uri: str, *, timeout: Timeout = DEFAULT) -> None:
        """Subscribe to a resource's ``notifications/resources/updated`` (they arrive at
        ``on_notification``).

        Handshake era: ``resources/subscribe`` (needs the server's
        ``resources.subscribe`` capability).  Modern era: the client keeps one
        ``subscriptions/listen`` open, for every URI subscribed and the list changes,
        and re-opens it with the new filter; this returns once the server acknowledged
        it.

        Source: 2025-06-18/server/resources#subscriptions;
        2026-07-28/basic/patterns/subscriptions.
        """
        if getattr(self, "era", None) == "modern":
            uris = getattr(self, "_subscribed", [])
            self._subscribed = [*uris, uri] if uri not in uris else uris
            await self._listen(self._subscribed)
            return
        await self.request(
            "resources/subscribe", t.SubscribeRequestParams(uri=uri), timeout=timeout
        )

    async def unsubscribe(self, uri: str, *, timeout: Timeout = DEFAULT) -> None:
        """Cancel a subscription (modern era: re-open the listen without ``uri``).
        Source: 2025-06-18/server/resources#subscriptions."""
        if getattr(self, "era", None) == "modern":
            self._subscribed = [u for u in getattr(self, "_subscribed", []) if u != uri]
            await self._listen(self._subscribed)
            return
        await self.request(
            "resources/unsubscribe", t.UnsubscribeRequestParams(uri=uri), timeout=timeout
        )

    # ---------------------------------------------------------------------- prompts

    async def list_prompts(self, *, timeout: Timeout = DEFAULT) -> list[t.Prompt]:
        """Every prompt, walking all pages.  Source: 2025-06-18/server/prompts#listing-prompts."""
        # Spec: 2025-06-18/server/prompts#implementation-considerations.2
        # "Clients SHOULD handle pagination for large prompt lists"
        return await self._walk("prompts/list", timeout)

    async def list_prompts_page(
        self, cursor: str | None = None, *, timeout: Timeout = DEFAULT
    ) -> t.ListPromptsResult:
        """One page of ``prompts/list``."""
        result: t.ListPromptsResult = await self._page("prompts/list", cursor, timeout)
        return result

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: Timeout = DEFAULT,
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
        timeout: Timeout = DEFAULT,
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

    def _log_level(self, level: t.LoggingLevel) -> None:
        """Modern era: put ``level`` in every request's ``_meta`` (each client's own)."""
        raise LocalProtocolError("this client has no per-request log level")

    async def set_logging_level(self, level: t.LoggingLevel, *, timeout: Timeout = DEFAULT) -> None:
        """Ask the server to send log messages of ``level`` and above (``"debug"`` ...
        ``"emergency"``); they arrive at ``on_log``.  Handshake era: ``logging/setLevel``;
        modern era: every request from now names the level in its ``_meta`` (the
        server sends log messages only while it answers such a request).
        Source: 2025-06-18/server/utilities/logging#setting-log-level;
        2026-07-28/server/utilities/logging#per-request-log-level."""
        if getattr(self, "era", None) == "modern":
            self._log_level(level)
            return
        await self.request(
            "logging/setLevel", t.SetLevelRequestParams(level=level), timeout=timeout
        )

    async def ping(self, *, timeout: Timeout = DEFAULT) -> None:
        """Check the server is alive.  Source: 2025-06-18/basic/utilities/ping."""
        await self.request("ping", timeout=timeout)

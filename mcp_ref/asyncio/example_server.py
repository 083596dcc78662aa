"""A small MCP server on :func:`mcp_ref.asyncio.serve_stdio`: run
``python -m mcp_ref.asyncio.example_server``.

It shows the handler side of the asyncio driver (one's own dispatch on
``ctx.method``) and gives the tests a server to talk to.  Its tools:

* ``echo(text)``: returns ``text``;
* ``sleep(seconds)``: waits, reporting progress once a second; records the
  cancellation if the client cancels it;
* ``cancellations()``: the ``[request id, reason]`` of every cancelled ``sleep``, as JSON;
* ``fail()``: raises an ordinary exception (the client gets -32603).

``tools/list`` answers two tools per page, so clients must follow ``nextCursor``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from .. import types as t
from .._errors import INVALID_PARAMS, METHOD_NOT_FOUND, McpError
from .._pagination import paginate
from ..events import Notification
from ._stdio import RequestContext, serve_stdio

__all__ = ["ExampleHandler", "main"]

_OBJECT = {"type": "object"}
TOOLS = [
    t.Tool(
        name="echo",
        description="Return the text.",
        input_schema={**_OBJECT, "properties": {"text": {"type": "string"}}, "required": ["text"]},
    ),
    t.Tool(
        name="sleep",
        description="Wait for some seconds.",
        input_schema={**_OBJECT, "properties": {"seconds": {"type": "number"}}},
    ),
    t.Tool(name="cancellations", description="Cancelled sleeps, as JSON.", input_schema=_OBJECT),
    t.Tool(name="fail", description="Raise an exception.", input_schema=_OBJECT),
]


def _text(text: str) -> t.CallToolResult:
    return t.CallToolResult(content=[t.TextContent(text=text)])


class ExampleHandler:
    """The example's :class:`~mcp_ref.asyncio.Handler`."""

    def __init__(self) -> None:
        self.cancelled: list[tuple[Any, str | None]] = []

    async def handle_request(self, ctx: RequestContext) -> Any:
        """Answer ``tools/list`` and ``tools/call``; -32601 for anything else."""
        if ctx.method == "tools/list":
            cursor = ctx.params.cursor if ctx.params is not None else None
            try:
                page, nxt = paginate(TOOLS, cursor, tag="tools", page_size=2)
            except ValueError as exc:
                raise McpError(INVALID_PARAMS, str(exc)) from None
            return t.ListToolsResult(tools=page, next_cursor=nxt)
        if ctx.method == "tools/call":
            return await self._call(ctx, ctx.params.name, ctx.params.arguments or {})
        raise McpError(METHOD_NOT_FOUND, f"not handled: {ctx.method}")

    async def _call(self, ctx: RequestContext, name: str, args: dict[str, Any]) -> Any:
        if name == "echo":
            return _text(str(args.get("text", "")))
        if name == "sleep":
            seconds = float(args.get("seconds", 1.0))
            try:
                for step in range(int(seconds)):
                    await asyncio.sleep(1.0)
                    await ctx.report_progress(step + 1, total=seconds)
                await asyncio.sleep(seconds - int(seconds))
            except asyncio.CancelledError:
                if ctx.cancelled:
                    self.cancelled.append((ctx.request_id, ctx.cancel_reason))
                raise
            return _text(f"slept {seconds} s")
        if name == "cancellations":
            return _text(json.dumps(self.cancelled))
        if name == "fail":
            raise RuntimeError("the fail tool failed, as asked")
        # An unknown tool is a protocol error, -32602 (2025-06-18/server/tools#error-handling).
        raise McpError(INVALID_PARAMS, f"unknown tool: {name}")

    async def handle_notification(self, notification: Notification) -> None:
        """Nothing to do for any notification."""


def main() -> None:
    """Serve the example on stdin/stdout until the client closes it."""
    asyncio.run(
        serve_stdio(
            ExampleHandler(),
            server_info=t.Implementation(name="mcp-ref-asyncio-example", version="0.1.0"),
            capabilities=t.ServerCapabilities(tools=t.ServerCapabilitiesTools()),
        )
    )


if __name__ == "__main__":
    main()

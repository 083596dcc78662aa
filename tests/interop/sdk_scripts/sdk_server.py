"""An MCP server written with the official Python SDK, served on stdio, for our client.

Runs inside the separate SDK virtualenv (``tests/interop/peers.py: python_sdk_python()``);
it imports ``mcp`` and nothing of ``mcp_ref``.

Usage::

    <sdk python> sdk_server.py [mcpserver|lowlevel]

``mcpserver`` (the default) uses the SDK's high-level ``mcp.server.MCPServer``:

* tools ``add(a: int, b: int) -> int`` (structured: ``{"result": a + b}``),
  ``forecast(city: str) -> Forecast`` (structured object with an output schema),
  ``count_to(n: int)`` (progress ``i`` of ``n`` and one ``info`` log per step, then text),
  ``explode()`` (raises, so the result has ``isError: true``);
* resources ``sdk://greeting`` (text), ``sdk://logo`` (bytes, ``image/png``) and the template
  ``sdk://items/{item_id}`` (JSON text);
* prompt ``review(code, language="python")``, with completions for ``language``.

``lowlevel`` uses ``mcp.server.lowlevel.Server`` to send what the high-level API would
never send:

* ``tools/list`` in two pages (the first has ``nextCursor``);
* tool ``honest`` with an ``outputSchema`` ``{count: integer}`` and structured content
  that matches it, and tool ``liar`` with the same schema and ``{"count": "many"}``, which
  a client should reject (2025-06-18/server/tools#output-schema.2).
"""

# No ``from __future__ import annotations``: MCPServer reads the tools' annotations at
# run time, and they must resolve to real classes.
import json
import sys
import warnings
from typing import Any

import anyio
from mcp import types as mt
from mcp.server import MCPServer
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context
from mcp.server.stdio import stdio_server
from pydantic import BaseModel, Field

warnings.simplefilter("ignore")  # the SDK's deprecation notes (logging, SEP-2577) on stderr

LOGO_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de"
    "0000000c4944415478da63f8cfc000000301010018dd8db00000000049454e44ae426082"
)
"""A 1x1 PNG (the bytes the test expects back from ``sdk://logo``)."""

COUNT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"count": {"type": "integer"}},
    "required": ["count"],
}


class Forecast(BaseModel):
    """A made-up forecast."""

    city: str
    temperature: float = Field(description="degrees Celsius")
    conditions: str


def run_mcpserver() -> None:
    """Serve the high-level (MCPServer) variant on stdio until stdin ends."""
    app = MCPServer("sdk-interop-server", version="9.9.9", instructions="An SDK test server.")

    @app.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @app.tool()
    def forecast(city: str) -> Forecast:
        """A made-up forecast for a city."""
        return Forecast(city=city, temperature=21.5, conditions="Sunny")

    @app.tool()
    async def count_to(n: int, ctx: Context) -> str:
        """Count to n, reporting progress and logging each step."""
        for i in range(1, n + 1):
            await ctx.info(f"step {i}")
            await ctx.report_progress(i, n, f"step {i} of {n}")
        return f"counted to {n}"

    @app.tool()
    def explode() -> str:
        """Always fails."""
        raise ValueError("the tool exploded on purpose")

    @app.resource("sdk://greeting", mime_type="text/plain")
    def greeting() -> str:
        """A greeting."""
        return "Hello from the Python SDK"

    @app.resource("sdk://logo", mime_type="image/png")
    def logo() -> bytes:
        """A tiny PNG."""
        return LOGO_PNG

    @app.resource("sdk://items/{item_id}", mime_type="application/json")
    def item(item_id: str) -> str:
        """One item, by id."""
        return json.dumps({"id": item_id, "source": "sdk"})

    @app.prompt()
    def review(code: str, language: str = "python") -> str:
        """Ask for a code review."""
        return f"Please review this {language} code:\n{code}"

    @app.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> mt.Completion | None:
        if isinstance(ref, mt.PromptReference) and argument.name == "language":
            values = [v for v in ("python", "perl", "rust") if v.startswith(argument.value)]
            return mt.Completion(values=values, total=len(values), has_more=False)
        return None

    app.run("stdio")


def run_lowlevel() -> None:
    """Serve the low-level variant on stdio until stdin ends."""
    tools = [
        mt.Tool(
            name="honest",
            description="Structured content that matches the output schema.",
            input_schema={"type": "object", "properties": {}},
            output_schema=COUNT_SCHEMA,
        ),
        mt.Tool(
            name="liar",
            description="Structured content that does NOT match the output schema.",
            input_schema={"type": "object", "properties": {}},
            output_schema=COUNT_SCHEMA,
        ),
    ]

    async def list_tools(ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
        cursor = params.cursor if params is not None else None
        if cursor is None:
            return mt.ListToolsResult(tools=tools[:1], next_cursor="page-2")
        if cursor == "page-2":
            return mt.ListToolsResult(tools=tools[1:])
        raise ValueError(f"bad cursor {cursor!r}")

    async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        count: Any = 3 if params.name == "honest" else "many"
        return mt.CallToolResult(
            content=[mt.TextContent(type="text", text=json.dumps({"count": count}))],
            structured_content={"count": count},
        )

    server = Server(
        "sdk-lowlevel-server", version="9.9.9", on_list_tools=list_tools, on_call_tool=call_tool
    )

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "mcpserver"
    if mode == "mcpserver":
        run_mcpserver()
    elif mode == "lowlevel":
        run_lowlevel()
    else:
        print(f"unknown mode {mode!r}; use mcpserver or lowlevel", file=sys.stderr)
        sys.exit(2)

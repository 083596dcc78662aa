"""An MCP server written with the official Python SDK, served on stdio, for our client.

Runs inside the separate SDK virtualenv (``tests/interop/peers.py: python_sdk_python()``);
it imports ``mcp`` and nothing of ``mcp_ref``.

Usage::

    <sdk python> sdk_server.py [mcpserver|lowlevel|modern] [--http | --http-json]

On stdio by default.  With ``--http`` (SSE answers) or ``--http-json`` (JSON answers) the
server is the SDK's Streamable HTTP app under uvicorn on a free loopback port; its first
line on stdout is the endpoint's URL (``http://127.0.0.1:<port>/mcp``).  Either way the
SDK serves both eras: the client's first request (or its ``MCP-Protocol-Version`` header
over HTTP) decides between the ``initialize`` handshake and 2026-07-28.

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

``modern`` is ``mcpserver`` plus handlers that ask the client for input the 2026-07-28
way, by returning an ``InputRequiredResult`` (2026-07-28/basic/patterns/mrtr) and reading
the answers from ``ctx.input_responses`` on the retry:

* tool ``ask_name()``: one elicitation (``name``, message ``"Your name?"``), then text
  ``"Hello, <name>!"`` (or ``"Hello, stranger (<action>)"`` when not accepted);
* tool ``interview()``: round 1 asks for sampling and the roots together, round 2 (with
  ``requestState`` ``"round-2"``) an elicitation ``"Confirm?"``; its text reports all three;
* tool ``touch(uri)``: publishes ``notifications/resources/updated`` for ``uri`` to the
  ``subscriptions/listen`` streams (2026-07-28/basic/patterns/subscriptions);
* prompt ``personal_greeting()``: one elicitation, then a message naming the answer;
* template ``sdk://vault/{key}``: one elicitation for a ``password``, then the secret.
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


def build_mcpserver() -> MCPServer:
    """The high-level (MCPServer) variant."""
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

    return app


NAME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}


def elicit(message: str, schema: dict[str, Any]) -> mt.ElicitRequest:
    """An embedded elicitation/create request (form mode)."""
    return mt.ElicitRequest(
        params=mt.ElicitRequestFormParams(message=message, requested_schema=schema)
    )


def answer(ctx: Context, key: str) -> Any:
    """The client's answer to the input request ``key`` on this retry, or None."""
    return (ctx.input_responses or {}).get(key)


def add_input_handlers(app: MCPServer) -> None:
    """The handlers of the ``modern`` mode, which ask for input with InputRequiredResult."""

    @app.tool()
    def ask_name(ctx: Context) -> str | mt.InputRequiredResult:
        """Ask the user's name, then greet them."""
        reply = answer(ctx, "name")
        if reply is None:
            return mt.InputRequiredResult(
                input_requests={"name": elicit("Your name?", NAME_SCHEMA)},
                request_state="asked-name",
            )
        if ctx.request_state != "asked-name":
            raise ValueError(f"requestState came back as {ctx.request_state!r}")
        if reply.action != "accept" or not reply.content:
            return f"Hello, stranger ({reply.action})"
        return f"Hello, {reply.content['name']}!"

    @app.tool()
    def interview(ctx: Context) -> str | mt.InputRequiredResult:
        """Two rounds: sampling and roots together, then a confirmation."""
        if ctx.request_state is None:
            prompt = mt.SamplingMessage(
                role="user", content=mt.TextContent(type="text", text="Say hi")
            )
            requests: dict[str, Any] = {
                "llm": mt.CreateMessageRequest(
                    params=mt.CreateMessageRequestParams(messages=[prompt], max_tokens=20)
                ),
                "roots": mt.ListRootsRequest(),
            }
            return mt.InputRequiredResult(input_requests=requests, request_state="round-1")
        if ctx.request_state == "round-1":
            llm, roots = answer(ctx, "llm"), answer(ctx, "roots")
            said = llm.content.text if isinstance(llm, mt.CreateMessageResult) else repr(llm)
            uris = (
                [str(r.uri) for r in roots.roots] if isinstance(roots, mt.ListRootsResult) else []
            )
            schema = {
                "type": "object",
                "properties": {"ok": {"type": "boolean"}},
                "required": ["ok"],
            }
            # Round 2 carries what round 1 learnt in its (sealed) requestState.
            state = json.dumps({"said": said, "roots": uris})
            return mt.InputRequiredResult(
                input_requests={"confirm": elicit("Confirm?", schema)}, request_state=state
            )
        learnt = json.loads(ctx.request_state)
        confirm = answer(ctx, "confirm")
        ok = (
            confirm is not None
            and confirm.action == "accept"
            and bool((confirm.content or {}).get("ok"))
        )
        return json.dumps({**learnt, "confirmed": ok})

    @app.tool()
    async def touch(uri: str, ctx: Context) -> str:
        """Tell ``subscriptions/listen`` subscribers that ``uri`` changed."""
        await ctx.notify_resource_updated(uri)
        return f"touched {uri}"

    @app.prompt()
    def personal_greeting(ctx: Context) -> str | mt.InputRequiredResult:
        """A greeting for whoever the user says they are."""
        reply = answer(ctx, "name")
        if reply is None:
            return mt.InputRequiredResult(
                input_requests={"name": elicit("Your name?", NAME_SCHEMA)}
            )
        name = reply.content["name"] if reply.action == "accept" and reply.content else "stranger"
        return f"Please greet {name} warmly."

    @app.resource("sdk://vault/{key}", mime_type="text/plain")
    def vault(key: str, ctx: Context) -> str | mt.InputRequiredResult:
        """A secret, for the right password."""
        reply = answer(ctx, "password")
        if reply is None:
            schema = {
                "type": "object",
                "properties": {"password": {"type": "string"}},
                "required": ["password"],
            }
            return mt.InputRequiredResult(
                input_requests={"password": elicit(f"Password for {key}?", schema)}
            )
        if reply.action == "accept" and (reply.content or {}).get("password") == "open sesame":
            return f"the secret of {key}"
        return "access denied"


def serve(app: MCPServer, how: str) -> None:
    """Serve ``app`` on stdio (``how`` empty) or Streamable HTTP (``--http``, ``--http-json``)
    on a free loopback port, printing the URL first; until stdin ends or SIGTERM."""
    if not how:
        app.run("stdio")
        return
    import socket

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)  # connections wait in the backlog until uvicorn accepts them
    port = sock.getsockname()[1]
    http_app = app.streamable_http_app(json_response=how == "--http-json")
    server = uvicorn.Server(uvicorn.Config(http_app, log_level="warning"))
    print(f"http://127.0.0.1:{port}/mcp", flush=True)
    anyio.run(lambda: server.serve(sockets=[sock]))


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
    how = sys.argv[2] if len(sys.argv) > 2 else ""
    if how not in ("", "--http", "--http-json") or (how and mode == "lowlevel"):
        print(
            f"unknown transport {how!r}; use --http or --http-json (not with lowlevel)",
            file=sys.stderr,
        )
        sys.exit(2)
    if mode == "mcpserver":
        serve(build_mcpserver(), how)
    elif mode == "modern":
        modern = build_mcpserver()
        add_input_handlers(modern)
        serve(modern, how)
    elif mode == "lowlevel":
        run_lowlevel()
    else:
        print(f"unknown mode {mode!r}; use mcpserver, lowlevel or modern", file=sys.stderr)
        sys.exit(2)

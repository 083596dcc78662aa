"""A tiny MCP server over stdio, run as a child process by the stdio and client tests.

Usage: ``python tests/_stdio_server.py [MODE]`` where MODE is

* ``normal``   -- answers initialize and a few tools, exits at end of input;
* ``stubborn`` -- like normal, but ignores SIGTERM and does not exit at end of input;
* ``garbage``  -- writes non-JSON lines to stdout before every answer (a broken server).

Tools: ``echo`` (returns its arguments as text), ``crash`` (writes to stderr and exits
with code 3 without answering), ``silent`` (never answers), ``progress`` (three progress
notifications), ``structured`` (structuredContent ``arguments["value"]``, outputSchema
``{"n": integer}``), ``log`` (a notifications/message), ``sample`` / ``roots`` /
``elicit`` (ask the client and return its answer as text).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import trio

from mcp_ref import McpError
from mcp_ref import types as t
from mcp_ref._pagination import paginate
from mcp_ref.events import Notification
from mcp_ref.trio import RequestContext, Session, serve_stdio

MODE = "normal"  # set by main() from argv; importers (in-memory tests) get "normal"

CAPS = t.ServerCapabilities(
    tools=t.ServerCapabilitiesTools(list_changed=True),
    logging={},
    resources=t.ServerCapabilitiesResources(subscribe=True, list_changed=True),
    prompts=t.ServerCapabilitiesPrompts(),
    completions={},
)

OBJECT = {"type": "object"}
TOOLS = [
    t.Tool(name="echo", input_schema=OBJECT),
    t.Tool(name="crash", input_schema=OBJECT),
    t.Tool(name="silent", input_schema=OBJECT),
    t.Tool(name="progress", input_schema=OBJECT),
    t.Tool(
        name="structured",
        input_schema=OBJECT,
        output_schema={
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
        },
    ),
    t.Tool(name="log", input_schema=OBJECT),
    t.Tool(name="sample", input_schema=OBJECT),
    t.Tool(name="roots", input_schema=OBJECT),
    t.Tool(name="elicit", input_schema=OBJECT),
] + [t.Tool(name=f"extra{i}", input_schema=OBJECT) for i in range(5)]


def text(value: str) -> t.CallToolResult:
    return t.CallToolResult(content=[t.TextContent(text=value)])


class Handler:
    async def handle_request(self, ctx: RequestContext) -> Any:
        if MODE == "garbage":
            os.write(1, b'this is not JSON\n{"half": \n')
        m, p = ctx.method, ctx.params
        if m == "initialize":
            return t.InitializeResult(
                protocol_version=ctx.session.connection.negotiated_version_for(p.protocol_version),
                capabilities=CAPS,
                server_info=t.Implementation(name="stdio-test-server", version="0.1"),
                instructions="test server",
            )
        if m == "tools/list":
            page, nxt = paginate(TOOLS, p.cursor if p else None, tag="tools", page_size=4)
            return t.ListToolsResult(tools=page, next_cursor=nxt)
        if m == "resources/list":
            return t.ListResourcesResult(resources=[t.Resource(uri="mem://a", name="a")])
        if m == "resources/templates/list":
            return t.ListResourceTemplatesResult(
                resource_templates=[t.ResourceTemplate(uri_template="mem://{x}", name="x")]
            )
        if m == "resources/read":
            if p.uri != "mem://a":
                raise McpError(-32002, "resource not found", {"uri": p.uri})
            return t.ReadResourceResult(contents=[t.TextResourceContents(uri=p.uri, text="hello")])
        if m in ("resources/subscribe", "resources/unsubscribe"):
            subs = ctx.session.app_state.setdefault("subs", set())
            (subs.add if m.endswith("/subscribe") else subs.discard)(p.uri)
            if m.endswith("/subscribe"):
                await ctx.session.send_notification(
                    "notifications/resources/updated",
                    t.ResourceUpdatedNotificationParams(uri=p.uri),
                )
            return t.Result()
        if m == "prompts/list":
            return t.ListPromptsResult(prompts=[t.Prompt(name="greet")])
        if m == "prompts/get":
            who = (p.arguments or {}).get("who", "nobody")
            return t.GetPromptResult(
                messages=[t.PromptMessage(role="user", content=t.TextContent(text=f"hi {who}"))]
            )
        if m == "completion/complete":
            return t.CompleteResult(
                completion=t.CompleteResultCompletion(
                    values=[
                        p.argument.value + "1",
                        json.dumps(p.context.arguments if p.context else None),
                    ]
                )
            )
        if m == "logging/setLevel":
            ctx.session.app_state["level"] = p.level
            await ctx.session.send_notification(
                "notifications/message",
                t.LoggingMessageNotificationParams(level="notice", data=f"level {p.level}"),
            )
            return t.Result()
        if m == "tools/call":
            return await self.call(ctx, p.name, p.arguments or {})
        raise McpError(-32601, f"no {m}")

    async def call(self, ctx: RequestContext, name: str, args: dict[str, Any]) -> Any:
        if name == "echo":
            return text(json.dumps(args))
        if name == "crash":
            sys.stderr.write("about to crash: boom\n")
            sys.stderr.flush()
            os._exit(3)
        if name == "silent":
            await trio.sleep_forever()
        if name == "progress":
            for i in (1, 2, 3):
                await ctx.report_progress(i, 3)
            return text("done")
        if name == "structured":
            return t.CallToolResult(
                content=[t.TextContent(text=json.dumps(args.get("value")))],
                structured_content=args.get("value"),
            )
        if name == "log":
            await ctx.send_notification(
                "notifications/message",
                t.LoggingMessageNotificationParams(level="info", logger="test", data=args),
            )
            await ctx.session.send_notification("notifications/tools/list_changed")
            return text("logged")
        if name == "sample":
            res = await ctx.send_request(
                "sampling/createMessage",
                t.CreateMessageRequestParams(
                    messages=[t.SamplingMessage(role="user", content=t.TextContent(text="q"))],
                    max_tokens=3,
                ),
            )
            return text(res.content.text)
        if name == "roots":
            res = await ctx.send_request("roots/list")
            return text(json.dumps([r.uri for r in res.roots]))
        if name == "elicit":
            res = await ctx.send_request(
                "elicitation/create",
                t.ElicitRequestFormParams(
                    message="name?",
                    requested_schema=t.ElicitRequestFormParamsRequestedSchema(
                        properties={"name": t.StringSchema()}
                    ),
                ),
            )
            return text(json.dumps([res.action, res.content]))
        raise McpError(-32602, f"unknown tool {name}")

    async def handle_notification(self, session: Session, notification: Notification) -> None:
        if notification.method == "notifications/roots/list_changed":
            sys.stderr.write("roots changed\n")
            sys.stderr.flush()


def main() -> None:
    global MODE
    MODE = sys.argv[1] if len(sys.argv) > 1 else "normal"
    if MODE == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.stderr.write(f"test server starting in {MODE} mode\n")
    sys.stderr.flush()
    trio.run(serve_stdio, Handler())
    sys.stderr.write("test server: end of input\n")
    sys.stderr.flush()
    if MODE == "stubborn":
        while True:
            time.sleep(60)


if __name__ == "__main__":
    main()

// A tiny MCP server on the official TypeScript SDK, for `python -m bench --compare`.
// One tool, echo(text) -> text, over stdio: the same tool every bench row uses.
// The bench copies this file into the SDK's npm prefix (the peers cache) before
// running it, so node resolves the bare package imports below from there.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "bench-echo-ts", version: "1.0.0" });

server.registerTool(
  "echo",
  { description: "Return the text unchanged.", inputSchema: { text: z.string() } },
  async ({ text }) => ({ content: [{ type: "text", text }] }),
);

await server.connect(new StdioServerTransport());

"""A client that starts examples/notes_server.py as a child process and uses it.

    python examples/notes_client.py

It lists the server's tools, calls one, reads a resource through its template and gets
a prompt: the whole round of an MCP session over stdio, then a clean shutdown.
"""

from __future__ import annotations

import sys
from pathlib import Path

import trio

from mcp_ref.client import open_stdio_client

SERVER = [sys.executable, str(Path(__file__).with_name("notes_server.py"))]


async def main() -> None:
    async with open_stdio_client(SERVER) as client:
        tools = await client.list_tools()
        print("tools:", [tool.name for tool in tools])
        result = await client.call_tool("add_note", {"name": "todo", "text": "buy milk"})
        print("add_note:", result.content[0].text)
        read = await client.read_resource("note://todo")
        print("note://todo:", read.contents[0].text)
        prompt = await client.get_prompt("summarize", {"name": "todo"})
        print("prompt:", prompt.messages[0].content.text.splitlines()[0])


if __name__ == "__main__":
    trio.run(main)

"""A client for plain scripts: no async, no event loop (``mcp_ref.blocking``).

    python examples/blocking_client.py

Every call waits on this thread until the server answers (or the timeout passes).  The
protocol decisions are the same sans-IO client core's as the trio and asyncio clients'.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcp_ref.blocking import connect_stdio

SERVER = [sys.executable, str(Path(__file__).with_name("notes_server.py"))]

with connect_stdio(SERVER, timeout=30) as client:
    print("tools:", [tool.name for tool in client.list_tools()])
    result = client.call_tool("add_note", {"name": "todo", "text": "buy milk"})
    print("add_note:", result.content[0].text)
    # Any request by its method name, with its params in wire form:
    read = client.request("resources/read", {"uri": "note://todo"})
    print("note://todo:", read.contents[0].text)
# Leaving the block closes the server's stdin and waits for it to exit.

"""A small MCP server over stdio: a tool, a resource template and a prompt.

Run it under any MCP client, e.g. the client beside it::

    python examples/notes_client.py

or by itself (it then waits for a client on stdin)::

    python examples/notes_server.py
"""

from __future__ import annotations

from mcp_ref.server import Context, Server

server = Server("notes", "1.0")
notes: dict[str, str] = {}


@server.tool()
async def add_note(name: str, text: str, ctx: Context) -> str:
    """Keep a note under a name, and say how many notes there are now."""
    notes[name] = text
    await ctx.log("info", f"kept note {name!r}")
    return f"{len(notes)} note(s)"


@server.resource_template("note://{name}")
def read_note(name: str) -> str:
    """The text of one note."""
    return notes[name]


@server.prompt()
def summarize(name: str) -> str:
    """Ask the model to summarize one note."""
    return f"Summarize this note in one sentence:\n\n{notes.get(name, '')}"


if __name__ == "__main__":
    server.run_stdio()

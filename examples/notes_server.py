"""A small MCP server over stdio: tools, a resource template and a prompt.

Run it under any MCP client, e.g. one of the clients beside it::

    python examples/notes_client.py

or by itself (it then waits for a client on stdin)::

    python examples/notes_server.py

``notes_http.py`` serves this same server over HTTP.
"""

from __future__ import annotations

import logging

from mcp_ref.server import ClientLogHandler, Context, Server
from mcp_ref.types import TextContent

server = Server("notes", "1.0")
notes: dict[str, str] = {}

# Python logging records emitted while a tool runs go to that tool's client as MCP log
# messages (at the level the client asked for with logging/setLevel).
log = logging.getLogger("notes")
log.addHandler(ClientLogHandler())
log.setLevel(logging.INFO)


@server.tool()
def add_note(name: str, text: str) -> str:
    """Keep a note under a name, and say how many notes there are now."""
    notes[name] = text
    log.info("kept note %r", name)  # -> notifications/message to the client
    return f"{len(notes)} note(s)"


@server.tool()
async def summarize_note(name: str, ctx: Context) -> str:
    """Ask the client's language model for a one-line summary of a note (sampling)."""
    answer = await ctx.sample(f"Summarize in one line:\n\n{notes[name]}", max_tokens=50)
    return answer.content.text if isinstance(answer.content, TextContent) else "(no text)"


@server.tool()
async def forget_note(name: str, ctx: Context) -> str:
    """Forget a note once the user confirms it (elicitation)."""
    answer = await ctx.elicit(
        f"Forget the note {name!r}?",
        {"type": "object", "properties": {"sure": {"type": "boolean"}}, "required": ["sure"]},
    )
    if answer.action == "accept" and answer.content and answer.content["sure"]:
        notes.pop(name, None)
        return f"forgot {name!r}"
    return f"kept {name!r}"


@server.resource_template("note://{name}")
def read_note(name: str) -> str:
    """The text of one note."""
    return notes[name]


@server.prompt()
def summarize(name: str) -> str:
    """Ask the model to summarize one note."""
    return f"Summarize this note in one sentence:\n\n{notes.get(name, '')}"


if __name__ == "__main__":
    server.run()  # stdio until the client closes it (or Ctrl-C)

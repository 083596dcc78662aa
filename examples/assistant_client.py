"""A client that answers the server's own requests: sampling and elicitation.

    python examples/assistant_client.py

A server may ask its client for two things in the middle of a tool call: a completion
from the client's language model (``sampling/createMessage``) and an answer from the
user (``elicitation/create``).  A client offers them by passing a handler for each;
mcp-ref then declares the ``sampling`` and ``elicitation`` capabilities for it.

Here the "model" and the "user" are stand-ins written in a few lines; a real client
calls its LLM and shows the user a form (and lets the user refuse).
"""

from __future__ import annotations

import sys
from pathlib import Path

import trio

from mcp_ref import types as t
from mcp_ref.client import open_stdio_client

SERVER = [sys.executable, str(Path(__file__).with_name("notes_server.py"))]


def sample(params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
    """The server asks our model for a completion: answer like a (very small) model."""
    prompt = params.messages[-1].content
    text = prompt.text if isinstance(prompt, t.TextContent) else ""
    last_line = text.strip().splitlines()[-1]
    return t.CreateMessageResult(
        role="assistant", content=t.TextContent(text=f"A note: {last_line}"), model="stand-in"
    )


def elicit(params: t.ElicitRequestFormParams) -> t.ElicitResult:
    """The server asks the user something: show the question, answer "yes"."""
    print("the server asks:", params.message)
    return t.ElicitResult(action="accept", content={"sure": True})


def show_log(params: t.LoggingMessageNotificationParams) -> None:
    """A log message from the server (the notes server forwards its Python logging)."""
    print(f"log [{params.level}] {params.logger}: {params.data}")


async def main() -> None:
    async with open_stdio_client(
        SERVER, sampling_handler=sample, elicitation_handler=elicit, on_log=show_log
    ) as client:
        await client.call_tool("add_note", {"name": "todo", "text": "buy milk"})
        summary = await client.call_tool("summarize_note", {"name": "todo"})
        print("summary:", summary.content[0].text)
        forgot = await client.call_tool("forget_note", {"name": "todo"})
        print("forget_note:", forgot.content[0].text)


if __name__ == "__main__":
    trio.run(main)

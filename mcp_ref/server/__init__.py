"""The high-level MCP server: tools, resources, prompts and completions from plain
Python functions.

Quick start::

    from mcp_ref.server import Context, Server

    server = Server("demo", "1.0")

    @server.tool()
    def add(a: int, b: int) -> int:
        '''Add two numbers.

        Args:
            a: the first number.
            b: the second number.
        '''
        return a + b

    @server.resource("demo://greeting", mime_type="text/plain")
    def greeting() -> str:
        return "hello"

    @server.prompt()
    def review(code: str) -> str:
        '''Ask for a code review.'''
        return f"Please review:\\n{code}"

    if __name__ == "__main__":
        server.run_stdio()

Both eras, one server: a client that opens with ``initialize`` (2024-11-05 to
2025-11-25) and one that names 2026-07-28 in every request's ``_meta`` are served by
the same code.  A handler asks the client for input the same way in both::

    @server.tool()
    async def greet(ctx: Context) -> str:
        answer = await ctx.elicit("Your name?", {"type": "object",
            "properties": {"name": {"type": "string"}}}, key="name")
        return f"Hello, {answer.content['name']}!"

In the handshake era that is an ``elicitation/create`` request; in 2026-07-28 an
``input_required`` answer with a signed ``requestState``, and the handler runs again
on the client's retry, getting the answer back (``Server(state_key=...)`` shares the
signing key between instances).  Caching hints (:class:`CacheHint`) and
``subscriptions/listen`` exist only in 2026-07-28.

The pieces, one module each: :mod:`._server` (the :class:`Server`: registries,
dispatch, capabilities, sessions), :mod:`._tools`, :mod:`._resources` (with
:mod:`._uritemplate`, RFC 6570), :mod:`._prompts`, :mod:`._completion`, :mod:`._logging`,
:mod:`._context` (what a handler gets), :mod:`._log_forward` (Python ``logging`` to
the client), :mod:`._schema` and :mod:`._arguments` (JSON
Schema from annotations, strict argument conversion), :mod:`._functions` (sync/async
calls), :mod:`._content` (content helpers), :mod:`._modern` (the 2026-07-28 era:
discovery, caching hints, input rounds, per-request logging, subscriptions).
"""

from .._ratelimit import RateLimit
from ._completion import MAX_VALUES, CompletionDef
from ._content import (
    assistant,
    audio,
    blob_resource,
    embedded,
    image,
    resource_link,
    text,
    user,
)
from ._context import Context
from ._log_forward import ClientLogHandler, mcp_level
from ._logging import LEVELS, LogPolicy
from ._modern import CacheHint, InputRequired, elicitation, roots, sampling
from ._prompts import PromptDef
from ._resources import ResourceDef, TemplateDef
from ._schema import schema_for
from ._server import DEFAULT_RATE_LIMITS, MAX_COMPLETION_INPUT, ResourceNotFound, Server
from ._tasks import Tasks
from ._tools import ToolDef, ToolError, jsonschema_available
from ._uritemplate import UriTemplate, UriTemplateError

__all__ = [
    "DEFAULT_RATE_LIMITS",
    "LEVELS",
    "MAX_COMPLETION_INPUT",
    "MAX_VALUES",
    "CacheHint",
    "ClientLogHandler",
    "CompletionDef",
    "Context",
    "InputRequired",
    "LogPolicy",
    "PromptDef",
    "RateLimit",
    "ResourceDef",
    "ResourceNotFound",
    "Server",
    "Tasks",
    "TemplateDef",
    "ToolDef",
    "ToolError",
    "UriTemplate",
    "UriTemplateError",
    "assistant",
    "audio",
    "blob_resource",
    "elicitation",
    "embedded",
    "image",
    "jsonschema_available",
    "mcp_level",
    "resource_link",
    "roots",
    "sampling",
    "schema_for",
    "text",
    "user",
]

"""An MCP server as an ASGI application, for any ASGI server::

    hypercorn examples.asgi_server:app                       # asyncio
    hypercorn --worker-class trio examples.asgi_server:app   # trio
    uvicorn examples.asgi_server:app

(from the repository's root; ``--app-dir examples`` and ``asgi_server:app`` work too).
The MCP endpoint is then ``http://127.0.0.1:8000/mcp`` (the 2024-11-05 one
``/sse``), e.g. for ``mcp-ref`` or :func:`mcp_ref.client.open_http_client`.

To serve it inside a Starlette (or FastAPI) application instead, mount it::

    from starlette.applications import Starlette
    from starlette.routing import Mount

    web = Starlette(routes=[Mount("/api", app=app)], lifespan=lambda _: app.running())
    # MCP at /api/mcp; app.running(): its sessions stop with the outer app
"""

from __future__ import annotations

from mcp_ref.asgi import asgi_app
from mcp_ref.server import Context, Server

server = Server("asgi-demo", "1.0")


@server.tool()
async def add(a: int, b: int, ctx: Context) -> int:
    """Add two integers (and log the sum)."""
    await ctx.log("info", f"{a} + {b} = {a + b}")
    return a + b


app = asgi_app(server)
"""The ASGI application: MCP at ``/mcp``, Origin and Host checked for loopback."""

"""The bench's stdio echo server on mcp-ref: ``python -m bench.echo_server [api|session]``.

One tool, ``echo(text) -> text``, like the echo servers the bench runs on the official
SDKs, so the stdio rows compare like with like.

* ``api`` (the default): our high-level server, ``mcp_ref.server.Server``, with the tool
  declared by a decorator, served by ``server.run_stdio()``;
* ``http PORT json|sse``: our high-level server on Streamable HTTP
  (``mcp_ref.trio.serve_http``) at ``http://127.0.0.1:PORT/mcp``, answering with JSON
  bodies or SSE streams;
* ``session``: the trio session layer alone (``mcp_ref.trio.open_session`` over stdin
  and stdout) with a bare handler, for when the high-level server is not built, and to
  show what the high-level server adds.

It writes nothing but MCP messages to stdout; logs go to stderr.  It returns at end of
input.
"""

from __future__ import annotations

import functools
import sys

import trio


async def _serve_session() -> None:
    from mcp_ref import SERVER
    from mcp_ref.trio import StreamChannel, open_session

    from .ours import _EchoHandler

    stdin = trio.lowlevel.FdStream(0)
    stdout = trio.lowlevel.FdStream(1)
    channel = StreamChannel(stdout, stdin)
    async with open_session(channel, SERVER, _EchoHandler()) as session:
        await session.wait_closed()


def main(argv: list[str]) -> int:
    """Serve on stdio until end of input; exit code 0, 2 for a bad argument."""
    layer = argv[0] if argv else "api"
    if layer == "api":
        from .ours import make_echo_server

        server = make_echo_server()
        server.run_stdio()
        return 0
    if layer == "http":
        ok, why = http_server_available()
        if not ok:
            print(f"the HTTP server is not built yet: {why}", file=sys.stderr)
            return 2
        trio.run(_serve_http, int(argv[1]), argv[2] == "json")
        return 0
    if layer == "ws":
        trio.run(_serve_ws, int(argv[1]))
        return 0
    if layer == "session":
        trio.run(_serve_session)
        return 0
    print(
        "usage: python -m bench.echo_server [api|session|http PORT json|sse|ws PORT], "
        f"not {layer!r}",
        file=sys.stderr,
    )
    return 2


def http_server_available() -> tuple[bool, str]:
    """Whether our Streamable HTTP server exists: ``(ok, what is missing)``.

    Looks for ``mcp_ref.trio.serve_http`` (the trio + h11 server driver).
    """
    from .ours import NotBuilt, need

    try:
        need("mcp_ref.trio", "serve_http")
        need("mcp_ref.server", "Server")
    except NotBuilt as exc:
        return False, str(exc)
    return True, ""


async def _serve_http(port: int, json_response: bool) -> None:
    from mcp_ref._http import HttpLimits
    from mcp_ref.trio import serve_http

    from .ours import make_echo_server

    # The bench keeps 100 requests in flight on one session, each POST its own stream,
    # and reuses connections for its whole run (the SDK server has neither bound); in
    # the 2026-07-28 era each of the 100 POSTs in flight holds a session of its own, and
    # up to 128 answered ones wait for the next POST (HttpLimits.max_parked_sessions).
    limits = HttpLimits(
        max_streams_per_session=256,
        stored_streams=256,
        max_requests_per_connection=10**9,
        max_parked_sessions=128,
    )
    async with trio.open_nursery() as nursery:
        info = await nursery.start(
            functools.partial(
                serve_http,
                make_echo_server(),
                "127.0.0.1",
                port,
                json_response=json_response,
                limits=limits,
            )
        )
        print(info.port, flush=True)  # the bound port: the bench reads it (port 0)


async def _serve_ws(port: int) -> None:
    """Serve the echo server over WebSocket; prints the bound port once listening."""
    from mcp_ref.trio import serve_websocket

    from .ours import make_echo_server

    async with trio.open_nursery() as nursery:
        bound = await nursery.start(
            functools.partial(serve_websocket, make_echo_server(), "127.0.0.1", port)
        )
        print(bound, flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

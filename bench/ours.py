"""mcp-ref's own client and server, wired for the end-to-end rows (part 3).

Theory of operation
-------------------
Each ``open_*`` function is an async context manager (run under trio) that yields a
:class:`~bench.load.Target`: ``await target.call(text) -> text``, one ``tools/call`` of
the ``echo`` tool, plus the server's pid when it runs in another process.

* :func:`open_inproc_session`: the trio session layer alone (``mcp_ref.trio.open_session``
  on both sides of :func:`mcp_ref.trio.memory_channel_pair`), with a bench handler that
  answers ``initialize`` and ``tools/call``.  It shows what the high-level client and
  server add on top.
* :func:`open_inproc`: our high-level client and server (``mcp_ref.client`` /
  ``mcp_ref.server``) over the same in-memory channels.
* :func:`open_stdio`: our client starting our server as a subprocess over stdio.
* HTTP and WebSocket: once their drivers exist.

Pieces that are not built yet raise :class:`NotBuilt`, which the table shows as
``n/a (not built yet)``; the check is an import, so a row appears by itself the day its
module lands.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import trio

from mcp_ref import types as t

from .load import Target

__all__ = ["ECHO_SERVER", "NotBuilt", "open_inproc", "open_inproc_session", "open_stdio"]

ROOT = Path(__file__).resolve().parent.parent
ECHO_SERVER = [sys.executable, "-m", "bench.echo_server"]
"""Our stdio echo server command (see :mod:`bench.echo_server`); run from the repo root."""


class NotBuilt(Exception):
    """A piece of mcp-ref this row needs does not exist yet; ``str()`` names it."""


def need(module: str, *names: str) -> Any:
    """Import ``module`` and return it (or the attribute ``names[0]``, ...).

    Raises:
        NotBuilt: the module or a name is missing.
    """
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise NotBuilt(f"{module} ({exc})") from None
    found = []
    for name in names:
        if not hasattr(mod, name):
            raise NotBuilt(f"{module}.{name}")
        found.append(getattr(mod, name))
    if not names:
        return mod
    return found[0] if len(found) == 1 else tuple(found)


_CLIENT_INFO = t.Implementation(name="mcp-ref-bench", version="1")
_SERVER_INFO = t.Implementation(name="mcp-ref-bench-echo", version="1")


class _EchoHandler:
    """A bare session handler: answers ``initialize`` and ``tools/call`` of ``echo``."""

    async def handle_request(self, ctx: Any) -> Any:
        if ctx.method == "tools/call":
            return t.CallToolResult(content=[t.TextContent(text=ctx.params.arguments["text"])])
        if ctx.method == "initialize":
            conn = ctx.session.connection
            return t.InitializeResult(
                protocol_version=conn.negotiated_version_for(ctx.params.protocol_version),
                capabilities=t.ServerCapabilities(tools=t.ServerCapabilitiesTools()),
                server_info=_SERVER_INFO,
            )
        raise need("mcp_ref", "McpError")(-32601, f"method not found: {ctx.method}")

    async def handle_notification(self, session: Any, notification: Any) -> None:
        return None


class _NoHandler:
    async def handle_request(self, ctx: Any) -> Any:
        raise need("mcp_ref", "McpError")(-32601, "the bench client answers nothing")

    async def handle_notification(self, session: Any, notification: Any) -> None:
        return None


@contextlib.asynccontextmanager
async def open_inproc_session() -> AsyncIterator[Target]:
    """Client and server sessions (no high-level API) over in-memory channels."""
    open_session, memory_channel_pair = need("mcp_ref.trio", "open_session", "memory_channel_pair")
    from mcp_ref import CLIENT, SERVER

    a, b = memory_channel_pair(1024)
    async with (
        open_session(b, SERVER, _EchoHandler()) as _server,
        open_session(a, CLIENT, _NoHandler()) as client,
    ):
        await client.send_request(
            "initialize",
            t.InitializeRequestParams(
                protocol_version="2025-06-18",
                capabilities=t.ClientCapabilities(),
                client_info=_CLIENT_INFO,
            ),
        )
        await client.send_notification("notifications/initialized")
        send_request = client.send_request
        Params = t.CallToolRequestParams

        async def call(text: str) -> str:
            result = await send_request("tools/call", Params(name="echo", arguments={"text": text}))
            out: str = result.content[0].text
            return out

        yield Target(call, None, "mcp-ref sessions, in process")


def make_echo_server() -> Any:
    """Our high-level server with the bench's one tool, ``echo(text) -> text``.

    Raises:
        NotBuilt: ``mcp_ref.server.Server`` does not exist yet.
    """
    server_cls = need("mcp_ref.server", "Server")
    server = server_cls("mcp-ref-bench-echo", "1")

    @server.tool()
    async def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    return server


def _text_of(result: Any) -> str:
    out: str = result.content[0].text
    return out


@contextlib.asynccontextmanager
async def open_inproc() -> AsyncIterator[Target]:
    """Our client and our server in this process over in-memory channels."""
    open_client = need("mcp_ref.client", "open_client")
    memory_channel_pair = need("mcp_ref.trio", "memory_channel_pair")
    server = make_echo_server()
    a, b = memory_channel_pair(1024)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.serve, b)
        async with open_client(a) as client:
            call_tool = client.call_tool

            async def call(text: str) -> str:
                return _text_of(await call_tool("echo", {"text": text}))

            yield Target(call, None, "mcp-ref client + server, in process")
        nursery.cancel_scope.cancel()


def _child_env() -> dict[str, str]:
    """This environment, with the repository on ``PYTHONPATH`` (for ``python -m bench...``
    children)."""
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


@contextlib.asynccontextmanager
async def open_stdio(era: str = "legacy") -> AsyncIterator[Target]:
    """Our client driving our echo server as a subprocess over stdio, in ``era``
    (``"legacy"``: the initialize handshake; ``"modern"``: 2026-07-28, ``_meta`` on
    every request)."""
    open_stdio_client = need("mcp_ref.client", "open_stdio_client")
    make_echo_server()  # fail early (NotBuilt) when the server API is missing
    env = _child_env()
    async with open_stdio_client(
        ECHO_SERVER, env=env, cwd=str(ROOT), stderr="discard", era=era
    ) as client:
        call_tool = client.call_tool
        pid = _pid_of(client)

        async def call(text: str) -> str:
            return _text_of(await call_tool("echo", {"text": text}))

        yield Target(call, pid, f"mcp-ref client -> mcp-ref server (stdio, {era})")


def _pid_of(client: Any) -> int | None:
    """The server subprocess's pid, if the client exposes its process."""
    for attr in ("process", "_process", "proc"):
        proc = getattr(client, attr, None)
        if proc is not None and hasattr(proc, "pid"):
            pid: int = proc.pid
            return pid
    return None


@contextlib.asynccontextmanager
async def _open_network(
    layer: list[str], scheme: str, label: str, era: str = "legacy"
) -> AsyncIterator[Target]:
    """Our client driving our echo server in a subprocess over the network (loopback),
    in ``era`` (a modern HTTP request opens no session: each POST stands alone).

    The server (``python -m bench.echo_server <layer> 0 ...``) prints its bound port on
    its first line; the opener connects there.
    """
    if scheme == "http":
        opener = need("mcp_ref.client", "open_http_client")
    else:
        opener = need("mcp_ref.client", "open_websocket_client")
    env = _child_env()
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-m", "bench.echo_server", *layer],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=str(ROOT),
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = b""
        while not line.endswith(b"\n"):
            chunk = await proc.stdout.receive_some(64)
            if not chunk:
                raise RuntimeError(f"the echo server exited before listening ({layer})")
            line += chunk
        url = f"{scheme}://127.0.0.1:{int(line)}/mcp"
        # 100 requests in flight: above the HTTP client's default bound on concurrent
        # POSTs (64), as the echo server raises its stream bounds.
        kw: dict[str, Any] = {"era": era}
        if scheme == "http":
            kw["max_concurrent_posts"] = 256
        async with opener(url, **kw) as client:
            call_tool = client.call_tool

            async def call(text: str) -> str:
                return _text_of(await call_tool("echo", {"text": text}))

            yield Target(call, proc.pid, label)
    finally:
        proc.terminate()
        with trio.move_on_after(5):
            await proc.wait()


def open_http_json() -> Any:
    """Streamable HTTP, JSON answers: our trio client -> our server (subprocess)."""
    return _open_network(["http", "0", "json"], "http", "mcp-ref client -> server (HTTP JSON)")


def open_stdio_modern() -> Any:
    """stdio, the 2026-07-28 era: our trio client -> our server (subprocess)."""
    return open_stdio("modern")


def open_http_json_modern() -> Any:
    """Streamable HTTP, JSON answers, the 2026-07-28 era (no session): our trio client
    -> our server (subprocess)."""
    return _open_network(
        ["http", "0", "json"], "http", "mcp-ref client -> server (HTTP JSON, modern)", "modern"
    )


def open_http_sse() -> Any:
    """Streamable HTTP, SSE answers: our trio client -> our server (subprocess)."""
    return _open_network(["http", "0", "sse"], "http", "mcp-ref client -> server (HTTP SSE)")


def open_websocket() -> Any:
    """WebSocket: our trio client -> our server (subprocess)."""
    return _open_network(["ws", "0"], "ws", "mcp-ref client -> server (WebSocket)")


OPENERS: dict[str, Any] = {
    "inproc": open_inproc,
    "inproc-session": open_inproc_session,
    "stdio": open_stdio,
    "http-json": open_http_json,
    "http-sse": open_http_sse,
    "stdio-modern": open_stdio_modern,
    "http-json-modern": open_http_json_modern,
    "websocket": open_websocket,
}
"""Row name -> opener, for :func:`main`."""


def leak_warmup(requests: int) -> int:
    """Calls made before a long run's first RSS reading: enough to fill the bounded
    tables (each connection remembers 4096 finished request ids), at least a tenth of
    the run, and at most ten times a short run."""
    return max(min(5000, 10 * requests), requests // 10)


async def leak_inproc(requests: int, sessions: int) -> dict[str, Any]:
    """RSS (bytes) before and after ``requests`` calls on one in-process session (10 in
    flight, nothing recorded per call) and before and after ``sessions`` sessions opened
    and closed (5 calls each), each after a warm-up of a tenth as many.

    Returns ``{"layer": ..., "requests": [before, after], "sessions": [before, after]}``.

    Raises:
        NotBuilt: not even the session layer exists.
    """
    import gc

    from ._measure import proc_rss

    opener: Any = open_inproc
    layer = "client+server"
    try:
        need("mcp_ref.client", "open_client")
        make_echo_server()
    except NotBuilt:
        opener, layer = open_inproc_session, "session layer"

    async def calls(target: Target, count: int) -> None:
        async def worker(k: int) -> None:
            for _ in range(k):
                await target.call("hello")

        async with trio.open_nursery() as nursery:
            for i in range(10):
                nursery.start_soon(worker, count // 10 + (i < count % 10))

    async def many_sessions(count: int) -> None:
        for _ in range(count):
            async with opener() as target:
                for _ in range(5):
                    await target.call("hello")

    out: dict[str, Any] = {"layer": layer}
    async with opener() as target:
        await calls(target, leak_warmup(requests))  # let pools and bounded tables fill
        gc.collect()
        before = proc_rss()[0]
        await calls(target, requests)
        gc.collect()
        out["requests"] = [before, proc_rss()[0]]
    await many_sessions(max(20, sessions // 10))
    gc.collect()
    before = proc_rss()[0]
    await many_sessions(sessions)
    gc.collect()
    out["sessions"] = [before, proc_rss()[0]]
    return out


def main(argv: list[str]) -> int:
    """Child-process entry points, so a measurement's RSS is its own:

    * ``python -m bench.ours ROW REQUESTS C1,C2,... WARMUP``: one end-to-end row (ROW a
      key of :data:`OPENERS`); prints ``{concurrency: metrics}`` as JSON;
    * ``python -m bench.ours leak REQUESTS SESSIONS``: :func:`leak_inproc` as JSON.

    Exit code 3 with the reason on stderr when a piece is not built yet.
    """
    import json

    from .load import run_load

    if argv[0] == "leak":
        try:
            got = trio.run(leak_inproc, int(argv[1]), int(argv[2]))
        except NotBuilt as exc:
            print(exc, file=sys.stderr)
            return 3
        print(json.dumps(got))
        return 0
    row, requests, concurrencies, warmup = argv[0], int(argv[1]), argv[2], int(argv[3])
    levels = [int(c) for c in concurrencies.split(",")]
    opener = OPENERS[row]

    async def run() -> dict[int, Any]:
        out = {}
        async with opener() as target:
            for c in levels:
                out[c] = await run_load(
                    target,
                    requests=requests,
                    concurrency=c,
                    warmup=warmup,
                    in_process=row != "stdio",
                )
        return out

    try:
        result = trio.run(run)
    except NotBuilt as exc:
        print(exc, file=sys.stderr)
        return 3
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

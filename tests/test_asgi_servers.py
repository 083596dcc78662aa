"""mcp_ref.asgi under the real ASGI servers, each a child process on a loopback port:
Hypercorn (trio and asyncio workers) and Uvicorn, serving examples/asgi_server.py as it
is or mounted under ``/api`` in Starlette and FastAPI; our own HTTP client connects,
calls a tool, and the server then stops on SIGINT (the lifespan shutdown).

These servers are test dependencies (the ``test`` extra): a server that cannot start
fails its test."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from mcp_ref.client import open_http_client

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

MOUNTED = """
from fastapi import FastAPI
from starlette.applications import Starlette
from starlette.routing import Mount

from asgi_server import app as mcp

# Starlette runs the mounted app's lifespan; FastAPI does not (its sessions start at the
# first request).
starlette_app = Starlette(routes=[Mount("/api", app=mcp)], lifespan=lambda _: mcp.running())
fastapi_app = FastAPI()
fastapi_app.mount("/api", mcp)
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def command(server: str, target: str, port: int, *extra: str) -> list[str]:
    """The command line of ``server`` serving ``target`` on loopback ``port``."""
    if server == "uvicorn":
        return [sys.executable, "-m", "uvicorn", "--port", str(port), *extra, target]
    worker = server.removeprefix("hypercorn-")  # trio or asyncio
    bind = f"127.0.0.1:{port}"
    return [sys.executable, "-m", "hypercorn", "-k", worker, "-b", bind, *extra, target]


CASES = [
    ("hypercorn-trio", "asgi_server:app", "/mcp"),
    ("hypercorn-asyncio", "asgi_server:app", "/mcp"),
    ("uvicorn", "asgi_server:app", "/mcp"),
    ("hypercorn-trio", "mounted:starlette_app", "/api/mcp"),
    ("hypercorn-asyncio", "mounted:fastapi_app", "/api/mcp"),
    ("uvicorn", "mounted:fastapi_app", "/api/mcp"),
    ("uvicorn", "mounted:starlette_app", "/api/mcp"),
]


@asynccontextmanager
async def serving(cmd: list[str], tmp_path: Path) -> AsyncIterator[tuple[trio.Process, bytearray]]:
    """Run ``cmd`` (an ASGI server) until it says it listens; yield it and its output so
    far (stderr, still read into it); kill it at the end if it still runs."""
    (tmp_path / "mounted.py").write_text(MOUNTED, encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(EXAMPLES), str(tmp_path)])
    proc = await trio.lowlevel.open_process(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=tmp_path
    )
    output = bytearray()
    try:
        assert proc.stderr is not None
        with trio.fail_after(30):
            # Wait for the server to say it listens (never a bare sleep).
            while b"running on" not in output.lower():
                chunk = await proc.stderr.receive_some(4096)
                assert chunk, f"{cmd[2]} ended before listening:\n{output.decode(errors='replace')}"
                output += chunk
        async with trio.open_nursery() as nursery:

            async def drain() -> None:
                assert proc.stderr is not None
                while chunk := await proc.stderr.receive_some(4096):
                    output.extend(chunk)

            nursery.start_soon(drain)
            yield proc, output
            nursery.cancel_scope.cancel()
    finally:
        if proc.returncode is None:
            proc.kill()
            with trio.move_on_after(5):
                await proc.wait()


@pytest.mark.parametrize(("server", "target", "path"), CASES, ids=[f"{s}-{t}" for s, t, _ in CASES])
async def test_a_real_asgi_server_serves_a_tool_call(
    server: str, target: str, path: str, tmp_path: Path
) -> None:
    port = free_port()
    async with serving(command(server, target, port), tmp_path) as (proc, output):
        with trio.fail_after(30):
            async with open_http_client(f"http://127.0.0.1:{port}{path}") as client:
                result = await client.call_tool("add", {"a": 20, "b": 22})
                assert result.structured_content == {"result": 42}, result
                tools = await client.list_tools()
                assert [t.name for t in tools] == ["add"]
        # SIGINT: the lifespan shutdown, then a clean exit.
        proc.send_signal(signal.SIGINT)
        with trio.fail_after(20):
            code = await proc.wait()
    log = output.decode(errors="replace")
    assert code == 0, log
    assert "Traceback" not in log, log


GRACEFUL = {
    "hypercorn-trio": ("--graceful-timeout", "1"),
    "hypercorn-asyncio": ("--graceful-timeout", "1"),
    "uvicorn": ("--timeout-graceful-shutdown", "1"),
}


@pytest.mark.parametrize("server", sorted(GRACEFUL))
async def test_a_real_asgi_server_stops_with_a_client_still_connected(
    server: str, tmp_path: Path
) -> None:
    """The client's GET stream is still open at SIGINT: the server's own graceful
    timeout bounds the wait (ASGI tells an application of the stop only once every
    response has ended), then the lifespan shutdown ends the sessions."""
    port = free_port()
    cmd = command(server, "asgi_server:app", port, *GRACEFUL[server])
    async with serving(cmd, tmp_path) as (proc, output):
        with trio.fail_after(30):
            async with open_http_client(f"http://127.0.0.1:{port}/mcp") as client:
                result = await client.call_tool("add", {"a": 1, "b": 2})
                assert result.structured_content == {"result": 3}
                proc.send_signal(signal.SIGINT)
                with trio.fail_after(15):
                    code = await proc.wait()
    assert code == 0, output.decode(errors="replace")

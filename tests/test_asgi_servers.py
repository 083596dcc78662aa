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


def command(server: str, target: str, port: int) -> list[str]:
    bind = f"127.0.0.1:{port}"
    if server == "hypercorn-trio":
        return [sys.executable, "-m", "hypercorn", "--worker-class", "trio", "--bind", bind, target]
    if server == "hypercorn-asyncio":
        return [
            sys.executable,
            "-m",
            "hypercorn",
            "--worker-class",
            "asyncio",
            "--bind",
            bind,
            target,
        ]
    return [sys.executable, "-m", "uvicorn", "--host", "127.0.0.1", "--port", str(port), target]


CASES = [
    ("hypercorn-trio", "asgi_server:app", "/mcp"),
    ("hypercorn-asyncio", "asgi_server:app", "/mcp"),
    ("uvicorn", "asgi_server:app", "/mcp"),
    ("hypercorn-trio", "mounted:starlette_app", "/api/mcp"),
    ("hypercorn-asyncio", "mounted:fastapi_app", "/api/mcp"),
    ("uvicorn", "mounted:fastapi_app", "/api/mcp"),
    ("uvicorn", "mounted:starlette_app", "/api/mcp"),
]


@pytest.mark.parametrize(("server", "target", "path"), CASES, ids=[f"{s}-{t}" for s, t, _ in CASES])
async def test_a_real_asgi_server_serves_a_tool_call(
    server: str, target: str, path: str, tmp_path: Path
) -> None:
    (tmp_path / "mounted.py").write_text(MOUNTED, encoding="utf-8")
    port = free_port()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(EXAMPLES), str(tmp_path)])
    proc = await trio.lowlevel.open_process(
        command(server, target, port),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    output = bytearray()
    try:
        assert proc.stderr is not None
        with trio.fail_after(30):
            # Wait for the server to say it listens (never a bare sleep).
            while b"running on" not in output.lower():
                chunk = await proc.stderr.receive_some(4096)
                assert chunk, f"{server} ended before listening:\n{output.decode(errors='replace')}"
                output += chunk
        async with trio.open_nursery() as nursery:

            async def drain() -> None:
                assert proc.stderr is not None
                while chunk := await proc.stderr.receive_some(4096):
                    output.extend(chunk)

            nursery.start_soon(drain)
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
            nursery.cancel_scope.cancel()
        log = output.decode(errors="replace")
        assert code == 0, log
        assert "Traceback" not in log, log
    finally:
        if proc.returncode is None:
            proc.kill()
            with trio.move_on_after(5):
                await proc.wait()

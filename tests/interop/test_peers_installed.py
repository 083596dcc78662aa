"""The real MCP peers install and start (smoke tests for tests/interop/peers.py).

Each test installs its peer on first use (once per machine, cached under
``.cache/peers``) and skips with the installer's reason when that is not
possible (no npm, no registry).  None of them talks to mcp_ref yet: they prove
the peers the interop tests rely on are there and answer.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, TypeVar

import pytest

from . import peers

pytestmark = pytest.mark.interop

T = TypeVar("T")

TIMEOUT_SECONDS = 30.0


def _need(value: T | None, name: str) -> T:
    if value is None:
        pytest.skip(peers.why_missing(name) or f"peer {name!r} unavailable")
    return value


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=False,
    )


def _read_json_line(proc: subprocess.Popen[bytes], deadline: float) -> dict[str, Any]:
    """Read one newline-terminated JSON object from ``proc.stdout`` before ``deadline``."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    buf = b""
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while b"\n" not in buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not sel.select(remaining):
                pytest.fail(f"no complete line within {TIMEOUT_SECONDS} s; got {buf!r}")
            chunk = os.read(fd, 65536)
            if not chunk:
                pytest.fail(f"peer closed stdout early; got {buf!r}")
            buf += chunk
            assert len(buf) < 4 * 2**20, "line too long"
    line = buf.split(b"\n", 1)[0]
    message = json.loads(line)
    assert isinstance(message, dict)
    return message


def test_node22_prints_its_version() -> None:
    node = _need(peers.node22(), "node22")
    proc = _run([str(node), "--version"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"v{peers.PINS['node']}"


@pytest.mark.parametrize("group", peers.CONFORMANCE_GROUPS)
def test_conformance_lists_server_and_client_scenarios(group: str) -> None:
    cmd = _need(peers.conformance_cmd(group), group)
    version = _run([*cmd, "--version"])
    (name,) = peers.GROUPS[group]
    assert version.stdout.strip() == peers.PINS[name]
    proc = _run([*cmd, "list"])
    assert proc.returncode == 0, proc.stderr
    assert "Server scenarios" in proc.stdout
    assert "Client scenarios" in proc.stdout
    for scenario in ("server-initialize", "tools-call-with-progress", "dns-rebinding-protection"):
        assert f"- {scenario} " in proc.stdout
    assert "- initialize " in proc.stdout


def test_server_everything_answers_initialize_over_stdio() -> None:
    argv = _need(peers.server_everything_cmd(), "server-everything")
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "mcp-ref-smoke", "version": "0"},
        },
    }
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(request).encode() + b"\n")
        proc.stdin.flush()
        reply = _read_json_line(proc, time.monotonic() + TIMEOUT_SECONDS)
        proc.stdin.close()
        proc.wait(timeout=TIMEOUT_SECONDS)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert reply["id"] == 1
    result = reply["result"]
    assert result["protocolVersion"] == "2025-06-18"
    assert result["serverInfo"]["name"] == "mcp-servers/everything"
    assert "tools" in result["capabilities"]


def test_ts_sdk_is_importable_from_its_dir() -> None:
    node = _need(peers.node22(), "node22")
    sdk_dir = _need(peers.ts_sdk_dir(), "ts-sdk")
    script = (
        "import('@modelcontextprotocol/sdk/server/mcp.js')"
        ".then(m => console.log(typeof m.McpServer))"
    )
    proc = subprocess.run(
        [str(node), "--input-type=module", "-e", script],
        cwd=sdk_dir,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "function"
    package = json.loads(
        (Path(sdk_dir) / "node_modules/@modelcontextprotocol/sdk/package.json").read_text()
    )
    assert package["version"] == peers.PINS["@modelcontextprotocol/sdk"]


def test_python_sdk_imports_in_its_own_venv() -> None:
    python = _need(peers.python_sdk_python(), "python-sdk")
    code = (
        "import importlib.metadata as m\n"
        "from mcp import ClientSession, StdioServerParameters, stdio_client\n"
        "from mcp.server import MCPServer\n"
        "from mcp.server.lowlevel import Server\n"
        "print(m.version('mcp'))\n"
    )
    proc = _run([str(python), "-c", code])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == peers.PINS["mcp"]
    # The SDK must not leak into the project's own environment.
    assert Path(python).absolute().parent.parent != Path(sys.prefix).absolute()

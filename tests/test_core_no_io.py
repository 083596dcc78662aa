"""The core does no I/O: importing every core module pulls in no trio, socket or asyncio
(h11 and wsproto, sans-IO themselves, are allowed)."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import mcp_ref

# threading is not listed: attrs imports it for a lock, and it does no I/O.  Nor is h11:
# it is sans-IO itself (bytes in, events out), and the core's HTTP connection and session
# (mcp_ref/_http_connection.py, _http_server.py) are built on it, as wsproto is.
# Nor is wsproto: sans-IO too, the WebSocket core (mcp_ref/_websocket*.py) is built on it.
FORBIDDEN = ("trio", "socket", "asyncio", "selectors", "ssl", "subprocess")


# Top-level modules that are drivers, not core: they may do I/O.
DRIVERS = {"mcp_ref.blocking", "mcp_ref.cli", "mcp_ref.__main__"}


def core_modules() -> list[str]:
    mods = []
    for info in pkgutil.iter_modules(mcp_ref.__path__):
        name = f"mcp_ref.{info.name}"
        # Subpackages (trio drivers, asyncio drivers, server, client) may do I/O.
        if not info.ispkg and name not in DRIVERS:
            mods.append(name)
    return mods


def test_core_imports_no_io_modules() -> None:
    mods = core_modules()
    assert "mcp_ref._connection" in mods and "mcp_ref._sse" in mods
    code = (
        "import sys, json\n"
        f"for m in {mods!r}: __import__(m)\n"
        f"print(json.dumps([n for n in {FORBIDDEN!r} if n in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []

"""The asyncio and blocking clients in both eras, over stdio, against a scripted server.

The server is a few lines of plain Python in a child process (no mcp_ref): in
``modern`` mode it answers ``server/discover`` and answers ``tools/call`` first with
``input_required`` (an elicitation and a ``requestState``), then, on the retry, with
what the elicitation gave; in ``legacy`` mode it refuses ``server/discover`` (-32601,
as a handshake server does before ``initialize``) and speaks the handshake.  Pages:
2026-07-28/basic/transports/stdio (backward compatibility), 2026-07-28/basic/patterns/mrtr.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import pytest

from mcp_ref import types as t
from mcp_ref.asyncio import open_stdio_client
from mcp_ref.blocking import connect_stdio

spec = pytest.mark.spec

SERVER = r"""
import json, sys
mode = sys.argv[1]
log = []
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    log.append(msg)
    if "id" not in msg:
        continue
    rid, method, params = msg["id"], msg["method"], msg.get("params") or {}
    meta = params.get("_meta") or {}
    if method == "server/discover":
        if mode == "legacy":
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete",
                  "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                  "ttlMs": 0, "cacheScope": "private",
                  "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "raw", "version": "1"}}}})
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "raw", "version": "1"}}})
    elif method == "subscriptions/listen":
        sid = {"io.modelcontextprotocol/subscriptionId": rid}
        send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
              "params": {"_meta": sid, "notifications": params["notifications"]}})
        for uri in params["notifications"].get("resourceSubscriptions") or []:
            send({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                  "params": {"_meta": sid, "uri": uri}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [
              {"name": "greet", "inputSchema": {"type": "object"}}],
              "ttlMs": 0, "cacheScope": "private"}})
    elif method == "tools/call" and mode == "modern" and "inputResponses" not in params:
        send({"jsonrpc": "2.0", "id": rid, "result": {"resultType": "input_required",
              "requestState": "opaque-1", "inputRequests": {"who": {
                  "method": "elicitation/create", "params": {"message": "name?",
                  "requestedSchema": {"type": "object",
                                      "properties": {"name": {"type": "string"}}}}}}}})
    elif method == "tools/call":
        seen = [[m.get("method"), m.get("id"),
                 (m.get("params") or {}).get("requestState"),
                 "io.modelcontextprotocol/protocolVersion" in ((m.get("params") or {}).get("_meta") or {})]
                for m in log]
        who = ((params.get("inputResponses") or {}).get("who") or {}).get("content") or {}
        result = {"content": [{"type": "text", "text": json.dumps({"name": who.get("name"), "seen": seen})}]}
        if mode == "modern":
            result["resultType"] = "complete"
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": method}})
"""


def server(mode: str) -> list[str]:
    return [sys.executable, "-c", SERVER, mode]


def answer(params: Any) -> t.ElicitResult:
    return t.ElicitResult(action="accept", content={"name": "Ada"})


def text(result: t.CallToolResult) -> Any:
    block = result.content[0]
    assert isinstance(block, t.TextContent)
    return json.loads(block.text)


@spec(
    "2026-07-28/basic/patterns/mrtr#client-requirements-basic-workflow.1",
    "2026-07-28/basic/patterns/mrtr#client-requirements-basic-workflow.3",
    "2026-07-28/basic/patterns/mrtr#client-requirements-basic-workflow.6",
)
def test_blocking_client_completes_a_modern_call_with_an_elicitation_round() -> None:
    with connect_stdio(server("modern"), era="auto", elicitation_handler=answer) as client:
        assert client.era == "modern"
        got = text(client.call_tool("greet", {}))
    assert got["name"] == "Ada"
    calls = [s for s in got["seen"] if s[0] == "tools/call"]
    assert [s[2] for s in calls] == [None, "opaque-1"]  # requestState echoed, not invented
    assert calls[0][1] != calls[1][1] and all(s[3] for s in got["seen"])
    assert [s[0] for s in got["seen"]] == ["server/discover", "tools/call", "tools/call"]


@spec("2026-07-28/basic/transports/stdio#backward-compatibility.2")
def test_blocking_client_falls_back_to_the_handshake() -> None:
    with connect_stdio(server("legacy"), era="auto") as client:
        assert client.era == "legacy"
        assert client.initialize_result is not None
        got = text(client.call_tool("greet", {}))
    methods = [s[0] for s in got["seen"]]
    assert methods == ["server/discover", "initialize", "notifications/initialized", "tools/call"]
    assert got["seen"][-1][3] is False  # no modern _meta after the fallback


def test_blocking_client_pinned_legacy_is_the_handshake_alone() -> None:
    with connect_stdio(server("legacy"), era="legacy") as client:
        got = text(client.call_tool("greet", {}))
    assert [s[0] for s in got["seen"]] == ["initialize", "notifications/initialized", "tools/call"]


def run(main: Any, seconds: float = 30.0) -> Any:
    async def bounded() -> Any:
        async with asyncio.timeout(seconds):
            return await main()

    return asyncio.run(bounded())


def test_asyncio_client_in_both_eras() -> None:
    async def main() -> tuple[Any, Any, str | None, str | None]:
        async with open_stdio_client(
            server("modern"), era="auto", elicitation_handler=answer
        ) as client:
            modern = text(await client.call_tool("greet", {}))
            era = client.era
        async with open_stdio_client(server("legacy"), era="auto") as client:
            legacy = text(await client.call_tool("greet", {}))
            old = client.era
        return modern, legacy, era, old

    modern, legacy, era, old = run(main)
    assert (era, old) == ("modern", "legacy")
    assert modern["name"] == "Ada"
    assert [s[2] for s in modern["seen"] if s[0] == "tools/call"] == [None, "opaque-1"]
    assert [s[0] for s in legacy["seen"]][:2] == ["server/discover", "initialize"]


def test_the_cli_says_which_era_it_spoke() -> None:
    """``mcp-ref inspect`` and ``call`` name the era (modern: server/discover first)."""
    import subprocess

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "mcp_ref", *args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=60)

    done = cli("call", "--era", "auto", "--", *server("legacy"), "greet")
    assert done.returncode == 0, done.stderr
    assert "[era] legacy era (initialize), protocol 2025-11-25" in done.stderr
    done = cli("inspect", "--json", "--era", "auto", "--", *server("modern"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["era"] == "modern"
    done = cli("inspect", "--era", "modern", "--", *server("modern"))
    assert done.returncode == 0, done.stderr
    assert "protocol 2026-07-28, modern era (per-request _meta)" in done.stdout


def test_asyncio_subscribe_uses_listen_in_the_modern_era() -> None:
    import asyncio

    notes: list[Any] = []

    async def main() -> Any:
        updated = asyncio.Event()

        def note(n: Any) -> None:
            notes.append(n)
            if n.method == "notifications/resources/updated":
                updated.set()

        async with open_stdio_client(
            server("modern"), era="modern", on_notification=note, elicitation_handler=answer
        ) as client:
            await client.subscribe("file:///a")
            # The update comes on the open subscription: once it is cancelled, a late
            # one would be dropped (2026-07-28 subscriptions#receiving-notifications).
            await asyncio.wait_for(updated.wait(), 10)
            await client.unsubscribe("file:///a")
            return text(await client.call_tool("greet", {}))

    got = run(main)
    assert [s[0] for s in got["seen"]][:2] == ["subscriptions/listen", "notifications/cancelled"]
    assert [n.params.uri for n in notes if n.method == "notifications/resources/updated"] == [
        "file:///a"
    ]


@spec("2026-07-28/basic/transports/streamable-http#backward-compatibility.1")
def test_asyncio_http_client_in_each_era_against_the_real_server() -> None:
    """Modern: no session; auto: the probe (our server has no server/discover yet, or
    answers it) then either era; legacy: initialize.  The server runs on trio in a
    thread of its own."""
    import threading

    import trio

    from mcp_ref.asyncio import open_http_client

    from .test_transports_http import serve

    ready: list[str] = []
    stop = threading.Event()
    started = threading.Event()

    def run_server() -> None:
        async def main() -> None:
            async with serve() as (info, _):
                ready.append(info.url)
                started.set()
                await trio.to_thread.run_sync(stop.wait)

        trio.run(main)

    thread = threading.Thread(target=run_server)
    thread.start()
    try:
        assert started.wait(30)

        async def main() -> list[tuple[str, str | None, str]]:
            out = []
            for era in ("modern", "auto", "legacy"):
                async with open_http_client(ready[0], era=era) as client:
                    result = await client.call_tool("echo", {"text": era})
                    block = result.content[0]
                    assert isinstance(block, t.TextContent)
                    out.append((era, client.era, block.text))
                    if era == "modern":
                        assert client.session_id is None
            return out

        got = run(main)
    finally:
        stop.set()
        thread.join(30)
    assert got[0] == ("modern", "modern", "modern")
    assert got[1][0] == "auto" and got[1][1] in ("modern", "legacy") and got[1][2] == "auto"
    assert got[2] == ("legacy", "legacy", "legacy")


def _our_server_asks() -> bool:
    """Whether the reference server has the 2026-07-28 input-round tools (the
    high-level server's modern era)."""
    import importlib.util

    spec_ = importlib.util.find_spec("mcp_ref.examples.everything")
    if spec_ is None or spec_.origin is None:
        return False
    with open(spec_.origin, encoding="utf-8") as f:
        return "test_input_required_result_multi_round" in f.read()


@pytest.mark.skipif(not _our_server_asks(), reason="the server's input rounds are not built")
@spec("2026-07-28/basic/patterns/mrtr#client-requirements-basic-workflow.1")
def test_blocking_client_completes_input_rounds_against_our_server() -> None:
    """Against ``mcp-ref serve`` (the everything server) on stdio: the probe finds the
    modern era, and a tool that asks twice (two input_required rounds) completes."""

    def elicit(params: Any) -> t.ElicitResult:
        return t.ElicitResult(action="accept", content={"name": "Ada", "color": "blue"})

    command = [sys.executable, "-m", "mcp_ref", "serve"]
    with connect_stdio(command, era="auto", elicitation_handler=elicit) as client:
        assert client.era == "modern"
        result = client.call_tool("test_input_required_result_multi_round", {})
    block = result.content[0]
    assert isinstance(block, t.TextContent) and block.text == "Ada likes blue."

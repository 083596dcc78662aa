"""The official Python SDK's side of ``python -m bench --compare``.

Runs with the python of the separate venv that holds the ``mcp`` package (see
``tests/interop/peers.py``), never in mcp-ref's own environment, and imports nothing
of mcp-ref.  Modes:

* ``serve-stdio``: an ``MCPServer`` with one tool, ``echo(text) -> text``, on stdio;
* ``serve-http PORT json|sse``: the same server on Streamable HTTP at
  ``http://127.0.0.1:PORT/mcp``, answering with JSON bodies or with SSE streams;
* ``inproc REQUESTS C1,C2,... [TEXT_BYTES]``: the SDK's own client and server in one
  process over its in-memory streams (the initialize handshake and JSON-RPC framing,
  like mcp-ref's in-process row), ``REQUESTS`` echo calls with each concurrency in
  turn; prints one JSON object ``{concurrency: measurements}`` on stdout.

The load loop mirrors :func:`bench.e2e.run_load`: ``CONCURRENCY`` workers share the
requests, each timing its calls with ``time.perf_counter_ns``.
"""

from __future__ import annotations

import json
import os
import sys
import time


def make_server():  # type: ignore[no-untyped-def]
    """The SDK server with the bench's echo tool."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench-echo-sdk", log_level="WARNING")

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    return server


def _rss() -> tuple[int | None, int | None]:
    cur = peak = None
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    cur = int(line.split()[1]) * 1024
                elif line.startswith("VmHWM:"):
                    peak = int(line.split()[1]) * 1024
    except OSError:
        pass
    return cur, peak


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


async def _inproc(requests: int, concurrencies: list[int], text: str) -> dict[int, object]:
    from mcp import Client

    server = make_server()
    out: dict[int, object] = {}
    async with Client(server, mode="legacy") as client:
        for _ in range(50):  # warm up
            await client.call_tool("echo", {"text": text})
        for concurrency in concurrencies:
            out[concurrency] = await _load(client, requests, concurrency, text)
    return out


async def _load(client, requests: int, concurrency: int, text: str) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """``requests`` echo calls over ``client`` with ``concurrency`` in flight."""
    import gc

    import anyio

    latencies: list[float] = []
    per_worker = [requests // concurrency] * concurrency
    for i in range(requests % concurrency):
        per_worker[i] += 1

    async def worker(n: int) -> None:
        for _ in range(n):
            t0 = time.perf_counter_ns()
            result = await client.call_tool("echo", {"text": text})
            latencies.append((time.perf_counter_ns() - t0) / 1e6)
            if result.content[0].text != text:
                raise AssertionError("echo returned something else")

    gc.collect()
    rss0, _ = _rss()
    w0, c0 = time.perf_counter_ns(), time.process_time_ns()
    async with anyio.create_task_group() as tg:
        for n in per_worker:
            if n:
                tg.start_soon(worker, n)
    c1, w1 = time.process_time_ns(), time.perf_counter_ns()
    gc.collect()
    rss1, peak = _rss()
    done = len(latencies)
    return {
        "req_per_s": done * 1e9 / max(w1 - w0, 1),
        "p50_ms": _pct(latencies, 50),
        "p99_ms": _pct(latencies, 99),
        "client_cpu_us": (c1 - c0) / 1e3 / max(done, 1),
        "server_cpu_us": None,
        "peak_rss_mb": (peak or 0) / 2**20,
        "rss_growth_kb": ((rss1 or 0) - (rss0 or 0)) / 1024,
        "requests": done,
    }


def main(argv: list[str]) -> int:
    """Entry point; see the module docstring for the modes."""
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    mode = argv[0]
    if mode == "serve-stdio":
        make_server().run("stdio")
        return 0
    if mode == "serve-http":
        port, body = int(argv[1]), argv[2]
        make_server().run(
            "streamable-http",
            host="127.0.0.1",
            port=port,
            json_response=body == "json",
        )
        return 0
    if mode == "inproc":
        import anyio

        requests = int(argv[1])
        concurrencies = [int(c) for c in argv[2].split(",")]
        size = int(argv[3]) if len(argv) > 3 else 5
        result = anyio.run(_inproc, requests, concurrencies, "x" * size)
        print(json.dumps(result))
        return 0
    print(f"unknown mode {mode!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main(sys.argv[1:]))

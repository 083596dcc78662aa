"""Drive an MCP server with the official Python SDK's high-level ``Client`` in a chosen
connect mode (``auto``: the ``server/discover`` probe, or a pinned ``2026-07-28``); print
a JSON summary.

Runs inside the separate SDK virtualenv (``tests/interop/peers.py: python_sdk_python()``),
never in the project's own: it imports ``mcp`` and nothing of ``mcp_ref``.

Usage::

    <sdk python> sdk_client_modern.py MODE <server program> [<server args>...]
    <sdk python> sdk_client_modern.py MODE --url <Streamable HTTP endpoint>

It prints one JSON object on stdout::

    {"protocol_version": "...", "steps": {name: <wire-format result>},
     "errors": {name: "..."}, "elicitations": [<elicitation params>, ...],
     "sampling": [<sampling params>, ...], "roots_asked": N}

The steps include tools whose handlers ask the client for input (elicitation, sampling,
roots): in the 2026-07-28 era the server answers ``input_required`` and the SDK retries
with ``inputResponses``.  A step that raises is recorded in ``errors`` and the script
goes on; the exit code is 0 unless the connection itself failed (then 1).
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp import StdioServerParameters
from mcp import types as mt
from mcp.client.client import Client
from sdk_client import _dump  # the sibling script (its folder is on sys.path)

STEP_TIMEOUT = 10.0
"""Seconds allowed for one request (every round of it)."""
TOTAL_TIMEOUT = 40.0
"""Seconds allowed for the whole run."""

warnings.simplefilter("ignore")  # the SDK's deprecation notes on stderr


async def run(mode: str, argv: list[str]) -> dict[str, Any]:
    """Connect in ``mode`` to the server ``argv`` names, run every step, return the summary."""
    summary: dict[str, Any] = {
        "protocol_version": None,
        "steps": {},
        "errors": {},
        "elicitations": [],
        "sampling": [],
        "roots_asked": 0,
    }

    async def on_elicit(context: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        summary["elicitations"].append(_dump(params))
        return mt.ElicitResult(
            action="accept", content={"username": "ada", "email": "ada@example.com"}
        )

    async def on_sampling(context: Any, params: mt.CreateMessageRequestParams) -> Any:
        summary["sampling"].append(_dump(params))
        return mt.CreateMessageResult(
            role="assistant",
            content=mt.TextContent(type="text", text="sampled by the SDK"),
            model="sdk-test-model",
            stop_reason="endTurn",
        )

    async def on_roots(context: Any) -> mt.ListRootsResult:
        summary["roots_asked"] += 1
        return mt.ListRootsResult(roots=[mt.Root(uri="file:///sdk-root", name="sdk")])

    if argv[0] == "--url":
        server: Any = argv[1]
    else:
        server = StdioServerParameters(command=argv[0], args=argv[1:], cwd=os.getcwd())
    client = Client(
        server,
        mode=mode,
        elicitation_callback=on_elicit,
        sampling_callback=on_sampling,
        list_roots_callback=on_roots,
        read_timeout_seconds=STEP_TIMEOUT,
        cache=None,
    )
    async with client:
        summary["protocol_version"] = client.protocol_version

        async def step(name: str, call: Callable[[], Awaitable[Any]]) -> None:
            try:
                with anyio.fail_after(STEP_TIMEOUT):
                    summary["steps"][name] = _dump(await call())
            except Exception as exc:  # recorded for the test to report
                code = getattr(getattr(exc, "error", None), "code", getattr(exc, "code", None))
                summary["errors"][name] = f"{type(exc).__name__} (code {code}): {exc}"

        await step("list_tools", client.list_tools)
        await step("echo", lambda: client.call_tool("echo", {"text": "hello from the SDK"}))
        await step(
            "test_elicitation",
            lambda: client.call_tool("test_elicitation", {"message": "Your name?"}),
        )
        await step("test_sampling", lambda: client.call_tool("test_sampling", {"prompt": "Say hi"}))
        await step(
            "test_input_required_result_list_roots",
            lambda: client.call_tool("test_input_required_result_list_roots", {}),
        )
        await step("read_static_text", lambda: client.read_resource("test://static-text"))
        await step(
            "get_prompt",
            lambda: client.get_prompt(
                "test_prompt_with_arguments", {"arg1": "alpha", "arg2": "beta"}
            ),
        )
        await step("unknown_tool", lambda: client.call_tool("no_such_tool", {}))
    return summary


async def main_async(mode: str, argv: list[str]) -> int:
    with anyio.fail_after(TOTAL_TIMEOUT):
        summary = await run(mode, argv)
    json.dump(summary, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
    return 0


def main() -> int:
    """Entry point: returns the exit status."""
    if len(sys.argv) < 3:
        print(f"usage: {sys.argv[0]} MODE <server program> [args...] | MODE --url URL")
        return 2
    try:
        return anyio.run(main_async, sys.argv[1], sys.argv[2:])
    except Exception as exc:
        print(f"sdk_client_modern: connection failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

"""Drive an MCP server with the official Python SDK client (stdio, or Streamable HTTP);
print a JSON summary.

Runs inside the separate SDK virtualenv (``tests/interop/peers.py: python_sdk_python()``),
never in the project's own: it imports ``mcp`` and nothing of ``mcp_ref``.

Usage::

    <sdk python> sdk_client.py <server program> [<server args>...]
    <sdk python> sdk_client.py --url <Streamable HTTP endpoint> [<protocol version>]

The server (for the interop tests: mcp-ref's everything server) is started by the SDK's
``stdio_client``, or already listens at the URL.  The script makes a fixed list of requests, each one a *step*, and
prints one JSON object on stdout::

    {"initialize": {...}, "steps": {name: <wire-format result>}, "errors": {name: "..."},
     "progress": [[progress, total, message], ...], "logs": [<log params>, ...],
     "sampling": [<sampling/createMessage params>, ...]}

Results are dumped in wire format (camelCase, ``_meta``), so the test checks what crossed
the wire as the SDK understood it.  A step that raises is recorded in ``errors`` with the
exception type and message and the script goes on; the exit code is 0 unless the
connection itself failed (then 1, with the reason on stderr).  Every request is bounded
(``STEP_TIMEOUT`` seconds), and the whole run by ``TOTAL_TIMEOUT``.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp import types as mt

STEP_TIMEOUT = 10.0
"""Seconds allowed for one request."""
TOTAL_TIMEOUT = 40.0
"""Seconds allowed for the whole run."""

SAMPLING_ANSWER = "This is a test response from the SDK client"

warnings.simplefilter("ignore")  # the SDK's deprecation notes (logging, SEP-2577) on stderr


def _dump(value: Any) -> Any:
    """A pydantic model (or list of them) in wire format; other values unchanged."""
    if isinstance(value, list):
        return [_dump(v) for v in value]
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return value


@asynccontextmanager
async def _transport(argv: list[str]) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio client starting ``argv``, or with ``--url URL [VERSION]`` its
    Streamable HTTP client (asking for protocol ``VERSION`` when given)."""
    if argv[0] != "--url":
        # The SDK passes the child only a few safe environment variables; run it in our
        # working directory so ``python -m <module>`` finds the project's package.
        params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=os.getcwd())
        async with stdio_client(params) as (read, write):
            yield read, write
        return
    from mcp.client import session as sdk_session
    from mcp.client.streamable_http import streamable_http_client

    if len(argv) > 2:
        # The version the SDK's initialize asks for (its latest otherwise).
        sdk_session.LATEST_HANDSHAKE_VERSION = argv[2]  # type: ignore[attr-defined]
    async with streamable_http_client(argv[1]) as (read, write, *_):
        yield read, write


async def run(argv: list[str]) -> dict[str, Any]:
    """Connect to the server started by ``argv``, run every step, return the summary."""
    summary: dict[str, Any] = {
        "initialize": None,
        "steps": {},
        "errors": {},
        "progress": [],
        "logs": [],
        "sampling": [],
    }

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        summary["progress"].append([progress, total, message])

    async def on_log(params: mt.LoggingMessageNotificationParams) -> None:
        summary["logs"].append(_dump(params))

    async def on_sampling(
        context: Any, params: mt.CreateMessageRequestParams
    ) -> mt.CreateMessageResult:
        summary["sampling"].append(_dump(params))
        return mt.CreateMessageResult(
            role="assistant",
            content=mt.TextContent(type="text", text=SAMPLING_ANSWER),
            model="sdk-test-model",
            stop_reason="endTurn",
        )

    async with (
        _transport(argv) as (read, write),
        ClientSession(
            read,
            write,
            read_timeout_seconds=STEP_TIMEOUT,
            sampling_callback=on_sampling,
            logging_callback=on_log,
        ) as session,
    ):
        init = await session.initialize()
        summary["initialize"] = _dump(init)

        async def step(name: str, call: Callable[[], Awaitable[Any]]) -> None:
            try:
                with anyio.fail_after(STEP_TIMEOUT):
                    summary["steps"][name] = _dump(await call())
            except Exception as exc:  # recorded for the test to report
                code = getattr(exc, "code", None)
                summary["errors"][name] = f"{type(exc).__name__} (code {code}): {exc}"

        await step("ping", session.send_ping)
        await step("list_tools", session.list_tools)
        await step("list_resources", session.list_resources)
        await step("list_resource_templates", session.list_resource_templates)
        await step("list_prompts", session.list_prompts)
        await step("echo", lambda: session.call_tool("echo", {"text": "hello from the SDK"}))
        await step("test_simple_text", lambda: session.call_tool("test_simple_text", {}))
        await step(
            "test_tool_with_progress",
            lambda: session.call_tool("test_tool_with_progress", {}, progress_callback=on_progress),
        )
        await step("test_error_handling", lambda: session.call_tool("test_error_handling", {}))
        await step("get_weather", lambda: session.call_tool("get_weather", {"city": "Chicago"}))
        await step("set_logging_level", lambda: session.set_logging_level("debug"))
        await step("test_tool_with_logging", lambda: session.call_tool("test_tool_with_logging"))
        await step(
            "test_sampling",
            lambda: session.call_tool("test_sampling", {"prompt": "Say something"}),
        )
        await step("read_static_text", lambda: session.read_resource("test://static-text"))
        await step("read_static_binary", lambda: session.read_resource("test://static-binary"))
        await step("read_template", lambda: session.read_resource("test://template/42/data"))
        await step(
            "get_prompt",
            lambda: session.get_prompt(
                "test_prompt_with_arguments", {"arg1": "alpha", "arg2": "beta"}
            ),
        )
        await step(
            "complete",
            lambda: session.complete(
                mt.PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
                {"name": "arg1", "value": "te"},
            ),
        )
        await step("unknown_tool", lambda: session.call_tool("no_such_tool", {}))
    return summary


async def main_async(argv: list[str]) -> int:
    with anyio.fail_after(TOTAL_TIMEOUT):
        summary = await run(argv)
    json.dump(summary, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
    return 0


def main() -> int:
    """Entry point: returns the exit status."""
    if len(sys.argv) < 2:
        print(
            f"usage: {sys.argv[0]} <server program> [args...] | --url URL [VERSION]",
            file=sys.stderr,
        )
        return 2
    try:
        return anyio.run(main_async, sys.argv[1:])
    except Exception as exc:
        print(f"sdk_client: connection failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

"""Our HTTP client, as the conformance suite's client mode runs it.

``conformance client --command "python tests/interop/conformance_client.py" ...`` starts
this script once per scenario with the scenario's server URL as the last argument and
the scenario's name in ``MCP_CONFORMANCE_SCENARIO``.  It connects with
:func:`mcp_ref.client.open_http_client`, does what the scenario asks, and exits 0; any
failure exits 1 with the reason on stderr, and so does a scenario it does not know (so
no new scenario of the suite passes by default).  OAuth scenarios (``auth/...``) are not
supported yet: the client says so on stderr (:data:`NO_OAUTH`) and tries a plain
connection, which those servers refuse (401).  A scenario whose checks hold only for a
client that declines to authorize (``auth/resource-mismatch``) would pass for the wrong
reason; tests/interop/test_conformance.py counts no auth scenario as passed while
:data:`NO_OAUTH` is in the client's stderr.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import trio

from mcp_ref import types as t
from mcp_ref.client import open_http_client

TIMEOUT_SECONDS = 25.0

NO_OAUTH = "mcp-ref conformance client: OAuth is not built; connecting without authorization"
"""Written to stderr for every ``auth/...`` scenario until the client can authorize."""


def accept_with_defaults(params: Any) -> t.ElicitResult:
    """Answer ``elicitation/create`` by accepting every field's schema default.

    Source: 2025-11-25 elicitation (SEP-1034: defaults of primitive fields).
    """
    content: dict[str, Any] = {}
    schema = getattr(params, "requested_schema", None)
    for name, prop in (getattr(schema, "properties", None) or {}).items():
        default = getattr(prop, "default", None)
        if default is not None:
            content[name] = default
    return t.ElicitResult(action="accept", content=content)


async def run(scenario: str, url: str) -> None:
    kw: dict[str, Any] = {
        "client_info": t.Implementation(name="mcp-ref-conformance-client", version="1.0.0")
    }
    if scenario.startswith("elicitation"):
        kw["elicitation_handler"] = accept_with_defaults
    if scenario.startswith("auth/"):
        print(NO_OAUTH, file=sys.stderr, flush=True)
    with trio.fail_after(TIMEOUT_SECONDS):
        async with open_http_client(url, **kw) as client:
            if scenario == "initialize":
                return
            tools = {tool.name: tool for tool in await client.list_tools()}
            if scenario == "json-schema-2020-12-preservation":
                # Round-trip the focal tool's inputSchema verbatim through the echo tool:
                # the suite flags any JSON Schema 2020-12 keyword the client lost.
                schema = tools["json_schema_2020_12_tool"].input_schema
                result = await client.call_tool("json_schema_echo", {"schema": schema})
            elif scenario == "tools_call":
                result = await client.call_tool("add_numbers", {"a": 2, "b": 3})
            elif scenario == "elicitation-sep1034-client-defaults":
                result = await client.call_tool("test_client_elicitation_defaults", {})
            elif scenario == "sse-retry":
                result = await client.call_tool("test_reconnection", {})
            else:
                # An unknown scenario fails (exit 1), so none passes by default.
                raise RuntimeError(f"unknown scenario {scenario!r}; tools: {sorted(tools)}")
            if result.is_error:
                raise RuntimeError(f"tool failed: {result.content}")
            print(result.content, file=sys.stderr)


def main() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    if len(sys.argv) < 2:
        print("usage: conformance_client.py <url>", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    try:
        trio.run(run, scenario, sys.argv[-1])
    except Exception as exc:
        print(f"conformance client failed in {scenario!r}: {exc!r}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

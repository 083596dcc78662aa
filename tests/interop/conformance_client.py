"""Our HTTP client, as the conformance suite's client mode runs it.

``conformance client --command "python tests/interop/conformance_client.py" ...`` starts
this script once per scenario with the scenario's server URL as the last argument and
the scenario's name in ``MCP_CONFORMANCE_SCENARIO``.  It connects with
:func:`mcp_ref.client.open_http_client`, does what the scenario asks, and exits 0; any
failure exits 1 with the reason on stderr, and so does a scenario it does not know (so
no new scenario of the suite passes by default).

OAuth scenarios (``auth/...``): the client opens with
:class:`~mcp_ref.client.OAuthClientOptions` and signs in when the server answers 401.
The suite's fake authorization server redirects at once, so the browser step
(:func:`follow_authorization`) GETs the authorization URL and hands back its
``Location``.  Credentials the suite hands out (a pre-registered client, the client
credentials extension, with a secret or a private key for ``private_key_jwt``; the
enterprise IdP's identity assertion; a workload's JWT) come in
``MCP_CONFORMANCE_CONTEXT`` (JSON); the DPoP scenarios sign with a key made for the
run.  An auth scenario the client cannot do (:data:`UNSUPPORTED_AUTH`, none now) still
tries a plain connection and says so on
stderr (:data:`NO_OAUTH`); tests/interop/test_conformance.py counts no auth scenario as
passed while :data:`NO_OAUTH` is in the client's stderr.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import sys
from typing import Any
from urllib.parse import urlsplit

import trio

from mcp_ref import types as t
from mcp_ref._modern import MODERN_VERSIONS
from mcp_ref.client import (
    IdentityProvider,
    OAuthClientOptions,
    PrivateKeySigner,
    open_http_client,
)

TIMEOUT_SECONDS = 25.0

NO_OAUTH = (
    "mcp-ref conformance client: this OAuth scenario is not built; connecting without authorization"
)
"""Written to stderr for an ``auth/...`` scenario the client cannot sign in for."""

UNSUPPORTED_AUTH: tuple[str, ...] = ()
"""The auth scenarios whose mechanism mcp-ref does not implement."""

REDIRECT_URI = "http://localhost:3000/callback"
"""Our redirect URI: the suite's authorization server redirects to it at once, and the
browser step reads the redirect instead of following it."""

CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
"""The client ID metadata document URL the suite's ``auth/basic-cimd`` expects."""


def _follow(url: str) -> str:
    parts = urlsplit(url)
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = kind(parts.netloc, timeout=10)
    try:
        conn.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""))
        response = conn.getresponse()
        location = response.getheader("Location")
        if response.status not in (301, 302, 303, 307, 308) or location is None:
            raise RuntimeError(f"the authorization endpoint answered {response.status}")
        return location
    finally:
        conn.close()


async def follow_authorization(url: str) -> str:
    """The browser step as the suite's fake authorization server allows it: GET the
    authorization URL and return where it redirects (not followed)."""
    return await trio.to_thread.run_sync(_follow, url)


def auth_options(scenario: str) -> OAuthClientOptions | None:
    """How to sign in for ``scenario`` (None: a scenario we cannot sign in for)."""
    if scenario in UNSUPPORTED_AUTH:
        return None
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    client_id, secret = context.get("client_id"), context.get("client_secret")
    if scenario.startswith("auth/client-credentials"):
        signer = None
        if "private_key_pem" in context:
            algorithm = context.get("signing_algorithm", "ES256")
            signer = PrivateKeySigner(context["private_key_pem"], algorithm=algorithm)
        return OAuthClientOptions(
            grant="client_credentials", client_id=client_id, client_secret=secret, signer=signer
        )
    if "idp_id_token" in context:  # enterprise-managed authorization (cross-app access)
        idp = IdentityProvider(
            token_endpoint=context["idp_token_endpoint"],
            subject_token=context["idp_id_token"],
            client_id=context.get("idp_client_id"),
        )
        return OAuthClientOptions(
            grant="enterprise", client_id=client_id, client_secret=secret, identity_provider=idp
        )
    if "valid_jwt" in context:  # workload identity federation
        return OAuthClientOptions(
            grant="jwt_bearer", client_id=client_id, assertion=context["valid_jwt"]
        )
    return OAuthClientOptions(
        dpop=PrivateKeySigner.generate() if scenario.startswith("auth/dpop") else None,
        redirect_uri=REDIRECT_URI,
        authorize=follow_authorization,
        client_id=client_id,
        client_secret=secret,
        client_metadata_url=CLIENT_METADATA_URL,
        client_name="mcp-ref-conformance-client",
    )


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


MODERN_SCENARIOS = (
    "request-metadata",
    "sep-2322-client-request-state",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
    "json-schema-ref-no-deref",
)
"""The 2026-07-28 client scenarios run by :func:`run_modern` (``tools_call`` is the
handshake era's too)."""

_SAMPLE: dict[str, Any] = {"string": "value", "integer": 1, "number": 1.5, "boolean": True}


def sample_arguments(schema: Any) -> dict[str, Any]:
    """Arguments for a tool: a sample value for each required primitive property."""
    props = schema.get("properties") or {} if isinstance(schema, dict) else {}
    required = schema.get("required") or [] if isinstance(schema, dict) else []
    return {
        name: _SAMPLE[props[name].get("type")]
        for name in required
        if isinstance(props.get(name), dict) and props[name].get("type") in _SAMPLE
    }


async def run_modern(scenario: str, client: Any) -> None:
    """A 2026-07-28 scenario: list the tools and call each one (with the context's
    ``toolCalls`` when the suite gives them); for ``http-standard-headers`` also list
    and read every resource and get every prompt."""
    tools = await client.list_tools()
    if scenario == "json-schema-ref-no-deref":
        return  # listing is the test: the $ref is never fetched
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    calls = context.get("toolCalls")
    if calls is None:
        calls = [
            {"name": tool.name, "arguments": sample_arguments(tool.input_schema)} for tool in tools
        ]
    for call in calls:
        result = await client.call_tool(call["name"], call.get("arguments"))
        print(call["name"], result.content, file=sys.stderr)
    if scenario == "http-standard-headers":
        for resource in await client.list_resources():
            await client.read_resource(resource.uri)
        for prompt in await client.list_prompts():
            await client.get_prompt(prompt.name, {})


async def run(scenario: str, url: str) -> None:
    kw: dict[str, Any] = {
        "client_info": t.Implementation(name="mcp-ref-conformance-client", version="1.0.0")
    }
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "")
    if version in MODERN_VERSIONS:
        kw["era"] = "auto"  # the server/discover probe, then the modern era
    if scenario.startswith("elicitation") or scenario in MODERN_SCENARIOS:
        kw["elicitation_handler"] = accept_with_defaults
    if scenario.startswith("auth/"):
        options = auth_options(scenario)
        if options is None:
            print(NO_OAUTH, file=sys.stderr, flush=True)
        else:
            kw["auth"] = options
    with trio.fail_after(TIMEOUT_SECONDS):
        async with open_http_client(url, **kw) as client:
            if scenario == "initialize":
                return
            if scenario in MODERN_SCENARIOS:
                return await run_modern(scenario, client)
            tools = {tool.name: tool for tool in await client.list_tools()}
            if scenario.startswith("auth/"):
                # Signed in (tools/list needed the token); a tool call may ask for more
                # scopes (step-up).  Its result does not matter to the suite.
                if tools:
                    await client.call_tool(next(iter(tools)), {})
                return
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

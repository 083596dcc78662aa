"""Sign in to a protected MCP server with the official Python SDK client's OAuth support
(``OAuthClientProvider``), then call two tools; print a JSON summary.

Runs inside the SDK's own virtualenv (``tests/interop/peers.py``), never in the
project's: it imports ``mcp`` and nothing of ``mcp_ref``.

Usage::

    <sdk python> sdk_oauth_client.py <Streamable HTTP endpoint>

The browser step is automated: the redirect handler GETs the authorization URL (the
test's authorization server approves at once) and reads the code from the redirect's
``Location``, which the callback handler hands back.  Summary::

    {"whoami": "...", "wipe": "...", "authorizations": ["<authorize URL>", ...],
     "errors": {...}}
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

warnings.simplefilter("ignore")

TOTAL_TIMEOUT = 40.0
REDIRECT = "http://127.0.0.1:9/callback"


class Memory:
    """Token storage in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def run(url: str) -> dict[str, Any]:
    summary: dict[str, Any] = {"authorizations": [], "errors": {}}
    pending: list[AuthorizationCodeResult] = []

    async def redirect_handler(authorization_url: str) -> None:
        summary["authorizations"].append(authorization_url)
        async with httpx2.AsyncClient() as browser:
            answer = await browser.get(authorization_url)
        location = answer.headers.get("location", "")
        query = parse_qs(urlsplit(location).query)
        if "code" not in query:
            raise RuntimeError(f"no code: {answer.status_code} {location} {answer.text}")
        pending.append(
            AuthorizationCodeResult(
                code=query["code"][0],
                state=query.get("state", [None])[0],
                iss=query.get("iss", [None])[0],
            )
        )

    async def callback_handler() -> AuthorizationCodeResult:
        return pending.pop()

    metadata = OAuthClientMetadata(
        redirect_uris=[REDIRECT],
        token_endpoint_auth_method="none",
        grant_types=["authorization_code"],
        client_name="sdk-oauth-interop",
    )
    auth = OAuthClientProvider(
        server_url=url,
        client_metadata=metadata,
        storage=Memory(),
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    async with (
        create_mcp_http_client(auth=auth) as http,
        streamable_http_client(url, http_client=http) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for name in ("whoami", "wipe"):
            try:
                result = await session.call_tool(name, {})
                summary[name] = result.content[0].text  # type: ignore[union-attr]
            except Exception as exc:
                summary["errors"][name] = f"{type(exc).__name__}: {exc}"
    return summary


async def main() -> None:
    with anyio.fail_after(TOTAL_TIMEOUT):
        summary = await run(sys.argv[1])
    print(json.dumps(summary))


if __name__ == "__main__":
    anyio.run(main)

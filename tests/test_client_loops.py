"""The three clients (trio, asyncio, blocking) are loops around one client core: they
keep a caller's progress token alike and raise the one SessionClosed."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import pytest
import trio

import mcp_ref
from mcp_ref import Progress, blocking
from mcp_ref import asyncio as mcp_asyncio
from mcp_ref import client as mcp_client

from .test_asyncio_drivers import raw_server, text_of

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="stdio tests need POSIX")

LIMIT = 20
CALL = {"name": "anything", "_meta": {"progressToken": "mine"}}


def outcome(result: Any, seen: list[Progress]) -> tuple[Any, list[Any]]:
    """(the token the server saw, the tokens of the progress we were given)."""
    return json.loads(text_of(result)), [p.progress_token for p in seen]


async def trio_client() -> tuple[Any, Any]:
    seen: list[Progress] = []
    with trio.fail_after(LIMIT):
        async with mcp_client.open_stdio_client(raw_server("progress")) as client:
            result = await client.request("tools/call", CALL, on_progress=seen.append)
        async with mcp_client.open_stdio_client(raw_server("exit")) as client:
            with pytest.raises(mcp_ref.SessionClosed) as closed:
                await client.call_tool("anything")
    return outcome(result, seen), closed.value


async def asyncio_client() -> tuple[Any, Any]:
    seen: list[Progress] = []
    async with asyncio.timeout(LIMIT):
        async with mcp_asyncio.open_stdio_client(raw_server("progress")) as client:
            result = await client.request("tools/call", CALL, on_progress=seen.append)
        async with mcp_asyncio.open_stdio_client(raw_server("exit")) as client:
            with pytest.raises(mcp_ref.SessionClosed) as closed:
                await client.call_tool("anything")
    return outcome(result, seen), closed.value


def blocking_client() -> tuple[Any, Any]:
    seen: list[Progress] = []
    with blocking.connect_stdio(raw_server("progress"), timeout=LIMIT) as client:
        result = client.request("tools/call", CALL, on_progress=seen.append)
    with blocking.connect_stdio(raw_server("exit"), timeout=LIMIT) as client:
        with pytest.raises(mcp_ref.SessionClosed) as closed:
            client.call_tool("anything")
    return outcome(result, seen), closed.value


@pytest.mark.spec("2025-06-18/basic/utilities/progress#progress-flow.1")
def test_every_client_keeps_the_callers_token_and_raises_one_session_closed() -> None:
    runs = {
        "trio": trio.run(trio_client),
        "asyncio": asyncio.run(asyncio_client()),
        "blocking": blocking_client(),
    }
    for name, (progress, closed) in runs.items():
        assert progress == ("mine", ["mine", "mine"]), name  # "other" was dropped
        assert isinstance(closed, mcp_ref.SessionClosed), name
        assert isinstance(closed, mcp_asyncio.SessionClosed | blocking.SessionClosed), name
        assert closed.reason, name

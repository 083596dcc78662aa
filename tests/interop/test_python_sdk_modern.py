"""The official Python SDK's client (``mcp`` 2.3.0) against our server in the 2026-07-28
era: its high-level ``Client`` pinned to ``2026-07-28`` and in its default ``auto`` mode
(the ``server/discover`` probe), over stdio and Streamable HTTP (JSON and SSE answers).

``sdk_scripts/sdk_client_modern.py`` runs in the SDK's own virtualenv and makes a fixed
list of requests, among them tools whose handlers ask the client for elicitation,
sampling and roots: our server answers ``input_required`` and the SDK retries with
``inputResponses`` (2026-07-28/basic/patterns/mrtr).  The other direction, our client
against servers written with the SDK, is in test_python_sdk.py.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
import trio

from . import peers
from .test_python_sdk import LIMIT, our_server_cmd, run_sdk_client, texts

pytestmark = [
    pytest.mark.interop,
    pytest.mark.skipif(sys.platform == "win32", reason="stdio interop tests need POSIX"),
]


@pytest.fixture(autouse=True, scope="module")
def _need_python_sdk() -> None:
    """Skip every test here, with the installer's reason, when the SDK venv is missing."""
    if peers.python_sdk_python() is None:
        pytest.skip(peers.why_missing("python-sdk") or "the Python SDK venv is unavailable")


async def run_modern_client(mode: str, target: list[str]) -> dict[str, Any]:
    """Run sdk_client_modern.py in ``mode`` against ``target``; return its summary."""
    return await run_sdk_client([mode, *target], script="sdk_client_modern.py")


def check_modern(summary: dict[str, Any]) -> None:
    """What every run must show: the modern era, and each input round answered."""
    assert summary["protocol_version"] == "2026-07-28"
    errors = summary["errors"]
    assert set(errors) == {"unknown_tool"}, errors
    assert "-32602" in errors["unknown_tool"]
    steps = summary["steps"]
    assert steps["echo"]["resultType"] == "complete"
    assert texts(steps["echo"]) == ["hello from the SDK"]
    assert "ttlMs" in steps["list_tools"] and "cacheScope" in steps["list_tools"]
    # Each handler asked once, through input_required, and got the SDK's answer back.
    assert [e["message"] for e in summary["elicitations"]] == ["Your name?"]
    assert "ada" in " ".join(texts(steps["test_elicitation"]))
    assert len(summary["sampling"]) == 1
    assert "sampled by the SDK" in " ".join(texts(steps["test_sampling"]))
    assert summary["roots_asked"] == 1
    assert "file:///sdk-root" in " ".join(texts(steps["test_input_required_result_list_roots"]))
    assert steps["read_static_text"]["contents"][0]["uri"] == "test://static-text"
    assert texts({"content": [m["content"] for m in steps["get_prompt"]["messages"]]})


@pytest.mark.parametrize("mode", ["2026-07-28", "auto"])
async def test_sdk_modern_client_over_stdio(mode: str) -> None:
    with trio.fail_after(LIMIT):
        summary = await run_modern_client(mode, our_server_cmd())
    check_modern(summary)


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
@pytest.mark.parametrize("mode", ["2026-07-28", "auto"])
async def test_sdk_modern_client_over_http(mode: str, json_response: bool) -> None:
    from mcp_ref.examples.everything import make_server
    from mcp_ref.trio import open_http_server

    with trio.fail_after(LIMIT):
        async with open_http_server(make_server(), json_response=json_response) as info:
            summary = await run_modern_client(mode, ["--url", info.url])
    check_modern(summary)

"""Interop with the official Python SDK (``mcp`` 2.3.0) in the 2026-07-28 era, both
directions.

* The SDK's client against our server: its high-level ``Client`` pinned to
  ``2026-07-28`` and in its default ``auto`` mode (the ``server/discover`` probe), over
  stdio and Streamable HTTP (JSON and SSE answers).  ``sdk_scripts/sdk_client_modern.py``
  runs in the SDK's own virtualenv and makes a fixed list of requests, among them tools
  whose handlers ask the client for elicitation, sampling and roots: our server answers
  ``input_required`` and the SDK retries with ``inputResponses``
  (2026-07-28/basic/patterns/mrtr).
* Our client (``era="modern"`` and ``era="auto"``) against a server written with the
  SDK: ``sdk_scripts/sdk_server.py modern``, the SDK's ``MCPServer`` (which serves both
  eras on one endpoint: the client's first request, or over HTTP its
  ``MCP-Protocol-Version`` header, decides) over stdio and over its Streamable HTTP app
  (uvicorn, SSE and JSON answers).  Its handlers ask for input by returning the SDK's
  ``InputRequiredResult``: one elicitation (a tool, a prompt, a resource template), and
  a tool in two rounds (sampling and roots together, then an elicitation, its
  ``requestState`` sealed by the SDK).  Our client answers through its
  ``elicitation_handler``, ``sampling_handler`` and ``roots``.  And ``subscribe`` (our
  client's ``subscriptions/listen``) receives the update a tool publishes on the SDK's
  subscription bus (stdio and SSE; a JSON answer cannot stream).  The same SDK
  endpoint also serves our client in the handshake era (``era="legacy"``).

What the SDK 2.3.0 server does not do in the 2026-07-28 era, so not tested here: a
handler's own server-to-client requests (``ctx.elicit()``, sampling, roots) fail there
with the SDK's ``NoBackChannelError`` (-32600), so a handler asks by returning
``InputRequiredResult`` itself; over HTTP with JSON answers nothing reaches the client
before the result, so no progress (over SSE and stdio ``count_to``'s progress arrives).  The handshake-era direction of
our client against SDK servers is in test_python_sdk.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from mcp_ref import SUPPORTED_VERSIONS, Notification, Progress
from mcp_ref import types as t
from mcp_ref.client import Client, open_http_client, open_stdio_client

from . import peers
from .test_python_sdk import LIMIT, SCRIPTS, our_server_cmd, run_sdk_client, sdk_python, texts

spec = pytest.mark.spec

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


# ------------------------------------------------ our client against the SDK's server


class Answers:
    """Our client's input handlers for sdk_server.py's ``modern`` mode; they record what
    they were asked.  ``name_action`` is the elicitation action for ``"Your name?"``."""

    def __init__(self, name_action: str = "accept") -> None:
        self.name_action = name_action
        self.elicitations: list[str] = []
        self.sampled: list[t.CreateMessageRequestParams] = []

    def elicit(self, params: Any) -> t.ElicitResult:
        self.elicitations.append(params.message)
        if params.message.startswith("Password for"):
            return t.ElicitResult(action="accept", content={"password": "open sesame"})
        if params.message == "Confirm?":
            return t.ElicitResult(action="accept", content={"ok": True})
        if self.name_action != "accept":
            return t.ElicitResult(action=self.name_action)
        return t.ElicitResult(action="accept", content={"name": "ada"})

    def sample(self, params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        self.sampled.append(params)
        return t.CreateMessageResult(
            role="assistant", content=t.TextContent(text="hi from mcp-ref"), model="scripted"
        )

    def options(self) -> dict[str, Any]:
        """The keywords giving these handlers (and one root) to our client."""
        return {
            "elicitation_handler": self.elicit,
            "sampling_handler": self.sample,
            "roots": [t.Root(uri="file:///mcp-ref-root", name="root")],
        }


@asynccontextmanager
async def sdk_http_server(how: str) -> AsyncIterator[str]:
    """Run ``sdk_server.py modern`` over Streamable HTTP (``how``: ``--http`` for SSE
    answers, ``--http-json``); yield its URL (its first stdout line); terminate it."""
    proc = await trio.lowlevel.open_process(
        [sdk_python(), str(SCRIPTS / "sdk_server.py"), "modern", how],
        cwd=peers.repo_root(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert proc.stdout is not None
        line = b""
        while not line.endswith(b"\n"):
            chunk = await proc.stdout.receive_some(1024)
            assert chunk, f"sdk_server.py exited before printing its URL: {line!r}"
            line += chunk
        url = line.decode().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield url
    finally:
        proc.terminate()
        with trio.move_on_after(5):
            await proc.wait()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        if proc.stdout is not None:
            await proc.stdout.aclose()


@asynccontextmanager
async def our_client_of_sdk(era: str, transport: str, answers: Answers) -> AsyncIterator[Client]:
    """Our client in ``era`` connected to ``sdk_server.py modern`` over ``transport``
    (``stdio``, ``sse``, ``json``)."""
    if transport == "stdio":
        command = [sdk_python(), str(SCRIPTS / "sdk_server.py"), "modern"]
        async with open_stdio_client(
            command, era=era, shutdown_grace=2.0, **answers.options()
        ) as client:
            yield client
        return
    how = "--http-json" if transport == "json" else "--http"
    async with (
        sdk_http_server(how) as url,
        open_http_client(url, era=era, **answers.options()) as client,
    ):
        yield client


@spec(
    "2026-07-28/basic/patterns/mrtr#client-requirements-basic-workflow.1",
    "2026-07-28/basic/patterns/mrtr#client-requirements-basic-workflow.3",
)
@pytest.mark.parametrize("transport", ["stdio", "sse", "json"])
@pytest.mark.parametrize("era", ["modern", "auto"])
async def test_our_client_against_sdk_server_modern(era: str, transport: str) -> None:
    answers = Answers()
    with trio.fail_after(LIMIT):
        async with our_client_of_sdk(era, transport, answers) as client:
            await _check_sdk_modern(client, answers, progress=transport != "json")


async def _check_sdk_modern(client: Client, answers: Answers, *, progress: bool) -> None:
    # Both eras' client settle on 2026-07-28: the SDK answers the probe as a modern server.
    assert client.era == "modern"
    assert client.protocol_version == "2026-07-28"
    discovered = await client.discover()
    assert "2026-07-28" in discovered.supported_versions
    assert client.server_info.name == "sdk-interop-server"
    assert client.server_info.version == "9.9.9"
    assert client.instructions == "An SDK test server."
    assert client.server_capabilities.tools is not None

    tools = {tool.name for tool in await client.list_tools()}
    assert {"add", "forecast", "count_to", "explode", "ask_name", "interview"} <= tools
    added = await client.call_tool("add", {"a": 2, "b": 3})
    assert added.structured_content == {"result": 5}
    assert not added.is_error
    exploded = await client.call_tool("explode", {})
    assert exploded.is_error

    steps: list[Progress] = []
    counted = await client.call_tool("count_to", {"n": 2}, on_progress=steps.append)
    assert counted.structured_content == {"result": "counted to 2"}
    if progress:  # JSON answers carry nothing but the result
        assert [(p.progress, p.total) for p in steps] == [(1, 2), (2, 2)]

    greeting = await client.read_resource("sdk://greeting")
    (text,) = greeting.contents
    assert isinstance(text, t.TextResourceContents)
    assert text.text == "Hello from the Python SDK"
    review = await client.get_prompt("review", {"code": "x = 1"})
    assert isinstance(review.messages[0].content, t.TextContent)
    assert review.messages[0].content.text == "Please review this python code:\nx = 1"

    # Input rounds: the SDK's handlers answer InputRequiredResult, our client fills it
    # from its handlers and retries (one round each, then the two-round tool).
    hello = await client.call_tool("ask_name", {})
    assert [c.text for c in hello.content if isinstance(c, t.TextContent)] == ["Hello, ada!"]
    prompt = await client.get_prompt("personal_greeting", {})
    assert isinstance(prompt.messages[0].content, t.TextContent)
    assert prompt.messages[0].content.text == "Please greet ada warmly."
    secret = await client.read_resource("sdk://vault/k1")
    (secret_text,) = secret.contents
    assert isinstance(secret_text, t.TextResourceContents)
    assert secret_text.text == "the secret of k1"
    interview = await client.call_tool("interview", {})
    (report,) = [c.text for c in interview.content if isinstance(c, t.TextContent)]
    assert json.loads(report) == {
        "said": "hi from mcp-ref",
        "roots": ["file:///mcp-ref-root"],
        "confirmed": True,
    }
    assert answers.elicitations == ["Your name?", "Your name?", "Password for k1?", "Confirm?"]
    (sampled,) = answers.sampled
    assert sampled.max_tokens == 20


async def test_our_client_declines_an_sdk_elicitation() -> None:
    answers = Answers(name_action="decline")
    with trio.fail_after(LIMIT):
        async with our_client_of_sdk("modern", "stdio", answers) as client:
            hello = await client.call_tool("ask_name", {})
    assert [c.text for c in hello.content if isinstance(c, t.TextContent)] == [
        "Hello, stranger (decline)"
    ]
    assert answers.elicitations == ["Your name?"]


@pytest.mark.parametrize("transport", ["stdio", "sse"])
async def test_our_client_listens_to_an_sdk_server(transport: str) -> None:
    # subscribe() keeps a subscriptions/listen open; the SDK's bus delivers the update
    # that its tool publishes on that stream.
    updates: list[Notification] = []
    updated = trio.Event()

    def on_notification(note: Notification) -> None:
        if note.method == "notifications/resources/updated":
            updates.append(note)
            updated.set()

    with trio.fail_after(LIMIT):
        async with our_client_of_sdk("modern", transport, Answers()) as client:
            client.on_notification = on_notification
            await client.subscribe("sdk://greeting")
            touched = await client.call_tool("touch", {"uri": "sdk://greeting"})
            assert not touched.is_error
            await updated.wait()
            await client.unsubscribe("sdk://greeting")
    (update,) = updates
    assert isinstance(update.params, t.ResourceUpdatedNotificationParams)
    assert update.params.uri == "sdk://greeting"


@pytest.mark.parametrize("transport", ["stdio", "sse", "json"])
async def test_our_legacy_client_against_the_same_sdk_server(transport: str) -> None:
    # The same SDK endpoint serves the handshake era to a client that opens with
    # initialize (over HTTP: a Mcp-Session-Id session), next to the modern one.
    with trio.fail_after(LIMIT):
        async with our_client_of_sdk("legacy", transport, Answers()) as client:
            assert client.era == "legacy"
            assert client.protocol_version in SUPPORTED_VERSIONS
            assert client.protocol_version != "2026-07-28"
            assert client.server_info.name == "sdk-interop-server"
            added = await client.call_tool("add", {"a": 2, "b": 3})
            assert added.structured_content == {"result": 5}
            greeting = await client.read_resource("sdk://greeting")
            (text,) = greeting.contents
            assert isinstance(text, t.TextResourceContents)
            assert text.text == "Hello from the Python SDK"

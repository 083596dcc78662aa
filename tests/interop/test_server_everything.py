"""Our client against the official reference server, ``@modelcontextprotocol/server-everything``,
over stdio.

The server is a real Node.js process (installed by :mod:`tests.interop.peers`; every
test skips with the installer's reason when node or the registry is missing).  Each test
starts its own server: a start takes about 0.2 s, and a fresh server keeps one test's
toggles and subscriptions out of the next.

What the server does is pinned in ``tests/interop/peers.py`` (server-everything
2026.8.31); the facts the assertions rely on (tool names, texts, the tools it registers
only after ``notifications/initialized`` for clients that declare sampling, elicitation
or roots) are from that version.

Real time, not a MockClock: every test runs under ``trio.fail_after(LIMIT)``, and waits
for events (a notification arriving), never for a fixed delay.
"""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from mcp_ref import SUPPORTED_VERSIONS, McpError, Progress, RequestTimeout
from mcp_ref import types as t
from mcp_ref._errors import REQUEST_TIMEOUT
from mcp_ref.client import Client, open_stdio_client
from mcp_ref.events import Notification
from mcp_ref.trio import SessionClosed

from . import peers

pytestmark = [
    pytest.mark.interop,
    pytest.mark.skipif(sys.platform == "win32", reason="stdio interop tests need POSIX"),
]
spec = pytest.mark.spec

LIMIT = 20.0
"""Seconds allowed for one test (server start included)."""

ALWAYS_TOOLS = {
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "gzip-file-as-resource",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "trigger-long-running-operation",
}
"""Tools server-everything offers to every client."""

CAPABILITY_TOOLS = {"get-roots-list", "trigger-elicitation-request", "trigger-sampling-request"}
"""Tools it registers after ``notifications/initialized``, for clients declaring roots,
elicitation and sampling."""


@pytest.fixture(autouse=True, scope="module")
def _need_server_everything() -> None:
    """Skip every test here, with the installer's reason, when the server is missing.
    (A sync fixture: a skip raised inside a trio test loses its reason.)"""
    if peers.server_everything_cmd() is None:
        pytest.skip(peers.why_missing("server-everything") or "server-everything unavailable")


def everything_cmd() -> list[str]:
    """argv of server-everything on stdio (the fixture above made sure it exists)."""
    cmd = peers.server_everything_cmd()
    assert cmd is not None
    return cmd


class Inbox:
    """Every server notification, with a way to wait for the next one of a method.

    ``on_notification`` and ``on_log`` are the callbacks to give the client.  The lists
    are bounded by the test's own length (a few dozen notifications at most).
    """

    def __init__(self) -> None:
        self.notifications: list[Notification] = []
        self.logs: list[t.LoggingMessageNotificationParams] = []
        self._changed = trio.Event()

    def on_notification(self, notification: Notification) -> None:
        self.notifications.append(notification)
        self._changed.set()
        self._changed = trio.Event()

    def on_log(self, params: t.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    def count(self, method: str) -> int:
        return sum(1 for n in self.notifications if n.method == method)

    async def wait_for(self, method: str, more_than: int = 0) -> Notification:
        """Wait until more than ``more_than`` notifications of ``method`` arrived; return
        the last one.  Bounded by the caller's ``fail_after``."""
        while self.count(method) <= more_than:
            await self._changed.wait()
        return [n for n in self.notifications if n.method == method][-1]


@asynccontextmanager
async def everything(inbox: Inbox | None = None, **client_kw: Any) -> AsyncIterator[Client]:
    """A client connected to a fresh server-everything."""
    inbox = inbox or Inbox()
    async with open_stdio_client(
        everything_cmd(),
        on_notification=inbox.on_notification,
        on_log=inbox.on_log,
        shutdown_grace=1.0,
        **client_kw,
    ) as client:
        yield client


async def list_tools_with(client: Client, inbox: Inbox, wanted: set[str]) -> list[t.Tool]:
    """List the tools until ``wanted`` are all there (a server may add tools, announced by
    ``notifications/tools/list_changed``, after initialization)."""
    method = "notifications/tools/list_changed"
    while True:
        seen = inbox.count(method)
        tools = await client.list_tools()
        if wanted <= {tool.name for tool in tools}:
            return tools
        await inbox.wait_for(method, more_than=seen)


def only_text(result: t.CallToolResult) -> str:
    """The text of a result made of text blocks only."""
    assert all(isinstance(c, t.TextContent) for c in result.content), result
    return "".join(c.text for c in result.content if isinstance(c, t.TextContent))


# --------------------------------------------------------------------------- tests


@spec(
    "2025-06-18/basic/lifecycle#initialization.2",
    "2025-06-18/basic/lifecycle#initialization.4",
    "2025-06-18/basic/lifecycle#version-negotiation.1",
)
async def test_initialize_and_list_every_tool() -> None:
    with trio.fail_after(LIMIT):
        async with everything() as client:
            assert client.server_info.name == "mcp-servers/everything"
            assert client.protocol_version in SUPPORTED_VERSIONS
            caps = client.server_capabilities
            assert caps.tools is not None and caps.prompts is not None
            assert caps.resources is not None and caps.resources.subscribe
            assert caps.logging is not None and caps.completions is not None
            assert client.instructions  # it sends a long usage text

            tools = await client.list_tools()
            by_name = {tool.name: tool for tool in tools}
            assert len(by_name) == len(tools), "duplicate tool names"
            assert ALWAYS_TOOLS <= set(by_name)
            # No sampling/elicitation/roots declared: those tools are not offered.
            assert not CAPABILITY_TOOLS & set(by_name)
            for tool in tools:
                assert tool.input_schema["type"] == "object", tool.name
                assert tool.description, tool.name
            assert by_name["echo"].input_schema["required"] == ["message"]
            structured = by_name["get-structured-content"].output_schema
            assert structured is not None
            assert {"temperature", "conditions", "humidity"} <= set(structured["properties"])
            await client.ping()


async def test_call_tools_and_check_typed_content() -> None:
    with trio.fail_after(LIMIT):
        async with everything() as client:
            await client.list_tools()  # remembers output schemas for the check below

            echoed = await client.call_tool("echo", {"message": "hello, everything"})
            assert not echoed.is_error
            assert only_text(echoed) == "Echo: hello, everything"

            total = await client.call_tool("get-sum", {"a": 2, "b": 0.5})
            assert only_text(total) == "The sum of 2 and 0.5 is 2.5."

            tiny = await client.call_tool("get-tiny-image", {})
            images = [c for c in tiny.content if isinstance(c, t.ImageContent)]
            assert len(images) == 1 and images[0].mime_type == "image/png"
            assert base64.b64decode(images[0].data).startswith(b"\x89PNG\r\n\x1a\n")

            reference = await client.call_tool(
                "get-resource-reference", {"resourceType": "Blob", "resourceId": 2}
            )
            embedded = [c for c in reference.content if isinstance(c, t.EmbeddedResource)]
            assert len(embedded) == 1
            blob = embedded[0].resource
            assert isinstance(blob, t.BlobResourceContents)
            assert blob.uri == "demo://resource/dynamic/blob/2"
            assert base64.b64decode(blob.blob).startswith(b"Resource 2:")

            links = await client.call_tool("get-resource-links", {"count": 2})
            link_items = [c for c in links.content if isinstance(c, t.ResourceLink)]
            assert len(link_items) == 2
            assert all(link.uri.startswith("demo://resource/dynamic/") for link in link_items)

            annotated = await client.call_tool(
                "get-annotated-message", {"messageType": "error", "includeImage": True}
            )
            first = annotated.content[0]
            assert isinstance(first, t.TextContent)
            assert first.annotations is not None and first.annotations.priority == 1
            assert any(isinstance(c, t.ImageContent) for c in annotated.content)

            weather = await client.call_tool("get-structured-content", {"location": "New York"})
            assert weather.structured_content == {
                "temperature": 33,
                "conditions": "Cloudy",
                "humidity": 82,
            }

            # Tool errors come back as results with isError, not as exceptions.
            bad_args = await client.call_tool("echo", {})
            assert bad_args.is_error and "-32602" in only_text(bad_args)
            unknown = await client.call_tool("no-such-tool", {})
            assert unknown.is_error and "not found" in only_text(unknown)


@spec("2025-06-18/basic/utilities/progress#progress-flow.1")
async def test_progress_notifications_reach_on_progress() -> None:
    with trio.fail_after(LIMIT):
        async with everything() as client:
            progress: list[Progress] = []
            result = await client.call_tool(
                "trigger-long-running-operation",
                {"duration": 0.3, "steps": 3},
                on_progress=progress.append,
            )
            assert only_text(result) == (
                "Long running operation completed. Duration: 0.3 seconds, Steps: 3."
            )
            assert [(p.progress, p.total) for p in progress] == [(1, 3), (2, 3), (3, 3)]
            tokens = {p.progress_token for p in progress}
            assert len(tokens) == 1
            (token,) = tokens
            assert isinstance(token, int | str) and not isinstance(token, bool)
            assert all(p.request_id == progress[0].request_id for p in progress)


@spec(
    "2025-06-18/basic/lifecycle#timeouts.1",
    "2025-06-18/basic/lifecycle#timeouts.2",
    "2025-06-18/basic/utilities/cancellation#timing-considerations.1",
)
async def test_timed_out_call_is_cancelled_and_late_progress_is_ignored() -> None:
    """A call that times out raises at once with REQUEST_TIMEOUT; the server (which goes
    on running the operation) sends progress for the dead request while the next call
    runs: that progress must not leak into the new call's callback, and the session
    must stay usable."""
    with trio.fail_after(LIMIT):
        async with everything() as client:
            dead: list[Progress] = []
            start = trio.current_time()
            with pytest.raises(McpError) as info:
                await client.call_tool(
                    "trigger-long-running-operation",
                    {"duration": 0.6, "steps": 3},
                    on_progress=dead.append,
                    timeout=RequestTimeout(seconds=0.1),
                )
            assert info.value.code == REQUEST_TIMEOUT
            assert trio.current_time() - start < 0.6
            assert dead == []

            live: list[Progress] = []
            await client.call_tool(
                "trigger-long-running-operation",
                {"duration": 0.6, "steps": 3},
                on_progress=live.append,
            )
            assert [p.progress for p in live] == [1, 2, 3]
            assert dead == []
            echoed = await client.call_tool("echo", {"message": "still here"})
            assert only_text(echoed) == "Echo: still here"


async def test_killed_server_ends_the_call_with_a_clear_error() -> None:
    """server-everything killed while a call runs: the call raises SessionClosed at once,
    naming the signal and quoting the server's stderr."""
    first_progress = trio.Event()
    errors: list[SessionClosed] = []
    with trio.fail_after(LIMIT):
        async with everything() as client:
            process = client.process
            assert process is not None

            async def long_call() -> None:
                try:
                    await client.call_tool(
                        "trigger-long-running-operation",
                        {"duration": 4, "steps": 20},
                        on_progress=lambda _: first_progress.set(),
                    )
                except SessionClosed as exc:
                    errors.append(exc)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(long_call)
                await first_progress.wait()
                process.send_signal(signal.SIGKILL)
        (error,) = errors
        assert "SIGKILL" in str(error)
        assert "Starting default (STDIO) server" in str(error)  # its stderr tail
        assert process.returncode == -signal.SIGKILL


@spec("2025-06-18/basic/lifecycle#timeouts.1")
async def test_program_that_never_answers_times_out_during_initialize() -> None:
    """A node program that writes one non-JSON line and then ignores its input: opening
    the client fails with REQUEST_TIMEOUT after the configured timeout, and the program
    (which ignores stdin closing) is still shut down."""
    node = everything_cmd()[0]
    script = "process.stdout.write('hello, not json\\n'); setInterval(() => {}, 1000)"
    with trio.fail_after(LIMIT):
        start = trio.current_time()
        with pytest.raises(McpError) as info:
            async with open_stdio_client(
                [node, "-e", script], timeout=RequestTimeout(seconds=0.5), shutdown_grace=0.2
            ):
                pytest.fail("initialize should not succeed")
        elapsed = trio.current_time() - start
    assert info.value.code == REQUEST_TIMEOUT
    assert "initialize" in info.value.message
    assert 0.5 <= elapsed < 5


@spec("2025-06-18/server/utilities/logging#setting-log-level.1")
async def test_log_notifications_reach_on_log() -> None:
    inbox = Inbox()
    with trio.fail_after(LIMIT):
        async with everything(inbox) as client:
            await client.set_logging_level("debug")
            result = await client.call_tool("toggle-simulated-logging", {})
            assert "Started simulated" in only_text(result)
            note = await inbox.wait_for("notifications/message")  # one is sent at once
            await client.call_tool("toggle-simulated-logging", {})  # stop it again

            assert isinstance(note.params, t.LoggingMessageNotificationParams)
            assert note.params in inbox.logs
            assert note.params.level in {
                "debug",
                "info",
                "notice",
                "warning",
                "error",
                "critical",
                "alert",
                "emergency",
            }


async def test_resources_templates_and_subscriptions() -> None:
    inbox = Inbox()
    with trio.fail_after(LIMIT):
        async with everything(inbox) as client:
            resources = await client.list_resources()
            docs = [r for r in resources if r.uri.startswith("demo://resource/static/document/")]
            assert len(docs) >= 7
            doc = next(r for r in docs if r.uri.endswith("/architecture.md"))
            assert doc.mime_type == "text/markdown"
            read = await client.read_resource(doc.uri)
            (content,) = read.contents
            assert isinstance(content, t.TextResourceContents)
            assert content.uri == doc.uri and content.text.strip()

            templates = await client.list_resource_templates()
            uri_templates = {tpl.uri_template for tpl in templates}
            assert {
                "demo://resource/dynamic/text/{resourceId}",
                "demo://resource/dynamic/blob/{resourceId}",
            } <= uri_templates

            text = await client.read_resource("demo://resource/dynamic/text/3")
            (text_content,) = text.contents
            assert isinstance(text_content, t.TextResourceContents)
            assert text_content.text.startswith("Resource 3: This is a plaintext resource")

            blob = await client.read_resource("demo://resource/dynamic/blob/4")
            (blob_content,) = blob.contents
            assert isinstance(blob_content, t.BlobResourceContents)
            assert base64.b64decode(blob_content.blob).startswith(b"Resource 4:")

            with pytest.raises(McpError):
                await client.read_resource("demo://resource/does-not-exist")

            # Subscribe, make the server push one round of updates, unsubscribe.
            await client.subscribe(doc.uri)
            await client.call_tool("toggle-subscriber-updates", {})
            updated = await inbox.wait_for("notifications/resources/updated")
            await client.call_tool("toggle-subscriber-updates", {})
            await client.unsubscribe(doc.uri)
            assert isinstance(updated.params, t.ResourceUpdatedNotificationParams)
            assert updated.params.uri == doc.uri


async def test_prompts_and_completions() -> None:
    with trio.fail_after(LIMIT):
        async with everything() as client:
            prompts = {p.name: p for p in await client.list_prompts()}
            assert {"simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"} <= set(
                prompts
            )
            args = prompts["args-prompt"].arguments or []
            assert [(a.name, bool(a.required)) for a in args] == [("city", True), ("state", False)]

            simple = await client.get_prompt("simple-prompt")
            (message,) = simple.messages
            assert message.role == "user"
            assert isinstance(message.content, t.TextContent)
            assert message.content.text == "This is a simple prompt without arguments."

            weather = await client.get_prompt("args-prompt", {"city": "Lyon", "state": "Rhone"})
            (message,) = weather.messages
            assert isinstance(message.content, t.TextContent)
            assert message.content.text == "What's weather in Lyon, Rhone?"

            embedded = await client.get_prompt(
                "resource-prompt", {"resourceType": "Text", "resourceId": "5"}
            )
            resources = [
                m.content for m in embedded.messages if isinstance(m.content, t.EmbeddedResource)
            ]
            assert len(resources) == 1
            assert resources[0].resource.uri == "demo://resource/dynamic/text/5"

            with pytest.raises(McpError):
                await client.get_prompt("no-such-prompt")

            department = await client.complete(
                t.PromptReference(name="completable-prompt"), "department", "E"
            )
            assert department.completion.values == ["Engineering"]
            names = await client.complete(
                t.PromptReference(name="completable-prompt"),
                "name",
                "",
                {"department": "Engineering"},
            )
            assert names.completion.values
            assert set(names.completion.values) <= {"Alice", "Bob", "Charlie"}
            ids = await client.complete(
                t.ResourceTemplateReference(uri="demo://resource/dynamic/text/{resourceId}"),
                "resourceId",
                "1",
            )
            assert "1" in ids.completion.values


@spec(
    "2025-06-18/client/sampling#capabilities.1",
    "2025-06-18/client/elicitation#capabilities.1",
    "2025-06-18/client/roots#capabilities.1",
)
async def test_sampling_elicitation_and_roots_answered_by_our_handlers() -> None:
    """The server offers three more tools to a client that declares sampling, elicitation
    and roots, and each sends a request back to us while the call runs."""
    inbox = Inbox()
    samples: list[t.CreateMessageRequestParams] = []
    elicitations: list[Any] = []

    def sampling(params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        samples.append(params)
        return t.CreateMessageResult(
            role="assistant",
            content=t.TextContent(type="text", text="forty-two"),
            model="mcp-ref-test-model",
            stop_reason="endTurn",
        )

    async def elicitation(params: Any) -> t.ElicitResult:
        elicitations.append(params)
        return t.ElicitResult(action="accept", content={"name": "Ada Lovelace", "integer": 7})

    root = t.Root(uri=Path.cwd().as_uri(), name="workdir")
    with trio.fail_after(LIMIT):
        async with everything(
            inbox, sampling_handler=sampling, elicitation_handler=elicitation, roots=[root]
        ) as client:
            await list_tools_with(client, inbox, CAPABILITY_TOOLS)

            sampled = await client.call_tool(
                "trigger-sampling-request", {"prompt": "What is six times seven?", "maxTokens": 20}
            )
            (request,) = samples
            assert request.max_tokens == 20
            (user,) = request.messages
            assert isinstance(user.content, t.TextContent)
            assert user.content.text.endswith("What is six times seven?")
            assert "forty-two" in only_text(sampled)
            assert "mcp-ref-test-model" in only_text(sampled)

            elicited = await client.call_tool("trigger-elicitation-request", {})
            (form,) = elicitations
            assert isinstance(form, t.ElicitRequestFormParams)
            assert "name" in form.requested_schema.properties
            assert "Ada Lovelace" in only_text(elicited)

            roots = await client.call_tool("get-roots-list", {})
            assert root.uri in only_text(roots)


def _cli_argv() -> list[str] | None:
    """How to run ``mcp-ref``: the console script next to our python, else ``-m mcp_ref``;
    None while ``mcp_ref/cli.py`` does not exist yet."""
    import importlib.util

    if importlib.util.find_spec("mcp_ref.cli") is None:
        return None
    script = Path(sys.executable).with_name("mcp-ref")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "mcp_ref"]


def test_inspect_cli_lists_server_everything_tools() -> None:
    """``mcp-ref inspect -- <server-everything>`` prints that server's tools."""
    cmd = everything_cmd()
    cli = _cli_argv()
    if cli is None:
        pytest.skip("mcp_ref/cli.py (mcp-ref inspect) is not written yet")
    proc = subprocess.run(
        [*cli, "inspect", "--", *cmd],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=LIMIT,
        check=False,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    for name in sorted(ALWAYS_TOOLS):
        assert name in proc.stdout, f"{name} missing from:\n{proc.stdout[-2000:]}"

"""The high-level client against the test server of tests/_stdio_server.py: in memory
(the server's Handler in a session of its own) and as a child process
(open_stdio_client); plus a raw server for capability refusals and version checks."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from mcp_ref import SERVER, LocalProtocolError, McpError, RequestTimeout
from mcp_ref import _output_schema as _schema
from mcp_ref import types as t
from mcp_ref._client import ClientCore
from mcp_ref._errors import INTERNAL_ERROR, METHOD_NOT_FOUND, REQUEST_TIMEOUT
from mcp_ref._versions import SUPPORTED_VERSIONS
from mcp_ref.client import Client, OutputSchemaError, open_client, open_stdio_client
from mcp_ref.events import Notification, Progress
from mcp_ref.trio import Session, SessionClosed, StreamChannel, open_session

from . import _stdio_server
from .test_trio_session import RawPeer, Recording

spec = pytest.mark.spec
LIMIT = 30


@asynccontextmanager
async def memory_client(**client_kw: Any) -> AsyncIterator[tuple[Client, Session, Recording]]:
    """A Client connected in memory to the test server's handler."""
    a, b = trio.testing.memory_stream_pair()
    wire = Recording(StreamChannel(a))
    async with (
        open_session(StreamChannel(b), SERVER, _stdio_server.Handler()) as server,
        open_client(wire, **client_kw) as client,
    ):
        yield client, server, wire


def sent(wire: Recording, method: str) -> list[dict[str, Any]]:
    return [m for m in wire.sent if m.get("method") == method]


def sampler(params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
    return t.CreateMessageResult(
        role="assistant", content=t.TextContent(text="sampled"), model="test-model"
    )


async def elicitor(params: Any) -> t.ElicitResult:
    await trio.lowlevel.checkpoint()
    assert params.message == "name?"
    return t.ElicitResult(action="accept", content={"name": "bob"})


# ------------------------------------------------------------------------- tests


@spec(
    "2025-06-18/basic/lifecycle#initialization.2",
    "2025-06-18/basic/lifecycle#initialization.4",
    "2025-06-18/client/sampling#capabilities.1",
    "2025-06-18/client/elicitation#capabilities.1",
    "2025-06-18/client/roots#capabilities.1",
    "2025-06-18/basic/lifecycle#version-negotiation.2",
)
async def test_initialize_and_declared_capabilities() -> None:
    with trio.fail_after(LIMIT):
        async with memory_client() as (client, server, wire):
            # The client asks for the newest revision it speaks.
            assert sent(wire, "initialize")[0]["params"]["protocolVersion"] == max(
                SUPPORTED_VERSIONS
            )
            assert client.server_info.name == "stdio-test-server"
            assert client.protocol_version == "2025-11-25"
            assert client.instructions == "test server"
            assert client.server_capabilities.tools is not None
            caps = server.peer_capabilities
            assert caps.sampling is None and caps.elicitation is None and caps.roots is None
            assert [m.get("method") for m in wire.sent] == [
                "initialize",
                "notifications/initialized",
            ]
            assert wire.sent[0]["params"]["clientInfo"]["name"] == "mcp-ref"
        async with memory_client(
            sampling_handler=sampler,
            elicitation_handler=elicitor,
            roots=[],
            protocol_version="2025-06-18",
            client_info=t.Implementation(name="me", version="9"),
        ) as (client, server, wire):
            assert client.protocol_version == "2025-06-18"
            assert server.peer_info.name == "me"
            assert wire.sent[0]["params"]["capabilities"] == {
                "elicitation": {},
                "roots": {"listChanged": True},
                "sampling": {},
            }


@spec("2025-06-18/server/utilities/pagination#implementation-guidelines.3")
async def test_list_tools_walks_pages() -> None:
    with trio.fail_after(LIMIT):
        async with memory_client() as (client, server, wire):
            tools = await client.list_tools()
            assert [x.name for x in tools] == [x.name for x in _stdio_server.TOOLS]
            calls = sent(wire, "tools/list")
            assert len(calls) == 4  # 14 tools, 4 per page
            assert "params" not in calls[0]
            assert all(isinstance(c["params"]["cursor"], str) for c in calls[1:])
            page = await client.list_tools_page()
            assert len(page.tools) == 4 and page.next_cursor is not None
            page2 = await client.list_tools_page(page.next_cursor)
            assert page2.tools[0].name == "structured"
            with pytest.raises(McpError) as info:
                await client.list_tools_page("bogus")
            assert info.value.code == -32602


@spec(
    "2025-06-18/server/tools#output-schema.2",
    "2025-06-18/basic/utilities/progress#progress-flow.3",
)
async def test_call_tool_progress_and_output_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[float] = []

    def on_progress(p: Progress) -> None:
        seen.append(p.progress)

    with trio.fail_after(LIMIT):
        async with memory_client() as (client, server, wire):
            result = await client.call_tool("echo", {"a": [1, 2]})
            assert json.loads(result.content[0].text) == {"a": [1, 2]}
            result = await client.call_tool("progress", on_progress=on_progress)
            assert seen == [1, 2, 3]
            # before list_tools the schema is unknown: nothing is checked
            bad = await client.call_tool("structured", {"value": {"n": "x"}})
            assert bad.structured_content == {"n": "x"}
            await client.list_tools()
            good = await client.call_tool("structured", {"value": {"n": 1}})
            assert good.structured_content == {"n": 1}
            with pytest.raises(OutputSchemaError) as info:
                await client.call_tool("structured", {"value": {"n": "x"}})
            assert isinstance(info.value, McpError) and info.value.code == INTERNAL_ERROR
            assert "at n" in info.value.message
            assert info.value.result.structured_content == {"n": "x"}
            # without jsonschema the result is returned unchecked
            monkeypatch.setattr(_schema, "_jsonschema", lambda: None)
            unchecked = await client.call_tool("structured", {"value": {"n": "x"}})
            assert unchecked.structured_content == {"n": "x"}
            # an unknown tool is an error response
            with pytest.raises(McpError) as err:
                await client.call_tool("nope")
            assert err.value.code == -32602


async def test_output_schema_forgotten_on_list_changed() -> None:
    notes: list[str] = []
    with trio.fail_after(LIMIT):
        async with memory_client(on_notification=lambda n: notes.append(n.method)) as (
            client,
            *_,
        ):
            await client.list_tools()
            await client.call_tool("log", {})  # also sends tools/list_changed
            await client.ping()
            assert "notifications/tools/list_changed" in notes
            result = await client.call_tool("structured", {"value": {"n": "x"}})
            assert result.structured_content == {"n": "x"}


async def test_invalid_output_schema() -> None:
    schemas = _schema.OutputSchemas()
    schemas.remember([t.Tool(name="x", input_schema={}, output_schema={"type": "no-such-type"})])
    result = t.CallToolResult(content=[], structured_content={})
    with pytest.raises(OutputSchemaError, match="invalid outputSchema"):
        schemas.check("x", result)
    schemas.check("x", t.CallToolResult(content=[], structured_content={}, is_error=True))
    schemas.remember([t.Tool(name="x", input_schema={})])
    schemas.check("x", result)  # forgotten: no schema any more


@spec("2025-06-18/server/resources#error-handling.1")
async def test_resources_and_subscriptions() -> None:
    notes: list[Notification] = []
    with trio.fail_after(LIMIT):
        async with memory_client(on_notification=notes.append) as (client, server, wire):
            assert [r.uri for r in await client.list_resources()] == ["mem://a"]
            assert (await client.list_resources_page()).resources[0].name == "a"
            templates = await client.list_resource_templates()
            assert templates[0].uri_template == "mem://{x}"
            assert (await client.list_resource_templates_page()).resource_templates
            read = await client.read_resource("mem://a")
            assert read.contents[0].text == "hello"
            with pytest.raises(McpError) as info:
                await client.read_resource("mem://b")
            assert info.value.code == -32002
            await client.subscribe("mem://a")
            await client.ping()
            assert notes[-1].method == "notifications/resources/updated"
            assert notes[-1].params.uri == "mem://a"
            assert server.app_state["subs"] == {"mem://a"}
            await client.unsubscribe("mem://a")
            assert server.app_state["subs"] == set()


async def test_prompts_and_completion() -> None:
    with trio.fail_after(LIMIT):
        async with memory_client() as (client, *_):
            assert [p.name for p in await client.list_prompts()] == ["greet"]
            assert (await client.list_prompts_page()).prompts[0].name == "greet"
            got = await client.get_prompt("greet", {"who": "ann"})
            assert got.messages[0].content.text == "hi ann"
            done = await client.complete(t.PromptReference(name="greet"), "who", "an")
            assert done.completion.values == ["an1", "null"]
            done = await client.complete(
                t.ResourceTemplateReference(uri="mem://{x}"), "x", "a", {"y": "1"}
            )
            assert done.completion.values == ["a1", '{"y": "1"}']


@spec("2025-06-18/server/utilities/logging#setting-log-level.1")
async def test_logging_callbacks_sync_and_async() -> None:
    logs: list[t.LoggingMessageNotificationParams] = []
    methods: list[str] = []

    async def on_notification(n: Notification) -> None:
        await trio.lowlevel.checkpoint()
        methods.append(n.method)

    with trio.fail_after(LIMIT):
        async with memory_client(on_log=logs.append, on_notification=on_notification) as (
            client,
            server,
            _,
        ):
            await client.set_logging_level("debug")
            await client.ping()
            assert server.app_state["level"] == "debug"
            assert logs[0].data == "level debug" and logs[0].level == "notice"
            await client.call_tool("log", {"k": 1})
            await client.ping()
            assert logs[1].data == {"k": 1} and logs[1].logger == "test"
            assert methods == [
                "notifications/message",
                "notifications/message",
                "notifications/tools/list_changed",
            ]


@spec("2025-06-18/basic/utilities/ping#behavior-requirements.1")
async def test_ping() -> None:
    with trio.fail_after(LIMIT):
        async with memory_client() as (client, *_):
            assert await client.ping() is None


@spec("2025-06-18/client/sampling#capabilities.1", "2025-06-18/client/elicitation#capabilities.1")
async def test_sampling_and_elicitation_handlers() -> None:
    with trio.fail_after(LIMIT):
        async with memory_client(sampling_handler=sampler, elicitation_handler=elicitor) as (
            client,
            *_,
        ):
            assert (await client.call_tool("sample")).content[0].text == "sampled"
            answer = json.loads((await client.call_tool("elicit")).content[0].text)
            assert answer == ["accept", {"name": "bob"}]


@spec("2025-06-18/client/roots#root-list-changes.1", "2025-06-18/client/roots#capabilities.1")
async def test_roots_list_and_changes() -> None:
    with trio.fail_after(LIMIT):
        async with memory_client(roots=[t.Root(uri="file:///a")]) as (client, server, wire):
            assert json.loads((await client.call_tool("roots")).content[0].text) == ["file:///a"]
            await client.set_roots([t.Root(uri="file:///b")])
            assert len(sent(wire, "notifications/roots/list_changed")) == 1
            assert json.loads((await client.call_tool("roots")).content[0].text) == ["file:///b"]

            async def later() -> list[t.Root]:
                await trio.lowlevel.checkpoint()
                return [t.Root(uri="file:///c"), t.Root(uri="file:///d")]

            await client.set_roots(later)
            roots = await server.send_request("roots/list")
            assert [r.uri for r in roots.roots] == ["file:///c", "file:///d"]
        async with memory_client() as (client, *_):
            with pytest.raises(LocalProtocolError):
                await client.set_roots([])


async def test_timeout(autojump_clock: trio.testing.MockClock) -> None:
    with trio.fail_after(1000):
        async with memory_client(timeout=RequestTimeout(seconds=30)) as (client, *_):
            start = trio.current_time()
            with pytest.raises(McpError) as info:
                await client.call_tool("silent", timeout=RequestTimeout(seconds=2))
            assert info.value.code == REQUEST_TIMEOUT
            assert trio.current_time() - start == pytest.approx(2, abs=0.01)
            with pytest.raises(McpError):
                await client.call_tool("silent")  # the client's default: 30 s
            assert trio.current_time() - start == pytest.approx(32, abs=0.01)


async def test_server_without_capability() -> None:
    """A capability the server did not declare: refused locally, nothing sent."""
    with trio.fail_after(LIMIT):
        a, b = trio.testing.memory_stream_pair()
        peer = RawPeer(b)

        async def serve() -> None:
            init = await peer.receive()
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": init["id"],
                    "result": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "serverInfo": {"name": "bare", "version": "0"},
                    },
                }
            )
            assert (await peer.receive())["method"] == "notifications/initialized"
            # A request for a capability the client did not declare is refused by the
            # client's core with -32601, before any handler.
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": "s1",
                    "method": "sampling/createMessage",
                    "params": {"messages": [], "maxTokens": 1},
                }
            )
            reply = await peer.receive()
            assert reply["id"] == "s1" and reply["error"]["code"] == METHOD_NOT_FOUND
            await peer.send({"jsonrpc": "2.0", "id": "r1", "method": "roots/list"})
            reply = await peer.receive()
            assert reply["id"] == "r1" and reply["error"]["code"] == METHOD_NOT_FOUND
            done.set()

        done = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve)
            async with open_client(StreamChannel(a)) as client:
                with pytest.raises(LocalProtocolError):
                    await client.list_tools()
                await done.wait()


@spec("2025-06-18/basic/lifecycle#version-negotiation.6")
async def test_unsupported_server_version_disconnects() -> None:
    with trio.fail_after(LIMIT):
        a, b = trio.testing.memory_stream_pair()
        peer = RawPeer(b)

        async def serve() -> None:
            init = await peer.receive()
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": init["id"],
                    "result": {
                        "protocolVersion": "1999-01-01",
                        "capabilities": {},
                        "serverInfo": {"name": "old", "version": "0"},
                    },
                }
            )

        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve)
            with pytest.raises(SessionClosed, match="1999-01-01"):
                async with open_client(StreamChannel(a)):
                    raise AssertionError("must not get here")


async def test_initialize_refused() -> None:
    with trio.fail_after(LIMIT):
        a, b = trio.testing.memory_stream_pair()
        peer = RawPeer(b)

        async def serve() -> None:
            init = await peer.receive()
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": init["id"],
                    "error": {"code": -32602, "message": "go away"},
                }
            )

        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve)
            with pytest.raises(McpError, match="go away"):
                async with open_client(StreamChannel(a)):
                    raise AssertionError("must not get here")


# ---------------------------------------------------------------- over stdio


def server_command(mode: str = "normal") -> list[str]:
    return [sys.executable, _stdio_server.__file__, mode]


@pytest.mark.skipif(sys.platform == "win32", reason="stdio tests need POSIX")
@spec(
    "2025-06-18/basic/transports#stdio.1",
    "2025-06-18/basic/lifecycle#stdio.1",
    "2025-06-18/basic/transports#transports.2",
)
async def test_open_stdio_client_round_trip() -> None:
    logs: list[Any] = []
    with trio.fail_after(LIMIT):
        async with open_stdio_client(
            server_command(),
            sampling_handler=sampler,
            roots=[t.Root(uri="file:///r")],
            on_log=logs.append,
        ) as client:
            assert client.server_info.name == "stdio-test-server"
            assert len(await client.list_tools()) == len(_stdio_server.TOOLS)
            assert (await client.call_tool("echo", {"x": 1})).content[0].text == '{"x": 1}'
            assert (await client.call_tool("sample")).content[0].text == "sampled"
            assert json.loads((await client.call_tool("roots")).content[0].text) == ["file:///r"]
            await client.set_roots([])
            await client.call_tool("log", {"hello": "world"})
            await client.ping()
            assert logs[-1].data == {"hello": "world"}
            process = client.process
        assert process is not None and process.returncode == 0


@pytest.mark.skipif(sys.platform == "win32", reason="stdio tests need POSIX")
@spec("2025-06-18/basic/lifecycle#stdio.2")
async def test_open_stdio_client_server_crash() -> None:
    with trio.fail_after(LIMIT):
        async with open_stdio_client(server_command()) as client:
            with pytest.raises(SessionClosed) as info:
                await client.call_tool("crash")
            assert "exited with code 3" in info.value.reason
            assert "boom" in info.value.reason
        assert client.process is not None and client.process.returncode == 3


async def test_client_not_connected() -> None:
    client = Client(ClientCore())
    with pytest.raises(RuntimeError):
        client.session  # noqa: B018
    with pytest.raises(RuntimeError):
        client.server_info  # noqa: B018


@spec("2025-06-18/client/roots#root.1", "2025-06-18/client/roots#security-considerations.1")
async def test_roots_are_checked_before_they_are_exposed() -> None:
    from mcp_ref.client import check_roots

    assert check_roots([t.Root(uri="file:///home/me/project")])
    for bad in (
        "https://example.com/x",
        "file://relative",
        "file:///a/../etc",
        "file:///a/%2e%2e/b",
    ):
        with pytest.raises(ValueError):
            check_roots([t.Root(uri=bad)])
    with trio.fail_after(5):
        async with memory_client(roots=[t.Root(uri="file:///ok")]) as (client, server, wire):
            with pytest.raises(ValueError):
                await client.set_roots([t.Root(uri="file:///ok/../../etc")])
        # A callable's roots are checked each time the server asks: the request fails.
        async with memory_client(roots=lambda: [t.Root(uri="ftp://x")]) as (client, server, wire):
            await client.ping()  # the server has our initialized notification by now
            with pytest.raises(McpError) as exc:
                await server.send_request("roots/list")
            assert exc.value.code == INTERNAL_ERROR


# ---------------------------------------------------------------------------------------
# Issue 13: each clause's tests kill the mutants of its lines.


@spec("2025-06-18/basic/lifecycle#version-negotiation.7")
async def test_every_http_request_after_initialize_carries_the_protocol_version() -> None:
    """Over HTTP, every request after ``initialize`` carries ``MCP-Protocol-Version``
    with the negotiated version, including the GET that resumes a closed stream (made
    with its ``Last-Event-ID``, the request whose headers are built afresh)."""
    from mcp_ref._sse import SSEEvent
    from mcp_ref.client import open_http_client

    from .test_transports_http_client import Reply, Req, _standard, fake_server, text_result

    pending: list[Any] = []

    async def script(req: Req, reply: Reply) -> None:
        if req.method == "GET" and "last-event-id" in req.headers:
            result = text_result(pending[0], "resumed")
            await reply.sse([SSEEvent(data=json.dumps(result), id="e2")])
        elif req.method == "POST" and req.json.get("method") == "tools/call":
            pending.append(req.json["id"])
            await reply.sse([SSEEvent(data="", id="e1", retry=10)])
        elif not await _standard(req, reply):
            await reply.status(500)

    with trio.fail_after(LIMIT):
        async with fake_server(script) as (url, fake), open_http_client(url) as client:
            result = await client.call_tool("x")
            assert result.content[0].text == "resumed"  # type: ignore[union-attr]
            version = client.protocol_version
    init, *rest = fake.requests
    assert "mcp-protocol-version" not in init.headers
    assert rest and all(r.headers["mcp-protocol-version"] == version for r in rest)
    (resume,) = [r for r in rest if r.method == "GET" and "last-event-id" in r.headers]
    assert resume.headers["last-event-id"] == "e1"

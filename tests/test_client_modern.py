"""The trio client in the modern era (2026-07-28) and the choice of era.

A scripted server (a trio session in the server role with a small handler) answers
``server/discover``, ``tools/call`` (with ``input_required`` rounds) and
``initialize``; the client is :func:`mcp_ref.client.open_client` over a memory channel
pair.  Pages: 2026-07-28/basic/versioning, 2026-07-28/basic/transports/stdio (backward
compatibility: the probe), 2026-07-28/basic/patterns/mrtr (client requirements).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from mcp_ref import ErrorResponse, McpError, NoAnswerError, Notification
from mcp_ref import types as t
from mcp_ref._client import TooManyInputRounds, probe_era
from mcp_ref._errors import METHOD_NOT_FOUND, UNSUPPORTED_PROTOCOL_VERSION
from mcp_ref._modern import PROTOCOL_VERSION_KEY, SUBSCRIPTION_ID_KEY
from mcp_ref._modern_connection import opening
from mcp_ref._state import SERVER
from mcp_ref.client import Client, open_client
from mcp_ref.server import Context, Server
from mcp_ref.trio import RequestContext, Session, memory_channel_pair, open_session

spec = pytest.mark.spec
INFO = t.Implementation(name="scripted", version="1.0")


def _discover() -> t.DiscoverResult:
    return t.DiscoverResult(
        result_type="complete",
        supported_versions=["2026-07-28"],
        capabilities=t.ServerCapabilities(tools=t.ServerCapabilitiesTools()),
        ttl_ms=0,
        cache_scope="private",
        instructions="be nice",
        meta={"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "1.0"}},
    )


def _ask(state: str | None) -> t.InputRequiredResult:
    form = t.ElicitRequestFormParams(
        message="who?",
        requested_schema=t.ElicitRequestFormParamsRequestedSchema(
            properties={"name": {"type": "string"}}
        ),
    )
    return t.InputRequiredResult(
        result_type="input_required",
        input_requests={"who": t.ElicitRequest(params=form)},
        request_state=state,
    )


class Scripted:
    """A server that records what it got; ``modern`` False plays a legacy server."""

    def __init__(
        self, *, modern: bool = True, rounds: int = 1, discover_error: int = 0, state: bool = True
    ) -> None:
        self.modern = modern
        self.state = state
        self.rounds = rounds
        self.discover_error = discover_error
        self.got: list[tuple[str, Any, Any]] = []  # (method, params, request id)
        self.lists_needed = 1
        self.ended, self.endings = trio.open_memory_channel[None](16)

    async def handle_request(self, ctx: RequestContext) -> Any:
        self.got.append((ctx.method, ctx.params, ctx.request_id))
        if ctx.method == "server/discover":
            if self.discover_error:
                raise McpError(self.discover_error, "no")
            if not self.modern:
                raise McpError(METHOD_NOT_FOUND, "method not found")
            return _discover()
        if ctx.method == "initialize":
            return t.InitializeResult(
                protocol_version=ctx.params.protocol_version,
                capabilities=t.ServerCapabilities(tools=t.ServerCapabilitiesTools()),
                server_info=INFO,
            )
        if ctx.method == "tools/list":
            return t.ListToolsResult(
                tools=[t.Tool(name="echo", input_schema={"type": "object"})],
                ttl_ms=0,
                cache_scope="private",
            )
        if ctx.method == "tools/call" and ctx.params.name == "mismatch":
            if sum(1 for m, _, _ in self.got if m == "tools/list") < self.lists_needed:
                raise McpError(-32020, "Header mismatch: missing Mcp-Param-Region header")
            return t.CallToolResult(content=[t.TextContent(text="ok")])
        if ctx.method == "tools/call" and ctx.params.name == "log":
            note = t.LoggingMessageNotificationParams(level="info", data="hello")
            await ctx.session.send_notification("notifications/message", note)
            return t.CallToolResult(content=[])
        if ctx.method == "tools/call":
            p = ctx.params
            done = sum(1 for m, _, _ in self.got if m == "tools/call") - 1
            if self.modern and done < self.rounds and len(self.got) < 40:
                return _ask(f"state-{len(self.got)}" if self.state else None)
            who = (p.input_responses or {}).get("who")
            text = who.content["name"] if who is not None else "nobody"
            return t.CallToolResult(content=[t.TextContent(text=text)])
        if ctx.method == "subscriptions/listen":
            sid = {SUBSCRIPTION_ID_KEY: ctx.request_id}
            wanted = ctx.params.notifications
            ack = t.SubscriptionsAcknowledgedNotificationParams(notifications=wanted, meta=sid)
            await ctx.session.send_notification("notifications/subscriptions/acknowledged", ack)
            for uri in wanted.resource_subscriptions or []:
                update = t.ResourceUpdatedNotificationParams(uri=uri, meta=sid)
                await ctx.session.send_notification("notifications/resources/updated", update)
            try:
                await trio.sleep_forever()
            finally:
                self.ended.send_nowait(None)
        raise McpError(METHOD_NOT_FOUND, ctx.method)

    async def handle_notification(self, session: Session, notification: Notification) -> None:
        pass

    def session_opened(self, session: Session) -> None:
        if not self.modern:  # a handshake-only server: the legacy table from the start
            conn: Any = session.connection
            conn.era, conn._transitions, conn.state = opening(SERVER, "legacy")


@asynccontextmanager
async def _pair(server: Scripted, **client_kw: Any) -> AsyncIterator[Client]:
    a, b = memory_channel_pair()
    async with trio.open_nursery() as nursery:
        stop = trio.Event()

        async def serve() -> None:
            async with open_session(b, SERVER, server):
                await stop.wait()

        nursery.start_soon(serve)
        async with open_client(a, **client_kw) as client:
            yield client
        stop.set()


def _answer(params: Any) -> t.ElicitResult:
    return t.ElicitResult(action="accept", content={"name": "Ada"})


async def test_pinned_modern_sends_no_initialize_and_meta_on_every_request() -> None:
    """2026-07-28/basic/index#_meta.2: the version and capabilities on every request."""
    server = Scripted()
    with trio.fail_after(5):
        async with _pair(server, era="modern", elicitation_handler=_answer) as client:
            assert client.era == "modern" and client.protocol_version == "2026-07-28"
            result = await client.call_tool("echo", {})
            assert result.content == [t.TextContent(text="Ada")]
            with pytest.raises(RuntimeError, match="discover"):
                client.server_info  # noqa: B018
            await client.discover()
            assert client.server_info.name == "scripted"
            assert client.server_capabilities.tools is not None
            assert client.instructions == "be nice"
    methods = [m for m, _, _ in server.got]
    assert methods == ["tools/call", "tools/call", "server/discover"]


async def test_auto_falls_back_to_initialize_with_a_legacy_server() -> None:
    """A handshake-only server refuses the probe before initialize (-32600 here)."""
    server = Scripted(modern=False)
    with trio.fail_after(5):
        async with _pair(server, era="auto") as client:
            assert client.era == "legacy" and client.protocol_version == "2025-11-25"
            assert client.server_info == INFO
            await client.call_tool("echo", {})
    assert [m for m, _, _ in server.got] == ["initialize", "tools/call"]


@spec("2026-07-28/basic/transports/stdio#backward-compatibility.2")
@pytest.mark.parametrize("code", [METHOD_NOT_FOUND, -32602, -32600, -32603, -32000])
def test_the_probe_falls_back_on_any_error_but_a_modern_one(code: int) -> None:
    assert probe_era(McpError(code, "no")) == "legacy"
    assert probe_era(ErrorResponse(id=1, code=code, message="no")) == "legacy"
    for modern in (-32020, -32021, UNSUPPORTED_PROTOCOL_VERSION):
        assert probe_era(McpError(modern, "no")) == "modern"
    assert probe_era(NoAnswerError("server/discover", 1.0)) == "legacy"
    assert probe_era(_discover()) == "modern"


async def test_auto_stays_modern_when_discover_answers() -> None:
    server = Scripted(rounds=0)
    with trio.fail_after(5):
        async with _pair(server, era="auto") as client:
            assert client.era == "modern" and client.server_info.name == "scripted"
            await client.call_tool("echo", {})
    assert [m for m, _, _ in server.got] == ["server/discover", "tools/call"]


async def test_auto_does_not_fall_back_on_a_modern_error() -> None:
    """stdio#backward-compatibility: a recognised modern error means a modern server."""
    server = Scripted(discover_error=UNSUPPORTED_PROTOCOL_VERSION)
    with trio.fail_after(5), pytest.raises(BaseExceptionGroup) as info:
        async with _pair(server, era="auto"):
            pass  # pragma: no cover
    assert info.group_contains(McpError, match="code -32022", depth=None)
    assert [m for m, _, _ in server.got] == ["server/discover"]


async def test_legacy_default_is_the_handshake() -> None:
    server = Scripted()
    with trio.fail_after(5):
        async with _pair(server) as client:
            assert client.era == "legacy"
    assert [m for m, _, _ in server.got] == ["initialize"]


def test_era_and_version_must_agree() -> None:
    from mcp_ref._client import ClientCore

    with pytest.raises(ValueError, match="modern era"):
        ClientCore(era="modern", protocol_version="2025-06-18")
    with pytest.raises(ValueError, match="era must be"):
        ClientCore(era="newest")  # type: ignore[arg-type]
    assert ClientCore(protocol_version="2026-07-28").era == "modern"
    assert ClientCore(era="auto", protocol_version="2025-06-18").era == "legacy"


@spec(
    "2026-07-28/basic/patterns/mrtr#client-requirements-basic-workflow.1",
    "2026-07-28/basic/patterns/mrtr#client-requirements-basic-workflow.3",
    "2026-07-28/basic/patterns/mrtr#client-requirements-basic-workflow.6",
)
async def test_input_required_is_answered_and_retried_with_state_and_a_new_id() -> None:
    server = Scripted(rounds=2)
    with trio.fail_after(5):
        async with _pair(server, era="modern", elicitation_handler=_answer) as client:
            result = await client.call_tool("echo", {"x": 1})
    assert result.content == [t.TextContent(text="Ada")]
    calls = [(p, rid) for m, p, rid in server.got if m == "tools/call"]
    assert len(calls) == 3 and len({rid for _, rid in calls}) == 3
    first, second, third = (p for p, _ in calls)
    assert first.request_state is None and first.input_responses is None
    assert second.request_state == "state-1" and third.request_state == "state-2"
    assert second.arguments == {"x": 1} == third.arguments
    assert second.input_responses["who"].content == {"name": "Ada"}


@spec("2026-07-28/basic/patterns/mrtr#client-requirements-basic-workflow.5")
async def test_no_request_state_is_sent_when_none_came() -> None:
    server = Scripted(state=False)
    with trio.fail_after(5):
        async with _pair(server, era="modern", elicitation_handler=_answer) as client:
            await client.call_tool("echo", {})
    calls = [p for m, p, _ in server.got if m == "tools/call"]
    assert all(p.request_state is None for p in calls)


async def test_input_rounds_are_bounded() -> None:
    server = Scripted(rounds=1000)
    with trio.fail_after(5):
        async with _pair(server, era="modern", elicitation_handler=_answer) as client:
            with pytest.raises(TooManyInputRounds, match="stopped retrying"):
                await client.call_tool("echo", {})


async def test_the_server_reads_a_modern_request() -> None:
    got: list[Any] = []

    class Peek(Scripted):
        async def handle_request(self, ctx: RequestContext) -> Any:
            got.append(ctx.session.connection.era)
            return await super().handle_request(ctx)

    server = Peek(rounds=0)
    with trio.fail_after(5):
        async with _pair(server, era="modern") as client:
            await client.call_tool("echo", {})
    assert got == ["modern"]
    assert PROTOCOL_VERSION_KEY  # the server read the version from _meta to get here


async def test_subscribe_keeps_one_listen_open_in_the_modern_era() -> None:
    """2026-07-28/basic/patterns/subscriptions: subscribe() opens subscriptions/listen
    and returns once acknowledged; a new URI re-opens it, unsubscribing all closes it."""
    server = Scripted(rounds=0)
    notes: list[Notification] = []
    with trio.fail_after(5):
        async with _pair(server, era="modern", on_notification=notes.append) as client:
            await client.subscribe("file:///a")
            await client.subscribe("file:///b")
            await client.unsubscribe("file:///a")
            await client.unsubscribe("file:///b")
            for _ in range(3):  # each listen was cancelled (notifications/cancelled)
                await server.endings.receive()
    listens = [p.notifications for m, p, _ in server.got if m == "subscriptions/listen"]
    assert [f.resource_subscriptions for f in listens] == [
        ["file:///a"],
        ["file:///a", "file:///b"],
        ["file:///b"],
    ]
    assert listens[0].tools_list_changed is True
    updated = [n.params.uri for n in notes if n.method == "notifications/resources/updated"]
    assert updated == ["file:///a", "file:///a", "file:///b", "file:///b"]


@spec("2026-07-28/server/utilities/logging#per-request-log-level.1")
async def test_set_logging_level_names_the_level_in_each_request_in_the_modern_era() -> None:
    """The server may log only for a request that asked (its connection refuses
    otherwise); after set_logging_level the client's requests ask."""
    logs: list[Any] = []
    server = Scripted(rounds=0)
    with trio.fail_after(5):
        async with _pair(server, era="modern", on_log=logs.append) as client:
            await client.set_logging_level("info")
            await client.call_tool("log", {})
    assert [p.data for p in logs] == ["hello"]
    assert [m for m, _, _ in server.got] == ["tools/call"]  # no logging/setLevel


@spec("2026-07-28/basic/transports/streamable-http#client-behavior.2")
async def test_a_header_mismatch_relists_the_tools_and_retries_once() -> None:
    server = Scripted(rounds=0)
    with trio.fail_after(5):
        async with _pair(server, era="modern") as client:
            result = await client.call_tool("mismatch", {})
            assert result.content == [t.TextContent(text="ok")]
            server.lists_needed = 99  # refused again after the relisting: the error stays
            with pytest.raises(McpError, match="Header mismatch"):
                await client.call_tool("mismatch", {})
    methods = [m for m, _, _ in server.got]
    assert methods == [
        "tools/call",
        "tools/list",
        "tools/call",
        "tools/call",
        "tools/list",
        "tools/call",
    ]


@spec("2026-07-28/basic/patterns/mrtr#client-requirements-basic-workflow.7")
async def test_parallel_calls_keep_the_answers_of_their_own_rounds() -> None:
    server = Server("parallel", "1")
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}

    @server.tool()
    async def greet(tag: str, ctx: Context) -> str:
        answer = await ctx.elicit(f"name for {tag}", schema, key="user_name")
        return f"{tag}:{(answer.content or {}).get('name')}"

    asked: list[str] = []
    both = trio.Event()

    async def handler(params: Any) -> t.ElicitResult:
        asked.append(params.message)
        if len(asked) == 2:
            both.set()
        await both.wait()  # both calls are between their rounds at once
        return t.ElicitResult(action="accept", content={"name": params.message.split()[-1] * 2})

    got: dict[str, Any] = {}
    ours, theirs = memory_channel_pair()
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server.serve, theirs)
            async with open_client(ours, era="modern", elicitation_handler=handler) as client:

                async def call(tag: str) -> None:
                    got[tag] = (await client.call_tool("greet", {"tag": tag})).content

                async with trio.open_nursery() as calls:
                    calls.start_soon(call, "a")
                    calls.start_soon(call, "b")
            nursery.cancel_scope.cancel()
    assert sorted(asked) == ["name for a", "name for b"]
    assert got == {"a": [t.TextContent(text="a:aa")], "b": [t.TextContent(text="b:bb")]}


@spec(
    "2026-07-28/basic/patterns/cancellation#transport-specific-cancellation.2",
    "2026-07-28/basic/transports/stdio#cancellation.1",
)
async def test_a_modern_client_cancels_on_stdio_with_notifications_cancelled() -> None:
    import json

    ours, theirs = memory_channel_pair()
    scope = trio.CancelScope()
    seen: list[Any] = []

    async def the_server_end() -> None:
        sent = json.loads(await theirs.receive())
        scope.cancel()  # the caller gives up on the call
        seen.extend([sent, json.loads(await theirs.receive())])

    with trio.fail_after(5):
        async with open_client(ours, era="modern") as client, trio.open_nursery() as nursery:
            nursery.start_soon(the_server_end)
            with scope:
                await client.call_tool("slow", {})
    assert scope.cancelled_caught
    sent, cancel = seen
    assert sent["method"] == "tools/call"
    assert cancel["method"] == "notifications/cancelled"
    assert cancel["params"]["requestId"] == sent["id"]

"""The trio session driver: two sessions over in-memory streams, and a session against a
raw peer that writes bytes by hand.  Every test runs under ``fail_after``; timeouts use
the autojump MockClock."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from mcp_ref import (
    CLIENT,
    INTERNAL_ERROR,
    PARSE_ERROR,
    SERVER,
    McpError,
    NoAnswerError,
    RequestTimeout,
)
from mcp_ref import types as t
from mcp_ref._errors import INVALID_REQUEST, REQUEST_TIMEOUT
from mcp_ref.events import Notification, Progress, RequestId
from mcp_ref.trio import (
    RequestContext,
    Session,
    SessionClosed,
    StreamChannel,
    memory_channel_pair,
    open_session,
)

from ._pair import CLIENT_CAPS, SERVER_CAPS, SERVER_INFO, init_request

spec = pytest.mark.spec

LIMIT = 10  # seconds (MockClock or real) any test may take


class Recording:
    """A channel wrapper that keeps every message sent, decoded."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.framing = inner.framing
        self.sent: list[dict[str, Any]] = []

    async def receive(self) -> bytes:
        data: bytes = await self.inner.receive()
        return data

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        # A "lines" channel may get several messages in one send (a burst).
        self.sent.extend(json.loads(line) for line in data.splitlines())
        await self.inner.send(data, related_request_id=related_request_id)

    async def aclose(self) -> None:
        await self.inner.aclose()


class ServerHandler:
    """A tiny server: a few tools that exercise the session."""

    def __init__(self) -> None:
        self.notes: list[Notification] = []
        self.initialized = trio.Event()
        self.started: dict[str, trio.Event] = {}
        self.cancelled: list[str] = []
        self.gate = trio.Event()
        self.opened: list[Session] = []
        self.closed: list[Session] = []

    def session_opened(self, session: Session) -> None:
        self.opened.append(session)

    def session_closed(self, session: Session) -> None:
        self.closed.append(session)

    def started_event(self, key: str) -> trio.Event:
        return self.started.setdefault(key, trio.Event())

    async def handle_request(self, ctx: RequestContext) -> Any:
        if ctx.method == "initialize":
            version = ctx.session.connection.negotiated_version_for(ctx.params.protocol_version)
            return t.InitializeResult(
                protocol_version=version, capabilities=SERVER_CAPS, server_info=SERVER_INFO
            )
        assert ctx.method == "tools/call", ctx.method
        name, args = ctx.params.name, ctx.params.arguments or {}
        tag = str(args.get("tag", name))
        self.started_event(tag).set()
        if name == "echo":
            return t.CallToolResult(content=[t.TextContent(text=json.dumps(args))])
        if name == "gate":
            await self.gate.wait()
            return t.CallToolResult(content=[t.TextContent(text=tag)])
        if name == "slow":
            try:
                await trio.sleep_forever()
            finally:
                self.cancelled.append(tag)
        if name == "progress":
            for i in (1, 2, 3):
                await ctx.report_progress(i, 3, f"step {i}")
            return t.CallToolResult(content=[t.TextContent(text="done")])
        if name == "mcp_error":
            raise McpError(-32602, "no such thing", {"thing": 1})
        if name == "crash":
            raise RuntimeError("secret detail")
        if name == "bad_result":
            return t.ListToolsResult(tools=[])
        if name == "sample":
            result = await ctx.send_request(
                "sampling/createMessage",
                t.CreateMessageRequestParams(
                    messages=[
                        t.SamplingMessage(role="user", content=t.TextContent(text=args["q"]))
                    ],
                    max_tokens=10,
                ),
            )
            return t.CallToolResult(content=[result.content])
        raise McpError(-32602, f"unknown tool {name}")

    async def handle_notification(self, session: Session, notification: Notification) -> None:
        self.notes.append(notification)
        if notification.method == "notifications/initialized":
            self.initialized.set()


class ClientHandler:
    """A tiny client: answers sampling and roots, records notifications."""

    def __init__(self) -> None:
        self.notes: list[Notification] = []
        self.got_note = trio.Event()
        self.sampling_started = trio.Event()
        self.sampling_cancelled = False
        self.block_sampling = False

    async def handle_request(self, ctx: RequestContext) -> Any:
        if ctx.method == "sampling/createMessage":
            self.sampling_started.set()
            if self.block_sampling:
                try:
                    await trio.sleep_forever()
                finally:
                    self.sampling_cancelled = True
            text = ctx.params.messages[0].content.text
            return t.CreateMessageResult(
                role="assistant", content=t.TextContent(text=text.upper()), model="m"
            )
        if ctx.method == "roots/list":
            return t.ListRootsResult(roots=[t.Root(uri="file:///tmp")])
        raise McpError(-32601, ctx.method)

    async def handle_notification(self, session: Session, notification: Notification) -> None:
        self.notes.append(notification)
        self.got_note.set()


@asynccontextmanager
async def session_pair(
    server_handler: ServerHandler | None = None,
    client_handler: ClientHandler | None = None,
    *,
    framing: str = "lines",
    client_kw: dict[str, Any] | None = None,
    server_kw: dict[str, Any] | None = None,
    initialize: bool = True,
    channels: tuple[Any, Any] | None = None,
) -> AsyncIterator[tuple[Session, Session, Any, Any]]:
    """A client and a server session connected in memory, initialized.  ``channels``
    (client's, server's) replaces the recorded pair that ``framing`` names."""
    sh = server_handler or ServerHandler()
    ch = client_handler or ClientHandler()
    if channels is not None:
        ca, cb = channels
    elif framing == "lines":
        a, b = trio.testing.memory_stream_pair()
        ca, cb = Recording(StreamChannel(a)), Recording(StreamChannel(b))
    else:
        ma, mb = memory_channel_pair()
        ca, cb = Recording(ma), Recording(mb)
    async with (
        open_session(cb, SERVER, sh, **(server_kw or {})) as server,
        open_session(ca, CLIENT, ch, **(client_kw or {})) as client,
    ):
        if initialize:
            req = init_request(caps=CLIENT_CAPS)
            result = await client.send_request("initialize", req.params)
            assert isinstance(result, t.InitializeResult)
            await client.send_notification("notifications/initialized")
            await sh.initialized.wait()
        yield client, server, ca, cb


async def call(session: Session, name: str, **kw: Any) -> Any:
    args = kw.pop("args", None)
    return await session.send_request(
        "tools/call", t.CallToolRequestParams(name=name, arguments=args), **kw
    )


def count_tasks() -> int:
    def walk(task: trio.lowlevel.Task) -> int:
        return 1 + sum(walk(c) for n in task.child_nurseries for c in n.child_tasks)

    return walk(trio.lowlevel.current_root_task())


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("framing", ["lines", "messages"])
@spec(
    "2025-06-18/basic/lifecycle#initialization.2",
    "2025-06-18/basic/lifecycle#initialization.4",
    "2025-06-18/basic#responses.1",
    "2025-06-18/basic/utilities/ping#behavior-requirements.1",
)
async def test_requests_both_ways(framing: str) -> None:
    sh, ch = ServerHandler(), ClientHandler()
    with trio.fail_after(LIMIT):
        async with session_pair(sh, ch, framing=framing) as (client, server, c_wire, s_wire):
            assert client.protocol_version == server.protocol_version == "2025-11-25"
            assert client.peer_info == SERVER_INFO
            assert server.peer_info.name == "test-client"
            assert server.peer_capabilities.roots.list_changed is True
            assert sh.opened == [server]
            # client -> server
            result = await call(client, "echo", args={"a": 1})
            assert json.loads(result.content[0].text) == {"a": 1}
            # server -> client while handling a client request (nested)
            result = await call(client, "sample", args={"q": "hi"})
            assert result.content[0].text == "HI"
            sample = next(m for m in s_wire.sent if m.get("method") == "sampling/createMessage")
            assert sample["params"]["messages"][0]["content"]["text"] == "hi"
            # server -> client directly
            roots = await server.send_request("roots/list")
            assert roots.roots[0].uri == "file:///tmp"
            # pings both ways, answered by the sessions themselves
            assert await client.send_request("ping") == t.Result()
            assert await server.send_request("ping") == t.Result()
            # a notification server -> client reaches the client's handler
            await server.send_notification(
                "notifications/message",
                t.LoggingMessageNotificationParams(level="info", data="hello"),
            )
            await ch.got_note.wait()
            assert ch.notes[0].params.data == "hello"
        assert client.closed and server.closed
        assert sh.closed == [server]


@spec("2025-06-18/basic#responses.1")
async def test_concurrent_requests() -> None:
    sh = ServerHandler()
    results: dict[int, str] = {}
    with trio.fail_after(LIMIT):
        async with session_pair(sh) as (client, server, *_):

            async def one(i: int) -> None:
                res = await call(client, "gate", args={"tag": f"g{i}"})
                results[i] = res.content[0].text

            async with trio.open_nursery() as nursery:
                for i in range(20):
                    nursery.start_soon(one, i)
                for i in range(20):
                    await sh.started_event(f"g{i}").wait()
                assert server.requests_in_progress == 20
                sh.gate.set()
    assert results == {i: f"g{i}" for i in range(20)}


@spec("2025-06-18/basic/utilities/progress#progress-flow.3")
async def test_progress_callback_sync_and_async() -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    def sync_cb(p: Progress) -> None:
        seen.append((p.progress, p.total, p.message))

    async def async_cb(p: Progress) -> None:
        await trio.lowlevel.checkpoint()
        seen.append((p.progress, p.total, p.message))

    with trio.fail_after(LIMIT):
        async with session_pair() as (client, server, c_wire, s_wire):
            for cb in (sync_cb, async_cb):
                seen.clear()
                result = await call(client, "progress", on_progress=cb)
                assert result.content[0].text == "done"
                assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
            # without a callback, no token is sent and the handler reports nothing
            await call(client, "progress")
            calls = [m for m in c_wire.sent if m.get("method") == "tools/call"]
            assert "_meta" in calls[0]["params"] and "_meta" not in calls[2]["params"]
            progress = [m for m in s_wire.sent if m.get("method") == "notifications/progress"]
            assert len(progress) == 6


@spec(
    "2025-06-18/basic/utilities/cancellation#behavior-requirements.1",
    "2025-06-18/basic/utilities/cancellation#behavior-requirements.3",
)
async def test_caller_cancelled_client_to_server() -> None:
    sh = ServerHandler()
    with trio.fail_after(LIMIT):
        async with session_pair(sh) as (client, server, c_wire, s_wire):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(call, client, "slow")
                await sh.started_event("slow").wait()
                nursery.cancel_scope.cancel()
            # the server's handler scope is cancelled by the notification
            while not sh.cancelled:
                await trio.lowlevel.checkpoint()
            assert sh.cancelled == ["slow"]
            (req,) = [m for m in c_wire.sent if m.get("params", {}).get("name") == "slow"]
            (note,) = [m for m in c_wire.sent if m.get("method") == "notifications/cancelled"]
            assert note["params"]["requestId"] == req["id"]
            # the session goes on, and no response to the cancelled request was sent
            await call(client, "echo")
            assert not [m for m in s_wire.sent if m.get("id") == req["id"]]
            assert client.connection.requests_in_flight() == ([], [])
            assert server.connection.requests_in_flight() == ([], [])


@pytest.mark.parametrize("same_id_as_initialize", [False, True])
@spec("2025-06-18/basic/utilities/cancellation#behavior-requirements.3")
async def test_caller_cancelled_server_to_client(same_id_as_initialize: bool) -> None:
    ch = ClientHandler()
    ch.block_sampling = True
    with trio.fail_after(LIMIT):
        async with session_pair(client_handler=ch) as (client, server, c_wire, s_wire):
            params = t.CreateMessageRequestParams(
                messages=[t.SamplingMessage(role="user", content=t.TextContent(text="x"))],
                max_tokens=5,
            )
            if not same_id_as_initialize:
                await server.send_request("ping")  # server request ids now differ from 1
            async with trio.open_nursery() as nursery:
                nursery.start_soon(server.send_request, "sampling/createMessage", params)
                await ch.sampling_started.wait()
                nursery.cancel_scope.cancel()
            await ping_until(client, lambda: ch.sampling_cancelled)
            (req,) = [m for m in s_wire.sent if m.get("method") == "sampling/createMessage"]
            (note,) = [m for m in s_wire.sent if m.get("method") == "notifications/cancelled"]
            assert note["params"] == {"requestId": req["id"], "reason": "cancelled by the caller"}
            assert not [m for m in c_wire.sent if m.get("id") == req["id"] and "method" not in m]


async def ping_until(session: Session, predicate: Any) -> None:
    """Round-trip pings until ``predicate()`` holds (each ping flushes both directions)."""
    for _ in range(100):
        if predicate():
            return
        await session.send_request("ping")
    raise AssertionError("condition never became true")


@spec(
    "2025-06-18/basic/lifecycle#timeouts.1",
    "2025-06-18/basic/lifecycle#timeouts.2",
    "2025-06-18/basic/lifecycle#timeouts.3",
    "2025-06-18/basic/lifecycle#error-handling.1",
)
async def test_timeout_with_mock_clock(autojump_clock: trio.testing.MockClock) -> None:
    sh = ServerHandler()
    with trio.fail_after(1000):
        async with session_pair(sh) as (client, server, c_wire, s_wire):
            start = trio.current_time()
            with pytest.raises(NoAnswerError) as info:
                await call(client, "slow", timeout=RequestTimeout(seconds=5))
            assert info.value.code == REQUEST_TIMEOUT
            assert (info.value.method, info.value.elapsed) == ("tools/call", pytest.approx(5))
            assert trio.current_time() - start == pytest.approx(5, abs=0.01)
            (note,) = [m for m in c_wire.sent if m.get("method") == "notifications/cancelled"]
            assert note["params"]["reason"] == "timed out"
            await ping_until(client, lambda: sh.cancelled == ["slow"])
            # no timeout at all when asked for none; the default applies otherwise
            with trio.move_on_after(70) as scope:  # longer than the 60 s default
                await call(client, "slow", args={"tag": "s2"}, timeout=None)
            assert scope.cancelled_caught


@spec("2025-06-18/basic/lifecycle#timeouts.1")
async def test_session_default_timeout(autojump_clock: trio.testing.MockClock) -> None:
    """The session default applies when no timeout is given."""
    sh = ServerHandler()
    kw = {"default_timeout": RequestTimeout(seconds=3)}
    with trio.fail_after(100):
        async with session_pair(sh, client_kw=kw) as (client, *_):
            start = trio.current_time()
            with pytest.raises(McpError) as info:
                await call(client, "slow")
            assert info.value.code == REQUEST_TIMEOUT
            assert trio.current_time() - start == pytest.approx(3, abs=0.01)


@spec("2025-06-18/basic#responses.4", "2025-06-18/basic#responses.5")
async def test_handler_errors() -> None:
    with trio.fail_after(LIMIT):
        async with session_pair() as (client, server, c_wire, s_wire):
            with pytest.raises(McpError) as info:
                await call(client, "mcp_error")
            assert (info.value.code, info.value.message, info.value.data) == (
                -32602,
                "no such thing",
                {"thing": 1},
            )
            with pytest.raises(McpError) as info:
                await call(client, "crash")
            assert info.value.code == INTERNAL_ERROR
            assert "secret" not in info.value.message and "Traceback" not in info.value.message
            assert "RuntimeError" in info.value.message
            with pytest.raises(McpError) as info:
                await call(client, "bad_result")
            assert info.value.code == INTERNAL_ERROR
            # the session survives all of them
            assert (await call(client, "echo")).content


async def test_busy_beyond_max_concurrent_requests() -> None:
    sh = ServerHandler()
    with trio.fail_after(LIMIT):
        async with session_pair(sh, server_kw={"max_concurrent_requests": 2}) as (client, *_):
            async with trio.open_nursery() as nursery:
                for i in range(2):
                    nursery.start_soon(_call_kw, client, "gate", {"args": {"tag": f"g{i}"}})
                await sh.started_event("g0").wait()
                await sh.started_event("g1").wait()
                with pytest.raises(McpError) as info:
                    await call(client, "echo")
                assert info.value.code == INTERNAL_ERROR
                assert info.value.message.startswith("server busy")
                # ping is answered by the session, not a handler: still works
                await client.send_request("ping")
                sh.gate.set()
            assert (await call(client, "echo")).content


async def _call_kw(session: Session, name: str, kw: dict[str, Any]) -> Any:
    return await call(session, name, **kw)


# A raw peer: the test writes and reads bytes itself.


class RawPeer:
    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.buffer = b""

    async def send(self, obj: Any) -> None:
        data = obj if isinstance(obj, bytes) else json.dumps(obj).encode() + b"\n"
        await self.stream.send_all(data)

    async def receive(self) -> Any:
        while b"\n" not in self.buffer:
            chunk = await self.stream.receive_some(65536)
            if not chunk:
                raise EOFError
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)


@asynccontextmanager
async def raw_pair(
    role: Any, handler: Any, **kw: Any
) -> AsyncIterator[tuple[Session, RawPeer, trio.abc.Stream]]:
    a, b = trio.testing.memory_stream_pair()
    async with open_session(StreamChannel(a), role, handler, **kw) as session:
        yield session, RawPeer(b), b


INIT = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


@spec(
    "2025-06-18/basic#messages.1",
    "2025-06-18/basic#requests.2",
    "2025-06-18/basic/utilities/ping#behavior-requirements.1",
)
async def test_bad_input_answered_and_session_goes_on() -> None:
    with trio.fail_after(LIMIT):
        async with raw_pair(SERVER, ServerHandler()) as (session, peer, _):
            await peer.send(b"this is not json\n")
            reply = await peer.receive()
            assert reply["id"] is None and reply["error"]["code"] == PARSE_ERROR
            await peer.send({"jsonrpc": "2.0", "id": None, "method": "ping"})
            reply = await peer.receive()
            assert reply["error"]["code"] == INVALID_REQUEST
            await peer.send(b"\n\n  \n")  # blank lines are ignored
            await peer.send({"jsonrpc": "2.0", "id": 7, "method": "ping"})
            assert await peer.receive() == {"jsonrpc": "2.0", "id": 7, "result": {}}
            await peer.send(INIT)
            reply = await peer.receive()
            assert reply["id"] == "init" and reply["result"]["protocolVersion"] == "2025-06-18"
            assert not session.closed


@spec("2025-06-18/basic/lifecycle#stdio.2")
async def test_end_of_input_fails_pending_requests() -> None:
    with trio.fail_after(LIMIT):
        async with raw_pair(CLIENT, ClientHandler()) as (session, peer, stream):
            outcome: list[BaseException] = []

            async def ask() -> None:
                try:
                    await session.send_request("ping")
                except SessionClosed as exc:
                    outcome.append(exc)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(ask)
                request = await peer.receive()
                assert request["method"] == "ping"
                await stream.aclose()
            assert len(outcome) == 1 and "closed the connection" in str(outcome[0])
            await session.wait_closed()
            assert session.closed
            with pytest.raises(SessionClosed):
                await session.send_request("ping")
            with pytest.raises(SessionClosed):
                await session.send_notification("notifications/initialized")


async def test_failed_write_ends_session() -> None:
    with trio.fail_after(LIMIT):
        a, b = trio.testing.memory_stream_pair()
        await b.aclose()
        async with open_session(StreamChannel(a), CLIENT, ClientHandler()) as session:
            with pytest.raises(SessionClosed) as info:
                await session.send_request("ping")
            assert "sending to the peer failed" in info.value.reason
            assert session.closed


async def test_no_task_left_after_exit() -> None:
    """A request pending and a handler running when the block ends: the caller gets
    SessionClosed, the handler is cancelled, and every task is gone."""
    sh = ServerHandler()
    outcome: list[BaseException] = []
    with trio.fail_after(LIMIT):
        before = count_tasks()

        async def ask(client: Session) -> None:
            try:
                await call(client, "slow")
            except SessionClosed as exc:
                outcome.append(exc)

        async with trio.open_nursery() as outer:
            async with session_pair(sh) as (client, server, *_):
                outer.start_soon(ask, client)
                await sh.started_event("slow").wait()
                assert count_tasks() >= before + 8  # 2 x 3 session tasks, caller, handler
        assert count_tasks() == before
    assert sh.cancelled == ["slow"]
    assert len(outcome) == 1 and "closed by its owner" in outcome[0].reason


async def test_body_exception_propagates_unwrapped() -> None:
    with trio.fail_after(LIMIT):
        a, b = trio.testing.memory_stream_pair()
        with pytest.raises(KeyError):
            async with open_session(StreamChannel(a), CLIENT, ClientHandler()):
                raise KeyError("mine")
        with pytest.raises(McpError):
            async with session_pair() as (client, *_):
                await call(client, "mcp_error")


async def test_initialize_is_not_cancelled(autojump_clock: trio.testing.MockClock) -> None:
    """Cancelling the caller of initialize sends no notifications/cancelled."""
    with trio.fail_after(100):
        async with raw_pair(CLIENT, ClientHandler()) as (session, peer, _):
            with trio.move_on_after(1):
                await session.send_request("initialize", init_request().params)
            first = await peer.receive()
            assert first["method"] == "initialize"
            with trio.move_on_after(10) as scope:
                await peer.receive()
            assert scope.cancelled_caught and peer.buffer == b""


async def test_initialize_is_answered_before_the_next_message_is_dispatched() -> None:
    """A client that sends initialize, initialized and a request in one write: the
    session handles initialize before it takes the next event, so the lifecycle moves in
    input order and both requests are answered (a handler task for initialize would let
    the next messages reach the core before its answer, and they would be refused)."""

    class SlowInit(ServerHandler):
        async def handle_request(self, ctx: RequestContext) -> Any:
            if ctx.method == "initialize":
                for _ in range(10):
                    await trio.lowlevel.checkpoint()  # let every other task run
            return await super().handle_request(ctx)

    call_echo = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"x": 1}},
    }
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    with trio.fail_after(LIMIT):
        async with raw_pair(SERVER, SlowInit()) as (_, peer, _stream):
            await peer.send(
                b"".join(json.dumps(m).encode() + b"\n" for m in (INIT, initialized, call_echo))
            )
            first, second = await peer.receive(), await peer.receive()
            assert first["id"] == "init" and "result" in first
            assert second["id"] == 2 and "result" in second, second

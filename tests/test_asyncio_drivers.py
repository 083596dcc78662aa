"""The asyncio drivers: stdio server and client, Streamable HTTP client.

Each test is an ordinary function running ``asyncio.run`` under ``asyncio.timeout``
(no pytest-asyncio).  Servers run as subprocesses: the asyncio example server, a raw
JSON-lines script written here (for misbehaving servers), and the reference server
(``python -m mcp_ref serve``) when it exists.  The HTTP client is tested against a
loopback stub written here with h11, and against the reference server's
``--http`` mode when that exists.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import h11
import pytest

from mcp_ref import McpError, Notification, Progress
from mcp_ref import _http as rules
from mcp_ref import types as t
from mcp_ref._errors import INTERNAL_ERROR, INVALID_PARAMS, PARSE_ERROR, REQUEST_TIMEOUT
from mcp_ref.asyncio import (
    Handler,
    RequestContext,
    SessionClosed,
    open_http_client,
    open_stdio_client,
    serve_stdio,
)
from mcp_ref.asyncio.example_server import ExampleHandler

spec = pytest.mark.spec

EXAMPLE = [sys.executable, "-m", "mcp_ref.asyncio.example_server"]
REFERENCE = [sys.executable, "-m", "mcp_ref", "serve"]

# A JSON-lines server with no mcp_ref in it, for behaviours a good server never shows.
# argv[1]: "ask" sends the client a ping and a sampling request and reports the answers;
# "exit" dies on the first tools/call; "stubborn" ignores end of input and SIGTERM;
# "progress" reports progress twice on the call's token (and once on another token);
# "handlers" sends a sampling request and cancels it at once, then sampling, roots and
# elicitation requests, and reports the client's capabilities and the three answers.
RAW_SERVER = r"""
import json, signal, sys, time
mode = sys.argv[1]
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
def recv():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)
init = recv()
send({"jsonrpc": "2.0", "id": init["id"], "result": {
    "protocolVersion": init["params"]["protocolVersion"], "capabilities": {"tools": {}},
    "serverInfo": {"name": "raw", "version": "0"}}})
recv()
if mode == "stubborn":
    while True:
        time.sleep(3600)
call = recv()
if mode == "exit":
    sys.exit(3)
if mode == "progress":
    token = call["params"]["_meta"]["progressToken"]
    for tk, n, msg in ((token, 1, "a"), ("other", 1, "x"), (token, 2, "b")):
        send({"jsonrpc": "2.0", "method": "notifications/progress",
              "params": {"progressToken": tk, "progress": n, "total": 2, "message": msg}})
    send({"jsonrpc": "2.0", "id": call["id"],
          "result": {"content": [{"type": "text", "text": json.dumps(token)}]}})
    recv()
if mode == "handlers":
    sample = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
              "maxTokens": 5}
    slow = {"messages": [{"role": "user", "content": {"type": "text", "text": "slow"}}],
            "maxTokens": 5}
    send({"jsonrpc": "2.0", "id": "s5", "method": "sampling/createMessage", "params": slow})
    send({"jsonrpc": "2.0", "method": "notifications/cancelled",
          "params": {"requestId": "s5", "reason": "changed my mind"}})
    send({"jsonrpc": "2.0", "id": "s2", "method": "sampling/createMessage", "params": sample})
    send({"jsonrpc": "2.0", "id": "s3", "method": "roots/list"})
    send({"jsonrpc": "2.0", "id": "s4", "method": "elicitation/create", "params": {
        "message": "name?", "requestedSchema": {"type": "object", "properties": {}}}})
    answers = [recv(), recv(), recv()]  # an answer to s5 would be among them
    report = {"capabilities": init["params"]["capabilities"], "answers": answers}
    send({"jsonrpc": "2.0", "id": call["id"],
          "result": {"content": [{"type": "text", "text": json.dumps(report)}]}})
    recv()
send({"jsonrpc": "2.0", "id": "s1", "method": "ping"})
send({"jsonrpc": "2.0", "id": "s2", "method": "sampling/createMessage",
      "params": {"messages": [], "maxTokens": 1}})
answers = [recv(), recv()]
send({"jsonrpc": "2.0", "id": call["id"],
      "result": {"content": [{"type": "text", "text": json.dumps(answers)}]}})
recv()
"""


def raw_server(mode: str) -> list[str]:
    return [sys.executable, "-c", RAW_SERVER, mode]


def run(main: Callable[[], Awaitable[Any]], seconds: float = 30.0) -> Any:
    async def bounded() -> Any:
        async with asyncio.timeout(seconds):
            return await main()

    return asyncio.run(bounded())


def text_of(result: t.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, t.TextContent)
    return block.text


def reference_server_missing() -> str | None:
    for module in ("mcp_ref.server", "mcp_ref.__main__"):
        if importlib.util.find_spec(module) is None:
            return f"the reference server is not written yet ({module} is missing)"
    return None


def echo_arguments(tools: list[t.Tool], text: str) -> dict[str, Any]:
    """Arguments for the reference server's echo tool, read from its input schema."""
    (echo,) = [tool for tool in tools if tool.name == "echo"]
    schema = echo.input_schema
    names = list(schema.get("required") or schema.get("properties") or ["text"])
    return {names[0]: text}


# -- stdio client against the example server --------------------------------------


@spec(
    "2025-06-18/basic/lifecycle#initialization.4",
    "2025-06-18/server/utilities/pagination#implementation-guidelines.3",
    "2025-06-18/basic/utilities/ping#behavior-requirements.1",
    "2025-06-18/basic/lifecycle#stdio.1",
)
def test_stdio_client_example_server() -> None:
    async def main() -> Any:
        async with open_stdio_client(EXAMPLE) as client:
            assert client.initialize_result is not None
            assert client.initialize_result.server_info.name == "mcp-ref-asyncio-example"
            tools = await client.list_tools()  # two pages of two
            echoed = await client.call_tool("echo", {"text": "héllo"})
            raw = await client.request(
                "tools/call", {"name": "echo", "arguments": {"text": "dict params"}}
            )
            await client.ping()
            with pytest.raises(McpError) as failed:
                await client.call_tool("fail")
            with pytest.raises(McpError) as unknown:
                await client.call_tool("no-such-tool")
        return client, tools, echoed, raw, failed.value, unknown.value

    client, tools, echoed, raw, failed, unknown = run(main)
    assert [tool.name for tool in tools] == ["echo", "sleep", "cancellations", "fail"]
    assert text_of(echoed) == "héllo" and text_of(raw) == "dict params"
    assert failed.code == INTERNAL_ERROR and "Traceback" not in failed.message
    assert unknown.code == INVALID_PARAMS
    # closing stdin made the server return from serve_stdio and exit by itself
    assert client.process.returncode == 0
    assert client.closed


@spec(
    "2025-06-18/basic/lifecycle#timeouts.2",
    "2025-06-18/basic/lifecycle#timeouts.3",
    "2025-06-18/basic/utilities/cancellation#behavior-requirements.3",
)
def test_stdio_client_timeout_cancels_on_the_server() -> None:
    async def main() -> Any:
        async with open_stdio_client(EXAMPLE, timeout=30) as client:
            loop = asyncio.get_running_loop()
            start = loop.time()
            with pytest.raises(McpError) as expired:
                await client.call_tool("sleep", {"seconds": 60}, timeout=0.3)
            elapsed = loop.time() - start
            report = await client.call_tool("cancellations")
            assert client.connection.requests_in_flight() == ([], [])
        return expired.value, elapsed, json.loads(text_of(report))

    expired, elapsed, cancelled = run(main)
    assert expired.code == REQUEST_TIMEOUT
    assert 0.3 <= elapsed < 5
    assert [reason for _, reason in cancelled] == ["timed out"]


@spec("2025-06-18/basic/utilities/cancellation#behavior-requirements.3")
def test_stdio_client_task_cancellation_sends_cancelled() -> None:
    async def main() -> Any:
        async with open_stdio_client(EXAMPLE) as client:
            call = asyncio.create_task(client.call_tool("sleep", {"seconds": 60}))
            await asyncio.sleep(0)  # let it run up to its first await: the request is written
            (rid,) = client.connection.requests_in_flight()[0]
            # A ping round trip: the server has read the call and started its handler
            # (a request cancelled before its handler starts never reaches the handler).
            await client.ping()
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            report = await client.call_tool("cancellations")
        return rid, json.loads(text_of(report))

    rid, cancelled = run(main)
    assert cancelled == [[rid, "cancelled by the client"]]


@spec(
    "2025-06-18/basic/utilities/ping#behavior-requirements.1",
    "2025-06-18/basic/lifecycle#operation.1",
)
def test_stdio_client_answers_ping_and_refuses_sampling() -> None:
    async def main() -> Any:
        async with open_stdio_client(raw_server("ask")) as client:
            return await client.call_tool("anything")

    answers = {a["id"]: a for a in json.loads(text_of(run(main)))}
    assert answers["s1"] == {"jsonrpc": "2.0", "id": "s1", "result": {}}
    assert answers["s2"]["error"]["code"] == -32601  # no sampling capability declared


@spec("2025-06-18/basic/utilities/progress#progress-flow.1")
def test_stdio_client_on_progress() -> None:
    async def main() -> Any:
        seen: list[Progress] = []
        async with open_stdio_client(raw_server("progress")) as client:
            result = await client.call_tool("anything", on_progress=seen.append)
        return seen, json.loads(text_of(result))

    seen, token = run(main)
    assert isinstance(token, (str, int)) and not isinstance(token, bool)
    assert [(p.progress_token, p.progress, p.total, p.message) for p in seen] == [
        (token, 1, 2, "a"),
        (token, 2, 2, "b"),
    ]  # the progress for another token was dropped by the core


@spec(
    "2025-06-18/client/sampling#capabilities.1",
    "2025-06-18/client/elicitation#capabilities.1",
    "2025-06-18/client/roots#capabilities.1",
    "2025-06-18/basic/utilities/cancellation#behavior-requirements.3",
)
def test_stdio_client_handlers_answer_and_are_cancelled() -> None:
    slow = {"started": 0, "cancelled": 0}

    async def sample(params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        text = params.messages[0].content.text  # type: ignore[union-attr]
        if text == "slow":  # s5, which the server cancels at once
            slow["started"] += 1
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                slow["cancelled"] += 1
                raise
        return t.CreateMessageResult(
            role="assistant", content=t.TextContent(text=f"re: {text}"), model="m"
        )

    def elicit(params: Any) -> t.ElicitResult:  # a plain function works too
        assert params.message == "name?"
        return t.ElicitResult(action="decline")

    async def main() -> Any:
        async with open_stdio_client(
            raw_server("handlers"),
            sampling_handler=sample,
            elicitation_handler=elicit,
            roots=[t.Root(uri="file:///srv/data", name="data")],
        ) as client:
            report = json.loads(text_of(await client.call_tool("anything")))
            # s5's task ran before s2's: it was cancelled, or never started
            assert slow["started"] == slow["cancelled"] <= 1
            return report

    report = run(main)
    roots = {"listChanged": True}  # the client can say when they change (set_roots)
    assert report["capabilities"] == {"sampling": {}, "elicitation": {}, "roots": roots}
    answers = {a["id"]: a for a in report["answers"]}
    assert set(answers) == {"s2", "s3", "s4"}  # s5 was cancelled: never answered
    assert answers["s2"]["result"]["content"] == {"type": "text", "text": "re: hi"}
    assert answers["s3"]["result"] == {"roots": [{"uri": "file:///srv/data", "name": "data"}]}
    assert answers["s4"]["result"] == {"action": "decline"}


def test_clients_refuse_bad_versions_and_roots_before_starting() -> None:
    async def main(**kw: Any) -> None:
        async with open_stdio_client(["/no/such/program"], **kw):
            pass

    with pytest.raises(ValueError, match="2025-06-18"):
        run(partial(main, protocol_version="1999-01-01"))
    with pytest.raises(ValueError, match="file://"):
        run(partial(main, roots=[t.Root(uri="file:///a/../etc")]))


@spec("2025-06-18/basic/lifecycle#version-negotiation.1")
def test_stdio_client_asks_for_an_older_version() -> None:
    async def main() -> Any:
        async with open_stdio_client(EXAMPLE, protocol_version="2025-03-26") as client:
            assert client.initialize_result is not None
            return client.initialize_result.protocol_version, client.connection.protocol_version

    assert run(main) == ("2025-03-26", "2025-03-26")


def test_stdio_client_abort() -> None:
    async def main() -> Any:
        async with open_stdio_client(EXAMPLE) as client:
            call = asyncio.create_task(client.call_tool("sleep", {"seconds": 60}))
            await client.ping()  # the call was written before the ping
            client.abort()
            with pytest.raises(SessionClosed, match="aborted"):
                await call
            with pytest.raises(SessionClosed):
                await client.ping()
        return client

    client = run(main)
    # end of input was all the server saw: it cancelled the call and exited by itself
    assert client.process.returncode == 0


def test_stdio_client_server_exit_fails_pending_request() -> None:
    async def main() -> Any:
        async with open_stdio_client(raw_server("exit")) as client:
            with pytest.raises(SessionClosed):
                await client.call_tool("anything")
            with pytest.raises(SessionClosed):
                await client.ping()
        return client.process.returncode

    assert run(main) == 3


def test_stdio_client_large_messages_both_ways() -> None:
    """1 MiB each way: more than the pipes hold, so writes wait while reads go on."""
    text = "y" * (1024 * 1024)

    async def main() -> Any:
        async with open_stdio_client(EXAMPLE) as client:
            return await client.call_tool("echo", {"text": text})

    assert text_of(run(main)) == text


def test_stdio_client_server_that_never_answers_initialize() -> None:
    async def main() -> None:
        async with open_stdio_client([sys.executable, "-c", "pass"]):
            raise AssertionError("not reached")

    with pytest.raises(SessionClosed):
        run(main)


@spec("2025-06-18/basic/lifecycle#stdio.1")
def test_stdio_client_kills_a_stubborn_server() -> None:
    async def main() -> Any:
        async with open_stdio_client(raw_server("stubborn"), shutdown_grace=0.2) as client:
            pass
        return client.process.returncode

    assert run(main) == -signal.SIGKILL


# -- serve_stdio -------------------------------------------------------------------


@spec("2025-06-18/basic/transports#stdio.4")
def test_serve_stdio_answers_bad_input_and_exits_at_end_of_input() -> None:
    async def main() -> Any:
        proc = await asyncio.create_subprocess_exec(
            *EXAMPLE, stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b"this is not json\n")
        proc.stdin.write(b'{"jsonrpc":"2.0","id":"p","method":"ping"}\n')
        lines = [json.loads(await proc.stdout.readline()) for _ in range(2)]
        proc.stdin.close()
        rest = await proc.stdout.read()
        return lines, rest, await proc.wait()

    (parse_error, pong), rest, code = run(main)
    assert parse_error["id"] is None and parse_error["error"]["code"] == PARSE_ERROR
    assert pong == {"jsonrpc": "2.0", "id": "p", "result": {}}
    assert rest == b"" and code == 0


class _Recorder:
    """A Handler (only tools/call) that records notifications."""

    def __init__(self) -> None:
        self.notifications: list[str] = []

    async def handle_request(self, ctx: RequestContext) -> Any:
        await ctx.report_progress(1, total=2)
        await ctx.report_progress(2, total=2)
        return t.CallToolResult(content=[t.TextContent(text=f"called {ctx.params.name}")])

    async def handle_notification(self, notification: Notification) -> None:
        self.notifications.append(notification.method)


@spec("2025-06-18/basic/lifecycle#version-negotiation.3", "2025-06-18/basic/lifecycle#operation.1")
def test_serve_stdio_in_process_on_a_socket_pair() -> None:
    """serve_stdio on any asyncio stream pair, spoken to in raw JSON lines."""

    async def main() -> Any:
        ours, theirs = socket.socketpair()
        s_reader, s_writer = await asyncio.open_connection(sock=theirs)
        reader, writer = await asyncio.open_connection(sock=ours)
        handler = _Recorder()
        _: Handler = handler
        server = asyncio.create_task(
            serve_stdio(
                handler,
                server_info=t.Implementation(name="in-process", version="1"),
                capabilities=t.ServerCapabilities(tools=t.ServerCapabilitiesTools()),
                streams=(s_reader, s_writer),
            )
        )

        async def exchange(*messages: dict[str, Any], replies: int = 1) -> list[Any]:
            for message in messages:
                writer.write(json.dumps(message).encode() + b"\n")
            return [json.loads(await reader.readline()) for _ in range(replies)]

        init = {"protocolVersion": "2025-06-18", "capabilities": {}}
        init["clientInfo"] = {"name": "raw", "version": "0"}
        (init_reply,) = await exchange(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}
        )
        await exchange({"jsonrpc": "2.0", "method": "notifications/initialized"}, replies=0)
        call = {"name": "x", "_meta": {"progressToken": "tok"}}
        call_replies = await exchange(
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}, replies=3
        )
        (refused,) = await exchange({"jsonrpc": "2.0", "id": 3, "method": "prompts/list"})
        writer.write_eof()
        await server  # returns at end of input
        writer.close()
        s_writer.close()
        return init_reply, call_replies, refused, handler.notifications

    init_reply, (p1, p2, answer), refused, notes = run(main)
    assert init_reply["result"]["protocolVersion"] == "2025-06-18"
    assert init_reply["result"]["serverInfo"]["name"] == "in-process"
    assert [p["params"]["progress"] for p in (p1, p2)] == [1, 2]
    assert answer == {
        "jsonrpc": "2.0",
        "id": 2,
        "result": {"content": [{"type": "text", "text": "called x"}]},
    }
    assert refused["error"]["code"] == -32601  # no prompts capability: the core refuses
    assert notes == ["notifications/initialized"]


def test_example_handler_is_a_handler() -> None:
    handler: Handler = ExampleHandler()
    assert handler is not None


# -- the reference server, when it exists -------------------------------------------


def test_stdio_client_reference_server() -> None:
    missing = reference_server_missing()
    if missing:
        pytest.skip(missing)

    async def main() -> Any:
        async with open_stdio_client(REFERENCE) as client:
            tools = await client.list_tools()
            result = await client.call_tool("echo", echo_arguments(tools, "from asyncio"))
            await client.ping()
        return result, client.process.returncode

    result, code = run(main)
    assert "from asyncio" in text_of(result)
    assert code == 0


def test_http_client_reference_server() -> None:
    missing = reference_server_missing()
    if missing:
        pytest.skip(missing)

    async def main() -> Any:
        # Port 0: the server picks a free port and prints its URL once it listens.
        proc = await asyncio.create_subprocess_exec(
            *REFERENCE, "--http", "127.0.0.1:0", stderr=asyncio.subprocess.PIPE
        )
        assert proc.stderr is not None
        try:
            line = (await proc.stderr.readline()).decode()
            match = re.search(r"(http://\S+)", line)
            assert match, f"no URL in the server's first line: {line!r}"
            async with open_http_client(match.group(1)) as client:
                tools = await client.list_tools()
                result = await client.call_tool("echo", echo_arguments(tools, "over http"))
                await client.ping()
            return result
        finally:
            proc.terminate()
            await proc.wait()

    assert "over http" in text_of(run(main))


# -- the HTTP client against a loopback stub -----------------------------------------

SESSION = "stub-session-1"


class Stub:
    """A tiny Streamable HTTP server: one h11 request per connection.

    initialize gets JSON (with a session id); tools/call "hello" gets an SSE stream
    that pings the client and logs before answering; "error" gets a 500 with a
    JSON-RPC error; "hang" an SSE stream that never answers; "gone" a 404 until the
    client has initialized a second time; anything else a 404.
    """

    def __init__(self) -> None:
        self.hanging: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.seen: list[tuple[str, list[tuple[bytes, bytes]], Any]] = []
        self.ping_answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.cancelled: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.inits = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        h = h11.Connection(h11.SERVER)
        request: h11.Request | None = None
        body = b""
        try:
            while True:
                event = h.next_event()
                if event is h11.NEED_DATA:
                    h.receive_data(await reader.read(65536))
                elif isinstance(event, h11.Request):
                    request = event
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    break
                else:
                    return
            assert request is not None
            message = json.loads(body) if body else None
            self.seen.append((request.method.decode(), list(request.headers), message))
            await self.answer(h, reader, writer, request.method, message)
        finally:
            writer.close()

    async def respond(
        self,
        h: h11.Connection,
        writer: asyncio.StreamWriter,
        status: int,
        headers: list[tuple[bytes, bytes]],
        *chunks: bytes,
    ) -> None:
        writer.write(h.send(h11.Response(status_code=status, headers=headers)))
        for chunk in chunks:
            writer.write(h.send(h11.Data(data=chunk)))
            await writer.drain()
        writer.write(h.send(h11.EndOfMessage()))
        await writer.drain()

    async def answer(
        self,
        h: h11.Connection,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        method: bytes,
        msg: Any,
    ) -> None:
        sse = [(b"content-type", b"text/event-stream")]
        if method == b"DELETE":
            return await self.respond(h, writer, 200, [(b"content-length", b"0")])
        if "method" not in msg:  # a response from the client
            if msg["id"] == "srv-ping":
                self.ping_answer.set_result(msg)
            return await self.respond(h, writer, 202, [(b"content-length", b"0")])
        if "id" not in msg:  # a notification
            if msg["method"] == "notifications/cancelled" and not self.cancelled.done():
                self.cancelled.set_result(msg)
            return await self.respond(h, writer, 202, [(b"content-length", b"0")])
        rid, name = msg["id"], msg.get("params", {}).get("name")
        if msg["method"] == "initialize":
            self.inits += 1
            result = {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}, "logging": {}},
                "serverInfo": {"name": "stub", "version": "0"},
            }
            data = json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode()
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                (b"mcp-session-id", SESSION.encode()),
            ]
            return await self.respond(h, writer, 200, headers, data)
        if name == "hello":
            ping = json.dumps({"jsonrpc": "2.0", "id": "srv-ping", "method": "ping"})
            log = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/message",
                    "params": {"level": "info", "data": "working"},
                }
            )
            writer.write(h.send(h11.Response(status_code=200, headers=sse)))
            writer.write(h.send(h11.Data(data=b": primed\r\n\r\nid: e1\r\ndata: " + ping.encode())))
            writer.write(h.send(h11.Data(data=b"\r\n\r\nevent: message\ndata: " + log.encode())))
            writer.write(h.send(h11.Data(data=b"\n\n")))
            await writer.drain()
            await self.ping_answer  # the client answers on a POST of its own, meanwhile
            done = {"content": [{"type": "text", "text": "hello back"}]}
            final = b"data: " + json.dumps({"jsonrpc": "2.0", "id": rid, "result": done}).encode()
            writer.write(h.send(h11.Data(data=final[:20])))
            await writer.drain()
            writer.write(h.send(h11.Data(data=final[20:] + b"\n\n")))
            writer.write(h.send(h11.EndOfMessage()))
            return await writer.drain()
        if name == "error":
            data = b'{"jsonrpc":"2.0","error":{"code":-32603,"message":"boom"}}'
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
            ]
            return await self.respond(h, writer, 500, headers, data)
        if name == "hang":
            writer.write(h.send(h11.Response(status_code=200, headers=sse)))
            writer.write(h.send(h11.Data(data=b": nothing yet\n\n")))
            await writer.drain()
            if not self.hanging.done():
                self.hanging.set_result(None)
            with contextlib.suppress(ConnectionError):
                await reader.read()  # until the client gives up and closes
            return None
        if name == "gone" and self.inits > 1:
            done = {"content": [{"type": "text", "text": "back"}]}
            data = json.dumps({"jsonrpc": "2.0", "id": rid, "result": done}).encode()
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
            ]
            return await self.respond(h, writer, 200, headers, data)
        return await self.respond(h, writer, 404, [(b"content-length", b"0")])


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    values = [v.decode() for k, v in headers if k == name]
    return values[0] if values else None


@spec(
    "2025-06-18/basic/transports#sending-messages-to-the-server.1",
    "2025-06-18/basic/transports#sending-messages-to-the-server.3",
    "2025-06-18/basic/transports#sending-messages-to-the-server.9",
    "2025-06-18/basic/transports#sending-messages-to-the-server.17",
    "2025-06-18/basic/transports#session-management.4",
    "2025-06-18/basic/transports#session-management.8",
    "2025-06-18/basic/transports#protocol-version-header.1",
)
def test_http_client_against_stub() -> None:
    async def main() -> Any:
        stub = Stub()
        server = await asyncio.start_server(stub.serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        notes: list[Notification] = []
        async with server:
            url = f"http://127.0.0.1:{port}/mcp"
            async with open_http_client(url, on_notification=notes.append) as client:
                assert client.session_id == SESSION
                hello = await client.call_tool("hello", {"x": 1})
                with pytest.raises(McpError) as failed:
                    await client.call_tool("error")
                with pytest.raises(McpError) as expired:
                    await client.call_tool("hang", timeout=0.3)
                cancelled = await stub.cancelled
                (hang_id,) = [
                    msg["id"]
                    for _, _, msg in stub.seen
                    if msg and msg.get("params", {}).get("name") == "hang"
                ]
        return stub, hello, failed.value, expired.value, cancelled, hang_id, notes

    stub, hello, failed, expired, cancelled, hang_id, notes = run(main)
    assert text_of(hello) == "hello back"
    assert [n.method for n in notes] == ["notifications/message"]
    assert stub.ping_answer.result() == {"jsonrpc": "2.0", "id": "srv-ping", "result": {}}
    assert failed.code == -32603 and "boom" in failed.message
    assert failed.data == {"http_status": 500}
    assert expired.code == REQUEST_TIMEOUT
    assert cancelled["params"]["requestId"] == hang_id

    methods = [(m, (msg or {}).get("method")) for m, _, msg in stub.seen]
    assert methods[:3] == [
        ("POST", "initialize"),
        ("POST", "notifications/initialized"),
        ("POST", "tools/call"),
    ]
    assert methods[-1] == ("DELETE", None)
    for i, (method, headers, _) in enumerate(stub.seen):
        if method == "POST":
            assert rules.check_accept(headers, b"POST") is None
            assert _header(headers, b"content-type") == "application/json"
        expected = (None, None) if i == 0 else (SESSION, "2025-11-25")
        assert (_header(headers, b"mcp-session-id"), _header(headers, b"mcp-protocol-version")) == (
            expected
        )


@spec("2025-06-18/basic/transports#session-management.7")
def test_http_client_starts_a_new_session_after_404() -> None:
    """A 404 to a request with our session id: the client sends a new initialize without
    a session id (and initialized), then the request again, which the new session
    answers."""

    async def main() -> Any:
        stub = Stub()
        server = await asyncio.start_server(stub.serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            async with open_http_client(f"http://127.0.0.1:{port}/") as client:
                result = await client.call_tool("gone")
                assert result.content[0].text == "back"  # type: ignore[union-attr]
        return stub.seen

    seen = run(main)
    sent = [(verb, msg["method"] if msg else None) for verb, _, msg in seen]
    assert sent == [
        ("POST", "initialize"),
        ("POST", "notifications/initialized"),
        ("POST", "tools/call"),  # 404
        ("POST", "initialize"),
        ("POST", "notifications/initialized"),
        ("POST", "tools/call"),
        ("DELETE", None),
    ]
    assert _header(seen[2][1], b"mcp-session-id") == SESSION
    assert _header(seen[3][1], b"mcp-session-id") is None  # the new initialize: no id
    assert seen[3][2] == seen[0][2]  # the same initialize, replayed
    assert _header(seen[5][1], b"mcp-session-id") == SESSION


def test_http_client_session_gone_again_closes() -> None:
    """A 404 to the request sent again in the new session: the session is closed."""

    async def main() -> Any:
        stub = Stub()
        server = await asyncio.start_server(stub.serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            async with open_http_client(f"http://127.0.0.1:{port}/") as client:
                with pytest.raises(SessionClosed, match="404"):
                    await client.call_tool("gone-always")
                with pytest.raises(SessionClosed):
                    await client.ping()
        return [method for method, _, _ in stub.seen]

    # initialize, initialized, the call (404), initialize, initialized, the call (404);
    # no DELETE for a session the server already ended
    assert run(main) == ["POST"] * 6


def test_http_client_abort_sends_no_delete() -> None:
    async def main() -> Any:
        stub = Stub()
        server = await asyncio.start_server(stub.serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            async with open_http_client(f"http://127.0.0.1:{port}/") as client:
                call = asyncio.create_task(client.call_tool("hang"))
                await stub.hanging
                client.abort()
                with pytest.raises(SessionClosed, match="aborted"):
                    await call
        return [method for method, _, _ in stub.seen]

    assert run(main) == ["POST", "POST", "POST"]  # initialize, initialized, the call


def test_http_client_refuses_other_schemes() -> None:
    async def main() -> None:
        async with open_http_client("ftp://example.invalid/"):
            pass

    with pytest.raises(ValueError, match="http"):
        run(main)

"""The Streamable HTTP client (mcp_ref.client.open_http_client) over loopback.

Two kinds of peer: the real server (serve_http with a small mcp_ref.server.Server), for
round trips; and a scripted fake server written here with h11, which records every
request and answers exactly as a test says, for the headers, the retry timing, the 404
re-initialization and the error paths.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import attrs
import h11
import pytest
import trio
import trio.testing

from mcp_ref import McpError
from mcp_ref._http import HttpLimits
from mcp_ref._http_client_streams import ANSWERED_GRACE
from mcp_ref._sse import SSEEvent, encode_event
from mcp_ref.client import open_client, open_http_client
from mcp_ref.events import Notification
from mcp_ref.trio import SessionClosed
from mcp_ref.trio.http.client import open_http_channel

from ._http_raw import RawConnection
from .test_transports_http import call, serve

TIMEOUT = 15
T = "2025-06-18/basic/transports#"


# -- a scripted fake server ---------------------------------------------------------------


@attrs.define
class Req:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes
    at: float

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class Reply:
    """How a fake answers one request (h11 underneath)."""

    def __init__(self, stream: trio.SocketStream, conn: h11.Connection) -> None:
        self.stream = stream
        self.conn = conn

    async def _send(self, event: Any) -> None:
        await self.stream.send_all(self.conn.send(event))

    async def status(self, code: int, body: bytes = b"", **headers: str) -> None:
        hdrs = [(k.replace("_", "-"), v) for k, v in headers.items()]
        hdrs.append(("content-length", str(len(body))))
        if body:
            hdrs.append(("content-type", "application/json"))
        await self._send(h11.Response(status_code=code, headers=hdrs))
        if body:
            await self._send(h11.Data(data=body))
        await self._send(h11.EndOfMessage())

    async def json(self, obj: Any, **headers: str) -> None:
        await self.status(200, json.dumps(obj).encode(), **headers)

    async def sse(self, events: list[SSEEvent], *, end: bool = True, **headers: str) -> None:
        hdrs = [(k.replace("_", "-"), v) for k, v in headers.items()]
        hdrs.append(("content-type", "text/event-stream"))
        await self._send(h11.Response(status_code=200, headers=hdrs))
        for ev in events:
            await self._send(h11.Data(data=encode_event(ev)))
        if end:
            await self._send(h11.EndOfMessage())


Script = Callable[[Req, Reply], Awaitable[None]]


class Fake:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[Req] = []

    async def handle(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                req: h11.Request | None = None
                body = b""
                while True:
                    event = conn.next_event()
                    if event is h11.NEED_DATA:
                        conn.receive_data(await stream.receive_some(65536))
                        continue
                    if isinstance(event, h11.Request):
                        req = event
                    elif isinstance(event, h11.Data):
                        body += event.data
                    elif isinstance(event, h11.EndOfMessage):
                        break
                    else:
                        return
                assert req is not None
                headers = {bytes(k).decode(): bytes(v).decode() for k, v in req.headers}
                r = Req(
                    req.method.decode(), req.target.decode(), headers, body, trio.current_time()
                )
                self.requests.append(r)
                await self.script(r, Reply(stream, conn))
                if conn.our_state is not h11.DONE:
                    await trio.sleep_forever()  # an open SSE stream: wait to be cancelled
                conn.start_next_cycle()
        except (trio.BrokenResourceError, h11.ProtocolError):
            pass
        finally:
            await stream.aclose()


@asynccontextmanager
async def fake_server(script: Script) -> AsyncIterator[tuple[str, Fake]]:
    fake = Fake(script)
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, fake.handle, 0, host="127.0.0.1"))
        port = listeners[0].socket.getsockname()[1]
        yield f"http://127.0.0.1:{port}/mcp", fake
        nursery.cancel_scope.cancel()


def init_result(rid: Any, version: str = "2025-11-25") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "result": {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fake", "version": "1"},
        },
    }


def text_result(rid: Any, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}}


# -- against the real server ----------------------------------------------------------------


@pytest.mark.spec(T + "sending-messages-to-the-server.9")
@pytest.mark.parametrize("json_response", [False, True])
async def test_round_trip_with_sse_and_json_answers(json_response: bool) -> None:
    logs: list[Any] = []
    both = trio.Event()

    def on_log(params: Any) -> None:
        logs.append(params.data)
        if len(logs) == 2:
            both.set()

    with trio.fail_after(TIMEOUT):
        async with (
            serve(json_response=json_response) as (info, _),
            open_http_client(info.url, on_log=on_log) as client,
        ):
            assert client.protocol_version == "2025-11-25"
            assert (await client.call_tool("echo", {"text": "hi"})).content[0].text == "hi"  # type: ignore[union-attr]
            result = await client.call_tool("announce", {"text": "z"})
            assert result.content[0].text == "announced"  # type: ignore[union-attr]
            await both.wait()
            assert sorted(logs) == ["related z", "unrelated z"]


@pytest.mark.spec(T + "listening-for-messages-from-the-server.1")
async def test_the_get_stream_brings_unrelated_notifications() -> None:
    unrelated = trio.Event()

    def on_notification(note: Notification) -> None:
        if note.params.data == "unrelated g":  # type: ignore[union-attr]
            unrelated.set()

    with trio.fail_after(TIMEOUT):
        async with (
            serve() as (info, _),
            open_http_client(info.url, on_notification=on_notification) as client,
        ):
            await client.call_tool("announce", {"text": "g"})
            await unrelated.wait()


@pytest.mark.spec(T + "resumability-and-redelivery.3")
async def test_resumes_a_stream_the_server_closed() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve(retry_ms=20) as (info, ctrl), open_http_client(info.url) as client:
            async with trio.open_nursery() as nursery:

                async def release() -> None:
                    await ctrl.polled.wait()
                    ctrl.release.set()

                nursery.start_soon(release)
                result = await client.call_tool("poll")
            assert result.content[0].text == "polled"  # type: ignore[union-attr]


@pytest.mark.spec(T + "session-management.7", T + "session-management.6")
async def test_a_404_starts_a_new_session_transparently() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _), open_http_channel(info.url) as channel:
            async with open_client(channel) as client:
                old = channel.session_id
                assert old is not None
                raw = await RawConnection.open(info.port)
                ans = await raw.request("DELETE", session_id=old)
                assert ans.status == 200
                await raw.aclose()
                result = await client.call_tool("echo", {"text": "again"})
                assert result.content[0].text == "again"  # type: ignore[union-attr]
                assert channel.reinitializations == 1
                assert channel.session_id not in (None, old)


@pytest.mark.spec(T + "session-management.8")
async def test_closing_the_client_deletes_the_session() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            async with open_http_channel(info.url) as channel, open_client(channel):
                sid = channel.session_id
            raw = await RawConnection.open(info.port)
            ans = await raw.request("POST", body=call(9, "echo", {"text": "x"}), session_id=sid)
            assert ans.status == 404
            await raw.aclose()


async def test_two_hundred_concurrent_sessions_on_loopback() -> None:
    count = 200
    done: list[int] = []
    with trio.fail_after(120):
        async with serve() as (info, _):

            async def one(i: int) -> None:
                async with open_http_client(info.url) as client:
                    result = await client.call_tool("echo", {"text": str(i)})
                    assert result.content[0].text == str(i)  # type: ignore[union-attr]
                    done.append(i)

            async with trio.open_nursery() as nursery:
                for i in range(count):
                    nursery.start_soon(one, i)
    assert sorted(done) == list(range(count))


# -- against a scripted fake ------------------------------------------------------------------


async def _standard(req: Req, reply: Reply, *, session: str = "s1") -> bool:
    """Answer initialize, notifications, GET (405) and DELETE; False for the rest."""
    if req.method == "GET":
        await reply.status(405)
    elif req.method == "DELETE":
        await reply.status(200)
    elif req.json.get("method") == "initialize":
        await reply.json(init_result(req.json["id"]), mcp_session_id=session)
    elif "id" not in req.json:
        await reply.status(202)
    else:
        return False
    return True


@pytest.mark.spec(
    T + "sending-messages-to-the-server.1",
    T + "sending-messages-to-the-server.2",
    T + "sending-messages-to-the-server.3",
    T + "session-management.4",
    T + "protocol-version-header.1",
    T + "session-management.8",
    T + "protocol-version-header.2",
    "2025-06-18/basic/lifecycle#version-negotiation.7",
)
async def test_headers_of_every_request() -> None:
    async def script(req: Req, reply: Reply) -> None:
        if not await _standard(req, reply):
            await reply.json(text_result(req.json["id"], "ok"))

    with trio.fail_after(TIMEOUT):
        async with fake_server(script) as (url, fake):
            async with open_http_client(url) as client:
                await client.call_tool("x")
                negotiated = client.protocol_version
            init, *rest = fake.requests
            assert init.headers["accept"] == "application/json, text/event-stream"
            assert "mcp-session-id" not in init.headers
            assert "mcp-protocol-version" not in init.headers
            for req in rest:
                assert req.headers["mcp-session-id"] == "s1"
                assert req.headers["mcp-protocol-version"] == negotiated == "2025-11-25"
            methods = [(r.method, r.json.get("method") if r.body else None) for r in rest]
            assert methods[0] == ("POST", "notifications/initialized")
            assert ("GET", None) in methods
            assert ("POST", "tools/call") in methods
            assert methods[-1] == ("DELETE", None)
            for req in fake.requests:  # every message its own POST to the endpoint
                assert req.target == "/mcp"
                if req.method == "POST":
                    assert isinstance(req.json, dict) and req.json["jsonrpc"] == "2.0"


@pytest.mark.spec(T + "resumability-and-redelivery.3")
async def test_retry_is_honoured_and_last_event_id_sent() -> None:
    closed_at: list[float] = []

    async def script(req: Req, reply: Reply) -> None:
        if req.method == "GET" and "last-event-id" in req.headers:
            assert req.headers["last-event-id"] == "e1"
            rid = pending[0]
            await reply.sse([SSEEvent(data=json.dumps(text_result(rid, "resumed")), id="e2")])
        elif req.method == "POST" and req.json.get("method") == "tools/call":
            pending.append(req.json["id"])
            await reply.sse([SSEEvent(data="", id="e1", retry=300)])
            closed_at.append(trio.current_time())
        elif not await _standard(req, reply):
            await reply.status(500)

    pending: list[Any] = []
    with trio.fail_after(TIMEOUT):
        async with fake_server(script) as (url, fake), open_http_client(url) as client:
            result = await client.call_tool("x")
            assert result.content[0].text == "resumed"  # type: ignore[union-attr]
            resume = next(r for r in fake.requests if "last-event-id" in r.headers)
            assert 0.29 <= resume.at - closed_at[0] < 2.0


async def test_a_404_replays_initialize_then_retries() -> None:
    sessions = iter(["s1", "s2"])

    async def script(req: Req, reply: Reply) -> None:
        if req.method == "POST" and req.json.get("method") == "initialize":
            await reply.json(init_result(req.json["id"]), mcp_session_id=next(sessions))
        elif req.method == "POST" and req.json.get("method") == "tools/call":
            if req.headers.get("mcp-session-id") == "s1":
                await reply.status(404)
            else:
                await reply.json(text_result(req.json["id"], req.headers["mcp-session-id"]))
        elif not await _standard(req, reply):
            await reply.status(500)

    with trio.fail_after(TIMEOUT):
        async with fake_server(script) as (url, fake), open_http_client(url) as client:
            result = await client.call_tool("x")
            assert result.content[0].text == "s2"  # type: ignore[union-attr]
            inits = [r for r in fake.requests if r.body and r.json.get("method") == "initialize"]
            assert len(inits) == 2 and "mcp-session-id" not in inits[1].headers
            assert inits[0].body == inits[1].body


async def test_http_errors_and_lost_streams_answer_the_request_at_once() -> None:
    async def script(req: Req, reply: Reply) -> None:
        if req.method == "POST" and req.json.get("method") == "tools/call":
            name = req.json["params"]["name"]
            if name == "error":
                body = json.dumps({"jsonrpc": "2.0", "error": {"code": -32000, "message": "no"}})
                await reply.status(500, body.encode())
            else:  # an SSE stream without event ids that ends early: cannot be resumed
                await reply.sse([SSEEvent(data=json.dumps({"jsonrpc": "2.0", "method": "x/y"}))])
        elif not await _standard(req, reply):
            await reply.status(500)

    with trio.fail_after(TIMEOUT):
        async with fake_server(script) as (url, _), open_http_client(url) as client:
            with pytest.raises(McpError, match="HTTP 500: no"):
                await client.call_tool("error")
            with pytest.raises(McpError, match="cannot be resumed"):
                await client.call_tool("lost")


async def test_authorization_required_is_not_a_fallback() -> None:
    async def script(req: Req, reply: Reply) -> None:
        await reply.status(401, b'{"error":"invalid_token"}', www_authenticate="Bearer")

    with trio.fail_after(TIMEOUT):
        async with fake_server(script) as (url, fake):
            with pytest.raises(SessionClosed, match="authorization"):
                async with open_http_client(url):
                    pass
            assert [r.method for r in fake.requests] == ["POST"]


async def test_an_unreachable_server_fails_initialize() -> None:
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    port = listener.socket.getsockname()[1]
    await listener.aclose()
    with trio.fail_after(TIMEOUT), pytest.raises(SessionClosed, match="cannot reach"):
        async with open_http_client(f"http://127.0.0.1:{port}/mcp"):
            pass


async def test_bad_urls_are_refused() -> None:
    with pytest.raises(ValueError):
        async with open_http_channel("ftp://example.com/"):
            pass


async def test_no_fallback_when_the_get_is_no_sse_stream_either() -> None:
    async def script(req: Req, reply: Reply) -> None:
        await reply.status(404)

    with trio.fail_after(TIMEOUT):
        async with fake_server(script) as (url, fake):
            with pytest.raises(SessionClosed, match="not a 2024-11-05 HTTP\\+SSE server either"):
                async with open_http_client(url):
                    pass
            assert [r.method for r in fake.requests] == ["POST", "GET"]


async def test_requests_past_the_bound_fail_at_once_and_never_block_sends() -> None:
    with trio.fail_after(TIMEOUT):
        async with (
            serve() as (info, _),
            open_http_client(info.url, max_concurrent_posts=1) as client,
        ):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.call_tool, "block")
                await trio.testing.wait_all_tasks_blocked()
                with pytest.raises(McpError, match="more than 1 requests"):
                    await client.call_tool("echo", {"text": "x"})
                nursery.cancel_scope.cancel()


# -- appended: what each POST body holds, and the headers of a resumption -------------------


def _message_kind(obj: Any) -> str:
    """The kind of one JSON-RPC 2.0 message object: request, notification or response."""
    assert isinstance(obj, dict) and obj.get("jsonrpc") == "2.0", obj
    if "method" in obj:
        return "request" if "id" in obj else "notification"
    assert "id" in obj and ("result" in obj) != ("error" in obj), obj
    return "response"


@pytest.mark.spec(T + "sending-messages-to-the-server.4")
async def test_every_post_body_is_one_request_notification_or_response() -> None:
    """The client POSTs a request, notifications and a response (its answer to the
    server's ping, sent on the call's SSE stream): each body is exactly one JSON-RPC
    message object, never a batch, and each goes by POST to the endpoint."""
    answered = trio.Event()

    async def script(req: Req, reply: Reply) -> None:
        if req.method == "POST" and "method" not in req.json:
            answered.set()  # the client's answer to our ping
            await reply.status(202)
        elif req.method == "POST" and req.json.get("method") == "tools/call":
            ping = {"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}
            await reply.sse([SSEEvent(data=json.dumps(ping))], end=False)
            await answered.wait()
            done = SSEEvent(data=json.dumps(text_result(req.json["id"], "ok")))
            await reply._send(h11.Data(data=encode_event(done)))
            await reply._send(h11.EndOfMessage())
        elif not await _standard(req, reply):
            await reply.status(500)

    with trio.fail_after(TIMEOUT):
        async with fake_server(script) as (url, fake):
            async with open_http_client(url) as client:
                result = await client.call_tool("x")
                assert result.content[0].text == "ok"  # type: ignore[union-attr]
            carrying = [r for r in fake.requests if r.body]
            assert all(r.method == "POST" and r.target == "/mcp" for r in carrying)
            kinds = [_message_kind(r.json) for r in carrying]
            assert kinds.count("request") == 2  # initialize, tools/call
            assert "notification" in kinds
            assert kinds.count("response") == 1
            (answer,) = [r.json for r in carrying if _message_kind(r.json) == "response"]
            assert answer == {"jsonrpc": "2.0", "id": "srv-1", "result": {}}
            assert all(r.method != "POST" for r in fake.requests if not r.body)


@pytest.mark.spec(T + "session-management.4", T + "protocol-version-header.1")
@pytest.mark.spec(T + "resumability-and-redelivery.3")
async def test_a_resuming_get_carries_the_session_version_and_last_event_id() -> None:
    """The GET that resumes a stream the server closed is a subsequent request like
    any other: it carries Mcp-Session-Id and MCP-Protocol-Version, with Last-Event-ID."""

    async def script(req: Req, reply: Reply) -> None:
        if req.method == "GET" and "last-event-id" in req.headers:
            rid = pending[0]
            await reply.sse([SSEEvent(data=json.dumps(text_result(rid, "resumed")), id="e2")])
        elif req.method == "POST" and req.json.get("method") == "tools/call":
            pending.append(req.json["id"])
            await reply.sse([SSEEvent(data="", id="e1", retry=10)])
        elif not await _standard(req, reply):
            await reply.status(500)

    pending: list[Any] = []
    with trio.fail_after(TIMEOUT):
        async with fake_server(script) as (url, fake), open_http_client(url) as client:
            result = await client.call_tool("x")
            assert result.content[0].text == "resumed"  # type: ignore[union-attr]
            version = client.protocol_version
    (resume,) = [r for r in fake.requests if r.method == "GET" and "last-event-id" in r.headers]
    assert resume.headers["last-event-id"] == "e1"
    assert resume.headers["mcp-session-id"] == "s1"
    assert resume.headers["mcp-protocol-version"] == version == "2025-11-25"


@pytest.mark.spec(T + "sending-messages-to-the-server.9")
async def test_a_request_stream_left_open_after_its_response_is_closed_after_the_grace() -> None:
    """The server sends the response on the request's SSE stream and keeps the stream
    open: the caller has its result at once, and the client closes that connection
    after the grace the core gives (ANSWERED_GRACE), not before."""
    closed = trio.Event()
    answered_at: list[float] = []

    async def script(req: Req, reply: Reply) -> None:
        if req.method == "POST" and req.json.get("method") == "tools/call":
            await reply.sse(
                [SSEEvent(data=json.dumps(text_result(req.json["id"], "ok")))], end=False
            )
            answered_at.append(trio.current_time())
            while await reply.stream.receive_some(1024):
                pass  # until the client closes the connection
            closed.set()
        elif not await _standard(req, reply):
            await reply.status(500)

    with trio.fail_after(TIMEOUT):
        async with fake_server(script) as (url, _), open_http_client(url) as client:
            result = await client.call_tool("x")
            assert result.content[0].text == "ok"  # type: ignore[union-attr]
            await closed.wait()
            assert trio.current_time() - answered_at[0] >= ANSWERED_GRACE * 0.9


async def test_the_core_options_reach_the_channel_through_open_http_client() -> None:
    """open_http_client hands each keyword the channel takes to it (the core's options
    included: headers, limits, legacy_fallback, get_stream, default_retry)."""

    async def script(req: Req, reply: Reply) -> None:
        if not await _standard(req, reply):
            await reply.json(text_result(req.json["id"], "ok"))

    options: dict[str, Any] = {
        "headers": [("X-Extra", "1")],
        "limits": HttpLimits(),
        "legacy_fallback": False,
        "get_stream": False,
        "default_retry": 0.5,
    }
    with trio.fail_after(TIMEOUT):
        async with fake_server(script) as (url, fake):
            async with open_http_client(url, **options) as client:
                await client.call_tool("x")
    assert all(r.headers["x-extra"] == "1" for r in fake.requests)
    assert "GET" not in [r.method for r in fake.requests]  # no GET stream


# -- the modern era (2026-07-28) against the real server -------------------------------------


@pytest.mark.spec("2026-07-28/basic/transports/streamable-http#protocol-version-header.1")
async def test_a_modern_client_needs_no_session_against_the_real_server() -> None:
    with trio.fail_after(TIMEOUT):
        async with (
            serve() as (info, _),
            open_http_client(info.url, era="modern") as client,
        ):
            assert client.era == "modern" and client.protocol_version == "2026-07-28"
            result = await client.call_tool("echo", {"text": "hi"})
            assert result.content[0].text == "hi"  # type: ignore[union-attr]
            assert client.session.connection.era == "modern"
            channel: Any = client.session._channel
            assert channel.core.session_id is None  # no initialize, no session
            assert channel.core.modern.version == "2026-07-28"

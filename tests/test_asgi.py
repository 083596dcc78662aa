"""mcp_ref.asgi driven in-process by a minimal ASGI harness (scope, receive, send), on
trio and on asyncio (the trio guest-mode bridge), and mounted inside Starlette and
FastAPI.  The real ASGI servers are in tests/test_asgi_servers.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import sniffio
import trio

from mcp_ref.asgi import asgi_app
from mcp_ref.server import Server

Message = dict[str, Any]
App = Callable[[Message, Any, Any], Awaitable[None]]

ACCEPT = (b"accept", b"application/json, text/event-stream")
JSON = (b"content-type", b"application/json")
VERSION = (b"mcp-protocol-version", b"2025-06-18")


def make_server() -> Server:
    server = Server("asgi-test", "1")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @server.tool()
    async def loop() -> str:
        """The async library this handler runs on."""
        return sniffio.current_async_library()

    return server


def initialize(id: int = 1) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": id,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "harness", "version": "1"},
            },
        }
    ).encode()


def call_add(id: int, a: int = 2, b: int = 3) -> bytes:
    params = {"name": "add", "arguments": {"a": a, "b": b}}
    return json.dumps(
        {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}
    ).encode()


INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


class Exchange:
    """One request in flight: its response's head, then its body as it comes."""

    def __init__(self, messages: trio.MemoryReceiveChannel[Message], leave: trio.Event) -> None:
        self.messages = messages
        self.leave = leave
        self.status = 0
        self.headers: dict[bytes, bytes] = {}
        self.body = b""
        self.done = False

    async def head(self) -> None:
        start = await self.messages.receive()
        assert start["type"] == "http.response.start", start
        self.status = start["status"]
        self.headers = {bytes(k).lower(): bytes(v) for k, v in start["headers"]}

    async def more(self) -> bytes:
        """The next body chunk (b"" at the end)."""
        if self.done:
            return b""
        message = await self.messages.receive()
        assert message["type"] == "http.response.body", message
        self.done = not message.get("more_body", False)
        self.body += message.get("body", b"")
        return bytes(message.get("body", b""))

    async def read_all(self) -> bytes:
        while not self.done:
            await self.more()
        return self.body

    async def until(self, needle: bytes) -> None:
        while needle not in self.body:
            assert not self.done, self.body
            await self.more()


def data_of(body: bytes) -> list[Any]:
    """The JSON of each SSE ``data:`` line."""
    return [json.loads(line[5:]) for line in body.split(b"\n") if line.startswith(b"data:{")] + [
        json.loads(line[6:]) for line in body.split(b"\n") if line.startswith(b"data: {")
    ]


@asynccontextmanager
async def exchange(
    app: App,
    method: str,
    path: str,
    *,
    headers: list[tuple[bytes, bytes]] | None = None,
    body: bytes = b"",
    root_path: str = "",
    query: bytes = b"",
    chunks: list[bytes] | None = None,
    host: bytes = b"127.0.0.1:8000",
) -> AsyncIterator[Exchange]:
    """Call ``app`` with one ``http`` scope on trio; yield once the head is out."""
    send_ch, recv_ch = trio.open_memory_channel[Message](1000)
    leave = trio.Event()
    pieces = list(chunks) if chunks is not None else [body]

    async def receive() -> Message:
        if pieces:
            piece = pieces.pop(0)
            return {"type": "http.request", "body": piece, "more_body": bool(pieces)}
        await leave.wait()
        return {"type": "http.disconnect"}

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": root_path,
        "query_string": query,
        "headers": [(b"host", host), *(headers or [])],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8000),
    }

    async def run() -> None:
        async with send_ch:
            await app(scope, receive, send_ch.send)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run)
        ex = Exchange(recv_ch, leave)
        await ex.head()
        yield ex
        leave.set()


async def request(app: App, method: str, path: str, **kw: Any) -> Exchange:
    async with exchange(app, method, path, **kw) as ex:
        await ex.read_all()
    return ex


async def open_session(app: App, path: str = "/mcp", root_path: str = "") -> str:
    ex = await request(
        app,
        "POST",
        root_path + path,
        headers=[ACCEPT, JSON],
        body=initialize(),
        root_path=root_path,
    )
    assert ex.status == 200, ex.body
    sid = ex.headers[b"mcp-session-id"]
    ex = await request(
        app,
        "POST",
        root_path + path,
        headers=[ACCEPT, JSON, VERSION, (b"mcp-session-id", sid)],
        body=INITIALIZED,
        root_path=root_path,
    )
    assert ex.status == 202
    return sid.decode()


@asynccontextmanager
async def running(app: Any) -> AsyncIterator[Any]:
    """The app with its lifespan started, and shut down at the end."""
    to_app, app_in = trio.open_memory_channel[Message](4)
    app_out, from_app = trio.open_memory_channel[Message](4)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(
            app,
            {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}},
            app_in.receive,
            app_out.send,
        )
        await to_app.send({"type": "lifespan.startup"})
        assert (await from_app.receive())["type"] == "lifespan.startup.complete"
        yield app
        await to_app.send({"type": "lifespan.shutdown"})
        assert (await from_app.receive())["type"] == "lifespan.shutdown.complete"


def session_headers(sid: str) -> list[tuple[bytes, bytes]]:
    return [ACCEPT, JSON, VERSION, (b"mcp-session-id", sid.encode())]


async def test_post_sse_answer_then_delete_then_404() -> None:
    with trio.fail_after(10):
        async with running(asgi_app(make_server())) as app:
            sid = await open_session(app)
            ex = await request(app, "POST", "/mcp", headers=session_headers(sid), body=call_add(2))
            assert ex.status == 200
            assert ex.headers[b"content-type"].startswith(b"text/event-stream")
            (answer,) = [m for m in data_of(ex.body) if m.get("id") == 2]
            assert answer["result"]["structuredContent"] == {"result": 5}
            ex = await request(app, "DELETE", "/mcp", headers=session_headers(sid))
            assert ex.status == 200
            ex = await request(app, "POST", "/mcp", headers=session_headers(sid), body=call_add(3))
            assert ex.status == 404


async def test_post_json_answer() -> None:
    with trio.fail_after(10):
        async with running(asgi_app(make_server(), json_response=True)) as app:
            sid = await open_session(app)
            ex = await request(
                app, "POST", "/mcp", headers=session_headers(sid), body=call_add(2, 4, 5)
            )
            assert ex.status == 200
            assert ex.headers[b"content-type"] == b"application/json"
            assert json.loads(ex.body)["result"]["structuredContent"] == {"result": 9}


async def test_get_stream_carries_list_changed_and_an_unknown_session_is_404() -> None:
    server = make_server()
    with trio.fail_after(10):
        async with running(asgi_app(server)) as app:
            sid = await open_session(app)
            async with exchange(app, "GET", "/mcp", headers=session_headers(sid)) as ex:
                assert ex.status == 200
                assert ex.headers[b"content-type"].startswith(b"text/event-stream")

                @server.tool()
                def sub(a: int, b: int) -> int:
                    """Subtract."""
                    return a - b

                await ex.until(b"notifications/tools/list_changed")
            ex2 = await request(app, "GET", "/mcp", headers=session_headers("0" * 32))
            assert ex2.status == 404


async def test_unknown_session_is_404_and_missing_is_400() -> None:
    with trio.fail_after(10):
        app = asgi_app(make_server())  # no lifespan: started by the first request
        ex = await request(
            app, "POST", "/mcp", headers=session_headers("ab" * 16), body=call_add(1)
        )
        assert ex.status == 404
        ex = await request(app, "POST", "/mcp", headers=[ACCEPT, JSON, VERSION], body=call_add(1))
        assert ex.status == 400


async def test_refusals_are_the_trio_servers() -> None:
    with trio.fail_after(10):
        app = asgi_app(make_server(), limits=None)
        evil = (b"origin", b"http://evil.example")
        ex = await request(app, "POST", "/mcp", headers=[ACCEPT, JSON, evil], body=initialize())
        assert ex.status == 403
        ex = await request(
            app, "POST", "/mcp", headers=[ACCEPT, (b"content-type", b"text/plain")], body=b"x"
        )
        assert ex.status == 415
        ex = await request(app, "POST", "/mcp", headers=[JSON], body=initialize())
        assert ex.status == 406
        ex = await request(
            app, "POST", "/mcp", headers=[ACCEPT, JSON], body=initialize(), host=b"evil.example"
        )
        assert ex.status == 403  # DNS rebinding: the Host is not a loopback name
        ex = await request(app, "GET", "/elsewhere")
        assert ex.status == 404
        ex = await request(app, "PUT", "/mcp", headers=[ACCEPT])
        assert ex.status == 405
        ex = await request(app, "POST", "/mcp", headers=[ACCEPT, JSON], body=b"{not json")
        assert ex.status == 400


async def test_body_bound_is_413() -> None:
    from mcp_ref._http import HttpLimits

    app = asgi_app(make_server(), limits=HttpLimits(max_body_bytes=100))
    with trio.fail_after(10):
        ex = await request(
            app, "POST", "/mcp", headers=[ACCEPT, JSON], chunks=[b"x" * 60, b"y" * 60]
        )
        assert ex.status == 413
        length = (b"content-length", b"1000")
        ex = await request(app, "POST", "/mcp", headers=[ACCEPT, JSON, length], body=b"x")
        assert ex.status == 413


async def test_a_body_that_stops_coming_is_408() -> None:
    from mcp_ref._http import HttpLimits

    app = asgi_app(make_server(), limits=HttpLimits(idle_timeout_seconds=0.2))
    sent: list[Message] = []
    first = True

    async def receive() -> Message:
        nonlocal first
        if first:
            first = False
            return {"type": "http.request", "body": b"{", "more_body": True}
        await trio.sleep_forever()
        raise AssertionError

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"localhost"), ACCEPT, JSON],
        "client": ("127.0.0.1", 1),
    }
    with trio.fail_after(5):
        await app(scope, receive, send)
    assert sent[0]["status"] == 408


async def test_legacy_endpoints_under_a_mount_point() -> None:
    with trio.fail_after(10):
        async with running(asgi_app(make_server())) as app:
            async with exchange(app, "GET", "/api/sse", root_path="/api") as ex:
                assert ex.status == 200
                await ex.until(b"session_id=")
                line = next(x for x in ex.body.split(b"\n") if b"session_id=" in x)
                target = line.split(b"data:", 1)[1].strip().decode()
                assert target.startswith("/api/messages?session_id=")
                query = target.split("?", 1)[1].encode()
                post = await request(
                    app,
                    "POST",
                    "/api/messages",
                    root_path="/api",
                    query=query,
                    headers=[JSON],
                    body=initialize(7),
                )
                assert post.status == 202
                await ex.until(b'"id":7')
            ex = await request(
                app, "POST", "/messages", query=b"session_id=nope", headers=[JSON], body=b"{}"
            )
            assert ex.status == 404


async def test_stateless_mode() -> None:
    with trio.fail_after(10):
        app = asgi_app(make_server(), stateless=True, json_response=True)
        ex = await request(app, "POST", "/mcp", headers=[ACCEPT, JSON], body=initialize())
        assert ex.status == 200 and b"mcp-session-id" not in ex.headers
        ex = await request(
            app, "POST", "/mcp", headers=[ACCEPT, JSON, VERSION], body=call_add(2, 1, 1)
        )
        assert ex.status == 200
        assert json.loads(ex.body)["result"]["structuredContent"] == {"result": 2}
        ex = await request(app, "GET", "/mcp", headers=[ACCEPT])
        assert ex.status == 405
        ex = await request(app, "GET", "/sse")
        assert ex.status == 404


async def test_lifespan_shutdown_ends_an_open_sse_stream_whole() -> None:
    app = asgi_app(make_server(), grace_seconds=0.5)
    to_app, app_in = trio.open_memory_channel[Message](4)
    app_out, from_app = trio.open_memory_channel[Message](4)
    lifespan = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(app, lifespan, app_in.receive, app_out.send)
            await to_app.send({"type": "lifespan.startup"})
            assert (await from_app.receive())["type"] == "lifespan.startup.complete"
            sid = await open_session(app)
            async with exchange(app, "GET", "/mcp", headers=session_headers(sid)) as ex:
                assert ex.status == 200
                await to_app.send({"type": "lifespan.shutdown"})
                await ex.read_all()  # the last body message comes: the stream ended
                assert (await from_app.receive())["type"] == "lifespan.shutdown.complete"
            assert app.table is not None and not app.table.sessions
            # After the stop, a request is refused (503), not hung.
            ex = await request(app, "POST", "/mcp", headers=[ACCEPT, JSON], body=initialize())
            assert ex.status == 503


def test_on_asyncio_through_the_guest_run() -> None:
    """The same app on an asyncio loop: handlers run on trio as a guest of it."""

    async def main() -> None:
        app = asgi_app(make_server())
        lifespan_in: asyncio.Queue[Message] = asyncio.Queue()
        lifespan_out: asyncio.Queue[Message] = asyncio.Queue()
        life = asyncio.create_task(
            app({"type": "lifespan"}, lifespan_in.get, lifespan_out.put)  # type: ignore[arg-type]
        )
        await lifespan_in.put({"type": "lifespan.startup"})
        assert (await lifespan_out.get())["type"] == "lifespan.startup.complete"

        async def call(
            headers: list[tuple[bytes, bytes]], body: bytes
        ) -> tuple[int, dict[bytes, bytes], bytes]:
            sent: list[Message] = []
            gone = asyncio.Event()
            pieces = [body]

            async def receive() -> Message:
                if pieces:
                    return {"type": "http.request", "body": pieces.pop(), "more_body": False}
                await gone.wait()
                return {"type": "http.disconnect"}

            async def send(message: Message) -> None:
                sent.append(message)

            scope = {
                "type": "http",
                "method": "POST",
                "path": "/mcp",
                "root_path": "",
                "query_string": b"",
                "headers": [(b"host", b"localhost"), *headers],
                "client": ("127.0.0.1", 1),
            }
            await app(scope, receive, send)
            gone.set()
            head = sent[0]
            return (
                head["status"],
                {bytes(k): bytes(v) for k, v in head["headers"]},
                b"".join(m.get("body", b"") for m in sent[1:]),
            )

        status, headers, _ = await call([ACCEPT, JSON], initialize())
        assert status == 200
        sid = headers[b"mcp-session-id"].decode()
        status, _, _ = await call(session_headers(sid), INITIALIZED)
        assert status == 202
        status, _, body = await call(session_headers(sid), call_add(5, 20, 22))
        assert status == 200
        (answer,) = [m for m in data_of(body) if m.get("id") == 5]
        assert answer["result"]["structuredContent"] == {"result": 42}
        ask = {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "loop"}}
        status, _, body = await call(session_headers(sid), json.dumps(ask).encode())
        (answer,) = [m for m in data_of(body) if m.get("id") == 8]
        assert answer["result"]["content"][0]["text"] == "trio"  # the guest run
        status, _, _ = await call(session_headers("ab" * 16), call_add(6))
        assert status == 404  # the endpoint's refusal, sent through the bridge
        # A GET stream whose client leaves: the app returns.
        sent: list[Message] = []
        left = asyncio.Event()

        async def receive() -> Message:
            await left.wait()
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            sent.append(message)

        scope = {
            "type": "http",
            "method": "GET",
            "path": "/mcp",
            "root_path": "",
            "query_string": b"",
            "headers": [(b"host", b"localhost"), *session_headers(sid)],
            "client": ("127.0.0.1", 1),
        }
        get = asyncio.create_task(app(scope, receive, send))
        while not sent:
            await asyncio.sleep(0.01)
        assert sent[0]["status"] == 200
        left.set()
        await asyncio.wait_for(get, 5)
        await lifespan_in.put({"type": "lifespan.shutdown"})
        assert (await lifespan_out.get())["type"] == "lifespan.shutdown.complete"
        await life

    asyncio.run(asyncio.wait_for(main(), 20))


@pytest.mark.parametrize("outer", ["starlette", "fastapi"])
async def test_mounted_in_starlette_and_fastapi(outer: str) -> None:
    from fastapi import FastAPI
    from starlette.applications import Starlette
    from starlette.routing import Mount

    mcp = asgi_app(make_server())
    web: Any
    if outer == "starlette":  # the outer lifespan runs the mounted app's
        web = Starlette(routes=[Mount("/api", app=mcp)], lifespan=lambda _: mcp.running())
    else:
        web = FastAPI(lifespan=lambda _: mcp.running())
        web.mount("/api", mcp)
    with trio.fail_after(10):
        async with running(web):
            sid = await open_session(web, path="/api/mcp")
            ex = await request(
                web, "POST", "/api/mcp", headers=session_headers(sid), body=call_add(9, 1, 2)
            )
            assert ex.status == 200
            (answer,) = [m for m in data_of(ex.body) if m.get("id") == 9]
            assert answer["result"]["structuredContent"] == {"result": 3}
            assert mcp.table is not None and mcp.table.sessions
        assert not mcp.table.sessions  # the outer shutdown ended them


def test_other_scopes_are_refused() -> None:
    app = asgi_app(make_server())

    async def nothing() -> Message:
        raise AssertionError

    async def ignore(_: Message) -> None:
        raise AssertionError

    with pytest.raises(ValueError, match="websocket"):
        trio.run(app, {"type": "websocket"}, nothing, ignore)
    with pytest.raises(ValueError):
        asgi_app(make_server(), grace_seconds=-1)


async def test_a_get_stream_resumed_with_last_event_id_replays_what_was_missed() -> None:
    server = make_server()
    with trio.fail_after(10):
        async with running(asgi_app(server)) as app:
            sid = await open_session(app)
            async with exchange(app, "GET", "/mcp", headers=session_headers(sid)) as ex:
                server.tool("one")(lambda: 1)
                await ex.until(b"list_changed")
            # The client left (its http.disconnect); what comes meanwhile is stored.
            line = next(x for x in ex.body.split(b"\n") if x.startswith(b"id:"))
            last_id = line.split(b":", 1)[1].strip()
            server.tool("two")(lambda: 2)
            resume = [*session_headers(sid), (b"last-event-id", last_id)]
            async with exchange(app, "GET", "/mcp", headers=resume) as again:
                assert again.status == 200
                await again.until(b"list_changed")
                assert last_id not in again.body  # only what followed it


async def test_lifespan_shutdown_answers_a_request_still_running_with_an_error() -> None:
    server = make_server()

    @server.tool()
    async def stuck() -> str:
        """Never answers by itself."""
        await trio.sleep_forever()
        return ""

    app = asgi_app(server, grace_seconds=0.2)
    to_app, app_in = trio.open_memory_channel[Message](4)
    app_out, from_app = trio.open_memory_channel[Message](4)
    lifespan = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
    ask = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "stuck"}}
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(app, lifespan, app_in.receive, app_out.send)
            await to_app.send({"type": "lifespan.startup"})
            assert (await from_app.receive())["type"] == "lifespan.startup.complete"
            sid = await open_session(app)
            body = json.dumps(ask).encode()
            async with exchange(app, "POST", "/mcp", headers=session_headers(sid), body=body) as ex:
                await to_app.send({"type": "lifespan.shutdown"})
                await ex.read_all()
                assert (await from_app.receive())["type"] == "lifespan.shutdown.complete"
            (answer,) = [m for m in data_of(ex.body) if m.get("id") == 4]
            assert answer["error"]["code"] == -32603
            assert "shutting down" in answer["error"]["message"]


def test_asgi_app_and_serve_http_take_the_same_settings_with_the_same_defaults() -> None:
    """Both read their :class:`ServerConfig` with ``driver_config`` from their own
    parameters, so the two signatures must agree on every setting's name and default."""
    import inspect

    import attrs

    from mcp_ref._http_server import ServerConfig
    from mcp_ref.trio import serve_http

    asgi = inspect.signature(asgi_app).parameters
    trio_ = inspect.signature(serve_http).parameters
    for field in attrs.fields(ServerConfig):
        assert asgi[field.name].default == trio_[field.name].default, field.name
    assert asgi["host"].default == trio_["host"].default
    assert asgi["grace_seconds"].default == trio_["grace_seconds"].default

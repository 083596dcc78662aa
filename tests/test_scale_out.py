"""Scale-out (issue 17): two Streamable HTTP servers sharing a store, a client switching
between them.  A session made on one is found by the other; a stream broken on one is
resumed on the other (``Last-Event-ID``); a stateless (and a 2026-07-28) request is
served by either.  First two servers in one process on :class:`MemoryStores`, then two
server processes on a real ``redis-server`` (skipped, with the reason, when none is on
PATH; ``.ci/run`` installs one)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from mcp_ref._stores import (
    MemoryStores,
    SessionRecord,
    SharedEventStore,
    TaskRecord,
    adoption_start,
)
from mcp_ref.server import Context, Server
from mcp_ref.trio.http import close_sse_stream, open_http_server
from tests._http_raw import RawConnection, init_body, notification_body, request_body

T = "2025-06-18/basic/transports#"
V = "2025-11-25"
ROOT = Path(__file__).resolve().parent.parent


def make_server() -> Server:
    """echo; poll (ends its SSE stream, waits for release, then answers); release;
    later (may run as a task: waits for finish, then answers); finish."""
    server = Server("scale-out-test", "1")
    released = trio.Event()
    finished = trio.Event()

    @server.tool(task_support="optional")
    async def later(text: str) -> str:
        await finished.wait()
        return text.upper()

    @server.tool()
    async def finish() -> str:
        finished.set()
        return "finished"

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.tool()
    async def poll(ctx: Context) -> str:
        await ctx.log("info", "before the close")
        assert close_sse_stream(ctx.request_id)
        await released.wait()
        await ctx.log("info", "after the close")
        return "polled"

    @server.tool()
    async def release() -> str:
        released.set()
        return "released"

    return server


def call(rid: int, name: str, **arguments: Any) -> bytes:
    return request_body(rid, "tools/call", {"name": name, "arguments": arguments})


async def post(port: int, body: bytes, sid: str | None, **kw: Any) -> tuple[int, list[Any], Any]:
    """POST ``body``; (status, the messages of its answer, the answer)."""
    conn = await RawConnection.open(port)
    try:
        version = None if sid is None else V
        ans = await conn.request("POST", body=body, session_id=sid, version=version, **kw)
        messages: list[Any] = []
        if ans.content_type == "text/event-stream":
            while (got := await ans.message()) is not None:
                messages.append(got)
        else:
            data = await ans.body()
            if data:
                messages.append((None, json.loads(data)))
        return ans.status, messages, ans
    finally:
        await conn.aclose()


async def initialize(port: int) -> str:
    status, _, ans = await post(port, init_body(1, V), None)
    assert status == 200
    sid = ans.session_id
    assert sid is not None
    status, _, _ = await post(port, notification_body("notifications/initialized"), sid)
    assert status == 202
    return sid


async def switching_client(a: int, b: int, forgotten: Callable[[str], Any]) -> None:
    """The client's walk between the servers on ports ``a`` and ``b``."""
    sid = await initialize(a)
    # The session made on A is found by B (adopted: B never saw its initialize).
    status, messages, _ = await post(b, call(2, "echo", text="hi"), sid)
    assert status == 200, messages
    assert messages[-1][1]["result"]["content"][0]["text"] == "hi"
    # A stream broken on A...
    status, messages, _ = await post(a, call(3, "poll"), sid)
    assert status == 200
    assert [m["params"]["data"] for _, m in messages] == ["before the close"]
    last_id = messages[-1][0]
    assert last_id is not None
    status, _, _ = await post(a, call(4, "release"), sid)
    assert status == 200
    # ... is resumed on B: what A sent meanwhile, then its end.  (A client resumes
    # until the response comes: A may still be writing it to the store.)
    got: list[Any] = []
    for _ in range(50):
        conn = await RawConnection.open(b)
        ans = await conn.request("GET", session_id=sid, version=V, last_event_id=last_id)
        assert ans.status == 200, await ans.body()
        while (m := await ans.message()) is not None:
            got.append(m[1])
            last_id = m[0]
        await conn.aclose()
        if got and got[-1].get("id") == 3:
            break
    assert [m.get("params", {}).get("data") for m in got[:-1]] == ["after the close"]
    assert got[-1]["result"]["content"][0]["text"] == "polled"
    # DELETE on B ends the session for the registry too.
    conn = await RawConnection.open(b)
    ans = await conn.request("DELETE", session_id=sid, version=V)
    assert ans.status == 200
    await conn.aclose()
    assert await forgotten(sid)
    # A new session (no session id yet) is opened by either; a 2026-07-28 request
    # (no sessions) is served by either.
    for port in (a, b):
        status, messages, _ = await post(port, init_body(9, V), None)
        assert status == 200
    await modern_requests(a, b)


async def task_walk(a: int, b: int, polled: Callable[[], Any] | None = None) -> None:
    """A task created on A, polled on B (``tasks/get``), its result waited for on B
    while A still runs it (B reads the store: ``polled()`` returns once it has), then
    read again on B once finished."""
    sid = await initialize(a)
    params = {"name": "later", "arguments": {"text": "hi"}, "task": {"ttl": 60_000}}
    status, messages, _ = await post(a, request_body(2, "tools/call", params), sid)
    assert status == 200, messages
    task = messages[-1][1]["result"]["task"]
    assert task["status"] == "working"
    ask = {"taskId": task["taskId"]}
    status, messages, _ = await post(b, request_body(3, "tasks/get", ask), sid)
    assert status == 200, messages
    assert messages[-1][1]["result"]["status"] == "working"
    got: list[Any] = []

    async def result_on_b() -> None:
        got.append(await post(b, request_body(4, "tasks/result", ask), sid))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(result_on_b)
        if polled is not None:
            await polled()
        status, _, _ = await post(a, call(5, "finish"), sid)
        assert status == 200
    status, messages, _ = got[0]
    assert status == 200, messages
    result = messages[-1][1]["result"]
    assert result["content"][0]["text"] == "HI"
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == ask
    status, messages, _ = await post(b, request_body(6, "tasks/get", ask), sid)
    assert messages[-1][1]["result"]["status"] == "completed"
    # Another session does not see it, on either server.
    other = await initialize(b)
    status, messages, _ = await post(a, request_body(7, "tasks/get", ask), other)
    assert messages[-1][1]["error"]["code"] == -32602


MODERN = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "echo"}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "scale-out-test", "version": "1"},
}


async def modern_requests(a: int, b: int) -> None:
    """A 2026-07-28 request (no session) to each server."""
    params = {"name": "echo", "arguments": {"text": "modern"}, "_meta": META}
    for port in (a, b):
        status, messages, ans = await post(port, call_body(params), None, headers=MODERN)
        assert status == 200, messages
        assert ans.session_id is None
        assert messages[-1][1]["result"]["content"][0]["text"] == "modern"


def call_body(params: dict[str, Any]) -> bytes:
    return request_body(10, "tools/call", params)


@pytest.mark.spec(T + "resumability-and-redelivery.4")
async def test_two_servers_in_one_process_share_a_memory_store() -> None:
    stores = MemoryStores()
    server = make_server()
    with trio.fail_after(20):
        async with (
            open_http_server(server, stores=stores) as a,
            open_http_server(server, stores=stores) as b,
        ):

            async def forgotten(sid: str) -> bool:
                return await stores.get(sid) is None

            await switching_client(a.port, b.port, forgotten)


@pytest.mark.spec("2025-11-25/basic/utilities/tasks#result-retrieval.4")
async def test_a_task_is_polled_on_the_other_server() -> None:
    """Two Server objects (as two processes would have), one MemoryStores; B's
    ``tasks/result`` reads the store while the task still works on A."""

    class Watched(MemoryStores):
        working_reads = 0
        read = trio.Event()

        async def get_task(self, task_id: str) -> TaskRecord | None:
            record = await super().get_task(task_id)
            if record is not None and record.status == "working":
                self.working_reads += 1
                self.read.set()
            return record

    stores = Watched()

    async def polled() -> None:
        while stores.working_reads < 3:  # tasks/get, then tasks/result's first two reads
            stores.read = trio.Event()
            await stores.read.wait()

    first, second = make_server(), make_server()
    first.tasks.poll_ms = second.tasks.poll_ms = 100  # (B polls every 0.1 s)
    with trio.fail_after(20):
        async with (
            open_http_server(first, stores=stores) as a,
            open_http_server(second, stores=stores) as b,
        ):
            await task_walk(a.port, b.port, polled)


async def test_a_stateless_server_declares_no_tasks() -> None:
    """A stateless session ends with its POST (its tasks would too): no ``tasks``
    capability, and a call carrying ``task`` is answered as a plain call."""
    with trio.fail_after(10):
        async with open_http_server(make_server(), stateless=True) as a:
            status, messages, _ = await post(a.port, init_body(1, V), None)
            assert status == 200
            assert "tasks" not in messages[-1][1]["result"]["capabilities"]
            params = {"name": "echo", "arguments": {"text": "x"}, "task": {"ttl": 1000}}
            status, messages, _ = await post(a.port, request_body(2, "tools/call", params), None)
            assert messages[-1][1]["result"]["content"][0]["text"] == "x"


async def test_a_modern_request_is_served_by_either() -> None:
    stores = MemoryStores()
    server = make_server()
    with trio.fail_after(10):
        async with (
            open_http_server(server, stores=stores) as a,
            open_http_server(server, stores=stores) as b,
        ):
            await modern_requests(a.port, b.port)


async def test_two_asgi_apps_share_a_memory_store() -> None:
    """As under ``uvicorn --workers 2``: a session made by one app is served by the
    other (trio host here; the asyncio host runs the same code as a trio guest)."""
    from mcp_ref.asgi import asgi_app
    from tests.test_asgi import ACCEPT, JSON, VERSION, call_add, open_session, request
    from tests.test_asgi import make_server as adder

    stores = MemoryStores()
    first, second = (asgi_app(adder(), stores=stores) for _ in range(2))
    with trio.fail_after(10):
        sid = await open_session(first)
        headers = [ACCEPT, JSON, VERSION, (b"mcp-session-id", sid.encode())]
        ex = await request(second, "POST", "/mcp", headers=headers, body=call_add(2, 2, 3))
        assert ex.status == 200, ex.body
        assert b'"structuredContent":{"result":5}' in ex.body
        alone = asgi_app(adder())
        ex = await request(alone, "POST", "/mcp", headers=headers, body=call_add(3))
        assert ex.status == 404


async def test_without_a_store_the_other_server_does_not_know_the_session() -> None:
    server = make_server()
    with trio.fail_after(10):
        async with open_http_server(server) as a, open_http_server(server) as b:
            sid = await initialize(a.port)
            status, _, _ = await post(b.port, call(2, "echo", text="hi"), sid)
            assert status == 404


def test_core_shared_event_store_ids_stay_apart_and_load() -> None:
    prefix, first = adoption_start(bytes(range(1, 9)))
    assert prefix == "01020304." and first > 0
    creator = SharedEventStore()
    ids = [creator.append("p1", ""), creator.append("p1", "one"), creator.append("p1", "two")]
    assert [e[1] for e in creator.outbox] == ids
    adopter = SharedEventStore(first_seq=first)
    own = adopter.append(prefix + "p1", "mine")
    assert own not in ids
    # Flushes may reach the log out of order: loaded by sequence number.
    adopter.load("p1", [(i, d) for _, i, d in reversed(creator.outbox)])
    replay = adopter.replay_after(ids[1])
    assert not isinstance(replay, type(None)) and replay.events == ((ids[2], "two"),)  # type: ignore[union-attr]
    assert adopter.replay_after(own).events == ()  # type: ignore[union-attr]
    record = SessionRecord(
        session_id="s", protocol_version=V, client_capabilities={}, client_info={}
    )
    assert SessionRecord.from_bytes(record.to_bytes()) == record
    assert SessionRecord.from_bytes(b"nonsense") is None


async def test_a_session_in_use_stays_registered(autojump_clock: Any) -> None:
    """The record is put when initialize is answered, then again by a send once half
    the TTL has passed (never on every send)."""
    from types import SimpleNamespace

    from mcp_ref._http import HttpLimits
    from mcp_ref._http_streams import SessionStreams
    from mcp_ref.stores import Sharing

    class Counting(MemoryStores):
        puts = 0

        async def put(self, record: SessionRecord, ttl_seconds: float) -> None:
            self.puts += 1
            await super().put(record, ttl_seconds)

    stores = Counting()
    sharing = Sharing(stores, ttl_seconds=100)
    state = SessionStreams("streamable", HttpLimits())
    connection = SimpleNamespace(capabilities={}, peer_info=None)
    sess: Any = SimpleNamespace(
        id="s1", state=state, session=SimpleNamespace(connection=connection)
    )
    sharing.attach(sess, adopted=False)
    await sess.flush()
    assert stores.puts == 0  # initialize not answered yet
    state.protocol_version = V
    await sess.flush()
    await sess.flush()
    assert stores.puts == 1 and await stores.get("s1") is not None
    await trio.sleep(60)
    await sess.flush()
    assert stores.puts == 2
    assert [e[0] for e in stores.events] == ["s1"]  # the GET stream's first cursor, logged


def test_the_base_install_never_imports_redis() -> None:
    code = (
        "import sys, mcp_ref, mcp_ref._stores, mcp_ref.stores, mcp_ref.trio, mcp_ref.cli.serve;"
        "assert 'redis' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# -- two processes on a real Redis ------------------------------------------------------

CHILD = """
import sys, trio
from functools import partial
sys.path.insert(0, {root!r})
from tests.test_scale_out import make_server
from mcp_ref.stores.redis import RedisStores
from mcp_ref.trio import serve_http

async def main():
    stores = RedisStores.from_url({url!r}, prefix={prefix!r})
    async with trio.open_nursery() as nursery:
        serve = partial(serve_http, make_server(), "127.0.0.1", 0, stores=stores)
        info = await nursery.start(serve)
        print(info.port, flush=True)
        await trio.to_thread.run_sync(sys.stdin.read)  # until the test closes stdin
        nursery.cancel_scope.cancel()

trio.run(main)
"""


async def _line(proc: trio.Process, needle: bytes = b"") -> bytes:
    """The first line of ``proc``'s stdout holding ``needle``."""
    assert proc.stdout is not None
    buf = b""
    while True:
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if needle in line.lower():
                return line
        chunk = await proc.stdout.receive_some()
        if not chunk:
            raise AssertionError(f"the process ended first: {buf!r}")
        buf += chunk


NEEDS_REDIS = [
    pytest.mark.skipif(
        shutil.which("redis-server") is None,
        reason="no redis-server on PATH (Debian: apt-get install redis-server)",
    ),
    pytest.mark.skipif(
        importlib.util.find_spec("redis") is None,
        reason="the redis client is not installed (mcp-ref[redis])",
    ),
]
"""Marks of a test that runs a redis-server (a skip raised inside an async test loses
its reason)."""


def need_redis() -> str:
    """The path of ``redis-server`` (the test is marked :data:`NEEDS_REDIS`)."""
    exe = shutil.which("redis-server")
    assert exe is not None
    return exe


@asynccontextmanager
async def redis_server() -> AsyncIterator[str]:
    exe = need_redis()
    with tempfile.TemporaryDirectory() as tmp:
        sock = os.path.join(tmp, "redis.sock")
        args = [exe, "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no"]
        async with trio.open_nursery() as nursery:
            proc: trio.Process = await nursery.start(partial_run(args, stdout=subprocess.PIPE))
            try:
                await _line(proc, b"ready to accept connections")
                yield f"unix://{sock}"
            finally:
                proc.terminate()


def partial_run(args: list[str], **kw: Any) -> Any:
    from functools import partial

    return partial(trio.run_process, args, check=False, **kw)


UVICORN_CHILD = """
import socket, sys, threading, uvicorn
sys.path.insert(0, {root!r})
from tests.test_scale_out import make_server
from mcp_ref.asgi import asgi_app
from mcp_ref.stores.redis import RedisStores

app = asgi_app(make_server(), stores=RedisStores.from_url({url!r}, prefix={prefix!r}))
server = uvicorn.Server(uvicorn.Config(app, lifespan="on", log_level="warning"))
sock = socket.socket()
sock.bind(("127.0.0.1", 0))
sock.listen(128)  # connections wait in the backlog until uvicorn accepts them
print(sock.getsockname()[1], flush=True)

def stop():
    sys.stdin.read()  # until the test closes stdin
    server.should_exit = True

threading.Thread(target=stop, daemon=True).start()
server.run(sockets=[sock])
"""


@asynccontextmanager
async def child_server(url: str, prefix: str, template: str = CHILD) -> AsyncIterator[int]:
    code = template.format(root=str(ROOT), url=url, prefix=prefix)
    async with trio.open_nursery() as nursery:
        proc: trio.Process = await nursery.start(
            partial_run([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        )
        try:
            yield int(await _line(proc))
        finally:
            assert proc.stdin is not None
            await proc.stdin.aclose()


@pytest.mark.spec(T + "resumability-and-redelivery.4")
@NEEDS_REDIS[0]
@NEEDS_REDIS[1]
async def test_two_server_processes_share_a_redis_store() -> None:
    with trio.fail_after(60):
        async with redis_server() as url:
            import redis

            client = redis.Redis.from_url(url)
            prefix = "test:"
            async with child_server(url, prefix) as a, child_server(url, prefix) as b:

                async def forgotten(sid: str) -> bool:
                    return client.get(f"{prefix}session:{sid}") is None

                await switching_client(a, b, forgotten)
                await task_walk(a, b)
                assert client.keys(f"{prefix}task:*")


@pytest.mark.spec(T + "resumability-and-redelivery.4")
@NEEDS_REDIS[0]
@NEEDS_REDIS[1]
@pytest.mark.skipif(importlib.util.find_spec("uvicorn") is None, reason="no uvicorn")
async def test_two_uvicorn_processes_share_a_redis_store() -> None:
    """The ASGI application on asyncio (its sessions a trio guest run), two uvicorn
    processes on one Redis: the same walk."""
    with trio.fail_after(60):
        async with redis_server() as url:
            import redis

            client = redis.Redis.from_url(url)
            prefix = "uvicorn:"
            async with (
                child_server(url, prefix, UVICORN_CHILD) as a,
                child_server(url, prefix, UVICORN_CHILD) as b,
            ):

                async def forgotten(sid: str) -> bool:
                    return client.get(f"{prefix}session:{sid}") is None

                await switching_client(a, b, forgotten)
                await task_walk(a, b)

"""Bounds an attacker cannot fill cheaply, and the HTTP edges of the Streamable HTTP
server (issue 12): sessions per client address, eviction of idle sessions when the table
is full, reclaiming sessions that never finish initializing, ``Retry-After`` on 429/503,
400 for a body that breaks HTTP/1.1 framing, and the host of an absolute-form request
target checked like ``Host`` (2025-06-18/basic/transports#security-warning).

Time-dependent tests run the server over in-memory streams on
``MockClock(autojump_threshold=0)`` (a stream wrapper gives each one a client address);
the rest talk raw HTTP to a real server over loopback.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import h11
import pytest
import trio
import trio.testing

from mcp_ref._http import LOCALHOST_HOSTS, HttpError, HttpLimits, check_host, split_target
from mcp_ref._http_peers import told_apart
from mcp_ref._http_server import ServerConfig
from mcp_ref.server import Server
from mcp_ref.trio._listen import peer_of
from mcp_ref.trio.http.server import HttpServer, open_http_server

from ._http_raw import RawConnection, init_body, notification_body, open_session, request_body

T = "2025-06-18/basic/transports#"
TIMEOUT = 10
V = "2025-06-18"


# -- rules, without I/O ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (b"/mcp", (None, "/mcp", "")),
        (b"/mcp?session_id=ab#frag", (None, "/mcp", "session_id=ab")),
        (b"//evil.example/mcp", (None, "//evil.example/mcp", "")),
        (b"http://localhost:8000/mcp?x=1", ("localhost:8000", "/mcp", "x=1")),
        (b"HTTPS://[::1]:9/mcp", ("[::1]:9", "/mcp", "")),
        (b"http://evil.example", ("evil.example", "/", "")),
        (b"http:///mcp", ("", "/mcp", "")),
        (b"*", (None, "*", "")),
        (b"evil.example:443", ("evil.example:443", "", "")),
    ],
)
def test_split_target_knows_the_four_forms(
    target: bytes, expected: tuple[str | None, str, str]
) -> None:
    assert split_target(target) == expected


HOST_OK = [(b"host", b"127.0.0.1:8000")]


@pytest.mark.spec(T + "security-warning.1")
@pytest.mark.parametrize(
    "target",
    [
        b"http://evil.example/mcp",
        b"http://evil.example:8000/mcp",
        b"http://user@127.0.0.1:8000/mcp",
        b"http:///mcp",
        b"evil.example:443",
    ],
)
def test_an_absolute_form_target_naming_another_host_is_403(target: bytes) -> None:
    err = check_host(HOST_OK, LOCALHOST_HOSTS, target=target)
    assert isinstance(err, HttpError) and err.status == 403
    assert err.clause == T + "security-warning.1"
    assert check_host(HOST_OK, LOCALHOST_HOSTS) is None  # the header alone passes
    assert check_host(HOST_OK, ("*",), target=target) is None  # any host: no check


@pytest.mark.parametrize(
    "target", [b"/mcp", b"http://127.0.0.1:8000/mcp", b"http://LOCALHOST/mcp", b"*"]
)
def test_an_allowed_or_origin_form_target_passes(target: bytes) -> None:
    assert check_host(HOST_OK, LOCALHOST_HOSTS, target=target) is None


def test_the_target_does_not_excuse_a_bad_host_header() -> None:
    bad = [(b"host", b"evil.example")]
    err = check_host(bad, LOCALHOST_HOSTS, target=b"http://127.0.0.1/mcp")
    assert isinstance(err, HttpError) and err.status == 403


NEW_FIELDS = {
    "max_sessions_per_peer": 100,
    "session_evictable_seconds": 5.0,
    "uninitialized_session_seconds": 10.0,
}


@pytest.mark.parametrize(("name", "default"), sorted(NEW_FIELDS.items()))
def test_new_limits_have_defaults_and_must_be_positive(name: str, default: float) -> None:
    assert getattr(HttpLimits(), name) == default
    assert getattr(HttpLimits(**{name: 1}), name) == 1
    for bad in (0, -1, True):
        with pytest.raises(ValueError, match=name):
            HttpLimits(**{name: bad})


# -- a server over memory streams, each connection with a client address -------------------


class _FakeSocket:
    def __init__(self, addr: tuple[str, int]) -> None:
        self.addr = addr

    def getpeername(self) -> tuple[str, int]:
        return self.addr


class _Addressed(trio.abc.Stream):
    """A memory stream that says it comes from ``addr`` (what ``peer_of`` reads)."""

    def __init__(self, inner: trio.abc.Stream, addr: tuple[str, int]) -> None:
        self.inner = inner
        self.socket = _FakeSocket(addr)

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        return await self.inner.receive_some(max_bytes)

    async def aclose(self) -> None:
        await self.inner.aclose()


@attrs.frozen
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def session_id(self) -> str:
        return self.headers["mcp-session-id"]


@attrs.define
class Harness:
    server: HttpServer
    nursery: trio.Nursery

    async def post(
        self, body: bytes, *, peer: str = "10.0.0.1", session_id: str | None = None
    ) -> Reply:
        """POST ``body`` to /mcp on a new connection from ``peer``."""
        client, server_side = trio.testing.memory_stream_pair()
        self.nursery.start_soon(self.server.handle_connection, _Addressed(server_side, (peer, 5)))
        headers = [
            ("host", "127.0.0.1"),
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("content-length", str(len(body))),
        ]
        if session_id is not None:
            headers += [("mcp-session-id", session_id), ("mcp-protocol-version", V)]
        conn = h11.Connection(h11.CLIENT)
        request = h11.Request(method="POST", target="/mcp", headers=headers)
        await client.send_all(
            conn.send(request) + conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage())
        )
        response: h11.Response | None = None
        got = b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(bytes(await client.receive_some()))
            elif isinstance(event, h11.Response):
                response = event
            elif isinstance(event, h11.Data):
                got += event.data
            elif isinstance(event, h11.EndOfMessage):
                break
            else:
                raise AssertionError(event)
        await client.aclose()
        assert response is not None
        names = {bytes(k).decode(): bytes(v).decode() for k, v in response.headers}
        return Reply(response.status_code, names, got)

    async def initialize(self, *, peer: str = "10.0.0.1", complete: bool = True) -> str:
        """A new session from ``peer``; its id.  ``complete``: also send initialized."""
        reply = await self.post(init_body(1, V), peer=peer)
        assert reply.status == 200, reply
        if complete:
            done = await self.post(
                notification_body("notifications/initialized"),
                peer=peer,
                session_id=reply.session_id,
            )
            assert done.status == 202, done
        return reply.session_id

    async def ping(self, session_id: str, *, peer: str = "10.0.0.1") -> int:
        """The status of a ping in ``session_id`` (200 while it lives, 404 after)."""
        return (await self.post(request_body(7, "ping"), peer=peer, session_id=session_id)).status


@asynccontextmanager
async def running(**limits: Any) -> AsyncIterator[Harness]:
    server = HttpServer(
        Server("limits-test", "0"),
        ServerConfig(
            path="/mcp",
            json_response=True,
            stateless=False,
            enable_get_stream=True,
            allowed_origins=(),
            allowed_hosts=LOCALHOST_HOSTS,
            limits=HttpLimits(**limits),
            legacy_sse=False,
            legacy_sse_path="/sse",
            legacy_messages_path="/messages",
            retry_ms=1000,
        ),
        {},
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(server.table.supervisor.run)
        nursery.start_soon(server.table.reaper)
        yield Harness(server, nursery)
        nursery.cancel_scope.cancel()


# -- sessions that never finish initializing --------------------------------------------


@pytest.mark.spec(T + "session-management.6")
async def test_a_session_never_initialized_is_reclaimed_at_its_bound(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(100):
        async with running(uninitialized_session_seconds=10.0) as harness:
            start = trio.current_time()
            lazy = await harness.initialize(complete=False)
            done = await harness.initialize()
            await trio.sleep(start + 9.5 - trio.current_time())
            # At the bound (a ping is allowed before initialized, and does not count).
            assert await harness.ping(lazy) == 200
            assert len(harness.server.table.book.seats) == 2
            await trio.sleep(start + 10.5 - trio.current_time())
            assert await harness.ping(lazy) == 404  # one tick past it: gone
            assert await harness.ping(done) == 200  # initialized: kept
            assert len(harness.server.table.book.seats) == 1
            assert harness.server.table.book.peer_count("10.0.0.1") == 1


async def test_the_reaper_wakes_for_each_deadline_without_being_nudged(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(1000):
        async with running(uninitialized_session_seconds=3.0, session_idle_seconds=50.0) as h:
            first = await h.initialize()
            lazy = await h.initialize(complete=False)
            table = h.server.table
            await trio.testing.wait_all_tasks_blocked()
            await trio.sleep(3.5)
            assert lazy not in table.sessions and first in table.sessions
            await trio.sleep(47.0)  # 50.5 s after the first one's last use
            assert first not in table.sessions and len(table.book.seats) == 0


# -- a full table: evict the idle, or refuse with Retry-After -----------------------------


async def test_a_full_table_evicts_the_longest_idle_session_then_refuses_with_retry_after(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(100):
        async with running(max_sessions=2, session_evictable_seconds=5.0) as harness:
            old = await harness.initialize(peer="10.0.0.1")
            await trio.sleep(1.0)
            newer = await harness.initialize(peer="10.0.0.2")
            # At the bound, nothing idle long enough: 503 with Retry-After, the seconds
            # until the older one becomes evictable.
            refused = await harness.post(init_body(1, V), peer="10.0.0.3")
            assert refused.status == 503
            assert refused.headers["retry-after"] == "4"
            assert json.loads(refused.body)["error"]["message"].startswith("too many sessions")
            await trio.sleep(4.5)  # old: idle 5.5 s; newer: 4.5 s
            third = await harness.initialize(peer="10.0.0.3")
            assert await harness.ping(old) == 404  # evicted, the longest idle
            assert await harness.ping(newer, peer="10.0.0.2") == 200
            assert await harness.ping(third, peer="10.0.0.3") == 200
            assert len(harness.server.table.book.seats) == 2


async def test_eviction_takes_an_uninitialized_session_first(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(100):
        async with running(max_sessions=2, session_evictable_seconds=2.0) as harness:
            kept = await harness.initialize()
            await trio.sleep(1.0)
            lazy = await harness.initialize(complete=False)
            await trio.sleep(2.5)  # both evictable; kept is the longer idle
            await harness.initialize()
            assert await harness.ping(lazy) == 404
            assert await harness.ping(kept) == 200


async def test_a_session_with_a_request_in_progress_is_never_evicted(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("limits-test", "0")
    release = trio.Event()

    @server.tool()
    async def wait() -> str:
        await release.wait()
        return "done"

    with trio.fail_after(100):
        async with running(max_sessions=1, session_evictable_seconds=1.0) as harness:
            harness.server.table.handler = server
            sid = await harness.initialize()
            call = request_body(2, "tools/call", {"name": "wait", "arguments": {}})
            harness.nursery.start_soon(functools.partial(harness.post, call, session_id=sid))
            await trio.sleep(5.0)  # idle for the clock, but its request is in progress
            refused = await harness.post(init_body(1, V), peer="10.0.0.2")
            assert refused.status == 503
            assert refused.headers["retry-after"] == "1"  # every session is busy
            release.set()
            await trio.testing.wait_all_tasks_blocked()
            assert await harness.ping(sid) == 200


# -- sessions per client address ---------------------------------------------------------


async def test_one_address_may_hold_its_share_then_gets_429(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(100):
        async with running(max_sessions_per_peer=2, session_evictable_seconds=5.0) as harness:
            first = await harness.initialize(peer="10.0.0.1")
            await harness.initialize(peer="10.0.0.1")  # at the bound
            refused = await harness.post(init_body(1, V), peer="10.0.0.1")
            assert refused.status == 429
            assert refused.headers["retry-after"] == "5"
            # Another address is not held back by the first one's share.
            await harness.initialize(peer="10.0.0.2")
            assert harness.server.table.book.peer_count("10.0.0.1") == 2
            await trio.sleep(6.0)
            # Past the bound again, an idle session of the same address makes room.
            await harness.initialize(peer="10.0.0.1")
            assert await harness.ping(first) == 404
            assert harness.server.table.book.peer_count("10.0.0.1") == 2
            assert harness.server.table.book.peer_count("10.0.0.2") == 1


async def test_peer_of_names_the_ip_address_without_the_port() -> None:
    a, b = trio.testing.memory_stream_pair()
    assert peer_of(a) is None
    assert peer_of(_Addressed(a, ("::ffff:192.0.2.7", 1))) == "192.0.2.7"
    assert peer_of(_Addressed(a, ("fe80::1%eth0", 1))) == "fe80::1"
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    try:
        port = listeners[0].socket.getsockname()[1]
        with trio.fail_after(TIMEOUT):
            client = await trio.open_tcp_stream("127.0.0.1", port)
            server_side = await listeners[0].accept()
            assert peer_of(server_side) == "127.0.0.1"
            await client.aclose()
            await server_side.aclose()
    finally:
        for listener in listeners:
            await listener.aclose()


async def test_loopback_clients_are_not_held_to_a_share_per_address() -> None:
    """Local clients cannot be told apart by address: the per-peer share does not apply
    to them (two sessions past a share of one), while ``max_sessions`` still does."""
    assert not told_apart("127.0.0.1") and not told_apart("::1") and not told_apart(None)
    assert told_apart("10.0.0.1") and told_apart("2001:db8::1")
    limits = HttpLimits(max_sessions_per_peer=1, max_sessions=2)
    with trio.fail_after(TIMEOUT):
        async with open_http_server(Server("limits-test", "0"), limits=limits) as info:
            await open_session(info.port, version=V)
            await open_session(info.port, version=V)
            conn = await RawConnection.open(info.port)
            ans = await conn.request("POST", body=init_body(1, V))
            assert ans.status == 503  # max_sessions, none idle long enough to evict
            assert int(ans.headers["retry-after"]) >= 1
            await ans.body()
            await conn.aclose()


# -- HTTP edges, raw over loopback ------------------------------------------------------


async def _raw_exchange(port: int, data: bytes) -> bytes:
    """Send ``data`` on a new connection and read until the server closes it."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    try:
        await stream.send_all(data)
        raw = b""
        while chunk := await stream.receive_some(65536):
            raw += chunk
        return raw
    finally:
        await stream.aclose()


def _chunked_post(port: int, body: bytes) -> bytes:
    return (
        b"POST /mcp HTTP/1.1\r\n"
        b"Host: 127.0.0.1:%d\r\n"
        b"Content-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n" % port
    ) + body


@pytest.mark.parametrize(
    "framing",
    [
        b"zz\r\n{}\r\n0\r\n\r\n",  # a chunk size that is not hex
        b"2\r\n{}XX\r\n0\r\n\r\n",  # a chunk without its CRLF
        b"-2\r\n{}\r\n0\r\n\r\n",  # a negative size
    ],
)
async def test_malformed_chunked_framing_gets_400_then_close(framing: bytes) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_http_server(Server("limits-test", "0"), json_response=True) as info:
            raw = await _raw_exchange(info.port, _chunked_post(info.port, framing))
    assert raw.startswith(b"HTTP/1.1 400 ")
    head, _, body = raw.partition(b"\r\n\r\n")
    assert b"\r\nconnection: close" in head.lower()
    assert json.loads(body)["error"]["code"] == -32600


async def test_well_formed_chunked_body_is_served() -> None:
    body = init_body(1, V)
    framing = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    with trio.fail_after(TIMEOUT):
        async with open_http_server(Server("limits-test", "0"), json_response=True) as info:
            raw = await _raw_exchange(
                info.port,
                _chunked_post(info.port, framing).replace(
                    b"Transfer-Encoding", b"Connection: close\r\nTransfer-Encoding"
                ),
            )
    assert raw.startswith(b"HTTP/1.1 200 ")


@pytest.mark.spec(T + "security-warning.1")
async def test_an_absolute_form_target_is_checked_like_the_host_header() -> None:
    with trio.fail_after(TIMEOUT):
        async with open_http_server(Server("limits-test", "0"), json_response=True) as info:
            conn = await RawConnection.open(info.port)
            ans = await conn.request("POST", "http://evil.example/mcp", body=init_body(1, V))
            assert ans.status == 403
            assert "evil.example" in (await ans.json())["error"]["message"]
            await conn.aclose()
            conn = await RawConnection.open(info.port)
            target = f"http://127.0.0.1:{info.port}/mcp"
            ans = await conn.request("POST", target, body=init_body(1, V))
            assert ans.status == 200 and ans.session_id is not None
            await ans.body()
            await conn.aclose()

"""The WebSocket transport (mcp_ref/trio/websocket/, a custom transport:
2025-06-18/basic/transports#custom-transports).

Two layers:

* the channel over in-memory streams, against a hand-driven wsproto peer that can also
  write frames wsproto would never produce (bad UTF-8, unmasked, binary): close codes,
  size limits, fragmentation, keepalive, closing; all on the autojump MockClock;
* the server and client on real loopback sockets: round trip, handshake refusals
  written and reported (Origin, busy), the bound address.

Every decision of the sans-IO core (each handshake check, each frame's meaning, the
keepalive's times) is tested without I/O in tests/test_core_websocket.py.  The
transport-conformance scenarios (tests/transport_check.py) run over it as well."""

from __future__ import annotations

import json
import os
import struct
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Event,
    Ping,
    Pong,
    RejectConnection,
    Request,
    TextMessage,
)

from mcp_ref import types as t
from mcp_ref._websocket import (
    CLOSE_MESSAGE_TOO_BIG,
    CLOSE_PING_TIMEOUT,
    CLOSE_PROTOCOL_ERROR,
    CLOSE_UNSUPPORTED_DATA,
)
from mcp_ref.client import open_websocket_client
from mcp_ref.server import Context, Server
from mcp_ref.trio import SessionClosed
from mcp_ref.trio._listen import serve_until_stopped
from mcp_ref.trio.websocket import (
    HandshakeError,
    WebSocketChannel,
    open_websocket_channel,
    serve_websocket,
    serve_websocket_stream,
    websocket_server_handshake,
)
from mcp_ref.trio.websocket.server import _connection_handler

spec = pytest.mark.spec
LIMIT = 10  # seconds, mock or real, any test may take

HOST = "127.0.0.1:8000"


def make_server() -> Server:
    server = Server("ws-test", "1.0")

    @server.tool()
    def echo(text: str) -> str:
        """Return the text."""
        return text

    return server


# ------------------------------------------------------------- a hand-driven peer


def client_frame(opcode: int, payload: bytes, *, fin: bool = True, mask: bool = True) -> bytes:
    """One client frame built by hand (RFC 6455 5.2), masked unless told otherwise."""
    head = bytes([(0x80 if fin else 0) | opcode])
    n = len(payload)
    bit = 0x80 if mask else 0
    if n < 126:
        head += bytes([bit | n])
    elif n < 65536:
        head += bytes([bit | 126]) + struct.pack("!H", n)
    else:
        head += bytes([bit | 127]) + struct.pack("!Q", n)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


class Peer:
    """The far end of a WebSocket, driven by hand with wsproto."""

    def __init__(self, stream: trio.abc.Stream, role: ConnectionType = ConnectionType.CLIENT):
        self.stream = stream
        self.ws = WSConnection(role)
        self.eof = False

    async def handshake(
        self, subprotocols: list[str] | None = None, extra: Sequence[tuple[bytes, bytes]] = ()
    ) -> Event:
        """Send an upgrade request; return AcceptConnection or RejectConnection."""
        request = Request(
            host=HOST,
            target="/mcp",
            subprotocols=["mcp"] if subprotocols is None else subprotocols,
            extra_headers=list(extra),
        )
        await self.stream.send_all(self.ws.send(request))
        event = await self.next_event()
        assert isinstance(event, AcceptConnection | RejectConnection), event
        return event

    async def send(self, event: Event) -> None:
        await self.stream.send_all(self.ws.send(event))

    async def next_event(self) -> Event | None:
        """The next wsproto event; None at end of stream."""
        while True:
            for event in self.ws.events():
                return event
            if self.eof:
                return None
            data = await self.stream.receive_some(65536)
            if not data:
                self.eof = True
            self.ws.receive_data(bytes(data) or None)

    async def until_close(self) -> CloseConnection:
        """Read (answering nothing) until the close frame; return it."""
        while True:
            event = await self.next_event()
            assert event is not None, "the stream ended without a close frame"
            if isinstance(event, CloseConnection):
                return event

    async def read_to_eof(self) -> None:
        while await self.stream.receive_some(65536):
            pass


@asynccontextmanager
async def channel_pair(**kw: Any) -> AsyncIterator[tuple[WebSocketChannel, Peer]]:
    """A running server-side WebSocketChannel and the Peer at the other end."""
    a, b = trio.testing.memory_stream_pair()
    peer = Peer(a)
    async with trio.open_nursery() as nursery:
        kw.setdefault("ping_interval", None)
        got: list[WebSocketChannel | None] = []
        ready = trio.Event()

        async def server_side() -> None:
            got.append(await websocket_server_handshake(b, allowed_hosts=["*"], **kw))
            ready.set()

        nursery.start_soon(server_side)
        accepted = await peer.handshake()
        assert isinstance(accepted, AcceptConnection) and accepted.subprotocol == "mcp"
        await ready.wait()
        channel = got[0]
        assert channel is not None
        await nursery.start(channel.run)
        yield channel, peer
        nursery.cancel_scope.cancel()


# --------------------------------------------------------------- channel: messages


@spec("2025-06-18/basic/transports#custom-transports.2")
async def test_text_messages_both_ways(autojump_clock: trio.testing.MockClock) -> None:
    with trio.fail_after(LIMIT):
        async with channel_pair() as (channel, peer):
            assert channel.framing == "messages" and channel.connection.subprotocol == "mcp"
            await peer.send(TextMessage(data='{"jsonrpc":"2.0","method":"x"}'))
            assert await channel.receive() == b'{"jsonrpc":"2.0","method":"x"}'
            await channel.send('{"a":"é"}'.encode())
            event = await peer.next_event()
            assert isinstance(event, TextMessage) and event.data == '{"a":"é"}'
            # A message split into continuation frames arrives whole.
            await peer.send(TextMessage(data='{"jsonrpc":', message_finished=False))
            await peer.send(TextMessage(data='"2.0"}', message_finished=True))
            assert await channel.receive() == b'{"jsonrpc":"2.0"}'


async def test_size_limit_exactly_and_one_above(autojump_clock: trio.testing.MockClock) -> None:
    with trio.fail_after(LIMIT):
        async with channel_pair(max_message_bytes=100) as (channel, peer):
            at_limit = "é" * 50  # 100 bytes of UTF-8, 50 characters
            await peer.send(TextMessage(data=at_limit[:10], message_finished=False))
            await peer.send(TextMessage(data=at_limit[10:]))
            assert await channel.receive() == at_limit.encode()
            await peer.send(TextMessage(data="x" * 60, message_finished=False))
            await peer.send(TextMessage(data="x" * 41))
            close = await peer.until_close()
            assert close.code == CLOSE_MESSAGE_TOO_BIG
            assert await channel.receive() == b""
            assert (
                channel.connection.close_code == CLOSE_MESSAGE_TOO_BIG
                and channel.connection.closed_by == "local"
            )
            assert channel.eof_reason is not None and "1009" in channel.eof_reason


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        (client_frame(0x2, b'{"jsonrpc":"2.0"}'), CLOSE_UNSUPPORTED_DATA),  # binary
        (client_frame(0x1, b'{"a":"\xff"}'), 1007),  # not UTF-8
        (client_frame(0x1, b"{}", mask=False), CLOSE_PROTOCOL_ERROR),  # client frame unmasked
        (client_frame(0x3, b"{}"), CLOSE_PROTOCOL_ERROR),  # reserved opcode
        (client_frame(0x9, b"", fin=False), CLOSE_PROTOCOL_ERROR),  # fragmented ping
    ],
    ids=["binary", "bad-utf8", "unmasked", "reserved-opcode", "fragmented-control"],
)
async def test_refused_frames_close_with_their_code(
    frame: bytes, code: int, autojump_clock: trio.testing.MockClock
) -> None:
    with trio.fail_after(LIMIT):
        async with channel_pair() as (channel, peer):
            await peer.stream.send_all(frame)
            close = await peer.until_close()
            assert close.code == code
            assert await channel.receive() == b""
            assert channel.connection.close_code == code
            # We answer the close handshake and the connection then ends cleanly.
            await peer.send(close.response())
            await peer.read_to_eof()


async def test_binary_frames_are_refused_even_through_wsproto(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(LIMIT):
        async with channel_pair() as (channel, peer):
            await peer.send(BytesMessage(data=b"{}"))
            assert (await peer.until_close()).code == CLOSE_UNSUPPORTED_DATA


async def test_ping_is_answered_and_peer_close_is_echoed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(LIMIT):
        async with channel_pair() as (channel, peer):
            await peer.send(Ping(payload=b"hello"))
            event = await peer.next_event()
            assert isinstance(event, Pong) and event.payload == b"hello"
            await peer.send(CloseConnection(code=4000, reason="bye"))
            reply = await peer.next_event()
            assert isinstance(reply, CloseConnection) and reply.code == 4000
            assert await channel.receive() == b""
            assert (
                channel.connection.close_code,
                channel.connection.close_reason,
                channel.connection.closed_by,
            ) == (
                4000,
                "bye",
                "remote",
            )
            await peer.read_to_eof()  # the server closes TCP after the handshake


async def test_abrupt_disconnect_ends_input_with_1006(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(LIMIT):
        async with channel_pair() as (channel, peer):
            await peer.stream.aclose()
            assert await channel.receive() == b""
            assert channel.connection.close_code == 1006
            assert channel.eof_reason is not None and "1006" in channel.eof_reason


async def test_frames_sent_with_the_handshake_are_kept(
    autojump_clock: trio.testing.MockClock,
) -> None:
    a, b = trio.testing.memory_stream_pair()
    peer = Peer(a)
    with trio.fail_after(LIMIT):
        request = peer.ws.send(Request(host=HOST, target="/mcp", subprotocols=["mcp"]))
        await a.send_all(request + client_frame(0x1, b'{"early":1}'))
        channel = await websocket_server_handshake(b, ping_interval=None)
        assert channel is not None
        async with trio.open_nursery() as nursery:
            await nursery.start(channel.run)
            assert await channel.receive() == b'{"early":1}'
            nursery.cancel_scope.cancel()


async def test_aclose_runs_the_closing_handshake(autojump_clock: trio.testing.MockClock) -> None:
    with trio.fail_after(LIMIT):
        async with channel_pair() as (channel, peer):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(channel.aclose)
                close = await peer.until_close()
                assert close.code == 1000
                await peer.send(close.response())
                await peer.read_to_eof()
            assert channel.connection.closed_by == "local"
            with pytest.raises(trio.BrokenResourceError):
                await channel.send(b"{}")


async def test_aclose_gives_up_on_a_silent_peer(autojump_clock: trio.testing.MockClock) -> None:
    with trio.fail_after(LIMIT):
        async with channel_pair(close_timeout=2.0) as (channel, peer):
            start = trio.current_time()
            await channel.aclose()  # the peer never answers the close frame
            assert 2.0 <= trio.current_time() - start <= 3.5


# -------------------------------------------------------------- channel: keepalive


async def test_keepalive_pings_and_survives_while_answered(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(LIMIT * 10):
        async with channel_pair(ping_interval=5.0, ping_timeout=2.0) as (channel, peer):
            for _ in range(3):
                event = await peer.next_event()
                assert isinstance(event, Ping)
                await peer.send(event.response())
            assert channel.connection.pings_sent == 3 and channel.connection.close_code is None


async def test_keepalive_closes_without_pong(autojump_clock: trio.testing.MockClock) -> None:
    with trio.fail_after(LIMIT * 10):
        async with channel_pair(ping_interval=5.0, ping_timeout=2.0) as (channel, peer):
            start = trio.current_time()
            assert isinstance(await peer.next_event(), Ping)  # and no pong
            close = await peer.until_close()
            assert close.code == CLOSE_PING_TIMEOUT
            assert trio.current_time() - start == pytest.approx(7.0)
            assert await channel.receive() == b""
            assert channel.eof_reason is not None and "keepalive" in channel.eof_reason


async def test_keepalive_ends_a_session_over_the_server(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A whole server session on a memory stream: a client that stops answering pings
    is dropped, and serve_websocket_stream returns."""
    a, b = trio.testing.memory_stream_pair()
    peer = Peer(a)
    with trio.fail_after(100):
        async with trio.open_nursery() as nursery:
            done = trio.Event()

            async def serve() -> None:
                await serve_websocket_stream(
                    b, make_server(), allowed_hosts=["*"], ping_interval=10, ping_timeout=5
                )
                done.set()

            nursery.start_soon(serve)
            assert isinstance(await peer.handshake(), AcceptConnection)
            assert isinstance(await peer.next_event(), Ping)
            assert (await peer.until_close()).code == CLOSE_PING_TIMEOUT
            await done.wait()


# ----------------------------------------------------------- server over a stream


async def test_handshake_timeout(autojump_clock: trio.testing.MockClock) -> None:
    a, b = trio.testing.memory_stream_pair()
    with trio.fail_after(LIMIT * 10):
        await a.send_all(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never finished
        start = trio.current_time()
        await serve_websocket_stream(b, make_server(), handshake_timeout=3.0)
        assert trio.current_time() - start == pytest.approx(3.0)
        assert await a.receive_some(100) == b""  # closed, no answer


async def raw_exchange(request: bytes, **kw: Any) -> tuple[int, dict[bytes, bytes], bytes]:
    """Send raw upgrade-request bytes to serve_websocket_stream; return the HTTP answer."""
    import h11

    a, b = trio.testing.memory_stream_pair()
    client = h11.Connection(h11.CLIENT)
    client.send(
        h11.Request(
            method=b"GET",
            target=b"/",
            headers=[(b"host", b"x"), (b"connection", b"upgrade"), (b"upgrade", b"websocket")],
        )
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: serve_websocket_stream(b, make_server(), **kw))
        await a.send_all(request)
        status, headers, body = 0, {}, b""
        while True:
            event = client.next_event()
            if event is h11.NEED_DATA:
                client.receive_data(bytes(await a.receive_some(65536)))
            elif isinstance(event, h11.Response | h11.InformationalResponse):
                status, headers = event.status_code, dict(event.headers)
                if status == 101:
                    break
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                break
        nursery.cancel_scope.cancel()
    return status, headers, body


UPGRADE = (
    b"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
)


def upgrade(
    path: bytes = b"/mcp",
    host: bytes = b"127.0.0.1:8000",
    extra: bytes = b"Sec-WebSocket-Protocol: mcp\r\n",
    method: bytes = b"GET",
) -> bytes:
    return (
        method + b" " + path + b" HTTP/1.1\r\nHost: " + host + b"\r\n" + UPGRADE + extra + b"\r\n"
    )


@spec("2025-06-18/basic/transports#security-warning.1")
@pytest.mark.parametrize(
    ("request_bytes", "status", "words"),
    [
        (upgrade(), 101, b""),
        (
            upgrade(extra=b"Sec-WebSocket-Protocol: mcp\r\nOrigin: http://evil.example\r\n"),
            403,
            b"Origin",
        ),
        (b"\x00\x01garbage\r\n\r\n", 400, b"HTTP"),
    ],
    ids=["ok", "bad-origin", "garbage"],
)
async def test_handshake_answers_are_written(
    request_bytes: bytes, status: int, words: bytes, autojump_clock: trio.testing.MockClock
) -> None:
    """The server driver writes the core's answer (every check: test_core_websocket)."""
    with trio.fail_after(LIMIT):
        got, headers, body = await raw_exchange(request_bytes)
    assert got == status
    if status == 101:
        assert headers[b"sec-websocket-protocol"] == b"mcp"
        return
    assert words in body
    assert json.loads(body)["error"]["code"] < 0  # a JSON-RPC error body


# ------------------------------------------------------------- real loopback sockets


@asynccontextmanager
async def running_server(server: Any = None, **kw: Any) -> AsyncIterator[str]:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(
            lambda task_status: serve_websocket(
                server if server is not None else make_server(), task_status=task_status, **kw
            )
        )
        yield f"ws://127.0.0.1:{port}/mcp"
        nursery.cancel_scope.cancel()


@spec(
    "2025-06-18/basic/transports#custom-transports.1",
    "2025-06-18/basic/transports#custom-transports.2",
)
async def test_round_trip_over_loopback() -> None:
    server = make_server()
    ended = trio.Event()

    class Watched:
        async def serve(self, channel: Any, **kw: Any) -> None:
            try:
                await server.serve(channel, **kw)
            finally:
                ended.set()

    with trio.fail_after(LIMIT):
        async with running_server(Watched()) as url:
            info = t.Implementation(name="c", version="1")
            async with open_websocket_client(url, client_info=info) as client:
                assert client.server_info.name == "ws-test"
                result = await client.call_tool("echo", {"text": "hé"})
                assert result.content[0].text == "hé"  # type: ignore[union-attr]
                assert [s.peer_info.name for s in server.sessions] == ["c"]
            # The client closed: the server's session ends too.
            await ended.wait()
            assert server.sessions == ()


async def test_channel_close_codes_seen_by_the_client() -> None:
    with trio.fail_after(LIMIT):
        async with running_server(max_message_bytes=1000) as url:
            async with open_websocket_channel(url, ping_interval=None) as channel:
                await channel.send(b"x" * 1001)
                assert await channel.receive() == b""
                assert channel.connection.close_code == CLOSE_MESSAGE_TOO_BIG
                assert channel.connection.closed_by == "remote"


async def test_oversized_message_ends_the_client_session() -> None:
    with trio.fail_after(LIMIT):
        async with running_server(max_message_bytes=2000) as url:
            async with open_websocket_client(url) as client:
                with pytest.raises(SessionClosed) as info:
                    await client.call_tool("echo", {"text": "x" * 3000})
                assert "1009" in info.value.reason


@spec("2025-06-18/basic/transports#security-warning.1")
async def test_client_sees_origin_refusal() -> None:
    with trio.fail_after(LIMIT):
        async with running_server() as url:
            with pytest.raises(HandshakeError) as info:
                async with open_websocket_client(url, origin="http://evil.example"):
                    pass  # pragma: no cover
            assert info.value.status_code == 403
            assert b"evil.example" in info.value.body
            async with open_websocket_client(url, origin="http://localhost:5173") as client:
                await client.ping()
        async with running_server(allowed_origins=["https://app.example"]) as url:
            async with open_websocket_client(url, origin="https://app.example") as client:
                await client.ping()


class MemoryListener(trio.abc.Listener[trio.abc.Stream]):
    """A listener whose connections are in-memory stream pairs (MockClock-friendly)."""

    def __init__(self) -> None:
        self._send, self._receive = trio.open_memory_channel[trio.abc.Stream](10)

    async def connect(self) -> trio.abc.Stream:
        a, b = trio.testing.memory_stream_pair()
        await self._send.send(b)
        return a

    async def accept(self) -> trio.abc.Stream:
        return await self._receive.receive()

    async def aclose(self) -> None:
        await self._receive.aclose()


async def test_busy_server_refuses_with_503(autojump_clock: trio.testing.MockClock) -> None:
    listener = MemoryListener()
    url = "ws://127.0.0.1:1/mcp"
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                partial(
                    serve_until_stopped,
                    [listener],
                    _connection_handler(make_server(), 1, None),
                    None,
                    close_wait=0,
                )
            )
            async with open_websocket_client(url, stream=await listener.connect()) as first:
                with pytest.raises(HandshakeError) as info:
                    async with open_websocket_client(url, stream=await listener.connect()):
                        pass  # pragma: no cover
                assert info.value.status_code == 503
                await first.ping()
            await trio.testing.wait_all_tasks_blocked()  # the server has let go of it
            async with open_websocket_client(url, stream=await listener.connect()) as again:
                await again.ping()
            nursery.cancel_scope.cancel()


@spec("2025-06-18/basic/transports#security-warning.2")
async def test_binds_loopback_by_default() -> None:
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            listeners: list[Any] = []
            real = trio.open_tcp_listeners

            async def spy(port: int, *, host: str | None = None, **kw: Any) -> Any:
                got = await real(port, host=host, **kw)
                listeners.extend(got)
                return got

            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(trio, "open_tcp_listeners", spy)
                await nursery.start(serve_websocket, make_server())
            assert [x.socket.getsockname()[0] for x in listeners] == ["127.0.0.1"]
            nursery.cancel_scope.cancel()


async def test_client_refuses_a_server_without_the_subprotocol(
    autojump_clock: trio.testing.MockClock,
) -> None:
    a, b = trio.testing.memory_stream_pair()
    server = Peer(b, ConnectionType.SERVER)
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:

            async def fake_server() -> None:
                request = await server.next_event()
                assert isinstance(request, Request) and request.subprotocols == ["mcp"]
                await server.send(AcceptConnection())  # no subprotocol

            nursery.start_soon(fake_server)
            with pytest.raises(HandshakeError, match="subprotocol"):
                async with open_websocket_channel("ws://127.0.0.1:1/mcp", stream=a):
                    pass  # pragma: no cover


async def test_client_reports_a_refusal_without_body_and_a_hangup(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(LIMIT):
        for answer, match in [
            (b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n", "401"),
            (b"", "closed the connection"),
            (b"SSH-2.0-OpenSSH\r\n\r\n", "invalid upgrade response"),
        ]:
            a, b = trio.testing.memory_stream_pair()
            await b.send_all(answer)
            await b.send_eof()
            with pytest.raises(HandshakeError, match=match):
                async with open_websocket_channel("ws://127.0.0.1:1/mcp", stream=a):
                    pass  # pragma: no cover


def test_only_ws_urls() -> None:
    with pytest.raises(ValueError, match="wss"):
        trio.run(_open, "wss://example.com/mcp")
    with pytest.raises(ValueError, match="ws://"):
        trio.run(_open, "http://example.com/mcp")


async def _open(url: str) -> None:
    async with open_websocket_channel(url):
        pass  # pragma: no cover


@spec("2025-06-18/basic/transports#custom-transports.3")
def test_the_transport_is_documented() -> None:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "websocket.md").read_text()
    for needed in (
        "## Connection establishment",
        "## Message exchange",
        "Sec-WebSocket-Protocol: mcp",
        "1003",
        "1007",
        "1009",
        "1011",
        "Origin",
    ):
        assert needed in doc, needed


# ------------------------------------------------- appended: sends the peer cannot get


@spec("2025-06-18/basic/transports#custom-transports.2")
async def test_a_message_sent_after_the_close_raises_rather_than_vanish(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Once the peer has closed the WebSocket, a message can no longer reach it: ``send``
    raises BrokenResourceError (so the session sees the connection is over and a request
    is not left waiting for an answer that cannot come), and nothing is written."""
    with trio.fail_after(LIMIT):
        async with channel_pair() as (channel, peer):
            await peer.send(CloseConnection(code=1000, reason="bye"))
            reply = await peer.next_event()
            assert isinstance(reply, CloseConnection) and reply.code == 1000
            assert await channel.receive() == b""
            with pytest.raises(trio.BrokenResourceError):
                await channel.send(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
            await peer.read_to_eof()
            assert list(peer.ws.events()) == []


# ----------------------------------------------------------- the 2026-07-28 era


@spec("2026-07-28/basic/transports/index#custom-transports.2")
@pytest.mark.parametrize("era", ["modern", "auto"])
async def test_the_2026_07_28_era_over_websocket(era: str) -> None:
    """No initialize, ``_meta`` on every request, and an elicitation as an
    ``input_required`` round: the message patterns and per-request metadata carry over
    to this custom transport unchanged (docs/websocket.md, "The 2026-07-28 era")."""
    server = make_server()
    asked: list[str] = []

    @server.tool()
    async def greet(ctx: Context) -> str:
        """Ask the user's name, then greet them."""
        answer = await ctx.elicit("Your name?", {"type": "object", "properties": {}})
        return f"hello {answer.content}"

    def elicit(params: Any) -> t.ElicitResult:
        asked.append(params.message)
        return t.ElicitResult(action="accept", content={})

    with trio.fail_after(LIMIT):
        async with running_server(server) as url:
            async with open_websocket_client(url, era=era, elicitation_handler=elicit) as client:
                assert (client.era, client.protocol_version) == ("modern", "2026-07-28")
                result = await client.call_tool("greet", {})
                assert result.content[0].text == "hello {}"  # type: ignore[union-attr]
                assert asked == ["Your name?"]

"""MCP over WebSocket, sans-IO (mcp_ref/_websocket.py, mcp_ref/_websocket_handshake.py):
bytes in, events and bytes out, no sockets and no clock.  A hand-driven wsproto peer
plays the other side; frames wsproto would never write (bad UTF-8, unmasked, binary,
reserved opcodes) are built by hand.

Source: docs/websocket.md (the transport's documentation,
2025-06-18/basic/transports#custom-transports.3); RFC 6455 sections 5 (framing),
5.5 (control frames), 7.4 (close codes).
"""

from __future__ import annotations

import json
import os
import struct

import h11
import pytest
from hypothesis import given
from hypothesis import strategies as st
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Event,
    Ping,
    Pong,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)

from mcp_ref._errors import LocalProtocolError
from mcp_ref._websocket import (
    CLOSE_MESSAGE_TOO_BIG,
    CLOSE_PING_TIMEOUT,
    CLOSE_PROTOCOL_ERROR,
    CLOSE_UNSUPPORTED_DATA,
    CLOSED,
    NEED_DATA,
    PONG,
    Message,
    WebSocketConnection,
    describe,
)
from mcp_ref._websocket_handshake import (
    MAX_HANDSHAKE_BYTES,
    MAX_REJECT_BODY,
    Accepted,
    ClientHandshake,
    HandshakeError,
    Refused,
    ServerHandshake,
    split_server_options,
    split_url,
)

spec = pytest.mark.spec


# ------------------------------------------------------------------ helpers


def client_frame(opcode: int, payload: bytes, *, fin: bool = True, mask: bool = True) -> bytes:
    """One client frame built by hand (RFC 6455 5.2), masked unless told otherwise."""
    head = bytes([(0x80 if fin else 0) | opcode])
    n = len(payload)
    bit = 0x80 if mask else 0
    if n < 126:
        head += bytes([bit | n])
    else:
        head += bytes([bit | 126]) + struct.pack("!H", n)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def pair(**kw: object) -> tuple[WebSocketConnection, WSConnection]:
    """A server-side connection (keepalive off unless given) and the client peer."""
    client = ClientHandshake(host="127.0.0.1:8000")
    server = ServerHandshake()
    server.receive_data(client.request)
    accepted = server.next_event()
    assert isinstance(accepted, Accepted)
    client.receive_data(accepted.data)
    peer = client.next_event()
    assert isinstance(peer, WSConnection)
    kw.setdefault("ping_interval", None)
    return WebSocketConnection(accepted.ws, **kw), peer  # type: ignore[arg-type]


def feed(conn: WebSocketConnection, data: bytes) -> list[Message | object]:
    """Give ``conn`` bytes; the events up to NEED_DATA or CLOSED (included)."""
    conn.receive_data(data)
    out: list[Message | object] = []
    while True:
        event = conn.next_event()
        out.append(event)
        if event is NEED_DATA or event is CLOSED:
            return out


def peer_events(peer: WSConnection, data: bytes) -> list[Event]:
    peer.receive_data(data)
    return list(peer.events())


# ------------------------------------------------------------- the messages


@spec("2025-06-18/basic/transports#custom-transports.2")
def test_a_text_message_is_one_message_whole_and_a_message_is_one_text_frame() -> None:
    conn, peer = pair()
    assert conn.subprotocol == "mcp" and conn.is_open
    data = peer.send(TextMessage(data='{"jsonrpc":', message_finished=False))
    data += peer.send(TextMessage(data='"2.0"}'))
    assert feed(conn, data) == [Message(b'{"jsonrpc":"2.0"}'), NEED_DATA]
    frame = conn.send('{"a":"é"}'.encode())
    [event] = peer_events(peer, frame)
    assert isinstance(event, TextMessage) and event.data == '{"a":"é"}'
    assert event.message_finished
    # One byte at a time: the same message, once.
    one = peer.send(TextMessage(data='{"b":1}'))
    events = [e for i in range(len(one)) for e in feed(conn, one[i : i + 1])]
    assert [e for e in events if e is not NEED_DATA] == [Message(b'{"b":1}')]


def test_an_empty_message_is_not_the_end_of_input() -> None:
    conn, peer = pair()
    assert feed(conn, peer.send(TextMessage(data=""))) == [Message(b" "), NEED_DATA]


def test_the_size_bound_exactly_and_one_above_counted_while_frames_arrive() -> None:
    conn, peer = pair(max_message_bytes=100)
    at_limit = "é" * 50  # 100 bytes of UTF-8, 50 characters
    data = peer.send(TextMessage(data=at_limit[:10], message_finished=False))
    data += peer.send(TextMessage(data=at_limit[10:]))
    assert feed(conn, data) == [Message(at_limit.encode()), NEED_DATA]
    # 101 bytes: refused when the 101st arrives, before the message is finished.
    events = feed(conn, peer.send(TextMessage(data="x" * 101, message_finished=False)))
    assert events == [NEED_DATA] and not conn.is_open
    late = peer.send(TextMessage(data="late"))  # sent before it saw our close frame
    [close] = peer_events(peer, conn.data_to_send())
    assert isinstance(close, CloseConnection) and close.code == CLOSE_MESSAGE_TOO_BIG
    assert (conn.close_code, conn.closed_by) == (CLOSE_MESSAGE_TOO_BIG, "local")
    assert conn.eof_reason is not None and "1009" in conn.eof_reason
    # What the peer sent meanwhile is dropped; its answer ends the closing handshake.
    assert feed(conn, late + peer.send(close.response())) == [CLOSED]


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
def test_refused_frames_close_with_their_code(frame: bytes, code: int) -> None:
    conn, peer = pair()
    events = feed(conn, frame)
    assert Message not in map(type, events)
    [close] = peer_events(peer, conn.data_to_send())
    assert isinstance(close, CloseConnection) and close.code == code
    assert (conn.close_code, conn.closed_by) == (code, "local")
    # After a framing error wsproto's decoder is unusable: nothing more is read.
    if code != CLOSE_UNSUPPORTED_DATA:
        assert events[-1] is CLOSED
        assert feed(conn, client_frame(0x1, b"{}")) == [CLOSED]
    with pytest.raises(LocalProtocolError, match="closing"):
        conn.send(b"{}")


def test_binary_messages_are_refused_even_well_formed() -> None:
    conn, peer = pair()
    feed(conn, peer.send(BytesMessage(data=b"{}")))
    [close] = peer_events(peer, conn.data_to_send())
    assert isinstance(close, CloseConnection) and close.code == CLOSE_UNSUPPORTED_DATA


def test_a_ping_gets_a_pong_only_the_latest_of_several() -> None:
    conn, peer = pair()
    assert feed(conn, peer.send(Ping(payload=b"a")) + peer.send(Ping(payload=b"b"))) == [NEED_DATA]
    assert conn.has_data_to_send
    assert peer_events(peer, conn.data_to_send()) == [Pong(payload=b"b")]
    assert not conn.has_data_to_send and conn.data_to_send() == b""


def test_a_pong_goes_out_before_a_close_frame_decided_after_it() -> None:
    """Nothing may follow a close frame (RFC 6455 section 5.5.1)."""
    conn, peer = pair()
    feed(conn, peer.send(Ping(payload=b"p")) + peer.send(BytesMessage(data=b"{}")))
    events = peer_events(peer, conn.data_to_send())
    assert [type(e) for e in events] == [Pong, CloseConnection]


def test_the_peers_close_is_answered_with_its_code() -> None:
    conn, peer = pair()
    assert feed(conn, peer.send(CloseConnection(code=4000, reason="bye"))) == [CLOSED]
    [answer] = peer_events(peer, conn.data_to_send())
    assert isinstance(answer, CloseConnection) and answer.code == 4000
    assert (conn.close_code, conn.close_reason, conn.closed_by) == (4000, "bye", "remote")
    assert conn.eof_reason == "the peer closed the WebSocket with code 4000: bye"
    assert not conn.is_open
    conn.close()  # no-op once closed
    assert conn.data_to_send() == b"" and conn.close_code == 4000


def test_the_end_of_the_stream_without_a_close_frame_is_1006() -> None:
    conn, _ = pair()
    assert feed(conn, b"") == [CLOSED]
    assert (conn.close_code, conn.closed_by) == (1006, "remote")
    assert conn.eof_reason is not None and "1006" in conn.eof_reason
    assert conn.data_to_send() == b""
    assert feed(conn, b"more") == [CLOSED]  # dropped, no error


def test_our_close_then_the_peers_answer() -> None:
    conn, peer = pair()
    conn.close(1000, "session ended")
    assert (
        conn.eof_reason == "we closed the WebSocket with code 1000 (normal closure): session ended"
    )
    [close] = peer_events(peer, conn.data_to_send())
    assert isinstance(close, CloseConnection) and close.code == 1000
    assert feed(conn, peer.send(close.response())) == [CLOSED]
    assert (conn.close_code, conn.closed_by) == (1000, "local")


def test_a_lost_connection_sends_and_reads_nothing() -> None:
    conn, peer = pair()
    conn.connection_lost("writing failed")
    assert conn.eof_reason == "writing failed" and not conn.is_open
    with pytest.raises(LocalProtocolError):
        conn.send(b"{}")
    assert feed(conn, peer.send(TextMessage(data="{}"))) == [CLOSED]
    conn.connection_lost("later")  # the first reason stays
    assert conn.eof_reason == "writing failed"


def test_describe_names_known_codes() -> None:
    assert describe(1009, "too big") == "code 1009 (message too big): too big"
    assert describe(4000, None) == "code 4000"


def test_limits_must_be_positive_and_the_handshake_over() -> None:
    conn, _ = pair()
    with pytest.raises(ValueError):
        WebSocketConnection(conn._ws, max_message_bytes=0)
    with pytest.raises(ValueError):
        WebSocketConnection(conn._ws, ping_timeout=0)
    with pytest.raises(LocalProtocolError, match="not open"):
        WebSocketConnection(WSConnection(ConnectionType.SERVER))


@given(st.binary(max_size=300))
def test_arbitrary_bytes_give_events_never_an_exception(data: bytes) -> None:
    conn, _ = pair(max_message_bytes=50)
    for cut in (data[:7], data[7:]):
        events = feed(conn, cut)
        assert all(isinstance(e, Message) or e in (NEED_DATA, CLOSED) for e in events)
    conn.data_to_send()


# ------------------------------------------------------------------ keepalive


def test_keepalive_pings_every_interval_while_answered() -> None:
    conn, peer = pair(ping_interval=5.0, ping_timeout=2.0)
    assert conn.next_deadline() is None  # not started
    conn.handle_timeout(100.0)
    assert conn.next_deadline() == 105.0
    conn.handle_timeout(104.9)  # early: nothing
    assert conn.data_to_send() == b"" and conn.next_deadline() == 105.0
    conn.handle_timeout(105.0)
    [ping] = peer_events(peer, conn.data_to_send())
    assert isinstance(ping, Ping) and conn.pings_sent == 1
    assert conn.next_deadline() == 107.0  # the pong's
    assert feed(conn, peer.send(Pong(payload=b"other"))) == [NEED_DATA]  # not ours
    assert feed(conn, peer.send(ping.response())) == [PONG, NEED_DATA]
    assert conn.next_deadline() == 110.0  # ping_interval after the ping
    conn.handle_timeout(110.0)
    assert conn.pings_sent == 2 and not conn.keepalive_failed


def test_a_pong_brings_the_next_ping_forward_when_the_interval_is_short() -> None:
    conn, peer = pair(ping_interval=1.0, ping_timeout=10.0)
    conn.handle_timeout(0.0)
    conn.handle_timeout(1.0)
    [ping] = peer_events(peer, conn.data_to_send())
    assert isinstance(ping, Ping) and conn.next_deadline() == 11.0
    feed(conn, peer.send(ping.response()))
    assert conn.next_deadline() == 2.0


def test_keepalive_without_pong_closes_1011_and_fails() -> None:
    conn, peer = pair(ping_interval=5.0, ping_timeout=2.0)
    conn.handle_timeout(0.0)
    conn.handle_timeout(5.0)
    conn.data_to_send()
    conn.handle_timeout(7.0)
    assert conn.keepalive_failed and not conn.is_open
    assert conn.eof_reason == "keepalive failed: no pong within 2 s"
    [close] = peer_events(peer, conn.data_to_send())
    assert isinstance(close, CloseConnection) and close.code == CLOSE_PING_TIMEOUT
    assert conn.next_deadline() is None


def test_no_keepalive_without_an_interval() -> None:
    conn, _ = pair(ping_interval=None)
    conn.handle_timeout(0.0)
    assert conn.next_deadline() is None and conn.data_to_send() == b""


# ------------------------------------------------------- the server handshake

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


def answer(outcome: Accepted | Refused | object) -> tuple[int, dict[bytes, bytes], bytes]:
    """The status, headers and body of the handshake's answer, read with h11."""
    assert isinstance(outcome, Accepted | Refused)
    client = h11.Connection(h11.CLIENT)
    upgrading = [(b"host", b"x"), (b"connection", b"upgrade"), (b"upgrade", b"websocket")]
    client.send(h11.Request(method=b"GET", target=b"/", headers=upgrading))
    client.receive_data(outcome.data)
    head = client.next_event()
    assert isinstance(head, h11.Response | h11.InformationalResponse)
    body = b""
    if head.status_code != 101:
        while isinstance(event := client.next_event(), h11.Data):
            body += event.data
    return head.status_code, dict(head.headers), body


@spec(
    "2025-06-18/basic/transports#security-warning.1",
    "2025-03-26/basic/authorization#protocol-requirements.4",
    "2025-06-18/basic/authorization#protocol-requirements.4",
    "2025-11-25/basic/authorization#protocol-requirements.4",
    "2026-07-28/basic/authorization/index#protocol-requirements.4",
)
@pytest.mark.parametrize(
    ("request_bytes", "status", "words"),
    [
        (upgrade(), 101, b""),
        (upgrade(path=b"/mcp?x=1"), 101, b""),
        (
            upgrade(extra=b"Sec-WebSocket-Protocol: x, mcp\r\nOrigin: http://localhost:3000\r\n"),
            101,
            b"",
        ),
        (
            upgrade(extra=b"Sec-WebSocket-Protocol: mcp\r\nOrigin: http://evil.example\r\n"),
            403,
            b"Origin",
        ),
        (upgrade(host=b"evil.example"), 403, b"Host"),
        (upgrade(path=b"http://evil.example/mcp"), 403, b"evil.example"),
        (upgrade(path=b"/other"), 404, b"/other"),
        (upgrade(method=b"POST"), 405, b"GET"),
        (upgrade(extra=b""), 400, b"subprotocol"),
        (upgrade(extra=b"Sec-WebSocket-Protocol: graphql-ws\r\n"), 400, b"subprotocol"),
        (b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 400, b"WebSocket"),
        (upgrade().replace(b"Version: 13", b"Version: 8"), 426, b"WebSocket"),
        (upgrade(extra=b"Sec-WebSocket-Protocol: mcp\r\nContent-Length: 5\r\n"), 400, b"body"),
        (b"\x00\x01garbage\r\n\r\n", 400, b"HTTP"),
        (b"GET /mcp HTTP/1.1\r\nX: " + b"a" * MAX_HANDSHAKE_BYTES, 431, b"HTTP"),
    ],
    ids=[
        "ok",
        "ok-query",
        "ok-local-origin",
        "bad-origin",
        "bad-host",
        "bad-target-host",
        "wrong-path",
        "post",
        "no-subprotocol",
        "other-subprotocol",
        "not-upgrade",
        "old-version",
        "with-body",
        "garbage",
        "head-too-big",
    ],
)
def test_handshake_checks(request_bytes: bytes, status: int, words: bytes) -> None:
    handshake = ServerHandshake()
    handshake.receive_data(request_bytes)
    got, headers, body = answer(handshake.next_event())
    assert got == status
    if status == 101:
        assert headers[b"sec-websocket-protocol"] == b"mcp"
        return
    assert words in body
    assert json.loads(body)["error"]["code"] < 0  # a JSON-RPC error body
    assert headers[b"connection"] == b"close"
    if status == 426:
        assert headers[b"sec-websocket-version"] == b"13"
    if status == 405:
        assert headers[b"allow"] == b"GET"


def test_a_busy_server_answers_503_only_to_requests_it_would_accept() -> None:
    handshake = ServerHandshake(busy=3)
    handshake.receive_data(upgrade())
    status, _, body = answer(handshake.next_event())
    assert status == 503 and b"at most 3" in body
    handshake = ServerHandshake(busy=3)
    handshake.receive_data(upgrade(path=b"/other"))
    assert answer(handshake.next_event())[0] == 404


def test_the_handshake_waits_for_the_whole_head_and_a_client_may_leave() -> None:
    handshake = ServerHandshake(path=None, allowed_hosts=["*"])
    request = upgrade(path=b"/anything", host=b"evil.example")
    for i in range(len(request) - 1):
        handshake.receive_data(request[i : i + 1])
        assert handshake.next_event() is NEED_DATA
    handshake.receive_data(b"")
    assert handshake.next_event() is CLOSED


def test_frames_sent_right_behind_the_request_are_kept() -> None:
    handshake = ServerHandshake()
    handshake.receive_data(upgrade() + client_frame(0x1, b'{"early":1}'))
    accepted = handshake.next_event()
    assert isinstance(accepted, Accepted)
    conn = WebSocketConnection(accepted.ws, ping_interval=None)
    assert conn.next_event() == Message(b'{"early":1}')


@given(st.binary(max_size=300), st.integers(min_value=1, max_value=300))
def test_arbitrary_bytes_give_the_server_one_outcome_never_an_exception(
    data: bytes, cut: int
) -> None:
    handshake = ServerHandshake()
    outcome: object = NEED_DATA
    for part in (data[:cut], data[cut:], b""):
        handshake.receive_data(part)
        outcome = handshake.next_event()
        if outcome is not NEED_DATA:
            break
    assert isinstance(outcome, Accepted | Refused) or outcome is CLOSED


@given(st.binary(max_size=300))
def test_arbitrary_bytes_give_the_client_need_data_or_a_handshake_error(data: bytes) -> None:
    client = ClientHandshake(host="h:1")
    try:
        client.receive_data(data)
        assert client.next_event() is NEED_DATA
    except HandshakeError:
        pass


# ------------------------------------------------------- the client handshake


def server_answer(client: ClientHandshake) -> WSConnection:
    """A wsproto server that has read the client's request."""
    server = WSConnection(ConnectionType.SERVER)
    server.receive_data(client.request)
    [request] = list(server.events())
    assert isinstance(request, Request) and request.subprotocols == ["mcp"]
    return server


def test_the_client_offers_mcp_sends_its_headers_and_insists_on_mcp() -> None:
    client = ClientHandshake(
        host="h:1", target="/mcp?x=1", origin="http://o", headers=[("Authorization", "B t")]
    )
    assert b"GET /mcp?x=1 HTTP/1.1\r\n" in client.request
    assert b"origin: http://o\r\n" in client.request and b"authorization: B t" in client.request
    server = server_answer(client)
    client.receive_data(server.send(AcceptConnection()))  # no subprotocol
    with pytest.raises(HandshakeError, match="subprotocol"):
        client.next_event()


def test_the_client_reports_a_refusal_with_its_status_and_bounded_body() -> None:
    client = ClientHandshake(host="h:1")
    server = server_answer(client)
    body = b"x" * (MAX_REJECT_BODY + 10)
    head = RejectConnection(
        status_code=403, headers=[(b"content-length", b"%d" % len(body))], has_body=True
    )
    client.receive_data(server.send(head) + server.send(RejectData(data=body)))
    with pytest.raises(HandshakeError) as info:
        client.next_event()
    assert info.value.status_code == 403 and info.value.body == body[:MAX_REJECT_BODY]
    assert "refused the upgrade: 403 xxx" in str(info.value)


@pytest.mark.parametrize(
    ("answer_bytes", "match"),
    [
        (b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n", "401"),
        (b"", "closed the connection"),
        (b"SSH-2.0-OpenSSH\r\n\r\n", "invalid upgrade response"),
    ],
)
def test_the_client_reports_a_bodyless_refusal_a_hangup_and_garbage(
    answer_bytes: bytes, match: str
) -> None:
    client = ClientHandshake(host="h:1")
    with pytest.raises(HandshakeError, match=match):
        client.receive_data(answer_bytes)
        client.next_event()


def test_split_url() -> None:
    assert split_url("ws://u@h:8000/mcp?x=1") == ("h", 8000, "h:8000", "/mcp?x=1")
    assert split_url("ws://[::1]") == ("::1", 80, "[::1]", "/")
    with pytest.raises(ValueError, match="wss"):
        split_url("wss://example.com/mcp")
    with pytest.raises(ValueError, match="ws://"):
        split_url("http://example.com/mcp")


def test_a_servers_options_split_into_the_handshakes_and_the_sessions() -> None:
    options = {"path": "/ws", "busy": 3, "ping_timeout": 1.0, "max_message_bytes": 10}
    ours, rest = split_server_options({**options, "drain_timeout": 2.0, "keepalive": None})
    assert ours == options
    assert rest == {"max_message_bytes": 10, "drain_timeout": 2.0, "keepalive": None}

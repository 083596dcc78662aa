"""The Streamable HTTP server's sans-IO decisions, without sockets or a clock: where a
request goes (mcp_ref._http_server), which logical stream each message goes to
(mcp_ref._http_streams), the session bounds (mcp_ref._http_sessions), and one
connection's bytes in and events out (mcp_ref._http_connection).

Source: 2025-06-18/basic/transports (Streamable HTTP: sending messages, listening,
multiple connections, resumability, session management).
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import h11
import pytest

from mcp_ref._http import HttpError, HttpLimits, MessageKind
from mcp_ref._http_answers import StreamCursor
from mcp_ref._http_connection import CLOSED, NEED_DATA, Refusal, RequestReady, ServerConnection
from mcp_ref._http_legacy import session_endpoint
from mcp_ref._http_messages import MessageInfo, message_info
from mcp_ref._http_peers import allowed_for, http_url, is_loopback, peer_address, told_apart
from mcp_ref._http_post import (
    STATELESS_INIT_ID,
    check_batch,
    check_initialize_alone,
    read_messages,
    stateless_preamble,
)
from mcp_ref._http_server import (
    Endpoint,
    RequestHeaders,
    ServerConfig,
    check_body_headers,
    gone,
    headers_from_items,
    legacy_session,
    request_headers,
    request_version,
    route_request,
    server_config,
    server_urls,
    session_named,
)
from mcp_ref._http_sessions import SessionBook
from mcp_ref._http_streams import STANDALONE, SessionStreams

from ._http_core import CFG, Tenant

T = "2025-06-18/basic/transports#"

SSE_AND_JSON = "application/json, text/event-stream"


def route(method: str, target: str, cfg: ServerConfig = CFG, **headers: str) -> Any:
    items = [("host", "localhost:8000"), *((k.replace("_", "-"), v) for k, v in headers.items())]
    req = h11.Request(method=method, target=target, headers=items)
    return route_request(cfg, req.method, req.target, request_headers(req, {}))


# -- where a request goes ------------------------------------------------------------


def test_requests_are_routed_by_path_and_method() -> None:
    assert route("POST", "/mcp", accept=SSE_AND_JSON) == (Endpoint.POST, "")
    assert route("GET", "/mcp", accept="text/event-stream") == (Endpoint.GET, "")
    assert route("DELETE", "/mcp") == (Endpoint.DELETE, "")
    assert route("GET", "/sse") == (Endpoint.LEGACY_GET, "")
    assert route("POST", "/messages?session_id=abc") == (Endpoint.LEGACY_POST, "session_id=abc")
    for method, target, status in [
        ("GET", "/nowhere", 404),
        ("PUT", "/mcp", 405),
        ("POST", "/sse", 405),
        ("GET", "/messages", 405),
        ("POST", "/mcp", 406),  # no Accept
    ]:
        got = route(method, target)
        assert isinstance(got, HttpError) and got.status == status, (method, target, got)


@pytest.mark.spec(T + "listening-for-messages-from-the-server.3")
def test_get_is_405_with_allow_when_the_server_offers_no_get_stream() -> None:
    got = route(
        "GET", "/mcp", attrs.evolve(CFG, enable_get_stream=False), accept="text/event-stream"
    )
    assert isinstance(got, HttpError) and got.status == 405
    assert any(name == b"allow" for name, _ in got.headers)


def test_delete_is_405_in_stateless_mode() -> None:
    got = route("DELETE", "/mcp", attrs.evolve(CFG, stateless=True, enable_get_stream=False))
    assert isinstance(got, HttpError) and got.status == 405


@pytest.mark.spec(T + "security-warning.1")
def test_a_foreign_origin_is_refused_before_the_path_is_looked_at() -> None:
    got = route("GET", "/nowhere", origin="http://evil.example")
    assert isinstance(got, HttpError) and got.status == 403


def test_a_head_larger_than_the_limit_is_431() -> None:
    cfg = attrs.evolve(CFG, limits=HttpLimits(max_header_bytes=100))
    got = route("POST", "/mcp", cfg, accept=SSE_AND_JSON, x_pad="a" * 200)
    assert isinstance(got, HttpError) and got.status == 431


def test_headers_from_any_parser_are_lowercased_sized_and_share_a_memo_but_content_length() -> None:
    memos: dict[Any, dict[Any, Any]] = {}
    first = headers_from_items(b"/mcp", [(b"Accept", b"a"), (b"Content-Length", b"12")], memos)
    again = headers_from_items(b"/mcp", [(b"accept", b"a"), (b"content-length", b"7")], memos)
    assert list(first) == [(b"accept", b"a"), (b"content-length", b"12")]
    assert first.size == len(b"/mcp") + (6 + 1 + 4) + (14 + 2 + 4)
    assert first.memo is again.memo
    other = headers_from_items(b"/other", [(b"accept", b"a")], memos)
    assert other.memo is not first.memo


# -- which stream a message goes to --------------------------------------------------


def request(rid: Any, method: str = "tools/call") -> MessageInfo:
    return MessageInfo(kind=MessageKind.REQUEST, id=rid, method=method)


RESULT = b'{"jsonrpc":"2.0","id":%d,"result":{}}'
NOTE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}}'


@pytest.mark.spec(T + "multiple-connections.2", T + "sending-messages-to-the-server.12")
def test_each_message_goes_to_one_stream_and_a_post_stream_ends_with_its_response() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    post = streams.open_post([request(1)], json_mode=False, is_init=False)
    assert not isinstance(post, HttpError)
    standalone = streams.streams[STANDALONE]
    get_before = standalone.last_id
    assert streams.route(NOTE, 1) is post  # related to request 1: on its POST's stream
    assert streams.route(NOTE, None) is standalone  # unrelated: the GET stream
    assert not post.finished
    assert streams.route(RESULT % 1, 1) is post
    assert post.finished and post.id not in streams.streams
    assert standalone.last_id != get_before and not streams.busy()
    events = streams.store.replay_after(post.base_id)
    assert not isinstance(events, HttpError) and len(events.events) == 2


def test_a_request_id_still_being_handled_is_400_and_too_many_streams_429() -> None:
    streams = SessionStreams("streamable", HttpLimits(max_streams_per_session=1))
    assert not isinstance(streams.open_post([request(1)], json_mode=True, is_init=False), HttpError)
    again = streams.open_post([request(1)], json_mode=True, is_init=False)
    assert isinstance(again, HttpError) and again.status == 400
    twice = streams.open_post([request(2), request(2)], json_mode=True, is_init=False)
    assert isinstance(twice, HttpError) and twice.status == 400
    more = streams.open_post([request(3)], json_mode=True, is_init=False)
    assert isinstance(more, HttpError) and more.status == 429


def test_a_cancelled_request_finishes_its_stream_and_its_late_response_is_dropped() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    post = streams.open_post([request("a")], json_mode=False, is_init=False)
    assert not isinstance(post, HttpError)
    cancel = MessageInfo(
        kind=MessageKind.NOTIFICATION, id=None, method="notifications/cancelled", cancels="a"
    )
    assert streams.cancel_from([cancel]) == [post] and post.finished
    assert streams.route(b'{"jsonrpc":"2.0","id":"a","result":{}}', None) is None


def test_the_answer_to_initialize_names_the_version_or_marks_the_failure() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    post = streams.open_post([request(0, "initialize")], json_mode=True, is_init=True)
    assert not isinstance(post, HttpError)
    streams.route(b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25"}}', 0)
    assert streams.protocol_version == "2025-11-25" and streams.primes
    failed = SessionStreams("streamable", HttpLimits())
    failed.open_post([request(0, "initialize")], json_mode=True, is_init=True)
    failed.route(b'{"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"m"}}', 0)
    assert failed.init_failed and failed.protocol_version is None


@pytest.mark.spec("2025-06-18/basic#messages.1")
def test_batches_only_in_2025_03_26_and_no_larger_than_the_connection_takes() -> None:
    refused = check_batch("2025-06-18", 2, None)
    assert isinstance(refused, HttpError) and refused.status == 400
    assert refused.clause == T + "sending-messages-to-the-server.4"
    assert check_batch("2025-03-26", 2, None) is None
    assert check_batch("2025-03-26", 1, 4) is None  # a batch of one is a batch
    too_big = check_batch("2025-03-26", 5, 4)
    assert isinstance(too_big, HttpError) and too_big.status == 400
    assert json.loads(too_big.body)["error"]["message"] == "batch too large"
    assert too_big.clause is None  # our bound, not the spec's
    empty = check_batch("2025-03-26", 0, 4)
    assert isinstance(empty, HttpError)
    assert json.loads(empty.body)["error"]["message"] == "empty batch"


# -- the session bounds --------------------------------------------------------------


def test_a_full_book_names_an_idle_session_to_evict_uninitialized_first() -> None:
    book: SessionBook[Tenant] = SessionBook(
        HttpLimits(max_sessions=2, session_evictable_seconds=5.0)
    )
    old, fresh = Tenant(last_used=0.0), Tenant(last_used=8.0, done_init=False)
    book.add(old, "10.0.0.1", 0.0)
    book.add(fresh, "10.0.0.2", 8.0)
    assert book.room_for("10.0.0.3", [old, fresh], now=12.0) is old  # fresh: idle 4 s only
    assert book.room_for("10.0.0.3", [old, fresh], now=13.0) is fresh  # uninitialized first
    book.remove(fresh)
    assert book.room_for("10.0.0.3", [old], now=13.0) is None


def test_a_full_book_with_every_session_busy_refuses_with_retry_after() -> None:
    book: SessionBook[Tenant] = SessionBook(
        HttpLimits(max_sessions=10, max_sessions_per_peer=1, session_evictable_seconds=5.0)
    )
    busy = Tenant(is_busy=True)
    book.add(busy, "10.0.0.1", 0.0)
    refused = book.room_for("10.0.0.1", [busy], now=1.0)
    assert isinstance(refused, HttpError) and refused.status == 429
    assert (b"retry-after", b"5") in refused.headers
    assert book.room_for("127.0.0.1", [busy], now=1.0) is None  # loopback: no share
    assert not told_apart("127.0.0.1") and told_apart("10.0.0.1") and not told_apart(None)


def test_expiry_of_sessions_never_initialized_and_idle_ones() -> None:
    limits = HttpLimits(uninitialized_session_seconds=10.0, session_idle_seconds=100.0)
    book: SessionBook[Tenant] = SessionBook(limits)
    never, idle = Tenant(done_init=False), Tenant(last_used=5.0)
    book.add(never, None, 0.0)
    book.add(idle, None, 0.0)
    assert book.expired([never, idle], now=9.0) == ([], 10.0)
    ends, next_at = book.expired([never, idle], now=10.0)
    assert [t for t, _ in ends] == [never] and next_at == 105.0
    ends, _ = book.expired([idle], now=105.0)
    assert [t for t, _ in ends] == [idle]


# -- addresses and the settings they give -----------------------------------------------


@pytest.mark.spec(T + "security-warning.1", T + "security-warning.2")
def test_a_server_on_loopback_takes_loopback_origins_and_hosts_by_default() -> None:
    for host in ("127.0.0.1", "::1", "[::1]", "localhost", "127.8.9.10"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "10.0.0.1", "example.com", "", "::"):
        assert not is_loopback(host), host
    local = server_config("127.0.0.1")
    assert "http://localhost:*" in local.allowed_origins
    assert "127.0.0.1:*" in local.allowed_hosts and "*" not in local.allowed_hosts
    public = server_config("0.0.0.0")
    assert tuple(public.allowed_origins) == () and tuple(public.allowed_hosts) == ("*",)
    # Patterns given win, whatever the address.
    assert allowed_for("0.0.0.0", ["https://a.example"], None)[0] == ["https://a.example"]


def test_a_stateless_server_offers_no_get_stream_and_no_2024_11_05_endpoints() -> None:
    cfg = server_config("127.0.0.1", stateless=True)
    assert cfg.stateless and not cfg.enable_get_stream and not cfg.legacy_sse
    assert server_config("127.0.0.1").legacy_sse
    with pytest.raises(ValueError, match="path must start with /"):
        server_config("127.0.0.1", path="mcp")
    with pytest.raises(TypeError):
        server_config("127.0.0.1", nonsense=True)


def test_the_client_address_is_the_ip_without_port_or_zone() -> None:
    assert peer_address(("10.0.0.1", 5000)) == "10.0.0.1"
    assert peer_address(("::ffff:192.0.2.7", 1, 0, 0)) == "192.0.2.7"  # one client, one peer
    assert peer_address(("fe80::1%eth0", 1, 0, 2)) == "fe80::1"
    assert peer_address(("proxy.example", 1)) == "proxy.example"
    assert peer_address("/run/mcp.sock") is None and peer_address(()) is None


def test_a_servers_url_puts_an_ipv6_address_in_brackets() -> None:
    assert http_url("127.0.0.1", 8000, "/mcp") == "http://127.0.0.1:8000/mcp"
    assert http_url("::1", 8000, "/sse") == "http://[::1]:8000/sse"


def test_a_servers_urls_and_its_2024_11_05_endpoint_event() -> None:
    cfg = ServerConfig()
    assert server_urls(cfg, "::1", 80, tls=True) == ("https://[::1]:80/mcp", "https://[::1]:80/sse")
    no_legacy = ServerConfig(legacy_sse=False)
    assert server_urls(no_legacy, "127.0.0.1", 8, tls=False) == ("http://127.0.0.1:8/mcp", None)
    event = session_endpoint("/messages", "abc")
    assert event == b"event: endpoint\ndata: /messages?session_id=abc\n\n"


# -- one connection: bytes in, events out ----------------------------------------------


def connection(**limits: Any) -> ServerConnection:
    return ServerConnection(attrs.evolve(CFG, limits=HttpLimits(**limits)), {})


HOST = b"host: localhost:8000\r\n"
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
POST = (
    b"POST /mcp HTTP/1.1\r\n" + HOST + b"accept: application/json, text/event-stream\r\n"
    b"content-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(PING)
)


def test_a_post_is_ready_once_its_body_is_whole_however_it_arrives() -> None:
    conn = connection()
    assert conn.next_event() is NEED_DATA and conn.waiting_for == "head"
    for byte in POST:
        conn.receive_data(bytes([byte]))
    assert conn.next_event() is NEED_DATA and conn.waiting_for == "body"
    conn.receive_data(PING[:10])
    assert conn.next_event() is NEED_DATA
    conn.receive_data(PING[10:])
    ready = conn.next_event()
    assert isinstance(ready, RequestReady) and ready.endpoint is Endpoint.POST
    assert ready.body == PING and not ready.last and conn.waiting_for is None


def test_a_refusal_before_the_body_is_read_ends_the_connection() -> None:
    # h11 holds a request as unfinished until its (even empty) body is read: a refusal
    # before that cannot let the connection serve another request.
    conn = connection()
    conn.receive_data(b"GET /nowhere HTTP/1.1\r\n" + HOST + b"\r\n" + POST + PING)
    refused = conn.next_event()
    assert isinstance(refused, Refusal) and refused.error.status == 404 and refused.close
    assert refused.data.startswith(b"HTTP/1.1 404 ") and b"connection: close" in refused.data
    assert not conn.next_cycle(last=False)


def test_the_last_request_of_a_connection_is_marked() -> None:
    conn = connection(max_requests_per_connection=1)
    conn.receive_data(POST + PING)
    ready = conn.next_event()
    assert isinstance(ready, RequestReady) and ready.last


def test_a_body_past_the_limit_is_413_and_ends_the_connection() -> None:
    conn = connection(max_body_bytes=10)
    conn.receive_data(POST + PING)  # Content-Length past the bound: refused before the body
    refused = conn.next_event()
    assert isinstance(refused, Refusal) and refused.error.status == 413 and refused.close
    chunked = POST.replace(b"content-length: %d" % len(PING), b"transfer-encoding: chunked")
    conn = connection(max_body_bytes=10)
    conn.receive_data(chunked + b"%x\r\n" % len(PING) + PING + b"\r\n0\r\n\r\n")
    refused = conn.next_event()  # no length said: refused once the body passes the bound
    assert isinstance(refused, Refusal) and refused.error.status == 413 and refused.close


def test_a_late_head_is_408_and_an_idle_connection_closes_quietly() -> None:
    conn = connection()
    assert conn.timed_out() is CLOSED
    conn = connection()
    conn.receive_data(b"GET /mcp HTT")
    assert conn.next_event() is NEED_DATA
    late = conn.timed_out()
    assert isinstance(late, Refusal) and late.error.status == 408 and late.close
    assert late.data.startswith(b"HTTP/1.1 408 ")


def test_each_wait_gets_its_deadline_once_a_head_then_its_body_then_the_next_head() -> None:
    conn = connection(idle_timeout_seconds=5.0)
    assert conn.next_event() is NEED_DATA and conn.waiting_for == "head"
    assert conn.deadline(100.0) == 105.0
    assert conn.deadline(103.0) == 105.0  # still the same wait: a trickle buys no time
    conn.receive_data(POST)
    assert conn.next_event() is NEED_DATA and conn.waiting_for == "body"
    assert conn.deadline(104.0) == 109.0  # the body's own wait
    conn.receive_data(PING)
    ready = conn.next_event()
    assert isinstance(ready, RequestReady)
    conn.h11.send(h11.Response(status_code=202, headers=[(b"content-length", b"0")]))
    conn.h11.send(h11.EndOfMessage())
    assert conn.next_cycle(ready.last) and conn.next_event() is NEED_DATA
    assert conn.deadline(104.5) == 109.5  # the next head: a wait of its own
    # A GET has no body to wait for: head after head, each wait its own deadline.
    conn.receive_data(b"GET /mcp HTTP/1.1\r\n" + HOST + b"accept: text/event-stream\r\n\r\n")
    ready = conn.next_event()
    assert isinstance(ready, RequestReady)
    conn.h11.send(h11.Response(status_code=200, headers=[(b"content-length", b"0")]))
    conn.h11.send(h11.EndOfMessage())
    assert conn.next_cycle(ready.last) and conn.next_event() is NEED_DATA
    assert conn.deadline(107.0) == 112.0


def test_100_continue_is_written_before_the_body_is_awaited() -> None:
    conn = connection()
    conn.receive_data(POST.replace(b"\r\n\r\n", b"\r\nexpect: 100-continue\r\n\r\n"))
    assert conn.next_event() is NEED_DATA
    assert conn.outgoing and conn.outgoing[0].startswith(b"HTTP/1.1 100 ")


def test_a_refusal_of_a_head_request_ends_after_the_head() -> None:
    conn = connection()
    conn.receive_data(b"HEAD /mcp HTTP/1.1\r\n" + HOST + b"\r\n")
    refused = conn.next_event()
    assert isinstance(refused, Refusal) and refused.error.status == 405
    assert refused.data.startswith(b"HTTP/1.1 405 ") and b'"jsonrpc"' not in refused.data
    assert not conn.next_cycle(last=False)


@pytest.mark.spec("2025-06-18/basic/lifecycle#initialization.1")
def test_initialize_must_be_sent_alone() -> None:
    init, ping = request(0, "initialize"), request(1, "ping")
    assert check_initialize_alone([init]) is None
    assert check_initialize_alone([ping, request(2, "ping")]) is None
    for body in ([init, ping], [ping, init]):
        refused = check_initialize_alone(body)
        assert isinstance(refused, HttpError) and refused.status == 400
        assert json.loads(refused.body)["error"]["message"] == "initialize must be sent alone"
        assert refused.clause == "2025-06-18/basic/lifecycle#initialization.1"


def test_a_stateless_session_is_brought_to_operating_by_its_preamble() -> None:
    from mcp_ref import NEED_DATA as CORE_NEED_DATA
    from mcp_ref import SERVER, Connection, Request

    init, initialized = stateless_preamble("2025-06-18")
    assert init == (
        b'{"jsonrpc":"2.0","id":"mcp-ref:stateless-initialize","method":"initialize",'
        b'"params":{"protocolVersion":"2025-06-18","capabilities":{},'
        b'"clientInfo":{"name":"stateless-http-client","version":"0"}}}'
    )
    conn = Connection(SERVER)
    conn.receive_message(init)
    event = conn.next_event()
    assert isinstance(event, Request) and event.method == "initialize"
    assert event.id == STATELESS_INIT_ID and event.params.protocol_version == "2025-06-18"
    assert conn.next_event() is CORE_NEED_DATA
    note = message_info(initialized)
    assert note is not None and note.method == "notifications/initialized"


@pytest.mark.spec(T + "resumability-and-redelivery.4")
def test_a_cursor_writes_what_follows_it_and_ends_with_the_answer() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    post = streams.open_post([request(1)], json_mode=False, is_init=False)
    assert not isinstance(post, HttpError)
    streams.route(NOTE, 1)
    first = StreamCursor(streams, post, post.base_id, streams.attach(post))
    assert first.opening(1000) == b""  # no priming before 2025-11-25
    chunk = first.take()
    assert chunk.data.startswith(b"event: message\n") and chunk.end is None
    assert chunk.last_id is not None and first.take().data == b""
    # The client drops the connection; a GET with that last id resumes: the response
    # to request 1 only, then the end, and the newer response takes the stream over.
    streams.route(RESULT % 1, None)
    resumed = StreamCursor(streams, post, chunk.last_id, streams.attach(post))
    assert first.take().end == "another response took the stream over"
    rest = resumed.take()
    assert b'"id":1' in rest.data and b"notifications/message" not in rest.data
    assert rest.end == "answered"


def test_a_handler_may_end_its_stream_and_the_session_end_ends_every_response() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    streams.protocol_version = "2025-11-25"  # primed: the client holds an id at once
    post = streams.open_post([request(1)], json_mode=False, is_init=False)
    assert not isinstance(post, HttpError)
    cursor = StreamCursor(streams, post, post.base_id, streams.attach(post))
    assert cursor.opening(500).startswith(b"id: ") and b"retry: 500" in cursor.opening(500)
    assert streams.request_close(1) is post
    assert cursor.take().end == "closed by its handler"
    get = streams.streams[STANDALONE]
    listening = StreamCursor(streams, get, get.base_id, streams.attach(get))
    assert get in streams.end() and listening.take().end == "the session ended"


# -- the version and session a request names ------------------------------------------


def headers(memos: dict[Any, Any] | None = None, **items: str) -> RequestHeaders:
    pairs = [("host", "localhost:8000"), *((k.replace("_", "-"), v) for k, v in items.items())]
    req = h11.Request(method="POST", target="/mcp", headers=pairs)
    return request_headers(req, {} if memos is None else memos)


@pytest.mark.spec(T + "protocol-version-header.3", T + "protocol-version-header.4")
def test_the_version_a_request_names_or_2025_03_26_or_400() -> None:
    assert request_version(headers()) == "2025-03-26"
    assert request_version(headers(mcp_protocol_version="2025-06-18")) == "2025-06-18"
    bad = request_version(headers(mcp_protocol_version="1999-01-01"))
    assert isinstance(bad, HttpError) and bad.status == 400
    assert bad.clause == T + "protocol-version-header.4"


@pytest.mark.spec(T + "session-management.5", T + "session-management.6")
def test_the_session_a_request_names_must_be_live_each_time() -> None:
    memos: dict[Any, Any] = {}
    abc = Tenant()
    assert session_named(headers(memos, mcp_session_id="abc"), {"abc": abc}) is abc
    # The same header set again: the session ended meanwhile.
    ended = session_named(headers(memos, mcp_session_id="abc"), {})
    assert isinstance(ended, HttpError) and ended.status == 404
    assert session_named(headers(memos, mcp_session_id="abc"), {"abc": abc}) is abc
    missing = session_named(headers(memos), {"abc": abc})
    assert isinstance(missing, HttpError) and missing.status == 400
    assert missing.clause == T + "session-management.5"
    unknown = session_named(headers({}, mcp_session_id="xyz"), {"abc": abc})
    assert isinstance(unknown, HttpError) and unknown.status == 404


@pytest.mark.spec(T + "session-management.6")
def test_a_2024_11_05_session_is_not_reached_through_the_mcp_endpoint() -> None:
    """A session id names a session of one transport only: the id of a 2024-11-05
    session (whose messages go to its message endpoint) is unknown to the Streamable
    HTTP endpoint, and a Streamable HTTP session's to the message endpoint."""
    live = {"old": Tenant(kind="legacy"), "new": Tenant()}
    refused = session_named(headers({}, mcp_session_id="old"), live)
    assert isinstance(refused, HttpError) and refused.status == 404
    assert legacy_session("session_id=old", live) is live["old"]
    wrong = legacy_session("session_id=new", live)
    assert isinstance(wrong, HttpError) and wrong.status == 404


@pytest.mark.spec(T + "session-management.6")
def test_a_session_that_ended_is_404() -> None:
    got = gone()
    assert (got.status, got.detail, got.clause) == (
        404,
        "session not found (terminated)",
        T + "session-management.6",
    )
    assert json.loads(got.body)["error"]["message"] == "session not found (terminated)"


def test_the_legacy_message_endpoint_takes_its_session_from_the_query() -> None:
    live = {"abc": Tenant(kind="legacy"), "a b": Tenant(kind="legacy")}
    assert legacy_session("session_id=abc", live) is live["abc"]
    assert legacy_session("x=1&session_id=a%20b&session_id=c", live) is live["a b"]
    for query in ("", "x=1", "session_id="):
        missing = legacy_session(query, live)
        assert isinstance(missing, HttpError)
        assert (missing.status, missing.detail, missing.clause) == (
            400,
            "missing session_id",
            None,
        )
    unknown = legacy_session("session_id=xyz", live)
    assert isinstance(unknown, HttpError) and unknown.status == 404


@pytest.mark.spec(T + "sending-messages-to-the-server.4")
def test_a_body_that_is_not_a_message_or_a_batch_within_the_bound_is_400() -> None:
    for body, detail in [
        (b"42", "invalid request: a message must be a JSON object"),
        (b'{"x":1}', 'invalid request: "jsonrpc" must be "2.0"'),
    ]:
        got = read_messages(body)
        assert isinstance(got, HttpError)
        assert (got.status, got.detail, got.code) == (400, detail, -32600)

    def batch(n: int) -> bytes:
        return b"[" + b",".join([b'{"jsonrpc":"2.0","method":"notifications/x"}'] * n) + b"]"

    assert len(read_messages(batch(64))) == 64  # type: ignore[arg-type]
    too_big = read_messages(batch(65))
    assert isinstance(too_big, HttpError) and too_big.status == 400
    assert len(read_messages(batch(2), max_items=2)) == 2  # type: ignore[arg-type]
    assert isinstance(read_messages(batch(3), max_items=2), HttpError)


# -- the refusals of route_request, exactly --------------------------------------------


def refusal(got: object) -> tuple[int, str, dict[bytes, bytes]]:
    assert isinstance(got, HttpError), got
    return got.status, got.detail, dict(got.headers)


def test_a_head_of_exactly_the_limit_passes_and_one_byte_more_is_431() -> None:
    items = [("host", "localhost:8000"), ("accept", SSE_AND_JSON), ("X-Pad", "abc")]
    size = len("/mcp") + sum(len(k) + len(v) + 4 for k, v in items)
    for most, ok in ((size, True), (size - 1, False)):
        req = h11.Request(method="POST", target="/mcp", headers=items)
        cfg = attrs.evolve(CFG, limits=HttpLimits(max_header_bytes=most))
        got = route_request(cfg, req.method, req.target, request_headers(req, {}))
        if ok:
            assert got == (Endpoint.POST, "")
        else:
            assert refusal(got)[:2] == (431, f"request head larger than {most} bytes")


def test_the_memo_of_header_sets_is_bounded() -> None:
    memos: dict[Any, Any] = {}
    for n in range(300):
        req = h11.Request(method="GET", target=f"/mcp?n={n}", headers=[("host", "x")])
        request_headers(req, memos)
        assert len(memos) <= 256


def test_a_path_that_is_no_endpoint_is_404() -> None:
    assert refusal(route("GET", "/nowhere"))[:2] == (404, "no MCP endpoint at /nowhere")


def test_the_legacy_endpoints_take_one_method_each() -> None:
    status, detail, hdrs = refusal(route("POST", "/sse"))
    assert (status, detail, hdrs[b"allow"]) == (
        405,
        "the 2024-11-05 SSE endpoint takes GET only",
        b"GET",
    )
    status, detail, hdrs = refusal(route("GET", "/messages"))
    assert (status, detail, hdrs[b"allow"]) == (
        405,
        "the 2024-11-05 message endpoint takes POST only",
        b"POST",
    )


@pytest.mark.spec(T + "listening-for-messages-from-the-server.3", T + "session-management.9")
def test_405_lists_the_methods_the_server_takes() -> None:
    stateless = attrs.evolve(CFG, stateless=True, enable_get_stream=False)
    no_get = attrs.evolve(CFG, enable_get_stream=False)
    cases = [
        ("PUT", CFG, "method PUT not allowed on the MCP endpoint", b"POST, GET, DELETE"),
        ("PUT", stateless, "method PUT not allowed on the MCP endpoint", b"POST"),
        ("GET", no_get, "this server offers no SSE stream on GET", b"POST, DELETE"),
        ("GET", stateless, "this server offers no SSE stream on GET", b"POST"),
        ("DELETE", stateless, "this server does not let clients terminate sessions", b"POST"),
    ]
    for method, cfg, detail, allow in cases:
        status, said, hdrs = refusal(route(method, "/mcp", cfg, accept="text/event-stream"))
        assert (status, said, hdrs[b"allow"]) == (405, detail, allow), (method, cfg)


@pytest.mark.spec(T + "listening-for-messages-from-the-server.2")
def test_a_get_must_accept_an_event_stream() -> None:
    assert refusal(route("GET", "/mcp", accept="application/json"))[0] == 406
    assert route("GET", "/mcp", accept="text/event-stream") == (Endpoint.GET, "")


def test_the_host_of_an_absolute_form_target_must_be_allowed() -> None:
    assert refusal(route("GET", "http://evil.example/mcp", accept="text/event-stream"))[0] == 403
    ok = route("GET", "http://localhost:8000/mcp", accept="text/event-stream")
    assert ok == (Endpoint.GET, "")


def test_a_body_must_be_json_and_within_the_bound() -> None:
    def check(content_type: str, length: int) -> HttpError | None:
        req = h11.Request(
            method="POST",
            target="/mcp",
            headers=[
                ("host", "x"),
                ("content-type", content_type),
                ("content-length", str(length)),
            ],
        )
        return check_body_headers(request_headers(req, {}), HttpLimits(max_body_bytes=10))

    assert check("application/json", 10) is None
    assert refusal(check("text/plain", 10))[0] == 415
    assert refusal(check("text/plain", 11))[0] == 415
    assert refusal(check("application/json", 11))[0] == 413

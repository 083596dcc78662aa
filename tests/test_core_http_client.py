"""The Streamable HTTP client's decisions, sans-IO (mcp_ref._http_client and
mcp_ref._http_client_streams): messages and heads in, headers and decisions out.

Source: 2025-06-18/basic/transports (sending messages, session management, the
protocol version header, resumability, backwards compatibility).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_ref._errors import RemoteProtocolError
from mcp_ref._http import HttpLimits
from mcp_ref._http_client import (
    MAX_ERROR_BODY,
    Answer,
    HttpClientCore,
    Send,
    failure,
    media_type,
)
from mcp_ref._http_client_steps import refusal_message
from mcp_ref._http_client_streams import (
    ANSWERED_GRACE,
    MAX_DELAY,
    MAX_GET_FAILURES,
    MAX_RESUMES_WITHOUT_PROGRESS,
    Reopen,
    StreamCursor,
)
from mcp_ref._http_streams import request_key
from mcp_ref._sse import SSEEvent
from tests._examples import examples

spec = pytest.mark.spec

URL = "http://example.com:8080/mcp?x=1"
JSON = [(b"content-type", b"application/json")]
SSE = [(b"content-type", b"text/event-stream; charset=utf-8")]


def _msg(**fields: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **fields}).encode()


INIT = _msg(id=1, method="initialize", params={})
INITIALIZED = _msg(method="notifications/initialized")


def _init_result(rid: Any = 1, version: str = "2025-06-18") -> bytes:
    return _msg(id=rid, result={"protocolVersion": version})


def _started(session: str | None = "s1", **kw: Any) -> HttpClientCore:
    """A core whose handshake went through (``session``: the id the server gave)."""
    core = HttpClientCore(URL, **kw)
    out = core.outgoing(INIT)
    heads = JSON + ([(b"mcp-session-id", session.encode())] if session else [])
    assert core.answer(200, heads, key=out.key) is Answer.JSON
    assert core.received(_init_result(), out.key)
    core.outgoing(INITIALIZED)
    return core


# -- the URL and the headers -------------------------------------------------------------


def test_the_url_gives_host_port_target_and_tls() -> None:
    core = HttpClientCore("https://user@Example.com/a/b?q=2")
    assert (core.tls, core.host, core.port) == (True, "example.com", 443)
    assert core.host_header == b"Example.com"
    assert core.target == core.post_target == "/a/b?q=2"
    plain = HttpClientCore("http://h")
    assert plain.mode == "streamable" and plain.generation == 0
    assert (plain.tls, plain.port, plain.target) == (False, 80, "/")
    assert HttpClientCore(URL).port == 8080
    for bad in ("ftp://example.com/", "http:///nohost", "example.com"):
        with pytest.raises(ValueError, match="not an http"):
            HttpClientCore(bad)


@spec("2025-11-25/basic/transports#session-management.4")
@pytest.mark.parametrize("bad", ["", "a b", "s\x01", "\u00e9t\u00e9", "\x7f"])
def test_a_malformed_session_id_is_never_adopted_nor_sent(bad: str) -> None:
    core = _started(session=None)
    core.note_session([(b"mcp-session-id", bad.encode("utf-8"))])
    assert core.session_id is None
    assert all(name != b"mcp-session-id" for name, _ in core.headers(b"POST", body=b"{}"))
    good = _started(session="s-1")
    assert good.session_id == "s-1"
    sent = [v for n, v in good.headers(b"POST", body=b"{}") if n == b"mcp-session-id"]
    assert sent == [b"s-1"]


@spec(
    "2025-06-18/basic/transports#session-management.4",
    "2025-06-18/basic/transports#protocol-version-header.1",
    "2025-06-18/basic/lifecycle#version-negotiation.7",
)
def test_headers_before_and_after_the_handshake() -> None:
    core = HttpClientCore(URL, headers=[("Authorization", "Bearer t")])
    assert core.headers(b"POST", body=b"abc") == [
        (b"host", b"example.com:8080"),
        (b"accept", b"application/json, text/event-stream"),
        (b"content-type", b"application/json"),
        (b"content-length", b"3"),
        (b"authorization", b"Bearer t"),
    ]
    core = _started(headers=[("X-A", "b")])
    assert core.headers(b"GET", last_event_id="e7") == [
        (b"host", b"example.com:8080"),
        (b"accept", b"text/event-stream"),
        (b"mcp-session-id", b"s1"),
        (b"mcp-protocol-version", b"2025-06-18"),
        (b"last-event-id", b"e7"),
        (b"x-a", b"b"),
    ]
    assert core.headers(b"DELETE") == [
        (b"host", b"example.com:8080"),
        (b"mcp-session-id", b"s1"),
        (b"mcp-protocol-version", b"2025-06-18"),
        (b"x-a", b"b"),
    ]
    core.mode = "legacy"  # 2024-11-05: neither session id nor version
    assert core.headers(b"POST") == [
        (b"host", b"example.com:8080"),
        (b"accept", b"application/json, text/event-stream"),
        (b"content-type", b"application/json"),
        (b"content-length", b"0"),
        (b"x-a", b"b"),
    ]


# -- outgoing messages -----------------------------------------------------------------------


def test_how_each_message_is_posted_and_the_handshake_kept() -> None:
    core = HttpClientCore(URL)
    assert core.init_body is None and core.init_key is None
    out = core.outgoing(INIT)
    assert (out.send, out.id, out.key) == (Send.INITIALIZE, 1, request_key(1))
    assert (core.init_body, core.init_key) == (INIT, request_key(1))
    assert not out.opens_get and out.cancels is None
    out = core.outgoing(_msg(id="7", method="tools/list"))
    assert (out.send, out.id, out.key) == (Send.REQUEST, "7", request_key("7"))
    assert out.key != request_key(7)
    out = core.outgoing(INITIALIZED)
    assert (out.send, out.id, out.key, out.opens_get) == (
        Send.ONE_WAY,
        None,
        request_key(None),
        True,
    )
    assert core.initialized_body == INITIALIZED
    out = core.outgoing(_msg(method="notifications/cancelled", params={"requestId": "7"}))
    assert (out.send, out.cancels, out.opens_get) == (Send.ONE_WAY, request_key("7"), False)
    out = core.outgoing(_msg(method="notifications/cancelled", params={}))
    assert out.cancels is None
    out = core.outgoing(_msg(id=3, result={}))
    assert (out.send, out.id) == (Send.ONE_WAY, None)
    assert core.outgoing(b"not json").send is Send.ONE_WAY
    assert core.init_body == INIT and core.initialized_body == INITIALIZED
    core.mode = "legacy"
    out = core.outgoing(_msg(id=4, method="ping"))
    assert (out.send, out.id, out.key) == (Send.LEGACY, 4, request_key(4))
    assert core.outgoing(INITIALIZED).send is Send.LEGACY


def test_no_get_stream_when_not_wanted() -> None:
    core = HttpClientCore(URL, get_stream=False)
    assert not core.outgoing(INITIALIZED).opens_get


# -- what a head means -----------------------------------------------------------------------


@spec("2025-06-18/basic/transports#sending-messages-to-the-server.9")
def test_answers_to_a_request() -> None:
    core = _started()
    key = request_key(5)
    assert core.answer(202, [], key=key) is Answer.ACCEPTED
    assert core.answer(200, JSON, key=key) is Answer.JSON
    assert core.answer(200, [(b"content-type", b"Application/JSON ; x=y")], key=key) is Answer.JSON
    assert core.answer(200, SSE, key=key) is Answer.SSE
    assert core.answer(200, [(b"content-type", b"text/html")], key=key) is Answer.UNEXPECTED
    assert core.answer(200, [], key=key) is Answer.UNEXPECTED
    assert core.answer(204, [], key=key) is Answer.UNEXPECTED
    for status in (400, 401, 403, 405, 500, 503):
        assert core.answer(status, JSON, key=key) is Answer.REFUSED
    # the session id of another answer than initialize's is not taken
    core.answer(200, [*JSON, (b"mcp-session-id", b"other")], key=key)
    assert core.session_id == "s1"


@spec("2025-06-18/basic/transports#session-management.7")
def test_a_404_to_our_session_means_a_new_session_once() -> None:
    core = _started()
    key = request_key(5)
    assert core.answer(404, [], key=key) is Answer.EXPIRED
    assert core.answer(404, [], key=key, retried=True) is Answer.REFUSED
    assert _started(session=None).answer(404, [], key=key) is Answer.REFUSED
    # a 404 to initialize itself is no expired session (it may mean the fallback)
    assert core.answer(404, [], key=core.init_key) is Answer.FALLBACK
    assert core.one_way(404) is Answer.EXPIRED
    assert core.one_way(404, retried=True) is Answer.REFUSED
    assert _started(session=None).one_way(404) is Answer.REFUSED
    assert core.one_way(202) is core.one_way(200) is core.one_way(299) is Answer.ACCEPTED
    assert core.one_way(300) is core.one_way(500) is Answer.REFUSED


def test_answers_to_initialize() -> None:
    core = HttpClientCore(URL)
    key = core.outgoing(INIT).key
    for status in (400, 404, 405, 499):
        assert core.answer(status, [], key=key) is Answer.FALLBACK
    assert core.answer(401, [], key=key) is core.answer(403, [], key=key) is Answer.UNAUTHORIZED
    assert core.answer(500, [], key=key) is Answer.REFUSED
    assert core.answer(399, [], key=key) is Answer.UNEXPECTED
    assert core.session_id is None
    no_fallback = HttpClientCore(URL, legacy_fallback=False)
    key = no_fallback.outgoing(INIT).key
    assert no_fallback.answer(404, [], key=key) is Answer.REFUSED
    assert no_fallback.answer(401, [], key=key) is Answer.UNAUTHORIZED
    # before initialize was sent, no key is initialize's
    fresh = HttpClientCore(URL)
    assert fresh.answer(404, [], key=None) is Answer.REFUSED


def test_the_session_id_of_the_initialize_answer() -> None:
    core = HttpClientCore(URL)
    key = core.outgoing(INIT).key
    assert core.answer(202, [(b"mcp-session-id", b"abc")], key=key) is Answer.ACCEPTED
    assert core.session_id == "abc"
    core.note_session([(b"mcp-session-id", b"bad id\x01")])
    assert core.session_id == "abc"  # a malformed one is ignored
    core.note_session([(b"x-other", b"zzz")])
    assert core.session_id == "abc"
    core.answer(200, [*SSE, (b"mcp-session-id", b"def")], key=key)
    assert core.session_id == "def"


def test_received_messages_answer_the_request_awaited_and_give_the_version() -> None:
    core = HttpClientCore(URL)
    key = core.outgoing(INIT).key
    assert not core.received(_msg(method="notifications/message", params={}), key)
    assert not core.received(_msg(id=2, result={}), key)
    assert not core.received(_msg(id="1", result={}), key)
    assert not core.received(b"{", key)
    assert not core.received(_msg(id=1, method="ping"), key)  # a request with our id
    assert core.protocol_version is None
    assert core.received(_init_result(version="2025-03-26"), key)
    assert core.protocol_version == "2025-03-26"
    assert core.received(_init_result(version="2099-01-01"), key)
    assert core.protocol_version == "2025-03-26"  # noted once
    other = request_key(9)
    assert core.received(_msg(id=9, error={"code": -1, "message": "m"}), other)
    assert core.received(_init_result(rid=9, version="x"), other)
    assert core.protocol_version == "2025-03-26"  # only initialize's result names it


def test_refusals_and_failures() -> None:
    assert refusal_message(500, b"") == "HTTP 500: (no body)"
    assert refusal_message(400, b"plain " * 100) == "HTTP 400: " + ("plain " * 100)[:200]
    body = _msg(id=None, error={"code": -32600, "message": "bad thing"})
    assert refusal_message(400, body) == "HTTP 400: bad thing"
    assert refusal_message(502, b"\xff") == "HTTP 502: \ufffd"
    assert json.loads(failure(7, "lost")) == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32603, "message": "lost"},
    }
    assert media_type([(b"x", b"y"), (b"content-type", b" TEXT/Plain;a=b")]) == b"text/plain"
    assert media_type([]) == b""
    assert MAX_ERROR_BODY == 65536


# -- a new session -------------------------------------------------------------------------


@spec("2025-06-18/basic/transports#session-management.7")
def test_a_new_session_replays_the_handshake_once() -> None:
    core = _started()
    assert core.generation == 0
    assert core.begin_new_session(0) is True
    assert core.session_id is None and core.protocol_version is None
    assert core.headers(b"POST")[1:3] == [
        (b"accept", b"application/json, text/event-stream"),
        (b"content-type", b"application/json"),
    ]
    assert core.replay_answer(200, [*SSE, (b"mcp-session-id", b"s2")]) is Answer.SSE
    assert core.session_id == "s2"
    assert core.replayed(_msg(method="notifications/message", params={})) is None
    assert core.replayed(_init_result()) is True
    assert core.end_new_session(True) is None
    assert core.generation == 1
    assert core.begin_new_session(1) is True
    assert core.end_new_session(True) is None
    assert core.generation == 2
    # a task that saw the 404 of the old session learns another one did it
    assert core.begin_new_session(1) is None
    assert core.session_id is None


def test_a_new_session_that_fails() -> None:
    core = _started()
    assert core.begin_new_session(0)
    assert core.replay_answer(404, JSON) is Answer.REFUSED
    assert core.session_id is None
    assert core.replay_answer(200, JSON) is Answer.JSON
    assert core.replay_answer(200, [(b"content-type", b"text/html")]) is Answer.UNEXPECTED
    assert core.replayed(_init_result(version="2025-03-26")) is False
    assert core.end_new_session(False) == (
        "the HTTP session expired and a new one could not be started"
    )
    assert core.generation == 0
    # nothing to replay before the handshake went through
    assert HttpClientCore(URL).begin_new_session(0) is False
    half = HttpClientCore(URL)
    half.outgoing(INIT)
    assert half.begin_new_session(0) is False
    # an initialize result naming no version, replayed before any new session began
    assert half.replayed(_msg(id=1, result={})) is True


# -- 2024-11-05 -------------------------------------------------------------------------------


def test_the_fallback_and_its_endpoint() -> None:
    core = HttpClientCore(URL)
    core.fall_back(200, SSE)
    assert core.mode == "legacy"
    core.endpoint(SSEEvent(event="endpoint", data="/messages?session_id=a b"))
    assert core.post_target == "/messages?session_id=a b"
    core.endpoint(SSEEvent(event="endpoint", data="http://example.com:8080/m"))
    assert core.post_target == "/m"
    core.endpoint(SSEEvent(event="endpoint", data="http://example.com:8080"))
    assert core.post_target == "/"
    assert core.target == "/mcp?x=1"
    with pytest.raises(RemoteProtocolError, match="origin"):
        core.endpoint(SSEEvent(event="endpoint", data="http://evil.example/m"))
    with pytest.raises(RemoteProtocolError, match="endpoint"):
        core.endpoint(SSEEvent(data="/m"))
    for status, heads in ((404, SSE), (200, JSON)):
        other = HttpClientCore(URL)
        with pytest.raises(RemoteProtocolError, match=f"HTTP {status}: not a 2024-11-05"):
            other.fall_back(status, heads)
        assert other.mode == "legacy"


# -- SSE streams and their cursors ------------------------------------------------------------


def test_a_cursor_gives_messages_and_keeps_id_and_retry_across_responses() -> None:
    cursor = StreamCursor(1000, 2.5)
    assert (cursor.last_event_id, cursor.retry, cursor.count, cursor.error) == ("", None, 0, None)
    assert cursor.retry_seconds() == 2.5
    got = cursor.receive_data(b'id: a1\nretry: 300\ndata: {"x":1}\n\n: comment\n\nev')
    assert got == [b'{"x":1}']
    assert (cursor.last_event_id, cursor.retry, cursor.count) == ("a1", 300, 1)
    assert cursor.retry_seconds() == 0.3
    got = cursor.receive_data(b"ent: message\ndata: \xc3\xa9\n\nevent: other\ndata: z\n\n")
    assert got == ["é".encode()]
    assert cursor.count == 3
    assert cursor.receive_data(b"id: a2\ndata:\n\n") == []  # no data: no event, the id taken
    assert cursor.last_event_id == "a2"
    cursor.receive_data(b"data: cut off")
    cursor.begin()  # a new response: a fresh decoder, the id and retry kept
    assert cursor.count == 0
    assert cursor.receive_data(b"\n\ndata: m\n\n") == [b"m"]
    assert (cursor.last_event_id, cursor.retry) == ("a2", 300)
    assert cursor.receive_data(b"") == []


def test_an_id_that_cannot_be_sent_back_names_no_place_to_resume() -> None:
    cursor = StreamCursor(1000, 1.0)
    cursor.receive_data(b"id: e1\ndata: a\n\n")
    assert cursor.last_event_id == "e1"
    cursor.receive_data("id: \u00e9\ndata: b\n\n".encode())
    assert cursor.last_event_id == ""
    cursor.receive_data(b"id: e\x01\ndata: c\n\n")
    assert cursor.last_event_id == ""
    assert cursor.post_ended(False) == (
        "the SSE stream ended before the response and cannot be resumed"
    )
    cursor.receive_data(b"id: e3 x\ndata: d\n\n")
    assert cursor.last_event_id == "e3 x"
    HttpClientCore(URL).headers(b"GET", last_event_id=cursor.last_event_id)


def test_a_cursor_stops_reading_a_response_past_the_bound() -> None:
    cursor = StreamCursor(10, 1.0)
    assert cursor.receive_data(b"data: ok\n\ndata: " + b"x" * 20) == [b"ok"]
    assert cursor.error is not None and "larger than 10" in cursor.error
    assert cursor.receive_data(b"\n\ndata: y\n\n") == []
    cursor.begin()
    assert cursor.error is None
    assert cursor.receive_data(b"data: y\n\n") == [b"y"]


def test_a_legacy_cursor_keeps_the_first_event() -> None:
    cursor = StreamCursor(1000, 1.0, expect_endpoint=True)
    assert cursor.first is None
    got = cursor.receive_data(b"event: endpoint\ndata: /m\n\ndata: a\n\n")
    assert cursor.first == SSEEvent(event="endpoint", data="/m")
    assert got == [b"a"]
    plain = StreamCursor(1000, 1.0)
    assert plain.receive_data(b"event: endpoint\ndata: /m\n\n") == []
    assert plain.first is None


@spec("2025-06-18/basic/transports#resumability-and-redelivery.3")
def test_a_request_stream_resumes_while_it_makes_progress() -> None:
    cursor = StreamCursor(1000, 1.5)
    assert cursor.post_ended(True) is None
    cursor.receive_data(b"data: a\n\n")
    assert (
        cursor.post_ended(False) == "the SSE stream ended before the response and cannot be resumed"
    )
    cursor.receive_data(b"id: e1\ndata: a\n\n")
    assert cursor.post_ended(False) == 1.5
    cursor.receive_data(b"retry: 20\n\n")
    for _ in range(MAX_RESUMES_WITHOUT_PROGRESS):
        cursor.begin()
        assert cursor.post_ended(False) == 0.02
    cursor.begin()
    cursor.receive_data(b"data: progress\n\n")
    assert cursor.post_ended(False) == 0.02  # progress: the count starts again
    for _ in range(MAX_RESUMES_WITHOUT_PROGRESS):
        cursor.begin()
        assert cursor.post_ended(False) == 0.02
    cursor.begin()
    assert cursor.post_ended(False) == "the SSE stream keeps ending without progress"


def test_a_request_stream_without_events_gives_up_after_the_bound() -> None:
    cursor = StreamCursor(1000, 1.0)
    cursor.receive_data(b"id: e1\n\n")  # an id, no event
    for _ in range(MAX_RESUMES_WITHOUT_PROGRESS):
        assert cursor.post_ended(False) == 1.0
        cursor.begin()
    assert cursor.post_ended(False) == "the SSE stream keeps ending without progress"


def test_what_a_reopening_get_means() -> None:
    cursor = StreamCursor(1000, 1.0)
    assert cursor.reopened(200, SSE, session=False) is Reopen.READ
    assert cursor.reopened(200, JSON, session=True) is Reopen.STOP
    assert cursor.reopened(405, [], session=True) is Reopen.STOP
    assert cursor.reopened(404, [], session=True) is Reopen.EXPIRED
    assert cursor.reopened(404, SSE, session=False) is Reopen.STOP
    assert cursor.reopened(409, [], session=True) is Reopen.STOP  # no id sent
    cursor.receive_data(b"id: e9\n\n")
    assert cursor.reopened(409, [], session=True) is Reopen.RESET
    assert cursor.last_event_id == ""


def test_the_get_stream_backs_off_and_gives_up() -> None:
    cursor = StreamCursor(1000, 1.0)
    cursor.receive_data(b"data: a\n\n")
    assert cursor.get_ended() == 1.0  # events came: reopen after retry
    cursor.receive_data(b"retry: 4000\n\n")
    cursor.begin()
    delays = [cursor.get_ended() for _ in range(MAX_GET_FAILURES)]
    assert delays == [4.0, 8.0, 16.0] + [MAX_DELAY] * (MAX_GET_FAILURES - 3)
    assert cursor.get_ended() is None
    cursor.receive_data(b"data: b\n\n")
    assert cursor.get_ended() == 4.0  # progress forgives the failures
    failing = StreamCursor(1000, 0.5)
    delays = [failing.get_failed() for _ in range(MAX_GET_FAILURES)]
    assert delays == [1.0, 2.0, 4.0, 8.0, 16.0, MAX_DELAY, MAX_DELAY, MAX_DELAY]
    assert failing.get_failed() is None
    assert (MAX_DELAY, MAX_GET_FAILURES, MAX_RESUMES_WITHOUT_PROGRESS) == (30.0, 8, 3)
    assert ANSWERED_GRACE == 1.0


def test_limits_reach_the_core() -> None:
    core = HttpClientCore(URL, limits=HttpLimits(max_event_bytes=5), default_retry=3.0)
    assert core.limits.max_event_bytes == 5 and core.default_retry == 3.0
    assert HttpClientCore(URL).limits == HttpLimits()
    assert HttpClientCore(URL).default_retry == 1.0
    assert HttpClientCore(URL).want_get and HttpClientCore(URL).legacy_fallback


# -- anything a server may send ----------------------------------------------------------------

_HEADS = st.lists(
    st.tuples(
        st.sampled_from([b"content-type", b"mcp-session-id", b"x-other"]),
        st.one_of(
            st.sampled_from([b"application/json", b"text/event-stream", b"s-2"]),
            st.binary(max_size=20),
        ),
    ),
    max_size=4,
)


@settings(max_examples=examples(300), deadline=None)
@given(
    status=st.integers(100, 599),
    heads=_HEADS,
    initialize=st.booleans(),
    retried=st.booleans(),
)
def test_every_head_has_a_meaning_and_a_session_id_stays_valid(
    status: int, heads: list[tuple[bytes, bytes]], initialize: bool, retried: bool
) -> None:
    core = _started()
    key = core.init_key if initialize else request_key(2)
    what = core.answer(status, heads, key=key, retried=retried)
    assert isinstance(what, Answer)
    assert (what is Answer.ACCEPTED) == (status == 202)
    assert core.one_way(status) in (Answer.ACCEPTED, Answer.EXPIRED, Answer.REFUSED)
    assert core.session_id is not None
    core.headers(b"POST")  # still a valid header value


@settings(max_examples=examples(300), deadline=None)
@given(
    chunks=st.lists(
        st.one_of(st.binary(min_size=1, max_size=40), st.just(b"\n\nid: \x01\n\n")),
        max_size=8,
    ),
    status=st.integers(100, 599),
)
def test_arbitrary_streams_give_messages_or_an_error_never_an_exception(
    chunks: list[bytes], status: int
) -> None:
    cursor = StreamCursor(64, 1.0)
    for chunk in chunks:
        for data in cursor.receive_data(chunk):
            assert isinstance(data, bytes)
    cursor.receive_data(b"")
    then = cursor.post_ended(False)
    assert isinstance(then, str) or (then is not None and then >= 0)
    assert isinstance(cursor.reopened(status, [], session=True), Reopen)
    HttpClientCore(URL).headers(b"GET", last_event_id=cursor.last_event_id)

"""The Streamable HTTP rules of mcp_ref._http, refusal by refusal: status, detail (the
JSON-RPC error message the peer reads) and spec clause, plus the edges of each check.

tests/test_transports_http_rules.py covers the rules themselves; this file pins what each
refusal says and the boundaries (request-target forms, Accept and Content-Type
parameters, length bounds, the event store's limits).

Source: 2025-06-18/basic/transports (Streamable HTTP; security warning; session
management; protocol version header; resumability); 2024-11-05/basic/transports (HTTP
with SSE); RFC 9112 section 3.2 (request-target forms).
"""

from __future__ import annotations

import pytest

from mcp_ref._errors import LocalProtocolError, RemoteProtocolError
from mcp_ref._http import (
    EventStore,
    HttpError,
    HttpLimits,
    PostReply,
    Replay,
    check_accept,
    check_content_length,
    check_content_type,
    check_host,
    check_method,
    check_origin,
    check_protocol_version,
    check_session,
    client_request_headers,
    endpoint_event,
    error_response_body,
    get_session_id,
    make_event_id,
    new_session_id,
    parse_event_id,
    resolve_endpoint,
    response_headers,
    split_target,
    validate_session_id,
)
from mcp_ref._sse import SSEEvent

T = "2025-06-18/basic/transports#"
SUPPORTED = ("2025-11-25", "2025-06-18", "2025-03-26")


def _err(value: object) -> tuple[int, str, str | None]:
    assert isinstance(value, HttpError), value
    return value.status, value.detail, value.clause


# -- request targets ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (b"/mcp?x=1", (None, "/mcp", "x=1")),
        (b"/a?b?c#d#e", (None, "/a", "b?c")),
        (b"/caf\xe9", (None, "/caf\u00e9", "")),
        (b"*", (None, "*", "")),
        (b"http://host:8000/mcp?x=1", ("host:8000", "/mcp", "x=1")),
        (b"http://host", ("host", "/", "")),
        (b"HTTPS://h/p#frag", ("h", "/p", "")),
        (b"host:443", ("host:443", "", "")),
        (b"//host/mcp", (None, "//host/mcp", "")),
    ],
)
def test_split_target(target: bytes, expected: tuple[str | None, str, str]) -> None:
    assert split_target(target) == expected


# -- Host and Origin ---------------------------------------------------------------------

LOCAL = ("localhost:*",)
HOST_CLAUSE = f"{T}security-warning.1"


def test_host_refusals_say_what_was_wrong() -> None:
    assert _err(check_host([], LOCAL)) == (400, "missing Host header", HOST_CLAUSE)
    assert _err(check_host([(b"host", b"localhost"), (b"host", b"localhost")], LOCAL)) == (
        400,
        "more than one host header",
        HOST_CLAUSE,
    )
    assert _err(check_host([(b"host", b"evil.example")], LOCAL)) == (
        403,
        "Host 'evil.example' is not allowed",
        HOST_CLAUSE,
    )
    assert check_host([], ("*",)) is None


@pytest.mark.spec(f"{T}security-warning.1")
def test_a_host_in_the_request_target_is_checked_too() -> None:
    headers = [(b"host", b"localhost:8000")]
    assert check_host(headers, LOCAL, target=b"/mcp") is None
    assert check_host(headers, LOCAL, target=b"http://localhost:9/mcp") is None
    assert _err(check_host(headers, LOCAL, target=b"http://evil.example/mcp")) == (
        403,
        "request target host 'evil.example' is not allowed",
        HOST_CLAUSE,
    )
    long_host = "a" * 250
    refusal = check_host(headers, LOCAL, target=f"http://{long_host}/x".encode())
    assert _err(refusal)[1] == f"request target host {'a' * 200!r} is not allowed"


@pytest.mark.spec("2025-11-25/basic/transports#security-warning.2")
def test_origin_refusals_say_what_was_wrong() -> None:
    allowed = ("http://localhost:*",)
    assert _err(check_origin([(b"origin", b"a"), (b"origin", b"b")], allowed)) == (
        403,
        "more than one Origin header",
        HOST_CLAUSE,
    )
    assert _err(check_origin([(b"origin", b"http://evil")], allowed)) == (
        403,
        "Origin 'http://evil' is not allowed",
        HOST_CLAUSE,
    )
    assert check_origin([(b"origin", b"HTTP://LocalHost:3000")], allowed) is None


# -- method, Accept, Content-Type, Content-Length ---------------------------------------


def test_method_refusals_say_why() -> None:
    assert _err(check_method(b"GET", allow_get=False)) == (
        405,
        "this server offers no SSE stream on GET",
        f"{T}listening-for-messages-from-the-server.3",
    )
    assert _err(check_method(b"DELETE", allow_delete=False)) == (
        405,
        "this server does not let clients terminate sessions",
        f"{T}session-management.9",
    )
    refusal = check_method(b"PUT")
    assert _err(refusal) == (
        405,
        "method PUT not allowed on the MCP endpoint",
        f"{T}streamable-http.1",
    )
    assert isinstance(refusal, HttpError)
    assert (b"allow", b"POST, GET, DELETE") in refusal.headers


@pytest.mark.parametrize(
    ("accept", "ok"),
    [
        (b"application/json, , text/event-stream", True),  # an empty range is skipped
        (b"application/json;q=abc, text/event-stream", False),  # a bad q counts as 0
        (b"application/json;q==1, text/event-stream", False),  # so does q==1
        (b"application/json;q=0.5, text/event-stream;level=1", True),
        (b"text/event-stream;q=0, application/json, text/event-stream", True),
        (b"application/json;q=0, text/event-stream, application/json", True),
    ],
)
def test_accept_parameters(accept: bytes, ok: bool) -> None:
    result = check_accept([(b"accept", accept)], b"POST")
    assert (result is None) is ok
    if not ok:
        assert _err(result) == (
            406,
            "Accept must list application/json and text/event-stream",
            f"{T}sending-messages-to-the-server.3",
        )


@pytest.mark.parametrize(
    ("content_type", "detail"),
    [
        (None, "a POST body needs Content-Type: application/json"),
        (b"text/plain", "Content-Type must be application/json, not text/plain"),
        (b"application/json; charset=latin-1", "JSON-RPC messages must be UTF-8"),
        (b"application/json; charset==utf-8", "JSON-RPC messages must be UTF-8"),
        (b"application/json; charset=utf-8X", "JSON-RPC messages must be UTF-8"),
        (b"application/json; charset=utf8", None),
        (b'application/json; charset="UTF-8"', None),
        (b"Application/JSON", None),
    ],
)
def test_content_type(content_type: bytes | None, detail: str | None) -> None:
    headers = [] if content_type is None else [(b"content-type", content_type)]
    result = check_content_type(headers)
    if detail is None:
        assert result is None
    else:
        assert _err(result) == (415, detail, f"{T}transports.1")


def test_content_length_bounds() -> None:
    def check(value: bytes) -> HttpError | None:
        return check_content_length([(b"content-length", value)], 100)

    assert check(b"100") is None
    assert check(b"0" * 17 + b"1") is None  # 18 digits: still read as a number
    assert _err(check(b"0" * 18 + b"1")) == (413, "body larger than 100 bytes", None)
    assert _err(check(b"101")) == (413, "body larger than 100 bytes", None)
    assert _err(check(b"-1")) == (400, "bad Content-Length", None)
    assert check_content_length([], 100) is None


# -- protocol version and sessions -------------------------------------------------------


def test_protocol_version_refusals_say_why() -> None:
    clause = f"{T}protocol-version-header.4"
    header = b"mcp-protocol-version"
    assert _err(check_protocol_version([(header, b"2025-06-18")] * 2, None, SUPPORTED)) == (
        400,
        "more than one mcp-protocol-version header",
        clause,
    )
    assert _err(check_protocol_version([], None, ("2025-06-18",))) == (
        400,
        "missing MCP-Protocol-Version header (and 2025-03-26 is not supported)",
        f"{T}protocol-version-header.3",
    )
    assert _err(check_protocol_version([(header, b"1999-01-01")], None, SUPPORTED)) == (
        400,
        "unsupported MCP-Protocol-Version '1999-01-01'",
        clause,
    )
    assert _err(check_protocol_version([(header, b"2025-03-26")], "2025-06-18", SUPPORTED)) == (
        400,
        "MCP-Protocol-Version '2025-03-26' differs from the negotiated '2025-06-18'",
        clause,
    )


def test_session_ids_are_made_from_16_to_512_random_bytes() -> None:
    assert new_session_id(b"\x00" * 16) == "00" * 16
    assert new_session_id(bytearray(b"\xff" * 512)) == "ff" * 512
    for size in (15, 513):
        with pytest.raises(LocalProtocolError) as caught:
            new_session_id(b"\x01" * size)
        assert caught.value.message == f"a session id needs 16..512 random bytes, got {size}"
    with pytest.raises(LocalProtocolError) as caught:
        new_session_id("0" * 32)  # type: ignore[arg-type]
    assert caught.value.message == "new_session_id needs bytes"


def test_session_id_validation() -> None:
    assert validate_session_id("a")
    assert validate_session_id(b"!" * 1024)
    assert not validate_session_id("")
    assert not validate_session_id("a" * 1025)
    assert not validate_session_id("\ud800")  # a lone surrogate is not visible ASCII
    assert not validate_session_id("caf\u00e9")


def test_session_refusals_say_why() -> None:
    clause = f"{T}session-management.3"
    sid = b"mcp-session-id"
    assert _err(get_session_id([(sid, b"a"), (sid, b"a")])) == (
        400,
        "more than one mcp-session-id header",
        clause,
    )
    assert _err(get_session_id([(sid, b"a b")])) == (400, "malformed Mcp-Session-Id", clause)
    assert get_session_id([(sid, b"abc")]) == "abc"
    assert _err(check_session([(sid, b"abc")], is_initialize=True, active_sessions=())) == (
        400,
        "initialize starts a new session and must not carry Mcp-Session-Id",
        f"{T}session-management.7",
    )
    assert _err(check_session([], is_initialize=False, active_sessions=())) == (
        400,
        "missing Mcp-Session-Id header",
        f"{T}session-management.5",
    )
    assert _err(check_session([(sid, b"abc")], is_initialize=False, active_sessions=())) == (
        404,
        "session not found (unknown or terminated)",
        f"{T}session-management.6",
    )


# -- response and request headers -------------------------------------------------------


def test_response_headers() -> None:
    assert response_headers(PostReply.SSE) == [
        (b"content-type", b"text/event-stream"),
        (b"cache-control", b"no-cache"),
    ]
    assert response_headers(PostReply.SSE, post=True, session_id="s1") == [
        (b"content-type", b"text/event-stream"),
        (b"mcp-session-id", b"s1"),
    ]
    assert response_headers(PostReply.JSON, content_length=12) == [
        (b"content-type", b"application/json"),
        (b"content-length", b"12"),
    ]
    with pytest.raises(LocalProtocolError) as caught:
        response_headers(PostReply.JSON)
    assert caught.value.message == "a JSON answer needs content_length"
    with pytest.raises(LocalProtocolError) as caught:
        response_headers(PostReply.ACCEPTED, session_id="a b")
    assert caught.value.message == "malformed session id 'a b'"


def test_client_request_header_refusals_name_the_value() -> None:
    with pytest.raises(LocalProtocolError) as caught:
        client_request_headers(b"POST", session_id="a b")
    assert caught.value.message == "malformed session id 'a b'"
    with pytest.raises(LocalProtocolError) as caught:
        client_request_headers(b"GET", last_event_id="s/1\r\nx: y")
    assert caught.value.message == "bad last-event-id value 's/1\\r\\nx: y'"


# -- event ids and the event store -------------------------------------------------------


def test_event_id_bounds() -> None:
    assert make_event_id("s" * 128, 10**19 - 1) == "s" * 128 + "/" + "9" * 19
    # Every id make_event_id writes reads back, the longest included; one digit more does not.
    assert parse_event_id("s/" + "9" * 19) == ("s", 10**19 - 1)
    with pytest.raises(RemoteProtocolError):
        parse_event_id("s/1" + "0" * 19)
    with pytest.raises(LocalProtocolError) as caught:
        make_event_id("s", 10**19)
    assert caught.value.message == f"event sequence number must be an int >= 0, not {10**19!r}"
    with pytest.raises(LocalProtocolError) as caught:
        make_event_id("s" * 129, 0)
    assert caught.value.message == (f"stream id must be 1..128 visible ASCII chars: {'s' * 129!r}")
    with pytest.raises(RemoteProtocolError) as caught_remote:
        parse_event_id("x" * 300)
    assert caught_remote.value.message == f"malformed event id {'x' * 200!r}"
    assert caught_remote.value.code == -32600


def test_event_store_bounds_and_defaults() -> None:
    store = EventStore()
    assert (store.max_events_per_stream, store.max_streams) == (256, 64)
    assert store.max_total_bytes == 4 * 1024 * 1024
    for bounds in (
        {"max_events_per_stream": 0},
        {"max_streams": 0},
        {"max_total_bytes": 0},
    ):
        with pytest.raises(ValueError, match=r"^EventStore bounds must be positive$"):
            EventStore(**bounds)
    with pytest.raises(LocalProtocolError) as caught:
        store.append("s", b"x")  # type: ignore[arg-type]
    assert caught.value.message == "event data must be a str"


def test_sequence_numbers_run_out_at_ten_to_the_19() -> None:
    store = EventStore()
    store._next_seq = 10**19 - 1
    assert store.append("s", "") == "s/" + "9" * 19
    with pytest.raises(LocalProtocolError) as caught:
        store.append("s", "")
    assert caught.value.message == "event sequence numbers exhausted"


def test_an_event_of_exactly_the_byte_budget_is_kept() -> None:
    store = EventStore(max_total_bytes=5)
    first = store.append("s", "")
    second = store.append("s", "12345")
    assert store.replay_after(first) == Replay(stream_id="s", events=((second, "12345"),))
    assert store.total_bytes == 5


def test_a_stream_name_used_again_after_eviction_starts_afresh() -> None:
    store = EventStore(max_streams=1)
    store.append("a", "x")  # a/0
    store.append("b", "y")  # b/1: "a" is evicted whole
    store.append("a", "z")  # a/2: a new life of "a"
    clause = f"{T}resumability-and-redelivery.4"
    assert _err(store.replay_after("a/0")) == (
        409,
        "events after 0 on 'a' are no longer stored",
        clause,
    )
    assert store.replay_after("a/1") == Replay(stream_id="a", events=(("a/2", "z"),))


def test_replay_refusals_say_why() -> None:
    store = EventStore()
    store.append("s", "x")  # s/0
    clause = f"{T}resumability-and-redelivery.4"
    assert _err(store.replay_after("t/0")) == (409, "no stored events for stream 't'", clause)
    assert _err(store.replay_after("s/5")) == (409, "event 5 was never sent on 's'", clause)
    assert _err(store.replay_after(b"bad")) == (
        400,
        "malformed event id 'bad'",
        f"{T}resumability-and-redelivery.3",
    )


# -- 2024-11-05 HTTP+SSE and limits -------------------------------------------------------


def test_endpoint_events() -> None:
    with pytest.raises(LocalProtocolError) as caught:
        endpoint_event("/messages?a b")
    assert caught.value.message == "bad endpoint URL '/messages?a b'"
    sse = "http://LocalHost:8000/sse"
    event = SSEEvent(event="endpoint", data="/messages?s=1")
    assert resolve_endpoint(event, sse) == "http://LocalHost:8000/messages?s=1"
    assert resolve_endpoint(SSEEvent(event="endpoint", data="HTTP://localhost:8000/m"), sse) == (
        "http://localhost:8000/m"
    )  # urljoin lowercases the scheme; the host stays
    with pytest.raises(RemoteProtocolError) as caught_remote:
        resolve_endpoint(SSEEvent(event="message", data="/m"), sse)
    assert caught_remote.value.message == "expected an endpoint event, got 'message'"
    with pytest.raises(RemoteProtocolError) as caught_remote:
        resolve_endpoint(SSEEvent(event="endpoint", data="http://evil/m"), sse)
    assert (
        caught_remote.value.message == f"endpoint 'http://evil/m' is not on the origin of {sse!r}"
    )


def test_http_limits_take_any_positive_value() -> None:
    assert HttpLimits(idle_timeout_seconds=0.5).idle_timeout_seconds == 0.5
    with pytest.raises(ValueError) as caught:
        HttpLimits(max_sessions=0)
    assert str(caught.value) == "HttpLimits.max_sessions must be positive, not 0"


def test_error_response_bodies_are_compact_utf_8() -> None:
    assert error_response_body(-32600, "caf\u00e9: bad", id="r") == (
        '{"jsonrpc":"2.0","id":"r","error":{"code":-32600,"message":"caf\u00e9: bad"}}'.encode()
    )
    with pytest.raises(LocalProtocolError) as caught:
        error_response_body(True, "m")  # type: ignore[arg-type]
    assert caught.value.message == "JSON-RPC error code must be an int, not True"
    with pytest.raises(LocalProtocolError) as caught:
        error_response_body(-1, "m", id=1.5)  # type: ignore[arg-type]
    assert caught.value.message == "JSON-RPC id must be a str or int, not 1.5"

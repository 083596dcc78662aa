"""The Streamable HTTP rules of 2025-06-18/basic/transports (mcp_ref._http), without I/O.

Each rule is tested with the status code it answers and the clause it cites.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mcp_ref
from mcp_ref._errors import INVALID_REQUEST, LocalProtocolError, RemoteProtocolError
from mcp_ref._http import (
    CONTENT_TYPE_JSON,
    CONTENT_TYPE_SSE,
    DEFAULT_PROTOCOL_VERSION,
    HTTP_SERVER_ERROR,
    LOCALHOST_HOSTS,
    LOCALHOST_ORIGINS,
    MAX_SESSION_ID_LENGTH,
    EventStore,
    HttpError,
    HttpLimits,
    MessageKind,
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
    http_error,
    make_event_id,
    message_event,
    new_session_id,
    parse_event_id,
    post_reply,
    resolve_endpoint,
    response_headers,
    validate_session_id,
)
from mcp_ref._sse import SSEDecoder, SSEEvent, encode_event
from tests._examples import examples

T = "2025-06-18/basic/transports"
SUPPORTED = ("2024-11-05", "2025-03-26", "2025-06-18")


def hdrs(**kw: str | list[str]) -> list[tuple[bytes, bytes]]:
    """Headers the way h11 gives them: lowercased names, bytes."""
    out = []
    for name, value in kw.items():
        for v in [value] if isinstance(value, str) else value:
            out.append((name.replace("_", "-").lower().encode(), v.encode("latin-1")))
    return out


def assert_error(err: object, status: int, clause: str | None = None) -> HttpError:
    assert isinstance(err, HttpError), err
    assert err.status == status, err
    if clause is not None:
        assert err.clause == clause
    headers = dict(err.headers)
    assert int(headers[b"content-length"]) == len(err.body)
    if err.body:
        assert headers[b"content-type"] == CONTENT_TYPE_JSON
        body = json.loads(err.body)
        assert body["jsonrpc"] == "2.0" and "id" not in body
        assert body["error"]["message"] == err.detail
    return err


# -- the core does no I/O --------------------------------------------------------------


def test_modules_import_no_io_libraries() -> None:
    code = (
        "import sys, mcp_ref._sse, mcp_ref._http\n"
        "bad = {'trio', 'socket', 'asyncio', 'h11', 'secrets', 'random'} & set(sys.modules)\n"
        "print(sorted(bad))\n"
    )
    root = Path(mcp_ref.__file__).parent.parent
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_the_http_server_core_imports_no_io_libraries() -> None:
    """The server's sans-IO modules (request routing, logical streams, session bounds)
    may use h11, which is sans-IO, and nothing that does I/O or makes random ids."""
    code = (
        "import sys, mcp_ref._http_server, mcp_ref._http_streams, mcp_ref._http_sessions\n"
        "bad = {'trio', 'socket', 'asyncio', 'secrets'} & set(sys.modules)\n"
        "print(sorted(bad))\n"
    )
    root = Path(mcp_ref.__file__).parent.parent
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


# -- errors ----------------------------------------------------------------------------


@pytest.mark.spec(f"{T}#sending-messages-to-the-server.7")
def test_error_body_has_no_id_unless_given() -> None:
    assert json.loads(error_response_body(-32600, "bad")) == {
        "jsonrpc": "2.0",
        "error": {"code": -32600, "message": "bad"},
    }
    assert json.loads(error_response_body(-32601, "x", id="7"))["id"] == "7"
    assert json.loads(error_response_body(-32601, "x", id=7))["id"] == 7
    with pytest.raises(LocalProtocolError):
        error_response_body(-32600, "x", id=True)
    with pytest.raises(LocalProtocolError):
        error_response_body("-32600", "x")  # type: ignore[arg-type]


def _spec_dir() -> Path | None:
    env = os.environ.get("MCP_SPEC_DIR")
    path = Path(env) if env else Path(__file__).resolve().parent / "vendor"  # tests/_spec.py
    return path if path.is_dir() else None


def _schema_validator(revision: str, name: str) -> Any:
    jsonschema = pytest.importorskip("jsonschema")
    spec = _spec_dir()
    if spec is None:
        pytest.skip("MCP spec not found: set $MCP_SPEC_DIR or place it at ../shared/spec")
    schema = json.loads((spec / "schema" / revision / "schema.json").read_text())
    defs_key = "$defs" if "$defs" in schema else "definitions"
    root = {**schema, "$ref": f"#/{defs_key}/{name}"}
    return jsonschema.validators.validator_for(schema)(root)


@pytest.mark.spec(f"{T}#sending-messages-to-the-server.7")
def test_error_bodies_validate_against_the_schema() -> None:
    with_id = _schema_validator("2025-06-18", "JSONRPCError")
    with_id.validate(json.loads(error_response_body(-32600, "bad", id=3)))
    # The id-less form the transport page allows is valid from 2025-11-25 on.
    without_id = _schema_validator("2025-11-25", "JSONRPCErrorResponse")
    without_id.validate(json.loads(http_error(400, "bad", clause=None).body))


def test_http_error_shape() -> None:
    err = assert_error(http_error(400, "nope", clause="c"), 400, "c")
    assert err.reason == b"Bad Request"
    assert json.loads(err.body)["error"]["code"] == INVALID_REQUEST
    err = assert_error(http_error(404, "gone", clause=None), 404)
    assert json.loads(err.body)["error"]["code"] == HTTP_SERVER_ERROR
    err = assert_error(http_error(405, "x", clause=None, body=False), 405)
    assert err.body == b""
    assert HttpError(status=599, detail="", clause=None, headers=()).reason == b""


# -- method ----------------------------------------------------------------------------


@pytest.mark.spec(f"{T}#streamable-http.1")
def test_post_and_get_are_served_other_methods_405() -> None:
    assert check_method(b"POST") is None
    assert check_method(b"GET") is None
    err = assert_error(check_method(b"PUT"), 405, f"{T}#streamable-http.1")
    assert dict(err.headers)[b"allow"] == b"POST, GET, DELETE"


@pytest.mark.spec(f"{T}#listening-for-messages-from-the-server.3")
def test_get_without_stream_is_405() -> None:
    err = assert_error(
        check_method(b"GET", allow_get=False), 405, f"{T}#listening-for-messages-from-the-server.3"
    )
    assert dict(err.headers)[b"allow"] == b"POST, DELETE"


@pytest.mark.spec(f"{T}#session-management.9")
def test_delete_may_be_refused_with_405() -> None:
    assert check_method(b"DELETE") is None
    err = assert_error(
        check_method(b"DELETE", allow_delete=False), 405, f"{T}#session-management.9"
    )
    assert dict(err.headers)[b"allow"] == b"POST, GET"


# -- Accept ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "accept",
    [
        "application/json, text/event-stream",
        "text/event-stream;q=0.5, APPLICATION/JSON; charset=utf-8",
        ["application/json", "text/event-stream"],
    ],
)
def test_post_accept_listing_both_passes(accept: str | list[str]) -> None:
    assert check_accept(hdrs(accept=accept), b"POST") is None


@pytest.mark.parametrize(
    "accept",
    [
        None,
        "application/json",
        "text/event-stream",
        "application/json, text/event-stream;q=0",
        "*/*",
        "application/*, text/*",
        "application/jsonx, text/event-streamy",
    ],
)
def test_post_accept_missing_a_type_is_406(accept: str | None) -> None:
    headers = hdrs(accept=accept) if accept is not None else []
    err = assert_error(check_accept(headers, b"POST"), 406, f"{T}#sending-messages-to-the-server.3")
    assert "application/json and text/event-stream" in err.detail


def test_wildcards_count_only_when_allowed() -> None:
    assert check_accept(hdrs(accept="*/*"), b"POST", allow_wildcards=True) is None
    assert check_accept(hdrs(accept="application/*, text/*"), b"POST", allow_wildcards=True) is None
    assert check_accept(hdrs(accept="*/*;q=0"), b"GET", allow_wildcards=True) is not None


def test_get_accept_needs_event_stream() -> None:
    assert check_accept(hdrs(accept="text/event-stream"), b"GET") is None
    assert_error(
        check_accept(hdrs(accept="application/json"), b"GET"),
        406,
        f"{T}#listening-for-messages-from-the-server.2",
    )
    assert_error(check_accept([], b"GET"), 406)


def test_delete_has_no_accept_rule() -> None:
    assert check_accept([], b"DELETE") is None


# -- content type and length -----------------------------------------------------------


@pytest.mark.spec(f"{T}#transports.1")
@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("application/json", True),
        ("Application/JSON; charset=UTF-8", True),
        ('application/json; charset="utf-8"', True),
        ("application/json; charset=latin-1", False),
        ("text/plain", False),
        ("application/json-seq", False),
        (None, False),
        (["application/json", "application/json"], False),
    ],
)
def test_post_body_must_be_utf8_json(value: str | list[str] | None, ok: bool) -> None:
    headers = hdrs(content_type=value) if value is not None else []
    err = check_content_type(headers)
    if ok:
        assert err is None
    else:
        assert isinstance(err, HttpError) and err.status in (400, 415)
        assert err.clause == f"{T}#transports.1"


def test_content_length_bound() -> None:
    assert check_content_length([], 10) is None
    assert check_content_length(hdrs(content_length="10"), 10) is None
    assert_error(check_content_length(hdrs(content_length="11"), 10), 413)
    assert_error(check_content_length(hdrs(content_length="9" * 40), 10), 413)
    assert_error(check_content_length(hdrs(content_length="-1"), 10), 400)


# -- Origin and Host -------------------------------------------------------------------


@pytest.mark.spec(f"{T}#security-warning.1")
@pytest.mark.parametrize(
    "origin",
    [
        "http://localhost",
        "http://localhost:6274",
        "https://LOCALHOST:443",
        "http://127.0.0.1:8000",
        "http://[::1]:3000",
        "HTTP://[::1]",
    ],
)
def test_localhost_origins_pass(origin: str) -> None:
    assert check_origin(hdrs(origin=origin), LOCALHOST_ORIGINS) is None


@pytest.mark.spec(f"{T}#security-warning.1")
@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        "http://localhost.evil.example",
        "http://evil.example:80",
        "http://127.0.0.1.nip.io:8000",
        "null",
        "ftp://localhost",
        "http://localhost:3000/path",
        "http://user@localhost",
        "localhost",
        "",
    ],
)
def test_other_origins_get_403(origin: str) -> None:
    assert_error(
        check_origin(hdrs(origin=origin), LOCALHOST_ORIGINS), 403, f"{T}#security-warning.1"
    )


@pytest.mark.spec(f"{T}#security-warning.1")
def test_origin_rules() -> None:
    assert check_origin([], LOCALHOST_ORIGINS) is None  # non-browser clients send none
    assert check_origin(hdrs(origin="https://app.example"), ["*"]) is None
    assert check_origin(hdrs(origin="https://app.example"), ["https://app.example"]) is None
    assert (
        check_origin(hdrs(origin="https://app.example:8443"), ["https://app.example"]) is not None
    )
    assert check_origin(hdrs(origin="null"), ["null"]) is None
    assert check_origin(hdrs(origin="null"), ["*"]) is None
    assert_error(
        check_origin(hdrs(origin=["http://localhost", "http://localhost"]), LOCALHOST_ORIGINS),
        403,
    )


@pytest.mark.spec(f"{T}#security-warning.1")
@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("localhost:8000", None),
        ("localhost", None),
        ("127.0.0.1:1", None),
        ("[::1]:3000", None),
        ("LocalHost:8000", None),
        ("evil.example:8000", 403),
        ("localhost.evil.example", 403),
        ("127.0.0.2:8000", 403),
        ("[::2]:3000", 403),
        ("localhost:8000:1", 403),
    ],
)
def test_host_check(host: str, status: int | None) -> None:
    err = check_host(hdrs(host=host), LOCALHOST_HOSTS)
    if status is None:
        assert err is None
    else:
        assert_error(err, status, f"{T}#security-warning.1")


def test_host_header_missing_or_repeated_is_400_unless_any() -> None:
    assert_error(check_host([], LOCALHOST_HOSTS), 400)
    assert_error(check_host(hdrs(host=["localhost", "localhost"]), LOCALHOST_HOSTS), 400)
    assert check_host([], ["*"]) is None
    assert check_host(hdrs(host="api.example:443"), ["api.example:443"]) is None
    assert check_host(hdrs(host="api.example:80"), ["api.example:443"]) is not None


# -- protocol version ------------------------------------------------------------------


@pytest.mark.spec(f"{T}#protocol-version-header.4")
def test_unsupported_version_header_is_400() -> None:
    assert check_protocol_version(hdrs(mcp_protocol_version="2025-06-18"), None, SUPPORTED) == (
        "2025-06-18"
    )
    for bad in ("1999-01-01", "", "2025-06-18 ", "latest"):
        assert_error(
            check_protocol_version(hdrs(mcp_protocol_version=bad), None, SUPPORTED),
            400,
            f"{T}#protocol-version-header.4",
        )
    assert_error(
        check_protocol_version(
            hdrs(mcp_protocol_version=["2025-06-18", "2025-06-18"]), None, SUPPORTED
        ),
        400,
    )


@pytest.mark.spec(f"{T}#protocol-version-header.3")
def test_absent_header_means_negotiated_else_2025_03_26() -> None:
    assert check_protocol_version([], "2025-06-18", SUPPORTED) == "2025-06-18"
    assert check_protocol_version([], None, SUPPORTED) == DEFAULT_PROTOCOL_VERSION == "2025-03-26"
    assert_error(
        check_protocol_version([], None, ("2025-06-18",)), 400, f"{T}#protocol-version-header.3"
    )


def test_header_differing_from_negotiated_is_400() -> None:
    assert (
        check_protocol_version(hdrs(mcp_protocol_version="2025-06-18"), "2025-06-18", SUPPORTED)
        == "2025-06-18"
    )
    assert_error(
        check_protocol_version(hdrs(mcp_protocol_version="2025-03-26"), "2025-06-18", SUPPORTED),
        400,
    )


# -- sessions --------------------------------------------------------------------------


@pytest.mark.spec(f"{T}#session-management.2", f"{T}#session-management.3")
@given(st.binary(min_size=16, max_size=64))
def test_new_session_ids_are_visible_ascii(random: bytes) -> None:
    sid = new_session_id(random)
    assert validate_session_id(sid)
    assert all(0x21 <= ord(c) <= 0x7E for c in sid)
    assert len(sid) == 2 * len(random)
    assert bytes.fromhex(sid) == random  # every random bit is kept (lowercase hex)


@pytest.mark.spec("2025-06-18/basic/security_best_practices#mitigation-2.3")
def test_new_session_id_wants_enough_randomness() -> None:
    assert new_session_id(bytes(range(16))) == bytes(range(16)).hex()
    for bad in (b"", b"x" * 15, b"x" * 513):
        with pytest.raises(LocalProtocolError):
            new_session_id(bad)


@pytest.mark.spec(f"{T}#session-management.3")
@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("abc", True),
        ("!~", True),
        (b"a-b_c.d", True),
        ("", False),
        ("a b", False),
        ("a\tb", False),
        ("a\x7fb", False),
        ("caf\u00e9", False),
        ("x" * MAX_SESSION_ID_LENGTH, True),
        ("x" * (MAX_SESSION_ID_LENGTH + 1), False),
    ],
)
def test_validate_session_id(value: str | bytes, ok: bool) -> None:
    assert validate_session_id(value) is ok


@pytest.mark.spec(f"{T}#session-management.3")
def test_get_session_id() -> None:
    assert get_session_id([]) is None
    assert get_session_id(hdrs(mcp_session_id="abc")) == "abc"
    assert_error(get_session_id(hdrs(mcp_session_id="a b")), 400, f"{T}#session-management.3")
    assert_error(get_session_id(hdrs(mcp_session_id=["a", "b"])), 400)


@pytest.mark.spec(f"{T}#session-management.5")
def test_missing_session_id_is_400() -> None:
    assert_error(
        check_session([], is_initialize=False, active_sessions={"s1"}),
        400,
        f"{T}#session-management.5",
    )


@pytest.mark.spec(f"{T}#session-management.6")
def test_unknown_or_terminated_session_is_404() -> None:
    assert_error(
        check_session(hdrs(mcp_session_id="gone"), is_initialize=False, active_sessions={"s1"}),
        404,
        f"{T}#session-management.6",
    )
    assert (
        check_session(hdrs(mcp_session_id="s1"), is_initialize=False, active_sessions={"s1"})
        == "s1"
    )


def test_initialize_goes_without_session_id() -> None:
    assert check_session([], is_initialize=True, active_sessions=set()) is None
    assert_error(
        check_session(hdrs(mcp_session_id="s1"), is_initialize=True, active_sessions={"s1"}),
        400,
        f"{T}#session-management.7",
    )


# -- POST answers and headers ----------------------------------------------------------


@pytest.mark.spec(f"{T}#sending-messages-to-the-server.5")
@pytest.mark.parametrize("kind", [MessageKind.NOTIFICATION, MessageKind.RESPONSE])
def test_notifications_and_responses_get_202_without_body(kind: MessageKind) -> None:
    for stream in (True, False):
        assert post_reply(kind, stream=stream) is PostReply.ACCEPTED
    assert response_headers(PostReply.ACCEPTED) == [(b"content-length", b"0")]


@pytest.mark.spec(f"{T}#sending-messages-to-the-server.8")
def test_requests_get_json_or_sse() -> None:
    assert post_reply(MessageKind.REQUEST, stream=False) is PostReply.JSON
    assert post_reply(MessageKind.REQUEST, stream=True) is PostReply.SSE
    assert dict(response_headers(PostReply.JSON, content_length=12)) == {
        b"content-type": CONTENT_TYPE_JSON,
        b"content-length": b"12",
    }
    assert dict(response_headers(PostReply.SSE))[b"content-type"] == CONTENT_TYPE_SSE
    with pytest.raises(LocalProtocolError):
        response_headers(PostReply.JSON)


@pytest.mark.spec(f"{T}#session-management.1")
def test_session_id_goes_in_mcp_session_id_header() -> None:
    headers = response_headers(PostReply.JSON, session_id="abc", content_length=2)
    assert (b"mcp-session-id", b"abc") in headers
    with pytest.raises(LocalProtocolError):
        response_headers(PostReply.SSE, session_id="a b")


@pytest.mark.spec(
    f"{T}#sending-messages-to-the-server.3",
    f"{T}#listening-for-messages-from-the-server.2",
    f"{T}#session-management.4",
    f"{T}#protocol-version-header.1",
)
def test_client_headers_pass_the_server_checks() -> None:
    post = client_request_headers(b"POST", session_id="s1", protocol_version="2025-06-18")
    assert check_accept(post, b"POST") is None
    assert check_content_type(post) is None
    assert check_session(post, is_initialize=False, active_sessions={"s1"}) == "s1"
    assert check_protocol_version(post, "2025-06-18", SUPPORTED) == "2025-06-18"
    assert (b"mcp-protocol-version", b"2025-06-18") in post
    get = client_request_headers(
        b"GET", session_id="s1", protocol_version="2025-06-18", last_event_id="get/4"
    )
    assert check_accept(get, b"GET") is None
    assert (b"last-event-id", b"get/4") in get
    first = client_request_headers(b"POST")
    assert [name for name, _ in first] == [b"accept", b"content-type"]
    assert client_request_headers(b"GET", last_event_id="") == [(b"accept", CONTENT_TYPE_SSE)]
    with pytest.raises(LocalProtocolError):
        client_request_headers(b"GET", last_event_id="a\r\nx: y")
    with pytest.raises(LocalProtocolError):
        client_request_headers(b"POST", session_id="bad id")


# -- event ids -------------------------------------------------------------------------

_stream_ids = st.text(
    st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=40
)


@given(_stream_ids, st.integers(min_value=0, max_value=10**19 - 1))
def test_event_id_round_trip(stream_id: str, seq: int) -> None:
    event_id = make_event_id(stream_id, seq)
    assert parse_event_id(event_id) == (stream_id, seq)
    assert parse_event_id(event_id.encode()) == (stream_id, seq)


@pytest.mark.parametrize(
    "bad",
    ["", "abc", "s/", "/1", "s/01", "s/-1", "s/+1", "s/1 ", " s/1", "s/1.0",
     "s/\u0661", "s/" + "9" * 20, "a b/1", "s\x00/1", "x" * 129 + "/1"],
)  # fmt: skip
def test_parse_event_id_errors(bad: str) -> None:
    with pytest.raises(RemoteProtocolError):
        parse_event_id(bad)


@pytest.mark.parametrize(("stream_id", "seq"), [("", 1), ("a b", 1), ("s", -1), ("s", True)])
def test_make_event_id_errors(stream_id: str, seq: int) -> None:
    with pytest.raises(LocalProtocolError):
        make_event_id(stream_id, seq)


# -- the event store -------------------------------------------------------------------


def replay(store: EventStore, last_event_id: str) -> list[tuple[str, str]]:
    result = store.replay_after(last_event_id)
    assert isinstance(result, Replay), result
    return list(result.events)


@pytest.mark.spec(f"{T}#resumability-and-redelivery.2")
def test_event_ids_are_unique_across_streams_even_reused_ones() -> None:
    store = EventStore(max_streams=2)
    ids = [store.append(s, "x") for s in ["a", "b", "a", "c", "a", "b", "a"]]
    assert len(set(ids)) == len(ids)


@pytest.mark.spec(f"{T}#resumability-and-redelivery.4", f"{T}#resumability-and-redelivery.5")
def test_replay_gives_only_that_streams_later_events_in_order() -> None:
    store = EventStore()
    a0 = store.append("post-1", "a0")
    store.append("get", "g0")
    a1 = store.append("post-1", "a1")
    store.append("get", "g1")
    a2 = store.append("post-1", "a2")
    result = store.replay_after(a0)
    assert result == Replay(stream_id="post-1", events=((a1, "a1"), (a2, "a2")))
    assert replay(store, a2) == []
    assert [d for _, d in replay(store, make_event_id("get", 1))] == ["g1"]


@pytest.mark.spec(f"{T}#resumability-and-redelivery.4")
def test_replay_refuses_what_it_cannot_honestly_resume() -> None:
    store = EventStore()
    store.append("a", "x")
    clause = f"{T}#resumability-and-redelivery.4"
    assert_error(store.replay_after("nope/0"), 409, clause)  # unknown stream
    assert_error(store.replay_after("a/5"), 409, clause)  # never sent
    assert_error(store.replay_after("a/x"), 400, f"{T}#resumability-and-redelivery.3")
    assert_error(store.replay_after(b"\xff/1"), 400)


def test_per_stream_eviction_oldest_first() -> None:
    store = EventStore(max_events_per_stream=3)
    ids = [store.append("s", str(i)) for i in range(5)]
    other = store.append("t", "t0")
    assert len(store) == 4
    # ids[0] and ids[1] are gone: resuming from ids[0] would skip ids[1].
    assert_error(store.replay_after(ids[0]), 409)
    # Resuming from the last evicted event is fine: everything after it is here.
    assert [d for _, d in replay(store, ids[1])] == ["2", "3", "4"]
    assert replay(store, other) == []


def test_reused_stream_id_does_not_half_answer_an_old_id() -> None:
    store = EventStore(max_streams=1)
    old = store.append("a", "a0")
    store.append("a", "a1")
    store.append("b", "b0")  # evicts stream a with a1
    fresh = store.append("a", "a2")
    assert_error(store.replay_after(old), 409)  # a1 was lost: never replay a2 alone
    assert replay(store, fresh) == []


def test_stream_eviction_least_recently_appended_first() -> None:
    store = EventStore(max_streams=2)
    a = store.append("a", "a0")
    b = store.append("b", "b0")
    store.append("a", "a1")  # a is now the more recent
    store.append("c", "c0")  # evicts b
    assert store.stream_ids == ["a", "c"]
    assert_error(store.replay_after(b), 409)
    assert [d for _, d in replay(store, a)] == ["a1"]


def test_total_bytes_eviction_across_streams() -> None:
    store = EventStore(max_total_bytes=10)
    a0 = store.append("a", "12345")
    b0 = store.append("b", "1234")
    store.append("a", "\u00e9\u00e9")  # 4 bytes in UTF-8: a0 must go
    assert store.total_bytes == 8
    # a0 itself is gone, but a client resuming from it has it and misses nothing held.
    assert [d for _, d in replay(store, a0)] == ["\u00e9\u00e9"]
    assert [d for _, d in replay(store, b0)] == []
    store.append("b", "123")  # 11 bytes: b0 goes, the oldest; nothing after it is lost
    assert [d for _, d in replay(store, b0)] == ["123"]
    store.append("b", "1234567")  # 14 bytes: the oldest, a1, goes; then it fits
    assert store.total_bytes == 10
    assert_error(store.replay_after(a0), 409)  # a1 is lost
    assert [d for _, d in replay(store, b0)] == ["123", "1234567"]
    store.append("b", "12345678")  # 18 bytes: b1, then b2 go
    assert_error(store.replay_after(b0), 409)
    assert len(store) == 1 and store.total_bytes == 8


def test_event_larger_than_the_budget_is_not_kept() -> None:
    store = EventStore(max_total_bytes=4)
    first = store.append("s", "ok")
    big = store.append("s", "too large")
    assert len(store) == 1 and store.total_bytes == 2
    assert_error(store.replay_after(first), 409)  # the big one would be missing
    assert replay(store, big) == []


def test_forget_stream() -> None:
    store = EventStore()
    a = store.append("a", "x")
    store.forget_stream("a")
    store.forget_stream("never")
    assert len(store) == 0 and store.total_bytes == 0
    assert_error(store.replay_after(a), 409)


def test_store_bounds_must_be_positive() -> None:
    with pytest.raises(ValueError):
        EventStore(max_streams=0)
    with pytest.raises(LocalProtocolError):
        EventStore().append("bad id", "x")


@given(
    st.lists(
        st.tuples(st.sampled_from("abcde"), st.text(max_size=12)),
        max_size=60,
    )
)
@settings(max_examples=examples(200))
def test_store_stays_within_bounds_and_replays_a_suffix(ops: list[tuple[str, str]]) -> None:
    store = EventStore(max_events_per_stream=4, max_streams=3, max_total_bytes=40)
    sent: dict[str, list[tuple[str, str]]] = {}
    for stream_id, data in ops:
        event_id = store.append(stream_id, data)
        sent.setdefault(stream_id, []).append((event_id, data))
        assert len(store) <= 12
        assert 0 <= store.total_bytes <= 40
        assert len(store.stream_ids) <= 3
    for events in sent.values():
        for i, (event_id, _) in enumerate(events):
            result = store.replay_after(event_id)
            if isinstance(result, Replay):
                # A replay is always exactly what was sent after that event.
                assert list(result.events) == events[i + 1 :]
            else:
                assert result.status == 409
    # A stream still held answers a resume from its latest event: nothing was missed.
    for stream_id in store.stream_ids:
        latest = store.replay_after(sent[stream_id][-1][0])
        assert isinstance(latest, Replay) and list(latest.events) == []


# -- SSE stream for a session: store, encode, decode, resume ---------------------------


@pytest.mark.spec(f"{T}#resumability-and-redelivery.1", f"{T}#resumability-and-redelivery.3")
def test_resume_from_decoder_last_event_id() -> None:
    store = EventStore()
    wire = b"".join(
        encode_event(message_event(f'{{"n":{i}}}', event_id=store.append("get", f'{{"n":{i}}}')))
        for i in range(5)
    )
    dec = SSEDecoder()
    dec.receive_data(wire[: len(wire) // 2])  # the connection breaks half-way
    seen = []
    while isinstance(ev := dec.next_event(), SSEEvent):
        seen.append(ev.data)
    headers = client_request_headers(b"GET", last_event_id=dec.last_event_id)
    last = dict(headers)[b"last-event-id"]
    missed = [data for _, data in replay(store, last.decode())]
    assert seen + missed == [f'{{"n":{i}}}' for i in range(5)]


# -- 2024-11-05 HTTP+SSE ---------------------------------------------------------------


def test_endpoint_event() -> None:
    ev = endpoint_event("/messages?session_id=abc")
    assert ev == SSEEvent(event="endpoint", data="/messages?session_id=abc")
    assert encode_event(ev) == b"event: endpoint\ndata: /messages?session_id=abc\n\n"
    for bad in ("", "/a b", "/a\nb"):
        with pytest.raises(LocalProtocolError):
            endpoint_event(bad)


def test_resolve_endpoint() -> None:
    base = "http://127.0.0.1:8000/sse"
    assert resolve_endpoint(endpoint_event("/messages?s=1"), base) == (
        "http://127.0.0.1:8000/messages?s=1"
    )
    assert resolve_endpoint(endpoint_event("http://127.0.0.1:8000/m"), base) == (
        "http://127.0.0.1:8000/m"
    )
    with pytest.raises(RemoteProtocolError):
        resolve_endpoint(endpoint_event("http://evil.example/m"), base)
    with pytest.raises(RemoteProtocolError):
        resolve_endpoint(endpoint_event("//evil.example/m"), base)
    with pytest.raises(RemoteProtocolError):
        resolve_endpoint(message_event("/m"), base)


def test_message_event() -> None:
    assert message_event("{}", event_id="s/1") == SSEEvent(event="message", data="{}", id="s/1")


# -- limits ----------------------------------------------------------------------------


def test_limits_defaults_and_validation() -> None:
    limits = HttpLimits()
    assert limits.max_body_bytes == 4 * 1024 * 1024
    assert limits.session_idle_seconds == 3600.0
    assert HttpLimits(max_sessions=5).max_sessions == 5
    for bad in (0, -1, True):
        with pytest.raises(ValueError):
            HttpLimits(max_sessions=bad)


# -- issue 13: each clause's tests kill the mutants of its lines ------------------------

_RESPONSES_4 = "2025-06-18/basic#responses.4"


def _error_body(err: object, status: int) -> dict[str, Any]:
    """The refusal's JSON-RPC error body, checked: an integer code and a string message
    (2025-06-18/basic#responses.4), the same text as ``detail``."""
    assert isinstance(err, HttpError) and err.status == status
    body: dict[str, Any] = json.loads(err.body)
    assert type(body["error"]["code"]) is int
    assert type(body["error"]["message"]) is str and body["error"]["message"] == err.detail
    return body


@pytest.mark.spec(f"{T}#transports.1", _RESPONSES_4)
def test_messages_are_utf8_both_ways() -> None:
    """Non-ASCII text travels as UTF-8 and is read back as UTF-8; bytes that are not
    UTF-8 are a parse error (-32700); a POST declaring another charset is a 415 whose
    body is a well-formed error."""
    from mcp_ref import CLIENT, SERVER, Connection, Request
    from mcp_ref import types as t

    client, server = Connection(CLIENT), Connection(SERVER)
    params = t.InitializeRequestParams(
        protocol_version="2025-06-18",
        capabilities=t.ClientCapabilities(),
        client_info=t.Implementation(name="clïent ✓", version="1"),
    )
    data = client.send(Request(id=1, method="initialize", params=params))
    assert "clïent ✓".encode() in data
    server.receive_data(data)
    req = server.next_event()
    assert isinstance(req, Request) and req.params.client_info.name == "clïent ✓"
    server.receive_data('{"jsonrpc":"2.0","method":"x\u00e9"}\n'.encode("latin-1"))
    with pytest.raises(RemoteProtocolError) as exc:
        server.next_event()
    assert exc.value.code == -32700
    err = check_content_type(hdrs(content_type="application/json; charset=latin-1"))
    _error_body(err, 415)


@pytest.mark.spec(f"{T}#session-management.3")
def test_a_one_character_session_id_is_well_formed() -> None:
    assert validate_session_id("a") and validate_session_id(b"~")
    assert not validate_session_id("") and not validate_session_id(b"")


@pytest.mark.spec(f"{T}#session-management.6", f"{T}#session-management.7", _RESPONSES_4)
def test_session_refusals_have_well_formed_error_bodies() -> None:
    """404 for an unknown session and 400 for an initialize carrying a session id,
    each with a JSON-RPC error body (integer code, string message)."""
    err = check_session(hdrs(mcp_session_id="gone"), is_initialize=False, active_sessions=set())
    _error_body(err, 404)
    assert isinstance(err, HttpError) and err.clause == f"{T}#session-management.6"
    err = check_session(hdrs(mcp_session_id="s1"), is_initialize=True, active_sessions={"s1"})
    _error_body(err, 400)
    assert isinstance(err, HttpError) and err.clause == f"{T}#session-management.7"


@pytest.mark.spec(f"{T}#sending-messages-to-the-server.6", _RESPONSES_4)
def test_a_refused_post_body_is_a_400_naming_its_rule() -> None:
    """A body that is not an acceptable message is refused with 400, the clause of the
    body rule, and a well-formed error body (with the request's id when it has one)."""
    from mcp_ref._http_messages import read_post_body

    for body, rid in ((b'{"jsonrpc":"2.0","id":1}', 1), (b'{"jsonrpc":"2.0"}', None)):
        err = read_post_body(body)
        out = _error_body(err, 400)
        assert isinstance(err, HttpError)
        assert err.clause == f"{T}#sending-messages-to-the-server.4"
        assert out.get("id") == rid and out["error"]["code"] == INVALID_REQUEST


@pytest.mark.spec(
    f"{T}#sending-messages-to-the-server.3", f"{T}#listening-for-messages-from-the-server.2"
)
def test_a_missing_accept_type_is_a_406_naming_its_rule() -> None:
    """A POST not listing both types, or a GET not listing text/event-stream, is refused
    with 406 naming the clause it breaks (the POST rule or the GET rule)."""
    post = check_accept(hdrs(accept="application/json"), b"POST")
    assert isinstance(post, HttpError) and post.status == 406
    assert post.clause == f"{T}#sending-messages-to-the-server.3"
    get = check_accept(hdrs(accept="application/json"), b"GET")
    assert isinstance(get, HttpError) and get.status == 406
    assert get.clause == f"{T}#listening-for-messages-from-the-server.2"

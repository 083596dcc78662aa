"""Modern-era (2026-07-28) POSTs to the Streamable HTTP endpoint, without sockets:
how one is told from a handshake-era POST (mcp_ref._http_modern.read_modern), what is
refused before any session (check_modern), the statuses of the answers
(answer_status, ResponseHeads.json_answer, SseAnswer), and a modern client's GET and
DELETE (route_request)."""

from __future__ import annotations

import json
from typing import Any

import attrs
import h11
import pytest

from mcp_ref._http import HttpError, HttpLimits, MessageKind
from mcp_ref._http_answers import ResponseHeads, SseAnswer
from mcp_ref._http_messages import MessageInfo
from mcp_ref._http_modern import (
    Modern,
    answer_status,
    check_modern,
    check_param_headers,
    mirrored_params,
    read_modern,
)
from mcp_ref._http_post import Post, read_post
from mcp_ref._http_server import RequestHeaders, request_headers, route_request
from mcp_ref._http_streams import LogicalStream, SessionStreams

from ._http_core import CFG

H = "2026-07-28/basic/transports/streamable-http#"
STATELESS = attrs.evolve(CFG, stateless=True, enable_get_stream=False, legacy_sse=False)
V = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": V,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def body(method: str = "tools/list", rid: int | None = 1, **params: Any) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": {**params, "_meta": META}}
    if rid is not None:
        msg["id"] = rid
    return json.dumps(msg).encode()


def headers(method: bytes = b"POST", **values: str) -> RequestHeaders:
    items = [(b"host", b"localhost:1")]
    items += [(k.replace("_", "-").encode(), v.encode()) for k, v in values.items()]
    return request_headers(h11.Request(method=method, target="/mcp", headers=items), {})


def mirrored(method: str = "tools/list", **more: str) -> dict[str, str]:
    return {"mcp_protocol_version": V, "mcp_method": method, **more}


def refused(data: bytes, **values: str) -> HttpError:
    got = read_post(CFG, headers(**values), data)
    assert isinstance(got, HttpError), got
    return got


def error_of(err: HttpError) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(err.body)
    return parsed


def test_a_modern_post_is_told_by_its_header_or_its_meta() -> None:
    legacy = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
    assert read_modern(headers(mcp_protocol_version="2025-11-25"), legacy) is None
    assert read_modern(headers(), legacy) is None
    assert read_modern(headers(mcp_protocol_version=V), legacy) == Modern(json.loads(legacy))
    assert read_modern(headers(), body()) is not None
    # The key elsewhere than params._meta does not count.
    other = {"jsonrpc": "2.0", "id": 1, "method": "x", "params": {META_KEY: V}}
    assert read_modern(headers(), json.dumps(other).encode()) is None


META_KEY = "io.modelcontextprotocol/protocolVersion"


@pytest.mark.parametrize("cfg", [CFG, STATELESS])
def test_a_modern_post_opens_a_session_of_its_own_without_preamble(cfg: Any) -> None:
    got = read_post(cfg, headers(**mirrored()), body(rid=7))
    assert isinstance(got, Post)
    assert got.modern and got.new_session and not got.initialize
    assert got.preamble == []
    assert [m.id for m in got.requests] == [7]
    # Its session ends once answered; a stateful server parks it for the next POST.
    assert got.session_kind == "stateless" and got.parks == (not cfg.stateless)


def test_a_handshake_post_is_read_as_before() -> None:
    legacy = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
    got = read_post(STATELESS, headers(mcp_protocol_version="2025-11-25"), legacy)
    assert isinstance(got, Post)
    assert not got.modern and len(got.preamble) == 2
    assert got.session_kind == "stateless" and not got.parks
    # A stateful server sends it to the session its Mcp-Session-Id names.
    got = read_post(CFG, headers(mcp_protocol_version="2025-11-25"), legacy)
    assert isinstance(got, Post) and not got.new_session and not got.modern
    init = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}'
    opened = read_post(CFG, headers(), init)
    assert isinstance(opened, Post) and opened.session_kind == "streamable"


@pytest.mark.spec(
    H + "protocol-version-header.3", H + "server-validation.1", H + "server-validation.3"
)
@pytest.mark.parametrize(
    ("values", "data"),
    [
        (mirrored(mcp_protocol_version="2025-11-25"), body()),  # version header differs
        ({"mcp_protocol_version": V}, body()),  # Mcp-Method missing
        (mirrored("tools/call"), body()),  # Mcp-Method differs
        (mirrored("tools/call"), body("tools/call", name="echo")),  # Mcp-Name missing
        (mirrored("tools/call", mcp_name="other"), body("tools/call", name="echo")),
    ],
)
def test_a_header_that_disagrees_with_the_body_is_400_header_mismatch(
    values: dict[str, str], data: bytes
) -> None:
    err = refused(data, **values)
    assert err.status == 400
    assert error_of(err)["error"]["code"] == -32020 and error_of(err)["id"] == 1


def test_agreeing_headers_pass_with_a_base64_name() -> None:
    name = "=?base64?ZWNobw==?="  # "echo"
    got = read_post(
        CFG, headers(**mirrored("tools/call", mcp_name=name)), body("tools/call", name="echo")
    )
    assert isinstance(got, Post) and got.modern


@pytest.mark.spec("2026-07-28/basic/index#_meta.3", "2026-07-28/basic/index#_meta.4")
@pytest.mark.parametrize(
    "params", [{}, {"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}]
)
def test_a_request_whose_meta_lacks_the_version_is_400_invalid_params(params: Any) -> None:
    data = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "server/discover", "params": params})
    err = refused(data.encode(), **mirrored("server/discover"))
    assert err.status == 400
    assert error_of(err)["error"]["code"] == -32602 and error_of(err)["id"] == 5


@pytest.mark.spec(H + "protocol-version-header.5")
@pytest.mark.parametrize(
    "method",
    [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "x/y",
    ],
)
def test_a_method_the_version_does_not_define_is_404_method_not_found(method: str) -> None:
    err = refused(body(method, rid=9), **mirrored(method))
    assert err.status == 404
    assert error_of(err)["error"]["code"] == -32601 and error_of(err)["id"] == 9


@pytest.mark.spec(H + "sending-messages.5", H + "sending-messages.6")
def test_a_batch_or_a_response_is_400() -> None:
    batch = b"[" + body(rid=1) + b"," + body(rid=2) + b"]"
    assert refused(batch, **mirrored()).status == 400
    response = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    assert refused(response, **mirrored()).status == 400


def test_a_notification_passes_without_header_rules() -> None:
    note = body("notifications/cancelled", rid=None, requestId=1)
    got = read_post(CFG, headers(mcp_protocol_version=V), note)
    assert isinstance(got, Post) and got.modern and got.requests == []
    assert check_modern(headers(mcp_protocol_version=V), Modern(json.loads(note))) is None


@pytest.mark.spec(
    "2026-07-28/basic/index#_meta.4",
    "2026-07-28/basic/index#_meta.8",
    H + "protocol-version-header.4",
    H + "protocol-version-header.5",
)
@pytest.mark.parametrize(
    ("code", "status"),
    [(-32602, 400), (-32020, 400), (-32021, 400), (-32022, 400), (-32601, 404), (-32603, 200)],
)
def test_the_status_of_a_modern_answer_is_its_errors(code: int, status: int) -> None:
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": "m"}}
    data = json.dumps(error, separators=(",", ":")).encode()
    assert answer_status(data) == status
    head = ResponseHeads().json_answer(None, data, False, modern=True)[0]
    assert head.status_code == status
    # A handshake-era answer stays 200.
    assert ResponseHeads().json_answer(None, data, False)[0].status_code == 200
    assert answer_status(b'{"jsonrpc":"2.0","id":1,"result":{"error":1}}') == 200


def _stream(streams: SessionStreams) -> LogicalStream:
    request = MessageInfo(kind=MessageKind.REQUEST, id=1, method="tools/call")
    got = streams.open_post([request], json_mode=False, is_init=False)
    assert isinstance(got, LogicalStream)
    return got


HEAD = h11.Response(status_code=200, headers=[(b"content-type", b"text/event-stream")])


@pytest.mark.spec("2026-07-28/basic/index#_meta.8")
def test_an_sse_answer_holding_only_an_error_goes_as_json_with_its_status() -> None:
    streams = SessionStreams("stateless", HttpLimits())
    stream = _stream(streams)
    sse = SseAnswer(streams, stream, HEAD, cursor=None, retry_ms=1000, post=True, modern=True)
    error = b'{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"needs sampling"}}'
    streams.route(error, None)
    assert sse.step(15.0, 0.1) is None and sse.end == "answered"
    events = sse.events(end=True)
    assert events[0].status_code == 400
    assert (b"content-type", b"application/json") in events[0].headers
    assert events[1].data == error and isinstance(events[-1], h11.EndOfMessage)


def test_an_sse_answer_with_a_result_or_after_its_head_stays_sse() -> None:
    streams = SessionStreams("stateless", HttpLimits())
    sse = SseAnswer(
        streams, _stream(streams), HEAD, cursor=None, retry_ms=1000, post=True, modern=True
    )
    streams.route(b'{"jsonrpc":"2.0","id":1,"result":{}}', None)
    assert sse.step(15.0, 0.1) is None
    assert sse.events(end=True)[0] is HEAD
    # A head already written: the error goes as an event.
    streams = SessionStreams("stateless", HttpLimits())
    sse = SseAnswer(
        streams, _stream(streams), HEAD, cursor=None, retry_ms=1000, post=True, modern=True
    )
    assert sse.step(15.0, 0.1) == 15.0
    sse.waited("timeout")
    sse.step(15.0, 0.1)
    assert sse.events() == [HEAD]
    streams.route(b'{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"m"}}', None)
    assert sse.step(15.0, 0.1) is None
    assert b"-32601" in sse.events(end=True)[0].data


@pytest.mark.spec(H + "earlier-streamable-http-revisions.1")
@pytest.mark.parametrize("method", [b"GET", b"DELETE"])
def test_a_modern_clients_get_or_delete_is_405(method: bytes) -> None:
    got = route_request(
        CFG, method, b"/mcp", headers(method, mcp_protocol_version=V, accept="text/event-stream")
    )
    assert isinstance(got, HttpError) and got.status == 405
    assert (b"allow", b"POST") in got.headers
    # A handshake-era client's GET still opens the stream.
    old = headers(method, mcp_protocol_version="2025-11-25", accept="text/event-stream")
    assert not isinstance(route_request(CFG, method, b"/mcp", old), HttpError)


@pytest.mark.spec("2026-07-28/basic/transports/streamable-http#receiving-messages.1")
def test_a_listen_is_answered_with_sse_whatever_json_response_says() -> None:
    listen = read_post(
        CFG, headers(**mirrored("subscriptions/listen")), body("subscriptions/listen")
    )
    assert isinstance(listen, Post)
    assert not listen.json_mode(True) and not listen.json_mode(False)
    other = read_post(CFG, headers(**mirrored()), body())
    assert isinstance(other, Post) and other.json_mode(True) and not other.json_mode(False)


@pytest.mark.spec(
    "2026-07-28/basic/transports/streamable-http#cancellation.1",
    "2026-07-28/basic/transports/streamable-http#cancellation.2",
    "2026-07-28/basic/patterns/cancellation#transport-specific-cancellation.1",
)
def test_a_modern_posts_session_is_cancelled_once_it_is_done() -> None:
    got = read_post(CFG, headers(**mirrored()), body())
    assert isinstance(got, Post) and got.cancel_when_done
    note = read_post(CFG, headers(mcp_protocol_version=V), body("notifications/x", rid=None))
    assert isinstance(note, Post) and not note.cancel_when_done
    legacy = read_post(STATELESS, headers(), b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}')
    assert isinstance(legacy, Post) and not legacy.cancel_when_done


SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "dry": {"type": "boolean", "x-mcp-header": "Dry"},
        "where": {
            "type": "object",
            "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}},
        },
        "bad": {"type": "string", "x-mcp-header": "not a token"},
        "query": {"type": "string"},
    },
}


@pytest.mark.spec(H + "schema-extension.8")
def test_mirrored_params_follow_chains_of_properties_only() -> None:
    assert mirrored_params(SCHEMA) == [
        (("region",), "Region"),
        (("count",), "Count"),
        (("dry",), "Dry"),
        (("where", "zone"), "Zone"),
    ]
    assert mirrored_params({"items": {"properties": {"a": {"x-mcp-header": "A"}}}}) == []
    inner = {"properties": {"b": {"type": "string", "x-mcp-header": "B"}}}
    for keyword in ("oneOf", "anyOf", "allOf"):
        assert mirrored_params({"properties": {"a": {keyword: [inner]}}}) == []
    for keyword in ("not", "if", "then", "else", "items"):
        assert mirrored_params({"properties": {"a": {keyword: inner}}}) == []
    assert (
        mirrored_params({"properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": {"x": inner}}) == []
    )


def call(**arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 4,
        "method": "tools/call",
        "params": {"name": "sql", "arguments": arguments, "_meta": META},
    }


def schema_of(name: str) -> Any:
    return SCHEMA if name == "sql" else None


@pytest.mark.spec(
    H + "server-behavior-for-custom-headers.2",
    H + "server-behavior-for-custom-headers.3",
    H + "value-encoding.6",
    H + "server-validation.2",
)
@pytest.mark.parametrize(
    ("values", "arguments", "ok"),
    [
        ({"mcp_param_region": "us-west1"}, {"region": "us-west1"}, True),
        ({"mcp_param_region": "=?base64?SGVsbG8=?="}, {"region": "Hello"}, True),
        ({"mcp_param_region": "=?base64?SGVsbG8?="}, {"region": "Hello"}, False),  # padding
        ({"mcp_param_region": "=?base64?SGVs!!!bG8=?="}, {"region": "Hello"}, False),
        ({"mcp_param_region": "=?base64?SGVsbG8="}, {"region": "=?base64?SGVsbG8="}, True),
        ({}, {"region": "us-west1"}, False),  # the value is in the body, the header is not
        ({"mcp_param_region": "eu"}, {"region": "us"}, False),
        ({}, {"region": None, "query": "q"}, True),  # null: no header expected
        ({"mcp_param_count": "42.0"}, {"count": 42}, True),
        ({"mcp_param_count": "41"}, {"count": 42}, False),
        ({"mcp_param_dry": "true"}, {"dry": True}, True),
        ({"mcp_param_dry": "True"}, {"dry": True}, False),
        ({"mcp_param_zone": "b"}, {"where": {"zone": "b"}}, True),
        ({}, {"where": {"zone": "b"}}, False),
    ],
)
def test_param_headers_must_agree_with_the_arguments(
    values: dict[str, str], arguments: dict[str, Any], ok: bool
) -> None:
    got = check_param_headers(headers(**values), call(**arguments), schema_of)
    assert (got is None) == ok, got
    if not ok:
        assert got is not None and got.code == -32020 and got.id == 4


@pytest.mark.spec("2026-07-28/server/tools#x-mcp-header.6")
@pytest.mark.parametrize("count", [2**53, -(2**53), 2**60])
def test_a_mirrored_integer_outside_the_safe_range_is_invalid_params(count: int) -> None:
    got = check_param_headers(headers(mcp_param_count=str(count)), call(count=count), schema_of)
    assert got is not None and got.code == -32602 and got.id == 4
    safe = 2**53 - 1
    assert (
        check_param_headers(headers(mcp_param_count=str(safe)), call(count=safe), schema_of) is None
    )


def test_a_non_ascii_param_header_is_refused() -> None:
    hdrs = request_headers(
        h11.Request(
            method="POST",
            target="/mcp",
            headers=[
                (b"host", b"localhost:1"),
                (b"mcp-param-region", "r\u00e9gion".encode("latin-1")),
            ],
        ),
        {},
    )
    got = check_param_headers(hdrs, call(region="r\u00e9gion"), schema_of)
    assert got is not None and got.code == -32020


@pytest.mark.spec(H + "server-behavior-for-custom-headers.4")
def test_a_post_whose_param_header_disagrees_is_400_header_mismatch() -> None:
    class Handler:
        def tool_input_schema(self, name: str) -> Any:
            return schema_of(name)

    data = json.dumps(call(region="us")).encode()
    hdrs = headers(**mirrored("tools/call", mcp_name="sql"), mcp_param_region="eu")
    err = read_post(CFG, hdrs, data, Handler())
    assert isinstance(err, HttpError) and err.status == 400
    assert error_of(err)["error"]["code"] == -32020 and error_of(err)["id"] == 4
    # A handler that does not tell its tools' schemas: nothing to check.
    assert isinstance(read_post(CFG, hdrs, data, object()), Post)


@pytest.mark.spec(H + "receiving-messages.5")
@pytest.mark.parametrize("post", [True, False])
def test_an_sse_answer_asks_proxies_not_to_buffer(post: bool) -> None:
    head = ResponseHeads().sse(None, False, post=post)
    assert (b"x-accel-buffering", b"no") in head.headers


def test_a_modern_sse_heads_waits_for_the_first_message_up_to_a_keepalive_time() -> None:
    # A handler that refuses after some work (-32021) still gets its 400.
    streams = SessionStreams("stateless", HttpLimits())
    sse = SseAnswer(
        streams, _stream(streams), HEAD, cursor=None, retry_ms=1000, post=True, modern=True
    )
    assert sse.step(15.0, 0.1) == 15.0 and not sse.ready
    sse.waited("changed")  # (news of another kind)
    streams.route(b'{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"m"}}', None)
    assert sse.step(15.0, 0.1) is None
    assert sse.events(end=True)[0].status_code == 400
    # Silence for that long: the head goes, then keepalives.
    streams = SessionStreams("stateless", HttpLimits())
    sse = SseAnswer(
        streams, _stream(streams), HEAD, cursor=None, retry_ms=1000, post=True, modern=True
    )
    assert sse.step(15.0, 0.1) == 15.0
    sse.waited("timeout")
    assert sse.ready and sse.events() == [HEAD]


@pytest.mark.spec(H + "sending-messages.7")
def test_a_modern_notification_is_accepted_without_a_session() -> None:
    note = read_post(
        CFG, headers(mcp_protocol_version=V), body("notifications/cancelled", rid=None)
    )
    assert isinstance(note, Post) and note.accepted_alone
    request = read_post(CFG, headers(**mirrored()), body())
    assert isinstance(request, Post) and not request.accepted_alone
    legacy = read_post(CFG, headers(), b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    assert isinstance(legacy, Post) and not legacy.accepted_alone


@pytest.mark.spec(H + "sending-messages.8")
@pytest.mark.parametrize(
    "note",
    [
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":[1]}',
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}',
        b'{"method":"notifications/cancelled","params":{"requestId":1}}',
    ],
    ids=["array-params", "cut", "no-jsonrpc"],
)
def test_a_modern_notification_the_server_cannot_accept_is_an_http_error(note: bytes) -> None:
    err = refused(note, mcp_protocol_version=V)
    assert err.status == 400
    assert "id" not in error_of(err)  # a notification has no id to answer


@pytest.mark.spec(H + "streamable-http.1")
def test_one_endpoint_path_takes_a_modern_post() -> None:
    accept = "application/json, text/event-stream"
    post = headers(mcp_protocol_version=V, accept=accept, content_type="application/json")
    got = route_request(CFG, b"POST", b"/mcp", post)
    assert not isinstance(got, HttpError) and got[0].name == "POST"
    items = [(b"host", b"localhost:1"), (b"mcp-protocol-version", V.encode())]
    items.append((b"accept", accept.encode()))
    other = request_headers(h11.Request(method=b"POST", target="/other", headers=items), {})
    elsewhere = route_request(CFG, b"POST", b"/other", other)
    assert isinstance(elsewhere, HttpError) and elsewhere.status == 404
    # The same path is the handshake era's GET stream too (one endpoint for both eras).
    stream = route_request(CFG, b"GET", b"/mcp", headers(accept="text/event-stream"))
    assert not isinstance(stream, HttpError) and stream[0].name == "GET"

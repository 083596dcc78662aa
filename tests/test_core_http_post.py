"""What one POST to the Streamable HTTP endpoint means (mcp_ref._http_post.read_post)
and how a session takes it (mcp_ref._http_streams.SessionStreams.accept_post), without
sockets: 202 or a stream, a new session or a named one, the stateless preamble, the
batch rules, and refusals carrying the id of the body's one request.

Source: 2025-06-18/basic/transports#sending-messages-to-the-server,
#session-management, #protocol-version-header; 2025-03-26/basic/transports (batches).
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import h11
import pytest

from mcp_ref._http import HttpError, HttpLimits, http_error
from mcp_ref._http_post import STATELESS_INIT_ID, Post, read_post
from mcp_ref._http_server import RequestHeaders, request_headers
from mcp_ref._http_streams import LogicalStream, SessionStreams

from ._http_core import CFG

T = "2025-06-18/basic/transports#"
STATELESS = attrs.evolve(CFG, stateless=True, enable_get_stream=False, legacy_sse=False)
INIT = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}'
PING = b'{"jsonrpc":"2.0","id":%d,"method":"ping"}'
NOTE = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


def headers(**values: str) -> RequestHeaders:
    items = [(b"host", b"localhost:1")]
    items += [(k.replace("_", "-").encode(), v.encode()) for k, v in values.items()]
    return request_headers(h11.Request(method="POST", target="/mcp", headers=items), {})


def read(body: bytes, cfg: Any = CFG, **values: str) -> Post:
    got = read_post(cfg, headers(**values), body)
    assert isinstance(got, Post), got
    return got


def refused(body: bytes, cfg: Any = CFG, **values: str) -> HttpError:
    got = read_post(cfg, headers(**values), body)
    assert isinstance(got, HttpError), got
    return got


@pytest.mark.spec(T + "sending-messages-to-the-server.5", T + "sending-messages-to-the-server.8")
def test_notifications_and_responses_ask_for_202_requests_for_a_stream() -> None:
    note = read(NOTE, mcp_session_id="s")
    assert not note.requests and not note.new_session and not note.batch
    ping = read(PING % 1, mcp_session_id="s")
    assert [m.id for m in ping.requests] == [1] and not ping.initialize


@pytest.mark.spec(T + "session-management.7")
def test_initialize_opens_a_session_and_must_come_alone_and_without_a_session_id() -> None:
    init = read(INIT)
    assert init.initialize and init.new_session and not init.preamble
    with_id = refused(INIT, mcp_session_id="s")
    assert with_id.status == 400 and with_id.clause == T + "session-management.7"
    # The refusal carries initialize's id: the client's call gets its answer.
    assert json.loads(with_id.body)["id"] == 0
    batch = refused(b"[" + INIT + b"," + NOTE + b"]")
    assert batch.status == 400 and batch.clause == "2025-06-18/basic/lifecycle#initialization.1"


@pytest.mark.spec(T + "sending-messages-to-the-server.4")
def test_a_body_that_is_not_a_message_is_refused_before_anything_else() -> None:
    got = refused(b"{", mcp_session_id="s")
    assert got.status == 400 and json.loads(got.body)["error"]["code"] == -32700


def test_a_stateless_post_opens_a_session_brought_to_operating_first() -> None:
    ping = read(PING % 1, STATELESS, mcp_protocol_version="2025-06-18")
    assert ping.new_session and not ping.initialize
    init, initialized = (json.loads(m) for m in ping.preamble)
    assert init["id"] == STATELESS_INIT_ID and init["params"]["protocolVersion"] == "2025-06-18"
    assert initialized["method"] == "notifications/initialized"
    # Initialize itself needs no preamble.
    assert read(INIT, STATELESS).preamble == []


@pytest.mark.spec(T + "protocol-version-header.4")
def test_a_stateless_post_with_a_bad_version_is_400_with_the_request_id() -> None:
    got = refused(PING % 7, STATELESS, mcp_protocol_version="1999-01-01")
    assert got.status == 400 and json.loads(got.body)["id"] == 7


def test_a_stateless_batch_outside_2025_03_26_is_refused_whole() -> None:
    body = b"[" + PING % 1 + b"," + PING % 2 + b"]"
    assert read(body, STATELESS, mcp_protocol_version="2025-03-26").batch
    got = refused(body, STATELESS, mcp_protocol_version="2025-06-18")
    # Two requests: no one id to carry.
    assert got.status == 400 and "id" not in json.loads(got.body)


def test_a_refusal_carries_the_id_of_the_one_request_only() -> None:
    err = http_error(404, "gone", clause=None)
    one = read(b"[" + PING % 3 + b"," + NOTE + b"]", mcp_session_id="s")
    assert json.loads(one.refusal(err).body)["id"] == 3
    two = read(b"[" + PING % 3 + b"," + PING % 4 + b"]", mcp_session_id="s")
    assert two.refusal(err) is err


# -- the session takes the POST ----------------------------------------------------------


def test_a_session_takes_a_post_as_a_stream_or_none_for_202() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    assert streams.accept_post(read(NOTE), json_mode=True, max_requests_in_flight=None) is None
    stream = streams.accept_post(read(PING % 1), json_mode=True, max_requests_in_flight=None)
    assert isinstance(stream, LogicalStream) and stream.json_mode and not stream.batch
    again = streams.accept_post(read(PING % 1), json_mode=True, max_requests_in_flight=None)
    assert isinstance(again, HttpError) and again.status == 400  # id still being handled


def test_a_batch_the_sessions_connection_would_refuse_is_refused_before_its_stream() -> None:
    body = b"[" + PING % 1 + b"," + PING % 2 + b"," + PING % 3 + b"]"
    streams = SessionStreams("streamable", HttpLimits())
    streams.protocol_version = "2025-03-26"
    too_big = streams.accept_post(read(body), json_mode=True, max_requests_in_flight=2)
    assert isinstance(too_big, HttpError) and too_big.status == 400 and not streams.routes
    stream = streams.accept_post(read(body), json_mode=True, max_requests_in_flight=3)
    assert isinstance(stream, LogicalStream) and stream.batch
    streams.protocol_version = "2025-06-18"
    late = read(b"[" + PING % 9 + b"," + NOTE + b"]")
    later = streams.accept_post(late, json_mode=True, max_requests_in_flight=None)
    assert isinstance(later, HttpError) and later.status == 400


def test_a_stateless_session_answers_its_synthetic_initialize_nowhere() -> None:
    streams = SessionStreams("stateless", HttpLimits())
    post = read(PING % 1, STATELESS, mcp_protocol_version="2025-06-18")
    stream = streams.accept_post(post, json_mode=True, max_requests_in_flight=None)
    assert isinstance(stream, LogicalStream)
    answer = b'{"jsonrpc":"2.0","id":"%s","result":{}}' % STATELESS_INIT_ID.encode()
    sink = streams.route(answer, None)
    assert sink is not None and sink is not stream and not stream.json_parts


# -- the JSON answer -----------------------------------------------------------------------


@pytest.mark.spec(T + "sending-messages-to-the-server.8")
def test_a_json_answer_is_one_response_or_an_array_for_a_batch() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    one = streams.accept_post(read(PING % 1), json_mode=True, max_requests_in_flight=None)
    assert isinstance(one, LogicalStream)
    streams.route(b'{"jsonrpc":"2.0","id":1,"result":{}}', None)
    assert one.finished and one.json_body == b'{"jsonrpc":"2.0","id":1,"result":{}}'
    streams.protocol_version = "2025-03-26"
    body = b"[" + PING % 2 + b"," + PING % 3 + b"]"
    both = streams.accept_post(read(body), json_mode=True, max_requests_in_flight=None)
    assert isinstance(both, LogicalStream)
    streams.route(b'{"jsonrpc":"2.0","id":3,"result":{}}', None)
    streams.route(b'{"jsonrpc":"2.0","id":2,"result":{}}', None)
    assert json.loads(both.json_body) == [
        {"jsonrpc": "2.0", "id": 3, "result": {}},
        {"jsonrpc": "2.0", "id": 2, "result": {}},
    ]
    # Every request cancelled: no body (the answer is then 202).
    gone = streams.accept_post(read(PING % 4), json_mode=True, max_requests_in_flight=None)
    assert isinstance(gone, LogicalStream)
    streams.cancel_request(4)
    assert gone.finished and gone.json_body == b""

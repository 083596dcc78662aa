"""What one response of the Streamable HTTP server writes (mcp_ref._http_answers), and
the resumption a GET asks for (SessionStreams.resume), without sockets: an SSE answer's
head, events, waits and end, the stream's ``delivered_id`` only once written, a newer
response taking the stream over, and the JSON and empty answers.

Source: 2025-06-18/basic/transports#sending-messages-to-the-server,
#resumability-and-redelivery.
"""

from __future__ import annotations

import json
from typing import Any

import h11
import pytest

from mcp_ref._http import HttpError, HttpLimits, MessageKind
from mcp_ref._http_answers import ResponseHeads, SseAnswer, empty_answer
from mcp_ref._http_messages import MessageInfo
from mcp_ref._http_streams import STANDALONE, LogicalStream, SessionStreams

T = "2025-06-18/basic/transports#"
RESULT = b'{"jsonrpc":"2.0","id":%d,"result":{}}'
NOTE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}}'
HEAD = h11.Response(status_code=200, headers=[], reason=b"OK")


def post(streams: SessionStreams, rid: int) -> LogicalStream:
    request = MessageInfo(kind=MessageKind.REQUEST, id=rid, method="ping")
    got = streams.open_post([request], json_mode=False, is_init=False)
    assert isinstance(got, LogicalStream)
    return got


def answer(streams: SessionStreams, stream: LogicalStream, **kw: Any) -> SseAnswer:
    kw.setdefault("cursor", None)
    kw.setdefault("post", False)
    return SseAnswer(streams, stream, HEAD, retry_ms=1000, **kw)


def data_of(events: list[Any]) -> bytes:
    return b"".join(e.data for e in events if isinstance(e, h11.Data))


@pytest.mark.spec(T + "sending-messages-to-the-server.14")
def test_a_post_answer_writes_head_and_events_and_ends_after_the_response() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    stream = post(streams, 1)
    sse = answer(streams, stream, post=True)
    assert stream.attached and sse.head_waits  # before 2025-11-25 the head waits
    assert sse.step(15.0, 0.1) == 0.1 and not sse.ready  # nothing yet: wait a moment
    streams.route(RESULT % 1, None)
    assert sse.step(15.0, 0.1) is None and sse.end == "answered"
    sse.detach()
    events = sse.events(end=True)
    assert events[0] is HEAD and isinstance(events[-1], h11.EndOfMessage)
    assert b'"id":1' in data_of(events) and not stream.attached
    assert stream.delivered_id is None  # not written yet
    sse.written()
    assert stream.delivered_id == stream.last_id


def test_a_head_that_waited_in_vain_goes_alone_then_keepalives_follow() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    sse = answer(streams, post(streams, 1), post=True)
    assert sse.step(15.0, 0.1) == 0.1
    sse.waited("timeout")
    assert sse.ready and sse.step(15.0, 0.1) == 15.0
    assert sse.events() == [HEAD]
    sse.waited("timeout")  # silence for a keepalive time: a comment
    assert sse.step(15.0, 0.1) == 15.0
    assert data_of(sse.events()) == b": keepalive\n"


def test_from_2025_11_25_the_head_goes_at_once_with_its_priming_event() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    streams.protocol_version = "2025-11-25"
    stream = post(streams, 1)
    sse = answer(streams, stream, post=True)
    assert sse.ready and sse.step(15.0, 0.1) == 15.0
    events = sse.events()
    assert events[0] is HEAD and b"retry: 1000" in data_of(events)


def test_a_newer_response_takes_the_stream_over_and_the_older_one_records_nothing() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    get = streams.streams[STANDALONE]
    old = answer(streams, get)
    streams.route(NOTE, None)
    assert old.step(15.0, 0.1) == 15.0
    events = old.events()
    new = answer(streams, get, cursor=get.base_id)  # a resumption from the start
    old.written()  # the old write ends after the takeover: delivered_id is the new one's
    assert get.delivered_id is None
    assert old.step(15.0, 0.1) is None and old.end == "another response took the stream over"
    assert new.step(15.0, 0.1) == 15.0 and data_of(new.events()) == data_of(events)
    new.written()
    assert get.delivered_id == get.last_id
    old.detach()
    assert get.attached  # the older response's detach leaves the newer one attached


def test_a_first_event_goes_before_the_streams_own() -> None:
    streams = SessionStreams("legacy", HttpLimits())
    sse = answer(streams, streams.streams["legacy"], first=b"event: endpoint\ndata: /m\n\n")
    streams.route(NOTE, None)
    assert sse.step(15.0, 0.1) == 15.0
    assert data_of(sse.events()).startswith(b"event: endpoint\ndata: /m\n\nevent: message\n")


# -- resumption ----------------------------------------------------------------------------


@pytest.mark.spec(T + "resumability-and-redelivery.4")
def test_a_get_resumes_the_stream_its_last_event_id_names() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    assert streams.resume(None) == (streams.streams[STANDALONE], None)
    stream = post(streams, 1)
    streams.route(NOTE, 1)
    first = stream.last_id
    got = streams.resume(first.encode())
    assert got == (stream, first)
    bad = streams.resume(b"nonsense")
    assert isinstance(bad, HttpError) and bad.status == 400


@pytest.mark.spec(T + "resumability-and-redelivery.4")
def test_a_finished_stream_resumes_with_what_it_has_left_then_ends() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    stream = post(streams, 1)
    streams.route(NOTE, 1)
    first = stream.last_id
    streams.route(RESULT % 1, None)  # answered: the stream is no longer live
    got = streams.resume(first.encode())
    assert not isinstance(got, HttpError)
    resumed, cursor = got
    assert resumed is not stream and resumed.finished and cursor == first
    sse = answer(streams, resumed, cursor=cursor)
    assert sse.step(15.0, 0.1) is None and sse.end == "answered"
    written = data_of(sse.events(end=True))
    assert b'"id":1' in written and b"notifications/message" not in written


# -- JSON and empty answers ------------------------------------------------------------------


@pytest.mark.spec(T + "sending-messages-to-the-server.5")
def test_an_empty_answer_is_202_or_200_without_body() -> None:
    head, end = empty_answer(202, last=False)
    assert (head.status_code, head.reason, dict(head.headers)[b"content-length"]) == (
        202,
        b"Accepted",
        b"0",
    )
    assert isinstance(end, h11.EndOfMessage)
    closing = empty_answer(200, last=True)[0]
    assert closing.status_code == 200 and (b"connection", b"close") in closing.headers


@pytest.mark.spec(T + "session-management.1")
def test_a_json_answer_carries_its_length_and_session_id_and_none_is_202() -> None:
    heads = ResponseHeads()
    body = RESULT % 1
    head, data, _ = heads.json_answer("abc", body, last=False)
    fields = dict(head.headers)
    assert fields[b"content-length"] == str(len(body)).encode() and data.data == body
    assert fields[b"mcp-session-id"] == b"abc" and fields[b"content-type"] == b"application/json"
    again = heads.json_answer("abc", b"[]", last=True)[0]
    assert dict(again.headers)[b"content-length"] == b"2"
    assert (b"connection", b"close") in again.headers
    assert heads.json_answer(None, b"", last=False)[0].status_code == 202
    assert json.loads(data.data)["id"] == 1


def test_an_sse_head_is_built_once_per_kind() -> None:
    heads = ResponseHeads()
    get = heads.sse("abc", False, post=False)
    assert heads.sse("abc", False, post=False) is get
    assert (b"cache-control", b"no-cache") in get.headers
    assert heads.sse("abc", True, post=True) is not get

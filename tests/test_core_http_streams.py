"""The logical streams of a Streamable HTTP server session (mcp_ref._http_streams),
without sockets: which stream each message goes to, the responses writing them
(attach, detach, generations), cancellation, a handler ending its response, and the
events a cursor writes.

Source: 2025-06-18/basic/transports (sending messages to the server, listening for
messages from the server, multiple connections, resumability and redelivery).
"""

from __future__ import annotations

from typing import Any

import pytest

from mcp_ref._http import HttpError, HttpLimits, MessageKind
from mcp_ref._http_answers import StreamCursor
from mcp_ref._http_messages import MessageInfo
from mcp_ref._http_streams import LEGACY, STANDALONE, LogicalStream, SessionStreams

T = "2025-06-18/basic/transports#"
RESULT = b'{"jsonrpc":"2.0","id":%d,"result":{}}'
NOTE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":%d}}'


def request(rid: Any, method: str = "tools/call") -> MessageInfo:
    return MessageInfo(kind=MessageKind.REQUEST, id=rid, method=method)


def post(streams: SessionStreams, *rids: Any, json_mode: bool = False) -> LogicalStream:
    got = streams.open_post([request(r) for r in rids], json_mode=json_mode, is_init=False)
    assert not isinstance(got, HttpError)
    return got


def cursor(streams: SessionStreams, stream: LogicalStream) -> StreamCursor:
    return StreamCursor(streams, stream, stream.base_id, streams.attach(stream))


# -- POST streams that never reached the session, and discarded answers ----------------


def test_a_post_closed_before_its_body_reached_the_session_is_forgotten() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    p = post(streams, 1, 2)
    streams.close_post(p)
    assert p.id not in streams.streams and not streams.routes and not streams.busy()
    streams.close_post(p)  # twice: nothing left to forget
    # The ids are free again, and a late response to them goes nowhere.
    assert streams.route(RESULT % 1, None) is None
    again = post(streams, 1)
    assert again.id == "p2" and streams.routes


def test_closing_a_post_leaves_another_streams_route_of_the_same_id() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    first = post(streams, 1)
    streams.discard_answer(1)  # the id now routes elsewhere
    streams.close_post(first)
    assert streams.routes and streams.route(RESULT % 1, None) is not first


def test_a_discarded_answer_goes_on_no_stream_and_in_no_store() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    get = streams.streams[STANDALONE]
    before = (get.last_id, streams.store.stream_ids, len(streams.store))
    streams.discard_answer("init")
    data = b'{"jsonrpc":"2.0","id":"init","result":{}}'
    sink = streams.route(data, None)
    assert sink is not None and sink.id == "discard" and sink.json_mode
    assert sink.json_parts == [data] and sink.finished
    assert (get.last_id, streams.store.stream_ids, len(streams.store)) == before
    assert not streams.routes
    assert post(streams, 1).id == "p1"  # the discard stream took no POST's number


def test_a_stateless_session_drops_what_no_request_relates_to() -> None:
    streams = SessionStreams("stateless", HttpLimits())
    assert streams.streams == {}
    assert streams.route(NOTE % 1, None) is None
    p = post(streams, 1)
    assert streams.route(NOTE % 1, 1) is p


# -- responses writing a stream ------------------------------------------------------


def test_an_attached_stream_makes_the_session_busy_until_its_response_detaches() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    get = streams.streams[STANDALONE]
    assert not streams.busy()
    first = streams.attach(get)
    assert get.attached and streams.busy()
    second = streams.attach(get)  # a resumption takes the stream over
    assert second != first
    streams.detach(get, first)  # the response taken over stops: the new one writes on
    assert get.attached and streams.busy()
    streams.detach(get, second)
    assert not get.attached and not streams.busy()


def test_seq_grows_with_every_change() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    streams.protocol_version = "2025-11-25"
    p = post(streams, 1, 2, 3)
    seen = [p.seq]

    def changed() -> None:
        assert p.seq > max(seen), (p.seq, seen)
        seen.append(p.seq)

    streams.attach(p)
    changed()
    streams.route(NOTE % 1, 1)
    changed()
    streams.attach(p)  # a resumption
    changed()
    assert streams.cancel_request(1) is p
    changed()
    assert streams.request_close(2) is p
    changed()
    streams.route(RESULT % 2, 2)
    changed()
    streams.end()
    changed()


# -- cancellation ----------------------------------------------------------------------


def test_cancelling_an_unknown_or_settled_request_wakes_nothing() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    assert streams.cancel_request(9) is None
    p = post(streams, 1, 2)
    streams.route(RESULT % 1, 1)
    assert streams.cancel_request(1) is None
    assert streams.cancel_request("2") is None  # "2" is not 2
    assert not p.finished
    assert streams.cancel_request(2) is p and p.finished


# -- a handler ending its response (polling) -------------------------------------------


@pytest.mark.spec(T + "resumability-and-redelivery.4")
def test_a_handler_may_end_only_a_resumable_sse_response() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    assert streams.request_close(1) is None  # no such request
    j = post(streams, 1, json_mode=True)
    assert streams.request_close(1) is None and not j.close_requested  # a JSON answer
    s = post(streams, 2)
    # Before 2025-11-25 nothing primes the stream: the client holds no id until one
    # event was written.
    assert streams.request_close(2) is None and not s.close_requested
    s.delivered_id = s.base_id
    assert streams.request_close(2) is s and s.close_requested
    streams.route(RESULT % 2, 2)
    assert streams.request_close(2) is None  # answered


def test_a_primed_stream_may_end_before_any_event_was_written() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    streams.protocol_version = "2025-11-25"
    s = post(streams, 1)
    assert s.delivered_id is None
    assert streams.request_close(1) is s
    j = post(streams, 2, json_mode=True)
    assert streams.request_close(2) is None and not j.close_requested  # a JSON answer


def test_a_close_ends_one_response_only() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    streams.protocol_version = "2025-11-25"
    s = post(streams, 1)
    c = cursor(streams, s)
    streams.request_close(1)
    assert c.take().end == "closed by its handler"
    resumed = cursor(streams, s)
    assert resumed.take().end is None and not s.close_requested


# -- what a cursor writes --------------------------------------------------------------


@pytest.mark.spec(T + "resumability-and-redelivery.1")
def test_a_primed_response_opens_with_its_cursor_id_and_retry() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    streams.protocol_version = "2025-11-25"
    s = post(streams, 1)
    assert cursor(streams, s).opening(500) == b"id: %s\nretry: 500\ndata:\n\n" % (
        s.base_id.encode()
    )


def test_a_response_taken_over_writes_nothing_more() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    s = post(streams, 1)
    old = cursor(streams, s)
    streams.route(NOTE % 1, 1)
    cursor(streams, s)
    chunk = old.take()
    assert (chunk.data, chunk.last_id) == (b"", None)
    assert chunk.end == "another response took the stream over"


def test_a_cursor_writes_every_new_event_in_order_with_its_id() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    s = post(streams, 1)
    c = cursor(streams, s)
    ids = [streams.route(NOTE % n, 1) and s.last_id for n in (1, 2)]
    chunk = c.take()
    assert chunk.data == b"".join(
        b"event: message\nid: %s\ndata: %s\n\n" % (i.encode(), NOTE % n)  # type: ignore[union-attr]
        for i, n in zip(ids, (1, 2), strict=True)
    )
    assert chunk.last_id == ids[-1] and chunk.end is None


@pytest.mark.spec(T + "resumability-and-redelivery.4")
def test_a_cursor_whose_events_were_evicted_ends_its_response() -> None:
    streams = SessionStreams("streamable", HttpLimits(stored_events_per_stream=1))
    s = post(streams, 1)
    c = cursor(streams, s)
    streams.route(NOTE % 1, 1)
    streams.route(NOTE % 2, 1)  # the first note is gone from the store
    chunk = c.take()
    assert (chunk.data, chunk.last_id) == (b"", None)
    assert chunk.end is not None and chunk.end.startswith("events lost: events after ")


@pytest.mark.spec(T + "sending-messages-to-the-server.14")
def test_an_answered_stream_ends_and_its_events_are_forgotten() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    s = post(streams, 1)
    c = cursor(streams, s)
    streams.route(RESULT % 1, 1)
    chunk = c.take()
    assert chunk.end == "answered" and b'"id":1' in chunk.data
    assert s.id not in streams.store.stream_ids
    assert isinstance(streams.store.replay_after(s.base_id), HttpError)


def test_the_legacy_stream_carries_every_message_and_never_ends_by_request() -> None:
    streams = SessionStreams("legacy", HttpLimits())
    legacy = streams.streams[LEGACY]
    assert streams.route(RESULT % 7, None) is legacy  # a response with no POST stream
    assert streams.route(NOTE % 1, None) is legacy
    assert streams.request_close(7) is None


# -- a new session's streams ---------------------------------------------------------


def test_a_new_session_has_its_streams_and_no_version_yet() -> None:
    limits = HttpLimits(
        stored_events_per_stream=3, stored_streams=2, stored_bytes=999, max_streams_per_session=5
    )
    streams = SessionStreams("streamable", limits)
    assert (streams.protocol_version, streams.init_failed, streams.ended) == (None, False, False)
    assert not streams.primes
    get = streams.streams[STANDALONE]
    assert get.id == STANDALONE and get.base_id.startswith(STANDALONE + "/")
    assert not get.json_mode and not get.finished and get.delivered_id is None
    store = streams.store
    assert (store.max_events_per_stream, store.max_total_bytes) == (3, 999)
    # Room for every stream the session may have open (the POST streams and the GET
    # one) and one more, whatever stored_streams says.
    assert store.max_streams == 7
    assert SessionStreams("streamable", HttpLimits(stored_streams=50)).store.max_streams == 50
    legacy = SessionStreams("legacy", HttpLimits())
    assert list(legacy.streams) == [LEGACY]
    one = legacy.streams[LEGACY]
    assert one.id == LEGACY and not one.json_mode and one.base_id.startswith(LEGACY + "/")


def test_posts_get_streams_p1_p2_and_so_on() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    assert [post(streams, n).id for n in (1, 2, 3)] == ["p1", "p2", "p3"]
    j = post(streams, 4, json_mode=True)
    assert j.id == "p4" and j.base_id == "" and "p4" not in streams.store.stream_ids


def test_the_refusals_of_a_post_say_why() -> None:
    streams = SessionStreams("streamable", HttpLimits(max_streams_per_session=1))
    post(streams, 1)
    again = streams.open_post([request(1)], json_mode=False, is_init=False)
    assert isinstance(again, HttpError)
    assert (again.status, again.detail) == (400, "a request with this id is still being handled")
    more = streams.open_post([request(2)], json_mode=False, is_init=False)
    assert isinstance(more, HttpError)
    assert (more.status, more.detail) == (
        429,
        "too many requests in progress in this session (at most 1)",
    )


def test_empty_base_events_take_no_room_in_the_store() -> None:
    note = NOTE % 1
    streams = SessionStreams("streamable", HttpLimits(stored_bytes=len(note)))
    p = post(streams, 1)
    c = cursor(streams, p)
    streams.route(note, 1)
    post(streams, 2)  # its base event comes after the note
    chunk = c.take()
    assert chunk.end is None and note in chunk.data


# -- routing ---------------------------------------------------------------------------


def test_a_server_request_whose_id_a_client_request_has_goes_to_the_related_stream() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    p1, p5 = post(streams, 1), post(streams, 5)
    ask = b'{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{}}'
    assert streams.route(ask, 1) is p1
    assert not p5.finished and streams.cancel_request(5) is p5  # request 5 still pending
    assert not p1.finished


def test_only_the_answer_to_initialize_names_the_version() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    init = streams.open_post([request(0, "initialize")], json_mode=True, is_init=True)
    assert not isinstance(init, HttpError)
    other = post(streams, 1)
    streams.route(b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18"}}', None)
    assert streams.protocol_version == "2025-06-18" and not streams.init_failed
    assert streams.route(RESULT % 1, 1) is other
    assert streams.protocol_version == "2025-06-18" and not streams.init_failed


def test_a_message_that_is_not_utf8_is_stored_with_replacement_characters() -> None:
    streams = SessionStreams("streamable", HttpLimits())
    get = streams.streams[STANDALONE]
    c = cursor(streams, get)
    assert streams.route(b'{"jsonrpc":"2.0","method":"x","params":{"v":"\xff"}}', None) is get
    assert "\ufffd".encode() in c.take().data


def test_legacy_responses_and_notifications_share_the_one_stream_in_order() -> None:
    streams = SessionStreams("legacy", HttpLimits())
    legacy = streams.streams[LEGACY]
    c = cursor(streams, legacy)
    assert streams.route(NOTE % 1, None) is legacy
    assert streams.route(RESULT % 3, None) is legacy
    chunk = c.take()
    assert chunk.data.index(NOTE % 1) < chunk.data.index(RESULT % 3) and chunk.end is None


@pytest.mark.spec(T + "sending-messages-to-the-server.8")
@pytest.mark.parametrize("json_mode", [False, True])
def test_a_post_of_requests_gets_one_answer_that_ends_with_its_last_response(
    json_mode: bool,
) -> None:
    """A POST holding requests is answered on a stream of its own (SSE, or one JSON body
    in JSON mode) that stays open until every one of its requests has its response."""
    streams = SessionStreams("streamable", HttpLimits())
    p = post(streams, 1, 2, json_mode=json_mode)
    assert p.json_mode is json_mode and len(p.pending) == 2
    assert streams.route(RESULT % 2, None) is p
    assert not p.finished and p.id in streams.streams  # request 1 is still owed
    assert streams.route(RESULT % 1, None) is p
    assert p.finished and p.id not in streams.streams

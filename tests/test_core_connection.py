"""The Connection's edges (mcp_ref._connection): over-long messages,
progress that is dropped, refused cancellations and progress, request ids, timeouts of
``initialize`` beside other requests, the batch outbox, the sentinels.

Each check pins what the core says (the message, the reason) or does at a boundary that
tests/test_basic_messages.py, test_progress.py, test_cancellation.py and
test_lifecycle_timeouts.py leave open.

Source: 2025-06-18/basic (messages, requests); 2025-06-18/basic/utilities/progress;
2025-06-18/basic/utilities/cancellation; 2025-06-18/basic/lifecycle#timeouts;
JSON-RPC 2.0 section 6 (batches, 2025-03-26).
"""

from __future__ import annotations

import json

import attrs
import pytest

from mcp_ref import (
    CLIENT,
    METHOD_NOT_FOUND,
    NEED_DATA,
    SERVER,
    Connection,
    ConnectionClosed,
    ErrorResponse,
    LocalProtocolError,
    Notification,
    Progress,
    ProgressDropped,
    RemoteProtocolError,
    Request,
    RequestCancelled,
    RequestTimedOut,
    RequestTimeout,
    Response,
    State,
)
from mcp_ref import types as t
from mcp_ref._framing import TOO_LONG

from ._pair import deliver, events, init_request, init_result, initialized_pair


def _cancel(rid: object) -> Notification:
    return Notification(
        method="notifications/cancelled", params=t.CancelledNotificationParams(request_id=rid)
    )


def _progress(token: object, value: float) -> Notification:
    return Notification(
        method="notifications/progress",
        params=t.ProgressNotificationParams(progress_token=token, progress=value),
    )


def test_sentinels_name_themselves() -> None:
    assert repr(NEED_DATA) == "NEED_DATA"
    assert repr(TOO_LONG) == "TOO_LONG"


def test_send_failed_closes_the_connection() -> None:
    client, _ = initialized_pair()
    client.send_failed()
    assert client.state is State.CLOSED
    with pytest.raises(LocalProtocolError):
        client.send(Request(id=5, method="ping"))


def test_an_over_long_request_is_refused_naming_the_limit() -> None:
    server = Connection(SERVER, max_message_bytes=64)
    server.receive_data(
        b'{"jsonrpc":"2.0","id":"r","method":"ping","params":{"x":"' + b"a" * 99 + b'"}}\n'
    )
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_event()
    assert caught.value.message == "message longer than 64 bytes"
    hint = caught.value.event_hint
    assert isinstance(hint, ErrorResponse)
    assert (hint.id, hint.code, hint.message) == ("r", -32600, "message longer than 64 bytes")


def test_an_over_long_response_fails_the_request_and_it_cannot_be_cancelled_after() -> None:
    client, _ = initialized_pair(max_message_bytes=400)
    client.send(Request(id=9, method="tools/list"))
    client.receive_data(b'{"jsonrpc":"2.0","id":9,"result":{"tools":[' + b"{}," * 200 + b"{}]}}\n")
    (ev,) = events(client)
    assert isinstance(ev, ErrorResponse)
    assert ev.message == "the response was dropped: message longer than 400 bytes"
    # The request is finished (answered): cancelling it now sends nothing.
    assert client.send(_cancel(9)) == b""


def test_an_over_long_answer_to_initialize_is_not_turned_into_an_error() -> None:
    client = Connection(CLIENT, max_message_bytes=300)
    client.send(init_request(rid=0))
    client.receive_data(b'{"jsonrpc":"2.0","id":0,"result":{"x":"' + b"a" * 400 + b'"}}\n')
    assert client.next_event() is NEED_DATA
    assert client.requests_in_flight() == ([0], [])


def test_dropped_progress_says_why_and_names_the_token() -> None:
    client, server = initialized_pair()
    params = t.CallToolRequestParams(name="x", meta={"progressToken": "t"})
    deliver(client.send(Request(id=1, method="tools/call", params=params)), server)
    (ev,) = deliver(server.send(_progress("t", 2)), client)
    assert isinstance(ev, Progress)
    line = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":2}}\n'
    (ev,) = deliver(line, client)
    assert ev == ProgressDropped(progress_token="t", reason="progress 2 does not increase past 2")
    unknown = line.replace(b'"t"', b'"u"')
    (ev,) = deliver(unknown, client)
    assert ev == ProgressDropped(progress_token="u", reason="no active request has this token")


def test_refused_cancellations_and_progress_say_why() -> None:
    client, server = initialized_pair()
    with pytest.raises(LocalProtocolError) as caught:
        client.send(_cancel(True))
    assert caught.value.message == "notifications/cancelled needs a str or int requestId: True"
    with pytest.raises(LocalProtocolError) as caught:
        client.send(_cancel(42))
    assert caught.value.message == "cannot cancel 42: no such request was sent"
    with pytest.raises(LocalProtocolError) as caught:
        server.send(_progress(1.5, 1))
    assert caught.value.message == "a progress token is a str or an int, not 1.5"
    with pytest.raises(LocalProtocolError) as caught:
        server.send(_progress("nobody", 1))
    assert caught.value.message == "progress token 'nobody' belongs to no active request"
    fresh = Connection(CLIENT)
    fresh.send(init_request(rid=0))
    with pytest.raises(LocalProtocolError) as caught:
        fresh.send(_cancel(0))
    assert caught.value.message == "the initialize request must not be cancelled"


def test_next_request_id_skips_ids_in_flight_and_used() -> None:
    client, server = initialized_pair()
    deliver(client.send(Request(id=1, method="ping")), server)
    deliver(client.send(Request(id=2, method="ping")), server)
    deliver(server.send(Response(id=2, result=t.EmptyResult())), client)
    assert client.next_request_id() == 3
    assert client.next_request_id() == 4


def test_initialize_and_a_ping_time_out_together() -> None:
    client = Connection(CLIENT)
    client.send(init_request(rid=0), now=0.0, timeout=RequestTimeout(seconds=5))
    client.send(Request(id=1, method="ping"), now=0.0, timeout=RequestTimeout(seconds=5))
    (data,) = client.handle_timeout(5.0)  # a cancel for the ping only
    assert json.loads(data)["params"] == {"requestId": 1, "reason": "timed out"}
    assert events(client) == [
        RequestTimedOut(id=0, method="initialize", elapsed=5.0),
        RequestTimedOut(id=1, method="ping", elapsed=5.0),
    ]


def _batch(*items: str) -> bytes:
    return ("[" + ",".join(items) + "]\n").encode()


def _ping(rid: int) -> str:
    return f'{{"jsonrpc":"2.0","id":{rid},"method":"ping"}}'


def test_two_released_batches_come_out_together_in_order() -> None:
    _, server = initialized_pair("2025-03-26")
    for first, second in ((1, 2), (3, 4)):
        server.receive_data(_batch(_ping(first), _ping(second)))
        assert [e.id for e in events(server)] == [first, second]
        assert server.send(Response(id=first, result=t.EmptyResult())) == b""
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": second},
        }
        (ev,) = deliver((json.dumps(cancel) + "\n").encode(), server)
        assert isinstance(ev, RequestCancelled)
    assert server.data_to_send() == (
        b'[{"jsonrpc":"2.0","id":1,"result":{}}]\n[{"jsonrpc":"2.0","id":3,"result":{}}]\n'
    )


def test_connection_settings_and_their_defaults() -> None:
    with pytest.raises(ValueError, match=r"^our_role must be CLIENT or SERVER$"):
        Connection("client")  # type: ignore[arg-type]
    conn = Connection(SERVER)
    assert conn.their_role is CLIENT and conn.state is State.PRE_INIT
    assert conn.max_message_bytes == 8 * 1024 * 1024
    assert conn.max_requests_in_flight == 1024
    assert conn.default_timeout is None and conn.newline_framing is True
    assert conn.protocol_version is None and conn.requested_version is None
    assert conn.capabilities == {CLIENT: None, SERVER: None}
    assert conn.peer_info is None and conn.instructions is None


def test_finished_ids_are_remembered_4096_deep_by_default() -> None:
    client, server = initialized_pair()
    for rid in range(1, 4097):
        deliver(client.send(Request(id=rid, method="ping")), server)
        deliver(server.send(Response(id=rid, result=t.EmptyResult())), client)
    assert client.send(_cancel(1)) == b""  # answered, still remembered: nothing to cancel
    deliver(client.send(Request(id=4097, method="ping")), server)
    deliver(server.send(Response(id=4097, result=t.EmptyResult())), client)
    with pytest.raises(LocalProtocolError, match="no such request"):
        client.send(_cancel(1))  # forgotten now


def test_completions_need_the_capability_only_from_2025_03_26() -> None:
    params = t.CompleteRequestParams(
        ref=t.PromptReference(name="p"),
        argument=t.CompleteRequestParamsArgument(name="a", value="v"),
    )
    request = Request(id=1, method="completion/complete", params=params)
    client, _ = initialized_pair(
        "2024-11-05", server_caps=t.ServerCapabilities(prompts=t.ServerCapabilitiesPrompts())
    )
    assert client.send(request)
    client, _ = initialized_pair(
        "2025-03-26", server_caps=t.ServerCapabilities(prompts=t.ServerCapabilitiesPrompts())
    )
    with pytest.raises(LocalProtocolError, match="capability completions"):
        client.send(request)


def test_feeding_refusals_say_why() -> None:
    conn = Connection(SERVER)
    conn.receive_data(b"")
    with pytest.raises(LocalProtocolError) as caught:
        conn.receive_data(b"{}\n")
    assert caught.value.message == "receive_data after end of input"
    with pytest.raises(LocalProtocolError) as caught:
        conn.receive_message(b"{}")
    assert caught.value.message == "receive_message after end of input"
    framed = Connection(SERVER, newline_framing=False)
    with pytest.raises(LocalProtocolError) as caught:
        framed.receive_data(b"{}\n")
    assert caught.value.message == "this connection takes whole messages: receive_message"


def test_at_most_1024_whole_messages_wait() -> None:
    conn = Connection(SERVER, newline_framing=False)
    for _ in range(1024):
        conn.receive_message(b'{"jsonrpc":"2.0","method":"x"}')
    with pytest.raises(LocalProtocolError) as caught:
        conn.receive_message(b"{}")
    assert caught.value.message == "too many queued messages; drain next_event() first"


def test_whole_messages_up_to_the_limit_and_an_over_long_one_with_its_id() -> None:
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    conn = Connection(SERVER, newline_framing=False, max_message_bytes=len(ping))
    conn.receive_message(ping)
    assert conn.next_event().id == 1
    conn.receive_message(ping.replace(b"1", b"22"))
    with pytest.raises(RemoteProtocolError) as caught:
        conn.next_event()
    assert caught.value.event_hint is not None and caught.value.event_hint.id == 22
    assert caught.value.message == f"message longer than {len(ping)} bytes"


def test_a_cut_request_is_a_parse_error_answering_its_id() -> None:
    server = Connection(SERVER)
    server.receive_data(b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{\n')
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_event()
    err = caught.value
    assert err.code == -32700 and err.message.startswith("parse error: ")
    hint = err.event_hint
    assert isinstance(hint, ErrorResponse)
    assert (hint.id, hint.code, hint.message) == (5, -32700, err.message)


def test_a_refusal_reply_is_remembered_64_deep_and_answers_no_request() -> None:
    """A refused message may reuse the id of a request in flight; its reply must not
    answer that request.  Replies not yet sent are remembered 64 deep (with at most
    16 requests in flight), oldest forgotten first."""
    client, server = initialized_pair(max_requests_in_flight=16)
    deliver(client.send(Request(id=1, method="ping")), server)
    replies = []
    for rid in [1, *range(100, 163)]:  # 64 refusals, the first reusing id 1
        server.receive_data(f'{{"jsonrpc":"2.0","id":{rid},"method":"no/such"}}\n'.encode())
        with pytest.raises(RemoteProtocolError) as caught:
            server.next_event()
        replies.append(caught.value.event_hint)
    server.send(replies[0])  # still remembered: it answers the refused message only
    assert server.requests_in_flight() == ([], [1])
    for rid in range(200, 300):  # far past the bound: the oldest are forgotten
        server.receive_data(f'{{"jsonrpc":"2.0","id":{rid},"method":"no/such"}}\n'.encode())
        with pytest.raises(RemoteProtocolError):
            server.next_event()
    assert server.requests_in_flight() == ([], [1])


def test_a_rebuilt_refusal_reply_still_answers_no_request() -> None:
    """Refusals are kept by the id of their reply, not by the reply object: a driver
    that rebuilds the hint (``attrs.evolve``, its own wording) still sends a refusal,
    and the request in flight with the same id stays in flight."""
    client, server = initialized_pair()
    deliver(client.send(Request(id=1, method="ping")), server)
    server.receive_data(b'{"jsonrpc":"2.0","id":1,"method":"no/such"}\n')
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_event()
    hint = caught.value.event_hint
    assert hint is not None
    rebuilt = attrs.evolve(hint, message="no such method here")
    assert b'"no such method here"' in server.send(rebuilt)
    assert server.requests_in_flight() == ([], [1])
    # The refusal was settled: an error reply with id 1 now answers the request.
    server.send(ErrorResponse(id=1, code=-32603, message="failed"))
    assert server.requests_in_flight() == ([], [])


def test_an_over_long_message_without_a_readable_id_is_answered_with_null() -> None:
    server = Connection(SERVER, max_message_bytes=32)
    server.receive_data(
        b'{"jsonrpc":"2.0","method":"notifications/x","params":{"a":"' + b"b" * 60 + b'"}}\n'
    )
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_event()
    err = caught.value
    assert (err.message, err.code) == ("message longer than 32 bytes", -32600)
    hint = err.event_hint
    assert isinstance(hint, ErrorResponse)
    assert (hint.id, hint.code, hint.message) == (None, -32600, "message longer than 32 bytes")


def test_a_dropped_over_long_response_is_an_internal_error() -> None:
    client, _ = initialized_pair(max_message_bytes=400)
    client.send(Request(id="q", method="tools/list"))
    client.receive_data(
        b'{"jsonrpc":"2.0","id":"q","result":{"tools":[' + b"{}," * 200 + b"{}]}}\n"
    )
    (ev,) = events(client)
    assert isinstance(ev, ErrorResponse)
    assert (ev.id, ev.code, ev.method) == ("q", -32603, "tools/list")


# -- What the mutation run of the merged receive and send paths showed untested --------


def test_the_default_timeout_applies_to_a_request_sent_without_one() -> None:
    client, _server = initialized_pair()
    client.default_timeout = RequestTimeout(seconds=7.0)
    client.send(Request(id=5, method="ping"), now=100.0)
    assert client.next_deadline() == 107.0
    client.send(Request(id=6, method="ping"), now=100.0, timeout=None)
    assert client.next_deadline() == 107.0  # the one without a timeout adds none


def test_the_last_line_without_its_newline_is_read_at_end_of_input() -> None:
    server = Connection(SERVER)
    server.receive_data(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
    assert server.next_event() is NEED_DATA
    server.receive_data(b"")
    request = server.next_event()
    assert isinstance(request, Request) and request.id == 1


def test_a_blank_whole_message_is_a_parse_error_with_a_null_id_reply() -> None:
    server = Connection(SERVER, newline_framing=False)
    server.receive_message(b" \r\n\t ")
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_event()
    assert caught.value.code == -32700
    hint = caught.value.event_hint
    assert isinstance(hint, ErrorResponse)
    assert (hint.id, hint.code, hint.message) == (None, -32700, "parse error: empty message")


def test_the_initialize_request_fills_in_what_the_server_knows_of_its_peer() -> None:
    server = Connection(SERVER)
    deliver(Connection(CLIENT).send(init_request()), server)
    assert server.peer_info == t.Implementation(name="test-client", version="1.0")
    assert server.requested_version == "2025-11-25"


def test_the_initialize_result_fills_in_what_the_client_knows_of_its_peer() -> None:
    client, server = Connection(CLIENT), Connection(SERVER)
    deliver(client.send(init_request(version="2025-06-18")), server)
    assert client.requested_version == "2025-06-18"
    result = t.InitializeResult(
        protocol_version="2025-06-18",
        capabilities=t.ServerCapabilities(),
        server_info=t.Implementation(name="s", version="2"),
        instructions="use the tools",
    )
    deliver(server.send(Response(id=0, result=result)), client)
    assert client.peer_info == t.Implementation(name="s", version="2")
    assert client.instructions == "use the tools"
    assert client.protocol_version == "2025-06-18"


def test_an_unusable_initialize_result_sends_the_client_back_to_pre_initialization() -> None:
    client = Connection(CLIENT)
    client.send(init_request())
    client.receive_data(b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":5}}\n')
    (error,) = events(client)
    assert isinstance(error, ErrorResponse) and error.code == -32603
    assert client.our_state is State.PRE_INIT
    client.send(init_request(rid=1))  # and it may try again
    assert client.our_state is State.INITIALIZING


def test_an_unusable_result_of_another_request_keeps_the_state() -> None:
    client, _server = initialized_pair()
    client.send(Request(id=9, method="tools/list"))
    client.receive_data(b'{"jsonrpc":"2.0","id":9,"result":{"tools":5}}\n')
    (error,) = events(client)
    assert isinstance(error, ErrorResponse) and (error.id, error.code) == (9, -32603)
    assert client.our_state is State.OPERATING


def test_notifications_and_error_responses_arrive_with_what_they_carry() -> None:
    client, server = initialized_pair()
    (note,) = deliver(
        server.send(
            Notification(
                method="notifications/message",
                params=t.LoggingMessageNotificationParams(level="info", data="hello"),
            )
        ),
        client,
    )
    assert note.params == t.LoggingMessageNotificationParams(level="info", data="hello")
    client.send(Request(id=3, method="ping"))
    (error,) = deliver(
        server.send(ErrorResponse(id=3, code=-32000, message="no", data=[1])), client
    )
    assert (error.id, error.code, error.message, error.data, error.method) == (
        3,
        -32000,
        "no",
        [1],
        "ping",
    )
    client.receive_data(
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x","data":2}}\n'
    )
    (unreadable,) = events(client)
    assert (unreadable.id, unreadable.code, unreadable.message, unreadable.data) == (
        None,
        -32700,
        "x",
        2,
    )


def test_an_unexpected_response_carries_the_message_as_received() -> None:
    client, _server = initialized_pair()
    client.receive_data(b'{"jsonrpc":"2.0","id":77,"result":{"x":1}}\n')
    (unexpected,) = events(client)
    assert unexpected.id == 77
    assert unexpected.message == {"jsonrpc": "2.0", "id": 77, "result": {"x": 1}}


def test_a_request_without_a_progress_token_holds_no_token() -> None:
    client, server = initialized_pair()
    deliver(client.send(Request(id=1, method="ping")), server)
    with_empty_token = Request(
        id=2, method="ping", params=t.RequestParams(meta={"progressToken": ""})
    )
    (request,) = deliver(client.send(with_empty_token), server)
    assert request.id == 2  # "" is a token of its own, not the absent token of request 1


def test_after_close_a_request_and_a_response_are_refused_naming_the_state() -> None:
    client, server = initialized_pair()
    deliver(client.send(Request(id=1, method="tools/list")), server)  # plans are cached
    server.send(Request(id=50, method="ping"))
    server.close()
    server.receive_data(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n')
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_event()
    hint = caught.value.event_hint
    assert isinstance(hint, ErrorResponse)
    assert (hint.id, hint.code) == (2, -32600)
    assert (
        hint.message == "server cannot receive request in state CLOSED (2025-06-18/basic/lifecycle)"
    )
    server.receive_data(b'{"jsonrpc":"2.0","id":50,"result":{}}\n')
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_event()
    assert caught.value.code == -32600 and caught.value.event_hint is None
    assert caught.value.message == (
        "server cannot receive response in state CLOSED (2025-06-18/basic/lifecycle)"
    )


def test_once_input_ended_a_cached_request_may_not_be_sent() -> None:
    client, _server = initialized_pair()
    client.send(Request(id=1, method="tools/list"))  # its plan is cached
    client.receive_data(b"")
    assert isinstance(client.next_event(), ConnectionClosed)
    with pytest.raises(LocalProtocolError) as caught:
        client.send(Request(id=2, method="tools/list"))
    assert caught.value.message == (
        "client cannot send request in state CLOSING (2025-06-18/basic/lifecycle)"
    )


@pytest.mark.parametrize("newline_framing", [True, False])
def test_a_message_exactly_at_the_size_limit_may_be_sent_and_one_byte_more_may_not(
    newline_framing: bool,
) -> None:
    empty = len(b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":""}]}}')
    limit = 1000
    server = Connection(SERVER, max_message_bytes=limit, newline_framing=newline_framing)
    messages = [
        Connection(CLIENT, newline_framing=False).send(init_request()),
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
    ]
    for rid in (1, 2):
        messages.append(
            f'{{"jsonrpc":"2.0","id":{rid},"method":"tools/call","params":{{"name":"t"}}}}'.encode()
        )
    for message in messages:
        if newline_framing:
            server.receive_data(message + b"\n")
        else:
            server.receive_message(message)
        if message is messages[0]:
            events(server)
            server.send(Response(id=0, result=init_result()))
    events(server)
    at_limit = t.CallToolResult(content=[t.TextContent(type="text", text="x" * (limit - empty))])
    assert len(server.send(Response(id=1, result=at_limit))) == limit + newline_framing
    over = t.CallToolResult(content=[t.TextContent(type="text", text="x" * (limit - empty + 1))])
    with pytest.raises(LocalProtocolError):
        server.send(Response(id=2, result=over))


@pytest.mark.parametrize(("in_flight", "bound"), [(16, 64), (20, 80)])
def test_refusal_replies_are_remembered_exactly_to_the_bound(in_flight: int, bound: int) -> None:
    """The bound is max(64, 4 x max_requests_in_flight): the reply of the oldest refusal
    is forgotten with the bound + 1st, and then it answers the request it names."""
    for extra in (0, 1):
        client, server = initialized_pair(max_requests_in_flight=in_flight)
        deliver(client.send(Request(id=1, method="ping")), server)
        replies = []
        for rid in [1, *range(100, 100 + bound - 1 + extra)]:
            server.receive_data(f'{{"jsonrpc":"2.0","id":{rid},"method":"no/such"}}\n'.encode())
            with pytest.raises(RemoteProtocolError) as caught:
                server.next_event()
            replies.append(caught.value.event_hint)
        server.send(replies[0])
        assert server.requests_in_flight() == ([], [] if extra else [1])


# -- What the mutation run of the merged Connection showed untested ----------------------


def test_the_default_timeout_given_to_the_constructor_applies() -> None:
    client = Connection(CLIENT, default_timeout=RequestTimeout(seconds=3.0))
    client.send(init_request(), now=10.0)
    assert client.next_deadline() == 13.0


def test_a_line_of_whitespace_and_text_is_not_a_blank_line() -> None:
    """Only JSON's whitespace makes a line blank: `` X `` is a line to refuse."""
    server = Connection(SERVER)
    server.receive_data(b" X \n")
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_event()
    assert caught.value.code == -32700


def test_a_refusal_reusing_the_id_of_initialize_in_flight_leaves_the_handshake_alone() -> None:
    server = Connection(SERVER)
    deliver(Connection(CLIENT).send(init_request(rid=0)), server)
    server.receive_data(b'{"jsonrpc":"2.0","id":0,"method":"ping"}\n')
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_event()
    server.send(caught.value.event_hint)
    assert server.our_state is State.INITIALIZING  # not sent back to PRE_INIT
    server.send(Response(id=0, result=init_result()))
    assert server.our_state is State.INITIALIZED


def test_an_unusable_answer_to_a_ping_keeps_the_handshake_where_it_is() -> None:
    client = Connection(CLIENT)
    client.send(init_request())
    client.send(Request(id=5, method="ping"))
    client.receive_data(b'{"jsonrpc":"2.0","id":5,"result":{"_meta":5}}\n')
    (error,) = events(client)
    assert isinstance(error, ErrorResponse) and (error.id, error.code) == (5, -32603)
    assert client.our_state is State.INITIALIZING


def test_an_error_reply_to_a_request_of_a_batch_goes_into_its_array() -> None:
    client, server = initialized_pair(version="2025-03-26")
    deliver(client.send(Request(id=9, method="ping")), server)  # outside the batch
    server.receive_data(_batch(_ping(1), _ping(2)))
    assert [e.id for e in events(server)] == [1, 2]
    assert server.send(Response(id=9, result=t.EmptyResult())) != b""  # not held
    assert server.send(Response(id=1, result=t.EmptyResult())) == b""
    array = server.send(ErrorResponse(id=2, code=-32000, message="no"))
    assert [reply.get("id") for reply in json.loads(array)] == [1, 2]
    assert json.loads(array)[1]["error"]["code"] == -32000


def _refuse_reusing(server: Connection, rid: int) -> ErrorResponse:
    server.receive_data(f'{{"jsonrpc":"2.0","id":{rid},"method":"no/such"}}\n'.encode())
    with pytest.raises(RemoteProtocolError) as caught:
        server.next_event()
    hint = caught.value.event_hint
    assert hint is not None
    return hint


@pytest.mark.parametrize("more", [1, 2])
def test_sent_refusal_replies_make_room_one_each(more: int) -> None:
    """64 replies owed (the bound with 16 in flight); one is sent, so one more fits and
    the second one more forgets the oldest, which then answers the request it names."""
    client, server = initialized_pair(max_requests_in_flight=16)
    deliver(client.send(Request(id=1, method="ping")), server)
    oldest = _refuse_reusing(server, 1)
    others = [_refuse_reusing(server, rid) for rid in range(100, 163)]  # 64 owed
    server.send(others[0])  # 63 owed
    for rid in range(200, 200 + more):
        _refuse_reusing(server, rid)  # 64, then 65: the oldest is forgotten
    server.send(oldest)
    assert server.requests_in_flight() == ([], [] if more == 2 else [1])


@pytest.mark.parametrize("send_one", [False, True])
def test_after_forgetting_the_oldest_refusal_the_bound_still_counts_right(send_one: bool) -> None:
    """65 replies owed with a bound of 64: the oldest is forgotten, and 64 are owed.  One
    more forgets the next oldest too, unless one was sent in between."""
    client, server = initialized_pair(max_requests_in_flight=16)
    for rid in (1, 2):
        deliver(client.send(Request(id=rid, method="ping")), server)
    first, second = _refuse_reusing(server, 1), _refuse_reusing(server, 2)
    others = [_refuse_reusing(server, rid) for rid in range(100, 163)]  # 65: first goes
    if send_one:
        server.send(others[0])
    _refuse_reusing(server, 300)
    server.send(second)
    assert server.requests_in_flight() == ([], [1, 2] if send_one else [1])
    server.send(first)  # forgotten: it answers request 1
    assert server.requests_in_flight() == ([], [2] if send_one else [])


def test_a_request_the_negotiated_revision_lacks_is_method_not_found() -> None:
    """``elicitation/create`` came with 2025-06-18: a client that negotiated 2025-03-26
    refuses it with -32601 even though it declared the elicitation capability (the
    method table is read for the negotiated revision, not for the newest)."""
    caps = t.ClientCapabilities(elicitation=t.ClientCapabilitiesElicitation())
    client, _ = initialized_pair("2025-03-26", client_caps=caps)
    schema = {"type": "object", "properties": {}}
    message = {
        "jsonrpc": "2.0",
        "id": "e1",
        "method": "elicitation/create",
        "params": {"message": "hi", "requestedSchema": schema},
    }
    client.receive_data(json.dumps(message).encode() + b"\n")
    with pytest.raises(RemoteProtocolError) as caught:
        client.next_event()
    hint = caught.value.event_hint
    assert (hint.id, hint.code) == ("e1", METHOD_NOT_FOUND)
    assert caught.value.message == "method not found: elicitation/create"


def test_a_notification_the_negotiated_revision_lacks_is_not_delivered() -> None:
    """``notifications/elicitation/complete`` came with 2025-11-25: in a 2025-06-18
    session it is refused as unknown (no reply: it is a notification), not delivered."""
    client, _ = initialized_pair("2025-06-18")
    message = {
        "jsonrpc": "2.0",
        "method": "notifications/elicitation/complete",
        "params": {"elicitationId": "x"},
    }
    client.receive_data(json.dumps(message).encode() + b"\n")
    with pytest.raises(RemoteProtocolError) as caught:
        client.next_event()
    assert caught.value.event_hint is None
    assert caught.value.message == "unknown notification: notifications/elicitation/complete"

"""The sans-IO client core (mcp_ref._client), tested without I/O: options, handshake,
params, progress tokens, results, the server's requests, roots, and ClientWire over an
in-memory pair of connections."""

from __future__ import annotations

import importlib.metadata
import json
import logging
from typing import Any

import pytest

import mcp_ref
from mcp_ref import (
    CLIENT,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    Connection,
    ConnectionClosed,
    ErrorResponse,
    LocalProtocolError,
    McpError,
    NoAnswerError,
    Notification,
    Progress,
    RemoteProtocolError,
    Request,
    RequestCancelled,
    RequestTimedOut,
    RequestTimeout,
    Response,
)
from mcp_ref import types as t
from mcp_ref._client import (
    DEFAULT,
    DEFAULT_CLIENT_INFO,
    ClientCore,
    ClientWire,
    ListWalk,
    Outcome,
    SessionClosed,
    as_timeout,
    result_of,
    typed_params,
    with_progress_token,
)
from mcp_ref._output_schema import JSONSCHEMA_AVAILABLE, OutputSchemaError
from mcp_ref._ratelimit import RateLimit

from ._pair import deliver, init_request, init_result, initialized_pair

spec = pytest.mark.spec


def sampler(params: Any) -> t.CreateMessageResult:
    return t.CreateMessageResult(role="assistant", content=t.TextContent(text="hi"), model="m")


# -- one SessionClosed, one set of defaults ----------------------------------------------


def test_one_session_closed_for_every_client() -> None:
    import mcp_ref.asyncio
    import mcp_ref.blocking
    import mcp_ref.client
    import mcp_ref.trio

    assert mcp_ref.SessionClosed is SessionClosed
    assert mcp_ref.client.SessionClosed is SessionClosed
    assert mcp_ref.asyncio.SessionClosed is SessionClosed
    assert mcp_ref.blocking.SessionClosed is SessionClosed
    assert mcp_ref.trio.SessionClosed is SessionClosed  # the session's own, too
    closed = SessionClosed("the server exited")
    assert closed.reason == "the server exited" and isinstance(closed, ConnectionError)


def test_one_client_info_for_every_client() -> None:
    import mcp_ref.asyncio
    import mcp_ref.blocking
    import mcp_ref.client

    assert mcp_ref.client.DEFAULT_CLIENT_INFO is DEFAULT_CLIENT_INFO
    assert mcp_ref.asyncio.DEFAULT_CLIENT_INFO is DEFAULT_CLIENT_INFO
    assert mcp_ref.blocking.DEFAULT_CLIENT_INFO is DEFAULT_CLIENT_INFO
    assert DEFAULT_CLIENT_INFO.version == importlib.metadata.version("mcp-ref")


# -- the handshake -----------------------------------------------------------------------


@spec(
    "2025-06-18/client/sampling#capabilities.1",
    "2025-06-18/client/elicitation#capabilities.1",
    "2025-06-18/client/roots#capabilities.1",
    "2025-06-18/basic/lifecycle#initialization.2",
)
def test_initialize_params_declare_what_was_given() -> None:
    bare = ClientCore().initialize_params()
    assert bare.capabilities == t.ClientCapabilities()
    assert bare.protocol_version == mcp_ref.LATEST_PROTOCOL_VERSION
    assert bare.client_info == DEFAULT_CLIENT_INFO
    full = ClientCore(
        sampling_handler=sampler,
        elicitation_handler=lambda params: t.ElicitResult(action="decline"),
        roots=[],
        protocol_version="2025-03-26",
    ).initialize_params()
    assert full.protocol_version == "2025-03-26"
    assert full.capabilities.sampling is not None
    assert full.capabilities.elicitation is not None
    assert full.capabilities.roots == t.ClientCapabilitiesRoots(list_changed=True)


@spec("2025-06-18/basic/lifecycle#version-negotiation.1")
def test_an_unsupported_version_is_refused_before_anything_is_sent() -> None:
    with pytest.raises(ValueError, match="2025-06-18"):
        ClientCore(protocol_version="1999-01-01")


@spec("2025-06-18/basic/lifecycle#initialization.4")
def test_initialized_keeps_the_result_and_gives_the_notification() -> None:
    core = ClientCore()
    note = core.initialized(init_result())
    assert note == Notification(method="notifications/initialized")
    assert core.initialize_result == init_result()


# -- params and progress tokens ----------------------------------------------------------


def test_typed_params() -> None:
    params = typed_params("tools/call", {"name": "echo", "arguments": {"x": 1}})
    assert params == t.CallToolRequestParams(name="echo", arguments={"x": 1})
    assert typed_params("tools/call", params) is params
    assert typed_params("ping", None) is None
    with pytest.raises(LocalProtocolError) as bad:
        typed_params("tools/call", {"arguments": {}})
    assert bad.value.code == INVALID_PARAMS


@spec("2025-06-18/basic/utilities/progress#progress-flow.1")
def test_progress_token_a_callers_token_is_kept_else_a_fresh_one() -> None:
    mine = t.CallToolRequestParams(name="x", meta={"progressToken": "mine", "other": 1})
    kept = with_progress_token("tools/call", mine, 7)
    assert kept.meta == {"progressToken": "mine", "other": 1}
    fresh = with_progress_token("tools/call", t.CallToolRequestParams(name="x"), 7)
    assert fresh.meta == {"progressToken": 7}
    # A method whose params are all optional gets params to carry the token.
    assert with_progress_token("tools/list", None, 8).meta == {"progressToken": 8}
    assert with_progress_token("ping", None, 9) is not None  # ping's params take _meta
    assert with_progress_token("no/such", None, 9) is None


# -- results -------------------------------------------------------------------------------


def test_result_of() -> None:
    assert result_of(Response(id=1, result=t.EmptyResult())) == t.EmptyResult()
    with pytest.raises(McpError) as error:
        result_of(ErrorResponse(id=1, code=-32602, message="no"))
    assert error.value.code == -32602 and not isinstance(error.value, NoAnswerError)
    with pytest.raises(NoAnswerError):
        result_of(RequestTimedOut(id=1, method="tools/call", elapsed=5.0))


def test_an_outcome_is_what_ends_a_request_and_nothing_else() -> None:
    ends = [
        Response(id=1, result=t.EmptyResult()),
        ErrorResponse(id=1, code=-32602, message="no"),
        RequestTimedOut(id=1, method="ping", elapsed=1.0),
    ]
    others = [
        Request(id=1, method="ping"),
        RequestCancelled(id=1),
        Notification(method="notifications/initialized"),
        Progress(request_id=1, progress_token=1, progress=1.0),
        ConnectionClosed(),
    ]
    assert all(isinstance(event, Outcome) for event in ends)
    assert not any(isinstance(event, Outcome) for event in others)


@pytest.mark.skipif(not JSONSCHEMA_AVAILABLE, reason="jsonschema is not installed")
@spec("2025-06-18/server/tools#output-schema.2")
def test_structured_results_are_checked_against_the_listed_schema() -> None:
    core = ClientCore()
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    listed = t.ListToolsResult(tools=[t.Tool(name="count", input_schema={}, output_schema=schema)])
    core.check_result("tools/list", None, listed)
    call = t.CallToolRequestParams(name="count")
    good = t.CallToolResult(content=[], structured_content={"n": 1})
    assert core.check_result("tools/call", call, good) is good
    bad = t.CallToolResult(content=[], structured_content={"n": "one"})
    with pytest.raises(OutputSchemaError) as error:
        core.check_result("tools/call", call, bad)
    assert error.value.code == INTERNAL_ERROR and error.value.result is bad
    # The tool list changed: the schema is forgotten until the tools are listed again.
    core.notified(Notification(method="notifications/tools/list_changed"))
    assert core.check_result("tools/call", call, bad) is bad


def test_list_walk_follows_cursors_and_refuses_a_repeated_one() -> None:
    walk = ListWalk("prompts/list")
    assert walk.next_params() is None
    walk.add(t.ListPromptsResult(prompts=[t.Prompt(name="a")], next_cursor="c1"))
    assert walk.next_params() == t.PaginatedRequestParams(cursor="c1")
    walk.add(t.ListPromptsResult(prompts=[t.Prompt(name="b")]))
    assert walk.next_params() is ListWalk.DONE
    assert [p.name for p in walk.items] == ["a", "b"]
    again = ListWalk("tools/list")
    again.next_params()
    again.add(t.ListToolsResult(tools=[], next_cursor="same"))
    again.next_params()
    with pytest.raises(RemoteProtocolError):
        again.add(t.ListToolsResult(tools=[], next_cursor="same"))


# -- the server's requests -----------------------------------------------------------------


@spec("2025-06-18/basic/utilities/ping#behavior-requirements.1")
def test_ping_is_answered_empty() -> None:
    core = ClientCore()
    assert core.finish("ping", core.handle("ping", None, now=0.0)) == t.EmptyResult()


def test_a_method_without_a_handler_is_refused() -> None:
    with pytest.raises(McpError) as error:
        ClientCore().handle("sampling/createMessage", None, now=0.0)
    assert error.value.code == METHOD_NOT_FOUND


@spec("2025-06-18/client/sampling#security-considerations.4")
def test_sampling_rate_limit_with_time_as_an_argument() -> None:
    core = ClientCore(sampling_handler=sampler, sampling_rate_limit=RateLimit(1.0, burst=2))
    for _ in range(2):
        core.handle("sampling/createMessage", None, now=100.0)
    with pytest.raises(McpError) as refused:
        core.handle("sampling/createMessage", None, now=100.0)
    assert refused.value.code == INTERNAL_ERROR and refused.value.data["retryAfter"] > 0
    assert core.handle("sampling/createMessage", None, now=101.0) == sampler(None)


@spec("2025-06-18/client/roots#root.1", "2025-06-18/client/roots#root-list-changes.1")
def test_roots_listed_checked_and_changed() -> None:
    root = t.Root(uri="file:///srv/data")
    core = ClientCore(roots=[root])
    assert core.finish("roots/list", core.handle("roots/list", None, 0.0)).roots == [root]
    assert core.set_roots(lambda: [t.Root(uri="ftp://x")]) == Notification(
        method="notifications/roots/list_changed"
    )
    with pytest.raises(ValueError, match="file://"):  # a callable's roots: checked each time
        core.finish("roots/list", core.handle("roots/list", None, 0.0))
    with pytest.raises(ValueError):
        ClientCore(roots=[t.Root(uri="file:///a/../etc")])
    with pytest.raises(LocalProtocolError, match="roots"):
        ClientCore().set_roots([root])


# -- ClientWire: the core with its connection ---------------------------------------------


def wire_pair(**options: Any) -> tuple[ClientWire, Connection]:
    client, server = initialized_pair()
    return ClientWire(client, **options), server


@spec("2025-06-18/basic/utilities/progress#progress-flow.1")
def test_wire_request_keeps_the_callers_progress_token_and_calls_back() -> None:
    wire, server = wire_pair()
    seen: list[Progress] = []
    params = {"name": "x", "_meta": {"progressToken": "mine"}}
    rid, typed, data = wire.send_request(
        "tools/call", params, now=0.0, timeout=DEFAULT, on_progress=seen.append
    )
    assert typed.meta == {"progressToken": "mine"}
    (request,) = deliver(data, server)
    assert request.id == rid and request.params.meta == {"progressToken": "mine"}
    rid2, _, data = wire.send_request("tools/list", None, now=0.0, timeout=5, on_progress=print)
    (listing,) = deliver(data, server)
    assert listing.params.meta == {"progressToken": rid2}
    # The server's progress reaches the callback of its request, and nothing after the
    # answer; a notification reaches on_notification.
    notes: list[Notification] = []
    wire.on_notification = notes.append
    report = t.ProgressNotificationParams(progress_token="mine", progress=1)
    wire.connection.receive_data(
        server.send(Notification(method="notifications/progress", params=report))
        + server.send(Response(id=rid, result=t.CallToolResult(content=[])))
        + server.send(Notification(method="notifications/tools/list_changed"))
    )
    kinds = []
    assert wire.drain(lambda event: kinds.append(type(event).__name__)) == b""
    assert kinds == ["Progress", "Response", "Notification"]
    assert [p.progress for p in seen] == [1]
    assert [n.method for n in notes] == ["notifications/tools/list_changed"]


@spec("2025-06-18/basic/utilities/cancellation#behavior-requirements.2")
def test_wire_cancel_never_cancels_initialize() -> None:
    conn = Connection(CLIENT)
    conn.send(init_request())
    assert ClientWire(conn).cancel(0, "initialize") == b""
    wire, server = wire_pair()
    rid, _, data = wire.send_request("ping", None, now=0.0, timeout=DEFAULT)
    deliver(data, server)
    sent = json.loads(wire.cancel(rid, "ping"))
    assert sent["method"] == "notifications/cancelled" and sent["params"]["requestId"] == rid
    assert wire.connection.requests_in_flight() == ([], [])


@spec("2025-06-18/basic/lifecycle#timeouts.2")
def test_wire_timeout_gives_no_answer_error() -> None:
    wire, server = wire_pair()
    rid, _, data = wire.send_request("ping", None, now=0.0, timeout=1.0)
    deliver(data, server)
    (cancel,) = wire.connection.handle_timeout(2.0)
    assert json.loads(cancel)["method"] == "notifications/cancelled"
    event = wire.next_event()
    assert isinstance(event, RequestTimedOut) and event.id == rid
    with pytest.raises(NoAnswerError):
        result_of(event)


def test_wire_answers_the_servers_requests() -> None:
    wire, server = wire_pair(sampling_handler=sampler)
    wire.connection.receive_data(server.send(Request(id="s1", method="ping")))
    ping = wire.next_event()
    assert isinstance(ping, Request)
    value = wire.finish(ping.method, wire.handle(ping.method, ping.params, 0.0))
    (answer,) = deliver(wire.reply(ping, value), server)
    assert isinstance(answer, Response) and (answer.id, answer.result) == ("s1", t.EmptyResult())
    ask = t.CreateMessageRequestParams(messages=[], max_tokens=1)
    wire.connection.receive_data(
        server.send(Request(id="s2", method="sampling/createMessage", params=ask))
    )
    sampling = wire.next_event()
    assert isinstance(sampling, Request)
    (failed,) = deliver(wire.reply(sampling, RuntimeError("oops")), server)
    assert isinstance(failed, ErrorResponse) and failed.code == INTERNAL_ERROR
    wire.connection.receive_data(
        server.send(Request(id="s3", method="sampling/createMessage", params=ask))
    )
    again = wire.next_event()
    assert isinstance(again, Request)
    (refused,) = deliver(wire.reply(again, McpError(-32600, "no")), server)
    assert isinstance(refused, ErrorResponse) and refused.code == -32600


@spec("2025-06-18/basic/lifecycle#operation.1")
def test_wire_protocol_errors_are_answered_and_end_of_input_closes() -> None:
    client, server = initialized_pair(client_caps=t.ClientCapabilities())
    wire = ClientWire(client)  # declares no sampling: the connection refuses it itself
    ask = {"messages": [], "maxTokens": 1}  # (our server connection would refuse to send it)
    message = {"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": ask}
    wire.connection.receive_data(json.dumps(message).encode() + b"\n")
    assert wire.next_event() is None
    refusal = json.loads(wire.data_to_send())
    assert refusal["id"] == "s1" and refusal["error"]["code"] == METHOD_NOT_FOUND
    wire.connection.receive_data(b"")
    assert isinstance(wire.next_event(), ConnectionClosed)
    assert wire.closed is not None
    with pytest.raises(SessionClosed):
        wire.send_request("ping", None, now=0.0, timeout=DEFAULT)


def test_the_clients_are_loops_around_the_core() -> None:
    """No client defines a SessionClosed, a progress-token rule or an initialize of its
    own: each imports the client core (read from the source)."""
    import ast
    from pathlib import Path

    package = Path(mcp_ref.__file__).parent
    for name in ("client/_client.py", "asyncio/_client.py", "blocking/_stdio.py"):
        tree = ast.parse((package / name).read_text(encoding="utf-8"))
        defined = {
            node.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        }
        assert not defined & {"SessionClosed", "with_progress_token", "typed_params"}, name
        assert "initialize_params" not in defined, name
        imported = {
            node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module is not None
        }
        assert "_client" in imported, name  # from .._client / from ._client (the core)


# -- the details a loop relies on: messages, logs, ids, bookkeeping -------------------------


def test_default_and_session_closed_read_well() -> None:
    assert repr(DEFAULT) == "DEFAULT"
    assert str(SessionClosed("gone")) == "gone"
    assert ClientCore().initialize_result is None
    assert ListWalk("tools/list").method == "tools/list"


def test_as_timeout() -> None:
    assert as_timeout(None) is None
    given = RequestTimeout(seconds=3, reset_on_progress=True)
    assert as_timeout(given) is given
    assert as_timeout(2.5) == RequestTimeout(seconds=2.5)
    with pytest.raises(ValueError):
        as_timeout(0)


def test_typed_params_names_the_method_and_the_field() -> None:
    with pytest.raises(LocalProtocolError) as bad:
        typed_params("tools/call", {"name": 5})
    assert bad.value.message == "bad params for tools/call: name: expected string, got integer"
    loose = {"anything": 1}
    assert typed_params("no/such", loose) is loose  # no method entry: as given


def test_progress_token_only_on_params_that_carry_meta() -> None:
    class Loose:
        meta = None

    loose = Loose()
    assert with_progress_token("tools/call", loose, 1) is loose  # not an attrs class
    argument = t.CompleteRequestParamsArgument(name="a", value="b")  # attrs, no _meta
    assert with_progress_token("completion/complete", argument, 1) is argument
    assert with_progress_token("tools/call", None, 1) is None  # name is required


def test_result_of_keeps_the_servers_error_and_the_method() -> None:
    with pytest.raises(McpError) as error:
        result_of(ErrorResponse(id=1, code=-32602, message="no such tool", data={"x": 1}))
    assert (error.value.code, error.value.message, error.value.data) == (
        -32602,
        "no such tool",
        {"x": 1},
    )
    with pytest.raises(NoAnswerError) as late:
        result_of(RequestTimedOut(id=1, method="tools/call", elapsed=5.0))
    assert late.value.data == {"method": "tools/call", "elapsed": 5.0}


def test_the_servers_requests_reach_their_own_handler_with_their_params() -> None:
    seen: list[Any] = []

    def elicit(params: Any) -> t.ElicitResult:
        seen.append(params)
        return t.ElicitResult(action="decline")

    core = ClientCore(
        sampling_handler=lambda params: seen.append(params) or sampler(params),
        elicitation_handler=elicit,
        roots=[t.Root(uri="file:///r")],
        sampling_rate_limit=RateLimit(1.0, burst=1),
        elicitation_rate_limit=RateLimit(1.0, burst=1),
    )
    ask = t.CreateMessageRequestParams(messages=[], max_tokens=1)
    assert core.handle("sampling/createMessage", ask, now=0.0) == sampler(ask)
    form = t.ElicitRequestFormParams(message="m", requested_schema={"type": "object"})
    assert core.handle("elicitation/create", form, now=0.0) == t.ElicitResult(action="decline")
    assert seen == [ask, form]
    # Each method has its own bucket: sampling's is empty now, elicitation's too.
    for method in ("sampling/createMessage", "elicitation/create"):
        with pytest.raises(McpError) as refused:
            core.handle(method, None, now=0.0)
        assert refused.value.code == INTERNAL_ERROR
    with pytest.raises(McpError) as error:
        ClientCore().handle("roots/list", None, now=0.0)
    assert (error.value.code, error.value.message) == (
        METHOD_NOT_FOUND,
        "method not found: roots/list",
    )
    assert core.finish("sampling/createMessage", "as is") == "as is"


def test_each_rate_limit_counts_its_own_method() -> None:
    core = ClientCore(
        sampling_handler=sampler,
        elicitation_handler=lambda params: t.ElicitResult(action="decline"),
        sampling_rate_limit=RateLimit(1.0, burst=1),
        elicitation_rate_limit=RateLimit(1.0, burst=1),
    )
    core.handle("sampling/createMessage", None, now=0.0)
    assert core.handle("elicitation/create", None, now=0.0) == t.ElicitResult(action="decline")


def test_set_roots_refuses_none() -> None:
    core = ClientCore(roots=[])
    with pytest.raises(LocalProtocolError) as error:
        core.set_roots(None)
    assert error.value.message == (
        "this client did not declare the roots capability; open it with roots=[...]"
    )


def test_wire_notifications_are_typed() -> None:
    wire, server = wire_pair(roots=[])
    data = wire.send_notification("notifications/roots/list_changed", {"_meta": {"k": 1}})
    (note,) = deliver(data, server)
    assert note.params == t.NotificationParams(meta={"k": 1})


def test_wire_forgets_progress_callbacks_when_answered_or_cancelled() -> None:
    wire, server = wire_pair()
    rid, _, data = wire.send_request("ping", None, now=0.0, timeout=None, on_progress=print)
    deliver(data, server)
    rid2, _, data = wire.send_request("ping", None, now=0.0, timeout=None, on_progress=print)
    deliver(data, server)
    assert set(wire._on_progress) == {rid, rid2}
    wire.connection.receive_data(server.send(Response(id=rid, result=t.EmptyResult())))
    assert isinstance(wire.next_event(), Response)
    assert set(wire._on_progress) == {rid2}
    wire.cancel(rid2, "ping")
    assert wire._on_progress == {}


def test_wire_cancel_of_what_cannot_be_cancelled_writes_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    conn = Connection(CLIENT)
    conn.send(init_request())
    with caplog.at_level(logging.DEBUG, logger="mcp_ref.client"):
        assert ClientWire(conn).cancel(0, "initialize") == b""
    assert caplog.records == []  # not even tried
    wire, _ = wire_pair()
    with caplog.at_level(logging.DEBUG, logger="mcp_ref.client"):
        assert wire.cancel(99, "ping") == b""
    assert [r.getMessage() for r in caplog.records] == [
        "could not cancel request 99: cannot cancel 99: no such request was sent"
    ]
    caplog.clear()
    wire.connection.close()
    with caplog.at_level(logging.DEBUG, logger="mcp_ref.client"):
        assert wire.cancel(5, "ping") == b""  # the session ended: nothing to write
    assert caplog.records == []


def test_wire_cancellation_says_why() -> None:
    wire, server = wire_pair()
    rid, _, data = wire.send_request("ping", None, now=0.0, timeout=DEFAULT)
    deliver(data, server)
    (cancelled,) = deliver(wire.cancel(rid, "ping"), server)
    assert cancelled.reason == "cancelled by the client"


def test_wire_goes_on_after_a_protocol_error_without_a_reply(
    caplog: pytest.LogCaptureFixture,
) -> None:
    wire, server = wire_pair()
    bad = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": "x"}}
    wire.connection.receive_data(
        json.dumps(bad).encode() + b"\n" + server.send(Request(id="s1", method="ping"))
    )
    with caplog.at_level(logging.WARNING, logger="mcp_ref.client"):
        event = wire.next_event()
    assert isinstance(event, Request) and event.id == "s1"
    assert wire.data_to_send() == b""
    assert [r.getMessage() for r in caplog.records] == [
        "protocol error from the server: invalid params for notifications/progress: "
        "progress: expected number, got string"
    ]


def test_wire_queues_every_refusal_in_order() -> None:
    client, _ = initialized_pair(client_caps=t.ClientCapabilities())
    wire = ClientWire(client)
    ask = {"messages": [], "maxTokens": 1}
    lines = [
        {"jsonrpc": "2.0", "id": rid, "method": "sampling/createMessage", "params": ask}
        for rid in ("s1", "s2")
    ]
    wire.connection.receive_data(b"".join(json.dumps(m).encode() + b"\n" for m in lines))
    assert wire.next_event() is None
    first, second = wire.data_to_send().splitlines()
    assert json.loads(first)["id"] == "s1" and json.loads(second)["id"] == "s2"
    assert wire.data_to_send() == b""


def test_wire_a_fatal_protocol_error_ends_the_session_with_its_reason() -> None:
    conn = Connection(CLIENT)
    wire = ClientWire(conn)
    _, _, data = wire.send_request("initialize", wire.initialize_params(), now=0.0, timeout=None)
    (request,) = deliver(data, Connection(mcp_ref.SERVER))
    info = {"name": "s", "version": "1"}
    answer = {"protocolVersion": "1999-01-01", "capabilities": {}, "serverInfo": info}
    conn.receive_data(json.dumps({"jsonrpc": "2.0", "id": request.id, "result": answer}).encode())
    conn.receive_data(b"\n")
    assert isinstance(wire.next_event(), ConnectionClosed)
    assert wire.closed is not None and "'1999-01-01'" in wire.closed
    with pytest.raises(SessionClosed) as closed:
        wire.send_notification("notifications/initialized")
    assert closed.value.reason == wire.closed


def test_wire_end_of_input_reason() -> None:
    wire, _ = wire_pair()
    wire.connection.receive_data(b"")
    assert isinstance(wire.next_event(), ConnectionClosed)
    assert wire.closed == "the server closed the connection"
    wire.close("later")
    assert wire.closed == "the server closed the connection"  # the first reason stays


def test_wire_hands_on_a_batchs_held_replies_after_a_cancellation() -> None:
    """2025-03-26: the server cancels the last request of a batch whose other reply is
    held; the connection then has the array to write, which next_event queues."""
    client, _ = initialized_pair("2025-03-26")
    wire = ClientWire(client)
    batch = [{"jsonrpc": "2.0", "id": rid, "method": "ping"} for rid in ("s1", "s2")]
    client.receive_data(json.dumps(batch).encode() + b"\n")
    first, second = wire.next_event(), wire.next_event()
    assert isinstance(first, Request) and isinstance(second, Request)
    assert wire.reply(first, t.EmptyResult()) == b""  # held for the array
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "s2"}}
    client.receive_data(json.dumps(cancel).encode() + b"\n")
    assert isinstance(wire.next_event(), RequestCancelled)
    assert json.loads(wire.data_to_send()) == [{"jsonrpc": "2.0", "id": "s1", "result": {}}]


def test_wire_replies_carry_the_request_id_and_what_went_wrong(
    caplog: pytest.LogCaptureFixture,
) -> None:
    wire, server = wire_pair()

    def answer(rid: str, outcome: Any) -> Any:
        wire.connection.receive_data(server.send(Request(id=rid, method="ping")))
        request = wire.next_event()
        assert isinstance(request, Request)
        (reply,) = deliver(wire.reply(request, outcome), server)
        return reply

    refused = answer("s1", McpError(-32600, "no", {"why": 1}))
    assert (refused.id, refused.code, refused.message, refused.data) == (
        "s1",
        -32600,
        "no",
        {"why": 1},
    )
    oops = RuntimeError("oops")
    with caplog.at_level(logging.ERROR, logger="mcp_ref.client"):
        failed = answer("s2", oops)
    assert (failed.id, failed.code, failed.message) == ("s2", INTERNAL_ERROR, "handler failed")
    (record,) = caplog.records
    assert record.getMessage() == "the ping handler failed" and record.exc_info[1] is oops
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="mcp_ref.client"):
        invalid = answer("s3", "nonsense")
    assert (invalid.id, invalid.code, invalid.message) == ("s3", INTERNAL_ERROR, "invalid result")
    assert [r.getMessage() for r in caplog.records] == [
        "invalid answer to ping: the result of ping must be Result, not str"
    ]

"""2025-06-18/basic/lifecycle: initialization, version and capability negotiation."""

from __future__ import annotations

import json

import pytest

from mcp_ref import (
    CLIENT,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    SERVER,
    Connection,
    LocalProtocolError,
    Notification,
    RemoteProtocolError,
    Request,
    Response,
    State,
)
from mcp_ref import types as t
from mcp_ref._state import TRANSITIONS, Direction, Kind

from ._pair import (
    SERVER_CAPS,
    deliver,
    init_request,
    init_result,
    initialized_pair,
)

spec = pytest.mark.spec


@spec(
    "2025-06-18/basic/lifecycle#initialization.1",
    "2025-06-18/basic/lifecycle#initialization.2",
    "2025-06-18/basic/lifecycle#initialization.3",
    "2025-06-18/basic/lifecycle#initialization.4",
)
def test_initialization_message_by_message() -> None:
    client, server = Connection(CLIENT), Connection(SERVER)
    data = client.send(init_request())
    assert client.state is State.INITIALIZING
    wire = json.loads(data)
    assert wire["method"] == "initialize" and wire["id"] == 0
    assert wire["params"]["protocolVersion"] == "2025-11-25"
    assert wire["params"]["clientInfo"] == {"name": "test-client", "version": "1.0"}
    (req,) = deliver(data, server)
    assert isinstance(req, Request) and req.method == "initialize"
    assert server.state is State.INITIALIZING
    data = server.send(Response(id=0, result=init_result()))
    assert server.state is State.INITIALIZED
    assert json.loads(data)["result"]["capabilities"]["tools"] == {"listChanged": True}
    (resp,) = deliver(data, client)
    assert isinstance(resp, Response) and resp.method == "initialize"
    assert client.state is State.INITIALIZED
    assert client.protocol_version == "2025-11-25"
    assert client.peer_capabilities == SERVER_CAPS
    data = client.send(Notification(method="notifications/initialized"))
    assert json.loads(data) == {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert client.state is State.OPERATING
    deliver(data, server)
    assert server.state is State.OPERATING


@spec("2025-06-18/basic/lifecycle#initialization.1")
def test_server_refuses_requests_before_initialize() -> None:
    server = Connection(SERVER)
    server.receive_data(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n')
    with pytest.raises(RemoteProtocolError) as exc:
        server.next_event()
    assert exc.value.code == INVALID_REQUEST
    assert exc.value.event_hint is not None and exc.value.event_hint.id == 1
    # The refusal can be sent, and the connection goes on.
    reply = json.loads(server.send(exc.value.event_hint))
    assert reply["id"] == 1 and reply["error"]["code"] == INVALID_REQUEST
    (req,) = deliver(Connection(CLIENT).send(init_request()), server)
    assert req.method == "initialize"


@spec("2025-06-18/basic/lifecycle#initialization.1")
def test_client_cannot_send_requests_before_initialize() -> None:
    client = Connection(CLIENT)
    with pytest.raises(LocalProtocolError, match="PRE_INIT"):
        client.send(Request(id=1, method="tools/list"))


@spec("2025-06-18/basic/lifecycle#initialization.5")
def test_pings_allowed_before_initialization() -> None:
    client, server = Connection(CLIENT), Connection(SERVER)
    (ping,) = deliver(client.send(Request(id="p", method="ping")), server)
    (pong,) = deliver(server.send(Response(id="p", result=t.EmptyResult())), client)
    assert ping.method == "ping" and pong.id == "p"
    assert client.state is State.PRE_INIT and server.state is State.PRE_INIT


@spec("2025-06-18/basic/lifecycle#initialization.5")
def test_client_sends_only_pings_while_initialize_is_in_flight() -> None:
    client = Connection(CLIENT)
    client.send(init_request())
    client.send(Request(id=1, method="ping"))
    with pytest.raises(LocalProtocolError):
        client.send(Request(id=2, method="tools/list"))


@spec("2025-06-18/basic/lifecycle#initialization.6")
def test_server_waits_for_initialized_before_requests() -> None:
    client, server = Connection(CLIENT), Connection(SERVER)
    deliver(client.send(init_request()), server)
    deliver(server.send(Response(id=0, result=init_result())), client)
    # Server may log and ping, but not send other requests yet.
    server.send(
        Notification(
            method="notifications/message",
            params=t.LoggingMessageNotificationParams(level="info", data="hello"),
        )
    )
    server.send(Request(id=10, method="ping"))
    with pytest.raises(LocalProtocolError):
        server.send(Request(id=11, method="roots/list"))
    # A client request before its initialized notification is refused.
    server.receive_data(b'{"jsonrpc":"2.0","id":5,"method":"tools/list"}\n')
    with pytest.raises(RemoteProtocolError) as exc:
        server.next_event()
    assert exc.value.event_hint is not None and exc.value.event_hint.id == 5


@spec("2025-06-18/basic/lifecycle#version-negotiation.3")
@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_server_answers_the_requested_supported_version(version: str) -> None:
    client, server = initialized_pair(version)
    assert client.protocol_version == server.protocol_version == version


@spec("2025-06-18/basic/lifecycle#version-negotiation.3")
def test_server_may_not_answer_another_version_when_requested_is_supported() -> None:
    client, server = Connection(CLIENT), Connection(SERVER)
    deliver(client.send(init_request("2025-06-18")), server)
    with pytest.raises(LocalProtocolError, match="2025-06-18"):
        server.send(Response(id=0, result=init_result("2025-11-25")))
    assert server.state is State.INITIALIZING


@spec(
    "2025-06-18/basic/lifecycle#version-negotiation.4",
    "2025-06-18/basic/lifecycle#version-negotiation.5",
)
def test_unsupported_requested_version_gets_latest() -> None:
    server = Connection(SERVER)
    server.receive_data(
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999-01-01",'
        b'"capabilities":{},"clientInfo":{"name":"old","version":"0"}}}\n'
    )
    (req,) = [server.next_event()]
    assert server.negotiated_version_for(req.params.protocol_version) == "2025-11-25"
    with pytest.raises(LocalProtocolError):
        server.send(Response(id=1, result=init_result("1999-01-01")))
    reply = json.loads(server.send(Response(id=1, result=init_result("2025-11-25"))))
    assert reply["result"]["protocolVersion"] == "2025-11-25"


@spec("2025-06-18/basic/lifecycle#version-negotiation.1")
def test_client_must_request_a_version_it_supports() -> None:
    with pytest.raises(LocalProtocolError):
        Connection(CLIENT).send(init_request("1999-01-01"))


@spec(
    "2025-06-18/basic/lifecycle#version-negotiation.6",
    "2025-06-18/basic/lifecycle#error-handling.1",
)
def test_client_reports_a_version_it_cannot_speak() -> None:
    client = Connection(CLIENT)
    client.send(init_request())
    client.receive_data(
        b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2099-01-01","capabilities":{},'
        b'"serverInfo":{"name":"future","version":"9"}}}\n'
    )
    with pytest.raises(RemoteProtocolError, match="2099-01-01"):
        client.next_event()
    assert client.state is State.CLOSED


@spec("2025-06-18/basic/lifecycle#operation.1", "2025-06-18/basic/lifecycle#error-handling.1")
def test_capabilities_not_negotiated_are_refused_both_ways() -> None:
    client, server = initialized_pair(
        server_caps=t.ServerCapabilities(tools=t.ServerCapabilitiesTools())
    )
    # Send side: the client knows the server has no prompts.
    with pytest.raises(LocalProtocolError, match="prompts"):
        client.send(Request(id=1, method="prompts/list"))
    # Receive side: a client that sends it anyway gets -32601.
    server.receive_data(b'{"jsonrpc":"2.0","id":2,"method":"prompts/list"}\n')
    with pytest.raises(RemoteProtocolError) as exc:
        server.next_event()
    assert exc.value.code == METHOD_NOT_FOUND and exc.value.event_hint.id == 2
    # Sub-capabilities too: no listChanged declared, no list_changed notification.
    with pytest.raises(LocalProtocolError):
        server.send(Notification(method="notifications/tools/list_changed"))
    # Received anyway (the peer's fault, no harm to us): delivered, not refused.
    (note,) = deliver(b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n', client)
    assert note.method == "notifications/tools/list_changed"
    # And the server cannot ask for sampling the client did not declare.
    client2, server2 = initialized_pair(client_caps=t.ClientCapabilities())
    with pytest.raises(LocalProtocolError, match="sampling"):
        server2.send(
            Request(
                id=1,
                method="sampling/createMessage",
                params=t.CreateMessageRequestParams(messages=[], max_tokens=10),
            )
        )


@spec("2025-06-18/basic/lifecycle#operation.1")
def test_methods_of_newer_revisions_are_refused_in_older_ones() -> None:
    client, server = initialized_pair("2025-03-26")
    with pytest.raises(LocalProtocolError):
        server.send(
            Request(
                id=1,
                method="elicitation/create",
                params=t.ElicitRequestFormParams(
                    message="hi",
                    requested_schema=t.ElicitRequestFormParamsRequestedSchema(properties={}),
                ),
            )
        )


def test_completion_needs_no_capability_in_2024_11_05() -> None:
    client, server = initialized_pair("2024-11-05", server_caps=t.ServerCapabilities())
    data = client.send(
        Request(
            id=1,
            method="completion/complete",
            params=t.CompleteRequestParams(
                ref=t.PromptReference(name="p"),
                argument=t.CompleteRequestParamsArgument(name="a", value="x"),
            ),
        )
    )
    (req,) = deliver(data, server)
    assert req.method == "completion/complete"


def test_table_miss_names_role_state_direction_and_kind() -> None:
    server = Connection(SERVER)
    with pytest.raises(LocalProtocolError) as exc:
        server.send(Notification(method="notifications/tools/list_changed"))
    assert "server" in exc.value.message
    for role, table in TRANSITIONS.items():
        for (state, direction, kind), new in table.items():
            assert isinstance(direction, Direction) and isinstance(kind, Kind)
            if kind is Kind.CLOSE:
                expected = State.CLOSING if direction is Direction.RECEIVE else State.CLOSED
                assert new is expected
            assert state is not State.CLOSED, role
            if state is State.CLOSING:
                assert direction is Direction.SEND


def test_end_of_input_closes_after_answering_what_was_accepted() -> None:
    from mcp_ref import NEED_DATA, ConnectionClosed

    client, server = initialized_pair()
    # The client sends a request and closes its output (e.g. `printf ... | mcp-ref serve`).
    server.receive_data(client.send(Request(id=1, method="tools/list")) + b"")
    server.receive_data(b"")
    assert isinstance(server.next_event(), Request)
    assert isinstance(server.next_event(), ConnectionClosed)
    assert server.next_event() is NEED_DATA
    assert server.state is State.CLOSING
    # The accepted request is still answered; nothing new may start.
    with pytest.raises(LocalProtocolError, match="CLOSING"):
        server.send(Request(id=5, method="ping"))
    (resp,) = deliver(server.send(Response(id=1, result=t.ListToolsResult(tools=[]))), client)
    assert resp.id == 1
    server.close()
    assert server.state is State.CLOSED
    with pytest.raises(LocalProtocolError, match="closed"):
        server.send(Notification(method="notifications/tools/list_changed"))


# ---------------------------------------------------------------------------------------
# Issue 13: the high-level server and client honour the lifecycle rules (each clause's
# tests kill the mutants of the driver lines it tags).


async def _initialize_raw(server: object, version: str) -> dict[str, object]:
    """Serve ``server`` (a ``mcp_ref.server.Server``) in memory, send it a raw
    ``initialize`` asking for ``version``, and return the ``result`` it answers."""
    import trio

    from mcp_ref.trio import memory_channel_pair

    client_end, server_end = memory_channel_pair()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server.serve, server_end)  # type: ignore[attr-defined]
            await client_end.send(
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "initialize",
                        "params": {
                            "protocolVersion": version,
                            "capabilities": {},
                            "clientInfo": {"name": "raw", "version": "0"},
                        },
                    }
                ).encode()
            )
            reply = json.loads(await client_end.receive())
            await client_end.aclose()
    assert reply["id"] == 1, reply
    result: dict[str, object] = reply["result"]
    return result


@spec("2025-06-18/basic/lifecycle#initialization.3")
async def test_the_server_answers_initialize_with_its_capabilities_and_information() -> None:
    """``mcp_ref.server.Server`` answers ``initialize`` with the version, the
    capabilities of what it serves, its own ``serverInfo`` and its instructions."""
    from mcp_ref.server import Server

    server = Server("lifecycle-srv", "2.5", instructions="call echo first", logging=False)

    @server.tool()
    async def echo(text: str) -> str:
        return text

    result = await _initialize_raw(server, "2025-06-18")
    assert result == {
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {"listChanged": True}},
        "serverInfo": {"name": "lifecycle-srv", "version": "2.5"},
        "instructions": "call echo first",
    }


@spec("2025-06-18/basic/lifecycle#version-negotiation.4")
async def test_the_server_answers_an_unsupported_version_with_one_it_supports() -> None:
    """An unsupported version is answered with the latest the server supports; a
    supported one (the contrast) is answered unchanged, so the answer depends on what
    the client asked."""
    from mcp_ref import LATEST_PROTOCOL_VERSION, SUPPORTED_VERSIONS
    from mcp_ref.server import Server

    server = Server("lifecycle-srv", "2.5")
    result = await _initialize_raw(server, "1999-01-01")
    assert result["protocolVersion"] == LATEST_PROTOCOL_VERSION
    older = min(SUPPORTED_VERSIONS)
    assert older != LATEST_PROTOCOL_VERSION
    assert (await _initialize_raw(server, older))["protocolVersion"] == older


@spec("2025-06-18/basic/lifecycle#initialization.2")
async def test_the_client_initiates_with_initialize_and_waits_no_longer_than_asked(
    autojump_clock: object,
) -> None:
    """``open_client`` starts the phase with an ``initialize`` request holding the
    version, the capabilities and ``clientInfo``, and waits for its answer for
    ``initialize_timeout`` (5 s here), not the session's default 60 s."""
    import trio
    import trio.testing

    from mcp_ref import RequestTimeout
    from mcp_ref.client import NoAnswerError, open_client
    from mcp_ref.trio import StreamChannel

    from .test_trio_session import RawPeer

    with trio.fail_after(1000):
        a, b = trio.testing.memory_stream_pair()
        peer = RawPeer(b)
        start = trio.current_time()
        with pytest.raises(NoAnswerError):
            async with open_client(
                StreamChannel(a),
                protocol_version="2025-06-18",
                client_info=t.Implementation(name="cli", version="3"),
                timeout=RequestTimeout(seconds=60),
                initialize_timeout=RequestTimeout(seconds=5),
            ):
                raise AssertionError("must not get here")
        assert trio.current_time() - start == 5
        first = await peer.receive()
    assert first["method"] == "initialize"
    assert first["params"]["protocolVersion"] == "2025-06-18"
    assert first["params"]["capabilities"] == {}
    assert first["params"]["clientInfo"] == {"name": "cli", "version": "3"}

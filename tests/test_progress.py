"""2025-06-18/basic/utilities/progress."""

from __future__ import annotations

import json

import pytest

from mcp_ref import LocalProtocolError, Notification, Progress, ProgressDropped, Request, Response
from mcp_ref import types as t

from ._pair import deliver, initialized_pair

spec = pytest.mark.spec


def call(rid: object, token: object) -> Request:
    return Request(
        id=rid,
        method="tools/call",
        params=t.CallToolRequestParams(name="slow", arguments={}, meta={"progressToken": token}),
    )


def progress(
    token: object, value: float, total: float | None = None, message: str | None = None
) -> Notification:
    return Notification(
        method="notifications/progress",
        params=t.ProgressNotificationParams(
            progress_token=token, progress=value, total=total, message=message
        ),
    )


@spec(
    "2025-06-18/basic/utilities/progress#progress-flow.3",
    "2025-06-18/basic/utilities/progress#progress-flow.5",
)
def test_progress_message_by_message() -> None:
    client, server = initialized_pair()
    data = client.send(call(1, "tok"))
    assert json.loads(data)["params"]["_meta"] == {"progressToken": "tok"}
    deliver(data, server)
    data = server.send(progress("tok", 0.5, 2, "half"))
    assert json.loads(data)["params"] == {
        "progressToken": "tok",
        "progress": 0.5,
        "total": 2,
        "message": "half",
    }
    (ev,) = deliver(data, client)
    assert ev == Progress(request_id=1, progress_token="tok", progress=0.5, total=2, message="half")


@spec("2025-06-18/basic/utilities/progress#progress-flow.2")
def test_tokens_unique_among_active_requests() -> None:
    client, server = initialized_pair()
    deliver(client.send(call(1, 7)), server)
    with pytest.raises(LocalProtocolError, match="in use"):
        client.send(call(2, 7))
    # "7" is a different token from 7.
    deliver(client.send(call(3, "7")), server)
    # A peer reusing an active token is refused with -32602.
    server.receive_data(
        b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":7}}}\n'
    )
    from mcp_ref import RemoteProtocolError

    with pytest.raises(RemoteProtocolError) as exc:
        server.next_event()
    assert exc.value.code == -32602 and exc.value.event_hint.id == 4


@spec("2025-06-18/basic/utilities/progress#progress-flow.1")
def test_tokens_must_be_string_or_integer() -> None:
    client, _ = initialized_pair()
    with pytest.raises(LocalProtocolError):
        client.send(call(1, 1.5))


@spec("2025-06-18/basic/utilities/progress#progress-flow.4")
def test_progress_must_increase() -> None:
    client, server = initialized_pair()
    deliver(client.send(call(1, "t")), server)
    deliver(server.send(progress("t", 1)), client)
    with pytest.raises(LocalProtocolError, match="increase"):
        server.send(progress("t", 1))
    (ev,) = deliver(
        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":0.5}}\n',
        client,
    )
    assert isinstance(ev, ProgressDropped) and "increase" in ev.reason


@spec(
    "2025-06-18/basic/utilities/progress#behavior-requirements.1",
    "2025-06-18/basic/utilities/progress#implementation-notes.3",
    "2025-06-18/basic/utilities/progress#implementation-notes.1",
)
def test_progress_only_for_active_requests() -> None:
    client, server = initialized_pair()
    deliver(client.send(call(1, "t")), server)
    deliver(server.send(Response(id=1, result=t.CallToolResult(content=[]))), client)
    # Progress after completion: refused on send, dropped and reported on receive.
    with pytest.raises(LocalProtocolError):
        server.send(progress("t", 2))
    (ev,) = deliver(
        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":3}}\n',
        client,
    )
    assert isinstance(ev, ProgressDropped) and ev.progress_token == "t"
    (ev,) = deliver(
        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"zzz","progress":3}}\n',
        client,
    )
    assert isinstance(ev, ProgressDropped)


# ---------------------------------------------------------------------------------------
# Issue 13: each clause's tests kill the mutants of its lines.


def _request_line(rid: object, token: object) -> bytes:
    params = {"name": "slow", "arguments": {}, "_meta": {"progressToken": token}}
    return json.dumps(
        {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
    ).encode()


@spec("2025-06-18/basic/utilities/progress#progress-flow.1")
def test_a_received_token_is_a_string_or_an_integer() -> None:
    """Requests whose token is a string or an integer are accepted (with that token);
    any other token is refused with -32602 answering the request's id, and the reply
    is a well-formed error."""
    from mcp_ref import RemoteProtocolError

    client, server = initialized_pair()
    for rid, token in ((1, "tok"), (2, 7), (3, "7")):
        (req,) = deliver(_request_line(rid, token) + b"\n", server)
        assert isinstance(req, Request) and req.id == rid
        assert req.params.meta == {"progressToken": token}
    for rid, token in ((4, 1.5), (5, True), (6, [1]), (7, {"a": 1})):
        server.receive_data(_request_line(rid, token) + b"\n")
        with pytest.raises(RemoteProtocolError) as exc:
            server.next_event()
        assert exc.value.code == -32602 and exc.value.event_hint is not None
        reply = json.loads(server.send(exc.value.event_hint))
        assert reply["id"] == rid and reply["error"]["code"] == -32602
        assert type(reply["error"]["message"]) is str


@spec("2025-06-18/basic/utilities/progress#progress-flow.2")
def test_clients_use_the_unique_request_id_as_the_token() -> None:
    """The client core's with_progress_token (every client's) puts the request
    id, unique among active requests, in ``_meta.progressToken``, keeping other meta;
    a peer reusing an active token gets a well-formed -32602 error."""
    from mcp_ref import RemoteProtocolError
    from mcp_ref._client import with_progress_token

    client, server = initialized_pair()
    for rid in (11, "twelve"):
        params = with_progress_token(
            "tools/call", t.CallToolRequestParams(name="x", meta={"k": "v"}), rid
        )
        sent = json.loads(client.send(Request(id=rid, method="tools/call", params=params)))
        assert sent["params"]["_meta"] == {"k": "v", "progressToken": rid}
        (req,) = deliver(json.dumps(sent).encode() + b"\n", server)
        assert req.params.meta["progressToken"] == rid
    server.receive_data(_request_line(13, 11) + b"\n")
    with pytest.raises(RemoteProtocolError) as exc:
        server.next_event()
    reply = json.loads(server.send(exc.value.event_hint))
    assert reply["id"] == 13 and reply["error"]["code"] == -32602
    assert type(reply["error"]["message"]) is str


@spec("2025-06-18/basic/utilities/progress#progress-flow.4")
def test_a_repeated_progress_value_is_dropped() -> None:
    """Equal is not an increase: the same value again is refused on send and dropped,
    naming its token, on receive."""
    client, server = initialized_pair()
    deliver(client.send(call(1, "t")), server)
    (ev,) = deliver(server.send(progress("t", 1)), client)
    assert isinstance(ev, Progress) and ev.progress == 1
    with pytest.raises(LocalProtocolError, match="increase"):
        server.send(progress("t", 1))
    line = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}\n'
    (ev,) = deliver(line, client)
    assert isinstance(ev, ProgressDropped) and ev.progress_token == "t"
    (ev,) = deliver(server.send(progress("t", 1.5)), client)
    assert isinstance(ev, Progress) and ev.progress == 1.5


# ---------------------------------------------------------------------------------------
# Issue 13: the trio session's own progress tokens (mcp_ref/trio/_session.py).


@spec("2025-06-18/basic/utilities/progress#progress-flow.2")
async def test_the_trio_session_gives_each_active_request_its_own_progress_token() -> None:
    """Two requests in flight at once, each with an ``on_progress`` callback: each
    carries ``_meta.progressToken``, the two tokens differ, and progress sent with one
    token reaches only that request's callback."""
    import trio

    from mcp_ref import CLIENT
    from mcp_ref.trio import memory_channel_pair, open_session

    from .test_trio_session import ClientHandler

    init_result = {
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "raw", "version": "0"},
    }
    seen: dict[str, list[float]] = {"a": [], "b": []}
    client_end, peer = memory_channel_pair()
    with trio.fail_after(10):
        async with open_session(client_end, CLIENT, ClientHandler()) as session:
            async with trio.open_nursery() as nursery:

                async def init() -> None:
                    await session.send_request(
                        "initialize",
                        t.InitializeRequestParams(
                            protocol_version="2025-06-18",
                            capabilities=t.ClientCapabilities(),
                            client_info=t.Implementation(name="c", version="1"),
                        ),
                    )

                nursery.start_soon(init)
                req = json.loads(await peer.receive())
                await peer.send(
                    json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": init_result}).encode()
                )
            await session.send_notification("notifications/initialized")
            assert json.loads(await peer.receive())["method"] == "notifications/initialized"
            results: dict[str, object] = {}

            async def call(name: str) -> None:
                results[name] = await session.send_request(
                    "tools/call",
                    t.CallToolRequestParams(name=name),
                    on_progress=lambda p: seen[name].append(p.progress),
                )

            async with trio.open_nursery() as nursery:
                nursery.start_soon(call, "a")
                first = json.loads(await peer.receive())
                nursery.start_soon(call, "b")
                second = json.loads(await peer.receive())
                calls = {m["params"]["name"]: m for m in (first, second)}
                tokens = {n: m["params"]["_meta"]["progressToken"] for n, m in calls.items()}
                assert tokens["a"] != tokens["b"]
                for name, value in (("b", 5), ("a", 1), ("b", 6)):
                    note = {"progressToken": tokens[name], "progress": value}
                    await peer.send(
                        json.dumps(
                            {"jsonrpc": "2.0", "method": "notifications/progress", "params": note}
                        ).encode()
                    )
                for name in ("a", "b"):
                    answer = {"content": [{"type": "text", "text": name}]}
                    await peer.send(
                        json.dumps(
                            {"jsonrpc": "2.0", "id": calls[name]["id"], "result": answer}
                        ).encode()
                    )
            await peer.aclose()
    assert seen == {"a": [1], "b": [5, 6]}
    assert sorted(results) == ["a", "b"]

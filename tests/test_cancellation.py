"""2025-06-18/basic/utilities/cancellation, both ways."""

from __future__ import annotations

import functools
import json
import logging

import pytest

from mcp_ref import LocalProtocolError, Notification, Request, RequestCancelled, Response
from mcp_ref import types as t

from ._pair import deliver, initialized_pair

spec = pytest.mark.spec


def cancel(rid: object, reason: str | None = None) -> Notification:
    return Notification(
        method="notifications/cancelled",
        params=t.CancelledNotificationParams(request_id=rid, reason=reason),
    )


@spec(
    "2025-06-18/basic/utilities/cancellation#behavior-requirements.3",
    "2025-06-18/basic/utilities/cancellation#behavior-requirements.5",
)
def test_cancel_a_request_message_by_message() -> None:
    client, server = initialized_pair()
    deliver(client.send(Request(id=1, method="tools/list")), server)
    data = client.send(cancel(1, "user gave up"))
    assert json.loads(data) == {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "user gave up"},
    }
    (ev,) = deliver(data, server)
    assert ev == RequestCancelled(id=1, reason="user gave up")
    # The receiver sends no response after the cancel ...
    assert server.send(Response(id=1, result=t.ListToolsResult(tools=[]))) == b""
    # ... and a late response that crosses the cancel is dropped by the sender.
    assert deliver(b'{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}\n', client) == []


@spec("2025-06-18/basic/utilities/cancellation#behavior-requirements.2")
def test_initialize_is_never_cancelled() -> None:
    from mcp_ref import CLIENT, SERVER, Connection

    from ._pair import init_request

    client, server = Connection(CLIENT), Connection(SERVER)
    deliver(client.send(init_request()), server)
    with pytest.raises(LocalProtocolError, match="initialize"):
        client.send(cancel(0))
    # A peer that cancels initialize anyway is ignored.
    assert (
        deliver(
            b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}}\n',
            server,
        )
        == []
    )


@spec(
    "2025-06-18/basic/utilities/cancellation#behavior-requirements.1",
    "2025-06-18/basic/utilities/cancellation#behavior-requirements.4",
    "2025-06-18/basic/utilities/cancellation#error-handling.1",
)
def test_unknown_or_finished_ids() -> None:
    client, server = initialized_pair()
    # Sending a cancel for a request never sent is our bug.
    with pytest.raises(LocalProtocolError):
        client.send(cancel(99))
    # For a request already answered, nothing is sent.
    deliver(client.send(Request(id=1, method="ping")), server)
    deliver(server.send(Response(id=1, result=t.EmptyResult())), client)
    assert client.send(cancel(1)) == b""
    # Receiving cancels for unknown or finished ids: ignored.
    assert deliver(client.send(Request(id=2, method="ping")), server)
    assert deliver(server.send(Response(id=2, result=t.EmptyResult())), client)
    line = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s}}\n'
    assert deliver(line % b"2", server) == []
    assert deliver(line % b'"nope"', server) == []


@spec("2025-06-18/basic/utilities/cancellation#timing-considerations.1")
def test_server_cancels_client_request_too() -> None:
    client, server = initialized_pair()
    deliver(server.send(Request(id="r", method="roots/list")), client)
    (ev,) = deliver(server.send(cancel("r")), client)
    assert ev == RequestCancelled(id="r", reason=None)
    assert client.send(Response(id="r", result=t.ListRootsResult(roots=[]))) == b""


def test_server_request_with_the_initialize_id_can_be_cancelled() -> None:
    # The client's initialize had id 0; the server's own request 0 is another request.
    client, server = initialized_pair()
    deliver(server.send(Request(id=0, method="roots/list")), client)
    (ev,) = deliver(server.send(cancel(0)), client)
    assert ev == RequestCancelled(id=0, reason=None)


@spec("2025-06-18/basic/utilities/cancellation#error-handling.1")
def test_malformed_cancellation_is_ignored_without_a_reply() -> None:
    from mcp_ref import RemoteProtocolError

    client, server = initialized_pair()
    deliver(client.send(Request(id=1, method="ping")), server)
    # No requestId (optional since 2025-11-25): nothing to cancel, no event.
    assert (
        deliver(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}\n', server) == []
    )
    for bad in (
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":null}}\n',
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[1]}}\n',
    ):
        server.receive_data(bad)
        with pytest.raises(RemoteProtocolError) as exc:
            server.next_event()
        assert exc.value.event_hint is None  # a notification is never answered
    # The request it may have meant is untouched: its response still goes out.
    reply = server.send(Response(id=1, result=t.EmptyResult()))
    assert json.loads(reply)["id"] == 1


@spec("2025-06-18/basic/utilities/cancellation#implementation-notes.1")
async def test_the_session_logs_the_cancellation_reason(caplog: pytest.LogCaptureFixture) -> None:
    import trio

    from .test_trio_session import LIMIT, ServerHandler, call, session_pair

    sh = ServerHandler()
    with caplog.at_level(logging.DEBUG, logger="mcp_ref"), trio.fail_after(LIMIT):
        async with session_pair(sh) as (client, server, c_wire, s_wire):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(call, client, "slow")
                await sh.started_event("slow").wait()
                nursery.cancel_scope.cancel()
            while not sh.cancelled:
                await trio.lowlevel.checkpoint()
    (note,) = [m for m in c_wire.sent if m.get("method") == "notifications/cancelled"]
    reason = note["params"].get("reason")
    assert reason
    assert any(
        "cancelled request" in r.getMessage() and reason in r.getMessage() for r in caplog.records
    )


# ---------------------------------------------------------------------------------------
# Issue 13: each clause's tests kill the mutants of its lines.


@spec("2025-06-18/basic/utilities/cancellation#behavior-requirements.2")
def test_only_the_clients_initialize_is_never_cancelled() -> None:
    """The rule protects one request: the client's initialize, received by the server.
    A server honours the cancel of the client's other requests (an int id like the
    initialize's), and a client honours the cancel of a server request whose id
    equals the initialize's."""
    client, server = initialized_pair()  # the client's initialize had id 0
    deliver(client.send(Request(id=5, method="ping")), server)
    (ev,) = deliver(client.send(cancel(5)), server)
    assert ev == RequestCancelled(id=5, reason=None)
    deliver(server.send(Request(id=0, method="roots/list")), client)
    (ev,) = deliver(server.send(cancel(0)), client)
    assert ev == RequestCancelled(id=0, reason=None)
    # "0" is not the initialize's id 0.
    deliver(client.send(Request(id="0", method="ping")), server)
    (ev,) = deliver(client.send(cancel("0")), server)
    assert ev == RequestCancelled(id="0", reason=None)


@spec("2025-06-18/basic/utilities/cancellation#behavior-requirements.1")
async def test_a_caller_cancelled_request_is_cancelled_by_its_own_id_and_route() -> None:
    """When the caller of the trio session's ``send_request`` stops waiting, the
    ``notifications/cancelled`` references the request it had issued (its id) and
    travels with it: the same ``related_request_id`` (the HTTP stream of the incoming
    request it belongs to), so the peer gets it where the request went."""
    import trio

    from mcp_ref import SERVER
    from mcp_ref.trio import memory_channel_pair, open_session

    from .test_trio_session import INIT, ServerHandler

    class Routed:
        """The server's channel, keeping each message sent with its related id."""

        def __init__(self, inner: object) -> None:
            self.inner = inner
            self.framing = "messages"
            self.sent: list[tuple[dict[str, object], object]] = []

        async def receive(self) -> bytes:
            data: bytes = await self.inner.receive()  # type: ignore[attr-defined]
            return data

        async def send(self, data: bytes, *, related_request_id: object = None) -> None:
            self.sent.append((json.loads(data), related_request_id))
            await self.inner.send(data, related_request_id=related_request_id)  # type: ignore[attr-defined]

        async def aclose(self) -> None:
            await self.inner.aclose()  # type: ignore[attr-defined]

    peer, server_end = memory_channel_pair()
    routed = Routed(server_end)
    with trio.fail_after(10):
        async with open_session(routed, SERVER, ServerHandler()) as session:
            await peer.send(json.dumps(INIT).encode())
            assert json.loads(await peer.receive())["id"] == "init"
            await peer.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    functools.partial(session.send_request, "ping", related_request_id="call-7")
                )
                ping = json.loads(await peer.receive())
                assert ping["method"] == "ping"
                nursery.cancel_scope.cancel()
            note = json.loads(await peer.receive())
            await peer.aclose()
    assert note["method"] == "notifications/cancelled"
    assert note["params"]["requestId"] == ping["id"]
    assert (note, "call-7") in routed.sent and (ping, "call-7") in routed.sent

"""How a trio session takes input a transport hands over from its own tasks
(``Session.push``, as a Streamable HTTP POST body would be): in order, with the reader's
backpressure, and never half-taken.

Source: 2025-06-18/basic/transports#sending-messages-to-the-server.1.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing

from mcp_ref import SERVER, Notification
from mcp_ref import types as t
from mcp_ref.events import RequestId
from mcp_ref.trio import RequestContext, Session, SessionClosed, open_session

from ._pair import SERVER_CAPS, SERVER_INFO

LIMIT = 10


class PushChannel:
    """A "messages" channel whose input is pushed; what the session sends is kept."""

    framing = "messages"
    eof_reason = None

    def __init__(self) -> None:
        self.session: Session | None = None
        self.attached = trio.Event()
        self.sent: list[dict[str, Any]] = []
        self.got = trio.Event()
        self._end = trio.Event()

    def attach_session(self, session: Session) -> None:
        self.session = session
        self.attached.set()

    async def receive(self) -> bytes:
        await self._end.wait()
        return b""

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        self.sent.append(json.loads(data))
        self.got.set()

    async def aclose(self) -> None:
        self._end.set()

    async def wait_sent(self, n: int) -> None:
        while len(self.sent) < n:
            self.got = trio.Event()
            await self.got.wait()


class Handler:
    def __init__(self) -> None:
        self.notes: list[str] = []
        self.release = trio.Event()

    async def handle_request(self, ctx: RequestContext) -> Any:
        if ctx.method == "initialize":
            return t.InitializeResult(
                protocol_version="2025-06-18", capabilities=SERVER_CAPS, server_info=SERVER_INFO
            )
        return t.CallToolResult(content=[t.TextContent(text=ctx.params.name)])

    async def handle_notification(self, session: Session, notification: Notification) -> None:
        await self.release.wait()  # slow: the notification queue fills up
        params = notification.params
        self.notes.append(params.meta["n"] if params and params.meta else notification.method)


def message(**fields: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **fields}).encode()


INIT = message(
    id=0,
    method="initialize",
    params={
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"},
    },
)


async def test_pushed_messages_are_handled_like_received_ones() -> None:
    channel = PushChannel()
    with trio.fail_after(LIMIT):
        async with open_session(channel, SERVER, Handler()) as session:
            await channel.attached.wait()
            assert channel.session is session
            await session.push(INIT)
            await channel.wait_sent(1)
            await session.push(message(method="notifications/initialized"))
            await session.push(message(id=1, method="tools/call", params={"name": "echo"}))
            await session.push(message(id=2, method="ping"))
            assert 2 in [m["id"] for m in channel.sent]  # answered before push returned
            await channel.wait_sent(3)
    answers = {m["id"]: m["result"] for m in channel.sent}
    assert sorted(answers) == [0, 1, 2]
    assert answers[1]["content"][0]["text"] == "echo" and answers[2] == {}


async def test_a_push_after_the_session_closed_is_refused() -> None:
    channel = PushChannel()
    with trio.fail_after(LIMIT):
        async with open_session(channel, SERVER, Handler()) as session:
            session.abort("gone")
            with pytest.raises(SessionClosed):
                await session.push(INIT)


async def test_a_push_waits_for_room_and_loses_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The notification queue holds one, and the handler of notifications is stuck on
    # the first: a push that brings one more waits for room (backpressure), even past
    # its caller's deadline: what the core took is dispatched whole, never dropped.
    channel = PushChannel()
    handler = Handler()

    async def release_later() -> None:
        await trio.sleep(5)
        handler.release.set()

    def note(n: int) -> bytes:
        params = {"_meta": {"n": n}}
        return message(method="notifications/roots/list_changed", params=params)

    with trio.fail_after(LIMIT):
        async with (
            open_session(channel, SERVER, handler, max_queued_notifications=1) as session,
            trio.open_nursery() as nursery,
        ):
            await session.push(INIT)
            await session.push(message(method="notifications/initialized"))
            await session.push(note(1))  # queued: the handler is stuck on the first
            nursery.start_soon(release_later)
            start = trio.current_time()
            with trio.move_on_after(1):
                await session.push(note(2))  # no room until the release
            assert trio.current_time() - start == pytest.approx(5)
            await session.push(note(3))
            while len(handler.notes) < 4:
                await trio.sleep(0.1)
    assert handler.notes == ["notifications/initialized", 1, 2, 3]


async def test_a_cancelled_caller_sends_nothing() -> None:
    channel = PushChannel()
    with trio.fail_after(LIMIT):
        async with open_session(channel, SERVER, Handler()) as session:
            await session.push(INIT)
            await session.push(message(method="notifications/initialized"))
            await channel.wait_sent(1)
            with trio.CancelScope() as scope:
                scope.cancel()
                await session.send_request("ping")
            with trio.CancelScope() as scope:
                scope.cancel()
                await session.send_notification("notifications/tools/list_changed")
    assert [m.get("id") for m in channel.sent] == [0]  # the initialize answer only


class Tools(Handler):
    """Records which requests were handled; its notification handler is as slow as
    :class:`Handler`'s."""

    def __init__(self) -> None:
        super().__init__()
        self.finished: list[Any] = []

    async def handle_request(self, ctx: RequestContext) -> Any:
        if ctx.method != "initialize":
            self.finished.append(ctx.request_id)
        return await super().handle_request(ctx)


def call(rid: int) -> bytes:
    return message(id=rid, method="tools/call", params={"name": "echo"})


async def test_a_push_cancelled_while_waiting_its_turn_gives_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Another push holds the dispatch (it waits for room in the notification queue); a
    # push cancelled while it waits its turn gives nothing to the session: its request
    # is never handled, and the one pushed after it is.
    channel = PushChannel()
    both = Tools()  # its notification handler is stuck until released

    def note() -> bytes:
        return message(method="notifications/roots/list_changed")

    with trio.fail_after(LIMIT):
        async with (
            open_session(channel, SERVER, both, max_queued_notifications=1) as session,
            trio.open_nursery() as nursery,
        ):
            await session.push(INIT)
            await session.push(message(method="notifications/initialized"))  # stuck on it
            await session.push(note())  # queued: the queue is full now
            nursery.start_soon(session.push, note())  # waits for room, holding the lock
            await trio.testing.wait_all_tasks_blocked()
            with trio.move_on_after(1) as scope:
                await session.push(call(5))
            assert scope.cancelled_caught
            both.release.set()
            await session.push(call(6))
            await channel.wait_sent(2)
    assert [m["id"] for m in channel.sent] == [0, 6]
    assert both.finished == [6]

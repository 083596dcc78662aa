"""The trio session's one write path (mcp_ref/trio/_session_api.py, ``Session._write``,
one locked send): messages go out whole and in the order the core made them; a sender
waits its turn while a write is under way, and one cancelled while waiting sends
nothing; a write under way when the owner closes still completes; abort and a failed
write end the writes waiting behind it.  A channel with ``send_nowait`` gets each message
it can take at once that way; what would block goes through ``send``, in its place.

Source: 2025-06-18/basic/transports#stdio (whole newline-delimited messages) and
2025-06-18/basic/lifecycle#shutdown (what was accepted before the close)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from mcp_ref import CLIENT, SERVER
from mcp_ref.events import RequestId
from mcp_ref.trio import Session, SessionClosed, StreamChannel, memory_channel_pair, open_session

from ._pair import CLIENT_CAPS, init_request
from .test_trio_session import LIMIT, ClientHandler, Recording, ServerHandler, call, session_pair

NOTE = "notifications/roots/list_changed"


async def _echo_many(client: Any, n: int) -> dict[int, Any]:
    """Call the echo tool ``n`` times at once; each call's number as its answer gave it."""
    answers: dict[int, Any] = {}

    async def one(i: int) -> None:
        result = await call(client, "echo", args={"i": i})
        answers[i] = json.loads(result.content[0].text)["i"]

    async with trio.open_nursery() as nursery:
        for i in range(n):
            nursery.start_soon(one, i)
    return answers


@pytest.mark.parametrize("framing", ["lines", "messages"])
async def test_many_callers_at_once_get_their_own_answers(framing: str) -> None:
    with trio.fail_after(LIMIT):
        async with session_pair(framing=framing) as (client, *_):
            assert await _echo_many(client, 100) == {i: i for i in range(100)}


async def test_a_message_larger_than_the_socket_buffer_goes_out_whole() -> None:
    # 4 MiB takes many writes of the socket; the small answer made meanwhile waits in
    # the outbox and follows it whole.
    a, b = trio.socket.socketpair()
    big = "x" * (4 * 1024 * 1024)
    with trio.fail_after(LIMIT):
        channels = (StreamChannel(trio.SocketStream(a)), StreamChannel(trio.SocketStream(b)))
        async with session_pair(channels=channels) as (client, *_):
            results: dict[str, Any] = {}

            async def one(key: str, args: dict[str, Any]) -> None:
                results[key] = json.loads((await call(client, "echo", args=args)).content[0].text)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(one, "big", {"text": big})
                nursery.start_soon(one, "small", {"n": 1})
            assert results == {"big": {"text": big}, "small": {"n": 1}}


async def test_a_cancelled_caller_sends_nothing() -> None:
    with trio.fail_after(LIMIT):
        async with session_pair(framing="messages") as (client, _, c_wire, _s):
            before = len(c_wire.sent)
            with trio.CancelScope() as scope:
                scope.cancel()
                await client.send_notification(NOTE)
            assert len(c_wire.sent) == before


class Gated(Recording):
    """A recording channel whose ``send`` waits while ``held``; ``sends`` counts calls."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.held = False
        self.opened = trio.Event()
        self.sends = 0

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        self.sends += 1
        if self.held:
            await self.opened.wait()
        await super().send(data, related_request_id=related_request_id)

    def open(self) -> None:
        self.held = False
        self.opened.set()


class Taking(Gated):
    """A gated ``"messages"`` channel with ``send_nowait``: it takes a message at once
    unless ``held`` (then ``trio.WouldBlock``) or ``broken``; ``taken`` counts them."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.taken = 0
        self.broken = False

    def send_nowait(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        if self.broken:
            raise trio.BrokenResourceError("the peer went away")
        if self.held:
            raise trio.WouldBlock
        self.inner.send_nowait(data, related_request_id=related_request_id)
        self.taken += 1
        self.sent.append(json.loads(data))


@asynccontextmanager
async def gated_client(
    framing: str, wrap: type[Gated] = Gated
) -> AsyncIterator[tuple[Session, Any]]:
    """An initialized client session whose channel can hold its writes."""
    if framing == "lines":
        a, b = trio.testing.memory_stream_pair()
        ca, cb = wrap(StreamChannel(a)), StreamChannel(b)
    else:
        ma, mb = memory_channel_pair()
        ca, cb = wrap(ma), mb
    async with session_pair(channels=(ca, cb)) as (client, *_):
        yield client, ca


@pytest.mark.parametrize("framing", ["lines", "messages"])
async def test_senders_wait_their_turn_behind_a_write_and_keep_their_order(framing: str) -> None:
    with trio.fail_after(LIMIT):
        async with gated_client(framing) as (client, wire):
            wire.held, sends, sent = True, wire.sends, len(wire.sent)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.send_request, "ping")  # the writer, held
                await trio.testing.wait_all_tasks_blocked()
                for _ in range(3):  # each waits for the send lock, in turn
                    nursery.start_soon(client.send_notification, NOTE)
                    await trio.testing.wait_all_tasks_blocked()
                assert wire.sends == sends + 1
                wire.open()
            assert wire.sends == sends + 4  # one send each
            assert [m.get("method") for m in wire.sent[sent:]] == ["ping", NOTE, NOTE, NOTE]


async def test_a_sender_cancelled_while_waiting_its_turn_sends_nothing() -> None:
    with trio.fail_after(LIMIT):
        async with gated_client("messages") as (client, wire):
            wire.held, sent = True, len(wire.sent)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.send_notification, NOTE)  # the writer, held
                await trio.testing.wait_all_tasks_blocked()
                with trio.move_on_after(1) as waited:
                    await client.send_request("ping")  # waits for the send lock
                assert waited.cancelled_caught  # cancelled while waiting: nothing made
                wire.open()
            await client.send_notification(NOTE)
            assert [m.get("method") for m in wire.sent[sent:]] == [NOTE, NOTE]


async def test_a_write_under_way_when_the_owner_closes_completes() -> None:
    with trio.fail_after(LIMIT):
        a, b = memory_channel_pair()
        wire, sh = Gated(a), ServerHandler()
        async with open_session(b, SERVER, sh), trio.open_nursery() as outside:
            async with open_session(wire, CLIENT, ClientHandler()) as client:
                await client.send_request("initialize", init_request(caps=CLIENT_CAPS).params)
                wire.held = True
                outside.start_soon(client.send_notification, "notifications/initialized")
                await trio.testing.wait_all_tasks_blocked()
                outside.start_soon(_open_later, wire)
            # The block ended while the write was held: it still reaches the server.
            while not sh.notes:
                await trio.testing.wait_all_tasks_blocked()
            assert [n.method for n in sh.notes] == ["notifications/initialized"]


async def _open_later(wire: Gated) -> None:
    """Open the gate once every other task waits (the block's end waits on the write)."""
    await trio.testing.wait_all_tasks_blocked()
    wire.open()


async def test_abort_drops_what_was_not_written() -> None:
    with trio.fail_after(LIMIT):
        async with gated_client("messages") as (client, wire):
            wire.held, sent = True, len(wire.sent)
            outcome: list[BaseException] = []

            async def writer() -> None:
                try:
                    await client.send_notification(NOTE)
                except SessionClosed as exc:
                    outcome.append(exc)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(writer)  # held
                await trio.testing.wait_all_tasks_blocked()
                nursery.start_soon(writer)  # waits its turn
                await trio.testing.wait_all_tasks_blocked()
                client.abort("gone")
            assert len(outcome) == 2 and all("gone" in str(exc) for exc in outcome)
            assert len(wire.sent) == sent  # neither went out
            with pytest.raises(SessionClosed):
                await client.send_notification(NOTE)


async def test_a_failed_write_fails_the_requests_behind_it() -> None:
    with trio.fail_after(LIMIT):
        async with gated_client("messages") as (client, wire):
            wire.held = True
            outcome: list[BaseException] = []

            async def attempt(work: Any) -> None:
                try:
                    await work
                except SessionClosed as exc:
                    outcome.append(exc)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(attempt, client.send_notification(NOTE))  # the writer
                await trio.testing.wait_all_tasks_blocked()
                nursery.start_soon(attempt, client.send_request("ping"))  # behind it
                await trio.testing.wait_all_tasks_blocked()
                await wire.inner.send_channel.aclose()  # the held write fails
                wire.open()
            assert len(outcome) == 2
            assert all("sending to the peer failed" in str(exc) for exc in outcome)
            assert client.closed


async def test_a_message_the_channel_takes_at_once_skips_the_waiting_send() -> None:
    with trio.fail_after(LIMIT):
        async with gated_client("messages", Taking) as (client, wire):
            taken, sends = wire.taken, wire.sends
            await client.send_notification(NOTE)
            assert (wire.taken, wire.sends) == (taken + 1, sends)


async def test_what_would_block_goes_the_waiting_way_and_keeps_its_place() -> None:
    with trio.fail_after(LIMIT):
        async with gated_client("messages", Taking) as (client, wire):
            wire.held, taken, sends, sent = True, wire.taken, wire.sends, len(wire.sent)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.send_request, "ping")  # would block: held
                await trio.testing.wait_all_tasks_blocked()
                for _ in range(3):  # each waits its turn, then is taken at once
                    nursery.start_soon(client.send_notification, NOTE)
                    await trio.testing.wait_all_tasks_blocked()
                assert (wire.taken, wire.sends) == (taken, sends + 1)
                wire.open()
            assert (wire.taken, wire.sends) == (taken + 3, sends + 1)
            methods = [m.get("method") for m in wire.sent[sent:]]
            assert methods == ["ping", NOTE, NOTE, NOTE]
            await client.send_notification(NOTE)  # room again: taken at once
            assert wire.taken == taken + 4


async def test_a_message_refused_at_once_fails_the_session() -> None:
    with trio.fail_after(LIMIT):
        async with gated_client("messages", Taking) as (client, wire):
            wire.broken = True
            with pytest.raises(SessionClosed, match="sending to the peer failed"):
                await client.send_notification(NOTE)
            assert client.closed
            with pytest.raises(SessionClosed):
                await client.send_request("ping")


async def test_a_small_memory_buffer_keeps_every_answer() -> None:
    # Two messages of room per direction: writes are taken at once until the buffer
    # is full, then wait for the reader; every caller still gets its own answer.
    with trio.fail_after(LIMIT):
        async with session_pair(channels=memory_channel_pair(max_buffer=2)) as (client, *_):
            assert await _echo_many(client, 50) == {i: i for i in range(50)}

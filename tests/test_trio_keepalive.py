"""Keepalive pings (mcp_ref.trio.Keepalive): a session pings a silent peer and ends
when the peer stops answering.  The peer is the raw other end of a memory channel
pair, driven by hand; time is the autojump MockClock."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
import trio
import trio.testing

from mcp_ref import SERVER, Notification
from mcp_ref.trio import Keepalive, RequestContext, Session, memory_channel_pair, open_session

spec = pytest.mark.spec

LIMIT = 600  # seconds of MockClock time any test may take


class Quiet:
    """A handler that never gets anything to do."""

    async def handle_request(self, ctx: RequestContext) -> Any:
        raise AssertionError("no request expected")

    async def handle_notification(self, session: Session, notification: Notification) -> None:
        pass


async def _pings_seen(peer: Any, log: list[tuple[float, dict[str, Any]]], answer: Any) -> None:
    """Read what the session sends; answer each ping with ``answer(id)`` (None: no
    answer)."""
    while True:
        data = await peer.receive()
        if not data:
            return
        message = json.loads(data)
        log.append((trio.current_time(), message))
        if message.get("method") == "ping":
            reply = answer(message["id"])
            if reply is not None:
                await peer.send(json.dumps(reply).encode())


def _methods(log: list[tuple[float, dict[str, Any]]]) -> list[str | None]:
    return [m.get("method") for _, m in log]


@spec(
    "2025-06-18/basic/utilities/ping#implementation-considerations.1",
    "2025-06-18/basic/utilities/ping#error-handling.1",
    "2025-06-18/basic/utilities/ping#error-handling.2",
    "2025-06-18/basic/utilities/ping#error-handling.3",
    "2025-06-18/basic/utilities/ping#implementation-considerations.3",
)
async def test_a_silent_peer_is_pinged_then_given_up_on(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    ours, peer = memory_channel_pair()
    log: list[tuple[float, dict[str, Any]]] = []
    keepalive = Keepalive(interval=5, timeout=2, max_failures=2)
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_pings_seen, peer, log, lambda rid: None)
            start = trio.current_time()
            async with open_session(ours, SERVER, Quiet(), keepalive=keepalive) as session:
                await session.wait_closed()
                ended = trio.current_time() - start
            nursery.cancel_scope.cancel()
    assert session.close_reason is not None and "ping" in session.close_reason
    # ping at 5 s, unanswered at 7 s (cancelled), ping at 10 s, unanswered at 12 s: end.
    assert _methods(log) == ["ping", "notifications/cancelled"] * 2
    assert [round(at - start) for at, m in log if m.get("method") == "ping"] == [5, 10]
    assert round(ended) == 12
    assert sum("no answer to ping" in r.getMessage() for r in caplog.records) == 2


@spec(
    "2025-06-18/basic/utilities/ping#implementation-considerations.2",
    "2025-06-18/basic/utilities/ping#implementation-considerations.4",
)
async def test_an_answering_peer_is_pinged_once_per_interval(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ours, peer = memory_channel_pair()
    log: list[tuple[float, dict[str, Any]]] = []

    def pong(rid: Any) -> Any:
        return {"jsonrpc": "2.0", "id": rid, "result": {}}

    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_pings_seen, peer, log, pong)
            async with open_session(ours, SERVER, Quiet(), keepalive=Keepalive(interval=7)) as s:
                await trio.sleep(70.5)
                assert not s.closed
            nursery.cancel_scope.cancel()
    times = [at for at, m in log if m.get("method") == "ping"]
    assert len(times) == 10  # at 7, 14, ... 70 s
    assert all(round(b - a) == 7 for a, b in itertools.pairwise(times))


async def test_an_error_answer_still_counts_as_alive(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ours, peer = memory_channel_pair()
    log: list[tuple[float, dict[str, Any]]] = []

    def refuse(rid: Any) -> Any:
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no ping"}}

    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_pings_seen, peer, log, refuse)
            keepalive = Keepalive(interval=3, timeout=1, max_failures=1)
            async with open_session(ours, SERVER, Quiet(), keepalive=keepalive) as s:
                await trio.sleep(30)
                assert not s.closed
            nursery.cancel_scope.cancel()
    assert _methods(log).count("ping") >= 9


@spec("2025-06-18/basic/utilities/ping#implementation-considerations.4")
async def test_a_talking_peer_is_never_pinged(autojump_clock: trio.testing.MockClock) -> None:
    ours, peer = memory_channel_pair()
    log: list[tuple[float, dict[str, Any]]] = []
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_pings_seen, peer, log, lambda rid: None)
            keepalive = Keepalive(interval=5, timeout=1, max_failures=1)
            async with open_session(ours, SERVER, Quiet(), keepalive=keepalive) as s:
                for n in range(20):  # the peer pings us every 4 s for 80 s
                    await trio.sleep(4)
                    await peer.send(
                        json.dumps({"jsonrpc": "2.0", "id": n, "method": "ping"}).encode()
                    )
                await trio.sleep(1)
                assert not s.closed
            nursery.cancel_scope.cancel()
    # Only our answers to the peer's pings went out: no ping of ours.
    assert _methods(log) == [None] * 20


@pytest.mark.parametrize(
    "kw",
    [
        {"interval": 0},
        {"interval": -1},
        {"interval": 1, "timeout": 0},
        {"interval": 1, "max_failures": 0},
    ],
)
def test_bad_keepalive_settings_are_refused(kw: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="Keepalive"):
        Keepalive(**kw)

"""Streamable HTTP, "Sending Messages to the Server": the SSE stream that answers a POST.

On 2025-06-18 sessions (no priming event) the head of a POST's SSE answer waits a
moment for the first events, so that a quick answer is one write.  What the handler
sends before its response must still reach the client at once, or a handler that waits
for the client would wait forever; a late answer gets its head before the handler ends;
a dropped POST is resumed with nothing lost; a cancelled request ends its stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from mcp_ref._http import HttpLimits
from mcp_ref.server import Context, Server
from mcp_ref.trio.http.common import H11Stream
from mcp_ref.trio.http.server import HttpServerInfo, open_http_server

from . import test_transports_http as transports
from ._http_raw import RawConnection, notification_body, open_session
from .test_transports_http import call

TIMEOUT = 10
T = "2025-06-18/basic/transports#"
V = "2025-06-18"


class Control(transports.Control):
    def __init__(self) -> None:
        super().__init__()
        self.tasks: list[trio.lowlevel.Task] = []


def make_server(ctrl: Control) -> Server:
    """The tools of ``test_transports_http`` (echo, steps, block...) and two more."""
    server = transports.make_server(ctrl)

    @server.tool()
    async def where(text: str) -> str:
        """Echo, noting the task the handler ran in."""
        ctrl.tasks.append(trio.lowlevel.current_task())
        return text

    @server.tool()
    async def ask(ctx: Context) -> str:
        """Ping the client (over this request's stream) and wait for its answer."""
        await ctx.send_request("ping")
        return "asked"

    return server


@asynccontextmanager
async def serve(**kw: Any) -> AsyncIterator[tuple[HttpServerInfo, Control]]:
    ctrl = Control()
    async with open_http_server(make_server(ctrl), **kw) as info:
        yield info, ctrl


async def post(conn: RawConnection, body: bytes, sid: str | None) -> Any:
    return await conn.request("POST", body=body, session_id=sid, version=V)


async def test_a_quick_answer_is_one_write_and_the_connection_is_reused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The head waits for the first events (HEAD_WAIT_SECONDS at most): a quick answer
    # is written at once, head, event and end together.
    writes: list[bytes] = []
    write = H11Stream.write

    async def recording(self: H11Stream, data: bytes) -> None:
        writes.append(data)
        await write(self, data)

    with trio.fail_after(TIMEOUT):
        async with serve() as (info, ctrl):
            sid, _ = await open_session(info.port, version=V)
            conn = await RawConnection.open(info.port)
            monkeypatch.setattr(H11Stream, "write", recording)
            for rid in (2, 3):
                writes.clear()
                ans = await post(conn, call(rid, "where", {"text": f"t{rid}"}), sid)
                assert ans.status == 200 and ans.content_type == "text/event-stream"
                got = await ans.message()
                assert got is not None and got[1]["id"] == rid
                assert got[1]["result"]["content"][0]["text"] == f"t{rid}"
                assert await ans.message() is None
                assert len(writes) == 1 and writes[0].startswith(b"HTTP/1.1 200")
            assert len(ctrl.tasks) == 2
            await conn.aclose()


@pytest.mark.spec(
    T + "sending-messages-to-the-server.11",
    T + "sending-messages-to-the-server.12",
    T + "sending-messages-to-the-server.13",
)
async def test_what_the_handler_sends_before_its_response_is_written_at_once() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, ctrl):
            sid, _ = await open_session(info.port, version=V)
            conn = await RawConnection.open(info.port)
            await ctrl.steps_in.send(0)  # the head comes with the first message
            ans = await post(conn, call(2, "steps"), sid)
            assert ans.status == 200
            for n in range(3):
                if n:
                    await ctrl.steps_in.send(n)
                got = await ans.message()  # while the handler still runs
                assert got is not None and got[1]["params"]["data"] == f"step {n}"
            await ctrl.steps_in.send(-1)
            got = await ans.message()
            assert got is not None and got[1]["id"] == 2 and "result" in got[1]
            assert await ans.message() is None
            again = await post(conn, call(3, "echo", {"text": "next"}), sid)
            got = await again.message()
            assert got is not None and got[1]["id"] == 3
            await conn.aclose()


@pytest.mark.spec(T + "sending-messages-to-the-server.11")
async def test_a_handler_that_waits_for_the_client_gets_its_answer() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            sid, _ = await open_session(info.port, version=V)
            conn = await RawConnection.open(info.port)
            ans = await post(conn, call(2, "ask"), sid)
            got = await ans.message()
            assert got is not None and got[1]["method"] == "ping"
            other = await RawConnection.open(info.port)
            reply = b'{"jsonrpc":"2.0","id":%s,"result":{}}' % str(got[1]["id"]).encode()
            assert (await post(other, reply, sid)).status == 202
            got = await ans.message()
            assert got is not None and got[1]["id"] == 2
            assert got[1]["result"]["content"][0]["text"] == "asked"
            for c in (conn, other):
                await c.aclose()


@pytest.mark.spec(T + "resumability-and-redelivery.4", T + "sending-messages-to-the-server.15")
async def test_a_dropped_post_is_resumed_with_nothing_lost() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, ctrl):
            sid, _ = await open_session(info.port, version=V)
            conn = await RawConnection.open(info.port)
            ans = await post(conn, call(2, "steps"), sid)
            await ctrl.steps_in.send(0)
            got = await ans.message()
            assert got is not None and got[0] is not None
            last = got[0]
            await conn.aclose()  # the client goes; the handler goes on
            for n in (1, 2, -1):
                await ctrl.steps_in.send(n)
            await trio.testing.wait_all_tasks_blocked()
            resumed = await RawConnection.open(info.port)
            again = await resumed.request("GET", session_id=sid, last_event_id=last, version=V)
            seen = []
            while (got := await again.message()) is not None:
                seen.append(got[1].get("params", {}).get("data") or got[1].get("id"))
            assert seen == ["step 1", "step 2", 2]
            await resumed.aclose()


@pytest.mark.spec("2025-06-18/basic/utilities/cancellation#behavior-requirements.3")
async def test_a_cancelled_request_ends_its_stream_without_a_response() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            sid, _ = await open_session(info.port, version=V)
            conn = await RawConnection.open(info.port)
            ans = await post(conn, call(2, "block"), sid)
            other = await RawConnection.open(info.port)
            cancel = notification_body("notifications/cancelled", {"requestId": 2})
            assert (await post(other, cancel, sid)).status == 202
            assert await ans.message() is None
            again = await post(conn, call(3, "echo", {"text": "after"}), sid)  # still usable
            got = await again.message()
            assert got is not None and got[1]["id"] == 3
            for c in (conn, other):
                await c.aclose()


async def test_a_late_answer_gets_its_head_before_the_handler_ends() -> None:
    # A handler that sends nothing for a while: the head goes once the answer is late
    # (HEAD_WAIT_SECONDS), so the client's HTTP layer sees a response.
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, ctrl):
            sid, _ = await open_session(info.port, version=V)
            conn = await RawConnection.open(info.port)
            ans = await post(conn, call(2, "steps"), sid)  # returns once the head came
            assert ans.status == 200 and ans.content_type == "text/event-stream"
            await ctrl.steps_in.send(-1)
            got = await ans.message()
            assert got is not None and got[1]["id"] == 2
            await conn.aclose()


@pytest.fixture
def clock() -> trio.testing.MockClock:
    """A clock that runs at real speed and can be jumped forward."""
    return trio.testing.MockClock(rate=1.0)


@pytest.mark.parametrize("json_response", [False, True])
async def test_a_session_with_a_request_in_progress_is_not_idle(
    clock: trio.testing.MockClock, json_response: bool
) -> None:
    # In JSON mode nothing is attached to a stream: the session is still in use while
    # the request runs.
    limits = HttpLimits(session_idle_seconds=100)
    with trio.fail_after(TIMEOUT + 150):  # the mock clock jumps 150 s
        async with serve(limits=limits, json_response=json_response) as (info, ctrl):
            sid, _ = await open_session(info.port, version=V)
            conn = await RawConnection.open(info.port)
            async with trio.open_nursery() as nursery:
                got: list[Any] = []

                async def steps() -> None:
                    ans = await post(conn, call(2, "steps"), sid)
                    got.append(await (ans.json() if json_response else ans.message()))

                nursery.start_soon(steps)
                await trio.testing.wait_all_tasks_blocked()
                clock.jump(150)
                await trio.testing.wait_all_tasks_blocked()
                await ctrl.steps_in.send(-1)
            answer = got[0] if json_response else got[0][1]
            assert answer["id"] == 2 and "result" in answer
            other = await RawConnection.open(info.port)
            ans = await post(other, call(3, "echo", {"text": "still here"}), sid)
            assert ans.status == 200
            for c in (conn, other):
                await c.aclose()


@pytest.mark.spec(T + "sending-messages-to-the-server.8")
async def test_json_mode_logs_go_to_the_get_stream_and_are_written_before_the_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # In JSON mode the POST's answer is one JSON body and what the handler sends goes on
    # the GET stream: the server writes that before the POST's answer, so the client gets them in that order as far as two
    # connections allow.  (Client and server share this event loop, so the order is
    # read from the server's writes.)
    writes: list[str] = []
    write = H11Stream.write

    async def recording(self: H11Stream, data: bytes) -> None:
        if b"step " in data:
            writes.append("log")
        elif b'"result"' in data:
            writes.append("answer")
        await write(self, data)

    monkeypatch.setattr(H11Stream, "write", recording)
    with trio.fail_after(TIMEOUT):
        async with serve(json_response=True) as (info, ctrl):
            sid, _ = await open_session(info.port, version=V)
            listen = await RawConnection.open(info.port)
            stream = await listen.request("GET", session_id=sid, version=V)
            assert stream.status == 200
            conn = await RawConnection.open(info.port)
            for rid in (2, 3, 4):
                writes.clear()
                await ctrl.steps_in.send(rid)
                await ctrl.steps_in.send(-1)
                reply = await post(conn, call(rid, "steps"), sid)
                assert reply.content_type == "application/json"
                answer = await reply.json()
                assert answer["id"] == rid
                got = await stream.message()
                assert got is not None and got[1]["params"]["data"] == f"step {rid}"
                assert writes == ["log", "answer"]
            for c in (conn, listen):
                await c.aclose()

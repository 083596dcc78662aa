"""The Streamable HTTP server (mcp_ref.trio serve_http), byte for byte over loopback.

Every test starts a server in its own nursery and talks to it with the raw h11 client of
``tests/_http_raw.py``, so each status code, header and event is checked as sent.
Tests where time matters run on a ``MockClock`` that also moves at real speed (so
``fail_after`` still guards them) and jump it past the bound under test.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from mcp_ref import types as t
from mcp_ref._http import HttpLimits, parse_event_id
from mcp_ref.server import Context, Server
from mcp_ref.trio.http import HttpServerInfo, close_sse_stream, open_http_server

from ._http_raw import (
    RawConnection,
    init_body,
    notification_body,
    open_session,
    request_body,
)

TIMEOUT = 10
T = "2025-06-18/basic/transports#"


class Control:
    """What the test tools share with the test: steps to log, a gate to release."""

    def __init__(self) -> None:
        self.steps_in, self.steps_out = trio.open_memory_channel[int](100)
        self.release = trio.Event()
        self.polled = trio.Event()


def make_server(ctrl: Control) -> Server:
    server = Server("http-test", "1.0")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    @server.tool()
    async def steps(ctx: Context) -> str:
        """Log each number the test sends, until -1 (all related to this request)."""
        async for n in ctrl.steps_out:
            if n < 0:
                break
            await ctx.log("info", f"step {n}")
        return "steps done"

    @server.tool()
    async def announce(ctx: Context, text: str) -> str:
        """A notification unrelated to any request (for the GET stream), and a related one."""
        params = t.LoggingMessageNotificationParams(level="info", data=f"unrelated {text}")
        await ctx.session.send_notification("notifications/message", params)
        await ctx.log("info", f"related {text}")
        return "announced"

    @server.tool()
    async def poll(ctx: Context) -> str:
        """End this request's SSE stream, then answer once released."""
        await ctx.log("info", "before the close")
        assert close_sse_stream(ctx.request_id)
        ctrl.polled.set()
        await ctrl.release.wait()
        await ctx.log("info", "after the close")
        return "polled"

    @server.tool()
    async def block() -> str:
        await trio.sleep_forever()
        return "never"

    return server


@asynccontextmanager
async def serve(**kw: Any) -> AsyncIterator[tuple[HttpServerInfo, Control]]:
    ctrl = Control()
    async with open_http_server(make_server(ctrl), **kw) as info:
        yield info, ctrl


def call(rid: int, name: str, arguments: dict[str, Any] | None = None) -> bytes:
    return request_body(rid, "tools/call", {"name": name, "arguments": arguments or {}})


@pytest.fixture
def clock() -> trio.testing.MockClock:
    """A clock that runs at real speed and can be jumped forward."""
    return trio.testing.MockClock(rate=1.0)


# -- POST answers -----------------------------------------------------------------------


@pytest.mark.spec(
    T + "sending-messages-to-the-server.8",
    T + "session-management.1",
    "2025-06-18/basic/security_best_practices#mitigation-2.3",
)
@pytest.mark.spec(T + "session-management.2", T + "session-management.3")
async def test_initialize_gets_an_sse_stream_and_a_fresh_session_id() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            ids = set()
            for _ in range(3):
                conn = await RawConnection.open(info.port)
                ans = await conn.request("POST", body=init_body())
                assert ans.status == 200
                assert ans.content_type == "text/event-stream"
                sid = ans.session_id
                assert sid is not None and len(sid) >= 32
                assert all(0x21 <= ord(c) <= 0x7E for c in sid)
                got = await ans.message()
                assert got is not None and got[1]["id"] == 1
                assert got[1]["result"]["protocolVersion"] == "2025-11-25"
                assert await ans.message() is None  # the stream ends after the response
                ids.add(sid)
                await conn.aclose()
            assert len(ids) == 3


@pytest.mark.spec(T + "sending-messages-to-the-server.8")
async def test_json_response_mode_answers_one_json_body() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve(json_response=True) as (info, _):
            sid, result = await open_session(info.port)
            conn = await RawConnection.open(info.port)
            ans = await conn.request(
                "POST", body=call(2, "echo", {"text": "hi"}), session_id=sid, version="2025-11-25"
            )
            assert ans.status == 200
            assert ans.content_type == "application/json"
            body = await ans.json()
            assert body["id"] == 2
            assert body["result"]["content"][0]["text"] == "hi"
            await conn.aclose()


@pytest.mark.spec(T + "sending-messages-to-the-server.5")
async def test_notifications_and_responses_get_202_without_body() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            sid, _ = await open_session(info.port)
            conn = await RawConnection.open(info.port)
            ans = await conn.request(
                "POST",
                body=notification_body("notifications/roots/list_changed"),
                session_id=sid,
                version="2025-11-25",
            )
            assert ans.status == 202
            assert await ans.body() == b""
            response = json.dumps({"jsonrpc": "2.0", "id": 99, "result": {}}).encode()
            ans = await conn.request("POST", body=response, session_id=sid, version="2025-11-25")
            assert ans.status == 202
            assert await ans.body() == b""
            await conn.aclose()


@pytest.mark.spec(
    T + "sending-messages-to-the-server.14",
    T + "sending-messages-to-the-server.10",
    T + "sending-messages-to-the-server.13",
)
async def test_stream_ends_after_the_response_and_the_connection_is_reused() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            sid, _ = await open_session(info.port)
            conn = await RawConnection.open(info.port)
            for rid in (2, 3, 4):
                ans = await conn.request(
                    "POST", body=call(rid, "echo", {"text": str(rid)}), session_id=sid
                )
                got = await ans.message()
                assert got is not None and got[1]["id"] == rid
                assert await ans.message() is None
            await conn.aclose()


# -- refusals ---------------------------------------------------------------------------


async def _status(info: HttpServerInfo, method: str, **kw: Any) -> tuple[int, Any]:
    conn = await RawConnection.open(info.port, kw.pop("host", None))
    try:
        ans = await conn.request(method, **kw)
        body = await ans.body()
        is_json = ans.content_type == "application/json"
        return ans.status, (json.loads(body) if body and is_json else body)
    finally:
        await conn.aclose()


@pytest.mark.spec(T + "session-management.5")
async def test_missing_session_id_is_400() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            await open_session(info.port)
            status, body = await _status(info, "POST", body=call(2, "echo", {"text": "x"}))
            assert status == 400
            assert body["error"]["code"] == -32600
            # The refused POST held one request: its error answers that request's id.
            assert body["id"] == 2
            assert (await _status(info, "GET"))[0] == 400
            assert (await _status(info, "DELETE"))[0] == 400


@pytest.mark.spec(T + "session-management.6")
async def test_unknown_session_is_404() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            status, _ = await _status(
                info, "POST", body=call(2, "echo", {"text": "x"}), session_id="f" * 32
            )
            assert status == 404
            assert (await _status(info, "GET", session_id="f" * 32))[0] == 404


@pytest.mark.spec(T + "session-management.6")
async def test_delete_ends_the_session_then_404() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            sid, _ = await open_session(info.port)
            assert (await _status(info, "DELETE", session_id=sid))[0] == 200
            status, _ = await _status(
                info, "POST", body=call(2, "echo", {"text": "x"}), session_id=sid
            )
            assert status == 404
            assert (await _status(info, "DELETE", session_id=sid))[0] == 404


@pytest.mark.spec(T + "protocol-version-header.4", T + "protocol-version-header.3")
async def test_protocol_version_header() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            sid, _ = await open_session(info.port)
            body = call(2, "echo", {"text": "x"})
            status, err = await _status(
                info, "POST", body=body, session_id=sid, version="1999-01-01"
            )
            assert status == 400
            assert "1999-01-01" in err["error"]["message"]
            # Absent: 2025-03-26 is assumed, and the request goes through.
            assert (await _status(info, "POST", body=body, session_id=sid))[0] == 200
            # Another supported version is accepted (the conformance suite sends 2025-03-26).
            body = call(3, "echo", {"text": "y"})
            assert (await _status(info, "POST", body=body, session_id=sid, version="2025-03-26"))[
                0
            ] == 200
            status, _ = await _status(info, "GET", session_id=sid, version="nope")
            assert status == 400


@pytest.mark.spec(T + "security-warning.1")
async def test_origin_and_host_are_checked_against_dns_rebinding() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            bad = {"origin": "http://evil.example.com"}
            status, body = await _status(info, "POST", body=init_body(), headers=bad)
            assert status == 403 and "Origin" in body["error"]["message"]
            status, _ = await _status(
                info, "POST", body=init_body(), host=f"evil.example.com:{info.port}"
            )
            assert status == 403
            good = {"origin": f"http://localhost:{info.port}"}
            status, _ = await _status(
                info, "POST", body=init_body(), headers=good, host=f"localhost:{info.port}"
            )
            assert status == 200
        async with serve(allowed_origins=["https://app.example"]) as (info, _):
            status, _ = await _status(
                info, "POST", body=init_body(), headers={"origin": "https://app.example"}
            )
            assert status == 200


@pytest.mark.spec(T + "listening-for-messages-from-the-server.3", T + "session-management.9")
async def test_methods_not_allowed_are_405() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve(enable_get_stream=False) as (info, _):
            sid, _ = await open_session(info.port)
            conn = await RawConnection.open(info.port)
            ans = await conn.request("PUT", session_id=sid)
            assert ans.status == 405
            assert "POST" in ans.headers["allow"]
            await conn.aclose()
            assert (await _status(info, "GET", session_id=sid))[0] == 405
        async with serve(stateless=True) as (info, _):
            assert (await _status(info, "GET"))[0] == 405
            assert (await _status(info, "DELETE"))[0] == 405


async def test_accept_header_is_required_406() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            status, _ = await _status(info, "POST", body=init_body(), accept="application/json")
            assert status == 406
            sid, _ = await open_session(info.port)
            status, _ = await _status(info, "GET", session_id=sid, accept="application/json")
            assert status == 406


@pytest.mark.spec(T + "transports.1")
async def test_content_type_must_be_json_415() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            status, _ = await _status(info, "POST", body=init_body(), content_type="text/plain")
            assert status == 415
            status, _ = await _status(
                info, "POST", body=init_body(), content_type="application/json; charset=latin-1"
            )
            assert status == 415


async def test_body_too_large_is_413() -> None:
    limits = HttpLimits(max_body_bytes=1000)
    with trio.fail_after(TIMEOUT):
        async with serve(limits=limits) as (info, _):
            big = request_body(1, "initialize", {"pad": "x" * 2000})
            assert (await _status(info, "POST", body=big))[0] == 413
            # Chunked: counted as it arrives.
            conn = await RawConnection.open(info.port)
            head = (
                f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{info.port}\r\n"
                "accept: application/json, text/event-stream\r\n"
                "content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
            ).encode()
            chunk = b"x" * 600
            data = head + (b"%x\r\n" % len(chunk) + chunk + b"\r\n") * 2 + b"0\r\n\r\n"
            await conn.send_bytes(data)
            raw = b""
            while b"\r\n\r\n" not in raw:
                raw += await conn.stream.receive_some(65536)
            assert raw.startswith(b"HTTP/1.1 413")
            await conn.aclose()


@pytest.mark.spec(T + "sending-messages-to-the-server.6", T + "sending-messages-to-the-server.7")
@pytest.mark.spec(T + "sending-messages-to-the-server.4")
async def test_bad_json_is_400_with_a_parse_error_body() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            status, body = await _status(info, "POST", body=b"{not json")
            assert status == 400
            assert body["error"]["code"] == -32700 and "id" not in body
            status, body = await _status(info, "POST", body=b'{"jsonrpc":"2.0"}')
            assert status == 400 and body["error"]["code"] == -32600


async def test_request_head_too_large_is_431() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve(limits=HttpLimits(max_header_bytes=2048)) as (info, _):
            status, _ = await _status(info, "POST", body=init_body(), headers={"x-pad": "y" * 5000})
            assert status == 431


async def test_requests_per_connection_are_bounded() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve(limits=HttpLimits(max_requests_per_connection=2)) as (info, _):
            sid, _ = await open_session(info.port)
            conn = await RawConnection.open(info.port)
            ping = request_body(5, "ping")
            ans = await conn.request("POST", body=ping, session_id=sid)
            assert ans.status == 200 and "connection" not in ans.headers
            await ans.message()
            await ans.body()
            ans = await conn.request("POST", body=request_body(6, "ping"), session_id=sid)
            assert ans.headers.get("connection") == "close"
            await ans.message()
            await ans.body()
            assert await conn.stream.receive_some(100) == b""  # the server closed it
            await conn.aclose()


async def test_slow_request_gets_408_and_idle_connection_is_closed(
    clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(TIMEOUT + 62):  # the mock clock jumps 62 s
        async with serve(limits=HttpLimits(idle_timeout_seconds=30)) as (info, _):
            conn = await RawConnection.open(info.port)
            await conn.send_bytes(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n")
            await trio.testing.wait_all_tasks_blocked()
            clock.jump(31)
            raw = b""
            while chunk := await conn.stream.receive_some(65536):
                raw += chunk
            assert raw.startswith(b"HTTP/1.1 408")
            await conn.aclose()
            idle = await RawConnection.open(info.port)
            await trio.testing.wait_all_tasks_blocked()
            clock.jump(31)
            assert await idle.stream.receive_some(100) == b""
            await idle.aclose()


async def test_idle_sessions_are_evicted(clock: trio.testing.MockClock) -> None:
    with trio.fail_after(TIMEOUT + 110):  # the mock clock jumps 110 s
        async with serve(limits=HttpLimits(session_idle_seconds=100)) as (info, _):
            old, _ = await open_session(info.port)
            clock.jump(60)
            kept, _ = await open_session(info.port)
            await trio.testing.wait_all_tasks_blocked()
            clock.jump(50)  # old: idle 110 s; kept: 50 s
            await trio.testing.wait_all_tasks_blocked()
            body = call(2, "echo", {"text": "x"})
            assert (await _status(info, "POST", body=body, session_id=old))[0] == 404
            assert (await _status(info, "POST", body=body, session_id=kept))[0] == 200


async def test_sessions_are_bounded_503() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve(limits=HttpLimits(max_sessions=2)) as (info, _):
            first, _ = await open_session(info.port)
            await open_session(info.port)
            status, _ = await _status(info, "POST", body=init_body())
            assert status == 503
            assert (await _status(info, "DELETE", session_id=first))[0] == 200
            await trio.testing.wait_all_tasks_blocked()
            await open_session(info.port)  # room again


async def test_a_request_id_still_in_flight_is_refused() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            sid, _ = await open_session(info.port)
            conn = await RawConnection.open(info.port)
            ans = await conn.request("POST", body=call(7, "block"), session_id=sid)
            assert ans.status == 200
            status, _ = await _status(
                info, "POST", body=call(7, "echo", {"text": "x"}), session_id=sid
            )
            assert status == 400
            await conn.aclose()


async def test_batches_are_refused_from_2025_06_18() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            sid, _ = await open_session(info.port, version="2025-06-18")
            batch = b"[" + request_body(2, "ping") + b"," + request_body(3, "ping") + b"]"
            status, _ = await _status(info, "POST", body=batch, session_id=sid)
            assert status == 400


async def test_batches_of_2025_03_26_are_answered() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve(json_response=True) as (info, _):
            sid, result = await open_session(info.port, version="2025-03-26")
            assert result["protocolVersion"] == "2025-03-26"
            batch = b"[" + request_body(2, "ping") + b"," + request_body(3, "ping") + b"]"
            conn = await RawConnection.open(info.port)
            ans = await conn.request("POST", body=batch, session_id=sid)
            assert ans.status == 200
            assert sorted(m["id"] for m in await ans.json()) == [2, 3]
            await conn.aclose()


# -- streams -----------------------------------------------------------------------------


@pytest.mark.spec(
    T + "sending-messages-to-the-server.11",
    T + "sending-messages-to-the-server.12",
    T + "listening-for-messages-from-the-server.4",
    T + "listening-for-messages-from-the-server.6",
    T + "listening-for-messages-from-the-server.5",
    T + "multiple-connections.2",
)
async def test_related_messages_use_the_post_stream_and_others_the_get_stream() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            sid, _ = await open_session(info.port)
            get_conn = await RawConnection.open(info.port)
            stream = await get_conn.request("GET", session_id=sid, version="2025-11-25")
            assert stream.status == 200 and stream.content_type == "text/event-stream"
            conn = await RawConnection.open(info.port)
            ans = await conn.request(
                "POST", body=call(2, "announce", {"text": "x"}), session_id=sid
            )
            on_post = []
            while (got := await ans.message()) is not None:
                on_post.append(got[1])
            assert [m.get("params", {}).get("data") for m in on_post[:-1]] == ["related x"]
            assert on_post[-1]["id"] == 2 and "result" in on_post[-1]
            got = await stream.message()
            assert got is not None
            assert got[1]["method"] == "notifications/message"
            assert got[1]["params"]["data"] == "unrelated x"
            await conn.aclose()
            await get_conn.aclose()


@pytest.mark.spec(T + "resumability-and-redelivery.1")
async def test_2025_11_25_streams_start_with_a_priming_event_and_retry() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve(retry_ms=1234) as (info, _):
            sid, _ = await open_session(info.port)
            conn = await RawConnection.open(info.port)
            ans = await conn.request("POST", body=call(2, "echo", {"text": "x"}), session_id=sid)
            first = await ans.event()
            assert first is not None and first.data == "" and first.id and first.retry == 1234
            await conn.aclose()
            sid, _ = await open_session(info.port, version="2025-06-18")
            conn = await RawConnection.open(info.port)
            ans = await conn.request("POST", body=call(2, "echo", {"text": "x"}), session_id=sid)
            first = await ans.event()
            assert first is not None and first.data != ""  # no priming before 2025-11-25
            await conn.aclose()


@pytest.mark.spec(T + "resumability-and-redelivery.2")
async def test_event_ids_are_unique_across_the_sessions_streams() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            sid, _ = await open_session(info.port)
            get_conn = await RawConnection.open(info.port)
            stream = await get_conn.request("GET", session_id=sid)
            ids: list[str] = []
            first = await stream.event()
            assert first is not None and first.id
            ids.append(first.id)
            conn = await RawConnection.open(info.port)
            for rid in range(2, 6):
                ans = await conn.request(
                    "POST", body=call(rid, "announce", {"text": str(rid)}), session_id=sid
                )
                while (ev := await ans.event()) is not None:
                    assert ev.id
                    ids.append(ev.id)
                ev = await stream.event()
                assert ev is not None and ev.id
                ids.append(ev.id)
            assert len(ids) == len(set(ids))
            streams = {parse_event_id(i)[0] for i in ids}
            assert len(streams) == 5  # the GET stream and four POST streams
            await conn.aclose()
            await get_conn.aclose()


@pytest.mark.spec(
    T + "resumability-and-redelivery.4",
    T + "sending-messages-to-the-server.15",
    T + "sending-messages-to-the-server.16",
)
async def test_resume_after_a_dropped_stream_loses_and_repeats_nothing() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, ctrl):
            sid, _ = await open_session(info.port)
            conn = await RawConnection.open(info.port)
            ans = await conn.request("POST", body=call(2, "steps"), session_id=sid)
            priming = await ans.event()
            assert priming is not None and priming.data == ""
            seen: list[str] = []
            ids: list[str] = []
            for n in range(3):
                await ctrl.steps_in.send(n)
                got = await ans.message()
                assert got is not None and got[0] is not None
                ids.append(got[0])
                seen.append(got[1]["params"]["data"])
            await conn.aclose()  # the client's connection drops mid-request
            for n in range(3, 6):
                await ctrl.steps_in.send(n)  # sent while no one listens
            await trio.testing.wait_all_tasks_blocked()
            resumed = await RawConnection.open(info.port)
            again = await resumed.request("GET", session_id=sid, last_event_id=ids[-1])
            assert again.status == 200
            await ctrl.steps_in.send(6)
            await ctrl.steps_in.send(-1)
            response = None
            while (got := await again.message()) is not None:
                assert got[0] is not None
                ids.append(got[0])
                if "result" in got[1]:
                    response = got[1]
                else:
                    seen.append(got[1]["params"]["data"])
            assert seen == [f"step {n}" for n in range(7)]
            assert response is not None and response["id"] == 2
            assert len(ids) == len(set(ids))
            await resumed.aclose()


@pytest.mark.spec(T + "resumability-and-redelivery.5")
async def test_resume_replays_only_the_disconnected_stream() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, ctrl):
            sid, _ = await open_session(info.port)
            a = await RawConnection.open(info.port)
            steps = await a.request("POST", body=call(2, "steps"), session_id=sid)
            await ctrl.steps_in.send(0)
            got = await steps.message()
            assert got is not None and got[0] is not None
            last = got[0]
            await a.aclose()
            b = await RawConnection.open(info.port)
            other = await b.request("POST", body=call(3, "announce", {"text": "b"}), session_id=sid)
            while await other.message() is not None:
                pass
            await ctrl.steps_in.send(1)
            await ctrl.steps_in.send(-1)
            c = await RawConnection.open(info.port)
            again = await c.request("GET", session_id=sid, last_event_id=last)
            data = []
            while (got := await again.message()) is not None:
                assert got[0] is not None and parse_event_id(got[0])[0] == parse_event_id(last)[0]
                data.append(got[1].get("params", {}).get("data") or got[1].get("id"))
            assert data == ["step 1", 2]
            for conn in (b, c):
                await conn.aclose()


async def test_resume_with_an_unknown_or_malformed_last_event_id() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            sid, _ = await open_session(info.port)
            assert (await _status(info, "GET", session_id=sid, last_event_id="zz/5"))[0] == 409
            assert (await _status(info, "GET", session_id=sid, last_event_id="nonsense"))[0] == 400


@pytest.mark.spec(
    T + "listening-for-messages-from-the-server.7", T + "resumability-and-redelivery.4"
)
async def test_server_closes_a_stream_at_will_and_the_client_resumes() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve(retry_ms=10) as (info, ctrl):
            sid, _ = await open_session(info.port)
            conn = await RawConnection.open(info.port)
            ans = await conn.request("POST", body=call(2, "poll"), session_id=sid)
            got = await ans.message()
            assert got is not None and got[1]["params"]["data"] == "before the close"
            assert await ans.message() is None  # closed before the response
            assert ans.retry == 10
            last = ans.last_event_id
            await ctrl.polled.wait()
            ctrl.release.set()
            again = await conn.request("GET", session_id=sid, last_event_id=last)
            messages = []
            while (got := await again.message()) is not None:
                messages.append(got[1])
            assert messages[0]["params"]["data"] == "after the close"
            assert (
                messages[1]["id"] == 2 and messages[1]["result"]["content"][0]["text"] == "polled"
            )
            await conn.aclose()


async def test_a_cancelled_request_ends_its_stream() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            sid, _ = await open_session(info.port)
            conn = await RawConnection.open(info.port)
            ans = await conn.request("POST", body=call(2, "block"), session_id=sid)
            cancel = notification_body("notifications/cancelled", {"requestId": 2})
            assert (await _status(info, "POST", body=cancel, session_id=sid))[0] == 202
            assert await ans.message() is None  # no response, and the stream ends
            await conn.aclose()


# -- stateless mode ----------------------------------------------------------------------


async def test_stateless_mode_answers_each_post_without_a_session() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve(stateless=True, json_response=True) as (info, _):
            conn = await RawConnection.open(info.port)
            ans = await conn.request("POST", body=init_body())
            assert ans.status == 200 and ans.session_id is None
            assert (await ans.json())["result"]["serverInfo"]["name"] == "http-test"
            ans = await conn.request("POST", body=call(2, "echo", {"text": "alone"}))
            assert ans.status == 200 and ans.session_id is None
            assert (await ans.json())["result"]["content"][0]["text"] == "alone"
            ans = await conn.request(
                "POST", body=call(3, "echo", {"text": "v"}), version="2025-06-18"
            )
            assert (await ans.json())["id"] == 3
            ans = await conn.request("POST", body=notification_body("notifications/initialized"))
            assert ans.status == 202
            await ans.body()
            await conn.aclose()


async def test_quiet_streams_get_keepalive_comments(clock: trio.testing.MockClock) -> None:
    with trio.fail_after(TIMEOUT + 6):  # the mock clock jumps 6 s
        async with serve(limits=HttpLimits(keepalive_seconds=5)) as (info, _):
            sid, _ = await open_session(info.port)
            conn = await RawConnection.open(info.port)
            stream = await conn.request("GET", session_id=sid)
            priming = await conn.next_chunk()
            assert priming is not None and priming.startswith(b"id: ")
            await trio.testing.wait_all_tasks_blocked()
            clock.jump(6)
            assert await conn.next_chunk() == b": keepalive\n"
            assert stream.status == 200
            await conn.aclose()


async def test_requests_in_progress_per_session_are_bounded_429() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve(limits=HttpLimits(max_streams_per_session=1)) as (info, _):
            sid, _ = await open_session(info.port)
            conn = await RawConnection.open(info.port)
            ans = await conn.request("POST", body=call(2, "block"), session_id=sid)
            assert ans.status == 200
            status, _ = await _status(
                info, "POST", body=call(3, "echo", {"text": "x"}), session_id=sid
            )
            assert status == 429
            await conn.aclose()


async def test_stateless_mode_with_sse_answers() -> None:
    with trio.fail_after(TIMEOUT):
        async with serve(stateless=True) as (info, _):
            conn = await RawConnection.open(info.port)
            ans = await conn.request("POST", body=call(2, "announce", {"text": "s"}))
            assert ans.status == 200 and ans.content_type == "text/event-stream"
            messages = []
            while (got := await ans.message()) is not None:
                messages.append(got[1])
            # The related log and the response; the unrelated notification has no stream.
            assert [m.get("params", {}).get("data") for m in messages[:-1]] == ["related s"]
            assert messages[-1]["id"] == 2
            await conn.aclose()


# -- appended: requests caught by the end of their session --------------------------------


@pytest.mark.spec(T + "session-management.6")
async def test_a_request_in_progress_when_the_session_ends_is_answered_404(
    clock: trio.testing.MockClock,
) -> None:
    """The session is terminated (DELETE) while a POST waits for its JSON answer: that
    request, which carries the ended session's id, is answered 404 with a JSON-RPC error
    body for its id; the session's handler, which never ends by itself, is cancelled
    after the grace (5 s), so the server can stop."""
    started = trio.Event()
    server = Server("gone-test", "1.0")

    @server.tool()
    async def wait() -> str:
        started.set()
        await trio.sleep_forever()
        return "never"

    got: dict[str, Any] = {}
    with trio.fail_after(TIMEOUT + 6):  # the mock clock skips 5 s
        async with open_http_server(server, json_response=True) as info:
            sid, _ = await open_session(info.port)
            conn = await RawConnection.open(info.port)

            async def post() -> None:
                ans = await conn.request("POST", body=call(2, "wait"), session_id=sid)
                got["status"], got["type"] = ans.status, ans.content_type
                got["body"] = await ans.json()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(post)
                await started.wait()
                # The DELETE is answered once the session is over: its handler does
                # not end by itself, so the clock skips the 5 s grace before the cancel.
                clock.autojump_threshold = 0.1
                assert (await _status(info, "DELETE", session_id=sid))[0] == 200
            await conn.aclose()
    assert got["status"] == 404
    assert got["type"] == "application/json"
    body = got["body"]
    assert body["jsonrpc"] == "2.0" and body["id"] == 2
    assert isinstance(body["error"]["code"], int)
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]


@pytest.mark.spec(T + "sending-messages-to-the-server.4")
async def test_a_batch_body_is_not_a_single_message_from_2025_06_18() -> None:
    """A POST body holding a batch is refused in a 2025-06-18 session: 400 with a -32600
    error body, and neither request in it is answered."""
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            sid, _ = await open_session(info.port, version="2025-06-18")
            batch = b"[" + request_body(2, "ping") + b"," + request_body(3, "ping") + b"]"
            status, body = await _status(info, "POST", body=batch, session_id=sid)
            assert status == 400
            assert body["error"]["code"] == -32600
            assert "result" not in body and body.get("id") is None


@pytest.mark.spec(T + "listening-for-messages-from-the-server.3")
async def test_a_get_is_answered_with_an_sse_stream_or_405() -> None:
    """A GET accepting text/event-stream (and nothing else) gets the session's SSE
    stream when the server offers one; when it does not, 405 with an Allow header naming
    the methods it does serve.  The stream answers the GET that lists text/event-stream
    (#listening-for-messages-from-the-server.2): one that does not is refused with 406,
    never sent a stream it did not ask for."""
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            sid, _ = await open_session(info.port)
            conn = await RawConnection.open(info.port)
            ans = await conn.request("GET", session_id=sid, accept="text/event-stream")
            assert ans.status == 200
            assert ans.content_type == "text/event-stream"
            await conn.aclose()
            status, _ = await _status(info, "GET", session_id=sid, accept="application/json")
            assert status == 406
        async with serve(enable_get_stream=False) as (info, _):
            sid, _ = await open_session(info.port)
            conn = await RawConnection.open(info.port)
            ans = await conn.request("GET", session_id=sid, accept="text/event-stream")
            assert ans.status == 405
            assert ans.headers["allow"] == "POST, DELETE"
            await ans.body()
            await conn.aclose()
        async with serve(stateless=True) as (info, _):
            conn = await RawConnection.open(info.port)
            ans = await conn.request("GET", accept="text/event-stream")
            assert ans.status == 405
            assert ans.headers["allow"] == "POST"
            await ans.body()
            await conn.aclose()


@pytest.mark.spec(T + "sending-messages-to-the-server.5")
async def test_a_202_says_it_has_no_body() -> None:
    """An accepted notification or response is answered 202 whose head says there is no
    body (Content-Length: 0, no Content-Type, not chunked), and none follows."""
    with trio.fail_after(TIMEOUT):
        async with serve() as (info, _):
            sid, _ = await open_session(info.port)
            conn = await RawConnection.open(info.port)
            response = json.dumps({"jsonrpc": "2.0", "id": 99, "result": {}}).encode()
            for body in (notification_body("notifications/roots/list_changed"), response):
                ans = await conn.request("POST", body=body, session_id=sid)
                assert ans.status == 202
                assert ans.headers.get("content-length") == "0"
                assert "content-type" not in ans.headers
                assert "transfer-encoding" not in ans.headers
                assert await ans.body() == b""
            await conn.aclose()


@pytest.mark.spec(T + "listening-for-messages-from-the-server.6")
async def test_a_response_without_its_post_never_goes_to_the_get_stream() -> None:
    """Routing (SessionStreams.route, sans-IO): a response whose request has no stream
    of its own (its POST is gone) is dropped, never written to the standalone GET
    stream, where a notification with no related request does go; the 2024-11-05
    transport's one stream carries every message, responses included."""
    from mcp_ref._http_streams import LEGACY, STANDALONE, SessionStreams

    def session(kind: Any) -> SessionStreams:
        return SessionStreams(kind, HttpLimits())

    response = b'{"jsonrpc":"2.0","id":5,"result":{}}'
    note = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}}'
    sess = session("streamable")
    get_stream = sess.streams[STANDALONE]
    before = get_stream.last_id
    assert sess.route(response, None) is None
    assert get_stream.last_id == before  # nothing written
    sess.route(b'{"jsonrpc":"2.0","id":6,"error":{"code":-1,"message":"m"}}', None)
    assert get_stream.last_id == before
    assert sess.route(note, None) is get_stream
    assert get_stream.last_id != before  # the notification is
    legacy = session("legacy")
    stream = legacy.streams[LEGACY]
    before = stream.last_id
    legacy.route(response, None)
    assert stream.last_id != before

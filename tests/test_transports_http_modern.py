"""Streamable HTTP in the modern era (2026-07-28): no session, every request answered
alone, beside handshake-era clients on the same endpoint."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest
import trio

from mcp_ref import types as t
from mcp_ref._modern import SUBSCRIPTION_ID_KEY
from mcp_ref.asgi import asgi_app
from mcp_ref.server import Context, Server
from mcp_ref.trio import RequestContext
from mcp_ref.trio.http.server import open_http_server

from . import test_asgi as asgi
from ._http_raw import RawConnection, open_session, request_body

TIMEOUT = 10
MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw-modern", "version": "1"},
}


def make_server() -> Server:
    server = Server("modern-test", version="1")

    @server.tool()
    async def echo(text: str) -> str:
        """Echo ``text``."""
        return text

    return server


def modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    hdrs = {"mcp-protocol-version": MODERN, "mcp-method": method}
    if name is not None:
        hdrs["mcp-name"] = name
    return hdrs


def modern_body(rid: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    return request_body(rid, method, {**(params or {}), "_meta": META})


async def answer_of(ans: Any) -> Any:
    if ans.content_type == "application/json":
        return await ans.json()
    got = await ans.message()
    assert got is not None
    assert await ans.message() is None
    return got[1]


@pytest.mark.spec("2026-07-28/basic/transports/streamable-http#sending-messages.10")
@pytest.mark.parametrize("json_response", [False, True])
@pytest.mark.parametrize("stateless", [False, True])
async def test_a_modern_request_needs_no_session(json_response: bool, stateless: bool) -> None:
    # Without it, the POST would be refused 400 (missing Mcp-Session-Id); a stateless
    # server would feed a synthetic initialize first, and the connection would then
    # judge the request by the handshake table.
    with trio.fail_after(TIMEOUT):
        async with open_http_server(
            make_server(), json_response=json_response, stateless=stateless
        ) as info:
            conn = await RawConnection.open(info.port)
            try:
                for rid in (1, 2):  # each POST alone, on the same connection
                    ans = await conn.request(
                        "POST",
                        body=modern_body(
                            rid, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}
                        ),
                        headers=modern_headers("tools/call", "echo"),
                    )
                    assert ans.status == 200
                    assert ans.session_id is None
                    assert ans.content_type == (
                        "application/json" if json_response else "text/event-stream"
                    )
                    msg = await answer_of(ans)
                    assert msg["id"] == rid
                    assert msg["result"]["content"][0]["text"] == "hi"
            finally:
                await conn.aclose()


async def test_handshake_clients_keep_their_sessions_beside_modern_ones() -> None:
    with trio.fail_after(TIMEOUT):
        async with open_http_server(make_server()) as info:
            sid, result = await open_session(info.port)
            conn = await RawConnection.open(info.port)
            try:
                ans = await conn.request(
                    "POST",
                    body=request_body(2, "tools/list"),
                    session_id=sid,
                    version=result["protocolVersion"],
                )
                assert ans.status == 200
                assert [t["name"] for t in (await answer_of(ans))["result"]["tools"]] == ["echo"]
                ans = await conn.request(
                    "POST",
                    body=modern_body(3, "tools/call", {"name": "echo", "arguments": {"text": "m"}}),
                    headers=modern_headers("tools/call", "echo"),
                )
                assert ans.status == 200 and ans.session_id is None
                assert (await answer_of(ans))["result"]["content"][0]["text"] == "m"
                # The session lives on: the handshake client's next request is served.
                ans = await conn.request(
                    "POST",
                    body=request_body(4, "tools/list"),
                    session_id=sid,
                    version=result["protocolVersion"],
                )
                assert ans.status == 200
                assert (await answer_of(ans))["id"] == 4
            finally:
                await conn.aclose()


async def post_modern(port: int, data: bytes, hdrs: dict[str, str], **kw: Any) -> tuple[int, Any]:
    conn = await RawConnection.open(port)
    try:
        ans = await conn.request("POST", body=data, headers=hdrs, **kw)
        got = await ans.body()
        return ans.status, (json.loads(got) if ans.content_type == "application/json" else got)
    finally:
        await conn.aclose()


@pytest.mark.spec(
    "2026-07-28/basic/transports/streamable-http#server-validation.3",
    "2026-07-28/basic/transports/streamable-http#protocol-version-header.5",
)
@pytest.mark.parametrize("json_response", [False, True])
async def test_refusals_carry_the_status_the_page_gives(json_response: bool) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_http_server(make_server(), json_response=json_response) as info:
            call = modern_body(1, "tools/call", {"name": "echo", "arguments": {"text": "x"}})
            status, msg = await post_modern(info.port, call, modern_headers("tools/call", "other"))
            assert (status, msg["error"]["code"], msg["id"]) == (400, -32020, 1)
            status, msg = await post_modern(
                info.port, modern_body(2, "ping"), modern_headers("ping")
            )
            assert (status, msg["error"]["code"], msg["id"]) == (404, -32601, 2)
            # An unsupported version: the connection's own -32022 (in the answer, as
            # JSON even where an SSE stream would have answered), with 400.
            other = {**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
            data = request_body(4, "tools/list", {"_meta": other})
            hdrs = {"mcp-protocol-version": "2099-01-01", "mcp-method": "tools/list"}
            status, msg = await post_modern(info.port, data, hdrs)
            assert (status, msg["error"]["code"], msg["id"]) == (400, -32022, 4)


@pytest.mark.spec("2026-07-28/basic/transports/streamable-http#earlier-streamable-http-revisions.1")
async def test_a_modern_clients_get_is_405() -> None:
    with trio.fail_after(TIMEOUT):
        async with open_http_server(make_server()) as info:
            conn = await RawConnection.open(info.port)
            try:
                ans = await conn.request("GET", version=MODERN)
                assert ans.status == 405 and ans.headers["allow"] == "POST"
            finally:
                await conn.aclose()


@pytest.mark.spec(
    "2026-07-28/basic/transports/streamable-http#security--endpoint.1",
    "2026-07-28/basic/transports/streamable-http#security--endpoint.2",
)
async def test_a_modern_post_from_a_foreign_origin_or_host_is_403() -> None:
    with trio.fail_after(TIMEOUT):
        async with open_http_server(make_server()) as info:
            hdrs = {**modern_headers("tools/list"), "origin": "http://evil.example.com"}
            status, _ = await post_modern(info.port, modern_body(1, "tools/list"), hdrs)
            assert status == 403
            # A foreign Host (DNS rebinding without an Origin) too.
            conn = await RawConnection.open(info.port, host="evil.example.com")
            try:
                ans = await conn.request(
                    "POST", body=modern_body(2, "tools/list"), headers=modern_headers("tools/list")
                )
                assert ans.status == 403
            finally:
                await conn.aclose()


class Listening:
    """A low-level handler: ``subscriptions/listen`` acknowledges, then sends
    ``notifications/tools/list_changed`` each time a ``tools/call`` (another POST)
    changes the tools, until cancelled; ``tools/call`` changes the tools."""

    def __init__(self) -> None:
        self.changed = trio.Event()
        self.cancelled = trio.Event()

    async def handle_request(self, ctx: RequestContext) -> Any:
        if ctx.method == "tools/call":
            await ctx.report_progress(1, 2)  # (with a progress token only)
            self.changed.set()
            return t.CallToolResult(content=[])
        assert ctx.method == "subscriptions/listen"
        tag = {SUBSCRIPTION_ID_KEY: ctx.request_id}
        try:
            await ctx.send_notification(
                "notifications/subscriptions/acknowledged",
                t.SubscriptionsAcknowledgedNotificationParams(
                    notifications=t.SubscriptionFilter(tools_list_changed=True), meta=tag
                ),
            )
            while True:
                await self.changed.wait()
                self.changed = trio.Event()
                await ctx.send_notification(
                    "notifications/tools/list_changed", t.NotificationParams(meta=tag)
                )
        finally:
            self.cancelled.set()

    async def handle_notification(self, session: Any, notification: Any) -> None:
        pass

    def tool_input_schema(self, name: str) -> Any:
        """The ``inputSchema`` of ``poke``: its ``region`` goes in ``Mcp-Param-Region``."""
        region = {"type": "string", "x-mcp-header": "Region"}
        return {"type": "object", "properties": {"region": region}} if name == "poke" else None


LISTEN = {"notifications": {"toolsListChanged": True}}


@pytest.mark.spec(
    "2026-07-28/basic/transports/streamable-http#receiving-messages.2",
    "2026-07-28/basic/transports/streamable-http#cancellation.1",
    "2026-07-28/basic/patterns/cancellation#transport-specific-cancellation.1",
)
@pytest.mark.parametrize("json_response", [False, True])
async def test_a_listen_is_a_stream_of_its_notifications_until_the_client_closes_it(
    json_response: bool,
) -> None:
    handler = Listening()
    with trio.fail_after(TIMEOUT):
        async with open_http_server(handler, json_response=json_response) as info:
            listen = await RawConnection.open(info.port)
            ans = await listen.request(
                "POST",
                body=modern_body(1, "subscriptions/listen", LISTEN),
                headers=modern_headers("subscriptions/listen"),
            )
            # An SSE stream even from a server that answers requests with JSON.
            assert ans.status == 200 and ans.content_type == "text/event-stream"
            got = await ans.message()
            assert got is not None
            assert got[1]["method"] == "notifications/subscriptions/acknowledged"
            # A change made by another POST reaches the listen's stream.
            call = modern_body(2, "tools/call", {"name": "poke", "arguments": {}})
            status, _ = await post_modern(info.port, call, modern_headers("tools/call", "poke"))
            assert status == 200
            got = await ans.message()
            assert got is not None and got[1]["method"] == "notifications/tools/list_changed"
            assert got[1]["params"]["_meta"][SUBSCRIPTION_ID_KEY] == 1
            assert not handler.cancelled.is_set()
            # Closing the stream cancels the listen, at once (not after the grace an
            # ended session gets: 5 s).
            await listen.aclose()
            with trio.fail_after(2):
                await handler.cancelled.wait()


@pytest.mark.spec("2026-07-28/basic/transports/streamable-http#receiving-messages.2")
async def test_a_notification_related_to_a_request_travels_on_its_stream() -> None:
    with trio.fail_after(TIMEOUT):
        async with open_http_server(Listening()) as info:
            conn = await RawConnection.open(info.port)
            try:
                meta = {**META, "progressToken": "p"}
                data = request_body(3, "tools/call", {"name": "poke", "_meta": meta})
                ans = await conn.request(
                    "POST", body=data, headers=modern_headers("tools/call", "poke")
                )
                assert ans.content_type == "text/event-stream"
                got = await ans.message()
                assert got is not None and got[1]["method"] == "notifications/progress"
                assert got[1]["params"]["progressToken"] == "p"
                got = await ans.message()
                assert got is not None and got[1]["id"] == 3 and "result" in got[1]
                assert await ans.message() is None
            finally:
                await conn.aclose()


@pytest.mark.spec(
    "2026-07-28/server/utilities/logging#per-request-log-level.3",
    "2026-07-28/basic/transports/streamable-http#receiving-messages.2",
)
async def test_a_log_message_goes_on_its_requests_stream_never_on_a_listen() -> None:
    server = Server("logs", version="1")

    @server.tool()
    async def talk(ctx: Context) -> str:
        """Log once."""
        await ctx.log("warning", "careful")
        return "done"

    with trio.fail_after(TIMEOUT):
        async with open_http_server(server) as info:
            listen = await RawConnection.open(info.port)
            conn = await RawConnection.open(info.port)
            try:
                ans = await listen.request(
                    "POST",
                    body=modern_body(1, "subscriptions/listen", LISTEN),
                    headers=modern_headers("subscriptions/listen"),
                )
                got = await ans.message()
                assert got is not None
                assert got[1]["method"] == "notifications/subscriptions/acknowledged"
                meta = {**META, "io.modelcontextprotocol/logLevel": "debug"}
                data = request_body(2, "tools/call", {"name": "talk", "_meta": meta})
                call = await conn.request(
                    "POST", body=data, headers=modern_headers("tools/call", "talk")
                )
                log = await call.message()
                assert log is not None and log[1]["method"] == "notifications/message"
                assert log[1]["params"]["data"] == "careful"
                done = await call.message()
                assert done is not None and done[1]["id"] == 2
                # The listen's next message is the change that follows, not the log.
                server.add_tool(lambda: "y", name="y")
                got = await ans.message()
                assert got is not None
                assert got[1]["method"] == "notifications/tools/list_changed"
            finally:
                await conn.aclose()
                await listen.aclose()


# -- the same over ASGI (mcp_ref.asgi drives the same core) ---------------------------


def asgi_headers(method: str, name: str | None = None) -> list[tuple[bytes, bytes]]:
    hdrs = [(k.encode(), v.encode()) for k, v in modern_headers(method, name).items()]
    return [asgi.ACCEPT, asgi.JSON, *hdrs]


async def test_over_asgi_a_modern_request_needs_no_session_and_refusals_keep_their_status() -> None:
    with trio.fail_after(TIMEOUT):
        async with asgi.running(asgi_app(make_server())) as app:
            call = modern_body(1, "tools/call", {"name": "echo", "arguments": {"text": "a"}})
            ex = await asgi.request(
                app, "POST", "/mcp", headers=asgi_headers("tools/call", "echo"), body=call
            )
            assert ex.status == 200 and b"mcp-session-id" not in ex.headers
            (msg,) = asgi.data_of(ex.body)
            assert msg["result"]["content"][0]["text"] == "a"
            ex = await asgi.request(
                app, "POST", "/mcp", headers=asgi_headers("tools/call", "x"), body=call
            )
            assert ex.status == 400 and json.loads(ex.body)["error"]["code"] == -32020
            ex = await asgi.request(
                app, "POST", "/mcp", headers=asgi_headers("ping"), body=modern_body(2, "ping")
            )
            assert ex.status == 404 and json.loads(ex.body)["error"]["code"] == -32601


async def test_over_asgi_a_listen_streams_until_the_client_leaves() -> None:
    handler = Listening()
    with trio.fail_after(TIMEOUT):
        async with asgi.running(asgi_app(handler, json_response=True)) as app:
            listen = modern_body(1, "subscriptions/listen", LISTEN)
            hdrs = asgi_headers("subscriptions/listen")
            async with asgi.exchange(app, "POST", "/mcp", headers=hdrs, body=listen) as ex:
                assert ex.headers[b"content-type"].startswith(b"text/event-stream")
                await ex.until(b"acknowledged")
                call = modern_body(2, "tools/call", {"name": "poke", "arguments": {}})
                done = await asgi.request(
                    app, "POST", "/mcp", headers=asgi_headers("tools/call", "poke"), body=call
                )
                assert done.status == 200
                await ex.until(b"notifications/tools/list_changed")
                assert not handler.cancelled.is_set()
            # (leaving the exchange: the client disconnected)
            with trio.fail_after(2):
                await handler.cancelled.wait()


@pytest.mark.spec(
    "2026-07-28/basic/transports/streamable-http#server-behavior-for-custom-headers.4"
)
async def test_a_param_header_is_checked_against_the_tools_schema() -> None:
    with trio.fail_after(TIMEOUT):
        async with open_http_server(Listening(), json_response=True) as info:
            call = modern_body(1, "tools/call", {"name": "poke", "arguments": {"region": "us"}})
            hdrs = modern_headers("tools/call", "poke")
            status, msg = await post_modern(info.port, call, {**hdrs, "mcp-param-region": "eu"})
            assert (status, msg["error"]["code"], msg["id"]) == (400, -32020, 1)
            status, msg = await post_modern(info.port, call, hdrs)  # missing
            assert (status, msg["error"]["code"]) == (400, -32020)
            status, msg = await post_modern(info.port, call, {**hdrs, "mcp-param-region": "us"})
            assert status == 200 and "result" in msg


@pytest.mark.spec("2026-07-28/basic/transports/streamable-http#sending-messages.7")
async def test_a_modern_notification_is_202_without_a_session() -> None:
    with trio.fail_after(TIMEOUT):
        async with open_http_server(make_server()) as info:
            note = json.dumps(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
            ).encode()
            status, got = await post_modern(info.port, note, {"mcp-protocol-version": MODERN})
            assert (status, got) == (202, b"")


class WhichSession:
    """A low-level handler: ``tools/call`` of ``which`` answers with the id of the
    session it runs in; of ``hang``, waits until cancelled (``started``, ``cancelled``)."""

    def __init__(self) -> None:
        self.started = trio.Event()
        self.cancelled = trio.Event()

    async def handle_request(self, ctx: RequestContext) -> Any:
        assert ctx.method == "tools/call" and isinstance(ctx.params, t.CallToolRequestParams)
        if ctx.params.name == "hang":
            self.started.set()
            try:
                await trio.sleep_forever()
            finally:
                self.cancelled.set()
        return t.CallToolResult(content=[t.TextContent(text=str(id(ctx.session)))])

    async def handle_notification(self, session: Any, notification: Any) -> None:
        pass


def _call(rid: int, name: str) -> dict[str, Any]:
    return {
        "body": modern_body(rid, "tools/call", {"name": name, "arguments": {}}),
        "headers": modern_headers("tools/call", name),
    }


async def _session_of(conn: RawConnection, rid: int) -> str:
    ans = await conn.request("POST", **_call(rid, "which"))
    assert ans.status == 200
    return str((await answer_of(ans))["result"]["content"][0]["text"])


async def test_an_answered_modern_session_serves_the_next_post_of_its_client() -> None:
    # Opening a session per POST costs a modern request more than a handshake-era one
    # (bench/README.md); an answered one is kept for the next POST of the same client
    # (address and caller: mcp_ref._http_sessions.SessionBook.park).  One whose client
    # left before the answer is cancelled and never serves again.
    handler = WhichSession()
    with trio.fail_after(TIMEOUT):
        async with open_http_server(handler) as info:  # SSE: a client leaving is seen
            conn = await RawConnection.open(info.port)
            leaving = await RawConnection.open(info.port)
            try:
                first = await _session_of(conn, 1)
                assert await _session_of(conn, 1) == first  # kept, taken again (same id)
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(partial(leaving.request, "POST", **_call(3, "hang")))
                    await handler.started.wait()  # the hang holds the parked session
                    second = await _session_of(conn, 4)
                    assert second != first
                    nursery.cancel_scope.cancel()
                await leaving.aclose()  # the client leaves: its request is cancelled
                await handler.cancelled.wait()
                assert await _session_of(conn, 1) == second  # first was not kept
            finally:
                await conn.aclose()

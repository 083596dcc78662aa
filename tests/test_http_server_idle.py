"""The HTTP server's wait for a connection's next request: one cancel scope per
connection, its deadline moved per request (``HttpServer.handle_connection``)."""

from __future__ import annotations

import h11
import trio
import trio.testing

from mcp_ref._http import HttpLimits
from mcp_ref._http_server import ServerConfig
from mcp_ref.server import Server
from mcp_ref.trio.http.server import HttpServer

from ._http_raw import init_body, notification_body, request_body

TIMEOUT = 10
IDLE = 30.0
REQUEST = b"GET /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def _server(*, json_response: bool = False) -> HttpServer:
    return HttpServer(
        Server("idle-test", "0"),
        ServerConfig(
            path="/mcp",
            json_response=json_response,
            stateless=False,
            enable_get_stream=True,
            allowed_origins=(),
            allowed_hosts=("*",),
            limits=HttpLimits(idle_timeout_seconds=IDLE),
            legacy_sse=False,
            legacy_sse_path="/sse",
            legacy_messages_path="/messages",
            retry_ms=1000,
        ),
        {},
    )


async def _exchange(
    conn: h11.Connection, stream: trio.abc.Stream, headers: list[tuple[str, str]], body: bytes
) -> tuple[h11.Response, bytes]:
    """POST ``body`` to /mcp over ``conn``; the response and its body."""
    base = [("host", "127.0.0.1"), ("content-type", "application/json")]
    base += [("accept", "application/json, text/event-stream")]
    base.append(("content-length", str(len(body))))
    request = h11.Request(method="POST", target="/mcp", headers=[*base, *headers])
    data = conn.send(request) + conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage())
    await stream.send_all(data)
    response: h11.Response | None = None
    got = b""
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await stream.receive_some())
        elif isinstance(event, h11.Response):
            response = event
        elif isinstance(event, h11.Data):
            got += event.data
        elif isinstance(event, h11.EndOfMessage):
            assert response is not None
            conn.start_next_cycle()
            return response, got
        else:
            raise AssertionError(event)


async def test_requests_are_served_one_after_another_then_an_idle_connection_closes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = _server(json_response=True)
    client, server_side = trio.testing.memory_stream_pair()
    conn = h11.Connection(h11.CLIENT)
    with trio.fail_after(10 * IDLE):
        async with trio.open_nursery() as nursery:
            await nursery.start(server.table.supervisor.run)
            nursery.start_soon(server.handle_connection, server_side)
            response, _ = await _exchange(conn, client, [], init_body(1, "2025-06-18"))
            assert response.status_code == 200
            sid = dict(response.headers)[b"mcp-session-id"].decode()
            headers = [("mcp-session-id", sid), ("mcp-protocol-version", "2025-06-18")]
            await trio.sleep(IDLE * 0.75)  # less than the timeout between requests
            initialized = notification_body("notifications/initialized")
            response, _ = await _exchange(conn, client, headers, initialized)
            assert response.status_code == 202
            await trio.sleep(IDLE * 0.75)
            response, body = await _exchange(conn, client, headers, request_body(2, "ping"))
            assert response.status_code == 200 and b'"result"' in body
            start = trio.current_time()
            assert await client.receive_some() == b""  # closed quietly once idle
            assert trio.current_time() - start >= IDLE
            nursery.cancel_scope.cancel()


async def test_a_request_that_comes_as_the_deadline_passes_is_still_served(
    mock_clock: trio.testing.MockClock,
) -> None:
    client, server_side = trio.testing.memory_stream_pair()
    with trio.fail_after(10 * IDLE):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_server().handle_connection, server_side)
            await trio.testing.wait_all_tasks_blocked()
            # The request wakes the waiting server task, and the deadline passes before
            # that task runs (send_all puts the data last, with no checkpoint after).
            await client.send_all(REQUEST)
            mock_clock.jump(IDLE + 1)
            answer = await client.receive_some()
            assert answer.startswith(b"HTTP/1.1 404")
            nursery.cancel_scope.cancel()

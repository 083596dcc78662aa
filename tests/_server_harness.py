"""Test harness for mcp_ref.server: a server and a raw client session, in memory.

``connect(server)`` runs ``server.serve`` on one end of ``memory_channel_pair`` and a bare
client :class:`~mcp_ref.trio.Session` on the other, initializes, and yields a
:class:`ClientSide` that records every notification and answers the server's requests
with the ``responders`` given.  The client is deliberately the session layer, not
``mcp_ref.client``, so these tests see the server's answers unfiltered.  A
:class:`RecordingChannel` keeps every message the server wrote, for schema checks.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import trio

from mcp_ref import CLIENT, METHOD_NOT_FOUND, McpError, Notification
from mcp_ref import types as t
from mcp_ref.server import Server
from mcp_ref.trio import RequestContext, Session, memory_channel_pair, open_session

CLIENT_CAPS = t.ClientCapabilities(
    sampling=t.ClientCapabilitiesSampling(),
    elicitation=t.ClientCapabilitiesElicitation(),
    roots=t.ClientCapabilitiesRoots(list_changed=True),
)


class RecordingChannel:
    """Wraps a channel; ``sent`` holds the decoded messages written through it."""

    def __init__(self, inner: Any = None) -> None:
        self.inner = inner
        self.framing = getattr(inner, "framing", "messages")
        self.sent: list[dict[str, Any]] = []
        self.received: list[dict[str, Any]] = []

    async def receive(self) -> bytes:
        data: bytes = await self.inner.receive()
        if data:
            self.received.append(json.loads(data))
        return data

    async def send(self, data: bytes, *, related_request_id: Any = None) -> None:
        self.sent.append(json.loads(data))
        await self.inner.send(data, related_request_id=related_request_id)

    async def aclose(self) -> None:
        await self.inner.aclose()


class ClientSide:
    """The client end of :func:`connect`."""

    def __init__(self, responders: dict[str, Callable[[Any], Any]]) -> None:
        self.responders = responders
        self.session: Session
        self.init: t.InitializeResult
        self.notifications: list[Notification] = []
        self.requests: list[tuple[str, Any]] = []
        self._arrived = trio.Event()

    async def request(self, method: str, params: Any = None, **kw: Any) -> Any:
        return await self.session.send_request(method, params, **kw)

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, **kw: Any
    ) -> t.CallToolResult:
        result: t.CallToolResult = await self.request(
            "tools/call", t.CallToolRequestParams(name=name, arguments=arguments), **kw
        )
        return result

    def notes(self, method: str) -> list[Any]:
        """Params of the notifications of ``method`` received so far."""
        return [n.params for n in self.notifications if n.method == method]

    async def wait_for(self, method: str, count: int = 1) -> list[Any]:
        """Wait until ``count`` notifications of ``method`` arrived; their params."""
        while len(self.notes(method)) < count:
            arrived = self._arrived
            await arrived.wait()
        return self.notes(method)


class _Handler:
    def __init__(self, side: ClientSide) -> None:
        self.side = side

    async def handle_request(self, ctx: RequestContext) -> Any:
        self.side.requests.append((ctx.method, ctx.params))
        responder = self.side.responders.get(ctx.method)
        if responder is None:
            raise McpError(METHOD_NOT_FOUND, f"no responder for {ctx.method}")
        return responder(ctx.params)

    async def handle_notification(self, session: Session, notification: Notification) -> None:
        self.side.notifications.append(notification)
        arrived, self.side._arrived = self.side._arrived, trio.Event()
        arrived.set()


@asynccontextmanager
async def connect(
    server: Server,
    *,
    version: str = "2025-11-25",
    capabilities: t.ClientCapabilities = CLIENT_CAPS,
    responders: dict[str, Callable[[Any], Any]] | None = None,
    record: RecordingChannel | None = None,
) -> AsyncIterator[ClientSide]:
    """Serve ``server`` in memory and yield an initialized :class:`ClientSide`."""
    client_end, server_end = memory_channel_pair()
    channel: Any = server_end
    if record is not None:
        record.inner = server_end
        record.framing = server_end.framing
        channel = record
    side = ClientSide(responders or {})
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.serve, channel)
        async with open_session(client_end, CLIENT, _Handler(side), default_timeout=None) as s:
            side.session = s
            side.init = await s.send_request(
                "initialize",
                t.InitializeRequestParams(
                    protocol_version=version,
                    capabilities=capabilities,
                    client_info=t.Implementation(name="harness", version="1"),
                ),
            )
            await s.send_notification("notifications/initialized")
            yield side
        # Closing the client's end ends the server's session; serve() then returns.

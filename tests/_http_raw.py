"""A raw HTTP/1.1 client for the HTTP transport tests: h11 over a trio loopback socket.

It sends exactly the bytes a test asks for (any header, any body) and reads the answer
as it comes: a whole body, or server-sent events one at a time.  Nothing here knows MCP
beyond the default headers.
"""

from __future__ import annotations

import json
from typing import Any

import h11
import trio

from mcp_ref._sse import NEED_DATA, SSEDecoder, SSEEvent

ACCEPT_BOTH = "application/json, text/event-stream"


def init_body(rid: int | str = 1, version: str = "2025-11-25", **capabilities: Any) -> bytes:
    """The JSON of an ``initialize`` request."""
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": capabilities,
                "clientInfo": {"name": "raw-test-client", "version": "1"},
            },
        }
    ).encode()


def request_body(rid: int | str, method: str, params: Any = None) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg).encode()


def notification_body(method: str, params: Any = None) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg).encode()


class Answer:
    """One HTTP response: status, headers (lowercase str names), and a way to read on."""

    def __init__(self, conn: RawConnection, response: h11.Response) -> None:
        self.conn = conn
        self.status: int = response.status_code
        self.headers: dict[str, str] = {
            bytes(k).decode().lower(): bytes(v).decode("latin-1") for k, v in response.headers
        }
        self._decoder = SSEDecoder()
        self.ended = False

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip()

    @property
    def session_id(self) -> str | None:
        return self.headers.get("mcp-session-id")

    async def body(self) -> bytes:
        """The rest of the body."""
        out = bytearray()
        while (chunk := await self.conn.next_chunk()) is not None:
            out += chunk
        self.ended = True
        return bytes(out)

    async def json(self) -> Any:
        return json.loads(await self.body())

    async def event(self) -> SSEEvent | None:
        """The next server-sent event with data (priming events included); None at the
        end of the stream."""
        while True:
            got = self._decoder.next_event()
            if isinstance(got, SSEEvent):
                return got
            if got is None:
                self.ended = True
                return None
            assert got is NEED_DATA
            chunk = await self.conn.next_chunk()
            self._decoder.receive_data(chunk or b"")

    async def message(self) -> tuple[str | None, Any] | None:
        """The next event carrying a message: ``(event id, parsed JSON)``; None at the end.
        Priming events (empty data) are skipped."""
        while True:
            ev = await self.event()
            if ev is None:
                return None
            if ev.data:
                return ev.id, json.loads(ev.data)

    @property
    def retry(self) -> int | None:
        return self._decoder.retry

    @property
    def last_event_id(self) -> str:
        return self._decoder.last_event_id


class RawConnection:
    """One keep-alive HTTP connection to the server under test."""

    def __init__(self, stream: trio.SocketStream, host: str) -> None:
        self.stream = stream
        self.host = host
        self.h11 = h11.Connection(h11.CLIENT)

    @classmethod
    async def open(cls, port: int, host: str | None = None) -> RawConnection:
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        return cls(stream, host or f"127.0.0.1:{port}")

    async def send_bytes(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def _next(self) -> Any:
        while True:
            event = self.h11.next_event()
            if event is h11.NEED_DATA:
                data = await self.stream.receive_some(65536)
                self.h11.receive_data(data)
                continue
            return event

    async def next_chunk(self) -> bytes | None:
        while True:
            event = await self._next()
            if isinstance(event, h11.Data):
                return bytes(event.data)
            if isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                return None

    async def request(
        self,
        method: str,
        target: str = "/mcp",
        *,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        session_id: str | None = None,
        version: str | None = None,
        accept: str | None = None,
        content_type: str | None = "application/json",
        last_event_id: str | None = None,
    ) -> Answer:
        """Send one request and read the response head (the body is read with the
        :class:`Answer`).  Starts the next cycle first when the last one is done."""
        if self.h11.our_state is h11.DONE and self.h11.their_state is h11.DONE:
            self.h11.start_next_cycle()
        hdrs: dict[str, str] = {"host": self.host}
        if accept is None:
            accept = ACCEPT_BOTH if method == "POST" else "text/event-stream"
        if accept:
            hdrs["accept"] = accept
        if method == "POST" and content_type:
            hdrs["content-type"] = content_type
        if session_id is not None:
            hdrs["mcp-session-id"] = session_id
        if version is not None:
            hdrs["mcp-protocol-version"] = version
        if last_event_id is not None:
            hdrs["last-event-id"] = last_event_id
        if method == "POST":
            hdrs["content-length"] = str(len(body))
        hdrs.update(headers or {})
        out = self.h11.send(h11.Request(method=method, target=target, headers=list(hdrs.items())))
        if body:
            out += self.h11.send(h11.Data(data=body))
        out += self.h11.send(h11.EndOfMessage())
        await self.stream.send_all(out)
        while True:
            event = await self._next()
            if isinstance(event, h11.Response):
                return Answer(self, event)
            if isinstance(event, h11.ConnectionClosed):
                raise trio.BrokenResourceError("the server closed the connection")

    async def aclose(self) -> None:
        await self.stream.aclose()


async def open_session(
    port: int, *, version: str = "2025-11-25", **capabilities: Any
) -> tuple[str, Any]:
    """Initialize a session over a fresh connection and send ``initialized``.

    Returns:
        ``(session id, initialize result)``.
    """
    conn = await RawConnection.open(port)
    try:
        ans = await conn.request("POST", body=init_body(1, version, **capabilities))
        assert ans.status == 200, ans.status
        sid = ans.session_id
        assert sid is not None
        if ans.content_type == "application/json":
            result = (await ans.json())["result"]
        else:
            got = await ans.message()
            assert got is not None
            result = got[1]["result"]
            assert await ans.message() is None
        ans = await conn.request(
            "POST",
            body=notification_body("notifications/initialized"),
            session_id=sid,
            version=result["protocolVersion"],
        )
        assert ans.status == 202
        await ans.body()
        return sid, result
    finally:
        await conn.aclose()

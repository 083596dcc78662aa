"""The asyncio Streamable HTTP client resumes an SSE answer that ended before its
response, with a GET carrying ``Last-Event-ID`` after the server's ``retry``.

The peer is the loopback h11 stub of ``tests/test_asyncio_drivers.py``, taught one more
tool: ``resume`` answers with an SSE stream holding one notification (event id ``e1``,
``retry: 10``) that ends without the response; the GET that resumes it gets the
response.  A server whose resumption answers 404 fails the call.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import h11
import pytest

from mcp_ref import McpError
from mcp_ref.asyncio import open_http_client

from .test_asyncio_drivers import Stub, run, text_of

spec = pytest.mark.spec
SSE = [(b"content-type", b"text/event-stream")]


def _event(obj: Any, event_id: str) -> bytes:
    return f"id: {event_id}\nretry: 10\ndata: {json.dumps(obj)}\n\n".encode()


class ResumeStub(Stub):
    """The drivers' stub with the ``resume`` tool and the GET that resumes it."""

    def __init__(self, *, resumable: bool = True) -> None:
        super().__init__()
        self.resumable = resumable
        self.call_id: Any = None

    async def answer(
        self, h: h11.Connection, reader: Any, writer: Any, method: bytes, msg: Any
    ) -> None:
        if method == b"GET":
            if not self.resumable:
                return await self.respond(h, writer, 404, [(b"content-length", b"0")])
            result = {"content": [{"type": "text", "text": "resumed"}]}
            done = {"jsonrpc": "2.0", "id": self.call_id, "result": result}
            return await self.respond(h, writer, 200, SSE, _event(done, "e2"))
        if (msg or {}).get("params", {}).get("name") == "resume":
            self.call_id = msg["id"]
            log = {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": "working"},
            }
            return await self.respond(h, writer, 200, SSE, _event(log, "e1"))
        return await super().answer(h, reader, writer, method, msg)


async def _call(stub: ResumeStub) -> Any:
    server = await asyncio.start_server(stub.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server, open_http_client(f"http://127.0.0.1:{port}/mcp") as client:
        return await client.call_tool("resume")


@spec("2025-06-18/basic/transports#resumability-and-redelivery.3")
def test_an_sse_answer_that_ends_early_is_resumed_with_last_event_id() -> None:
    stub: list[ResumeStub] = []

    async def main() -> Any:
        stub.append(ResumeStub())
        return await _call(stub[0])

    assert text_of(run(main)) == "resumed"
    gets = [headers for method, headers, _ in stub[0].seen if method == "GET"]
    assert len(gets) == 1
    assert (b"last-event-id", b"e1") in gets[0]
    assert (b"accept", b"text/event-stream") in gets[0]


def test_a_refused_resumption_fails_the_call() -> None:
    async def main() -> Any:
        with pytest.raises(McpError) as failed:
            await _call(ResumeStub(resumable=False))
        return failed.value

    error = run(main)
    assert "resuming the stream failed: HTTP 404" in error.message

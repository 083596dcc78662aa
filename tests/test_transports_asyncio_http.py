"""The asyncio Streamable HTTP client (mcp_ref.asyncio.open_http_client): how it reads
a POST's answer, in each of the two forms a server may give it.

The peer is the loopback h11 stub of ``tests/test_asyncio_drivers.py``, taught three more
tools here: ``big`` answers with one JSON body of exactly :data:`BIG` bytes, written in
many small pieces; ``plain`` answers 200 with ``text/plain``; ``short`` answers with an
SSE stream that carries a notification and then ends without the response.  Each test is
an ordinary function running ``asyncio.run`` under ``asyncio.timeout``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import h11
import pytest

from mcp_ref import McpError
from mcp_ref import _http as rules
from mcp_ref.asyncio import open_http_client

from .test_asyncio_drivers import Stub, run, text_of

spec = pytest.mark.spec
T = "2025-06-18/basic/transports#"

BIG = 200_000
"""Bytes of the ``big`` tool's JSON answer: several reads of the client's 64 KiB."""


def _sized_result(rid: Any, size: int) -> bytes:
    """A tools/call result whose JSON is exactly ``size`` bytes."""

    def body(text: str) -> bytes:
        result = {"content": [{"type": "text", "text": text}]}
        return json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode()

    data = body("a" * (size - len(body(""))))
    assert len(data) == size
    return data


class AnswerStub(Stub):
    """The drivers' stub, with the ``big``, ``plain`` and ``short`` tools."""

    async def answer(
        self, h: h11.Connection, reader: Any, writer: Any, method: bytes, msg: Any
    ) -> None:
        name = (msg or {}).get("params", {}).get("name")
        if name == "big":
            data = _sized_result(msg["id"], BIG)
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
            ]
            pieces = [data[i : i + 1000] for i in range(0, len(data), 1000)]
            return await self.respond(h, writer, 200, headers, *pieces)
        if name == "plain":
            headers = [(b"content-type", b"text/plain"), (b"content-length", b"2")]
            return await self.respond(h, writer, 200, headers, b"hi")
        if name == "short":
            log = {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": "working"},
            }
            sse = [(b"content-type", b"text/event-stream")]
            event = b"data: " + json.dumps(log).encode() + b"\n\n"
            return await self.respond(h, writer, 200, sse, event)
        return await super().answer(h, reader, writer, method, msg)


async def _with_client(body: Any) -> Any:
    stub = AnswerStub()
    server = await asyncio.start_server(stub.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server, open_http_client(f"http://127.0.0.1:{port}/mcp") as client:
        return await body(client)


@spec(T + "sending-messages-to-the-server.9")
def test_a_json_answer_in_many_pieces_up_to_the_size_limit_is_read_whole() -> None:
    """The JSON case: the body is read to its end however it is cut, and a body of
    exactly ``max_message_bytes`` is taken."""

    async def body(client: Any) -> Any:
        client.connection.max_message_bytes = BIG
        return await client.call_tool("big")

    result = run(lambda: _with_client(body))
    text = text_of(result)
    assert text.strip("a") == "" and BIG - 100 < len(text) < BIG


@spec(T + "sending-messages-to-the-server.9")
def test_a_json_answer_over_the_size_limit_is_an_error_for_the_caller() -> None:
    async def body(client: Any) -> Any:
        client.connection.max_message_bytes = BIG - 1
        with pytest.raises(McpError) as failed:
            await client.call_tool("big")
        return failed.value

    error = run(lambda: _with_client(body))
    assert error.code == rules.HTTP_SERVER_ERROR
    assert isinstance(error.message, str) and "too large" in error.message.lower()


@spec(T + "sending-messages-to-the-server.9")
def test_an_answer_neither_json_nor_sse_is_an_error_for_the_caller() -> None:
    async def body(client: Any) -> Any:
        with pytest.raises(McpError) as failed:
            await client.call_tool("plain")
        return failed.value

    error = run(lambda: _with_client(body))
    assert error.code == rules.HTTP_SERVER_ERROR
    assert isinstance(error.message, str) and "text/plain" in error.message


@spec(T + "sending-messages-to-the-server.9")
def test_an_sse_answer_that_ends_without_the_response_is_an_error_for_the_caller() -> None:
    """The SSE case: the stream is read to its end (its notification delivered), and a
    stream that ends without the response fails the call with an McpError."""
    notes: list[Any] = []

    async def body(client: Any) -> Any:
        with pytest.raises(McpError) as failed:
            await client.call_tool("short")
        return failed.value

    async def main() -> Any:
        stub = AnswerStub()
        server = await asyncio.start_server(stub.serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        url = f"http://127.0.0.1:{port}/mcp"
        async with server, open_http_client(url, on_notification=notes.append) as client:
            return await body(client)

    error = run(main)
    assert error.code == rules.HTTP_SERVER_ERROR
    assert [n.method for n in notes] == ["notifications/message"]

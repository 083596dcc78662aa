"""2025-06-18/basic/transports#stdio over real pipes, and the fast path for pipes (the
last section of ``mcp_ref/trio/_channel.py``): a small message written at once with one
atomic ``os.write`` gives the same bytes, in the same order, as the plain ``send_all``;
what the fast path cannot take (too large, a full pipe, a broken one) goes the plain way
in its place, and nothing is lost."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from mcp_ref.events import RequestId
from mcp_ref.trio import StreamChannel
from mcp_ref.trio._channel import PIPE_BUF, pipe_send_nowait

from .test_trio_session import LIMIT, call, session_pair

spec = pytest.mark.spec


class Tap:
    """A channel wrapper that keeps the bytes it receives (the peer's writes, in order)."""

    def __init__(self, inner: StreamChannel) -> None:
        self.inner = inner
        self.framing = inner.framing
        self.received = bytearray()

    async def receive(self) -> bytes:
        data = await self.inner.receive()
        self.received += data
        return data

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        await self.inner.send(data)

    async def aclose(self) -> None:
        await self.inner.aclose()


class Counted:
    """A ``send_nowait`` that counts what it took and what it refused."""

    def __init__(self, send_nowait: Callable[..., None]) -> None:
        self.send_nowait = send_nowait
        self.taken = self.refused = 0

    def __call__(self, data: bytes, **kw: Any) -> None:
        try:
            self.send_nowait(data, **kw)
        except trio.WouldBlock:
            self.refused += 1
            raise
        self.taken += 1


def pipe_channel_pair() -> tuple[StreamChannel, StreamChannel]:
    """A client's and a server's channel over two OS pipes, as stdio connects them."""
    to_server, to_client = os.pipe(), os.pipe()
    fd = trio.lowlevel.FdStream
    client = StreamChannel(fd(to_server[1]), fd(to_client[0]))
    server = StreamChannel(fd(to_client[1]), fd(to_server[0]))
    return client, server


@asynccontextmanager
async def piped_pair(fast: bool) -> AsyncIterator[tuple[Any, Tap, Counted | None]]:
    """An initialized client session over pipes (its fast path on or off); the server's
    side records the client's bytes."""
    client_ch, server_ch = pipe_channel_pair()
    assert client_ch.send_nowait is not None  # a pipe: the fast path applies
    counted = Counted(client_ch.send_nowait) if fast else None
    client_ch.send_nowait = counted
    tap = Tap(server_ch)
    async with session_pair(channels=(client_ch, tap)) as (client, *_):
        yield client, tap, counted


def test_only_a_pipe_gets_the_fast_path() -> None:
    r, w = os.pipe()
    a, b = socket.socketpair()
    try:
        assert pipe_send_nowait(trio.lowlevel.FdStream(os.dup(w))) is not None
        assert pipe_send_nowait(trio.lowlevel.FdStream(os.dup(a.fileno()))) is None
        assert pipe_send_nowait(trio.testing.memory_stream_pair()[0]) is None
        assert StreamChannel(trio.testing.memory_stream_pair()[0]).send_nowait is None
    finally:
        for f in (r, w):
            os.close(f)
        a.close()
        b.close()


async def test_a_full_pipe_a_large_message_and_a_broken_pipe_write_nothing() -> None:
    r, w = os.pipe()
    reader = trio.lowlevel.FdStream(r)
    writer = trio.lowlevel.FdStream(w)
    send_nowait = pipe_send_nowait(writer)
    assert send_nowait is not None
    with pytest.raises(trio.WouldBlock):
        send_nowait(b"x" * PIPE_BUF + b"\n")  # larger than an atomic write
    filled = 0
    while True:  # fill the pipe
        try:
            filled += os.write(w, b"f" * 1024)
        except BlockingIOError:
            break
    with pytest.raises(trio.WouldBlock):
        send_nowait(b"{}\n")  # full: nothing written
    got = bytearray()
    while len(got) < filled:
        got += await reader.receive_some(65536)
    assert got == b"f" * filled  # only the filler: nothing of the refused message
    send_nowait(b"{}\n")  # room again: taken whole
    assert await reader.receive_some(65536) == b"{}\n"
    await reader.aclose()
    with pytest.raises(trio.WouldBlock):
        send_nowait(b"{}\n")  # broken (no reader): refused; the plain send says why
    with pytest.raises(trio.BrokenResourceError):
        await writer.send_all(b"{}\n")
    await writer.aclose()


def _calls(sizes: list[int]) -> list[dict[str, Any]]:
    return [{"i": i, "text": "x" * size} for i, size in enumerate(sizes)]


SIZES = [10, PIPE_BUF, 10, 200_000, 10, 10, 5_000, 10]
"""Echo texts, in bytes: small ones (fast), ones over PIPE_BUF (plain), and one larger
than the pipe (a plain write that waits for the reader)."""


@spec("2025-06-18/basic/transports#stdio.1", "2025-06-18/basic/transports#stdio.5")
async def test_the_fast_and_the_plain_route_write_the_same_bytes() -> None:
    wires: dict[bool, bytes] = {}
    with trio.fail_after(LIMIT):
        for fast in (True, False):
            async with piped_pair(fast) as (client, tap, counted):
                start = len(tap.received)
                for args in _calls(SIZES):  # one after another: a fixed order
                    result = await call(client, "echo", args=args)
                    assert json.loads(result.content[0].text) == args
                wires[fast] = bytes(tap.received[start:])
                if counted is not None:
                    assert counted.taken > 0 and counted.refused > 0  # both routes ran
    assert wires[True] == wires[False]
    assert wires[True].count(b"\n") == len(SIZES)


@spec("2025-06-18/basic/transports#stdio.1")
async def test_what_the_fast_path_refuses_keeps_its_place_and_nothing_is_lost() -> None:
    # Many calls at once, some too large for the fast path or the pipe: the requests
    # must reach the server whole and in the order the core numbered them.
    sizes = [10, 200_000, 10, PIPE_BUF + 1, 10] * 8
    with trio.fail_after(LIMIT):
        async with piped_pair(fast=True) as (client, tap, counted):
            start = len(tap.received)
            answers: dict[int, Any] = {}

            async def one(args: dict[str, Any]) -> None:
                result = await call(client, "echo", args=args)
                answers[args["i"]] = json.loads(result.content[0].text)

            async with trio.open_nursery() as nursery:
                for args in _calls(sizes):
                    nursery.start_soon(one, args)
            assert answers == {args["i"]: args for args in _calls(sizes)}
            assert counted is not None and counted.taken > 0 and counted.refused > 0
            ids = [json.loads(line)["id"] for line in bytes(tap.received[start:]).splitlines()]
            assert ids == sorted(ids) and len(ids) == len(sizes)

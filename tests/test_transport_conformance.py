"""The transport-conformance check (tests/transport_check.py), run over every transport
and client loop.

Combinations (server: the conformance ``mcp_ref.server.Server`` every time):

==================  ==================================  ==========================
name                server                              client
==================  ==================================  ==========================
memory/trio         in-process, memory channels          mcp_ref.client (MockClock)
stdio/trio          child process, trio stdio            mcp_ref.client
stdio/asyncio       child process, trio stdio            mcp_ref.asyncio
stdio/blocking      child process, trio stdio            mcp_ref.blocking
http/trio           in-process Streamable HTTP (trio)    mcp_ref.client over HTTP
http/asyncio        in-process Streamable HTTP (trio)    mcp_ref.asyncio HTTP client
websocket/trio      in-process WebSocket (trio)          mcp_ref.client over WebSocket
==================  ==================================  ==========================

A combination that cannot run a scenario is left out of it, with the reason (from
``transport_check.UNSUPPORTED``, :data:`TRANSPORT_UNSUPPORTED` or
:data:`COMBO_UNSUPPORTED`) recorded in :data:`LEFT_OUT`: it does not apply, so it is
neither run nor reported as skipped.  The bad-input scenario runs
once per server transport, through a raw connection.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from typing import Any

import attrs
import pytest
import trio
import trio.testing

from mcp_ref._versions import SUPPORTED_VERSIONS

from . import transport_check as tc

spec = pytest.mark.spec

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="stdio children need POSIX")


def _http_missing() -> str | None:
    for module, name in (
        ("mcp_ref.trio.http.server", "open_http_server"),
        ("mcp_ref.trio.http.client", "open_http_channel"),
    ):
        try:
            getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            return "Streamable HTTP driver not available yet"
    return None


HTTP_MISSING = _http_missing()

TRANSPORT_UNSUPPORTED: dict[tuple[str, str], str] = {
    ("http", "abort"): (
        "over Streamable HTTP a dropped connection is not a cancellation "
        "(basic/transports: disconnection SHOULD NOT be interpreted as the client "
        "cancelling) and the session outlives it, so the orphaned call is rightly not "
        "cancelled; the scenario's check does not apply (the asyncio client's abort() is "
        "tested in tests/test_asyncio_drivers.py)"
    ),
}
"""(transport, feature) -> why the scenarios needing the feature cannot run on it."""

COMBO_UNSUPPORTED: dict[tuple[str, str], str] = {
    ("http/asyncio", "server_timeout"): (
        "the asyncio HTTP client opens no GET stream, and the trio session sends the "
        "notifications/cancelled of a timed-out server request unrelated to any POST, "
        "so over HTTP it goes to that stream only"
    ),
}
"""(combination name, feature) -> why the scenarios needing the feature cannot run."""


@attrs.frozen
class Combo:
    transport: str
    client: str
    oversize: str = "error"
    """What one byte over the size limit gets: ``"error"`` (the session goes on) or
    ``"close"`` (WebSocket closes with 1009)."""

    @property
    def name(self) -> str:
        return f"{self.transport}/{self.client}"


COMBOS = [
    Combo("memory", "trio"),
    Combo("stdio", "trio"),
    Combo("stdio", "asyncio"),
    Combo("stdio", "blocking"),
    Combo("http", "trio"),
    Combo("http", "asyncio"),
    Combo("websocket", "trio", oversize="close"),
]


def _reason(combo: Combo, features: tuple[str, ...]) -> str | None:
    if combo.transport == "http" and HTTP_MISSING:
        return HTTP_MISSING
    for feature in features:
        why = (
            tc.UNSUPPORTED.get((combo.client, feature))
            or TRANSPORT_UNSUPPORTED.get((combo.transport, feature))
            or COMBO_UNSUPPORTED.get((combo.name, feature))
        )
        if why:
            return why
    return None


LEFT_OUT: list[tuple[str, str, str]] = []
"""(combination, features, reason) of every combination a scenario leaves out because
it lacks one of the features the scenario needs (filled at collection)."""


def combos(*features: str) -> list[Any]:
    """Every combination that has all of ``features``, as a pytest param; the others
    are left out (not skipped: they do not apply), with their reason in
    :data:`LEFT_OUT`."""
    out = []
    for combo in COMBOS:
        why = _reason(combo, features)
        if why:
            LEFT_OUT.append((combo.name, ", ".join(features), why))
            continue
        out.append(pytest.param(combo, id=combo.name))
    return out


def combos_and_versions() -> list[Any]:
    """Every (combination, supported revision) pair; clients that always ask for the
    latest revision skip the others."""
    out = []
    for param in combos():
        combo = param.values[0]
        for version in SUPPORTED_VERSIONS:
            why = tc.UNSUPPORTED.get((combo.client, "versions"))
            if why and version != SUPPORTED_VERSIONS[0]:
                LEFT_OUT.append((f"{combo.name}-{version}", "versions", why))
                continue
            out.append(pytest.param(combo, version, id=f"{combo.name}-{version}"))
    return out


def transports() -> list[Any]:
    """One combination per server transport (its trio client), for raw scenarios."""
    return [p for p in combos() if p.values[0].client == "trio"]


@pytest.fixture
def clock(combo: Combo) -> trio.testing.MockClock | None:
    """The autojump MockClock for the in-memory transport; real time elsewhere (child
    processes and sockets do not follow a mock clock)."""
    return trio.testing.MockClock(autojump_threshold=0) if combo.transport == "memory" else None


# ======================================================================== endpoints


@attrs.define
class Endpoint:
    """A running conformance server, and how to reach it."""

    connect: tc.Connect
    open_raw: Callable[[], AbstractAsyncContextManager[tc.RawConn]]
    after_client_vanished: Callable[[], Awaitable[None]] | None = None


ChannelOpener = Callable[[], AbstractAsyncContextManager[tuple[Any, Any]]]


def _trio_connect(open_channel: ChannelOpener) -> tc.Connect:
    @asynccontextmanager
    async def connect(**client_kw: Any) -> AsyncIterator[tc.Conn]:
        async with open_channel() as (channel, abort):
            async with tc.trio_conn(channel, abort, **client_kw) as conn:
                yield conn

    return connect


def _raw(open_channel: ChannelOpener) -> Callable[[], AbstractAsyncContextManager[tc.RawConn]]:
    @asynccontextmanager
    async def open_raw() -> AsyncIterator[tc.RawConn]:
        async with open_channel() as (channel, _abort):
            yield tc.ChannelRaw(channel)

    return open_raw


@asynccontextmanager
async def memory_endpoint(combo: Combo) -> AsyncIterator[Endpoint]:
    from mcp_ref.trio import memory_channel_pair

    state = tc.ServerState()
    server = tc.make_server(state)
    server_ends: set[Any] = set()

    async def vanish() -> None:
        for end in list(server_ends):
            await end.aclose()

    state.vanish = vanish
    async with trio.open_nursery() as nursery:

        @asynccontextmanager
        async def open_channel() -> AsyncIterator[tuple[Any, Any]]:
            ours, theirs = memory_channel_pair()
            server_ends.add(theirs)
            nursery.start_soon(partial(server.serve, theirs, **tc.SESSION_KW))
            try:
                yield ours, ours.aclose
            finally:
                await ours.aclose()

        yield Endpoint(_trio_connect(open_channel), _raw(open_channel))
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def stdio_endpoint(combo: Combo) -> AsyncIterator[Endpoint]:
    from mcp_ref import asyncio as mcp_asyncio
    from mcp_ref.trio import open_stdio_process

    processes: list[Any] = []
    """The server process of each connection (trio.Process, asyncio's or Popen)."""

    @asynccontextmanager
    async def open_channel() -> AsyncIterator[tuple[Any, Any]]:
        async with open_stdio_process(tc.STDIO_COMMAND, cwd=str(tc.ROOT), shutdown_grace=5) as (
            channel,
            process,
        ):
            processes.append(process)

            async def abort() -> None:
                assert process.stdin is not None
                await process.stdin.aclose()  # what the server sees when its client dies

            yield channel, abort

    async def exited_by_itself() -> None:
        # The client closed stdin and waited; a SIGTERM would show as -15.
        assert processes[-1].returncode == 0

    def recording(connect: tc.Connect) -> tc.Connect:
        @asynccontextmanager
        async def connect_and_record(**client_kw: Any) -> AsyncIterator[tc.Conn]:
            async with connect(**client_kw) as conn:
                processes.append(conn.client.process)  # type: ignore[attr-defined]
                yield conn

        return connect_and_record

    connect: tc.Connect
    if combo.client == "trio":
        connect = _trio_connect(open_channel)
    elif combo.client == "asyncio":
        connect = partial(
            tc.asyncio_conn,
            mcp_asyncio.open_stdio_client,
            command=tc.STDIO_COMMAND,
            cwd=str(tc.ROOT),
            timeout=tc.STEP_LIMIT,
        )
    else:
        connect = partial(
            tc.blocking_conn, tc.STDIO_COMMAND, cwd=str(tc.ROOT), timeout=tc.STEP_LIMIT
        )
    if combo.client != "trio":
        connect = recording(connect)
    yield Endpoint(connect, _raw(open_channel), exited_by_itself)


@asynccontextmanager
async def http_endpoint(combo: Combo) -> AsyncIterator[Endpoint]:
    from urllib.parse import urlsplit

    from mcp_ref import asyncio as mcp_asyncio
    from mcp_ref._http import HttpLimits
    from mcp_ref.trio.http.client import open_http_channel
    from mcp_ref.trio.http.server import open_http_server

    state = tc.ServerState()
    server = tc.make_server(state)

    async def run(*, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
        with trio.CancelScope() as scope:

            async def vanish() -> None:
                scope.cancel()

            state.vanish = vanish
            limits = HttpLimits(max_body_bytes=tc.LIMIT_BYTES)
            async with open_http_server(server, limits=limits, **tc.SESSION_KW) as info:
                task_status.started(info)
                await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        info = await nursery.start(run)
        url = info.url

        @asynccontextmanager
        async def open_channel() -> AsyncIterator[tuple[Any, Any]]:
            async with open_http_channel(url) as channel:
                yield channel, None

        @asynccontextmanager
        async def open_raw() -> AsyncIterator[tc.RawConn]:
            parts = urlsplit(url)
            assert parts.hostname is not None and parts.port is not None
            yield tc.HttpRaw(parts.hostname, parts.port, parts.path)

        connect: tc.Connect
        if combo.client == "trio":
            connect = _trio_connect(open_channel)
        else:
            connect = partial(
                tc.asyncio_conn, mcp_asyncio.open_http_client, url=url, timeout=tc.STEP_LIMIT
            )
        yield Endpoint(connect, open_raw)
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def websocket_endpoint(combo: Combo) -> AsyncIterator[Endpoint]:
    from mcp_ref.trio.websocket import open_websocket_channel, serve_websocket

    state = tc.ServerState()
    server = tc.make_server(state)
    channels: set[Any] = set()

    class Tracking:
        """The server, remembering its connections so ``vanish`` can drop them."""

        async def handle_request(self, ctx: Any) -> Any:
            return await server.handle_request(ctx)

        async def handle_notification(self, session: Any, notification: Any) -> None:
            await server.handle_notification(session, notification)

        async def serve(self, channel: Any, **kw: Any) -> None:
            channels.add(channel)
            try:
                await server.serve(channel, **kw)
            finally:
                channels.discard(channel)

    async def vanish() -> None:
        for channel in list(channels):
            await channel.abort()  # TCP closed without a close frame

    state.vanish = vanish
    async with trio.open_nursery() as nursery:
        port = await nursery.start(partial(serve_websocket, Tracking(), **tc.SESSION_KW))
        url = f"ws://127.0.0.1:{port}/mcp"

        @asynccontextmanager
        async def open_channel() -> AsyncIterator[tuple[Any, Any]]:
            async with open_websocket_channel(url) as channel:
                yield channel, channel.abort

        yield Endpoint(_trio_connect(open_channel), _raw(open_channel))
        nursery.cancel_scope.cancel()


ENDPOINTS = {
    "memory": memory_endpoint,
    "stdio": stdio_endpoint,
    "http": http_endpoint,
    "websocket": websocket_endpoint,
}


@pytest.fixture
async def endpoint(combo: Combo) -> AsyncIterator[Endpoint]:
    async with ENDPOINTS[combo.transport](combo) as found:
        yield found


# ============================================================================ tests


@spec(
    "2025-06-18/basic/lifecycle#version-negotiation.1",
    "2025-06-18/basic/lifecycle#version-negotiation.3",
    "2025-06-18/basic/transports#custom-transports.2",
)
@pytest.mark.parametrize(("combo", "version"), combos_and_versions())
async def test_initialize(combo: Combo, version: str, endpoint: Endpoint, clock: Any) -> None:
    await tc.check_initialize(endpoint.connect, version)


@spec("2025-06-18/server/utilities/pagination#error-handling.1")
@pytest.mark.parametrize("combo", combos())
async def test_list_and_call_with_pagination(combo: Combo, endpoint: Endpoint, clock: Any) -> None:
    await tc.check_pagination(endpoint.connect)


@pytest.mark.parametrize("combo", combos("progress"))
async def test_progress(combo: Combo, endpoint: Endpoint, clock: Any) -> None:
    await tc.check_progress(endpoint.connect)


@spec("2025-06-18/basic/utilities/cancellation#behavior-requirements.3")
@pytest.mark.parametrize("combo", combos("cancel"))
async def test_cancellation_client_to_server(combo: Combo, endpoint: Endpoint, clock: Any) -> None:
    await tc.check_cancel_client_to_server(endpoint.connect)


@spec("2025-06-18/basic/utilities/cancellation#behavior-requirements.3")
@pytest.mark.parametrize("combo", combos("handlers"))
async def test_cancellation_server_to_client(combo: Combo, endpoint: Endpoint, clock: Any) -> None:
    await tc.check_cancel_server_to_client(endpoint.connect)


@spec("2025-06-18/basic/lifecycle#timeouts.2")
@pytest.mark.parametrize("combo", combos())
async def test_timeout_client_request(combo: Combo, endpoint: Endpoint, clock: Any) -> None:
    await tc.check_timeout_client_request(endpoint.connect)


@spec("2025-06-18/basic/lifecycle#timeouts.2")
@pytest.mark.parametrize("combo", combos("handlers", "server_timeout"))
async def test_timeout_server_request(combo: Combo, endpoint: Endpoint, clock: Any) -> None:
    await tc.check_timeout_server_request(endpoint.connect)


@spec("2025-06-18/client/sampling#capabilities.1")
@pytest.mark.parametrize("combo", combos())
async def test_server_to_client_requests(combo: Combo, endpoint: Endpoint, clock: Any) -> None:
    await tc.check_server_requests(endpoint.connect, answered=combo.client != "blocking")


@pytest.mark.parametrize("combo", combos())
async def test_message_size_limit(combo: Combo, endpoint: Endpoint, clock: Any) -> None:
    await tc.check_size_limit(endpoint.connect, oversize=combo.oversize)


@pytest.mark.parametrize("combo", transports())
async def test_bad_input(combo: Combo, endpoint: Endpoint, clock: Any) -> None:
    await tc.check_bad_input(endpoint.open_raw)


@pytest.mark.parametrize("combo", combos())
async def test_server_vanishes_mid_call(combo: Combo, endpoint: Endpoint, clock: Any) -> None:
    await tc.check_server_vanishes(endpoint.connect)


@pytest.mark.parametrize("combo", combos("abort"))
async def test_client_vanishes_mid_call(combo: Combo, endpoint: Endpoint, clock: Any) -> None:
    await tc.check_client_vanishes(endpoint.connect, after=endpoint.after_client_vanished)


def test_every_combination_is_listed() -> None:
    """The matrix the issue asks for: stdio (trio, asyncio, blocking), Streamable HTTP
    (trio server; trio and asyncio clients), WebSocket."""
    assert {c.name for c in COMBOS} >= {
        "stdio/trio",
        "stdio/asyncio",
        "stdio/blocking",
        "http/trio",
        "http/asyncio",
        "websocket/trio",
    }


def test_pad_for_is_exact() -> None:
    for rid in (1, 9, 10, 12345):
        for total in (tc.LIMIT_BYTES, tc.LIMIT_BYTES + 1):
            assert tc.request_size(rid, tc.pad_for(total, rid)) == total

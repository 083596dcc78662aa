"""2025-06-18/client/roots: the client's answers to ``roots/list`` when it cannot give
the roots (no capability, or the application's roots callable fails)."""

from __future__ import annotations

import pytest
import trio

from mcp_ref import LocalProtocolError, McpError, RemoteProtocolError, Request
from mcp_ref import types as t
from mcp_ref._errors import INTERNAL_ERROR, METHOD_NOT_FOUND

from ._pair import initialized_pair
from .test_client import LIMIT, memory_client

spec = pytest.mark.spec


@spec("2025-06-18/client/roots#error-handling.1")
def test_client_without_roots_answers_method_not_found() -> None:
    client, server = initialized_pair(client_caps=t.ClientCapabilities(sampling={}))
    # Our own server side will not even send it...
    with pytest.raises(LocalProtocolError, match="roots"):
        server.send(Request(id=1, method="roots/list"))
    # ...and a peer that does gets -32601 with its id.
    client.receive_data(b'{"jsonrpc":"2.0","id":"r1","method":"roots/list"}\n')
    with pytest.raises(RemoteProtocolError) as exc:
        client.next_event()
    assert exc.value.code == METHOD_NOT_FOUND
    assert exc.value.event_hint is not None and exc.value.event_hint.id == "r1"
    assert exc.value.event_hint.code == METHOD_NOT_FOUND


@spec("2025-06-18/client/roots#error-handling.1")
async def test_failing_roots_callable_answers_internal_error() -> None:
    def broken_roots() -> list[t.Root]:
        raise RuntimeError("disk on fire")

    with trio.fail_after(LIMIT):
        async with memory_client(roots=broken_roots) as (client, server, wire):
            await client.ping()  # the server has seen notifications/initialized
            with pytest.raises(McpError) as exc:
                await server.send_request("roots/list")
            assert exc.value.code == INTERNAL_ERROR
            # The session goes on.
            await client.ping()

"""2025-06-18/client/sampling: errors the client returns, and message content checked
on both sides."""

from __future__ import annotations

import pytest
import trio

from mcp_ref import McpError, RemoteProtocolError
from mcp_ref import types as t

from ._pair import deliver, initialized_pair
from .test_client import LIMIT, memory_client

spec = pytest.mark.spec

USER_REJECTED = -1  # the spec's example code for "user rejected sampling request"


@spec("2025-06-18/client/sampling#error-handling.1")
async def test_sampling_handler_errors_reach_the_server() -> None:
    def reject(params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        raise McpError(USER_REJECTED, "User rejected sampling request")

    params = t.CreateMessageRequestParams(
        messages=[t.SamplingMessage(role="user", content=t.TextContent(text="hi"))],
        max_tokens=5,
    )
    with trio.fail_after(LIMIT):
        async with memory_client(sampling_handler=reject) as (client, server, wire):
            await client.ping()  # the server has seen notifications/initialized
            with pytest.raises(McpError) as exc:
                await server.send_request("sampling/createMessage", params)
            assert (exc.value.code, exc.value.message) == (
                USER_REJECTED,
                "User rejected sampling request",
            )


@spec("2025-06-18/client/sampling#security-considerations.2")
def test_malformed_sampling_messages_are_refused_both_ways() -> None:
    client, server = initialized_pair()
    # The client refuses a request whose messages break the schema (role, content).
    for messages in (
        b'[{"role":"system","content":{"type":"text","text":"x"}}]',
        b'[{"role":"user","content":{"type":"text"}}]',
        b'[{"role":"user","content":{"type":"image","data":"AAAA"}}]',
    ):
        client.receive_data(
            b'{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"messages":'
            + messages
            + b',"maxTokens":5}}\n'
        )
        with pytest.raises(RemoteProtocolError) as exc:
            client.next_event()
        assert exc.value.code == -32602 and exc.value.event_hint.id == 1
    # The server does not accept a result with malformed content as a result.
    params = t.CreateMessageRequestParams(
        messages=[t.SamplingMessage(role="user", content=t.TextContent(text="hi"))],
        max_tokens=5,
    )
    from mcp_ref import ErrorResponse, Request

    deliver(server.send(Request(id=7, method="sampling/createMessage", params=params)), client)
    (ev,) = deliver(
        b'{"jsonrpc":"2.0","id":7,"result":{"role":"robot","content":{"type":"text","text":"x"},'
        b'"model":"m"}}\n',
        server,
    )
    assert isinstance(ev, ErrorResponse) and ev.code == -32603 and "invalid result" in ev.message

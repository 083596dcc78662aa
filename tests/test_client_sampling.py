"""2025-06-18/client/sampling: errors the client returns, and message content checked
on both sides."""

from __future__ import annotations

from typing import Any

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


# -- the conversation's shape (2026-07-28/client/sampling; tool use since 2025-11-25) ----

_USE = t.ToolUseContent(id="u1", name="weather", input={"city": "Paris"})
_USE2 = t.ToolUseContent(id="u2", name="time", input={})
_RESULT = t.ToolResultContent(tool_use_id="u1", content=[t.TextContent(text="sunny")])
_RESULT2 = t.ToolResultContent(tool_use_id="u2", content=[t.TextContent(text="noon")])
_ASK = t.SamplingMessage(role="user", content=t.TextContent(text="weather?"))


def _msg(role: str, *blocks: object) -> t.SamplingMessage:
    content: Any = blocks[0] if len(blocks) == 1 else list(blocks)
    return t.SamplingMessage(role=role, content=content)  # type: ignore[arg-type]


_BAD = [
    pytest.param([_msg("system", t.TextContent(text="x"))], "role", id="role"),
    pytest.param(
        [_ASK, _msg("assistant", _USE), _msg("user", _RESULT, t.TextContent(text="and?"))],
        "tool results go alone",
        id="result-with-text",
    ),
    pytest.param([_ASK, _msg("assistant", _USE), _ASK], "must answer", id="not-answered"),
    pytest.param([_ASK, _msg("assistant", _USE)], "must answer", id="ends-on-a-use"),
    pytest.param(
        [_ASK, _msg("assistant", _USE, _USE2), _msg("user", _RESULT)],
        "one for one",
        id="one-missing",
    ),
    pytest.param([_msg("assistant", _RESULT)], "tool results go alone", id="assistant-result"),
]


@spec(
    "2026-07-28/client/sampling#messages.1",
    "2026-07-28/client/sampling#tool-result-messages.1",
    "2026-07-28/client/sampling#tool-use-and-result-balance.1",
    "2026-07-28/client/sampling#security-considerations.6",
    "2025-11-25/client/sampling#tool-result-messages.1",
    "2025-11-25/client/sampling#tool-use-and-result-balance.1",
    "2025-11-25/client/sampling#security-considerations.6",
)
@pytest.mark.parametrize(("messages", "words"), _BAD)
def test_a_server_cannot_build_a_conversation_that_breaks_the_rules(
    messages: list[t.SamplingMessage], words: str
) -> None:
    from mcp_ref.server import sampling

    with pytest.raises(ValueError, match=words):
        sampling(messages)
    good = [_ASK, _msg("assistant", _USE, _USE2), _msg("user", _RESULT2, _RESULT)]
    assert sampling(good).params.messages == good


@spec(
    "2026-07-28/client/sampling#messages.1",
    "2026-07-28/client/sampling#tool-result-messages.1",
    "2026-07-28/client/sampling#tool-use-and-result-balance.1",
    "2025-11-25/client/sampling#tool-result-messages.1",
    "2025-11-25/client/sampling#tool-use-and-result-balance.1",
)
@pytest.mark.parametrize(("messages", "words"), _BAD)
def test_the_client_refuses_such_a_conversation_before_its_handler(
    messages: list[t.SamplingMessage], words: str
) -> None:
    from mcp_ref._client import ClientCore

    seen = []
    core = ClientCore(sampling_handler=seen.append)
    params = t.CreateMessageRequestParams(messages=messages, max_tokens=5)
    with pytest.raises(McpError, match=words) as exc:
        core.handle("sampling/createMessage", params, 0.0)
    assert exc.value.code == -32602 and seen == []
    good = t.CreateMessageRequestParams(
        messages=[_ASK, _msg("assistant", _USE), _msg("user", _RESULT)], max_tokens=5
    )
    core.handle("sampling/createMessage", good, 0.0)
    assert seen == [good]


@spec("2025-11-25/client/sampling#tools-in-sampling.1")
def test_a_handshake_client_declares_sampling_tools_when_asked() -> None:
    import json

    from mcp_ref import CLIENT, Connection, Request
    from mcp_ref._client import ClientCore

    def declared(**options: Any) -> Any:
        core = ClientCore(protocol_version="2025-11-25", sampling_handler=lambda p: None, **options)
        conn = Connection(CLIENT, newline_framing=False)
        sent = json.loads(
            conn.send(Request(id=0, method="initialize", params=core.initialize_params()))
        )
        return sent["params"]["capabilities"]["sampling"]

    assert declared(sampling_tools=True) == {"tools": {}}
    assert declared() == {}  # no tool use declared: no tool-enabled request may come

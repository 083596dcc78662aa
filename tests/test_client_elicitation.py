"""2025-06-18/client/elicitation: the server checks accepted content against the schema
it asked with."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import trio

from mcp_ref import McpError, Notification
from mcp_ref import types as t
from mcp_ref._errors import INTERNAL_ERROR
from mcp_ref.server import Context
from mcp_ref.server._elicitation import elicited_content_problem

spec = pytest.mark.spec

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 5},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "ratio": {"type": "number"},
        "ok": {"type": "boolean"},
        "color": {"type": "string", "enum": ["red", "blue"]},
        "size": {"type": "string", "oneOf": [{"const": "s", "title": "S"}]},
        "tags": {
            "type": "array",
            "items": {"type": "string", "enum": ["a", "b"]},
            "minItems": 1,
            "maxItems": 2,
        },
    },
    "required": ["name"],
}


@spec("2025-06-18/client/elicitation#security-considerations.3")
@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ({"name": "bob"}, None),
        (
            {"name": "ann", "age": 3, "ratio": 0.5, "ok": True, "color": "red", "size": "s"},
            None,
        ),
        ({"name": "ann", "tags": ["a", "b"]}, None),
        ({}, "name: required"),
        ({"name": ""}, "name: shorter than 1 characters"),
        ({"name": "toolong"}, "name: longer than 5 characters"),
        ({"name": "a", "age": "3"}, "expected a integer"),
        ({"name": "a", "age": True}, "expected a integer"),
        ({"name": "a", "age": 2.5}, "expected an integer"),
        ({"name": "a", "age": -1}, "age: below the minimum 0"),
        ({"name": "a", "age": 151}, "age: above the maximum 150"),
        ({"name": "a", "age": 150}, None),
        ({"name": "a", "ok": 1}, "boolean"),
        ({"name": "a", "color": "green"}, "allowed"),
        ({"name": "a", "size": "xl"}, "allowed"),
        ({"name": "a", "tags": ["c"]}, "allowed"),
        ({"name": "a", "tags": ["a", "a", "b"]}, "tags: more than 2 items"),
        ({"name": "a", "tags": []}, "tags: fewer than 1 items"),
        ({"name": "a", "extra": 1}, None),  # JSON Schema allows other properties
        (["name"], "expected an object"),
    ],
)
def test_content_is_checked_against_the_requested_schema(content: Any, problem: str | None) -> None:
    found = elicited_content_problem(SCHEMA, content)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


class _FakeRequest:
    """Just enough of a RequestContext for Context.elicit: answers with ``result``."""

    def __init__(self, result: t.ElicitResult) -> None:
        self.result = result
        self.request_id = 1
        declared = t.ClientCapabilities(elicitation=t.ClientCapabilitiesElicitation())
        self.session = SimpleNamespace(connection=SimpleNamespace(peer_capabilities=declared))

    async def send_request(self, method: str, params: Any = None, **kw: Any) -> Any:
        await trio.lowlevel.checkpoint()
        assert method == "elicitation/create"
        return self.result


@spec("2025-06-18/client/elicitation#security-considerations.3")
async def test_context_elicit_refuses_content_that_does_not_fit() -> None:
    good = t.ElicitResult(action="accept", content={"name": "bob"})
    ctx = Context(_FakeRequest(good), None, None)  # type: ignore[arg-type]
    assert await ctx.elicit("name?", SCHEMA) is good
    bad = t.ElicitResult(action="accept", content={"name": 7})
    ctx = Context(_FakeRequest(bad), None, None)  # type: ignore[arg-type]
    with pytest.raises(McpError) as exc:
        await ctx.elicit("name?", SCHEMA)
    assert exc.value.code == INTERNAL_ERROR and "name" in exc.value.message
    # Declined or cancelled answers carry no content to check.
    declined = t.ElicitResult(action="decline")
    ctx = Context(_FakeRequest(declined), None, None)  # type: ignore[arg-type]
    assert await ctx.elicit("name?", SCHEMA) is declined


@spec(
    "2025-11-25/client/elicitation#capabilities.3",
    "2025-11-25/client/sampling#tools-in-sampling.2",
)
async def test_a_handshake_server_asks_only_in_the_modes_the_client_declared() -> None:
    from mcp_ref.server import Server, sampling

    from ._server_harness import connect

    server = Server("asking", "1")
    url = t.ElicitRequest(
        params=t.ElicitRequestURLParams(
            message="Sign in", url="https://x.example/a", elicitation_id="e1"
        )
    )
    tool = t.Tool(name="search", input_schema={"type": "object"})
    with_tools = sampling("Find it", tools=[tool])

    @server.tool()
    async def ask_url(ctx: Context) -> str:
        await ctx.ask({"u": url})
        return "asked"

    @server.tool()
    async def sample_with_tools(ctx: Context) -> str:
        await ctx.ask({"s": with_tools})
        return "asked"

    sent: list[str] = []
    responders = {
        "elicitation/create": lambda p: sent.append("elicit") or t.ElicitResult(action="decline"),
        "sampling/createMessage": lambda p: (
            sent.append("sample")
            or t.CreateMessageResult(role="assistant", content=t.TextContent(text="x"), model="m")
        ),
    }
    with trio.fail_after(5):
        async with connect(server, responders=responders) as client:  # form mode, no tools
            for name in ("ask_url", "sample_with_tools"):
                result = await client.call_tool(name)
                assert result.is_error and "did not declare" in result.content[0].text, result
        declared = t.ClientCapabilities(
            elicitation=t.ClientCapabilitiesElicitation(url={}),
            sampling=t.ClientCapabilitiesSampling(tools={}),
        )
        async with connect(server, responders=responders, capabilities=declared) as client:
            for name in ("ask_url", "sample_with_tools"):
                assert not (await client.call_tool(name)).is_error
    assert sent == ["elicit", "sample"]  # only to the client that declared them


@spec(
    "2025-11-25/client/elicitation#capabilities.2",
    "2025-11-25/client/elicitation#elicitation-requests.3",
)
def test_a_handshake_client_declares_form_mode_and_reads_a_modeless_request_as_form() -> None:
    import json

    from mcp_ref import CLIENT, Connection, Request
    from mcp_ref._client import ClientCore
    from mcp_ref.events import Request as RequestEvent

    core = ClientCore(protocol_version="2025-11-25", elicitation_handler=lambda p: None)
    conn = Connection(CLIENT, newline_framing=False)
    sent = json.loads(
        conn.send(Request(id=0, method="initialize", params=core.initialize_params()))
    )
    assert sent["params"]["capabilities"]["elicitation"] == {}  # form mode, what it answers
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "serverInfo": {"name": "s", "version": "1"},
    }
    conn.receive_message(json.dumps({"jsonrpc": "2.0", "id": 0, "result": init}).encode())
    conn.next_event()
    conn.send(Notification(method="notifications/initialized"))
    params = {"message": "Name?", "requestedSchema": SCHEMA}
    ask = {"jsonrpc": "2.0", "id": 5, "method": "elicitation/create", "params": params}
    conn.receive_message(json.dumps(ask).encode())
    event = conn.next_event()
    assert isinstance(event, RequestEvent)
    assert isinstance(event.params, t.ElicitRequestFormParams)  # no mode: form mode


@spec(
    "2025-11-25/client/elicitation#elicitation-requests.1",
    "2025-11-25/client/elicitation#form-mode-elicitation-requests.1",
    "2025-11-25/client/elicitation#url-mode-elicitation-requests.1",
    "2025-11-25/client/elicitation#completion-notifications-for-url-mode-elicitation.3",
)
def test_a_handshake_client_refuses_an_elicitation_missing_its_parameters() -> None:
    import json

    from mcp_ref import RemoteProtocolError

    from ._pair import initialized_pair

    def received(message: dict[str, Any]) -> Any:
        client, _ = initialized_pair(version="2025-11-25")
        client.receive_message(json.dumps({"jsonrpc": "2.0", **message}).encode())
        return client.next_event()

    def asked(**params: Any) -> dict[str, Any]:
        return {"id": 9, "method": "elicitation/create", "params": params}

    url = {"mode": "url", "message": "m", "url": "https://x.example/a", "elicitationId": "e"}
    assert isinstance(received(asked(**url)).params, t.ElicitRequestURLParams)
    assert isinstance(
        received(asked(mode="form", message="m", requestedSchema=SCHEMA)).params,
        t.ElicitRequestFormParams,
    )
    for bad in (
        asked(requestedSchema=SCHEMA),  # no message
        asked(mode="form", message="m"),  # no requestedSchema
        asked(mode="url", message="m", elicitationId="e"),  # no url
        asked(mode="url", message="m", url="https://x.example/a"),  # no elicitationId
        asked(mode="url", url="https://x.example/a", elicitationId="e"),  # no message
        asked(mode="other", message="m", requestedSchema=SCHEMA),  # no such mode
    ):
        with pytest.raises(RemoteProtocolError) as exc:
            received(bad)
        assert exc.value.code == -32602, bad
    done = {"method": "notifications/elicitation/complete", "params": {"elicitationId": "e"}}
    assert received(done).params.elicitation_id == "e"
    with pytest.raises(RemoteProtocolError) as exc:
        received({**done, "params": {}})
    assert exc.value.code == -32602


@spec("2025-11-25/client/elicitation#completion-notifications-for-url-mode-elicitation.4")
def test_a_completion_of_an_unknown_or_completed_elicitation_is_ignored() -> None:
    from mcp_ref._client import MAX_URL_ELICITATIONS, ClientCore

    core = ClientCore(
        elicitation_handler=lambda p: None, elicitation_url=True, elicitation_rate_limit=None
    )

    def complete(eid: str) -> bool:
        params = t.ElicitationCompleteNotificationParams(elicitation_id=eid)
        return core.notified(
            Notification(method="notifications/elicitation/complete", params=params)
        )

    for eid in ("e1", "e2"):
        url = t.ElicitRequestURLParams(message="m", url="https://x.example/a", elicitation_id=eid)
        core.handle("elicitation/create", url, 0.0)
    assert complete("e2") and complete("e1")
    assert not complete("e1")  # already completed
    assert not complete("never")  # unknown
    assert core.notified(Notification(method="notifications/tools/list_changed"))
    for n in range(MAX_URL_ELICITATIONS + 1):  # bounded: the oldest is forgotten
        url = t.ElicitRequestURLParams(
            message="m", url="https://x.example/a", elicitation_id=f"b{n}"
        )
        core.handle("elicitation/create", url, 0.0)
    assert not complete("b0") and complete(f"b{MAX_URL_ELICITATIONS}")

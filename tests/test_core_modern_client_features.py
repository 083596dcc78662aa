"""The client features in the modern era (2026-07-28), without I/O: the capabilities a
client declares in every request's ``_meta``, and the elicitation requests it reads out
of an ``input_required`` result.  Pages: 2026-07-28/client/elicitation,
2026-07-28/client/roots, 2026-07-28/client/sampling."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_ref import CLIENT, Connection, McpError, Request
from mcp_ref import types as t
from mcp_ref._client import ClientCore
from mcp_ref._modern import CLIENT_CAPABILITIES_KEY
from mcp_ref.events import ErrorResponse, Response

spec = pytest.mark.spec


def _opened(**options: Any) -> tuple[ClientCore, Connection]:
    core = ClientCore(era="modern", **options)
    conn = Connection(CLIENT, newline_framing=False)
    steps = core.opening(conn)
    with pytest.raises(StopIteration):
        next(steps)  # the modern era opens with nothing to send
    return core, conn


def _declared(conn: Connection, rid: int, method: str, params: Any = None) -> Any:
    wire = json.loads(conn.send(Request(id=rid, method=method, params=params)))
    return wire["params"]["_meta"][CLIENT_CAPABILITIES_KEY]


def _answer(params: Any) -> t.CreateMessageResult:
    return t.CreateMessageResult(role="assistant", content=t.TextContent(text="ok"), model="m")


@spec(
    "2026-07-28/client/sampling#capabilities.1",
    "2026-07-28/client/sampling#tools-in-sampling.1",
    "2026-07-28/client/elicitation#capabilities.1",
    "2026-07-28/client/elicitation#capabilities.2",
    "2026-07-28/client/roots#capabilities.1",
)
def test_every_modern_request_declares_what_the_handlers_answer() -> None:
    _, conn = _opened(
        sampling_handler=_answer,
        sampling_tools=True,
        elicitation_handler=lambda p: t.ElicitResult(action="decline"),
        roots=[t.Root(uri="file:///work")],
    )
    every = [
        _declared(conn, 1, "tools/list"),
        _declared(conn, 2, "tools/call", t.CallToolRequestParams(name="x")),
        _declared(conn, 3, "prompts/list"),
    ]
    assert (
        every
        == [{"sampling": {"tools": {}}, "elicitation": {}, "roots": {"listChanged": True}}] * 3
    )  # an empty elicitation object: form mode, which the handler answers
    _, conn = _opened(sampling_handler=_answer)
    assert _declared(conn, 1, "tools/list") == {"sampling": {}}  # no tool use: none asked
    _, conn = _opened()
    assert _declared(conn, 1, "tools/list") == {}
    with pytest.raises(ValueError, match="sampling_handler"):
        ClientCore(era="modern", sampling_tools=True)


def _read_input_request(asked: dict[str, Any]) -> Any:
    """What a modern client reads from an ``input_required`` answer asking ``asked``: the
    request's params, or the ErrorResponse the connection makes of an invalid result."""
    _, conn = _opened(elicitation_handler=lambda p: None)
    conn.send(Request(id=1, method="tools/call", params=t.CallToolRequestParams(name="x")))
    result = {"resultType": "input_required", "inputRequests": {"e": asked}}
    conn.receive_message(json.dumps({"jsonrpc": "2.0", "id": 1, "result": result}).encode())
    event = conn.next_event()
    if isinstance(event, ErrorResponse):
        return event
    assert isinstance(event, Response) and isinstance(event.result, t.InputRequiredResult)
    return event.result.input_requests["e"].params


_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}}


@spec(
    "2026-07-28/client/elicitation#elicitation-requests.2",
    "2026-07-28/client/elicitation#elicitation-requests.4",
    "2026-07-28/client/elicitation#form-mode-elicitation-requests.1",
    "2026-07-28/client/elicitation#url-mode-elicitation-requests.1",
)
def test_elicitation_requests_are_read_by_their_mode_and_need_their_parameters() -> None:
    def asked(**params: Any) -> dict[str, Any]:
        return {"method": "elicitation/create", "params": params}

    no_mode = _read_input_request(asked(message="Name?", requestedSchema=_SCHEMA))
    assert isinstance(no_mode, t.ElicitRequestFormParams)  # no mode: form mode
    url = asked(mode="url", message="Sign in", url="https://x.example/a", elicitationId="e1")
    assert isinstance(_read_input_request(url), t.ElicitRequestURLParams)
    for bad in (
        asked(requestedSchema=_SCHEMA),  # no message
        asked(mode="form", message="Name?"),  # form without requestedSchema
        asked(mode="url", message="Sign in", elicitationId="e1"),  # url without url
        asked(mode="url", url="https://x.example/a", elicitationId="e1"),  # no message
    ):
        refused = _read_input_request(bad)
        assert isinstance(refused, ErrorResponse) and refused.id == 1, bad


@spec(
    "2026-07-28/client/elicitation#url-mode-elicitation-requests.2",
    "2025-11-25/client/elicitation#url-mode-elicitation-requests.2",  # the same check, either era
)
@pytest.mark.parametrize("url", ["not a url", "/relative/path", "https://", "https://x/\n"])
def test_a_url_mode_elicitation_without_a_valid_url_never_reaches_the_handler(url: str) -> None:
    seen: list[Any] = []
    core = ClientCore(elicitation_handler=seen.append, elicitation_url=True)
    params = t.ElicitRequestURLParams(message="Sign in", url=url, elicitation_id="e1")
    with pytest.raises(McpError) as exc:
        core.handle("elicitation/create", params, 0.0)
    assert exc.value.code == -32602 and seen == []
    good = t.ElicitRequestURLParams(message="m", url="https://x.example/a", elicitation_id="e")
    core.handle("elicitation/create", good, 0.0)
    assert seen == [good]


@spec("2025-11-25/client/elicitation#error-handling.2")
def test_a_url_mode_elicitation_the_client_did_not_declare_is_invalid_params() -> None:
    seen: list[Any] = []
    form_only = ClientCore(protocol_version="2025-11-25", elicitation_handler=seen.append)
    assert form_only.capabilities.elicitation == t.ClientCapabilitiesElicitation()
    url = t.ElicitRequestURLParams(message="m", url="https://x.example/a", elicitation_id="e")
    with pytest.raises(McpError) as exc:
        form_only.handle("elicitation/create", url, 0.0)
    assert exc.value.code == -32602 and seen == []
    both = ClientCore(
        protocol_version="2025-11-25", elicitation_handler=seen.append, elicitation_url=True
    )
    assert both.capabilities.elicitation == t.ClientCapabilitiesElicitation(form={}, url={})
    both.handle("elicitation/create", url, 0.0)
    assert seen == [url]
    with pytest.raises(ValueError, match="elicitation_handler"):
        ClientCore(elicitation_url=True)

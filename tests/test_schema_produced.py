"""Every message the core produces validates against the schema of the negotiated
revision (the official schema.json files, vendored under tests/vendor/schema/)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from mcp_ref import CLIENT, SERVER, Connection, ErrorResponse, Notification, Request, Response
from mcp_ref import types as t

from ._pair import deliver, init_request, init_result
from ._spec import schema_for


def validator(version: str) -> Any:
    schema = schema_for(version)
    defs_key = "$defs" if "$defs" in schema else "definitions"
    root = {**schema, "$ref": f"#/{defs_key}/JSONRPCMessage"}
    cls = jsonschema.validators.validator_for(schema)
    return cls(root)


def produced(version: str) -> list[bytes]:
    client, server = Connection(CLIENT), Connection(SERVER)
    out = []

    def c(ev: Any, **kw: Any) -> None:
        data = client.send(ev, **kw)
        out.append(data)
        deliver(data, server)

    def s(ev: Any) -> None:
        data = server.send(ev)
        out.append(data)
        deliver(data, client)

    c(init_request(version))
    s(Response(id=0, result=init_result(version)))
    c(Notification(method="notifications/initialized"))
    c(Request(id=1, method="tools/list"))
    s(
        Response(
            id=1,
            result=t.ListToolsResult(
                tools=[
                    t.Tool(
                        name="echo",
                        input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
                    )
                ]
            ),
        )
    )
    c(
        Request(
            id=2,
            method="tools/call",
            params=t.CallToolRequestParams(
                name="echo", arguments={"text": "hi"}, meta={"progressToken": 5}
            ),
        )
    )
    s(
        Notification(
            method="notifications/progress",
            params=t.ProgressNotificationParams(progress_token=5, progress=1),
        )
    )
    s(Response(id=2, result=t.CallToolResult(content=[t.TextContent(text="hi")])))
    c(Request(id=3, method="ping"))
    s(Response(id=3, result=t.EmptyResult()))
    c(Request(id=4, method="resources/read", params=t.ReadResourceRequestParams(uri="test://x")))
    s(ErrorResponse(id=4, code=-32002, message="Resource not found", data={"uri": "test://x"}))
    c(Request(id=5, method="prompts/get", params=t.GetPromptRequestParams(name="p")))
    c(
        Notification(
            method="notifications/cancelled",
            params=t.CancelledNotificationParams(request_id=5, reason="no"),
        )
    )
    s(
        Notification(
            method="notifications/message",
            params=t.LoggingMessageNotificationParams(level="info", data={"a": 1}),
        )
    )
    s(Request(id="s1", method="roots/list"))
    c(Response(id="s1", result=t.ListRootsResult(roots=[t.Root(uri="file:///tmp")])))
    return out


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_produced_messages_validate(version: str) -> None:
    v = validator(version)
    for data in produced(version):
        message = json.loads(data)
        errors = sorted(v.iter_errors(message), key=str)
        assert not errors, f"{version}: {message}: {errors[0].message if errors else ''}"

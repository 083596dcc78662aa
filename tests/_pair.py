"""An in-memory pair of core connections, for tests: what one sends, the other reads."""

from __future__ import annotations

from typing import Any

from mcp_ref import CLIENT, NEED_DATA, SERVER, Connection, Notification, Request, Response
from mcp_ref import types as t

CLIENT_INFO = t.Implementation(name="test-client", version="1.0")
SERVER_INFO = t.Implementation(name="test-server", version="1.0")
SERVER_CAPS = t.ServerCapabilities(
    tools=t.ServerCapabilitiesTools(list_changed=True),
    resources=t.ServerCapabilitiesResources(subscribe=True, list_changed=True),
    prompts=t.ServerCapabilitiesPrompts(list_changed=True),
    logging={},
    completions={},
)
CLIENT_CAPS = t.ClientCapabilities(
    roots=t.ClientCapabilitiesRoots(list_changed=True), sampling={}, elicitation={}
)


def events(conn: Connection) -> list[Any]:
    """Drain every event the connection has ready."""
    out = []
    while (ev := conn.next_event()) is not NEED_DATA:
        out.append(ev)
    return out


def deliver(data: bytes, to: Connection) -> list[Any]:
    """Feed bytes to a connection and drain its events."""
    to.receive_data(data)
    return events(to)


def init_request(version: str = "2025-11-25", caps: Any = CLIENT_CAPS, rid: Any = 0) -> Request:
    return Request(
        id=rid,
        method="initialize",
        params=t.InitializeRequestParams(
            protocol_version=version, capabilities=caps, client_info=CLIENT_INFO
        ),
    )


def init_result(version: str = "2025-11-25", caps: Any = SERVER_CAPS) -> t.InitializeResult:
    return t.InitializeResult(protocol_version=version, capabilities=caps, server_info=SERVER_INFO)


def initialized_pair(
    version: str = "2025-11-25",
    client_caps: Any = CLIENT_CAPS,
    server_caps: Any = SERVER_CAPS,
    **kw: Any,
) -> tuple[Connection, Connection]:
    """A client and a server connection that have completed initialization."""
    client, server = Connection(CLIENT, **kw), Connection(SERVER, **kw)
    (req,) = deliver(client.send(init_request(version, client_caps)), server)
    answer = server.negotiated_version_for(req.params.protocol_version)
    (resp,) = deliver(
        server.send(Response(id=req.id, result=init_result(answer, server_caps))), client
    )
    assert isinstance(resp, Response)
    (note,) = deliver(client.send(Notification(method="notifications/initialized")), server)
    assert note.method == "notifications/initialized"
    return client, server

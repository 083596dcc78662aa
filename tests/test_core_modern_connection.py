"""The modern era (2026-07-28) in the sans-IO Connection, beside the handshake era.

A modern client Connection and a dual-era server Connection talk through bytes; every
request and result they write is validated against the vendored 2026-07-28 schema, and
the official example requests are read by a fresh server.  Pages:
2026-07-28/basic/versioning (the era, decided once; -32022), 2026-07-28/basic/index
(``_meta``, ``resultType``, error codes), 2026-07-28/basic/patterns (no server
requests; multi round-trip; cancellation), 2026-07-28/server/utilities/logging; the
spec markers name the clauses.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from mcp_ref import (
    CLIENT,
    SERVER,
    Connection,
    ErrorResponse,
    LocalProtocolError,
    Notification,
    RemoteProtocolError,
    Request,
    Response,
    State,
)
from mcp_ref import types as t
from mcp_ref._errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from mcp_ref._jsonrpc import encode
from mcp_ref._modern import PROTOCOL_VERSION_KEY, RequestContext

from ._pair import deliver, events, init_request, init_result
from ._spec import examples_dir, schema_for

DEFS = schema_for("2026-07-28")["$defs"]
spec = pytest.mark.spec
INFO = t.Implementation(name="modern-client", version="1.0")
ELICIT = t.ClientCapabilities(elicitation=t.ClientCapabilitiesElicitation(form={}))
TOOL = t.Tool(name="echo", input_schema={"type": "object"})


def _valid(name: str, doc: Any) -> None:
    validator = jsonschema.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": DEFS})
    errors = [e.message for e in validator.iter_errors(doc)]
    assert not errors, (name, errors, doc)


def _modern_client(**kw: Any) -> Connection:
    return Connection(CLIENT, era="modern", client_info=INFO, **kw)


def _meta(version: str = "2026-07-28", **more: Any) -> dict[str, Any]:
    meta = {
        PROTOCOL_VERSION_KEY: version,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    meta.update(more)
    return meta


def _raw(rid: Any, method: str, params: Any = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return encode(message) + b"\n"


def _refusal(server: Connection, data: bytes) -> RemoteProtocolError:
    server.receive_data(data)
    with pytest.raises(RemoteProtocolError) as info:
        server.next_event()
    return info.value


def _discover_result() -> t.DiscoverResult:
    return t.DiscoverResult(
        result_type="complete",
        supported_versions=["2026-07-28"],
        capabilities=t.ServerCapabilities(tools=t.ServerCapabilitiesTools()),
        ttl_ms=0,
        cache_scope="public",
    )


def _modern_pair(
    capabilities: t.ClientCapabilities | None = None,
) -> tuple[Connection, Connection]:
    """A modern client and a dual-era server after one server/discover round trip."""
    client, server = _modern_client(capabilities=capabilities), Connection(SERVER)
    (req,) = deliver(client.send(Request(id=1, method="server/discover")), server)
    (resp,) = deliver(server.send(Response(id=req.id, result=_discover_result())), client)
    assert isinstance(resp.result, t.DiscoverResult)
    return client, server


# -- a modern exchange, through bytes --------------------------------------------------


@spec("2026-07-28/basic/index#result-responses.4", "2026-07-28/basic/index#_meta.2")
def test_a_modern_client_and_a_dual_era_server_talk_through_bytes() -> None:
    """2026-07-28/basic/versioning: no handshake, every request carries its version;
    2026-07-28/basic/index#result-responses.4: every result carries ``resultType``."""
    client = _modern_client(capabilities=ELICIT)
    server = Connection(SERVER)
    assert client.state is State.OPERATING and client.era == "modern"
    assert server.state is State.PRE_INIT and server.era is None

    wire = client.send(Request(id="d", method="server/discover"))
    _valid("DiscoverRequest", json.loads(wire))
    (req,) = deliver(wire, server)
    assert isinstance(req, Request) and req.method == "server/discover"
    assert server.era == "modern" and server.state is State.OPERATING
    assert server.protocol_version == "2026-07-28"
    assert req.context == RequestContext(
        protocol_version="2026-07-28", client_capabilities=ELICIT, client_info=INFO
    )

    wire = server.send(Response(id="d", result=_discover_result()))
    _valid("DiscoverResultResponse", json.loads(wire))
    (resp,) = deliver(wire, client)
    assert resp.result == _discover_result() and resp.method == "server/discover"

    params = t.CallToolRequestParams(name="echo", arguments={"x": 1})
    wire = client.send(Request(id=2, method="tools/call", params=params))
    _valid("CallToolRequest", json.loads(wire))
    (call,) = deliver(wire, server)
    assert call.params.name == "echo" and call.params.arguments == {"x": 1}
    result = t.CallToolResult(content=[t.TextContent(text="1")])
    wire = server.send(Response(id=2, result=result))
    assert json.loads(wire)["result"]["resultType"] == "complete"
    _valid("CallToolResultResponse", json.loads(wire))
    (resp,) = deliver(wire, client)
    assert isinstance(resp.result, t.CallToolResult) and resp.result.result_type == "complete"
    assert client.requests_in_flight() == ([], []) == server.requests_in_flight()


def _wire_requests() -> list[Any]:
    """The vendored 2026-07-28 example requests sent as JSON-RPC requests: those whose
    ``_meta`` names a version (the sampling, elicitation and roots examples are input
    requests, carried inside an ``input_required`` result, so they have none)."""
    paths = sorted(examples_dir().glob("*Request/*.json"))
    return [
        p
        for p in paths
        if ((json.loads(p.read_text(encoding="utf-8")).get("params") or {}).get("_meta") or {}).get(
            PROTOCOL_VERSION_KEY
        )
    ]


@pytest.mark.parametrize("path", _wire_requests(), ids=lambda p: p.parent.name)
def test_a_fresh_server_reads_every_official_example_request(path: Any) -> None:
    """The vendored 2026-07-28 example requests: each opens the modern era of a fresh
    dual-era server, which hands it on as a Request with its context."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    server = Connection(SERVER)
    (req,) = deliver(encode(doc) + b"\n", server)
    assert isinstance(req, Request) and req.method == doc["method"] and req.id == doc["id"]
    assert req.context.protocol_version == "2026-07-28"
    assert server.era == "modern"


@spec("2026-07-28/basic/index#_meta.2")
def test_the_client_writes_the_meta_keys_and_its_own_win() -> None:
    """2026-07-28/basic/index#_meta.2: the required keys on every request; a key the
    application set in the params' own ``_meta`` (a per-request log level) is kept."""
    client = _modern_client()
    params = t.PaginatedRequestParams(meta={"io.modelcontextprotocol/logLevel": "debug"})
    meta = json.loads(client.send(Request(id=1, method="tools/list", params=params)))
    assert meta["params"]["_meta"] == {
        PROTOCOL_VERSION_KEY: "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "modern-client", "version": "1.0"},
        "io.modelcontextprotocol/logLevel": "debug",
    }
    assert params.meta == {"io.modelcontextprotocol/logLevel": "debug"}  # not changed


# -- the era is the peer's, decided once -------------------------------------------------


def test_a_handshake_client_still_gets_the_handshake_era() -> None:
    """2026-07-28/basic/versioning: "An `initialize` request selects legacy semantics"."""
    client, server = Connection(CLIENT), Connection(SERVER)
    deliver(client.send(init_request()), server)
    assert server.era == "legacy" and server.state is State.INITIALIZING
    wire = server.send(Response(id=0, result=init_result()))
    assert "resultType" not in json.loads(wire)["result"]
    deliver(wire, client)
    deliver(client.send(Notification(method="notifications/initialized")), server)
    # After initialize, a request with modern _meta is served with legacy semantics...
    (req,) = deliver(_raw(5, "tools/list", {"_meta": _meta()}), server)
    assert req.context is None and server.era == "legacy"
    wire = server.send(Response(id=5, result=t.ListToolsResult(tools=[])))
    assert "resultType" not in json.loads(wire)["result"]
    # ...and server/discover does not exist in the negotiated version.
    assert _refusal(server, _raw(6, "server/discover", {"_meta": _meta()})).code == (
        METHOD_NOT_FOUND
    )


@spec("2026-07-28/basic/versioning#backward-compatibility-with-initialization-based-versions.3")
def test_after_a_modern_request_initialize_and_ping_are_refused_naming_the_era() -> None:
    """2026-07-28/basic/versioning#backward-compatibility-with-initialization-based-versions.3:
    the error to ``initialize`` names the versions (this connection's era is modern)."""
    _, server = _modern_pair()
    exc = _refusal(server, client_bytes(init_request(rid="i")))
    assert exc.code == INVALID_REQUEST and exc.event_hint is not None
    assert "2026-07-28" in exc.message and "modern" in exc.message
    assert _refusal(server, _raw("p", "ping", {"_meta": _meta()})).code == INVALID_REQUEST
    assert server.era == "modern"


def client_bytes(request: Request) -> bytes:
    """A handshake request's bytes, as a legacy client writes it."""
    return Connection(CLIENT).send(request)


@spec("2026-07-28/basic/versioning#protocol-version-negotiation.1")
def test_a_refused_first_request_decides_nothing() -> None:
    """2026-07-28/basic/versioning#protocol-version-negotiation.1: -32022 lists the
    versions served (both eras'); the client may retry, or fall back to initialize."""
    server = Connection(SERVER)
    exc = _refusal(server, _raw(1, "tools/list", {"_meta": _meta("1900-01-01")}))
    assert exc.code == UNSUPPORTED_PROTOCOL_VERSION
    assert exc.event_hint is not None
    data = exc.event_hint.data
    assert data["requested"] == "1900-01-01"
    assert data["supported"][0] == "2026-07-28" and "2025-11-25" in data["supported"]
    wire = server.send(exc.event_hint)
    _valid("UnsupportedProtocolVersionError", json.loads(wire))
    assert server.era is None and server.state is State.PRE_INIT
    (req,) = deliver(client_bytes(init_request()), server)
    assert req.method == "initialize" and server.era == "legacy"


def test_pinned_eras() -> None:
    """A server pinned to one era judges the other era's opening by its own table."""
    legacy = Connection(SERVER, era="legacy")
    exc = _refusal(legacy, _raw(1, "tools/list", {"_meta": _meta()}))
    assert exc.code == INVALID_REQUEST and "PRE_INIT" in exc.message
    modern = Connection(SERVER, era="modern")
    assert _refusal(modern, client_bytes(init_request())).code == INVALID_REQUEST
    # a refusal's reply goes out before any request was accepted
    assert modern.send(ErrorResponse(id=0, code=INVALID_REQUEST, message="no"))
    with pytest.raises(ValueError, match="era"):
        Connection(SERVER, era="2026")
    with pytest.raises(ValueError, match="modern protocol version"):
        Connection(CLIENT, era="modern", protocol_version="2025-11-25")


# -- the server's refusals ---------------------------------------------------------------


@spec(
    "2026-07-28/basic/index#_meta.3", "2026-07-28/basic/versioning#protocol-version-negotiation.1"
)
@pytest.mark.parametrize(
    ("method", "params", "code"),
    [
        ("tools/list", None, INVALID_PARAMS),  # no _meta: malformed (#_meta.3)
        ("tools/list", {"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}}, INVALID_PARAMS),
        ("tools/list", {"_meta": _meta("2099-01-01")}, UNSUPPORTED_PROTOCOL_VERSION),
        ("tools/list", {"_meta": _meta(**{"io.modelcontextprotocol/logLevel": "loud"})}, -32602),
        ("tools/call", {"_meta": _meta()}, INVALID_PARAMS),  # no name
        ("resources/subscribe", {"uri": "a:b", "_meta": _meta()}, METHOD_NOT_FOUND),
        ("logging/setLevel", {"level": "info", "_meta": _meta()}, METHOD_NOT_FOUND),
        ("no/such", {"_meta": _meta()}, METHOD_NOT_FOUND),
    ],
)
def test_each_refusal_of_a_modern_server(method: str, params: Any, code: int) -> None:
    """2026-07-28/basic/index#_meta.3 (-32602), versioning (-32022), changelog (the
    methods 2026-07-28 removed: -32601).  The connection goes on after each."""
    _, server = _modern_pair()
    exc = _refusal(server, _raw("x", method, params))
    assert exc.code == code and exc.event_hint is not None and exc.event_hint.id == "x"
    server.send(exc.event_hint)
    (req,) = deliver(_raw("y", "tools/list", {"_meta": _meta()}), server)
    assert req.method == "tools/list"


# -- what a modern server may send ---------------------------------------------------------


def _server_with(method: str, params: dict[str, Any], caps: Any = None) -> Connection:
    server = Connection(SERVER)
    meta = _meta()
    if caps is not None:
        meta["io.modelcontextprotocol/clientCapabilities"] = caps
    deliver(_raw(1, method, {**params, "_meta": meta}), server)
    return server


def _input_required(**kw: Any) -> t.InputRequiredResult:
    return t.InputRequiredResult(result_type="input_required", **kw)


ELICIT_REQUEST = t.ElicitRequest(
    params=t.ElicitRequestFormParams(
        message="Name?", requested_schema=t.ElicitRequestFormParamsRequestedSchema(properties={})
    )
)


@spec(
    "2026-07-28/basic/patterns/mrtr#supported-requests.2",
    "2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.11",
    "2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.12",
)
def test_input_required_rules_on_send() -> None:
    """2026-07-28/basic/patterns/mrtr#supported-requests.2, #server-requirements-basic-workflow.11
    and .12: only three methods; something asked; only what the client declared."""
    server = _server_with("tools/list", {})
    with pytest.raises(LocalProtocolError, match="input_required"):
        server.send(Response(id=1, result=_input_required(request_state="s")))
    server = _server_with("tools/call", {"name": "echo"})
    with pytest.raises(LocalProtocolError, match="inputRequests or requestState"):
        server.send(Response(id=1, result=_input_required()))
    asking = _input_required(input_requests={"who": ELICIT_REQUEST})
    with pytest.raises(LocalProtocolError, match="elicitation"):
        server.send(Response(id=1, result=asking))
    with pytest.raises(LocalProtocolError, match="input_required"):
        server.send(Response(id=1, result=t.InputRequiredResult(result_type="complete")))
    server = _server_with("tools/call", {"name": "echo"}, caps={"elicitation": {}})
    wire = server.send(Response(id=1, result=asking))
    _valid("CallToolResultResponse", json.loads(wire))


def test_input_required_reaches_the_client_as_a_response() -> None:
    """The client core answers ``inputRequests`` and retries: the connection hands it
    the InputRequiredResult in the Response of the request."""
    client, server = _modern_pair(capabilities=ELICIT)
    params = t.CallToolRequestParams(name="echo")
    deliver(client.send(Request(id=7, method="tools/call", params=params)), server)
    asking = _input_required(input_requests={"who": ELICIT_REQUEST}, request_state="opaque")
    (resp,) = deliver(server.send(Response(id=7, result=asking)), client)
    assert isinstance(resp, Response) and resp.id == 7 and resp.result == asking


@spec("2026-07-28/basic/index#result-responses.4")
def test_complete_results_get_result_type_and_what_2026_requires() -> None:
    """2026-07-28/basic/index#result-responses.4; the cacheable results' ``ttlMs`` and
    ``cacheScope`` (2026-07-28/server/utilities/caching)."""
    server = _server_with("tools/list", {})
    with pytest.raises(LocalProtocolError, match="requires cache_scope, ttl_ms"):
        server.send(Response(id=1, result=t.ListToolsResult(tools=[TOOL])))
    with pytest.raises(LocalProtocolError, match="resultType must be 'complete'"):
        bad = t.ListToolsResult(tools=[], ttl_ms=0, cache_scope="private", result_type="x")
        server.send(Response(id=1, result=bad))
    with pytest.raises(LocalProtocolError, match="must be ListToolsResult"):
        server.send(Response(id=1, result=t.CallToolResult(content=[])))
    good = t.ListToolsResult(tools=[TOOL], ttl_ms=60_000, cache_scope="public")
    wire = json.loads(server.send(Response(id=1, result=good)))
    assert wire["result"]["resultType"] == "complete"
    _valid("ListToolsResultResponse", wire)


@spec(
    "2026-07-28/basic/transports/stdio#receiving-messages.2",
    "2026-07-28/basic/patterns/index#overview.1",
    "2026-07-28/basic/transports/streamable-http#receiving-messages.3",
    "2026-07-28/basic/index#error-codes.3",
    "2026-07-28/basic/index#error-codes.4",
)
def test_a_modern_server_sends_no_requests_and_no_retired_codes() -> None:
    """2026-07-28/basic/transports/stdio#receiving-messages.2 (no server requests);
    2026-07-28/basic/index#error-codes.3 and .4 (-32002, -32042, unassigned reserved)."""
    _, server = _modern_pair()
    deliver(_raw(2, "resources/read", {"uri": "a:b", "_meta": _meta()}), server)
    for method in ("roots/list", "sampling/createMessage", "ping"):
        with pytest.raises(LocalProtocolError):
            server.send(Request(id="s", method=method))
    for code in (-32002, -32042, -32050):
        with pytest.raises(LocalProtocolError, match=str(code)):
            server.send(ErrorResponse(id=2, code=code, message="no"))
    assert server.send(ErrorResponse(id=2, code=INVALID_PARAMS, message="Resource not found"))


@spec("2026-07-28/server/utilities/logging#per-request-log-level.1")
def test_log_messages_only_for_a_request_that_asked() -> None:
    """2026-07-28/server/utilities/logging#per-request-log-level.1."""
    server = _server_with("tools/call", {"name": "echo"})

    def log(level: str) -> Notification:
        params = t.LoggingMessageNotificationParams(level=level, data="x")  # type: ignore[arg-type]
        return Notification(method="notifications/message", params=params)

    with pytest.raises(LocalProtocolError, match="asked"):
        server.send(log("error"))
    level = {"io.modelcontextprotocol/logLevel": "warning"}
    deliver(_raw(2, "tools/call", {"name": "echo", "_meta": _meta(**level)}), server)
    with pytest.raises(LocalProtocolError, match="asked"):
        server.send(log("info"))
    assert server.send(log("warning")) and server.send(log("error"))


@spec(
    "2026-07-28/basic/patterns/cancellation#behavior-requirements.2",
    "2026-07-28/basic/patterns/cancellation#cancellation.3",
)
def test_server_cancellation_ends_only_a_subscription() -> None:
    """2026-07-28/basic/patterns/cancellation#behavior-requirements.2; the client hears
    it as a notification (its subscription ended)."""
    client, server = _modern_pair()
    deliver(client.send(Request(id=3, method="tools/list")), server)
    listen = t.SubscriptionsListenRequestParams(
        notifications=t.SubscriptionFilter(tools_list_changed=True), meta={}
    )
    deliver(client.send(Request(id=4, method="subscriptions/listen", params=listen)), server)
    # The acknowledgement is read as 2026-07-28 reads it (its fields typed, none in extra).
    ack_params = t.SubscriptionsAcknowledgedNotificationParams(
        notifications=t.SubscriptionFilter(tools_list_changed=True),
        meta={"io.modelcontextprotocol/subscriptionId": 4},
    )
    ack = Notification(method="notifications/subscriptions/acknowledged", params=ack_params)
    (ev,) = deliver(server.send(ack), client)
    assert ev == ack and ev.params.notifications.extra == {}
    cancel = t.CancelledNotificationParams(request_id=3)
    with pytest.raises(LocalProtocolError, match="subscriptions/listen"):
        server.send(Notification(method="notifications/cancelled", params=cancel))
    end = Notification(
        method="notifications/cancelled", params=t.CancelledNotificationParams(request_id=4)
    )
    (ev,) = deliver(server.send(end), client)
    assert ev == end


@spec(
    "2026-07-28/basic/patterns/subscriptions#receiving-notifications.1",
    "2026-07-28/basic/transports/stdio#receiving-messages.1",
)
def test_the_client_keeps_only_notifications_of_its_open_subscriptions() -> None:
    client, server = _modern_pair()
    listen = t.SubscriptionsListenRequestParams(
        notifications=t.SubscriptionFilter(resource_subscriptions=["file:///a"]), meta={}
    )
    for rid in (4, 5):
        deliver(client.send(Request(id=rid, method="subscriptions/listen", params=listen)), server)

    def update(sid: Any) -> bytes:
        params = t.ResourceUpdatedNotificationParams(
            uri="file:///a", meta={"io.modelcontextprotocol/subscriptionId": sid}
        )
        return server.send(Notification(method="notifications/resources/updated", params=params))

    got = deliver(update(4) + update(5), client)
    assert [ev.params.meta["io.modelcontextprotocol/subscriptionId"] for ev in got] == [4, 5]
    # No listen of ours has id 9 or "4" (the id is 4): notifications of no open subscription.
    assert deliver(_raw_update(9) + _raw_update("4"), client) == []
    # The client cancels listen 4: a late notification of it is dropped, 5's still come.
    cancel = t.CancelledNotificationParams(request_id=4)
    deliver(client.send(Notification(method="notifications/cancelled", params=cancel)), server)
    got = deliver(update(4) + update(5), client)
    assert [ev.params.meta["io.modelcontextprotocol/subscriptionId"] for ev in got] == [5]
    # A notification that names no subscription is not a subscription's: delivered.
    plain = Notification(method="notifications/tools/list_changed")
    assert deliver(encode({"jsonrpc": "2.0", "method": plain.method}) + b"\n", client) == [plain]


def _raw_update(sid: Any) -> bytes:
    params = {"uri": "file:///a", "_meta": {"io.modelcontextprotocol/subscriptionId": sid}}
    message = {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": params}
    return encode(message) + b"\n"


# -- what a modern client reads -------------------------------------------------------------


def _answer(client: Connection, method: str, result: dict[str, Any], **params: Any) -> Any:
    typed = None
    if params:
        typed = t.CallToolRequestParams(**params)
    client.send(Request(id="r", method=method, params=typed))
    message = {"jsonrpc": "2.0", "id": "r", "result": result}
    (ev,) = deliver(encode(message) + b"\n", client)
    return ev


@spec("2026-07-28/basic/index#resulttype.3", "2026-07-28/basic/index#resulttype.4")
def test_the_client_reads_results_by_result_type() -> None:
    """2026-07-28/basic/index#resulttype.3 (unknown: invalid) and .4 (absent: complete);
    mrtr#supported-requests.2 (input_required only where allowed)."""
    ev = _answer(_modern_client(), "tools/call", {"content": []}, name="e")
    assert isinstance(ev.result, t.CallToolResult) and ev.result.result_type == "complete"
    ev = _answer(_modern_client(), "tools/call", {"resultType": "weird", "content": []}, name="e")
    assert isinstance(ev, ErrorResponse) and ev.code == INTERNAL_ERROR and "weird" in ev.message
    asks = {"resultType": "input_required", "requestState": "s"}
    ev = _answer(_modern_client(), "tools/list", asks)
    assert isinstance(ev, ErrorResponse) and ev.code == INTERNAL_ERROR
    ev = _answer(_modern_client(), "tools/call", asks, name="e")
    assert ev.result == t.InputRequiredResult(result_type="input_required", request_state="s")


@spec("2026-07-28/basic/index#resulttype.2")
@pytest.mark.parametrize("kind", ["task", "Complete", "input-required", "partial"])
def test_the_supported_result_types_are_the_cores_two(kind: str) -> None:
    """An extension's value (the tasks extension's ``task``) is supported only when that
    extension is, and mcp_ref advertises none: read as invalid, like a misspelt one."""
    for core in ("complete", "input_required"):
        ev = _answer(
            _modern_client(),
            "tools/call",
            {"resultType": core, "content": [], "inputRequests": {}},
            name="e",
        )
        assert not isinstance(ev, ErrorResponse), (core, ev)
    result = {"resultType": kind, "content": [], "task": {"taskId": "t"}}
    ev = _answer(_modern_client(), "tools/call", result, name="e")
    assert isinstance(ev, ErrorResponse) and ev.code == INTERNAL_ERROR and kind in ev.message


@spec("2026-07-28/basic/transports/stdio#sending-messages.1")
def test_a_modern_client_sends_no_handshake() -> None:
    """2026-07-28/changelog (major change 2 and 5): no initialize, no ping."""
    client = _modern_client()
    for request in (init_request(), Request(id=9, method="ping")):
        with pytest.raises(LocalProtocolError):
            client.send(request)
    with pytest.raises(LocalProtocolError):
        client.send(Notification(method="notifications/initialized"))
    assert events(client) == []


@spec("2026-07-28/basic/transports/stdio#cancellation.2")
def test_progress_and_cancellation_work_as_before_in_the_modern_era() -> None:
    """2026-07-28/basic/patterns/progress and cancellation: the token travels in the
    ``_meta`` beside the era's keys; a client's cancellation stops the request."""
    from mcp_ref import Progress, RequestCancelled

    client, server = _modern_pair()
    params = t.CallToolRequestParams(name="slow", meta={"progressToken": "tok"})
    (req,) = deliver(client.send(Request(id=5, method="tools/call", params=params)), server)
    assert req.params.meta["progressToken"] == "tok"
    note = t.ProgressNotificationParams(progress_token="tok", progress=1.0)
    (ev,) = deliver(server.send(Notification(method="notifications/progress", params=note)), client)
    assert isinstance(ev, Progress) and ev.request_id == 5
    cancel = t.CancelledNotificationParams(request_id=5, reason="enough")
    wire = client.send(Notification(method="notifications/cancelled", params=cancel))
    (ev,) = deliver(wire, server)
    assert ev == RequestCancelled(id=5, reason="enough")
    assert server.send(Response(id=5, result=t.CallToolResult(content=[]))) == b""
    # Nor any other message for it: its progress token belongs to no request now.
    late = t.ProgressNotificationParams(progress_token="tok", progress=2.0)
    with pytest.raises(LocalProtocolError, match="no active request"):
        server.send(Notification(method="notifications/progress", params=late))


@spec("2026-07-28/basic/index#requests.3")
def test_a_modern_peer_may_use_an_answered_id_again_but_not_one_in_flight() -> None:
    """2026-07-28 forbids only an id the sender is still waiting on; the handshake era's
    "never within the same session" is gone (each Streamable HTTP POST stands alone, and
    a server may carry many of them on one connection)."""
    _client, server = _modern_pair()
    discover = _raw(7, "server/discover", {"_meta": _meta()})
    (req,) = deliver(discover, server)
    assert _refusal(server, discover).code == INVALID_REQUEST  # 7 is in flight
    server.send(Response(id=req.id, result=_discover_result()))
    (again,) = deliver(discover, server)  # answered: 7 may be used again
    assert again.id == 7

"""The 2026-07-28 per-request rules (mcp_ref._modern), on the official example messages.

The requests and error responses come from the vendored examples of the 2026-07-28
schema (tests/vendor/examples/2026-07-28, see tests/vendor/README.md); every error this
module produces is written as a JSON-RPC error response and validated against its
definition in the vendored 2026-07-28 schema.json.  Pages: 2026-07-28/basic/index
(``_meta``, error codes), 2026-07-28/basic/versioning, 2026-07-28/basic/transports/stdio
and streamable-http.  Each test cites the clauses it proves with spec markers.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import jsonschema
import pytest

from mcp_ref import types as t
from mcp_ref._modern import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    HEADER_MISMATCH,
    LOG_LEVEL_KEY,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PROTOCOL_VERSION_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
    PeerEra,
    RequestContext,
    check_headers,
    decode_header_value,
    era_of_reply,
    era_of_request,
    read_request_meta,
    request_meta,
    require_capabilities,
)
from mcp_ref.events import ErrorResponse

from ._spec import examples_dir, schema_for

DEFS = schema_for("2026-07-28")["$defs"]


def _example(type_name: str, file_name: str) -> Any:
    return json.loads((examples_dir() / type_name / file_name).read_text(encoding="utf-8"))


def _requests_with_meta() -> list[tuple[str, str]]:
    """Every example request whose params carry the protocol version in ``_meta``."""
    out = []
    for folder in sorted(examples_dir().iterdir()):
        for path in sorted(folder.glob("*.json")):
            doc = json.loads(path.read_text(encoding="utf-8"))
            meta = (doc.get("params") or {}).get("_meta") or {} if isinstance(doc, dict) else {}
            if "id" in doc and PROTOCOL_VERSION_KEY in meta:
                out.append((folder.name, path.name))
    return out


REQUESTS = _requests_with_meta()
CALL = _example("CallToolRequest", "call-tool-request.json")


def _wire(error: ErrorResponse) -> dict[str, Any]:
    """The JSON-RPC error response for ``error``, as it goes on the wire."""
    body: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.data is not None:
        body["data"] = error.data
    return {"jsonrpc": "2.0", "id": error.id, "error": body}


def _valid(name: str, doc: Any) -> list[str]:
    validator = jsonschema.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": DEFS})
    return [e.message for e in validator.iter_errors(doc)]


def _with_meta(**changes: Any) -> dict[str, Any]:
    """CALL's params with ``_meta`` keys changed (a value of None removes the key)."""
    params = copy.deepcopy(CALL["params"])
    for key, value in changes.items():
        if value is None:
            params["_meta"].pop(key, None)
        else:
            params["_meta"][key] = value
    return params


# --- _meta: the per-request fields --------------------------------------------------------


def test_there_are_example_requests_to_read() -> None:
    assert len(REQUESTS) >= 8


@pytest.mark.parametrize(("type_name", "file_name"), REQUESTS)
def test_every_example_request_reads_as_its_context(type_name: str, file_name: str) -> None:
    """2026-07-28/basic/index#_meta.2: the official requests carry the required fields,
    and the context holds exactly what their ``_meta`` says."""
    doc = _example(type_name, file_name)
    meta = doc["params"]["_meta"]
    ctx = read_request_meta(doc["params"], request_id=doc["id"])
    assert isinstance(ctx, RequestContext), ctx
    assert ctx.protocol_version == meta[PROTOCOL_VERSION_KEY] == "2026-07-28"
    caps = meta[CLIENT_CAPABILITIES_KEY]
    assert request_meta(capabilities=ctx.client_capabilities, client_info=ctx.client_info) == {
        k: v for k, v in meta.items() if k != LOG_LEVEL_KEY and k != "progressToken"
    }
    assert (ctx.client_info is None) == (CLIENT_INFO_KEY not in meta)
    assert set(caps) <= {"elicitation", "sampling", "roots", "experimental", "extensions"}


@pytest.mark.spec(
    "2026-07-28/basic/index#_meta.3",
    "2026-07-28/basic/patterns/mrtr#multi-round-trip-requests.2",
    "2026-07-28/server/tools#tools.1",
    "2026-07-28/server/prompts#prompts.1",
    "2026-07-28/server/resources#resources.1",
    "2026-07-28/server/utilities/completion#completion.1",
    "2026-07-28/server/utilities/pagination#pagination.1",
)
@pytest.mark.parametrize(
    ("params", "names"),
    [
        (None, "params._meta"),
        ([], "params._meta"),
        ({"name": "x"}, "params._meta"),
        ({"name": "x", "_meta": []}, "params._meta"),
        (_with_meta(**{PROTOCOL_VERSION_KEY: None}), PROTOCOL_VERSION_KEY),
        (_with_meta(**{PROTOCOL_VERSION_KEY: 20260728}), PROTOCOL_VERSION_KEY),
        (_with_meta(**{CLIENT_CAPABILITIES_KEY: None}), CLIENT_CAPABILITIES_KEY),
        (_with_meta(**{CLIENT_CAPABILITIES_KEY: []}), CLIENT_CAPABILITIES_KEY),
        (_with_meta(**{CLIENT_CAPABILITIES_KEY: {"sampling": 1}}), CLIENT_CAPABILITIES_KEY),
        (_with_meta(**{CLIENT_INFO_KEY: {"name": "c"}}), CLIENT_INFO_KEY),
        (_with_meta(**{LOG_LEVEL_KEY: "loud"}), LOG_LEVEL_KEY),
    ],
)
def test_a_malformed_or_missing_required_field_is_invalid_params(params: Any, names: str) -> None:
    """2026-07-28/basic/index#_meta.3: "A request missing any required field is
    malformed; the server MUST reject it with JSON-RPC error code `-32602`"; the
    message names the field."""
    answer = read_request_meta(params, request_id="r1")
    assert isinstance(answer, ErrorResponse)
    assert (answer.id, answer.code, answer.data) == ("r1", -32602, None)
    assert names in answer.message


def test_optional_fields_are_read_when_present() -> None:
    ctx = read_request_meta(
        _with_meta(**{LOG_LEVEL_KEY: "warning", CLIENT_INFO_KEY: None}), request_id=1
    )
    assert isinstance(ctx, RequestContext)
    assert ctx.log_level == "warning" and ctx.client_info is None


@pytest.mark.spec("2026-07-28/basic/versioning#protocol-version-negotiation.1")
def test_an_unsupported_version_is_answered_as_the_official_example() -> None:
    """2026-07-28/basic/versioning#protocol-version-negotiation.1: -32022 listing the
    versions served; the same bytes as the schema's example, and valid against it."""
    example = _example("UnsupportedProtocolVersionError", "unsupported-version.json")
    answer = read_request_meta(
        _with_meta(**{PROTOCOL_VERSION_KEY: "1900-01-01"}),
        request_id=1,
        advertised=["2026-07-28", "2025-11-25"],
    )
    assert isinstance(answer, ErrorResponse)
    assert answer.code == UNSUPPORTED_PROTOCOL_VERSION == -32022
    assert _wire(answer) == example
    assert not _valid("UnsupportedProtocolVersionError", _wire(answer))


def test_the_version_is_judged_before_the_other_fields() -> None:
    """A version the server does not serve gets -32022 even when the rest of ``_meta``
    would not pass: its shape is that version's business."""
    params = _with_meta(**{PROTOCOL_VERSION_KEY: "2025-11-25", CLIENT_CAPABILITIES_KEY: None})
    answer = read_request_meta(params, request_id=3)
    assert isinstance(answer, ErrorResponse) and answer.code == -32022
    assert answer.data == {"supported": ["2026-07-28"], "requested": "2025-11-25"}
    served = read_request_meta(_with_meta(), request_id=3, supported=("2027-01-01",))
    assert isinstance(served, ErrorResponse) and served.data["requested"] == "2026-07-28"


def test_request_meta_builds_what_read_request_meta_reads() -> None:
    caps = t.ClientCapabilities(elicitation=t.ClientCapabilitiesElicitation(form={}))
    info = t.Implementation(name="c", version="1")
    meta = request_meta(
        capabilities=caps, client_info=info, log_level="debug", extra={"progressToken": 5}
    )
    assert meta == {
        "progressToken": 5,
        PROTOCOL_VERSION_KEY: "2026-07-28",
        CLIENT_CAPABILITIES_KEY: {"elicitation": {"form": {}}},
        CLIENT_INFO_KEY: {"name": "c", "version": "1"},
        LOG_LEVEL_KEY: "debug",
    }
    ctx = read_request_meta({"_meta": meta}, request_id=0)
    assert ctx == RequestContext(
        protocol_version="2026-07-28", client_capabilities=caps, client_info=info, log_level="debug"
    )


# --- capabilities the request needs --------------------------------------------------------


def _context(capabilities: dict[str, Any]) -> RequestContext:
    ctx = read_request_meta(_with_meta(**{CLIENT_CAPABILITIES_KEY: capabilities}), request_id=1)
    assert isinstance(ctx, RequestContext)
    return ctx


@pytest.mark.spec("2026-07-28/basic/index#_meta.7")
def test_a_missing_capability_is_answered_as_the_official_example() -> None:
    """2026-07-28/basic/index#_meta.7: -32021 whose ``data.requiredCapabilities`` lists
    the missing capabilities; the example's code and data, valid against the schema."""
    example = _example(
        "MissingRequiredClientCapabilityError", "missing-elicitation-capability.json"
    )
    answer = require_capabilities(_context({}), {"elicitation": {}}, request_id=1)
    assert isinstance(answer, ErrorResponse)
    assert answer.code == MISSING_REQUIRED_CLIENT_CAPABILITY == -32021
    wire = _wire(answer)
    assert wire["error"]["data"] == example["error"]["data"]
    assert {k: v for k, v in wire.items() if k != "error"} == {
        k: v for k, v in example.items() if k != "error"
    }
    assert not _valid("MissingRequiredClientCapabilityError", wire)


@pytest.mark.spec("2026-07-28/basic/index#_meta.6", "2026-07-28/basic/index#_meta.7")
@pytest.mark.parametrize(
    ("declared", "required", "missing"),
    [
        ({"elicitation": {}}, {"elicitation": {}}, None),
        ({"elicitation": {"form": {}}}, {"elicitation": {}}, None),
        ({"elicitation": {"form": {}}}, {"elicitation": {"url": {}}}, {"elicitation": {"url": {}}}),
        ({"sampling": {}}, {"sampling": {"tools": {}}}, {"sampling": {"tools": {}}}),
        (
            {"roots": {}},
            {"roots": {}, "sampling": {}, "elicitation": {}},
            {"sampling": {}, "elicitation": {}},
        ),
        ({"sampling": {"tools": {}}}, {"sampling": {"tools": {}}}, None),
        ({}, {}, None),
    ],
)
def test_only_the_capabilities_not_declared_are_listed(
    declared: dict[str, Any], required: dict[str, Any], missing: dict[str, Any] | None
) -> None:
    """2026-07-28/basic/index#_meta.6: the server relies only on what was declared; an
    empty object declares the capability."""
    answer = require_capabilities(_context(declared), required, request_id=9)
    if missing is None:
        assert answer is None
    else:
        assert isinstance(answer, ErrorResponse) and answer.code == -32021
        assert answer.data == {"requiredCapabilities": missing}
        assert not _valid("MissingRequiredClientCapabilityError", _wire(answer))


# --- Streamable HTTP: headers against the body --------------------------------------------


def _headers(**overrides: str | None) -> dict[str, str]:
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}
    headers["Mcp-Name"] = CALL["params"]["name"]
    for key, value in overrides.items():
        name = key.replace("_", "-")
        headers.pop(name, None)
        if value is not None:
            headers[name] = value
    return headers


@pytest.mark.spec("2026-07-28/basic/transports/streamable-http#case-sensitivity.1")
def test_headers_that_mirror_the_body_pass() -> None:
    """2026-07-28/basic/transports/streamable-http#standard-request-headers: the three
    headers of the page's example, in any letter case (#case-sensitivity.1)."""
    assert check_headers(_headers(), CALL) is None
    lower = {k.lower(): v for k, v in _headers().items()}
    assert check_headers(lower, CALL) is None
    upper = {k.upper(): v for k, v in _headers().items()}
    assert check_headers(upper, CALL) is None


@pytest.mark.spec("2026-07-28/basic/transports/streamable-http#server-validation.1")
@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ({"MCP_Protocol_Version": "2025-11-25"}, "MCP-Protocol-Version header value"),
        ({"MCP_Protocol_Version": None}, "missing MCP-Protocol-Version"),
        ({"Mcp_Method": "tools/list"}, "Mcp-Method header value"),
        ({"Mcp_Method": None}, "missing Mcp-Method"),
        ({"Mcp_Name": "foo"}, "Mcp-Name header value 'foo' does not match body value"),
        ({"Mcp_Name": None}, "missing Mcp-Name"),
        ({"Mcp_Name": "=?base64?!!!?="}, "not valid Base64"),
        ({"Mcp_Name": "GET_WEATHER"}, "Mcp-Name header value"),
    ],
)
def test_a_header_missing_or_disagreeing_is_a_header_mismatch(
    overrides: dict[str, str | None], words: str
) -> None:
    """2026-07-28/basic/transports/streamable-http#server-validation.1 and .3: -32020,
    valid against ``HeaderMismatchError``, carrying the request's id; values compared
    exactly."""
    answer = check_headers(_headers(**overrides), CALL)
    assert isinstance(answer, ErrorResponse)
    assert (answer.code, answer.id) == (HEADER_MISMATCH, CALL["id"])
    assert words in answer.message
    assert not _valid("HeaderMismatchError", _wire(answer))


def test_the_mismatch_message_reads_as_the_official_example() -> None:
    example = _example("HeaderMismatchError", "header-mismatch.json")
    body = copy.deepcopy(CALL)
    body["id"], body["params"]["name"] = 1, "bar"
    answer = check_headers(_headers(Mcp_Name="foo"), body)
    assert isinstance(answer, ErrorResponse)
    assert _wire(answer) == example


def test_mcp_name_is_the_uri_for_resources_read_and_absent_for_other_methods() -> None:
    read = _example("ReadResourceRequest", "read-resource-request.json")
    uri = read["params"]["uri"]
    base = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "resources/read"}
    assert check_headers({**base, "Mcp-Name": uri}, read) is None
    assert check_headers(base, read) is not None
    discover = _example("DiscoverRequest", "server-discover-request.json")
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}
    assert check_headers(headers, discover) is None


@pytest.mark.spec(
    "2026-07-28/basic/transports/streamable-http#value-encoding.4",
    "2026-07-28/basic/transports/streamable-http#value-encoding.5",
    "2026-07-28/basic/transports/streamable-http#value-encoding.6",
    "2026-07-28/basic/transports/streamable-http#server-validation.4",
)
def test_an_encoded_name_is_decoded_before_comparing() -> None:
    """#value-encoding.6: "servers MUST decode an encoded `Mcp-Name` ... before
    comparing it"; the page's own encoding examples."""
    body = copy.deepcopy(CALL)
    body["params"]["name"] = "Hello, 世界"
    assert check_headers(_headers(Mcp_Name="=?base64?SGVsbG8sIOS4lueVjA==?="), body) is None
    assert check_headers(_headers(Mcp_Name="Hello, 世界"), body) is None  # plain: as sent
    assert decode_header_value("=?base64?IHBhZGRlZCA=?=") == " padded "
    assert decode_header_value("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=") == "=?base64?literal?="
    assert decode_header_value("us-west1") == "us-west1"
    assert decode_header_value("=?BASE64?dXM=?=") == "=?BASE64?dXM=?="  # markers: lowercase
    assert decode_header_value("=?base64?=") == "=?base64?="  # the markers overlap: plain
    assert decode_header_value("=?base64??=") == ""  # an encoded empty value
    bad = "=?base64?" + base64.b64encode(b"\xff\xfe").decode() + "?="
    assert decode_header_value(bad) is None


# --- the era --------------------------------------------------------------------------------


@pytest.mark.parametrize(("type_name", "file_name"), REQUESTS)
def test_a_request_with_the_version_in_meta_is_modern(type_name: str, file_name: str) -> None:
    """2026-07-28/basic/versioning: "A request carrying modern per-request `_meta` is
    served statelessly according to this revision"."""
    assert era_of_request(_example(type_name, file_name)) == "modern"


def test_initialize_is_legacy_and_other_requests_undecided() -> None:
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"_meta": {}}}
    assert era_of_request(init) == "legacy"
    legacy_call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}}
    assert era_of_request(legacy_call) is None
    assert era_of_request({"jsonrpc": "2.0", "id": 1, "method": "ping"}) is None
    assert era_of_request([CALL]) is None


def test_a_result_or_a_modern_error_identifies_a_modern_server() -> None:
    """2026-07-28/basic/transports/stdio#backward-compatibility: a DiscoverResult or a
    recognized modern error means modern; the official examples of each."""
    assert era_of_reply(_example("DiscoverResultResponse", "discover-result-response.json")) == (
        "modern"
    )
    for type_name, file_name in [
        ("UnsupportedProtocolVersionError", "unsupported-version.json"),
        ("MissingRequiredClientCapabilityError", "missing-elicitation-capability.json"),
        ("HeaderMismatchError", "header-mismatch.json"),
    ]:
        assert era_of_reply(_example(type_name, file_name)) == "modern", type_name


@pytest.mark.spec("2026-07-28/basic/transports/stdio#backward-compatibility.2")
@pytest.mark.parametrize(
    "reply",
    [
        None,
        b"",
        {"jsonrpc": "2.0", "id": 1, "error": _example("InvalidParamsError", "unknown-tool.json")},
        {
            "jsonrpc": "2.0",
            "id": 1,
            "error": _example("MethodNotFoundError", "prompts-not-supported.json"),
        },
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message": "not initialized"}},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": True, "message": "odd"}},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": "-32022", "message": "odd"}},
        {"error": "Bad Request"},
    ],
)
def test_anything_else_identifies_a_legacy_server(reply: Any) -> None:
    """#backward-compatibility.2: "The fallback MUST NOT be keyed to one specific error
    code": any other error, body or silence means legacy."""
    assert era_of_reply(reply) == "legacy"


@pytest.mark.spec(
    "2026-07-28/basic/versioning#backward-compatibility-with-initialization-based-versions.2",
)
def test_the_era_is_decided_once_per_peer() -> None:
    """2026-07-28/basic/versioning#backward-compatibility-with-initialization-based-versions.2:
    the result is cached for the peer; a contrary decision is a bug; forget re-probes."""
    era = PeerEra()
    assert era.era is None
    assert era.decide("modern") == "modern"
    assert era.decide("modern") == "modern"
    with pytest.raises(ValueError, match="decided before"):
        era.decide("legacy")
    assert era.era == "modern"
    era.forget()
    assert era.decide("legacy") == "legacy"

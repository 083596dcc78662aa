"""mcp_ref.types against every revision's schema: one model, each piece's revisions.

For each revision whose schema.json is vendored (tests/vendor/schema, see
tests/_spec.py), every definition must be in :mod:`mcp_ref.types`, and the revisions
the generator recorded (``DEFINED_IN``, each field's ``revisions`` and ``required_in``
metadata, read through :mod:`mcp_ref._revisions`) must be exactly what that schema
says: a property the generator forgot in one revision, or one it credits to a revision
that lacks it, fails here.

The two factoring rules of the generator (spec_map/gen_types.py) are restated here on
their own: before 2025-11-25 a request or notification definition lists neither the
JSON-RPC envelope (``jsonrpc``; ``id`` for a request) nor ``_meta`` in its params, which
the base definitions give every message.
"""

from __future__ import annotations

import functools
import typing
from typing import Any

import attrs
import pytest

from mcp_ref import types as t
from mcp_ref._convert import _wire_name
from mcp_ref._revisions import (
    HANDSHAKE_REVISIONS,
    MODERN_REVISIONS,
    REVISIONS,
    allowed_in,
    fields_in,
    required_in,
    revisions_of,
)

from ._spec import REVISIONS as VENDORED
from ._spec import schema_for

ENVELOPED = "2025-11-25"  # the first revision whose requests list jsonrpc and id

DEFS: dict[str, dict[str, Any]] = {
    rev: (lambda s: s.get("$defs") or s["definitions"])(schema_for(rev)) for rev in VENDORED
}


def _resolve(defs: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """An object definition with $ref followed and allOf merged."""
    if "$ref" in schema:
        return _resolve(defs, defs[schema["$ref"].rsplit("/", 1)[1]])
    if "allOf" in schema:
        props: dict[str, Any] = {}
        required: list[str] = []
        for part in schema["allOf"]:
            sub = _resolve(defs, part)
            props.update(sub.get("properties", {}))
            required += sub.get("required", [])
        return {"properties": props, "required": required}
    return schema


def _is_object(schema: dict[str, Any]) -> bool:
    return "allOf" in schema or (
        schema.get("type") == "object"
        and (bool(schema.get("properties")) or schema.get("additionalProperties") == {})
    )


def _old(rev: str) -> bool:
    return REVISIONS.index(rev) < REVISIONS.index(ENVELOPED)


def _expected(rev: str, obj: dict[str, Any], cls: type) -> tuple[set[str], set[str]]:
    """(allowed, required) wire names of ``cls`` in ``rev``: the schema's properties,
    plus what the envelope rule adds to an older revision's request or notification."""
    allowed = set(obj.get("properties", {}))
    required = set(obj.get("required", []))
    if _old(rev) and "method" in allowed:
        own = {_wire_name(f) for f in attrs.fields(cls)}
        envelope = {"jsonrpc", "id"} & own
        allowed |= envelope
        required |= envelope
    return allowed, required


CASES = [
    (rev, name)
    for rev in VENDORED
    for name, schema in DEFS[rev].items()
    if _is_object(schema) and attrs.has(getattr(t, name, None))
]
PARAMS = [  # an older revision's inline params, which its _meta rule covers
    (rev, name)
    for rev in VENDORED
    if _old(rev)
    for name, schema in DEFS[rev].items()
    if _is_object(schema)
    and "method" in _resolve(DEFS[rev], schema).get("properties", {})
    and "properties" in _resolve(DEFS[rev], schema)["properties"].get("params", {})
]


def test_the_vendored_revisions_are_the_model_s() -> None:
    assert VENDORED == REVISIONS
    assert HANDSHAKE_REVISIONS + MODERN_REVISIONS == REVISIONS


@pytest.mark.parametrize("rev", VENDORED)
def test_every_definition_of_every_revision_has_a_name(rev: str) -> None:
    """Every $defs name of every revision is in types; it is credited to the revision
    exactly when the generated kind (class or not) is the revision's."""
    for name, schema in DEFS[rev].items():
        assert name in t.__all__ and name in t.DEFINED_IN, (rev, name)
        obj = getattr(t, name)
        is_class = isinstance(obj, type) and obj.__name__ == name  # not an alias of one
        same_kind = is_class == _is_object(schema)
        assert allowed_in(name, rev) == same_kind, (rev, name)


def _classes_in(tp: Any) -> list[type]:
    """The attrs classes an annotation names (``X | None``, ``list[X]``...)."""
    if attrs.has(tp):
        return [tp]
    return [c for arg in typing.get_args(tp) for c in _classes_in(arg)]


def _inline_objects(defs: dict[str, Any], node: dict[str, Any]) -> dict[str, Any] | None:
    """The object schema an inline property holds (itself, or its array's items), or
    None when it holds no object with properties of its own."""
    node = node.get("items", node) if node.get("type") == "array" else node
    if "$ref" in node or not ("properties" in node or "allOf" in node):
        return None
    return _resolve(defs, node)


@functools.cache
def _inline_classes(rev: str) -> frozenset[str]:
    """The classes generated where ``rev``'s schema has an inline object, at any depth
    under a ``$defs`` object (the class of the field that property became)."""
    found: set[str] = set()

    def walk(cls: type, obj: dict[str, Any]) -> None:
        props = obj.get("properties", {})
        for f in attrs.fields(cls):
            inline = _inline_objects(DEFS[rev], props.get(_wire_name(f), {}))
            if f.name == "extra" or inline is None:
                continue
            for inner in _classes_in(f.type):
                if inner.__name__ not in found:
                    found.add(inner.__name__)
                    walk(inner, inline)

    for parent, schema in DEFS[rev].items():
        cls = getattr(t, parent, None)
        if _is_object(schema) and attrs.has(cls) and cls.__name__ == parent:
            walk(cls, _resolve(DEFS[rev], schema))
    return frozenset(found)


@pytest.mark.parametrize("name", sorted(t.DEFINED_IN))
def test_no_revision_is_credited_a_definition_it_lacks(name: str) -> None:
    """The reverse: each revision credited with a name defines it, or has an inline
    object where that class is used (``CallToolRequest.params`` in 2024-11-05 is
    ``CallToolRequestParams``; ``ListToolsRequest.params`` is ``PaginatedRequestParams``)."""
    for rev in revisions_of(name):
        assert name in DEFS[rev] or name in _inline_classes(rev), (rev, name)


@pytest.mark.parametrize(("rev", "name"), CASES)
def test_fields_allowed_and_required_match_each_revision(rev: str, name: str) -> None:
    cls = getattr(t, name)
    if not allowed_in(cls, rev):
        pytest.fail(f"{name} is an object in {rev} but not credited to it")
    obj = _resolve(DEFS[rev], DEFS[rev][name])
    allowed, required = _expected(rev, obj, cls)
    got = {_wire_name(f) for f in fields_in(cls, rev)}
    assert got == allowed, f"{name} in {rev}: missing {allowed - got}, extra {got - allowed}"
    got_required = {_wire_name(f) for f in fields_in(cls, rev) if required_in(f, rev)}
    assert got_required == required, f"{name} in {rev}"


@pytest.mark.parametrize(("rev", "name"), PARAMS)
def test_older_inline_params_merge_into_the_params_class(rev: str, name: str) -> None:
    """``<Request>.params`` of an older revision is the class ``<Request>Params`` (the
    2025-11-25 name); its fields in that revision are the inline properties and
    ``_meta``."""
    params = _resolve(DEFS[rev], DEFS[rev][name])["properties"]["params"]
    request = getattr(t, name)
    tp = attrs.fields_dict(request)["params"].type
    cls = next((a for a in typing.get_args(tp) if a is not type(None)), tp)
    if not attrs.has(cls):
        assert typing.get_origin(cls) is dict, (rev, name)  # free-form: takes anything
        return
    if cls.__name__ != name + "Params":
        # The newest handshake revision gives these params a shared class
        # (PaginatedRequestParams, RequestParams...); the older inline class is not
        # generated, so the revisions are not credited (see the generator's docstring):
        # at least every inline property is a field of the shared class.
        members = [a for a in typing.get_args(tp) if attrs.has(a)] or [cls]
        every = {_wire_name(f) for c in members for f in attrs.fields(c) if f.name != "extra"}
        assert set(params.get("properties", {})) <= every, (rev, name)
        return
    got = {_wire_name(f) for f in fields_in(cls, rev)}
    assert got == set(params["properties"]) | {"_meta"}, (rev, name)
    got_required = {_wire_name(f) for f in fields_in(cls, rev) if required_in(f, rev)}
    assert got_required == set(params.get("required", [])), (rev, name)


def test_every_schema_field_records_its_revisions() -> None:
    """Every field but ``extra`` names its revisions, and only revisions of its class;
    every class or alias names at least one."""
    for name in t.DEFINED_IN:
        assert revisions_of(name), name
        cls = getattr(t, name)
        if attrs.has(cls) and cls.__name__ == name:
            for f in attrs.fields(cls):
                if f.name != "extra":
                    assert revisions_of(f), (name, f.name)
                    assert set(revisions_of(f)) <= set(revisions_of(cls)), (name, f.name)


# --- the questions, answered ------------------------------------------------------------


def test_allowed_in_answers_for_classes_fields_and_aliases() -> None:
    assert allowed_in(t.DiscoverRequest, "2026-07-28")
    assert not allowed_in(t.DiscoverRequest, "2025-11-25")
    assert not allowed_in(t.InitializeRequest, "2026-07-28")
    assert allowed_in(t.InitializeRequest, "2024-11-05")
    assert allowed_in("ContentBlock", "2025-06-18") and not allowed_in("ContentBlock", "2025-03-26")
    assert allowed_in(t.ContentBlock, "2026-07-28")
    fields = attrs.fields_dict(t.CallToolRequestParams)
    assert allowed_in(fields["task"], "2025-11-25") and not allowed_in(fields["task"], "2026-07-28")
    assert allowed_in(fields["request_state"], "2026-07-28")
    assert not allowed_in(fields["input_responses"], "2025-11-25")
    icons = attrs.fields_dict(t.Tool)["icons"]
    assert revisions_of(icons) == ("2025-11-25", "2026-07-28")


def test_required_in_follows_the_revision() -> None:
    result_type = attrs.fields_dict(t.CallToolResult)["result_type"]
    assert required_in(result_type, "2026-07-28")
    assert not required_in(result_type, "2025-11-25")
    meta = attrs.fields_dict(t.CallToolRequestParams)["meta"]
    assert required_in(meta, "2026-07-28") and not required_in(meta, "2024-11-05")
    name = attrs.fields_dict(t.CallToolRequestParams)["name"]
    assert all(required_in(name, r) for r in REVISIONS)
    ttl = attrs.fields_dict(t.ReadResourceResult)["ttl_ms"]
    assert required_in(ttl, "2026-07-28") and not allowed_in(ttl, "2025-06-18")


def test_new_modern_definitions_are_generated() -> None:
    for name in (
        "DiscoverRequest",
        "DiscoverResult",
        "InputRequiredResult",
        "InputRequests",
        "InputResponses",
        "SubscriptionsListenRequest",
        "SubscriptionsAcknowledgedNotification",
        "SubscriptionFilter",
        "UnsupportedProtocolVersionError",
        "MissingRequiredClientCapabilityError",
        "HeaderMismatchError",
        "RequestMetaObject",
        "CacheableResult",
    ):
        assert revisions_of(name) == ("2026-07-28",), name
    meta = attrs.fields_dict(t.RequestMetaObject)
    assert meta["protocol_version"].metadata["wire"] == "io.modelcontextprotocol/protocolVersion"
    data = attrs.fields_dict(t.UnsupportedProtocolVersionErrorErrorData)
    assert set(data) == {"requested", "supported", "extra"}
    assert typing.get_args(
        attrs.fields_dict(t.UnsupportedProtocolVersionErrorError)["code"].type
    ) == (-32022,)


def test_unknown_revisions_and_names_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown revision"):
        allowed_in(t.Tool, "2099-01-01")
    with pytest.raises(KeyError):
        revisions_of("NoSuchDefinition")
    with pytest.raises(ValueError, match="records no revisions"):
        revisions_of(attrs.fields_dict(t.Tool)["extra"])

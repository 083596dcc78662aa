"""The METHODS table's helpers (mcp_ref._methods): rows, progress tokens, versions.

Source: 2025-06-18/basic/utilities/progress#progress-flow.1 (a request asks for progress
with ``_meta.progressToken``); 2025-06-18/basic/lifecycle#version-negotiation.1.
"""

from __future__ import annotations

import pytest

from mcp_ref import types as t
from mcp_ref._methods import METHODS, NOTIFICATION, REQUEST, MethodSpec, capability_present
from mcp_ref._state import CLIENT
from mcp_ref._versions import SUPPORTED_VERSIONS, ask_refusal, check_version


def test_a_row_is_six_columns_then_keywords() -> None:
    row = MethodSpec(
        "x/do", REQUEST, frozenset({CLIENT}), t.CallToolRequestParams, t.CallToolResult, "sec#a"
    )
    assert (row.method, row.kind, row.senders) == ("x/do", REQUEST, frozenset({CLIENT}))
    assert (row.params_type, row.result_type, row.section) == (
        t.CallToolRequestParams,
        t.CallToolResult,
        "sec#a",
    )
    assert (row.capability, row.capability_of, row.capability_since) == ((), None, "2024-11-05")
    assert (row.paginated, row.since, row.params_required) == (False, "2024-11-05", False)
    with pytest.raises(TypeError):  # what differs from the defaults is named
        MethodSpec("x/do", REQUEST, frozenset({CLIENT}), None, None, "sec#a", ("tools",))  # type: ignore[call-arg]


def test_every_row_is_keyed_by_its_method() -> None:
    for method, row in METHODS.items():
        assert row.method == method
        assert row.kind in (REQUEST, NOTIFICATION)
        assert row.senders
        assert (row.result_type is not None) == (row.kind == REQUEST)


def test_check_version() -> None:
    for version in SUPPORTED_VERSIONS:
        assert check_version(version) == version
    with pytest.raises(ValueError) as caught:
        check_version("2099-01-01")
    assert str(caught.value) == (
        "protocol version '2099-01-01' is not supported; use one of "
        "2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05"
    )


def test_a_client_asks_only_for_a_version_it_supports() -> None:
    assert all(ask_refusal(version) is None for version in SUPPORTED_VERSIONS)
    assert (
        ask_refusal("2099-01-01")
        == "initialize must ask for a version we support, not '2099-01-01'"
    )


def test_capability_present_walks_typed_capabilities_and_dicts() -> None:
    caps = t.ServerCapabilities(
        resources=t.ServerCapabilitiesResources(subscribe=True),
        tools=None,
        experimental={"x": {"on": True, "off": False}},
    )
    assert capability_present(caps, ("resources", "subscribe"))
    assert not capability_present(caps, ("resources", "list_changed"))
    assert not capability_present(caps, ("tools", "list_changed"))  # tools absent
    assert capability_present(caps, ("experimental", "x", "on"))
    assert not capability_present(caps, ("experimental", "x", "off"))
    assert not capability_present(caps, ("experimental", "y", "on"))
    assert not capability_present(caps, ("no_such_capability",))
    assert not capability_present(None, ("tools",))
    assert capability_present(caps, ())

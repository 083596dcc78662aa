"""Modern-era (2026-07-28) POSTs to the Streamable HTTP endpoint, without sockets
(mcp_ref._http_modern, and how mcp_ref._http_post.read_post takes them)."""

from __future__ import annotations

import json
from typing import Any

import attrs
import h11
import pytest

from mcp_ref._http_modern import is_modern_body
from mcp_ref._http_post import Post, read_post
from mcp_ref._http_server import RequestHeaders, request_headers

from ._http_core import CFG

STATELESS = attrs.evolve(CFG, stateless=True, enable_get_stream=False, legacy_sse=False)
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def body(method: str = "tools/list", rid: int | None = 1, **params: Any) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": {**params, "_meta": META}}
    if rid is not None:
        msg["id"] = rid
    return json.dumps(msg).encode()


def headers(**values: str) -> RequestHeaders:
    items = [(b"host", b"localhost:1")]
    items += [(k.replace("_", "-").encode(), v.encode()) for k, v in values.items()]
    return request_headers(h11.Request(method="POST", target="/mcp", headers=items), {})


def test_a_modern_body_is_told_by_its_meta() -> None:
    assert is_modern_body(body())
    assert not is_modern_body(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}')
    # initialize is the handshake era's, whatever its _meta says.
    assert not is_modern_body(body("initialize"))
    # The key elsewhere than params._meta does not count.
    other = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "x",
        "params": {"io.modelcontextprotocol/protocolVersion": 1},
    }
    assert not is_modern_body(json.dumps(other).encode())


@pytest.mark.parametrize("cfg", [CFG, STATELESS])
def test_a_modern_post_opens_a_session_of_its_own_without_preamble(cfg: Any) -> None:
    got = read_post(cfg, headers(mcp_protocol_version="2026-07-28"), body(rid=7))
    assert isinstance(got, Post)
    assert got.modern and got.new_session and not got.initialize
    assert got.preamble == []
    assert [m.id for m in got.requests] == [7]


def test_a_handshake_post_is_read_as_before() -> None:
    got = read_post(
        STATELESS,
        headers(mcp_protocol_version="2025-11-25"),
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    )
    assert isinstance(got, Post)
    assert not got.modern and len(got.preamble) == 2

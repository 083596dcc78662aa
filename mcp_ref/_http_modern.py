"""Modern-era (2026-07-28) POSTs to the Streamable HTTP endpoint, sans-IO.

Theory of operation
-------------------
From 2026-07-28 there are no sessions: every request says in its own ``params._meta``
which version it speaks (:func:`mcp_ref._modern.era_of_request`), and each POST is
answered alone.  The server tells such a POST from a handshake-era one by its body
(:func:`is_modern_body`); :func:`~mcp_ref._http_post.read_post` then opens a session
for this POST only, with nothing fed before the body (no ``initialize``: the server's
connection decides the modern era on the request itself), answered as JSON or SSE like
any POST, and gone once answered.  Handshake-era clients on the same endpoint are
served as before (sessions, or stateless mode).

Source: 2026-07-28/basic/transports/streamable-http (no sessions; every message its
own POST); 2026-07-28/basic/versioning (a dual-era server selects its behavior from
how the client opens).
"""

from __future__ import annotations

from typing import Final

from . import _jsonrpc as rpc
from ._errors import RemoteProtocolError
from ._modern import PROTOCOL_VERSION_KEY, era_of_request

__all__ = ["is_modern_body"]

_KEY: Final = PROTOCOL_VERSION_KEY.encode()


def is_modern_body(body: bytes) -> bool:
    """Whether a POST body is one modern-era message: one JSON-RPC message (no batch)
    whose ``params._meta`` carries ``io.modelcontextprotocol/protocolVersion`` (and
    which is not ``initialize``).  A body without those bytes is not decoded again.

    Args:
        body: the whole POST body (already read by
            :func:`~mcp_ref._http_messages.read_post_body`, so it is JSON).
    """
    if _KEY not in body:
        return False
    try:
        obj = rpc.decode(body)
    except RemoteProtocolError:
        return False
    return era_of_request(obj) == "modern"

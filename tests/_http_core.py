"""What the sans-IO HTTP server core's tests share: a server configuration with every
endpoint on (the Streamable HTTP endpoint at /mcp, the GET stream, the 2024-11-05
endpoints) and a stand-in for a session in the session book."""

from __future__ import annotations

import attrs

from mcp_ref._http import HttpLimits
from mcp_ref._http_server import ServerConfig

CFG = ServerConfig(
    path="/mcp",
    json_response=False,
    stateless=False,
    enable_get_stream=True,
    allowed_origins=("http://localhost:*",),
    allowed_hosts=("localhost:*",),
    limits=HttpLimits(),
    legacy_sse=True,
    legacy_sse_path="/sse",
    legacy_messages_path="/messages",
    retry_ms=1000,
)


@attrs.define(eq=False)
class Tenant:
    """A session as :class:`mcp_ref._http_sessions.SessionBook` sees one: when it was
    last used (seconds), how many messages wait for it, whether a request is running and
    whether ``initialize`` has completed; its kind, for the session lookups."""

    last_used: float = 0.0
    queued: int = 0
    is_busy: bool = False
    done_init: bool = True
    kind: str = "streamable"

    def busy(self) -> bool:
        return self.is_busy

    def initialized(self) -> bool:
        return self.done_init

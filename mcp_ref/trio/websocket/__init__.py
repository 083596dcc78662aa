"""MCP over WebSocket (a custom transport): server and client on wsproto over trio streams.

Theory of operation
-------------------
The spec lets a transport of one's own carry MCP if it keeps JSON-RPC and the lifecycle,
and asks that it document how a connection is made and how messages travel
(2025-06-18/basic/transports#custom-transports); docs/websocket.md is that document.

* **Connection**: an HTTP/1.1 upgrade (RFC 6455) to the MCP path (default ``/mcp``)
  offering the subprotocol ``mcp``; the server checks ``Origin`` and ``Host`` as
  Streamable HTTP does and refuses with a plain HTTP response (:mod:`.server`,
  :mod:`.client`).  One WebSocket carries one MCP session.
* **Messages**: one JSON-RPC message per text message, handed whole to the session by
  :class:`WebSocketChannel` (:mod:`.channel`, both roles).  Parsing, JSON-RPC errors and
  request timeouts are the core's and the session's; the channel keeps only what no
  other layer does: close codes, the message bound while frames arrive, ping/pong and
  the closing handshake.
"""

# Spec: 2025-06-18/basic/transports#custom-transports.3 (documented in docs/websocket.md)
# "Custom transports SHOULD document their specific connection establishment and message exchange
# patterns to aid interoperability."

from __future__ import annotations

from .channel import WebSocketChannel
from .client import HandshakeError, open_websocket_channel, websocket_client_handshake
from .server import serve_websocket, serve_websocket_stream, websocket_server_handshake

__all__ = [
    "HandshakeError",
    "WebSocketChannel",
    "open_websocket_channel",
    "serve_websocket",
    "serve_websocket_stream",
    "websocket_client_handshake",
    "websocket_server_handshake",
]

"""MCP over WebSocket, a custom transport (2025-06-18/basic/transports#custom-transports,
documented in docs/websocket.md), on trio streams.  The decisions are the core's
(:mod:`mcp_ref._websocket_handshake`, :mod:`mcp_ref._websocket`); here are its loops:
:mod:`.server` (its handshake, the listener) and :mod:`.channel` (one open WebSocket,
both roles; the client's handshake).
"""

# Spec: 2025-06-18/basic/transports#custom-transports.3 (documented in docs/websocket.md)
# "Custom transports SHOULD document their specific connection establishment and message exchange
# patterns to aid interoperability."

from __future__ import annotations

from ..._websocket_handshake import HandshakeError
from .channel import WebSocketChannel, open_websocket_channel, websocket_client_handshake
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

"""MCP over WebSocket (a custom transport): server and client on wsproto over trio streams.

Theory of operation
-------------------
The spec lets clients and servers add transports of their own as long as JSON-RPC and
the lifecycle are kept, and asks them to document how a connection is made and how
messages travel (2025-06-18/basic/transports#custom-transports).  This is that
transport; docs/websocket.md is its description for other implementers.

* **Connection**: the client sends an HTTP/1.1 ``GET`` upgrade (RFC 6455) to the MCP
  path (default ``/mcp``) offering the subprotocol ``mcp``.  The server parses the
  request with its own bounded h11 connection, checks path, ``Origin`` and ``Host``
  (the same DNS-rebinding defence as Streamable HTTP, :func:`mcp_ref._http.check_origin`
  and :func:`~mcp_ref._http.check_host`) and the subprotocol, then lets wsproto answer
  ``101 Switching Protocols``.  A refusal is a plain HTTP response (403, 400, ...) sent
  before any WebSocket exists.  One WebSocket connection carries exactly one MCP
  session, which starts with ``initialize`` as on every transport.
* **Messages**: one JSON-RPC message per WebSocket *text* message (UTF-8).  A
  :class:`WebSocketChannel` is a ``framing="messages"`` :class:`MessageChannel`: its
  ``receive`` returns one whole message and the core parses it (the channel never looks
  inside).  Binary messages are refused with close code 1003, messages over
  ``max_message_bytes`` with 1009 (checked while the frames arrive, never buffered past
  the limit), invalid UTF-8 with 1007 and framing violations with 1002.
* **Keepalive**: each side sends a ping every ``ping_interval`` seconds and closes with
  1011 when the pong does not come within ``ping_timeout``; pings from the peer are
  answered at once.
* **Closing**: the end of the session sends close code 1000 and waits (at most
  ``close_timeout``) for the peer's close frame, then half-closes TCP and reads until
  the peer's FIN, so no data is cut by a reset.  A connection lost without a close frame
  ends the input with the reason "1006".

Tasks: :meth:`WebSocketChannel.run` holds the reader (feeds wsproto, answers pings and
closes, queues whole messages for ``receive`` in a bounded channel) and the keepalive
timer, in a nursery of its own; the ``open_*``/``serve_*`` functions start it in theirs.
Every write goes through one lock, so control frames never split a data frame.

Modules: :mod:`.channel` (the wsproto connection wrapper: reading, writing, ping/pong,
the closing handshake; the transport's constants), :mod:`.server` (the server's
handshake checks: path, ``Origin``, ``Host``, subprotocol; the listeners) and
:mod:`.client` (the client's handshake and ``open_websocket_channel``); this package is
the transport's description and its import point.
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

"""trio drivers for the sans-IO core: :func:`open_session` runs one MCP session (either
role) over a :class:`MessageChannel` (:class:`StreamChannel` over trio byte streams,
:func:`memory_channel_pair` for tests), a :class:`Handler` answering the peer; stdio
(:func:`serve_stdio`, :func:`open_stdio_process`), Streamable HTTP (:mod:`.http`) and
WebSocket (:mod:`.websocket`) make the channels.
"""

from .._client import DEFAULT_TIMEOUT, SessionClosed
from .._session_rules import Keepalive
from ._channel import MemoryMessageChannel, MessageChannel, StreamChannel, memory_channel_pair
from ._session import open_session, serve_channel
from ._session_api import SESSION_DEFAULT, Handler, RequestContext, Session
from ._stdio import ProcessChannel, StderrMode, open_stdio_process, serve_stdio, stdio_channel
from .http import (
    HttpClientChannel,
    HttpServerInfo,
    HttpTransportError,
    close_sse_stream,
    open_http_channel,
    open_http_server,
    serve_http,
)
from .websocket import (
    HandshakeError,
    WebSocketChannel,
    open_websocket_channel,
    serve_websocket,
    serve_websocket_stream,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "SESSION_DEFAULT",
    "Handler",
    "HandshakeError",
    "HttpClientChannel",
    "HttpServerInfo",
    "HttpTransportError",
    "Keepalive",
    "MemoryMessageChannel",
    "MessageChannel",
    "ProcessChannel",
    "RequestContext",
    "Session",
    "SessionClosed",
    "StderrMode",
    "StreamChannel",
    "WebSocketChannel",
    "close_sse_stream",
    "memory_channel_pair",
    "open_http_channel",
    "open_http_server",
    "open_session",
    "open_stdio_process",
    "open_websocket_channel",
    "serve_channel",
    "serve_http",
    "serve_stdio",
    "serve_websocket",
    "serve_websocket_stream",
    "stdio_channel",
]

"""Streamable HTTP (and 2024-11-05's HTTP+SSE) on trio and h11: the server (read
:mod:`.server` first, its docstring is the theory of operation) and the client's
channel (:mod:`.client`)."""

from ..._http_server import CLOSE_WAIT_SECONDS
from .client import HttpClientChannel, HttpTransportError, open_http_channel
from .server import HttpServerInfo, open_http_server, serve_http
from .sessions import close_sse_stream

__all__ = [
    "CLOSE_WAIT_SECONDS",
    "HttpClientChannel",
    "HttpServerInfo",
    "HttpTransportError",
    "close_sse_stream",
    "open_http_channel",
    "open_http_server",
    "serve_http",
]

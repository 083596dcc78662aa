"""Streamable HTTP (and 2024-11-05's HTTP+SSE) on trio and h11: the server (read
:mod:`.server` first, its docstring is the theory of operation) and the client's
channel (:mod:`.client`)."""

from .client import HttpClientChannel, HttpTransportError, open_http_channel
from .server import (
    CLOSE_WAIT_SECONDS,
    HttpServerInfo,
    close_sse_stream,
    open_http_server,
    serve_http,
)

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

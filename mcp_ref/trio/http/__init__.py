"""Streamable HTTP (and the 2024-11-05 HTTP+SSE transport) on trio and h11.

* :func:`serve_http` / :func:`open_http_server`: the server (:mod:`.server`), a loop
  around the sans-IO rules of :mod:`mcp_ref._http` and :mod:`mcp_ref._http_streams`;
* :func:`open_http_channel`: the client's :class:`~mcp_ref.trio.MessageChannel`
  (:mod:`.client`).

Read :mod:`.server` first: its docstring is the theory of operation and lists the
server's modules in the order they build on each other.
"""

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

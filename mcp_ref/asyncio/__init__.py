"""MCP on asyncio: the sans-IO core driven by a loop that is not trio's.

This package exists to show that :class:`mcp_ref.Connection` embeds in any event loop.
It uses the standard library and the core only, except the HTTP client, which also
uses h11 (sans-IO HTTP/1.1; see :mod:`mcp_ref.asyncio._http`).

* :func:`serve_stdio` -- an MCP server loop on stdin/stdout; you bring a
  :class:`Handler` with your own dispatch (see :mod:`mcp_ref.asyncio.example_server`).
* :func:`open_stdio_client` -- runs a server process and yields an initialized
  :class:`StdioClient`.
* :func:`open_http_client` -- a Streamable HTTP client, :class:`HttpClient`.
* :func:`open_stream_client` -- a client over any asyncio (reader, writer) pair (a
  socket, a pipe), :class:`StreamClient`.
* :func:`connect_in_memory` -- runs a :class:`mcp_ref.server.Server` (on trio, in a
  thread) and yields an initialized :class:`StreamClient` talking to it: for tests.

The clients are a :class:`ClientSession`: ``request(method, params)`` returning the
typed result (``on_progress=`` for progress), ``notify``, ``ping``, ``list_tools``,
``call_tool``, ``set_roots``, ``abort``.  The ``open_*`` functions take the client
core's options (:class:`mcp_ref._client.ClientCore`: ``client_info``,
``protocol_version``, ``sampling_handler``, ``elicitation_handler``, ``roots``, ...):
the same options, with the same defaults, as the trio and blocking clients.

Driving the core from a loop of your own, in five steps
-------------------------------------------------------
1. **Make it**: ``conn = Connection(CLIENT or SERVER)``.  It holds no socket, no task,
   no clock.
2. **Feed it what you read**: ``conn.receive_data(chunk)`` for byte streams (``b""``
   at end of input), or ``conn.receive_message(body)`` for one whole message.
3. **Drain it**: call ``conn.next_event()`` until it returns ``NEED_DATA``, and act on
   each event (answer a Request, wake the waiter of a Response, ...).  If it raises
   ``RemoteProtocolError``, send ``conn.send(exc.event_hint)`` when that is not None,
   and go on.
4. **Write what it gives you**: ``data = conn.send(event, now=loop.time())`` checks
   the event and returns the bytes; write them whole (``b""`` means "send nothing").
5. **Give it the time**: wait no later than ``conn.next_deadline()``, then write what
   ``conn.handle_timeout(loop.time())`` returns.  Use the same clock as ``now=``.

:mod:`mcp_ref.asyncio._stdio` and :mod:`mcp_ref.asyncio._client` spell these steps
out for a server and a client; :mod:`mcp_ref.blocking` does the same with no event
loop at all.
"""

from .._client import DEFAULT_CLIENT_INFO, ElicitationHandler, SamplingHandler, SessionClosed
from ._client import ClientSession, ProgressCallback
from ._http import HttpClient, open_http_client
from ._memory import connect_in_memory
from ._stdio import Handler, RequestContext, StdioClient, open_stdio_client, serve_stdio
from ._streams import StreamClient, open_stream_client

__all__ = [
    "DEFAULT_CLIENT_INFO",
    "ClientSession",
    "ElicitationHandler",
    "Handler",
    "HttpClient",
    "ProgressCallback",
    "RequestContext",
    "SamplingHandler",
    "SessionClosed",
    "StdioClient",
    "StreamClient",
    "connect_in_memory",
    "open_http_client",
    "open_stdio_client",
    "open_stream_client",
    "serve_stdio",
]

"""The Streamable HTTP client (with the 2024-11-05 HTTP+SSE fallback) on trio and h11.

Theory of operation
-------------------
:class:`HttpClientChannel` is a ``"messages"`` :class:`~mcp_ref.trio.MessageChannel`:
the session hands it one message at a time, and it turns each into one HTTP POST
(2025-06-18/basic/transports#sending-messages-to-the-server.1).  Everything the server
sends -- JSON answers, events of POST streams, events of the GET stream -- goes into one
bounded queue that ``receive`` reads.  The session never learns HTTP exists.

``send`` returns quickly so the session's send lock is never held across a long
exchange:

* a *request* is written (connect, headers, body) and ``send`` returns; a background
  task reads the answer: a JSON body, or an SSE stream read until the response to that
  request arrived.  When the stream ends first, the task waits the ``retry`` time the
  server gave (else ``default_retry``) and resumes with a GET carrying
  ``Last-Event-ID`` (#resumability-and-redelivery.3), as often as it makes progress.
  A request that cannot be answered any more (HTTP error, stream lost without an event
  id, connection failure) gets an error response made here, so the caller is not left
  waiting for its timeout;
* a *notification* or *response* is POSTed and its ``202`` awaited before ``send``
  returns, so they reach the server in order;
* after ``notifications/initialized`` a background task opens the GET stream and keeps
  it open, reconnecting (with ``Last-Event-ID``) when it ends; a 4xx other than 404
  means the server offers none, and the task stops.

What the channel reads of messages (:func:`mcp_ref._http_messages.message_info`, the
connection's own reader): kind, id and method, and two things more.  The ``protocolVersion`` of the ``initialize`` result,
because every later request must carry it in ``MCP-Protocol-Version``
(#protocol-version-header.1); and the ``requestId`` of an outgoing
``notifications/cancelled``, to stop reading that request's stream.

Sessions: the ``Mcp-Session-Id`` of the ``initialize`` answer goes on every later
request (#session-management.4).  A 404 to a request that carried it means the session
is gone (#session-management.7): the channel starts a new one by replaying the
``initialize`` request and ``notifications/initialized`` it sent at the start (their
answers are not passed on), then retries the message once.  The session layer does not
learn it: its core stays in the operating state, with the capabilities negotiated the
first time (a server answering the replay with another protocol version ends the
channel).  Requests in flight in the old session are answered with errors.  Closing
sends DELETE (#session-management.8).

Fallback (2025-06-18/basic/transports#backwards-compatibility): when the POST of
``initialize`` gets a 4xx, the channel GETs the same URL, expects an SSE stream whose
first event is ``endpoint`` (:func:`~mcp_ref._http.resolve_endpoint`), POSTs every
message there, and reads every answer from that stream.

Connections: a small pool of keep-alive connections for POSTs (idle ones are dropped
after ``pool_idle_seconds``; a request that meets a connection the server had closed is
sent again on a new one, only when nothing was received); SSE streams use their own
connections.  ``https`` URLs use TLS with the default trust store.

Modules: :mod:`.client_channel` (the channel: ``send``/``receive``/``aclose`` and
the POSTs), :mod:`.client_connections` (the pool, one exchange, the headers,
the shared state), :mod:`.client_sessions` (session id, version, a new session
after 404), :mod:`.client_answers` (answers to requests, SSE streams and their
resumption), :mod:`.client_get` (the GET stream) and :mod:`.client_legacy`
(2024-11-05); this one holds the entry points.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from .client_channel import HttpClientChannel
from .client_connections import HttpTransportError
from .common import Supervisor

__all__ = ["HttpClientChannel", "HttpTransportError", "open_http_channel"]


@asynccontextmanager
async def open_http_channel(url: str, **channel_kw: Any) -> AsyncIterator[HttpClientChannel]:
    """Open a :class:`HttpClientChannel` to ``url`` and run its background tasks.

    Args:
        url: the MCP endpoint, e.g. ``"http://127.0.0.1:8000/mcp"``.
        **channel_kw: ``headers`` (extra request headers, e.g. authorization), ``limits``
            (:class:`~mcp_ref._http.HttpLimits`), ``legacy_fallback`` (default True),
            ``get_stream`` (open the GET stream; default True), ``max_concurrent_posts``
            (64; a request past it is answered at once with an error), ``connect_timeout`` (10 s), ``io_timeout`` (20 s per one-way POST),
            ``default_retry`` (1 s when the server gave no ``retry``),
            ``pool_idle_seconds`` (4 s), ``ssl_context``.

    Yields:
        The channel; give it to :func:`~mcp_ref.trio.open_session` or
        :func:`mcp_ref.client.open_client`.  On exit it is closed (DELETE) and its tasks
        end.

    Raises:
        ValueError: not an http(s) URL.
    """
    supervisor = Supervisor()
    channel = HttpClientChannel(url, supervisor, **channel_kw)
    body_error: BaseException | None = None
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        try:
            yield channel
        except BaseException as exc:
            if isinstance(exc, GeneratorExit):
                raise
            body_error = exc  # re-raised below, not wrapped in an exception group
        finally:
            with trio.CancelScope(shield=True):
                await channel.aclose()
            nursery.cancel_scope.cancel()
    if body_error is not None:
        raise body_error

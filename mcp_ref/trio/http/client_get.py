"""The Streamable HTTP client's GET stream: listening for what the server sends unasked.

Theory of operation
-------------------
After ``notifications/initialized`` the channel opens the GET stream before ``send``
returns (waiting at most ``min(io_timeout, 5)`` s for its head), so that it is there
before the next request: a server may use it as soon as that request arrives
(2025-06-18/basic/transports#listening-for-messages-from-the-server.1).  A task then
keeps it open until the channel closes.  When the stream ends it is reopened after the
``retry`` time with ``Last-Event-ID`` (#resumability-and-redelivery.3), backing off while
streams bring no events and giving up after ``_MAX_GET_FAILURES`` failures in a row; a
409 to a resumption drops the id (the missed events are lost); a 404 starts a new
session; any other answer that is not an SSE stream means the server offers none
(#listening-for-messages-from-the-server.3), and the task ends.
"""

from __future__ import annotations

import logging
from typing import Final

import trio

from ..._http import CONTENT_TYPE_SSE
from ..._sse import SSEDecoder
from .client_answers import ClientAnswers
from .client_connections import _IO_FAILURES, _Exchange

__all__ = ["ClientGetStream"]

log = logging.getLogger("mcp_ref.trio.http")


_MAX_GET_FAILURES: Final = 8


class ClientGetStream(ClientAnswers):
    """The GET stream of an HTTP client channel."""

    # -- the GET stream --------------------------------------------------------------------

    async def _open_get_stream(self) -> None:
        """Open the GET stream before ``send`` returns, so that it is there before the
        next request: a server may send on it what it has for us (an elicitation) as soon
        as the request arrives.  Waits at most ``min(io_timeout, 5)`` s for its head."""
        # Spec: 2025-06-18/basic/transports#listening-for-messages-from-the-server.1
        # "The client MAY issue an HTTP GET to the MCP endpoint."
        first: _Exchange | None = None
        try:
            first = await self._start(b"GET", self._target, b"", fresh=True)
            with trio.move_on_after(min(self._io_timeout, 5.0)):
                await self._head(first)
        except _IO_FAILURES as exc:
            log.debug("the GET stream could not be opened now: %s", exc)
            first = None
        if not self._supervisor.start_soon(self._get_stream, first) and first is not None:
            await first.conn.aclose()

    async def _get_stream(self, first: _Exchange | None = None) -> None:
        """Keep the GET stream open (when the server offers one) until the channel closes."""
        with trio.CancelScope() as scope:
            self._get_scope = scope
            decoder = SSEDecoder(self._limits.max_event_bytes)
            failures = 0
            generation = self._generation
            while not self.closed:
                if generation != self._generation:
                    decoder = SSEDecoder(self._limits.max_event_bytes)
                    generation = self._generation
                try:
                    if first is not None:
                        ex, first = first, None
                        if ex.response is None:
                            await self._head(ex)
                    else:
                        ex = await self._request(
                            b"GET",
                            self._target,
                            b"",
                            fresh=True,
                            last_event_id=decoder.last_event_id or None,
                        )
                except _IO_FAILURES as exc:
                    failures += 1
                    if failures > _MAX_GET_FAILURES:
                        log.warning("GET stream given up: %s", exc)
                        return
                    await trio.sleep(min(30.0, self._default_retry * 2**failures))
                    continue
                if ex.status == 404 and self.session_id is not None:
                    await ex.conn.aclose()
                    if not await self._session_expired(generation):
                        return
                    continue
                if ex.status == 409 and decoder.last_event_id:
                    await ex.conn.aclose()
                    decoder = SSEDecoder(self._limits.max_event_bytes)  # missed events lost
                    continue
                if ex.status != 200 or ex.media_type() != CONTENT_TYPE_SSE:
                    # The server answers a GET with an SSE stream or with 405 (its rule,
                    # #listening-for-messages-from-the-server.3, tagged where the server
                    # honours it): anything but an SSE stream means there is none to read.
                    log.debug("no GET stream (HTTP %s)", ex.status)
                    await ex.conn.aclose()
                    return
                _, count = await self._read_sse(ex, decoder, None)
                failures = 0 if count else failures + 1
                if failures > _MAX_GET_FAILURES:
                    return
                # Spec: 2025-06-18/basic/transports#resumability-and-redelivery.3
                # "If the client wishes to resume after a broken connection, it SHOULD issue an HTTP
                # GET to the MCP endpoint, and include the `Last-Event-ID` header to indicate the
                # last event ID it received."
                delay = self._retry_seconds(decoder) * (2 ** max(0, failures - 1))
                await trio.sleep(min(delay, 30.0))

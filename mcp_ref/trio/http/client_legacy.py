"""The Streamable HTTP client's fallback to the 2024-11-05 HTTP+SSE transport.

Theory of operation
-------------------
When the POST of ``initialize`` gets a 4xx other than 401 and 403
(2025-06-18/basic/transports#backwards-compatibility), the channel switches to
``mode == "legacy"``: it GETs the same URL, expects an SSE stream whose first event is
``endpoint`` (:func:`mcp_ref._http.resolve_endpoint`), POSTs every message there (the
``initialize`` request first; no session or version headers) and reads every message
the server sends from that one stream.  When the stream ends, input ends.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

import trio

from ... import _http as rules
from ..._http import CONTENT_TYPE_SSE
from ..._sse import NEED_DATA as SSE_NEED_DATA
from ..._sse import SSEDecoder, SSEEvent
from .client_answers import ClientAnswers
from .client_connections import (
    _IO_FAILURES,
    _TRANSPORT_FAILURES,
    HttpTransportError,
    _Exchange,
)

__all__ = ["ClientLegacy"]

log = logging.getLogger("mcp_ref.trio.http")


class ClientLegacy(ClientAnswers):
    """The 2024-11-05 HTTP+SSE fallback of an HTTP client channel."""

    # -- 2024-11-05 HTTP+SSE -------------------------------------------------------------------

    async def _fall_back(self, init_body: bytes) -> None:
        self.mode = "legacy"
        try:
            ex = await self._request(b"GET", self._target, b"", fresh=True)
        except _IO_FAILURES as exc:
            raise HttpTransportError(f"2024-11-05 fallback: GET failed: {exc}") from exc
        if ex.status != 200 or ex.media_type() != CONTENT_TYPE_SSE:
            await ex.conn.aclose()
            raise HttpTransportError(
                f"the server refused initialize (Streamable HTTP) and its GET answered "
                f"HTTP {ex.status}: not a 2024-11-05 HTTP+SSE server either"
            )
        decoder = SSEDecoder(self._limits.max_event_bytes)
        endpoint: SSEEvent | None = None
        with trio.move_on_after(self._io_timeout):
            while endpoint is None and (chunk := await ex.next_chunk()) is not None:
                decoder.receive_data(chunk)
                got = decoder.next_event()
                if isinstance(got, SSEEvent):
                    endpoint = got
        if endpoint is None:
            await ex.conn.aclose()
            raise HttpTransportError("no endpoint event on the 2024-11-05 SSE stream")
        try:
            post_url = rules.resolve_endpoint(endpoint, self.url)
        except Exception as exc:
            await ex.conn.aclose()
            raise HttpTransportError(f"bad endpoint event: {exc}") from exc
        parts = urlsplit(post_url)
        self._post_target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._supervisor.start_soon(self._legacy_stream, ex, decoder)
        await self._legacy_send(init_body)

    async def _legacy_stream(self, ex: _Exchange, decoder: SSEDecoder) -> None:
        try:
            while True:
                while (event := decoder.next_event()) is not SSE_NEED_DATA and event is not None:
                    assert isinstance(event, SSEEvent)
                    if event.data and event.event in (None, "message"):
                        await self._deliver(event.data.encode("utf-8"), self._init_key)
                if event is None:
                    break
                chunk = await ex.next_chunk()
                decoder.receive_data(chunk or b"")
        except _IO_FAILURES as exc:
            log.debug("the 2024-11-05 SSE stream broke: %r", exc)
        except Exception as exc:  # the decoder's RemoteProtocolError (event too large)
            log.warning("bad 2024-11-05 SSE stream: %s", exc)
        finally:
            await ex.conn.aclose()
            self.eof_reason = "the 2024-11-05 SSE stream ended"
            self._in_send.close()

    async def _legacy_send(self, data: bytes) -> None:
        with trio.move_on_after(self._io_timeout):
            try:
                ex, body = await self._post_message(data)
            except _TRANSPORT_FAILURES as exc:
                raise HttpTransportError(f"POST to the 2024-11-05 endpoint failed: {exc}") from exc
            if ex.status >= 300:
                log.warning(
                    "2024-11-05 server refused a message: HTTP %s %r", ex.status, body[:200]
                )
            return
        raise HttpTransportError("POST to the 2024-11-05 endpoint timed out")

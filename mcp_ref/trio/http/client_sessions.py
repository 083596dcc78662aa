"""The Streamable HTTP client's sessions: the session id, the version, a new session after 404.

Theory of operation
-------------------
The channel keeps the ``Mcp-Session-Id`` of the ``initialize`` answer (``_note_session``)
and the ``protocolVersion`` of its result (``_note_version``);
:mod:`.client_connections` puts both on every later request
(2025-06-18/basic/transports#session-management.4, #protocol-version-header.1).

A 404 to a request that carried the session id means the session is gone
(#session-management.7).  ``_session_expired`` starts a new one, once per expired
session (under a lock; ``_generation`` counts sessions, so a task that saw the 404 late
learns that another one did it already): it replays the ``initialize`` request and
``notifications/initialized`` sent at the start, and passes their answers on to no one.
The session layer never learns of it; its core stays in the operating state with the
capabilities negotiated the first time, which is why a server answering the replay with
another protocol version ends the channel, as does any failure (input ends, with
``eof_reason`` set).
"""

from __future__ import annotations

import logging

import trio

from ... import _http as rules
from ..._http import CONTENT_TYPE_JSON, MCP_SESSION_ID
from ..._http_messages import message_info, negotiated_version
from ..._sse import NEED_DATA as SSE_NEED_DATA
from ..._sse import SSEDecoder, SSEEvent
from .client_connections import (
    _TRANSPORT_FAILURES,
    ClientConnections,
    _Exchange,
)
from .common import request_key

__all__ = ["ClientSessions"]

log = logging.getLogger("mcp_ref.trio.http")


class ClientSessions(ClientConnections):
    """The session id and protocol version of an HTTP client channel, and a new session
    after a 404."""

    # -- the session id and the protocol version ----------------------------------------

    def _note_session(self, ex: _Exchange) -> None:
        value = ex.header(MCP_SESSION_ID)
        if value is not None and rules.validate_session_id(value):
            self.session_id = value.decode("ascii")

    def _note_version(self, data: bytes) -> None:
        version = negotiated_version(data)
        if version is not None:
            self.protocol_version = version

    # -- a new session after 404 -------------------------------------------------------------

    async def _session_expired(self, generation: int) -> bool:
        """Start a new session (once per expired one); False when that failed."""
        async with self._reinit_lock:
            if generation != self._generation:
                return True  # another task did it
            if self._init_body is None or self._initialized_body is None or self.closed:
                return False
            old_version = self.protocol_version
            self.session_id = None
            try:
                with trio.fail_after(self._io_timeout):
                    ok = await self._replay_handshake(old_version)
            except _TRANSPORT_FAILURES as exc:
                log.warning("starting a new session failed: %s", exc)
                ok = False
            except trio.TooSlowError:
                log.warning("starting a new session took longer than %s s", self._io_timeout)
                ok = False
            if not ok:
                self.eof_reason = "the HTTP session expired and a new one could not be started"
                self._in_send.close()
                return False
            self._generation += 1
            self.reinitializations += 1
            log.info("started a new HTTP session %s after a 404", self.session_id)
            return True

    async def _replay_handshake(self, old_version: str | None) -> bool:
        assert self._init_body is not None and self._initialized_body is not None
        self.protocol_version = None
        ex = await self._request(b"POST", self._post_target, self._init_body, fresh=False)
        if ex.status != 200:
            return False
        self._note_session(ex)
        result: bytes | None = None
        if ex.media_type() == CONTENT_TYPE_JSON:
            result = await ex.read_body(self._limits.max_event_bytes)
            self._give_back(ex)
        else:
            decoder = SSEDecoder(self._limits.max_event_bytes)
            try:
                while result is None and (chunk := await ex.next_chunk()) is not None:
                    decoder.receive_data(chunk)
                    while (ev := decoder.next_event()) is not SSE_NEED_DATA and ev is not None:
                        assert isinstance(ev, SSEEvent)
                        info = message_info(ev.data.encode()) if ev.data else None
                        if info is not None and request_key(info.id) == self._init_key:
                            result = ev.data.encode()
            finally:
                await ex.conn.aclose()
        if result is None:
            return False
        self._note_version(result)
        if self.protocol_version != old_version:
            log.warning("the new session negotiated %s, not %s", self.protocol_version, old_version)
            return False
        ex, _ = await self._post_message(self._initialized_body)
        return ex.status < 300

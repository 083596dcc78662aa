"""Scale-out of the Streamable HTTP server: sessions and resumable streams shared by
several server processes through a store (theory in :mod:`mcp_ref._stores`).

Example (two processes, one Redis; ``pip install 'mcp-ref[redis]'``)::

    from mcp_ref.stores.redis import RedisStores
    await serve_http(server, "127.0.0.1", 8001, stores=RedisStores.from_url("redis://..."))

A store is anything with both interfaces, :class:`~mcp_ref._stores.SessionRegistry`
and :class:`~mcp_ref._stores.EventLog`: :class:`~mcp_ref._stores.MemoryStores` (one
process), :class:`~mcp_ref.stores.redis.RedisStores`.  Both are a
:class:`~mcp_ref._stores.TaskStore` too: a :class:`~mcp_ref.server.Server`'s tasks are
then kept there, and polled from any process.

:class:`Sharing` is what the trio server does with one (a driver: it awaits the store):

* every session it opens keeps its events in a
  :class:`~mcp_ref._stores.SharedEventStore`; its messages are written to the
  :class:`EventLog` before the responses that carry them are woken
  (``HttpSession.send``, through :meth:`Sharing.flush`), and its record goes to the
  registry once ``initialize`` is answered (again while it is in use, every half
  ``ttl_seconds``);
* before a request reaches its endpoint (:meth:`Sharing.before`): a session id this
  process does not hold is looked up in the registry and adopted; a GET resuming a
  stream this process is not writing loads that stream from the log; a DELETE forgets
  the session in the registry.
"""

from __future__ import annotations

import logging
import secrets
from typing import TYPE_CHECKING, Protocol

import trio

from .._http import LAST_EVENT_ID, MCP_SESSION_ID
from .._http_connection import RequestReady
from .._http_post import STATELESS_INIT_ID
from .._http_server import Endpoint, header
from .._http_streams import STANDALONE
from .._stores import (
    EventLog,
    SessionRegistry,
    SharedEventStore,
    adoption_preamble,
    adoption_start,
    record_of,
    stream_of,
)

if TYPE_CHECKING:
    from ..trio.http.sessions import HttpSession, SessionTable

__all__ = ["Sharing", "Stores"]

log = logging.getLogger("mcp_ref.stores")


class Stores(SessionRegistry, EventLog, Protocol):
    """A store with both interfaces (e.g. :class:`~mcp_ref._stores.MemoryStores`)."""


class Sharing:
    """What one server does with its ``stores`` (module docstring).

    Args:
        stores: the shared store.
        ttl_seconds: how long the registry keeps a session after it was last
            registered or adopted (the servers' ``limits.session_idle_seconds``).
    """

    def __init__(self, stores: Stores, ttl_seconds: float) -> None:
        self.stores = stores
        self.ttl = ttl_seconds

    def attach(self, sess: HttpSession, *, adopted: bool) -> None:
        """A session opens here: its events go to a :class:`SharedEventStore` (an
        adopted one's stream ids and sequence numbers apart from the creator's), and
        a store that is a :class:`~mcp_ref._stores.TaskStore` too becomes the session's
        ``task_store``, where the high-level server keeps its tasks
        (:mod:`mcp_ref.server._tasks`)."""
        if sess.id is None:
            return  # stateless: nothing outlives the POST
        if all(hasattr(self.stores, m) for m in ("put_task", "get_task", "list_tasks")):
            sess.task_store = self.stores  # type: ignore[attr-defined]  # (the server's tasks)
        state = sess.state
        old = state.store
        first = 0
        if adopted:
            state.prefix, first = adoption_start(secrets.token_bytes(8))
            first = first or 1  # (0 is the creator's start)
        state.store = SharedEventStore(
            first_seq=first,
            max_events_per_stream=old.max_events_per_stream,
            max_streams=old.max_streams,
            max_total_bytes=old.max_total_bytes,
        )
        if STANDALONE in state.streams:  # its first cursor, in the new store
            state.streams[STANDALONE] = state.new_stream(STANDALONE, json_mode=False)
        lock = trio.Lock()
        sess.flush = lambda: self.flush(sess, lock)

    async def flush(self, sess: HttpSession, lock: trio.Lock) -> None:
        """Write what the session appended to the log (and its record, once
        ``initialize`` is answered).  One write at a time per session (``lock``): the
        sends that wait meanwhile go out together in the next write, in order.  A store
        that fails is logged, not raised: the session goes on, unshared."""
        sid, store = sess.id, sess.state.store
        assert sid is not None and isinstance(store, SharedEventStore)
        async with lock:
            await self._flush(sess, sid, store)

    async def _flush(self, sess: HttpSession, sid: str, store: SharedEventStore) -> None:
        state, now = sess.state, trio.current_time()
        try:
            stale = now - store.registered_at > self.ttl / 2  # (refreshed while in use)
            if (stale or not store.registered) and state.protocol_version and sess.session:
                store.registered, store.registered_at = True, now
                if not state.init_failed:
                    record = record_of(sid, state.protocol_version, sess.session.connection)
                    await self.stores.put(record, self.ttl)
            if store.outbox:
                batch, store.outbox = store.outbox, []
                await self.stores.append(sid, batch)
        except Exception:
            log.exception("shared store failed for session %s", sid)

    async def before(self, table: SessionTable, req: RequestReady) -> None:
        """Before ``req`` reaches its endpoint (module docstring)."""
        raw = header(req.headers, MCP_SESSION_ID)
        if raw is None or req.endpoint not in (Endpoint.POST, Endpoint.GET, Endpoint.DELETE):
            return
        sid = raw.decode("latin-1")
        try:
            if req.endpoint is Endpoint.DELETE:
                await self.stores.forget(sid)
            sess = table.sessions.get(sid)
            if sess is None and req.endpoint is not Endpoint.DELETE:
                sess = await self._adopt(table, sid)
            last = header(req.headers, LAST_EVENT_ID)
            if sess is not None and req.endpoint is Endpoint.GET and last is not None:
                stream_id = stream_of(last)
                store = sess.state.store
                if stream_id and stream_id not in sess.state.streams:
                    assert isinstance(store, SharedEventStore)
                    store.load(stream_id, await self.stores.stream(sid, stream_id))
        except Exception:
            log.exception("shared store failed for session %s", sid)

    async def _adopt(self, table: SessionTable, sid: str) -> HttpSession | None:
        """Start the session ``sid`` here if the registry has it (module docstring)."""
        record = await self.stores.get(sid)
        if record is None or sid in table.sessions:
            return table.sessions.get(sid)
        sess = await table.open("streamable", session_id=sid)
        sess.state.protocol_version = record.protocol_version
        sess.state.discard_answer(STATELESS_INIT_ID)
        for body in adoption_preamble(record):
            await sess.deliver(body)
        await self.stores.put(record, self.ttl)  # refreshed: in use
        assert isinstance(sess.state.store, SharedEventStore)
        sess.state.store.registered_at = trio.current_time()
        log.debug("adopted session %s", sid)
        return sess

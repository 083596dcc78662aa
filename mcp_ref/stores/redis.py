"""The shared store on Redis: :class:`RedisStores` (``pip install 'mcp-ref[redis]'``).

Theory of operation
-------------------
The three interfaces of :mod:`mcp_ref._stores` on one Redis database, under a key
prefix (default ``mcp-ref:``):

* ``<prefix>session:<id>``: the session's :class:`~mcp_ref._stores.SessionRecord`
  (JSON), expiring ``ttl_seconds`` after the last put;
* ``<prefix>events:<id>:<stream id>``: a list of the stream's events, each
  ``<event id>\\n<data>``, trimmed to the newest ``max_events_per_stream`` and expiring
  with the session; ``<prefix>streams:<id>``, the set of those keys (for a DELETE);
* ``<prefix>task:<task id>``: a task's :class:`~mcp_ref._stores.TaskRecord` (JSON, its
  outcome inside once it ended), expiring when its TTL runs out;
  ``<prefix>tasks:<owner>``, a sorted set of the owner's task ids by creation time
  (``tasks/list``), trimmed to the newest ``max_tasks_per_owner`` and kept as long as
  its longest-lived task (``EXPIRE ... NX`` then ``GT``: Redis 7 or later).

The ``redis`` client's asyncio API runs on asyncio only, and mcp-ref's servers run on
trio: the calls go through the client's blocking API in trio's worker threads
(:func:`trio.to_thread.run_sync`), one round trip per call (a pipeline for an append
and a forget).  The base install never imports this module, nor ``redis``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial
from typing import Any

import trio

from .._stores import SessionRecord, TaskRecord

__all__ = ["RedisStores"]


class RedisStores:
    """:class:`~mcp_ref._stores.SessionRegistry`, :class:`~mcp_ref._stores.EventLog`
    and :class:`~mcp_ref._stores.TaskStore` on Redis (module docstring).

    Args:
        client: a ``redis.Redis`` (blocking API; thread-safe with its pool).
        prefix: put before every key.
        max_events_per_stream: events kept per stream (older ones are dropped; a
            resumption from before them is refused 409).
        ttl_seconds: how long the events of a session are kept after its last append.
        max_tasks_per_owner: task ids kept in an owner's ``tasks/list`` index (older
            ones drop out of the list; their records stay until their TTL).
    """

    def __init__(
        self,
        client: Any,
        *,
        prefix: str = "mcp-ref:",
        max_events_per_stream: int = 256,
        ttl_seconds: float = 3600.0,
        max_tasks_per_owner: int = 1024,
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.max_events_per_stream = max_events_per_stream
        self.ttl = max(1, int(ttl_seconds))
        self.max_tasks_per_owner = max_tasks_per_owner

    @classmethod
    def from_url(cls, url: str, **kw: Any) -> RedisStores:
        """A store on the Redis at ``url`` (``redis://host:port/db``,
        ``unix:///path/to.sock``...).

        Raises:
            ImportError: ``redis`` is not installed (``pip install 'mcp-ref[redis]'``).
        """
        import redis

        return cls(redis.Redis.from_url(url), **kw)

    async def _run(self, fn: Any, *args: Any) -> Any:
        return await trio.to_thread.run_sync(partial(fn, *args), abandon_on_cancel=True)

    async def put(self, record: SessionRecord, ttl_seconds: float) -> None:
        """:meth:`~mcp_ref._stores.SessionRegistry.put`."""
        key = f"{self.prefix}session:{record.session_id}"
        await self._run(
            partial(self.client.set, key, record.to_bytes(), ex=max(1, int(ttl_seconds)))
        )

    async def get(self, session_id: str) -> SessionRecord | None:
        """:meth:`~mcp_ref._stores.SessionRegistry.get`."""
        data = await self._run(self.client.get, f"{self.prefix}session:{session_id}")
        return None if data is None else SessionRecord.from_bytes(data)

    async def forget(self, session_id: str) -> None:
        """:meth:`~mcp_ref._stores.SessionRegistry.forget`: the record and the events."""

        def forget() -> None:
            streams = f"{self.prefix}streams:{session_id}"
            keys = self.client.smembers(streams)
            self.client.delete(f"{self.prefix}session:{session_id}", streams, *keys)

        await self._run(forget)

    async def append(self, session_id: str, events: Sequence[tuple[str, str, str]]) -> None:
        """:meth:`~mcp_ref._stores.EventLog.append`."""

        def append() -> None:
            pipe = self.client.pipeline(transaction=False)
            streams = f"{self.prefix}streams:{session_id}"
            keys = set()
            for stream_id, event_id, data in events:
                key = f"{self.prefix}events:{session_id}:{stream_id}"
                keys.add(key)
                pipe.rpush(key, f"{event_id}\n{data}".encode("utf-8", "surrogatepass"))
            for key in keys:
                pipe.ltrim(key, -self.max_events_per_stream, -1)
                pipe.expire(key, self.ttl)
                pipe.sadd(streams, key)
            pipe.expire(streams, self.ttl)
            pipe.execute()

        await self._run(append)

    async def stream(self, session_id: str, stream_id: str) -> list[tuple[str, str]]:
        """:meth:`~mcp_ref._stores.EventLog.stream`."""
        key = f"{self.prefix}events:{session_id}:{stream_id}"
        items = await self._run(self.client.lrange, key, 0, -1)
        out = []
        for item in items:
            event_id, _, data = bytes(item).decode("utf-8", "surrogatepass").partition("\n")
            out.append((event_id, data))
        return out

    async def put_task(self, record: TaskRecord, ttl_seconds: float) -> None:
        """:meth:`~mcp_ref._stores.TaskStore.put_task`."""
        ttl = max(1, math.ceil(ttl_seconds))

        def put() -> None:
            pipe = self.client.pipeline(transaction=False)
            pipe.set(f"{self.prefix}task:{record.task_id}", record.to_bytes(), ex=ttl)
            index = f"{self.prefix}tasks:{record.owner}"
            pipe.zadd(index, {record.task_id: record.created_at})
            pipe.zremrangebyrank(index, 0, -self.max_tasks_per_owner - 1)
            pipe.expire(index, ttl, nx=True)
            pipe.expire(index, ttl, gt=True)
            pipe.execute()

        await self._run(put)

    async def get_task(self, task_id: str) -> TaskRecord | None:
        """:meth:`~mcp_ref._stores.TaskStore.get_task`."""
        data = await self._run(self.client.get, f"{self.prefix}task:{task_id}")
        return None if data is None else TaskRecord.from_bytes(bytes(data))

    async def list_tasks(self, owner: str) -> list[TaskRecord]:
        """:meth:`~mcp_ref._stores.TaskStore.list_tasks` (ids whose record expired
        are dropped from the index)."""

        def list_() -> list[TaskRecord]:
            index = f"{self.prefix}tasks:{owner}"
            ids = [bytes(i).decode() for i in self.client.zrange(index, 0, -1)]
            if not ids:
                return []
            datas = self.client.mget([f"{self.prefix}task:{i}" for i in ids])
            gone = [i for i, d in zip(ids, datas, strict=True) if d is None]
            if gone:
                self.client.zrem(index, *gone)
            records = (TaskRecord.from_bytes(bytes(d)) for d in datas if d is not None)
            return [r for r in records if r is not None and r.owner == owner]

        result: list[TaskRecord] = await self._run(list_)
        return result

    async def forget_task(self, task_id: str) -> None:
        """:meth:`~mcp_ref._stores.TaskStore.forget_task` (its index entry goes when
        the owner's list is next read)."""
        await self._run(self.client.delete, f"{self.prefix}task:{task_id}")

"""JSON-RPC batches (protocol 2025-03-26 only): a stage in front of the connection.

Theory of operation
-------------------
Protocol version 2025-03-26 allows JSON-RPC batches (2025-06-18 removed them again).
The connection handles one message at a time and never sees a batch: it hands a
decoded JSON array to its :class:`Batches` stage, which

1. refuses the array whole when it may not be read (:func:`refuse_batch`);
2. feeds the items to the connection one by one, in order, and returns their events
   and refusals, which ``next_event`` hands out in their turn;
3. on a byte stream, collects the replies: one :class:`BatchReplies` per array owes a
   reply per request accepted and per item refused with a reply, by the reply's id.
   Each reply sent is held; the one that settles the last debt becomes the whole
   array.  A cancelled request is owed nothing; a batch owing nothing gets nothing.

Message transports skip step 3: the Streamable HTTP server answers a batch body with
one array itself, and a WebSocket peer gets its replies one by one.

Source: JSON-RPC 2.0 section 6: the replies SHOULD come back as one array once all the
requests are processed, and an empty array MUST NOT be sent.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import attrs

from ._errors import INVALID_REQUEST, RemoteProtocolError
from ._jsonrpc import error_reply
from ._methods import BATCH_VERSIONS
from .events import Event, Request

__all__ = ["BatchReplies", "Batches", "refuse_batch"]


def refuse_batch(count: int, version: str | None, max_items: int) -> RemoteProtocolError | None:
    """Why a batch of ``count`` messages is refused whole (-32600, its id-null reply
    in ``event_hint``), or None to accept it.  Used by the connection and by the
    Streamable HTTP server before it opens a stream for a POSTed batch."""
    # Spec: 2025-06-18/basic#messages.1 (no batches from 2025-06-18 on)
    # "All messages between MCP clients and servers MUST follow the JSON-RPC 2.0 specification."
    if version not in BATCH_VERSIONS:
        why = f"JSON-RPC batches are not allowed in protocol version {version}"
        reply = "batches are not supported"
    elif count == 0:
        why = reply = "empty batch"
    elif count > max_items:
        why = reply = "batch too large"
    else:
        return None
    return RemoteProtocolError(
        why, code=INVALID_REQUEST, event_hint=error_reply(None, INVALID_REQUEST, reply)
    )


@attrs.define
class BatchReplies:
    """The replies owed to one batch read from a byte stream: ``owed`` still to come,
    ``parts`` held so far (serialized messages, no newline)."""

    owed: int = 0
    parts: list[bytes] = attrs.Factory(list)

    def add(self, line: bytes) -> bytes:
        """Hold one reply (``line``: its serialized message and newline); return the
        array line ``b"[...]\\n"`` when it was the last one owed, else ``b""``."""
        self.owed -= 1
        self.parts.append(line.removesuffix(b"\n"))
        return self._done()

    def drop(self) -> bytes:
        """One reply is owed no more (its request was cancelled); return the array line
        when that settles the batch, else ``b""``."""
        self.owed -= 1
        return self._done()

    def _done(self) -> bytes:
        if self.owed > 0 or not self.parts:
            return b""  # more to come, or nothing at all to send (never "[]")
        array = b"[" + b",".join(self.parts) + b"]\n"
        self.parts = []
        return array


class Batches:
    """The batch stage of one connection: batches of up to ``max_items`` (the
    in-flight bound); with ``collect`` (a byte stream) the replies go back as one array
    per batch, remembering at most ``max_refused`` replies to refused items (past it the
    oldest id's are forgotten: a driver sends each as ``next_event`` raises)."""

    def __init__(self, *, max_items: int, collect: bool, max_refused: int) -> None:
        self.max_items = max_items
        self.collect = collect
        self.max_refused = max_refused
        self._requests: dict[Any, BatchReplies] = {}  # accepted request id -> its batch
        self._refused: dict[Any, deque[BatchReplies]] = {}  # reply id -> batches, oldest first
        self._refused_count = 0

    def split(
        self, items: list[Any], version: str | None, handle: Callable[[Any], Event | None]
    ) -> list[Event | RemoteProtocolError]:
        """Feed every item to ``handle`` (the connection's reader of one message), in
        order; return their events and refusals (RemoteProtocolError) in that order.

        Raises:
            RemoteProtocolError: the batch is refused whole (:func:`refuse_batch`).
        """
        refusal = refuse_batch(len(items), version, self.max_items)
        if refusal is not None:
            raise refusal
        replies = BatchReplies() if self.collect else None
        out: list[Event | RemoteProtocolError] = []
        for item in items:
            try:
                event = handle(item)
            except RemoteProtocolError as exc:
                out.append(exc)
                if exc.event_hint is not None and replies is not None:
                    replies.owed += 1
                    self._refused.setdefault(exc.event_hint.id, deque()).append(replies)
                    self._refused_count += 1
                continue
            if event is None:
                continue
            out.append(event)
            if type(event) is Request and replies is not None:
                replies.owed += 1
                self._requests[event.id] = replies
        while self._refused_count > self.max_refused:
            oldest = next(iter(self._refused))
            self._refused_count -= len(self._refused.pop(oldest))
        return out

    def reply(self, rid: Any, data: bytes, *, refused: bool) -> bytes:
        """What to write for the reply ``data`` with id ``rid``, which answers a refused
        message (``refused``) or a request: ``data`` itself when no batch owes it,
        ``b""`` while its batch waits for more, the batch's array when it was the last."""
        if not refused:
            replies = self._requests.pop(rid, None)
            return data if replies is None else replies.add(data)
        owed = self._refused.get(rid)
        if not owed:
            return data
        self._refused_count -= 1
        replies = owed.popleft()
        if not owed:
            del self._refused[rid]
        return replies.add(data)

    def cancelled(self, rid: Any) -> bytes:
        """The peer cancelled request ``rid``: no reply is owed for it any more.  Return
        its batch's array when that settles it, else ``b""``."""
        replies = self._requests.pop(rid, None)
        return b"" if replies is None else replies.drop()

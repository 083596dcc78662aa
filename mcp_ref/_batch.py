"""Replies to a JSON-RPC batch: collected, then sent as one array.

Theory of operation
-------------------
Protocol version 2025-03-26 allows JSON-RPC batches (2025-06-18 removed them again).
The Streamable HTTP server answers a batch body with one array itself, and message
transports (WebSocket) reply item by item.  When the connection reads a batch from a
byte stream (stdio, newline framing), it handles every item at once and
opens one :class:`BatchReplies` for it, owing one reply per request it produced an event
for and per item it refused with an error reply.  Each reply the application sends for
the batch is serialized as usual, then held here; the one that settles the last debt
returns the whole array, ``[reply, reply, ...]``, to write in place of itself.  A
request the peer cancels is owed nothing more (:meth:`BatchReplies.drop`).  A batch
that owes nothing (only notifications and responses) is answered with nothing.

Source: JSON-RPC 2.0 section 6 (batch): the replies SHOULD come back as an array once
all the requests are processed, and an empty array MUST NOT be sent;
2025-03-26 basic (batches may be received).
"""

from __future__ import annotations

import attrs

from ._errors import INVALID_REQUEST, RemoteProtocolError
from ._jsonrpc import error_reply
from ._methods import BATCH_VERSIONS

__all__ = ["BatchReplies", "refuse_batch"]


def refuse_batch(count: int, version: str | None, max_items: int) -> RemoteProtocolError | None:
    """Why a batch (a JSON array of messages) is refused whole, or None to accept it.

    The one place of these rules: the connection applies them to a batch it reads, the
    Streamable HTTP server to a POSTed batch before it opens a stream for it.

    Args:
        count: how many messages the array holds.
        version: the negotiated protocol version (None before initialize).
        max_items: the largest batch accepted (the connection's in-flight bound).

    Returns:
        A :class:`RemoteProtocolError` (-32600, its reply with id null in
        ``event_hint``) when batches are not allowed in ``version``, or the batch is
        empty or longer than ``max_items``; else None.
    """
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
    """The replies owed to one batch.

    Attributes:
        owed: replies still to come (>= 0).
        parts: the replies held so far, each one serialized JSON message (no newline).

    Batches are answered as one array only on byte streams (newline framing), so what
    comes in and goes out here are framed lines.
    """

    owed: int = 0
    parts: list[bytes] = attrs.Factory(list)

    def add(self, line: bytes) -> bytes:
        """Hold one reply (``line``: its serialized message and newline); return the
        array line ``b"[...]\\n"`` when it was the last one owed, else ``b""``."""
        self.owed -= 1
        self.parts.append(line.rstrip(b"\n"))
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

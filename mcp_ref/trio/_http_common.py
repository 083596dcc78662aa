"""What the trio HTTP server and client share: message peeking, h11 over a trio stream,
and a private task supervisor.

Theory of operation
-------------------
Streamable HTTP cannot treat messages as opaque bytes everywhere.  The server answers a
POST of a notification with 202 and a POST of a request with a stream that ends after
*the response to that request*; the client must know which answer ends a POST's stream.
So both sides need to know, for one JSON-RPC message, its kind (request, notification,
response) and its id -- never its params.  :func:`peek_message` reads exactly that.
Messages the core wrote come in one fixed key order (``{"jsonrpc":"2.0","id":...,
"method"|"result"|"error":...``), so the peek decodes only the id and the method name;
anything else (another implementation's key order, a batch) is decoded in full.  The
core still parses every message itself: the peek decides routing, never validity.

:class:`H11Stream` is h11 driven over a ``trio.abc.Stream``: ``next_event`` reads until
h11 has an event, ``send`` writes what h11 produces and calls ``send_failed`` when the
write fails.

:class:`Supervisor` runs tasks in a nursery that is a local variable of its
:meth:`Supervisor.run` (started by whoever owns the supervisor), so no nursery is ever
stored for others to spawn into: they hand a job to a bounded queue instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import attrs
import h11
import trio

from .._http import MessageKind
from ._channel import _fileno_of, _write_now

__all__ = [
    "CONNECTION_CLOSE",
    "RECEIVE_SIZE",
    "H11Stream",
    "MessageInfo",
    "Supervisor",
    "peek_body",
    "peek_message",
    "request_key",
]

RECEIVE_SIZE: Final = 65536
"""Bytes asked for per ``receive_some``."""


@attrs.frozen
class MessageInfo:
    """The kind, id and method of one JSON-RPC message (nothing else is read)."""

    kind: MessageKind
    """Request, notification or response (a result or an error)."""
    id: str | int | None
    """The id (None for a notification, or an error response without id)."""
    method: str | None
    """The method of a request or notification; None for a response."""


CONNECTION_CLOSE: Final = (b"connection", b"close")
"""The ``Connection: close`` header of a response after which the connection ends."""


def _valid_id(value: object) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def _info_of(obj: object) -> MessageInfo | None:
    if not isinstance(obj, dict):
        return None
    method = obj.get("method")
    rid = obj.get("id")
    if isinstance(method, str):
        if "id" in obj:
            return MessageInfo(MessageKind.REQUEST, rid, method) if _valid_id(rid) else None
        return MessageInfo(MessageKind.NOTIFICATION, None, method)
    if "result" in obj or "error" in obj:
        return MessageInfo(MessageKind.RESPONSE, rid if _valid_id(rid) else None, None)
    return None


# The core's key order: the id (an int, or a string without escapes) and then the
# method, result or error; or, for a notification, the method first.  A string holds no
# quote, backslash or control character, so its bytes are its UTF-8 text.
_HEAD = re.compile(
    rb'\{"jsonrpc":"2\.0","(?:'
    rb'id":(-?(?:0|[1-9][0-9]*)|"[^"\\\x00-\x1f]*"),"(method|result|error)":'
    rb'|method":"([^"\\\x00-\x1f]*)"(,"id":)?)'
)
_METHOD = re.compile(rb'"([^"\\\x00-\x1f]*)"')
_PEEK_BYTES: Final = 617  # the id and method lie in the first bytes: the prefix and 600


def _fast_peek(data: bytes) -> MessageInfo | None:
    """The core's own key order, reading only the id and the method; None if not it
    (or a string with escapes: :func:`json.loads` then reads it)."""
    m = _HEAD.match(data, 0, _PEEK_BYTES)
    if m is None:
        return None
    rid_bytes, key, note_method, id_after = m.groups()
    try:
        data[:_PEEK_BYTES].decode("utf-8")  # the window must be UTF-8 (else the slow path)
        if rid_bytes is not None:
            rid: str | int = (
                rid_bytes[1:-1].decode("utf-8") if rid_bytes[0] == 0x22 else int(rid_bytes)
            )
            if key == b"method":
                method = _METHOD.match(data, m.end(), _PEEK_BYTES)
                if method is None:
                    return None
                return MessageInfo(MessageKind.REQUEST, rid, method.group(1).decode("utf-8"))
            return MessageInfo(MessageKind.RESPONSE, rid, None)
        if id_after is not None:
            return None  # "method" before "id": not the core's order
        return MessageInfo(MessageKind.NOTIFICATION, None, note_method.decode("utf-8"))
    except UnicodeDecodeError:
        return None


def peek_message(data: bytes) -> MessageInfo | None:
    """Kind, id and method of one JSON-RPC message.

    Args:
        data: one message (UTF-8 JSON text, no framing).

    Returns:
        A :class:`MessageInfo`, or None when ``data`` is not one JSON-RPC message object
        (invalid JSON, a batch, no method and no result/error, a bad id).

    Source: 2025-06-18/basic#messages (the three kinds and their fields).
    """
    info = _fast_peek(data)
    if info is not None:
        return info
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return _info_of(obj)


def peek_body(data: bytes) -> list[MessageInfo] | str:
    """Kinds, ids and methods of the message(s) in a POST body.

    Returns:
        One :class:`MessageInfo` per message (a batch gives several, in order), or a
        str saying what is wrong: ``"parse error: ..."`` (not JSON) or
        ``"invalid: ..."`` (JSON, but not a message or an array of messages).

    Source: 2025-06-18/basic/transports#sending-messages-to-the-server.4; batches of
    2025-03-26.
    """
    info = _fast_peek(data)
    if info is not None:
        return [info]
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError) as exc:
        return f"parse error: {exc}"
    items = obj if isinstance(obj, list) else [obj]
    if not items:
        return "invalid: empty batch"
    out: list[MessageInfo] = []
    for item in items:
        got = _info_of(item)
        if got is None:
            return "invalid: not a JSON-RPC request, notification or response"
        out.append(got)
    return out


def request_key(rid: str | int | None) -> tuple[type, Any]:
    """Dictionary key of a request id: ``"7"`` and ``7`` stay apart, as in the core."""
    return (type(rid), rid)


class H11Stream:
    """One h11 connection over one trio stream.

    Args:
        stream: the byte stream (a socket).
        role: ``h11.SERVER`` or ``h11.CLIENT``.
        max_incomplete_event_size: h11's bound on a request or response head, in bytes.
    """

    def __init__(
        self, stream: trio.abc.Stream, role: Any, *, max_incomplete_event_size: int = 16384
    ) -> None:
        self.stream = stream
        self.conn = h11.Connection(role, max_incomplete_event_size=max_incomplete_event_size)
        self.received = 0
        """Bytes received so far."""
        self._fileno = _fileno_of(stream)

    async def receive_some(self) -> bytes:
        """Read one chunk from the socket into h11; ``b""`` at end of stream (also for a
        broken or closed socket)."""
        try:
            data = bytes(await self.stream.receive_some(RECEIVE_SIZE))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            data = b""
        self.received += len(data)
        self.conn.receive_data(data)
        return data

    async def next_event(self) -> Any:
        """The next h11 event, reading as needed.

        Returns an h11 event, or ``h11.PAUSED`` (the peer started its next cycle).

        Raises:
            h11.RemoteProtocolError: the peer broke HTTP/1.1 (``error_status_hint`` is
                the status to answer with).
        """
        conn = self.conn
        if conn.their_state is h11.IDLE and conn.our_role is h11.SERVER:
            # Between requests h11 has nothing to parse out of an empty buffer: read
            # first (saves a next_event that would say NEED_DATA).
            data, closed = conn.trailing_data
            if not data and not closed:
                await self.receive_some()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                if conn.their_state is h11.CLOSED:
                    return h11.ConnectionClosed()
                await self.receive_some()
                continue
            return event

    async def send(self, *events: Any) -> None:
        """Write h11 events, several in one write (a response head and its body).

        A socket that takes the bytes at once costs one ``os.write`` and no trip through
        the scheduler; the rest (or everything, for other streams) goes through
        ``send_all``.

        Raises:
            trio.BrokenResourceError, trio.ClosedResourceError: the socket failed (h11
                is then told with ``send_failed``).
            h11.LocalProtocolError: an event is not allowed now (the events before it
                are still written).
        """
        conn = self.conn
        if len(events) == 1:
            data = conn.send(events[0])
        else:
            parts: list[bytes] = []
            try:
                for event in events:
                    parts.append(conn.send(event) or b"")
            except h11.LocalProtocolError:
                if any(parts):  # h11 counts those as sent: write them, as one by one would
                    await self._write(b"".join(parts))
                raise
            data = b"".join(parts)
        if data:
            await self._write(data)

    async def _write(self, data: bytes) -> None:
        taken = _write_now(self._fileno, data)  # full, or broken: send_all says which
        if taken >= len(data):
            return
        if taken:
            data = data[taken:]
        try:
            await self.stream.send_all(data)
        except BaseException:
            self.conn.send_failed()
            raise

    async def aclose(self) -> None:
        """Close the socket (never raises for an already-broken one)."""
        try:
            await self.stream.aclose()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass


Job = tuple[Callable[..., Awaitable[Any]], Sequence[Any]]


class Supervisor:
    """Runs tasks handed to it, in a nursery private to :meth:`run`.

    Once :meth:`run` has started, :meth:`start_soon` starts the task at once in that
    nursery; jobs handed to it before wait in a queue.

    Args:
        max_pending: jobs queued before :meth:`run` starts, after which
            :meth:`start_soon` refuses (a bound).
    """

    def __init__(self, max_pending: int = 1024) -> None:
        self._send, self._receive = trio.open_memory_channel[Job](max_pending)
        self._nursery: trio.Nursery | None = None
        self._closed = trio.Event()

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> bool:
        """Start ``fn(*args)`` as a task (or queue it until :meth:`run` starts); False
        when the supervisor is closed or its queue is full."""
        if self._closed.is_set():
            return False
        if self._nursery is not None:
            self._nursery.start_soon(fn, *args)
            return True
        try:
            self._send.send_nowait((fn, args))
        except trio.WouldBlock:
            return False
        return True

    def close(self) -> None:
        """Take no more jobs; :meth:`run` returns once the running tasks have ended."""
        self._closed.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Start the queued jobs, then each job as it is handed over, until :meth:`close`;
        then wait for the tasks (start it with ``nursery.start``; cancel it to stop every
        task)."""
        async with trio.open_nursery() as nursery:
            while True:  # the jobs queued before now
                try:
                    fn, args = self._receive.receive_nowait()
                except trio.WouldBlock:
                    break
                nursery.start_soon(fn, *args)
            self._nursery = nursery  # from here on start_soon starts tasks itself
            task_status.started()
            try:
                await self._closed.wait()
            finally:
                self._nursery = None

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
h11 has an event, ``send`` writes what h11 produces (several events in one write, tried
first as one non-blocking ``os.write`` on a socket) and calls ``send_failed`` when the
write fails.  For a server it can serve plain requests without h11 (``fast_requests``,
see the section "requests served without h11" below): same requests, states and bytes.

:class:`Supervisor` runs tasks in a nursery that is a local variable of its
:meth:`Supervisor.run` (started by whoever owns the supervisor), so no nursery is ever
stored for others to spawn into: they hand a job to a bounded queue instead.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import attrs
import h11
import trio

from .._http import MessageKind
from ._channel import _fileno_of

__all__ = [
    "RECEIVE_SIZE",
    "FastRequest",
    "H11Stream",
    "MessageInfo",
    "Supervisor",
    "peek_body",
    "peek_message",
    "request_key",
]

RECEIVE_SIZE: Final = 65536
"""Bytes asked for per ``receive_some``."""

_PREFIX: Final = b'{"jsonrpc":"2.0",'
_decoder = json.JSONDecoder()


@attrs.frozen
class MessageInfo:
    """The kind, id and method of one JSON-RPC message (nothing else is read)."""

    kind: MessageKind
    """Request, notification or response (a result or an error)."""
    id: str | int | None
    """The id (None for a notification, or an error response without id)."""
    method: str | None
    """The method of a request or notification; None for a response."""


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


def _fast_peek(data: bytes) -> MessageInfo | None:
    """The core's own key order, decoding only the id and the method; None if not it."""
    if not data.startswith(_PREFIX):
        return None
    try:
        text = data[len(_PREFIX) : len(_PREFIX) + 600].decode("utf-8", "strict")
    except UnicodeDecodeError:
        return None  # cut in the middle of a character: take the slow path
    try:
        if text.startswith('"id":'):
            rid, end = _decoder.raw_decode(text, 5)
            if not _valid_id(rid):
                return None
            rest = text[end:]
            if rest.startswith(',"method":'):
                method, _ = _decoder.raw_decode(rest, 10)
                if isinstance(method, str):
                    return MessageInfo(MessageKind.REQUEST, rid, method)
                return None
            if rest.startswith((',"result":', ',"error":')):
                return MessageInfo(MessageKind.RESPONSE, rid, None)
            return None
        if text.startswith('"method":'):
            method, end = _decoder.raw_decode(text, 9)
            if isinstance(method, str) and text[end : end + 6] != ',"id":':
                return MessageInfo(MessageKind.NOTIFICATION, None, method)
    except ValueError:
        return None
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


# -- requests served without h11 ---------------------------------------------------------
#
# A server spends more time in h11 than in MCP for a small POST.  Most requests are
# plain: HTTP/1.1, one Host, a Content-Length (or none), no Transfer-Encoding, Expect,
# Upgrade or Connection other than keep-alive, the whole head and body in one read.
# For those, H11Stream (fast_requests=True) parses the head itself with h11's own
# grammar (RFC 9112 as h11 writes it: token, field-content, OWS) and serves the cycle
# with _FastCycle, which keeps h11's states and writes h11's exact bytes.  Anything
# else, and any head that is not whole, goes to h11 unchanged: a fast request is one
# h11 would have parsed into the very same Request, so behaviour does not change.  A
# client repeats its head, Content-Length aside: the parsed head is kept per connection
# (a few) and reused when the bytes are the same.

_TOKEN = rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]+"
_REQUEST_LINE = re.compile(rb"(" + _TOKEN + rb") ([\x21-\x7e]+) HTTP/1\.1")
_FIELD = re.compile(rb"(" + _TOKEN + rb"):[ \t]*((?:[^\x00\s]+(?:[ \t]+[^\x00\s]+)*)?)[ \t]*")
_CONTENT_LENGTH_LINE = re.compile(rb"\r\ncontent-length:[ \t]*([0-9]{1,18})[ \t]*(?=\r\n|$)", re.I)
_NOT_PLAIN: Final = frozenset({b"transfer-encoding", b"content-length", b"expect", b"upgrade"})
_FAST_METHODS: Final = frozenset({b"POST", b"GET", b"DELETE"})
_MAX_FAST_HEAD: Final = 8192
_MAX_KNOWN_HEADS: Final = 4


class FastRequest:
    """A request head parsed without h11, equal to the ``h11.Request`` h11 would make.

    Attributes:
        method, target: bytes, as in ``h11.Request``.
        headers: ``[(lowercase name, value), ...]`` in order, as ``h11.Request.headers``.
        http_version: always ``b"1.1"``.
        head_key: the head's bytes without its Content-Length line: the same for every
            request that repeats this head.
    """

    __slots__ = ("head_key", "headers", "method", "target")
    http_version = b"1.1"

    def __init__(
        self, method: bytes, target: bytes, headers: list[tuple[bytes, bytes]], head_key: bytes
    ) -> None:
        self.method = method
        self.target = target
        self.headers = headers
        self.head_key = head_key


def _parse_head(key: bytes) -> tuple[bytes, bytes, list[tuple[bytes, bytes]]] | None:
    """Method, target and headers of a plain head (without its Content-Length line);
    None for anything h11 should see."""
    lines = key.split(b"\r\n")
    m = _REQUEST_LINE.fullmatch(lines[0])
    if m is None or m[1] not in _FAST_METHODS:
        return None
    headers: list[tuple[bytes, bytes]] = []
    hosts = 0
    for line in lines[1:]:
        f = _FIELD.fullmatch(line)
        if f is None:
            return None  # an obs-fold, a bad line: h11's call
        name = f[1].lower()
        value = f[2]
        if name in _NOT_PLAIN:
            return None
        if name == b"connection" and value.lower() != b"keep-alive":
            return None
        hosts += name == b"host"
        headers.append((name, value))
    if hosts != 1:
        return None
    return m[1], m[2], headers


class _FastCycle:
    """One request/response cycle of a :class:`FastRequest`: the part of
    ``h11.Connection`` the server uses (states, ``next_event``, ``send``,
    ``receive_data``, ``trailing_data``...), with h11's states and output bytes."""

    they_are_waiting_for_100_continue = False

    def __init__(self, owner: H11Stream, body: bytes, rest: bytes) -> None:
        self._owner = owner
        self._events: list[Any] = [h11.EndOfMessage()]
        if body:
            self._events.insert(0, h11.Data(data=body))
        self._buffer = bytearray(rest)
        self._closed = False
        self._their: Any = h11.SEND_BODY
        self._our: Any = h11.SEND_RESPONSE
        self._keep_alive = True
        self._remaining: int | None = None  # Content-Length left to send; None: chunked

    # states, as h11 reports them (DONE is MUST_CLOSE once keep-alive is off)
    @property
    def their_state(self) -> Any:
        if self._their is h11.DONE and not self._keep_alive:
            return h11.MUST_CLOSE
        return self._their

    @property
    def our_state(self) -> Any:
        if self._our is h11.DONE and not self._keep_alive:
            return h11.MUST_CLOSE
        return self._our

    @property
    def trailing_data(self) -> tuple[bytes, bool]:
        return bytes(self._buffer), self._closed

    def receive_data(self, data: bytes) -> None:
        if data:
            self._buffer += data
        else:
            self._closed = True

    def next_event(self) -> Any:
        if self._events:
            event = self._events.pop(0)
            if type(event) is h11.EndOfMessage:
                self._their = h11.DONE
            return event
        if self._buffer:
            return h11.PAUSED
        if self._closed:
            self._their = h11.CLOSED
            return h11.ConnectionClosed()
        return h11.NEED_DATA

    def send(self, event: Any) -> bytes:
        kind = type(event)
        if kind is h11.Response and self._our is h11.SEND_RESPONSE:
            return self.head(event.status_code, event.reason, event.headers.raw_items())
        if kind is h11.Data and self._our is h11.SEND_BODY:
            data = bytes(event.data)
            if self._remaining is None:
                return b"%x\r\n%s\r\n" % (len(data), data) if data else b""
            self._remaining -= len(data)
            if self._remaining < 0:
                self._our = h11.ERROR
                raise h11.LocalProtocolError("Too much data for declared Content-Length")
            return data
        if kind is h11.EndOfMessage and self._our is h11.SEND_BODY and not event.headers:
            if self._remaining:
                self._our = h11.ERROR
                raise h11.LocalProtocolError("Too little data for declared Content-Length")
            self._our = h11.DONE
            return b"0\r\n\r\n" if self._remaining is None else b""
        self._our = h11.ERROR
        raise h11.LocalProtocolError(f"can't send {kind.__name__} now (fast cycle)")

    def head(self, status: int, reason: bytes, items: list[tuple[bytes, bytes]]) -> bytes:
        """The bytes of a response head (h11 accepted ``items`` already, raw names)."""
        # h11's framing of a response to a keep-alive HTTP/1.1 request that is not HEAD:
        # 204 and 304 have no body; else Transfer-Encoding wins over Content-Length;
        # without either, chunked.  A chunked response loses its own Content-Length and
        # Transfer-Encoding headers and gets "Transfer-Encoding: chunked" last.
        if self._our is not h11.SEND_RESPONSE:
            self._our = h11.ERROR
            raise h11.LocalProtocolError("can't send Response now (fast cycle)")
        lengths: list[bytes] = []
        chunked = False
        close = False
        for raw_name, value in items:
            name = raw_name.lower()
            if name == b"content-length":
                lengths.extend(v.strip() for v in value.lower().split(b","))
            elif name == b"transfer-encoding":
                chunked = True
            elif name == b"connection":
                close = close or b"close" in (v.strip() for v in value.lower().split(b","))
        if status in (204, 304):
            self._remaining = 0
        elif chunked or not lengths:
            items = [
                (n, v)
                for n, v in items
                if n.lower() not in (b"content-length", b"transfer-encoding")
            ]
            items.append((b"Transfer-Encoding", b"chunked"))
        else:
            self._remaining = int(lengths[0])
        out = [b"HTTP/1.1 %d %s\r\n" % (status, reason)]
        out += [b"%s: %s\r\n" % (n, v) for n, v in items if n.lower() == b"host"]
        out += [b"%s: %s\r\n" % (n, v) for n, v in items if n.lower() != b"host"]
        out.append(b"\r\n")
        self._our = h11.SEND_BODY
        if close:
            self._keep_alive = False
        return b"".join(out)

    def whole(
        self, status: int, reason: bytes, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> bytes | None:
        """The bytes of ``Response`` + ``Data(body)`` + ``EndOfMessage`` with headers
        known to be valid, as h11 would write them; None when this needs h11's own
        handling (no or a wrong Content-Length, Transfer-Encoding, 204/304, not now)."""
        if self._our is not h11.SEND_RESPONSE or status in (204, 304):
            return None
        length = b"%d" % len(body)
        lengths = 0
        close = False
        for name, value in headers:
            if name == b"content-length":
                if value != length:
                    return None
                lengths += 1
            elif name == b"transfer-encoding":
                return None
            elif name == b"connection":
                close = close or b"close" in (v.strip() for v in value.lower().split(b","))
        if lengths != 1:
            return None
        out = [b"HTTP/1.1 %d %s\r\n" % (status, reason)]
        out += [b"%s: %s\r\n" % (n, v) for n, v in headers if n == b"host"]
        out += [b"%s: %s\r\n" % (n, v) for n, v in headers if n != b"host"]
        out += (b"\r\n", body)
        self._our = h11.DONE
        if close:
            self._keep_alive = False
        return b"".join(out)

    def send_failed(self) -> None:
        self._our = h11.ERROR

    def start_next_cycle(self) -> None:
        if self.our_state is not h11.DONE or self.their_state is not h11.DONE:
            raise h11.LocalProtocolError(
                f"not in a reusable state (fast cycle: {self.our_state}, {self.their_state})"
            )
        self._owner._end_fast_cycle(bytes(self._buffer), self._closed)


class H11Stream:
    """One h11 connection over one trio stream.

    Args:
        stream: the byte stream (a socket).
        role: ``h11.SERVER`` or ``h11.CLIENT``.
        max_incomplete_event_size: h11's bound on a request or response head, in bytes.
        fast_requests: (server) serve plain requests without h11 (see above): then
            ``next_event`` may return a :class:`FastRequest` instead of an
            ``h11.Request``, and ``conn`` is a stand-in for h11 until the cycle ends.
    """

    def __init__(
        self,
        stream: trio.abc.Stream,
        role: Any,
        *,
        max_incomplete_event_size: int = 16384,
        fast_requests: bool = False,
    ) -> None:
        self.stream = stream
        self._h11 = h11.Connection(role, max_incomplete_event_size=max_incomplete_event_size)
        self.conn: Any = self._h11
        """The h11 connection, or a cycle's stand-in for it (same attributes)."""
        self.received = 0
        """Bytes received so far."""
        self._fileno = _fileno_of(stream)
        self._fast = fast_requests and role is h11.SERVER
        self._pending = b""  # read for the next cycle, not yet given to h11
        self._pending_closed = False
        self._heads: dict[bytes, tuple[bytes, bytes, list[tuple[bytes, bytes]]] | None] = {}

    async def _read(self) -> bytes:
        fileno = self._fileno
        if fileno is not None and (fd := fileno()) >= 0:
            # A socket: wait until it is readable, then one read.  (SocketStream would
            # try a read first, which on a keep-alive connection finds nothing.)
            while True:
                try:
                    await trio.lowlevel.wait_readable(fd)
                    data = os.read(fd, RECEIVE_SIZE)
                except BlockingIOError:
                    continue  # readable, yet nothing to read after all: wait again
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    data = b""  # closed, reset...: the end of the stream
                break
        else:
            try:
                data = bytes(await self.stream.receive_some(RECEIVE_SIZE))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
        self.received += len(data)
        return data

    async def receive_some(self) -> bytes:
        """Read one chunk from the socket into h11; ``b""`` at end of stream (also for a
        broken or closed socket)."""
        data = await self._read()
        self.conn.receive_data(data)
        return data

    def _end_fast_cycle(self, rest: bytes, closed: bool) -> None:
        self.conn = self._h11
        self._pending = rest
        self._pending_closed = closed

    def _fast_cycle(self, data: bytes) -> FastRequest | None:
        """Start a cycle without h11 when ``data`` holds one whole plain request."""
        end = data.find(b"\r\n\r\n")
        if end < 0 or end > _MAX_FAST_HEAD:
            return None
        head = data[:end]
        m = _CONTENT_LENGTH_LINE.search(head)
        if m is None:
            key, length, cl_at, cl_value = head, 0, -1, b""
        else:
            if _CONTENT_LENGTH_LINE.search(head, m.end()) is not None:
                return None  # two Content-Length lines: h11's call
            key = head[: m.start()] + head[m.end() :]
            cl_value = m[1]
            length = int(cl_value)
            cl_at = head.count(b"\r\n", 0, m.start())  # header lines before it
        heads = self._heads
        try:
            parsed = heads[key]
        except KeyError:
            if len(heads) >= _MAX_KNOWN_HEADS:
                heads.clear()
            parsed = heads[key] = _parse_head(key)
        if parsed is None:
            return None
        total = end + 4 + length
        if len(data) < total:
            return None  # the body is not all here: h11 reads the rest
        method, target, headers = parsed
        if cl_at >= 0:
            headers = headers.copy()
            headers.insert(cl_at, (b"content-length", cl_value))
        self.conn = _FastCycle(self, data[end + 4 : total], data[total:])
        return FastRequest(method, target, headers, key)

    async def next_event(self) -> Any:
        """The next h11 event, reading as needed.

        Returns an h11 event, ``h11.PAUSED`` (the peer started its next cycle), or, with
        ``fast_requests``, a :class:`FastRequest`.

        Raises:
            h11.RemoteProtocolError: the peer broke HTTP/1.1 (``error_status_hint`` is
                the status to answer with).
        """
        if self._fast and self.conn is self._h11:
            conn = self._h11
            if conn.their_state is h11.IDLE and not conn.trailing_data[0]:
                data, self._pending = self._pending, b""
                closed, self._pending_closed = self._pending_closed, False
                if not data and not closed:
                    data = await self._read()
                    closed = not data
                if data:
                    request = self._fast_cycle(data)
                    if request is not None:
                        if closed:
                            self.conn.receive_data(b"")
                        return request
                    conn.receive_data(data)
                if closed:
                    conn.receive_data(b"")
        while True:
            event = self.conn.next_event()
            if event is h11.NEED_DATA:
                if self.conn.their_state is h11.CLOSED:
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

    async def send_whole(
        self,
        status: int,
        reason: bytes,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        *,
        valid_headers: bool = False,
    ) -> None:
        """``send(Response(status, headers, reason), Data(body), EndOfMessage())``.

        With ``valid_headers`` (the caller built them from headers h11 already accepted:
        lowercase token names, field values, the body's Content-Length), a fast cycle
        writes them without building h11 events; otherwise, and under h11, the events go
        through :meth:`send` as usual.
        """
        conn = self.conn
        if valid_headers and type(conn) is _FastCycle:
            data = conn.whole(status, reason, headers, body)
            if data is not None:
                await self._write(data)
                return
        response = h11.Response(status_code=status, headers=headers, reason=reason)
        await self.send(response, h11.Data(data=body), h11.EndOfMessage())

    async def send_head(
        self,
        status: int,
        reason: bytes,
        headers: list[tuple[bytes, bytes]],
        *,
        valid_headers: bool = False,
        then: Any = None,
    ) -> None:
        """``send(Response(status, headers, reason))`` (and the event ``then``, in the
        same write); with ``valid_headers`` (h11 accepted these headers before), a fast
        cycle writes the head without building the h11 event."""
        conn = self.conn
        if valid_headers and type(conn) is _FastCycle:
            data = conn.head(status, reason, headers)
            if then is not None:
                data += conn.send(then)
            await self._write(data)
            return
        response = h11.Response(status_code=status, headers=headers, reason=reason)
        if then is not None:
            await self.send(response, then)
        else:
            await self.send(response)

    async def _write(self, data: bytes) -> None:
        fileno = self._fileno
        if fileno is not None:
            fd = fileno()
            if fd >= 0:
                try:
                    taken = os.write(fd, data)
                except OSError:
                    taken = 0  # full, or broken: send_all says which
                if taken >= len(data):
                    return
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

    Args:
        max_pending: jobs queued before :meth:`start_soon` refuses (a bound).
    """

    def __init__(self, max_pending: int = 1024) -> None:
        self._send, self._receive = trio.open_memory_channel[Job](max_pending)

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> bool:
        """Queue ``fn(*args)`` to run as a task; False when the supervisor is closed or
        its queue is full."""
        try:
            self._send.send_nowait((fn, args))
        except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
            return False
        return True

    def close(self) -> None:
        """Take no more jobs; :meth:`run` returns once the running tasks have ended."""
        self._send.close()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run queued jobs until :meth:`close`, then wait for the tasks (start it with
        ``nursery.start``; cancel it to stop every task)."""
        async with trio.open_nursery() as nursery:
            task_status.started()
            async with self._receive:
                async for fn, args in self._receive:
                    nursery.start_soon(fn, *args)

"""``python -m bench --fuzz-http URL``: does every POST get an answer?  And a load row.

Theory of operation
-------------------
A Streamable HTTP server must answer every POST (2025-06-18/basic/transports
#sending-messages-to-the-server.4-.6: a body that is not a JSON-RPC message gets an HTTP
error status, a request gets its response), whatever the body.  The fuzzer sends bodies
that look like requests but are damaged in the ways real clients and attackers damage
them, to a running endpoint, and counts the answers:

* **bodies**: a real ``initialize``, ``tools/call``, ``ping`` or notification (written
  in the key order a JSON-RPC library writes, ``{"jsonrpc":"2.0","id":..,"method":..}``)
  cut at every byte, behind a UTF-8 BOM, re-encoded as UTF-16 or UTF-32, followed by
  trailing bytes, with an invalid UTF-8 byte spliced in, with a second ``"id"``, nested
  1,000 deep (the tool's arguments) or 100,000 deep (a ``notifications/cancelled``),
  random bytes and random JSON.  Each goes once without a session (as a client's first
  POST) and once inside an initialized session.
* **headers**: no or odd ``Accept`` and ``Content-Type``, a huge header, many headers.
* **slow**: a body sent one byte at a time; a body that pauses mid-way then goes on; a
  client that ends its side of the connection mid-body (there the server may just
  close: that counts as an answer).

Per family it reports what was sent, answered, the status counts and the unanswered
ones: a POST with neither a complete response (for an SSE answer: its end, h11's
``EndOfMessage``) nor a close within ``timeout`` seconds.  Unanswered is the number
that matters: ``main`` exits 1 when it is not 0.  The run is bounded by ``count`` cases
and ``seconds`` of wall time (no new case starts after it; the ones under way finish
within their own ``timeout``), and refuses a non-loopback URL unless told otherwise.
Sessions the run created are ended with DELETE.

The damage functions (:func:`truncated`, :func:`with_bom`, ...) are pure functions of
bytes, shared with the property tests (tests/test_http_fuzz.py).

:func:`sessions_row` is the load row: ``n`` concurrent sessions (``initialize``,
``notifications/initialized``, one ``tools/call`` of ``echo``, then all ``DELETE``)
against ``mcp-ref serve --http`` started on loopback, reporting errors (must be 0), the
wall time, and the server's memory per live session.

Only trio and h11 are used (no mcp-ref), so any MCP server can be fuzzed.
"""

from __future__ import annotations

import ipaddress
import json
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, Final
from urllib.parse import urlsplit

import h11
import trio

from .report import Row

__all__ = [
    "DEFAULT_COUNT",
    "DEFAULT_SECONDS",
    "DEFAULT_TIMEOUT",
    "PROTOCOL_VERSION",
    "Outcome",
    "bad_utf8",
    "body_cases",
    "deep_arguments",
    "deep_cancelled",
    "duplicate_id",
    "fuzz_http",
    "is_loopback_url",
    "message",
    "render",
    "sessions_row",
    "trailing",
    "truncated",
    "utf16",
    "utf32",
    "with_bom",
]

PROTOCOL_VERSION: Final = "2025-06-18"
DEFAULT_COUNT: Final = 2000
"""Cases sent at most per run (each family gets its share)."""
DEFAULT_SECONDS: Final = 60.0
"""Wall time after which no new case starts, in seconds."""
DEFAULT_TIMEOUT: Final = 5.0
"""Seconds a POST has to be answered (its whole response) before it counts as unanswered."""
SESSIONS_PER_ADDRESS: Final = 100
"""Sessions the load row opens from one loopback address (127.0.0.1, 127.0.0.2, ...):
the server's default ``HttpLimits.max_sessions_per_peer``, so the row measures many
clients rather than that bound."""
CONCURRENCY: Final = 8
"""Cases in flight at once (so that unanswered ones do not serialize their timeouts)."""
MAX_KEPT_BODY: Final = 65536
"""Bytes of a response body kept for inspection (the rest is read and dropped)."""

ACCEPT_BOTH: Final = "application/json, text/event-stream"

# --- messages and their damage (pure) -------------------------------------------------------


def message(kind: str, rid: int | str = 1) -> bytes:
    """One valid message in the key order JSON-RPC libraries write (``jsonrpc``, ``id``,
    ``method``, ``params``), compact UTF-8.

    Args:
        kind: ``"initialize"``, ``"tools/call"`` (``echo`` with ``{"text": "hi"}``),
            ``"ping"``, ``"initialized"`` (the notification) or ``"cancelled"``
            (``notifications/cancelled`` of request ``rid``).
        rid: the request id (for ``"cancelled"``: the id it cancels).

    Raises:
        KeyError: an unknown ``kind``.
    """
    params: dict[str, Any]
    if kind == "initialize":
        params = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "mcp-ref-fuzz", "version": "1"},
        }
        obj: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": kind, "params": params}
    elif kind == "tools/call":
        params = {"name": "echo", "arguments": {"text": "hi"}}
        obj = {"jsonrpc": "2.0", "id": rid, "method": kind, "params": params}
    elif kind == "ping":
        obj = {"jsonrpc": "2.0", "id": rid, "method": "ping"}
    elif kind == "initialized":
        obj = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    elif kind == "cancelled":
        params = {"requestId": rid, "reason": "fuzz"}
        obj = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}
    else:
        raise KeyError(kind)
    return json.dumps(obj, separators=(",", ":")).encode()


MESSAGE_KINDS: Final = ("initialize", "tools/call", "ping", "initialized", "cancelled")


def truncated(body: bytes, cut: int) -> bytes:
    """``body`` cut after ``cut`` bytes (0 < cut < len(body) gives a proper prefix)."""
    return body[:cut]


def with_bom(body: bytes) -> bytes:
    """``body`` behind a UTF-8 byte order mark (JSON text must not have one: RFC 8259
    section 8.1)."""
    return b"\xef\xbb\xbf" + body


def utf16(body: bytes, *, bom: bool = True, big_endian: bool = False) -> bytes:
    """``body`` (UTF-8) re-encoded as UTF-16 (MCP messages are UTF-8:
    2025-06-18/basic/transports#transports.1)."""
    codec = "utf-16" if bom else ("utf-16-be" if big_endian else "utf-16-le")
    return body.decode("utf-8").encode(codec)


def utf32(body: bytes, *, bom: bool = True, big_endian: bool = False) -> bytes:
    """``body`` (UTF-8) re-encoded as UTF-32."""
    codec = "utf-32" if bom else ("utf-32-be" if big_endian else "utf-32-le")
    return body.decode("utf-8").encode(codec)


TRAILERS: Final = (b"x", b"}", b"{}", b"\x00", b" garbage", b',"x":1}', b"\n{}", b"[]")
"""Bytes :func:`trailing` appends by default (whitespace alone would be valid JSON)."""


def trailing(body: bytes, extra: bytes = b"x") -> bytes:
    """``body`` followed by ``extra`` (a second value, a stray brace, a NUL...)."""
    return body + extra


def bad_utf8(body: bytes, pos: int, junk: bytes = b"\xff") -> bytes:
    """``body`` with ``junk`` (bytes that are never valid UTF-8 by default) spliced in at
    ``pos`` (clamped to the body)."""
    pos = max(0, min(pos, len(body)))
    return body[:pos] + junk + body[pos:]


def duplicate_id(body: bytes, other: int | str) -> bytes:
    """``body`` (a JSON object) with a second ``"id"`` key, ``other``, as its last member.

    A JSON parser that keeps the last duplicate (Python's, JavaScript's) reads ``other``;
    one that reads the first key it meets reads the original id.
    """
    assert body.endswith(b"}")
    return body[:-1] + b',"id":' + json.dumps(other).encode() + b"}"


def deep_arguments(rid: int | str, depth: int) -> bytes:
    """A ``tools/call`` of ``echo`` whose arguments hold an array nested ``depth`` deep."""
    head = json.dumps(
        {"jsonrpc": "2.0", "id": rid, "method": "tools/call"}, separators=(",", ":")
    ).encode()[:-1]
    nest = b"[" * depth + b"]" * depth
    return head + b',"params":{"name":"echo","arguments":{"text":"hi","deep":' + nest + b"}}}"


def deep_cancelled(depth: int, rid: int | str = 1) -> bytes:
    """A ``notifications/cancelled`` whose params hold an array nested ``depth`` deep."""
    nest = b"[" * depth + b"]" * depth
    return (
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":'
        + json.dumps(rid).encode()
        + b',"reason":'
        + nest
        + b"}}"
    )


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.randrange(8 if depth < 3 else 5)
    if pick == 0:
        return None
    if pick == 1:
        return rng.choice([True, False])
    if pick == 2:
        return rng.randint(-(2**40), 2**40)
    if pick == 3:
        return rng.choice(["", "x", "2.0", "initialize", "tools/call", "\u00e9\U0001f600"])
    if pick == 4:
        return rng.random()
    if pick == 5:
        return [_random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["jsonrpc", "id", "method", "params", "result", "error", "x"]
    return {rng.choice(keys): _random_json(rng, depth + 1) for _ in range(rng.randrange(5))}


def body_cases(rng: random.Random, next_id: Callable[[], int]) -> Iterator[tuple[str, bytes]]:
    """Endless ``(family, body)`` pairs of damaged messages, the families in turn.

    Each request gets a fresh id from ``next_id`` (so no two are in flight with one id).
    """

    def base() -> bytes:
        return message(rng.choice(MESSAGE_KINDS), next_id())

    def cut() -> bytes:
        body = base()
        return truncated(body, rng.randrange(1, len(body)))

    def late_bad_utf8() -> bytes:
        body = base()
        return bad_utf8(body, rng.randrange(len(body) // 2, len(body)))

    families: list[Callable[[], bytes]] = [cut, cut, cut]  # the largest family: more turns
    names = ["truncated", "truncated", "truncated"]
    extra: list[tuple[str, Callable[[], bytes]]] = [
        ("bom", lambda: with_bom(base())),
        ("utf-16", lambda: utf16(base(), bom=rng.random() < 0.5)),
        ("utf-32", lambda: utf32(base(), bom=rng.random() < 0.5)),
        ("trailing", lambda: trailing(base(), rng.choice(TRAILERS))),
        ("bad-utf8", late_bad_utf8),
        ("duplicate-id", lambda: duplicate_id(message("tools/call", next_id()), next_id())),
        ("deep-1000", lambda: deep_arguments(next_id(), 1000)),
        ("deep-cancelled-100000", lambda: deep_cancelled(100_000)),
        ("random-bytes", lambda: rng.randbytes(rng.randrange(0, 64))),
        ("random-json", lambda: json.dumps(_random_json(rng)).encode()),
    ]
    for name, make in extra:
        names.append(name)
        families.append(make)
    while True:
        for name, make in zip(names, families, strict=True):
            yield name, make()


# --- the raw client --------------------------------------------------------------------------


class Outcome:
    """What one exchange got.

    Attributes:
        status: the final HTTP status, or ``"closed"`` (the server closed the connection
            without a complete response), ``"timeout"`` (nothing complete in time) or
            ``"connect-failed"``.
        headers: the response's headers (lowercase names) when one came.
        body: the first ``MAX_KEPT_BODY`` bytes of its body.
        complete: True when the whole response was read (EndOfMessage).
    """

    __slots__ = ("body", "complete", "headers", "status")

    def __init__(self) -> None:
        self.status: int | str = "timeout"
        self.headers: dict[str, str] = {}
        self.body = b""
        self.complete = False

    def messages(self) -> list[Any]:
        """The JSON-RPC messages of the body: one JSON value, or the data of each SSE
        event (events without data skipped; unparsable data as the raw str)."""
        ctype = self.headers.get("content-type", "")
        if ctype.startswith("application/json"):
            try:
                return [json.loads(self.body)]
            except ValueError:
                return [self.body.decode("utf-8", "replace")]
        out: list[Any] = []
        text = self.body.decode("utf-8", "replace").replace("\r\n", "\n")
        for block in text.split("\n\n"):
            data = [ln[5:].removeprefix(" ") for ln in block.split("\n") if ln.startswith("data:")]
            if data and any(data):
                raw = "\n".join(data)
                try:
                    out.append(json.loads(raw))
                except ValueError:
                    out.append(raw)
        return out


def _request_head(
    method: str, host: str, target: str, headers: dict[str, str], length: int | None
) -> tuple[h11.Connection, bytes]:
    conn = h11.Connection(h11.CLIENT)
    items = [("host", host), *headers.items()]
    if length is not None:
        items.append(("content-length", str(length)))
    return conn, conn.send(h11.Request(method=method, target=target, headers=items))


async def exchange(
    host: str,
    port: int,
    target: str,
    *,
    method: str = "POST",
    headers: dict[str, str] | None = None,
    body: bytes = b"",
    pace: str = "whole",
    timeout: float = DEFAULT_TIMEOUT,
    local_address: str | None = None,
) -> Outcome:
    """One request on a fresh connection, and its whole response.

    Args:
        host, port: where the server listens; ``target`` the path (and query).
        headers: request headers besides ``Host`` and ``Content-Length``.
        body: the request body.
        pace: ``"whole"`` (one write), ``"bytewise"`` (one byte per write, 1 ms apart),
            ``"pause"`` (half the body, 0.5 s of silence, the rest) or ``"eof"`` (half
            the body, then end our side of the connection).
        timeout: seconds for the whole exchange.
        local_address: the address to connect from (e.g. ``"127.0.0.2"``), else any.

    Returns:
        An :class:`Outcome`; never raises for what the server does.
    """
    out = Outcome()
    with trio.move_on_after(timeout):
        try:
            stream = await trio.open_tcp_stream(host, port, local_address=local_address)
        except OSError:
            out.status = "connect-failed"
            return out
        async with stream:
            conn, head = _request_head(
                method,
                f"{host}:{port}",
                target,
                headers or {},
                len(body) if method != "GET" else None,
            )
            try:
                await _send(stream, conn, head, body, pace)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # the server may have answered and closed already: read on
            await _read_response(stream, conn, out)
    return out


async def _send(
    stream: trio.SocketStream, conn: h11.Connection, head: bytes, body: bytes, pace: str
) -> None:
    if pace == "whole":
        data = head + (conn.send(h11.Data(data=body)) or b"" if body else b"")
        await stream.send_all(data + (conn.send(h11.EndOfMessage()) or b""))
        return
    await stream.send_all(head)
    half = len(body) // 2
    if pace == "bytewise":
        for i in range(len(body)):
            await stream.send_all(conn.send(h11.Data(data=body[i : i + 1])) or b"")
            await trio.sleep(0.001)  # the client's own pace, not a wait for the server
    elif pace in ("pause", "eof"):
        if half:
            await stream.send_all(conn.send(h11.Data(data=body[:half])) or b"")
        if pace == "eof":
            await stream.send_eof()
            return
        await trio.sleep(0.5)  # a client that pauses mid-body, then goes on
        await stream.send_all(conn.send(h11.Data(data=body[half:])) or b"")
    else:
        raise ValueError(f"unknown pace {pace!r}")
    await stream.send_all(conn.send(h11.EndOfMessage()) or b"")


async def _read_response(stream: trio.SocketStream, conn: h11.Connection, out: Outcome) -> None:
    kept = bytearray()
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError:
            out.status = "closed"  # garbage from the server: nothing more to read
            return
        if event is h11.NEED_DATA:
            try:
                data = await stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            conn.receive_data(data)
            continue
        if isinstance(event, h11.InformationalResponse):
            continue
        if isinstance(event, h11.Response):
            out.status = event.status_code
            out.headers = {
                bytes(k).decode("latin-1").lower(): bytes(v).decode("latin-1")
                for k, v in event.headers
            }
        elif isinstance(event, h11.Data):
            if len(kept) < MAX_KEPT_BODY:
                kept += event.data[: MAX_KEPT_BODY - len(kept)]
        elif isinstance(event, h11.EndOfMessage):
            out.body = bytes(kept)
            out.complete = True
            return
        elif isinstance(event, h11.ConnectionClosed):
            if not isinstance(out.status, int) or not out.complete:
                out.status = "closed"
            out.body = bytes(kept)
            return


# --- the fuzz run ----------------------------------------------------------------------------


def is_loopback_url(url: str) -> bool:
    """True when ``url``'s host is ``localhost`` or a loopback address."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _Family:
    def __init__(self) -> None:
        self.sent = 0
        self.answered = 0
        self.statuses: Counter[str] = Counter()
        self.unanswered: list[str] = []  # short descriptions of the first few


async def _open_session(
    host: str, port: int, path: str, timeout: float, families: dict[str, _Family]
) -> str | None:
    """Initialize a session; its id (None for a stateless server, or when the server
    refused or did not answer: the family ``setup: initialize`` says which)."""
    fam = families.setdefault("setup: initialize", _Family())
    fam.sent += 1
    got = await exchange(
        host,
        port,
        path,
        headers={"accept": ACCEPT_BOTH, "content-type": "application/json"},
        body=message("initialize", "fuzz-init"),
        timeout=timeout,
    )
    fam.statuses[str(got.status)] += 1
    if isinstance(got.status, int) and got.complete:
        fam.answered += 1
    else:
        fam.unanswered.append(f"{got.status}: a valid initialize")
    sid = got.headers.get("mcp-session-id")
    if got.status != 200:
        return None
    headers = {
        "accept": ACCEPT_BOTH,
        "content-type": "application/json",
        "mcp-protocol-version": PROTOCOL_VERSION,
    }
    if sid:
        headers["mcp-session-id"] = sid
    await exchange(host, port, path, headers=headers, body=message("initialized"), timeout=timeout)
    return sid


async def _run_cases(
    url: str, *, count: int, seconds: float, timeout: float, seed: int
) -> dict[str, _Family]:
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    port = parts.port or 80
    path = parts.path or "/"
    rng = random.Random(seed)
    counter = iter(range(1, 1 << 62))
    families: dict[str, _Family] = {}
    to_delete: list[str] = []
    sid = await _open_session(host, port, path, timeout, families)
    base = {"accept": ACCEPT_BOTH, "content-type": "application/json"}
    in_session = {**base, "mcp-protocol-version": PROTOCOL_VERSION}
    if sid:
        in_session["mcp-session-id"] = sid

    def cases() -> Iterator[tuple[str, dict[str, str], bytes, str, bool]]:
        """(family, headers, body, pace, whether a close counts as an answer)."""
        bodies = body_cases(rng, lambda: next(counter))

        def valid() -> bytes:
            return message("tools/call", next(counter))

        header_cases: list[tuple[str, dict[str, str]]] = [
            ("headers: no accept", {"content-type": "application/json"}),
            ("headers: accept text/html", {**in_session, "accept": "text/html"}),
            ("headers: accept */*", {**in_session, "accept": "*/*"}),
            ("headers: no content-type", {"accept": ACCEPT_BOTH}),
            ("headers: content-type text/plain", {**in_session, "content-type": "text/plain"}),
            (
                "headers: content-type utf-16",
                {**in_session, "content-type": "application/json; charset=utf-16"},
            ),
            ("headers: huge header", {**in_session, "x-fuzz": "a" * 65536}),
            ("headers: many headers", {**in_session, **{f"x-f{i}": "v" for i in range(500)}}),
            ("headers: odd session id", {**in_session, "mcp-session-id": "\x7f" * 8}),
            ("headers: odd version", {**in_session, "mcp-protocol-version": "1999-01-01"}),
        ]
        turn = 0
        while True:
            turn += 1
            name, body = next(bodies)
            yield "body (new session): " + name, base, body, "whole", False
            name, body = next(bodies)
            yield "body (in session): " + name, in_session, body, "whole", False
            if turn % 4 == 0:
                name, hdrs = header_cases[(turn // 4) % len(header_cases)]
                yield name, hdrs, valid(), "whole", name.endswith("huge header")
            if turn % 8 == 0:
                pace = ("bytewise", "pause", "eof")[(turn // 8) % 3]
                yield f"slow: {pace}", in_session, valid(), pace, pace == "eof"

    limiter = trio.CapacityLimiter(CONCURRENCY)
    deadline = trio.current_time() + seconds

    async def one(
        family: str, hdrs: dict[str, str], body: bytes, pace: str, close_ok: bool
    ) -> None:
        async with limiter:
            got = await exchange(
                host, port, path, headers=hdrs, body=body, pace=pace, timeout=timeout
            )
        fam = families.setdefault(family, _Family())
        fam.statuses[str(got.status)] += 1
        if (isinstance(got.status, int) and got.complete) or (close_ok and got.status == "closed"):
            fam.answered += 1
        elif len(fam.unanswered) < 5:
            fam.unanswered.append(f"{got.status}: {body[:80]!r}")
        new_sid = got.headers.get("mcp-session-id")
        if new_sid and new_sid != sid:
            to_delete.append(new_sid)

    async with trio.open_nursery() as nursery:
        for n, (family, hdrs, body, pace, close_ok) in enumerate(cases()):
            if n >= count or trio.current_time() >= deadline:
                break
            families.setdefault(family, _Family()).sent += 1
            await limiter.acquire_on_behalf_of(n)  # at most CONCURRENCY in flight
            limiter.release_on_behalf_of(n)
            nursery.start_soon(one, family, hdrs, body, pace, close_ok)
    for session in [*to_delete, *([sid] if sid else [])]:
        with trio.move_on_after(timeout):
            await exchange(
                host,
                port,
                path,
                method="DELETE",
                headers={"mcp-session-id": session, "mcp-protocol-version": PROTOCOL_VERSION},
                timeout=timeout,
            )
    return families


def fuzz_http(
    url: str,
    *,
    count: int = DEFAULT_COUNT,
    seconds: float = DEFAULT_SECONDS,
    timeout: float = DEFAULT_TIMEOUT,
    allow_remote: bool = False,
    seed: int = 0,
) -> list[Row]:
    """Fuzz the Streamable HTTP endpoint at ``url``; one :class:`Row` per family
    (section ``"fuzz"``; metrics ``sent``, ``answered``, ``unanswered``; the status
    counts in ``detail``).

    Args:
        url: the MCP endpoint, e.g. ``http://127.0.0.1:8000/mcp``.
        count: cases sent at most.
        seconds: wall time after which no new case starts.
        timeout: seconds each case has to be answered.
        allow_remote: fuzz a non-loopback host too.
        seed: the random generator's seed (a run is repeatable).

    Raises:
        ValueError: a non-loopback URL without ``allow_remote``, or not ``http://``.
    """
    if urlsplit(url).scheme != "http":
        raise ValueError(f"only http:// URLs can be fuzzed, not {url!r}")
    if not allow_remote and not is_loopback_url(url):
        raise ValueError(f"{url} is not a loopback address: pass --allow-remote to fuzz it")
    families = trio.run(
        lambda: _run_cases(url, count=count, seconds=seconds, timeout=timeout, seed=seed)
    )
    rows = []
    for name in sorted(families):
        fam = families[name]
        rows.append(
            Row(
                "fuzz",
                name,
                {
                    "sent": fam.sent,
                    "answered": fam.answered,
                    "unanswered": fam.sent - fam.answered,
                },
                detail={"statuses": dict(fam.statuses), "unanswered_examples": fam.unanswered},
            )
        )
    return rows


def render(rows: list[Row]) -> str:
    """The fuzz rows as a text table (family, sent, answered, unanswered, statuses)."""
    lines = [f"{'family':<48} {'sent':>6} {'answered':>9} {'unanswered':>11}  statuses"]
    for row in rows:
        m = row.metrics
        statuses = ", ".join(f"{k}: {v}" for k, v in sorted(row.detail["statuses"].items()))
        lines.append(
            f"{row.name:<48} {m['sent']:>6.0f} {m['answered']:>9.0f} {m['unanswered']:>11.0f}  "
            + statuses
        )
        for example in row.detail["unanswered_examples"]:
            lines.append(f"    unanswered: {example}")
    total = sum(int(r.metrics["unanswered"] or 0) for r in rows)
    sent = sum(int(r.metrics["sent"] or 0) for r in rows)
    lines.append(f"{sent} sent, {total} unanswered")
    return "\n".join(lines)


# --- the load row: many concurrent sessions ---------------------------------------------------


class _Barrier:
    """Every session waits here once called, until the server's RSS has been read."""

    def __init__(self, n: int) -> None:
        self.remaining = n
        self.all_called = trio.Event()
        self.sampled = trio.Event()

    async def arrive(self) -> None:
        self.remaining -= 1
        if self.remaining == 0:
            self.all_called.set()
        await self.sampled.wait()


async def _session_life(
    host: str,
    port: int,
    path: str,
    index: int,
    barrier: _Barrier,
    errors: list[str],
    timeout: float,
) -> None:
    """One session: initialize, initialized, one tools/call; wait for all; DELETE."""
    sid: str | None = None
    me = f"127.0.0.{1 + index // SESSIONS_PER_ADDRESS}"
    try:
        with trio.fail_after(timeout):
            init = await exchange(
                host,
                port,
                path,
                headers={"accept": ACCEPT_BOTH, "content-type": "application/json"},
                body=message("initialize", 1),
                timeout=timeout,
                local_address=me,
            )
            sid = init.headers.get("mcp-session-id")
            if init.status != 200 or not sid or not init.complete:
                raise RuntimeError(f"initialize: {init.status}")
            hdrs = {
                "accept": ACCEPT_BOTH,
                "content-type": "application/json",
                "mcp-session-id": sid,
                "mcp-protocol-version": PROTOCOL_VERSION,
            }
            note = await exchange(
                host,
                port,
                path,
                headers=hdrs,
                body=message("initialized"),
                timeout=timeout,
                local_address=me,
            )
            if note.status != 202:
                raise RuntimeError(f"initialized: {note.status}")
            call = await exchange(
                host,
                port,
                path,
                headers=hdrs,
                body=message("tools/call", 2),
                timeout=timeout,
                local_address=me,
            )
            answers = [m for m in call.messages() if isinstance(m, dict) and m.get("id") == 2]
            if call.status != 200 or len(answers) != 1 or "result" not in answers[0]:
                raise RuntimeError(f"tools/call: {call.status} {call.body[:100]!r}")
    except Exception as exc:  # one session's failure is counted, not raised
        errors.append(f"session {index}: {exc!r}")
    await barrier.arrive()
    if sid is None:
        return
    gone = await exchange(
        host,
        port,
        path,
        method="DELETE",
        headers={"mcp-session-id": sid, "mcp-protocol-version": PROTOCOL_VERSION},
        timeout=timeout,
        local_address=me,
    )
    if gone.status != 200:
        errors.append(f"session {index}: DELETE got {gone.status}")


def sessions_row(n: int, *, timeout: float = 60.0, log: Callable[[str], None] | None = None) -> Row:
    """The load row: ``n`` concurrent sessions against ``mcp-ref serve --http`` on
    loopback (section ``"leak"``; metrics ``sessions``, ``errors``, ``seconds``,
    ``rss_start_mb``, ``rss_end_mb`` (with every session live) and
    ``growth_kb_per_session``).  ``n`` must not exceed the server's ``max_sessions``
    (1000 by default); the sessions connect from ``SESSIONS_PER_ADDRESS`` per loopback
    address (127.0.0.1, 127.0.0.2, ...), as that many clients would.

    A row that cannot run carries a ``failed: ...`` note instead of numbers.
    """
    from ._measure import proc_rss
    from .compare import RUN_ERRORS, _env, _http_server
    from .loadgen import free_port

    name = f"HTTP SSE: {n} concurrent sessions (initialize, tools/call, DELETE)"
    port = free_port()
    argv = [sys.executable, "-m", "mcp_ref", "serve", "--http", f"127.0.0.1:{port}"]
    if log:
        log(f"  {n} concurrent HTTP sessions against mcp-ref serve --http")
    try:
        with _http_server(argv, port, env=_env()) as pid:
            before = proc_rss(pid)[0]
            errors: list[str] = []
            live: list[int | None] = [None]

            async def run() -> float:
                barrier = _Barrier(n)
                t0 = time.perf_counter()
                async with trio.open_nursery() as nursery:
                    for i in range(n):
                        nursery.start_soon(
                            _session_life, "127.0.0.1", port, "/mcp", i, barrier, errors, timeout
                        )
                    await barrier.all_called.wait()
                    live[0] = proc_rss(pid)[0]
                    barrier.sampled.set()
                return time.perf_counter() - t0

            seconds = trio.run(run)
            after = proc_rss(pid)[0]
    except RUN_ERRORS as exc:
        return Row("leak", name, note=f"failed: {exc}")
    peak = live[0]
    metrics: dict[str, float | None] = {
        "sessions": n,
        "errors": len(errors),
        "seconds": seconds,
        "rss_start_mb": before / 2**20 if before else None,
        "rss_end_mb": peak / 2**20 if peak else None,
        "growth_kb_per_session": (peak - before) / 1024 / n if peak and before else None,
    }
    note = f"{len(errors)} errors, {seconds:.1f} s; RSS end = all sessions live"
    return Row(
        "leak",
        name,
        metrics,
        note=note,
        detail={"errors": errors[:20], "rss_after_delete_mb": after / 2**20 if after else None},
    )

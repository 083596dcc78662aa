"""The floors: the least any trio (+ h11) MCP implementation must do per round trip.

Theory of operation
-------------------
Issue 6 sets its end-to-end targets as ratios to the official Python SDK.  Whether a
target is reachable at all depends on what trio, h11 and ``json`` cost by themselves,
so the bench measures, in the same run, stand-ins that do nothing *but* that:

* **in-process** (:func:`open_inproc_floor`): two trio tasks over trio memory channels
  (capacity 1024, as :func:`mcp_ref.trio.memory_channel_pair`) carrying the JSON-RPC
  bytes.  The client ``json.dumps`` a ``tools/call``, sends it; the server task
  receives, ``json.loads``, looks the method up in a dict, ``json.dumps`` the result,
  sends it; the client receives, ``json.loads``, matches the id.  With one call in
  flight the caller reads its answer itself; with more, a reader task matches ids to
  waiting callers and wakes each with a :class:`trio.Event`, as a real client must.
* **stdio** (``python -m bench.floor stdio``): :class:`trio.lowlevel.FdStream` on stdin
  and stdout, newline framing in one bounded buffer, the same ``answer``; every
  complete line of one read is answered, the answers leave in one write.  It answers
  ``initialize``, ignores notifications, echoes ``tools/call``.
* **Streamable HTTP** (``python -m bench.floor http PORT json|sse``): one trio task per
  connection, h11 parsing every request and framing every response (as issue 4 requires
  of our server), the same ``answer``.  ``initialize`` opens a session (an
  ``Mcp-Session-Id`` header); later requests must carry a known one (a set lookup);
  notifications get 202; requests get 200 with a JSON body, or in SSE mode a
  ``text/event-stream`` carrying one event with the response, then the stream ends.
  The head, the body and the end go out in one write.

None of them validates a message beyond what it reads, keeps request state, runs a
handler in a task of its own, or has a lifecycle: whatever a real implementation adds
comes on top, so a floor's requests per second are a ceiling for any implementation
built on the same pieces, and *floor/theirs* the best ratio such an implementation
could show.  The stdio and HTTP floors are driven by :mod:`bench.loadgen` exactly like
our and the SDKs' servers; the in-process floor by :func:`bench.load.run_load` like our
in-process pair.  :func:`measure_floors` runs them all.
"""

from __future__ import annotations

import contextlib
import functools
import json
import secrets
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import h11
import trio

from .load import Target

__all__ = ["FLOORS", "answer", "main", "measure_floors", "open_inproc_floor"]

ROOT = Path(__file__).resolve().parent.parent
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""Bound of a stdio line and of an HTTP request body, in bytes."""

FLOORS: dict[str, str] = {
    "inproc": "trio memory channels + json",
    "stdio": "trio stdio + json",
    "http-json": "trio + h11 + json, HTTP JSON",
    "http-sse": "trio + h11 + json, HTTP SSE",
}
"""Floor key -> the label its rows carry (``floor: <label> x<in flight>``)."""

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_loads = json.loads

_INIT_RESULT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "mcp-ref-bench-floor", "version": "1"},
}


def _initialize(params: Any) -> Any:
    return _INIT_RESULT


def _echo(params: Any) -> Any:
    return {"content": [{"type": "text", "text": params["arguments"]["text"]}]}


_HANDLERS: dict[str, Callable[[Any], Any]] = {"initialize": _initialize, "tools/call": _echo}


def answer(message: Any) -> bytes | None:
    """The response bytes (no newline) to one parsed message; None when none is due.

    A request (an object with ``id`` and ``method``) gets its result, or -32601 for a
    method other than ``initialize`` and ``tools/call``; notifications, responses and
    anything that is not an object get nothing.
    """
    if type(message) is not dict or "id" not in message or "method" not in message:
        return None
    handler = _HANDLERS.get(message["method"])
    if handler is None:
        error = {"code": -32601, "message": f"method not found: {message['method']}"}
        return _dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}).encode()
    result = handler(message.get("params"))
    return _dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()


def _answer_bytes(data: bytes) -> bytes | None:
    """:func:`answer` to raw bytes; a parse error gets -32700 with id null."""
    try:
        message = _loads(data)
    except ValueError:
        error = {"code": -32700, "message": "parse error"}
        return _dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
    return answer(message)


# --- in-process --------------------------------------------------------------------------


def _request(rid: int, method: str, params: Any) -> bytes:
    return _dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()


async def _serve_channel(
    receive: trio.MemoryReceiveChannel[bytes], send: trio.MemorySendChannel[bytes]
) -> None:
    async for data in receive:
        out = _answer_bytes(data)
        if out is not None:
            await send.send(out)


@contextlib.asynccontextmanager
async def open_inproc_floor(*, reader: bool) -> AsyncIterator[Target]:
    """A floor client and server task over trio memory channels, initialized.

    Args:
        reader: False: each caller reads its own answer (only correct with one call in
            flight); True: a reader task hands each answer to its waiting caller.

    Yields a :class:`~bench.load.Target` whose ``call(text)`` is one echo round trip.
    """
    to_server, server_in = trio.open_memory_channel[bytes](1024)
    server_out, from_server = trio.open_memory_channel[bytes](1024)
    send, receive = to_server.send, from_server.receive
    next_id = 0

    async def call_direct(text: str) -> str:
        nonlocal next_id
        rid = next_id = next_id + 1
        await send(_request(rid, "tools/call", {"name": "echo", "arguments": {"text": text}}))
        while True:
            message = _loads(await receive())
            if message.get("id") == rid:
                out: str = message["result"]["content"][0]["text"]
                return out

    waiting: dict[int, list[Any]] = {}

    async def read_answers() -> None:
        async for data in from_server:
            message = _loads(data)
            slot = waiting.pop(message.get("id"), None)
            if slot is not None:
                slot[1] = message
                slot[0].set()

    async def call_via_reader(text: str) -> str:
        nonlocal next_id
        rid = next_id = next_id + 1
        slot: list[Any] = [trio.Event(), None]
        waiting[rid] = slot
        await send(_request(rid, "tools/call", {"name": "echo", "arguments": {"text": text}}))
        await slot[0].wait()
        out: str = slot[1]["result"]["content"][0]["text"]
        return out

    async with trio.open_nursery() as nursery:
        nursery.start_soon(_serve_channel, server_in, server_out)
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": _INIT_RESULT}
        await send(_request(0, "initialize", init))
        await receive()
        await send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        if reader:
            nursery.start_soon(read_answers)
        yield Target(call_via_reader if reader else call_direct, None, "floor, in process")
        nursery.cancel_scope.cancel()


async def _inproc_rows(requests: int, levels: list[int], warmup: int) -> dict[int, Any]:
    from .load import run_load

    out = {}
    for c in levels:
        async with open_inproc_floor(reader=c > 1) as target:
            out[c] = await run_load(
                target, requests=requests, concurrency=c, warmup=warmup, in_process=True
            )
    return out


# --- stdio -------------------------------------------------------------------------------


async def serve_stdio() -> None:
    """Answer newline-delimited JSON-RPC on stdin/stdout until end of input.

    Spec: 2025-06-18/basic/transports#stdio (newline-delimited messages).

    Raises:
        ValueError: a line longer than :data:`MAX_MESSAGE_BYTES`.
    """
    stdin = trio.lowlevel.FdStream(0)
    stdout = trio.lowlevel.FdStream(1)
    buf = bytearray()
    searched = 0  # the bytes of buf already known to hold no newline
    while True:
        data = await stdin.receive_some(1 << 16)
        if not data:
            return
        buf += data
        end = buf.rfind(b"\n", searched)
        if end < 0:
            searched = len(buf)
            if searched > MAX_MESSAGE_BYTES:
                raise ValueError("a line over the size bound")
            continue
        lines = bytes(buf[:end]).split(b"\n")
        del buf[: end + 1]
        searched = 0
        out = [r for line in lines if line.strip() and (r := _answer_bytes(line)) is not None]
        if out:
            out.append(b"")
            await stdout.send_all(b"\n".join(out))


# --- Streamable HTTP ---------------------------------------------------------------------


def _reply(
    conn: h11.Connection, status: int, headers: list[tuple[bytes, bytes]], body: bytes
) -> bytes:
    """The bytes of one whole response (h11 frames it: Content-Length or chunked)."""
    out = conn.send(h11.Response(status_code=status, headers=headers))
    assert out is not None
    if body:
        out += conn.send(h11.Data(data=body)) or b""
    return out + (conn.send(h11.EndOfMessage()) or b"")


_EMPTY = [(b"content-length", b"0")]


def _respond(
    conn: h11.Connection, request: h11.Request, body: bytes, sse: bool, sessions: set[bytes]
) -> bytes:
    """One request's response bytes.

    Spec: 2025-06-18/basic/transports#streamable-http (POST answered by a JSON body or an
    SSE stream; Mcp-Session-Id from the initialize response on every later request).
    """
    session = None
    for name, value in request.headers:
        if name == b"mcp-session-id":
            session = value
            break
    if request.method == b"DELETE":
        sessions.discard(session or b"")
        return _reply(conn, 200, _EMPTY, b"")
    if request.method != b"POST":
        return _reply(conn, 405, [(b"allow", b"POST, DELETE"), *_EMPTY], b"")
    try:
        message = _loads(body)
    except ValueError:
        message = None
    headers = []
    if type(message) is dict and message.get("method") == "initialize":
        session = secrets.token_hex(16).encode()
        sessions.add(session)
        headers.append((b"mcp-session-id", session))
    elif session not in sessions:
        return _reply(conn, 404 if session else 400, _EMPTY, b"")
    out = answer(message) if message is not None else _answer_bytes(body)
    if out is None:
        return _reply(conn, 202, _EMPTY, b"")
    if sse:
        headers += [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
        return _reply(conn, 200, headers, b"event: message\ndata: " + out + b"\n\n")
    headers += [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(out))]
    return _reply(conn, 200, headers, out)


async def _http_connection(stream: trio.SocketStream, sse: bool, sessions: set[bytes]) -> None:
    """Serve one keep-alive connection: read a request with h11, answer, repeat."""
    conn = h11.Connection(h11.SERVER)
    try:
        while True:
            request = None
            body = bytearray()
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await stream.receive_some(1 << 16))
                elif type(event) is h11.Data:
                    body += event.data
                    if len(body) > MAX_MESSAGE_BYTES:
                        await stream.send_all(_reply(conn, 413, _EMPTY, b""))
                        return
                elif type(event) is h11.Request:
                    request = event
                elif type(event) is h11.EndOfMessage:
                    break
                elif type(event) is h11.ConnectionClosed:
                    return
            assert request is not None
            await stream.send_all(_respond(conn, request, bytes(body), sse, sessions))
            if conn.our_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()
    except h11.RemoteProtocolError:
        with contextlib.suppress(h11.LocalProtocolError, trio.BrokenResourceError):
            await stream.send_all(_reply(conn, 400, _EMPTY, b""))
    except trio.BrokenResourceError:
        pass
    finally:
        await stream.aclose()


async def serve_http(port: int, sse: bool) -> None:
    """Serve the HTTP floor on 127.0.0.1:``port`` (0: any); print the bound port."""
    sessions: set[bytes] = set()
    handler = functools.partial(_http_connection, sse=sse, sessions=sessions)
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, handler, port, host="127.0.0.1")
        )
        print(listeners[0].socket.getsockname()[1], flush=True)


# --- measuring ---------------------------------------------------------------------------


def measure_floors(
    *, requests: int, repeats: int, warmup: int, log: Callable[[str], None]
) -> dict[str, dict[int, dict[str, Any]] | str]:
    """Every floor at 1 and 100 in flight: key of :data:`FLOORS` -> ``{concurrency:
    metrics}`` (the median run of ``repeats``, metrics as :func:`bench.load.run_load`),
    or the reason it failed (``"failed: ..."``).

    The in-process floor runs in a child process (``python -m bench.floor inproc``) so
    its RSS is its own; the stdio and HTTP floors are server processes driven by
    :mod:`bench.loadgen`, exactly like the servers of section 4.
    """
    from .compare import (
        RUN_ERRORS,
        Measure,
        _env,
        _http_measure,
        _median_runs,
        _stdio_measure,
        child_json,
    )
    from .loadgen import free_port

    def inproc(n: int, levels: Any) -> dict[int, dict[str, Any]]:
        argv = [sys.executable, "-m", "bench.floor", "inproc", str(n)]
        argv += [",".join(map(str, levels)), str(warmup)]
        return child_json(argv, cwd=ROOT, why=_last_line)

    me = [sys.executable, "-m", "bench.floor"]
    measures: dict[str, Measure] = {
        "inproc": inproc,
        "stdio": _stdio_measure([*me, "stdio"], cwd=str(ROOT), env=_env()),
    }
    for mode in ("json", "sse"):
        port = free_port()
        measures[f"http-{mode}"] = _http_measure([*me, "http", str(port), mode], port, _env())
    out: dict[str, dict[int, dict[str, Any]] | str] = {}
    for key, measure in measures.items():
        log(f"  floor: {FLOORS[key]}")
        try:
            out[key] = _median_runs(measure, requests, (1, 100), repeats)
        except RUN_ERRORS as exc:
            out[key] = f"failed: {exc}"
    return out


def _last_line(stderr: str) -> str:
    return (stderr.strip().splitlines()[-1:] or ["no output"])[0]


def main(argv: list[str]) -> int:
    """``python -m bench.floor``:

    * ``stdio``: the stdio floor server;
    * ``http PORT json|sse``: the HTTP floor server (prints its bound port);
    * ``inproc REQUESTS C1,C2,... WARMUP``: the in-process floor's load, printed as
      ``{concurrency: metrics}`` JSON.

    Exit code 0, or 2 for bad arguments.
    """
    if argv[:1] == ["stdio"]:
        trio.run(serve_stdio)
        return 0
    if argv[:1] == ["http"] and len(argv) == 3 and argv[2] in ("json", "sse"):
        trio.run(serve_http, int(argv[1]), argv[2] == "sse")
        return 0
    if argv[:1] == ["inproc"] and len(argv) == 4:
        levels = [int(c) for c in argv[2].split(",")]
        print(json.dumps(trio.run(_inproc_rows, int(argv[1]), levels, int(argv[3]))))
        return 0
    print(
        "usage: python -m bench.floor stdio | http PORT json|sse | inproc N C1,C2 WARMUP",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

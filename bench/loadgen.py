"""A neutral load generator: plain JSON-RPC over stdio or Streamable HTTP, no framework.

Theory of operation
-------------------
To compare *servers* (ours, the official SDKs', a user's own) every server process is
driven by the same client, and that client must cost far less than the servers, or it
becomes the bottleneck and hides their differences (on a 2-core machine client and
server share the CPU).  So this client uses no event loop library and no MCP library:
one thread, ``selectors``, non-blocking pipes or sockets, JSON written by hand and read
with ``json.loads``.  It imports nothing of mcp-ref.

It does what any MCP client must: ``initialize``, ``notifications/initialized``, then
``tools/call`` of ``echo`` with a unique id, checking that each response answers its
request and echoes the text.  A server ping is answered; other server messages are
ignored.

* stdio (:class:`StdioTarget`): the server command runs as a subprocess.  With C in
  flight, C requests are written at once and each response that comes back triggers the
  next request, until N are answered.
* Streamable HTTP (:class:`HttpTarget`, 2025-06-18/basic/transports#streamable-http):
  C keep-alive HTTP/1.1 connections, one request at a time on each (HTTP/1.1 does not
  multiplex), each ``tools/call`` a POST answered by an ``application/json`` body or a
  ``text/event-stream`` (chunked or not) carrying the response as an SSE event.  The
  ``Mcp-Session-Id`` from ``initialize`` goes on every later request and the session is
  ended with DELETE.

Measured per run (:meth:`run`): wall time, latency of every request
(``perf_counter_ns`` from writing the request to reading its response), this process's
CPU, the server's CPU (``/proc/<pid>/stat``, when its pid is known) and its RSS.

Every buffer has a bound (``MAX_MESSAGE_BYTES``) and every wait a timeout, so a server
that misbehaves fails its row with :class:`TargetError` instead of hanging the bench.
"""

from __future__ import annotations

import gc
import json
import os
import selectors
import socket
import subprocess
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from ._measure import percentile, proc_cpu_ns, proc_rss

__all__ = ["PROTOCOL_VERSION", "HttpTarget", "StdioTarget", "TargetError", "free_port"]

PROTOCOL_VERSION = "2025-06-18"
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
IO_TIMEOUT_SECONDS = 30.0
"""No byte from the server for this long fails the run."""

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class TargetError(Exception):
    """The server under test misbehaved or could not be reached; the message says how."""


def _initialize(rid: int) -> bytes:
    return _dumps(
        {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "mcp-ref-bench", "version": "1"},
            },
        }
    ).encode()


_INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


def _call_template(text: str) -> tuple[bytes, bytes]:
    """The bytes of an echo ``tools/call`` around its id: ``head + id + tail``."""
    tail = _dumps({"method": "tools/call", "params": {"name": "echo", "arguments": {"text": text}}})
    return b'{"jsonrpc":"2.0","id":', b"," + tail[1:].encode()


def _check_echo(message: Any, text: str) -> None:
    if "error" in message:
        raise TargetError(f"error response: {str(message['error'])[:300]}")
    try:
        got = message["result"]["content"][0]["text"]
    except (KeyError, IndexError, TypeError):
        raise TargetError(f"not an echo result: {str(message)[:300]}") from None
    if got != text:
        raise TargetError("echo returned other text")


def _summary(
    latencies: list[int],
    wall_ns: int,
    cpu_ns: int,
    pid: int | None,
    server_cpu: int | None,
    rss: tuple[int | None, int | None],
    rss0: int | None,
) -> dict[str, Any]:
    done = len(latencies)
    ms = [v / 1e6 for v in latencies]
    cur, peak = rss
    return {
        "req_per_s": done * 1e9 / max(wall_ns, 1),
        "p50_ms": percentile(ms, 50),
        "p99_ms": percentile(ms, 99),
        "client_cpu_us": cpu_ns / 1e3 / max(done, 1),
        "server_cpu_us": server_cpu / 1e3 / max(done, 1) if server_cpu is not None else None,
        "peak_rss_mb": peak / 2**20 if peak else None,
        "rss_growth_kb": (cur - rss0) / 1024 if cur is not None and rss0 is not None else None,
        "requests": done,
    }


class _Clock:
    """Server CPU and RSS readings around a run (when the server's pid is known)."""

    def __init__(self, pid: int | None) -> None:
        self.pid = pid

    def start(self) -> None:
        gc.collect()
        self.rss0 = proc_rss(self.pid)[0] if self.pid else None
        self.server0 = proc_cpu_ns(self.pid) if self.pid else None
        self.w0, self.c0 = time.perf_counter_ns(), time.process_time_ns()

    def stop(self, latencies: list[int]) -> dict[str, Any]:
        c1, w1 = time.process_time_ns(), time.perf_counter_ns()
        server1 = proc_cpu_ns(self.pid) if self.pid else None
        server = (
            server1 - self.server0 if server1 is not None and self.server0 is not None else None
        )
        rss = proc_rss(self.pid) if self.pid else (None, None)
        return _summary(latencies, w1 - self.w0, c1 - self.c0, self.pid, server, rss, self.rss0)


# --- stdio ---------------------------------------------------------------------------------


class StdioTarget:
    """An MCP server command on stdio, started and initialized; use as a context manager.

    Args:
        command: argv of the server.
        env: extra environment variables.
        cwd: working directory of the server.

    Raises:
        TargetError: the server cannot start or does not answer ``initialize``.
    """

    def __init__(
        self, command: Sequence[str], *, env: dict[str, str] | None = None, cwd: str | None = None
    ) -> None:
        self.command = list(command)
        try:
            self.proc = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={**os.environ, **(env or {})},
                cwd=cwd,
                bufsize=0,
            )
        except OSError as exc:
            raise TargetError(f"cannot start {self.command[0]}: {exc}") from exc
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.pid: int | None = self.proc.pid
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        os.set_blocking(self._in, False)
        os.set_blocking(self._out, False)
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._out, selectors.EVENT_READ)
        self._buf = bytearray()
        self._next_id = 1
        try:
            self._write_all(_initialize(0) + b"\n")
            answer = self._read_until_id(0)
            if "result" not in answer:
                raise TargetError(f"initialize failed: {str(answer.get('error'))[:300]}")
            self._write_all(_INITIALIZED + b"\n")
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> StdioTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the server's stdin, wait 2 s, terminate, wait 2 s, kill."""
        self._sel.close()
        proc = self.proc
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        for step in (None, proc.terminate, proc.kill):
            if step is not None:
                step()
            try:
                proc.wait(timeout=2)
                return
            except subprocess.TimeoutExpired:
                continue

    # -- raw I/O --

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        deadline = time.monotonic() + IO_TIMEOUT_SECONDS
        while view:
            try:
                n = os.write(self._in, view)
            except BlockingIOError:
                n = 0
            except BrokenPipeError:
                raise TargetError("the server closed its stdin") from None
            view = view[n:]
            if view:
                self._pump(deadline)  # read while the pipe is full, so neither side blocks

    def _pump(self, deadline: float) -> None:
        """Wait for output (at most until ``deadline``) and append it to the buffer."""
        if not self._sel.select(timeout=max(0.0, min(0.05, deadline - time.monotonic()))):
            if time.monotonic() > deadline:
                raise TargetError(f"no output from the server for {IO_TIMEOUT_SECONDS:.0f} s")
            return
        try:
            chunk = os.read(self._out, 1 << 16)
        except BlockingIOError:
            return
        if not chunk:
            raise TargetError(f"the server exited (code {self.proc.poll()})")
        self._buf += chunk
        if len(self._buf) > MAX_MESSAGE_BYTES:
            raise TargetError("the server sent a line over 64 MiB")

    def _lines(self) -> list[bytes]:
        buf = self._buf
        end = buf.rfind(b"\n")
        if end < 0:
            return []
        lines = bytes(buf[:end]).split(b"\n")
        del buf[: end + 1]
        return lines

    def _handle(self, line: bytes) -> Any:
        """A response message, or None for anything else (answering server pings)."""
        if not line.strip():
            return None
        message = json.loads(line)
        if not isinstance(message, dict):
            return None
        if "method" in message:
            if message.get("method") == "ping" and "id" in message:
                reply = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
                self._write_all(_dumps(reply).encode() + b"\n")
            return None
        return message

    def _read_until_id(self, rid: int) -> Any:
        deadline = time.monotonic() + IO_TIMEOUT_SECONDS
        while True:
            for line in self._lines():
                message = self._handle(line)
                if message is not None and message.get("id") == rid:
                    return message
            self._pump(deadline)

    # -- the load --

    def call(self, text: str) -> str:
        """One echo call, 1 in flight; returns the echoed text."""
        head, tail = _call_template(text)
        rid = self._next_id
        self._next_id += 1
        self._write_all(head + str(rid).encode() + tail + b"\n")
        message = self._read_until_id(rid)
        _check_echo(message, text)
        return text

    def run(self, *, requests: int, concurrency: int, text: str = "hello") -> dict[str, Any]:
        """``requests`` echo calls with ``concurrency`` in flight; the metrics of
        :mod:`bench.load` (``req_per_s``, ``p50_ms``, ``p99_ms``, ``client_cpu_us``,
        ``server_cpu_us``, ``peak_rss_mb``, ``rss_growth_kb``, ``requests``)."""
        head, tail = _call_template(text)
        nl = b"\n"
        loads, clock = json.loads, time.perf_counter_ns
        sent_at: dict[int, int] = {}
        latencies: list[int] = []
        append = latencies.append
        first = self._next_id
        last = first + requests
        rid = first
        meter = _Clock(self.pid)
        meter.start()
        batch = []
        while rid < last and rid - first < concurrency:
            sent_at[rid] = clock()
            batch.append(head + str(rid).encode() + tail + nl)
            rid += 1
        self._write_all(b"".join(batch))
        deadline = time.monotonic() + IO_TIMEOUT_SECONDS
        buf = self._buf
        while len(latencies) < requests:
            end = buf.rfind(b"\n")
            if end < 0:
                self._pump(deadline)
                deadline = time.monotonic() + IO_TIMEOUT_SECONDS
                continue
            lines = bytes(buf[:end]).split(nl)
            del buf[: end + 1]
            out = []
            for line in lines:
                if not line:
                    continue
                message = loads(line)
                got = message.get("id") if type(message) is dict else None
                t0 = sent_at.pop(got, None) if "method" not in message else None
                if t0 is None:
                    self._handle(line)
                    continue
                append(clock() - t0)
                _check_echo(message, text)
                if rid < last:
                    sent_at[rid] = clock()
                    out.append(head + str(rid).encode() + tail + nl)
                    rid += 1
            if out:
                self._write_all(b"".join(out))
        self._next_id = rid
        return meter.stop(latencies)


# --- Streamable HTTP -------------------------------------------------------------------------


class _Response:
    """An incremental HTTP/1.1 response parser (Content-Length, chunked, or until close)."""

    __slots__ = ("body", "buf", "chunk_left", "done", "headers", "length", "mode", "status")

    def __init__(self) -> None:
        self.buf = bytearray()
        self.status = 0
        self.headers: dict[str, str] = {}
        self.body = bytearray()
        self.mode = ""  # "", "length", "chunked", "close"
        self.length = 0
        self.chunk_left = -1
        self.done = False

    def feed(self, data: bytes) -> None:
        """Add received bytes; sets ``done`` when the whole response is in."""
        self.buf += data
        if not self.mode:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buf) > 65536:
                    raise TargetError("HTTP response head over 64 KiB")
                return
            head = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
            del self.buf[: end + 4]
            self.status = int(head[0].split()[1])
            for line in head[1:]:
                name, _, value = line.partition(":")
                self.headers[name.strip().lower()] = value.strip()
            if "chunked" in self.headers.get("transfer-encoding", "").lower():
                self.mode = "chunked"
            elif "content-length" in self.headers:
                self.mode, self.length = "length", int(self.headers["content-length"])
            elif self.status in (202, 204, 304) or self.status < 200:
                self.mode, self.length = "length", 0
            else:
                self.mode = "close"
        if self.mode == "length":
            take = min(len(self.buf), self.length - len(self.body))
            self.body += self.buf[:take]
            del self.buf[:take]
            self.done = len(self.body) >= self.length
        elif self.mode == "chunked":
            self._chunks()
        else:
            self.body += self.buf
            self.buf.clear()
        if len(self.body) > MAX_MESSAGE_BYTES:
            raise TargetError("HTTP response body over 64 MiB")

    def _chunks(self) -> None:
        buf = self.buf
        while True:
            if self.chunk_left < 0:
                end = buf.find(b"\r\n")
                if end < 0:
                    return
                size = int(bytes(buf[:end]).split(b";")[0], 16)
                del buf[: end + 2]
                if size == 0:
                    self.chunk_left = -2  # trailers until an empty line
                else:
                    self.chunk_left = size
            if self.chunk_left == -2:
                end = buf.find(b"\r\n")
                if end < 0:
                    return
                line = bytes(buf[:end])
                del buf[: end + 2]
                if not line:
                    self.done = True
                    return
                continue
            take = min(len(buf), self.chunk_left)
            self.body += buf[:take]
            del buf[:take]
            self.chunk_left -= take
            if self.chunk_left:
                return
            if len(buf) < 2:
                self.chunk_left = 0
                return
            del buf[:2]  # the CRLF after the chunk
            self.chunk_left = -1

    def eof(self) -> None:
        """The server closed the connection."""
        if self.mode == "close":
            self.done = True
        elif not self.done:
            raise TargetError("the server closed the connection mid-response")

    def messages(self) -> list[Any]:
        """The JSON-RPC messages of the body (a JSON body, or SSE events' data)."""
        body = bytes(self.body)
        if self.headers.get("content-type", "").startswith("text/event-stream"):
            out = []
            for event in body.replace(b"\r\n", b"\n").split(b"\n\n"):
                data = [
                    line[5:].removeprefix(b" ")
                    for line in event.split(b"\n")
                    if line.startswith(b"data:")
                ]
                if data and any(data):
                    out.append(json.loads(b"\n".join(data)))
            return out
        if not body.strip():
            return []
        message = json.loads(body)
        return message if isinstance(message, list) else [message]


class _Conn:
    """One keep-alive connection with at most one request outstanding."""

    __slots__ = ("response", "rid", "sent_at", "sock", "text")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.response: _Response | None = None
        self.rid = 0
        self.sent_at = 0


class HttpTarget:
    """An MCP server at a Streamable HTTP URL, initialized; use as a context manager.

    Args:
        url: ``http://host:port/path`` (no TLS).
        pid: the server's pid when the caller started it (for its CPU and RSS).

    Raises:
        TargetError: unreachable, or ``initialize`` failed.
    """

    def __init__(self, url: str, *, pid: int | None = None) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise TargetError(f"only plain http:// URLs are supported, not {url!r}")
        self.url = url
        self.pid = pid
        self.host, self.port = parts.hostname, parts.port or 80
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._next_id = 1
        self._headers = ""
        conn = self._connect()
        try:
            answer = self._exchange(conn, _initialize(0), expect_id=0)
            if answer is None or "result" not in answer[1]:
                raise TargetError(f"initialize failed: {answer}")
            response, message = answer
            version = message["result"].get("protocolVersion", PROTOCOL_VERSION)
            self.session = response.headers.get("mcp-session-id")
            self._headers = f"MCP-Protocol-Version: {version}\r\n"
            if self.session:
                self._headers += f"Mcp-Session-Id: {self.session}\r\n"
            self._exchange(conn, _INITIALIZED, expect_id=None)
        finally:
            conn.close()

    def __enter__(self) -> HttpTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the session with DELETE (answer ignored)."""
        if not self.session:
            return
        try:
            sock = self._connect()
            head = (
                f"DELETE {self.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                f"{self._headers}Connection: close\r\n\r\n"
            )
            sock.sendall(head.encode())
            sock.recv(4096)
            sock.close()
        except OSError:
            pass
        self.session = None

    def _connect(self) -> socket.socket:
        try:
            sock = socket.create_connection((self.host, self.port), timeout=IO_TIMEOUT_SECONDS)
        except OSError as exc:
            raise TargetError(f"cannot reach {self.url}: {exc}") from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def _request_bytes(self, body: bytes) -> bytes:
        return (
            f"POST {self.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"{self._headers}Content-Length: {len(body)}\r\n\r\n"
        ).encode() + body

    def _exchange(
        self, sock: socket.socket, body: bytes, *, expect_id: int | None
    ) -> tuple[_Response, Any] | None:
        """Blocking POST; the response and the message answering ``expect_id``."""
        sock.sendall(self._request_bytes(body))
        response = _Response()
        while not response.done:
            chunk = sock.recv(1 << 16)
            if not chunk:
                response.eof()
                break
            response.feed(chunk)
        if expect_id is None:
            if response.status not in (200, 202):
                raise TargetError(f"notification: HTTP {response.status}")
            return None
        if response.status != 200:
            raise TargetError(f"HTTP {response.status}: {bytes(response.body)[:300]!r}")
        for message in response.messages():
            if isinstance(message, dict) and message.get("id") == expect_id:
                return response, message
        raise TargetError("the response carried no answer to the request")

    def call(self, text: str) -> str:
        """One echo call on a fresh connection; returns the echoed text."""
        sock = self._connect()
        try:
            rid = self._next_id
            self._next_id += 1
            head, tail = _call_template(text)
            answer = self._exchange(sock, head + str(rid).encode() + tail, expect_id=rid)
            assert answer is not None
            _check_echo(answer[1], text)
            return text
        finally:
            sock.close()

    def run(self, *, requests: int, concurrency: int, text: str = "hello") -> dict[str, Any]:
        """Like :meth:`StdioTarget.run`, with ``concurrency`` keep-alive connections."""
        head, tail = _call_template(text)
        sel = selectors.DefaultSelector()
        conns = []
        try:
            for _ in range(min(concurrency, requests)):
                sock = self._connect()
                sock.setblocking(False)
                conn = _Conn(sock)
                conns.append(conn)
                sel.register(sock, selectors.EVENT_READ, conn)
            latencies: list[int] = []
            clock = time.perf_counter_ns
            rid = self._next_id
            last = rid + requests
            meter = _Clock(self.pid)
            meter.start()

            def send(conn: _Conn) -> None:
                nonlocal rid
                conn.rid, conn.response = rid, _Response()
                data = self._request_bytes(head + str(rid).encode() + tail)
                rid += 1
                conn.sent_at = clock()
                conn.sock.setblocking(True)  # small requests: sendall returns at once
                conn.sock.sendall(data)
                conn.sock.setblocking(False)

            for conn in conns:
                send(conn)
            while len(latencies) < requests:
                events = sel.select(timeout=IO_TIMEOUT_SECONDS)
                if not events:
                    raise TargetError(f"no answer for {IO_TIMEOUT_SECONDS:.0f} s")
                for key, _ in events:
                    conn = key.data
                    try:
                        chunk = conn.sock.recv(1 << 16)
                    except BlockingIOError:
                        continue
                    response = conn.response
                    if response is None:
                        raise TargetError("data on an idle connection")
                    if chunk:
                        response.feed(chunk)
                    else:
                        response.eof()
                    if not response.done:
                        continue
                    latencies.append(clock() - conn.sent_at)
                    if response.status != 200:
                        raise TargetError(f"HTTP {response.status}: {bytes(response.body)[:300]!r}")
                    for message in response.messages():
                        if isinstance(message, dict) and message.get("id") == conn.rid:
                            _check_echo(message, text)
                            break
                    else:
                        raise TargetError("the response carried no answer to the request")
                    conn.response = None
                    if not chunk or response.headers.get("connection", "").lower() == "close":
                        sel.unregister(conn.sock)
                        conn.sock.close()
                        conn.sock = self._connect()
                        conn.sock.setblocking(False)
                        sel.register(conn.sock, selectors.EVENT_READ, conn)
                    if rid < last:
                        send(conn)
            self._next_id = rid
            return meter.stop(latencies)
        finally:
            for conn in conns:
                conn.sock.close()
            sel.close()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(
    host: str, port: int, timeout: float = IO_TIMEOUT_SECONDS, proc: Any = None
) -> None:
    """Block until ``host:port`` accepts TCP connections, trying every 20 ms for at most
    ``timeout`` seconds (servers we start print nothing we could wait on instead).

    Raises:
        TargetError: it never did, or ``proc`` (a Popen) exited first.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((host, port), timeout=1).close()
            return
        except OSError:
            if proc is not None and proc.poll() is not None:
                raise TargetError(f"the server exited with code {proc.returncode}") from None
            if time.monotonic() > deadline:
                raise TargetError(
                    f"nothing listens on {host}:{port} after {timeout:.0f} s"
                ) from None
            time.sleep(0.02)

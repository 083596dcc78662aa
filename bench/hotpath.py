"""Parts 1 and 2: the sans-IO core's hot path, and the floor it is compared with.

Theory of operation
-------------------
No I/O and no event loop: a :class:`mcp_ref.Connection` is driven exactly as a driver
would drive it, with messages prepared before the clock starts.

For each case the *core* loop does, per message, what a server (or client) does:

* ``tools/call``: request bytes in (``receive_data``), the :class:`~mcp_ref.Request`
  event out (``next_event``, then ``next_event`` again until ``NEED_DATA``, as every
  driver does), the handler's result in (a ``CallToolResult`` echoing the text, built
  inside the loop since a handler builds it), the response bytes out (``send``);
* ``ping``: the same with an empty result (answered by the session in real drivers);
* ``notification``: a client receives ``notifications/message`` bytes and gets the
  event out;
* ``response``: a client sends its own ``tools/call`` (request bytes out) and receives
  the response to it (bytes in, the :class:`~mcp_ref.Response` event out);
* ``tools/call 100 B``, ``10 KB``, ``1 MB``: the ``tools/call`` loop with an echo text
  sized so the request line is about that many bytes.

The *floor* loop does the least any Python JSON-RPC peer must do for the same message:
``json.loads`` the bytes, look the method (or the pending id) up in a dict, build the
same result as plain dicts and ``json.dumps`` the reply (with a reused, compact encoder,
like the core's).  No validation, no typed objects, no state.  The core's throughput as
a fraction of the floor's says how much the protocol machinery costs on top of JSON.

Every case runs ``repeats`` times on a fresh pair of initialized connections; the
median run is reported (see :mod:`bench._measure`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mcp_ref import CLIENT, NEED_DATA, SERVER, Connection, Notification, Request, Response
from mcp_ref import types as t

from ._measure import Sample, median_sample, timed
from .report import Row

__all__ = ["CASES", "initialized_pair", "run_hotpath"]

_PROTOCOL = "2025-06-18"


def initialized_pair() -> tuple[Connection, Connection]:
    """A ``(client, server)`` pair of core connections past initialization.

    The server declares ``tools`` and ``logging``; the client declares ``roots``.
    """
    client, server = Connection(CLIENT), Connection(SERVER)
    init = Request(
        id=0,
        method="initialize",
        params=t.InitializeRequestParams(
            protocol_version=_PROTOCOL,
            capabilities=t.ClientCapabilities(roots=t.ClientCapabilitiesRoots(list_changed=True)),
            client_info=t.Implementation(name="bench-client", version="1"),
        ),
    )
    server.receive_data(client.send(init))
    req = server.next_event()
    assert isinstance(req, Request)
    result = t.InitializeResult(
        protocol_version=_PROTOCOL,
        capabilities=t.ServerCapabilities(tools=t.ServerCapabilitiesTools(), logging={}),
        server_info=t.Implementation(name="bench-server", version="1"),
    )
    client.receive_data(server.send(Response(id=0, result=result)))
    assert isinstance(client.next_event(), Response)
    server.receive_data(client.send(Notification(method="notifications/initialized")))
    assert isinstance(server.next_event(), Notification)
    return client, server


# --- messages ---------------------------------------------------------------------------

_CALL_HEAD = b'{"jsonrpc":"2.0","id":'
_CALL_TAIL = b',"method":"tools/call","params":{"name":"echo","arguments":{"text":"'


def call_line(rid: int, text: str) -> bytes:
    """One framed ``tools/call`` request line for the echo tool."""
    return _CALL_HEAD + str(rid).encode() + _CALL_TAIL + text.encode() + b'"}}}\n'


def text_for_size(size: int) -> str:
    """An ASCII echo text making a ``tools/call`` line of about ``size`` bytes."""
    overhead = len(call_line(10_000, ""))
    return "x" * max(1, size - overhead)


def _calls(n: int, text: str) -> list[bytes]:
    return [call_line(1000 + i, text) for i in range(n)]


def _pings(n: int) -> list[bytes]:
    return [b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % (1000 + i) for i in range(n)]


def _notes(n: int) -> list[bytes]:
    return [
        b'{"jsonrpc":"2.0","method":"notifications/message",'
        b'"params":{"level":"info","logger":"bench","data":"tick %d"}}\n' % i
        for i in range(n)
    ]


def _responses(n: int) -> list[bytes]:
    return [
        b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"hello"}]}}\n'
        % (1000 + i)
        for i in range(n)
    ]


# --- core loops ----------------------------------------------------------------------------


def _core_call(msgs: list[bytes]) -> Callable[[], int]:
    _, server = initialized_pair()
    recv, nxt, send = server.receive_data, server.next_event, server.send
    Result, Text = t.CallToolResult, t.TextContent

    def run() -> int:
        for data in msgs:
            recv(data)
            ev: Any = nxt()
            result = Result(content=[Text(text=ev.params.arguments["text"])])
            if nxt() is not NEED_DATA:
                raise AssertionError("one message gave two events")
            send(Response(id=ev.id, result=result))
        return len(msgs)

    return run


def _core_ping(msgs: list[bytes]) -> Callable[[], int]:
    _, server = initialized_pair()
    recv, nxt, send = server.receive_data, server.next_event, server.send
    empty = t.EmptyResult

    def run() -> int:
        for data in msgs:
            recv(data)
            ev: Any = nxt()
            if nxt() is not NEED_DATA:
                raise AssertionError("one message gave two events")
            send(Response(id=ev.id, result=empty()))
        return len(msgs)

    return run


def _core_note(msgs: list[bytes]) -> Callable[[], int]:
    client, _ = initialized_pair()
    recv, nxt = client.receive_data, client.next_event

    def run() -> int:
        for data in msgs:
            recv(data)
            if type(nxt()) is not Notification or nxt() is not NEED_DATA:
                raise AssertionError("expected one notification")
        return len(msgs)

    return run


def _core_response(msgs: list[bytes]) -> Callable[[], int]:
    client, _ = initialized_pair()
    recv, nxt, send = client.receive_data, client.next_event, client.send
    Params = t.CallToolRequestParams

    def run() -> int:
        rid = 1000
        for data in msgs:
            send(
                Request(
                    id=rid,
                    method="tools/call",
                    params=Params(name="echo", arguments={"text": "hello"}),
                )
            )
            recv(data)
            if type(nxt()) is not Response or nxt() is not NEED_DATA:
                raise AssertionError("expected one response")
            rid += 1
        return len(msgs)

    return run


# --- floor loops ---------------------------------------------------------------------------

_loads = json.loads  # fed str: json.loads(bytes) would add a Python-level encoding sniff
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _floor_call(msgs: list[bytes]) -> Callable[[], int]:
    def echo(params: Any) -> Any:
        return {"content": [{"type": "text", "text": params["arguments"]["text"]}]}

    table = {"tools/call": echo}

    def run() -> int:
        for data in msgs:
            obj = _loads(data.decode())
            result = table[obj["method"]](obj["params"])
            _dumps({"jsonrpc": "2.0", "id": obj["id"], "result": result}).encode() + b"\n"
        return len(msgs)

    return run


def _floor_ping(msgs: list[bytes]) -> Callable[[], int]:
    table: dict[str, Callable[[Any], Any]] = {"ping": lambda params: {}}

    def run() -> int:
        for data in msgs:
            obj = _loads(data.decode())
            result = table[obj["method"]](obj.get("params"))
            _dumps({"jsonrpc": "2.0", "id": obj["id"], "result": result}).encode() + b"\n"
        return len(msgs)

    return run


def _floor_note(msgs: list[bytes]) -> Callable[[], int]:
    table: dict[str, Callable[[Any], Any]] = {"notifications/message": lambda params: params}

    def run() -> int:
        for data in msgs:
            obj = _loads(data.decode())
            table[obj["method"]](obj["params"])
        return len(msgs)

    return run


def _floor_response(msgs: list[bytes]) -> Callable[[], int]:
    pending: dict[Any, str] = {}

    def run() -> int:
        rid = 1000
        for data in msgs:
            request = {
                "jsonrpc": "2.0",
                "id": rid,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "hello"}},
            }
            _dumps(request).encode() + b"\n"
            pending[rid] = "tools/call"
            obj = _loads(data.decode())
            pending.pop(obj["id"])
            rid += 1
        return len(msgs)

    return run


# --- the cases -----------------------------------------------------------------------------

Factory = Callable[[list[bytes]], Callable[[], int]]

CASES: list[tuple[str, Callable[[int], list[bytes]], Factory, Factory, int]] = [
    # (row name, messages(n), core loop, floor loop, messages per run in a full run)
    ("tools/call", lambda n: _calls(n, "hello"), _core_call, _floor_call, 20_000),
    ("ping", _pings, _core_ping, _floor_ping, 20_000),
    ("notification", _notes, _core_note, _floor_note, 20_000),
    ("response to our request", _responses, _core_response, _floor_response, 20_000),
    ("tools/call 100 B", lambda n: _calls(n, text_for_size(100)), _core_call, _floor_call, 20_000),
    (
        "tools/call 10 KB",
        lambda n: _calls(n, text_for_size(10 * 1024)),
        _core_call,
        _floor_call,
        5_000,
    ),
    (
        "tools/call 1 MB",
        lambda n: _calls(n, text_for_size(1024 * 1024)),
        _core_call,
        _floor_call,
        40,
    ),
]
"""Every hot-path case."""


def _measure(
    core: Factory, floor: Factory, msgs: list[bytes], repeats: int
) -> tuple[Sample, Sample]:
    """Median runs of the core loop and the floor loop, run alternately so that a busy
    moment of the machine hits both."""
    ours, base = [], []
    for _ in range(repeats):
        ours.append(timed(core(msgs)))  # fresh connections each run: ids never reused
        base.append(timed(floor(msgs)))
    return median_sample(ours), median_sample(base)


def run_hotpath(*, scale: float = 1.0, repeats: int = 5, only: str | None = None) -> list[Row]:
    """Measure every case (core and floor, interleaved) and return one row each.

    Args:
        scale: multiplies the messages per run (``--quick`` uses less than 1).
        repeats: timed runs per case and loop; the median is reported.
        only: measure only the case with this name.

    Each row's metrics: ``msgs_per_s`` and ``cpu_us`` (the core), ``floor_msgs_per_s``,
    ``floor_cpu_us``, and ``ratio``: the core's throughput as a fraction of the floor's,
    taken from CPU time per message (``floor_cpu_us / cpu_us``), which a busy machine
    disturbs far less than wall-clock rates.
    """
    rows = []
    for name, make, core, floor, count in CASES:
        if only is not None and name != only:
            continue
        n = max(2, int(count * scale))
        msgs = make(n)
        # Warm up both (first-call costs: converter compilation, caches).
        timed(core(msgs[: min(n, 50)]))
        timed(floor(msgs[: min(n, 50)]))
        ours, base = _measure(core, floor, msgs, repeats)
        rows.append(
            Row(
                "core",
                name,
                {
                    "msgs_per_s": ours.per_second,
                    "cpu_us": ours.cpu_us,
                    "floor_msgs_per_s": base.per_second,
                    "floor_cpu_us": base.cpu_us,
                    # CPU-bound throughput ratio: robust on a machine shared with
                    # other work, where wall-clock rates move between runs.
                    "ratio": base.cpu_us / ours.cpu_us if ours.cpu_us else None,
                },
                detail={"messages_per_run": n, "repeats": repeats, "bytes": len(msgs[0])},
            )
        )
    return rows


def profile_target(name: str = "tools/call", n: int = 20_000) -> Callable[[], int]:
    """The core loop of case ``name`` over ``n`` messages, ready to run under a profiler."""
    for case, make, core, _floor, _count in CASES:
        if case == name:
            return core(make(n))
    raise KeyError(name)

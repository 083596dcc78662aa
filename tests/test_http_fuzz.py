"""Every POST gets an answer: property tests of the Streamable HTTP server (and of the
2024-11-05 endpoints and the WebSocket transport) against damaged and arbitrary bodies.

Theory of operation
-------------------
A body that starts like a request but that the connection cannot take (cut short, behind
a BOM, in UTF-16, with trailing bytes, with bad UTF-8, nested too deep...) must still be
answered: 2025-06-18/basic/transports#sending-messages-to-the-server.4 (the body is a
JSON-RPC message; else an HTTP error status, .6: with a JSON-RPC error body).  Each
property test draws a batch of *recipes* (a family of damage and its parameters, see
:mod:`bench.fuzz_http`), builds each body with a fresh request id, and POSTs the batch,
a few at a time, to one real in-process server on loopback (the everything server).  The
oracle is the reading the core gives a body: strict UTF-8, then ``json.loads`` (the last
of two duplicate keys wins).  For every POST:

* a complete HTTP answer comes within ``ANSWER_SECONDS`` (an SSE answer must *end*);
* 400: the body is one JSON-RPC error, code -32700 (the body is not JSON), -32600 or
  -32602, carrying the request's id when the body is JSON with a valid id;
* 200: exactly one JSON-RPC response, whose id is the request's;
* 202: only for bodies without a request;

and after the batch (and a DELETE of each session a POST opened) the server's session
table has the size it had before.  Shrinking is off: a failure lists every failing body
of its batch, which says more than one shrunk example (and does not wait for timeouts
again and again).

``MCP_REF_FUZZ_EXAMPLES`` sets the bodies per test (default 500; drawn in batches of
``BATCH``).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, Request, TextMessage

import mcp_ref.trio.http.server as http_server_module
from bench import fuzz_http as fz
from mcp_ref.examples.everything import make_server
from mcp_ref.trio import open_http_server, serve_websocket_stream

from ._http_raw import RawConnection, init_body, notification_body, open_session

EXAMPLES = int(os.environ.get("MCP_REF_FUZZ_EXAMPLES", "500"))
"""Bodies per property test."""
BATCH = 50
"""Bodies per Hypothesis example (one server start, one table check)."""
ANSWER_SECONDS = 5.0
"""Seconds each POST has to be answered whole."""
IN_FLIGHT = 8
"""POSTs under way at once within a batch."""
DEEP = 200
"""Nesting past which the server may refuse a body as too deep even though
``json.loads`` here read it (recursion limits depend on the stack)."""
VERSION = "2025-11-25"
CODES = {-32700, -32600, -32602}
T = "2025-06-18/basic/transports"

FUZZ_SETTINGS = settings(
    max_examples=max(1, math.ceil(EXAMPLES / BATCH)),
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --- recipes: what to damage and how -------------------------------------------------------

KINDS = st.sampled_from(fz.MESSAGE_KINDS)
JUNK = st.sampled_from([b"\xff", b"\x80", b"\xc0\x80", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"])
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.sampled_from(["2.0", "initialize", "tools/call", "ping", "jsonrpc", "id"]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error", "x"]),
            inner,
            max_size=5,
        )
    ),
    max_leaves=12,
)

RECIPES = st.one_of(
    st.tuples(st.just("truncated"), KINDS, st.floats(0, 1, exclude_max=True)),
    st.tuples(st.just("bom"), KINDS),
    st.tuples(st.just("utf-16"), KINDS, st.booleans(), st.booleans()),
    st.tuples(st.just("utf-32"), KINDS, st.booleans(), st.booleans()),
    st.tuples(
        st.just("trailing"),
        KINDS,
        st.sampled_from(fz.TRAILERS) | st.binary(min_size=1, max_size=6),
    ),
    st.tuples(st.just("bad-utf8"), KINDS, st.floats(0, 1), JUNK),
    st.tuples(st.just("duplicate-id"), st.sampled_from(["tools/call", "ping", "initialize"])),
    st.tuples(st.just("deep"), st.sampled_from([1000, 2000])),
    st.tuples(st.just("deep-cancelled"), st.sampled_from([1000, 100_000])),
    st.tuples(st.just("bytes"), st.binary(max_size=64)),
    st.tuples(st.just("json"), JSON_VALUES),
    st.tuples(st.just("valid"), KINDS),
)
BATCHES = st.lists(RECIPES, min_size=BATCH, max_size=BATCH)


def build(recipe: tuple[Any, ...], rid: int) -> bytes:
    """The body of ``recipe`` with request id ``rid`` (a duplicate id gets ``rid`` + 1e9)."""
    family, *args = recipe
    if family == "truncated":
        body = fz.message(args[0], rid)
        return fz.truncated(body, 1 + int(args[1] * (len(body) - 1)))
    if family == "bom":
        return fz.with_bom(fz.message(args[0], rid))
    if family == "utf-16":
        return fz.utf16(fz.message(args[0], rid), bom=args[1], big_endian=args[2])
    if family == "utf-32":
        return fz.utf32(fz.message(args[0], rid), bom=args[1], big_endian=args[2])
    if family == "trailing":
        return fz.trailing(fz.message(args[0], rid), args[1])
    if family == "bad-utf8":
        body = fz.message(args[0], rid)
        return fz.bad_utf8(body, int(args[1] * len(body)), args[2])
    if family == "duplicate-id":
        return fz.duplicate_id(fz.message(args[0], rid), rid + 10**9)
    if family == "deep":
        return fz.deep_arguments(rid, args[0])
    if family == "deep-cancelled":
        return fz.deep_cancelled(args[0], rid)
    if family == "bytes":
        return bytes(args[0])
    if family == "json":
        return json.dumps(args[0]).encode()
    assert family == "valid"
    return fz.message(args[0], rid)


# --- the oracle: how the core reads a body -------------------------------------------------


class Expect:
    """What the core makes of a body.

    ``kind``: ``"parse"`` (not UTF-8 JSON), ``"deep"`` (JSON nested past ``DEEP``: the
    server may refuse it as too deep, or read it), ``"batch"``, ``"invalid"`` (JSON but
    no message), ``"request"``, ``"notification"``, ``"response"``.  ``id``: the request
    id when it is readable and valid, else None.  ``method``: a request's method.
    """

    def __init__(self, kind: str, rid: Any = None, method: Any = None) -> None:
        self.kind = kind
        self.id = rid
        self.method = method


def _depth(value: Any) -> int:
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, d = todo.pop()
        deepest = max(deepest, d)
        if isinstance(item, dict):
            todo.extend((v, d + 1) for v in item.values())
        elif isinstance(item, list):
            todo.extend((v, d + 1) for v in item)
    return deepest


def _valid_id(value: Any) -> bool:
    return type(value) in (str, int)


def expect(body: bytes) -> Expect:
    """The oracle (see the module docstring)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return Expect("parse")
    try:
        obj = json.loads(text)
    except RecursionError:
        return Expect("deep")
    except ValueError:
        return Expect("parse")
    deep = _depth(obj) > DEEP
    if isinstance(obj, list):
        return Expect("deep" if deep else "batch")
    if not isinstance(obj, dict):
        return Expect("invalid")
    rid = obj.get("id") if _valid_id(obj.get("id")) else None
    method = obj.get("method")
    if deep:
        return Expect("deep", rid, method)
    if method is None and ("result" in obj or "error" in obj):
        return Expect("response", rid)  # a response, valid or not, is never answered
    if obj.get("jsonrpc") != "2.0":
        return Expect("invalid", rid)
    if isinstance(method, str):
        if "id" not in obj:
            return Expect("notification", None, method)
        if rid is None or not (obj.get("params") is None or isinstance(obj["params"], dict)):
            return Expect("invalid", rid)
        return Expect("request", rid, method)
    if method is not None:
        return Expect("invalid", rid)
    if "result" in obj or "error" in obj:
        return Expect("response", rid)
    return Expect("invalid", rid)


# --- the server and its session table --------------------------------------------------------


@asynccontextmanager
async def fuzz_server(monkeypatch: pytest.MonkeyPatch, **kw: Any) -> AsyncIterator[tuple[Any, Any]]:
    """The everything server over loopback: ``(HttpServerInfo, its HttpServer)``.

    The HttpServer (which holds ``table``, the session table) is caught as
    :func:`~mcp_ref.trio.serve_http` builds it.
    """
    made: list[Any] = []
    base = http_server_module.HttpServer

    class Caught(base):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    with monkeypatch.context() as patch:
        patch.setattr(http_server_module, "HttpServer", Caught)
        async with open_http_server(make_server(), **kw) as info:
            assert len(made) == 1
            yield info, made[0]


def table_size(server: Any) -> tuple[int, int]:
    """(sessions named in the table, owner tasks running)."""
    return len(server.table.sessions), len(server.table.book.seats)


# --- one POST and its checks --------------------------------------------------------------------


async def answer_of(
    port: int, body: bytes, *, session_id: str | None, target: str = "/mcp"
) -> tuple[int | None, str, list[Any], str | None]:
    """POST ``body``; ``(status, content type, messages, session id)``, or status None
    when no complete answer came in ``ANSWER_SECONDS``."""
    with trio.move_on_after(ANSWER_SECONDS):
        conn = await RawConnection.open(port)
        try:
            ans = await conn.request(
                "POST",
                target,
                body=body,
                session_id=session_id,
                version=VERSION if session_id else None,
            )
            messages: list[Any] = []
            if ans.content_type == "text/event-stream":
                while (got := await ans.message()) is not None:
                    messages.append(got[1])
            else:
                raw = await ans.body()
                if raw:
                    messages.append(json.loads(raw))
            assert ans.ended
            return ans.status, ans.content_type, messages, ans.session_id
        except trio.BrokenResourceError:
            return -1, "", [], None  # closed without an answer
        finally:
            await conn.aclose()
    return None, "", [], None


def problems_of(
    body: bytes,
    got: tuple[int | None, str, list[Any], str | None],
    *,
    rid: int,
    fresh: bool,
    ok_statuses: frozenset[int] = frozenset({200, 202, 400}),
) -> list[str]:
    """What is wrong with the answer ``got`` to ``body`` (empty: nothing)."""
    status, _, messages, _ = got
    want = expect(body)
    out: list[str] = []
    if status is None:
        return ["no complete answer within the bound"]
    if status not in ok_statuses:
        return [f"status {status}"]
    responses = [m for m in messages if isinstance(m, dict) and ("result" in m or "error" in m)]
    if status == 400:
        if len(messages) != 1 or not isinstance(messages[0], dict):
            return [f"400 body is not one JSON object: {messages!r}"]
        err = messages[0].get("error")
        if not isinstance(err, dict) or err.get("code") not in CODES:
            out.append(f"400 body is not a JSON-RPC error with code -32700/-32600/-32602: {err}")
        elif want.kind == "parse" and err["code"] != -32700:
            out.append(f"not JSON, yet code {err['code']}")
        if want.id is not None and want.kind in ("request", "invalid"):
            if messages[0].get("id") != want.id:
                out.append(f"400 body id {messages[0].get('id')!r}, the request's is {want.id!r}")
        if want.kind in ("parse", "deep") and messages[0].get("id") not in (None, rid, rid + 10**9):
            out.append(f"400 body id {messages[0].get('id')!r}: not the body's")
        if want.kind == "request" and not fresh and want.method != "initialize":
            # (a second initialize is refused: it must not name a session)
            out.append("a request the core can read was refused with 400")
    elif status == 200:
        if want.kind not in ("request", "deep", "batch"):
            out.append(f"200 for a body the core reads as {want.kind}")
        if want.kind != "batch":
            if len(responses) != 1:
                out.append(f"200 with {len(responses)} responses")
            elif want.id is None or responses[0].get("id") != want.id:
                out.append(f"response id {responses[0].get('id')!r}, request's {want.id!r}")
    elif status == 202:
        if want.kind in ("request", "parse") or (want.kind == "deep" and want.id is not None):
            out.append(f"202 for a body read as {want.kind} (id {want.id!r})")
    return out


async def post_batch(
    server: Any,
    port: int,
    recipes: list[tuple[Any, ...]],
    *,
    session_id: str | None,
    fresh: bool,
    first_id: int = 1000,
) -> list[str]:
    """POST every recipe's body (at most ``IN_FLIGHT`` at once); end the sessions the
    POSTs opened; the problems found, each naming its recipe and body."""
    problems: list[str] = []
    opened: list[str] = []
    limiter = trio.CapacityLimiter(IN_FLIGHT)
    before = table_size(server)

    async def one(i: int, recipe: tuple[Any, ...]) -> None:
        body = build(recipe, first_id + i)
        async with limiter:
            got = await answer_of(port, body, session_id=session_id)
        if got[3] is not None and got[3] != session_id:
            opened.append(got[3])
        for p in problems_of(body, got, rid=first_id + i, fresh=fresh):
            problems.append(f"{recipe!r:.100} -> {p}; body {body[:120]!r}")

    async with trio.open_nursery() as nursery:
        for i, recipe in enumerate(recipes):
            nursery.start_soon(one, i, recipe)
    for sid in opened:
        conn = await RawConnection.open(port)
        ans = await conn.request("DELETE", session_id=sid, version=VERSION)
        await ans.body()
        await conn.aclose()
    await trio.testing.wait_all_tasks_blocked(0.01)
    after = table_size(server)
    if after != before:
        problems.append(f"session table (ids, live) {before} before, {after} after")
    return problems


def report(problems: list[str]) -> None:
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:40])


# --- property tests: Streamable HTTP -----------------------------------------------------------

MODES = {
    "sse": {},
    "json": {"json_response": True},
    "stateless": {"stateless": True},
}


async def _fuzz_endpoint(
    monkeypatch: pytest.MonkeyPatch, recipes: list[tuple[Any, ...]], mode: str, fresh: bool
) -> list[str]:
    with trio.fail_after(ANSWER_SECONDS * (len(recipes) / IN_FLIGHT + 4)):
        async with fuzz_server(monkeypatch, **MODES[mode]) as (info, server):
            sid = None
            if not fresh and mode != "stateless":
                sid, _ = await open_session(info.port, version=VERSION)
            return await post_batch(server, info.port, recipes, session_id=sid, fresh=fresh)


@pytest.mark.spec(f"{T}#sending-messages-to-the-server.6")
@pytest.mark.parametrize(
    ("mode", "where"),
    # Stateless mode has no sessions: its first POST is the only case.
    [
        ("sse", "fresh"),
        ("sse", "session"),
        ("json", "fresh"),
        ("json", "session"),
        ("stateless", "fresh"),
    ],
)
def test_every_damaged_post_is_answered(
    monkeypatch: pytest.MonkeyPatch, mode: str, where: str
) -> None:
    """Damaged and arbitrary bodies, as a first POST (no session) and inside a session:
    each gets a complete answer (400 with a JSON-RPC error, or the response), and the
    session table returns to its size."""

    @FUZZ_SETTINGS
    @given(BATCHES)
    def run(recipes: list[tuple[Any, ...]]) -> None:
        report(trio.run(_fuzz_endpoint, monkeypatch, recipes, mode, where == "fresh"))

    run()


# --- specific regressions --------------------------------------------------------------------

_INIT = fz.message("initialize", 7)
_CALL = fz.message("tools/call", 7)

REGRESSIONS: list[tuple[str, bytes, bool, int, Any, Any]] = [
    # (name, body, inside a session (else a first POST), status, the error code or the
    # response's id, the error's id: the request's where the bytes before the damage
    # show it, else null)
    ("truncated initialize", _INIT[:40], False, 400, -32700, 7),
    ("truncated initialize, cut inside params", _INIT[:-3], False, 400, -32700, 7),
    ("truncated tools/call", _CALL[:40], True, 400, -32700, 7),
    ("truncated tools/call, one byte short", _CALL[:-1], True, 400, -32700, 7),
    ("UTF-8 BOM before initialize", fz.with_bom(_INIT), False, 400, -32700, None),
    ("UTF-8 BOM before tools/call", fz.with_bom(_CALL), True, 400, -32700, None),
    ("UTF-16 initialize", fz.utf16(_INIT), False, 400, -32700, None),
    ("UTF-16LE tools/call, no BOM", fz.utf16(_CALL, bom=False), True, 400, -32700, None),
    ("UTF-32 tools/call", fz.utf32(_CALL), True, 400, -32700, None),
    ("initialize then trailing bytes", _INIT + b"x", False, 400, -32700, 7),
    ("tools/call then a second object", _CALL + b"{}", True, 400, -32700, 7),
    ("tools/call, late invalid UTF-8", fz.bad_utf8(_CALL, len(_CALL) - 4), True, 400, -32700, 7),
    ("initialize, late invalid UTF-8", fz.bad_utf8(_INIT, len(_INIT) - 4), False, 400, -32700, 7),
    # JSON the core reads: the last "id" wins, and the answer carries it.
    ("tools/call with a second id", fz.duplicate_id(_CALL, 8), True, 200, 8, None),
    # A notification too deep to parse: no id to carry.
    ("cancelled nested 100,000 deep", fz.deep_cancelled(100_000), True, 400, -32700, None),
]


@pytest.mark.spec(f"{T}#sending-messages-to-the-server.6")
@pytest.mark.parametrize("mode", ["sse", "json", "stateless"])
@pytest.mark.parametrize(
    ("name", "body", "in_session", "status", "want", "error_id"),
    REGRESSIONS,
    ids=[r[0] for r in REGRESSIONS],
)
async def test_damaged_requests_get_their_exact_answer(
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    name: str,
    body: bytes,
    in_session: bool,
    status: int,
    want: Any,
    error_id: Any,
) -> None:
    """The inputs of issue 12, one by one: the exact status and code (and the id where
    the body's id is readable)."""
    with trio.fail_after(ANSWER_SECONDS * 2):
        async with fuzz_server(monkeypatch, **MODES[mode]) as (info, server):
            sid = None
            if in_session and mode != "stateless":
                sid, _ = await open_session(info.port, version=VERSION)
            before = table_size(server)
            got, ctype, messages, _ = await answer_of(info.port, body, session_id=sid)
            assert got is not None, "no complete answer"
            assert got == status, (got, messages)
            assert len(messages) == 1, messages
            if status == 400:
                assert ctype == "application/json"
                assert messages[0]["error"]["code"] == want
                assert messages[0].get("id") == error_id
            else:
                assert messages[0]["id"] == want
            await trio.testing.wait_all_tasks_blocked(0.01)
            assert table_size(server) == before


@pytest.mark.spec(f"{T}#sending-messages-to-the-server.6")
@pytest.mark.parametrize("mode", ["sse", "json"])
async def test_arguments_nested_1000_deep_are_answered(
    monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """Arguments nested 1,000 deep: refused as too deep (400, -32700) or, where the
    parser goes that deep, answered like any call; never left without an answer."""
    with trio.fail_after(ANSWER_SECONDS * 2):
        async with fuzz_server(monkeypatch, **MODES[mode]) as (info, server):
            sid, _ = await open_session(info.port, version=VERSION)
            before = table_size(server)
            got = await answer_of(info.port, fz.deep_arguments(9, 1000), session_id=sid)
            assert got[0] in (200, 400), got
            if got[0] == 400:
                assert got[2][0]["error"]["code"] == -32700
                assert got[2][0].get("id") in (None, 9)
            else:
                assert [m["id"] for m in got[2] if "result" in m or "error" in m] == [9]
            await trio.testing.wait_all_tasks_blocked(0.01)
            assert table_size(server) == before


@pytest.mark.spec(f"{T}#sending-messages-to-the-server.6")
@pytest.mark.parametrize("kind", ["initialize", "tools/call"])
async def test_every_cut_point_is_answered(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """A real message cut after every one of its bytes: each prefix gets 400 -32700, as a
    first POST and inside a session."""
    body = fz.message(kind, 11)
    cuts = [("truncated", kind, (n - 1) / (len(body) - 1)) for n in range(1, len(body))]
    with trio.fail_after(ANSWER_SECONDS * (len(cuts) / IN_FLIGHT + 4)):
        async with fuzz_server(monkeypatch) as (info, server):
            sid, _ = await open_session(info.port, version=VERSION)
            problems = await post_batch(server, info.port, cuts, session_id=None, fresh=True)
            problems += await post_batch(server, info.port, cuts, session_id=sid, fresh=False)
    report(problems)


# --- the 2024-11-05 endpoints --------------------------------------------------------------------


class LegacyStream:
    """The GET /sse stream of one 2024-11-05 session, read by a task of its own."""

    def __init__(self) -> None:
        self.ids: dict[Any, int] = {}
        self.changed = trio.Event()
        self.endpoint = ""
        self.ended = False

    async def read(self, port: int, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        conn = await RawConnection.open(port)
        try:
            ans = await conn.request("GET", "/sse")
            assert ans.status == 200
            first = await ans.event()
            assert first is not None and first.event == "endpoint"
            self.endpoint = first.data
            task_status.started()
            while (got := await ans.message()) is not None:
                msg = got[1]
                if isinstance(msg, dict) and ("result" in msg or "error" in msg):
                    self.ids[msg.get("id")] = self.ids.get(msg.get("id"), 0) + 1
                    self.changed.set()
                    self.changed = trio.Event()
            self.ended = True
        finally:
            await conn.aclose()

    async def wait_for(self, rid: Any) -> None:
        while rid not in self.ids:
            await self.changed.wait()


async def _fuzz_legacy(
    monkeypatch: pytest.MonkeyPatch, recipes: list[tuple[Any, ...]]
) -> list[str]:
    problems: list[str] = []
    with trio.fail_after(ANSWER_SECONDS * (len(recipes) / IN_FLIGHT + 4)):
        async with fuzz_server(monkeypatch) as (info, server):
            before = table_size(server)
            stream = LegacyStream()
            async with trio.open_nursery() as nursery:
                await nursery.start(stream.read, info.port)
                target = stream.endpoint
                init = init_body("legacy-init", "2024-11-05")
                assert (await answer_of(info.port, init, session_id=None, target=target))[0] == 202
                await stream.wait_for("legacy-init")
                note = notification_body("notifications/initialized")
                assert (await answer_of(info.port, note, session_id=None, target=target))[0] == 202
                limiter = trio.CapacityLimiter(IN_FLIGHT)
                waited: list[int] = []

                async def one(i: int, recipe: tuple[Any, ...]) -> None:
                    body = build(recipe, 1000 + i)
                    async with limiter:
                        got = await answer_of(info.port, body, session_id=None, target=target)
                    want = expect(body)
                    bad = problems_of(
                        body, got, rid=1000 + i, fresh=False, ok_statuses=frozenset({202, 400})
                    )
                    if got[0] == 202 and want.kind == "request":
                        waited.append(want.id)
                        bad = []  # its answer goes on the stream (checked below)
                    elif got[0] == 202 and want.kind != "parse":
                        bad = []
                    for p in bad:
                        problems.append(f"{recipe!r:.100} -> {p}; body {body[:120]!r}")

                async with trio.open_nursery() as posts:
                    for i, recipe in enumerate(recipes):
                        posts.start_soon(one, i, recipe)
                ping = b'{"jsonrpc":"2.0","id":"last-ping","method":"ping"}'
                assert (await answer_of(info.port, ping, session_id=None, target=target))[0] == 202
                await stream.wait_for("last-ping")  # the stream is still up
                for rid in waited:
                    await stream.wait_for(rid)
                    if stream.ids[rid] != 1:
                        problems.append(f"{stream.ids[rid]} responses to id {rid!r}")
                nursery.cancel_scope.cancel()  # the GET's connection ends: so does the session
            await trio.testing.wait_all_tasks_blocked(0.01)
            if table_size(server) != before:
                problems.append(f"session table {before} before, {table_size(server)} after")
    return problems


@pytest.mark.spec(f"{T}#sending-messages-to-the-server.6")
def test_every_damaged_post_to_the_2024_11_05_endpoint_is_answered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """POSTs to ``/messages``: 202 or 400 (a JSON-RPC error) at once; every readable
    request's response on the SSE stream, once; the stream stays up; the session table
    returns to its size after the GET ends."""

    @FUZZ_SETTINGS
    @given(BATCHES)
    def run(recipes: list[tuple[Any, ...]]) -> None:
        report(trio.run(_fuzz_legacy, monkeypatch, recipes))

    run()


# --- WebSocket ---------------------------------------------------------------------------------


class WsPeer:
    """A WebSocket client over a memory stream, driven by hand with wsproto."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.ws = WSConnection(ConnectionType.CLIENT)
        self.parts: list[str] = []

    async def open(self) -> None:
        await self.send(Request(host="localhost", target="/mcp", subprotocols=["mcp"]))
        assert isinstance(await self.next_event(), AcceptConnection)

    async def send(self, event: Any) -> None:
        await self.stream.send_all(self.ws.send(event))

    async def next_event(self) -> Any:
        while True:
            for event in self.ws.events():
                return event
            data = await self.stream.receive_some(65536)
            assert data, "the server closed the connection"
            self.ws.receive_data(bytes(data))

    async def next_message(self) -> Any:
        """The next whole text message, parsed; None when the server closes."""
        while True:
            event = await self.next_event()
            if isinstance(event, CloseConnection):
                return None
            if isinstance(event, TextMessage):
                self.parts.append(event.data)
                if event.message_finished:
                    text, self.parts = "".join(self.parts), []
                    return json.loads(text)


def _ws_text(body: bytes) -> str:
    """A text frame's payload for ``body`` (text frames hold UTF-8: bytes that are not
    become U+FFFD)."""
    return body.decode("utf-8", "replace")


async def _fuzz_ws(recipes: list[tuple[Any, ...]]) -> list[str]:
    problems: list[str] = []
    a, b = trio.testing.memory_stream_pair()
    with trio.fail_after(ANSWER_SECONDS * (len(recipes) / 4 + 4)):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: serve_websocket_stream(b, make_server(), ping_interval=None))
            peer = WsPeer(a)
            await peer.open()
            await peer.send(TextMessage(data=init_body(1, VERSION).decode()))
            assert (await peer.next_message())["id"] == 1
            await peer.send(
                TextMessage(data='{"jsonrpc":"2.0","method":"notifications/initialized"}')
            )
            # Ids of earlier frames: a request the server runs in a task (a deep
            # tools/call, say) may be answered after the ping that follows it, so its
            # reply can arrive during a later frame's turn; it is not that frame's.
            earlier: set[Any] = set()
            for i, recipe in enumerate(recipes):
                text = _ws_text(build(recipe, 1000 + i))
                want = expect(text.encode())
                # A request-looking frame: not JSON (the core answers -32700, an empty
                # or blank frame included), or a request (its response), or invalid
                # with an id (its error).
                answered = want.kind == "parse" or (
                    want.kind == "request" or (want.kind == "invalid" and want.id is not None)
                )
                ping_id = f"ping-{i}"
                closed = False
                with trio.move_on_after(ANSWER_SECONDS) as scope:
                    await peer.send(TextMessage(data=text))
                    await peer.send(
                        TextMessage(
                            data=json.dumps({"jsonrpc": "2.0", "id": ping_id, "method": "ping"})
                        )
                    )
                    replies: list[Any] = []
                    pinged = False
                    while not pinged or (answered and not replies):
                        msg = await peer.next_message()
                        if msg is None:
                            closed = True
                            break
                        if not isinstance(msg, dict) or not ("result" in msg or "error" in msg):
                            continue
                        if msg.get("id") == ping_id:
                            pinged = True
                        elif msg.get("id") not in earlier:
                            replies.append(msg)
                if scope.cancelled_caught or closed:
                    why = "the connection closed" if closed else "no reply in time"
                    problems.append(f"{recipe!r:.100} -> {why}; frame {text[:2000]!r}")
                    break
                if answered:
                    rid = replies[0].get("id")
                    if want.kind == "parse" and replies[0].get("error", {}).get("code") != -32700:
                        problems.append(f"{recipe!r:.100} -> not -32700: {replies[0]}")
                    if want.id is not None and rid != want.id:
                        problems.append(f"{recipe!r:.100} -> reply id {rid!r}, not {want.id!r}")
                if want.id is not None:
                    earlier.add(want.id)
            nursery.cancel_scope.cancel()
    return problems


def test_every_damaged_websocket_frame_is_answered() -> None:
    """Each text frame holding a request-looking damaged message gets its error reply or
    response, and the connection stays up (a ping after each is answered)."""

    @FUZZ_SETTINGS
    @given(BATCHES)
    def run(recipes: list[tuple[Any, ...]]) -> None:
        report(trio.run(_fuzz_ws, recipes))

    run()


async def test_an_empty_websocket_frame_is_answered() -> None:
    """An empty text frame is not JSON: a -32700 reply, and the connection stays up."""
    a, b = trio.testing.memory_stream_pair()
    with trio.fail_after(ANSWER_SECONDS):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: serve_websocket_stream(b, make_server(), ping_interval=None))
            peer = WsPeer(a)
            await peer.open()
            await peer.send(TextMessage(data=init_body(1, VERSION).decode()))
            assert (await peer.next_message())["id"] == 1
            await peer.send(TextMessage(data=""))
            reply = await peer.next_message()
            assert reply is not None, "the server closed the connection"
            assert reply["error"]["code"] == -32700
            await peer.send(TextMessage(data='{"jsonrpc":"2.0","id":2,"method":"ping"}'))
            assert (await peer.next_message()) == {"jsonrpc": "2.0", "id": 2, "result": {}}
            nursery.cancel_scope.cancel()

"""Arbitrary bytes give events or RemoteProtocolError, never anything else; the
connection survives and nothing accepted is lost."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_ref import NEED_DATA, RemoteProtocolError, Request
from mcp_ref import types as t
from tests._examples import examples

from ._pair import initialized_pair

GOOD = b'{"jsonrpc":"2.0","id":"sentinel","method":"ping"}\n'

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
method_names = st.sampled_from(
    [
        "ping",
        "tools/call",
        "tools/list",
        "initialize",
        "resources/read",
        "notifications/cancelled",
        "notifications/progress",
        "prompts/get",
        "no/such",
        "completion/complete",
        "logging/setLevel",
    ]
)
any_shape = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2]),
        "id": st.none()
        | st.integers()
        | st.text(max_size=5)
        | st.booleans()
        | st.floats(allow_nan=False),
        "method": method_names | json_values,
        "params": json_values
        | st.dictionaries(
            st.sampled_from(
                [
                    "name",
                    "arguments",
                    "uri",
                    "cursor",
                    "_meta",
                    "requestId",
                    "progressToken",
                    "progress",
                    "level",
                    "ref",
                    "argument",
                ]
            ),
            json_values,
        ),
        "result": json_values,
        "error": json_values
        | st.fixed_dictionaries({"code": st.integers(), "message": st.text(max_size=5)}),
    },
)
# Well-formed requests on a few ids, so that valid methods, session rules and duplicate
# ids are reached often, not only by chance.
plausible = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0"), "id": st.sampled_from([0, 1, "1", "a"]), "method": method_names},
    optional={"params": st.just({}) | st.fixed_dictionaries({"name": st.text(max_size=3)})},
)
messages = any_shape | plausible


def drain(conn: object, errors: list[RemoteProtocolError]) -> list[object]:
    evs = []
    for _ in range(10_000):
        try:
            ev = conn.next_event()  # type: ignore[attr-defined]
        except RemoteProtocolError as exc:
            errors.append(exc)
            if exc.event_hint is not None:
                json.loads(conn.send(exc.event_hint))  # type: ignore[attr-defined]
            continue
        if ev is NEED_DATA:
            return evs
        evs.append(ev)
    raise AssertionError("next_event did not settle")


# -- the reference model: JSON-RPC 2.0 and MCP's envelope rules, stated plainly ----------
#
# expected(line) says what one framed line must give: skipped, an error with an exact
# code (and whether a reply is owed, and to which id), or a valid envelope whose fate
# depends on the session (a request is accepted or refused with its own id; a
# notification or response gives at most one event and is never answered).

SENTINEL = "sentinel-after-garbage"  # longer than any id the strategies make
GOOD = b'{"jsonrpc":"2.0","id":"' + SENTINEL.encode() + b'","method":"ping"}\n'
ANY_ID = object()  # -32700 may answer the id its first bytes show, or null


def _legal_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def expected(line: bytes, limit: int | None = None) -> tuple[Any, ...]:
    line = line[:-1] if line.endswith(b"\r") else line
    if limit is not None and len(line) > limit:
        return _expected_too_long(line)
    if not line.strip(b" \t\r\n"):
        return ("skip",)
    try:
        obj = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return ("error", -32700, ANY_ID)
    if not isinstance(obj, dict):
        return ("error", -32600, None)  # a batch (not in 2025-11-25) or not an object
    rid = obj.get("id")
    reply_id = rid if _legal_id(rid) else None
    method = obj.get("method")
    has_id, has_result, has_error = "id" in obj, "result" in obj, "error" in obj
    params = obj.get("params")
    if obj.get("jsonrpc") != "2.0":
        owed = method is not None or (has_id and not has_result and not has_error)
        return ("error", -32600, reply_id if owed else "no reply")
    if method is not None:
        if not isinstance(method, str):
            return ("error", -32600, reply_id)
        if has_id:
            if not _legal_id(rid):
                return ("error", -32600, None)
            if params is not None and not isinstance(params, dict):
                return ("error", -32602, rid)
            return ("request", rid)
        if params is not None and not isinstance(params, dict):
            return ("error", -32602, "no reply")
        return ("notification",)
    if has_result and has_error:
        return ("error", -32600, "no reply")
    if not has_result and not has_error:
        return ("error", -32600, reply_id if has_id else "no reply")
    if has_result and not _legal_id(rid):
        return ("error", -32600, "no reply")
    error = obj.get("error")
    if has_error and not (
        isinstance(error, dict)
        and type(error.get("code")) is int
        and isinstance(error.get("message"), str)
    ):
        return ("error", -32600, "no reply")
    if has_error and rid is not None and not _legal_id(rid):
        return ("error", -32600, "no reply")
    return ("response",)


def _expected_too_long(line: bytes) -> tuple[Any, ...]:
    """Over the size bound: -32600, answering the id the first bytes show (a request)."""
    try:
        obj = json.loads(line)
    except ValueError:
        return ("error", -32600, ANY_ID)
    rid = obj.get("id") if isinstance(obj, dict) else None
    if not _legal_id(rid) or len(line) > 4096:  # beyond 4 KiB the id may be unseen
        return ("error", -32600, ANY_ID)
    if "method" in obj:
        return ("error", -32600, rid)
    return ("response",)  # a response we never asked for: dropped


def check_line(want: tuple[Any, ...], evs: list[object], errors: list[RemoteProtocolError]) -> None:
    """What one line gave (its events and refusals) against the model."""
    kind = want[0]
    if kind == "skip":
        assert evs == [] and errors == []
    elif kind == "error":
        _, code, reply = want
        assert evs == [] and len(errors) == 1
        exc = errors[0]
        assert exc.code == code
        if reply == "no reply":
            assert exc.event_hint is None
        else:
            assert exc.event_hint is not None and exc.event_hint.code == code
            if reply is ANY_ID:
                assert exc.event_hint.id is None or _legal_id(exc.event_hint.id)
            else:
                assert exc.event_hint.id == reply and type(exc.event_hint.id) is type(reply)
    elif kind == "request":
        rid = want[1]
        if errors:
            # refused by the session (method, lifecycle, params, duplicate id, capacity)
            assert evs == [] and len(errors) == 1
            exc = errors[0]
            assert exc.code in (-32600, -32601, -32602, -32603)
            assert exc.event_hint is not None and exc.event_hint.id == rid
            assert type(exc.event_hint.id) is type(rid)
        else:
            assert len(evs) == 1 and isinstance(evs[0], Request)
            assert evs[0].id == rid and type(evs[0].id) is type(rid)
    else:  # a notification or a response: never answered, at most one event
        assert len(evs) + len(errors) <= 1
        assert not any(isinstance(e, Request) for e in evs)
        assert all(e.event_hint is None for e in errors)


def feed_lines(conn: Any, data: bytes, limit: int | None = None) -> list[tuple[Any, ...]]:
    """Feed ``data`` line by line (an unterminated tail as a line: the caller's next
    bytes start with a newline), check each line against the model; return a summary of
    every outcome, in order."""
    summary: list[tuple[Any, ...]] = []
    for line in data.split(b"\n"):
        errors: list[RemoteProtocolError] = []
        conn.receive_data(line + b"\n")
        evs = drain(conn, errors)
        check_line(expected(line, limit), evs, errors)
        summary += outcome_summary(evs, errors)
    return summary


def outcome_summary(evs: list[object], errors: list[RemoteProtocolError]) -> list[tuple[Any, ...]]:
    return [(type(e).__name__, getattr(e, "id", None)) for e in evs] + [
        ("refused", e.code, e.event_hint.id if e.event_hint else "-") for e in errors
    ]


def still_serves(conn: Any) -> None:
    """After the garbage and a newline, a valid request is accepted, nothing else."""
    errors: list[RemoteProtocolError] = []
    conn.receive_data(b"\n" + GOOD)
    evs = drain(conn, errors)
    assert errors == []
    assert len(evs) == 1 and isinstance(evs[0], Request) and evs[0].id == SENTINEL


def check_survives(data: bytes) -> list[tuple[Any, ...]]:
    _, server = initialized_pair()
    summary = feed_lines(server, data)
    still_serves(server)
    return summary


@pytest.mark.parametrize("close", [False, True])
def test_an_over_long_message_with_a_deeply_nested_id_is_refused_with_id_null(
    close: bool,
) -> None:
    # The id is read from the first bytes of a message too long to decode; a value
    # nested deeper than the JSON scanner can recurse is no id (not a RecursionError).
    from mcp_ref import SERVER, Connection

    nested = b"[" * 1500 + (b"]" * 1500 if close else b"")
    line = b'{"jsonrpc":"2.0","id":' + nested + b',"method":"ping"' + b" " * 5000 + b"}\n"
    conn = Connection(SERVER, max_message_bytes=4000)
    conn.receive_data(line)
    with pytest.raises(RemoteProtocolError) as err:
        conn.next_event()
    assert err.value.event_hint is not None and err.value.event_hint.id is None


arbitrary_lines = st.binary(max_size=300) | st.lists(
    st.sampled_from(
        [b"{", b"}", b"[", b"]", b'"', b":", b",", b"\n", b"\r", b" ", b"\xff", b"null", b"1",
         b'"jsonrpc":"2.0"', b'"id":', b'"method":"ping"', b'"params":', b'"result":{}',
         b'"error":{"code":1,"message":"m"}', b'"x"', b"\x0b"]
    ),
    max_size=40,
).map(b"".join)  # fmt: skip


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arbitrary_lines)
def test_arbitrary_bytes(data: bytes) -> None:
    """Each line gives what the model says (exact code; reply id = request id where one
    is readable); a valid request is served afterwards."""
    check_survives(data)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arbitrary_lines.map(lambda b: b[:120]))
def test_arbitrary_bytes_one_at_a_time(data: bytes) -> None:
    """One byte at a time gives the same outcomes, in order, as whole lines."""
    whole = check_survives(data)
    _, server = initialized_pair()
    errors: list[RemoteProtocolError] = []
    evs: list[object] = []
    got: list[tuple[Any, ...]] = []
    for i in range(len(data)):
        server.receive_data(data[i : i + 1])
        errors.clear()
        evs = drain(server, errors)
        got += outcome_summary(evs, errors)
    server.receive_data(b"\n")
    errors.clear()
    evs = drain(server, errors)
    got += outcome_summary(evs, errors)
    assert got == whole
    still_serves(server)


def json_lines(msgs: list[dict[str, object]]) -> bytes:
    return b"\n".join(json.dumps(m).encode() for m in msgs)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(messages, min_size=1, max_size=5))
def test_arbitrary_json_rpc_shapes(msgs: list[dict[str, object]]) -> None:
    """Each JSON-RPC-shaped message gives the model's outcome; the server still serves."""
    check_survives(json_lines(msgs))


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(messages, min_size=1, max_size=5))
def test_arbitrary_input_to_a_client(msgs: list[dict[str, object]]) -> None:
    """The same for a client with a request in flight; it still serves a server's ping."""
    client, server = initialized_pair()
    client.send(
        Request(
            id=1,
            method="tools/call",
            params=t.CallToolRequestParams(name="x", meta={"progressToken": 1}),
        )
    )
    feed_lines(client, json_lines(msgs))
    still_serves(client)


def test_vertical_tab_and_form_feed_lines() -> None:
    """Not JSON whitespace: a line of them is no blank line but a parse error."""
    _, server = initialized_pair()
    for line in (b"\x0b", b"\x0c ", b"{\x0b}"):
        errors: list[RemoteProtocolError] = []
        server.receive_data(line + b"\n")
        assert drain(server, errors) == [] and [e.code for e in errors] == [-32700]


def test_a_line_of_space_and_vertical_tab_is_a_parse_error() -> None:
    _, server = initialized_pair()
    errors: list[RemoteProtocolError] = []
    server.receive_data(b" \x0b\n")
    drain(server, errors)
    assert [e.code for e in errors] == [-32700]


@pytest.mark.parametrize("line", [b"[" * 100_000, b'{"a":' * 50_000])
def test_deep_nesting_is_a_parse_error(line: bytes) -> None:
    client, server = initialized_pair()
    server.receive_data(line + b"\n")
    with pytest.raises(RemoteProtocolError) as exc:
        server.next_event()
    assert exc.value.code == -32700


@settings(max_examples=examples(500))
@given(
    st.binary(max_size=200)
    | st.text(alphabet='{}[]",:\\ id method 0123456789', max_size=80).map(str.encode)
    | st.tuples(messages, st.integers(0, 300)).map(lambda m: json.dumps(m[0]).encode()[: m[1]])
)
def test_peek_never_fails(prefix: bytes) -> None:
    from mcp_ref._jsonrpc import peek, valid_id

    rid, has_method = peek(prefix)
    assert rid is None or valid_id(rid)
    try:
        obj = json.loads(prefix)
    except (ValueError, RecursionError):
        return
    if isinstance(obj, dict) and valid_id(obj.get("id")):
        # a whole object shows its id and whether it has a method
        assert (rid, has_method) == (obj["id"], "method" in obj)
        assert type(rid) is type(obj["id"])


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(messages, min_size=1, max_size=3), st.integers(min_value=len(GOOD), max_value=250))
def test_arbitrary_input_with_a_small_size_limit(msgs: list[dict[str, object]], limit: int) -> None:
    from mcp_ref import SERVER, Connection

    """Over the bound: -32600 with the id of a request, id null when none shows, a
    response dropped; under it, the model's outcome.  The connection still serves."""
    conn = Connection(SERVER, max_message_bytes=limit)
    feed_lines(conn, json_lines(msgs), limit)
    still_serves(conn)  # a ping is allowed before initialization

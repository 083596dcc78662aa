"""Arbitrary bytes give events or RemoteProtocolError, never anything else; the
connection survives and nothing accepted is lost."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_ref import NEED_DATA, RemoteProtocolError, Request
from mcp_ref import types as t

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
messages = st.fixed_dictionaries(
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


def check_survives(chunks: list[bytes]) -> None:
    client, server = initialized_pair()
    errors: list[RemoteProtocolError] = []
    for chunk in chunks:
        if not chunk:
            continue  # b"" means end of input, not garbage
        server.receive_data(chunk)
        drain(server, errors)
    # Whatever came before, a fresh good line after a newline is accepted.
    server.receive_data(b"\n" + GOOD)
    evs = drain(server, errors)
    assert any(isinstance(e, Request) and e.id == "sentinel" for e in evs) or any(
        # the garbage may have used the id "sentinel" already: then it is refused as a duplicate
        e.request_id == "sentinel"
        for e in errors
    )
    for exc in errors:
        assert isinstance(exc.code, int) and exc.code in (-32700, -32600, -32601, -32602, -32603)
        if exc.event_hint is not None and exc.request_id is not None:
            assert exc.event_hint.id == exc.request_id


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


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_arbitrary_bytes(data: bytes) -> None:
    check_survives([data])


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=120))
def test_arbitrary_bytes_one_at_a_time(data: bytes) -> None:
    check_survives([data[i : i + 1] for i in range(len(data))])


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(messages, min_size=1, max_size=5))
def test_arbitrary_json_rpc_shapes(msgs: list[dict[str, object]]) -> None:
    check_survives([b"".join(json.dumps(m).encode() + b"\n" for m in msgs)])


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(messages, min_size=1, max_size=5))
def test_arbitrary_input_to_a_client(msgs: list[dict[str, object]]) -> None:
    client, server = initialized_pair()
    client.send(
        Request(
            id=1,
            method="tools/call",
            params=t.CallToolRequestParams(name="x", meta={"progressToken": 1}),
        )
    )
    errors: list[RemoteProtocolError] = []
    client.receive_data(b"".join(json.dumps(m).encode() + b"\n" for m in msgs))
    drain(client, errors)
    assert all(isinstance(e, RemoteProtocolError) for e in errors)


@pytest.mark.parametrize("line", [b"[" * 100_000, b'{"a":' * 50_000])
def test_deep_nesting_is_a_parse_error(line: bytes) -> None:
    client, server = initialized_pair()
    server.receive_data(line + b"\n")
    with pytest.raises(RemoteProtocolError) as exc:
        server.next_event()
    assert exc.value.code == -32700


@settings(max_examples=500)
@given(
    st.binary(max_size=200)
    | st.text(alphabet='{}[]",:\\ id method 0123456789', max_size=80).map(str.encode)
)
def test_peek_never_fails(prefix: bytes) -> None:
    from mcp_ref._jsonrpc import peek, valid_id

    rid, _ = peek(prefix)
    assert rid is None or valid_id(rid)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(messages, min_size=1, max_size=3), st.integers(min_value=20, max_value=200))
def test_arbitrary_input_with_a_small_size_limit(msgs: list[dict[str, object]], limit: int) -> None:
    from mcp_ref import SERVER, Connection

    conn = Connection(SERVER, max_message_bytes=limit)
    errors: list[RemoteProtocolError] = []
    conn.receive_data(b"".join(json.dumps(m).encode() + b"\n" for m in msgs))
    drain(conn, errors)

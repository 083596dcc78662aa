"""``python -m bench.convert_cattrs`` measures what it says.

The bench times ``mcp_ref._convert`` against two other configurations of cattrs (the same
without ``detailed_validation``; cattrs' loose defaults with wire names) by plugging each
into the connection.  This checks that the variants really differ where they should
(loose coerces, ours refuses), that they agree on the hot path's valid messages, that
plugging one in reaches the connection and is undone after, and that the measurements
run.  Nothing is timed here (the bench runs at tiny sizes only to prove it runs).
"""

from __future__ import annotations

from typing import Any

import pytest

from bench import convert_cattrs as cc
from bench.hotpath import call_line, initialized_pair
from mcp_ref import NEED_DATA, RemoteProtocolError, Request, _connection
from mcp_ref import types as t
from mcp_ref._convert import ConversionError, structure, unstructure


@pytest.mark.parametrize(("label", "tp", "data"), cc.HOT, ids=[h[0] for h in cc.HOT])
def test_every_variant_converts_the_hot_path_messages_alike(label: str, tp: Any, data: Any) -> None:
    ours = structure(data, tp)
    for _name, conv in cc.VARIANTS[1:]:
        assert conv is not None
        structurer, unstructurer = cc.hooks(conv)
        theirs = structurer(tp)(data)
        assert theirs == ours, label
        assert unstructurer(type(theirs))(theirs) == unstructure(ours) == data


def test_loose_is_loose_and_ours_is_strict() -> None:
    structurer, _ = cc.hooks(cc.LOOSE)
    assert structurer(t.CallToolRequestParams)({"name": 123}).name == "123"
    assert structurer(t.CallToolResult)({"content": [], "zz": 1}).extra == {}
    with pytest.raises(ConversionError):
        structure({"name": 123}, t.CallToolRequestParams)
    fast, _ = cc.hooks(cc.FAST)
    with pytest.raises(ConversionError):
        fast(t.CallToolRequestParams)({"name": 123})


def test_the_bench_plugs_the_converter_into_the_connection() -> None:
    """Under ``plugged(LOOSE)`` (cattrs' coercing defaults) a tools/call whose name is a
    number gets through as a string; with ours, or after the block, it is refused."""
    bad = b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":7}}\n'
    ours_structurer = _connection._structurer
    with cc.plugged(cc.LOOSE):
        _, server = initialized_pair()
        server.receive_data(bad)
        event = server.next_event()
        assert isinstance(event, Request) and event.params.name == "7"
    assert _connection._structurer is ours_structurer
    for conv in (None, cc.FAST):
        with cc.plugged(conv):
            _, server = initialized_pair()
            server.receive_data(bad)
            with pytest.raises(RemoteProtocolError) as caught:
                server.next_event()
            assert caught.value.code == -32602
            server.receive_data(call_line(6, "hi"))
            event = server.next_event()
            assert isinstance(event, Request) and event.params.arguments == {"text": "hi"}
            assert server.next_event() is NEED_DATA


def test_the_measurements_run() -> None:
    """Tiny sizes: every variant gives a number for every row (no timing is checked)."""
    messages = cc.measure_messages(repeats=1, run_s=0.0001)
    assert len(messages) == 2 * len(cc.HOT)
    hot = cc.measure_hotpath(repeats=1, messages=5)
    assert [case for case, _ in hot] == list(cc.HOTPATH_CASES)
    rows = [spreads for *_, spreads in messages] + [spreads for _, spreads in hot]
    for spreads in rows:
        assert set(spreads) == {name for name, _ in cc.VARIANTS}
        assert all(s.median > 0 for s in spreads.values())
    assert "without detailed validation" in cc.render(messages, hot)

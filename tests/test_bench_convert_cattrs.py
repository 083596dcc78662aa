"""The cattrs converter of ``bench/convert_cattrs.py`` still agrees with ``_convert``.

Issue 14 keeps ``mcp_ref/_convert.py`` only if cattrs' own hooks, configured as
strictly, are more than 20% slower on the core hot path; ``python -m
bench.convert_cattrs`` measures it.  The measurement means something only while the two
converters do the same job, so this checks that they agree (the same refusals, equal
objects, equal JSON back) on every official example, the hot path's messages and damaged
copies of them, that the strict points really are strict, and that the bench plugs the
converter into the connection.  Nothing is timed here (the bench runs at tiny sizes only
to prove it runs).
"""

from __future__ import annotations

from typing import Any

import pytest

from bench import convert_cattrs as cc
from bench.hotpath import call_line, initialized_pair
from mcp_ref import NEED_DATA, RemoteProtocolError, Request, _connection
from mcp_ref import types as t
from mcp_ref._convert import ConversionError, structure, unstructure


def test_the_two_converters_agree_on_every_example_and_its_damaged_copies() -> None:
    result = cc.agreement()
    counts = result["counts"]
    assert counts["inputs"] > 5000
    assert counts["both_refuse"] > counts["inputs"] // 4  # the damage is real
    assert result["disagreements"] == []
    assert counts["agree"] == counts["inputs"]


@pytest.mark.parametrize(
    ("tp", "data"),
    [
        (t.CallToolRequestParams, {"name": 123}),  # cattrs alone would call str(123)
        (t.CallToolRequestParams, {"name": "x", "arguments": []}),  # dict([]) == {}
        (t.ProgressNotificationParams, {"progressToken": True, "progress": 1}),  # bool is int
        (t.ProgressNotificationParams, {"progressToken": "p", "progress": "1"}),
        (t.TextContent, {"text": "x"}),  # a constant with a default is still required
        (t.TextContent, {"type": "text", "text": "x", "annotations": None}),  # no null
        (t.CallToolResult, {"content": "abc"}),  # cattrs alone takes any iterable
        (t.CallToolResult, {"content": [{"type": "video"}]}),
        (t.ListToolsResult, {"tools": [], "nextCursor": 5}),
        (t.Result, []),  # no required field: only the type of the value refuses it
        (t.Result, "abc"),
    ],
)
def test_both_refuse_what_cattrs_defaults_would_accept(tp: Any, data: Any) -> None:
    with pytest.raises(ConversionError):
        structure(data, tp)
    with pytest.raises(ConversionError):
        cc.structure_fn(tp)(data)


def test_unknown_keys_are_kept_and_written_back() -> None:
    wire = {"content": [{"type": "text", "text": "x", "zz": [1]}], "isError": False, "new": 1}
    obj = cc.structure_fn(t.CallToolResult)(wire)
    assert obj == structure(wire, t.CallToolResult)
    assert obj.extra == {"new": 1} and obj.content[0].extra == {"zz": [1]}
    assert cc.unstructure_fn(t.CallToolResult)(obj) == wire == unstructure(obj)


def test_unions_without_a_tag_follow_our_rule() -> None:
    """cattrs would pick ElicitRequestURLParams by its unique key ``url`` (or
    ``elicitationId``, depending on the hash seed) and refuse; ours takes the form."""
    form = {"message": "m", "requestedSchema": {"type": "object", "properties": {}}}
    union: Any = t.ElicitRequestParams
    for extra in ({"url": "https://x.example"}, {"elicitationId": "e"}):
        data = {**form, **extra}
        got = cc.structure_fn(union)(data)
        assert type(got) is t.ElicitRequestFormParams
        assert got == structure(data, union)
    hand = cc.build_all()
    for union in (t.ElicitRequestParams, t.ServerResult, t.ClientResult):
        assert union in hand
    assert t.ContentBlock not in hand  # cattrs' own tagged-union strategy


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
    assert "Verdict (issue 14)" in cc.render(messages, hot, None)

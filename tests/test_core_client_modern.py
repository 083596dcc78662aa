"""The client core's modern era (2026-07-28), without I/O: the opening in each era
(:meth:`ClientCore.opening`), the retries of ``input_required`` (:class:`InputRounds`),
and the version a -32022 asks for.  Pages: 2026-07-28/basic/versioning,
2026-07-28/basic/transports/stdio (backward compatibility), 2026-07-28/basic/patterns/mrtr.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_ref import CLIENT, Connection, LocalProtocolError, McpError, NoAnswerError, Request
from mcp_ref import types as t
from mcp_ref._client import ClientCore, InputRounds, TooManyInputRounds
from mcp_ref._modern import PROTOCOL_VERSION_KEY

spec = pytest.mark.spec


def _discover(versions: list[str] | None = None) -> t.DiscoverResult:
    return t.DiscoverResult(
        result_type="complete",
        supported_versions=versions or ["2026-07-28"],
        capabilities=t.ServerCapabilities(),
        ttl_ms=0,
        cache_scope="private",
    )


def _init() -> t.InitializeResult:
    return t.InitializeResult(
        protocol_version="2025-11-25",
        capabilities=t.ServerCapabilities(),
        server_info=t.Implementation(name="s", version="1"),
    )


def _run(core: ClientCore, conn: Connection, answers: list[Any]) -> list[Any]:
    """Run the opening, answering each request with the next of ``answers``; the
    steps it took (a request as ``(method, era of the connection)``)."""
    steps = core.opening(conn)
    taken: list[Any] = []
    answer: Any = None
    while True:
        try:
            step = steps.send(answer)
        except StopIteration:
            return taken
        if isinstance(step, tuple):
            taken.append((step[0], conn.era))
            answer = answers.pop(0)
        else:
            taken.append(step.method)
            answer = None


def test_legacy_opens_with_the_handshake() -> None:
    core, conn = ClientCore(era="legacy"), Connection(CLIENT)
    steps = _run(core, conn, [_init()])
    assert steps == [("initialize", "legacy"), "notifications/initialized"]
    assert core.spoken == "legacy" and core.negotiated_version == "2025-11-25"


def test_modern_opens_with_nothing_and_writes_meta() -> None:
    core, conn = ClientCore(era="modern"), Connection(CLIENT, newline_framing=False)
    assert _run(core, conn, []) == []
    assert core.spoken == "modern" and conn.era == "modern"
    wire = json.loads(conn.send(Request(id=1, method="tools/list")))
    assert wire["params"]["_meta"][PROTOCOL_VERSION_KEY] == "2026-07-28"


def test_auto_stays_modern_when_discover_answers() -> None:
    core, conn = ClientCore(era="auto"), Connection(CLIENT)
    assert _run(core, conn, [_discover()]) == [("server/discover", "modern")]
    assert core.spoken == "modern" and core.discover_result is not None


@spec("2026-07-28/basic/transports/stdio#backward-compatibility.2")
@pytest.mark.parametrize(
    "refusal",
    [McpError(-32601, "no"), McpError(-32602, "no"), NoAnswerError("server/discover", 10.0)],
)
def test_auto_falls_back_on_any_other_error_or_silence(refusal: McpError) -> None:
    core, conn = ClientCore(era="auto"), Connection(CLIENT)
    steps = _run(core, conn, [refusal, _init()])
    assert steps == [
        ("server/discover", "modern"),
        ("initialize", "legacy"),
        "notifications/initialized",
    ]
    assert core.spoken == "legacy"


def test_auto_retries_once_with_a_version_the_server_lists() -> None:
    core, conn = ClientCore(era="auto"), Connection(CLIENT)
    unsupported = McpError(-32022, "no", {"supported": ["2026-07-28"], "requested": "x"})
    steps = _run(core, conn, [unsupported, _discover()])
    assert steps == [("server/discover", "modern"), ("server/discover", "modern")]
    listing_none = McpError(-32022, "no", {"supported": ["2099-01-01"]})
    with pytest.raises(McpError, match="no"):
        _run(ClientCore(era="auto"), Connection(CLIENT), [listing_none])


def test_a_server_not_listing_our_version_is_refused() -> None:
    with pytest.raises(LocalProtocolError, match="2099-01-01"):
        ClientCore(era="auto").discovered(_discover(["2099-01-01"]))


def _asking(state: str | None) -> t.InputRequiredResult:
    return t.InputRequiredResult(
        result_type="input_required",
        input_requests={"r": t.ListRootsRequest()},
        request_state=state,
    )


@spec(
    "2026-07-28/basic/patterns/mrtr#client-requirements-basic-workflow.3",
    "2026-07-28/basic/patterns/mrtr#client-requirements-basic-workflow.5",
)
def test_each_retry_carries_the_answers_and_the_state_it_was_given() -> None:
    params = t.CallToolRequestParams(name="x", arguments={"a": 1})
    rounds = InputRounds("tools/call", params)
    assert rounds.asked(_asking("s1")) == [("r", ("roots/list", None))]
    answer = t.ListRootsResult(roots=[])
    first = rounds.retry({"r": answer})
    assert first.request_state == "s1" and first.input_responses == {"r": answer}
    assert first.arguments == {"a": 1} and params.request_state is None
    rounds.asked(_asking(None))
    second = rounds.retry({})
    assert second.request_state is None and second.input_responses is None


def test_rounds_are_bounded() -> None:
    rounds = InputRounds("prompts/get", t.GetPromptRequestParams(name="p"), max_rounds=2)
    rounds.asked(_asking("a"))
    rounds.asked(_asking("b"))
    with pytest.raises(TooManyInputRounds) as info:
        rounds.asked(_asking("c"))
    assert info.value.rounds == 3 and info.value.code == -32603
    assert rounds.retry({}).request_state == "b"


@spec(
    "2026-07-28/basic/patterns/mrtr#inputrequiredresult.1",
    "2026-07-28/basic/patterns/mrtr#client-requirements-basic-workflow.4",
)
@pytest.mark.parametrize(
    "state",
    ["", "{not json", '{"round": 1}', "=?base64?x?=", "  padded  ", "é\u0000\ufffd", "x" * 4096],
)
def test_the_request_state_goes_back_untouched_whatever_it_holds(state: str) -> None:
    rounds = InputRounds("resources/read", t.ReadResourceRequestParams(uri="file:///a"))
    rounds.asked(_asking(state))
    again = rounds.retry({"r": t.ListRootsResult(roots=[])})
    assert again.request_state == state and type(again.request_state) is str
    conn = Connection(CLIENT, era="modern", newline_framing=False)
    wire = json.loads(conn.send(Request(id=2, method="resources/read", params=again)))
    assert wire["params"]["requestState"] == state

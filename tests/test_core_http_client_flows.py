"""The Streamable HTTP client's jobs, sans-IO (mcp_ref._http_client_flows and
mcp_ref._http_client_steps): each flow run step by step against scripted heads and
bodies, with no socket and no clock -- what the trio and asyncio drivers do, minus I/O.

Source: 2025-06-18/basic/transports (sending messages, session management,
resumability, listening for messages, backwards compatibility).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import attrs
import pytest

from mcp_ref._http import HTTP_SERVER_ERROR, HttpLimits
from mcp_ref._http_client import HttpClientCore
from mcp_ref._http_client_flows import (
    GetStreamFlow,
    LegacyFlow,
    MessageFlow,
    ReplayFlow,
    RequestFlow,
)
from mcp_ref._http_client_steps import (
    MAX_SIGN_INS,
    READ,
    SESSION_NOT_RESTARTED,
    Authorize,
    Done,
    Flow,
    HttpRequest,
    KeepAlivePool,
    NewSession,
    Wait,
    delete_request,
)
from mcp_ref._http_client_streams import ANSWERED_GRACE, MAX_GET_FAILURES

spec = pytest.mark.spec
T = "2025-06-18/basic/transports#"
URL = "http://example.com/mcp"
JSON = [(b"content-type", b"application/json")]
SSE = [(b"content-type", b"text/event-stream")]


def _msg(**fields: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **fields}).encode()


INIT = _msg(id=1, method="initialize", params={})
INITIALIZED = _msg(method="notifications/initialized")
CALL = _msg(id=2, method="tools/call", params={"name": "x"})
RESULT = _msg(id=2, result={"content": []})
NOTE = _msg(method="notifications/message", params={"level": "info", "data": "x"})


def _init_result(version: str = "2025-06-18") -> bytes:
    return _msg(id=1, result={"protocolVersion": version})


def _event(data: bytes, event_id: str | None = None, retry: int | None = None) -> bytes:
    head = (f"id: {event_id}\n" if event_id else "") + (f"retry: {retry}\n" if retry else "")
    return head.encode() + b"data: " + data + b"\n\n"


def _started(**kw: Any) -> HttpClientCore:
    """A core whose handshake went through, with session id ``s1``."""
    core = HttpClientCore(URL, **kw)
    out = core.outgoing(INIT)
    core.answer(200, [*JSON, (b"mcp-session-id", b"s1")], key=out.key)
    core.received(_init_result(), out.key)
    core.outgoing(INITIALIZED)
    return core


@attrs.define
class Answer:
    """One scripted HTTP answer: a head and body chunks (``whole``: the body ended)."""

    status: int
    headers: list[tuple[bytes, bytes]] = attrs.Factory(list)
    chunks: list[bytes] = attrs.Factory(list)
    whole: bool = True


Server = Callable[[HttpRequest], "Answer | str"]


@attrs.define
class Run:
    """What one run of a flow did."""

    done: Done
    requests: list[HttpRequest]
    delivered: list[bytes]
    waits: list[float]
    new_sessions: list[int]
    graced: bool = False


def run(flow: Flow, server: Server, *, new_session: bool = True, steps: int = 50) -> Run:
    """The drivers' loop, with ``server`` answering each request (a str: the exchange
    failed with that text) and ``new_session`` the outcome of every new session."""
    out = Run(Done(), [], [], [], [])
    step = flow.start()
    for _ in range(steps):
        if isinstance(step, Done):
            out.done = step
            return out
        if isinstance(step, HttpRequest):
            out.requests.append(step)
            answer = server(step)
            if isinstance(answer, str):
                step = flow.broken(answer)
                continue
            step = flow.head(answer.status, answer.headers)
            if step is READ:
                for chunk in answer.chunks:
                    out.delivered += flow.receive_data(chunk)
                    out.graced = out.graced or flow.grace is not None
                    if flow.stop:
                        break
                else:
                    if answer.whole:
                        out.delivered += flow.receive_data(b"")
                step = flow.ended(answer.whole and not flow.stop)
        elif isinstance(step, Wait):
            out.waits.append(step.seconds)
            step = flow.waited()
        elif isinstance(step, NewSession):
            out.new_sessions.append(step.generation)
            if new_session:
                flow.core.generation += 1  # as end_new_session does
            step = flow.new_session(new_session)
    raise AssertionError(f"the flow did not end in {steps} steps")


def _header(request: HttpRequest, name: bytes) -> bytes | None:
    return next((v for k, v in request.headers if k == name), None)


def _request_flow(core: HttpClientCore, data: bytes = CALL, **kw: Any) -> RequestFlow:
    return RequestFlow(core, core.outgoing(data), data, **kw)


# -- a request's answer ------------------------------------------------------------------


@spec(T + "sending-messages-to-the-server.1", T + "sending-messages-to-the-server.9")
def test_a_json_answer_is_the_response() -> None:
    core = _started()
    got = run(_request_flow(core), lambda r: Answer(200, JSON, [RESULT[:5], RESULT[5:]]))
    assert got.done == Done() and got.delivered == [RESULT]
    (post,) = got.requests
    assert (post.method, post.target, post.body, post.fresh) == (b"POST", "/mcp", CALL, False)
    assert _header(post, b"mcp-session-id") == b"s1"


def test_a_json_answer_that_is_not_the_response_or_too_large_or_cut_fails() -> None:
    core = _started()
    got = run(_request_flow(core), lambda r: Answer(200, JSON, [NOTE]))
    assert got.done.error == "the JSON answer was not the response to the request"
    assert got.delivered == [NOTE]
    small = _request_flow(core, max_bytes=len(RESULT) - 1)
    got = run(small, lambda r: Answer(200, JSON, [RESULT]))
    assert got.done.error == f"the answer is too large (over {len(RESULT) - 1} bytes)"
    assert got.delivered == []
    exact = _request_flow(core, max_bytes=len(RESULT))
    assert run(exact, lambda r: Answer(200, JSON, [RESULT])).done == Done()
    got = run(_request_flow(core), lambda r: Answer(200, JSON, [RESULT[:5]], whole=False))
    assert got.done.error == "the JSON answer broke off" and got.delivered == []


def test_an_answer_neither_json_nor_sse_and_a_202() -> None:
    core = _started()
    got = run(_request_flow(core), lambda r: Answer(200, [(b"content-type", b"text/plain")]))
    assert got.done.error == "unexpected answer: HTTP 200 'text/plain'"
    assert run(_request_flow(core), lambda r: Answer(202)).done == Done()


@spec(T + "sending-messages-to-the-server.7")
def test_an_http_error_gives_its_json_rpc_error_and_status() -> None:
    core = _started()
    body = _msg(error={"code": -32603, "message": "boom"})
    got = run(_request_flow(core), lambda r: Answer(500, JSON, [body]))
    assert got.done == Done(error="HTTP 500: boom", code=-32603, http_status=500)
    got = run(_request_flow(core), lambda r: Answer(503, [], [b"x" * 100_000]))
    assert got.done.error == "HTTP 503: " + "x" * 200
    assert got.done.code == HTTP_SERVER_ERROR and got.done.http_status == 503
    got = run(_request_flow(core), lambda r: "connection refused")
    assert got.done == Done(error="the HTTP exchange failed: connection refused")


@spec(T + "sending-messages-to-the-server.9")
def test_an_sse_answer_is_read_until_the_response_then_the_server_gets_a_grace() -> None:
    core = _started()
    flow = _request_flow(core)
    chunks = [_event(NOTE), _event(RESULT)[:7], _event(RESULT)[7:], _event(NOTE)]
    got = run(flow, lambda r: Answer(200, SSE, chunks))
    assert got.done == Done() and got.delivered == [NOTE, RESULT, NOTE]
    assert got.graced and flow.grace == ANSWERED_GRACE
    got = run(_request_flow(core), lambda r: Answer(200, SSE, [_event(NOTE)]))
    assert got.done.error == "the SSE stream ended before the response and cannot be resumed"
    assert not got.graced


@spec(
    T + "resumability-and-redelivery.3",
    "2025-11-25/basic/transports#sending-messages-to-the-server.14",
)
def test_a_broken_sse_answer_is_resumed_with_last_event_id_after_retry() -> None:
    core = _started()

    def server(request: HttpRequest) -> Answer:
        if request.method == b"POST":
            return Answer(200, SSE, [_event(NOTE, "e1", retry=250), b"data: cut"], whole=False)
        assert _header(request, b"last-event-id") == b"e1"
        assert _header(request, b"mcp-session-id") == b"s1" and request.fresh
        return Answer(200, SSE, [_event(RESULT, "e2")])

    got = run(_request_flow(core), server)
    assert got.done == Done() and got.delivered == [NOTE, RESULT]
    assert got.waits == [0.25]
    assert [r.method for r in got.requests] == [b"POST", b"GET"]


def test_a_refused_resumption_fails_the_request() -> None:
    core = _started()

    def resume_with(status: int) -> Server:
        def server(request: HttpRequest) -> Answer:
            if request.method == b"POST":
                return Answer(200, SSE, [_event(NOTE, "e1")])
            return Answer(status)

        return server

    got = run(_request_flow(core), resume_with(404))
    assert got.done.error is not None
    assert got.done.error.startswith("resuming the stream failed: HTTP 404: the session")
    assert got.new_sessions == []  # the next request's 404 starts one
    got = run(_request_flow(core), resume_with(405))
    assert got.done.error == "resuming the stream failed: HTTP 405: (no body)"


def test_a_bad_sse_event_fails_the_request() -> None:
    core = _started(limits=HttpLimits(max_event_bytes=100))
    got = run(_request_flow(core), lambda r: Answer(200, SSE, [b"data: " + b"x" * 200]))
    assert got.done.error is not None and "larger than 100" in got.done.error


@spec(T + "session-management.7")
def test_a_404_asks_for_a_new_session_then_posts_again_once() -> None:
    core = _started()
    statuses = iter([404, 404])
    got = run(_request_flow(core), lambda r: Answer(next(statuses)))
    assert got.new_sessions == [0]
    assert [r.body for r in got.requests] == [CALL, CALL]
    assert got.done.session_lost and got.done.http_status == 404
    assert got.done.error == "HTTP 404: (no body)"
    statuses = iter([404, 200])
    got = run(_request_flow(core), lambda r: Answer(next(statuses), JSON, [RESULT]))
    assert got.done == Done() and got.new_sessions == [1]
    got = run(_request_flow(core), lambda r: Answer(404), new_session=False)
    assert got.done == Done(error=SESSION_NOT_RESTARTED)


def test_initialize_refused_means_the_fallback_or_authorization() -> None:
    core = HttpClientCore(URL)
    flow = _request_flow(core, INIT)
    assert isinstance(flow.head(405, []), Done) and flow.fallback and not flow.fatal
    flow = _request_flow(HttpClientCore(URL), INIT)
    got = run(flow, lambda r: Answer(401, JSON, [b'{"error":"invalid_token"}']))
    assert flow.fatal and not flow.fallback
    assert got.done.error == (
        "the server wants authorization; open the client with auth= to sign in: "
        'HTTP 401: {"error":"invalid_token"}'
    )


def _signed_in_core(token: str | None = "t1") -> HttpClientCore:
    """A started core that can sign in, holding a grant with ``token`` (None: none)."""
    from mcp_ref._http_client_auth import ClientAuth, OAuthClientOptions
    from mcp_ref._oauth_grants import Grant
    from mcp_ref._oauth_metadata import ClientInfo

    options = OAuthClientOptions(redirect_uri="http://127.0.0.1:9/cb")
    core = _started(auth=ClientAuth(URL, options))
    if token is not None:
        assert core.auth is not None
        core.auth.authorized(
            Grant(
                access_token=token,
                expires_at=None,
                refresh_token=None,
                scope=None,
                resource=URL,
                token_endpoint="https://as.example.com/token",
                client=ClientInfo(client_id="c"),
                auth_method="none",
            )
        )
    return core


CHALLENGE = (b"www-authenticate", b'Bearer resource_metadata="https://example.com/prm"')


@spec(
    "2025-06-18/basic/authorization#token-requirements.3",
    "2025-03-26/basic/authorization#token-requirements.3",
    "2026-07-28/basic/authorization/index#token-requirements.3",
)
def test_a_401_asks_for_a_sign_in_then_posts_again_with_the_token() -> None:
    core = _signed_in_core(None)
    flow = _request_flow(core)
    step = flow.start()
    assert _header(step, b"authorization") is None  # not signed in yet
    assert flow.head(401, [CHALLENGE, *JSON]) is READ
    flow.receive_data(b'{"error":"invalid_token"}')
    flow.receive_data(b"")
    step = flow.ended(True)
    assert step == Authorize(
        status=401,
        www_authenticate=['Bearer resource_metadata="https://example.com/prm"'],
        generation=0,
    )
    assert core.auth is not None and not core.auth.stale(step.generation)
    # The driver signs in; here, a grant taken by hand.
    other = _signed_in_core("t2").auth
    assert other is not None and other.grant is not None
    core.auth.authorized(other.grant)
    assert core.auth.stale(step.generation)  # a late task would just send again
    again = flow.signed_in(None)
    assert isinstance(again, HttpRequest)
    assert _header(again, b"authorization") == b"Bearer t2"
    assert flow.signed_in("sign-in failed: no") == Done(error="sign-in failed: no", http_status=401)


def test_a_message_refused_after_sign_ins_gives_up_and_without_auth_is_refused() -> None:
    core = _signed_in_core()
    flow = MessageFlow(core, INITIALIZED)
    asked = 0
    step = flow.start()
    for _ in range(10):
        assert isinstance(step, HttpRequest)
        assert _header(step, b"authorization") == b"Bearer t1"
        assert flow.head(403, [CHALLENGE]) is READ
        flow.receive_data(b"")
        step = flow.ended(True)
        if isinstance(step, Done):
            break
        assert isinstance(step, Authorize)
        asked += 1
        step = flow.signed_in(None)
    assert asked == MAX_SIGN_INS
    assert isinstance(step, Done) and step.http_status == 403
    assert "still refused after" in (step.error or "")
    # Without auth=, a 401 to anything but initialize is a refusal, not a sign-in.
    got = run(MessageFlow(_started(), INITIALIZED), lambda r: Answer(401, [CHALLENGE]))
    assert got.done.http_status == 401 and len(got.requests) == 1


# -- a notification or a response ----------------------------------------------------------


@spec(T + "sending-messages-to-the-server.5", T + "session-management.7")
def test_a_message_is_taken_by_a_success_and_sent_again_after_a_new_session() -> None:
    core = _started()
    assert run(MessageFlow(core, NOTE), lambda r: Answer(202)).done == Done()
    statuses = iter([404, 202])
    got = run(MessageFlow(core, NOTE), lambda r: Answer(next(statuses)))
    assert got.done == Done() and got.new_sessions == [0] and len(got.requests) == 2
    got = run(MessageFlow(core, NOTE), lambda r: Answer(404))
    assert got.done.session_lost
    got = run(
        MessageFlow(core, NOTE),
        lambda r: Answer(400, JSON, [_msg(error={"code": 1, "message": "no"})]),
    )
    assert got.done == Done(error="HTTP 400: no", code=1, http_status=400)
    assert run(MessageFlow(core, NOTE), lambda r: "reset").done == Done(error="POST failed: reset")


# -- the GET stream -------------------------------------------------------------------------


@spec(T + "listening-for-messages-from-the-server.1", T + "resumability-and-redelivery.3")
def test_the_get_stream_is_reopened_with_its_last_event_id_until_it_gives_up() -> None:
    core = _started()
    answers = iter(
        [Answer(200, SSE, [_event(NOTE, "g1", retry=100)]), Answer(200, SSE, []), Answer(405)]
    )
    got = run(GetStreamFlow(core), lambda r: next(answers))
    assert got.delivered == [NOTE] and got.waits == [0.1, 0.1]
    assert got.done == Done(error="no GET stream (HTTP 405)")
    assert [_header(r, b"last-event-id") for r in got.requests] == [None, b"g1", b"g1"]
    assert all(r.method == b"GET" and r.fresh for r in got.requests)
    null_id = _msg(id=None, error={"code": -32700, "message": "parse error"})
    answers = iter([Answer(200, SSE, [_event(null_id), _event(NOTE)]), Answer(405)])
    got = run(GetStreamFlow(core), lambda r: next(answers))
    assert got.delivered == [null_id, NOTE] and not got.graced
    got = run(GetStreamFlow(core), lambda r: "refused", steps=100)
    assert len(got.waits) == MAX_GET_FAILURES
    assert got.done == Done(error="GET stream given up: refused")


def test_the_get_stream_after_409_and_after_a_new_session() -> None:
    core = _started()
    answers = iter([Answer(200, SSE, [_event(NOTE, "g1")]), Answer(409), Answer(404), Answer(405)])
    got = run(GetStreamFlow(core), lambda r: next(answers))
    # 409 to our Last-Event-ID: the id forgotten, reopened at once; 404: a new session,
    # then a new stream (no id of the old one)
    assert [_header(r, b"last-event-id") for r in got.requests] == [None, b"g1", None, None]
    assert got.new_sessions == [0] and got.waits == [1.0]
    answers = iter([Answer(404)])
    got = run(GetStreamFlow(core), lambda r: next(answers), new_session=False)
    assert got.done == Done(error=SESSION_NOT_RESTARTED)


# -- a new session's handshake --------------------------------------------------------------


@spec(T + "session-management.7")
def test_the_replay_posts_initialize_without_a_session_id_then_initialized() -> None:
    core = _started()
    assert core.begin_new_session(0) is True

    def server(request: HttpRequest) -> Answer:
        if request.body == INIT:
            assert _header(request, b"mcp-session-id") is None
            return Answer(200, [*SSE, (b"mcp-session-id", b"s2")], [_event(_init_result())])
        assert _header(request, b"mcp-session-id") == b"s2"
        return Answer(202)

    got = run(ReplayFlow(core), server)
    assert got.done == Done() and got.delivered == []
    assert [r.body for r in got.requests] == [INIT, INITIALIZED]


def test_a_replay_that_fails() -> None:
    def replay(server: Server) -> Done:
        core = _started()
        assert core.begin_new_session(0)
        return run(ReplayFlow(core), server).done

    other = replay(lambda r: Answer(200, JSON, [_init_result("2025-03-26")]))
    assert other.error == "the new session was refused or negotiated another version"
    assert replay(lambda r: Answer(500)).error == "the new session was refused: HTTP 500"
    statuses = iter([200, 400])
    done = replay(lambda r: Answer(next(statuses), JSON, [_init_result()]))
    assert done.error is not None and done.error.startswith("the new session refused")


# -- 2024-11-05 ------------------------------------------------------------------------------


def test_the_legacy_stream_names_the_endpoint_then_brings_every_message() -> None:
    core = HttpClientCore(URL)
    core.outgoing(INIT)
    flow = LegacyFlow(core)
    stream = [b"event: endpoint\ndata: /messages?s=1\n\n", _event(_init_result())]
    got = run(flow, lambda r: Answer(200, SSE, stream))
    assert flow.ready and core.post_target == "/messages?s=1" and core.mode == "legacy"
    assert got.delivered == [_init_result()] and core.protocol_version == "2025-06-18"
    assert not got.graced  # the one stream of the session: never given up when answered
    assert got.done == Done(error="the 2024-11-05 SSE stream ended")
    flow = LegacyFlow(HttpClientCore(URL))
    got = run(flow, lambda r: Answer(200, SSE, [b"event: endpoint\ndata: http://evil/m\n\n"]))
    assert not flow.ready and flow.error is not None and "origin" in flow.error
    flow = LegacyFlow(HttpClientCore(URL))
    got = run(flow, lambda r: Answer(404))
    assert flow.error is not None and "not a 2024-11-05" in flow.error


def test_delete_ends_the_session() -> None:
    request = delete_request(_started())
    assert (request.method, request.target, request.body) == (b"DELETE", "/mcp", b"")
    assert _header(request, b"mcp-session-id") == b"s1"


def test_the_pool_reuses_the_newest_fresh_connection_and_hands_back_the_stale() -> None:
    pool: KeepAlivePool[str] = KeepAlivePool(size=2, idle_seconds=4.0)
    assert pool.put("old", 0.0) and pool.put("new", 3.0)
    assert not pool.put("third", 3.0)  # full: the driver closes it
    assert pool.take(5.0) == ("new", [])  # idle 2 s: reused
    assert pool.take(5.0) == (None, ["old"])  # idle 5 s: stale, to close
    assert pool.put("a", 6.0) and pool.clear() == ["a"] and pool.take(6.0) == (None, [])

"""The resource server's sans-IO parts (mcp_ref/_http_auth.py), without I/O: the
metadata a protected server's connection answers itself, the operations a body carries,
the headers a handler sees, and who owns a session."""

from __future__ import annotations

import json
from typing import Any

import attrs
import h11
import pytest

from mcp_ref._http import HttpLimits
from mcp_ref._http_auth import (
    CALLER,
    Caller,
    HttpHeaders,
    MetadataConnection,
    ResourceAuth,
    admission,
    answer_events,
    check_http_request,
    current_owner,
    operations_of,
    owner_key,
    server_connection,
    session_refusal,
)
from mcp_ref._http_connection import NEED_DATA, Refusal, RequestReady, ServerConnection
from mcp_ref._http_server import Endpoint, RequestHeaders
from mcp_ref._oauth_resource import ResourceConfig, ScopePolicy, challenge
from mcp_ref._oauth_resource_guard import Allowed
from mcp_ref._oauth_verify import Identity, TokenRejected

from ._http_core import CFG

spec = pytest.mark.spec
RESOURCE = "https://mcp.example.com/mcp"
CONFIG = ResourceConfig(
    resource=RESOURCE,
    authorization_servers=("https://auth.example.com",),
    policy=ScopePolicy(per_operation={"tools/call:rm": frozenset({"admin"})}),
)
HOST = b"host: localhost:8000\r\n"


def who(sub: str | None = "alice", client: str = "app", scopes: tuple[str, ...] = ()) -> Identity:
    return Identity(
        subject=sub,
        client_id=client,
        scopes=frozenset(scopes),
        expires_at=None,
        audience=(RESOURCE,),
        issuer="https://auth.example.com",
    )


def metadata_conn(**limits: Any) -> MetadataConnection:
    return MetadataConnection(attrs.evolve(CFG, limits=HttpLimits(**limits)), {}, resource=CONFIG)


def written(data: bytes) -> tuple[h11.Response, bytes]:
    """The response ``data`` holds, and its body."""
    client = h11.Connection(h11.CLIENT)
    client.send(h11.Request(method="GET", target="/", headers=[("host", "x")]))
    client.send(h11.EndOfMessage())
    client.receive_data(data)
    head = client.next_event()
    assert isinstance(head, h11.Response)
    body = b""
    while isinstance(event := client.next_event(), h11.Data):
        body += event.data
    return head, body


@spec("2025-11-25/basic/authorization#authorization-server-location.1")
def test_the_connection_answers_the_metadata_and_serves_the_next_request() -> None:
    conn = metadata_conn()
    get = b"GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\n" + HOST + b"\r\n"
    conn.receive_data(get + get)
    for _ in range(2):  # keep-alive: one answer, then the next request
        event = conn.next_event()
        assert isinstance(event, Refusal) and not event.close
        head, body = written(event.data)
        assert head.status_code == 200
        assert json.loads(body)["resource"] == RESOURCE
        assert conn.next_cycle(False)
    assert conn.next_event() is NEED_DATA


def test_head_gets_no_body_and_a_metadata_post_closes() -> None:
    conn = metadata_conn()
    conn.receive_data(b"HEAD /.well-known/oauth-protected-resource HTTP/1.1\r\n" + HOST + b"\r\n")
    event = conn.next_event()
    assert isinstance(event, Refusal) and not event.close
    assert b"content-length" in event.data.lower() and not event.data.endswith(b"}")
    conn = metadata_conn()
    post = b"POST /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\n" + HOST
    conn.receive_data(post + b"content-length: 5\r\n\r\n")
    event = conn.next_event()
    assert isinstance(event, Refusal) and event.close  # its body was not read
    assert b" 405 " in event.data.split(b"\r\n")[0]


def test_the_last_request_of_a_connection_is_marked_on_the_metadata_answer() -> None:
    conn = metadata_conn(max_requests_per_connection=1)
    conn.receive_data(b"GET /.well-known/oauth-protected-resource HTTP/1.1\r\n" + HOST + b"\r\n")
    event = conn.next_event()
    assert isinstance(event, Refusal) and event.close
    assert b"connection: close" in event.data.lower()


def test_other_paths_are_routed_as_before() -> None:
    conn = metadata_conn()
    conn.receive_data(b"GET /elsewhere HTTP/1.1\r\n" + HOST + b"\r\n")
    event = conn.next_event()
    assert isinstance(event, Refusal) and b" 404 " in event.data.split(b"\r\n")[0]
    assert type(server_connection(CFG, {}, auth=None)) is ServerConnection
    auth = ResourceAuth(config=CONFIG, verifier=lambda: None)  # type: ignore[arg-type]
    assert isinstance(server_connection(CFG, {}, auth=auth), MetadataConnection)


def test_operations_are_read_from_one_message_or_a_batch_and_never_raise() -> None:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "rm"}}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert operations_of(json.dumps(call).encode()) == ("tools/call", "tools/call:rm")
    assert operations_of(json.dumps([call, note]).encode()) == (
        "tools/call",
        "tools/call:rm",
        "notifications/initialized",
    )
    for bad in (b"", b"{", b"\xff", b"[" * 10_000, b"42", b'{"result": 1}'):
        assert operations_of(bad) == ()


def request(body: bytes = b"", query: str = "", **headers: str) -> RequestReady:
    items = [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]
    return RequestReady(
        endpoint=Endpoint.POST,
        query=query,
        headers=RequestHeaders(items, {}, 0),
        body=body,
        last=False,
    )


class Table:
    def verify(self, token: str, *, now: float) -> Identity | TokenRejected:
        return who(scopes=("mcp",)) if token == "t" else TokenRejected(reason="no")


def test_the_check_reads_the_body_s_tool_for_its_scope() -> None:
    auth = ResourceAuth(config=CONFIG, verifier=Table())
    rm = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "rm"}})
    ls = rm.replace('"rm"', '"ls"')
    assert isinstance(
        check_http_request(auth, request(ls.encode(), authorization="Bearer t"), now=0), Allowed
    )
    refused = check_http_request(auth, request(rm.encode(), authorization="Bearer t"), now=0)
    assert not isinstance(refused, Allowed) and refused.status == 403  # type: ignore[union-attr]


def test_headers_are_read_only_case_insensitive_and_hide_the_token() -> None:
    fields = [(b"x-a", b"1"), (b"authorization", b"Bearer secret"), (b"x-a", b"2")]
    headers = Caller(None, fields, frozenset({"authorization"})).headers
    assert headers["X-A"] == "1, 2" and headers.get_all("x-a") == ["1", "2"]
    assert list(headers) == ["x-a"] and len(headers) == 1 and "authorization" not in headers
    assert "secret" not in repr(headers)
    assert Caller(None, fields).headers["authorization"] == "Bearer secret"
    assert HttpHeaders([("K", "v")])["k"] == "v"


def test_answer_events_frame_the_body() -> None:
    events = answer_events(challenge(CONFIG, "missing"), last=True)
    head = events[0]
    assert head.status_code == 401 and (b"connection", b"close") in head.headers
    assert isinstance(events[-1], h11.EndOfMessage)


@spec("2025-06-18/basic/security_best_practices#mitigation-2.5")
def test_a_session_belongs_to_its_owner() -> None:
    assert owner_key(None) is None
    assert owner_key(who()) == ("https://auth.example.com", "alice")
    assert owner_key(who(sub=None)) == ("https://auth.example.com", "client:app")

    class Sess:
        kind = "streamable"
        owner = owner_key(who())

    live = {"s1": Sess()}
    req = request(mcp_session_id="s1")
    assert session_refusal(req, live, who()) is None
    refused = session_refusal(req, live, who(sub="bob"))
    assert refused is not None and refused.status == 404
    assert session_refusal(request(mcp_session_id="nope"), live, who(sub="bob")) is None


def test_current_owner_is_the_owner_key_of_this_tasks_caller() -> None:
    assert current_owner() is None  # outside HTTP
    for identity in (None, who(), who(sub=None)):
        token = CALLER.set(Caller(identity, ()))
        try:
            assert current_owner() == owner_key(identity)
        finally:
            CALLER.reset(token)


def test_admission_sets_the_caller_or_gives_the_refusal() -> None:
    auth = ResourceAuth(config=CONFIG, verifier=Table())

    class Sess:
        kind = "streamable"
        owner = owner_key(who(sub="bob"))

    req = request(authorization="Bearer t")
    caller, refusal = admission(auth, req, Allowed(identity=who()), {})
    assert caller is not None and caller.identity == who() and refusal is None
    assert "authorization" not in caller.headers  # the token is never passed on
    # Another caller's session: 404, the caller still known.
    caller, refusal = admission(
        auth, request(mcp_session_id="s1"), Allowed(identity=who()), {"s1": Sess()}
    )
    assert caller is not None and getattr(refusal, "status", None) == 404
    # A refusal of the check is written as it is; a verifier that failed is refused too.
    missing = challenge(CONFIG, "missing")
    assert admission(auth, req, missing, {}) == (None, missing)
    caller, refusal = admission(auth, req, None, {})
    assert caller is None and refusal is not None and refusal.status >= 400

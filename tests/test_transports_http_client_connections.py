"""The Streamable HTTP client's request path: one write per request, headers built once
per session, and a pooled connection the server closed meanwhile.

Against the scripted fake server of ``test_transports_http_client``.
"""

from __future__ import annotations

import trio
import trio.testing

from mcp_ref.client import open_http_client
from mcp_ref.trio.http.common import Supervisor

from .test_transports_http_client import Reply, Req, _standard, fake_server, text_result

TIMEOUT = 15


async def test_a_pooled_connection_closed_by_the_server_is_replaced() -> None:
    """The server answers a call, then closes that keep-alive connection.  The next call
    meets the dead pooled connection, receives nothing on it, and is sent again on a new
    one: it succeeds, and the server handled it once."""
    calls: list[int] = []

    async def script(req: Req, reply: Reply) -> None:
        if req.method == "POST" and req.json.get("method") == "tools/call":
            calls.append(req.json["id"])
            await reply.json(text_result(req.json["id"], f"call {len(calls)}"))
            if len(calls) == 1:
                raise trio.BrokenResourceError("the fake closes this connection")
        elif not await _standard(req, reply):
            await reply.status(500)

    with trio.fail_after(TIMEOUT):
        async with fake_server(script) as (url, fake), open_http_client(url) as client:
            first = await client.call_tool("x")
            assert first.content[0].text == "call 1"  # type: ignore[union-attr]
            await trio.testing.wait_all_tasks_blocked()  # the fake has closed it
            second = await client.call_tool("x")
            assert second.content[0].text == "call 2"  # type: ignore[union-attr]
            assert len(calls) == 2 and calls[0] != calls[1]
            posts = [r for r in fake.requests if r.method == "POST"]
            assert all(r.headers["content-length"] == str(len(r.body)) for r in posts)


async def test_supervisor_runs_jobs_handed_before_and_after_it_starts_and_none_after_close() -> (
    None
):
    ran: list[str] = []

    async def job(name: str) -> None:
        await trio.lowlevel.checkpoint()
        ran.append(name)

    supervisor = Supervisor(max_pending=2)
    assert supervisor.start_soon(job, "queued 1")
    assert supervisor.start_soon(job, "queued 2")
    assert not supervisor.start_soon(job, "over the bound")  # the queue holds two
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            await nursery.start(supervisor.run)
            assert supervisor.start_soon(job, "after start")
            await trio.testing.wait_all_tasks_blocked()
            assert sorted(ran) == ["after start", "queued 1", "queued 2"]
            supervisor.close()
            assert not supervisor.start_soon(job, "after close")
        # run returned by itself after close (the nursery did not need a cancel)
    assert len(ran) == 3

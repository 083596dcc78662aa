"""basic/utilities/tasks (2025-11-25) on the high-level server: a task-augmented
``tools/call`` answered at once, ``tasks/get``, ``/result``, ``/list``, ``/cancel``, the
tool-level negotiation, isolation between callers, the bounds, and the store records
(memory and Redis).  Through the in-memory harness (a bare client session)."""

from __future__ import annotations

import importlib.util
import json
import shutil
from datetime import datetime
from typing import Any

import attrs
import jsonschema
import pytest
import trio
import trio.testing

from mcp_ref import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, McpError
from mcp_ref import types as t
from mcp_ref._stores import MemoryStores, TaskRecord
from mcp_ref.server import Context, Server
from mcp_ref.server._tasks import RELATED_TASK

from ._server_harness import RecordingChannel, connect
from ._spec import schema_for

P = "2025-11-25/basic/utilities/tasks#"
spec = pytest.mark.spec
DEFS: dict[str, Any] = schema_for("2025-11-25")["$defs"]


def valid(name: str, message: Any) -> None:
    """``message`` (JSON) is a valid ``name`` of the 2025-11-25 schema."""
    jsonschema.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": DEFS}).validate(message)


@attrs.define
class Gates:
    """What the test tools wait on, and what they saw."""

    release: trio.Event = attrs.field(factory=trio.Event)
    started: trio.Event = attrs.field(factory=trio.Event)
    stopped: bool = False


def make_server(gates: Gates | None = None, **kw: Any) -> Server:
    """slow (optional: waits for ``gates.release``), doubled (required), plain (no
    tasks), refused (raises an McpError), broken (a tool error: isError)."""
    server = Server("tasks-test", "1", **kw)
    gates = gates or Gates()

    @server.tool(task_support="optional")
    async def slow(text: str) -> str:
        gates.started.set()
        try:
            await gates.release.wait()
        except trio.Cancelled:
            gates.stopped = True
            raise
        return text.upper()

    @server.tool(task_support="required")
    def doubled(n: int) -> int:
        return 2 * n

    @server.tool(task_support="optional")
    def tripled(n: int) -> int:
        return 3 * n

    @server.tool()
    def plain() -> str:
        return "plain"

    @server.tool(task_support="optional")
    def refused() -> str:
        raise McpError(-32042, "no luck", {"why": "testing"})

    @server.tool(task_support="optional")
    def broken() -> str:
        raise RuntimeError("it broke")

    return server


def call(name: str, ttl: int | None = 60_000, **arguments: Any) -> t.CallToolRequestParams:
    task = None if ttl is None else t.TaskMetadata(ttl=ttl)
    return t.CallToolRequestParams(name=name, arguments=arguments, task=task)


async def create(side: Any, name: str, ttl: int | None = 60_000, **arguments: Any) -> t.Task:
    created = await side.request("tools/call", call(name, ttl, **arguments))
    assert isinstance(created, t.CreateTaskResult), created
    return created.task


async def get(side: Any, task_id: str) -> t.GetTaskResult:
    result: t.GetTaskResult = await side.request(
        "tasks/get", t.GetTaskRequestParams(task_id=task_id)
    )
    return result


async def result_of(side: Any, task_id: str) -> t.GetTaskPayloadResult:
    got: t.GetTaskPayloadResult = await side.request(
        "tasks/result", t.GetTaskPayloadRequestParams(task_id=task_id)
    )
    return got


async def cancel(side: Any, task_id: str) -> t.CancelTaskResult:
    got: t.CancelTaskResult = await side.request(
        "tasks/cancel", t.CancelTaskRequestParams(task_id=task_id)
    )
    return got


def sent(record: RecordingChannel, method: str, n: int = 0) -> dict[str, Any]:
    """The server's answer to the ``n``-th ``method`` request, as it went on the wire."""
    rid = [m["id"] for m in record.received if m.get("method") == method][n]
    (answer,) = [m for m in record.sent if m.get("id") == rid and "method" not in m]
    return answer


# -- capabilities and tool-level negotiation ----------------------------------------------


@spec(P + "capabilities.1")
async def test_a_server_with_task_tools_declares_tasks() -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as side:
            caps = side.init.capabilities.tasks
            assert caps is not None and caps.list == {} and caps.cancel == {}
            assert caps.requests is not None and caps.requests.tools is not None
            assert caps.requests.tools.call == {}
            tools = (await side.request("tools/list")).tools
            support = {tool.name: tool.execution and tool.execution.task_support for tool in tools}
            assert support["slow"] == "optional" and support["doubled"] == "required"
            assert support["plain"] is None
        plain = Server("plain", "1")
        plain.tool("x")(lambda: "x")
        async with connect(plain) as side:
            assert side.init.capabilities.tasks is None
        with pytest.raises(ValueError, match="task_support"):
            plain.tool("bad", task_support="sometimes")(lambda: "x")


@spec(P + "tool-level-negotiation.6")
async def test_a_required_tool_called_without_a_task_is_method_not_found() -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as side:
            with pytest.raises(McpError) as err:
                await side.request("tools/call", call("doubled", ttl=None, n=2))
            assert err.value.code == METHOD_NOT_FOUND
            task = await create(side, "doubled", n=2)
            payload = await result_of(side, task.task_id)
            assert payload.extra["structuredContent"] == {"result": 4}


@spec(P + "tool-level-negotiation.3")
async def test_a_forbidden_tool_called_as_a_task_is_method_not_found() -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as side:
            with pytest.raises(McpError) as err:
                await side.request("tools/call", call("plain"))
            assert err.value.code == METHOD_NOT_FOUND
            plain = await side.request("tools/call", call("plain", ttl=None))
            assert plain.content[0].text == "plain"


@spec(P + "task-support-and-handling.1")
async def test_without_the_capability_the_task_is_ignored() -> None:
    """No task-capable tool (no ``tasks`` capability): a call carrying ``task`` is
    processed as a plain call; so are calls on a 2025-06-18 session."""
    server = Server("plain", "1")

    @server.tool()
    def hello() -> str:
        return "hello"

    with trio.fail_after(5):
        async with connect(server) as side:
            assert side.init.capabilities.tasks is None
            result = await side.request("tools/call", call("hello"))
            assert isinstance(result, t.CallToolResult) and result.content[0].text == "hello"
        async with connect(make_server(), version="2025-06-18") as side:
            assert side.init.protocol_version == "2025-06-18"
            assert side.init.capabilities.tasks is None
            plain = await side.request("tools/call", call("doubled", ttl=None, n=1))
            assert plain.structured_content == {"result": 2}


async def test_tasks_methods_need_the_capability() -> None:
    server = Server("plain", "1")
    server.tool("x")(lambda: "x")
    with trio.fail_after(5):
        async with connect(server) as side:
            with pytest.raises(McpError) as err:
                await get(side, "any")
            assert err.value.code == METHOD_NOT_FOUND
    late = Server("late", "1")  # a task tool added after the session began
    late.tool("x")(lambda: "x")
    with trio.fail_after(5):
        async with connect(late) as side:
            late.tool("y", task_support="optional")(lambda: "y")
            assert late.capabilities().tasks is not None
            assert (await side.request("tools/call", call("y"))).content[0].text == "y"


# -- creating, polling, retrieving ----------------------------------------------------------


@spec(P + "result-retrieval.1")
@spec(P + "task-status-lifecycle.1")
@spec(P + "ttl-and-resource-management.1")
@spec(P + "ttl-and-resource-management.2")
@spec(P + "ttl-and-resource-management.4")
@spec(P + "task-id-requirements.1")
async def test_a_task_is_answered_at_once_and_polled() -> None:
    gates = Gates()
    record = RecordingChannel()
    with trio.fail_after(5):
        async with connect(make_server(gates), record=record) as side:
            created = await side.request("tools/call", call("slow", text="hi"))
            assert not gates.release.is_set()  # answered while the tool still runs
            assert isinstance(created, t.CreateTaskResult)
            task = created.task
            assert task.status == "working" and isinstance(task.task_id, str)
            answer = sent(record, "tools/call")["result"]
            valid("CreateTaskResult", answer)
            assert answer["task"]["ttl"] == 60_000
            got = await get(side, task.task_id)
            assert got.status == "working" and got.ttl == 60_000 and got.poll_interval == 1000
            valid("GetTaskResult", sent(record, "tasks/get")["result"])
            for stamp in (task.created_at, task.last_updated_at, got.created_at):
                assert datetime.fromisoformat(stamp).tzinfo is not None
            gates.release.set()
            payload = await result_of(side, task.task_id)
            assert payload.extra["content"] == [{"type": "text", "text": "HI"}]
            done = await get(side, task.task_id)
            assert done.status == "completed"
            assert done.last_updated_at >= done.created_at


@spec(P + "result-retrieval.4")
async def test_tasks_result_blocks_until_the_task_ends() -> None:
    gates = Gates()
    with trio.fail_after(5):
        async with connect(make_server(gates)) as side:
            task = await create(side, "slow", text="later")
            got: list[Any] = []

            async def wait_result() -> None:
                got.append(await result_of(side, task.task_id))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(wait_result)
                await trio.testing.wait_all_tasks_blocked()
                assert got == []  # still working: no answer yet
                assert (await get(side, task.task_id)).status == "working"
                gates.release.set()
            assert got[0].extra["content"][0]["text"] == "LATER"


@spec(P + "result-retrieval.3")
@spec(P + "result-retrieval.5")
@spec(P + "task-execution-errors.3")
@spec(P + "related-task-metadata.3")
async def test_tasks_result_is_what_the_call_would_have_returned() -> None:
    record = RecordingChannel()
    with trio.fail_after(5):
        async with connect(make_server(), record=record) as side:
            await side.request("tools/call", call("tripled", ttl=None, n=14))
            task = await create(side, "tripled", n=14)
            await result_of(side, task.task_id)
    direct = sent(record, "tools/call")["result"]
    payload = dict(sent(record, "tasks/result")["result"])
    assert payload.pop("_meta") == {RELATED_TASK: {"taskId": task.task_id}}
    assert payload == direct and direct["structuredContent"] == {"result": 42}
    valid("CallToolResult", sent(record, "tasks/result")["result"])


@spec(P + "task-execution-errors.2")
async def test_a_json_rpc_error_of_the_tool_is_the_error_of_tasks_result() -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as side:
            with pytest.raises(McpError) as direct:
                await side.request("tools/call", call("refused", ttl=None))
            task = await create(side, "refused")
            with pytest.raises(McpError) as err:
                await result_of(side, task.task_id)
            assert (err.value.code, err.value.message, err.value.data) == (
                direct.value.code,
                direct.value.message,
                direct.value.data,
            )
            got = await get(side, task.task_id)
            assert got.status == "failed" and got.status_message == "no luck"


async def test_a_tool_error_fails_the_task_with_its_result() -> None:
    """``isError`` results end the task ``failed`` (tasks#task-execution-errors: "should"),
    and ``tasks/result`` still gives that result."""
    with trio.fail_after(5):
        async with connect(make_server()) as side:
            task = await create(side, "broken")
            payload = await result_of(side, task.task_id)
            assert payload.extra["isError"] is True
            got = await get(side, task.task_id)
            assert got.status == "failed" and "it broke" in (got.status_message or "")


@spec(P + "associating-task-related-messages.1")
async def test_what_a_task_sends_carries_its_task_id() -> None:
    """A task's log messages carry the related-task ``_meta``; its progress reports
    send nothing (the core ties a token to a request in flight) and do not fail it."""
    server = Server("talk", "1")

    @server.tool(task_support="optional")
    async def talk(ctx: Context) -> str:
        await ctx.log("info", "from the task")
        await ctx.report_progress(1, 2)
        return "done"

    with trio.fail_after(5):
        async with connect(server) as side:
            params = attrs.evolve(call("talk"), meta={"progressToken": "p"})
            task = (await side.request("tools/call", params)).task
            payload = await result_of(side, task.task_id)
            assert payload.extra["content"][0]["text"] == "done"
            (note,) = side.notes("notifications/message")
            assert note.data == "from the task"
            assert note.meta == {RELATED_TASK: {"taskId": task.task_id}}
            assert side.notes("notifications/progress") == []


# -- cancelling ------------------------------------------------------------------------------


@spec(P + "task-cancellation.2")
async def test_cancel_stops_the_task_and_answers_cancelled() -> None:
    gates = Gates()
    record = RecordingChannel()
    with trio.fail_after(5):
        async with connect(make_server(gates), record=record) as side:
            task = await create(side, "slow", text="x")
            await gates.started.wait()
            answer = await cancel(side, task.task_id)
            assert answer.status == "cancelled"
            valid("CancelTaskResult", sent(record, "tasks/cancel")["result"])
            await trio.testing.wait_all_tasks_blocked()
            assert gates.stopped
            assert (await get(side, task.task_id)).status == "cancelled"
            with pytest.raises(McpError) as err:
                await result_of(side, task.task_id)
            assert err.value.code == INTERNAL_ERROR


@spec(P + "task-cancellation.1")
async def test_cancelling_an_ended_task_is_invalid_params() -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as side:
            task = await create(side, "doubled", n=1)
            await result_of(side, task.task_id)
            with pytest.raises(McpError) as err:
                await cancel(side, task.task_id)
            assert err.value.code == INVALID_PARAMS
            assert "completed" in err.value.message


def shared_pair(gates: Gates) -> tuple[Server, Server, MemoryStores]:
    """Two servers (two processes, as far as tasks go) on one store, one caller."""
    stores = MemoryStores()
    a, b = make_server(gates), make_server(gates)
    for server in (a, b):
        server.tasks.store = stores
        server.principal_of = lambda ctx: "alice"  # type: ignore[method-assign]
    return a, b, stores


@spec(P + "task-cancellation.3")
@spec(P + "task-status-lifecycle.3")
async def test_a_task_cancelled_elsewhere_stays_cancelled_when_it_ends() -> None:
    gates = Gates()
    a, b, _ = shared_pair(gates)
    with trio.fail_after(5):
        async with connect(a) as on_a, connect(b) as on_b:
            task = await create(on_a, "slow", text="x")
            assert (await cancel(on_b, task.task_id)).status == "cancelled"
            gates.release.set()  # A's tool completes before A reads the store again
            await trio.testing.wait_all_tasks_blocked()
            assert not gates.stopped
            assert (await get(on_a, task.task_id)).status == "cancelled"
            with pytest.raises(McpError):
                await result_of(on_a, task.task_id)


async def test_a_task_cancelled_elsewhere_is_stopped_where_it_runs(autojump_clock: Any) -> None:
    """A's runner reads the shared store every ``pollInterval``: B's ``tasks/cancel``
    stops A's tool within one."""
    gates = Gates()
    a, b, _ = shared_pair(gates)
    with trio.fail_after(30):
        async with connect(a) as on_a, connect(b) as on_b:
            task = await create(on_a, "slow", text="x")
            await gates.started.wait()
            await cancel(on_b, task.task_id)
            await trio.sleep(1.5)
            assert gates.stopped and a.tasks.running == 0
            assert (await get(on_a, task.task_id)).status == "cancelled"


async def test_a_task_still_working_on_another_server_is_waited_for(
    autojump_clock: Any,
) -> None:
    """``tasks/result`` on B for a task running on A reads the store every
    ``pollInterval`` until A has stored the outcome."""
    gates = Gates()
    a, b, _ = shared_pair(gates)
    with trio.fail_after(30):
        async with connect(a) as on_a, connect(b) as on_b:
            task = await create(on_a, "slow", text="far")
            assert (await get(on_b, task.task_id)).status == "working"
            got: list[Any] = []

            async def wait_result() -> None:
                got.append(await result_of(on_b, task.task_id))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(wait_result)
                await trio.sleep(5)
                assert got == []
                gates.release.set()
            assert got[0].extra["content"][0]["text"] == "FAR"


# -- errors, listing, isolation, bounds ---------------------------------------------------------


@spec(P + "protocol-errors.1")
async def test_unknown_task_ids_and_bad_cursors_are_invalid_params() -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as side:
            for method, params in (
                ("tasks/get", t.GetTaskRequestParams(task_id="nope")),
                ("tasks/result", t.GetTaskPayloadRequestParams(task_id="nope")),
                ("tasks/cancel", t.CancelTaskRequestParams(task_id="nope")),
                ("tasks/list", t.PaginatedRequestParams(cursor="garbage")),
            ):
                with pytest.raises(McpError) as err:
                    await side.request(method, params)
                assert err.value.code == INVALID_PARAMS, method


@spec(P + "associating-task-related-messages.3")
async def test_the_task_id_param_names_the_task_not_the_meta() -> None:
    with trio.fail_after(5):
        async with connect(make_server()) as side:
            first = await create(side, "doubled", n=1)
            second = await create(side, "doubled", n=2)
            meta = {"_meta": {RELATED_TASK: {"taskId": first.task_id}}}
            params = t.GetTaskRequestParams(task_id=second.task_id, extra=meta)
            got = await side.request("tasks/get", params)
            assert got.task_id == second.task_id


@spec(P + "task-listing.2")
@spec(P + "task-listing.4")
async def test_tasks_list_pages_through_the_callers_tasks() -> None:
    server = make_server()
    server.tasks.page_size = 2
    with trio.fail_after(5):
        async with connect(server) as side:
            ids = [(await create(side, "doubled", n=i)).task_id for i in range(3)]
            first = await side.request("tasks/list")
            assert [x.task_id for x in first.tasks] == ids[:2] and first.next_cursor
            rest = await side.request(
                "tasks/list", t.PaginatedRequestParams(cursor=first.next_cursor)
            )
            assert [x.task_id for x in rest.tasks] == ids[2:] and rest.next_cursor is None


@spec(P + "task-isolation-and-access-control.5")
@spec(P + "task-isolation-and-access-control.6")
async def test_another_session_cannot_see_the_task() -> None:
    server = make_server()
    with trio.fail_after(5):
        async with connect(server) as mine, connect(server) as theirs:
            task = await create(mine, "doubled", n=1)
            for method, params in (
                ("tasks/get", t.GetTaskRequestParams(task_id=task.task_id)),
                ("tasks/result", t.GetTaskPayloadRequestParams(task_id=task.task_id)),
                ("tasks/cancel", t.CancelTaskRequestParams(task_id=task.task_id)),
            ):
                with pytest.raises(McpError) as err:
                    await theirs.request(method, params)
                assert err.value.code == INVALID_PARAMS, method
            assert (await theirs.request("tasks/list")).tasks == []
            assert [x.task_id for x in (await mine.request("tasks/list")).tasks] == [task.task_id]


@spec(P + "task-isolation-and-access-control.6")
async def test_tasks_list_keeps_to_the_caller_whatever_the_store_returns() -> None:
    """A store whose ``list_tasks`` returns every record: the server still lists only
    the caller's."""

    class Careless(MemoryStores):
        async def list_tasks(self, owner: str) -> list[TaskRecord]:
            records = [TaskRecord.from_bytes(data) for data in self.tasks.values()]
            return [r for r in records if r is not None]

    server = make_server()
    server.tasks.store = Careless()
    with trio.fail_after(5):
        async with connect(server) as mine, connect(server) as theirs:
            await create(mine, "doubled", n=1)
            assert (await theirs.request("tasks/list")).tasks == []


@spec(P + "task-isolation-and-access-control.1")
async def test_tasks_are_bound_to_the_callers_authorization_context() -> None:
    """With a caller (``principal_of``), the task is the caller's: another session of
    the same caller sees it, another caller does not."""
    server = make_server()
    who = {"name": "alice"}
    server.principal_of = lambda ctx: who["name"]  # type: ignore[method-assign]
    with trio.fail_after(5):
        async with connect(server) as first, connect(server) as second:
            task = await create(first, "doubled", n=1)
            assert (await get(second, task.task_id)).task_id == task.task_id
            who["name"] = "mallory"
            with pytest.raises(McpError):
                await get(second, task.task_id)
            assert (await second.request("tasks/list")).tasks == []


@spec(P + "task-isolation-and-access-control.3")
@spec(P + "task-id-requirements.2")
@spec(P + "task-id-requirements.3")
async def test_task_ids_are_long_random_strings() -> None:
    server = make_server()
    server.tasks.max_running = 20  # the 20 may all be running at once on a busy machine
    with trio.fail_after(5):
        async with connect(server) as side:
            ids = {(await create(side, "doubled", n=i)).task_id for i in range(20)}
    assert len(ids) == 20
    assert all(len(i) >= 32 for i in ids)  # 24 random bytes, base64url


@spec(P + "ttl-and-resource-management.3")
async def test_the_ttl_is_cut_to_the_maximum_and_expired_tasks_are_gone() -> None:
    server = make_server()
    server.tasks.max_ttl_ms = 10_000
    now = [1_000_000.0]
    server.clock = lambda: now[0]
    with trio.fail_after(5):
        async with connect(server) as side:
            task = await create(side, "doubled", ttl=10**9, n=1)
            assert task.ttl == 10_000
            params = t.CallToolRequestParams(
                name="doubled", arguments={"n": 1}, task=t.TaskMetadata()
            )
            default = (await side.request("tools/call", params)).task
            assert default.ttl == 10_000  # (the default, 300 s, is cut too)
            now[0] += 11
            with pytest.raises(McpError) as err:
                await get(side, task.task_id)
            assert err.value.code == INVALID_PARAMS and "expired" in err.value.message
            assert (await side.request("tasks/list")).tasks == []


async def test_running_tasks_are_bounded() -> None:
    gates = Gates()
    server = make_server(gates)
    server.tasks.max_running = 1
    with trio.fail_after(5):
        async with connect(server) as side:
            await create(side, "slow", text="a")
            with pytest.raises(McpError) as err:
                await create(side, "slow", text="b")
            assert err.value.code == INTERNAL_ERROR and "too many" in err.value.message
            gates.release.set()


async def test_a_session_that_ends_cancels_its_tasks() -> None:
    gates = Gates()
    server = make_server(gates)
    stores = MemoryStores()
    server.tasks.store = stores
    with trio.fail_after(5):
        async with connect(server) as side:
            task = await create(side, "slow", text="a")
            await gates.started.wait()
        assert gates.stopped and server.tasks.running == 0
        record = await stores.get_task(task.task_id)
        assert record is not None and record.status == "cancelled"


# -- the store records ---------------------------------------------------------------------


def record(task_id: str = "t1", owner: str = "o", **kw: Any) -> TaskRecord:
    fields: dict[str, Any] = dict(
        task_id=task_id, owner=owner, status="working", created_at=1.0, updated_at=1.0
    )
    fields.update(ttl_ms=60_000, poll_ms=1000)
    fields.update(kw)
    return TaskRecord(**fields)


def test_core_task_records_round_trip() -> None:
    done = record(status="completed", result='{"result":{"x":"é"}}'.encode())
    assert TaskRecord.from_bytes(done.to_bytes()) == done
    assert TaskRecord.from_bytes(record().to_bytes()) == record()
    assert TaskRecord.from_bytes(b"[1]") is None and TaskRecord.from_bytes(b"{") is None
    assert done.terminal and not record().terminal
    assert record().expired(61.0) and not record().expired(60.9)
    assert json.loads(done.to_bytes())["result"] == '{"result":{"x":"é"}}'


async def test_memory_task_store_is_bounded_and_lists_by_owner() -> None:
    stores = MemoryStores(max_tasks=2)
    await stores.put_task(record("a", created_at=3.0), 60)
    await stores.put_task(record("b", owner="other"), 60)
    await stores.put_task(record("c", created_at=2.0), 60)
    assert await stores.get_task("a") is None  # the oldest written, dropped
    assert [r.task_id for r in await stores.list_tasks("o")] == ["c"]
    await stores.forget_task("c")
    assert await stores.list_tasks("o") == []


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="no redis-server on PATH")
@pytest.mark.skipif(importlib.util.find_spec("redis") is None, reason="no redis client")
async def test_redis_task_store() -> None:
    from mcp_ref.stores.redis import RedisStores
    from tests.test_scale_out import redis_server

    with trio.fail_after(20):
        async with redis_server() as url:
            stores = RedisStores.from_url(url, prefix="t:", max_tasks_per_owner=2)
            await stores.put_task(record("a", created_at=1.0), 60)
            await stores.put_task(record("b", created_at=2.0), 60)
            await stores.put_task(record("c", created_at=3.0, owner="other"), 60)
            done = record("a", status="completed", result=b'{"result":{}}')
            await stores.put_task(done, 30)
            assert await stores.get_task("a") == done
            assert 0 < stores.client.ttl("t:task:a") <= 30
            assert [r.task_id for r in await stores.list_tasks("o")] == ["a", "b"]
            await stores.put_task(record("d", created_at=4.0), 60)  # the index keeps 2
            assert [r.task_id for r in await stores.list_tasks("o")] == ["b", "d"]
            await stores.forget_task("b")
            assert [r.task_id for r in await stores.list_tasks("o")] == ["d"]
            assert stores.client.zcard("t:tasks:o") == 1
            assert await stores.get_task("nope") is None

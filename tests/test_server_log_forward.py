"""Python ``logging`` forwarded to the client (``mcp_ref.server.ClientLogHandler``):
2025-06-18/server/utilities/logging, over ``connect_in_memory``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import trio

from mcp_ref import types as t
from mcp_ref.client import connect_in_memory
from mcp_ref.server import ClientLogHandler, Context, Server, mcp_level
from mcp_ref.server._context import current_context
from mcp_ref.server._log_forward import ALERT, EMERGENCY, MAX_QUEUED, NOTICE

spec = pytest.mark.spec

LOGGER = "tools.demo"
ALL = [
    (logging.DEBUG, "debug"),
    (logging.INFO, "info"),
    (NOTICE, "notice"),
    (logging.WARNING, "warning"),
    (logging.ERROR, "error"),
    (logging.CRITICAL, "critical"),
    (ALERT, "alert"),
    (EMERGENCY, "emergency"),
]


@pytest.fixture
def handler() -> Iterator[ClientLogHandler]:
    """A ClientLogHandler on the ``tools.demo`` logger (and nowhere else)."""
    forward = ClientLogHandler()
    logger = logging.getLogger(LOGGER)
    logger.addHandler(forward)
    logger.setLevel(logging.DEBUG)
    try:
        yield forward
    finally:
        logger.removeHandler(forward)
        logger.setLevel(logging.NOTSET)


def log_every_level(tag: str) -> None:
    for levelno, name in ALL:
        logging.getLogger(LOGGER).log(levelno, "%s %s", tag, name)


def _server() -> Server:
    server = Server("forward", "1.0")

    @server.tool()
    async def async_tool() -> str:
        log_every_level("async")
        return "done"

    @server.tool()
    def sync_tool() -> str:
        """Runs in a worker thread (blocking=True, the default)."""
        assert threading.current_thread() is not threading.main_thread()
        log_every_level("sync")
        return "done"

    @server.tool(blocking=False)
    def inline_tool() -> str:
        log_every_level("inline")
        return "done"

    @server.resource("demo://doc", mime_type="text/plain")
    def doc() -> str:
        logging.getLogger(LOGGER).warning("reading the doc")
        return "text"

    @server.prompt()
    async def greet(name: str) -> str:
        logging.getLogger(LOGGER).warning("greeting %s", name)
        return f"hello {name}"

    @server.tool()
    async def ours_and_theirs() -> str:
        logging.getLogger("mcp_ref.trio").error("the library's own record")
        logging.getLogger("mcp_ref").error("the package logger's record")
        logging.getLogger(LOGGER).error("the tool's record")
        return "done"

    @server.tool()
    async def flood(count: int) -> str:
        for i in range(count):  # no checkpoint: every record is queued
            logging.getLogger(LOGGER).info("record %d", i)
        return "done"

    @server.tool()
    async def say(text: str, ctx: Context) -> str:
        await ctx.log("warning", text)
        return "done"

    return server


def received(logs: list[t.LoggingMessageNotificationParams]) -> list[tuple[str, str, Any]]:
    return [(m.level, m.logger or "", m.data) for m in logs]


@spec("2025-06-18/server/utilities/logging#setting-log-level.1")
@pytest.mark.parametrize("tool", ["async_tool", "sync_tool", "inline_tool"])
async def test_records_at_or_above_the_clients_level_arrive_before_the_answer(
    handler: ClientLogHandler, tool: str
) -> None:
    """Async functions (queued, sent by the request's system task), sync functions in
    worker threads (sent by the thread) and inline sync functions: the same messages,
    each at its MCP level, with the logger's name, all before the result."""
    logs: list[t.LoggingMessageNotificationParams] = []
    tag = tool.removesuffix("_tool")
    with trio.fail_after(10):
        async with connect_in_memory(_server(), on_log=logs.append) as client:
            await client.set_logging_level("warning")
            await client.call_tool(tool)
            at_warning = received(logs)  # read at once: nothing may follow the answer
            logs.clear()
            await client.set_logging_level("debug")
            await client.call_tool(tool)
            at_debug = received(logs)
    assert at_warning == [
        (name, LOGGER, f"{tag} {name}")
        for _, name in ALL[ALL.index((logging.WARNING, "warning")) :]
    ]
    assert at_debug == [(name, LOGGER, f"{tag} {name}") for _, name in ALL]


async def test_the_servers_default_level_applies_until_the_client_sets_one(
    handler: ClientLogHandler,
) -> None:
    logs: list[t.LoggingMessageNotificationParams] = []
    server = _server()
    server.log_policy.default_level = "error"
    with trio.fail_after(10):
        async with connect_in_memory(server, on_log=logs.append) as client:
            await client.call_tool("async_tool")
    assert [level for level, _, _ in received(logs)] == ["error", "critical", "alert", "emergency"]


async def test_resource_and_prompt_functions_forward_too(handler: ClientLogHandler) -> None:
    logs: list[t.LoggingMessageNotificationParams] = []
    with trio.fail_after(10):
        async with connect_in_memory(_server(), on_log=logs.append) as client:
            await client.read_resource("demo://doc")
            await client.get_prompt("greet", {"name": "Ada"})
    assert received(logs) == [
        ("warning", LOGGER, "reading the doc"),
        ("warning", LOGGER, "greeting Ada"),
    ]


async def test_nothing_is_sent_outside_a_request(handler: ClientLogHandler) -> None:
    """Records of the client's task, of a server task that is not a handler function
    (a notification hook) and of a thread of our own go nowhere."""
    logs: list[t.LoggingMessageNotificationParams] = []
    server = _server()
    hooked = trio.Event()

    @server.on_notification("notifications/roots/list_changed")
    def hook(session: Any, params: Any) -> None:
        logging.getLogger(LOGGER).error("in a notification hook")
        hooked.set()

    with trio.fail_after(10):
        async with connect_in_memory(server, on_log=logs.append, roots=[]) as client:
            logging.getLogger(LOGGER).error("in the test's task")
            await trio.to_thread.run_sync(logging.getLogger(LOGGER).error, "in a thread")
            await client.set_roots([])
            await hooked.wait()
            await client.call_tool("say", {"text": "the only one"})  # after all of them
    assert received(logs) == [("warning", "", "the only one")]


async def test_mcp_refs_own_records_are_never_forwarded() -> None:
    """On the root logger, the handler still skips mcp_ref's loggers (what the session
    logs while sending must not come back to it), and forwards the rest."""
    logs: list[t.LoggingMessageNotificationParams] = []
    forward = ClientLogHandler()
    root = logging.getLogger()
    root.addHandler(forward)
    try:
        with trio.fail_after(10):
            async with connect_in_memory(_server(), on_log=logs.append) as client:
                await client.call_tool("ours_and_theirs")
    finally:
        root.removeHandler(forward)
    assert received(logs) == [("error", LOGGER, "the tool's record")]


@spec("2025-06-18/server/utilities/logging#implementation-considerations.1")
async def test_the_queue_of_a_request_is_bounded_and_drops_are_told(
    handler: ClientLogHandler,
) -> None:
    logs: list[t.LoggingMessageNotificationParams] = []
    with trio.fail_after(10):
        async with connect_in_memory(_server(), on_log=logs.append) as client:
            await client.call_tool("flood", {"count": MAX_QUEUED + 400})
            flooded = received(logs)
            logs.clear()
            await client.call_tool("say", {"text": "after the flood"})
    assert flooded == [("info", LOGGER, f"record {i}") for i in range(MAX_QUEUED)]
    assert received(logs) == [
        ("warning", "mcp_ref.server", "400 log message(s) dropped by the rate limit"),
        ("warning", "", "after the flood"),
    ]


async def test_emit_never_raises_once_the_session_has_ended(handler: ClientLogHandler) -> None:
    """A record for a request whose session is gone is dropped, in the event loop's
    thread and in a worker thread; ``handleError`` (which would print) is never called."""
    server = Server("stale", "1.0")
    kept: list[Context] = []

    @server.tool()
    async def keep(ctx: Context) -> str:
        kept.append(ctx)
        return "kept"

    failures: list[logging.LogRecord] = []
    handler.handleError = failures.append  # type: ignore[method-assign]
    with trio.fail_after(10):
        async with connect_in_memory(server) as client:
            await client.call_tool("keep")
        assert kept[0].session.closed
        current_context.set(kept[0])
        try:
            logging.getLogger(LOGGER).error("in the event loop's thread")
            await trio.to_thread.run_sync(logging.getLogger(LOGGER).error, "in a worker thread")
        finally:
            current_context.set(None)
    assert failures == []
    assert kept[0]._log_queue is None  # nothing was queued for a closed session


def test_python_levels_map_to_the_eight_mcp_levels() -> None:
    assert [mcp_level(levelno) for levelno, _ in ALL] == [name for _, name in ALL]
    assert mcp_level(logging.NOTSET) == "debug"
    assert mcp_level(logging.INFO + 1) == "info"
    assert mcp_level(logging.CRITICAL + 5) == "critical"
    assert mcp_level(100) == "emergency"

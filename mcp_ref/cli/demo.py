"""``mcp-ref demo``: a client against the reference server, the wire transcript annotated."""

from __future__ import annotations

import json
from typing import Any, Final, TextIO

import trio

from .. import types as t
from .._errors import McpError
from .._methods import METHODS

__all__ = ["MRTR_SECTION", "Transcript", "demo_command", "modern_section"]

_WIDTH: Final = 160  # characters of JSON shown per message in the transcript


class Transcript:
    """A :class:`~mcp_ref.trio.MessageChannel` wrapper that prints every message it
    carries, annotated with the spec section of its method.

    Args:
        inner: the channel to wrap (``"lines"`` or ``"messages"`` framing).
        out: where to print.
        full: print whole messages instead of the first ``_WIDTH`` characters.
        local: the name of our side ("C" for a client).
        era: ``"legacy"`` (sections of 2025-06-18) or ``"modern"`` (of 2026-07-28).
    """

    def __init__(
        self,
        inner: Any,
        out: TextIO,
        *,
        full: bool = False,
        local: str = "C",
        era: str = "legacy",
    ) -> None:
        self.inner = inner
        self.era = era
        self.framing = inner.framing
        self.out = out
        self.full = full
        self.count = 0
        self._local = local
        self._remote = "S" if local == "C" else "C"
        self._pending = bytearray()
        self._methods: dict[tuple[str, str], str] = {}  # (who sent the request, id) -> method

    @property
    def eof_reason(self) -> str | None:
        return getattr(self.inner, "eof_reason", None)

    async def receive(self) -> bytes:
        data: bytes = await self.inner.receive()
        if self.framing == "messages":
            if data:
                self._show(data, sent=False)
            return data
        self._pending += data
        while (end := self._pending.find(b"\n")) >= 0:
            line = bytes(self._pending[:end])
            del self._pending[: end + 1]
            if line.strip():
                self._show(line, sent=False)
        if len(self._pending) > 8 * 1024 * 1024:  # never buffer without bound
            self._pending.clear()
            print("     (an over-long line was left out of the transcript)", file=self.out)
        return data

    async def send(self, data: bytes, *, related_request_id: Any = None) -> None:
        self._show(data.rstrip(b"\n"), sent=True)
        await self.inner.send(data, related_request_id=related_request_id)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def _show(self, raw: bytes, *, sent: bool) -> None:
        self.count += 1
        sender, receiver = (self._local, self._remote) if sent else (self._remote, self._local)
        arrow = f"{sender}→{receiver}"
        try:
            message = json.loads(raw)
        except ValueError:
            print(f"{arrow}  (not JSON) {raw[:_WIDTH]!r}", file=self.out)
            return
        label, section = self._annotate(message, sender)
        if self.era == "modern":
            section = modern_section(section)
            if isinstance(message.get("result"), dict):
                if message["result"].get("resultType") == "input_required":
                    label, section = label + " (input_required)", MRTR_SECTION
        text = raw.decode("utf-8", "replace")
        if not self.full and len(text) > _WIDTH:
            text = text[: _WIDTH - 3] + "..."
        print(f"{arrow}  {label:<48} {section}", file=self.out)
        print(f"      {text}", file=self.out)

    def _annotate(self, message: Any, sender: str) -> tuple[str, str]:
        if not isinstance(message, dict):
            return "batch or malformed message", "2025-06-18/basic#messages"
        method = message.get("method")
        rid = message.get("id")
        if isinstance(method, str):
            spec = METHODS.get(method)
            section = spec.section if spec else "(not an MCP method)"
            if rid is not None:
                self._methods[(sender, json.dumps(rid))] = method
                return f"request #{rid} {method}", section
            return f"notification {method}", section
        asked = self._methods.pop(
            (self._remote if sender == self._local else self._local, json.dumps(rid)), None
        )
        spec = METHODS.get(asked or "")
        section = spec.section if spec else "2025-06-18/basic#responses"
        what = asked or "?"
        if "error" in message:
            error = message["error"]
            code = error.get("code") if isinstance(error, dict) else "?"
            return f"error #{rid} to {what} (code {code})", section
        return f"result #{rid} of {what}", section


MRTR_SECTION: Final = "2026-07-28/basic/patterns/mrtr"
"""The page of a result that asks the client for input (``resultType: input_required``)."""

# 2025-06-18 pages that 2026-07-28 moved (the rest keep their path, e.g. server/tools).
_MOVED_PAGES: Final = {
    "basic/utilities/progress": "basic/patterns/progress",
    "basic/utilities/cancellation": "basic/patterns/cancellation",
    "basic": "basic/index",
}


def modern_section(section: str) -> str:
    """The 2026-07-28 section of a 2025-06-18 one (``2025-06-18/server/tools#calling-tools``
    -> ``2026-07-28/server/tools#calling-tools``; moved pages mapped, see
    ``2026-07-28/changelog``); other strings unchanged."""
    revision, _, rest = section.partition("/")
    if revision != "2025-06-18":
        return section
    page, hash_, anchor = rest.partition("#")
    return f"2026-07-28/{_MOVED_PAGES.get(page, page)}{hash_}{anchor}"


def _step(out: TextIO, title: str) -> None:
    print(f"\n── {title} " + "─" * max(0, 70 - len(title)), file=out)


async def demo_command(command: list[str], full: bool, out: TextIO, era: str = "modern") -> int:
    """``mcp-ref demo``: run a client against the server started by ``command`` (the
    reference server by default) through every kind of message, printing each one with
    its spec section (:class:`Transcript`; ``full``: whole messages).  Returns 0.

    ``era``: ``"modern"`` (2026-07-28: no initialize, ``_meta`` on every request, the
    server asks for sampling and elicitation by answering ``input_required``) or
    ``"legacy"`` (the initialize handshake of 2025-06-18 and the revisions before).

    Raises:
        McpError, SessionClosed: the server failed a step the demo expects to succeed.
    """
    from ..trio import open_stdio_process

    def sample(params: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        return t.CreateMessageResult(
            role="assistant",
            content=t.TextContent(text="A canned answer from the mcp-ref demo client."),
            model="mcp-ref-demo",
            stop_reason="endTurn",
        )

    def elicit(params: Any) -> t.ElicitResult:
        return t.ElicitResult(action="decline")

    updated = trio.Event()

    def on_notification(note: Any) -> None:
        if note.method == "notifications/resources/updated":
            updated.set()

    print(f"mcp-ref demo: client → {' '.join(command)}", file=out)
    print("Each message: direction (C client, S server), what it is, the spec section.", file=out)
    async with open_stdio_process(command) as (channel, _process):
        transcript = Transcript(channel, out, full=full, era=era)
        handlers: dict[str, Any] = {
            "sampling_handler": sample,
            "elicitation_handler": elicit,
            "roots": [t.Root(uri="file:///tmp", name="tmp")],
            "on_notification": on_notification,
        }
        await _steps(transcript, handlers, out, updated, era)
    print(f"\n{transcript.count} messages.", file=out)
    return 0


# The titles of the steps that differ between the eras: (handshake era, 2026-07-28).
_TITLES: Final = {
    "open": (
        "initialize (lifecycle), then notifications/initialized",
        "no initialize: every request names its version, client and capabilities",
    ),
    "logging": (
        "logging: set the level, then a tool that logs",
        "logging: the log level travels in each request's _meta",
    ),
    "sampling": (
        "sampling: the server asks the client's LLM",
        "sampling: input_required, then the call again with inputResponses",
    ),
    "elicitation": (
        "elicitation: the server asks the user (declined)",
        "elicitation: input_required, then the call again with inputResponses",
    ),
    "unknown resource": (
        "an unknown resource: -32002",
        "an unknown resource: -32602 in this revision",
    ),
    "subscriptions": (
        "subscriptions: subscribe, change it, notifications/resources/updated",
        "subscriptions/listen: acknowledged, then notifications/resources/updated",
    ),
    "close": (
        "close: the client ends the session (stdin closed)",
        "close: the client closes stdin (no session to end)",
    ),
}


async def _steps(
    transcript: Transcript, handlers: dict[str, Any], out: TextIO, updated: trio.Event, era: str
) -> None:
    """Every step of the demo, in ``era`` (``"modern"`` or ``"legacy"``)."""
    from ..client import open_client

    modern = era == "modern"

    def step(key: str) -> None:
        _step(out, _TITLES[key][modern])

    step("open")
    async with open_client(transcript, era=era, **handlers) as client:
        if modern:
            _step(out, "server/discover: the server's versions, capabilities and info")
            await client.discover()
        else:
            _step(out, "ping")
            await client.ping()
        _step(out, "list the tools (paginated; the 2026-07-28 era adds caching hints)")
        await client.list_tools()
        _step(out, "call echo: unstructured text")
        await client.call_tool("echo", {"text": "hello from the demo"})
        _step(out, "call add: structured output (outputSchema + structuredContent)")
        await client.call_tool("add", {"a": 2, "b": 3})
        _step(out, "invalid arguments: a tool execution error (isError)")
        await client.call_tool("add", {"a": "two", "b": 3})
        _step(out, "an unknown tool: a protocol error (-32602)")
        try:
            await client.call_tool("no_such_tool", {})
        except McpError:
            pass
        step("logging")
        await client.set_logging_level("debug")
        await client.call_tool("test_tool_with_logging", {})
        _step(out, "progress: a progress token, then notifications/progress")
        await client.call_tool("test_tool_with_progress", {}, on_progress=lambda p: None)
        step("sampling")
        await client.call_tool("test_sampling", {"prompt": "Say hello"})
        step("elicitation")
        await client.call_tool("test_elicitation", {"message": "Your name?"})
        _step(out, "resources: list, read text, read a template")
        await client.list_resources()
        await client.read_resource("test://static-text")
        await client.read_resource("test://template/42/data")
        step("unknown resource")
        try:
            await client.read_resource("test://no-such-resource")
        except McpError:
            pass
        step("subscriptions")
        await client.subscribe("test://watched-resource")
        await client.call_tool("update_watched_resource", {"text": "changed by the demo"})
        with trio.move_on_after(5):
            await updated.wait()
        await client.unsubscribe("test://watched-resource")
        _step(out, "prompts and completion")
        await client.list_prompts()
        await client.get_prompt("test_prompt_with_arguments", {"arg1": "first", "arg2": "second"})
        await client.complete(t.PromptReference(name="test_prompt_with_arguments"), "arg1", "te")
        step("close")

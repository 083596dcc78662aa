"""The ``mcp-ref`` command (also ``python -m mcp_ref``).

Subcommands::

    mcp-ref serve [--server MODULE:ATTR] [--http HOST:PORT | --ws HOST:PORT]
        Run a server (default: the reference "everything" server) on stdio, or on
        Streamable HTTP / WebSocket when those transports are built.
    mcp-ref demo [--full] [-- CMD...]
        Run a client against the reference server (a child process) and print the wire
        transcript, each message annotated with the spec section that governs it.
    mcp-ref inspect [--json] [--timeout SECONDS] -- CMD...
        Connect to any stdio server and print its tools, resources, templates, prompts.
    mcp-ref call [--json] [--timeout SECONDS] -- CMD... TOOL [key=value ...]
        Call one tool.  The trailing ``key=value`` words are the arguments (a value is
        JSON when it parses as JSON, else a string); the word before them is the tool.
        ``--timeout`` bounds the wait for each answer; without it, ``initialize`` gets
        10 s (INITIALIZE_TIMEOUT) and the rest 60 s.  A server that never answers is
        named as such ("no answer to initialize from CMD within 10 s: ..."), never
        blamed for an error it did not send.

Errors are one line on stderr and exit status 1, never a traceback.  A tool result with
``isError: true`` is printed and exits with status 1 too.

``serve --http HOST:PORT`` serves Streamable HTTP at ``http://HOST:PORT/mcp`` and
``serve --ws HOST:PORT`` WebSocket at ``ws://HOST:PORT/mcp`` (port 0 picks a free port);
either prints the URL on stderr once it listens.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import shlex
import signal
import sys
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Final, TextIO

import trio

from . import types as t
from ._errors import McpError, ProtocolError
from ._methods import METHODS

__all__ = ["main", "parse_arguments", "parse_value"]

DEFAULT_SERVER: Final = "mcp_ref.examples.everything:make_server"
_ARGUMENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*=")
_WIDTH: Final = 160  # characters of JSON shown per message in the transcript


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 1."""


# ---------------------------------------------------------------------------- helpers


def parse_value(text: str) -> Any:
    """A ``key=value`` value: JSON when it parses (``3``, ``true``, ``[1,2]``,
    ``{"a":1}``, ``"quoted"``), else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_arguments(words: Sequence[str]) -> tuple[list[str], str, dict[str, Any]]:
    """Split ``CMD... TOOL key=value...`` into ``(command, tool, arguments)``.

    Raises:
        CliError: no command, or no tool name.
    """
    words = list(words)
    if words and words[0] == "--":
        words = words[1:]
    arguments: dict[str, Any] = {}
    while words and _ARGUMENT.match(words[-1]):
        key, _, value = words.pop().partition("=")
        arguments.setdefault(key, parse_value(value))
    if len(words) < 2:
        raise CliError("usage: mcp-ref call -- CMD [ARGS...] TOOL [key=value ...]")
    tool = words.pop()
    return words, tool, dict(reversed(list(arguments.items())))


def _command(words: Sequence[str]) -> list[str]:
    words = list(words)
    if words and words[0] == "--":
        words = words[1:]
    if not words:
        raise CliError("give the server's command after --, e.g. -- python server.py")
    return words


def _explain(exc: BaseException) -> str:
    """One line for an exception (the first interesting one of a group).  A message of
    several lines (a server's last stderr lines) keeps its first and last: the
    child's traceback ends with the line that names its error."""
    lines = [line.strip() for line in _describe(exc).splitlines() if line.strip()]
    if len(lines) > 2:
        return f"{lines[0]} ... {lines[-1]}"
    return " ".join(lines)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            if not isinstance(inner, trio.Cancelled):
                return _describe(inner)
        return "cancelled"
    from ._errors import NoAnswerError

    if isinstance(exc, NoAnswerError):  # we gave up waiting: nobody answered
        return exc.message
    if isinstance(exc, McpError):
        return f"the server answered with error {exc.code}: {exc.message}"
    if isinstance(exc, FileNotFoundError):
        return f"cannot start the server: {exc.filename or exc}: no such file"
    if isinstance(exc, OSError):
        return f"{type(exc).__name__}: {exc}"
    if isinstance(exc, ProtocolError | CliError):
        return exc.args[0] if exc.args else type(exc).__name__
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _load_server(spec: str) -> Any:
    """``MODULE:ATTR`` -> a Server (ATTR may be a zero-argument factory)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise CliError(f"--server needs MODULE:ATTR, not {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CliError(f"cannot import {module_name}: {exc}") from None
    try:
        target = getattr(module, attr)
    except AttributeError:
        raise CliError(f"{module_name} has no attribute {attr!r}") from None
    server = target() if callable(target) and not hasattr(target, "handle_request") else target
    if not hasattr(server, "handle_request"):
        raise CliError(f"{spec} is not an MCP server (no handle_request)")
    return server


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise CliError(f"expected HOST:PORT, not {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


# ---------------------------------------------------------------------------- serve


def _serve(args: argparse.Namespace) -> int:
    """``mcp-ref serve``: run until end of input (stdio) or a signal.

    SIGTERM and SIGINT stop the server gracefully (``--grace`` seconds for the requests
    in progress, then an error answer for each one still running); a second signal
    stops it at once.  Exit status 0 after SIGTERM, 130 after SIGINT, with one line on
    stderr.
    """
    server = _load_server(args.server)
    if (args.stateless or args.json_response) and not args.http:
        raise CliError("--stateless and --json-response need --http HOST:PORT")
    if args.grace < 0:
        raise CliError("--grace must not be negative")
    session_kw: dict[str, Any] = {}
    if args.keepalive is not None:
        if args.http:
            raise CliError("--keepalive works on stdio and --ws, not --http")
        from .trio import Keepalive

        try:
            session_kw["keepalive"] = Keepalive(interval=args.keepalive)
        except ValueError as exc:
            raise CliError(f"--keepalive: {exc}") from None
    from .trio._stdio import serve_until_signal

    serve: Callable[[trio.Event], Any]
    if args.http or args.ws:
        host, port = _address(args.http or args.ws)
        from .trio import serve_http, serve_websocket

        start: Callable[..., Any]
        if args.http:
            start = partial(
                serve_http,
                server,
                host,
                port,
                stateless=args.stateless,
                json_response=args.json_response,
            )
        else:
            start = partial(serve_websocket, server, host, port, **session_kw)
        name = f"[{host}]" if ":" in host else host

        async def serve(stop: trio.Event) -> None:
            async with trio.open_nursery() as nursery:
                started = await nursery.start(partial(start, stop=stop, grace_seconds=args.grace))
                # Spec: 2025-06-18/basic/transports#security-warning.2 (localhost by default)
                # "When running locally, servers SHOULD bind only to localhost (127.0.0.1) rather
                # than all network interfaces (0.0.0.0)"
                # serve_http reports a ServerInfo, serve_websocket the port it bound.
                url = started.url if args.http else f"ws://{name}:{started}/mcp"
                print(f"mcp-ref: serving {args.server} on {url}", file=sys.stderr, flush=True)

    else:
        if sys.stdin.isatty():
            print(
                "mcp-ref: serving MCP (JSON-RPC, one message per line) on stdin/stdout; "
                "end input (Ctrl-D) to stop",
                file=sys.stderr,
            )

        async def serve(stop: trio.Event) -> None:
            await server.serve_stdio(stop=stop, grace_seconds=args.grace, **session_kw)

    got = trio.run(serve_until_signal, serve)
    if got == signal.SIGINT:
        print("mcp-ref: interrupted", file=sys.stderr)
        return 130
    if got == signal.SIGTERM:
        print("mcp-ref: stopped (SIGTERM)", file=sys.stderr)
    return 0


# ------------------------------------------------------------------- inspect and call


def _type_of(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    if "type" in schema:
        kind = schema["type"]
        if kind == "array":
            return f"{_type_of(schema.get('items'))}[]"
        return "|".join(kind) if isinstance(kind, list) else str(kind)
    if "enum" in schema:
        return "|".join(json.dumps(v) for v in schema["enum"])
    if "anyOf" in schema:
        return "|".join(_type_of(s) for s in schema["anyOf"])
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    return "any"


def _signature(tool: t.Tool) -> str:
    props = tool.input_schema.get("properties") or {}
    required = set(tool.input_schema.get("required") or [])
    params = ", ".join(
        f"{name}{'' if name in required else '?'}: {_type_of(schema)}"
        for name, schema in props.items()
    )
    out = f"{tool.name}({params})"
    if tool.output_schema:
        out += " -> structured"
    return out


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


def _print_listing(client: Any, out: TextIO, listing: dict[str, Any]) -> None:
    info = client.server_info
    title = f' "{info.title}"' if info.title else ""
    print(
        f"server: {info.name} {info.version}{title}, protocol {client.protocol_version}", file=out
    )
    caps = client.server_capabilities
    declared = [
        name
        for name in ("tools", "resources", "prompts", "completions", "logging")
        if getattr(caps, name) is not None
    ]
    print(f"capabilities: {', '.join(declared) or 'none'}", file=out)
    if client.instructions:
        print(f"instructions: {_first_line(client.instructions)}", file=out)
    sections: list[tuple[str, Any, Callable[[Any], tuple[str, str | None]]]] = [
        ("tools", listing.get("tools"), _show_tool),
        ("resources", listing.get("resources"), _show_resource),
        ("resource templates", listing.get("templates"), _show_template),
        ("prompts", listing.get("prompts"), _show_prompt),
    ]
    for heading, items, show in sections:
        if items is None:
            continue
        print(f"\n{heading} ({len(items)}):", file=out)
        for item in items:
            head, description = show(item)
            line = _first_line(description)
            print(f"  {head}" + (f"  - {line}" if line else ""), file=out)


def _show_tool(tool: t.Tool) -> tuple[str, str | None]:
    return _signature(tool), tool.description


def _show_resource(resource: t.Resource) -> tuple[str, str | None]:
    return f"{resource.uri}  ({resource.name})", resource.description


def _show_template(template: t.ResourceTemplate) -> tuple[str, str | None]:
    return f"{template.uri_template}  ({template.name})", template.description


def _show_prompt(prompt: t.Prompt) -> tuple[str, str | None]:
    names = ", ".join(a.name + ("" if a.required else "?") for a in prompt.arguments or [])
    return f"{prompt.name}({names})", prompt.description


INITIALIZE_TIMEOUT: Final = 10.0
"""Seconds ``inspect`` and ``call`` wait for the answer to ``initialize`` when no
``--timeout`` is given (their other requests keep the client's default, 60 s restarted
by progress).  A server answers ``initialize`` as soon as it has started, in well under
a second for the servers we know; a program that is not one (a bare ``python`` waiting
for its script on stdin, a command missing an argument) never answers, and a minute of
silence before saying so helps nobody.  A server that starts slowly (``npx -y``
fetching its package the first time) needs ``--timeout``."""


def _seconds(text: str) -> float:
    """``--timeout``'s value: a finite number of seconds above zero."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected seconds above 0, not {text!r}")
    return value


def _timeouts(timeout: float | None) -> dict[str, Any]:
    """The timeouts of :func:`~mcp_ref.client.open_stdio_client` for ``--timeout
    SECONDS`` (None: not given): the wait for each answer, ``initialize``'s included;
    not given, :data:`INITIALIZE_TIMEOUT` for ``initialize`` and the client's default
    for the rest.  Source: 2025-06-18/basic/lifecycle#timeouts.3."""
    from ._inflight import RequestTimeout
    from .trio import DEFAULT_TIMEOUT

    # Spec: 2025-06-18/basic/lifecycle#timeouts.3 ("allow these timeouts to be
    # configured on a per-request basis")
    if timeout is None:
        return {
            "timeout": DEFAULT_TIMEOUT,
            "initialize_timeout": RequestTimeout(seconds=INITIALIZE_TIMEOUT),
        }
    each = RequestTimeout(seconds=timeout)
    return {"timeout": each, "initialize_timeout": each}


def _no_answer(
    exc: Any, command: Sequence[str], timeout: float | None, tool: str | None = None
) -> CliError:
    """The one-line error for ``exc``, a :class:`~mcp_ref.client.NoAnswerError`: what
    went unanswered, from which command, within how long (the configured seconds, or
    the time waited); for ``initialize``, ask whether it is an MCP server at all."""
    if timeout is not None:
        within = f"{timeout:g}"
    elif exc.method == "initialize":
        within = f"{INITIALIZE_TIMEOUT:g}"
    else:
        within = f"{float(f'{exc.elapsed:.3g}'):g}"
    text = f"no answer to {exc.method} from {shlex.join(command)} within {within} s"
    if exc.method != "initialize":
        return CliError(text)
    text += ": is it an MCP server?"
    if tool is not None and (
        "/" in tool or tool.endswith((".py", ".js", ".mjs", ".cjs", ".ts")) or os.path.isfile(tool)
    ):
        # ``mcp-ref call -- python server.py``: the script was taken for the tool.
        text += (
            f" ({tool} was taken as the tool's name: "
            "mcp-ref call -- CMD [ARGS...] TOOL [key=value ...])"
        )
    elif timeout is None:
        text += " (a server slow to start needs a longer --timeout SECONDS)"
    return CliError(text)


async def _inspect(
    command: list[str], as_json: bool, out: TextIO, timeout: float | None = None
) -> int:
    from .client import NoAnswerError, open_stdio_client

    try:
        async with open_stdio_client(command, **_timeouts(timeout)) as client:
            caps = client.server_capabilities
            listing: dict[str, Any] = {}
            if caps.tools is not None:
                listing["tools"] = await client.list_tools()
            if caps.resources is not None:
                listing["resources"] = await client.list_resources()
                listing["templates"] = await client.list_resource_templates()
            if caps.prompts is not None:
                listing["prompts"] = await client.list_prompts()
    except NoAnswerError as exc:
        raise _no_answer(exc, command, timeout) from None
    if as_json:
        from ._convert import unstructure

        data = {k: unstructure(v) for k, v in listing.items()}
        data["serverInfo"] = unstructure(client.server_info)
        data["protocolVersion"] = client.protocol_version
        print(json.dumps(data, indent=2, ensure_ascii=False), file=out)
    else:
        _print_listing(client, out, listing)
    return 0


def _describe_block(block: Any) -> str:
    if isinstance(block, t.TextContent):
        return block.text
    if isinstance(block, t.ImageContent | t.AudioContent):
        size = len(block.data) * 3 // 4
        return f"[{block.type}: {block.mime_type}, about {size} bytes]"
    if isinstance(block, t.ResourceLink):
        return f"[link: {block.uri} ({block.name})]"
    if isinstance(block, t.EmbeddedResource):
        res = block.resource
        kind = res.mime_type or "unknown type"
        if isinstance(res, t.TextResourceContents):
            return f"[resource {res.uri} ({kind})]\n{res.text}"
        return f"[resource {res.uri} ({kind}), about {len(res.blob) * 3 // 4} bytes]"
    return repr(block)


async def _call(
    words: Sequence[str], as_json: bool, out: TextIO, timeout: float | None = None
) -> int:
    from ._convert import unstructure
    from .client import NoAnswerError, open_stdio_client

    command, tool, arguments = parse_arguments(words)
    try:
        async with open_stdio_client(command, **_timeouts(timeout)) as client:
            result = await client.call_tool(tool, arguments)
    except NoAnswerError as exc:
        raise _no_answer(exc, command, timeout, tool) from None
    if as_json:
        print(json.dumps(unstructure(result), indent=2, ensure_ascii=False), file=out)
    else:
        for block in result.content:
            print(_describe_block(block), file=out)
        if result.structured_content is not None and not result.content:
            print(json.dumps(result.structured_content, indent=2, ensure_ascii=False), file=out)
    if result.is_error:
        print(f"mcp-ref: tool {tool} reported an error", file=sys.stderr)
        return 1
    return 0


# ----------------------------------------------------------------------------- demo


class Transcript:
    """A :class:`~mcp_ref.trio.MessageChannel` wrapper that prints every message it
    carries, annotated with the spec section of its method.

    Args:
        inner: the channel to wrap (``"lines"`` or ``"messages"`` framing).
        out: where to print.
        full: print whole messages instead of the first ``_WIDTH`` characters.
        local: the name of our side ("C" for a client).
    """

    def __init__(self, inner: Any, out: TextIO, *, full: bool = False, local: str = "C") -> None:
        self.inner = inner
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


def _step(out: TextIO, title: str) -> None:
    print(f"\n── {title} " + "─" * max(0, 70 - len(title)), file=out)


async def _demo(command: list[str], full: bool, out: TextIO) -> int:
    from .client import open_client
    from .trio import open_stdio_process

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
        transcript = Transcript(channel, out, full=full)
        _step(out, "initialize (lifecycle), then notifications/initialized")
        async with open_client(
            transcript,
            sampling_handler=sample,
            elicitation_handler=elicit,
            roots=[t.Root(uri="file:///tmp", name="tmp")],
            on_notification=on_notification,
        ) as client:
            _step(out, "ping")
            await client.ping()
            _step(out, "list the tools (paginated)")
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
            _step(out, "logging: set the level, then a tool that logs")
            await client.set_logging_level("debug")
            await client.call_tool("test_tool_with_logging", {})
            _step(out, "progress: a progress token, then notifications/progress")
            await client.call_tool("test_tool_with_progress", {}, on_progress=lambda p: None)
            _step(out, "sampling: the server asks the client's LLM")
            await client.call_tool("test_sampling", {"prompt": "Say hello"})
            _step(out, "resources: list, read text, read a template")
            await client.list_resources()
            await client.read_resource("test://static-text")
            await client.read_resource("test://template/42/data")
            _step(out, "an unknown resource: -32002")
            try:
                await client.read_resource("test://no-such-resource")
            except McpError:
                pass
            _step(out, "subscriptions: subscribe, change it, notifications/resources/updated")
            await client.subscribe("test://watched-resource")
            await client.call_tool("update_watched_resource", {"text": "changed by the demo"})
            with trio.move_on_after(5):
                await updated.wait()
            await client.unsubscribe("test://watched-resource")
            _step(out, "prompts and completion")
            await client.list_prompts()
            await client.get_prompt(
                "test_prompt_with_arguments", {"arg1": "first", "arg2": "second"}
            )
            await client.complete(
                t.PromptReference(name="test_prompt_with_arguments"), "arg1", "te"
            )
            _step(out, "close: the client ends the session (stdin closed)")
    print(f"\n{transcript.count} messages.", file=out)
    return 0


# ----------------------------------------------------------------------------- main


def _parser() -> argparse.ArgumentParser:
    from importlib.metadata import PackageNotFoundError, version

    try:
        own = version("mcp-ref")
    except PackageNotFoundError:  # pragma: no cover - running from a checkout
        own = "unknown"
    parser = argparse.ArgumentParser(
        prog="mcp-ref", description="mcp-ref: a reference implementation of MCP."
    )
    parser.add_argument("--version", action="version", version=f"mcp-ref {own}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = sub.add_parser("serve", help="run a server (default: the reference server) on stdio")
    serve.add_argument(
        "--server", default=DEFAULT_SERVER, metavar="MODULE:ATTR", help="the server to run"
    )
    # Transports that are not built yet are accepted but left out of --help (which
    # lists what works), and say so when used.
    where = serve.add_mutually_exclusive_group()
    where.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve Streamable HTTP on http://HOST:PORT/mcp instead (port 0: any free port)",
    )
    where.add_argument(
        "--ws",
        metavar="HOST:PORT",
        help="serve WebSocket on ws://HOST:PORT/mcp instead (a custom transport, docs/websocket.md)",
    )

    serve.add_argument(
        "--stateless", action="store_true", help="with --http: no sessions, each POST on its own"
    )
    serve.add_argument(
        "--json-response",
        action="store_true",
        help="with --http: answer requests with JSON bodies instead of SSE streams",
    )
    serve.add_argument(
        "--keepalive",
        type=float,
        metavar="SECONDS",
        help="on stdio or --ws: ping a client silent for this long; end the session "
        "after two unanswered pings",
    )
    serve.add_argument(
        "--grace",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="on SIGTERM or Ctrl-C (and at end of input on stdio): seconds the requests "
        "in progress may still take before they are cancelled and answered with an "
        "error (default 5)",
    )

    demo = sub.add_parser("demo", help="print an annotated transcript against the reference server")
    demo.add_argument("--full", action="store_true", help="print whole messages")
    demo.add_argument("server_command", nargs=argparse.REMAINDER, metavar="-- CMD")

    inspect = sub.add_parser("inspect", help="list a stdio server's tools, resources, prompts")
    inspect.add_argument("--json", action="store_true", help="print JSON")
    _add_timeout(inspect, "the others")
    inspect.add_argument("server_command", nargs=argparse.REMAINDER, metavar="-- CMD")

    call = sub.add_parser("call", help="call one tool of a stdio server")
    call.add_argument("--json", action="store_true", help="print the whole result as JSON")
    _add_timeout(call, "the call")
    call.add_argument("words", nargs=argparse.REMAINDER, metavar="-- CMD TOOL key=value")
    return parser


def _add_timeout(parser: argparse.ArgumentParser, rest: str) -> None:
    """Add ``--timeout SECONDS`` (seconds per answer; ``rest`` names what the 60 s
    default covers besides ``initialize``)."""
    parser.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        help="wait at most this long for each answer, initialize's included "
        f"(default: {INITIALIZE_TIMEOUT:g} s for initialize, 60 s for {rest})",
    )


def _run(args: argparse.Namespace, out: TextIO) -> int:
    if args.command == "serve":
        return _serve(args)
    runner: Callable[[], Any]
    if args.command == "demo":
        words = list(args.server_command)
        if words and words[0] == "--":
            words = words[1:]
        command = words or [sys.executable, "-m", "mcp_ref", "serve"]
        runner = partial(_demo, command, args.full, out)
    elif args.command == "inspect":
        runner = partial(_inspect, _command(args.server_command), args.json, out, args.timeout)
    elif args.command == "call":
        parse_arguments(args.words)  # usage errors before starting anything
        runner = partial(_call, args.words, args.json, out, args.timeout)
    else:
        raise CliError("give a command: serve, demo, inspect or call (see mcp-ref --help)")
    result: int = trio.run(runner)
    return result


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    """Run ``mcp-ref``; returns the exit status (0 ok, 1 error, 2 usage, 130 interrupted).

    Args:
        argv: the arguments (default ``sys.argv[1:]``).
        out: where normal output goes (default ``sys.stdout``).
    """
    args = _parser().parse_args(argv)
    try:
        return _run(args, out or sys.stdout)
    except KeyboardInterrupt:
        print("mcp-ref: interrupted", file=sys.stderr)
        return 130
    except BaseExceptionGroup as group:
        # Ctrl-C while trio was starting or stopping: it comes wrapped in a group.
        rest = group.split(KeyboardInterrupt)[1]
        if rest is not None:
            raise
        print("mcp-ref: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``mcp-ref inspect ... | head``): not an error.  Point
        # stdout at devnull so the interpreter's final flush does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception as exc:  # every error is one line, never a traceback
        print(f"mcp-ref: {_explain(exc)}", file=sys.stderr)
        return 1

"""``mcp-ref inspect`` and ``mcp-ref call``: a client for any server, one command each."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
from collections.abc import Callable, Sequence
from typing import Any, Final, TextIO

from .. import types as t
from .errors import CliError

__all__ = [
    "INITIALIZE_TIMEOUT",
    "call_command",
    "inspect_command",
    "parse_arguments",
    "parse_value",
    "server_command",
]

_ARGUMENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*=")


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


def server_command(words: Sequence[str]) -> list[str]:
    words = list(words)
    if words and words[0] == "--":
        words = words[1:]
    if not words:
        raise CliError("give the server's command after --, e.g. -- python server.py")
    return words


# -------------------------------------------------------------- listing and timeouts


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


def seconds(text: str) -> float:
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
    from .._inflight import RequestTimeout
    from ..trio import DEFAULT_TIMEOUT

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


async def inspect_command(
    command: list[str], as_json: bool, out: TextIO, timeout: float | None = None
) -> int:
    from ..client import NoAnswerError, open_stdio_client

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
        from .._convert import unstructure

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


async def call_command(
    words: Sequence[str], as_json: bool, out: TextIO, timeout: float | None = None
) -> int:
    from .._convert import unstructure
    from ..client import NoAnswerError, open_stdio_client

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

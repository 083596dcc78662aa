"""``mcp-ref inspect``, ``call``, ``read`` and ``prompt``: a client of any server (a
command on stdio, or ``--url`` for Streamable HTTP and WebSocket), one request each."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any, Final, TextIO

import attrs

from .. import types as t
from .._convert import json_type_name
from ..events import Progress
from ._signin import SIGN_IN_EXCHANGES, SignInOptions, client_secret, loopback_sign_in
from .errors import CliError

if TYPE_CHECKING:
    from ..client import Client

__all__ = [
    "INITIALIZE_TIMEOUT",
    "ClientOptions",
    "call_command",
    "coerce_arguments",
    "connect",
    "inspect_command",
    "parse_arguments",
    "parse_value",
    "prompt_command",
    "read_command",
    "server_command",
    "split_words",
]

_ARGUMENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*=")


def parse_value(text: str) -> Any:
    """A ``key=value`` value: JSON when it parses (``3``, ``true``, ``[1,2]``,
    ``{"a":1}``, ``"quoted"``), else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


CALL_USAGE: Final = "usage: mcp-ref call [--url URL | -- CMD [ARGS...]] TOOL [key=value ...]"
PROMPT_USAGE: Final = "usage: mcp-ref prompt [--url URL | -- CMD [ARGS...]] NAME [key=value ...]"
READ_USAGE: Final = "usage: mcp-ref read [--url URL | -- CMD [ARGS...]] URI"
_SCRIPT_SUFFIXES: Final = (".py", ".js", ".ts", ".mjs", ".cjs")


def split_words(
    words: Sequence[str],
    usage: str,
    *,
    with_command: bool = True,
    key_values: bool = True,
    what: str = "TOOL",
) -> tuple[list[str], str, dict[str, str]]:
    """Split ``[--] CMD... NAME key=value...`` (or, for ``--url``, ``NAME key=value...``)
    into ``(command, name, raw arguments)``; the values stay text.

    Args:
        words: the words after the subcommand's options.
        usage: the usage line of the subcommand, for errors.
        with_command: the words start with the server's command (no ``--url``).
        key_values: trailing ``key=value`` words are arguments (``read`` has none).
        what: what NAME is, for errors (``TOOL``, ``NAME``).

    Raises:
        CliError: no command, no name, words left over beside ``--url``, or (with a
            command and ``key_values``) a name that looks like the server's file
            (exists, ends in ``.py``/``.js``/``.ts``/``.mjs``/``.cjs``, or contains a
            ``/``): ``mcp-ref call -- python server.py`` forgot the tool, and
            starting a bare ``python`` would only wait for its script on stdin.
    """
    words = list(words)
    if words and words[0] == "--":
        words = words[1:]
    raw: dict[str, str] = {}
    while key_values and words and _ARGUMENT.match(words[-1]):
        key, _, value = words.pop().partition("=")
        raw.setdefault(key, value)  # the last word pops first: the first one given wins
    raw = dict(reversed(list(raw.items())))
    if not words or (with_command and len(words) < 2):
        raise CliError(usage)
    if not with_command and len(words) > 1:
        raise CliError(f"{usage} (with --url, no command: {shlex.join(words[:-1])}?)")
    name = words.pop()
    if with_command and key_values and looks_like_a_file(name):
        raise CliError(
            f"{usage} ({name} looks like the server's file, not a {what.lower()}'s "
            f"name: give the {what.lower()} after the command)"
        )
    return words, name, raw


def looks_like_a_file(word: str) -> bool:
    """Whether ``word``, taken for a tool's name, is rather the server's script: it
    exists as a file, ends in a script suffix, or contains a ``/``."""
    return "/" in word or word.endswith(_SCRIPT_SUFFIXES) or os.path.isfile(word)


def parse_arguments(words: Sequence[str]) -> tuple[list[str], str, dict[str, Any]]:
    """Split ``CMD... TOOL key=value...`` into ``(command, tool, arguments)``, each
    value parsed by :func:`parse_value` (``mcp-ref call`` parses them by the tool's
    input schema instead: :func:`coerce_arguments`).

    Raises:
        CliError: as :func:`split_words` (no command, no tool, a tool that looks like
            the server's file).
    """
    command, tool, raw = split_words(words, CALL_USAGE)
    return command, tool, {key: parse_value(value) for key, value in raw.items()}


def coerce_arguments(
    raw: Mapping[str, str], input_schema: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The values of ``key=value`` words, read by the tool's ``inputSchema``.

    A property whose schema admits only strings keeps the text as given (``name=123``
    is ``"123"``); one that admits strings and other types keeps the text unless it
    parses as JSON of an admitted type; any other property's value is parsed as JSON
    (text when it does not parse, for the server to refuse).  Keys the schema does
    not know follow :func:`parse_value`.

    Args:
        raw: key -> the text after ``=``.
        input_schema: the tool's ``inputSchema`` (JSON Schema), or None when the tool
            is not listed.

    Source: 2025-06-18/server/tools#tool (``inputSchema``).
    """
    properties = (input_schema or {}).get("properties") or {}
    return {key: _coerce(text, properties.get(key)) for key, text in raw.items()}


def _coerce(text: str, schema: Any) -> Any:
    kinds = _json_types(schema)
    if not kinds:
        return parse_value(text)
    if kinds == {"string"}:
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return text
    kind = json_type_name(value)
    fits = kind in kinds or (kind == "integer" and "number" in kinds)
    return value if fits or "string" not in kinds else text


def _json_types(schema: Any) -> set[str]:
    """The JSON types a schema admits (empty: it does not say, or we cannot tell)."""
    if not isinstance(schema, dict):
        return set()
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {k for k in kind if isinstance(k, str)}
    if "const" in schema:
        return {json_type_name(schema["const"])}
    if isinstance(schema.get("enum"), list):
        return {json_type_name(v) for v in schema["enum"]}
    branches = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(branches, list):
        found = [_json_types(branch) for branch in branches]
        return set().union(*found) if found and all(found) else set()
    return set()


def server_command(words: Sequence[str]) -> list[str]:
    """The server's command: the words after ``--``.

    Raises:
        CliError: no words.
    """
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


def era_of(client: Any) -> str:
    """Which era the session spoke, for people: ``"legacy era (initialize)"`` or
    ``"modern era (per-request _meta)"``."""
    if client.era == "modern":
        return "modern era (per-request _meta)"
    return "legacy era (initialize)"


async def server_capabilities(client: Any) -> t.ServerCapabilities:
    """The server's capabilities: ``initialize``'s, or (modern era) ``server/discover``'s,
    asked for once."""
    if client.era == "modern" and client.core.discover_result is None:
        await client.discover()
    caps: t.ServerCapabilities = client.server_capabilities
    return caps


def _print_listing(client: Any, out: TextIO, listing: dict[str, Any]) -> None:
    info = client.server_info
    title = f' "{info.title}"' if info.title else ""
    print(
        f"server: {info.name} {info.version}{title}, protocol {client.protocol_version}, "
        f"{era_of(client)}",
        file=out,
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


SEND_TIMEOUT: Final = 30.0
"""Seconds one write may take (the session's default ``send_timeout``); with an
``http(s)://`` URL the sign-in's time is added (:func:`connect`)."""

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


def _timeouts(timeout: float | None, initialize_wait: float) -> dict[str, Any]:
    """The timeouts of :func:`~mcp_ref.client.open_stdio_client` for ``--timeout
    SECONDS`` (None: not given): the wait for each answer, ``initialize``'s included;
    not given, ``initialize_wait`` (:data:`INITIALIZE_TIMEOUT`) for ``initialize`` and the client's default
    for the rest.  Source: 2025-06-18/basic/lifecycle#timeouts.3."""
    from .._inflight import RequestTimeout
    from ..trio import DEFAULT_TIMEOUT

    # Spec: 2025-06-18/basic/lifecycle#timeouts.3 ("allow these timeouts to be
    # configured on a per-request basis")
    if timeout is None:
        return {
            "timeout": DEFAULT_TIMEOUT,
            "initialize_timeout": RequestTimeout(seconds=initialize_wait),
        }
    each = RequestTimeout(seconds=timeout)
    return {"timeout": each, "initialize_timeout": each}


def _no_answer(exc: Any, server: str, timeout: float | None, initialize_wait: float) -> CliError:
    """The one-line error for ``exc``, a :class:`~mcp_ref.client.NoAnswerError`: what
    went unanswered, from which server (its command or URL), within how long (the
    configured seconds, or the time waited); for ``initialize``, ask whether it is an
    MCP server at all."""
    if timeout is not None:
        within = f"{timeout:g}"
    elif exc.method == "initialize":
        within = f"{initialize_wait:g}"
    else:
        within = f"{float(f'{exc.elapsed:.3g}'):g}"
    text = f"no answer to {exc.method} from {server} within {within} s"
    if exc.method != "initialize":
        return CliError(text)
    text += ": is it an MCP server?"
    if timeout is None:
        text += " (a server slow to start needs a longer --timeout SECONDS)"
    return CliError(text)


@asynccontextmanager
async def connect(
    command: Sequence[str] | None,
    url: str | None,
    timeout: float | None,
    initialize_wait: float = INITIALIZE_TIMEOUT,
    sign_in: SignInOptions | None = None,
    **options: Any,
) -> AsyncIterator[Client]:
    """An initialized client of the server at ``url`` (``http(s)://``: Streamable HTTP;
    ``ws(s)://``: WebSocket) or started by ``command`` (stdio).

    Args:
        command: the server's command (with ``url`` None).
        url: the server's URL (with ``command`` None).
        timeout: ``--timeout`` (seconds per answer), or None (see :func:`_timeouts`).
        initialize_wait: seconds to wait for ``initialize``'s answer when ``timeout``
            is None.
        sign_in: with an ``http(s)://`` URL, how to sign in when the server asks
            (401/403): a loopback redirect URI and the browser (:mod:`._signin`);
            None: the defaults of :class:`~._signin.SignInOptions`.
        **options: those of :func:`~mcp_ref.client.open_client` (``on_log``...).

    Raises:
        CliError: a URL of another scheme; no answer in time (naming the server); the
            redirect port cannot be bound; no sign-in callback in time.
    """
    from .._inflight import RequestTimeout
    from ..client import NoAnswerError, open_http_client, open_stdio_client, open_websocket_client

    options.update(_timeouts(timeout, initialize_wait))
    opener: AbstractAsyncContextManager[Client]
    timeout_of_initialize = timeout  # for the error: None says initialize_wait
    async with AsyncExitStack() as stack:
        if url is None:
            assert command is not None
            server = shlex.join(command)
            opener = open_stdio_client(command, **options)
        elif url.startswith(("http://", "https://")):
            sign_in = sign_in or SignInOptions()
            options["auth"] = await stack.enter_async_context(_oauth_options(sign_in))
            # A sign-in happens while initialize is being sent: within initialize's
            # wait and the session's bound on one write, each extended by the time
            # given to the person (and SIGN_IN_EXCHANGES to the flow's requests).
            extra = sign_in.wait + SIGN_IN_EXCHANGES
            initialize_wait = (initialize_wait if timeout is None else timeout) + extra
            timeout_of_initialize = None
            options["initialize_timeout"] = RequestTimeout(seconds=initialize_wait)
            options.setdefault("send_timeout", extra + SEND_TIMEOUT)
            server, opener = url, open_http_client(url, **options)
        elif url.startswith(("ws://", "wss://")):
            server, opener = url, open_websocket_client(url, **options)
        else:
            raise CliError(f"--url takes http://, https://, ws:// or wss:// URLs, not {url!r}")
        try:
            async with opener as client:
                yield client
        except NoAnswerError as exc:
            said = timeout_of_initialize if exc.method == "initialize" else timeout
            raise _no_answer(exc, server, said, initialize_wait) from None


@asynccontextmanager
async def _oauth_options(sign_in: SignInOptions) -> AsyncIterator[Any]:
    """The :class:`~mcp_ref.client.OAuthClientOptions` of ``sign_in``, its loopback
    listener bound for as long as the context lasts.  The flow starts only when the
    server refuses a request (401, or 403 ``insufficient_scope``).

    Source: 2025-11-25/basic/authorization#authorization-flow-steps.
    """
    from ..client import OAuthClientOptions

    async with loopback_sign_in(sign_in) as (redirect_uri, authorize):
        yield OAuthClientOptions(
            redirect_uri=redirect_uri,
            authorize=authorize,
            client_id=sign_in.client_id,
            client_secret=client_secret() if sign_in.client_id else None,
        )


@attrs.frozen(kw_only=True)
class ClientOptions:
    """What every client command (``inspect``, ``call``, ``read``, ``prompt``) is given
    besides its words: where to print, how, and how to reach the server (the options of
    :func:`connect`)."""

    out: TextIO
    """Where the answer is printed (log and progress messages go to stderr)."""
    as_json: bool = False
    """``--json``: print the whole result as JSON instead of as text."""
    url: str | None = None
    """``--url``: the server's URL; None for a server started by a command (stdio)."""
    timeout: float | None = None
    """``--timeout``: seconds per answer, or None for the defaults (:func:`_timeouts`)."""
    initialize_wait: float = INITIALIZE_TIMEOUT
    """Seconds to wait for ``initialize``'s answer when ``timeout`` is None."""
    era: str | None = None
    """``--era``: ``legacy``, ``modern`` or ``auto`` (:data:`mcp_ref._client.EraArg`);
    None for the client's default."""
    sign_in: SignInOptions | None = None
    """With an ``http(s)://`` URL: how to sign in when the server asks
    (``--redirect-port``, ``--no-browser``, ``--client-id``); None: the defaults."""

    def connect(
        self, command: Sequence[str] | None, **client_options: Any
    ) -> AbstractAsyncContextManager[Client]:
        """:func:`connect` to the server at ``url``, else the one ``command`` starts
        (``client_options``: those of :func:`~mcp_ref.client.open_client`).

        Raises:
            CliError: as :func:`connect`.
        """
        if self.era is not None:
            client_options.setdefault("era", self.era)
        return connect(
            command,
            self.url,
            self.timeout,
            self.initialize_wait,
            sign_in=self.sign_in,
            **client_options,
        )


def _show_log(params: t.LoggingMessageNotificationParams) -> None:
    """Print a server's log message on stderr as it arrives: ``[info] logger: text``."""
    data = params.data if isinstance(params.data, str) else json.dumps(params.data)
    who = f"{params.logger}: " if params.logger else ""
    print(f"[{params.level}] {who}{data}", file=sys.stderr, flush=True)


def _show_progress(progress: Progress) -> None:
    """Print a progress notification on stderr as it arrives: ``[progress] 2/5 text``."""
    total = f"/{progress.total:g}" if progress.total is not None else ""
    message = f" {progress.message}" if progress.message else ""
    print(f"[progress] {progress.progress:g}{total}{message}", file=sys.stderr, flush=True)


def _print_json(value: Any, out: TextIO) -> None:
    from .._convert import unstructure

    print(json.dumps(unstructure(value), indent=2, ensure_ascii=False), file=out)


async def inspect_command(command: list[str] | None, options: ClientOptions) -> int:
    """``mcp-ref inspect``: print the server's tools, resources, templates, prompts.

    Args:
        command: the server's command (stdio), or None with ``options.url``.
        options: where and how to print, and how to reach the server.

    Raises:
        CliError: as :func:`connect`; McpError and the client's errors as they come.
    """
    async with options.connect(command) as client:
        caps = await server_capabilities(client)
        listing: dict[str, Any] = {}
        if caps.tools is not None:
            listing["tools"] = await client.list_tools()
        if caps.resources is not None:
            listing["resources"] = await client.list_resources()
            listing["templates"] = await client.list_resource_templates()
        if caps.prompts is not None:
            listing["prompts"] = await client.list_prompts()
    if options.as_json:
        from .._convert import unstructure

        data = {k: unstructure(v) for k, v in listing.items()}
        data["serverInfo"] = unstructure(client.server_info)
        data["protocolVersion"] = client.protocol_version
        data["era"] = client.era
        print(json.dumps(data, indent=2, ensure_ascii=False), file=options.out)
    else:
        _print_listing(client, options.out, listing)
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


async def call_command(words: Sequence[str], options: ClientOptions) -> int:
    """``mcp-ref call``: call one tool, its ``key=value`` arguments read by its input
    schema (:func:`coerce_arguments`), showing progress and log messages on stderr
    as they arrive; print the result.  Returns 1 when the result is an error.

    Args:
        words: ``[-- CMD...] TOOL key=value...`` (no command with ``options.url``).
        options: where and how to print, and how to reach the server.

    Raises:
        CliError: usage (:func:`split_words`), as :func:`connect`; McpError and the
            client's errors as they come.
    """
    command, tool, raw = split_words(words, CALL_USAGE, with_command=options.url is None)
    async with options.connect(command or None, on_log=_show_log) as client:
        schema = None
        if (await server_capabilities(client)).tools is not None:
            listed = {listed.name: listed for listed in await client.list_tools()}
            schema = listed[tool].input_schema if tool in listed else None
        arguments = coerce_arguments(raw, schema)
        result = await client.call_tool(tool, arguments, on_progress=_show_progress)
    print(f"[era] {era_of(client)}, protocol {client.protocol_version}", file=sys.stderr)
    if options.as_json:
        _print_json(result, options.out)
    else:
        for block in result.content:
            print(_describe_block(block), file=options.out)
        if result.structured_content is not None and not result.content:
            print(
                json.dumps(result.structured_content, indent=2, ensure_ascii=False),
                file=options.out,
            )
    if result.is_error:
        print(f"mcp-ref: tool {tool} reported an error", file=sys.stderr)
        return 1
    return 0


async def read_command(words: Sequence[str], options: ClientOptions) -> int:
    """``mcp-ref read URI``: print a resource's contents, text as it is, each blob as
    one line (``[blob URI (type), N bytes]``).

    Args:
        words: ``[-- CMD...] URI`` (no command with ``options.url``).
        options: where and how to print, and how to reach the server.

    Raises:
        CliError: usage, as :func:`connect`; McpError (-32002: no such resource).
    """
    command, uri, _ = split_words(
        words, READ_USAGE, with_command=options.url is None, key_values=False
    )
    async with options.connect(command or None, on_log=_show_log) as client:
        result = await client.read_resource(uri)
    if options.as_json:
        _print_json(result, options.out)
        return 0
    for contents in result.contents:
        if isinstance(contents, t.TextResourceContents):
            text = contents.text
            print(text, end="" if text.endswith("\n") else "\n", file=options.out)
        else:
            blob = contents.blob.strip()
            size = len(blob) * 3 // 4 - blob[-2:].count("=")
            kind = contents.mime_type or "unknown type"
            print(f"[blob {contents.uri} ({kind}), {size} bytes]", file=options.out)
    return 0


async def prompt_command(words: Sequence[str], options: ClientOptions) -> int:
    """``mcp-ref prompt NAME key=value...``: get a prompt (its arguments are text, as
    the spec has them) and print its messages, ``role: content`` each.

    Args:
        words: ``[-- CMD...] NAME key=value...`` (no command with ``options.url``).
        options: where and how to print, and how to reach the server.

    Raises:
        CliError: usage, as :func:`connect`; McpError (-32602: no such prompt).
    """
    command, name, raw = split_words(
        words, PROMPT_USAGE, with_command=options.url is None, what="prompt"
    )
    async with options.connect(command or None, on_log=_show_log) as client:
        result = await client.get_prompt(name, raw)
    if options.as_json:
        _print_json(result, options.out)
        return 0
    if result.description:
        print(f"# {_first_line(result.description)}", file=options.out)
    for message in result.messages:
        print(f"{message.role}: {_describe_block(message.content)}", file=options.out)
    return 0

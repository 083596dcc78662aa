"""The ``mcp-ref`` command (also ``python -m mcp_ref``).

This package holds the parser, :func:`main` and the one-line errors; each subcommand
lives in a module of its own (:mod:`.serve`, :mod:`.client` for ``inspect`` and
``call``, ``read`` and ``prompt``, :mod:`.demo`).

Subcommands::

    mcp-ref serve [FILE.py[:ATTR] | MODULE[:ATTR]] [--http HOST:PORT | --ws HOST:PORT]
        Run a server (default: the reference "everything" server) on stdio, Streamable
        HTTP or WebSocket: a file by path, or a module found from the current
        directory (``--server TARGET`` says the same).  Without ``:ATTR``, the
        attribute ``server``, ``mcp`` or ``app``, or the module's only ``Server``.
    mcp-ref demo [--full] [-- CMD...]
        Run a client against the reference server (a child process) and print the wire
        transcript, each message annotated with the spec section that governs it.
    mcp-ref inspect [--json] [--timeout SECONDS] (--url URL | -- CMD...)
        Connect to a server and print its tools, resources, templates, prompts.
        With an http(s) URL, signs in when the server asks (these four commands take
        [--redirect-port PORT] [--no-browser] [--client-id ID]; see below).
    mcp-ref call [--json] [--timeout SECONDS] (--url URL | -- CMD...) TOOL [key=value ...]
        Call one tool.  The trailing ``key=value`` words are the arguments, read by the
        tool's input schema (a string property keeps the text; other values are JSON
        when they parse); the word before them is the tool.  Progress and log messages
        show on stderr as they arrive.
    mcp-ref read [--json] [--timeout SECONDS] (--url URL | -- CMD...) URI
        Read a resource: text printed as it is, each blob as one line.
    mcp-ref prompt [--json] [--timeout SECONDS] (--url URL | -- CMD...) NAME [key=value ...]
        Get a prompt and print its messages.

``--url`` takes ``http(s)://`` (Streamable HTTP, with the 2024-11-05 fallback) and
``ws(s)://`` (WebSocket) URLs; ``-- CMD...`` starts a stdio server.

An ``http(s)://`` server that answers 401 gets signed in to (OAuth 2.1, authorization
code with PKCE): the command opens the authorization URL in a browser (``--no-browser``:
prints ``mcp-ref: open this URL to sign in: URL`` on stderr) and waits on
``http://127.0.0.1:PORT/callback`` (``--redirect-port PORT``, default any free port)
for the browser to come back, at most ``--timeout`` seconds or 300 s.  The client is
registered by the library's order (a client ID metadata document, else dynamic
registration) unless ``--client-id ID`` names a pre-registered one, its secret (if
any) in the environment variable ``MCP_REF_CLIENT_SECRET``.  The tokens are kept in
memory for this one command.  ``--timeout``
bounds the wait for each answer; without it, ``initialize`` gets 10 s
(INITIALIZE_TIMEOUT) and the rest 60 s.  A server that never answers is named as such
("no answer to initialize from CMD within 10 s: ..."), never blamed for an error it did
not send.

Errors are one line on stderr and exit status 1, never a traceback (an exception group
from trio's nurseries is reported by its first exception that is not a cancellation; an
address that cannot be bound is named).  A tool result with ``isError: true`` is
printed and exits with status 1 too.

``serve --http HOST:PORT`` serves Streamable HTTP at ``http://HOST:PORT/mcp`` and
``serve --ws HOST:PORT`` WebSocket at ``ws://HOST:PORT/mcp`` (port 0 picks a free port);
either prints the URL on stderr once it listens.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TextIO

import trio

from ._serve_secure import add_arguments as add_secure_arguments
from ._signin import SECRET_VARIABLE, SIGN_IN_WAIT, SignInOptions
from .client import (
    CALL_USAGE,
    INITIALIZE_TIMEOUT,
    PROMPT_USAGE,
    READ_USAGE,
    ClientOptions,
    call_command,
    coerce_arguments,
    inspect_command,
    parse_arguments,
    parse_value,
    prompt_command,
    read_command,
    seconds,
    server_command,
    split_words,
)
from .demo import Transcript, demo_command
from .errors import CliError, explain, first_error
from .serve import DEFAULT_SERVER, serve_command

__all__ = [
    "DEFAULT_SERVER",
    "INITIALIZE_TIMEOUT",
    "CliError",
    "Transcript",
    "coerce_arguments",
    "main",
    "parse_arguments",
    "parse_value",
]


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
        "target",
        nargs="?",
        metavar="FILE.py[:ATTR] | MODULE[:ATTR]",
        help="the server to run: a file or a module (found from the current directory); "
        "ATTR names the server or a zero-argument factory; without it, the attribute "
        "server, mcp or app, or the only Server in the module "
        f"(default: {DEFAULT_SERVER})",
    )
    serve.add_argument(
        "--server",
        metavar="TARGET",
        help="the same as the argument: FILE.py[:ATTR] or MODULE[:ATTR]",
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
    # Issue 17 (CORS, access log): keep these together.
    serve.add_argument(
        "--cors",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="with --http: answer CORS preflights from ORIGIN and let its pages read the "
        "answers (repeatable; ORIGIN becomes an allowed Origin too)",
    )
    serve.add_argument(
        "--redis",
        metavar="URL",
        help="with --http: share sessions and resumable streams with the other servers "
        "on this Redis (scale-out; needs mcp-ref[redis])",
    )
    serve.add_argument(
        "--no-access-log",
        dest="access_log",
        action="store_false",
        help="with --http: no access log line per request on stderr",
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
    add_secure_arguments(serve)

    demo = sub.add_parser("demo", help="print an annotated transcript against the reference server")
    demo.add_argument("--full", action="store_true", help="print whole messages")
    demo.add_argument(
        "--era",
        choices=("modern", "legacy"),
        default="modern",
        help="modern: 2026-07-28, no initialize (default); legacy: the initialize handshake",
    )
    demo.add_argument("server_command", nargs=argparse.REMAINDER, metavar="-- CMD")

    inspect = sub.add_parser("inspect", help="list a server's tools, resources, prompts")
    inspect.add_argument("--json", action="store_true", help="print JSON")
    _add_client_options(inspect, "the others")
    inspect.add_argument("words", nargs=argparse.REMAINDER, metavar="-- CMD")

    # The commands on one item of a server: name, help, what the timeout covers, words.
    for name, what, covers, words in (
        ("call", "call one tool of a server", "the call", "[-- CMD] TOOL key=value"),
        ("read", "read one resource of a server", "the read", "[-- CMD] URI"),
        ("prompt", "get one prompt of a server", "the prompt", "[-- CMD] NAME key=value"),
    ):
        command = sub.add_parser(name, help=what)
        command.add_argument("--json", action="store_true", help="print the whole result as JSON")
        _add_client_options(command, covers)
        command.add_argument("words", nargs=argparse.REMAINDER, metavar=words)
    return parser


def _add_client_options(parser: argparse.ArgumentParser, rest: str) -> None:
    """Add ``--url URL`` and ``--timeout SECONDS`` (seconds per answer; ``rest`` names
    what the 60 s default covers besides ``initialize``)."""
    parser.add_argument(
        "--url",
        metavar="URL",
        help="the server's URL: http(s):// for Streamable HTTP, ws(s):// for WebSocket "
        "(instead of -- CMD...)",
    )
    parser.add_argument(
        "--timeout",
        type=seconds,
        metavar="SECONDS",
        help="wait at most this long for each answer, initialize's included "
        f"(default: {INITIALIZE_TIMEOUT:g} s for initialize, 60 s for {rest})",
    )
    parser.add_argument(
        "--era",
        choices=("legacy", "modern", "auto"),
        help="legacy: initialize (up to 2025-11-25); modern: 2026-07-28, _meta on every "
        "request; auto: probe with server/discover, then either (default: legacy)",
    )
    # Signing in (OAuth 2.1) to an http(s):// server that answers 401: _signin.py.
    parser.add_argument(
        "--redirect-port",
        type=_port,
        default=0,
        metavar="PORT",
        help="with an http(s) --url, when the server asks to sign in: the browser comes "
        "back to http://127.0.0.1:PORT/callback (default 0: any free port)",
    )
    parser.add_argument(
        "--no-browser",
        dest="open_browser",
        action="store_false",
        help="print the sign-in URL on stderr instead of opening a browser",
    )
    parser.add_argument(
        "--client-id",
        metavar="ID",
        help="sign in as this pre-registered OAuth client (its secret, if any, from "
        f"${SECRET_VARIABLE}); default: a client ID metadata document or dynamic "
        "registration",
    )


def _port(text: str) -> int:
    """``--redirect-port``'s value: 0 to 65535."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, not {text!r}")
    return value


_CLIENT_COMMANDS: dict[str, tuple[Callable[..., Any], str, dict[str, Any]]] = {
    "call": (call_command, CALL_USAGE, {}),
    "read": (read_command, READ_USAGE, {"key_values": False}),
    "prompt": (prompt_command, PROMPT_USAGE, {"what": "prompt"}),
}
"""Subcommand -> (its coroutine, its usage line, its options of :func:`split_words`)."""


def _client_options(args: argparse.Namespace, out: TextIO) -> ClientOptions:
    """The :class:`~.client.ClientOptions` of a client command's ``--json``, ``--url``
    and ``--timeout``; the wait for ``initialize`` is this module's
    :data:`INITIALIZE_TIMEOUT`, read at each call (so it can be shortened)."""
    return ClientOptions(
        out=out,
        as_json=args.json,
        url=args.url,
        timeout=args.timeout,
        initialize_wait=INITIALIZE_TIMEOUT,
        era=args.era,
        sign_in=SignInOptions(
            redirect_port=args.redirect_port,
            open_browser=args.open_browser,
            client_id=args.client_id,
            wait=SIGN_IN_WAIT if args.timeout is None else args.timeout,
        ),
    )


def _run(args: argparse.Namespace, out: TextIO) -> int:
    if args.command == "serve":
        return serve_command(args)
    runner: Callable[[], Any]
    if args.command == "demo":
        words = list(args.server_command)
        if words and words[0] == "--":
            words = words[1:]
        command = words or [sys.executable, "-m", "mcp_ref", "serve"]
        runner = partial(demo_command, command, args.full, out, args.era)
    elif args.command == "inspect":
        if args.url and args.words:
            raise CliError("give --url or -- CMD..., not both")
        target = None if args.url else server_command(args.words)
        runner = partial(inspect_command, target, _client_options(args, out))
    elif args.command in _CLIENT_COMMANDS:
        run_command, usage, options = _CLIENT_COMMANDS[args.command]
        split_words(args.words, usage, with_command=args.url is None, **options)  # usage first
        runner = partial(run_command, args.words, _client_options(args, out))
    else:
        raise CliError(
            "give a command: serve, demo, inspect, call, read or prompt (see mcp-ref --help)"
        )
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
        status = _run(args, out or sys.stdout)
        # Flush here, not at the interpreter's exit, so that a reader gone by then
        # (``mcp-ref demo | head -1``) is the quiet case below, not a shutdown error.
        sys.stdout.flush()
        return status
    except KeyboardInterrupt:
        print("mcp-ref: interrupted", file=sys.stderr)
        return 130
    except BaseExceptionGroup as group:
        # trio's nurseries wrap what their tasks raise: the first exception that is not
        # a cancellation says what happened (Ctrl-C while trio was starting or
        # stopping comes wrapped too).
        first = first_error(group)
        if isinstance(first, KeyboardInterrupt):
            print("mcp-ref: interrupted", file=sys.stderr)
            return 130
        if isinstance(first, SystemExit):
            raise first from None
        if isinstance(first, BrokenPipeError):
            return _reader_gone()
        print(f"mcp-ref: {explain(first)}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return _reader_gone()
    except Exception as exc:  # every error is one line, never a traceback
        print(f"mcp-ref: {explain(exc)}", file=sys.stderr)
        return 1


def _reader_gone() -> int:
    """The reader went away (``mcp-ref inspect ... | head``): not an error.  Point
    stdout at devnull so the interpreter's final flush does not fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 0

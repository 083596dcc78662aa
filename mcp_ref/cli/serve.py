"""``mcp-ref serve``: run a server on stdio, Streamable HTTP or WebSocket."""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from collections.abc import Callable
from functools import partial
from typing import Any, Final

import trio

from .errors import CliError

__all__ = ["DEFAULT_SERVER", "serve_command"]

DEFAULT_SERVER: Final = "mcp_ref.examples.everything:make_server"


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


def serve_command(args: argparse.Namespace) -> int:
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
        from ..trio import Keepalive

        try:
            session_kw["keepalive"] = Keepalive(interval=args.keepalive)
        except ValueError as exc:
            raise CliError(f"--keepalive: {exc}") from None
    from ..trio._stdio import serve_until_signal

    serve: Callable[[trio.Event], Any]
    if args.http or args.ws:
        host, port = _address(args.http or args.ws)
        from ..trio import serve_http, serve_websocket

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

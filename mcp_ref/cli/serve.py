"""``mcp-ref serve``: run a server on stdio, Streamable HTTP or WebSocket."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import logging
import os
import signal
import sys
from collections.abc import Callable
from functools import partial
from types import ModuleType
from typing import Any, Final

import trio

from .._http_peers import is_loopback
from ._serve_secure import TOKENS_IN_CLEAR, http_options
from .errors import CliError

__all__ = ["DEFAULT_SERVER", "load_server", "serve_command"]

DEFAULT_SERVER: Final = "mcp_ref.examples.everything:make_server"


_NAMES: Final = ("server", "mcp", "app")
"""The attributes searched first for the server when ``serve`` is given no ``:ATTR``."""
_FACTORIES: Final = ("make_server", "create_server")
"""Zero-argument factories tried last, when no server object was found."""


def load_server(target: str) -> Any:
    """The server named by ``target``, as ``mcp-ref serve TARGET`` and ``--server`` take it.

    ``target`` is ``FILE.py[:ATTR]`` (a path; the file's directory goes on ``sys.path``
    first, as ``python FILE.py`` would do) or ``MODULE[:ATTR]`` (imported with the
    current directory on ``sys.path``).  ``ATTR`` names the server, or a zero-argument
    factory (a function or class) that makes it.  Without ``:ATTR``: an attribute named
    ``server``, ``mcp`` or ``app`` that is a server; else the only
    :class:`~mcp_ref.server.Server` instance in the module; else ``server``, ``mcp``,
    ``app``, ``make_server`` or ``create_server`` called as a factory.

    A server is anything with a ``handle_request`` method (a
    :class:`~mcp_ref.trio.Handler`); a file's ``if __name__ == "__main__":`` block does
    not run.

    Raises:
        CliError: the file or module cannot be loaded (its error in one line), has no
            such attribute, holds several servers, or none (naming what it holds).
    """
    where, attr = _split_target(target)
    module = _import_file(where) if _is_path(where) else _import_module(where)
    if attr:
        try:
            found = getattr(module, attr)
        except AttributeError:
            raise CliError(f"{where} has no attribute {attr!r}") from None
        return _instantiate(found, f"{where}:{attr}")
    return _find_server(module, where)


def _split_target(target: str) -> tuple[str, str | None]:
    """``"a/b.py:srv"`` -> ``("a/b.py", "srv")``; ``"pkg.mod"`` -> ``("pkg.mod", None)``."""
    where, sep, attr = target.rpartition(":")
    if sep and where and attr.isidentifier():
        return where, attr
    if not target or target.endswith(":"):
        raise CliError(
            f"expected FILE.py[:ATTR] or MODULE[:ATTR] (MODULE:ATTR too), not {target!r}"
        )
    return target, None


def _is_path(where: str) -> bool:
    return where.endswith(".py") or "/" in where or os.sep in where or os.path.isfile(where)


def _import_file(path: str) -> ModuleType:
    """Run the file ``path`` as a module (not as ``__main__``) and return it."""
    full = os.path.abspath(path)
    if not os.path.isfile(full):
        raise CliError(f"cannot load {path}: no such file")
    directory = os.path.dirname(full)
    if directory not in sys.path:
        sys.path.insert(0, directory)  # its sibling modules import, as under `python FILE`
    stem = os.path.splitext(os.path.basename(full))[0]
    name = stem if stem.isidentifier() and stem not in sys.modules else "_mcp_ref_served"
    spec = importlib.util.spec_from_file_location(name, full)
    if spec is None or spec.loader is None:
        raise CliError(f"cannot load {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look their module up there
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise CliError(f"cannot load {path}: {_one_line(exc)}") from None
    return module


def _import_module(name: str) -> ModuleType:
    """Import ``name`` with the current directory on ``sys.path`` (where ``python -m``
    would look, and a console script would not)."""
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and name.startswith(exc.name):
            raise CliError(
                f"cannot import {name}: no module {exc.name!r} in {here} or on sys.path "
                "(give FILE.py[:ATTR] or MODULE[:ATTR])"
            ) from None
        raise CliError(f"cannot import {name}: {_one_line(exc)}") from None
    except Exception as exc:
        raise CliError(f"cannot import {name}: {_one_line(exc)}") from None


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _is_server(value: Any) -> bool:
    return not isinstance(value, type) and hasattr(value, "handle_request")


def _instantiate(found: Any, label: str) -> Any:
    """``found`` if it is a server, else what calling it with no arguments makes."""
    if _is_server(found):
        return found
    if not callable(found):
        raise CliError(f"{label} is a {type(found).__name__}, not an MCP server")
    try:
        inspect.signature(found).bind()
    except TypeError:
        raise CliError(
            f"{label} needs arguments: give a server or a zero-argument factory"
        ) from None
    except ValueError:  # no signature to read (a builtin): try it
        pass
    try:
        made = found()
    except Exception as exc:
        raise CliError(f"{label}() failed: {_one_line(exc)}") from None
    if not _is_server(made):
        raise CliError(f"{label}() made a {type(made).__name__}, not an MCP server")
    return made


def _find_server(module: ModuleType, where: str) -> Any:
    """The server of a module given without ``:ATTR`` (see :func:`load_server`)."""
    from ..server import Server

    for name in _NAMES:
        if _is_server(getattr(module, name, None)):
            return getattr(module, name)
    names: dict[int, list[str]] = {}
    for name, value in vars(module).items():
        if isinstance(value, Server):
            names.setdefault(id(value), []).append(name)
    if len(names) == 1:
        return getattr(module, next(iter(names.values()))[0])
    if len(names) > 1:
        listed = ", ".join(group[0] for group in names.values())
        raise CliError(f"{where} holds several servers ({listed}): name one, as {where}:ATTR")
    for name in (*_NAMES, *_FACTORIES):
        found = getattr(module, name, None)
        if callable(found):
            return _instantiate(found, f"{where}:{name}")
    public = sorted(name for name in vars(module) if not name.startswith("_"))
    held = ", ".join(public[:8]) + (", ..." if len(public) > 8 else "")
    raise CliError(
        f"no server in {where}: no Server instance, and no server, mcp, app, make_server "
        f"or create_server (it holds: {held or 'nothing'}); name one as {where}:ATTR"
    )


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise CliError(f"expected HOST:PORT, not {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


class _ToStderr(logging.Handler):
    """Writes each record on the ``sys.stderr`` of the moment (one line)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            print(self.format(record), file=sys.stderr, flush=True)
        except Exception:
            self.handleError(record)


def _http_extras(args: argparse.Namespace) -> dict[str, Any]:
    """``serve_http``'s CORS origins, access log (on unless ``--no-access-log``: one
    line per request on stderr, logger ``mcp_ref.access``) and shared store (``--redis``).

    Raises:
        CliError: ``--redis`` without the redis client, or with a bad URL.
    """
    access_log = getattr(args, "access_log", True)
    if access_log:
        from .._http_access import ACCESS_LOGGER

        logger = logging.getLogger(ACCESS_LOGGER)
        if not any(isinstance(h, _ToStderr) for h in logger.handlers):
            handler = _ToStderr()
            handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
            logger.addHandler(handler)
            logger.setLevel(logging.INFO)
    extras: dict[str, Any] = {"cors_origins": getattr(args, "cors", None) or ()}
    if getattr(args, "redis", None):
        try:
            from ..stores.redis import RedisStores

            extras["stores"] = RedisStores.from_url(args.redis)
        except ImportError:
            raise CliError("--redis needs the redis client: pip install 'mcp-ref[redis]'") from None
        except ValueError as exc:
            raise CliError(f"--redis: {exc}") from None
    return {**extras, "access_log": access_log}


def serve_command(args: argparse.Namespace) -> int:
    """``mcp-ref serve``: run until end of input (stdio) or a signal.

    SIGTERM and SIGINT stop the server gracefully (``--grace`` seconds for the requests
    in progress, then an error answer for each one still running); a second signal
    stops it at once.  Exit status 0 after SIGTERM, 130 after SIGINT, with one line on
    stderr.
    """
    if args.target and args.server:
        raise CliError("give the server once: as an argument or with --server")
    target = args.target or args.server or DEFAULT_SERVER
    server = load_server(target)
    if (args.stateless or args.json_response) and not args.http:
        raise CliError("--stateless and --json-response need --http HOST:PORT")
    if args.grace < 0:
        raise CliError("--grace must not be negative")
    if not args.http and (args.tls_cert or args.tls_key or args.auth):
        raise CliError("--tls-cert, --tls-key and --auth need --http HOST:PORT")
    session_kw: dict[str, Any] = {}
    if args.keepalive is not None:
        if args.http:
            raise CliError("--keepalive works on stdio and --ws, not --http")
        from ..trio import Keepalive

        try:
            session_kw["keepalive"] = Keepalive(interval=args.keepalive)
        except ValueError as exc:
            raise CliError(f"--keepalive: {exc}") from None
    from ..server._server import cannot_listen
    from ..trio import serve_stdio
    from ..trio._stdio import serve_until_signal

    serve: Callable[[trio.Event], Any]
    if args.http or args.ws:
        host, port = _address(args.http or args.ws)
        from ..trio import serve_http, serve_websocket

        start: Callable[..., Any]
        if args.http:
            try:
                secure = http_options(args)  # --tls-cert/--tls-key, --auth...
            except ValueError as exc:
                raise CliError(str(exc)) from None
            if "auth" in secure and "ssl_context" not in secure and not is_loopback(host):
                print(TOKENS_IN_CLEAR, file=sys.stderr)
            start = partial(
                serve_http,
                server,
                host,
                port,
                **secure,
                stateless=args.stateless,
                json_response=args.json_response,
                **_http_extras(args),
            )
        else:
            start = partial(serve_websocket, server, host, port, **session_kw)
        name = f"[{host}]" if ":" in host else host

        async def serve(stop: trio.Event) -> None:
            async with trio.open_nursery() as nursery:
                try:
                    started = await nursery.start(
                        partial(start, stop=stop, grace_seconds=args.grace)
                    )
                except OSError as exc:
                    raise CliError(cannot_listen(host, port, exc)) from None
                # Spec: 2025-06-18/basic/transports#security-warning.2 (localhost by default)
                # "When running locally, servers SHOULD bind only to localhost (127.0.0.1) rather
                # than all network interfaces (0.0.0.0)"
                # serve_http reports a ServerInfo, serve_websocket the port it bound.
                url = started.url if args.http else f"ws://{name}:{started}/mcp"
                print(f"mcp-ref: serving {target} on {url}", file=sys.stderr, flush=True)

    else:
        if sys.stdin.isatty():
            print(
                "mcp-ref: serving MCP (JSON-RPC, one message per line) on stdin/stdout; "
                "end input (Ctrl-D) to stop",
                file=sys.stderr,
            )

        async def serve(stop: trio.Event) -> None:
            await serve_stdio(server, stop=stop, grace_seconds=args.grace, **session_kw)

    got = trio.run(serve_until_signal, serve)
    if got == signal.SIGINT:
        print("mcp-ref: interrupted", file=sys.stderr)
        return 130
    if got == signal.SIGTERM:
        print("mcp-ref: stopped (SIGTERM)", file=sys.stderr)
    return 0

"""The browser step of ``mcp-ref inspect --url URL`` (and ``call``, ``read``,
``prompt``) when the server asks the client to sign in.

Theory of operation
-------------------
The library signs in by itself (:class:`~mcp_ref.client.OAuthClientOptions`) except for
one step only the application can do: show the user the authorization URL and bring
back the URL the browser was sent to afterwards.  The command does it the way native
applications do (RFC 8252 section 7.3, a loopback redirect URI):

1. before the client opens, bind a socket on ``127.0.0.1`` (``--redirect-port``, 0 for
   any free port), so the redirect URI ``http://127.0.0.1:PORT/callback`` is known when
   the flow registers the client;
2. when the flow needs the browser, open the authorization URL with
   :func:`webbrowser.open` (or, with ``--no-browser`` or no browser to open, print
   ``mcp-ref: open this URL to sign in: URL`` on stderr);
3. serve HTTP/1.1 (h11) on that socket until ``GET /callback?...`` arrives: answer it
   with a short page, answer anything else 404 and keep waiting; the head of a request
   is bounded (:data:`MAX_HEAD_BYTES`), so are the connections at once
   (:data:`MAX_CONNECTIONS`), the time one may take (:data:`CONNECTION_WAIT`) and the
   whole wait (``--timeout``, else :data:`SIGN_IN_WAIT`);
4. hand ``http://127.0.0.1:PORT/callback?...`` back to the flow, which checks ``state``
   and trades the code for tokens.

Nothing here logs the query of the callback (the code) or any token.

Source: 2025-11-25/basic/authorization#authorization-flow-steps.
"""

from __future__ import annotations

import os
import sys
import webbrowser
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Final

import attrs
import h11
import trio

from .errors import CliError

__all__ = [
    "CONNECTION_WAIT",
    "MAX_CONNECTIONS",
    "MAX_HEAD_BYTES",
    "SECRET_VARIABLE",
    "SIGN_IN_EXCHANGES",
    "SIGN_IN_WAIT",
    "SignInOptions",
    "loopback_sign_in",
    "wait_for_callback",
]

SIGN_IN_WAIT: Final = 300.0
"""Seconds the command waits for the browser to come back when ``--timeout`` is not
given: time for a person to sign in."""
SIGN_IN_EXCHANGES: Final = 60.0
"""Seconds allowed for the flow's own requests (discovery, registration, the token),
besides the person's time, when the command extends initialize's wait for a sign-in."""
MAX_HEAD_BYTES: Final = 16 * 1024
"""The largest request head (request line and headers) the listener reads, in bytes;
a longer one is answered 431 and closed."""
MAX_CONNECTIONS: Final = 8
"""Connections served at once; more are closed as they arrive."""
CONNECTION_WAIT: Final = 10.0
"""Seconds one connection may take to send its request head."""
SECRET_VARIABLE: Final = "MCP_REF_CLIENT_SECRET"
"""The environment variable holding the pre-registered client's secret (never a flag:
the command line is visible to other users of the machine)."""
CALLBACK_PATH: Final = "/callback"

_PAGE: Final = (
    b"<!doctype html><html><head><meta charset=utf-8><title>mcp-ref</title></head>"
    b"<body><p>mcp-ref: signed in; you may close this window.</p></body></html>\n"
)
_NOT_FOUND: Final = b"not found\n"

Authorize = Callable[[str], Awaitable[str]]


@attrs.frozen(kw_only=True)
class SignInOptions:
    """How the command signs in when an HTTP server asks (its options).

    The client secret is read from :data:`SECRET_VARIABLE` when the client id is given.
    """

    redirect_port: int = 0
    """``--redirect-port``: the loopback port of the redirect URI (0: any free one)."""
    open_browser: bool = True
    """False for ``--no-browser``: print the URL instead of opening it."""
    client_id: str | None = None
    """``--client-id``: a pre-registered client (None: the library's registration
    order, client ID metadata document then dynamic registration)."""
    wait: float = SIGN_IN_WAIT
    """Seconds to wait for the browser to come back (``--timeout``'s value if given)."""


async def wait_for_callback(
    listener: trio.abc.Listener[trio.abc.Stream],
    port: int,
    *,
    max_connections: int = MAX_CONNECTIONS,
    connection_wait: float = CONNECTION_WAIT,
) -> str:
    """Serve HTTP/1.1 on ``listener`` until ``GET /callback?...`` arrives; answer it
    with a short page and return ``http://127.0.0.1:PORT/callback?...``.

    Other requests are answered 404 (a malformed or too large head: 400 or 431) and
    the wait goes on; each connection is closed after one answer.  No deadline of its
    own: the caller bounds the wait (a cancel scope).

    Args:
        listener: a listener bound on loopback (kept open: the caller closes it).
        port: the port it is bound to (for the returned URL).
        max_connections: connections served at once; more are closed unanswered.
        connection_wait: seconds one connection may take to send its head.
    """
    found: list[str] = []
    busy = trio.Semaphore(max_connections)
    async with trio.open_nursery() as nursery:

        async def one(stream: trio.abc.Stream) -> None:
            try:
                with trio.move_on_after(connection_wait):
                    target = await _answer(stream)
                    if target is not None and not found:
                        found.append(f"http://127.0.0.1:{port}{target}")
                        nursery.cancel_scope.cancel()
            finally:
                busy.release()
                await trio.aclose_forcefully(stream)

        while True:
            stream = await listener.accept()
            try:
                busy.acquire_nowait()
            except trio.WouldBlock:
                await trio.aclose_forcefully(stream)
                continue
            nursery.start_soon(one, stream)
    return found[0]


async def _answer(stream: trio.abc.Stream) -> str | None:
    """Read one request head and answer it; the target when it is the callback."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
    try:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(4096)
                if not data:
                    return None
                conn.receive_data(bytes(data))
                continue
            break
    except h11.RemoteProtocolError as exc:
        status = exc.error_status_hint
        await _send(stream, conn, status, b"bad request\n", "text/plain")
        return None
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        return None
    if not isinstance(event, h11.Request):
        return None
    target = event.target.decode("ascii", "replace")
    path, _, query = target.partition("?")
    if event.method == b"GET" and path == CALLBACK_PATH and query:
        await _send(stream, conn, 200, _PAGE, "text/html; charset=utf-8")
        return target
    await _send(stream, conn, 404, _NOT_FOUND, "text/plain")
    return None


async def _send(
    stream: trio.abc.Stream, conn: h11.Connection, status: int, body: bytes, kind: str
) -> None:
    headers = [
        ("Content-Type", kind),
        ("Content-Length", str(len(body))),
        ("Connection", "close"),
        ("Cache-Control", "no-store"),
    ]
    try:
        data = conn.send(h11.Response(status_code=status, headers=headers))
        data += conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage())
        await stream.send_all(data)
    except (h11.LocalProtocolError, trio.BrokenResourceError, trio.ClosedResourceError):
        pass


def _open_browser(url: str) -> bool:
    """Open ``url`` in the user's browser; False when none could be opened."""
    try:
        return webbrowser.open(url)
    except webbrowser.Error:
        return False


@asynccontextmanager
async def loopback_sign_in(options: SignInOptions) -> AsyncIterator[tuple[str, Authorize]]:
    """Bind the loopback listener and yield ``(redirect_uri, authorize)``, the
    ``redirect_uri`` and ``authorize`` of :class:`~mcp_ref.client.OAuthClientOptions`.

    ``authorize(url)`` opens (or prints) ``url`` and waits up to ``options.wait``
    seconds for the callback (:func:`wait_for_callback`).

    Raises:
        CliError: the port cannot be bound (on entering); from ``authorize``, no
            callback within ``options.wait`` seconds.
    """
    try:
        listeners = await trio.open_tcp_listeners(options.redirect_port, host="127.0.0.1")
    except OSError as exc:
        raise CliError(
            f"cannot listen for the sign-in callback on 127.0.0.1:{options.redirect_port}: "
            f"{exc.strerror or exc}"
        ) from None
    listener = listeners[0]
    port = int(listener.socket.getsockname()[1])
    redirect_uri = f"http://127.0.0.1:{port}{CALLBACK_PATH}"

    async def authorize(url: str) -> str:
        opened = options.open_browser and await trio.to_thread.run_sync(_open_browser, url)
        if not opened:
            print(f"mcp-ref: open this URL to sign in: {url}", file=sys.stderr, flush=True)
        with trio.move_on_after(options.wait):
            return await wait_for_callback(listener, port)
        raise CliError(f"no sign-in callback within {options.wait:g} s")

    try:
        yield redirect_uri, authorize
    finally:
        for each in listeners:
            await each.aclose()


def client_secret() -> str | None:
    """The pre-registered client's secret, from :data:`SECRET_VARIABLE` (None: unset
    or empty)."""
    return os.environ.get(SECRET_VARIABLE) or None

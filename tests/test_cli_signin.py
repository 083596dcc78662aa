"""``mcp-ref inspect --url URL`` signs in when the server asks: a real sign-in end to
end (our protected server, the Authlib authorization server of
``tests/interop/authlib_as.py``, the command in a child process with ``--no-browser``,
the test playing the browser), and the loopback listener of ``mcp_ref/cli/_signin.py``
on its own (404 to other paths, its bounds)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import pytest
import trio
import trio.testing

from mcp_ref.cli import _signin
from mcp_ref.cli._signin import SignInOptions, loopback_sign_in, wait_for_callback
from mcp_ref.cli.errors import CliError

from ._http_raw import RawConnection
from .test_cli import assert_one_line_error

TIMEOUT = 30
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # Authlib's own


async def _get(port: int, target: str) -> tuple[int, dict[str, str], bytes]:
    conn = await RawConnection.open(port)
    ans = await conn.request("GET", target, accept="")
    body = await ans.body()
    await conn.aclose()
    return ans.status, dict(ans.headers), body


# ------------------------------------------------------------ the listener on its own


async def _listener() -> tuple[trio.SocketListener, int]:
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    return listener, int(listener.socket.getsockname()[1])


@asynccontextmanager
async def _waiting() -> AsyncIterator[tuple[int, list[str]]]:
    """A listener with :func:`wait_for_callback` running on it: yields its port and the
    list that gets the URL it returns."""
    listener, port = await _listener()
    got: list[str] = []

    async def wait() -> None:
        got.append(await wait_for_callback(listener, port))

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait)
            yield port, got
    await listener.aclose()


async def test_the_listener_answers_404_elsewhere_and_returns_the_callback() -> None:
    async with _waiting() as (port, got):
        status, _, _ = await _get(port, "/favicon.ico")
        assert status == 404
        status, _, _ = await _get(port, "/callback")  # no query: not the callback
        assert status == 404
        assert not got
        status, headers, body = await _get(port, "/callback?code=c&state=s")
        assert status == 200 and b"signed in" in body
        assert headers["content-type"].startswith("text/html")
    assert got == [f"http://127.0.0.1:{port}/callback?code=c&state=s"]


async def test_the_listener_answers_431_to_a_huge_head_and_keeps_waiting() -> None:
    async with _waiting() as (port, got):
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        await stream.send_all(b"GET /" + b"x" * (_signin.MAX_HEAD_BYTES + 10))
        answer = b""
        while chunk := await stream.receive_some():
            answer += chunk
        await stream.aclose()
        assert answer.startswith(b"HTTP/1.1 431")
        await _get(port, "/callback?code=c&state=s")
    assert len(got) == 1


async def test_the_listener_closes_connections_past_its_bound() -> None:
    listener, port = await _listener()
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(partial(wait_for_callback, listener, port, max_connections=1))
            idle = await trio.open_tcp_stream("127.0.0.1", port)  # holds the only slot
            await idle.send_all(b"GET /call")
            extra = await trio.open_tcp_stream("127.0.0.1", port)
            await extra.send_all(b"GET /callback?code=c HTTP/1.1\r\nHost: x\r\n\r\n")
            assert await extra.receive_some() == b""  # closed unanswered
            await extra.aclose()
            await idle.aclose()
            nursery.cancel_scope.cancel()
    await listener.aclose()


async def test_the_sign_in_gives_up_after_its_bound(autojump_clock: Any) -> None:
    options = SignInOptions(open_browser=False, wait=7)
    with trio.fail_after(TIMEOUT):
        async with loopback_sign_in(options) as (redirect_uri, authorize):
            assert re.fullmatch(r"http://127\.0\.0\.1:\d+/callback", redirect_uri)
            start = trio.current_time()
            with pytest.raises(CliError, match="no sign-in callback within 7 s"):
                await authorize("http://127.0.0.1:9/authorize?x=1")
            assert trio.current_time() - start == pytest.approx(7)


async def test_the_url_is_printed_without_a_browser(capsys: pytest.CaptureFixture[str]) -> None:
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            async with loopback_sign_in(SignInOptions(open_browser=False)) as (uri, authorize):
                port = urlsplit(uri).port
                assert port is not None

                async def browser() -> None:
                    await trio.testing.wait_all_tasks_blocked()
                    await _get(port, "/callback?code=a&state=b")

                nursery.start_soon(browser)
                assert (
                    await authorize("https://as.example/authorize?s=1") == uri + "?code=a&state=b"
                )
    err = capsys.readouterr().err
    assert err == "mcp-ref: open this URL to sign in: https://as.example/authorize?s=1\n"


async def test_a_browser_that_cannot_open_falls_back_to_printing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    opened: list[str] = []

    def no_browser(url: str) -> bool:
        opened.append(url)
        return False

    monkeypatch.setattr(_signin.webbrowser, "open", no_browser)
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            async with loopback_sign_in(SignInOptions()) as (uri, authorize):
                port = urlsplit(uri).port
                assert port is not None

                async def browser() -> None:
                    await trio.testing.wait_all_tasks_blocked()
                    await _get(port, "/callback?code=a&state=b")

                nursery.start_soon(browser)
                await authorize("https://as.example/a")
    assert opened == ["https://as.example/a"]
    assert "open this URL to sign in: https://as.example/a" in capsys.readouterr().err


async def test_a_port_in_use_is_a_one_line_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(CliError, match=f"sign-in callback on 127.0.0.1:{port}"):
            async with loopback_sign_in(SignInOptions(redirect_port=port)):
                pass


def test_a_bad_redirect_port_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    from mcp_ref.cli import main

    with pytest.raises(SystemExit):
        main(["inspect", "--url", "http://127.0.0.1:9/mcp", "--redirect-port", "70000"])
    assert "expected a port from 0 to 65535" in capsys.readouterr().err


# ------------------------------------------------------------------ end to end


_URL = re.compile(rb"mcp-ref: open this URL to sign in: (\S+)\n")


async def _inspect_signing_in(
    browser: Any, extra: tuple[str, ...] = ()
) -> tuple[int, str, str, list[Any]]:
    """Run ``mcp-ref inspect --url URL --no-browser`` against a protected server, with
    ``browser(url, stderr_so_far)`` playing the user; return the exit status, stdout,
    stderr and who called the server."""
    pytest.importorskip("authlib")
    pytest.importorskip("joserfc")
    from mcp_ref.trio import open_http_server

    from .interop.authlib_as import AuthServer, serve
    from .interop.test_python_sdk_oauth import free_port, make_server, protected

    seen: list[Any] = []
    pythonpath = os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": pythonpath}
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            issuer_server: AuthServer = await nursery.start(serve, AuthServer)
            issuer = issuer_server.issuer
            port = free_port()
            auth = protected(issuer, port, scopes=("mcp",), per_operation={})
            async with open_http_server(make_server(seen), port=port, auth=auth) as info:
                argv = [sys.executable, "-m", "mcp_ref", "inspect", "--url", info.url]
                argv += ["--no-browser", *extra]
                run = partial(
                    trio.run_process,
                    argv,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    check=False,
                    env=env,
                )
                proc: trio.Process = await nursery.start(run)
                assert proc.stderr is not None and proc.stdout is not None
                err = b""
                while not (match := _URL.search(err)):
                    chunk = await proc.stderr.receive_some()
                    assert chunk, f"the command exited: {err!r}"
                    err += chunk
                await browser(match.group(1).decode())
                out = b""
                async with trio.open_nursery() as readers:

                    async def read_err() -> None:
                        nonlocal err
                        assert proc.stderr is not None
                        while chunk := await proc.stderr.receive_some():
                            err += chunk

                    readers.start_soon(read_err)
                    assert proc.stdout is not None
                    while chunk := await proc.stdout.receive_some():
                        out += chunk
                status = await proc.wait()
            nursery.cancel_scope.cancel()
    return status, out.decode(), err.decode(), seen


async def _approve(url: str) -> str:
    """The authorization server approves at once: its 302's ``Location``."""
    parts = urlsplit(url)
    assert parts.port is not None
    status, headers, _ = await _get(parts.port, f"{parts.path}?{parts.query}")
    assert status == 302, status
    return headers["location"]


async def test_inspect_signs_in_through_the_browser_step_and_lists_the_tools() -> None:
    async def browser(url: str) -> None:
        location = await _approve(url)
        back = urlsplit(location)
        assert back.hostname == "127.0.0.1" and back.path == "/callback"
        assert back.port is not None
        status, _, body = await _get(back.port, f"{back.path}?{back.query}")
        assert status == 200 and b"signed in" in body

    status, out, err, _ = await _inspect_signing_in(browser)
    assert status == 0, err
    assert "whoami()" in out and "wipe()" in out
    assert "code=" not in err.replace("code_challenge", "")  # the code is never shown


async def test_a_redirect_with_the_wrong_state_is_a_one_line_error() -> None:
    async def browser(url: str) -> None:
        location = await _approve(url)
        back = urlsplit(location)
        assert back.port is not None
        query = re.sub(r"state=[^&]*", "state=forged", back.query)
        await _get(back.port, f"{back.path}?{query}")

    status, out, err, seen = await _inspect_signing_in(browser)
    assert status == 1 and not out and not seen
    assert_one_line_error(err, "sign-in failed")


async def test_a_redirect_without_a_code_is_a_one_line_error() -> None:
    async def browser(url: str) -> None:
        state = re.search(r"state=([^&]*)", url)
        assert state
        port = urlsplit(await _approve(url)).port
        assert port is not None
        await _get(port, f"/callback?error=access_denied&state={state.group(1)}")

    status, out, err, seen = await _inspect_signing_in(browser)
    assert status == 1 and not out and not seen
    assert_one_line_error(err, "sign-in failed")


async def test_no_callback_within_the_timeout_is_a_one_line_error() -> None:
    async def browser(url: str) -> None:
        pass  # the user never comes back

    status, out, err, seen = await _inspect_signing_in(browser, ("--timeout", "1"))
    assert status == 1 and not out and not seen
    assert_one_line_error(err, "no sign-in callback within 1 s")


async def test_a_sign_in_extends_initializes_wait_and_the_write_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sign-in runs while ``initialize`` is being sent: its wait and the session's
    bound on one write make room for the person and the flow's requests."""
    import mcp_ref.client
    from mcp_ref._inflight import RequestTimeout
    from mcp_ref.cli.client import SEND_TIMEOUT, connect

    seen: dict[str, Any] = {}

    def fake(url: str, **options: Any) -> Any:
        seen.update(options)
        raise CliError("stop here")

    monkeypatch.setattr(mcp_ref.client, "open_http_client", fake)
    monkeypatch.setenv(_signin.SECRET_VARIABLE, "s3cret")
    sign_in = SignInOptions(wait=100, client_id="pre")
    with pytest.raises(CliError, match="stop here"):
        async with connect(None, "http://127.0.0.1:9/mcp", 2.0, sign_in=sign_in):
            pass
    extra = 100 + _signin.SIGN_IN_EXCHANGES
    assert seen["initialize_timeout"] == RequestTimeout(seconds=2.0 + extra)
    assert seen["timeout"] == RequestTimeout(seconds=2.0)  # the other requests keep theirs
    assert seen["send_timeout"] == extra + SEND_TIMEOUT
    auth = seen["auth"]
    assert auth.client_id == "pre" and auth.client_secret == "s3cret"
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/callback", auth.redirect_uri)

"""HTTPS: ``serve_http(ssl_context=...)`` and ``mcp-ref serve --http --tls-cert --tls-key``,
on loopback with certificates made in-test by trustme (a CA of its own, a leaf for
127.0.0.1), and the clients' side: they verify certificates by default, so a server
whose CA they were not told of is refused.
"""

from __future__ import annotations

import asyncio
import queue
import re
import ssl
import subprocess
import sys
import threading
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from mcp_ref.client import open_http_client
from mcp_ref.server import Server
from mcp_ref.trio.http.server import open_http_server

trustme = pytest.importorskip("trustme")

TIMEOUT = 20
spec = pytest.mark.spec


def make_server() -> Server:
    server = Server("tls-test", "1.0")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    return server


@pytest.fixture(scope="module")
def ca() -> Any:
    return trustme.CA()


@pytest.fixture(scope="module")
def server_context(ca: Any) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
    return context


def trusting(ca: Any) -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return context


async def test_the_server_speaks_https_to_a_client_that_trusts_its_ca(
    ca: Any, server_context: ssl.SSLContext
) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_http_server(make_server(), ssl_context=server_context) as info:
            assert info.url.startswith("https://127.0.0.1:") and info.url.endswith("/mcp")
            assert info.legacy_sse_url is not None and info.legacy_sse_url.startswith("https://")
            async with open_http_client(info.url, ssl_context=trusting(ca)) as client:
                result = await client.call_tool("echo", {"text": "over TLS"})
                assert result.content[0].text == "over TLS"  # type: ignore[union-attr]


@spec(
    "2025-11-25/basic/authorization#communication-security.1",
    "2025-06-18/basic/authorization#communication-security.1",
    "2026-07-28/basic/authorization/security-considerations#communication-security.1",
)
async def test_the_trio_client_refuses_a_certificate_it_cannot_verify(
    server_context: ssl.SSLContext,
) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_http_server(make_server(), ssl_context=server_context) as info:
            with pytest.raises(BaseException) as caught:
                async with open_http_client(info.url, initialize_timeout=5) as client:
                    await client.call_tool("echo", {"text": "x"})
            # The client says "cannot reach" and drops the cause (its message is the
            # client's); the same call with a context trusting the CA passes (above),
            # so the certificate is what failed here.
            assert "cannot reach" in str(caught.value), caught.value


async def test_plain_http_to_a_tls_server_gets_no_answer(server_context: ssl.SSLContext) -> None:
    with trio.fail_after(TIMEOUT):
        async with open_http_server(make_server(), ssl_context=server_context) as info:
            stream = await trio.open_tcp_stream("127.0.0.1", info.port)
            await stream.send_all(b"GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
            got = b""
            while chunk := await stream.receive_some():
                got += chunk
            assert b"HTTP/1.1" not in got  # a TLS alert at most, never an HTTP answer
            await stream.aclose()


def _serve_in_a_thread(context: ssl.SSLContext) -> tuple[str, Any, threading.Thread]:
    """The trio server in a thread of its own (the asyncio client runs in this one)."""
    ready: queue.Queue[Any] = queue.Queue()

    async def main() -> None:
        async with open_http_server(make_server(), ssl_context=context) as info:
            ready.put((info, trio.lowlevel.current_trio_token()))
            await info.stop.wait()

    thread = threading.Thread(target=trio.run, args=(main,), daemon=True)
    thread.start()
    info, token = ready.get(timeout=TIMEOUT)
    return info.url, partial(token.run_sync_soon, info.shutdown), thread


def test_the_asyncio_client_verifies_too(
    ca: Any, server_context: ssl.SSLContext, tmp_path: Path, monkeypatch: Any
) -> None:
    from mcp_ref.asyncio import open_http_client as open_asyncio_client

    url, stop, thread = _serve_in_a_thread(server_context)

    async def call() -> str:
        async with open_asyncio_client(url) as client:
            result = await client.call_tool("echo", {"text": "asyncio"})
            return str(result.content[0].text)  # type: ignore[union-attr]

    try:
        with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED"):
            asyncio.run(asyncio.wait_for(call(), TIMEOUT))
        # trusted through the system's trust store (the asyncio client takes no context)
        pem = tmp_path / "ca.pem"
        ca.cert_pem.write_to_path(str(pem))
        monkeypatch.setenv("SSL_CERT_FILE", str(pem))
        assert asyncio.run(asyncio.wait_for(call(), TIMEOUT)) == "asyncio"
    finally:
        stop()
        thread.join(TIMEOUT)


async def test_mcp_ref_serve_with_a_certificate_and_key(ca: Any, tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    leaf = ca.issue_cert("127.0.0.1")
    leaf.cert_chain_pems[0].write_to_path(str(cert))
    leaf.private_key_pem.write_to_path(str(key))
    argv = [sys.executable, "-m", "mcp_ref", "serve", "--http", "127.0.0.1:0"]
    argv += ["--tls-cert", str(cert), "--tls-key", str(key)]
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            run = partial(trio.run_process, argv, stderr=subprocess.PIPE, check=False)
            proc = await nursery.start(run)
            buf = b""
            while b"\n" not in buf:
                chunk = await proc.stderr.receive_some()
                assert chunk, f"the server exited: {buf!r}"
                buf += chunk
            match = re.search(rb"(https://\S+)", buf)
            assert match, buf
            async with open_http_client(match.group(1).decode(), ssl_context=trusting(ca)) as c:
                result = await c.call_tool("echo", {"text": "cli"})
            assert result.content[0].text == "cli"  # type: ignore[union-attr]
            proc.terminate()

"""``mcp-ref serve --http ... --auth``: the flags (one-line errors for the bad ones), and
the reference server run as a protected resource in a child process, its JWKS served
in-test, checked with the raw h11 client."""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
from functools import partial
from typing import Any

import pytest
import trio

from mcp_ref.cli import main

from ._http_raw import RawConnection, init_body, notification_body, request_body
from .test_cli import assert_one_line_error

pytest.importorskip("joserfc")
from .test_http_auth import ISSUER, KEY, RESOURCE, challenge_params, mint, serve_json

AUTH = ["--auth", "--audience", RESOURCE, "--issuer", ISSUER]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--auth"], "need --http"),
        (["--http", "127.0.0.1:0", "--tls-cert", "c.pem"], "go together"),
        (["--http", "127.0.0.1:0", "--tls-cert", "no.pem", "--tls-key", "no.pem"], "--tls-cert"),
        (["--http", "127.0.0.1:0", "--auth"], "--audience URI and --issuer"),
        (["--http", "127.0.0.1:0", *AUTH], "one of --jwks-url or --introspection-url"),
        (["--http", "127.0.0.1:0", "--jwks-url", "https://a.example/j"], "need --auth"),
        (
            ["--http", "127.0.0.1:0", *AUTH, "--introspection-url", "https://a.example/i"],
            "--client-id and a client secret",
        ),
        (["--http", "127.0.0.1:0", *AUTH, "--jwks-url", "http://a.example/j"], "--auth:"),
        (
            [
                "--http",
                "127.0.0.1:0",
                *AUTH,
                "--jwks-url",
                "https://a.example/j",
                "--token-cache",
                "5",
            ],
            "--token-cache goes with --introspection-url",
        ),
        (
            ["--http", "127.0.0.1:0", *AUTH, "--jwks-url", "https://a.example/j", "--scope", "x="],
            "OP=SCOPE",
        ),
    ],
)
def test_bad_auth_and_tls_flags_are_one_line_errors(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", *extra]) == 1
    assert_one_line_error(capsys.readouterr().err, message)


async def test_mcp_ref_serve_auth_protects_the_reference_server() -> None:
    hits: list[Any] = []
    public = {"keys": [KEY.as_dict(private=False)]}
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            jwks_port = await nursery.start(serve_json, public, hits)
            argv = [sys.executable, "-m", "mcp_ref", "serve", "--http", "127.0.0.1:0", *AUTH]
            argv += ["--jwks-url", f"http://127.0.0.1:{jwks_port}/jwks.json"]
            argv += ["--scope", "mcp", "--scope", "tools/call:echo=admin"]
            run = partial(trio.run_process, argv, stderr=subprocess.PIPE, check=False)
            proc = await nursery.start(run)
            buf = b""
            while b"\n" not in buf:
                chunk = await proc.stderr.receive_some()
                assert chunk, f"the server exited: {buf!r}"
                buf += chunk
            match = re.search(rb"http://127\.0\.0\.1:(\d+)/mcp", buf)
            assert match, buf
            conn = await RawConnection.open(int(match.group(1)))
            ans = await conn.request("GET", "/.well-known/oauth-protected-resource/mcp")
            doc = await ans.json()
            assert doc["resource"] == RESOURCE and doc["authorization_servers"] == [ISSUER]
            assert set(doc["scopes_supported"]) == {"mcp", "admin"}
            ans = await conn.request("POST", body=init_body())
            assert ans.status == 401
            await ans.body()
            token = {"authorization": f"Bearer {mint()}"}  # scope "mcp"
            ans = await conn.request("POST", body=init_body(), headers=token)
            assert ans.status == 200
            await ans.body()
            kw: dict[str, Any] = {"session_id": ans.session_id, "version": "2025-11-25"}
            body = notification_body("notifications/initialized")
            ans = await conn.request("POST", body=body, headers=token, **kw)
            assert ans.status == 202
            await ans.body()
            call = request_body(2, "tools/call", {"name": "echo", "arguments": {"text": "x"}})
            ans = await conn.request("POST", body=call, headers=token, **kw)
            assert ans.status == 403
            assert (
                challenge_params(ans.headers["www-authenticate"])["error"] == "insufficient_scope"
            )
            await ans.body()
            admin = {"authorization": f"Bearer {mint(scope='mcp admin')}"}
            ans = await conn.request("POST", body=call, headers=admin, **kw)
            assert ans.status == 200
            await ans.body()
            await conn.aclose()
            proc.terminate()
            nursery.cancel_scope.cancel()
    # the keys only (fetched at start-up; a first request racing it may fetch them too)
    assert hits and set(hits) == {"/jwks.json"}


async def test_auth_without_tls_off_loopback_warns_that_tokens_travel_in_clear() -> None:
    argv = [sys.executable, "-m", "mcp_ref", "serve", "--http", "0.0.0.0:0", *AUTH]
    argv += ["--jwks-url", "https://auth.example.com/jwks.json"]
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            run = partial(trio.run_process, argv, stderr=subprocess.PIPE, check=False)
            proc = await nursery.start(run)
            buf = b""
            while b"serving" not in buf:
                chunk = await proc.stderr.receive_some()
                assert chunk, f"the server exited: {buf!r}"
                buf += chunk
            proc.terminate()
    assert b"warning: --auth without --tls-cert" in buf


async def test_mcp_ref_serve_over_https_with_introspection(tmp_path: Any) -> None:
    """--tls-cert/--tls-key and --auth --introspection-url together, the secret from the
    environment: our client, trusting the test CA and carrying an opaque token, calls
    the reference server; the server introspected the token as itself."""
    trustme = pytest.importorskip("trustme")
    import ssl

    from mcp_ref.client import open_http_client

    ca = trustme.CA()
    leaf = ca.issue_cert("127.0.0.1")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    leaf.cert_chain_pems[0].write_to_path(str(cert))
    leaf.private_key_pem.write_to_path(str(key))
    trusting = ssl.create_default_context()
    ca.configure_trust(trusting)
    hits: list[Any] = []
    active = {"active": True, "aud": RESOURCE, "sub": "erin", "scope": "mcp", "iss": ISSUER}
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            as_port = await nursery.start(serve_json, active, hits)
            argv = [sys.executable, "-m", "mcp_ref", "serve", "--http", "127.0.0.1:0", *AUTH]
            argv += ["--tls-cert", str(cert), "--tls-key", str(key)]
            argv += ["--introspection-url", f"http://127.0.0.1:{as_port}/introspect"]
            argv += ["--client-id", "mcp-server", "--scope", "mcp", "--token-cache", "60"]
            env = {**os.environ, "MCP_REF_CLIENT_SECRET": "from-env"}
            run = partial(trio.run_process, argv, stderr=subprocess.PIPE, check=False, env=env)
            proc = await nursery.start(run)
            buf = b""
            while b"\n" not in buf:
                chunk = await proc.stderr.receive_some()
                assert chunk, f"the server exited: {buf!r}"
                buf += chunk
            match = re.search(rb"(https://127\.0\.0\.1:\d+/mcp)", buf)
            assert match, buf
            headers = [("authorization", "Bearer opaque-1")]
            async with open_http_client(
                match.group(1).decode(), ssl_context=trusting, headers=headers
            ) as client:
                result = await client.call_tool("echo", {"text": "secure"})
            assert result.content[0].text == "secure"  # type: ignore[union-attr]
            proc.terminate()
            nursery.cancel_scope.cancel()
    # every request carried the token; the cache asked about it once
    assert len(hits) == 1
    target, head, body = hits[0]
    assert target == "/introspect" and b"token=opaque-1" in body
    assert head["authorization"] == "Basic " + base64.b64encode(b"mcp-server:from-env").decode()

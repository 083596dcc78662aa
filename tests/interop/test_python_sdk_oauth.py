"""The official Python SDK's client signs in to an mcp-ref server that is an OAuth 2.1
protected resource (``serve_http(auth=...)``, JWT access tokens checked against the
authorization server's JWKS), behind a real authorization server: Authlib's grants and
endpoints (``tests/interop/authlib_as.py``), on loopback.

The SDK client (``sdk_scripts/sdk_oauth_client.py``, in the SDK's own virtualenv) meets
the 401, reads our protected resource metadata, the authorization server's metadata,
registers (RFC 7591), authorizes with PKCE and the RFC 8707 ``resource``, exchanges the
code, and calls a tool; a second tool needs a scope it was not granted, so our 403
``insufficient_scope`` sends it through the step-up, and the call then passes.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import trio

from . import peers

pytestmark = [
    pytest.mark.interop,
    pytest.mark.skipif(sys.platform == "win32", reason="interop tests need POSIX"),
    # Authlib's notes about its own coming API changes
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]
spec = pytest.mark.spec
pytest.importorskip("authlib")
pytest.importorskip("joserfc")

from mcp_ref._http_auth import ResourceAuth  # noqa: E402
from mcp_ref._oauth_resource import ResourceConfig, ScopePolicy  # noqa: E402
from mcp_ref._oauth_verify_jwt import JwtVerifier  # noqa: E402
from mcp_ref.server import Context, Server  # noqa: E402
from mcp_ref.trio import open_http_server  # noqa: E402

from .authlib_as import AuthServer, serve  # noqa: E402

LIMIT = 60.0
SCRIPT = Path(__file__).resolve().parent / "sdk_scripts" / "sdk_oauth_client.py"


@pytest.fixture(autouse=True, scope="module")
def _need_python_sdk() -> None:
    if peers.python_sdk_python() is None:
        pytest.skip(peers.why_missing("python-sdk") or "the Python SDK venv is unavailable")


def free_port() -> int:
    """A loopback port free now (the resource URI must be known before the server
    starts: it is in the tokens' audience)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


ADMIN_WIPE = {"tools/call:wipe": frozenset({"admin"})}
"""The scope policy's step-up: ``wipe`` needs ``admin``."""


def protected(
    issuer: str,
    port: int,
    *,
    scopes: tuple[str, ...] = ("mcp", "admin"),
    per_operation: dict[str, frozenset[str]] = ADMIN_WIPE,
) -> ResourceAuth:
    """``serve_http(auth=...)`` for a server at ``http://127.0.0.1:PORT/mcp`` whose tokens
    ``issuer`` (the Authlib server of :mod:`.authlib_as`) signs: JWTs checked against its
    JWKS, ``mcp`` needed always, ``per_operation`` scopes besides."""
    resource = f"http://127.0.0.1:{port}/mcp"
    config = ResourceConfig(
        resource=resource,
        authorization_servers=(issuer,),
        scopes_supported=scopes,
        policy=ScopePolicy(always=frozenset({"mcp"}), per_operation=per_operation),
    )
    verifier = JwtVerifier(resource=resource, issuer=issuer, jwks_url=f"{issuer}/jwks.json")
    return ResourceAuth(config=config, verifier=verifier)


def make_server(seen: list[Any]) -> Server:
    server = Server("oauth-interop", "1.0")

    @server.tool()
    async def whoami(ctx: Context) -> str:
        who = ctx.auth
        seen.append(who)
        assert who is not None
        return f"{who.subject} {' '.join(sorted(who.scopes))}"

    @server.tool()
    async def wipe(ctx: Context) -> str:
        seen.append(ctx.auth)
        return "wiped"

    return server


@spec(
    "2025-11-25/basic/authorization#authorization-server-location.1",
    "2025-11-25/basic/authorization#token-handling.2",
    "2025-11-25/basic/authorization#runtime-insufficient-scope-errors.2",
)
async def test_the_sdk_client_signs_in_through_authlib_and_steps_up() -> None:
    python = peers.python_sdk_python()
    assert python is not None
    seen: list[Any] = []
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            issuer_server: AuthServer = await nursery.start(serve, AuthServer)
            issuer = issuer_server.issuer
            port = free_port()
            auth = protected(issuer, port)
            resource = auth.config.resource
            async with open_http_server(make_server(seen), port=port, auth=auth) as info:
                assert info.url == resource
                proc = await trio.run_process(
                    [str(python), str(SCRIPT), info.url],
                    capture_stdout=True,
                    capture_stderr=True,
                    check=False,
                )
            nursery.cancel_scope.cancel()
    stderr = proc.stderr.decode(errors="replace")[-3000:]
    assert proc.returncode == 0, f"sdk_oauth_client.py exited with {proc.returncode}:\n{stderr}"
    summary = json.loads(proc.stdout)
    assert summary["errors"] == {}, summary
    assert summary["whoami"] == "alice mcp"
    assert summary["wipe"] == "wiped"
    # two authorizations: the first for what our 401 named, the step-up for both scopes,
    # each for this server (RFC 8707 resource)
    first, second = (parse_qs(urlsplit(u).query) for u in summary["authorizations"])
    assert first["scope"] == ["mcp"] and set(second["scope"][0].split()) == {"mcp", "admin"}
    assert first["resource"] == second["resource"] == [resource]
    assert first["code_challenge_method"] == ["S256"]
    # the tokens Authlib issued name this server, and the handlers saw alice
    assert [who.subject for who in seen] == ["alice", "alice"]
    assert seen[1].scopes == {"mcp", "admin"} and seen[1].audience == (resource,)
    # the SDK registered once, and never showed the authorization server our token
    paths = [urlsplit(target).path for _, target, _, _ in issuer_server.requests]
    assert paths.count("/register") == 1 and paths.count("/token") == 2

"""``mcp-ref serve --http``'s TLS and OAuth options: the flags, and the
``serve_http`` arguments they make (``ssl_context=``, ``auth=``).

``--tls-cert F --tls-key F`` serve HTTPS.  ``--auth`` makes the server an OAuth 2.1
protected resource (:mod:`mcp_ref._http_auth`): ``--audience`` is its canonical URI
(what clients connect to, and what tokens must name), ``--issuer`` its authorization
server; tokens are JWTs checked against ``--jwks-url``, or are introspected at
``--introspection-url`` as ``--client-id`` (the secret from ``--client-secret`` or,
kept out of the process list, the ``MCP_REF_CLIENT_SECRET`` environment variable);
``--token-cache SECONDS`` reuses an introspection's answer
(:class:`~mcp_ref._oauth_verify.CachingVerifier`); ``--scope S`` (repeatable) requires
S of every request, ``--scope OP=S`` of the requests for one operation
(``tools/call``, ``tools/call:NAME``, ``prompts/get:NAME``).
"""

from __future__ import annotations

import argparse
import os
import ssl
from typing import Any

from .._oauth_http import OAuthLocalError

__all__ = ["TOKENS_IN_CLEAR", "add_arguments", "http_options"]

SECRET_VARIABLE = "MCP_REF_CLIENT_SECRET"
"""The environment variable read for the introspection secret."""

TOKENS_IN_CLEAR = (
    "mcp-ref: warning: --auth without --tls-cert on a non-loopback address: bearer tokens "
    "travel in clear unless a TLS proxy is in front"
)
"""What ``serve`` prints on stderr then (OAuth 2.1 section 1.5: TLS for every token)."""


def add_arguments(serve: argparse.ArgumentParser) -> None:
    """Add the TLS and OAuth flags to the ``serve`` parser."""
    tls = serve.add_argument_group("HTTPS (with --http)")
    tls.add_argument("--tls-cert", metavar="FILE", help="the certificate chain (PEM)")
    tls.add_argument("--tls-key", metavar="FILE", help="its private key (PEM)")
    auth = serve.add_argument_group("OAuth 2.1 protected resource (with --http)")
    auth.add_argument(
        "--auth", action="store_true", help="require an access token on every request"
    )
    auth.add_argument(
        "--audience", metavar="URI", help="this server's canonical URI (tokens must name it)"
    )
    auth.add_argument("--issuer", metavar="URL", help="the authorization server (its issuer)")
    auth.add_argument("--jwks-url", metavar="URL", help="verify JWT access tokens with these keys")
    auth.add_argument(
        "--introspection-url", metavar="URL", help="verify tokens by introspection (RFC 7662)"
    )
    auth.add_argument("--client-id", metavar="ID", help="with --introspection-url")
    auth.add_argument(
        "--client-secret",
        metavar="SECRET",
        help=f"with --introspection-url (or ${SECRET_VARIABLE})",
    )
    auth.add_argument(
        "--token-cache",
        type=float,
        metavar="SECONDS",
        help="with --introspection-url: reuse an answer this long (a revoked token is "
        "accepted as long)",
    )
    auth.add_argument(
        "--scope",
        action="append",
        default=[],
        metavar="[OP=]SCOPE",
        help="a scope every request needs, or OP's requests (tools/call:NAME=SCOPE); repeatable",
    )


def http_options(args: argparse.Namespace) -> dict[str, Any]:
    """The ``serve_http`` arguments the flags ask for (none: ``{}``).

    Raises:
        ValueError: a flag without its partners, or with a bad value (the message
            names it; the CLI prints it).
    """
    out: dict[str, Any] = {}
    if args.tls_cert or args.tls_key:
        if not (args.tls_cert and args.tls_key):
            raise ValueError("--tls-cert and --tls-key go together")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        try:
            context.load_cert_chain(args.tls_cert, args.tls_key)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(f"--tls-cert/--tls-key: {exc}") from None
        out["ssl_context"] = context
    if args.auth:
        out["auth"] = _resource_auth(args)
    elif args.jwks_url or args.introspection_url or args.audience or args.scope:
        raise ValueError("--audience, --jwks-url, --introspection-url and --scope need --auth")
    return out


def _resource_auth(args: argparse.Namespace) -> Any:
    from .._http_auth import ResourceAuth
    from .._oauth_resource import ResourceConfig, ScopePolicy
    from .._oauth_verify import CachingVerifier, IntrospectionVerifier

    if not (args.audience and args.issuer):
        raise ValueError("--auth needs --audience URI and --issuer URL")
    if bool(args.jwks_url) == bool(args.introspection_url):
        raise ValueError("--auth needs one of --jwks-url or --introspection-url")
    if args.token_cache is not None and not args.introspection_url:
        raise ValueError("--token-cache goes with --introspection-url")
    always: set[str] = set()
    per: dict[str, set[str]] = {}
    for item in args.scope:
        op, sep, scope = item.rpartition("=")
        if sep and not (op and scope):
            raise ValueError(f"--scope {item!r}: OP=SCOPE")
        (per.setdefault(op, set()) if sep else always).add(scope)
    policy = ScopePolicy(
        always=frozenset(always), per_operation={k: frozenset(v) for k, v in per.items()}
    )
    scopes = sorted(always.union(*per.values()))
    try:
        config = ResourceConfig(
            resource=args.audience,
            authorization_servers=(args.issuer,),
            scopes_supported=tuple(scopes),
            policy=policy,
        )
        verifier: Any
        if args.jwks_url:
            from .._oauth_verify_jwt import JwtVerifier

            verifier = JwtVerifier(
                resource=args.audience, issuer=args.issuer, jwks_url=args.jwks_url
            )
        else:
            secret = args.client_secret or os.environ.get(SECRET_VARIABLE)
            if not (args.client_id and secret):
                raise ValueError("--introspection-url needs --client-id and a client secret")
            verifier = IntrospectionVerifier(
                endpoint=args.introspection_url,
                resource=args.audience,
                client_id=args.client_id,
                client_secret=secret,
                issuer=args.issuer,
            )
            if args.token_cache is not None:
                verifier = CachingVerifier(verifier, ttl=args.token_cache)
    except OAuthLocalError as exc:
        raise ValueError(f"--auth: {exc}") from None
    return ResourceAuth(config=config, verifier=verifier)

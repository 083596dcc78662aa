"""An MCP server that requires sign-in: the public names of the resource server.

Give :func:`mcp_ref.trio.serve_http` or :func:`mcp_ref.asgi.asgi_app` an
``auth=ResourceAuth(config=ResourceConfig(...), verifier=...)`` and the server serves
its protected resource metadata, checks the bearer token of every request (401, 403
``insufficient_scope``, 400, 503), and its handlers see who is calling
(``ctx.auth``, an :class:`Identity`).  ``docs/resource-server.md`` walks through it;
the theory is in :mod:`mcp_ref._http_auth` and :mod:`mcp_ref._oauth_resource_guard`.

Verifiers: :class:`JwtVerifier` (JWT access tokens against the authorization server's
JWKS; needs the extra ``mcp-ref[auth]``, imported only when one is built),
:class:`IntrospectionVerifier` (RFC 7662; wrap it in a :class:`CachingVerifier` not
to ask on every request), or any object with a ``verify(token, *,
now)`` method (:class:`TokenVerifier`).
"""

from ._http_auth import HttpHeaders, ResourceAuth
from ._oauth_resource import ResourceConfig, ScopePolicy
from ._oauth_verify import (
    CachingVerifier,
    Identity,
    IntrospectionVerifier,
    TokenRejected,
    TokenVerifier,
)
from ._oauth_verify_jwt import JwtVerifier

__all__ = [
    "CachingVerifier",
    "HttpHeaders",
    "Identity",
    "IntrospectionVerifier",
    "JwtVerifier",
    "ResourceAuth",
    "ResourceConfig",
    "ScopePolicy",
    "TokenRejected",
    "TokenVerifier",
]

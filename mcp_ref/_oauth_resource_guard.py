"""OAuth resource server, part 4: the bearer check made on every HTTP request.

Theory of operation
-------------------
:func:`check_request` is what an HTTP server driver calls for every request to the MCP
endpoint, after :func:`~mcp_ref._oauth_resource.serve_metadata` and before the request
reaches the MCP session.  It reads the request's ``Authorization`` header fields, its
query string and the JSON-RPC operations it carries (:func:`operation_names`), and
answers::

    Allowed(identity)                  hand identity to the session / handler Context
    HttpAnswer(401 | 403 | 400 | 503)  send it; the request goes no further
    NeedFetch                          the verifier needs HTTP first (see below)

The order of the checks, each with the answer it gives:

1. an ``access_token`` in the query string: 400 ``invalid_request`` (the spec forbids
   tokens in the URI, so none is ever read from there);
2. no ``Authorization`` field, or one with another scheme than ``Bearer``: 401 with a
   challenge but no error code (RFC 6750 section 3.1);
3. several ``Authorization`` fields, or a ``Bearer`` credential that is not one
   ``b64token`` (RFC 6750 section 2.1): 400 ``invalid_request``;
4. a token over ``max_token_bytes``: 401 ``invalid_token``;
5. the verifier's verdict: a rejected token is 401 ``invalid_token``; an unreachable
   authorization server 503;
6. the :class:`~mcp_ref._oauth_verify.Identity`, whichever verifier made it, must name
   this server in its audience and must not have expired: else 401 ``invalid_token``;
7. the scopes the operations need (:class:`~mcp_ref._oauth_resource.ScopePolicy`),
   hierarchy applied: missing ones give 403 ``insufficient_scope`` whose ``scope`` is
   what the request needs plus the supported scopes the token already has, so the
   client's step-up keeps what it was granted.

Nothing is remembered between requests: every request carries its token and is checked
again (no session-based authentication).  When the verifier answers
:class:`~mcp_ref._oauth_verify.NeedFetch`, so does :func:`check_request`, whose
``resume`` gives the final answer; a driver runs::

    outcome = check_request(config, verifier, authorization=values, query=query,
                            operations=operation_names(messages), now=clock())
    while isinstance(outcome, NeedFetch):
        outcome = outcome.resume(await fetch_or_none(outcome.request), now=clock())
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal
from urllib.parse import parse_qsl

from ._oauth_resource import HttpAnswer, ResourceConfig, challenge
from ._oauth_verify import Identity, NeedFetch, TokenRejected, TokenVerifier

__all__ = [
    "Allowed",
    "BadAuthorization",
    "Outcome",
    "bearer_token",
    "check_request",
    "check_scopes",
    "operation_names",
]

_B64TOKEN: Final = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_NAMED: Final = ("tools/call", "prompts/get")


@dataclass(frozen=True, slots=True, kw_only=True)
class Allowed:
    """The request may proceed, on behalf of :attr:`identity`."""

    identity: Identity
    """Who is calling (for the handlers' Context; never forward its token upstream)."""


Outcome = Allowed | HttpAnswer | NeedFetch[Allowed | HttpAnswer]
"""What :func:`check_request` answers."""


class BadAuthorization(Exception):
    """An ``Authorization`` field the guard refuses outright."""

    def __init__(self, kind: Literal["invalid_request", "invalid_token"], reason: str) -> None:
        super().__init__(reason)
        self.kind: Final = kind
        """The OAuth error code of the answer (400 or 401)."""
        self.reason: Final = reason
        """The ``error_description``."""


def bearer_token(authorization: Sequence[str | bytes], max_bytes: int) -> str | None:
    """The bearer token of a request's ``Authorization`` field values, or None when
    there is none (no field, or another scheme).

    Bytes values are decoded as latin-1 (as HTTP/1.1 drivers receive them).

    Raises:
        BadAuthorization: ``invalid_request`` for several fields or a ``Bearer``
            credential that is not exactly one b64token; ``invalid_token`` for a token
            longer than ``max_bytes``.
    """
    if not authorization:
        return None
    if len(authorization) > 1:
        raise BadAuthorization("invalid_request", "more than one Authorization header")
    value = authorization[0]
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    scheme, _, rest = text.strip(" \t").partition(" ")
    if scheme.lower() != "bearer":
        return None
    token = rest.lstrip(" ")
    if len(token) > max_bytes:
        raise BadAuthorization("invalid_token", "the token is too long")
    if not _B64TOKEN.fullmatch(token):
        raise BadAuthorization("invalid_request", "the Bearer credential is not one token")
    return token


def operation_names(messages: Iterable[Any]) -> tuple[str, ...]:
    """The operations a POST carries, as :class:`~mcp_ref._oauth_resource.ScopePolicy`
    keys: for each JSON-RPC request or notification, its method, and
    ``"<method>:<name>"`` for ``tools/call`` and ``prompts/get`` with a string name.

    A message is a decoded JSON object (``method``, ``params.name``) or any object with
    a ``method`` attribute (and optionally ``name``), such as the HTTP core's message
    summaries.  Responses and anything malformed add nothing.  Never raises."""
    names: list[str] = []
    for message in messages:
        if isinstance(message, dict):
            method, params = message.get("method"), message.get("params")
            name = params.get("name") if isinstance(params, dict) else None
        else:
            method, name = getattr(message, "method", None), getattr(message, "name", None)
        if not isinstance(method, str):
            continue
        names.append(method)
        if method in _NAMED and isinstance(name, str):
            names.append(f"{method}:{name}")
    return tuple(names)


def _token_in_query(query: str) -> bool:
    try:
        return any(k == "access_token" for k, _ in parse_qsl(query, keep_blank_values=True))
    except ValueError:
        return "access_token" in query


def check_request(
    config: ResourceConfig,
    verifier: TokenVerifier,
    *,
    authorization: Sequence[str | bytes],
    query: str = "",
    operations: Iterable[str] = (),
    now: float,
) -> Outcome:
    """Whether one request to the MCP endpoint may proceed (see the module header).

    Args:
        config: the server's description and scope policy.
        verifier: decides whose the token is.
        authorization: every ``Authorization`` header field value of the request, in
            order (str, or bytes decoded as latin-1).
        query: the request-target's query string (without ``?``).
        operations: the request's operations (:func:`operation_names`); empty for a
            GET or DELETE.
        now: the time, in seconds since the epoch.

    Returns:
        :class:`Allowed`, the refusal as an :class:`HttpAnswer`, or a
        :class:`NeedFetch` whose ``resume`` gives one of those.  Never raises for any
        header, query or verifier verdict.
    """
    if isinstance(authorization, str | bytes):  # one value passed bare
        authorization = [authorization]
    needed = config.policy.required(operations)
    # Spec: 2025-03-26/basic/authorization#token-requirements.4
    # "Access tokens MUST NOT be included in the URI query string"
    # Spec: 2026-07-28/basic/authorization/index#token-requirements.4
    # "Access tokens MUST NOT be included in the URI query string"
    # Spec: 2025-06-18/basic/authorization#token-requirements.4
    # "Access tokens MUST NOT be included in the URI query string"
    # Spec: 2025-11-25/basic/authorization#token-requirements.4
    # "Access tokens MUST NOT be included in the URI query string"
    if _token_in_query(query):
        return challenge(
            config,
            "invalid_request",
            scopes=needed,
            description="access tokens are accepted in the Authorization header only",
        )
    try:
        # Spec: 2025-03-26/basic/authorization#token-requirements.1
        # "Access token handling MUST conform to OAuth 2.1 Section 5 requirements for resource
        # requests."
        # Spec: 2025-11-25/basic/authorization#token-requirements.1
        # "Access token handling when making requests to MCP servers MUST conform to the
        # requirements defined in OAuth 2.1 Section 5 'Resource Requests'."
        # Spec: 2026-07-28/basic/authorization/index#token-requirements.1
        # "Access token handling when making requests to MCP servers MUST conform to the
        # requirements defined in OAuth 2.1 Section 5 'Resource Requests'."
        # Spec: 2025-06-18/basic/authorization#token-requirements.1
        # "Access token handling when making requests to MCP servers MUST conform to the
        # requirements defined in OAuth 2.1 Section 5 'Resource Requests'."
        token = bearer_token(authorization, config.max_token_bytes)
    except BadAuthorization as exc:
        return challenge(config, exc.kind, scopes=needed, description=exc.reason)
    if token is None:
        # Spec: 2025-03-26/basic/authorization#example-authorization-code-grant.1
        # "When authorization is required and not yet proven by the client, servers MUST respond
        # with HTTP 401 Unauthorized."
        # Spec: 2025-06-18/basic/authorization#authorization-server-location.3
        # "MCP servers MUST use the HTTP header `WWW-Authenticate` when returning a 401
        # Unauthorized to indicate the location of the resource server metadata URL"
        return challenge(config, "missing", scopes=needed)
    # Spec: 2025-06-18/basic/authorization#token-handling.1
    # "MCP servers, acting in their role as an OAuth 2.1 resource server, MUST validate
    # access tokens as described in OAuth 2.1 Section 5.2."
    # Spec: 2025-03-26/basic/authorization#token-handling.1
    # "Resource servers MUST validate access tokens as described in Section 5.2."
    # Spec: 2025-11-25/basic/authorization#access-token-privilege-restriction.2
    # "A MCP server MUST follow the guidelines in OAuth 2.1 - Section 5.2 to validate inbound
    # tokens."
    # Spec: 2026-07-28/basic/authorization/index#token-handling.1
    # "MCP servers, acting in their role as an OAuth 2.1 resource server, MUST validate access
    # tokens as described in OAuth 2.1 Section 5.2."
    # Spec: 2026-07-28/basic/authorization/security-considerations#access-token-privilege-restriction.2
    # "A MCP server MUST follow the guidelines in OAuth 2.1 - Section 5.2 to validate inbound
    # tokens."
    # Spec: 2025-06-18/basic/authorization#access-token-privilege-restriction.2
    # "A MCP server MUST follow the guidelines in OAuth 2.1 - Section 5.2 to validate inbound
    # tokens."
    # Spec: 2026-07-28/basic/authorization/security-considerations#access-token-privilege-restriction.1
    # "MCP servers MUST validate access tokens before processing the request, ensuring the access
    # token is issued specifically for the MCP server, and take all necessary steps to ensure no
    # data is returned to unauthorized parties."
    # Spec: 2025-06-18/basic/authorization#access-token-privilege-restriction.1
    # "MCP servers MUST validate access tokens before processing the request"
    # Spec: 2025-06-18/basic/security_best_practices#mitigation-2.1
    # "MCP servers that implement authorization MUST verify all inbound requests."
    # Spec: 2025-06-18/basic/security_best_practices#mitigation-2.2
    # "MCP Servers MUST NOT use sessions for authentication."
    # (the verdict is the token's alone: nothing here reads or keeps a session)
    verdict = verifier.verify(token, now=now)
    if isinstance(verdict, NeedFetch):
        return verdict.map(lambda v: _decide(config, v, needed, now))
    return _decide(config, verdict, needed, now)


def _decide(
    config: ResourceConfig, verdict: object, needed: frozenset[str], now: float
) -> Allowed | HttpAnswer:
    """The answer for a verifier's final verdict (anything but an Identity or a
    TokenRejected counts as an unavailable verifier)."""
    if isinstance(verdict, TokenRejected):
        # Spec: 2025-03-26/basic/authorization#token-handling.3
        # "Invalid or expired tokens MUST receive a HTTP 401 response."
        # Spec: 2026-07-28/basic/authorization/index#token-handling.4
        # "Invalid or expired tokens MUST receive a HTTP 401 response."
        # Spec: 2025-06-18/basic/authorization#token-handling.4
        # "Invalid or expired tokens MUST receive a HTTP 401 response."
        # Spec: 2025-03-26/basic/authorization#token-handling.2
        # "If validation fails, servers MUST respond according to Section 5.3 error handling
        # requirements."
        # Spec: 2025-11-25/basic/authorization#token-handling.3
        # "If validation fails, servers MUST respond according to OAuth 2.1 Section 5.3 error
        # handling requirements."
        # Spec: 2026-07-28/basic/authorization/index#token-handling.3
        # "If validation fails, servers MUST respond according to OAuth 2.1 Section 5.3 error
        # handling requirements."
        # Spec: 2025-06-18/basic/authorization#token-handling.3
        # "If validation fails, servers MUST respond according to OAuth 2.1 Section 5.3
        # error handling requirements."
        # Spec: 2025-11-25/basic/authorization#token-handling.4
        # "Invalid or expired tokens MUST receive a HTTP 401 response."
        return challenge(config, verdict.kind, scopes=needed, description=verdict.reason)
    if not isinstance(verdict, Identity):
        return challenge(config, "unavailable", description="the token verifier failed")
    # Spec: 2026-07-28/basic/authorization/index#token-handling.2
    # "MCP servers MUST validate that access tokens were issued specifically for them as the
    # intended audience, according to RFC 8707 Section 2."
    # Spec: 2025-06-18/basic/authorization#token-handling.2
    # "MCP servers MUST validate that access tokens were issued specifically for them as the
    # intended audience, according to RFC 8707 Section 2."
    # Spec: 2025-06-18/basic/authorization#token-handling.6
    # "Authorization servers MUST only accept tokens that are valid for use with their own
    # resources."
    # Spec: 2025-11-25/basic/authorization#token-handling.7
    # "MCP servers MUST NOT accept or transit any other tokens."
    # Spec: 2026-07-28/basic/authorization/index#token-handling.7
    # "MCP servers MUST NOT accept or transit any other tokens."
    # Spec: 2025-06-18/basic/authorization#token-handling.7
    # "MCP servers MUST NOT accept or transit any other tokens."
    # Spec: 2025-11-25/basic/authorization#token-audience-binding-and-validation.2
    # "MCP servers MUST validate that tokens presented to them were specifically issued for their
    # use"
    # Spec: 2026-07-28/basic/authorization/security-considerations#token-audience-binding-and-validation.2
    # "MCP servers MUST validate that tokens presented to them were specifically issued for their
    # use"
    # Spec: 2025-06-18/basic/authorization#token-audience-binding-and-validation.2
    # "MCP servers MUST validate that tokens presented to them were specifically issued for
    # their use"
    # Spec: 2025-11-25/basic/authorization#access-token-privilege-restriction.3
    # "MCP servers MUST only accept tokens specifically intended for themselves and MUST reject
    # tokens that do not include them in the audience claim or otherwise verify that they are the
    # intended recipient of the token."
    # Spec: 2026-07-28/basic/authorization/security-considerations#access-token-privilege-restriction.3
    # "MCP servers MUST only accept tokens specifically intended for themselves and MUST reject
    # tokens that do not include them in the audience claim or otherwise verify that they are the
    # intended recipient of the token."
    # Spec: 2025-06-18/basic/authorization#access-token-privilege-restriction.3
    # "MCP servers MUST only accept tokens specifically intended for themselves and MUST
    # reject tokens that do not include them in the audience claim"
    # Spec: 2026-07-28/basic/authorization/index#token-handling.6
    # "MCP servers MUST only accept tokens that are valid for use with their own resources."
    # Spec: 2025-11-25/basic/authorization#token-handling.6
    # "MCP servers MUST only accept tokens that are valid for use with their own
    # resources."
    # Spec: 2025-06-18/basic/security_best_practices#mitigation-1.1
    # "MCP servers MUST NOT accept any tokens that were not explicitly issued for the MCP
    # server."
    if config.resource not in verdict.audience:
        return challenge(
            config,
            "invalid_token",
            scopes=needed,
            description="the token was not issued for this server",
        )
    if verdict.expires_at is not None and now >= verdict.expires_at + config.leeway:
        return challenge(
            config, "invalid_token", scopes=needed, description="the token has expired"
        )
    return check_scopes(config, verdict, needed)


def check_scopes(
    config: ResourceConfig, identity: Identity, needed: Iterable[str]
) -> Allowed | HttpAnswer:
    """Whether ``identity`` holds the ``needed`` scopes (the policy's hierarchy
    applied): :class:`Allowed`, or the 403 ``insufficient_scope`` answer whose
    ``scope`` is ``needed`` plus the supported scopes the token already has.

    :func:`check_request` calls it; a driver that checks the token before reading a
    POST's body (``operations=()``) calls it again once the body is read, with
    ``config.policy.required(operation_names(messages))``.  Never raises."""
    needed = frozenset(needed)
    granted = config.policy.expand(identity.scopes)
    if not needed <= granted:
        # Spec: 2025-11-25/basic/authorization#runtime-insufficient-scope-errors.1
        # "When a client makes a request with an access token with insufficient scope during runtime
        # operations, the server SHOULD respond with:"
        # Spec: 2026-07-28/basic/authorization/index#runtime-insufficient-scope-errors.1
        # "When a client makes a request with an access token with insufficient scope during runtime
        # operations, the server SHOULD respond with:"
        # Spec: 2026-07-28/basic/authorization/index#runtime-insufficient-scope-errors.3
        # "Whatever scope-inclusion strategy a server adopts, servers SHOULD include all scopes
        # required for the current operation in a single challenge."
        # Spec: 2026-07-28/basic/authorization/index#runtime-insufficient-scope-errors.2
        # "Server Scope Management: When responding with insufficient scope errors, servers SHOULD
        # include the scopes needed to satisfy the current operation in the `scope` parameter,
        # consistent with RFC 6750 Section 3.1."
        # Spec: 2025-11-25/basic/authorization#runtime-insufficient-scope-errors.2
        # "Server Scope Management: When responding with insufficient scope errors,
        # servers SHOULD include the scopes needed to satisfy the current request in the
        # `scope` parameter."
        kept = identity.scopes & set(config.scopes_supported)
        return challenge(
            config,
            "insufficient_scope",
            scopes=needed | kept,
            description=f"this request needs the scopes: {' '.join(sorted(needed - granted))}",
        )
    return Allowed(identity=identity)

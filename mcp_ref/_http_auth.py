"""The HTTP server as an OAuth 2.1 resource server, and who is calling: sans-IO.

Theory of operation
-------------------
A server given ``auth=`` (a :class:`ResourceAuth`: the server's
:class:`~mcp_ref._oauth_resource.ResourceConfig` and a
:class:`~mcp_ref._oauth_verify.TokenVerifier`) does two things more per request:

1. Its connection answers the protected resource metadata (RFC 9728) itself, before
   routing (:class:`MetadataConnection`, the
   :class:`~mcp_ref._http_connection.ServerConnection` of such a server): a GET or HEAD of a well-known path
   (:func:`~mcp_ref._oauth_resource.metadata_paths`) gets the document and the
   connection serves the next request.  No token is asked for, and the ``Origin`` and
   ``Host`` rules do not apply: the document is public (``Access-Control-Allow-Origin:
   *``), as a browser client must read it before it has a token.
2. Every request routed to an endpoint (the MCP endpoint's POST, GET and DELETE, and
   the 2024-11-05 endpoints: a protected server has no unprotected door) is checked
   before it reaches a session (:func:`check_http_request`:
   :func:`~mcp_ref._oauth_resource_guard.check_request` with the request's
   ``Authorization`` fields, its query, and the operations its body carries).  The
   driver loops over :class:`~mcp_ref._oauth_verify.NeedFetch` (the verifier's own
   HTTP: a JWKS, an introspection; none carries the caller's credentials but the
   introspected token, sent to the authorization server that issued it), then either
   writes the refusal (:func:`answer_events`) or lets the request through with a
   :class:`Caller`.
3. A session belongs to whoever opened it (:func:`owner_key`: the token's issuer and
   subject, or client id when it names no subject): a request for it with another
   caller's valid token gets 404, as for an unknown session (:func:`session_refusal`),
   so a session id that leaked or was guessed lets nobody else in.

Who is calling reaches the handlers through :data:`CALLER`, a context variable the
driver sets in the task that hands the body to the session: the session's tasks for the
requests of that body start with a copy of it (trio copies the spawning task's
context), so each handler sees its own request's caller, and a body queued for the
session's reader carries its caller with it.  Over stdio :data:`CALLER` is None.

The handler sees the verified :class:`~mcp_ref._oauth_verify.Identity` and the
request's headers read-only (:class:`HttpHeaders`), never the token itself: a protected
server's ``Authorization`` field is not among them, so no handler can pass the token
on to another service.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import h11

from . import _jsonrpc as rpc
from ._errors import RemoteProtocolError
from ._http import HttpError
from ._http_access import ObservedConnection
from ._http_connection import CONNECTION_CLOSE, Refusal, RequestReady, ServerConnection
from ._http_errors import http_error
from ._http_server import (
    Endpoint,
    ServerConfig,
    gone,
    legacy_session,
    request_headers,
    session_named,
)
from ._oauth_resource import HttpAnswer, ResourceConfig, challenge, serve_metadata
from ._oauth_resource_guard import Allowed, Outcome, check_request, operation_names
from ._oauth_verify import Identity, TokenVerifier

if TYPE_CHECKING:
    import ssl

__all__ = [
    "CALLER",
    "Caller",
    "HttpHeaders",
    "MetadataConnection",
    "ResourceAuth",
    "admission",
    "answer_events",
    "caller_of",
    "check_http_request",
    "current_owner",
    "operations_of",
    "owner_key",
    "server_connection",
    "session_refusal",
]

_CREDENTIALS: Final = frozenset({"authorization"})
"""Headers a protected server never shows its handlers (the token stays here)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceAuth:
    """What makes an HTTP server a protected resource (``serve_http(auth=...)``).

    Args:
        config: the server's description and scope policy (its ``resource`` is the
            canonical URI of the MCP endpoint as clients reach it).
        verifier: decides whose a token is (JWT, introspection, or your own).
        fetch_timeout: seconds one of the verifier's HTTP exchanges may take before it
            counts as failed (the request then gets 503).
        ssl_context: for the verifier's HTTPS exchanges (default: the system's trust
            store, certificates and host names verified).
    """

    config: ResourceConfig
    verifier: TokenVerifier
    fetch_timeout: float = 10.0
    ssl_context: ssl.SSLContext | None = None


class HttpHeaders(Mapping[str, str]):
    """A request's header fields, read-only: names lowercase, the values of a repeated
    field joined with ``", "`` (RFC 9110 section 5.3); :meth:`get_all` gives them apart.
    Bytes are decoded as latin-1, as HTTP/1.1 carries them."""

    __slots__ = ("_fields",)

    def __init__(self, fields: Iterable[tuple[str | bytes, str | bytes]]) -> None:
        out: list[tuple[str, str]] = []
        for name, value in fields:
            k = name.decode("latin-1") if isinstance(name, bytes) else name
            v = value.decode("latin-1") if isinstance(value, bytes) else value
            out.append((k.lower(), v))
        self._fields: tuple[tuple[str, str], ...] = tuple(out)

    def __getitem__(self, name: str) -> str:
        values = self.get_all(name)
        if not values:
            raise KeyError(name)
        return ", ".join(values)

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys(k for k, _ in self._fields))

    def __len__(self) -> int:
        return len({k for k, _ in self._fields})

    def get_all(self, name: str) -> list[str]:
        """Every value of field ``name`` (any case), in order; empty when absent."""
        low = name.lower()
        return [v for k, v in self._fields if k == low]

    def __repr__(self) -> str:
        return f"HttpHeaders({list(self._fields)!r})"


class Caller:
    """Who sent the request being handled: the verified identity (None when the server
    verifies no tokens) and the request's HTTP headers, decoded on first use.

    Args:
        identity: what the verifier established, or None.
        fields: the request's raw header fields (lowercase bytes names).
        hide: header names (lowercase) left out of :attr:`headers`.
    """

    __slots__ = ("_fields", "_headers", "_hide", "identity")

    def __init__(
        self,
        identity: Identity | None,
        fields: Iterable[tuple[bytes, bytes]],
        hide: frozenset[str] = frozenset(),
    ) -> None:
        self.identity: Final = identity
        """The verified identity (subject, client id, scopes, expiry, audience)."""
        self._fields = fields
        self._hide = hide
        self._headers: HttpHeaders | None = None

    @property
    def headers(self) -> HttpHeaders:
        """The request's headers (a protected server's ``Authorization`` left out)."""
        if self._headers is None:
            hide = {h.encode() for h in self._hide}
            self._headers = HttpHeaders((k, v) for k, v in self._fields if k.lower() not in hide)
        return self._headers


CALLER: Final[contextvars.ContextVar[Caller | None]] = contextvars.ContextVar(
    "mcp_ref.caller", default=None
)
"""The caller of the request whose body this task delivers or handles (module
docstring); None outside HTTP."""


def operations_of(body: bytes) -> tuple[str, ...]:
    """The operations a POST body carries
    (:func:`~mcp_ref._oauth_resource_guard.operation_names`), read with the decoder the
    connection uses; empty for a body that is not JSON (the endpoint refuses it)."""
    if not body:
        return ()
    try:
        obj = rpc.decode(body)
    except (RemoteProtocolError, RecursionError):
        return ()
    return operation_names(obj if isinstance(obj, list) else [obj])


def check_http_request(auth: ResourceAuth, req: RequestReady, *, now: float) -> Outcome:
    """Whether the routed request ``req`` may reach its endpoint
    (:func:`~mcp_ref._oauth_resource_guard.check_request`, with ``req``'s
    ``Authorization`` fields, query and body's operations).

    Args:
        auth: the server's resource settings.
        req: the request, its body read.
        now: the time, in seconds since the epoch.

    Returns:
        ``Allowed``, the refusal as an ``HttpAnswer``, or a ``NeedFetch`` whose
        ``resume`` gives one of those.  Never raises.
    """
    authorization = [v for k, v in req.headers if k == b"authorization"]
    return check_request(
        auth.config,
        auth.verifier,
        authorization=authorization,
        query=req.query,
        operations=operations_of(req.body),
        now=now,
    )


def caller_of(auth: ResourceAuth | None, req: RequestReady, identity: Identity | None) -> Caller:
    """The :class:`Caller` of a request let through (``Authorization`` hidden when the
    server verifies tokens)."""
    # Spec: 2026-07-28/basic/authorization/security-considerations#access-token-privilege-restriction.4
    # "The MCP server MUST NOT pass through the token it received from the MCP client."
    # Spec: 2025-06-18/basic/authorization#access-token-privilege-restriction.4
    # "The MCP server MUST NOT pass through the token it received from the MCP client."
    # Spec: 2025-11-25/basic/authorization#access-token-privilege-restriction.4
    # "The MCP server MUST NOT pass through the token it received from the MCP client."
    # (its handlers never see it)
    return Caller(identity, req.headers, _CREDENTIALS if auth is not None else frozenset())


def admission(
    auth: ResourceAuth,
    req: RequestReady,
    outcome: Allowed | HttpAnswer | None,
    sessions: Mapping[str, Any],
) -> tuple[Caller | None, HttpAnswer | HttpError | None]:
    """What follows the check of ``req`` (:func:`check_http_request`, its fetches done;
    None when the verifier failed: refused as ``unavailable``): the caller its handlers
    see, and its refusal: an answer to write as it is, the 404 of a session another
    caller opened (:func:`session_refusal`), or None to let it through."""
    if outcome is None:
        outcome = challenge(auth.config, "unavailable", description="the token verifier failed")
    if not isinstance(outcome, Allowed):
        return None, outcome
    return caller_of(auth, req, outcome.identity), session_refusal(req, sessions, outcome.identity)


def answer_events(answer: HttpAnswer, *, last: bool, head: bool = False) -> list[Any]:
    """The h11 events writing ``answer`` (``Connection: close`` when ``last``; no body
    for a HEAD request, its ``Content-Length`` kept)."""
    headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in answer.headers]
    headers.append((b"content-length", str(len(answer.body)).encode()))
    if last:
        headers.append(CONNECTION_CLOSE)
    events: list[Any] = [h11.Response(status_code=answer.status, headers=headers)]
    if answer.body and not head:
        events.append(h11.Data(data=answer.body))
    events.append(h11.EndOfMessage())
    return events


class MetadataConnection(ServerConnection):
    """The connection of a protected server: a :class:`ServerConnection` that answers
    the protected resource metadata itself (module docstring, 1.).

    Args:
        cfg, memos, *args, **kw: as for :class:`ServerConnection`.
        resource: the server's resource description.
    """

    def __init__(
        self,
        cfg: ServerConfig,
        memos: dict[Any, dict[Any, Any]],
        *args: Any,
        resource: ResourceConfig,
        **kw: Any,
    ) -> None:
        super().__init__(cfg, memos, *args, **kw)
        self.resource = resource

    def _head(self, req: h11.Request) -> RequestReady | Refusal | None:
        # Spec: 2025-11-25/basic/authorization#overview.4
        # "MCP servers MUST implement OAuth 2.0 Protected Resource Metadata (RFC9728)."
        # Spec: 2026-07-28/basic/authorization/index#overview.4
        # "MCP servers MUST implement OAuth 2.0 Protected Resource Metadata (RFC9728)."
        # Spec: 2025-06-18/basic/authorization#overview.3
        # "MCP servers MUST implement OAuth 2.0 Protected Resource Metadata (RFC9728)."
        # Spec: 2026-07-28/basic/authorization/authorization-server-discovery#authorization-server-location.1
        # "MCP servers MUST implement the OAuth 2.0 Protected Resource Metadata (RFC9728)
        # specification to indicate the locations of authorization servers."
        # Spec: 2025-06-18/basic/authorization#authorization-server-location.1
        # "MCP servers MUST implement the OAuth 2.0 Protected Resource Metadata (RFC9728)
        # specification to indicate the locations of authorization servers."
        # Spec: 2025-11-25/basic/authorization#authorization-server-location.1
        # "MCP servers MUST implement the OAuth 2.0 Protected Resource Metadata (RFC9728)
        # specification to indicate the locations of authorization servers."
        answer = serve_metadata(
            self.resource, req.method.decode("latin-1"), req.target.decode("latin-1")
        )
        if answer is None:
            return super()._head(req)
        self.served += 1
        if isinstance(self.h11, ObservedConnection):  # the access log, CORS
            self.h11.begin(req.method, req.target, request_headers(req, self._memos))
        # A bodiless request's end comes at once; one with a body is not read: close.
        end = self.h11.next_event()
        last = self.served >= self.cfg.limits.max_requests_per_connection or not isinstance(
            end, h11.EndOfMessage
        )
        events = answer_events(answer, last=last, head=req.method == b"HEAD")
        data = b"".join(self.h11.send(event) or b"" for event in events)
        detail = "protected resource metadata"
        return Refusal(error=http_error(answer.status, detail, clause=None), data=data, close=last)


def owner_key(identity: Identity | None) -> tuple[str, str] | None:
    """Who owns a session opened by ``identity``: ``(issuer, subject)``, the client id
    standing in for a subject a token does not name; None without an identity."""
    if identity is None:
        return None
    return (identity.issuer or "", identity.subject or f"client:{identity.client_id}")


def current_owner() -> tuple[str, str] | None:
    """:func:`owner_key` of this task's :data:`CALLER` (None without a caller or its
    identity): who owns a session opened, or a session looked for, now."""
    caller = CALLER.get()
    return owner_key(caller.identity if caller is not None else None)


def session_refusal(
    req: RequestReady, sessions: Mapping[str, Any], identity: Identity | None
) -> HttpError | None:
    """404 when ``req`` names a live session (by ``Mcp-Session-Id``, or the
    2024-11-05 ``session_id``) whose ``owner`` is not :func:`owner_key` of
    ``identity``; else None (also for a request naming no live session: its endpoint
    refuses that itself)."""
    if req.endpoint is Endpoint.LEGACY_POST:
        sess: Any = legacy_session(req.query, sessions)
    elif req.endpoint in (Endpoint.POST, Endpoint.GET, Endpoint.DELETE):
        sess = session_named(req.headers, sessions)
    else:
        return None
    if isinstance(sess, HttpError):
        return None
    # Spec: 2025-06-18/basic/security_best_practices#mitigation-2.5
    # "MCP servers SHOULD bind session IDs to user-specific information."
    if getattr(sess, "owner", None) != owner_key(identity):
        return gone()
    return None


def server_connection(
    cfg: ServerConfig, memos: dict[Any, dict[Any, Any]], *args: Any, auth: ResourceAuth | None
) -> ServerConnection:
    """The connection a server's driver serves (the arguments are
    :class:`ServerConnection`'s): a :class:`MetadataConnection` for a protected server,
    else a plain :class:`ServerConnection`."""
    if auth is None:
        return ServerConnection(cfg, memos, *args)
    return MetadataConnection(cfg, memos, *args, resource=auth.config)

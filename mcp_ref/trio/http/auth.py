"""The resource-server check of one HTTP request, on trio (the decisions are
:mod:`mcp_ref._http_auth`'s): run the check, make the verifier's HTTP exchanges, write
the refusal or set who is calling.  Shared by :mod:`.server` and :mod:`mcp_ref.asgi`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import h11
import trio

from ... import _http_auth as rules
from ..._http import HttpError, Refused
from ..._http_connection import RequestReady
from ..._oauth_http import HttpRequest, HttpResponse
from ..._oauth_verify import NeedFetch
from .client_connections import oauth_exchange

__all__ = ["admit", "fetch", "prefetch"]

log = logging.getLogger("mcp_ref.trio.http")


async def admit(
    auth: rules.ResourceAuth | None, stream: Any, req: RequestReady, sessions: Mapping[str, Any]
) -> bool:
    """Check ``req`` (``auth`` None: no check) and set
    :data:`~mcp_ref._http_auth.CALLER` for this task; False when refused, the answer
    written to ``stream`` (an :class:`~.common.H11Stream` or its ASGI stand-in).

    Raises:
        Refused: 404, ``req`` names a session another caller opened (``sessions``:
            the live ones, by id).
    """
    if auth is None:
        rules.CALLER.set(rules.caller_of(None, req, None))
        return True
    # Spec: 2025-06-18/basic/transports#security-warning.3
    # "Servers SHOULD implement proper authentication for all connections"
    # Spec: 2025-11-25/basic/authorization#access-token-privilege-restriction.1
    # "MCP servers MUST validate access tokens before processing the request"
    try:
        outcome = rules.check_http_request(auth, req, now=time.time())
        while isinstance(outcome, NeedFetch):
            outcome = outcome.resume(await fetch(outcome.request, auth), now=time.time())
    except Exception:  # a verifier's bug: this request is refused, the server goes on
        log.exception("the token verifier failed")
        outcome = None
    caller, refusal = rules.admission(auth, req, outcome, sessions)
    rules.CALLER.set(caller)
    if isinstance(refusal, HttpError):
        raise Refused(refusal)
    if refusal is not None:
        await stream.send(*rules.answer_events(refusal, last=req.last))
        return False
    return True


async def prefetch(auth: rules.ResourceAuth | None) -> None:
    """Fetch a JWT verifier's keys once at start-up
    (:meth:`~mcp_ref._oauth_verify_jwt.JwtVerifier.receive_jwks`), so that the
    requests arriving first do not each fetch them; a failure changes nothing."""
    verifier: Any = auth.verifier if auth is not None else None
    if getattr(verifier, "jwks_url", None) is not None and hasattr(verifier, "receive_jwks"):
        assert auth is not None
        verifier.receive_jwks(await fetch(verifier.jwks_request(), auth), now=time.time())


async def fetch(request: HttpRequest, auth: rules.ResourceAuth) -> HttpResponse | None:
    """One HTTP exchange of the verifier, as the client's sign-in exchanges go
    (:func:`~.client_connections.oauth_exchange`), within ``auth.fetch_timeout``
    seconds; None when it failed.  It carries only what the verifier put in it."""
    try:
        return await oauth_exchange(request, auth.fetch_timeout, auth.ssl_context)
    except (OSError, trio.BrokenResourceError, trio.TooSlowError, h11.ProtocolError) as exc:
        log.warning("the token verifier could not fetch %s: %r", request.url, exc)
        return None

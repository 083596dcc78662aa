"""OAuth sign-in, part 1: the HTTP exchanges as values, the refusals, and the URL rules.

Theory of operation
-------------------
The sign-in flow (:mod:`mcp_ref._oauth_flow`) never touches a socket.  It asks for an
HTTP exchange by handing out an :class:`HttpRequest` (method, URL, headers, body) and is
given back an :class:`HttpResponse` (status, headers, body bytes); the driver moves the
bytes.  A driver must not follow redirects itself: the flow decides which ones to follow
(same origin, GET only; see :func:`redirect_target`), so a 3xx never carries a client
secret or a code to a host nobody vetted.

Everything a remote party can get wrong ends in one exception class per reason, all
subclasses of :class:`OAuthRefused` (itself an :class:`OAuthError`): the flow hands the
instance out in a ``Failed`` event rather than letting anything else escape.  Misuse by
the application (a bad configuration, an input in the wrong state) raises
:class:`OAuthLocalError` at once.

Bounds: a response body over ``max_body_bytes`` (:data:`DEFAULT_MAX_BODY_BYTES`,
1 MiB, unless the caller sets another) is refused with :class:`BodyTooLarge` before it
is decoded; :attr:`HttpRequest.max_body_bytes` tells the driver the same bound, so it
can stop reading a 50 MB answer early.  JSON bodies are read by :func:`read_json_object`
only (UTF-8, one object, nesting errors caught).

URL rules live here too: the canonical resource URI (RFC 8707), the "HTTPS except on
loopback" check, origins, and the well-known discovery URLs in the spec's order.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import SplitResult, urljoin, urlsplit, urlunsplit

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "AuthorizationDenied",
    "BadMetadata",
    "BodyTooLarge",
    "DiscoveryFailed",
    "HttpRequest",
    "HttpResponse",
    "InsecureEndpoint",
    "IssuerMismatch",
    "MalformedChallenge",
    "OAuthError",
    "OAuthLocalError",
    "OAuthRefused",
    "PkceUnsupported",
    "RegistrationRefused",
    "RegistrationUnavailable",
    "ResourceMismatch",
    "StateMismatch",
    "StepUpLimit",
    "TokenMisdirected",
    "TokenRefused",
    "UnexpectedOrigin",
    "UnexpectedRedirect",
    "UnsupportedClientAuth",
    "WireRequest",
    "canonical_resource",
    "discovery_request",
    "is_loopback_url",
    "origin_of",
    "read_answer",
    "read_json_object",
    "redirect_target",
    "require_secure",
    "resource_covers",
]

DEFAULT_MAX_BODY_BYTES: Final = 1024 * 1024
"""The largest response body (bytes) the flow reads by default: 1 MiB.  Metadata,
registration and token answers are a few KiB; anything past this is refused."""

MAX_REDIRECTS: Final = 3
"""How many same-origin redirects one discovery GET may follow."""


# --- refusals -----------------------------------------------------------------------


class OAuthError(Exception):
    """Base of every sign-in error.  ``reason`` is the sentence a user can be shown."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class OAuthLocalError(OAuthError):
    """The application misused the flow (bad configuration, input in the wrong state)."""


class OAuthRefused(OAuthError):
    """A remote party (MCP server, authorization server, browser redirect) sent
    something the flow must refuse.  Subclasses name the reason."""


class BodyTooLarge(OAuthRefused):
    """A response body was longer than the flow's ``max_body_bytes``."""


class BadMetadata(OAuthRefused):
    """A JSON document (metadata, registration, token answer) is malformed or lacks a
    required field."""


class MalformedChallenge(OAuthRefused):
    """A ``WWW-Authenticate`` header does not follow RFC 9110's challenge grammar."""


class InsecureEndpoint(OAuthRefused):
    """An authorization-related URL is not HTTPS (plain HTTP is allowed on loopback)."""


class ResourceMismatch(OAuthRefused):
    """The protected resource metadata names another resource than this MCP server."""


class IssuerMismatch(OAuthRefused):
    """An ``issuer`` or ``iss`` value differs from the authorization server's issuer."""


class UnexpectedOrigin(OAuthRefused):
    """Metadata points a credential-bearing endpoint at another origin than its issuer."""


class UnexpectedRedirect(OAuthRefused):
    """A redirect leads somewhere the flow did not expect (another origin, another
    redirect URI, a redirect on a POST, too many hops)."""


class DiscoveryFailed(OAuthRefused):
    """No candidate URL yielded usable metadata."""


class PkceUnsupported(OAuthRefused):
    """The authorization server does not advertise PKCE with ``S256``."""


class RegistrationUnavailable(OAuthRefused):
    """No way to obtain a client id: no pre-registered client, no client ID metadata
    document support, no registration endpoint."""


class RegistrationRefused(OAuthRefused):
    """The registration endpoint refused the client (RFC 7591 error answer)."""


class UnsupportedClientAuth(OAuthRefused):
    """No client authentication method both sides support (or ``private_key_jwt``
    without a signer to make its assertion)."""


class StateMismatch(OAuthRefused):
    """The authorization response's ``state`` is missing or differs."""


class AuthorizationDenied(OAuthRefused):
    """The authorization server answered the browser step with an error."""


class TokenRefused(OAuthRefused):
    """The token endpoint answered with an error or without a usable token."""


class StepUpLimit(OAuthRefused):
    """A 401/403 challenge came back after the retry limit, or asked again for scopes
    already granted: a permanent authorization failure."""


class TokenMisdirected(OAuthLocalError):
    """An access token was about to be sent to a URL that is not its resource."""


# --- HTTP exchanges as values --------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpRequest:
    """One HTTP request the flow needs sent.  The driver sends it as is and must not
    follow redirects (hand the 3xx answer back instead)."""

    method: str
    """``"GET"`` or ``"POST"``."""
    url: str
    """Absolute URL."""
    headers: tuple[tuple[str, str], ...] = ()
    """Header (name, value) pairs, in order."""
    body: bytes = b""
    """The request body (empty for GET)."""
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    """The largest response body, in bytes, the flow will accept: the driver may stop
    reading past it (the flow refuses a longer body with :class:`BodyTooLarge`)."""

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (case-insensitive), or None."""
        return _first(self.headers, name)

    def on_the_wire(self) -> WireRequest:
        """Where to connect and what to write to send this request on a connection of
        its own (the same for every driver)."""
        parts = urlsplit(self.url)
        tls = parts.scheme == "https"
        headers = [("Host", parts.netloc.rpartition("@")[2]), *self.headers]
        if self.method == "POST":
            headers.append(("Content-Length", str(len(self.body))))
        headers.append(("Connection", "close"))
        return WireRequest(
            tls=tls,
            host=parts.hostname or "",
            port=parts.port or (443 if tls else 80),
            target=(parts.path or "/") + (f"?{parts.query}" if parts.query else ""),
            headers=headers,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpResponse:
    """The answer to an :class:`HttpRequest`."""

    status: int
    """The HTTP status code."""
    headers: tuple[tuple[str, str], ...] = ()
    """Header (name, value) pairs as received (text; decode bytes as latin-1)."""
    body: bytes = b""
    """The body bytes (may be cut at the request's ``max_body_bytes`` + 1)."""

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (case-insensitive), or None."""
        return _first(self.headers, name)

    def header_values(self, name: str) -> list[str]:
        """Every value of header ``name`` (case-insensitive), in order."""
        low = name.lower()
        return [v for k, v in self.headers if k.lower() == low]


@dataclass(frozen=True, slots=True, kw_only=True)
class WireRequest:
    """An :class:`HttpRequest` as a driver sends it, on one HTTP/1.1 connection of its
    own (made by :meth:`HttpRequest.on_the_wire`): where to connect and what to write.
    """

    tls: bool
    """Connect with TLS (an ``https`` URL)."""
    host: str
    """The host to connect to."""
    port: int
    """The TCP port (the URL's, else 443 or 80)."""
    target: str
    """The request-target: path and query."""
    headers: list[tuple[str, str]]
    """``Host`` first, then the request's headers, ``Content-Length`` for a POST, and
    ``Connection: close``."""


def read_answer(
    status: int, raw_headers: list[tuple[bytes, bytes]], chunks: list[bytes], max_body_bytes: int
) -> HttpResponse:
    """The :class:`HttpResponse` a driver hands back: header bytes decoded as latin-1,
    the body chunks joined and cut at ``max_body_bytes + 1`` bytes (enough for the flow
    to refuse a longer body)."""
    headers = tuple((k.decode("latin-1"), v.decode("latin-1")) for k, v in raw_headers)
    body = b"".join(chunks)[: max_body_bytes + 1]
    return HttpResponse(status=status, headers=headers, body=body)


def _first(headers: tuple[tuple[str, str], ...], name: str) -> str | None:
    low = name.lower()
    return next((v for k, v in headers if k.lower() == low), None)


def discovery_request(url: str, protocol_version: str | None, max_body_bytes: int) -> HttpRequest:
    """A metadata GET: ``Accept: application/json`` and, when given, the
    ``MCP-Protocol-Version`` header (a SHOULD of 2025-03-26's server metadata discovery).
    It never carries credentials."""
    headers = [("Accept", "application/json")]
    if protocol_version is not None:
        headers.append(("MCP-Protocol-Version", protocol_version))
    return HttpRequest(method="GET", url=url, headers=tuple(headers), max_body_bytes=max_body_bytes)


def read_json_object(response: HttpResponse, max_body_bytes: int, what: str) -> dict[str, Any]:
    """The response body as a JSON object.

    Args:
        response: the answer; its body must be at most ``max_body_bytes`` bytes.
        max_body_bytes: the bound, in bytes.
        what: what the document is, for the error message ("token response").

    Raises:
        BodyTooLarge: the body is longer than ``max_body_bytes``.
        BadMetadata: not UTF-8, not JSON, nested too deeply, or not an object.
    """
    if len(response.body) > max_body_bytes:
        raise BodyTooLarge(
            f"the {what} is over {max_body_bytes} bytes ({len(response.body)} received)"
        )
    try:
        value = json.loads(response.body.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadMetadata(f"the {what} is not UTF-8") from None
    except ValueError as exc:
        raise BadMetadata(f"the {what} is not JSON: {exc}") from None
    except RecursionError:
        raise BadMetadata(f"the {what} is nested too deeply") from None
    if not isinstance(value, dict):
        raise BadMetadata(f"the {what} is not a JSON object")
    return value


# --- URLs ---------------------------------------------------------------------------

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def _split(url: str, what: str) -> SplitResult:
    """``url`` split, with scheme http(s) and a host; else :class:`BadMetadata`."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError on a bad port)
    except ValueError as exc:
        raise BadMetadata(f"{what} is not a URL: {url!r} ({exc})") from None
    if parts.scheme.lower() not in _DEFAULT_PORTS or not parts.hostname:
        raise BadMetadata(f"{what} is not an absolute http(s) URL: {url!r}")
    return parts


def _netloc(parts: SplitResult) -> str:
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    if port is None or port == _DEFAULT_PORTS[parts.scheme.lower()]:
        return host
    return f"{host}:{port}"


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of ``url``, lowercased, default port left out.

    Raises:
        BadMetadata: ``url`` is not an absolute http(s) URL.
    """
    parts = _split(url, "the URL")
    return f"{parts.scheme.lower()}://{_netloc(parts)}"


def canonical_resource(url: str) -> str:
    """The canonical URI of an MCP server (RFC 8707 section 2): lowercase scheme and
    host, no default port, no fragment, no trailing ``/`` on an empty path.

    Raises:
        BadMetadata: not an absolute http(s) URL, or it has a fragment.
    """
    parts = _split(url, "the resource")
    if parts.fragment or url.endswith("#"):
        raise BadMetadata(f"a resource URI has no fragment: {url!r}")
    path = parts.path
    # Spec: 2025-11-25/basic/authorization#canonical-server-uri.3
    # "Note: While both `https://mcp.example.com/` (with trailing slash) and
    # `https://mcp.example.com` (without trailing slash) are technically valid absolute URIs
    # according to RFC 3986, implementations SHOULD consistently use the form without the trailing
    # slash for better interoperability unless the trailing slash is semantically significant for
    # the specific resource."
    # Spec: 2026-07-28/basic/authorization/index#canonical-server-uri.3
    # "Note: While both `https://mcp.example.com/` (with trailing slash) and
    # `https://mcp.example.com` (without trailing slash) are technically valid absolute URIs
    # according to RFC 3986, implementations SHOULD consistently use the form without the trailing
    # slash for better interoperability unless the trailing slash is semantically significant for
    # the specific resource."
    # Spec: 2025-06-18/basic/authorization#canonical-server-uri.3
    # "implementations SHOULD consistently use the form without the trailing slash"
    if path == "/":
        path = ""
    # Spec: 2025-11-25/basic/authorization#canonical-server-uri.2
    # "While the canonical form uses lowercase scheme and host components, implementations SHOULD
    # accept uppercase scheme and host components for robustness and interoperability."
    # Spec: 2026-07-28/basic/authorization/index#canonical-server-uri.2
    # "While the canonical form uses lowercase scheme and host components, implementations SHOULD
    # accept uppercase scheme and host components for robustness and interoperability."
    # Spec: 2025-06-18/basic/authorization#canonical-server-uri.2
    # "While the canonical form uses lowercase scheme and host components,
    # implementations SHOULD accept uppercase scheme and host components"
    return urlunsplit((parts.scheme.lower(), _netloc(parts), path, parts.query, ""))


def resource_covers(resource: str, url: str) -> bool:
    """Whether a token for ``resource`` may be sent to ``url``: same canonical origin,
    and ``url``'s path is ``resource``'s path or below it (segment-wise).  Never raises:
    a malformed URL is simply not covered."""
    try:
        r, u = urlsplit(canonical_resource(resource)), urlsplit(canonical_resource(url))
    except OAuthError:
        return False
    if (r.scheme, r.netloc) != (u.scheme, u.netloc):
        return False
    base = r.path.rstrip("/")
    return u.path == r.path or u.path.startswith(base + "/") or base == ""


def is_loopback_url(url: str) -> bool:
    """Whether ``url``'s host is ``localhost`` or a loopback IP address.  Never raises."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def require_secure(url: str, what: str) -> str:
    """``url`` itself, once checked to be HTTPS, or HTTP on a loopback host.

    Raises:
        BadMetadata: not an absolute http(s) URL.
        InsecureEndpoint: plain HTTP to a host that is not loopback.
    """
    parts = _split(url, what)
    # Spec: 2025-03-26/basic/authorization#security-considerations.4
    # "All authorization endpoints MUST be served over HTTPS"
    # Spec: 2025-11-25/basic/authorization#communication-security.2
    # "All authorization server endpoints MUST be served over HTTPS."
    # Spec: 2026-07-28/basic/authorization/security-considerations#communication-security.2
    # "All authorization server endpoints MUST be served over HTTPS."
    # Spec: 2025-06-18/basic/authorization#communication-security.2
    # "All authorization server endpoints MUST be served over HTTPS."
    # Spec: 2025-03-26/basic/authorization#security-considerations.6
    # "Redirect URIs MUST be either localhost URLs or HTTPS URLs"
    # Spec: 2025-11-25/basic/authorization#communication-security.3
    # "All redirect URIs MUST be either `localhost` or use HTTPS."
    # Spec: 2026-07-28/basic/authorization/security-considerations#communication-security.3
    # "All redirect URIs MUST be either `localhost` or use HTTPS."
    # Spec: 2025-06-18/basic/authorization#communication-security.3
    # "All redirect URIs MUST be either `localhost` or use HTTPS."
    if parts.scheme.lower() != "https" and not is_loopback_url(url):
        raise InsecureEndpoint(f"{what} must use HTTPS (plain HTTP only on loopback): {url!r}")
    return url


def redirect_target(request: HttpRequest, response: HttpResponse, hops: int) -> str | None:
    """Where a 3xx answer to ``request`` may be followed, or None if it is no redirect.

    Only a GET is followed, only within its origin, at most :data:`MAX_REDIRECTS` hops
    (``hops`` is how many were followed already).

    Raises:
        UnexpectedRedirect: a redirect on a POST, to another origin, without
            ``Location``, or one hop too many.
    """
    if response.status not in (301, 302, 303, 307, 308):
        return None
    location = response.header("location")
    if request.method != "GET":
        raise UnexpectedRedirect(f"{request.url} answered a POST with a redirect")
    if not location:
        raise UnexpectedRedirect(f"{request.url} redirected without a Location")
    if hops >= MAX_REDIRECTS:
        raise UnexpectedRedirect(f"more than {MAX_REDIRECTS} redirects from {request.url}")
    try:
        target = urljoin(request.url, location)
        same = origin_of(target) == origin_of(request.url)
    except (ValueError, BadMetadata):  # urljoin: "Invalid IPv6 URL"
        target, same = location, False
    if not same:
        raise UnexpectedRedirect(f"{request.url} redirected to another origin: {target}")
    return target

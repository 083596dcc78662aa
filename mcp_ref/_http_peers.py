"""Who is at the other end, sans-IO: loopback addresses, the address a client's
sessions count against, and the ``Origin``/``Host`` defaults of a server on loopback.

Theory of operation
-------------------
Two decisions of an HTTP (or WebSocket) server depend on addresses, not on messages:

* *Which browsers may reach it.*  A server bound to a loopback address serves this
  machine only, and is the target of DNS-rebinding attacks (a page of another origin
  whose name resolves to 127.0.0.1), so by default it takes requests naming a loopback
  ``Origin`` and ``Host`` only (:func:`allowed_for`).  A server bound elsewhere takes
  any ``Host`` and no ``Origin`` (only non-browser clients) unless told otherwise.
* *Whose share a new session counts against.*  :func:`peer_address` turns what the
  socket says of its far end into one text per client (an IPv4-mapped IPv6 address is
  its IPv4 address; an IPv6 zone is dropped); :func:`told_apart` says whether that
  address tells clients apart (a loopback address, shared by every local client, does
  not).

The driver reads the socket (``getpeername``) and the bound host; everything else is
here.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection

from ._http_rules import LOCALHOST_HOSTS, LOCALHOST_ORIGINS

__all__ = ["allowed_for", "http_url", "is_loopback", "peer_address", "told_apart"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name to bind, e.g. ``"127.0.0.1"``, ``"::1"``, ``"[::1]"``,
    ``"localhost"``) is a loopback address.  Never raises: a name that is not an IP
    address (other than ``localhost``) is not loopback.

    Source: 2025-06-18/basic/transports#security-warning.2."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_for(
    host: str, origins: Collection[str] | None, hosts: Collection[str] | None
) -> tuple[Collection[str], Collection[str]]:
    """The ``Origin`` and ``Host`` patterns of a server bound to ``host``: those given,
    else for a loopback ``host`` the loopback names (any port), else no ``Origin`` and
    any ``Host``.

    Returns:
        ``(allowed_origins, allowed_hosts)`` for :func:`mcp_ref._http.check_origin` and
        :func:`mcp_ref._http.check_host`.

    Source: 2025-06-18/basic/transports#security-warning.1 (validate ``Origin``),
    #security-warning.2 (bind to localhost when running locally).
    """
    # Spec: 2025-06-18/basic/transports#security-warning.1
    # "Servers MUST validate the `Origin` header on all incoming connections to prevent DNS
    # rebinding attacks"
    loopback = is_loopback(host)
    if origins is None:
        origins = LOCALHOST_ORIGINS if loopback else ()
    if hosts is None:
        hosts = LOCALHOST_HOSTS if loopback else ("*",)
    return origins, hosts


def http_url(host: str, port: int, path: str) -> str:
    """The URL of ``path`` on a server bound to ``host`` (an IP address) and ``port``:
    ``http://127.0.0.1:8000/mcp``, an IPv6 address in brackets (``http://[::1]:8000/mcp``,
    RFC 3986 section 3.2.2)."""
    name = f"[{host}]" if ":" in host else host
    return f"http://{name}:{port}{path}"


def peer_address(name: object) -> str | None:
    """The client address of a connection, from its socket's ``getpeername()`` result:
    the IP address as text, without the port; an IPv4-mapped IPv6 address gives its
    IPv4 address (one client is one peer on a dual-stack socket), an IPv6 zone
    (``%eth0``) is dropped.

    Returns:
        e.g. ``"127.0.0.1"`` or ``"::1"``; a host that is not an IP address as it is;
        None for a name that is not an address tuple (a Unix socket's path).  Never
        raises.
    """
    if not isinstance(name, tuple) or not name:
        return None
    host = str(name[0])
    try:
        addr = ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        return host
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return str(addr.ipv4_mapped)
    return str(addr)


def told_apart(peer: str | None) -> bool:
    """Whether clients at ``peer`` can be told apart from other clients, so a share per
    address means a share per client: False for a loopback address (every client on
    this machine) and for a connection without an IP address (in-memory streams).
    Only those peers are held to ``HttpLimits.max_sessions_per_peer``; the others share
    ``max_sessions`` alone."""
    if peer is None:
        return False
    try:
        return not ipaddress.ip_address(peer).is_loopback
    except ValueError:
        return True

"""The 2024-11-05 HTTP+SSE transport's rules, sans-IO: the ``endpoint`` event that
names where the client POSTs, and the ``message`` events.

Source: 2024-11-05/basic/transports "HTTP with SSE";
2025-06-18/basic/transports#backwards-compatibility.
"""

from __future__ import annotations

from typing import Final
from urllib.parse import urljoin, urlsplit

from ._errors import LocalProtocolError, RemoteProtocolError
from ._sse import SSEEvent, encode_event

# -- 2024-11-05 HTTP+SSE ---------------------------------------------------------------

ENDPOINT_EVENT: Final = "endpoint"
"""Event type of the 2024-11-05 transport's first event."""
MESSAGE_EVENT: Final = "message"
"""Event type of server messages on SSE streams."""


def endpoint_event(post_url: str) -> SSEEvent:
    """The first event of a 2024-11-05 HTTP+SSE stream: where to POST messages.

    Args:
        post_url: the URI (absolute, or relative to the SSE URL) the client must POST
            to, usually carrying a session query parameter.

    Raises:
        LocalProtocolError: ``post_url`` is empty or holds whitespace or control chars.

    Source: 2024-11-05/basic/transports, section "HTTP with SSE" (the server MUST send
    an ``endpoint`` event when a client connects).
    """
    if not post_url or not post_url.isprintable() or any(c.isspace() for c in post_url):
        raise LocalProtocolError(f"bad endpoint URL {post_url!r}")
    return SSEEvent(event=ENDPOINT_EVENT, data=post_url)


def session_endpoint(messages_path: str, session_id: str) -> bytes:
    """The encoded :func:`endpoint_event` that opens a server's 2024-11-05 SSE stream:
    POST to ``<messages_path>?session_id=<id>``."""
    return encode_event(endpoint_event(f"{messages_path}?session_id={session_id}"))


def message_event(data: str, *, event_id: str | None = None) -> SSEEvent:
    """A server message as an SSE ``message`` event.

    Args:
        data: the JSON text of one JSON-RPC message.
        event_id: its event id (from :meth:`EventStore.append`), or None.

    Source: 2024-11-05/basic/transports "HTTP with SSE" (messages are ``message``
    events); 2025-06-18/basic/transports#resumability-and-redelivery.1 (ids).
    """
    return SSEEvent(event=MESSAGE_EVENT, data=data, id=event_id)


def resolve_endpoint(event: SSEEvent, sse_url: str) -> str:
    """Client side of 2024-11-05: the absolute POST URL announced by an ``endpoint`` event.

    Args:
        event: the first event of the stream.
        sse_url: the absolute URL of the SSE stream.

    Returns:
        The POST URL, resolved against ``sse_url``.

    Raises:
        RemoteProtocolError: the event is not ``endpoint``, or its URL points at another
            origin (scheme, host or port) than the SSE stream -- we do not let a server
            send our messages elsewhere.

    Source: 2024-11-05/basic/transports "HTTP with SSE";
    2025-06-18/basic/transports#backwards-compatibility.
    """
    if event.event != ENDPOINT_EVENT:
        raise RemoteProtocolError(f"expected an endpoint event, got {event.event!r}")
    url = urljoin(sse_url, event.data.strip())
    base, target = urlsplit(sse_url), urlsplit(url)
    if (base.scheme.lower(), base.netloc.lower()) != (target.scheme.lower(), target.netloc.lower()):
        raise RemoteProtocolError(f"endpoint {url!r} is not on the origin of {sse_url!r}")
    return url

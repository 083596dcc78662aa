"""The events of an MCP connection: what ``next_event()`` returns and ``send()`` takes.

Theory of operation
-------------------
Four events mirror the four JSON-RPC message shapes and travel both ways:
:class:`Request`, :class:`Notification`, :class:`Response` and :class:`ErrorResponse`.
Their ``params``/``result`` are typed messages from :mod:`mcp_ref.types` (frozen attrs
classes), converted once, at the boundary, by the connection.

The other events only come *out* of the connection, to tell the driver what the core
decided on the protocol's behalf: :class:`RequestCancelled` (stop work, send nothing),
:class:`RequestTimedOut`, :class:`Progress` (matched to our request),
:class:`ProgressDropped` and :class:`UnexpectedResponse` (input the spec says to
ignore, reported so nothing is lost silently), :class:`ConnectionClosed`.
"""

from __future__ import annotations

from typing import Any

import attrs

__all__ = [
    "ConnectionClosed",
    "ErrorResponse",
    "Event",
    "Notification",
    "Progress",
    "ProgressDropped",
    "Request",
    "RequestCancelled",
    "RequestId",
    "RequestTimedOut",
    "Response",
    "UnexpectedResponse",
]

RequestId = str | int
"""A request id: a string or an integer, never null, kept exactly as sent."""


class Event:
    """Base class of every event."""

    __slots__ = ()


@attrs.frozen(kw_only=True)
class Request(Event):
    """A JSON-RPC request, to send or received (2025-06-18/basic#requests)."""

    id: RequestId
    """The request id (str or int, never None, never bool).  Compared exactly: "7" is not 7."""
    method: str
    """The MCP method name, e.g. ``"tools/call"``; a key of ``METHODS``."""
    params: Any = None
    """The typed params (an instance of the method's params class in
    :mod:`mcp_ref.types`), or None when the method takes none."""
    context: Any = None
    """On a received modern (2026-07-28) request: its ``_modern.RequestContext`` (version,
    client capabilities and info, log level), read from ``params._meta``.  Else None."""


@attrs.frozen(kw_only=True)
class Notification(Event):
    """A JSON-RPC notification, to send or received (2025-06-18/basic#notifications)."""

    method: str
    """The notification method, e.g. ``"notifications/progress"``."""
    params: Any = None
    """The typed params, or None."""


@attrs.frozen(kw_only=True)
class Response(Event):
    """A successful JSON-RPC response (2025-06-18/basic#responses)."""

    id: RequestId
    """The id of the request this answers."""
    result: Any
    """The typed result (an instance of the method's result class)."""
    method: str | None = None
    """On received responses: the method of the request it answers (filled in by the
    core).  Ignored on send."""


@attrs.frozen(kw_only=True)
class ErrorResponse(Event):
    """A JSON-RPC error response (2025-06-18/basic#responses)."""

    id: RequestId | None
    """The id of the request this answers; None only when the id could not be read."""
    code: int
    """The JSON-RPC error code, e.g. -32601."""
    message: str
    """A short description of the error."""
    data: Any = None
    """Optional extra information (any JSON value); omitted from the wire when None."""
    method: str | None = None
    """On received error responses: the method of the request it answers."""


@attrs.frozen(kw_only=True)
class RequestCancelled(Event):
    """The peer cancelled a request it had sent us: stop the work; a response sent
    afterwards is dropped (2025-06-18/basic/utilities/cancellation)."""

    id: RequestId
    """The id of the cancelled request."""
    reason: str | None = None
    """The reason the peer gave, if any."""


@attrs.frozen(kw_only=True)
class RequestTimedOut(Event):
    """A request we sent got no response within its timeout; ``handle_timeout``
    returned its ``notifications/cancelled`` (2025-06-18/basic/lifecycle#timeouts)."""

    id: RequestId
    """The id of the request that expired."""
    method: str
    """Its method."""
    elapsed: float
    """Seconds between sending it and the expiry."""


@attrs.frozen(kw_only=True)
class Progress(Event):
    """A ``notifications/progress`` for a request we sent and that is still in flight."""

    request_id: RequestId
    """The id of our request that carried the progress token."""
    progress_token: str | int
    """The token, exactly as sent."""
    progress: float
    """The progress so far; it increases with every notification."""
    total: float | None = None
    """The total, if known."""
    message: str | None = None
    """A human-readable progress message (2025-03-26 on)."""


@attrs.frozen(kw_only=True)
class ProgressDropped(Event):
    """A progress notification the core ignored, and why."""

    progress_token: Any
    """The token the peer sent."""
    reason: str
    """Why it was dropped: unknown token, finished request, or progress not increasing."""


@attrs.frozen(kw_only=True)
class UnexpectedResponse(Event):
    """A response whose id matches no request in flight (late responses to cancelled or
    timed-out requests are dropped without one)."""

    id: RequestId | None
    """The id the peer sent."""
    message: dict[str, Any]
    """The whole decoded message, as received."""


@attrs.frozen(kw_only=True)
class ConnectionClosed(Event):
    """End of input: the peer closed its side (2025-06-18/basic/lifecycle#shutdown)."""

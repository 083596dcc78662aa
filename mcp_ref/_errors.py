"""Errors of the sans-IO core, and the JSON-RPC error codes MCP uses.

Theory of operation
-------------------
Two kinds of protocol error, named as in h11:

* :class:`LocalProtocolError`: *we* tried to do something the protocol forbids
  (send a request whose capability was not negotiated, reuse a request id, send a
  response to a request we never received).  Nothing was written; the caller has a bug.
* :class:`RemoteProtocolError`: the *peer* sent something the protocol forbids.  The
  error carries ``code`` (a JSON-RPC error code) and, where the spec fixes the reply,
  ``event_hint``: the ready :class:`~mcp_ref.events.ErrorResponse` the driver should
  send back.  A driver does ``conn.send(exc.event_hint)`` and carries on: a bad message
  does not end a connection the spec lets survive.

Anything else escaping ``receive_data``/``next_event`` is a bug in mcp-ref.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .events import ErrorResponse

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "REQUEST_CANCELLED",
    "REQUEST_TIMEOUT",
    "RESOURCE_NOT_FOUND",
    "URL_ELICITATION_REQUIRED",
    "LocalProtocolError",
    "McpError",
    "NoAnswerError",
    "ProtocolError",
    "RemoteProtocolError",
]

# JSON-RPC 2.0 section 5.1: the pre-defined error codes.
PARSE_ERROR = -32700
"""Invalid JSON was received."""
INVALID_REQUEST = -32600
"""The JSON sent is not a valid request object."""
METHOD_NOT_FOUND = -32601
"""The method does not exist or is not available (also: capability not negotiated)."""
INVALID_PARAMS = -32602
"""Invalid method parameters (also: bad cursor, unknown tool, unsupported version)."""
INTERNAL_ERROR = -32603
"""Internal JSON-RPC error."""

# MCP's own codes (implementation-defined range -32000..-32099).
# Source: 2025-06-18/server/resources#error-handling
RESOURCE_NOT_FOUND = -32002
"""A resources/read named a resource that does not exist."""
URL_ELICITATION_REQUIRED = -32042
"""2025-11-25: the request needs a URL-mode elicitation to complete first."""
REQUEST_TIMEOUT = -32001
"""Used by mcp-ref in the timeout event when a request we sent expired."""
REQUEST_CANCELLED = -32800
"""Used by mcp-ref in events for requests cancelled before they were answered."""


class ProtocolError(Exception):
    """Base class of the core's protocol errors.

    Attributes:
        code: a JSON-RPC error code (int), e.g. ``-32600``.
        message: a one-line human-readable description (str).
    """

    def __init__(self, message: str, *, code: int = INVALID_REQUEST) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class LocalProtocolError(ProtocolError):
    """We tried to send something the protocol forbids; nothing was sent.

    Raised by ``Connection.send`` and by message constructors.  ``code`` tells which
    JSON-RPC error a peer would have answered had we sent it.
    """


class RemoteProtocolError(ProtocolError):
    """The peer sent something the protocol forbids.

    Attributes:
        event_hint: the :class:`~mcp_ref.events.ErrorResponse` the spec asks us to send
            back (``None`` when the offending message was a notification or a response,
            which get no reply).  Send it with ``conn.send(exc.event_hint)``.
        request_id: the id of the offending request when it could be known, else None.

    Source: JSON-RPC 2.0 section 5 (error object);
    2025-06-18/basic#responses (every request gets a response).
    """

    def __init__(
        self,
        message: str,
        *,
        code: int = INVALID_REQUEST,
        event_hint: ErrorResponse | None = None,
        request_id: str | int | None = None,
    ) -> None:
        super().__init__(message, code=code)
        self.event_hint = event_hint
        self.request_id = request_id


class McpError(Exception):
    """An MCP error response, as a Python exception.

    Raised by high-level client calls when the peer answered with an error response,
    and raised by server handlers to answer with one.

    Attributes:
        code: the JSON-RPC error code (int).
        message: the error message (str).
        data: optional extra JSON data, or None.

    Source: 2025-06-18/basic#responses.
    """

    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data


class NoAnswerError(McpError):
    """We gave up waiting: the peer sent no answer to a request within its timeout.

    Raised by the clients' requests instead of a plain :class:`~mcp_ref.McpError`,
    so "the peer never answered" stays apart from "the peer answered with an error"
    (which is a plain McpError, whatever its code, -32001 included).  It is an
    McpError with ``code`` ``REQUEST_TIMEOUT`` (-32001) and ``data``
    ``{"method": ..., "elapsed": ...}``, so code that caught the timeout as
    ``McpError`` before still does; catch ``NoAnswerError`` first to tell them apart.

    Attributes:
        method: the request's method, e.g. ``"initialize"``.
        elapsed: seconds between sending the request and giving up.

    Source: 2025-06-18/basic/lifecycle#timeouts (the sender stops waiting and, except
    for ``initialize``, sends ``notifications/cancelled``).
    """

    def __init__(self, method: str, elapsed: float) -> None:
        super().__init__(
            REQUEST_TIMEOUT,
            f"no answer to {method} within {elapsed:.3g} s",
            {"method": method, "elapsed": elapsed},
        )
        self.method = method
        self.elapsed = elapsed

"""Errors of the sans-IO core, and the JSON-RPC error codes MCP uses.

Theory of operation
-------------------
Two kinds of protocol error, named as in h11:

* :class:`LocalProtocolError`: *we* tried to do something the protocol forbids (reuse
  a request id, answer a request we never received).  Nothing was written.
* :class:`RemoteProtocolError`: the *peer* sent something the protocol forbids.  It
  carries ``code`` (a JSON-RPC error code) and, where the spec fixes the reply,
  ``event_hint``: the ready :class:`~mcp_ref.events.ErrorResponse`.  A driver does
  ``conn.send(exc.event_hint)`` and carries on.

Anything else escaping ``receive_data``/``next_event`` is a bug in mcp-ref.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .events import ErrorResponse

__all__ = [
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "MODERN_ERROR_CODES",
    "PARSE_ERROR",
    "REQUEST_CANCELLED",
    "REQUEST_TIMEOUT",
    "RESOURCE_NOT_FOUND",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "URL_ELICITATION_REQUIRED",
    "LocalProtocolError",
    "McpError",
    "NoAnswerError",
    "ProtocolError",
    "RemoteProtocolError",
]

# JSON-RPC 2.0 section 5.1: the pre-defined error codes.
PARSE_ERROR = -32700  #: Invalid JSON was received.
INVALID_REQUEST = -32600  #: The JSON sent is not a valid request object.
METHOD_NOT_FOUND = -32601  #: No such method, or not available (also: capability not negotiated).
INVALID_PARAMS = -32602  #: Bad params (also: bad cursor, unknown tool, unsupported version).
INTERNAL_ERROR = -32603  #: Internal JSON-RPC error.

# MCP's own codes (implementation-defined range -32000..-32099).
# Source: 2025-06-18/server/resources#error-handling
RESOURCE_NOT_FOUND = -32002  #: A resources/read named a resource that does not exist.
URL_ELICITATION_REQUIRED = -32042  #: 2025-11-25: a URL-mode elicitation must complete first.
REQUEST_TIMEOUT = -32001  #: mcp-ref's, in the event of a request of ours that expired.
REQUEST_CANCELLED = -32800  #: mcp-ref's, in events of requests cancelled before an answer.

# The codes 2026-07-28 defines, in the range it reserves (2026-07-28/basic/index#error-codes).
HEADER_MISMATCH = -32020
"""HTTP headers missing, malformed, or disagreeing with the body (``HeaderMismatchError``)."""
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
"""The request needs a client capability it did not declare; ``data.requiredCapabilities``."""
UNSUPPORTED_PROTOCOL_VERSION = -32022
"""The request's version is not served; ``data`` is ``{"supported": [...], "requested": v}``."""
MODERN_ERROR_CODES = frozenset(
    {HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION}
)
"""The codes that identify a modern peer when a probe gets them back."""


class ProtocolError(Exception):
    """Base class of the core's protocol errors: a one-line ``message`` and a JSON-RPC
    error ``code``."""

    def __init__(self, message: str, *, code: int = INVALID_REQUEST) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class LocalProtocolError(ProtocolError):
    """We tried to send something the protocol forbids; nothing was sent.  ``code`` is
    the error a peer would have answered had we sent it."""


class RemoteProtocolError(ProtocolError):
    """The peer sent something the protocol forbids.

    Attributes:
        event_hint: the :class:`~mcp_ref.events.ErrorResponse` to send back (None for a
            notification or a response, which get no reply).
        request_id: the id of the offending request when it could be known, else None.
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
    """An MCP error response (``code``, ``message``, optional JSON ``data``) as an
    exception: raised by client calls when the peer answered with one, and by server
    handlers to answer with one."""

    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data


class NoAnswerError(McpError):
    """The peer sent no answer to a request (``method``) within its timeout
    (``elapsed`` seconds), as opposed to answering with an error.

    An McpError with code ``REQUEST_TIMEOUT`` (-32001) and data ``{"method": ...,
    "elapsed": ...}``; catch it before McpError to tell the two apart.
    """

    def __init__(self, method: str, elapsed: float) -> None:
        super().__init__(
            REQUEST_TIMEOUT,
            f"no answer to {method} within {elapsed:.3g} s",
            {"method": method, "elapsed": elapsed},
        )
        self.method = method
        self.elapsed = elapsed

"""mcp-ref: a sans-IO reference implementation of the Model Context Protocol.

The core (this package's top level) does no I/O and imports no event loop; drivers for
trio live in :mod:`mcp_ref.trio`.  Start with :class:`Connection`.
"""

from ._client import SessionClosed
from ._connection import NEED_DATA, Connection
from ._errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RESOURCE_NOT_FOUND,
    LocalProtocolError,
    McpError,
    NoAnswerError,
    ProtocolError,
    RemoteProtocolError,
)
from ._inflight import RequestTimeout
from ._methods import METHODS, MethodSpec
from ._modern_connection import LEGACY, MODERN
from ._state import CLIENT, SERVER, Role, State
from ._versions import LATEST_PROTOCOL_VERSION, SUPPORTED_VERSIONS
from .events import (
    ConnectionClosed,
    ErrorResponse,
    Event,
    Notification,
    Progress,
    ProgressDropped,
    Request,
    RequestCancelled,
    RequestTimedOut,
    Response,
    UnexpectedResponse,
)

__all__ = [
    "CLIENT",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "LATEST_PROTOCOL_VERSION",
    "LEGACY",
    "METHODS",
    "METHOD_NOT_FOUND",
    "MODERN",
    "NEED_DATA",
    "PARSE_ERROR",
    "RESOURCE_NOT_FOUND",
    "SERVER",
    "SUPPORTED_VERSIONS",
    "Connection",
    "ConnectionClosed",
    "ErrorResponse",
    "Event",
    "LocalProtocolError",
    "McpError",
    "MethodSpec",
    "NoAnswerError",
    "Notification",
    "Progress",
    "ProgressDropped",
    "ProtocolError",
    "RemoteProtocolError",
    "Request",
    "RequestCancelled",
    "RequestTimedOut",
    "RequestTimeout",
    "Response",
    "Role",
    "SessionClosed",
    "State",
    "UnexpectedResponse",
]

"""The high-level MCP client (trio).

``async with open_stdio_client([sys.executable, "server.py"]) as client:`` starts a
server, initializes, and gives a :class:`Client` with typed methods (``list_tools``,
``call_tool``, ``read_resource``, ``get_prompt``, ...).  :func:`open_client` does the same
over any :class:`~mcp_ref.trio.MessageChannel`, and :func:`open_http_client` and
:func:`open_websocket_client` over Streamable HTTP and WebSocket.
"""

from .._ratelimit import RateLimit
from .._roots import check_roots
from ._client import (
    DEFAULT_CLIENT_INFO,
    DEFAULT_ELICITATION_RATE_LIMIT,
    DEFAULT_SAMPLING_RATE_LIMIT,
    Client,
    ElicitationHandler,
    NoAnswerError,
    RootsArg,
    SamplingHandler,
    open_client,
    open_stdio_client,
)
from ._schema import JSONSCHEMA_AVAILABLE, OutputSchemaError
from ._transports import open_http_client, open_websocket_client

__all__ = [
    "DEFAULT_CLIENT_INFO",
    "DEFAULT_ELICITATION_RATE_LIMIT",
    "DEFAULT_SAMPLING_RATE_LIMIT",
    "JSONSCHEMA_AVAILABLE",
    "Client",
    "ElicitationHandler",
    "NoAnswerError",
    "OutputSchemaError",
    "RateLimit",
    "RootsArg",
    "SamplingHandler",
    "check_roots",
    "open_client",
    "open_http_client",
    "open_stdio_client",
    "open_websocket_client",
]

"""The high-level MCP client (trio).

``async with open_stdio_client([sys.executable, "server.py"]) as client:`` starts a
server, initializes (or, with ``era="modern"`` or ``"auto"``, speaks 2026-07-28), and
gives a :class:`Client` with typed methods (``list_tools``,
``call_tool``, ``read_resource``, ``get_prompt``, ...).  :func:`open_client` does the same
over any :class:`~mcp_ref.trio.MessageChannel`, and :func:`open_http_client` and
:func:`open_websocket_client` over Streamable HTTP and WebSocket.  What the client
decides (handshake, params, progress tokens, result checks, roots, every option's
default) is the sans-IO client core's, :mod:`mcp_ref._client`, which the asyncio and
blocking clients share.
"""

from .._client import (
    DEFAULT,
    DEFAULT_CLIENT_INFO,
    DEFAULT_ELICITATION_RATE_LIMIT,
    DEFAULT_SAMPLING_RATE_LIMIT,
    DEFAULT_TIMEOUT,
    ElicitationHandler,
    EraArg,
    RootsArg,
    SamplingHandler,
    SessionClosed,
    TooManyInputRounds,
)
from .._errors import NoAnswerError
from .._http_client_auth import OAuthClientOptions
from .._oauth_assertions import IdentityProvider, JwtSigner
from .._oauth_grants import InMemoryTokenStore, TokenStore
from .._output_schema import JSONSCHEMA_AVAILABLE, OutputSchemaError
from .._ratelimit import RateLimit
from .._roots import check_roots
from ._client import Client, open_client, open_stdio_client
from ._memory import connect_in_memory
from ._signer import PrivateKeySigner
from ._transports import open_http_client, open_websocket_client

__all__ = [
    "DEFAULT",
    "DEFAULT_CLIENT_INFO",
    "DEFAULT_ELICITATION_RATE_LIMIT",
    "DEFAULT_SAMPLING_RATE_LIMIT",
    "DEFAULT_TIMEOUT",
    "JSONSCHEMA_AVAILABLE",
    "Client",
    "ElicitationHandler",
    "EraArg",
    "IdentityProvider",
    "InMemoryTokenStore",
    "JwtSigner",
    "NoAnswerError",
    "OAuthClientOptions",
    "OutputSchemaError",
    "PrivateKeySigner",
    "RateLimit",
    "RootsArg",
    "SamplingHandler",
    "SessionClosed",
    "TokenStore",
    "TooManyInputRounds",
    "check_roots",
    "connect_in_memory",
    "open_client",
    "open_http_client",
    "open_stdio_client",
    "open_websocket_client",
]

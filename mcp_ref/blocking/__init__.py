"""MCP with no event loop: a blocking client for scripts, beside the trio and asyncio
drivers.

Usage::

    from mcp_ref.blocking import connect_stdio

    with connect_stdio([sys.executable, "-m", "mcp_ref.asyncio.example_server"]) as client:
        print(client.call_tool("echo", {"text": "hi"}).content[0].text)

:func:`connect_stdio` starts a server process and yields an initialized
:class:`Client`; every call waits on the caller's thread (subprocess pipes and a
selector, :mod:`mcp_ref.blocking._stdio`).  What the client decides is the sans-IO client
core's (:mod:`mcp_ref._client`), shared with the trio and asyncio clients: the same
options, defaults, progress-token rule and :class:`~mcp_ref.SessionClosed`.
``import mcp_ref.blocking`` loads no I/O module (``subprocess`` and ``selectors`` are
imported when a client is made).
"""

from .._client import DEFAULT_CLIENT_INFO, SessionClosed
from .._errors import NoAnswerError
from ._stdio import Client, connect_stdio

__all__ = ["DEFAULT_CLIENT_INFO", "Client", "NoAnswerError", "SessionClosed", "connect_stdio"]

"""The notes server of notes_server.py, served over Streamable HTTP.

    python examples/notes_http.py [PORT]

It prints ``listening on http://127.0.0.1:8000/mcp`` on stderr once it listens (PORT 0
picks a free port, and the line shows which).  Try it from another terminal::

    mcp-ref inspect --url http://127.0.0.1:8000/mcp

Each client gets its own session (the ``Mcp-Session-Id`` header).  Ctrl-C or SIGTERM
stops it gracefully: requests in progress get a few seconds to finish.
"""

from __future__ import annotations

import sys

from notes_server import server  # the same Server object: tools, resources, prompt

if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8000
    # Loopback only: an MCP server on a public address needs authentication.
    server.run_http("127.0.0.1", port)

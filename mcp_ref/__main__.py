"""``python -m mcp_ref`` is the ``mcp-ref`` command (see :mod:`mcp_ref.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())

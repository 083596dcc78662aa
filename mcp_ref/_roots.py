"""The rule a client's roots must meet before it exposes them (sans-IO, shared by the
trio and asyncio clients).

Source: 2025-06-18/client/roots#root.1, 2025-06-18/client/roots#security-considerations.1.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence

from . import types as t

__all__ = ["check_roots"]


def check_roots(roots: Sequence[t.Root]) -> list[t.Root]:
    """Check roots before the client exposes them; returns them as a list.

    Each root must be a ``file://`` URI with an absolute path and no ``..`` segment
    (after percent-decoding), so a root cannot climb out of the directory it names.
    Which directories to expose, and with what permissions, is the host's decision.

    Raises:
        ValueError: naming the first bad root.

    Source: 2025-06-18/client/roots#root.1, 2025-06-18/client/roots#security-considerations.1.
    """
    checked = []
    for root in roots:
        parts = urllib.parse.urlsplit(root.uri)
        # Spec: 2025-06-18/client/roots#root.1
        # "This MUST be a `file://` URI in the current specification."
        if parts.scheme != "file":
            raise ValueError(f"a root must be a file:// URI, not {root.uri!r}")
        path = urllib.parse.unquote(parts.path)
        # Spec: 2025-06-18/client/roots#security-considerations.1
        # "Clients MUST:"
        if not path.startswith("/") or ".." in path.split("/"):
            raise ValueError(f"a root must be an absolute path without '..': {root.uri!r}")
        checked.append(root)
    return checked

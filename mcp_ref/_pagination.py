"""Pagination: opaque cursors for servers, and a page walker for clients.

Theory of operation
-------------------
List methods (``tools/list``, ``resources/list``, ``resources/templates/list``,
``prompts/list``, ``tasks/list``) return one page and, when more remain, a
``nextCursor``.  The spec makes cursors opaque to clients
(2025-06-18/server/utilities/pagination#implementation-guidelines.3) and has servers
answer a bad cursor with -32602 (…#error-handling.1).

A server cursor here encodes the offset of the next item *and* a fingerprint of the
list it came from, so a cursor from another list, or a forged one, is refused rather
than silently skipping items.  It is URL-safe base64 of ``<list tag>:<offset>``:
opaque to clients, readable to a person debugging, and stateless for the server.

Clients use :class:`PageWalker`: it yields the params of each page's request and
collects the items, stopping when a page has no ``nextCursor`` and refusing a cursor
that repeats (a server bug that would otherwise loop forever), with a bound on pages.
"""

from __future__ import annotations

import base64
import binascii
import zlib
from collections.abc import Sequence
from typing import Any, TypeVar

from ._errors import INVALID_PARAMS, ProtocolError, RemoteProtocolError

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "InvalidCursor",
    "PageWalker",
    "decode_cursor",
    "encode_cursor",
    "paginate",
]

T = TypeVar("T")

DEFAULT_PAGE_SIZE = 50  # items per page a server returns unless told otherwise


class InvalidCursor(ProtocolError):
    """A request carried a cursor this server did not issue (answer -32602)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code=INVALID_PARAMS)


def encode_cursor(tag: str, offset: int) -> str:
    """Make the opaque cursor for ``offset`` in the list named ``tag``."""
    raw = f"{zlib.crc32(tag.encode()):08x}:{offset}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(tag: str, cursor: str) -> int:
    """The offset in a cursor made by :func:`encode_cursor`; InvalidCursor when it is
    malformed, forged, or issued for another list."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        text = base64.urlsafe_b64decode(padded.encode("ascii")).decode("ascii")
        fingerprint, _, number = text.partition(":")
        offset = int(number)
    except (ValueError, binascii.Error, UnicodeError):
        raise InvalidCursor(f"invalid cursor: {cursor!r}") from None
    if fingerprint != f"{zlib.crc32(tag.encode()):08x}" or offset < 0:
        raise InvalidCursor(f"invalid cursor for this list: {cursor!r}")
    return offset


def paginate(
    items: Sequence[T], cursor: str | None, *, tag: str, page_size: int = DEFAULT_PAGE_SIZE
) -> tuple[list[T], str | None]:
    """Cut ``(page, next_cursor)`` out of ``items`` (in a stable order) at ``cursor``
    (None: the first page); ``next_cursor`` is None on the last page.  ``tag`` names
    the list (e.g. ``"tools/list"``), so cursors do not cross lists.

    Raises:
        InvalidCursor: the cursor is not one issued for ``tag``, or points past the end.
    """
    if page_size < 1:
        raise ValueError("page_size must be at least 1")
    # Spec: 2025-06-18/server/utilities/pagination#error-handling.1
    # "Invalid cursors SHOULD result in an error with code -32602 (Invalid params)."
    start = 0 if cursor is None else decode_cursor(tag, cursor)
    if start > len(items):
        raise InvalidCursor(f"cursor points past the end of the list: {cursor!r}")
    end = start + page_size
    page = list(items[start:end])
    return page, (encode_cursor(tag, end) if end < len(items) else None)


class PageWalker:
    """Walk every page of a paginated list, as a client, giving up after ``max_pages``.
    Usage::

        walker = PageWalker()
        while (cursor := walker.next_cursor()) is not walker.DONE:
            result = <send the list request with params cursor=cursor>
            walker.add_page(result.tools, result.next_cursor)
        all_tools = walker.items
    """

    DONE: Any = object()

    def __init__(self, *, max_pages: int = 1000) -> None:
        self.items: list[Any] = []
        self._cursor: Any = None  # a str, None (the first page) or DONE
        self._seen: set[str] = set()
        self._pages = 0
        self._max_pages = max_pages

    def next_cursor(self) -> Any:
        """The cursor for the next request (None for the first page), or DONE."""
        return self._cursor

    def add_page(self, page: Sequence[Any], next_cursor: str | None) -> None:
        """Record one page and its cursor; RemoteProtocolError when the server repeats
        a cursor or sends more than ``max_pages`` pages."""
        # Spec: 2025-06-18/server/utilities/pagination#implementation-guidelines.3
        # "Clients MUST treat cursors as opaque tokens:"
        # Spec: 2025-06-18/server/utilities/pagination#pagination-model.1
        # "Page size is determined by the server, and clients MUST NOT assume a fixed page size"
        self.items.extend(page)
        self._pages += 1
        # Spec: 2025-06-18/server/utilities/pagination#implementation-guidelines.2
        # "Clients SHOULD:"
        if next_cursor is None:
            self._cursor = self.DONE
            return
        if next_cursor in self._seen:
            raise RemoteProtocolError(f"server repeated cursor {next_cursor!r}")
        if self._pages >= self._max_pages:
            raise RemoteProtocolError(f"more than {self._max_pages} pages")
        self._seen.add(next_cursor)
        self._cursor = next_cursor

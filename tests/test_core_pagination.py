"""Cursors and pages (mcp_ref._pagination) at their edges: what tests/test_pagination.py
leaves open (exact page ends, offset 0, page size 1, the walker's default bound, the
error messages a peer reads).

Source: 2025-06-18/server/utilities/pagination (nextCursor absent on the last page;
invalid cursors -32602; the client treats cursors as opaque).
"""

from __future__ import annotations

import base64
import re
import zlib

import pytest

from mcp_ref import RemoteProtocolError
from mcp_ref._pagination import InvalidCursor, PageWalker, decode_cursor, encode_cursor, paginate


@pytest.mark.parametrize("offset", [0, 1, 9, 10, 99, 12345, 10**12])
def test_cursors_are_url_safe_tokens_that_round_trip(offset: int) -> None:
    cursor = encode_cursor("tools/list", offset)
    # URL-safe base64 without '=' padding: safe in a URL or a header as it is.
    assert re.fullmatch(r"[A-Za-z0-9_-]+", cursor)
    assert decode_cursor("tools/list", cursor) == offset


def test_a_cursor_is_the_list_fingerprint_and_the_offset() -> None:
    text = base64.urlsafe_b64decode(encode_cursor("t", 5) + "===").decode()
    assert text == f"{zlib.crc32(b't'):08x}:5"


def test_the_last_page_has_no_cursor_even_when_it_is_full() -> None:
    items = list(range(4))
    page, cursor = paginate(items, None, tag="t", page_size=2)
    assert page == [0, 1] and cursor is not None
    page, cursor = paginate(items, cursor, tag="t", page_size=2)
    assert page == [2, 3] and cursor is None
    assert paginate(items, None, tag="t", page_size=4) == ([0, 1, 2, 3], None)


def test_a_cursor_at_the_end_of_the_list_gives_an_empty_last_page() -> None:
    assert paginate([1, 2], encode_cursor("t", 2), tag="t") == ([], None)
    with pytest.raises(InvalidCursor) as caught:
        paginate([1, 2], encode_cursor("t", 3), tag="t")
    assert str(caught.value) == f"cursor points past the end of the list: {encode_cursor('t', 3)!r}"
    assert caught.value.code == -32602


def test_page_size_one_is_allowed_and_zero_is_not() -> None:
    assert paginate([1, 2], None, tag="t", page_size=1)[0] == [1]
    with pytest.raises(ValueError, match=r"^page_size must be at least 1$"):
        paginate([1, 2], None, tag="t", page_size=0)


def test_bad_cursors_say_why() -> None:
    with pytest.raises(InvalidCursor) as caught:
        decode_cursor("t", "!!!")
    assert str(caught.value) == "invalid cursor: '!!!'"
    other = encode_cursor("u", 1)
    with pytest.raises(InvalidCursor) as caught:
        decode_cursor("t", other)
    assert str(caught.value) == f"invalid cursor for this list: {other!r}"
    # A second ':' is not part of a fingerprint: the number after the first is bad.
    forged = base64.urlsafe_b64encode(f"{zlib.crc32(b't'):08x}:1:2".encode()).decode()
    with pytest.raises(InvalidCursor, match=r"^invalid cursor: "):
        decode_cursor("t", forged)
    negative = base64.urlsafe_b64encode(f"{zlib.crc32(b't'):08x}:-1".encode()).decode()
    with pytest.raises(InvalidCursor, match=r"^invalid cursor for this list: "):
        decode_cursor("t", negative)
    assert InvalidCursor("why").args == ("why",)


def test_the_walker_gives_up_after_1000_pages_by_default() -> None:
    walker = PageWalker()
    for n in range(999):
        walker.add_page([n], f"c{n}")
    with pytest.raises(RemoteProtocolError) as caught:
        walker.add_page([999], "c999")
    assert str(caught.value) == "more than 1000 pages"
    walker = PageWalker()
    walker.add_page([], "a")
    with pytest.raises(RemoteProtocolError) as caught:
        walker.add_page([], "a")
    assert str(caught.value) == "server repeated cursor 'a'"

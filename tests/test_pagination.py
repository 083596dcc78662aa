"""2025-06-18/server/utilities/pagination."""

from __future__ import annotations

import pytest

from mcp_ref import RemoteProtocolError
from mcp_ref._pagination import InvalidCursor, PageWalker, encode_cursor, paginate

spec = pytest.mark.spec


def test_pages_and_cursors() -> None:
    items = list(range(7))
    page, cur = paginate(items, None, tag="tools/list", page_size=3)
    assert page == [0, 1, 2] and cur is not None
    page, cur = paginate(items, cur, tag="tools/list", page_size=3)
    assert page == [3, 4, 5]
    page, cur = paginate(items, cur, tag="tools/list", page_size=3)
    assert page == [6] and cur is None
    assert paginate([], None, tag="x") == ([], None)


@spec("2025-06-18/server/utilities/pagination#error-handling.1")
@pytest.mark.parametrize(
    "cursor",
    ["", "!!!", "bm9wZQ", encode_cursor("prompts/list", 3), encode_cursor("tools/list", 99)],
)
def test_bad_cursor_is_32602(cursor: str) -> None:
    with pytest.raises(InvalidCursor) as exc:
        paginate(list(range(5)), cursor, tag="tools/list")
    assert exc.value.code == -32602


@spec("2025-06-18/server/utilities/pagination#implementation-guidelines.3")
def test_walker_passes_cursors_back_untouched_and_stops() -> None:
    items = list(range(10))
    walker = PageWalker()
    seen = []
    while (cursor := walker.next_cursor()) is not PageWalker.DONE:
        seen.append(cursor)
        page, nxt = paginate(items, cursor, tag="t", page_size=4)
        walker.add_page(page, nxt)
    assert walker.items == items and seen[0] is None and len(seen) == 3


def test_walker_refuses_a_repeated_cursor_and_bounds_pages() -> None:
    walker = PageWalker()
    walker.add_page([1], "a")
    with pytest.raises(RemoteProtocolError):
        walker.add_page([1], "a")
    walker = PageWalker(max_pages=2)
    walker.add_page([1], "a")
    with pytest.raises(RemoteProtocolError):
        walker.add_page([1], "b")


@spec("2025-06-18/server/utilities/pagination#pagination-model.1")
def test_walker_accepts_pages_of_any_size() -> None:
    # The server picks each page's size: a short first page, a longer one, an empty
    # page that still carries a cursor, then the rest.  Only the cursor ends the walk.
    pages = {None: ([1], "a"), "a": ([2, 3, 4, 5], "b"), "b": ([], "c"), "c": ([6, 7], None)}
    walker = PageWalker()
    asked = []
    while (cursor := walker.next_cursor()) is not PageWalker.DONE:
        asked.append(cursor)
        walker.add_page(*pages[cursor])
    assert asked == [None, "a", "b", "c"]
    assert walker.items == [1, 2, 3, 4, 5, 6, 7]


@spec("2025-06-18/server/utilities/pagination#implementation-guidelines.2")
def test_walker_treats_a_missing_cursor_as_the_end() -> None:
    # Non-paginated flow: one result without nextCursor is the whole list.
    walker = PageWalker()
    assert walker.next_cursor() is None
    walker.add_page(["a", "b"], None)
    assert walker.next_cursor() is PageWalker.DONE and walker.items == ["a", "b"]
    # Paginated flow: the walk goes on while a cursor comes back, and stops without one.
    walker = PageWalker()
    walker.add_page([1], "c1")
    assert walker.next_cursor() == "c1"
    walker.add_page([2], None)
    assert walker.next_cursor() is PageWalker.DONE and walker.items == [1, 2]

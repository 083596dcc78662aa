"""check_roots (mcp_ref._roots): the rule a client's roots meet before it exposes them.

Source: 2025-06-18/client/roots#root.1 ("MUST be a file:// URI"),
2025-06-18/client/roots#security-considerations.1 (validate root URIs to prevent path
traversal).
"""

from __future__ import annotations

import pytest

from mcp_ref import types as t
from mcp_ref._roots import check_roots


@pytest.mark.spec("2025-06-18/client/roots#root.1")
@pytest.mark.parametrize("uri", ["https://example.com/x", "FILE-ish:///x", "/no/scheme"])
def test_a_root_must_be_a_file_uri(uri: str) -> None:
    with pytest.raises(ValueError, match=r"a root must be a file:// URI, not '"):
        check_roots([t.Root(uri=uri)])


@pytest.mark.spec("2025-06-18/client/roots#security-considerations.1")
@pytest.mark.parametrize(
    "uri",
    [
        "file:///home/me/../etc",
        "file:///home/me/%2E%2E/etc",  # percent-decoded before the check
        "file:///..",
        "file://host/relative/../x",
        "file:relative/path",
    ],
)
def test_a_root_cannot_climb_out(uri: str) -> None:
    with pytest.raises(ValueError, match=r"an absolute path without '\.\.': '"):
        check_roots([t.Root(uri=uri)])


def test_good_roots_come_back_as_a_list_in_order() -> None:
    roots = (
        t.Root(uri="file:///home/me/project", name="project"),
        t.Root(uri="file:///tmp/a..b/c"),  # '..' inside a name is not a segment
        t.Root(uri="file:///srv/with%20space"),
    )
    checked = check_roots(roots)
    assert isinstance(checked, list)
    assert checked == list(roots)
    assert check_roots([]) == []


def test_the_first_bad_root_is_named() -> None:
    with pytest.raises(ValueError, match="ftp://a"):
        check_roots([t.Root(uri="file:///ok"), t.Root(uri="ftp://a"), t.Root(uri="http://b")])

"""What a stdio client decides about its child server, sans-IO
(``mcp_ref/_process_rules.py``): the arguments and environment, the stderr tail, the
account of the child's end.  No process is started here."""

from __future__ import annotations

import pytest

from mcp_ref._process_rules import (
    MAX_STDERR_LINE,
    StderrTail,
    check_command,
    check_options,
    child_env,
    describe_exit,
)

spec = pytest.mark.spec


def test_a_command_is_a_non_empty_list() -> None:
    check_command(["python", "server.py"])
    with pytest.raises(TypeError):
        check_command("python server.py")
    with pytest.raises(ValueError):
        check_command([])


def test_the_options_are_refused_before_anything_starts() -> None:
    check_options(["server"], "capture", 20, 2.0, 1.0)
    with pytest.raises(TypeError):
        check_options("server", "capture", 20, 2.0, 1.0)
    with pytest.raises(ValueError, match="stderr mode"):
        check_options(["server"], "tee", 20, 2.0, 1.0)
    with pytest.raises(ValueError, match="negative"):
        check_options(["server"], "discard", -1, 2.0, 1.0)
    with pytest.raises(ValueError, match="negative"):
        check_options(["server"], "discard", 20, 2.0, -0.5)


def test_the_childs_environment() -> None:
    ours = {"PATH": "/bin", "HOME": "/h"}
    assert child_env(ours, None, True) is None  # ours, unchanged
    assert child_env(ours, {"HOME": "/x"}, True) == {"PATH": "/bin", "HOME": "/x"}
    assert child_env(ours, {"A": "1"}, False) == {"A": "1"}
    assert child_env(ours, None, False) == {}


@spec("2025-06-18/basic/transports#stdio.3")
def test_the_stderr_tail_is_bounded_and_takes_any_chunking() -> None:
    data = b"one\r\ntwo\n" + b"x" * (MAX_STDERR_LINE + 50) + b"\nlast"
    whole = StderrTail(3)
    assert whole.feed(data) == ["one", "two", "x" * MAX_STDERR_LINE]
    assert whole.feed(b"") == ["last"]  # the end completes a line without a newline
    assert whole.feed(b"") == []
    bytewise = StderrTail(3)
    for i in range(len(data)):
        bytewise.feed(data[i : i + 1])
    bytewise.feed(b"")
    assert list(bytewise.lines) == list(whole.lines) == ["two", "x" * MAX_STDERR_LINE, "last"]
    assert StderrTail(1).feed(b"\xff\n") == ["\ufffd"]  # bad UTF-8 is replaced


def test_the_account_of_a_childs_end() -> None:
    assert describe_exit(7, None) == (
        "the server process (pid 7) closed its output and is still running"
    )
    assert describe_exit(7, 3, ["oops"]) == (
        "the server process exited with code 3; last stderr lines:\n  oops"
    )
    assert "killed by SIGKILL (exit code -9)" in describe_exit(7, -9)
    assert "killed by signal 99" in describe_exit(7, -99)

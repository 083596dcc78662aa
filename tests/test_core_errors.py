"""The core's exceptions carry their data (mcp_ref._errors).

Source: 2025-06-18/basic#responses (an error has a code, a message and optional data);
2025-06-18/basic/lifecycle#timeouts (the sender stops waiting: NoAnswerError).
"""

from __future__ import annotations

from mcp_ref import McpError, NoAnswerError
from mcp_ref._errors import REQUEST_TIMEOUT


def test_mcp_error_keeps_code_message_and_data() -> None:
    err = McpError(-32602, "bad params", {"field": "x"})
    assert (err.code, err.message, err.data) == (-32602, "bad params", {"field": "x"})
    assert str(err) == "bad params (code -32602)"
    assert McpError(-32603, "oops").data is None


def test_no_answer_error_is_a_timeout_mcp_error() -> None:
    err = NoAnswerError("tools/call", 2.5)
    assert isinstance(err, McpError)
    assert err.code == REQUEST_TIMEOUT == -32001
    assert err.message == "no answer to tools/call within 2.5 s"
    assert err.data == {"method": "tools/call", "elapsed": 2.5}
    assert (err.method, err.elapsed) == ("tools/call", 2.5)
    assert str(err) == "no answer to tools/call within 2.5 s (code -32001)"

"""The WebSocket close codes this transport sends and reports (RFC 6455 section 7.4.1),
and their names for log lines and ``SessionClosed`` reasons.  Both sides use them;
:mod:`.channel` re-exports the codes."""

from __future__ import annotations

from typing import Final

__all__ = [
    "CLOSE_ABNORMAL",
    "CLOSE_INVALID_DATA",
    "CLOSE_MESSAGE_TOO_BIG",
    "CLOSE_NORMAL",
    "CLOSE_PING_TIMEOUT",
    "CLOSE_PROTOCOL_ERROR",
    "CLOSE_UNSUPPORTED_DATA",
    "describe",
]

CLOSE_NORMAL: Final = 1000
"""Close code: the session ended normally."""
CLOSE_PROTOCOL_ERROR: Final = 1002
"""Close code: the peer broke RFC 6455 framing (unmasked frame, bad opcode, ...)."""
CLOSE_UNSUPPORTED_DATA: Final = 1003
"""Close code: a binary message (MCP messages are text)."""
CLOSE_ABNORMAL: Final = 1006
"""Not sent on the wire: the connection was lost without a close frame."""
CLOSE_INVALID_DATA: Final = 1007
"""Close code: a text message that is not valid UTF-8."""
CLOSE_MESSAGE_TOO_BIG: Final = 1009
"""Close code: a message over ``max_message_bytes``."""
CLOSE_PING_TIMEOUT: Final = 1011
"""Close code: no pong came back within ``ping_timeout`` (keepalive)."""

_CLOSE_NAMES: Final = {
    1000: "normal closure",
    1001: "going away",
    1002: "protocol error",
    1003: "unsupported data",
    1006: "connection lost without a close frame",
    1007: "invalid UTF-8",
    1008: "policy violation",
    1009: "message too big",
    1011: "internal error",
}


def describe(code: int, reason: str | None) -> str:
    """``"code 1009 (message too big): reason"``: a close code, its name when known, and
    the reason when one was given."""
    name = _CLOSE_NAMES.get(code)
    text = f"code {code}" + (f" ({name})" if name else "")
    return f"{text}: {reason}" if reason else text

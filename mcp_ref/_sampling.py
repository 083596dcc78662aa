"""The shape a sampling conversation must have (sans-IO, shared by the server that writes
one and the client that reads one).

A ``sampling/createMessage`` request carries the conversation so far.  With tool use
(2025-11-25 on), a ``tool_use`` block the model produced is answered by the server in
the next message, a user message of ``tool_result`` blocks only, one per tool use, with
its ``toolUseId``.  :func:`check_sampling_messages` checks those rules on the messages of
one request: the server before it sends them (:func:`mcp_ref.server.sampling`, behind
``ctx.sample``), the client before its handler sees them (:meth:`mcp_ref._client.
ClientCore.handle`, -32602).

Source: 2026-07-28/client/sampling (messages, tool result messages, tool use and result
balance, security considerations).
"""

from __future__ import annotations

from collections.abc import Sequence

from . import types as t

__all__ = ["check_sampling_messages"]


def _blocks(message: t.SamplingMessage) -> list[object]:
    content = message.content
    return list(content) if isinstance(content, list) else [content]


def check_sampling_messages(messages: Sequence[t.SamplingMessage]) -> None:
    """Check the messages of one ``sampling/createMessage`` request.

    Each message has the role ``user`` or ``assistant``; a user message holding a
    ``tool_result`` block holds nothing else; an assistant message holding ``tool_use``
    blocks is followed at once by a user message of ``tool_result`` blocks whose
    ``toolUseId`` values are exactly the ``id`` values of those tool uses (so the
    conversation cannot end on unanswered tool uses).

    Raises:
        ValueError: naming the first message (by index) that breaks a rule.

    Source: 2026-07-28/client/sampling#messages.1, #tool-result-messages.1,
    #tool-use-and-result-balance.1, #security-considerations.6.
    """
    for n, message in enumerate(messages):
        # Spec: 2026-07-28/client/sampling#messages.1
        # "Sampling messages MUST contain a `role` field of `'user'` or `'assistant'`; and a
        # `content` field representing the message data."
        if message.role not in ("user", "assistant"):
            raise ValueError(f"messages[{n}]: role must be 'user' or 'assistant'")
        blocks = _blocks(message)
        results = [b for b in blocks if isinstance(b, t.ToolResultContent)]
        # Spec: 2026-07-28/client/sampling#tool-result-messages.1
        # "When a user message contains tool results (type: 'tool_result'), it MUST contain ONLY
        # tool results."
        # Spec: 2025-11-25/client/sampling#tool-result-messages.1
        # "it MUST contain ONLY tool results."
        if results and (message.role != "user" or len(results) != len(blocks)):
            raise ValueError(f"messages[{n}]: tool results go alone in a user message")
        uses = [b.id for b in blocks if isinstance(b, t.ToolUseContent)]
        if not uses:
            continue
        # Spec: 2026-07-28/client/sampling#tool-use-and-result-balance.1
        # "When using tool use in sampling, every assistant message containing `ToolUseContent`
        # blocks MUST be followed by a user message that consists entirely of `ToolResultContent`
        # blocks, with each tool use (e.g. with `id: $id`) matched by a corresponding tool result
        # (with `toolUseId: $id`), before any other message."
        # Spec: 2025-11-25/client/sampling#tool-use-and-result-balance.1
        # "every assistant message containing `ToolUseContent` blocks MUST be followed by a
        # user message"
        # Spec: 2026-07-28/client/sampling#security-considerations.6
        # "Servers MUST ensure that when replying to a `stopReason: 'toolUse'`, each
        # `ToolUseContent` item is responded to with a `ToolResultContent` item with a matching
        # `toolUseId`, and that the user message contains only tool results (no other content
        # types)"
        # Spec: 2025-11-25/client/sampling#security-considerations.6
        # "each `ToolUseContent` item is responded to with a `ToolResultContent` item with a
        # matching `toolUseId`"
        answer = messages[n + 1] if n + 1 < len(messages) else None
        answered = (
            [b for b in _blocks(answer) if isinstance(b, t.ToolResultContent)] if answer else []
        )
        if answer is None or answer.role != "user" or not answered:
            raise ValueError(f"messages[{n + 1}]: must answer the tool uses of messages[{n}]")
        if sorted(b.tool_use_id for b in answered) != sorted(uses):
            raise ValueError(
                f"messages[{n + 1}]: its toolUseId values must match the tool uses of "
                f"messages[{n}] one for one"
            )

"""How many examples each property test runs, and the cap mutation testing puts on it.

A property test names its own count (``@settings(max_examples=examples(400))``): the count
a full run of the suite uses. Mutation testing (tracker issue 13, ``mutmut run``) runs the
core's tests once per mutant, about 4,800 times; there the environment variable
``MCP_REF_MAX_EXAMPLES`` caps every property test at that many examples, so that a mutant
that survives costs seconds, not minutes. Unset (every other run), the cap is off.

tests/mutation_score.md says which cap each recorded run used.
"""

from __future__ import annotations

import os

CAP: int | None = (
    int(os.environ["MCP_REF_MAX_EXAMPLES"]) if os.environ.get("MCP_REF_MAX_EXAMPLES") else None
)


def examples(count: int) -> int:
    """``count``, or the cap ``MCP_REF_MAX_EXAMPLES`` when that is set and smaller."""
    return count if CAP is None else min(count, CAP)

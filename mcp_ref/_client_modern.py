"""The client's part of the modern era (2026-07-28), sans-IO: the era, its probe, the
per-request log level, and the rounds of an ``input_required`` answer.

Theory of operation
-------------------
A client speaks one of two eras with a server (2026-07-28/basic/versioning): the
handshake (``initialize``) or, from 2026-07-28, the modern era, where every request
carries the version, ``clientInfo`` and ``clientCapabilities`` in its ``_meta``.  The
client core (:class:`mcp_ref._client.ClientCore`) chooses with ``era=``
(:data:`EraArg`); this module holds the pieces that choice needs, for every loop:

* :func:`choose_era` puts a client :class:`~mcp_ref.Connection` that has sent nothing
  (or only the probe) in the modern era or back in the handshake one;
* :func:`probe_era` reads the server's answer to the ``server/discover`` probe: a
  result or a modern error (-32020..-32022) is modern, anything else, or silence,
  legacy (2026-07-28/basic/transports/stdio#backward-compatibility);
* :func:`set_log_level` names a log level in every request's ``_meta`` from then on;
* :class:`InputRounds` answers ``input_required``: each input request goes to the
  client's handlers, and the request is sent again, with a new id, carrying the
  answers and the ``requestState`` unchanged, at most :data:`MAX_INPUT_ROUNDS` times
  (2026-07-28/basic/patterns/mrtr).

No I/O, no clock.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import attrs

from . import types as t
from ._connection import Connection
from ._errors import HEADER_MISMATCH, INTERNAL_ERROR, LocalProtocolError, McpError, NoAnswerError
from ._methods import METHODS
from ._modern import LOG_LEVEL_KEY, era_of_reply
from ._modern_connection import opening
from .events import ErrorResponse, RequestTimedOut

__all__ = [
    "DEFAULT_ERA",
    "MAX_INPUT_ROUNDS",
    "EraArg",
    "InputRounds",
    "TooManyInputRounds",
    "choose_era",
    "probe_era",
    "set_log_level",
]


EraArg = Literal["auto", "modern", "legacy"]
"""What a client's ``era=`` takes.

* ``"legacy"``: the handshake era (``initialize``, then ``notifications/initialized``;
  2024-11-05 to 2025-11-25), exactly as before 2026-07-28.
* ``"modern"``: 2026-07-28 pinned: no ``initialize``; every request carries the
  version, ``clientInfo`` and ``clientCapabilities`` in ``params._meta``; the server's
  capabilities come from ``server/discover`` (:meth:`Client.discover`) when needed.
* ``"auto"``: probe with ``server/discover`` first and stay modern if the server
  answers it (or with a modern error); fall back to the handshake on any other error
  or no answer (2026-07-28/basic/transports/stdio#backward-compatibility; on Streamable
  HTTP the probe's ``400`` body decides, #backward-compatibility there).
"""

DEFAULT_ERA: Final[EraArg] = "legacy"
"""The era a client opens in when given none.  ``"legacy"`` for now: a dual-era server
decides its era from the first request it reads, so the ``server/discover`` probe of
``"auto"`` makes a server without ``server/discover`` refuse the ``initialize`` of the
fallback; ``era="auto"`` is the choice once the server answers the probe."""

MAX_INPUT_ROUNDS: Final = 8
"""How many ``input_required`` results one request may get before the client gives up
(:class:`TooManyInputRounds`)."""


class TooManyInputRounds(McpError):
    """The server answered one request with ``input_required`` more than the bound
    allows (:data:`MAX_INPUT_ROUNDS`): the client stopped retrying.  An McpError with
    code -32603 that no server sent.

    Attributes:
        method: the request's method.
        rounds: how many ``input_required`` results came.
    """

    def __init__(self, method: str, rounds: int) -> None:
        super().__init__(
            INTERNAL_ERROR,
            f"{method}: the server asked for input {rounds} times; the client stopped "
            f"retrying (at most {rounds - 1} rounds)",
        )
        self.method = method
        self.rounds = rounds


# -- the era -------------------------------------------------------------------------


def choose_era(
    connection: Connection,
    era: Literal["modern", "legacy"],
    *,
    protocol_version: str | None = None,
    client_info: t.Implementation | None = None,
    capabilities: t.ClientCapabilities | None = None,
) -> None:
    """Put a client ``connection`` that has sent nothing yet (or only a probe that was
    answered or given up on) in ``era``: ``"modern"`` with ``protocol_version``,
    ``client_info`` and ``capabilities`` written in every request's ``_meta``, or
    ``"legacy"``, the handshake table from its first state (the fallback).

    The Connection is made by whoever owns it (the trio session makes it in the
    handshake era); this is the one place a client changes it.

    Raises:
        ValueError: not a client connection, or requests still in flight.

    Source: 2026-07-28/basic/versioning (the era is the peer's, chosen before the
    first request that counts).
    """
    from ._modern_connection import ModernEra  # (the connection's own helper)

    if connection.our_role.value != "client":
        raise ValueError("choose_era is for a client connection")
    if connection.requests_in_flight()[0]:
        raise ValueError("choose_era with requests in flight")
    conn: Any = connection  # its era fields are set here and by its constructor only
    conn.era, conn._transitions, conn.state = opening(connection.our_role, era)
    conn._send_plans.clear()
    if era == "modern":
        conn._modern = ModernEra(connection.our_role, protocol_version, client_info, capabilities)
        conn.protocol_version = conn._modern.protocol_version
        conn.capabilities[connection.our_role] = capabilities
    else:
        conn.protocol_version = None
        conn.capabilities[connection.our_role] = None


def set_log_level(connection: Connection, level: t.LoggingLevel) -> None:
    """Modern era: name ``level`` in the ``_meta`` of every request ``connection``
    sends from now (``io.modelcontextprotocol/logLevel``), so the server may send log
    messages at or above it while it answers them.

    Raises:
        LocalProtocolError: the connection is not in the modern era.

    Source: 2026-07-28/server/utilities/logging#per-request-log-level.
    """
    if connection.era != "modern":
        raise LocalProtocolError("the per-request log level is the modern era's")
    # Spec: 2026-07-28/server/utilities/logging#per-request-log-level.1
    # "The server MUST NOT emit `notifications/message` for a request that does not
    # include this field."
    meta: dict[str, Any] = connection._modern._meta  # (the modern era's own)
    meta[LOG_LEVEL_KEY] = level


def probe_era(outcome: Any) -> Literal["modern", "legacy"]:
    """The server's era from how it answered the ``server/discover`` probe:
    ``outcome`` is the result (or a Response), an McpError raised for an error
    response (or the ErrorResponse), or a RequestTimedOut / NoAnswerError (no answer).

    A result, or one of the modern error codes (-32020..-32022), is ``"modern"``;
    any other error, or no answer, ``"legacy"``.

    Source: 2026-07-28/basic/transports/stdio#backward-compatibility.
    """
    # Spec: 2026-07-28/basic/transports/stdio#backward-compatibility.2
    # "The fallback MUST NOT be keyed to one specific error code"
    if isinstance(outcome, (RequestTimedOut, NoAnswerError)):
        return "legacy"
    if isinstance(outcome, (McpError, ErrorResponse)):
        return era_of_reply({"error": {"code": outcome.code}})
    return "modern"


class InputRounds:
    """The rounds of one request the server answers with ``input_required``, for any
    loop::

        rounds = InputRounds(method, params)
        while isinstance(result := await send(method, params), t.InputRequiredResult):
            answers = {key: await answer(m, p) for key, (m, p) in rounds.asked(result)}
            params = rounds.retry(answers)

    Each retry is a new request (a new id) with the same params, ``inputResponses``
    holding the answers and ``requestState`` echoed exactly (absent when the server
    sent none); nothing of one request's rounds reaches another.

    Raises (from :meth:`asked`):
        TooManyInputRounds: more than ``max_rounds`` ``input_required`` results.

    Source: 2026-07-28/basic/patterns/mrtr#client-requirements-basic-workflow.
    """

    def __init__(self, method: str, params: Any, max_rounds: int = MAX_INPUT_ROUNDS) -> None:
        self.method = method
        self.params = params
        self.max_rounds = max_rounds
        self.rounds = 0
        self._state: str | None = None
        self._relisted = False

    def asked(self, result: t.InputRequiredResult) -> list[tuple[str, tuple[str, Any]]]:
        """The input requests of ``result`` as ``(key, (method, params))`` pairs, for
        :meth:`ClientCore.handle`; remembers its ``requestState`` for the retry.

        Raises:
            TooManyInputRounds: past the bound.
        """
        self.rounds += 1
        if self.rounds > self.max_rounds:
            raise TooManyInputRounds(self.method, self.rounds)
        # Spec: 2026-07-28/basic/patterns/mrtr#inputrequiredresult.1
        # "Clients MUST NOT inspect, parse, modify, or make any assumptions about its contents."
        # Spec: 2026-07-28/basic/patterns/mrtr#client-requirements-basic-workflow.4
        # "Clients MUST NOT inspect, parse, modify, or make any assumptions about the `requestState`
        # contents."
        self._state = result.request_state
        return [
            (key, (request.method, getattr(request, "params", None)))
            for key, request in (result.input_requests or {}).items()
        ]

    def relist(self, error: McpError) -> bool:
        """Whether to list the tools again and retry after ``error``: once, for a
        ``tools/call`` refused with -32020 (HeaderMismatch: the tool's ``x-mcp-header``
        annotations may have changed since it was listed).

        Source: 2026-07-28/basic/transports/streamable-http#client-behavior.2.
        """
        # Spec: 2026-07-28/basic/transports/streamable-http#client-behavior.2
        # "If the server rejects a request with a `HeaderMismatch` error because required
        # `Mcp-Param-*` headers are missing or do not match the body, the client SHOULD
        # call `tools/list` to check for changes to the tool's `inputSchema`, then retry
        # the original request with the appropriate headers."
        if error.code != HEADER_MISMATCH or self.method != "tools/call" or self._relisted:
            return False
        self._relisted = True
        return True

    def retry(self, answers: dict[str, Any]) -> Any:
        """The params of the retry: the original ones with ``inputResponses``
        (``answers``: key to result; None when empty) and ``requestState``."""
        # Spec: 2026-07-28/basic/patterns/mrtr#client-requirements-basic-workflow.3
        # "If an `InputRequiredResult` contains the `requestState` field, the client MUST
        # echo back the exact value of that field when retrying the original request."
        # Spec: 2026-07-28/basic/patterns/mrtr#client-requirements-basic-workflow.5
        # "If the `InputRequiredResult` does not contain a `requestState` field, the
        # client MUST NOT include one in the retry."
        params = self.params
        if params is None:
            params = METHODS[self.method].params_type()
        return attrs.evolve(params, input_responses=answers or None, request_state=self._state)

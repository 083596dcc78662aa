"""The integrity-protected ``requestState`` of multi round-trip requests (2026-07-28).

Theory of operation
-------------------
A modern server that needs input from the client (an elicitation, a sampling, the
client's roots) answers ``tools/call``, ``prompts/get`` or ``resources/read`` with an
``InputRequiredResult``; the client gathers the input and retries the *same* request
with ``inputResponses`` and the ``requestState`` it was given.  The server keeps
nothing between the two: whatever it must remember (the answers of earlier rounds, how
many rounds there were) travels inside ``requestState``, through the client.  The
client may change it, so the server signs it and checks the signature on the way back
(2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.7).

This module seals and opens such a state.  A state is the ASCII string::

    v1.<payload>.<mac>

``payload`` is the base64url (unpadded) of a compact JSON object, ``mac`` the base64url
of HMAC-SHA256 over ``v1.<payload>`` under the server's key.  The object holds:

* ``m``: the method of the request the state was issued on;
* ``d``: the SHA-256 of the request's salient params (:func:`params_digest`: the params
  without ``_meta``, ``inputResponses`` and ``requestState``, as canonical JSON), so a
  state cannot be replayed on another tool, prompt, resource or arguments;
* ``p``: the caller's identity when the server knows one (else absent), so one user's
  state cannot be replayed by another;
* ``e``: the expiry, whole seconds of the Unix epoch;
* ``r``: the number of rounds so far (the server bounds it);
* ``a``: the answers gathered so far, a JSON object keyed by input request id.

:func:`open_state` checks, in order: the shape, the MAC (constant-time), then the
binding (method, digest, principal), then the expiry; any failure raises
:class:`InvalidRequestState` naming the reason; the server answers it with -32602
(Invalid params).  The payload is not encrypted: the answers are the client's own, and
the spec lets the server choose the format (an opaque string to the client).

Bytes and strings in, strings and dicts out; the clock is an argument (``now``,
seconds since the epoch).  No I/O.

Source: 2026-07-28/basic/patterns/mrtr (server requirements, security considerations).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any, Final

import attrs

__all__ = [
    "MAX_STATE_LENGTH",
    "InvalidRequestState",
    "OpenedState",
    "open_state",
    "params_digest",
    "seal_state",
]

MAX_STATE_LENGTH: Final = 256 * 1024
"""The longest ``requestState`` (characters) :func:`open_state` reads."""

_VERSION: Final = "v1"
_UNBOUND: Final = frozenset({"_meta", "inputResponses", "requestState"})
"""Params keys that differ between rounds of one request, so are not bound."""


class InvalidRequestState(ValueError):
    """A ``requestState`` that fails verification.

    Attributes:
        reason: one of ``"malformed"``, ``"signature"``, ``"other request"``,
            ``"other principal"``, ``"expired"``.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@attrs.frozen(kw_only=True)
class OpenedState:
    """What a verified ``requestState`` carried."""

    rounds: int
    """Rounds answered with ``input_required`` before this request (>= 1)."""
    answers: dict[str, Any]
    """The answers of earlier rounds (JSON values), by input request id."""
    expires: int
    """When the state lapses, seconds since the epoch."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _canonical(value: Any) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def params_digest(params: Mapping[str, Any] | None) -> str:
    """The SHA-256 (hex) of a request's params JSON without the keys that change from
    round to round (``_meta``, ``inputResponses``, ``requestState``), as canonical JSON
    (sorted keys, no spaces).

    Raises:
        ValueError: a value JSON cannot hold (NaN, infinity).
    """
    salient = {k: v for k, v in (params or {}).items() if k not in _UNBOUND}
    return hashlib.sha256(_canonical(salient)).hexdigest()


def _mac(key: bytes, signed: str) -> str:
    return _b64(hmac.new(key, signed.encode("ascii"), hashlib.sha256).digest())


def seal_state(
    key: bytes,
    *,
    method: str,
    params: Mapping[str, Any] | None,
    answers: Mapping[str, Any],
    rounds: int,
    now: float,
    ttl: float,
    principal: str | None = None,
) -> str:
    """A signed ``requestState`` for the request ``method`` with ``params`` (its JSON).

    Args:
        key: the HMAC key (at least 16 bytes, else ValueError).
        answers: the answers gathered so far (JSON values) by input request id.
        rounds: rounds answered with ``input_required`` so far, this one included.
        now: the current time, seconds since the epoch.
        ttl: seconds the state stays valid (> 0, else ValueError).
        principal: the caller's identity, if the server knows one.

    Raises:
        ValueError: a short key, a non-positive ``ttl``, or a state longer than
            :data:`MAX_STATE_LENGTH` (too many or too large answers to carry).

    Source: 2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.9.
    """
    if len(key) < 16:
        raise ValueError("the requestState key must be at least 16 bytes")
    if ttl <= 0:
        raise ValueError("ttl must be positive")
    # Spec: 2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.9
    # "To prevent replay, servers SHOULD include the following inside the
    # integrity-protected `requestState` payload and verify each on receipt:"
    body: dict[str, Any] = {
        "m": method,
        "d": params_digest(params),
        "e": int(now + ttl) + 1,
        "r": rounds,
        "a": dict(answers),
    }
    if principal is not None:
        body["p"] = principal
    signed = f"{_VERSION}.{_b64(_canonical(body))}"
    state = f"{signed}.{_mac(key, signed)}"
    if len(state) > MAX_STATE_LENGTH:
        raise ValueError(
            f"the requestState would be {len(state)} characters, over {MAX_STATE_LENGTH}"
        )
    return state


def open_state(
    key: bytes,
    state: str,
    *,
    method: str,
    params: Mapping[str, Any] | None,
    now: float,
    principal: str | None = None,
) -> OpenedState:
    """Verify a ``requestState`` the client sent back with ``method`` and ``params``.

    Raises:
        InvalidRequestState: not one of ours or unreadable (``malformed``), a MAC that
            does not match (``signature``), issued for another method or params
            (``other request``) or caller (``other principal``), or lapsed
            (``expired``).

    Source: 2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.6 and .7.
    """
    # Spec: 2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.6
    # "If a client request contains a `requestState` field, servers MUST treat
    # `requestState` as an attacker-controlled input."
    if len(state) > MAX_STATE_LENGTH or not state.isascii():
        raise InvalidRequestState("malformed", "requestState is not one this server issued")
    parts = state.split(".")
    if len(parts) != 3 or parts[0] != _VERSION:
        raise InvalidRequestState("malformed", "requestState is not one this server issued")
    signed = f"{parts[0]}.{parts[1]}"
    # Spec: 2026-07-28/basic/patterns/mrtr#security-considerations.1
    # "Servers MUST validate request state as described in the server requirements
    # above."
    # Spec: 2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.7
    # "If `requestState` influences authorization, resource access, or business logic,
    # servers MUST protect its integrity (e.g. HMAC or AEAD) and MUST reject state that
    # fails verification."
    if not hmac.compare_digest(_mac(key, signed), parts[2]):
        raise InvalidRequestState("signature", "requestState failed its integrity check")
    try:
        body = json.loads(_unb64(parts[1]))
    except (binascii.Error, ValueError):
        raise InvalidRequestState("malformed", "requestState payload is unreadable") from None
    if (
        type(body) is not dict
        or type(body.get("e")) is not int
        or type(body.get("r")) is not int
        or type(body.get("a")) is not dict
    ):
        raise InvalidRequestState("malformed", "requestState payload is unreadable")
    if body.get("m") != method or body.get("d") != params_digest(params):
        raise InvalidRequestState("other request", "requestState was issued for another request")
    if body.get("p") != principal:
        raise InvalidRequestState("other principal", "requestState was issued to another caller")
    if now >= body["e"]:
        raise InvalidRequestState("expired", "requestState has expired")
    return OpenedState(rounds=body["r"], answers=body["a"], expires=body["e"])

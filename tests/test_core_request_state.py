"""The signed requestState of multi round-trip requests (mcp_ref._request_state): what a
server seals, it opens again; anything changed, replayed on another request or caller,
or late, is refused.  (2026-07-28/basic/patterns/mrtr)"""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_ref._request_state import (
    MAX_STATE_LENGTH,
    InvalidRequestState,
    open_state,
    params_digest,
    seal_state,
)

spec = pytest.mark.spec

KEY = b"k" * 32
PARAMS = {"name": "greet", "arguments": {"who": "Ada"}}
NOW = 1_800_000_000.0


def _seal(**kw: object) -> str:
    args: dict[str, object] = dict(
        method="tools/call", params=PARAMS, answers={"a": {"action": "accept"}}, rounds=1
    )
    args.update(kw)
    return seal_state(KEY, now=NOW, ttl=60, **args)  # type: ignore[arg-type]


def _reason(state: str, **kw: object) -> str:
    args: dict[str, object] = dict(method="tools/call", params=PARAMS, now=NOW + 1)
    args.update(kw)
    with pytest.raises(InvalidRequestState) as info:
        open_state(KEY, state, **args)  # type: ignore[arg-type]
    return info.value.reason


def test_round_trip_carries_answers_and_rounds() -> None:
    opened = open_state(KEY, _seal(), method="tools/call", params=PARAMS, now=NOW + 1)
    assert opened.answers == {"a": {"action": "accept"}}
    assert opened.rounds == 1
    assert opened.expires > NOW + 60


def test_unbound_keys_do_not_change_the_binding() -> None:
    # The retry carries other _meta, inputResponses and requestState: still the same request.
    retry = {**PARAMS, "_meta": {"x": 1}, "inputResponses": {"a": {}}, "requestState": "s"}
    assert params_digest(retry) == params_digest(PARAMS)
    assert open_state(KEY, _seal(), method="tools/call", params=retry, now=NOW).rounds == 1


@spec("2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.7")
@pytest.mark.parametrize("where", [4, 10, -3])
def test_a_changed_character_fails_the_integrity_check(where: int) -> None:
    state = _seal()
    flipped = "A" if state[where] != "A" else "B"
    tampered = state[:where] + flipped + state[where + 1 :]
    assert _reason(tampered) in ("signature", "malformed")


@spec(
    "2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.7",
    "2026-07-28/basic/patterns/mrtr#security-considerations.1",
)
def test_a_rewritten_payload_fails_even_when_well_formed() -> None:
    version, payload, mac = _seal().split(".")
    body = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    body["a"] = {"a": {"action": "accept", "content": {"admin": True}}}
    forged = base64.urlsafe_b64encode(json.dumps(body).encode()).rstrip(b"=").decode()
    assert _reason(f"{version}.{forged}.{mac}") == "signature"


@spec("2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.6")
@pytest.mark.parametrize(
    "state", ["", "abc", "v1.x", "v2.a.b", "v1.a.b.c", "v1.é.x", "x" * (MAX_STATE_LENGTH + 1)]
)
def test_garbage_is_refused(state: str) -> None:
    assert _reason(state) == "malformed"


@spec(
    "2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.7",
    "2026-07-28/basic/patterns/mrtr#security-considerations.1",
)
def test_another_key_is_a_forgery() -> None:
    other = seal_state(
        b"o" * 32, method="tools/call", params=PARAMS, answers={}, rounds=1, now=NOW, ttl=60
    )
    assert _reason(other) == "signature"


@spec("2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.9")
def test_replay_on_another_method_or_params_is_refused() -> None:
    state = _seal()
    assert _reason(state, method="prompts/get") == "other request"
    assert _reason(state, params={**PARAMS, "arguments": {"who": "Bob"}}) == "other request"
    assert _reason(state, params={**PARAMS, "name": "other"}) == "other request"


@spec("2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.9")
def test_replay_by_another_principal_is_refused() -> None:
    state = _seal(principal="alice")
    assert _reason(state, principal="bob") == "other principal"
    assert _reason(state) == "other principal"  # issued to alice, presented anonymously
    assert (
        open_state(
            KEY, state, method="tools/call", params=PARAMS, now=NOW, principal="alice"
        ).rounds
        == 1
    )


@spec("2026-07-28/basic/patterns/mrtr#server-requirements-basic-workflow.9")
def test_a_lapsed_state_is_refused() -> None:
    state = _seal()
    open_state(KEY, state, method="tools/call", params=PARAMS, now=NOW + 60)
    assert _reason(state, now=NOW + 62) == "expired"


def test_bad_arguments_to_seal() -> None:
    with pytest.raises(ValueError, match="over"):
        _seal(answers={"big": "x" * MAX_STATE_LENGTH})
    with pytest.raises(ValueError):
        seal_state(b"short", method="m", params={}, answers={}, rounds=1, now=NOW, ttl=60)
    with pytest.raises(ValueError):
        seal_state(KEY, method="m", params={}, answers={}, rounds=1, now=NOW, ttl=0)


def test_the_state_is_ascii_and_opaque_three_parts() -> None:
    state = _seal()
    assert state.isascii() and state.count(".") == 2 and state.startswith("v1.")


@given(st.text(max_size=300))
def test_any_string_opens_or_is_refused_never_anything_else(state: str) -> None:
    try:
        open_state(KEY, state, method="tools/call", params=PARAMS, now=NOW)
    except InvalidRequestState:
        pass


@given(st.integers(min_value=0, max_value=10_000), st.binary(min_size=1, max_size=8))
def test_any_change_of_a_sealed_state_is_refused(where: int, junk: bytes) -> None:
    state = _seal()
    at = where % len(state)
    changed = state[:at] + junk.hex() + state[at + 1 :]
    if changed == state:
        return
    with pytest.raises(InvalidRequestState):
        open_state(KEY, changed, method="tools/call", params=PARAMS, now=NOW)

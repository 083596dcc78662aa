"""Keepalive: ping a silent peer, and end the session when it stops answering.

Theory of operation
-------------------
A session opened with ``keepalive=Keepalive(interval=...)`` runs one more task, which
watches when input last came from the peer (:attr:`Session.last_input_at`).  After
``interval`` seconds of silence it sends ``ping`` with its own ``timeout``.  Any answer
counts, even an error response.  An unanswered ping is logged; ``max_failures`` in a row
end the session like a broken connection.  A busy session never pings, and a ping the
lifecycle refuses (during the handshake, or while closing) waits for the next interval.

Source: 2025-06-18/basic/utilities/ping#implementation-considerations and #error-handling.
"""

from __future__ import annotations

import logging

import attrs
import trio

from .._errors import LocalProtocolError, McpError, NoAnswerError
from .._inflight import RequestTimeout
from ._outgoing import SessionClosed
from ._session_api import Session

__all__ = ["Keepalive", "run_keepalive"]

log = logging.getLogger("mcp_ref.trio")


def _positive(instance: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value > 0:
        raise ValueError(f"Keepalive.{attribute.name} must be > 0, not {value!r}")


@attrs.frozen(kw_only=True)
class Keepalive:
    """When a session pings its peer, and when it gives up on it.

    Attributes:
        interval: seconds of silence from the peer before a ping (> 0).
        timeout: seconds to wait for the answer to one ping (> 0; default 10).
        max_failures: unanswered pings in a row that end the session (>= 1; default 2).

    Raises:
        ValueError: a value out of range.

    Source: 2025-06-18/basic/utilities/ping#implementation-considerations.2 (the
    frequency is configurable) and #implementation-considerations.3 (so are timeouts).
    """

    # Spec: 2025-06-18/basic/utilities/ping#implementation-considerations.2
    # "The frequency of pings SHOULD be configurable"
    interval: float = attrs.field(validator=_positive)
    # Spec: 2025-06-18/basic/utilities/ping#implementation-considerations.3
    # "Timeouts SHOULD be appropriate for the network environment"
    timeout: float = attrs.field(default=10.0, validator=_positive)
    max_failures: int = attrs.field(default=2)

    @max_failures.validator
    def _check_failures(self, attribute: attrs.Attribute[int], value: int) -> None:
        if value < 1:
            raise ValueError(f"Keepalive.max_failures must be >= 1, not {value!r}")


async def run_keepalive(session: Session, keepalive: Keepalive) -> None:
    """Ping ``session``'s peer after each ``keepalive.interval`` seconds of silence
    until the session closes; close it after ``max_failures`` unanswered pings.

    One of the session's tasks; returns when the session is closed.  Never raises.

    Source: 2025-06-18/basic/utilities/ping#implementation-considerations.1 and
    2025-06-18/basic/utilities/ping#error-handling.1.
    """
    failures = 0
    not_before = session.last_input_at
    while not session.closed:
        heard = session.last_input_at
        # Spec: 2025-06-18/basic/utilities/ping#implementation-considerations.4
        # "Excessive pinging SHOULD be avoided to reduce network overhead"
        # (no ping while the peer is talking: each input restarts the wait)
        await trio.sleep_until(max(heard, not_before) + keepalive.interval)
        if session.closed:
            return
        if session.last_input_at != heard:
            continue
        not_before = trio.current_time()  # at most one ping per interval, whatever happens
        try:
            # Spec: 2025-06-18/basic/utilities/ping#implementation-considerations.1
            # "Implementations SHOULD periodically issue pings to detect connection health"
            await session.send_request("ping", timeout=RequestTimeout(seconds=keepalive.timeout))
        except NoAnswerError:
            failures += 1
            # Spec: 2025-06-18/basic/utilities/ping#error-handling.3
            # "Implementations SHOULD log ping failures for diagnostics"
            log.warning(
                "%s session: no answer to ping within %.3g s (%d of %d)",
                session.role.value,
                keepalive.timeout,
                failures,
                keepalive.max_failures,
            )
            if failures >= keepalive.max_failures:
                # Spec: 2025-06-18/basic/utilities/ping#error-handling.1
                # "Timeouts SHOULD be treated as connection failures"
                # Spec: 2025-06-18/basic/utilities/ping#error-handling.2
                # "Multiple failed pings MAY trigger connection reset"
                session.abort(
                    f"the peer did not answer {failures} ping(s) "
                    f"(timeout {keepalive.timeout:.3g} s each): connection considered lost"
                )
                return
        except McpError:
            failures = 0  # an error response (even -32001) is still an answer
        except LocalProtocolError as exc:  # the lifecycle refuses a ping now: try later
            log.debug("keepalive ping not sent: %s", exc)
        except SessionClosed:
            return
        else:
            failures = 0

"""Keepalive: ping a silent peer, and end the session when it stops answering.

Theory of operation
-------------------
A session opened with ``keepalive=Keepalive(...)`` runs :func:`run_keepalive` as one
more task; when a ping is due, and when the misses end the session, is the core's
(:class:`mcp_ref._session_rules.Keepalive`).
It sleeps until then and pings only if the peer stayed silent: a busy session never
pings.  Any answer counts, even an error; ``max_failures`` unanswered pings in a row
end the session like a broken connection.  A ping the lifecycle refuses (during the
handshake, or while closing) waits for the next interval.
"""

from __future__ import annotations

import logging

import trio

from .._errors import LocalProtocolError, McpError, NoAnswerError
from .._inflight import RequestTimeout
from .._session_rules import Keepalive
from ._session_api import Session, SessionClosed

__all__ = ["run_keepalive"]

log = logging.getLogger("mcp_ref.trio")


async def run_keepalive(session: Session, keepalive: Keepalive) -> None:
    """The keepalive task of ``session`` (module docstring); returns when the session is
    closed, never raises.  Source: 2025-06-18/basic/utilities/ping#error-handling."""
    failures = 0
    pinged_at = session.last_input_at
    while not session.closed:
        heard = session.last_input_at
        await trio.sleep_until(keepalive.next_ping_at(heard, pinged_at))
        if session.closed:
            return
        if session.last_input_at != heard:  # the peer talked meanwhile: wait again
            continue
        pinged_at = trio.current_time()
        try:
            # Spec: 2025-06-18/basic/utilities/ping#implementation-considerations.1
            # "Implementations SHOULD periodically issue pings to detect connection health"
            await session.send_request("ping", timeout=RequestTimeout(seconds=keepalive.timeout))
        except NoAnswerError:
            failures += 1
            note, lost = keepalive.missed(failures)
            log.warning("%s session: %s", session.role.value, note)
            if lost is not None:
                session.abort(lost)
                return
        except McpError:
            failures = 0  # an error response (even -32001) is still an answer
        except LocalProtocolError as exc:  # the lifecycle refuses a ping now: try later
            log.debug("keepalive ping not sent: %s", exc)
        except SessionClosed:
            return
        else:
            failures = 0

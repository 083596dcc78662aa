"""One request of the Streamable HTTP server (:mod:`.server`): reading its body, and
writing a response without a stream (a refusal, 202, 200 for a DELETE).

Theory of operation
-------------------
What the server decides about a request is sans-IO (:mod:`mcp_ref._http_server`): each
decision is a value or the :class:`~mcp_ref._http.HttpError` to answer with.  The
driver's functions pass an error up as :class:`Refused` (:func:`checked`), and the
connection (:mod:`.connection`) answers with it (:func:`send_error`).
"""

from __future__ import annotations

import http
from typing import Any, TypeVar

import h11
import trio

from ..._http import HttpError, HttpLimits, http_error
from ..._http_server import RequestHeaders, check_body_headers
from .common import CONNECTION_CLOSE, H11Stream

__all__ = ["Refused", "checked", "read_body", "send_error", "send_simple"]

_T = TypeVar("_T")


class Refused(Exception):
    """The request is refused with ``error`` (its status, headers and body)."""

    def __init__(self, error: HttpError) -> None:
        super().__init__(error.detail)
        self.error = error


def checked(value: _T | HttpError) -> _T:
    """``value``, unless it is an :class:`~mcp_ref._http.HttpError` (a sans-IO
    decision to refuse the request).

    Raises:
        Refused: carrying that error.
    """
    if isinstance(value, HttpError):
        raise Refused(value)
    return value


async def read_body(h: H11Stream, headers: RequestHeaders, limits: HttpLimits) -> bytes:
    """The request's body, read whole (after ``100 Continue`` when asked for).

    Raises:
        Refused: a bad ``Content-Type`` or ``Content-Length`` (415, 400, 413), a body
            past ``limits.max_body_bytes`` (413) or not received in
            ``limits.idle_timeout_seconds`` (408).
        trio.BrokenResourceError: the client went away during the body.
    """
    checked(check_body_headers(headers, limits))
    if h.conn.they_are_waiting_for_100_continue:
        await h.send(h11.InformationalResponse(status_code=100, headers=[]))
    chunks: list[bytes] = []
    size = 0

    def add(event: Any) -> bool:
        """Take one body event; True at its end."""
        nonlocal size
        if isinstance(event, h11.Data):
            chunks.append(event.data)
            size += len(event.data)
            if size > limits.max_body_bytes:
                raise Refused(
                    http_error(413, f"body larger than {limits.max_body_bytes} bytes", clause=None)
                )
            return False
        if isinstance(event, h11.EndOfMessage):
            return True
        raise trio.BrokenResourceError("the client went away during the body")

    # Usually the body came with the head: no waiting, no timer.
    while (event := h.conn.next_event()) is not h11.NEED_DATA:
        if add(event):
            return _joined(chunks)
    with trio.move_on_after(limits.idle_timeout_seconds) as scope:
        while not add(await h.next_event()):
            pass
        return _joined(chunks)
    assert scope.cancelled_caught
    raise Refused(http_error(408, "request body not received in time", clause=None))


def _joined(chunks: list[bytes]) -> bytes:
    """The body from its chunks (h11 gives ``bytes`` or ``bytearray``; no copy of one
    ``bytes`` chunk)."""
    if len(chunks) == 1 and type(chunks[0]) is bytes:
        return chunks[0]
    return b"".join(chunks)


def _reason(status: int) -> bytes:
    try:
        return http.HTTPStatus(status).phrase.encode("ascii")
    except ValueError:
        return b""


async def send_simple(
    h: H11Stream, status: int, headers: list[tuple[bytes, bytes]], last: bool
) -> None:
    """Write a response without body (``Connection: close`` when ``last``)."""
    if last:
        headers = [*headers, CONNECTION_CLOSE]
    await h.send(
        h11.Response(status_code=status, headers=headers, reason=_reason(status)),
        h11.EndOfMessage(),
    )


async def send_error(h: H11Stream, err: HttpError, *, close: bool) -> None:
    """Write the response of ``err`` (``Connection: close`` when ``close``)."""
    headers = list(err.headers)
    if close:
        headers.append(CONNECTION_CLOSE)
    response = h11.Response(status_code=err.status, headers=headers, reason=err.reason)
    if err.body:
        await h.send(response, h11.Data(data=err.body), h11.EndOfMessage())
    else:
        await h.send(response, h11.EndOfMessage())

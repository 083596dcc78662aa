"""Refusals and bodiless answers of the Streamable HTTP server (:mod:`.server`).

Theory of operation
-------------------
What the server decides about a request is sans-IO (:mod:`mcp_ref._http_server`): each
decision is a value or the :class:`~mcp_ref._http.HttpError` to answer with.  The
driver's functions pass an error up as :class:`Refused` (:func:`checked`), and the
connection (:mod:`.connection`) answers with it.  :func:`send_simple` writes a
response without a body (202, 200 for a DELETE).
"""

from __future__ import annotations

import http
from typing import TypeVar

import h11

from ..._http import HttpError
from .common import CONNECTION_CLOSE, H11Stream

__all__ = ["Refused", "checked", "send_simple"]

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

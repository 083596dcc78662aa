"""The protocol versions mcp-ref speaks, and the ``initialize`` negotiation between them.

A client asks for a version in ``initialize`` (the newest it speaks, by default); the
server answers the same one when it speaks it, else its own newest; a client that does
not speak the answer disconnects (the client core's rule).  The functions here say what
each side may ask and answer, so the Connection refuses a wrong ``initialize`` or answer
before it is sent.  The 2026-07-28 revision negotiates nothing: its version travels in
every request's ``_meta`` (:mod:`mcp_ref._modern`).

Source: 2025-06-18/basic/lifecycle#version-negotiation.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "SUPPORTED_VERSIONS",
    "accept_refusal",
    "answer_refusal",
    "ask_refusal",
    "check_version",
    "negotiate_version",
]

SUPPORTED_VERSIONS: Final = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
"""Protocol revisions mcp-ref speaks, newest first."""

# Spec: 2025-06-18/basic/lifecycle#version-negotiation.2
# "This SHOULD be the latest version supported by the client."
# (the clients' default protocol_version; a client asks for our newest revision)
LATEST_PROTOCOL_VERSION: Final = SUPPORTED_VERSIONS[0]
"""The revision a client asks for by default and a server falls back to."""


def negotiate_version(requested: str) -> str:
    """The version a server answers to an ``initialize`` asking for ``requested``: the
    same when supported (see :func:`answer_refusal`), else the latest."""
    # Spec: 2025-06-18/basic/lifecycle#version-negotiation.5
    # "This SHOULD be the latest version supported by the server."
    return requested if requested in SUPPORTED_VERSIONS else LATEST_PROTOCOL_VERSION


def ask_refusal(version: str) -> str | None:
    """Why a client may not ask for ``version`` in its ``initialize``; None when it may.
    Source: 2025-06-18/basic/lifecycle#version-negotiation.1."""
    # Spec: 2025-06-18/basic/lifecycle#version-negotiation.1
    # "In the `initialize` request, the client MUST send a protocol version it supports."
    if version not in SUPPORTED_VERSIONS:
        return f"initialize must ask for a version we support, not {version!r}"
    return None


def answer_refusal(requested: str | None, version: str) -> str | None:
    """Why a server may not answer an ``initialize`` asking for ``requested`` with
    ``version``; None when it may."""
    # Spec: 2025-06-18/basic/lifecycle#version-negotiation.3
    # "If the server supports the requested protocol version, it MUST respond with the same
    # version."
    if requested in SUPPORTED_VERSIONS and version != requested:
        return f"the client asked for {requested}, which we support: answer it, not {version}"
    # Spec: 2025-06-18/basic/lifecycle#version-negotiation.4
    # "Otherwise, the server MUST respond with another protocol version it supports."
    if version not in SUPPORTED_VERSIONS:
        return f"cannot answer with unsupported version {version!r}"
    return None


def accept_refusal(version: str) -> str | None:
    """Why a client may not accept an ``initialize`` result naming ``version`` (it then
    disconnects); None when it may.
    Source: 2025-06-18/basic/lifecycle#version-negotiation.6."""
    if version not in SUPPORTED_VERSIONS:
        return (
            f"server answered protocol version {version!r}, which mcp-ref does not "
            f"support ({', '.join(SUPPORTED_VERSIONS)}); disconnect"
        )
    return None


def check_version(version: str) -> str:
    """``version`` if mcp-ref speaks it, else ValueError naming the supported ones."""
    if version not in SUPPORTED_VERSIONS:
        raise ValueError(
            f"protocol version {version!r} is not supported; use one of "
            + ", ".join(SUPPORTED_VERSIONS)
        )
    return version

"""Guess whom a normative sentence binds, from its wording.

Theory of operation
-------------------
A clause binds one of:

``client`` / ``server``
    one side of the protocol, as implemented by a protocol library;
``both``
    either side ("implementations", "both parties", "the sender", "receivers");
``transport``
    the wire format of a transport, whoever writes it ("messages MUST NOT contain
    embedded newlines", "the session ID MUST only contain visible ASCII");
``host``
    the host application, its user interface or its user-facing behaviour ("Applications
    SHOULD provide UI...", "clients SHOULD prompt users for consent") -- not something a
    protocol library can do on its own;
``unknown``
    nothing in the text or the page told us.

The rules, in order:

1. Host wording anywhere in the sentence or its list (user interface, UI, human in
   the loop, consent, confirmation prompts, "the user", "Applications") makes it
   ``host``, unless it is only an aside in parentheses.
2. Otherwise the subject -- the words before the first keyword -- decides: it names a
   client, a server, both, or a transport artefact (message, stream, header, session
   ID, request body).
3. A subject that is a pronoun or a demonstrative ("it MUST", "This SHOULD") takes the
   binding of the clause before it in the same section.
4. Otherwise the page decides: ``server/*`` pages bind the server (they describe what a
   server offers), ``client/*`` pages the client, ``basic/transports`` the transport,
   and the remaining pages both sides.

The result carries a short ``why`` so a reader can see which rule fired.
"""

from __future__ import annotations

import re

__all__ = ["BINDS", "LIBRARY_BINDS", "guess_binds"]

BINDS = ("client", "server", "both", "transport", "host", "unknown")
"""Every value of ``Clause.binds``."""

LIBRARY_BINDS = frozenset({"client", "server", "both", "transport", "unknown"})
"""Bindings a protocol library answers for (``unknown`` counted in, to be safe)."""

_HOST_SUBJECT = re.compile(
    r"^\W*(?:there\b|(?:\w+ )?applications?\b|(?:the |mcp )?hosts?\b(?! component))",
    re.IGNORECASE,
)
_HOST = re.compile(
    r"\b(user interfaces?|UI|UIs|human in the loop|application UIs?|host applications?|"
    r"(?:prompt|inform|notify|allow|ask) users?|(?:to|for|from) the user\b(?! agent)|"
    r"users? (?:consent|approval|confirmation|control)|obtain user consent|"
    r"confirmation prompts?|visual indicators?|display(?:ed|s)? to|clear indication|"
    r"present \w+(?: \w+)? requests)\b",
    re.IGNORECASE,
)
_KEYWORD = re.compile(r"\b(MUST|SHALL|SHOULD|REQUIRED|RECOMMENDED|MAY|OPTIONAL)\b")
_BOTH = re.compile(
    r"\b(both|either (?:side|party|peer)|implementations?|implementers?|implementors?|sdks?|parties|party|sender|"
    r"senders|receivers?|recipients?|requestor|the requester|clients and servers|"
    r"client and server|servers and clients|server and client|clients or servers|"
    r"client or server|middleware)\b",
    re.IGNORECASE,
)
_CODE = re.compile(r"`[^`]*`")
_AGENT = re.compile(r"\bby (?:the |mcp )?((?:clients?|servers?)\b)", re.IGNORECASE)
_CLIENT = re.compile(r"\bclients?\b", re.IGNORECASE)
_SERVER = re.compile(r"\bservers?\b", re.IGNORECASE)
_TRANSPORT = re.compile(
    r"\b(messages?|json-rpc|stream|body|header|session id|id|event|encoded|"
    r"transports?|endpoint|sse)\b",
    re.IGNORECASE,
)
_PRONOUN = re.compile(
    r"^(?:\W*)(?:it|this|these|they|that|such|those|the same)\b|(?:,|;|\band)\s+it\s*$",
    re.IGNORECASE,
)


def _without_asides(text: str) -> str:
    return re.sub(r"\([^()]*\)", "", text)


def _actor(part: str) -> tuple[str, str] | None:
    both = _BOTH.search(part)
    client = _CLIENT.search(part)
    server = _SERVER.search(part)
    if both or (client and server):
        what = both.group(0) if both else "client and server"
        return "both", f"subject: {what!r}"
    if client:
        return "client", f"subject: {client.group(0)!r}"
    if server:
        return "server", f"subject: {server.group(0)!r}"
    return None


def _first_actor(part: str) -> tuple[str, str] | None:
    hits = [(m.start(), "client", m.group(0)) for m in _CLIENT.finditer(part)]
    hits += [(m.start(), "server", m.group(0)) for m in _SERVER.finditer(part)]
    if not hits:
        return None
    _, who, word = min(hits)
    return who, f"pronoun after {word!r}"


def guess_binds(
    text: str, *, detail: tuple[str, ...] = (), page: str, previous: str | None = None
) -> tuple[str, str]:
    """Decide whom a clause binds.

    Args:
        text: the clause sentence as plain text.
        detail: the list items the sentence introduces, if any.
        page: the page path (``server/tools``), for the page fallback.
        previous: the binding of the clause before it in the same section, if any.

    Returns:
        ``(binds, why)``: one of :data:`BINDS`, and the rule and words that decided it.
    """
    if page == "changelog":
        return "unknown", "changelog: keywords are quoted, not imposed"
    text = _CODE.sub("code", text)
    body = _without_asides(" ".join((text, *detail)))
    m = _KEYWORD.search(text)
    subject = _without_asides(text[: m.start()] if m else text)
    host = _HOST_SUBJECT.search(subject) or _HOST.search(body)
    if host:
        return "host", f"host wording: {host.group(0).strip()!r}"
    # Only the last clause of the subject counts ("If the server ..., the client MUST").
    tail = re.split(r",|;|\bif\b|\bwhen\b|\bafter\b", subject, flags=re.IGNORECASE)[-1]
    actor = _actor(tail)
    if actor is not None:
        return actor
    if _PRONOUN.search(tail):
        first = _first_actor(subject)
        if first is not None:
            return first
        if previous is not None:
            return previous, "pronoun: same as the clause before"
    actor = _actor(subject)
    if actor is not None:
        return actor
    agent = _AGENT.search(text[m.end() :] if m else "")
    if agent:
        return _actor(agent.group(1)) or ("both", "")
    transport = _TRANSPORT.search(subject)
    if transport and page.startswith("basic/transports"):
        return "transport", f"subject: {transport.group(0)!r}"
    if page.startswith("server/") or page == "server":
        return "server", "page default (server feature)"
    if page.startswith("client/") or page == "client":
        return "client", "page default (client feature)"
    if page == "basic/transports":
        return "transport", "page default (transports)"
    if page.startswith("basic"):
        return "both", "page default (base protocol)"
    return "unknown", "no subject found"

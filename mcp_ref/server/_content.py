"""Content blocks: small constructors, and turning handler return values into content.

Theory of operation
-------------------
Tools return ``content`` (a list of content blocks), prompts return messages whose
content is one block, and resources return ``contents`` (text or base64 blobs).  Handler
functions may return plain Python values instead; the functions here turn them into the
typed classes of :mod:`mcp_ref.types`, one rule each:

* ``str`` -> ``TextContent`` (a text resource for resources);
* ``bytes`` -> a base64 blob (resources only; tools use :func:`image`/:func:`audio`);
* a content block -> itself; a list -> each item by these rules.

Binary data is always standard base64 with padding
(2025-06-18/server/resources#security-considerations.3,
2025-06-18/server/prompts#image-content.1).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from typing import Any, Final

from .. import types as t

__all__ = [
    "CONTENT_SINCE",
    "CONTENT_TYPES",
    "assistant",
    "audio",
    "blob_resource",
    "embedded",
    "image",
    "resource_contents",
    "resource_link",
    "text",
    "to_content",
    "to_prompt_messages",
    "user",
]

CONTENT_TYPES: Final = (
    t.TextContent,
    t.ImageContent,
    t.AudioContent,
    t.ResourceLink,
    t.EmbeddedResource,
)
"""The classes of ``ContentBlock``."""


CONTENT_SINCE: Final[dict[type, str]] = {
    t.AudioContent: "2025-03-26",
    t.ResourceLink: "2025-06-18",
}
"""Content blocks that older protocol revisions do not define, and the first revision
that does (others exist since 2024-11-05)."""


def for_version(blocks: list[t.ContentBlock], version: str | None) -> list[t.ContentBlock]:
    """``blocks`` as a session of protocol ``version`` may receive them: a block its
    revision does not define is replaced by a text block saying what was left out, so
    every message stays valid for the negotiated revision."""
    if version is None or all(version >= CONTENT_SINCE.get(type(b), "") for b in blocks):
        return blocks
    out: list[t.ContentBlock] = []
    for block in blocks:
        since = CONTENT_SINCE.get(type(block), "")
        if version >= since:
            out.append(block)
        else:
            out.append(
                t.TextContent(text=f"[{block.type} content left out: it needs protocol {since}]")
            )
    return out


def _b64(data: bytes | bytearray | memoryview) -> str:
    # Spec: 2025-06-18/server/resources#security-considerations.3
    # "Binary data MUST be properly encoded"
    return base64.b64encode(bytes(data)).decode("ascii")


def text(value: str, *, annotations: t.Annotations | None = None) -> t.TextContent:
    """A text content block."""
    return t.TextContent(text=value, annotations=annotations)


def image(
    data: bytes | bytearray | memoryview,
    mime_type: str,
    *,
    annotations: t.Annotations | None = None,
) -> t.ImageContent:
    """An image content block from raw bytes (base64-encoded here).

    Raises:
        ValueError: ``mime_type`` is not an ``image/...`` type.

    Source: 2025-06-18/server/prompts#image-content.1 (base64 and a valid MIME type).
    """
    if not mime_type.startswith("image/"):
        # Spec: 2025-06-18/server/prompts#image-content.1
        # "The image data MUST be base64-encoded and include a valid MIME type."
        raise ValueError(f"an image needs an image/* MIME type, not {mime_type!r}")
    return t.ImageContent(data=_b64(data), mime_type=mime_type, annotations=annotations)


def audio(
    data: bytes | bytearray | memoryview,
    mime_type: str,
    *,
    annotations: t.Annotations | None = None,
) -> t.AudioContent:
    """An audio content block from raw bytes (base64-encoded here).

    Raises:
        ValueError: ``mime_type`` is not an ``audio/...`` type.
    """
    if not mime_type.startswith("audio/"):
        raise ValueError(f"audio needs an audio/* MIME type, not {mime_type!r}")
    return t.AudioContent(data=_b64(data), mime_type=mime_type, annotations=annotations)


def blob_resource(
    uri: str, data: bytes | bytearray | memoryview, mime_type: str | None = None
) -> t.BlobResourceContents:
    """Binary resource contents (base64-encoded here)."""
    return t.BlobResourceContents(uri=uri, blob=_b64(data), mime_type=mime_type)


def embedded(
    uri: str,
    value: str | bytes,
    mime_type: str | None = None,
    *,
    annotations: t.Annotations | None = None,
) -> t.EmbeddedResource:
    """An embedded resource block: text for ``str``, a base64 blob for ``bytes``.

    Source: 2025-06-18/server/prompts#embedded-resources.1 (a URI, a MIME type, and
    text or blob).
    """
    resource: t.TextResourceContents | t.BlobResourceContents
    # Spec: 2025-06-18/server/prompts#embedded-resources.1 (a URI, a MIME type, the data)
    # "Resources can contain either text or binary (blob) data and MUST include:"
    if isinstance(value, str):
        resource = t.TextResourceContents(uri=uri, text=value, mime_type=mime_type or "text/plain")
    else:
        resource = blob_resource(uri, value, mime_type or "application/octet-stream")
    return t.EmbeddedResource(resource=resource, annotations=annotations)


def resource_link(
    uri: str,
    name: str,
    *,
    description: str | None = None,
    mime_type: str | None = None,
    title: str | None = None,
) -> t.ResourceLink:
    """A link to a resource (the client may read or subscribe to it).

    Source: 2025-06-18/server/tools#resource-links.1.
    """
    return t.ResourceLink(
        uri=uri, name=name, description=description, mime_type=mime_type, title=title
    )


def user(content: str | t.ContentBlock) -> t.PromptMessage:
    """A prompt message from the user."""
    return t.PromptMessage(role="user", content=_block(content))


def assistant(content: str | t.ContentBlock) -> t.PromptMessage:
    """A prompt message from the assistant."""
    return t.PromptMessage(role="assistant", content=_block(content))


def _block(value: Any) -> t.ContentBlock:
    if isinstance(value, str):
        return t.TextContent(text=value)
    if isinstance(value, CONTENT_TYPES):
        return value
    raise TypeError(
        f"expected a str or a content block (TextContent, ImageContent, ...), "
        f"not {type(value).__name__}"
    )


def to_content(value: Any) -> list[t.ContentBlock]:
    """A tool's unstructured return value as ``content``.

    ``None`` -> ``[]``; ``str`` -> one text block; a content block -> itself; a list or
    tuple -> each item.

    Raises:
        TypeError: anything else (the message names the type).
    """
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [_block(v) for v in value]
    return [_block(value)]


def to_prompt_messages(value: Any) -> list[t.PromptMessage]:
    """A prompt function's return value as messages.

    ``str`` or a content block -> one user message; a ``PromptMessage`` -> itself; a
    list or tuple -> each item.

    Raises:
        TypeError: anything else.
    """
    items: Iterable[Any] = value if isinstance(value, list | tuple) else [value]
    out: list[t.PromptMessage] = []
    for item in items:
        out.append(item if isinstance(item, t.PromptMessage) else user(item))
    return out


def resource_contents(
    value: Any, uri: str, mime_type: str | None
) -> list[t.TextResourceContents | t.BlobResourceContents]:
    """A resource function's return value as ``contents``.

    ``str`` -> text (``mime_type`` or ``text/plain``); ``bytes`` -> base64 blob
    (``mime_type`` or ``application/octet-stream``); a ``dict`` -> JSON text
    (``application/json``); ``TextResourceContents``/``BlobResourceContents`` -> itself;
    ``ReadResourceResult`` -> its contents; a list or tuple -> each item.

    Raises:
        TypeError: anything else.
    """
    if isinstance(value, t.ReadResourceResult):
        return list(value.contents)
    items: Iterable[Any] = value if isinstance(value, list | tuple) else [value]
    out: list[t.TextResourceContents | t.BlobResourceContents] = []
    for item in items:
        if isinstance(item, t.TextResourceContents | t.BlobResourceContents):
            out.append(item)
        elif isinstance(item, str):
            out.append(
                t.TextResourceContents(uri=uri, text=item, mime_type=mime_type or "text/plain")
            )
        elif isinstance(item, bytes | bytearray | memoryview):
            out.append(blob_resource(uri, item, mime_type or "application/octet-stream"))
        elif isinstance(item, dict):
            out.append(
                t.TextResourceContents(
                    uri=uri, text=json.dumps(item), mime_type=mime_type or "application/json"
                )
            )
        else:
            raise TypeError(
                "a resource function returns str, bytes, a dict, TextResourceContents, "
                f"BlobResourceContents or a list of them, not {type(item).__name__}"
            )
    return out

"""Resources and resource templates: listing, reading, and URI checks.

Theory of operation
-------------------
A **resource** has one fixed URI and either a fixed value or a function that returns
its contents.  A **resource template** has an RFC 6570 URI template
(:mod:`._uritemplate`) and a function whose parameters are the template's variables.
``resources/read`` looks for the URI among the resources first, then tries each
template in registration order; the first template that matches *and* whose function
can take the values (see below) reads it.  No match: ``-32002 Resource not found`` with
the URI in ``data`` (2025-06-18/server/resources#error-handling.1).

Template variables arrive as strings (lists of strings for exploded or comma-separated
values, see :mod:`._uritemplate`).  A parameter annotated ``int``, ``float`` or ``bool``
gets the string parsed (``true``/``false`` for bool); ``list[str]`` gets a list even for
one value; ``Literal``/``Enum`` parameters must hold one of their values.  A value that
does not convert means the template does not match this URI (the next one is tried),
and so does a required parameter whose variable is absent.

Return values become ``contents`` by the rules of
:func:`~mcp_ref.server._content.resource_contents` (str -> text, bytes -> base64 blob,
dict -> JSON).

Every URI a client sends is checked before it is looked up
(2025-06-18/server/resources#security-considerations.1): at most ``MAX_URI_LENGTH``
characters, an RFC 3986 scheme, no whitespace or control characters.  URIs and
templates registered by the application are held to RFC 3986 too
(2025-06-18/server/resources#custom-uri-schemes.1).
"""

from __future__ import annotations

import re
import typing
from typing import Any, Final

import attrs
import trio

from .. import types as t
from .._errors import INVALID_PARAMS, McpError
from ._arguments import ArgumentError, structure
from ._content import resource_contents
from ._context import Context
from ._functions import FunctionInfo, inspect_function, invoke
from ._modern import CacheHint
from ._uritemplate import UriTemplate

__all__ = [
    "MAX_URI_LENGTH",
    "ResourceDef",
    "TemplateDef",
    "check_uri",
    "make_resource",
    "make_template",
]

MAX_URI_LENGTH: Final = 8192
"""The longest URI (characters) a client may ask for."""

_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_BAD_CHAR: Final = re.compile(r"[\x00-\x20\x7f<>\"\\^`{|}]")


def uri_problem(uri: str) -> str | None:
    """Why ``uri`` is not an acceptable RFC 3986 URI, or None when it is."""
    if len(uri) > MAX_URI_LENGTH:
        return f"URI longer than {MAX_URI_LENGTH} characters"
    if not _SCHEME.match(uri):
        return "URI has no scheme (RFC 3986: scheme ':' ...)"
    bad = _BAD_CHAR.search(uri)
    if bad:
        return f"URI contains the character {bad.group()!r}, which RFC 3986 does not allow"
    return None


def check_uri(uri: str) -> None:
    """Refuse a malformed URI from a client.

    Raises:
        McpError: -32602 naming the problem.

    Source: 2025-06-18/server/resources#security-considerations.1.
    """
    # Spec: 2025-06-18/server/resources#security-considerations.1
    # "Servers MUST validate all resource URIs"
    problem = uri_problem(uri)
    if problem:
        raise McpError(INVALID_PARAMS, f"invalid resource URI: {problem}", {"uri": uri[:256]})


@attrs.define(eq=False)
class ResourceDef:
    """A registered resource.

    Attributes:
        resource: what ``resources/list`` shows.
        info: the function that reads it, or None for a fixed value.
        value: the fixed value (when ``info`` is None).
        cache: the caching hints of its ``resources/read`` results in the modern era
            (None: the server's default for reads).
    """

    resource: t.Resource
    info: FunctionInfo | None
    value: Any = None
    cache: CacheHint | None = None

    @property
    def uri(self) -> str:
        """The resource's URI (``resource.uri``)."""
        return self.resource.uri

    async def read(
        self, context: Context, limiter: trio.CapacityLimiter
    ) -> list[t.TextResourceContents | t.BlobResourceContents]:
        """The resource's contents (calls the function, if any)."""
        value = self.value if self.info is None else await invoke(self.info, {}, context, limiter)
        return resource_contents(value, self.uri, self.resource.mime_type)


@attrs.define(eq=False)
class TemplateDef:
    """A registered resource template.

    Attributes:
        template: what ``resources/templates/list`` shows.
        uri_template: the parsed template.
        info: the function that reads a matching URI.
        cache: the caching hints of its ``resources/read`` results in the modern era
            (None: the server's default for reads).
    """

    template: t.ResourceTemplate
    uri_template: UriTemplate
    info: FunctionInfo
    cache: CacheHint | None = None

    def match(self, uri: str) -> dict[str, Any] | None:
        """The function's keyword arguments for ``uri``, or None when this template
        does not serve it (see the module docstring)."""
        values = self.uri_template.match(uri)
        if values is None:
            return None
        kwargs: dict[str, Any] = {}
        for p in self.info.params:
            if p.name not in values:
                if p.required:
                    return None
                continue
            converted = _convert(values[p.name], p.annotation)
            if converted is _NO_MATCH:
                return None
            kwargs[p.name] = converted
        if self.info.var_keyword:
            kwargs.update((k, v) for k, v in values.items() if k not in kwargs)
        return kwargs

    async def read(
        self,
        uri: str,
        kwargs: dict[str, Any],
        context: Context,
        limiter: trio.CapacityLimiter,
    ) -> list[t.TextResourceContents | t.BlobResourceContents]:
        """The contents of ``uri`` (``kwargs`` from :meth:`match`)."""
        value = await invoke(self.info, dict(kwargs), context, limiter)
        return resource_contents(value, uri, self.template.mime_type)


_NO_MATCH: Final = object()
_INT: Final = re.compile(r"[+-]?[0-9]+")


def _convert(value: Any, annotation: Any) -> Any:
    """A template variable's value for a parameter annotation, or _NO_MATCH."""
    if annotation is Any or annotation is str:
        return value if isinstance(value, str) or annotation is Any else _NO_MATCH
    if annotation is int:
        return int(value) if isinstance(value, str) and _INT.fullmatch(value) else _NO_MATCH
    if annotation is float:
        try:
            return float(value) if isinstance(value, str) else _NO_MATCH
        except ValueError:
            return _NO_MATCH
    if annotation is bool:
        return (
            {"true": True, "false": False}.get(value, _NO_MATCH)
            if isinstance(value, str)
            else _NO_MATCH
        )
    origin = typing.get_origin(annotation)
    if origin in (list, tuple) and isinstance(value, str):
        value = [value]
    try:
        return structure(value, annotation)
    except (ArgumentError, TypeError):
        return _NO_MATCH


def _check_registered_uri(uri: str, what: str) -> None:
    # Spec: 2025-06-18/server/resources#custom-uri-schemes.1
    # "Custom URI schemes MUST be in accordance with RFC3986, taking the above guidance in to
    # account."
    if not _SCHEME.match(uri):
        raise ValueError(f"{what} {uri!r} needs an RFC 3986 scheme, e.g. 'file:' or 'myapp:'")


def make_resource(
    uri: str,
    fn_or_value: Any,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    size: int | None = None,
    annotations: t.Annotations | None = None,
    icons: list[t.Icon] | None = None,
    meta: dict[str, Any] | None = None,
    blocking: bool = True,
    cache: CacheHint | None = None,
) -> ResourceDef:
    """Build a :class:`ResourceDef`.

    Args:
        uri: the resource's URI (RFC 3986, with a scheme).
        fn_or_value: a function (sync or async; it may take a ``Context``) returning
            the contents, or the contents themselves (str, bytes, dict...).
        name: default: the function's name, else the URI.
        description: default: the function's docstring summary.
        mime_type, title, size, annotations, icons, meta: as in ``Resource``.
        blocking: False runs a sync function inline.
        cache: the caching hints of its reads (2026-07-28), e.g.
            ``CacheHint(60_000, "public")``; default: the server's.

    Raises:
        ValueError: bad URI.  TypeError: the function takes parameters a resource
            cannot fill (every parameter but the context needs a default).
    """
    _check_registered_uri(uri, "resource URI")
    problem = uri_problem(uri)
    if problem:
        raise ValueError(f"resource URI {uri!r}: {problem}")
    info: FunctionInfo | None = None
    value: Any = None
    if callable(fn_or_value) and not isinstance(fn_or_value, str | bytes | dict):
        info = inspect_function(fn_or_value, blocking=blocking)
        required = [p.name for p in info.params if p.required]
        if required:
            raise TypeError(
                f"resource function {info.name} has required parameters {required}; "
                "a fixed resource takes none (use resource_template for parameters)"
            )
    else:
        value = fn_or_value
    resource = t.Resource(
        uri=uri,
        name=name or (info.name if info else uri),
        title=title,
        description=description
        if description is not None
        else (info.doc.summary or None if info else None),
        mime_type=mime_type,
        size=size,
        annotations=annotations,
        icons=icons,
        meta=meta,
    )
    return ResourceDef(resource=resource, info=info, value=value, cache=cache)


def make_template(
    uri_template: str,
    fn: Any,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    annotations: t.Annotations | None = None,
    icons: list[t.Icon] | None = None,
    meta: dict[str, Any] | None = None,
    blocking: bool = True,
    cache: CacheHint | None = None,
) -> TemplateDef:
    """Build a :class:`TemplateDef`.

    Args:
        uri_template: an RFC 6570 template with a scheme, e.g. ``"test://item/{id}"``.
        fn: the function; its parameters (but the context) are template variables.
        name: default: the function's name.
        description: default: the function's docstring summary.
        title, mime_type, annotations, icons, meta: as in ``ResourceTemplate``.
        blocking: False runs a sync function inline.
        cache: the caching hints of its reads (2026-07-28); default: the server's.

    Raises:
        UriTemplateError (a ValueError): the template is not valid RFC 6570.
        ValueError: no scheme.
        TypeError: a parameter without default that is not a template variable, or a
            template variable the function does not take.
    """
    _check_registered_uri(uri_template, "resource template")
    parsed = UriTemplate(uri_template)
    info = inspect_function(fn, blocking=blocking)
    variables = set(parsed.variables)
    for p in info.params:
        if p.required and p.name not in variables:
            raise TypeError(
                f"{info.name}: parameter {p.name!r} is not a variable of {uri_template!r} "
                "and has no default"
            )
    missing = sorted(v for v in variables if info.param(v) is None)
    if missing and not info.var_keyword:
        raise TypeError(f"{info.name} does not take the template variable(s) {missing}")
    template = t.ResourceTemplate(
        uri_template=uri_template,
        name=name or info.name,
        title=title,
        description=description if description is not None else (info.doc.summary or None),
        mime_type=mime_type,
        annotations=annotations,
        icons=icons,
        meta=meta,
    )
    return TemplateDef(template=template, uri_template=parsed, info=info, cache=cache)

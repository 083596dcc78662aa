"""Checking a tool's structured result against its ``outputSchema``, when ``jsonschema``
is installed (sans-IO: part of the client core, :mod:`mcp_ref._client`).

Theory of operation
-------------------
``tools/list`` gives each tool an optional ``outputSchema``; a ``tools/call`` result may
carry ``structuredContent``.  The spec asks clients to check one against the other
(2025-06-18/server/tools#output-schema.2).  :class:`OutputSchemas` remembers the schemas
of the tools last listed (bounded), compiles a validator per tool on first use, and
checks results.  ``jsonschema`` is an optional dependency of mcp-ref: without it nothing
is checked (results are returned as they came).  Remote ``$ref`` are never fetched.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import logging
from collections.abc import Iterable
from typing import Any

from . import types as t
from ._errors import INTERNAL_ERROR, McpError

__all__ = ["JSONSCHEMA_AVAILABLE", "OutputSchemaError", "OutputSchemas"]

log = logging.getLogger("mcp_ref.client")

JSONSCHEMA_AVAILABLE = importlib.util.find_spec("jsonschema") is not None
"""Whether ``jsonschema`` is installed (structured results are checked only then)."""


@functools.cache
def _jsonschema() -> Any:
    """The ``jsonschema`` module, imported on the first check (None when it is not
    installed): importing it pulls in ``random`` and ``tempfile``, which the core's
    import must not."""
    return importlib.import_module("jsonschema") if JSONSCHEMA_AVAILABLE else None


def no_fetch_registry() -> Any:
    """A ``referencing`` registry (for a ``jsonschema`` validator's ``registry=``) that
    resolves no URI outside the schema itself: a ``$ref`` to anything else is
    unresolvable, never fetched (jsonschema alone would fetch it).  Needs the
    ``jsonschema`` extra.

    Source: 2026-07-28/basic/index#ref-resolution.1.
    """
    referencing = importlib.import_module("referencing")
    exceptions = importlib.import_module("referencing.exceptions")

    def retrieve(uri: str) -> Any:
        raise exceptions.NoSuchResource(ref=uri)

    return referencing.Registry(retrieve=retrieve)


class OutputSchemaError(McpError):
    """A tool's ``structuredContent`` does not match the ``outputSchema`` it declared
    (or that schema is not a valid JSON Schema).

    Its code is -32603 (INTERNAL_ERROR): the fault is in the server's result, not in our
    arguments, so -32602 would mislead.

    Attributes:
        tool: the tool's name.
        result: the ``t.CallToolResult`` as received, for callers that want it anyway.

    Source: 2025-06-18/server/tools#output-schema.1 and .2.
    """

    def __init__(self, tool: str, message: str, result: t.CallToolResult) -> None:
        super().__init__(
            INTERNAL_ERROR,
            f"the structured result of tool {tool!r} does not match its outputSchema: {message}",
            {"tool": tool},
        )
        self.tool = tool
        self.result = result


class OutputSchemas:
    """The output schemas of listed tools, by name (at most ``max_tools``)."""

    def __init__(self, max_tools: int = 10_000) -> None:
        self.max_tools = max_tools
        self._schemas: dict[str, dict[str, Any]] = {}
        self._validators: dict[str, Any] = {}

    def clear(self) -> None:
        """Forget every schema (the tool list changed)."""
        self._schemas.clear()
        self._validators.clear()

    def remember(self, tools: Iterable[t.Tool]) -> None:
        """Record the output schemas of ``tools`` (a tool without one is forgotten)."""
        for tool in tools:
            self._validators.pop(tool.name, None)
            if tool.output_schema is None:
                self._schemas.pop(tool.name, None)
            elif tool.name in self._schemas or len(self._schemas) < self.max_tools:
                self._schemas[tool.name] = tool.output_schema
            else:
                log.warning(
                    "more than %d tools with an outputSchema: not checking %r",
                    self.max_tools,
                    tool.name,
                )

    def schema_of(self, name: str) -> dict[str, Any] | None:
        """The remembered output schema of tool ``name``, or None."""
        return self._schemas.get(name)

    def check(self, name: str, result: t.CallToolResult) -> None:
        """Check ``result.structured_content`` against tool ``name``'s output schema.

        Nothing is checked when the tool has no remembered schema, the result has no
        structured content or is an error result (``isError``), or ``jsonschema`` is not
        installed.

        Raises:
            OutputSchemaError: the content does not match, or the schema is invalid.
        """
        # Spec: 2025-06-18/server/tools#output-schema.2
        # "Clients SHOULD validate structured results against this schema."
        schema = self._schemas.get(name)
        if schema is None or result.structured_content is None or result.is_error:
            return
        jsonschema = _jsonschema()
        if jsonschema is None:
            log.debug("jsonschema is not installed: not checking the result of %r", name)
            return
        validator = self._validators.get(name)
        if validator is None:
            cls = jsonschema.validators.validator_for(
                schema, default=jsonschema.Draft202012Validator
            )
            try:
                cls.check_schema(schema)
            except jsonschema.SchemaError as exc:
                raise OutputSchemaError(
                    name, f"invalid outputSchema: {exc.message}", result
                ) from None
            # Spec: 2026-07-28/basic/index#ref-resolution.1
            # "Implementations MUST NOT automatically dereference `$ref` values that
            # resolve to a network URI."
            validator = self._validators[name] = cls(schema, registry=no_fetch_registry())
        try:
            error = jsonschema.exceptions.best_match(
                validator.iter_errors(result.structured_content)
            )
        except Exception as exc:  # e.g. an unresolvable $ref: remote refs are not fetched
            raise OutputSchemaError(name, f"cannot check it: {exc}", result) from None
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "(root)"
            raise OutputSchemaError(name, f"at {where}: {error.message}", result)

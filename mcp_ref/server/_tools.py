"""Tools: from a Python function to a ``Tool`` listing and a ``tools/call`` answer.

Theory of operation
-------------------
:func:`make_tool` reads a function once and builds a :class:`ToolDef`.  There are two
ways to describe the input:

* **typed** (the default): ``inputSchema`` is generated from the parameters' annotations
  (:mod:`._schema`), with descriptions from the docstring's ``Args:`` section and
  defaults; ``tools/call`` arguments are checked and converted by the strict cattrs
  converter (:mod:`._arguments`), so ``def f(n: int, tags: list[str] = [])`` receives
  an ``int`` and a ``list``, never ``"5"``.
* **hand-written** (``input_schema={...}``): the schema is published as given, and the
  arguments are checked against it with the ``jsonschema`` package when it is
  installed (``pip install mcp-ref[jsonschema]``).  Without ``jsonschema`` only the
  top level is checked: ``arguments`` is an object, ``required`` keys are present and,
  when ``additionalProperties`` is false, no other keys.  The function receives the
  arguments as keyword arguments, unconverted JSON values.

Invalid arguments are a *tool execution error*: a result with ``isError: true`` whose
text names each fault by its JSON path, so a model can correct the call (2025-11-25
moved them there from protocol errors; see REVISIONS.md).  An exception raised by the
function is also an execution error: a :class:`ToolError` shows its message as is, any
other exception shows as ``"<ExceptionType>: <message>"`` (and is logged on the server
with its traceback).  :class:`~mcp_ref.McpError` raised by the function is *not* caught:
it becomes a JSON-RPC error response.

Output: a return value becomes ``content``.  A function whose return annotation is
structured data (anything but ``str``, ``None``, content blocks, lists of content blocks
and ``CallToolResult``; so ``int``, ``list[str]``, an attrs class...) also gets an
``outputSchema``, and each result carries
``structuredContent`` plus the same JSON as text (2025-06-18/server/tools#structured-content).
An ``outputSchema`` must describe an object; other types (``int``, ``list[X]``,
``Optional[X]``...) are wrapped as ``{"result": <value>}``.  The result is converted with
the strict converter and checked against the declared type (and, with ``jsonschema``,
against a hand-written ``output_schema``) before it is sent: a server never sends
structured content that breaks its own schema (2025-06-18/server/tools#output-schema.1).
"""

from __future__ import annotations

import importlib
import inspect
import json
import logging
import re
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs
import trio

from .. import types as t
from .._convert import ConversionError
from .._convert import structure as structure_wire
from .._errors import McpError
from .._output_schema import no_fetch_registry
from ._arguments import ArgumentError, structure, unstructure
from ._content import CONTENT_TYPES, to_content
from ._context import Context
from ._functions import FunctionInfo, inspect_function, invoke
from ._schema import json_default, schema_for

__all__ = ["TOOL_NAME", "ToolDef", "ToolError", "jsonschema_available", "make_tool"]

log = logging.getLogger("mcp_ref.server")

TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
"""Tool names: 1-128 of ``A-Z a-z 0-9 _ - .`` (2025-11-25, tool names)."""

_MAX_MESSAGES: Final = 10  # faults listed in one error result

try:
    _jsonschema: Any = importlib.import_module("jsonschema")
except ImportError:  # pragma: no cover - the optional extra is installed in CI
    _jsonschema = None


def jsonschema_available() -> bool:
    """Whether hand-written schemas are checked fully (the ``jsonschema`` extra)."""
    return _jsonschema is not None


class ToolError(Exception):
    """Raise from a tool function to end the call with ``isError: true`` and this message.

    Source: 2025-06-18/server/tools#error-handling (tool execution errors).
    """


@attrs.define(eq=False)
class ToolDef:
    """A registered tool.

    Attributes:
        tool: what ``tools/list`` shows.
        info: the function.
        typed: True when arguments are converted from the annotations, False for a
            hand-written ``input_schema``.
        structured: whether results carry ``structuredContent``.
        wrap: whether structured results are wrapped as ``{"result": value}``.
        input_validator: a ``jsonschema`` validator of the arguments, for a hand-written
            ``input_schema`` when ``jsonschema`` is installed; else None.
        output_validator: a ``jsonschema`` validator of the structured results, for a
            hand-written ``output_schema`` when ``jsonschema`` is installed; else None.
    """

    tool: t.Tool
    info: FunctionInfo
    typed: bool
    structured: bool
    wrap: bool
    input_validator: Any = None
    output_validator: Any = None

    @property
    def name(self) -> str:
        """The tool's name (``tool.name``)."""
        return self.tool.name

    async def call(
        self,
        arguments: Mapping[str, Any] | None,
        context: Context,
        limiter: trio.CapacityLimiter,
    ) -> t.CallToolResult:
        """Run the tool for one ``tools/call``.

        Returns:
            The result; ``is_error=True`` for invalid arguments and for exceptions of
            the function (see the module docstring).

        Raises:
            McpError: raised by the function itself.
            trio.Cancelled: the request was cancelled.

        Source: 2025-06-18/server/tools#calling-tools, #error-handling.
        """
        try:
            # Spec: 2025-06-18/server/tools#security-considerations.1 (validate all inputs)
            # "Servers MUST:"
            # Spec: 2026-07-28/server/tools#security-considerations.1 (validate all inputs)
            # "Servers MUST:"
            kwargs = self._check(dict(arguments or {}))
        except ArgumentError as exc:
            faults = exc.messages[:_MAX_MESSAGES]
            more = len(exc.messages) - len(faults)
            text = f"Invalid arguments for tool {self.name}: " + "; ".join(faults)
            if more > 0:
                text += f" (and {more} more)"
            return _error(text)
        try:
            value = await invoke(self.info, kwargs, context, limiter)
        except ToolError as exc:
            return _error(str(exc) or f"tool {self.name} failed")
        except McpError:
            raise
        except Exception as exc:
            log.exception("tool %s raised", self.name)
            return _error(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
        return self._result(value)

    def _check(self, arguments: dict[str, Any]) -> dict[str, Any]:
        info = self.info
        errors: list[str] = []
        if self.typed:
            kwargs: dict[str, Any] = {}
            for p in info.params:
                if p.name in arguments:
                    if not p.annotated:
                        kwargs[p.name] = arguments[p.name]
                        continue
                    try:
                        kwargs[p.name] = structure(
                            arguments[p.name], p.annotation, path=f"$.{p.name}"
                        )
                    except ArgumentError as exc:
                        errors.extend(exc.messages)
                elif p.required:
                    errors.append(f"missing required argument @ $.{p.name}")
            unknown = [k for k in arguments if k not in info.names]
            if unknown and not info.var_keyword:
                errors.append(f"unknown argument(s): {', '.join(sorted(unknown))} @ $")
            else:
                kwargs.update((k, arguments[k]) for k in unknown)
            if errors:
                raise ArgumentError(errors)
            return kwargs
        schema = self.tool.input_schema
        if self.input_validator is not None:
            found = sorted(
                self.input_validator.iter_errors(arguments),
                key=lambda e: [str(x) for x in e.absolute_path],
            )
            errors = [f"{e.message} @ {_json_path(e.absolute_path)}" for e in found]
        else:
            for key in schema.get("required", []):
                if key not in arguments:
                    errors.append(f"missing required argument @ $.{key}")
            if schema.get("additionalProperties") is False:
                known = schema.get("properties", {})
                extra = sorted(k for k in arguments if k not in known)
                if extra:
                    errors.append(f"unknown argument(s): {', '.join(extra)} @ $")
        if not errors and not info.var_keyword:
            extra = sorted(k for k in arguments if info.param(k) is None)
            if extra:
                errors.append(f"unknown argument(s): {', '.join(extra)} @ $")
        if errors:
            raise ArgumentError(errors)
        return dict(arguments)

    def _result(self, value: Any) -> t.CallToolResult:
        if isinstance(value, t.CallToolResult):
            if self.structured and not value.is_error:
                problem = self._output_problem(value.structured_content)
                if problem:
                    return self._broken_output(problem)
            return value
        if not self.structured:
            try:
                return t.CallToolResult(content=to_content(value))
            except TypeError as exc:
                return self._broken_output(str(exc))
        returns = self.info.returns
        if returns is not inspect.Parameter.empty and returns is not Any:
            try:
                data = unstructure(value, returns)
                structure(data, returns)  # the value must be what the annotation says
            except ArgumentError as exc:
                return self._broken_output(f"it does not match {returns!r}: {exc}")
            except Exception as exc:  # unstructure of a wrong type
                return self._broken_output(f"it does not match {returns!r}: {exc}")
        else:
            data = value
        structured = {"result": data} if self.wrap else data
        problem = self._output_problem(structured)
        if problem:
            return self._broken_output(problem)
        try:
            text = json.dumps(structured, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            return self._broken_output(f"it is not JSON: {exc}")
        # Spec: 2025-06-18/server/tools#output-schema.1
        # "Servers MUST provide structured results that conform to this schema."
        return t.CallToolResult(content=[t.TextContent(text=text)], structured_content=structured)

    def _output_problem(self, structured: Any) -> str | None:
        if not isinstance(structured, dict):
            return "structuredContent must be a JSON object"
        if self.output_validator is not None:
            error = next(iter(self.output_validator.iter_errors(structured)), None)
            if error is not None:
                return f"{error.message} @ {_json_path(error.absolute_path)}"
        return None

    def _broken_output(self, problem: str) -> t.CallToolResult:
        log.error("tool %s returned an invalid result: %s", self.name, problem)
        return _error(f"Tool {self.name} produced an invalid result: {problem}")


def _error(text: str) -> t.CallToolResult:
    return t.CallToolResult(content=[t.TextContent(text=text)], is_error=True)


def _json_path(path: Sequence[Any]) -> str:
    out = "$"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _contentish(tp: Any) -> bool:
    """Return annotations that are unstructured content, not data: ``str``, ``None``,
    ``CallToolResult``, a content block class, a union of those, or a list of content
    blocks (``list[str]`` is data)."""
    if tp in (str, type(None), None, t.CallToolResult) or tp is inspect.Parameter.empty:
        return True
    if _block_type(tp):
        return True
    args = typing.get_args(tp)
    origin = typing.get_origin(tp)
    if origin in (list, tuple, Sequence) and args:
        return all(_block_type(a) for a in args if a is not Ellipsis)
    if args and origin in (typing.Union, type(int | str)):
        return all(_contentish(a) for a in args)
    return False


def _block_type(tp: Any) -> bool:
    if isinstance(tp, type) and issubclass(tp, CONTENT_TYPES):
        return True
    args = typing.get_args(tp)
    return (
        bool(args)
        and typing.get_origin(tp) in (typing.Union, type(int | str))
        and all(_block_type(a) for a in args)
    )


def _validator(schema: dict[str, Any], what: str) -> Any:
    if _jsonschema is None:
        return None
    # With the jsonschema extra only (without it, hand-written schemas are published
    # unchecked and arguments are not validated against them):
    # Spec: 2026-07-28/basic/index#implementation-requirements.1
    # "Clients and servers MUST support JSON Schema 2020-12 for schemas without an
    # explicit `$schema` field"
    # Spec: 2025-11-25/basic/index#implementation-requirements.1
    # "Clients and servers MUST support JSON Schema 2020-12 for schemas without an explicit
    # `$schema` field"
    # Spec: 2026-07-28/basic/index#schema-validation.1
    # "Schemas MUST be valid according to their declared or default dialect"
    # Spec: 2025-11-25/basic/index#schema-validation.1
    # "Schemas MUST be valid according to their declared or default dialect"
    # Spec: 2026-07-28/basic/index#implementation-requirements.2
    # "Clients and servers MUST validate schemas according to their declared or default
    # dialect."
    # Spec: 2025-11-25/basic/index#implementation-requirements.2
    # "Clients and servers MUST validate schemas according to their declared or default dialect."
    declared = schema.get("$schema")
    if declared is None:
        cls = _jsonschema.Draft202012Validator
    else:
        cls = _jsonschema.validators.validator_for(schema, default=None)
        # Spec: 2026-07-28/basic/index#implementation-requirements.3
        # "They MUST handle unsupported dialects gracefully by returning an appropriate
        # error indicating the dialect is not supported."
        # Spec: 2025-11-25/basic/index#implementation-requirements.3
        # "They MUST handle unsupported dialects gracefully by returning an appropriate error
        # indicating the dialect is not supported."
        if cls is None:
            raise ValueError(f"{what}: unsupported JSON Schema dialect {declared!r}")
    try:
        cls.check_schema(schema)
    except _jsonschema.SchemaError as exc:
        raise ValueError(f"invalid {what}: {exc.message}") from None
    # Spec: 2026-07-28/basic/index#ref-resolution.1
    # "Implementations MUST NOT automatically dereference `$ref` values that resolve to a
    # network URI."
    # (jsonschema alone would fetch them: a registry that retrieves nothing)
    return cls(schema, registry=no_fetch_registry())


def _object_schema(schema: Any, what: str) -> dict[str, Any]:
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise ValueError(f'{what} must be a JSON Schema object with "type": "object"')
    return schema


def make_tool(
    fn: Any,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    input_schema: dict[str, Any] | None = None,
    output_schema: dict[str, Any] | None = None,
    annotations: t.ToolAnnotations | dict[str, Any] | None = None,
    icons: list[t.Icon] | None = None,
    meta: dict[str, Any] | None = None,
    structured: bool | None = None,
    blocking: bool = True,
) -> ToolDef:
    """Build a :class:`ToolDef` from a function.

    Args:
        fn: the function (sync or async); a parameter annotated ``Context`` receives
            the request context and is not part of the input schema.
        name: the tool's name (default: the function's name).
        title: a display name.
        description: default: the docstring's text before its first section.
        input_schema: a hand-written input JSON Schema (``"type": "object"``); None to
            generate it from the annotations.
        output_schema: a hand-written output JSON Schema (``"type": "object"``); None
            to generate it from the return annotation when that is structured data.
        annotations: behaviour hints (``ToolAnnotations`` or its wire dict).
        icons, meta: as in ``Tool``.
        structured: force structured output on or off (default: decided by the return
            annotation; see the module docstring).
        blocking: False runs a sync function inline instead of in a worker thread.

    Raises:
        ValueError: bad name or schema.
        TypeError: an annotation without a JSON Schema (the message names it), or a
            function that cannot be inspected.
    """
    info = inspect_function(fn, blocking=blocking)
    tool_name = name or info.name
    if not TOOL_NAME.fullmatch(tool_name):
        raise ValueError(
            f"invalid tool name {tool_name!r}: use 1-128 characters of A-Z a-z 0-9 _ - ."
        )
    if isinstance(annotations, dict):
        try:
            annotations = structure_wire(annotations, t.ToolAnnotations)
        except ConversionError as exc:
            raise ValueError(f"invalid tool annotations: {exc}") from None
    typed = input_schema is None
    input_validator = None
    if input_schema is None:
        input_schema = _input_schema(info)
    else:
        # Spec: 2026-07-28/server/tools#tool.1
        # "MUST be a valid JSON Schema object (not `null`)"
        # Spec: 2025-11-25/server/tools#tool.1
        # "MUST be a valid JSON Schema object (not `null`)"
        input_schema = _object_schema(input_schema, "input_schema")
        input_validator = _validator(input_schema, "input_schema")
    returns = info.returns
    if structured is None:
        structured = output_schema is not None or not (returns is Any or _contentish(returns))
    wrap = False
    output_validator = None
    if structured:
        if output_schema is None:
            if returns is inspect.Parameter.empty or returns is Any:
                raise ValueError(
                    f"tool {tool_name}: structured output needs a return annotation "
                    "or an output_schema"
                )
            output_schema = schema_for(returns)
            if output_schema.get("type") != "object":
                wrap = True
                output_schema = {
                    "type": "object",
                    "properties": {"result": output_schema},
                    "required": ["result"],
                }
            if info.doc.returns and "description" not in output_schema:
                output_schema = {**output_schema, "description": info.doc.returns}
        else:
            output_schema = _object_schema(output_schema, "output_schema")
            output_validator = _validator(output_schema, "output_schema")
    elif output_schema is not None:
        raise ValueError("output_schema given with structured=False")
    tool = t.Tool(
        name=tool_name,
        title=title,
        description=description if description is not None else (info.doc.summary or None),
        input_schema=input_schema,
        output_schema=output_schema if structured else None,
        annotations=annotations,
        icons=icons,
        meta=meta,
    )
    return ToolDef(
        tool=tool,
        info=info,
        typed=typed,
        structured=structured,
        wrap=wrap,
        input_validator=input_validator,
        output_validator=output_validator,
    )


def _input_schema(info: FunctionInfo) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for p in info.params:
        try:
            schema = schema_for(p.annotation) if p.annotated else {}
        except TypeError as exc:
            raise TypeError(f"{info.name}: parameter {p.name!r}: {exc}") from None
        doc = info.doc.params.get(p.name)
        if doc and "description" not in schema:
            schema = {**schema, "description": doc}
        if p.required:
            required.append(p.name)
        else:
            ok, value = json_default(p.default, p.annotation if p.annotated else None)
            if ok:
                schema = {**schema, "default": value}
        properties[p.name] = schema
    result: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        result["required"] = required
    if not info.var_keyword:
        result["additionalProperties"] = False
    return result

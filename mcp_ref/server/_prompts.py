"""Prompts: from a Python function to a ``Prompt`` listing and a ``prompts/get`` answer.

Theory of operation
-------------------
A prompt's arguments are strings on the wire (``GetPromptRequestParams.arguments`` is a
``dict[str, str]``), so a prompt function's parameters are ``str`` (or ``str | None``,
a ``Literal`` of strings, a string-valued ``Enum``; any annotation the strict converter
can fill from a string).  A parameter without a default is a required argument; each
argument's description comes from the docstring's ``Args:`` section.

``prompts/get`` checks the arguments before calling the function
(2025-06-18/server/prompts#implementation-considerations.1): an unknown prompt, a
missing required argument, an argument the prompt does not take, or a value that does
not convert are all ``-32602`` (2025-06-18/server/prompts#error-handling.1).

The function returns messages by the rules of
:func:`~mcp_ref.server._content.to_prompt_messages` (a str is one user message), or a
whole ``GetPromptResult``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import trio

from .. import types as t
from .._errors import INVALID_PARAMS, McpError
from ._arguments import ArgumentError, structure
from ._content import to_prompt_messages
from ._context import Context
from ._functions import FunctionInfo, inspect_function, invoke

__all__ = ["PromptDef", "make_prompt"]


@attrs.define(eq=False)
class PromptDef:
    """A registered prompt.

    Attributes:
        prompt: what ``prompts/list`` shows.
        info: the function that renders it.
    """

    prompt: t.Prompt
    info: FunctionInfo

    @property
    def name(self) -> str:
        """The prompt's name (``prompt.name``)."""
        return self.prompt.name

    def argument_names(self) -> list[str]:
        """The names of the prompt's arguments."""
        return [a.name for a in self.prompt.arguments or []]

    def check(self, arguments: Mapping[str, str] | None) -> dict[str, Any]:
        """The function's keyword arguments for ``arguments``.

        Raises:
            McpError: -32602 naming every missing, unknown or malformed argument.

        Source: 2025-06-18/server/prompts#error-handling.1,
        2025-06-18/server/prompts#implementation-considerations.1.
        """
        arguments = dict(arguments or {})
        errors: list[str] = []
        kwargs: dict[str, Any] = {}
        for p in self.info.params:
            if p.name not in arguments:
                if p.required:
                    errors.append(f"missing required argument {p.name!r}")
                continue
            if not p.annotated:
                kwargs[p.name] = arguments[p.name]
                continue
            try:
                kwargs[p.name] = structure(arguments[p.name], p.annotation, path=p.name)
            except ArgumentError as exc:
                errors.extend(exc.messages)
        unknown = sorted(k for k in arguments if self.info.param(k) is None)
        if unknown:
            if self.info.var_keyword:
                kwargs.update((k, arguments[k]) for k in unknown)
            else:
                errors.append(f"unknown argument(s) {', '.join(map(repr, unknown))}")
        if errors:
            # Spec: 2025-06-18/server/prompts#error-handling.1
            # "Servers SHOULD return standard JSON-RPC errors for common failure cases:"
            raise McpError(
                INVALID_PARAMS,
                f"invalid arguments for prompt {self.name!r}: " + "; ".join(errors),
                {"prompt": self.name},
            )
        return kwargs

    async def render(
        self,
        arguments: Mapping[str, str] | None,
        context: Context,
        limiter: trio.CapacityLimiter,
    ) -> t.GetPromptResult:
        """Answer ``prompts/get``.

        Raises:
            McpError: -32602 for bad arguments; whatever the function raises.
            TypeError: the function returned something that is not messages (the
                session answers -32603): outputs are checked as strictly as inputs.
        """
        # Spec: 2025-06-18/server/prompts#implementation-considerations.1
        # "Servers SHOULD validate prompt arguments before processing"
        # Spec: 2025-06-18/server/prompts#security.1 (inputs checked here, outputs below)
        # "Implementations MUST carefully validate all prompt inputs and outputs to prevent
        # injection attacks or unauthorized access to resources."
        kwargs = self.check(arguments)
        value = await invoke(self.info, kwargs, context, limiter)
        if isinstance(value, t.GetPromptResult):
            if value.description is None and self.prompt.description:
                value = attrs.evolve(value, description=self.prompt.description)
            return value
        return t.GetPromptResult(
            messages=to_prompt_messages(value), description=self.prompt.description
        )


def make_prompt(
    fn: Any,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    icons: list[t.Icon] | None = None,
    meta: dict[str, Any] | None = None,
    blocking: bool = True,
) -> PromptDef:
    """Build a :class:`PromptDef` from a function.

    Args:
        fn: the function (sync or async); its parameters (but a ``Context``) are the
            prompt's arguments.
        name: default: the function's name.
        description: default: the docstring summary.
        title, icons, meta: as in ``Prompt``.
        blocking: False runs a sync function inline.

    Raises:
        TypeError: the function cannot be inspected.
    """
    info = inspect_function(fn, blocking=blocking)
    arguments = [
        t.PromptArgument(
            name=p.name,
            description=info.doc.params.get(p.name),
            required=p.required,
        )
        for p in info.params
    ]
    prompt = t.Prompt(
        name=name or info.name,
        title=title,
        description=description if description is not None else (info.doc.summary or None),
        arguments=arguments or None,
        icons=icons,
        meta=meta,
    )
    return PromptDef(prompt=prompt, info=info)

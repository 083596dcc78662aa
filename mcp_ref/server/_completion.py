"""Argument completion: ``completion/complete`` for prompt arguments and template variables.

Theory of operation
-------------------
A completion is registered for one argument of one prompt, or one variable of one
resource template, either as a fixed list of values (offered when they start with what
the user typed, ignoring case) or as a function.  The function takes any of these
keyword parameters, by name:

* ``value``: what the user typed so far (str);
* ``arguments``: the arguments already resolved, ``context.arguments`` (dict, maybe
  empty);
* ``argument``: the argument's name (str);
* a parameter annotated ``Context``.

It returns an iterable of strings (best first) or a ``CompleteResultCompletion``.  At most
100 values are sent; when there are more, the answer says ``hasMore`` and the ``total``
(2025-06-18/server/utilities/completion#completion-results).

The server checks the reference first (2025-06-18/server/utilities/completion#error-handling.1):
an unknown prompt or template, or an argument it does not have, is ``-32602``.  A known
argument without a registered completion gets an empty list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs
import trio

from .. import types as t
from ._context import Context
from ._functions import FunctionInfo, inspect_function, invoke

__all__ = ["MAX_VALUES", "CompletionDef", "completion_of", "make_completion"]

MAX_VALUES: Final = 100
"""The most values one ``completion/complete`` answer may carry."""

_PARAMS: Final = frozenset({"value", "arguments", "argument"})


@attrs.define(eq=False)
class CompletionDef:
    """A registered completion.

    Attributes:
        ref_type: ``"ref/prompt"`` or ``"ref/resource"``.
        ref: the prompt's name, or the template's URI template.
        argument: the argument (or template variable) it completes.
        info: the function, or None for fixed values.
        values: the fixed values (when ``info`` is None).
    """

    ref_type: str
    ref: str
    argument: str
    info: FunctionInfo | None = None
    values: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, str, str]:
        """``(ref_type, ref, argument)``: what the completion is registered under."""
        return (self.ref_type, self.ref, self.argument)

    async def complete(
        self,
        value: str,
        arguments: Mapping[str, str],
        context: Context,
        limiter: trio.CapacityLimiter,
    ) -> t.CompleteResultCompletion:
        """The completion values for ``value``."""
        if self.info is None:
            typed = value.casefold()
            return completion_of(v for v in self.values if v.casefold().startswith(typed))
        offered = {"value": value, "arguments": dict(arguments), "argument": self.argument}
        kwargs = {p.name: offered[p.name] for p in self.info.params if p.name in offered}
        result = await invoke(self.info, kwargs, context, limiter)
        if isinstance(result, t.CompleteResultCompletion):
            return completion_of(result.values, has_more=result.has_more, total=result.total)
        if isinstance(result, str) or not isinstance(result, Iterable):
            raise TypeError(
                f"completion function {self.info.name} must return an iterable of str, "
                f"not {type(result).__name__}"
            )
        return completion_of(result)


def completion_of(
    values: Iterable[Any], *, has_more: bool | None = None, total: int | None = None
) -> t.CompleteResultCompletion:
    """At most :data:`MAX_VALUES` values, with ``has_more``/``total`` when cut.

    Raises:
        TypeError: a value is not a str.

    Source: 2025-06-18/server/utilities/completion#completion-results (max 100 items).
    """
    everything = list(values)
    if not all(isinstance(v, str) for v in everything):
        raise TypeError("completion values must be strings")
    if len(everything) > MAX_VALUES:
        return t.CompleteResultCompletion(
            values=everything[:MAX_VALUES],
            has_more=True,
            total=max(total or 0, len(everything)),
        )
    return t.CompleteResultCompletion(
        values=everything,
        has_more=has_more if has_more is not None else False,
        total=total if total is not None else len(everything),
    )


def make_completion(
    *,
    prompt: str | None = None,
    template: str | None = None,
    argument: str,
    fn: Any = None,
    values: Iterable[str] | None = None,
    blocking: bool = True,
) -> CompletionDef:
    """Build a :class:`CompletionDef`.

    Args:
        prompt: the prompt's name (give this or ``template``).
        template: the resource template's URI template.
        argument: the argument or template variable completed.
        fn: the completion function (see the module docstring), or None with ``values``.
        values: fixed values, offered by prefix.
        blocking: False runs a sync function inline.

    Raises:
        ValueError: not exactly one of ``prompt``/``template``, or of ``fn``/``values``.
        TypeError: the function has a required parameter it cannot be given.
    """
    if (prompt is None) == (template is None):
        raise ValueError("give exactly one of prompt= and template=")
    if (fn is None) == (values is None):
        raise ValueError("give exactly one of a function and values=")
    ref_type, ref = ("ref/prompt", prompt) if prompt is not None else ("ref/resource", template)
    assert ref is not None
    if fn is None:
        assert values is not None
        fixed = tuple(values)
        if not all(isinstance(v, str) for v in fixed):
            raise TypeError("completion values must be strings")
        return CompletionDef(ref_type=ref_type, ref=ref, argument=argument, values=fixed)
    info = inspect_function(fn, blocking=blocking)
    bad = [p.name for p in info.params if p.required and p.name not in _PARAMS]
    if bad:
        raise TypeError(
            f"completion function {info.name}: parameters {bad} cannot be filled; "
            "use value, arguments, argument, and a Context"
        )
    return CompletionDef(ref_type=ref_type, ref=ref, argument=argument, info=info)

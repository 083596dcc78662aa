"""Reading a handler function once, and calling it (sync or async) many times.

Theory of operation
-------------------
Every registered function (tool, resource, template, prompt, completion) is inspected
once, at registration, into a :class:`FunctionInfo`: its parameters with resolved
annotations and defaults, which parameter (if any) wants the :class:`Context`, whether
it is async, its return annotation, and its parsed docstring.  Mistakes a caller cannot
fix (positional-only parameters, unresolvable annotations) are ``TypeError`` at
registration, not errors at call time.

:func:`invoke` calls it:

* an ``async def`` runs in the request's own task;
* a plain ``def`` runs in a worker thread (``trio.to_thread.run_sync``) under the
  server's ``trio.CapacityLimiter``, so a blocking function never blocks other requests
  or the session's reader.  When the request is cancelled the thread cannot be stopped:
  trio abandons it (``abandon_on_cancel=True``), the handler returns at once, and the
  thread's eventual result is thrown away;
* a plain ``def`` registered with ``blocking=False`` runs inline in the event loop: for
  trivially fast functions (no I/O, no waiting), where a thread hop would cost more than
  the work.  It cannot be cancelled and must not block.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any, Final

import attrs
import trio

from ._context import Context
from ._schema import Docstring, parse_docstring

__all__ = ["REQUIRED", "FunctionInfo", "Param", "inspect_function", "invoke"]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Final = _Required()
"""The default of a parameter that has none."""

_EMPTY: Final = inspect.Parameter.empty


@attrs.frozen
class Param:
    """One parameter a client fills in.

    Attributes:
        name: its name.
        annotation: its resolved annotation (``Any`` when unannotated).
        default: its default, or :data:`REQUIRED`.
        annotated: whether it had an annotation.
    """

    name: str
    annotation: Any
    default: Any
    annotated: bool

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@attrs.frozen
class FunctionInfo:
    """A registered function, read once.

    Attributes:
        fn: the function.
        name: its ``__name__`` (or the class name of a callable object).
        params: the parameters a client fills in (the context parameter excluded).
        context_param: the name of the parameter annotated :class:`Context`, or None.
        var_keyword: whether it takes ``**kwargs``.
        is_async: whether calling it returns a coroutine.
        returns: the return annotation, or ``inspect.Parameter.empty``.
        doc: its parsed docstring.
        blocking: False to run a sync function inline instead of in a thread.
    """

    fn: Callable[..., Any]
    name: str
    params: tuple[Param, ...]
    context_param: str | None
    var_keyword: bool
    is_async: bool
    returns: Any
    doc: Docstring
    blocking: bool = True
    names: frozenset[str] = attrs.field(init=False)
    """The names of ``params``."""

    @names.default
    def _names(self) -> frozenset[str]:
        return frozenset(p.name for p in self.params)

    def param(self, name: str) -> Param | None:
        """The parameter called ``name``, or None."""
        if name not in self.names:
            return None
        return next(p for p in self.params if p.name == name)


def _is_context(annotation: Any) -> bool:
    if annotation is Context:
        return True
    if isinstance(annotation, str):
        return annotation.rsplit(".", 1)[-1] == "Context"
    args = typing.get_args(annotation)
    return bool(args) and Context in args and all(a in (Context, type(None)) for a in args)


def inspect_function(fn: Callable[..., Any], *, blocking: bool = True) -> FunctionInfo:
    """Read ``fn`` into a :class:`FunctionInfo`.

    Raises:
        TypeError: ``fn`` is not callable, has positional-only parameters, declares
            more than one context parameter, or has annotations that cannot be resolved.
    """
    if not callable(fn):
        raise TypeError(f"{fn!r} is not callable")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"cannot read the signature of {fn!r}: {exc}") from None
    target = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else type(fn).__call__
    if isinstance(fn, functools.partial):
        target = fn.func
    try:
        hints = typing.get_type_hints(target, include_extras=True)
    except Exception as exc:
        raise TypeError(
            f"cannot resolve the annotations of {getattr(fn, '__name__', fn)!r}: {exc}"
        ) from None
    name = getattr(fn, "__name__", None) or type(fn).__name__
    params: list[Param] = []
    context_param: str | None = None
    var_keyword = False
    for p in signature.parameters.values():
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            var_keyword = True
            continue
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            continue
        if p.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise TypeError(f"{name}: positional-only parameter {p.name!r} is not supported")
        annotation = hints.get(p.name, p.annotation)
        if annotation is not _EMPTY and _is_context(annotation):
            if context_param is not None:
                raise TypeError(f"{name}: more than one Context parameter")
            context_param = p.name
            continue
        default = REQUIRED if p.default is _EMPTY else p.default
        annotated = annotation is not _EMPTY
        params.append(Param(p.name, annotation if annotated else Any, default, annotated))
    is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
    )
    returns = hints.get("return", signature.return_annotation)
    return FunctionInfo(
        fn=fn,
        name=name,
        params=tuple(params),
        context_param=context_param,
        var_keyword=var_keyword,
        is_async=is_async,
        returns=returns,
        doc=parse_docstring(inspect.getdoc(fn)),
        blocking=blocking,
    )


async def invoke(
    info: FunctionInfo,
    kwargs: dict[str, Any],
    context: Context | None,
    limiter: trio.CapacityLimiter,
) -> Any:
    """Call ``info.fn(**kwargs)`` (plus the context), the right way for its kind.

    Args:
        info: the function.
        kwargs: the arguments, already checked.
        context: the request's :class:`Context` (given to the function when it asks).
        limiter: bounds the worker threads running sync functions.

    Returns:
        Whatever the function returned (awaited if it returned an awaitable).

    Raises:
        Whatever the function raises; ``trio.Cancelled`` when the request is cancelled.
    """
    if info.context_param is not None:
        kwargs[info.context_param] = context
    if info.is_async:
        return await info.fn(**kwargs)
    if info.blocking:
        result = await trio.to_thread.run_sync(
            functools.partial(info.fn, **kwargs), limiter=limiter, abandon_on_cancel=True
        )
    else:
        result = info.fn(**kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result

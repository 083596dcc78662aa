"""What ``mcp_ref._convert``'s configuration of cattrs costs, against cattrs' own defaults.

Theory of operation
-------------------
Issue 14 moved conversion to cattrs: ``mcp_ref/_convert.py`` is a ``cattrs.Converter``
(:func:`mcp_ref._convert.make_converter`) whose class hooks are cattrs' generated ones,
configured to be strict (wire names, required constants, strict scalars and containers,
``extra`` kept, the union rule).  bench/README.md gives the before/after figures against
the code generator it replaced.  This module keeps measuring the choices left inside
cattrs, with three variants plugged into the same places:

* **ours**: ``mcp_ref._convert`` as the library uses it (with cattrs'
  ``detailed_validation``, whose exception groups name the path of a refusal);
* **fast**: the same configuration without ``detailed_validation``: what the
  exception groups cost on the way in (a refusal would then need a second pass to be
  explained);
* **loose**: cattrs' defaults with only what valid messages need (wire names, omitted
  optionals, ``str | int`` ids, the content blocks' tagged union): not a replacement,
  as it coerces scalars (``str(123)``), drops unknown keys and takes any iterable for a
  list.  It shows what strictness costs against cattrs' defaults, which are not free
  either: they call ``str(v)`` on every string, and copy ``dict[str, Any]`` values
  (``arguments``, ``inputSchema``) on the way out where ours passes them through.

Speed is taken two ways: structure and unstructure of each hot-path message with
``timeit`` on CPU time (:func:`measure_messages`), then the core loops of
:mod:`bench.hotpath` with each variant plugged into the connection
(:func:`measure_hotpath`; ``mcp_ref._connection._structurer`` / ``_unstructurer``
swapped for the run, never edited).  Variants alternate run to run; medians and ranges
are reported.

Run it: ``python -m bench.convert_cattrs`` (``--quick`` for a short run).
"""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import statistics
import sys
import time
import timeit
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from cattrs.strategies import configure_tagged_union, configure_union_passthrough

from mcp_ref import _connection, _convert
from mcp_ref import types as t
from mcp_ref._convert import ConversionError

from . import hotpath
from ._measure import timed

__all__ = [
    "FAST",
    "HOT",
    "HOTPATH_CASES",
    "LOOSE",
    "VARIANTS",
    "hooks",
    "main",
    "make_loose_converter",
    "measure_hotpath",
    "measure_messages",
    "plugged",
    "render",
]

Fn = Callable[[Any], Any]


def make_loose_converter() -> cattrs.Converter:
    """cattrs' defaults, told only what valid messages need: wire names
    (``override(rename=...)``), optional fields left out when ``None``, ``str | int`` ids
    (``configure_union_passthrough``) and the content blocks (``configure_tagged_union``
    on ``type``), which is all the hot path's messages need."""
    conv = cattrs.Converter()
    configure_union_passthrough(str | int | float | bool | None, conv)

    def overrides(cls: type, *, unstructure: bool) -> dict[str, Any]:
        attrs.resolve_types(cls)
        out = {}
        for field in attrs.fields(cls):
            if field.name == "extra":
                out["extra"] = override(omit=True)
            elif unstructure:
                omit = field.default is None
                out[field.name] = override(rename=_convert._wire_name(field), omit_if_default=omit)
            else:
                out[field.name] = override(rename=_convert._wire_name(field))
        return out

    conv.register_structure_hook_factory(
        attrs.has,
        lambda cls: make_dict_structure_fn(cls, conv, **overrides(cls, unstructure=False)),
    )
    conv.register_unstructure_hook_factory(
        attrs.has,
        lambda cls: make_dict_unstructure_fn(
            cls, conv, _cattrs_omit_if_default=False, **overrides(cls, unstructure=True)
        ),
    )
    union, (tag, constants) = t.ContentBlock, _convert._tagged_unions()[t.ContentBlock]
    tags = dict(zip(typing.get_args(union), constants, strict=True))
    configure_tagged_union(union, conv, tag_generator=tags.__getitem__, tag_name=tag)
    return conv


FAST: Final = _convert.make_converter(detailed_validation=False)
"""``mcp_ref._convert``'s configuration without cattrs' ``detailed_validation``."""
LOOSE: Final = make_loose_converter()
"""cattrs' defaults with wire names: not as strict (for the table)."""


def hooks(conv: cattrs.Converter) -> tuple[Callable[[Any], Fn], Callable[[Any], Fn]]:
    """``(structurer, unstructurer)`` of ``conv``, shaped as the connection's
    ``_structurer`` / ``_unstructurer``: type -> one-argument function, cached.  Any
    refusal is raised as :class:`~mcp_ref._convert.ConversionError` (with cattrs' own
    words), as the connection expects; the layer costs what ``structure_fn``'s does."""

    @functools.cache
    def structurer(tp: Any) -> Fn:
        hook: Callable[[Any, Any], Any] = conv.get_structure_hook(tp)

        def structure(v: Any) -> Any:
            try:
                return hook(v, tp)
            except Exception as exc:
                raise ConversionError(f"{type(exc).__name__}: {exc}") from None

        return structure

    @functools.cache
    def unstructurer(tp: Any) -> Fn:
        hook: Fn = conv.get_unstructure_hook(tp)
        return hook

    return structurer, unstructurer


VARIANTS: list[tuple[str, cattrs.Converter | None]] = [
    ("ours", None),
    ("fast", FAST),
    ("loose", LOOSE),
]
"""The converters timed: ``mcp_ref._convert``; the same without ``detailed_validation``;
cattrs' own defaults with wire names (not as strict)."""


# --- the messages -------------------------------------------------------------------------

_TOOL = {
    "name": "echo",
    "description": "Echo the text back.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}

HOT: list[tuple[str, Any, Any]] = [
    # (row name, type, wire JSON): what the core converts per message on its hot path.
    (
        "tools/call params",
        t.CallToolRequestParams,
        {"name": "echo", "arguments": {"text": "hello"}},
    ),
    ("CallToolResult", t.CallToolResult, {"content": [{"type": "text", "text": "hello"}]}),
    ("ping result (Result)", t.Result, {}),
    (
        "notifications/message params",
        t.LoggingMessageNotificationParams,
        {"level": "info", "logger": "bench", "data": "tick 1"},
    ),
    (
        "notifications/progress params",
        t.ProgressNotificationParams,
        {"progressToken": "call-7", "progress": 50, "total": 100, "message": "halfway"},
    ),
    (
        "ListToolsResult (3 tools)",
        t.ListToolsResult,
        {"tools": [{**_TOOL, "name": f"tool{i}"} for i in range(3)], "nextCursor": "c2"},
    ),
]
"""The hot path's messages: the bench's ``tools/call`` request params and result, the
ping's empty result, the ``notifications/message`` of the notification case, a progress
notification and a tools list page."""


# --- speed ----------------------------------------------------------------------------------

_OURS_HOOKS: Final = (_connection._structurer, _connection._unstructurer)
"""The connection's own lookups (``mcp_ref._convert``'s functions), kept at import."""


def _variant_hooks(
    conv: cattrs.Converter | None,
) -> tuple[Callable[[Any], Fn], Callable[[Any], Fn]]:
    return _OURS_HOOKS if conv is None else hooks(conv)


@contextmanager
def plugged(conv: cattrs.Converter | None) -> Iterator[None]:
    """Make the connection convert with ``conv`` (None: ours) inside the block, by
    swapping ``mcp_ref._connection._structurer`` / ``_unstructurer`` (the cached
    per-type lookups it calls; plans are per connection, so build connections inside)."""
    structurer, unstructurer = _variant_hooks(conv)
    _connection._structurer, _connection._unstructurer = structurer, unstructurer
    try:
        yield
    finally:
        _connection._structurer, _connection._unstructurer = _OURS_HOOKS


class Spread:
    """The median of several runs and their range."""

    __slots__ = ("high", "low", "median")

    def __init__(self, values: list[float]) -> None:
        self.median = statistics.median(values)
        self.low, self.high = min(values), max(values)

    def show(self, unit_digits: int = 0) -> str:
        f = f"{{:.{unit_digits}f}}"
        return f"{f.format(self.median)} ({f.format(self.low)}-{f.format(self.high)})"


def _orders(repeats: int, names: list[str]) -> Iterator[list[str]]:
    """Alternate the order of the variants run to run (a busy moment hits all)."""
    for r in range(repeats):
        yield names if r % 2 == 0 else names[::-1]


def measure_messages(
    *, repeats: int = 7, run_s: float = 0.03
) -> list[tuple[str, str, dict[str, Spread]]]:
    """Per hot-path message and direction, CPU nanoseconds per call of each variant's
    function (what the connection calls), with ``timeit`` on ``time.process_time``:
    ``[(message, "structure" | "unstructure", {variant: Spread})]``."""
    names = [name for name, _ in VARIANTS]
    out = []
    for label, tp, data in HOT:
        obj = _convert.structure(data, tp)
        for op in ("structure", "unstructure"):
            fns = {}
            for name, conv in VARIANTS:
                structurer, unstructurer = _variant_hooks(conv)
                fns[name] = structurer(tp) if op == "structure" else unstructurer(tp)
            arg = data if op == "structure" else obj
            timers = {
                name: timeit.Timer("f(a)", globals={"f": fn, "a": arg}, timer=time.process_time)
                for name, fn in fns.items()
            }
            once = min(timers["ours"].repeat(3, 200)) / 200
            number = max(100, int(run_s / max(once, 1e-9)))
            samples: dict[str, list[float]] = {name: [] for name in names}
            for order in _orders(repeats, names):
                for name in order:
                    samples[name].append(timers[name].timeit(number) / number * 1e9)
            out.append((label, op, {name: Spread(v) for name, v in samples.items()}))
    return out


HOTPATH_CASES = ("tools/call", "ping", "notification", "response to our request")
"""The cases of :mod:`bench.hotpath` whose messages are small (the converter's share is
largest there; with 10 KB or 1 MB of text JSON dominates)."""


def measure_hotpath(
    *, repeats: int = 7, messages: int = 5000
) -> list[tuple[str, dict[str, Spread]]]:
    """The core loops of :mod:`bench.hotpath` (bytes in, event out, result in, bytes out)
    with each variant plugged into the connection: CPU microseconds per message,
    ``[(case, {variant: Spread})]``."""
    names = [name for name, _ in VARIANTS]
    convs = dict(VARIANTS)
    out = []
    for case, make, core, _floor, _count in hotpath.CASES:
        if case not in HOTPATH_CASES:
            continue
        msgs = make(messages)
        for name in names:  # warm up: build every hook the loop needs
            with plugged(convs[name]):
                timed(core(msgs[:50]))
        samples: dict[str, list[float]] = {name: [] for name in names}
        for order in _orders(repeats, names):
            for name in order:
                with plugged(convs[name]):
                    samples[name].append(timed(core(msgs)).cpu_us)
        out.append((case, {name: Spread(v) for name, v in samples.items()}))
    return out


# --- the table ------------------------------------------------------------------------------


def _ratio(spread: Spread, base: Spread) -> str:
    return f"{spread.median / base.median:.2f}x"


def render(
    messages: list[tuple[str, str, dict[str, Spread]]],
    hot: list[tuple[str, dict[str, Spread]]],
) -> str:
    """The Markdown tables, and how the variants compare on the core hot path
    (geometric means of the cases)."""
    names = [name for name, _ in VARIANTS]
    lines = [
        "Per message: CPU ns per call, median (min-max); ratio = variant / ours",
        "",
        "| message | op | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for label, op, spreads in messages:
        base = spreads["ours"]
        cells = [base.show()] + [
            f"{spreads[n].show()} {_ratio(spreads[n], base)}" for n in names[1:]
        ]
        lines.append(f"| {label} | {op} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Core hot path (bench.hotpath loops, converter plugged in): CPU us per message, "
        "median (min-max); ratio = variant / ours",
        "",
        "| case | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for case, spreads in hot:
        base = spreads["ours"]
        cells = [base.show(2)] + [
            f"{spreads[n].show(2)} {_ratio(spreads[n], base)}" for n in names[1:]
        ]
        lines.append(f"| {case} | " + " | ".join(cells) + " |")
    if hot:

        def mean(name: str) -> float:
            ratios = [s[name].median / s["ours"].median for _, s in hot]
            return 100 * (statistics.geometric_mean(ratios) - 1)

        lines += [
            "",
            f"On the core hot path (geometric mean of {len(hot)} cases), the same "
            f"without detailed validation is {mean('fast'):+.1f}% and cattrs' loose "
            f"defaults {mean('loose'):+.1f}% against ours.",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.convert_cattrs [--quick]``: print the tables."""
    p = argparse.ArgumentParser(
        prog="python -m bench.convert_cattrs",
        description="mcp_ref._convert's cattrs configuration vs cattrs' defaults: speed",
    )
    p.add_argument("--quick", action="store_true", help="fewer, shorter runs (about 10 s)")
    args = p.parse_args(argv)
    print(
        f"cattrs {importlib.metadata.version('cattrs')}, attrs "
        f"{importlib.metadata.version('attrs')}, Python {sys.version.split()[0]}",
        file=sys.stderr,
    )
    repeats = 5 if args.quick else 9
    msgs = measure_messages(repeats=repeats, run_s=0.01 if args.quick else 0.03)
    hot = measure_hotpath(repeats=repeats, messages=1000 if args.quick else 5000)
    print(render(msgs, hot))
    return 0


if __name__ == "__main__":
    sys.exit(main())

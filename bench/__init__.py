"""mcp-ref's benchmark: ``python -m bench`` (see README.md in this folder).

Modules: :mod:`bench.hotpath` (the sans-IO core vs the JSON floor), :mod:`bench.ours`
and :mod:`bench.load` (our client and server end to end), :mod:`bench.loadgen` (a neutral
load generator for any server process), :mod:`bench.compare` (the official SDKs side by
side), :mod:`bench.profile` (where the time goes), :mod:`bench.report` (tables, JSON),
:mod:`bench.cli` (the command line).
"""

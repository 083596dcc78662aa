"""Example servers built on :mod:`mcp_ref.server`.

* :mod:`mcp_ref.examples.everything`: the reference server, with every feature and the
  names the official conformance suite calls (``mcp-ref serve`` runs it).
"""

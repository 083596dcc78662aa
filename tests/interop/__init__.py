"""Interop tests: mcp_ref against real MCP peers (see peers.py for the installer)."""

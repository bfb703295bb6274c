"""The deployment's MCP servers: which servers a Harness may name, and how the workers start them.

A Harness only names a server (``registered: <name>``); the command, URL and
environment live here, owned by the deployment: rows an admin registers on the
MCP servers page, plus a registry file named by the ``HS_MCP_REGISTRY`` setting
(harness.mcp_registry's format). The studio never starts a command that came
from a Harness.
"""

"""The project's marketing MCP server (campaign conditions, promotion arithmetic)."""

from harness.mcp_server.server import CATALOGUE_ENV, build_server, load_server_catalogue, serve

__all__ = ["CATALOGUE_ENV", "build_server", "load_server_catalogue", "serve"]

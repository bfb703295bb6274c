"""The project's marketing MCP server (campaign conditions, promotion arithmetic).

The server module imports the MCP SDK, so it is loaded only when used.
"""

from typing import Any

from harness.mcp_server.constants import CATALOGUE_ENV

__all__ = ["CATALOGUE_ENV", "build_server", "load_server_catalogue", "serve"]


def __getattr__(name: str) -> Any:
    if name in ("build_server", "load_server_catalogue", "serve"):
        from harness.mcp_server import server

        return getattr(server, name)
    raise AttributeError(name)

"""Names shared by the MCP server and the runtime that starts it (no heavy imports)."""

CATALOGUE_ENV = "HARNESS_CATALOGUE"  # path of the catalogue JSON a started server prices against

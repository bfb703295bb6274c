"""App config for studio.mcpservers: a broken HS_MCP_REGISTRY file is reported by `manage.py
check`."""

from django.apps import AppConfig
from django.core import checks


class McpServersConfig(AppConfig):
    name = "studio.mcpservers"
    label = "mcpservers"
    verbose_name = "MCP servers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        checks.register(registry_file_check)


def registry_file_check(app_configs, **kwargs) -> list[checks.CheckMessage]:
    """The HS_MCP_REGISTRY file reads as a registry (boot, migrate and seed_demo say so when
    not)."""
    from studio.mcpservers.selectors import mcp_registry_file

    _registry, problems = mcp_registry_file()
    return [
        checks.Error(
            str(problem),
            hint="fix the file named by HS_MCP_REGISTRY (docs/studio.md, 'MCP servers')",
            id="mcpservers.E001",
        )
        for problem in problems
    ]

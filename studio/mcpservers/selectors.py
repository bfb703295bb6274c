"""Reads: the studio's one MCP registry (the HS_MCP_REGISTRY file plus the registered rows), and who
uses it.

Everything in the studio that validates a bundle or starts an Agent gets its
registry from :func:`mcp_registry`, never from ``McpRegistry.builtin()``: in the
studio a server exists only because the deployment registered it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from harness.errors import Problem
from harness.mcp_registry import McpRegistry, McpRegistryError
from harness.tools import ToolRegistry, parse_tools
from studio.mcpservers.models import McpServer

PAGE = "/mcp-servers/"
HOW_TO_REGISTER = (
    f"an admin registers it on the MCP servers page ({PAGE}) or in the HS_MCP_REGISTRY file "
    "(docs/studio.md, 'MCP servers')"
)
HOW_TO_TRUST = "the studio never runs a Harness's own commands"
PAGE_SOURCE = "MCP servers page"


def mcp_registry_path() -> Path | None:
    """The file named by HS_MCP_REGISTRY (relative to the checkout), or None when unset."""
    value = settings.HS_MCP_REGISTRY.strip()
    return Path(settings.BASE_DIR, value) if value else None


def mcp_registry_file() -> tuple[McpRegistry, list[Problem]]:
    """The HS_MCP_REGISTRY file's servers (empty when unset), or the problems that make it
    unreadable."""
    path = mcp_registry_path()
    if path is None:
        return McpRegistry(), []
    try:
        return McpRegistry.from_file(path), []
    except McpRegistryError as error:
        return McpRegistry(), error.problems


def mcp_registry() -> McpRegistry:
    """The studio's registry: the page's rows, then the file (which wins on a shared name).

    Raises ``McpRegistryError`` (file:line: field) when the HS_MCP_REGISTRY file cannot be read:
    the studio starts no server rather than guess which ones the deployment meant."""
    from_file, problems = mcp_registry_file()
    if problems:
        raise McpRegistryError(problems)
    rows = list(McpServer.objects.all())
    from_page = McpRegistry(
        {row.name: row.spec() for row in rows}, {row.name: PAGE_SOURCE for row in rows}
    )
    return from_page.merged(from_file).with_hints(
        how_to_register=HOW_TO_REGISTER, how_to_trust=HOW_TO_TRUST
    )


def mcp_server_problems(*, tools: ToolRegistry) -> list[Problem]:
    """Why the studio would not start some of a bundle's MCP servers (at tools.yaml:line); empty
    when none."""
    if not tools.mcp_servers:
        return []
    try:
        registry = mcp_registry()
    except McpRegistryError as error:
        return [
            Problem(
                "tools.yaml",
                tools.line_of.line(("mcp_servers",)),
                "mcp_servers",
                "cannot be checked: the studio's MCP registry "
                f"file is broken ({error.problems[0]}); "
                "an admin fixes the file named by HS_MCP_REGISTRY",
            )
        ]
    return registry.problems(tools, trust_harness_commands=False)


@dataclass
class ServerUsage:
    """The versions naming each registered server, and those declaring their own commands
    (refused)."""

    by_name: dict[str, list] = field(default_factory=dict)
    inline: list = field(default_factory=list)


def mcp_server_usage() -> ServerUsage:
    """Which Harness versions name which server; each distinct tools.yaml is parsed once."""
    from studio.harnesses.models import HarnessVersion
    from studio.harnesses.selectors import blob_texts

    versions = list(
        HarnessVersion.objects.select_related("harness").order_by("harness__name", "number")
    )
    shas = {v.tree.get("tools.yaml") for v in versions} - {None}
    names_by_sha: dict[str, tuple[set[str], bool]] = {}
    for sha, text in blob_texts(shas=list(shas)).items():
        tools, _problems = parse_tools(
            text
        )  # the parsed keys: "mcp\u005fservers" is mcp_servers too
        servers = tools.mcp_servers.values() if tools is not None else ()
        names_by_sha[sha] = (
            {s.registered for s in servers if s.registered},
            any(not s.registered for s in servers),
        )
    usage = ServerUsage()
    for version in versions:
        names, inline = names_by_sha.get(version.tree.get("tools.yaml"), (set(), False))
        for name in names:
            usage.by_name.setdefault(name, []).append(version)
        if inline:
            usage.inline.append(version)
    return usage


def mcp_server_list():
    """Every MCP server registered in the studio (the model's order)."""
    return McpServer.objects.all()


def mcp_server_get(*, server_id: int) -> McpServer:
    """One registered MCP server (``McpServer.DoesNotExist`` when none)."""
    return McpServer.objects.get(pk=server_id)

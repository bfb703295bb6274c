"""The tool registry file, ``tools.yaml``: tools and the MCP servers they come from.

Each tool has a name, a description, JSON-Schema parameters, an optional
timeout (default: the prompt constraint ``tool_timeout_s``) and a binding:
``{builtin: <name from harness.tool_catalogue>}`` or
``{mcp: <server>/<tool>}``. An MCP server entry names a server the deployment
registered (``registered: <name>``, see :mod:`harness.mcp_registry`), or, for
local use only, declares a stdio command or an HTTP URL inline, which the
runtime starts only for a caller that trusts the bundle. The runtime discovers
the servers' tools at start-up and maps them in.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.errors import Problem
from harness.schema import load_checked_yaml, parameter_schema_error
from harness.tool_catalogue import BUILTIN_TOOLS
from harness.yamlio import LineMap, dotted

FILE = "tools.yaml"
TOOL_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
SERVER_NAME_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"

SCHEMA = {
    "type": "object",
    "required": ["tools"],
    "additionalProperties": False,
    "properties": {
        "mcp_servers": {
            "type": "object",
            "propertyNames": {"pattern": SERVER_NAME_PATTERN},
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "registered": {
                        "type": "string",
                        "pattern": SERVER_NAME_PATTERN,
                        "x-hint": "the name of a server in the deployment's MCP registry",
                    },
                    "transport": {"enum": ["stdio", "http"]},
                    "command": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                    "url": {
                        "type": "string",
                        "pattern": "^https?://",
                        "x-hint": "an http:// or https:// URL",
                    },
                    "env": {"type": "object", "additionalProperties": {"type": "string"}},
                    "description": {"type": "string"},
                },
            },
        },
        "tools": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name", "description", "binding"],
                "properties": {
                    "name": {
                        "type": "string",
                        "pattern": TOOL_NAME_PATTERN,
                        "x-hint": "1-64 of A-Z, a-z, 0-9 or '_', not starting with a digit",
                    },
                    "description": {"type": "string", "minLength": 1, "maxLength": 2048},
                    "parameters": {"type": "object"},
                    "timeout_s": {"type": "number", "exclusiveMinimum": 0, "maximum": 120},
                    "binding": {
                        "type": "object",
                        "additionalProperties": False,
                        "minProperties": 1,
                        "maxProperties": 1,
                        "properties": {
                            "builtin": {"type": "string"},
                            "mcp": {
                                "type": "string",
                                "pattern": r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$",
                                "x-hint": "'<server>/<tool>' with a server from mcp_servers",
                            },
                        },
                    },
                },
            },
        },
    },
}


@dataclass(frozen=True)
class McpServerSpec:
    """How one MCP server is reached: a registered name, or an inline stdio command / URL.

    ``registered`` is set for a Harness entry that names a registry server (and
    kept on the resolved spec); ``pass_env`` lists host variables the server may
    receive (registry entries only)."""

    name: str
    transport: str = ""
    command: tuple[str, ...] = ()
    url: str = ""
    env: dict = field(default_factory=dict)
    registered: str = ""
    pass_env: tuple[str, ...] = ()
    description: str = ""


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict
    timeout_s: float | None
    builtin: str | None = None
    mcp_server: str | None = None
    mcp_tool: str | None = None

    @property
    def binding(self) -> str:
        return (
            f"builtin:{self.builtin}" if self.builtin else f"mcp:{self.mcp_server}/{self.mcp_tool}"
        )

    @property
    def role(self) -> str:
        """'load_skill', 'silent' or 'data' (MCP tools are always data tools)."""
        return BUILTIN_TOOLS[self.builtin].role if self.builtin in BUILTIN_TOOLS else "data"

    def openai_schema(self) -> dict:
        """The tool as an OpenAI-style function definition."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass
class ToolRegistry:
    tools: list[ToolSpec]
    mcp_servers: dict[str, McpServerSpec]
    line_of: LineMap = field(default_factory=LineMap, repr=False)

    def get(self, name: str) -> ToolSpec | None:
        return next((t for t in self.tools if t.name == name), None)

    def by_role(self, role: str) -> list[ToolSpec]:
        return [t for t in self.tools if t.role == role]

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tools]


def parse_tools(text: str) -> tuple[ToolRegistry | None, list[Problem]]:
    data, linemap, problems = load_checked_yaml(
        text,
        SCHEMA,
        file=FILE,
        not_mapping="tools.yaml must be a mapping with a 'tools' list (and optional 'mcp_servers')",
    )
    if problems:
        return None, problems
    servers = {}
    for name, entry in (data.get("mcp_servers") or {}).items():
        path = ("mcp_servers", name)
        if entry.get("registered"):
            extra = sorted(set(entry) - {"registered", "description"})
            if extra:
                problems.append(
                    Problem(
                        FILE,
                        linemap.line((*path, extra[0])),
                        f"mcp_servers.{name}",
                        f"a registered server takes only 'registered' and "
                        f"'description'; remove {', '.join(map(repr, extra))} (how it "
                        "starts is the deployment's MCP registry's business)",
                    )
                )
            servers[name] = McpServerSpec(
                name, registered=entry["registered"], description=entry.get("description", "")
            )
            continue
        if "transport" not in entry:
            problems.append(
                Problem(
                    FILE,
                    linemap.line(path),
                    f"mcp_servers.{name}",
                    "name a server of the deployment's MCP registry with "
                    "'registered: <name>' (or, for local use with a trusted "
                    "bundle, declare 'transport' with a 'command' or 'url')",
                )
            )
            continue
        spec, entry_problems = server_from_mapping(
            name, entry, file=FILE, linemap=linemap, path=path
        )
        problems += entry_problems
        if spec is not None:
            servers[name] = spec
    tools, seen = [], {}
    for i, item in enumerate(data["tools"]):
        where = ("tools", i)
        name = item["name"]
        if name in seen:
            problems.append(
                Problem(
                    FILE,
                    linemap.line((*where, "name")),
                    f"tools[{i}].name",
                    f"duplicate tool name '{name}' (first declared at line {seen[name]})",
                )
            )
        seen.setdefault(name, linemap.line((*where, "name")))
        params = item.get("parameters", {"type": "object", "properties": {}})
        reason = parameter_schema_error(params)
        if reason:
            problems.append(
                Problem(
                    FILE,
                    linemap.line((*where, "parameters")),
                    f"tools[{i}].parameters",
                    f"not a valid JSON Schema for arguments: {reason}",
                )
            )
        binding = item["binding"]
        builtin, server, mtool = binding.get("builtin"), None, None
        if builtin is not None and builtin not in BUILTIN_TOOLS:
            problems.append(
                Problem(
                    FILE,
                    linemap.line((*where, "binding", "builtin")),
                    f"tools[{i}].binding.builtin",
                    f"unknown built-in '{builtin}'; known: " + ", ".join(sorted(BUILTIN_TOOLS)),
                )
            )
        if "mcp" in binding:
            server, mtool = binding["mcp"].split("/", 1)
            if server not in servers:
                problems.append(
                    Problem(
                        FILE,
                        linemap.line((*where, "binding", "mcp")),
                        f"tools[{i}].binding.mcp",
                        f"MCP server '{server}' is not declared in mcp_servers"
                        + (f" (declared: {', '.join(servers)})" if servers else ""),
                    )
                )
        tools.append(
            ToolSpec(
                name, item["description"], params, item.get("timeout_s"), builtin, server, mtool
            )
        )
    if problems:
        return None, problems
    return ToolRegistry(tools, servers, linemap), []


def server_from_mapping(
    name: str, entry: dict, *, file: str, linemap: LineMap | None = None, path: tuple = ()
) -> tuple[McpServerSpec | None, list[Problem]]:
    """One schema-checked inline or registry entry -> its spec (stdio needs a command, http a
    url)."""
    linemap = linemap or LineMap()
    at = linemap.line(path)
    where = dotted(path) or name
    problems = []
    if entry["transport"] == "stdio" and not entry.get("command"):
        problems.append(
            Problem(
                file, at, f"{where}.command", "a stdio server needs a command (a list of strings)"
            )
        )
    if entry["transport"] == "http" and not entry.get("url"):
        problems.append(Problem(file, at, f"{where}.url", "an http server needs a url"))
    if problems:
        return None, problems
    return McpServerSpec(
        name,
        entry["transport"],
        tuple(entry.get("command") or ()),
        entry.get("url", ""),
        dict(entry.get("env") or {}),
        pass_env=tuple(entry.get("pass_env") or ()),
        description=entry.get("description", ""),
    ), []

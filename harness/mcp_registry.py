"""The deployment's MCP server registry: which MCP servers a Harness may use, and how they start.

A Harness is data an operator edits, so it never says how to start a process.
Its ``tools.yaml`` names a server the deployment registered
(``mcp_servers: {marketing: {registered: marketing}}``); the registry, owned by
whoever runs the runtime, holds the command or URL and the environment
variables that server may receive. The runtime resolves a bundle's servers
against the registry before anything starts and refuses, with every reason at
once, a server that is not registered.

A bundle may still carry an inline server (``transport`` + ``command``/``url``),
for local experiments: the runtime starts it only when the caller trusts the
bundle (``trust_harness_commands=True``; the CLIs' ``--trust-harness-commands``).
The studio and its workers never pass that.

Registry sources:

- :meth:`McpRegistry.builtin`: this project's own marketing server, started
  with this interpreter (the CLIs' default);
- a registry file (YAML, :data:`SCHEMA`), named by ``$HARNESS_MCP_REGISTRY`` for
  the CLIs (:meth:`McpRegistry.default`) or by the studio's settings;
- the studio's admin page (rows turned into a registry by the studio).

A server's process gets a minimal environment: the MCP SDK's defaults (PATH,
HOME, USER, ...), the registry entry's fixed ``env`` values, and the host
variables named in its ``pass_env`` list; nothing else of the caller's
environment (keys, database URLs) reaches it.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.errors import HarnessValidationError, Problem
from harness.schema import load_checked_yaml
from harness.tools import SERVER_NAME_PATTERN, McpServerSpec, ToolRegistry, server_from_mapping

REGISTRY_ENV = "HARNESS_MCP_REGISTRY"
TRUST_FLAG = "--trust-harness-commands"
MAX_REGISTRY_BYTES = 256 * 1024
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"

SERVER_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["transport"],
    "properties": {
        "transport": {"enum": ["stdio", "http"]},
        "command": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "minItems": 1,
            "maxItems": 64,
        },
        "url": {
            "type": "string",
            "pattern": "^https?://",
            "maxLength": 2048,
            "x-hint": "an http:// or https:// URL",
        },
        "env": {
            "type": "object",
            "maxProperties": 64,
            "propertyNames": {"pattern": ENV_NAME_PATTERN},
            "additionalProperties": {"type": "string", "maxLength": 4096},
        },
        "pass_env": {
            "type": "array",
            "maxItems": 64,
            "items": {
                "type": "string",
                "pattern": ENV_NAME_PATTERN,
                "x-hint": "an environment variable name (A-Z, 0-9, _)",
            },
        },
        "description": {"type": "string", "maxLength": 2048},
    },
}

SCHEMA = {
    "type": "object",
    "required": ["servers"],
    "additionalProperties": False,
    "properties": {
        "servers": {
            "type": "object",
            "propertyNames": {"pattern": SERVER_NAME_PATTERN},
            "additionalProperties": SERVER_SCHEMA,
        },
    },
}

CLI_HOW_TO_REGISTER = (
    f"register it in a registry file named by ${REGISTRY_ENV} (docs/security.md, 'MCP servers')"
)
CLI_HOW_TO_TRUST = f"for a bundle you wrote yourself, pass {TRUST_FLAG} to run it as it is"


class McpServerRefused(HarnessValidationError):
    """A bundle names MCP servers this runtime will not start; ``problems`` says which and why."""

    def __init__(self, problems: list[Problem]):
        super().__init__(problems)
        self.args = (
            "MCP servers refused; nothing was started:\n"
            + "\n".join(f"  {p}" for p in self.problems),
        )


class McpRegistryError(HarnessValidationError):
    """A registry file that cannot be read; ``problems`` name its file:line: field."""

    def __init__(self, problems: list[Problem]):
        super().__init__(problems)
        self.args = (
            f"{len(self.problems)} problem(s) in the MCP server registry:\n"
            + "\n".join(f"  {p}" for p in self.problems),
        )


@dataclass(frozen=True)
class McpRegistry:
    """Registered MCP servers by name, with where each was registered."""

    servers: dict[str, McpServerSpec] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    how_to_register: str = CLI_HOW_TO_REGISTER
    how_to_trust: str = CLI_HOW_TO_TRUST

    # --- sources ---------------------------------------------------------------
    @classmethod
    def builtin(cls) -> McpRegistry:
        """This project's marketing MCP server, started with this interpreter."""
        spec = McpServerSpec(
            "marketing",
            "stdio",
            (sys.executable, "-m", "harness", "serve-mcp"),
            description="Campaign rules and promotion arithmetic "
            "(this project's marketing MCP server).",
        )
        return cls({"marketing": spec}, {"marketing": "built in"})

    @classmethod
    def parse(cls, text: str, *, file: str) -> tuple[McpRegistry | None, list[Problem]]:
        """A registry file's text -> (registry, problems); problems name file:line and field."""
        if len(text.encode("utf-8", "surrogatepass")) > MAX_REGISTRY_BYTES:
            return None, [
                Problem(
                    file,
                    0,
                    "(file)",
                    f"larger than {MAX_REGISTRY_BYTES} bytes; a registry lists servers, not data",
                )
            ]
        data, linemap, problems = load_checked_yaml(
            text,
            SCHEMA,
            file=file,
            not_mapping="an MCP registry is a mapping with a 'servers' mapping "
            "(name -> transport, command or url, env, pass_env)",
        )
        if problems:
            return None, problems
        servers, sources = {}, {}
        for name, entry in data["servers"].items():
            spec, entry_problems = server_from_mapping(
                name, entry, file=file, linemap=linemap, path=("servers", name)
            )
            problems += entry_problems
            if spec is not None:
                servers[name] = spec
                sources[name] = f"{file}:{linemap.line(('servers', name))}"
        if problems:
            return None, problems
        return cls(servers, sources), []

    @classmethod
    def from_file(cls, path: str | Path) -> McpRegistry:
        """Read a registry file; raises ``McpRegistryError`` naming file:line: field."""
        path = Path(path)
        try:
            with path.open("rb") as fh:
                raw = fh.read(MAX_REGISTRY_BYTES + 1)
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise McpRegistryError(
                [Problem(str(path), 0, "(file)", "not UTF-8 text; a registry file is YAML")]
            ) from None
        except OSError as exc:
            raise McpRegistryError(
                [
                    Problem(
                        str(path),
                        0,
                        "(file)",
                        f"cannot read the MCP registry: {exc.strerror or exc}",
                    )
                ]
            ) from None
        registry, problems = cls.parse(text, file=str(path))
        if problems:
            raise McpRegistryError(problems)
        return registry

    @classmethod
    def default(cls) -> McpRegistry:
        """The CLIs' registry: the built-in server, plus the file named by $HARNESS_MCP_REGISTRY."""
        registry = cls.builtin()
        path = os.environ.get(REGISTRY_ENV, "").strip()
        return registry.merged(cls.from_file(path)) if path else registry

    def merged(self, other: McpRegistry) -> McpRegistry:
        """This registry with ``other``'s servers added; ``other`` wins on a shared name."""
        return replace(
            self,
            servers={**self.servers, **other.servers},
            sources={**self.sources, **other.sources},
        )

    def with_hints(self, *, how_to_register: str, how_to_trust: str) -> McpRegistry:
        """The same servers, with what a refusal tells the reader to do (the studio's own words)."""
        return replace(self, how_to_register=how_to_register, how_to_trust=how_to_trust)

    # --- resolving a bundle's servers -----------------------------------------
    def problems(
        self, tools: ToolRegistry, *, trust_harness_commands: bool = False
    ) -> list[Problem]:
        """Why some of a bundle's MCP servers would not start (empty when all resolve)."""
        return self._resolve(tools, trust_harness_commands)[1]

    def resolve(
        self, tools: ToolRegistry, *, trust_harness_commands: bool = False
    ) -> dict[str, McpServerSpec]:
        """The bundle's servers as this registry starts them; raises ``McpServerRefused``."""
        resolved, problems = self._resolve(tools, trust_harness_commands)
        if problems:
            raise McpServerRefused(problems)
        return resolved

    def _resolve(
        self, tools: ToolRegistry, trust: bool
    ) -> tuple[dict[str, McpServerSpec], list[Problem]]:
        resolved: dict[str, McpServerSpec] = {}
        problems: list[Problem] = []
        for name, spec in tools.mcp_servers.items():
            line = tools.line_of.line(("mcp_servers", name))
            if spec.registered:
                entry = self.servers.get(spec.registered)
                if entry is None:
                    known = ", ".join(sorted(self.servers)) or "none"
                    problems.append(
                        Problem(
                            "tools.yaml",
                            line,
                            f"mcp_servers.{name}.registered",
                            f"'{spec.registered}' is not a registered MCP server here "
                            f"(registered: {known}); {self.how_to_register}",
                        )
                    )
                    continue
                resolved[name] = replace(entry, name=name, registered=spec.registered)
            elif trust:
                resolved[name] = spec
            else:
                what = (" ".join(spec.command) if spec.transport == "stdio" else spec.url)[:120]
                problems.append(
                    Problem(
                        "tools.yaml",
                        line,
                        f"mcp_servers.{name}",
                        "declares its own "
                        f"{'command' if spec.transport == 'stdio' else 'URL'} ({what}); "
                        "a Harness is data and its server commands are not run. Name a registered "
                        f"server instead with 'registered: <name>' (registered: "
                        f"{', '.join(sorted(self.servers)) or 'none'}; to add one, "
                        f"{self.how_to_register}); {self.how_to_trust}",
                    )
                )
        return resolved, problems


def server_environment(spec: McpServerSpec, extra: dict[str, str] | None = None) -> dict[str, str]:
    """What a server process receives on top of the MCP SDK's minimal defaults."""
    env = {key: os.environ[key] for key in spec.pass_env if key in os.environ}
    env.update(spec.env)
    env.update(extra or {})
    return env


def add_trust_flag(parser: argparse.ArgumentParser) -> None:
    """The CLIs' one opt-in to run a bundle's inline MCP server commands."""
    parser.add_argument(
        TRUST_FLAG,
        dest="trust_harness_commands",
        action="store_true",
        help="start MCP servers the Harness declares inline (its own command or "
        "URL); only for a bundle you trust. Without it only servers from the "
        f"registry (built in, or ${REGISTRY_ENV}) are started",
    )


__all__ = [
    "MAX_REGISTRY_BYTES",
    "REGISTRY_ENV",
    "SCHEMA",
    "TRUST_FLAG",
    "McpRegistry",
    "McpRegistryError",
    "McpServerRefused",
    "add_trust_flag",
    "server_environment",
]

"""Writes for registered MCP servers: save (validated by harness.mcp_registry's own schema), delete,
the demo's.

Every change is an audit event with the server before and after. The audit log
is readable by every role, so it records the names of fixed environment values,
never the values.
"""

from __future__ import annotations

import sys

from django.contrib.auth.models import User
from django.db import transaction

from harness.errors import Problem
from harness.mcp_registry import SCHEMA
from harness.schema import schema_problems
from harness.tools import server_from_mapping
from harness.yamlio import LineMap
from studio.audit.services import audit_record
from studio.mcpservers.models import McpServer
from studio.mcpservers.selectors import mcp_registry_file, mcp_registry_path

FIELDS = ("name", "transport", "command", "url", "env", "pass_env", "description")
MAX_FIELD_CHARS = 16 * 1024
FORM = "MCP server form"
DEMO_SERVER = "marketing"


class McpServerFormError(ValueError):
    """Fields of a server entry that are not valid: ``errors`` maps each form field to its
    messages."""

    def __init__(self, errors: dict[str, list[str]]):
        self.errors = errors
        super().__init__(
            "; ".join(
                f"{name}: {message}" for name, messages in errors.items() for message in messages
            )
        )


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.replace("\r\n", "\n").split("\n") if line.strip()]


def _entry_from_form(values: dict[str, str], errors: dict[str, list[str]]) -> dict:
    """The form's text fields as a registry entry; what cannot be read goes into ``errors``."""
    for name in FIELDS:
        if len(values.get(name, "")) > MAX_FIELD_CHARS:
            errors.setdefault(name, []).append(f"longer than {MAX_FIELD_CHARS} characters")
    entry: dict = {"transport": values["transport"]}
    if values["transport"] == McpServer.STDIO and _lines(values["command"]):
        entry["command"] = _lines(values["command"])
    if values["transport"] == McpServer.HTTP and values["url"].strip():
        entry["url"] = values["url"].strip()
    env = {}
    for number, line in enumerate(_lines(values["env"]), start=1):
        key, equals, value = line.partition("=")
        if not equals:
            errors.setdefault("env", []).append(f"line {number}: {line[:60]!r} is not NAME=value")
            continue
        env[key.strip()] = value.strip()
    if env:
        entry["env"] = env
    pass_env = values["pass_env"].replace(",", " ").split()
    if pass_env:
        entry["pass_env"] = pass_env
    if values["description"].strip():
        entry["description"] = values["description"].strip()
    return entry


def _form_field(problem: Problem, name: str) -> str:
    """'servers.<name>.command[0]' -> 'command'; the server's key itself -> 'name'."""
    prefix = f"servers.{name}"
    if not problem.field.startswith(prefix + "."):
        return "name"
    rest = problem.field[len(prefix) + 1 :]
    field = rest.split(".", 1)[0].split("[", 1)[0]
    return field if field in FIELDS else "name"


def mcp_server_entry_errors(*, name: str, entry: dict) -> dict[str, list[str]]:
    """The registry's own rules (harness.mcp_registry.SCHEMA, then stdio/http needs) by form
    field."""
    data = {"servers": {name: entry}}
    problems = schema_problems(data, SCHEMA, linemap=LineMap(), file=FORM)
    if not problems:
        _spec, problems = server_from_mapping(name, entry, file=FORM, path=("servers", name))
    errors: dict[str, list[str]] = {}
    for problem in problems:
        errors.setdefault(_form_field(problem, name), []).append(problem.message)
    return errors


def _snapshot(server: McpServer | None) -> dict | None:
    if server is None:
        return None
    return {
        "transport": server.transport,
        "command": list(server.command),
        "url": server.url,
        "env": sorted(server.env),
        "pass_env": list(server.pass_env),
        "description": server.description,
    }


@transaction.atomic
def mcp_server_save(
    *, server: McpServer | None, values: dict[str, str], actor: User | None
) -> McpServer:
    """Create or update a registered server from the form's text fields; nothing is saved when any
    is wrong.

    ``values``: name, transport, command (one argument per line), url, env (NAME=value per line),
    pass_env (names separated by spaces, commas or lines), description."""
    values = {name: str(values.get(name) or "") for name in FIELDS}
    name = values["name"].strip()
    errors: dict[str, list[str]] = {}
    if values["transport"] not in dict(McpServer.TRANSPORTS):
        errors["transport"] = [f"choose one of {', '.join(dict(McpServer.TRANSPORTS))}"]
        values["transport"] = McpServer.STDIO
    entry = _entry_from_form(values, errors)
    for field, messages in mcp_server_entry_errors(name=name, entry=entry).items():
        errors.setdefault(field, []).extend(messages)
    if McpServer.objects.filter(name=name).exclude(pk=server.pk if server else None).exists():
        errors.setdefault("name", []).append(f"an MCP server called {name!r} is already registered")
    from_file, _problems = mcp_registry_file()
    if name in from_file.servers:
        errors.setdefault("name", []).append(
            f"the HS_MCP_REGISTRY file ({mcp_registry_path()}) "
            f"registers {name!r} and the file wins; "
            "choose another name or change the file"
        )
    if errors:
        raise McpServerFormError(errors)
    before = _snapshot(server)
    if server is None:
        server = McpServer(created_by=actor)
    else:
        server = McpServer.objects.select_for_update().get(pk=server.pk)
    old_env = dict(server.env)
    server.name, server.transport = name, entry["transport"]
    server.command, server.url = entry.get("command", []), entry.get("url", "")
    server.env, server.pass_env = entry.get("env", {}), entry.get("pass_env", [])
    server.description = entry.get("description", "")
    server.updated_by = actor
    server.save()
    data = {"before": before, "after": _snapshot(server)}
    changed = sorted(
        k for k in set(old_env) | set(server.env) if old_env.get(k) != server.env.get(k)
    )
    if before is not None and changed:
        data["env_values_changed"] = changed
    audit_record(
        actor=actor,
        action="mcp_server.create" if before is None else "mcp_server.update",
        target=f"MCP server {server.name}",
        data=data,
    )
    return server


@transaction.atomic
def mcp_server_delete(*, server: McpServer, actor: User | None) -> None:
    """Unregister a server: Harness versions naming it are refused until it is registered again."""
    audit_record(
        actor=actor,
        action="mcp_server.delete",
        target=f"MCP server {server.name}",
        data={"before": _snapshot(server), "after": None},
    )
    server.delete()


def mcp_server_ensure_demo(*, actor: User | None = None) -> McpServer | None:
    """The demo's marketing server, started with this interpreter (the demo set-up; idempotent).

    None when the HS_MCP_REGISTRY file registers it already (the deployment's own entry stands)."""
    existing = McpServer.objects.filter(name=DEMO_SERVER).first()
    if existing is not None:
        return existing
    if DEMO_SERVER in mcp_registry_file()[0].servers:
        return None
    return mcp_server_save(
        server=None,
        actor=actor,
        values={
            "name": DEMO_SERVER,
            "transport": McpServer.STDIO,
            "command": "\n".join([sys.executable, "-m", "harness", "serve-mcp"]),
            "description": "Campaign rules and promotion arithmetic "
            "(this project's marketing MCP server).",
        },
    )

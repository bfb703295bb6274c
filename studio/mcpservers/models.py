"""A registered MCP server: a name a Harness may give, and how the workers start or reach it."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from harness.tools import McpServerSpec


class McpServer(models.Model):
    STDIO = "stdio"
    HTTP = "http"
    TRANSPORTS = [
        (STDIO, "stdio: the worker starts a command and talks to it over stdin/stdout"),
        (HTTP, "http: the worker connects to a running server's streamable-HTTP URL"),
    ]

    name = models.CharField(
        max_length=64,
        unique=True,
        help_text="What a Harness names in tools.yaml: mcp_servers: {x: {registered: <name>}}.",
    )
    transport = models.CharField(max_length=8, choices=TRANSPORTS)
    command = models.JSONField(
        default=list,
        blank=True,
        help_text="stdio: the program and its arguments, e.g. [/srv/venv/bin/python, -m, srv].",
    )
    url = models.CharField(
        max_length=2048, blank=True, help_text="http: e.g. http://127.0.0.1:8765/mcp"
    )
    env = models.JSONField(
        default=dict, blank=True, help_text="Fixed environment values {NAME: value}."
    )
    pass_env = models.JSONField(
        default=list,
        blank=True,
        help_text="Names of the worker's environment variables the server may receive.",
    )
    description = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "MCP server"

    def __str__(self) -> str:
        return self.name

    def entry(self) -> dict:
        """The row as a registry-file entry (harness.mcp_registry.SERVER_SCHEMA)."""
        entry: dict = {"transport": self.transport}
        if self.transport == self.STDIO:
            entry["command"] = list(self.command)
        else:
            entry["url"] = self.url
        if self.env:
            entry["env"] = dict(self.env)
        if self.pass_env:
            entry["pass_env"] = list(self.pass_env)
        if self.description:
            entry["description"] = self.description
        return entry

    def spec(self) -> McpServerSpec:
        return McpServerSpec(
            self.name,
            self.transport,
            tuple(self.command) if self.transport == self.STDIO else (),
            self.url if self.transport == self.HTTP else "",
            dict(self.env),
            pass_env=tuple(self.pass_env),
            description=self.description,
        )

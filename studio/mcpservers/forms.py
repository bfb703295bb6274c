"""The form of an MCP server entry, as typed (``services.mcp_server_save`` reads each field into the
registry's schema and names what is wrong, field by field)."""

from __future__ import annotations

from django import forms

from studio.forms import TypedText


class McpServerForm(forms.Form):
    name = TypedText()
    transport = TypedText()
    command = TypedText(help_text="One argument per line.")
    url = TypedText()
    env = TypedText(help_text="NAME=value, one per line.")
    pass_env = TypedText(
        help_text="Names of the worker's variables passed on, separated by spaces."
    )
    description = TypedText()

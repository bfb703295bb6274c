"""The MCP servers page: registered servers (admin only), and those the HS_MCP_REGISTRY file adds
(read-only)."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from studio.accounts.decorators import requires
from studio.lookups import found_or_404
from studio.mcpservers.forms import McpServerForm
from studio.mcpservers.models import McpServer
from studio.mcpservers.selectors import (
    mcp_registry_file,
    mcp_registry_path,
    mcp_server_get,
    mcp_server_list,
    mcp_server_usage,
)
from studio.mcpservers.services import (
    FIELDS,
    McpServerFormError,
    mcp_server_delete,
    mcp_server_save,
)


@require_GET
@requires("mcp.manage")
def server_list(request):
    from_file, file_problems = mcp_registry_file()
    usage = mcp_server_usage()
    rows = [
        {
            "server": s,
            "shadowed": s.name in from_file.servers,
            "versions": usage.by_name.get(s.name, []),
        }
        for s in mcp_server_list()
    ]
    file_rows = [
        {
            "spec": spec,
            "source": from_file.sources.get(name, ""),
            "versions": usage.by_name.get(name, []),
        }
        for name, spec in sorted(from_file.servers.items())
    ]
    return render(
        request,
        "mcpservers/server_list.html",
        {
            "rows": rows,
            "file_rows": file_rows,
            "file_path": mcp_registry_path(),
            "file_problems": file_problems,
            "inline_versions": usage.inline,
        },
    )


def _values_of(server: McpServer) -> dict[str, str]:
    return {
        "name": server.name,
        "transport": server.transport,
        "command": "\n".join(server.command),
        "url": server.url,
        "env": "\n".join(f"{k}={v}" for k, v in server.env.items()),
        "pass_env": " ".join(server.pass_env),
        "description": server.description,
    }


def _form(request, server: McpServer | None):
    context = {"server": server, "transports": McpServer.TRANSPORTS}
    if request.method == "POST":
        form = McpServerForm(request.POST)
        form.is_valid()
        values = {
            name: form.cleaned_data.get(name, "") for name in FIELDS
        }  # a field it cannot read: empty
        try:
            if form.errors:
                raise McpServerFormError(
                    {name: list(errors) for name, errors in form.errors.items()}
                )
            saved = mcp_server_save(server=server, values=values, actor=request.user)
        except McpServerFormError as error:
            return render(
                request,
                "mcpservers/server_form.html",
                {**context, "values": values, "errors": error.errors},
                status=400,
            )
        messages.success(request, f"Saved MCP server {saved.name}.")
        return redirect("mcpservers:server_list")
    values = (
        _values_of(server)
        if server
        else {**dict.fromkeys(FIELDS, ""), "transport": McpServer.STDIO}
    )
    return render(
        request, "mcpservers/server_form.html", {**context, "values": values, "errors": {}}
    )


@require_http_methods(["GET", "POST"])
@requires("mcp.manage")
def server_create(request):
    return _form(request, None)


@require_http_methods(["GET", "POST"])
@requires("mcp.manage")
def server_edit(request, server_id: int):
    return _form(
        request, found_or_404(mcp_server_get, f"no MCP server #{server_id}", server_id=server_id)
    )


@require_POST
@requires("mcp.manage")
def server_delete(request, server_id: int):
    server = found_or_404(mcp_server_get, f"no MCP server #{server_id}", server_id=server_id)
    mcp_server_delete(server=server, actor=request.user)
    messages.success(
        request,
        f"Unregistered MCP server {server.name}; Harness versions naming it are refused "
        "until it is registered again.",
    )
    return redirect("mcpservers:server_list")

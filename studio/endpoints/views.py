"""Model endpoint registry pages and the test-connection action."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from studio.accounts.decorators import requires
from studio.endpoints.models import ModelEndpoint
from studio.endpoints.selectors import endpoint_list as select_endpoints
from studio.endpoints.services import EndpointError, endpoint_save, endpoint_test_start


@require_GET
@requires("studio.view")
def endpoint_list(request):
    return render(request, "endpoints/endpoint_list.html", {"endpoints": select_endpoints()})


def _form(request, endpoint: ModelEndpoint | None):
    values = {
        "name": request.POST.get("name", ""),
        "route": request.POST.get("route", ModelEndpoint.OPENAI),
        "base_url": request.POST.get("base_url", ""),
        "model": request.POST.get("model", ""),
        "api_key_env": request.POST.get("api_key_env", ""),
        "script_path": request.POST.get("script_path", ""),
        "description": request.POST.get("description", ""),
    }
    if request.method == "POST":
        try:
            saved = endpoint_save(endpoint=endpoint, actor=request.user, **values)
        except EndpointError as error:
            return render(
                request,
                "endpoints/endpoint_form.html",
                {"endpoint": endpoint, "values": values, "errors": str(error).split("; "), "routes": ModelEndpoint.ROUTES},
                status=400,
            )
        messages.success(request, f"Saved endpoint {saved.name}.")
        return redirect("endpoints:endpoint_list")
    if endpoint is not None:
        values = {k: getattr(endpoint, k) for k in values}
    return render(request, "endpoints/endpoint_form.html", {"endpoint": endpoint, "values": values, "routes": ModelEndpoint.ROUTES})


@require_http_methods(["GET", "POST"])
@requires("endpoint.manage")
def endpoint_create(request):
    return _form(request, None)


@require_http_methods(["GET", "POST"])
@requires("endpoint.manage")
def endpoint_edit(request, endpoint_id: int):
    return _form(request, get_object_or_404(ModelEndpoint, pk=endpoint_id))


@require_POST
@requires("endpoint.manage")
def endpoint_test(request, endpoint_id: int):
    endpoint = get_object_or_404(ModelEndpoint, pk=endpoint_id)
    job = endpoint_test_start(endpoint=endpoint, actor=request.user)
    return redirect("jobs:job_detail", job_id=job.pk)

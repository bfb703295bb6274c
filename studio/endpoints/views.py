"""Model endpoint registry pages, the test-connection action, and the endpoint secrets (admins
only)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TypeVar

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from studio.accounts.decorators import requires
from studio.endpoints import selectors
from studio.endpoints.forms import EndpointForm, RoleEndpointForm, SecretForm
from studio.endpoints.models import EndpointSecret, ModelEndpoint
from studio.endpoints.selectors import endpoint_list as select_endpoints
from studio.endpoints.selectors import role_endpoints
from studio.endpoints.services import (
    EndpointError,
    endpoint_save,
    endpoint_secret_delete,
    endpoint_secret_save,
    endpoint_test_start,
    role_endpoint_set,
)
from studio.forms import form_problems
from studio.lookups import found_or_404

T = TypeVar("T")


def _list_page(request, errors: list[str] | None = None, status: int = 200):
    return render(
        request,
        "endpoints/endpoint_list.html",
        {"endpoints": select_endpoints(), "roles": role_endpoints(), "errors": errors or []},
        status=status,
    )


@require_GET
@requires("studio.view")
def endpoint_list(request):
    return _list_page(request)


@require_POST
@requires("endpoint.manage")
def role_set(request):
    """Choose the endpoint a model role (judge, diagnoser) calls."""
    form = RoleEndpointForm(request.POST)
    if not form.is_valid():
        return _list_page(request, errors=form_problems(form), status=400)
    role = form.cleaned_data["role"]
    try:
        chosen = role_endpoint_set(
            role=role, endpoint_name=form.cleaned_data["endpoint"], actor=request.user
        )
    except EndpointError as error:
        return _list_page(request, errors=[str(error)], status=400)
    messages.success(
        request,
        f"The {role} calls {chosen.endpoint.name}." if chosen else f"The {role} has no endpoint.",
    )
    return redirect("endpoints:endpoint_list")


def _saved(form, save: Callable[..., T]) -> tuple[T | None, list[str]]:
    """What ``save(**form.cleaned_data)`` saved, or each problem as a line naming its field (the
    form's first: nothing is saved while a field cannot be read; then the service's)."""
    errors = form_problems(form)
    if errors:
        return None, errors
    try:
        return save(**form.cleaned_data), []
    except EndpointError as error:
        return None, str(error).split("; ")


def _form(request, endpoint: ModelEndpoint | None):
    context = {
        "endpoint": endpoint,
        "routes": ModelEndpoint.ROUTES,
        "secrets": selectors.secret_names(),
    }
    if request.method == "POST":
        form = EndpointForm(request.POST)
        saved, errors = _saved(form, partial(endpoint_save, endpoint=endpoint, actor=request.user))
        if saved is not None:
            messages.success(request, f"Saved endpoint {saved.name}.")
            return redirect("endpoints:endpoint_list")
        return render(
            request,
            "endpoints/endpoint_form.html",
            {**context, "values": form.cleaned_data, "errors": errors},
            status=400,
        )
    values = {"route": ModelEndpoint.OPENAI}
    if endpoint is not None:
        values = {
            k: getattr(endpoint, k) for k in EndpointForm.base_fields if k != "api_key_secret"
        }
        values["api_key_secret"] = endpoint.api_key_secret.name if endpoint.api_key_secret else ""
    return render(request, "endpoints/endpoint_form.html", {**context, "values": values})


@require_http_methods(["GET", "POST"])
@requires("endpoint.manage")
def endpoint_create(request):
    return _form(request, None)


@require_http_methods(["GET", "POST"])
@requires("endpoint.manage")
def endpoint_edit(request, endpoint_id: int):
    return _form(
        request,
        found_or_404(
            selectors.endpoint_get, f"no endpoint #{endpoint_id}", endpoint_id=endpoint_id
        ),
    )


@require_POST
@requires("endpoint.manage")
def endpoint_test(request, endpoint_id: int):
    endpoint = found_or_404(
        selectors.endpoint_get, f"no endpoint #{endpoint_id}", endpoint_id=endpoint_id
    )
    job = endpoint_test_start(endpoint=endpoint, actor=request.user)
    return redirect("jobs:job_detail", job_id=job.pk)


@require_GET
@requires("endpoint_secret.manage")
def secret_list(request):
    secrets = selectors.secret_list()
    return render(request, "endpoints/secret_list.html", {"secrets": secrets})


def _secret_form(request, secret: EndpointSecret | None):
    if request.method == "POST":
        form = SecretForm(request.POST)
        saved, errors = _saved(
            form, partial(endpoint_secret_save, secret=secret, actor=request.user)
        )
        if saved is not None:
            messages.success(request, f"Saved endpoint secret {saved.name}.")
            return redirect("endpoints:secret_list")
        values = {
            **form.cleaned_data,
            "value": "",
        }  # a key typed in is not sent back, even on an error
        return render(
            request,
            "endpoints/secret_form.html",
            {"secret": secret, "values": values, "errors": errors},
            status=400,
        )
    values = (
        {
            "name": secret.name,
            "from_env": secret.from_env,
            "allowed_origins": secret.allowed_origins,
            "description": secret.description,
        }
        if secret
        else {}
    )
    return render(request, "endpoints/secret_form.html", {"secret": secret, "values": values})


@require_http_methods(["GET", "POST"])
@requires("endpoint_secret.manage")
def secret_create(request):
    return _secret_form(request, None)


@require_http_methods(["GET", "POST"])
@requires("endpoint_secret.manage")
def secret_edit(request, secret_id: int):
    return _secret_form(
        request, found_or_404(selectors.secret_get, f"no secret #{secret_id}", secret_id=secret_id)
    )


@require_POST
@requires("endpoint_secret.manage")
def secret_delete(request, secret_id: int):
    secret = found_or_404(selectors.secret_get, f"no secret #{secret_id}", secret_id=secret_id)
    try:
        endpoint_secret_delete(secret=secret, actor=request.user)
    except EndpointError as error:
        return render(
            request,
            "endpoints/secret_list.html",
            {
                "secrets": selectors.secret_list(),
                "errors": [str(error)],
            },
            status=400,
        )
    messages.success(request, f"Removed endpoint secret {secret.name}.")
    return redirect("endpoints:secret_list")

"""Pages of the compatibility matrix: the matrix (every role), asking for a cell, naming a label's
endpoint.

Views parse, authorise and call a selector or a service; every figure they show is
``evaluation.compatibility``'s, read through ``studio.compatibility.selectors``.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from studio.accounts.decorators import requires
from studio.compatibility import selectors
from studio.compatibility.forms import CellRequestForm, LabelServerForm
from studio.compatibility.services import (
    CompatibilityError,
    NoCompatibilitySet,
    cell_request,
    label_server_set,
)
from studio.forms import form_problem, valid_data
from studio.harnesses.models import Harness
from studio.lookups import found_or_404


def _harness(name: str | None) -> Harness | None:
    if name:
        return found_or_404(selectors.matrix_harness, f"no Harness named {name!r}", name=name)
    return selectors.matrix_harness()


def _matrix_url(harness: Harness | None) -> str:
    url = reverse("compatibility:matrix")
    return f"{url}?harness={harness.name}" if harness is not None else url


@require_GET
@requires("compatibility.view")
def matrix_view(request):
    harness = _harness(request.GET.get("harness"))
    context = {
        "harness": harness,
        "alarms": selectors.retrain_alarms(),
        "served_labels": selectors.SERVED_LABELS,
        **selectors.matrix_choices(harness=harness),
    }
    if harness is not None:
        context.update(selectors.matrix(harness=harness))
        from studio.jobs.services import job_can_cancel

        for row in context["rows"]:  # a cell's run can be cancelled by whoever may cancel its job
            for shown in row.cells:
                job = shown.cell.run.job if shown.cell is not None else None
                shown.can_cancel = job is not None and job_can_cancel(job=job, user=request.user)
    template = (
        "compatibility/_matrix.html" if request.GET.get("partial") else "compatibility/matrix.html"
    )
    return render(request, template, context)


@require_POST
@requires("compatibility.request")
def cell_request_view(request):
    """Ask for the cell of an endpoint on a version (the existing cell when there is one)."""
    try:
        ids = valid_data(CellRequestForm(request.POST), error=CompatibilityError)
        endpoint = selectors.endpoint_or_none(pk=ids["endpoint"])
        version = selectors.version_or_none(pk=ids["version"])
        if endpoint is None:
            raise CompatibilityError("endpoint: no such endpoint; pick one of the Endpoints page")
        if version is None:
            raise CompatibilityError("version: no such Harness version")
        cell = cell_request(
            endpoint=endpoint,
            version=version,
            actor=request.user,
            reason=f"asked for by {request.user.username}",
        )
    except (
        NoCompatibilitySet
    ) as error:  # the studio's state, not the request's fault: said on the page
        messages.error(request, str(error))
        return redirect(_matrix_url(version.harness))
    except CompatibilityError as error:
        return HttpResponseBadRequest(str(error))
    messages.success(
        request,
        f"Cell of {endpoint.name} on {version.harness.name} v{version.number}: evaluation "
        f"run #{cell.run_id} ({cell.run.status}).",
    )
    return redirect(_matrix_url(version.harness))


@require_POST
@requires("endpoint.manage")
def label_server_view(request):
    """Name the endpoint that serves a Harness's production or staging label (empty: none)."""
    form = LabelServerForm(request.POST)
    if not form.is_valid():
        return HttpResponseBadRequest(form_problem(form))
    harness, label = form.cleaned_data["harness"], form.cleaned_data["label"]
    try:
        endpoint = None
        if form.cleaned_data["endpoint"] is not None:
            endpoint = selectors.endpoint_or_none(pk=form.cleaned_data["endpoint"])
            if endpoint is None:
                raise CompatibilityError(
                    "endpoint: no such endpoint; pick one of the Endpoints page"
                )
        label_server_set(harness=harness, label=label, endpoint=endpoint, actor=request.user)
    except CompatibilityError as error:
        return HttpResponseBadRequest(str(error))
    except PermissionDenied:
        raise
    messages.success(
        request,
        f"{harness.name}@{label} is served by "
        f"{endpoint.name if endpoint else 'no endpoint named'}.",
    )
    return redirect(_matrix_url(harness))

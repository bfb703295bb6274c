"""The held-out edit benchmark page: a stage and two models in, the four runs and their figures
out."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST

from studio.accounts.decorators import requires
from studio.editbench import selectors
from studio.editbench.forms import BenchmarkChoiceForm
from studio.editbench.services import EditBenchmarkError, edit_benchmark, edit_benchmark_start
from studio.endpoints.models import ModelEndpoint
from studio.evolution.models import Stage
from studio.lookups import found_or_404


def _choice(form: BenchmarkChoiceForm) -> tuple[Stage | None, list[ModelEndpoint]]:
    chosen = (
        {name: form.cleaned_data.get(name, "") for name in form.fields} if form.is_valid() else {}
    )
    stage_id = chosen.get("stage", "")
    stage = (
        selectors.benchmark_stage_or_none(stage_id=int(stage_id)) if stage_id.isdigit() else None
    )
    ids = [chosen.get("a", ""), chosen.get("b", "")]
    endpoints = selectors.endpoints_by_id(ids=[i for i in ids if i.isdigit()])
    return stage, [endpoints[i] for i in ids if i in endpoints]


@require_GET
@requires("evolution.view")
def benchmark_view(request):
    stage, endpoints = _choice(BenchmarkChoiceForm(request.GET))
    bench, error = None, ""
    if stage is not None:
        try:
            bench = edit_benchmark(stage=stage, endpoints=endpoints)
        except EditBenchmarkError as exc:
            error = str(exc)
    return render(
        request,
        "editbench/benchmark.html",
        {
            "stage": stage,
            **selectors.benchmark_choices(),
            "chosen": endpoints,
            "bench": bench,
            "error": error,
        },
    )


@require_POST
@requires("evolution.run")
def benchmark_start(request):
    form = BenchmarkChoiceForm(request.POST)
    stage, endpoints = _choice(form)
    if stage is None:
        messages.error(request, "stage: choose a stage whose candidate is committed")
        return redirect("editbench:benchmark")
    try:
        bench = edit_benchmark_start(
            stage=found_or_404(selectors.stage_get, f"no stage #{stage.pk}", stage_id=stage.pk),
            endpoints=endpoints,
            actor=request.user,
        )
    except EditBenchmarkError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            f"{4 - bench.missing} of 4 runs in hand; the page fills in as workers score them.",
        )
    query = urlencode({"stage": stage.pk, "a": form.cleaned_data["a"], "b": form.cleaned_data["b"]})
    return redirect(f"{reverse('editbench:benchmark')}?{query}")

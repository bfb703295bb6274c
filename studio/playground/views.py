"""The playground page: pick a version, an endpoint and a request; run it as a job.

The request is an example (one per intent), JSON pasted in (a request or a whole
dataset case), or a case picked by id from a dataset; with a dataset chosen it
runs with that dataset's catalogue.
"""

from __future__ import annotations

import json

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from harness.numbers import decimal_int
from studio.accounts.decorators import requires
from studio.endpoints.selectors import endpoint_default
from studio.evolution.models import Dataset
from studio.forms import form_problem
from studio.harnesses.selectors import version_default
from studio.playground import selectors
from studio.playground.examples import DEFAULT_EXAMPLE, example_request, examples
from studio.playground.forms import PlaygroundForm
from studio.playground.services import (
    MAX_EXPLORATORY_BUDGET_S,
    PlaygroundError,
    playground_budget,
    playground_case_request,
    playground_request_parse,
    playground_run_start,
)


def _pk(value: str, field: str) -> int | None:
    if not value:
        return None
    number = decimal_int(value, max_digits=18)
    if number is None:
        raise PlaygroundError(f"{field}: {value[:40]!r} is not one of the listed choices")
    return number


@require_http_methods(["GET", "POST"])
@requires("playground.run")
def playground(request):
    choices = selectors.playground_choices()
    form = PlaygroundForm(request.POST if request.method == "POST" else request.GET)
    form.is_valid()  # a field that cannot be read is shown empty, and named below
    typed = {name: form.cleaned_data.get(name, "") for name in form.fields}
    example = (
        request.GET.get("example") if request.GET.get("example") in examples() else DEFAULT_EXAMPLE
    )
    values = {
        **typed,
        # unless chosen: the version viewers are served (production) and the default endpoint, as
        # the page pre-selects them (the form's values are text, as typed)
        "version": typed["version"] or (str(default.pk) if (default := version_default()) else ""),
        "endpoint": typed["endpoint"]
        or (str(default.pk) if (default := endpoint_default()) else ""),
        "request_json": (typed["request_json"] if request.method == "POST" else "")
        or json.dumps(example_request(name=example), indent=2),
    }
    try:
        if form.errors:
            raise PlaygroundError(form_problem(form))
        dataset = (
            selectors.dataset_or_none(pk=_pk(values["dataset"], "dataset"))
            if values["dataset"]
            else None
        )
        if values["dataset"] and dataset is None:
            raise PlaygroundError(
                "dataset: choose one of the listed datasets, or the demo catalogue"
            )
        if values["case"] and dataset is None:
            raise PlaygroundError(
                "case: choose the dataset the case is in (a case id names a case of one dataset)"
            )
        if dataset is not None and values["case"] and request.method == "GET":
            values["request_json"] = json.dumps(
                playground_case_request(dataset=dataset, case_id=values["case"]),
                indent=2,
                ensure_ascii=False,
            )
        if request.method == "POST":
            job = _start(request, values=values, dataset=dataset)
            return redirect("jobs:job_detail", job_id=job.pk)
    except PlaygroundError as error:
        messages.error(request, str(error))
    return render(
        request,
        "playground/playground.html",
        {
            **choices,
            "examples": examples(),
            "example": example,
            "values": values,
            "draft": _open_draft(values["draft"]),
            "max_budget_s": MAX_EXPLORATORY_BUDGET_S,
        },
    )


def _open_draft(value: str):
    """The open editor draft ``value`` names, or None (no draft asked for, or not an open draft)."""
    pk = decimal_int(value, max_digits=12) if value else None
    return selectors.open_draft_or_none(pk=pk)


def _start(request, *, values: dict[str, str], dataset: Dataset | None):
    draft = _open_draft(values["draft"])
    if values["draft"] and draft is None:
        raise PlaygroundError(
            f"draft: {values['draft'][:20]!r} is not an open draft (a committed or discarded one "
            "is tried as its version)"
        )
    version = None if draft else selectors.version_or_none(pk=_pk(values["version"], "version"))
    endpoint = selectors.endpoint_or_none(pk=_pk(values["endpoint"], "endpoint"))
    if version is None and draft is None:
        raise PlaygroundError("version: choose a Harness version")
    if endpoint is None:
        raise PlaygroundError("endpoint: choose a model endpoint")
    budget_s = playground_budget(value=values["budget_s"])
    if dataset is not None and values["case"]:
        text = json.dumps(playground_case_request(dataset=dataset, case_id=values["case"]))
    else:
        text = values["request_json"]
    parsed = playground_request_parse(text=text, dataset=dataset, comment=values["comment"])
    return playground_run_start(
        version=version,
        endpoint=endpoint,
        request=parsed,
        actor=request.user,
        dataset=dataset,
        draft=draft,
        budget_s=budget_s,
    )

"""The playground page: pick a version, an endpoint and a request; run it as a job."""

from __future__ import annotations

import json

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from studio.accounts.decorators import requires
from studio.endpoints.models import ModelEndpoint
from studio.harnesses.models import HarnessVersion
from studio.playground.examples import EXAMPLES, example_request
from studio.playground.services import (
    PlaygroundError,
    playground_request_parse,
    playground_run_start,
)


@require_http_methods(["GET", "POST"])
@requires("playground.run")
def playground(request):
    versions = HarnessVersion.objects.select_related("harness").defer("tree").order_by("harness__name", "-number")[:200]
    endpoints = ModelEndpoint.objects.all()
    example = request.GET.get("example") if request.GET.get("example") in EXAMPLES else "price"
    values = {
        "version": request.POST.get("version", request.GET.get("version", "")),
        "endpoint": request.POST.get("endpoint", ""),
        "request_json": request.POST.get("request_json") or json.dumps(example_request(name=example), indent=2),
    }
    if request.method == "POST":
        comment = request.POST.get("comment", "").strip()
        try:
            version = HarnessVersion.objects.filter(pk=int(values["version"] or 0)).first()
            endpoint = ModelEndpoint.objects.filter(pk=int(values["endpoint"] or 0)).first()
            if version is None:
                raise PlaygroundError("version: choose a Harness version")
            if endpoint is None:
                raise PlaygroundError("endpoint: choose a model endpoint")
            text = values["request_json"]
            if comment:
                data = json.loads(text) if text.strip() else {}
                data = {**data, "mode": "single", "comments": [{"user": "viewer", "text": comment}]}
                text = json.dumps(data)
            parsed = playground_request_parse(text=text)
            job = playground_run_start(version=version, endpoint=endpoint, request=parsed, actor=request.user)
        except (PlaygroundError, ValueError) as error:
            messages.error(request, str(error))
        else:
            return redirect("jobs:job_detail", job_id=job.pk)
    return render(
        request,
        "playground/playground.html",
        {"versions": versions, "endpoints": endpoints, "examples": EXAMPLES, "example": example, "values": values},
    )

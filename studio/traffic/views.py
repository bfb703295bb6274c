"""Pages of production traffic: the filtered list, one trajectory, deployments and their tokens.

Views parse, authorise and delegate (``selectors`` reads, ``services`` writes).
"""

from __future__ import annotations

import json

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from studio.accounts.decorators import requires
from studio.forms import valid_data
from studio.lookups import found_or_404
from studio.traffic import selectors
from studio.traffic.forms import DeploymentForm
from studio.traffic.services import (
    TrafficError,
    deployment_create,
    deployment_token_create,
    deployment_token_revoke,
)


@require_GET
@requires("traffic.view")
def traffic_list(request):
    from studio.annotation.selectors import queue_list

    filters, problems = selectors.TrafficFilters.from_query(request.GET)
    page = Paginator(selectors.traffic_list(filters=filters), 50).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "traffic/traffic_list.html",
        {
            "page": page,
            "filters": filters,
            "problems": problems,
            "facets": selectors.traffic_facets(),
            "queues": queue_list(),
            "query": query.urlencode(),
        },
    )


@require_GET
@requires("traffic.view")
def traffic_detail(request, trajectory_id: int):
    from studio.annotation.selectors import queue_list
    from studio.presenters import system_prompt, trajectory_steps

    row = found_or_404(
        selectors.trajectory_get, f"no trajectory #{trajectory_id}", trajectory_id=trajectory_id
    )
    from harness.runtime.trajectory import record_problems

    traj = row.record
    # a record stored before the API checked every field the page reads is shown as its JSON, with
    # what is wrong, instead of a 500
    problems = record_problems(traj)
    return render(
        request,
        "traffic/traffic_detail.html",
        {
            "row": row,
            "traj": traj,
            "record_problems": problems,
            "record_json": json.dumps(traj, indent=2, default=str)[:200_000] if problems else "",
            "steps": [] if problems else trajectory_steps(traj),
            "system_prompt": "" if problems else system_prompt(traj),
            "trajectory_run": {
                "version": row.version_label,
                "endpoint": row.model_name or "unknown model",
            },
            "queues": queue_list(),
        },
    )


@require_GET
@requires("traffic.view")
def deployment_list(request):
    return render(
        request, "traffic/deployment_list.html", {"deployments": selectors.deployment_list()}
    )


@require_POST
@requires("traffic.deploy")
def deployment_create_view(request):
    try:
        typed = valid_data(DeploymentForm(request.POST), error=TrafficError)
        deployment = deployment_create(
            name=typed["name"], actor=request.user, description=typed["description"]
        )
    except TrafficError as error:
        messages.error(request, str(error))
    else:
        messages.success(
            request, f"Deployment {deployment.name} registered; make it a token to post with."
        )
    return redirect("traffic:deployment_list")


@require_POST
@requires("traffic.deploy")
def token_create_view(request, name: str):
    deployment = found_or_404(selectors.deployment_get, f"no deployment named {name!r}", name=name)
    _, token = deployment_token_create(deployment=deployment, actor=request.user)
    return render(
        request,
        "traffic/deployment_list.html",
        {
            "deployments": selectors.deployment_list(),
            "new_token": token,
            "new_token_deployment": deployment,
        },
    )


@require_POST
@requires("traffic.deploy")
def token_revoke_view(request, token_id: int):
    token = found_or_404(
        selectors.deployment_token_get, f"no deployment token #{token_id}", token_id=token_id
    )
    deployment_token_revoke(token=token, actor=request.user)
    messages.success(request, f"Token {token.prefix}... of {token.deployment.name} revoked.")
    return redirect("traffic:deployment_list")

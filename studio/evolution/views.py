"""Pages of the evolution loop. Views parse, authorise, call a service and render."""

from __future__ import annotations

import json

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evaluation.gates import gates_blocking
from studio.accounts.decorators import requires
from studio.accounts.roles import user_can
from studio.endpoints.models import RoleEndpoint
from studio.endpoints.selectors import endpoint_default, role_endpoint
from studio.evolution import selectors
from studio.evolution.errors import CandidateExists, EvolutionError
from studio.evolution.forms import (
    CandidateForm,
    CandidateRejectForm,
    DatasetImportForm,
    EvolutionForm,
    ExistingVersionForm,
    ProposalReviewForm,
)
from studio.evolution.models import EvalRun
from studio.evolution.services.datasets import (
    dataset_catalogue_from_text,
    dataset_import,
    problems_listed,
)
from studio.evolution.services.decisions import (
    candidate_reject,
    proposal_edit_in_editor,
    proposal_review,
)
from studio.evolution.services.diagnosis import diagnosis_start
from studio.evolution.services.runs import EvaluationError, eval_run_resume
from studio.evolution.services.stages import candidate_build, evolution_start, stage_edit_by_hand
from studio.forms import DecisionForm, valid_data
from studio.gates import release_gates, stage_gates, stopping_advice
from studio.lookups import found_or_404
from studio.presenters import system_prompt, trajectory_steps
from studio.promotion import stage_decide

USER_ERRORS = (EvolutionError, EvaluationError, PermissionDenied)


def _can(request) -> dict[str, bool]:
    return {
        name.split(".")[1]: user_can(request.user, name)
        for name in ("evolution.run", "evolution.review", "evolution.edit")
    }


def _stage(stage_id: int):
    return found_or_404(selectors.stage_get, f"no stage #{stage_id}", stage_id=stage_id)


def _proposal(proposal_id: int):
    return found_or_404(
        selectors.proposal_get, f"no proposal #{proposal_id}", proposal_id=proposal_id
    )


# --- evolutions ------------------------------------------------------------------------


@require_GET
@requires("evolution.view")
def evolution_list(request):
    return render(
        request,
        "evolution/evolution_list.html",
        {
            "evolutions": selectors.evolution_list(),
            "datasets": selectors.dataset_list(),
            "can": _can(request),
            "planted": selectors.planted_defect_scenario(),
        },
    )


@require_http_methods(["GET", "POST"])
@requires("evolution.run")
def evolution_new(request):
    # a link may fill the form (a dataset's page, the planted-defect scenario); nothing starts
    # before a POST; the endpoint defaults to the demo's model (endpoint_default)
    initial = {
        key: request.GET.get(key) for key in ("name", "dataset", "version", "endpoint", "limit")
    }
    initial["endpoint"] = initial["endpoint"] or endpoint_default()
    initial["diagnoser_endpoint"] = role_endpoint(
        role=RoleEndpoint.DIAGNOSER
    )  # the Endpoints page's choice, if any
    form = EvolutionForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            evolution = evolution_start(
                name=data["name"],
                version=data["version"],
                dataset=data["dataset"],
                endpoint=data["endpoint"],
                actor=request.user,
                limit=data["limit"],
                categories=data["categories"],
                diagnoser=data["diagnoser"],
                diagnoser_endpoint=data["diagnoser_endpoint"],
                tolerance=data["tolerance"] if data["tolerance"] is not None else 0.02,
            )
        except USER_ERRORS as error:
            messages.error(request, str(error))
        else:
            return redirect("evolution:stage_detail", stage_id=evolution.stages.get(number=1).pk)
    return render(
        request,
        "evolution/evolution_new.html",
        {
            "form": form,
            "estimates": selectors.run_time_estimates(dataset_name=form["dataset"].value()),
            "planted": selectors.planted_defect_scenario(),
            "can": _can(request),
        },
    )


@require_GET
@requires("evolution.view")
def evolution_detail(request, evolution_id: int):
    evolution = found_or_404(
        selectors.evolution_get, f"no evolution #{evolution_id}", evolution_id=evolution_id
    )
    stages = list(evolution.stages.all())
    latest = stages[-1] if stages else None
    gates = (
        release_gates(
            comparison=latest.comparison,
            tolerance=evolution.tolerance,
            version=latest.candidate_version,
        )
        if latest
        else []
    )
    return render(
        request,
        "evolution/evolution_detail.html",
        {
            "evolution": evolution,
            "record": selectors.evolution_record(evolution=evolution),
            "chart": selectors.evolution_chart(evolution=evolution),
            "latest": latest,
            "gates": gates,
            "advice": stopping_advice(stages=stages),
            "can": _can(request),
        },
    )


# --- datasets ---------------------------------------------------------------------------


@require_GET
@requires("evolution.view")
def dataset_list(request):
    return render(
        request,
        "evolution/dataset_list.html",
        {"datasets": selectors.dataset_list(), "can": _can(request)},
    )


@require_http_methods(["GET", "POST"])
@requires("evolution.run")
def dataset_import_view(request):
    from evaluation.cases import CaseFileError

    form = DatasetImportForm(request.POST or None, request.FILES or None)
    problems: list[str] = []
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        upload = data["cases"]
        try:
            text = upload.read().decode("utf-8")
            catalogue = None
            if data["catalogue"]:
                catalogue = dataset_catalogue_from_text(
                    text=data["catalogue"].read().decode("utf-8"), source=data["catalogue"].name
                )
            dataset = dataset_import(
                name=data["name"],
                text=text,
                source=upload.name,
                actor=request.user,
                catalogue=catalogue,
                description=data["description"],
                heldout_share=data["heldout_share"],
            )
        except UnicodeDecodeError as error:
            problems = [f"{upload.name}: not UTF-8 text ({error.reason} at byte {error.start})"]
        except CaseFileError as error:
            problems = problems_listed(problems=error.problems)
        except USER_ERRORS as error:
            problems = [str(error)]
        else:
            messages.success(request, f"Imported {dataset.case_count} cases into {dataset.name}.")
            return redirect("evolution:dataset_detail", name=dataset.name)
    return render(
        request,
        "evolution/dataset_import.html",
        {"form": form, "problems": problems},
        status=400 if request.method == "POST" else 200,
    )


@require_GET
@requires("evolution.view")
def dataset_detail(request, name: str):
    dataset = found_or_404(selectors.dataset_get, f"no dataset {name!r}", name=name)
    category = request.GET.get("category", "")
    page = Paginator(selectors.dataset_cases(dataset=dataset, category=category), 50).get_page(
        request.GET.get("page")
    )
    return render(
        request,
        "evolution/dataset_detail.html",
        {
            "dataset": dataset,
            "page": page,
            "category": category,
            "categories": selectors.dataset_categories(dataset=dataset),
            "can": _can(request),
        },
    )


@require_GET
@requires("evolution.view")
def dataset_case(request, name: str, case_id: str):
    case = found_or_404(
        selectors.dataset_case_get,
        f"no case {case_id!r} in dataset {name!r}",
        dataset_name=name,
        case_id=case_id,
    )
    return render(
        request,
        "evolution/dataset_case.html",
        {"case": case, "case_json": json.dumps(case.data, indent=2, ensure_ascii=False)},
    )


# --- runs ----------------------------------------------------------------------------------


def _run(run_id: int) -> EvalRun:
    return found_or_404(selectors.run_get, f"no evaluation run #{run_id}", run_id=run_id)


@require_GET
@requires("evolution.view")
def run_detail(request, run_id: int):
    run = _run(run_id)
    filters = {k: request.GET.get(k, "") for k in ("category", "score", "reason", "split")}
    page = Paginator(selectors.result_list(run=run, **filters), 100).get_page(
        request.GET.get("page")
    )
    return render(
        request,
        "evolution/run_detail.html",
        {
            "run": run,
            "page": page,
            "filters": filters,
            "facets": selectors.result_facets(run=run),
            "score_filters": selectors.SCORE_FILTERS,
            "done": selectors.run_done(run=run),
            "can": _can(request),
            "chart": selectors.run_chart(run=run),
        },
    )


@require_GET
@requires("evolution.view")
def run_status(request, run_id: int):
    run = _run(run_id)
    response = render(
        request, "evolution/_run_status.html", {"run": run, "done": selectors.run_done(run=run)}
    )
    if run.status in (EvalRun.SUCCEEDED, EvalRun.FAILED):
        response["HX-Trigger"] = "run-finished"
    return response


@require_POST
@requires("evolution.run")
def run_resume(request, run_id: int):
    run = _run(run_id)
    try:
        eval_run_resume(run=run, actor=request.user)
    except USER_ERRORS as error:
        messages.error(request, str(error))
    else:
        messages.success(
            request,
            f"Evaluation run #{run.pk} resumed: "
            f"{selectors.run_done(run=run)} finished case(s) are kept.",
        )
    return redirect("evolution:run_detail", run_id=run.pk)


@require_GET
@requires("evolution.view")
def run_case(request, run_id: int, case_id: str):
    run = _run(run_id)
    result, case = found_or_404(
        selectors.run_result_get,
        f"run #{run.pk} has no result for case {case_id!r}",
        run=run,
        case_id=case_id,
    )
    traj = result.trajectory
    return render(
        request,
        "evolution/run_case.html",
        {
            "run": run,
            "result": result,
            "case": case,
            "traj": traj,
            "steps": trajectory_steps(traj),
            "system_prompt": system_prompt(traj),
            "trajectory_run": {"version": run.version, "endpoint": run.endpoint},
            "gold_json": json.dumps(
                (case.data.get("gold") if case else {}) or {}, indent=2, ensure_ascii=False
            ),
        },
    )


# --- stages -------------------------------------------------------------------------------


def _stage_context(request, stage_id: int) -> dict:
    stage = _stage(stage_id)
    state = selectors.stage_state(
        stage=stage, parent_run=stage.parent_run, candidate_run=stage.candidate_run
    )
    form = ExistingVersionForm(request.GET)
    number = form.cleaned_data.get("existing") if form.is_valid() else None
    existing = selectors.stage_existing_candidate(stage=stage, number=number) if number else None
    gates = stage_gates(stage=stage)
    return {
        **state,
        "gates": gates,
        "blocking": gates_blocking(gates),
        "can": _can(request),
        "existing": existing,
    }


@require_GET
@requires("evolution.view")
def stage_detail(request, stage_id: int):
    return render(request, "evolution/stage_detail.html", _stage_context(request, stage_id))


@require_GET
@requires("evolution.view")
def stage_status(request, stage_id: int):
    return render(request, "evolution/_stage_body.html", _stage_context(request, stage_id))


@require_POST
@requires("evolution.run")
def stage_diagnose(request, stage_id: int):
    stage = _stage(stage_id)
    try:
        diagnosis_start(stage=stage, actor=request.user)
    except USER_ERRORS as error:
        messages.error(request, str(error))
    return redirect("evolution:stage_detail", stage_id=stage.pk)


@require_POST
@requires("evolution.review")
def stage_candidate(request, stage_id: int):
    stage = _stage(stage_id)
    try:
        candidate = valid_data(CandidateForm(request.POST), error=EvolutionError)
        stage = candidate_build(
            stage=stage,
            actor=request.user,
            message=candidate["message"],
            existing=candidate["existing"],
        )
    except CandidateExists as exists:  # not a dead end: the page offers that version
        messages.info(request, str(exists))
        url = reverse("evolution:stage_detail", args=[stage.pk])
        return redirect(f"{url}?existing={exists.version.number}#existing-version")
    except USER_ERRORS as error:
        messages.error(request, str(error))
    else:
        messages.success(
            request,
            (
                f"v{stage.candidate_version.number} is the candidate; "
                + (
                    f"its finished evaluation run #{stage.candidate_run_id} is reused."
                    if stage.candidate_run.status == EvalRun.SUCCEEDED
                    else "its evaluation has started."
                )
            )
            if candidate["existing"]
            else "Candidate committed; its evaluation has started.",
        )
    return redirect("evolution:stage_detail", stage_id=stage.pk)


@require_POST
@requires("evolution.review")
def stage_candidate_reject(request, stage_id: int):
    """The reviewer's Reject of the current candidate (the stage's editor draft)."""
    stage = _stage(stage_id)
    try:
        rejected = valid_data(CandidateRejectForm(request.POST), error=EvolutionError)
        candidate_reject(stage=stage, actor=request.user, reason=rejected["reason"])
    except USER_ERRORS as error:
        messages.error(request, str(error))
    else:
        messages.success(request, "Candidate rejected; the stage's proposals are open again.")
    return redirect("evolution:stage_detail", stage_id=stage.pk)


@require_POST
@requires("evolution.edit")
def stage_edit(request, stage_id: int):
    """Edit the candidate by hand (the diagnosis proposed nothing): the stage's draft in the
    editor."""
    stage = _stage(stage_id)
    try:
        draft = stage_edit_by_hand(stage=stage, actor=request.user)
    except USER_ERRORS as error:
        messages.error(request, str(error))
        return redirect("evolution:stage_detail", stage_id=stage.pk)
    messages.success(
        request,
        f"Draft #{draft.pk} of v{stage.parent_version.number} is this stage's candidate; edit "
        "and save it here, then a reviewer commits it from the stage page.",
    )
    return redirect("harnesses:draft_edit", draft_id=draft.pk)


@require_POST
@requires("evolution.review")
def stage_decide_view(request, stage_id: int):
    stage = _stage(stage_id)
    try:
        stage_decide(
            stage=stage,
            actor=request.user,
            **valid_data(DecisionForm(request.POST), error=EvolutionError),
        )
    except USER_ERRORS as error:
        messages.error(request, str(error))
        return redirect("evolution:stage_detail", stage_id=stage.pk)
    stage = selectors.stage_get(stage_id=stage.pk)  # as decided
    messages.success(request, f"Stage {stage.number}: {stage.get_decision_display()}.")
    following = selectors.stage_next(stage=stage)
    if following is not None:
        return redirect("evolution:stage_detail", stage_id=following.pk)
    return redirect("evolution:evolution_detail", evolution_id=stage.evolution_id)


@require_POST
@requires("evolution.review")
def proposal_review_view(request, proposal_id: int):
    proposal = _proposal(proposal_id)
    try:
        review = valid_data(ProposalReviewForm(request.POST), error=EvolutionError)
        proposal_review(
            proposal=proposal,
            actor=request.user,
            accept=review["action"] == "accept",
            reason=review["reason"],
        )
    except USER_ERRORS as error:
        messages.error(request, str(error))
    return redirect("evolution:stage_detail", stage_id=proposal.diagnosis.stage_id)


@require_POST
@requires("evolution.edit")
def proposal_edit(request, proposal_id: int):
    proposal = _proposal(proposal_id)
    try:
        draft = proposal_edit_in_editor(proposal=proposal, actor=request.user)
    except USER_ERRORS as error:
        messages.error(request, str(error))
        return redirect("evolution:stage_detail", stage_id=proposal.diagnosis.stage_id)
    messages.success(
        request,
        f"Draft #{draft.pk} holds the accepted edits and this proposal; refine it, "
        "then commit it or build the candidate from the stage page.",
    )
    return redirect("harnesses:draft_edit", draft_id=draft.pk)

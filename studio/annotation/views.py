"""Pages of annotation: queues, labelling from the keyboard, agreement, exports and judge
calibration.

Views parse, authorise and delegate (``selectors`` reads, ``services`` and ``calibration`` write).
"""

from __future__ import annotations

import json

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from studio.accounts.decorators import requires
from studio.annotation import selectors
from studio.annotation.calibration import (
    COMMITTED,
    CalibrationError,
    calibration_retire,
    calibration_start,
    committed_file,
    judge_choices,
)
from studio.annotation.forms import (
    CalibrationForm,
    LabelForm,
    SourceToQueueForm,
    TrafficToQueueForm,
)
from studio.annotation.models import AnnotationQueue, JudgeCalibration
from studio.annotation.services import (
    AnnotationError,
    label_save,
    queue_add_dataset,
    queue_add_run_failures,
    queue_add_traffic,
    queue_create,
    queue_export,
)
from studio.errors import StudioError
from studio.forms import form_problem
from studio.lookups import found_or_404


def _queue(name: str) -> AnnotationQueue:
    return found_or_404(selectors.queue_get, f"no annotation queue {name!r}", name=name)


def _calibration(calibration_id: int) -> JudgeCalibration:
    return found_or_404(
        selectors.calibration_get,
        f"no calibration #{calibration_id}",
        calibration_id=calibration_id,
    )


def _target_queue(
    request, data: dict, *, source: str, catalogue: dict | None = None
) -> AnnotationQueue:
    """The queue the form names (``queue``), or a new one (``new_queue``)."""
    if name := data["queue"]:
        queue = selectors.queue_named(name=name)
        if queue is None:
            raise AnnotationError(f"queue: no queue named {name!r}")
        return queue
    return queue_create(
        name=data["new_queue"], actor=request.user, source=source, catalogue=catalogue
    )


@require_GET
@requires("traffic.view")
def queue_list(request):
    return render(request, "annotation/queue_list.html", selectors.queue_overview())


@require_POST
@requires("annotation.label")
def queue_add_traffic_view(request):
    form = TrafficToQueueForm(request.POST)
    if not form.is_valid():
        messages.error(request, form_problem(form))
        return redirect("traffic:traffic_list")
    rows = selectors.trajectories_chosen(ids=form.cleaned_data["trajectory"])
    if not rows:
        messages.error(request, "trajectory: select at least one trajectory")
        return redirect("traffic:traffic_list")
    try:
        queue = _target_queue(request, form.cleaned_data, source="traffic")
        added = queue_add_traffic(queue=queue, trajectories=rows, actor=request.user)
    except AnnotationError as error:
        messages.error(request, str(error))
        return redirect("traffic:traffic_list")
    messages.success(
        request,
        f"{added} case(s) added to queue {queue.name}"
        + (f" ({len(rows) - added} were in it already)" if added < len(rows) else ""),
    )
    return redirect("annotation:queue_detail", name=queue.name)


@require_POST
@requires("annotation.label")
def queue_add_source_view(request):
    """Feed a queue from a run's failing cases (``run``) or from a dataset (``dataset``)."""
    form = SourceToQueueForm(request.POST)
    if not form.is_valid():
        messages.error(request, form_problem(form))
        return redirect("annotation:queue_list")
    data = form.cleaned_data
    try:
        if data["run"] is not None:
            run = selectors.eval_run_or_none(run_id=data["run"])
            if run is None:
                raise AnnotationError(f"run: no evaluation run #{data['run']}")
            queue = _target_queue(
                request,
                data,
                source=f"failing cases of run #{run.pk}",
                catalogue=run.dataset.catalogue,
            )
            added = queue_add_run_failures(queue=queue, run=run, actor=request.user)
        elif (dataset := data["dataset"]) is not None:
            queue = _target_queue(
                request, data, source=f"dataset {dataset.name}", catalogue=dataset.catalogue
            )
            added = queue_add_dataset(queue=queue, dataset=dataset, actor=request.user)
        else:
            raise AnnotationError(
                "source: choose an evaluation run (its failing cases) or a dataset"
            )
    except (AnnotationError, StudioError) as error:
        messages.error(request, str(error))
        return redirect("annotation:queue_list")
    messages.success(request, f"{added} case(s) added to queue {queue.name}")
    return redirect("annotation:queue_detail", name=queue.name)


@require_GET
@requires("traffic.view")
def queue_detail(request, name: str):
    queue = _queue(name)
    items = list(queue.items.prefetch_related("labels__labeller").order_by("position"))
    rows = [(item, selectors.item_status(item=item)) for item in items]
    return render(
        request,
        "annotation/queue_detail.html",
        {
            "queue": queue,
            "rows": rows,
            "counts": selectors.queue_counts(queue=queue),
            "agreement": selectors.queue_agreement(queue=queue),
            "exports": queue.exports.select_related("dataset", "label_set"),
            "next": selectors.queue_next_item(queue=queue, user=request.user),
        },
    )


@require_GET
@requires("annotation.label")
def queue_next(request, name: str):
    queue = _queue(name)
    item = selectors.queue_next_item(queue=queue, user=request.user)
    if item is None:
        messages.success(request, f"Nothing left for you to label in queue {queue.name}.")
        return redirect("annotation:queue_detail", name=queue.name)
    return redirect("annotation:item_label", name=queue.name, position=item.position)


def _product_facts(queue: AnnotationQueue, case: dict) -> list[dict]:
    """The catalogue entries of the products the request names (its link ids, the room's current
    link)."""
    from harness.livestream import Catalogue, demo_catalogue

    catalogue = (
        Catalogue.from_dict(queue.catalogue, source=f"queue {queue.name}")
        if queue.catalogue
        else demo_catalogue()
    )
    links = list(case.get("products") or [])
    current = (case.get("room") or {}).get("current_link_id")
    if current is not None and current not in links:
        links.append(current)
    facts = []
    for link in links[:6]:
        product = catalogue.product(link) if isinstance(link, int) else None
        if product is not None:
            facts.append(
                {
                    "link": link,
                    "name": product.name,
                    "json": json.dumps(product.to_dict(), indent=1, ensure_ascii=False),
                }
            )
    return facts


@require_http_methods(["GET", "POST"])
@requires("annotation.label")
def item_label(request, name: str, position: int):
    from evaluation.cases import CATEGORIES, ROUTES, category_of_intent
    from studio.presenters import trajectory_steps

    queue = _queue(name)
    item = found_or_404(
        selectors.queue_item_get,
        f"{queue.name} has no item {position}",
        queue=queue,
        position=position,
    )
    mine = item.labels.filter(labeller=request.user).first()
    error = ""
    form = LabelForm(request.POST if request.method == "POST" else None)
    if form.is_bound and not form.is_valid():
        error = form_problem(form)
    elif form.is_bound:
        try:
            label_save(item=item, labeller=request.user, **form.cleaned_data)
        except AnnotationError as exc:
            error = str(exc)
        else:
            return redirect("annotation:queue_next", name=queue.name)
    traj = item.trajectory or {}
    defaults = {
        "category": mine.category
        if mine
        else category_of_intent(item.case.get("category"))
        or category_of_intent((traj.get("request") or {}).get("intent")),
        "route": mine.route if mine else (item.case.get("gold") or {}).get("route") or item.route,
        "reply_skills": ", ".join(mine.reply_skills)
        if mine
        else ", ".join(s["skill"] for s in traj.get("skill_loads", []) if s.get("ok")),
        "tools": ", ".join(mine.tools)
        if mine
        else ", ".join(
            dict.fromkeys(t["name"] for t in traj.get("tool_calls", []) if not t.get("error"))
        ),
        "accuracy": str(mine.accuracy) if mine else "",
        "effectiveness": f"{mine.effectiveness:g}" if mine else "",
        "note": mine.note if mine else "",
    }
    if form.is_bound:  # what was typed is shown again beside the error
        defaults.update({k: v for k, v in form.cleaned_data.items() if k in defaults})
    return render(
        request,
        "annotation/item_label.html",
        {
            "queue": queue,
            "item": item,
            "status": selectors.item_status(item=item),
            "case": item.case,
            "traj": traj,
            "steps": trajectory_steps(traj) if traj else [],
            "facts": _product_facts(queue, item.case),
            "others": item.labels.exclude(labeller=request.user).select_related("labeller"),
            "categories": CATEGORIES,
            "routes": ROUTES,
            "values": defaults,
            "error": error,
            "mine": mine,
            "total": queue.items.count(),
        },
        status=400 if error else 200,
    )


@require_POST
@requires("annotation.label")
def queue_export_view(request, name: str):
    queue = _queue(name)
    try:
        export = queue_export(queue=queue, actor=request.user)
    except AnnotationError as error:
        messages.error(request, str(error))
        return redirect("annotation:queue_detail", name=queue.name)
    messages.success(
        request,
        f"Dataset {export.dataset.name}: {export.items} labelled case(s); evaluate it, "
        "start an evolution on it, or calibrate a judge against it.",
    )
    return redirect("evolution:dataset_detail", name=export.dataset.name)


@require_GET
@requires("traffic.view")
def export_download(request, name: str, version: int):
    """An export's calibration file (hs-calibration/1), to commit under data/calibration/."""
    from django.http import HttpResponse

    queue = _queue(name)
    export = found_or_404(
        queue.exports.select_related("label_set").get,
        f"queue {queue.name} has no export v{version}",
        version=version,
    )
    label_set = getattr(export, "label_set", None)
    if label_set is None:
        raise Http404(f"export v{version} of {queue.name} was made before calibration files")
    response = HttpResponse(label_set.content, content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{queue.name}-v{version}.jsonl"'
    return response


# -- calibration
# ---------------------------------------------------------------------------------------------


@require_GET
@requires("traffic.view")
def calibration_list(request):
    from studio.evolution.services.runs import EVAL_JUDGE

    path = committed_file()
    return render(
        request,
        "annotation/calibration_list.html",
        {
            "calibrations": selectors.calibration_list(),
            "label_sets": [s for s in selectors.label_sets() if s.export_id],
            "committed": path.is_file(),
            "committed_path": path,
            "committed_value": COMMITTED,
            "judges": judge_choices(),
            "standing": selectors.judge_standing(judge=EVAL_JUDGE),
            "eval_judge": EVAL_JUDGE,
        },
    )


@require_POST
@requires("judge.calibrate")
def calibration_start_view(request):
    form = CalibrationForm(request.POST)
    if not form.is_valid():
        messages.error(request, form_problem(form))
        return redirect("annotation:calibration_list")
    try:
        job = calibration_start(
            judge=form.cleaned_data["judge"].strip(),
            dataset=form.cleaned_data["dataset"].strip(),
            actor=request.user,
        )
    except CalibrationError as error:
        messages.error(request, str(error))
        return redirect("annotation:calibration_list")
    messages.success(
        request, f"Calibration queued as job #{job.pk}; its result appears here when it ends."
    )
    return redirect(reverse("annotation:calibration_list"))


@require_POST
@requires("judge.retire")
def calibration_retire_view(request, calibration_id: int):
    row = _calibration(calibration_id)
    try:
        calibration_retire(calibration=row, actor=request.user)
    except CalibrationError as error:
        messages.error(request, str(error))
    else:
        messages.success(
            request,
            f"Calibration #{row.pk} retired: the gates now read the {row.judge} judge's next "
            "current calibration, or none.",
        )
    return redirect("annotation:calibration_detail", calibration_id=row.pk)


@require_GET
@requires("traffic.view")
def calibration_detail(request, calibration_id: int):
    row = _calibration(calibration_id)
    report = row.report
    whole = report.get("all") or report  # calibrations before label sets kept one report
    disagreements = []
    for dim in ("accuracy", "effectiveness"):
        for d in whole.get(dim, {}).get("disagreements", []):
            case_id = d["id"].rsplit("/", 1)[0]
            disagreements.append({**d, "dimension": dim, "case_id": case_id})
    parts = []
    for part, title in (("dev", "development part"), ("heldout", "held-out part"), ("", "all")):
        figures = (report.get("parts") or {}).get(part) if part else whole
        if not figures or "accuracy" not in figures:
            continue
        parts.append(
            {
                "name": part or "all",
                "title": title,
                "dims": [
                    {
                        "name": dim,
                        **figures[dim],
                        "rows": list(
                            zip(figures[dim]["labels"], figures[dim]["confusion"], strict=True)
                        ),
                    }
                    for dim in ("accuracy", "effectiveness")
                ],
            }
        )
    standing = selectors.judge_standing(judge=row.judge)
    return render(
        request,
        "annotation/calibration_detail.html",
        {
            "row": row,
            "report": report,
            "parts": parts,
            "between": report.get("labeller_agreement") or {"n": 0},
            "disagreements": disagreements,
            "minimum": standing.minimum,
            "current": standing.calibration is not None and standing.calibration.pk == row.pk,
        },
    )

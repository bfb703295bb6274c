"""Reads of the evolution loop: filtered results, the evolution record, chart data."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from studio.evolution.models import CaseResult, DatasetCase, EvalRun, Evolution, Proposal, Stage

SCORE_FILTERS = {
    "failed": "Accuracy 0 or Effectiveness below 1",
    "passed": "Accuracy 1 and Effectiveness 1",
    "acc0": "Accuracy 0",
    "eff_low": "Effectiveness below 1",
}


def result_list(*, run: EvalRun, category: str = "", score: str = "", reason: str = "",
                split: str = "") -> QuerySet[CaseResult]:
    rows = CaseResult.objects.filter(run=run).defer("trajectory", "verdict")
    if category:
        rows = rows.filter(category=category)
    if split:
        rows = rows.filter(split=split)
    if reason:
        rows = rows.filter(reason_codes__contains=f",{reason},")
    if score == "failed":
        rows = rows.exclude(accuracy__gte=1, effectiveness__gte=1)
    elif score == "passed":
        rows = rows.filter(accuracy__gte=1, effectiveness__gte=1)
    elif score == "acc0":
        rows = rows.filter(accuracy__lt=1)
    elif score == "eff_low":
        rows = rows.filter(effectiveness__lt=1)
    return rows.order_by("id")


def result_facets(*, run: EvalRun) -> dict[str, list[tuple[str, int]]]:
    """Categories and reason codes with their counts, for the filter menus."""
    categories: dict[str, int] = {}
    reasons: dict[str, int] = {}
    for cat, codes in CaseResult.objects.filter(run=run).values_list("category", "reason_codes"):
        categories[cat] = categories.get(cat, 0) + 1
        for code in filter(None, codes.split(",")):
            reasons[code] = reasons.get(code, 0) + 1
    return {"categories": sorted(categories.items()), "reasons": sorted(reasons.items(), key=lambda kv: -kv[1])}


def dataset_categories(*, dataset) -> list[tuple[str, int]]:
    counts: dict[str, int] = {}
    for cat in DatasetCase.objects.filter(dataset=dataset).values_list("category", flat=True):
        counts[cat] = counts.get(cat, 0) + 1
    return sorted(counts.items())


def evolution_record(*, evolution: Evolution) -> list[dict[str, Any]]:
    """One row per stage: versions, accepted changes, scores before/after, decision."""
    rows = []
    for stage in evolution.stages.select_related("parent_version", "candidate_version", "parent_run",
                                                  "candidate_run", "decided_by"):
        changes = list(Proposal.objects.filter(diagnosis__stage=stage, status__in=(Proposal.ACCEPTED,
                                                                                     Proposal.EDITED))
                       .values_list("title", flat=True))
        parent = (stage.parent_run.summary or {}).get("overall", {}) if stage.parent_run else {}
        candidate = (stage.candidate_run.summary or {}).get("overall", {}) if stage.candidate_run else {}
        rows.append({"stage": stage, "changes": changes, "parent": parent, "candidate": candidate})
    return rows


def evolution_chart(*, evolution: Evolution) -> dict[str, Any]:
    """Accuracy and Effectiveness per stage, like the report's record (base, Evolution 1, 2, ...)."""
    labels, accuracy, effectiveness = [], [], []
    stages = list(evolution.stages.select_related("parent_run", "candidate_run"))
    if stages and stages[0].parent_run and stages[0].parent_run.status == EvalRun.SUCCEEDED:
        overall = stages[0].parent_run.summary.get("overall", {})
        labels.append(f"base v{stages[0].parent_version.number}")
        accuracy.append(overall.get("accuracy"))
        effectiveness.append(overall.get("effectiveness"))
    for stage in stages:
        run = stage.candidate_run
        if run is not None and run.status == EvalRun.SUCCEEDED:
            overall = run.summary.get("overall", {})
            labels.append(f"Evolution {stage.number} (v{stage.candidate_version.number})")
            accuracy.append(overall.get("accuracy"))
            effectiveness.append(overall.get("effectiveness"))
    return {"labels": labels, "accuracy": accuracy, "effectiveness": effectiveness}


def stage_current(*, evolution: Evolution) -> Stage | None:
    return evolution.stages.order_by("-number").first()

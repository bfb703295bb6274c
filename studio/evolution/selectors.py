"""Reads of the evolution loop: lookups for the pages, filtered results, a stage's state, the
record, chart data."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Min, OuterRef, Q, QuerySet, Subquery, Sum
from django.utils import timezone

from studio.durations import about
from studio.evolution.models import (
    CaseResult,
    Dataset,
    DatasetCase,
    EvalChunk,
    EvalRun,
    Evolution,
    Proposal,
    Stage,
)

SCORE_FILTERS = {
    "failed": "Accuracy 0 or Effectiveness below 1",
    "passed": "Accuracy 1 and Effectiveness 1",
    "acc0": "Accuracy 0",
    "eff_low": "Effectiveness below 1",
}


def result_list(
    *, run: EvalRun, category: str = "", score: str = "", reason: str = "", split: str = ""
) -> QuerySet[CaseResult]:
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
    # in the dataset's order, not the order workers finished them in (chunks are scored side by
    # side)
    position = DatasetCase.objects.filter(
        dataset_id=run.dataset_id, case_id=OuterRef("case_id")
    ).values("position")
    return rows.annotate(position=Subquery(position[:1])).order_by("position", "id")


def result_facets(*, run: EvalRun) -> dict[str, list[tuple[str, int]]]:
    """Categories and reason codes with their counts, for the filter menus."""
    categories: dict[str, int] = {}
    reasons: dict[str, int] = {}
    for cat, codes in CaseResult.objects.filter(run=run).values_list("category", "reason_codes"):
        categories[cat] = categories.get(cat, 0) + 1
        for code in filter(None, codes.split(",")):
            reasons[code] = reasons.get(code, 0) + 1
    return {
        "categories": sorted(categories.items()),
        "reasons": sorted(reasons.items(), key=lambda kv: -kv[1]),
    }


def dataset_categories(*, dataset) -> list[tuple[str, int]]:
    counts: dict[str, int] = {}
    for cat in DatasetCase.objects.filter(dataset=dataset).values_list("category", flat=True):
        counts[cat] = counts.get(cat, 0) + 1
    return sorted(counts.items())


def evolution_record(*, evolution: Evolution) -> list[dict[str, Any]]:
    """One row per stage: versions, accepted changes, scores and fallbacks before/after,
    decision."""
    rows = []
    for stage in evolution.stages.select_related(
        "parent_version", "candidate_version", "parent_run", "candidate_run", "decided_by"
    ):
        changes = list(
            Proposal.objects.filter(
                diagnosis__stage=stage, status__in=(Proposal.ACCEPTED, Proposal.EDITED)
            ).values_list("title", flat=True)
        )
        parent = (stage.parent_run.summary or {}) if stage.parent_run else {}
        candidate = (stage.candidate_run.summary or {}) if stage.candidate_run else {}
        rows.append(
            {
                "stage": stage,
                "changes": changes,
                "parent": parent.get("overall", {}),
                "candidate": candidate.get("overall", {}),
                "fallback": [  # the badge tag applies the one rule to these counts
                    {"outcomes": s["outcomes"]} for s in (parent, candidate) if s.get("outcomes")
                ],
            }
        )
    return rows


def evolution_chart(*, evolution: Evolution) -> dict[str, Any]:
    """Accuracy and Effectiveness per stage, like the report's record (base, Evolution 1, 2,
    ...)."""
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


# --- how requests ended (the run summary's ``outcomes``, evaluation.summary) ----------------

OUTCOME_LABELS = (
    ("effective", "replied and effective"),
    ("not_effective", "replied, not effective"),
    ("fallback", "fallback"),
    ("suppressed", "suppressed"),
    ("silent", "silent"),
    ("error", "error"),
)


def outcome_rows(*, summary: dict | None) -> list[dict[str, Any]]:
    """How the run's requests ended, one row per outcome (replied split into effective and not), for
    the pages and the outcome bars; empty when the summary has no outcomes (a run still going, or
    stored before outcomes were counted)."""
    outcomes = (summary or {}).get("outcomes")
    if not outcomes:
        return []
    counts = {**outcomes, "not_effective": outcomes["replied"] - outcomes["effective"]}
    return [{"key": key, "label": label, "count": counts[key]} for key, label in OUTCOME_LABELS]


def outcome_warning(*, summary: dict | None) -> str:
    """The headline warning of a run where most cases ended in the fallback reply, else ''."""
    from evaluation.summary import fallback_warning

    return fallback_warning(summary) if summary and summary.get("outcomes") else ""


def run_chart(*, run: EvalRun) -> dict[str, Any]:
    """The run page's bars: Accuracy / Effectiveness / AVG per category, and how many cases ended
    how."""
    per_category = (run.summary or {}).get("per_category", {})
    rows = outcome_rows(summary=run.summary)
    return {
        "categories": {
            "labels": list(per_category),
            **{
                m: [per_category[c].get(m) for c in per_category]
                for m in ("accuracy", "effectiveness", "avg")
            },
        },
        "outcomes": {
            "labels": [r["label"] for r in rows],
            "keys": [r["key"] for r in rows],
            "counts": [r["count"] for r in rows],
        },
    }


def report_chart(*, report: dict[str, Any]) -> dict[str, Any]:
    """The regression report's deltas with their 95% intervals, per scope (overall, splits,
    categories)."""
    scopes = (
        [("overall", report["overall"])]
        + [(f"split {k}", v) for k, v in report.get("per_split", {}).items()]
        + list(report.get("per_category", {}).items())
    )
    return {
        "labels": [name for name, _ in scopes],
        **{
            m: [
                {"delta": b[m]["delta"], "low": b[m]["low"], "high": b[m]["high"]}
                for _, b in scopes
            ]
            for m in ("accuracy", "effectiveness", "avg")
        },
    }


def stage_current(*, evolution: Evolution) -> Stage | None:
    return evolution.stages.order_by("-number").first()


# --- lookups (the model's DoesNotExist when missing: views answer 404 with studio.lookups)
# ---------


def evolution_list(*, limit: int = 100) -> QuerySet[Evolution]:
    return Evolution.objects.select_related("harness", "base_version", "dataset", "endpoint")[
        :limit
    ]


def evolution_get(*, evolution_id: int) -> Evolution:
    return Evolution.objects.select_related("harness", "dataset", "endpoint").get(pk=evolution_id)


def dataset_list() -> QuerySet[Dataset]:
    return Dataset.objects.all()


def dataset_get(*, name: str) -> Dataset:
    return Dataset.objects.get(name=name)


def dataset_cases(*, dataset: Dataset, category: str = "") -> QuerySet[DatasetCase]:
    cases = DatasetCase.objects.filter(dataset=dataset).defer("data")
    return cases.filter(category=category) if category else cases


def dataset_case_get(*, dataset_name: str, case_id: str) -> DatasetCase:
    return DatasetCase.objects.select_related("dataset").get(
        dataset__name=dataset_name, case_id=case_id
    )


def run_get(*, run_id: int) -> EvalRun:
    return EvalRun.objects.select_related("job", "version__harness", "dataset", "endpoint").get(
        pk=run_id
    )


def run_result_get(*, run: EvalRun, case_id: str) -> tuple[CaseResult, DatasetCase | None]:
    """A run's result for one case and the dataset case it scored."""
    result = CaseResult.objects.get(run=run, case_id=case_id)
    return result, DatasetCase.objects.filter(dataset=run.dataset, case_id=case_id).first()


def run_done(*, run: EvalRun | None) -> int:
    """Cases of the run scored so far."""
    return run.results.count() if run is not None else 0


def run_eta(*, run: EvalRun | None, now=None) -> float | None:
    """Seconds until a running run has scored every case, at the rate of its current attempt so far
    (cases scored since the attempt's first result, over the time since); None before two results or
    once it ended."""
    if run is None or run.status != EvalRun.RUNNING:
        return None
    current = run.results.filter(attempt=run.attempts)
    stats = current.aggregate(n=Count("id"), first=Min("created_at"))
    if stats["n"] < 2 or stats["first"] is None:
        return None
    elapsed = ((now or timezone.now()) - stats["first"]).total_seconds()
    left = run.total - run.results.count()
    if elapsed <= 0 or left <= 0:
        return None
    return left * elapsed / (stats["n"] - 1)


def run_workers(*, run: EvalRun | None) -> dict[str, Any]:
    """Which workers scored the run's cases and how its chunks stand: {"workers": [(worker, cases),
    ...] (most cases first), "chunks", "done", "reclaimed" (chunks claimed more than once: after
    their worker was lost, or handed back when their job stopped or failed and the run resumed)}."""
    if run is None:
        return {"workers": [], "chunks": 0, "done": 0, "reclaimed": 0}
    workers = (
        run.results.exclude(worker="")
        .values_list("worker")
        .annotate(n=Count("id"))
        .order_by("-n", "worker")
    )
    chunks = run.chunks.aggregate(
        n=Count("id"),
        done=Count("id", filter=Q(status=EvalChunk.DONE)),
        reclaimed=Count("id", filter=Q(claims__gt=1)),
    )
    return {
        "workers": list(workers),
        "chunks": chunks["n"],
        "done": chunks["done"],
        "reclaimed": chunks["reclaimed"],
    }


def stage_get(*, stage_id: int) -> Stage:
    return Stage.objects.select_related(
        "evolution__harness",
        "evolution__dataset",
        "evolution__endpoint",
        "parent_version",
        "candidate_version",
        "parent_run__job",
        "candidate_run__job",
        "draft",
    ).get(pk=stage_id)


def stage_next(*, stage: Stage) -> Stage | None:
    return stage.evolution.stages.filter(number=stage.number + 1).first()


def proposal_get(*, proposal_id: int) -> Proposal:
    return Proposal.objects.select_related("diagnosis__stage").get(pk=proposal_id)


# --- a stage's state ---------------------------------------------------------------------


def _busy(status: str | None) -> bool:
    return status in (EvalRun.QUEUED, EvalRun.RUNNING)


def stage_state(
    *, stage: Stage, parent_run: EvalRun | None = None, candidate_run: EvalRun | None = None
) -> dict[str, Any]:
    """What the stage page shows: its runs, diagnosis, proposals and report, and whether it is still
    moving (its release gates: ``studio.gates.stage_gates``, which the view adds).

    ``parent_run`` / ``candidate_run`` are the stage's runs as the caller refreshed them (default:
    as stored). ``active`` is true while a run or the diagnosis is going, or the candidate's report
    is being written; ``closed`` once a decision ended the stage or the evolution is no longer
    active.
    """
    from studio.evolution.services.stages import CLOSING_DECISIONS

    parent_run = parent_run or stage.parent_run
    candidate_run = candidate_run or stage.candidate_run
    diagnosis = stage.diagnoses.select_related("job").first()
    proposals = list(diagnosis.proposals.all()) if diagnosis else []
    active = (
        _busy(parent_run and parent_run.status)
        or _busy(candidate_run and candidate_run.status)
        or _busy(diagnosis and diagnosis.status)
        or (
            candidate_run is not None
            and not stage.comparison
            and candidate_run.status == EvalRun.SUCCEEDED
        )
    )
    return {
        "stage": stage,
        "evolution": stage.evolution,
        "parent_run": parent_run,
        "candidate_run": candidate_run,
        "diagnosis": diagnosis,
        "proposals": proposals,
        "active": active,
        "accepted": sum(p.status in (Proposal.ACCEPTED, Proposal.EDITED) for p in proposals),
        "report": stage.comparison,
        "report_chart": report_chart(report=stage.comparison) if stage.comparison else None,
        "parent_done": run_done(run=parent_run),
        "candidate_done": run_done(run=candidate_run),
        "decisions": Stage.DECISIONS,
        "closed": stage.decision in CLOSING_DECISIONS or stage.evolution.status != Evolution.ACTIVE,
        "next_stage": stage_next(stage=stage),
        "draft_diff": stage_draft_diff(stage=stage),
        "planted": planted_defect_scenario(exclude_version=stage.parent_version),
    }


# an even spread of the dev-set: the whole stage in about a minute on the shortcut policy
PLANTED_CASES = 100


def planted_defect_scenario(*, exclude_version=None) -> dict[str, Any] | None:
    """The demo's planted-defect scenario (``seed_evolution_demo``): the version labelled
    ``planted-defect``, the dev-set and the shortcut endpoint, with the link that fills the start
    form; None when any is missing (or the version is ``exclude_version``, the one a stage already
    starts from)."""
    from urllib.parse import urlencode

    from django.urls import reverse

    from studio.endpoints.models import ModelEndpoint
    from studio.evolution.services.seeding import DEMO_SETS, PLANTED_LABEL, SHORTCUT_ENDPOINT
    from studio.harnesses.models import Label

    label = (
        Label.objects.filter(name=PLANTED_LABEL)
        .select_related("version__harness")
        .order_by("pk")
        .first()
    )
    dataset = Dataset.objects.filter(name=DEMO_SETS["dev"][0]).first()
    endpoint = ModelEndpoint.objects.filter(name=SHORTCUT_ENDPOINT).first()
    if label is None or dataset is None or endpoint is None:
        return None
    if exclude_version is not None and label.version_id == exclude_version.pk:
        return None
    query = urlencode(
        {
            "name": "planted defect",
            "version": label.version_id,
            "dataset": dataset.name,
            "endpoint": endpoint.pk,
            "limit": PLANTED_CASES,
        }
    )
    return {
        "version": label.version,
        "dataset": dataset,
        "endpoint": endpoint,
        "cases": PLANTED_CASES,
        "url": f"{reverse('evolution:evolution_new')}?{query}",
    }


def stage_draft_diff(*, stage: Stage) -> dict[str, str]:
    """The stage's open editor draft against the parent version (path -> unified diff), or {}
    without one.

    Once an operator edits a proposal in the editor the candidate is this draft, not the proposals'
    diffs.
    """
    from harness.diff import diff_files
    from studio.harnesses.models import Draft
    from studio.harnesses.selectors import version_files

    draft = stage.draft
    if draft is None or draft.status != Draft.OPEN:
        return {}
    return diff_files(version_files(version=stage.parent_version), draft.files).files


def run_time_estimates(*, dataset_name: str | None = None) -> dict[str, Any]:
    """How long an evaluation would take on each endpoint, from measured per-case times.

    Per endpoint: the wall time of its finished runs over the cases they scored (seconds per
    case), or None ("no measurement yet") when none of its runs has finished; with a dataset,
    the estimate for all its cases.
    """
    from studio.endpoints.models import ModelEndpoint

    finished = EvalRun.objects.filter(status=EvalRun.SUCCEEDED, wall_s__gt=0)
    measured = {
        row["endpoint"]: row
        for row in finished.values("endpoint").annotate(seconds=Sum("wall_s"), runs=Count("id"))
    }
    scored = dict(
        CaseResult.objects.filter(run__in=finished)
        .values("run__endpoint")
        .annotate(n=Count("id"))
        .values_list("run__endpoint", "n")
    )
    dataset = (
        Dataset.objects.filter(name=dataset_name).only("name", "case_count").first()
        if dataset_name
        else None
    )
    rows = []
    for endpoint in ModelEndpoint.objects.all():
        cases = scored.get(endpoint.pk, 0)
        per_case = (
            measured[endpoint.pk]["seconds"] / cases if cases and endpoint.pk in measured else None
        )
        rows.append(
            {
                "endpoint": endpoint,
                "per_case_s": per_case,
                "cases_measured": cases,
                "runs": measured[endpoint.pk]["runs"] if per_case is not None else 0,
                "estimate": about(per_case * dataset.case_count)
                if per_case is not None and dataset
                else None,
            }
        )
    return {"rows": rows, "dataset": dataset}


def stage_newest_for_candidate(*, version) -> Stage | None:
    """The newest evolution stage that evaluated ``version`` as a candidate against its parent."""
    return (
        Stage.objects.select_related("evolution")
        .filter(candidate_version=version)
        .exclude(comparison={})
        .order_by("-pk")
        .first()
    )


def stage_existing_candidate(*, stage: Stage, number: int) -> dict[str, Any] | None:
    """The existing version (of the stage's Harness, other than its parent) that committing the
    candidate found its files to be (the page's ``?existing=N``), with its labels and a finished
    run of it on the stage's cases, for the offer to evaluate or promote it; None when there is no
    such version or the stage has its candidate already."""
    from studio.harnesses.models import HarnessVersion

    if stage.candidate_version_id or number == stage.parent_version.number:
        return None
    version = (
        HarnessVersion.objects.filter(harness_id=stage.evolution.harness_id, number=number)
        .select_related("author")
        .defer("tree")
        .first()
    )
    if version is None:
        return None
    evolution = stage.evolution
    run = next(
        (
            r
            for r in EvalRun.objects.filter(
                version=version,
                dataset=evolution.dataset,
                endpoint=evolution.endpoint,
                status=EvalRun.SUCCEEDED,
            ).order_by("-pk")
            if list(r.case_ids) == list(evolution.case_ids)
        ),
        None,
    )
    return {
        "version": version,
        "labels": list(version.labels.values_list("name", flat=True)),
        "run": run,
    }

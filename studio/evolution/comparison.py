"""The regression report of a stage: the candidate against its parent on the same cases.

The report is the evaluation core's one paired comparison
(``evaluation.compare.paired_comparison``, the same as ``python -m evaluation
compare``) over the two runs' ``CaseResult`` rows: Accuracy, Effectiveness and
AVG overall, per category and per split (dev / held-out) with paired bootstrap
intervals; newly failing and newly passing cases (pass = Accuracy 1 and
Effectiveness 1). Added here: for each accepted proposal, how many of the cases
it targeted now pass. Release gates and the stopping advice read this report.
"""

from __future__ import annotations

from typing import Any

from evaluation.compare import paired_comparison
from evaluation.scoring import passed
from evaluation.summary import score_row
from studio.evolution.models import CaseResult, EvalRun


def _rows(run: EvalRun) -> list[dict[str, Any]]:
    return [
        score_row(
            {
                "id": r["case_id"],
                "category": r["category"],
                "split": r["split"],
                "verdict": {
                    "accuracy": r["accuracy"],
                    "effectiveness": r["effectiveness"],
                    "avg": r["avg"],
                    "reasons": [{"code": c} for c in r["reason_codes"].split(",") if c],
                },
            }
        )
        for r in CaseResult.objects.filter(run=run).values(
            "case_id", "category", "split", "accuracy", "effectiveness", "avg", "reason_codes"
        )
    ]


def compare_runs(
    *,
    parent: EvalRun,
    candidate: EvalRun,
    proposals: list[dict] | None = None,
    resamples: int = 10_000,
) -> dict[str, Any]:
    """The paired report; ``proposals`` are {title, target_case_ids} of the accepted proposals."""
    a, b = _rows(parent), _rows(candidate)
    try:
        report = paired_comparison(
            parent=a, candidate=b, resamples=resamples, order=list(parent.case_ids)
        )
    except ValueError:
        raise ValueError(f"runs #{parent.pk} and #{candidate.pk} share no scored case") from None
    report = {"parent_run": parent.pk, "candidate_run": candidate.pk, **report, "proposals": []}
    scored = {r["id"]: r for r in b}
    for proposal in proposals or []:
        targeted = [c for c in proposal["target_case_ids"] if c in scored]
        fixed = [c for c in targeted if passed(scored[c])]
        report["proposals"].append(
            {
                "title": proposal["title"],
                "targeted": len(targeted),
                "fixed": len(fixed),
                "still_failing": [c for c in targeted if c not in fixed][:20],
            }
        )
    return report

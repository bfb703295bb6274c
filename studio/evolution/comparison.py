"""The regression report of a stage: the candidate against its parent on the same cases.

Paired per case (both runs scored the same case ids): Accuracy, Effectiveness
and AVG overall, per category and per split (dev / held-out) with paired
bootstrap intervals from :mod:`evaluation.stats`; newly failing and newly
passing cases; for each accepted proposal, how many of the cases it targeted
now pass. Release gates and the stopping advice read this report.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from evaluation.stats import paired_bootstrap
from studio.evolution.models import CaseResult, EvalRun

METRICS = ("accuracy", "effectiveness", "avg")


def _rows(run: EvalRun) -> dict[str, dict[str, Any]]:
    return {r["case_id"]: r for r in CaseResult.objects.filter(run=run).values(
        "case_id", "category", "split", "accuracy", "effectiveness", "avg", "reason_codes")}


def _passed(row: dict) -> bool:
    return row["accuracy"] >= 1 and row["effectiveness"] >= 1


def _block(pairs: list[tuple[dict, dict]], *, resamples: int) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(pairs)}
    for metric in METRICS:
        base = [a[metric] for a, _ in pairs]
        cand = [b[metric] for _, b in pairs]
        boot = paired_bootstrap(baseline=base, candidate=cand, resamples=resamples)
        out[metric] = {
            "parent": round(100 * sum(base) / len(base), 2), "candidate": round(100 * sum(cand) / len(cand), 2),
            "delta": round(100 * boot.delta, 2), "low": round(100 * boot.low, 2), "high": round(100 * boot.high, 2),
            "p_delta_le_zero": round(boot.p_delta_le_zero, 4),
        }
    out["errors_parent"] = sum(1 for a, _ in pairs if not _passed(a))
    out["errors_candidate"] = sum(1 for _, b in pairs if not _passed(b))
    if out["errors_parent"]:
        out["error_reduction_pct"] = round(100 * (out["errors_parent"] - out["errors_candidate"])
                                           / out["errors_parent"], 1)
    return out


def compare_runs(*, parent: EvalRun, candidate: EvalRun, proposals: list[dict] | None = None,
                 resamples: int = 10_000) -> dict[str, Any]:
    """The paired report; ``proposals`` are {title, target_case_ids} of the accepted proposals."""
    a, b = _rows(parent), _rows(candidate)
    shared = [cid for cid in parent.case_ids if cid in a and cid in b]
    if not shared:
        raise ValueError(f"runs #{parent.pk} and #{candidate.pk} share no scored case")
    pairs = [(a[c], b[c]) for c in shared]
    by_category: dict[str, list] = defaultdict(list)
    by_split: dict[str, list] = defaultdict(list)
    for pa, pb in pairs:
        by_category[pa["category"]].append((pa, pb))
        by_split[pa["split"]].append((pa, pb))
    report: dict[str, Any] = {
        "parent_run": parent.pk, "candidate_run": candidate.pk, "n": len(shared),
        "overall": _block(pairs, resamples=resamples),
        "per_category": {k: _block(v, resamples=resamples) for k, v in sorted(by_category.items())},
        "per_split": {k: _block(v, resamples=resamples) for k, v in sorted(by_split.items())},
        "newly_failing": [{"case_id": c, "category": a[c]["category"], "reasons": b[c]["reason_codes"].strip(",")}
                          for c in shared if _passed(a[c]) and not _passed(b[c])],
        "newly_passing": [{"case_id": c, "category": a[c]["category"], "reasons": a[c]["reason_codes"].strip(",")}
                          for c in shared if not _passed(a[c]) and _passed(b[c])],
        "proposals": [],
    }
    for proposal in proposals or []:
        targeted = [c for c in proposal["target_case_ids"] if c in b]
        fixed = [c for c in targeted if _passed(b[c])]
        report["proposals"].append({"title": proposal["title"], "targeted": len(targeted), "fixed": len(fixed),
                                    "still_failing": [c for c in targeted if c not in fixed][:20]})
    return report

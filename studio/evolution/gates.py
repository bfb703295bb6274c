"""Release gates before promotion to production, and the stopping advice of SPEC §5.

Gates: *business regression* (no category's AVG drops more than the
evolution's tolerance against the parent), *latency* (P95 of the latest
deployment-replay job that finished, against the 15 s bound), *general
capability* (IFEval prompt-level strict accuracy of the latest IFEval job, when
one exists). Promotion to production needs every gate to pass: a gate that
failed or has no data blocks it unless a reviewer overrides it with a written
reason (:func:`gates_check_promotion`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from studio.jobs.models import Job

LATENCY_BOUND_S = 15.0
IFEVAL_FLOOR = 0.5  # prompt-level strict accuracy below this blocks: the model lost instruction following


@dataclass
class Gate:
    name: str
    status: str  # pass | fail | no data
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def business_gate(*, comparison: dict[str, Any], tolerance: float) -> Gate:
    if not comparison:
        return Gate("business regression", "no data", "the candidate has not been evaluated yet")
    drops = {cat: block["avg"]["delta"] for cat, block in comparison["per_category"].items()
             if block["avg"]["delta"] < -100 * tolerance}
    if drops:
        shown = ", ".join(f"{k} {v:+.2f}" for k, v in sorted(drops.items()))
        return Gate("business regression", "fail",
                    f"AVG drops beyond the {100 * tolerance:.1f}-point tolerance: {shown}")
    return Gate("business regression", "pass",
                f"no category's AVG drops more than {100 * tolerance:.1f} points")


def _latest_result(kind_word: str, key: str) -> tuple[Job | None, Any]:
    for job in Job.objects.filter(kind__icontains=kind_word, status=Job.SUCCEEDED).order_by("-finished_at")[:20]:
        result = job.result or {}
        for scope in (result, result.get("metrics") or {}, result.get("summary") or {}):
            if isinstance(scope, dict) and scope.get(key) is not None:
                return job, scope[key]
    return None, None


def latency_gate() -> Gate:
    job, p95 = _latest_result("replay", "wall_p95_s")
    if job is None:
        return Gate("latency", "no data", "no deployment replay has finished yet; run one to check the 15 s bound")
    ok = float(p95) <= LATENCY_BOUND_S
    return Gate("latency", "pass" if ok else "fail",
                f"wall P95 {float(p95):.2f} s in replay job #{job.pk} (bound {LATENCY_BOUND_S:g} s)")


def ifeval_gate() -> Gate:
    job, score = _latest_result("ifeval", "prompt_strict")
    if job is None:
        return Gate("general capability", "no data", "no IFEval run has finished yet")
    ok = float(score) >= IFEVAL_FLOOR
    return Gate("general capability", "pass" if ok else "fail",
                f"IFE-P strict {100 * float(score):.1f}% in job #{job.pk} (floor {100 * IFEVAL_FLOOR:.0f}%)")


def release_gates(*, comparison: dict[str, Any], tolerance: float) -> list[Gate]:
    return [business_gate(comparison=comparison, tolerance=tolerance), latency_gate(), ifeval_gate()]


def version_release_gates(*, version) -> list[Gate]:
    """The gates of a version promoted outside a stage decision (the Harness page, the API).

    Its business gate is the newest evolution stage that evaluated it as a candidate against its
    parent; a version no stage evaluated has no data there."""
    from studio.evolution.models import Stage

    stage = (Stage.objects.select_related("evolution").filter(candidate_version=version)
             .exclude(comparison={}).order_by("-pk").first())
    if stage is None:
        business = Gate("business regression", "no data",
                        f"v{version.number} has not been evaluated against its parent in an evolution stage")
    else:
        business = business_gate(comparison=stage.comparison, tolerance=stage.evolution.tolerance)
        business.detail += f" (evolution #{stage.evolution_id} stage {stage.number})"
    return [business, latency_gate(), ifeval_gate()]


def gates_blocking(gates: list[Gate]) -> list[Gate]:
    """The gates that stop a promotion to production: failed, or without data."""
    return [g for g in gates if g.status != "pass"]


def gates_check_promotion(*, gates: list[Gate], override_reason: str) -> list[Gate]:
    """The blocking gates a promotion goes through with; ValueError naming them when there is no override reason."""
    blocking = gates_blocking(gates)
    if blocking and not override_reason.strip():
        shown = "; ".join(f"{g.name}: {g.status} ({g.detail})" for g in blocking)
        raise ValueError(f"release gates did not pass: {shown}. Promotion to production needs every gate to pass; "
                         "to promote anyway, a reviewer must write why in the override reason")
    return blocking


def stopping_advice(*, stages: list, sparse_share: float = 0.1, sparse_cluster: int = 2) -> str:
    """Advice to stop when the last evaluated stage regressed and the remaining failures are long-tail.

    ``stages`` are Stage rows in order. Long-tail: failures are under ``sparse_share`` of the cases,
    or no failure cluster of the last diagnosis holds more than ``sparse_cluster`` cases.
    """
    evaluated = [s for s in stages if s.comparison]
    if not evaluated:
        return ""
    last = evaluated[-1]
    overall = last.comparison["overall"]
    regressed = overall["avg"]["delta"] < 0 or any(
        b["avg"]["delta"] < 0 for b in last.comparison["per_category"].values()) and overall["avg"]["delta"] <= 0
    errors, n = overall["errors_candidate"], overall["n"]
    diagnosis = last.diagnoses.first()
    biggest = max((c["size"] for c in diagnosis.clusters), default=0) if diagnosis else 0
    long_tail = errors <= sparse_share * n or biggest <= sparse_cluster
    if regressed and long_tail:
        return (f"Stop here: stage {last.number} did not improve AVG ({overall['avg']['delta']:+.2f}) and the "
                f"{errors} remaining failure(s) of {n} are sparse long-tail cases; more local rules risk "
                "cross-category regressions. Keep the best version so far.")
    return ""


def version_gate_overrides(*, version) -> list:
    """The audit events of promotions of ``version`` that went through with a gate overridden."""
    from studio.audit.models import AuditEvent

    return list(AuditEvent.objects.select_related("actor")
                .filter(action="evolution.gates.override", harness_id=version.harness_id,
                        data__version=version.number).order_by("-created_at"))

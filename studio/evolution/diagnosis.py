"""The diagnosis of a stage: queue it as a job, and the job's body (cluster failures, propose validated edits).

Only the parent run's dev-split failures are diagnosed; held-out cases stay
unseen so the regression report can tell whether an edit generalises. The
clustering, the edits and the diagnosers are the pure library
:mod:`evaluation.diagnosis`; this module stores what it found.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from studio.evolution.errors import EvolutionError
from studio.evolution.models import (
    CaseResult,
    DatasetCase,
    Diagnosis,
    EvalRun,
    Evolution,
    Proposal,
    Stage,
)
from studio.evolution.stages import stage_check_open
from studio.harnesses.selectors import version_files
from studio.jobs.services import job_create


@transaction.atomic
def diagnosis_start(*, stage: Stage, actor: User) -> Diagnosis:
    """Queue a diagnosis of the parent run's dev-split failures."""
    stage_check_open(stage)
    run = stage.parent_run
    if run is None or run.status != EvalRun.SUCCEEDED:
        raise EvolutionError(f"stage {stage.number}: the parent version has not finished its evaluation")
    if stage.candidate_version_id:
        raise EvolutionError(f"stage {stage.number} already has a candidate; decide, then start another stage")
    evolution = stage.evolution
    name = evolution.diagnoser if evolution.diagnoser == Evolution.RULE_BASED else \
        f"llm:{evolution.diagnoser_endpoint.model}"
    diagnosis = Diagnosis.objects.create(stage=stage, run=run, diagnoser=name, created_by=actor)
    job = job_create(kind="evolution_diagnose", title=f"Diagnose {stage} ({name})",
                     params={"diagnosis_id": diagnosis.pk}, created_by=actor)
    Diagnosis.objects.filter(pk=diagnosis.pk).update(job=job)
    diagnosis.job = job
    return diagnosis


def _diagnoser_for(evolution: Evolution):
    from evaluation.diagnosis import LLMDiagnoser, RuleBasedDiagnoser

    if evolution.diagnoser == Evolution.LLM:
        endpoint = evolution.diagnoser_endpoint
        return LLMDiagnoser(base_url=endpoint.base_url, model=endpoint.model, api_key_env=endpoint.api_key_env)
    return RuleBasedDiagnoser()


def diagnosis_execute(*, diagnosis_id: int, log) -> dict[str, Any]:
    """The diagnosis job's body: cluster dev-split failures, propose and validate edits, store them."""
    from evaluation.diagnosis import diagnose, failures_from_results

    diagnosis = Diagnosis.objects.select_related("stage__evolution", "run__version").get(pk=diagnosis_id)
    Diagnosis.objects.filter(pk=diagnosis.pk).update(status=EvalRun.RUNNING)
    try:
        results = list(CaseResult.objects.filter(run=diagnosis.run, split=DatasetCase.DEV).values(
            "case_id", "category", "accuracy", "effectiveness", "verdict", "reply", "route", "trajectory"))
        rows = [{**r, "reasons": r["verdict"].get("reasons", [])} for r in results]
        cases = {c.case_id: c.data for c in DatasetCase.objects.filter(
            dataset=diagnosis.run.dataset, case_id__in=[r["case_id"] for r in rows])}
        failures = failures_from_results(results=rows, cases=cases)
        log(f"{len(failures)} of {len(rows)} dev-split case(s) failed; held-out cases are left out of diagnosis")
        found = diagnose(failures=failures, total=len(rows), files=version_files(version=diagnosis.run.version),
                         diagnoser=_diagnoser_for(diagnosis.stage.evolution))
    except Exception as error:
        Diagnosis.objects.filter(pk=diagnosis.pk).update(status=EvalRun.FAILED, error=f"{type(error).__name__}: {error}")
        raise
    with transaction.atomic():
        Proposal.objects.bulk_create([
            Proposal(diagnosis=diagnosis, index=i, title=p.title, rationale=p.rationale, reason=p.reason,
                     diagnoser=p.diagnoser, target_case_ids=p.target_case_ids,
                     edits=[e.to_dict() for e in p.edits], valid=p.valid, problems=p.problems, diff=p.diff,
                     summary=p.summary)
            for i, p in enumerate(found.proposals)
        ])
        Diagnosis.objects.filter(pk=diagnosis.pk).update(
            status=EvalRun.SUCCEEDED, total=found.total, failed=found.failed,
            clusters=[c.to_dict() for c in found.clusters])
    log(f"{len(found.clusters)} cluster(s), {len(found.proposals)} proposal(s) "
        f"({sum(p.valid for p in found.proposals)} valid)")
    return {"clusters": len(found.clusters), "proposals": len(found.proposals), "failed": found.failed}

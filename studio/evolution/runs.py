"""Evaluation runs: one Harness version on a list of dataset cases, as a resumable job.

``eval_run_start`` stores the run and queues a job; the job calls
``eval_run_execute``, which scores each case with the evaluation core
(``evaluation.scoring.CaseScorer``: the case's Harness variant, canned tools,
the judge with the version's own settings) and writes one ``CaseResult`` per
case the moment it is scored; the summary is ``evaluation.summary.summarize``. A run whose worker dies keeps
those rows: ``eval_run_resume`` queues a fresh job that skips every case that
already has a result, and ``eval_runs_resume_stalled`` (called when a worker
starts and when a run page notices its job was lost) does that for every run
whose job ended without the run finishing.
"""

from __future__ import annotations

import time
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from harness.mcp_registry import McpServerRefused
from studio.audit.services import audit_record
from studio.endpoints.models import ModelEndpoint
from studio.endpoints.services import policy_for_endpoint
from studio.evolution.models import CaseResult, Dataset, DatasetCase, EvalRun
from studio.evolution.selectors import catalogue_for
from studio.harnesses.models import HarnessVersion
from studio.jobs.models import Job
from studio.jobs.registry import JobFailed
from studio.jobs.services import JobCancelled, job_create, job_reap_stale


class EvaluationError(ValueError):
    """A run cannot start or resume; the message names the field and what is valid."""


def eval_run_start(
    *, version: HarnessVersion, dataset: Dataset, endpoint: ModelEndpoint, case_ids: list[str], actor: User | None
) -> EvalRun:
    """Store a run over ``case_ids`` (all in ``dataset``) and queue its job."""
    if not case_ids:
        raise EvaluationError("cases: a run needs at least one case")
    known = set(DatasetCase.objects.filter(dataset=dataset, case_id__in=case_ids).values_list("case_id", flat=True))
    missing = [c for c in case_ids if c not in known]
    if missing:
        raise EvaluationError(f"cases: {', '.join(missing[:5])} not in dataset {dataset.name}")
    run = EvalRun.objects.create(version=version, dataset=dataset, endpoint=endpoint, case_ids=list(case_ids),
                                 created_by=actor)
    audit_record(actor=actor, action="evolution.run.start", harness=version.harness, target=f"eval run #{run.pk}",
                 data={"version": version.number, "dataset": dataset.name, "cases": len(case_ids)})
    _queue(run=run, actor=actor)
    return run


def _queue(*, run: EvalRun, actor: User | None) -> Job:
    done = run.results.count()
    job = job_create(kind="evolution_eval_run",
                     title=f"Evaluate {run.version} on {run.dataset.name} ({done}/{run.total} done)",
                     params={"run_id": run.pk}, created_by=actor)
    EvalRun.objects.filter(pk=run.pk).update(job=job, status=EvalRun.QUEUED, error="")
    run.refresh_from_db()
    return job


def eval_run_resume(*, run: EvalRun, actor: User | None) -> EvalRun:
    """Queue a new job for an unfinished run; cases already scored are kept and skipped."""
    if run.status == EvalRun.SUCCEEDED:
        raise EvaluationError(f"run #{run.pk} has finished; start a new run to score again")
    if run.job is not None and run.job.is_active:
        raise EvaluationError(f"run #{run.pk} is already {run.job.status} as job #{run.job.pk}")
    audit_record(actor=actor, action="evolution.run.resume", harness=run.version.harness,
                 target=f"eval run #{run.pk}", data={"done": run.results.count(), "total": run.total})
    _queue(run=run, actor=actor)
    return run


def eval_run_is_stalled(run: EvalRun) -> bool:
    """The run is unfinished but its job ended: the worker was lost mid-run (a cancelled job is not lost)."""
    return (run.status in (EvalRun.QUEUED, EvalRun.RUNNING) and run.job is not None and not run.job.is_active
            and not eval_run_note_cancelled(run))


def eval_run_note_cancelled(run: EvalRun) -> bool:
    """If the run's job was cancelled, end the run saying so (what it scored is kept; resume continues)."""
    if run.job is None or run.job.status != Job.CANCELLED:
        return False
    if run.status in (EvalRun.QUEUED, EvalRun.RUNNING):
        _end_cancelled(run, reason=run.job.error)
        run.refresh_from_db()
    return True


def _end_cancelled(run: EvalRun, *, reason: str) -> None:
    EvalRun.objects.filter(pk=run.pk, status__in=(EvalRun.QUEUED, EvalRun.RUNNING)).update(
        status=EvalRun.FAILED, finished_at=timezone.now(),
        error=f"{reason}; {run.results.count()} of {run.total} case(s) scored and kept: resume to finish")


def eval_runs_resume_stalled() -> list[int]:
    """Reap jobs whose worker died, then resume every run left unfinished by one. Returns run ids."""
    job_reap_stale()
    resumed = []
    for run in EvalRun.objects.filter(status__in=(EvalRun.QUEUED, EvalRun.RUNNING)).select_related("job"):
        if eval_run_is_stalled(run):
            with transaction.atomic():
                eval_run_resume(run=run, actor=None)
            resumed.append(run.pk)
    return resumed


def _reason_field(codes: list[str]) -> str:
    return ("," + ",".join(dict.fromkeys(codes)) + ",")[:500] if codes else ""


def eval_run_execute(*, run_id: int, progress, log) -> dict[str, Any]:
    """Score every case of the run that has no result yet (the job's body)."""
    from evaluation.scoring import CaseScorer
    from studio.harnesses.bundles import bundle_load
    from studio.harnesses.selectors import version_files
    from studio.mcpservers.selectors import mcp_registry

    run = EvalRun.objects.select_related("version", "dataset", "endpoint").get(pk=run_id)
    if run.status == EvalRun.SUCCEEDED:  # a resume queued while the lost job was in fact finishing
        log(f"run #{run.pk} has already finished; nothing to score")
        return {"run_id": run.pk, "scored_now": 0, "kept": run.results.count(), **run.summary.get("overall", {})}
    attempt = run.attempts + 1
    EvalRun.objects.filter(pk=run.pk).update(status=EvalRun.RUNNING, attempts=attempt)
    done = set(run.results.values_list("case_id", flat=True))
    todo = [c for c in run.case_ids if c not in done]
    log(f"attempt {attempt}: {len(done)} case(s) already scored and kept, {len(todo)} to score")
    try:
        cases = {c.case_id: c for c in DatasetCase.objects.filter(dataset=run.dataset, case_id__in=todo)}
        catalogue = catalogue_for(run.dataset)
        scorer = CaseScorer.for_bundle(bundle=bundle_load(version_files(version=run.version)),
                                       policy=policy_for_endpoint(run.endpoint), catalogue=catalogue,
                                       mcp_registry=mcp_registry())
        started = time.perf_counter()
        scored = 0
        try:
            for case_id in todo:
                if CaseResult.objects.filter(run=run, case_id=case_id).exists():
                    continue  # another job (a resume started while this one was presumed lost) scored it
                case = cases[case_id]
                row = scorer.score(case.data)
                _, created = CaseResult.objects.get_or_create(run=run, case_id=case_id, defaults=dict(
                    category=case.category, split=case.split, **_result_fields(row), attempt=attempt))
                scored += int(created)
                finished = run.results.count()
                progress(round(100 * finished / run.total), None)
                if scored % 10 == 0 or finished == run.total:
                    log(f"{finished}/{run.total} scored")
        finally:
            scorer.close()
            elapsed = time.perf_counter() - started
            run.refresh_from_db()
            counts = dict(run.scored_by_attempt)
            counts[str(attempt)] = scored
            EvalRun.objects.filter(pk=run.pk).update(scored_by_attempt=counts, wall_s=run.wall_s + elapsed)
        summary = run_summary(run=run)
        EvalRun.objects.filter(pk=run.pk).update(summary=summary)
        from studio.evolution.stages import stage_run_finished

        stage_run_finished(run_id=run.pk)  # the regression report exists before the run shows as finished
    except JobCancelled:
        job = Job.objects.select_related("cancelled_by").filter(pk=run.job_id).first()
        who = job.cancelled_by if job is not None and job.cancelled_by else "someone"
        _end_cancelled(run, reason=f"cancelled by {who}")
        raise
    except McpServerRefused as refused:  # the version names servers the studio will not start
        EvalRun.objects.filter(pk=run.pk).update(status=EvalRun.FAILED, error=str(refused),
                                                 finished_at=timezone.now())
        raise JobFailed(str(refused)) from None
    except Exception as error:
        EvalRun.objects.filter(pk=run.pk).update(status=EvalRun.FAILED, error=f"{type(error).__name__}: {error}",
                                                 finished_at=timezone.now())
        raise
    EvalRun.objects.filter(pk=run.pk).update(status=EvalRun.SUCCEEDED, finished_at=timezone.now())
    return {"run_id": run.pk, "scored_now": scored, "kept": len(done), **summary["overall"],
            "outcomes": summary["outcomes"], "mostly_fallback": summary["mostly_fallback"]}


def _result_fields(row: dict[str, Any]) -> dict[str, Any]:
    """The ``CaseResult`` columns of a scorer row."""
    verdict = row["verdict"]
    return dict(accuracy=float(verdict["accuracy"]), effectiveness=float(verdict["effectiveness"]),
                avg=float(verdict["avg"]), reason_codes=_reason_field([r["code"] for r in verdict["reasons"]]),
                verdict=verdict, reply=row["reply"], route=row["route"], trajectory=row["trajectory"] or {},
                latency_s=row["latency_s"])


def result_row(result: CaseResult) -> dict[str, Any]:
    """A stored ``CaseResult`` as the evaluation core's row (``evaluation.scoring``)."""
    from evaluation.scoring import request_outcome

    error = next((r.get("detail", "") for r in result.verdict.get("reasons", []) if r.get("code") == "run_error"),
                 None) if result.route == "error" else None
    return {"id": result.case_id, "category": result.category, "split": result.split, "reply": result.reply,
            "route": result.route, "outcome": request_outcome(result.trajectory, error=error),
            "verdict": result.verdict, "trajectory": result.trajectory or None, "latency_s": result.latency_s,
            **({"error": error} if error else {})}


def run_summary(*, run: EvalRun) -> dict[str, Any]:
    """The evaluation core's summary of the run's results (``evaluation.summary.summarize``): Accuracy,
    Effectiveness and AVG overall, per category and per split (percent), latency, how requests ended."""
    from evaluation.summary import summarize

    summary = summarize([result_row(r) for r in run.results.all()])
    summary.pop("config")
    return summary

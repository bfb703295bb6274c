"""Evaluation runs: one Harness version on a list of dataset cases, as a resumable job over any
number of workers.

``eval_run_start`` stores the run, cuts its cases into chunks
(``studio.evolution.services.chunks``) and queues a job; the job calls
``eval_run_execute``, which sends one chunk task per further chunk to the
queue (any worker on any host sharing the database and Redis takes one:
``eval_run_score_chunk``), scores chunks itself until none is left to claim,
waits for the chunks other workers hold (claiming again any whose worker's
lease ran out) and then writes the summary. Every worker scores a case with
the evaluation core (``evaluation.scoring.CaseScorer``: the case's Harness
variant, canned tools, the judge with the version's own settings) and writes
one ``CaseResult`` per case the moment it is scored; the summary is
``evaluation.summary.summarize``. A worker that dies loses only the case it was
scoring: its chunk is claimed again once its lease runs out. If the job's own
worker dies, ``eval_run_resume`` queues a fresh job that skips every case that
already has a result, and ``eval_runs_resume_stalled`` (called when a worker
starts, from beat, after each chunk task and when a run page notices its job
was lost) does that for every run whose job ended without the run finishing.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from harness.mcp_registry import McpServerRefused
from studio.audit.services import audit_record
from studio.endpoints.models import ModelEndpoint
from studio.endpoints.services import policy_for_endpoint
from studio.evolution.models import Dataset, DatasetCase, EvalChunk, EvalRun
from studio.evolution.rows import catalogue_for, result_row
from studio.evolution.services.chunks import (
    ChunkLost,
    ChunkStopped,
    ScorerPool,
    chunk_claim,
    chunk_score,
    chunks_claimable,
    chunks_ensure,
    chunks_unfinished,
)
from studio.evolution.signals import eval_run_scored
from studio.harnesses.models import HarnessVersion
from studio.jobs.models import Job
from studio.jobs.registry import JobFailed
from studio.jobs.services import JobCancelled, job_create, job_reap_stale, worker_identity

logger = logging.getLogger(__name__)


EVAL_JUDGE = "programmatic"
"""The judge every studio evaluation run scores with (``evaluation.judges.make_judge`` spec); pages
and the release gates read its calibration (``studio.annotation.selectors.judge_standing``)."""


class EvaluationError(ValueError):
    """A run cannot start or resume; the message names the field and what is valid."""


def eval_run_start(
    *,
    version: HarnessVersion,
    dataset: Dataset,
    endpoint: ModelEndpoint,
    case_ids: list[str],
    actor: User | None,
) -> EvalRun:
    """Store a run over ``case_ids`` (all in ``dataset``) and queue its job."""
    if not case_ids:
        raise EvaluationError("cases: a run needs at least one case")
    known = set(
        DatasetCase.objects.filter(dataset=dataset, case_id__in=case_ids).values_list(
            "case_id", flat=True
        )
    )
    missing = [c for c in case_ids if c not in known]
    if missing:
        raise EvaluationError(f"cases: {', '.join(missing[:5])} not in dataset {dataset.name}")
    run = EvalRun.objects.create(
        version=version,
        dataset=dataset,
        endpoint=endpoint,
        case_ids=list(case_ids),
        created_by=actor,
    )
    chunks_ensure(run=run)
    audit_record(
        actor=actor,
        action="evolution.run.start",
        harness=version.harness,
        target=f"eval run #{run.pk}",
        data={"version": version.number, "dataset": dataset.name, "cases": len(case_ids)},
    )
    _queue(run=run, actor=actor)
    return run


def _queue(*, run: EvalRun, actor: User | None) -> Job:
    done = run.results.count()
    job = job_create(
        kind="evolution_eval_run",
        title=f"Evaluate {run.version} on {run.dataset.name} ({done}/{run.total} done)",
        params={"run_id": run.pk},
        created_by=actor,
    )
    EvalRun.objects.filter(pk=run.pk).update(job=job, status=EvalRun.QUEUED, error="")
    run.refresh_from_db()
    return job


def eval_run_resume(*, run: EvalRun, actor: User | None) -> EvalRun:
    """Queue a new job for an unfinished run; cases already scored are kept and skipped."""
    if run.status == EvalRun.SUCCEEDED:
        raise EvaluationError(
            f"evaluation run #{run.pk} has finished; start a new run to score again"
        )
    if run.job is not None and run.job.is_active:
        raise EvaluationError(
            f"evaluation run #{run.pk} is already {run.job.status} as job #{run.job.pk}"
        )
    audit_record(
        actor=actor,
        action="evolution.run.resume",
        harness=run.version.harness,
        target=f"eval run #{run.pk}",
        data={"done": run.results.count(), "total": run.total},
    )
    _queue(run=run, actor=actor)
    return run


def eval_run_is_stalled(*, run: EvalRun) -> bool:
    """The run is unfinished but its job ended: the worker was lost mid-run (a cancelled job is not
    lost)."""
    return (
        run.status in (EvalRun.QUEUED, EvalRun.RUNNING)
        and run.job is not None
        and not run.job.is_active
        and not eval_run_note_cancelled(run=run)
    )


def eval_run_note_cancelled(*, run: EvalRun) -> bool:
    """If the run's job was cancelled, end the run saying so (what it scored is kept; resume
    continues)."""
    if run.job is None or run.job.status != Job.CANCELLED:
        return False
    if run.status in (EvalRun.QUEUED, EvalRun.RUNNING):
        _end_cancelled(run, reason=run.job.error)
        run.refresh_from_db()
    return True


def _end_cancelled(run: EvalRun, *, reason: str) -> None:
    EvalRun.objects.filter(pk=run.pk, status__in=(EvalRun.QUEUED, EvalRun.RUNNING)).update(
        status=EvalRun.FAILED,
        finished_at=timezone.now(),
        error=f"{reason}; {run.results.count()} of {run.total} "
        "case(s) scored and kept: resume to finish",
    )


def eval_runs_resume_stalled() -> list[int]:
    """Reap jobs whose worker died, then resume every run left unfinished by one. Returns run
    ids."""
    job_reap_stale()
    resumed = []
    for run in EvalRun.objects.filter(status__in=(EvalRun.QUEUED, EvalRun.RUNNING)).select_related(
        "job"
    ):
        if eval_run_is_stalled(run=run) and _resume_locked(run_id=run.pk):
            resumed.append(run.pk)
    return resumed


def eval_run_resume_if_stalled(*, run: EvalRun) -> bool:
    """Reap the run's job if its worker is lost and resume the run if that left it unfinished.

    Returns whether the run may have changed (its job ended: re-read it)."""
    if run.status not in (EvalRun.QUEUED, EvalRun.RUNNING) or run.job is None:
        return False
    if run.job.is_active and not job_reap_stale(job=run.job):
        return False
    _resume_locked(run_id=run.pk)
    return True


def _resume_locked(*, run_id: int) -> bool:
    """Resume the run if it is stalled, deciding under its row lock so two noticing workers queue
    one job."""
    with transaction.atomic():
        run = EvalRun.objects.select_for_update(of=("self",)).select_related("job").get(pk=run_id)
        if not eval_run_is_stalled(run=run):
            return False
        eval_run_resume(run=run, actor=None)
    return True


def _scorer(run: EvalRun) -> ScorerPool:
    """The evaluation core's case scorers for the run's version, endpoint and catalogue:
    EVAL_CASES_AT_ONCE of them, so a claimant scores that many cases at once on the endpoint's slots
    (chunk_score)."""
    from evaluation.scoring import CaseScorer
    from studio.harnesses.bundles import bundle_load
    from studio.harnesses.selectors import version_files
    from studio.mcpservers.selectors import mcp_registry

    bundle, catalogue, registry = (
        bundle_load(version_files(version=run.version)),
        catalogue_for(run.dataset),
        mcp_registry(),
    )
    return ScorerPool(
        CaseScorer.for_bundle(
            bundle=bundle,
            policy=policy_for_endpoint(endpoint=run.endpoint),
            catalogue=catalogue,
            judge=EVAL_JUDGE,
            mcp_registry=registry,
        )
        for _ in range(settings.EVAL_CASES_AT_ONCE)
    )


def _fan_out(*, run_id: int, tasks: int) -> None:
    from studio.evolution.tasks import score_eval_chunk

    for _ in range(tasks):
        score_eval_chunk.delay(run_id)


def eval_run_execute(
    *, run_id: int, progress, log, in_worker: bool = False, worker: str = ""
) -> dict[str, Any]:
    """Score every case of the run that has no result yet (the job's body).

    ``in_worker``: the job runs in a worker process of its own, so it hands the other chunks to the
    queue and renews its chunk leases from a side thread; inline (eager, tests) it scores every
    chunk itself.

    The steps: an attempt begins (``_attempt_begin``), the other chunks go to the queue
    (``_fan_out``), this job scores chunks until none is left to claim and waits for the rest
    (``_chunks_score``), the attempt's counts are kept (``_attempt_record``), then the summary is
    written and ``eval_run_scored`` sent; a cancel, a refused MCP server or an error ends the run
    as failed (``_attempt_failed``).
    """
    run = EvalRun.objects.select_related("version", "dataset", "endpoint").get(pk=run_id)
    if run.status == EvalRun.SUCCEEDED:  # a resume queued while the lost job was in fact finishing
        log(f"run #{run.pk} has already finished; nothing to score")
        return {
            "run_id": run.pk,
            "scored_now": 0,
            "kept": run.results.count(),
            **run.summary.get("overall", {}),
        }
    attempt = _attempt_begin(run=run, log=log)
    report = _ProgressReport(run=run, progress=progress, log=log, done=attempt.kept)
    try:
        if in_worker and attempt.claimable > 1:  # first: the others set up while this one does
            _fan_out(run_id=run.pk, tasks=attempt.claimable - 1)
            log(f"queued {attempt.claimable - 1} chunk task(s): any free worker takes one")
        scorer = _scorer(run)
        started = time.perf_counter()
        try:
            _chunks_score(
                run=run,
                scorer=scorer,
                attempt=attempt.number,
                worker=worker or worker_identity(),
                report=report,
                log=log,
                in_worker=in_worker,
            )
        finally:
            scorer.close()
            _attempt_record(run=run, attempt=attempt.number, elapsed=time.perf_counter() - started)
        report()
        summary = run_summary(run=run)
        EvalRun.objects.filter(pk=run.pk).update(summary=summary)
        # a stage whose candidate run this is writes its regression report
        # (studio.evolution.services.stages) before the run shows as finished; a receiver's error
        # fails the run, as it would in line
        eval_run_scored.send(sender=EvalRun, run_id=run.pk)
    except Exception as error:
        _attempt_failed(run=run, error=error)
        raise
    EvalRun.objects.filter(pk=run.pk).update(status=EvalRun.SUCCEEDED, finished_at=timezone.now())
    workers = dict(run.results.values_list("worker").annotate(n=Count("id")))
    return {
        "run_id": run.pk,
        "scored_now": run.total - attempt.kept,
        "kept": attempt.kept,
        **summary["overall"],
        "outcomes": summary["outcomes"],
        "mostly_fallback": summary["mostly_fallback"],
        "chunks": attempt.chunks,
        "workers": workers,
    }


@dataclass(frozen=True)
class _Attempt:
    number: int  # the run's attempts so far, this one included
    chunks: int  # the run's chunks
    kept: int  # cases scored by earlier attempts
    claimable: int  # chunks open to a claim as it began


def _attempt_begin(*, run: EvalRun, log) -> _Attempt:
    """Mark the run running in a new attempt, its chunks cut (once), and log what is left."""
    number = run.attempts + 1
    EvalRun.objects.filter(pk=run.pk).update(status=EvalRun.RUNNING, attempts=number)
    chunks = chunks_ensure(run=run)
    kept = run.results.count()
    claimable = chunks_claimable(run_id=run.pk)
    largest = max(len(ids) for ids in run.chunks.values_list("case_ids", flat=True))
    log(
        f"attempt {number}: {kept} case(s) already scored and kept, {run.total - kept} to score; "
        f"{claimable} of {chunks} chunk(s) of up to {largest} case(s) to claim"
    )
    return _Attempt(number=number, chunks=chunks, kept=kept, claimable=claimable)


class _ProgressReport:
    """The job's progress: cases done over all chunks, whoever scored them; a log line every ten
    cases and at the last."""

    def __init__(self, *, run: EvalRun, progress, log, done: int) -> None:
        self.run, self.progress, self.log, self.done = run, progress, log, done

    def __call__(self) -> None:
        finished, total = self.run.results.count(), self.run.total
        self.progress(round(100 * finished / total), None)
        if finished // 10 > self.done // 10 or (finished == total > self.done):
            self.log(f"{finished}/{total} scored")
        self.done = finished


def _chunks_score(
    *,
    run: EvalRun,
    scorer: ScorerPool,
    attempt: int,
    worker: str,
    report: _ProgressReport,
    log,
    in_worker: bool,
) -> None:
    """Claim and score chunks until none is left to claim, then wait for those other workers hold
    (a chunk whose worker's lease runs out is claimed again here); a cancel stops the wait."""
    logged: set[int] = set()
    while True:
        claim = chunk_claim(run_id=run.pk, worker=worker)
        if claim is not None:
            _log_claimed_again(claim=claim, log=log)
            try:
                chunk_score(
                    claim=claim,
                    scorer=scorer,
                    attempt=attempt,
                    worker=worker,
                    on_case=report,
                    heartbeat=in_worker,
                )
            except ChunkLost as lost:
                log(str(lost))
            _log_done_chunks(run_id=run.pk, logged=logged, log=log)
            continue
        _log_done_chunks(run_id=run.pk, logged=logged, log=log)
        if not chunks_unfinished(run_id=run.pk):
            return
        report()  # other workers hold the remaining chunks: wait, and stop here on a cancel
        time.sleep(min(settings.JOB_HEARTBEAT_S, 1.0))


def _log_claimed_again(*, claim, log) -> None:
    """Say why a chunk is claimed a second time: its worker went silent, or its job handed it
    back."""
    if claim.taken_from:
        log(
            f"chunk {claim.chunk.index} claimed again: "
            f"no heartbeat from {claim.taken_from} for "
            f"{settings.JOB_LEASE_S:g} s (its scored cases are kept)"
        )
    elif claim.chunk.claims > 1:  # handed back, not lost: its job stopped or failed before
        log(
            f"chunk {claim.chunk.index} claimed again: "
            "handed back by a job that stopped or failed "
            "(its scored cases are kept)"
        )


def _attempt_record(*, run: EvalRun, attempt: int, elapsed: float) -> None:
    """Keep how many cases each attempt scored and the run's scoring time (a failed attempt's
    too)."""
    run.refresh_from_db()
    counts = dict(run.scored_by_attempt)
    counts[str(attempt)] = 0
    counts.update(
        {str(a): n for a, n in run.results.values_list("attempt").annotate(n=Count("id"))}
    )
    EvalRun.objects.filter(pk=run.pk).update(scored_by_attempt=counts, wall_s=run.wall_s + elapsed)


def _attempt_failed(*, run: EvalRun, error: Exception) -> None:
    """End the run as failed, saying why; a refused MCP server fails its job with the refusal's
    words (``JobFailed``), raised from here."""
    if isinstance(error, JobCancelled):
        job = Job.objects.select_related("cancelled_by").filter(pk=run.job_id).first()
        who = job.cancelled_by if job is not None and job.cancelled_by else "someone"
        _end_cancelled(run, reason=f"cancelled by {who}")
        return
    if isinstance(error, McpServerRefused):  # the version names servers the studio will not start
        EvalRun.objects.filter(pk=run.pk).update(
            status=EvalRun.FAILED, error=str(error), finished_at=timezone.now()
        )
        raise JobFailed(str(error)) from None
    EvalRun.objects.filter(pk=run.pk).update(
        status=EvalRun.FAILED,
        error=f"{type(error).__name__}: {error}",
        finished_at=timezone.now(),
    )


def _log_done_chunks(*, run_id: int, logged: set[int], log) -> None:
    """One job log line per chunk as it finishes, naming the worker that finished it."""
    for index, worker, case_ids, claims in (
        EvalChunk.objects.filter(run_id=run_id, status=EvalChunk.DONE)
        .exclude(index__in=logged)
        .values_list("index", "worker", "case_ids", "claims")
    ):
        logged.add(index)
        again = f", claimed {claims} times" if claims > 1 else ""
        log(f"chunk {index} ({len(case_ids)} case(s)) done on {worker}{again}")


def _run_takes_work(run_id: int) -> bool:
    """The run is unfinished and its job has not been asked to stop."""
    return EvalRun.objects.filter(
        pk=run_id,
        status__in=(EvalRun.QUEUED, EvalRun.RUNNING),
        job__cancel_requested_at__isnull=True,
    ).exists()


# This worker process's scorer for the run its chunk tasks serve: setting one up (the Agent, the MCP
# servers it connects to) takes seconds, so consecutive chunk tasks of one run share it.
_CHUNK_SCORER: dict[str, Any] = {}


def _chunk_scorer(run: EvalRun, *, keep: bool):
    if _CHUNK_SCORER.get("run_id") == run.pk:
        return _CHUNK_SCORER["scorer"]
    _drop_chunk_scorer()
    scorer = _scorer(run)
    if keep:
        _CHUNK_SCORER.update(run_id=run.pk, scorer=scorer)
    return scorer


def _drop_chunk_scorer(*, run_id: int | None = None) -> None:
    """Close the kept scorer (only if it is ``run_id``'s, when given)."""
    if run_id is not None and _CHUNK_SCORER.get("run_id") != run_id:
        return
    scorer = _CHUNK_SCORER.pop("scorer", None)
    _CHUNK_SCORER.clear()
    if scorer is not None:
        scorer.close()


def eval_run_score_chunk(*, run_id: int, worker: str, heartbeat: bool = True) -> int:
    """One chunk task's body: claim one chunk of the run and score it. Returns the cases this call
    scored.

    The scorer is set up before the claim (no lease is held while it starts) and kept for the run's
    next chunk task in this process (``heartbeat``: a worker process of its own; inline it is closed
    at once). A task that finds nothing to claim (the job's worker or another task got there first)
    ends at once. A cancel, or the run ending, stops it before its next case, handing the chunk
    back. Afterwards it resumes the run if the job's own worker was lost meanwhile (its job's lease
    ran out).
    """
    run = (
        EvalRun.objects.select_related("version", "dataset", "endpoint", "job")
        .filter(pk=run_id)
        .first()
    )
    if run is None:
        return 0
    if not _run_takes_work(run_id) or not chunks_claimable(run_id=run_id):
        if not _run_takes_work(run_id) or not chunks_unfinished(run_id=run_id):
            _drop_chunk_scorer(run_id=run_id)  # the run needs nothing more from this worker
        eval_run_resume_if_stalled(run=run)
        return 0
    try:
        scorer = _chunk_scorer(run, keep=heartbeat)
    except McpServerRefused:  # the job's own scorer reports it and fails the run
        return 0
    scored, keep = 0, heartbeat
    try:
        claim = chunk_claim(run_id=run_id, worker=worker)
        if claim is not None:

            def stop_unless_running() -> None:
                if not _run_takes_work(run_id):
                    raise ChunkStopped(f"run #{run_id} ended or was cancelled")

            if claim.taken_from:
                logger.warning(
                    "run #%s chunk %s claimed again from %s (no heartbeat)",
                    run_id,
                    claim.chunk.index,
                    claim.taken_from,
                )
            try:
                scored = chunk_score(
                    claim=claim,
                    scorer=scorer,
                    attempt=max(1, run.attempts),
                    worker=worker,
                    on_case=stop_unless_running,
                    heartbeat=heartbeat,
                )
            except (ChunkStopped, ChunkLost) as stopped:
                logger.info("%s", stopped)
    except BaseException:
        keep = False
        raise
    finally:
        if keep:
            pass
        elif _CHUNK_SCORER.get("scorer") is scorer:
            _drop_chunk_scorer()
        else:
            scorer.close()
    eval_run_resume_if_stalled(run=EvalRun.objects.select_related("job").get(pk=run_id))
    return scored


def run_summary(*, run: EvalRun) -> dict[str, Any]:
    """The evaluation core's summary of the run's results (``evaluation.summary.summarize``):
    Accuracy, Effectiveness and AVG overall, per category and per split (percent), latency, how
    requests ended."""
    from evaluation.summary import summarize

    summary = summarize([result_row(r) for r in run.results.all()])
    summary.pop("config")
    return summary

"""The evolution app's receivers: a (re)started worker resumes the evaluation runs its predecessor
left unfinished; a run whose job was cancelled while queued ends saying so. Its own signal,
``eval_run_scored``, is defined in ``studio.evolution.signals``."""

from __future__ import annotations

import logging

from celery.signals import worker_process_shutdown, worker_ready
from django.dispatch import receiver

from studio.jobs.signals import job_cancelled

logger = logging.getLogger(__name__)


@worker_ready.connect
def resume_runs_on_worker_start(**_kwargs) -> None:
    from studio.evolution.services.runs import eval_runs_resume_stalled

    resumed = eval_runs_resume_stalled()
    if resumed:
        logger.warning("resumed evaluation run(s) %s left unfinished by a lost worker", resumed)


@worker_process_shutdown.connect
def close_chunk_scorer(**_kwargs) -> None:
    """Close the scorer this process kept for an evaluation run's chunk tasks (its MCP server
    processes)."""
    from studio.evolution.services.runs import _drop_chunk_scorer

    _drop_chunk_scorer()


@receiver(job_cancelled, dispatch_uid="evolution_run_job_cancelled")
def end_runs_of_a_cancelled_job(*, job_id: int, reason: str, **_signal) -> None:
    from studio.evolution.models import EvalRun
    from studio.evolution.services.runs import eval_run_note_cancelled

    for run in EvalRun.objects.select_related("job").filter(
        job_id=job_id, status__in=(EvalRun.QUEUED, EvalRun.RUNNING)
    ):
        eval_run_note_cancelled(run=run)

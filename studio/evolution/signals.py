"""A (re)started worker resumes the evaluation runs its predecessor left unfinished."""

from __future__ import annotations

import logging

from celery.signals import worker_process_shutdown, worker_ready

logger = logging.getLogger(__name__)


@worker_ready.connect
def resume_runs_on_worker_start(**_kwargs) -> None:
    from studio.evolution.runs import eval_runs_resume_stalled

    resumed = eval_runs_resume_stalled()
    if resumed:
        logger.warning("resumed evaluation run(s) %s left unfinished by a lost worker", resumed)


@worker_process_shutdown.connect
def close_chunk_scorer(**_kwargs) -> None:
    """Close the scorer this process kept for an evaluation run's chunk tasks (its MCP server processes)."""
    from studio.evolution.runs import _drop_chunk_scorer

    _drop_chunk_scorer()

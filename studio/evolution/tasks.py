"""Celery tasks of the evolution app: each takes ids and calls one service."""

from __future__ import annotations

from celery import shared_task


@shared_task(bind=True, name="studio.evolution.tasks.score_eval_chunk", ignore_result=True)
def score_eval_chunk(self, run_id: int) -> int:
    """Claim one chunk of an evaluation run and score it (sent by the run's job, one per further
    chunk)."""
    from studio.evolution.services.runs import eval_run_score_chunk
    from studio.jobs.services import worker_identity

    return eval_run_score_chunk(
        run_id=run_id,
        worker=worker_identity(node=self.request.hostname),
        heartbeat=not self.request.is_eager,
    )


@shared_task(name="studio.evolution.tasks.resume_stalled_eval_runs", ignore_result=True)
def resume_stalled_eval_runs() -> list[int]:
    """From beat: resume the runs whose job's worker was lost (the other workers may all be busy or
    idle)."""
    from studio.evolution.services.runs import eval_runs_resume_stalled

    return eval_runs_resume_stalled()

"""Celery tasks: each takes ids and calls one service."""

from __future__ import annotations

from celery import shared_task


@shared_task(bind=True, name="studio.jobs.tasks.run_job", ignore_result=True)
def run_job(self, job_id: int) -> None:
    from studio.jobs.services import job_run, worker_identity

    job_run(
        job_id=job_id,
        worker=worker_identity(node=self.request.hostname),
        heartbeat=not self.request.is_eager,
    )


@shared_task(name="studio.jobs.tasks.reap_stale_jobs", ignore_result=True)
def reap_stale_jobs() -> int:
    from studio.jobs.services import job_reap_stale

    return job_reap_stale()

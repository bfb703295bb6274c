"""Reads for jobs."""

from __future__ import annotations

from django.db.models import QuerySet

from studio.jobs.models import Job


def job_list(*, kind: str | None = None, limit: int = 100) -> QuerySet[Job]:
    jobs = Job.objects.select_related("created_by").defer("log_tail", "result")
    if kind:
        jobs = jobs.filter(kind=kind)
    return jobs[:limit]


def job_get(*, job_id: int) -> Job:
    return Job.objects.select_related("created_by").get(pk=job_id)

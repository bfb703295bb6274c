"""Reads for jobs."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import QuerySet

from studio.jobs.models import Job


def job_list(*, kind: str | None = None, limit: int = 100) -> QuerySet[Job]:
    jobs = Job.objects.select_related("created_by").defer("log_tail", "result")
    if kind:
        jobs = jobs.filter(kind=kind)
    return jobs[:limit]


def job_get(*, job_id: int) -> Job:
    return Job.objects.select_related("created_by").get(pk=job_id)


def job_title(*, job: Job) -> str:
    """The job's title as it stands now: a kind whose title counts progress (JobKind.title) is
    counted at this read, so the title never says fewer scored cases than the page beside it; the
    stored title else."""
    from studio.jobs.registry import JOB_KINDS

    kind = JOB_KINDS.get(job.kind)
    if kind is None or kind.title is None or not job.is_active:
        return job.title
    return kind.title(job)[:200] or job.title


def jobs_titled(*, jobs) -> list[Job]:
    """``jobs`` with the titles of the active ones counted now (``job_title``), for a list."""
    jobs = list(jobs)
    for job in jobs:
        job.title = job_title(job=job)
    return jobs


@dataclass
class QueueWait:
    """Why a queued job waits: its place in its queue and the jobs the queue's workers are running
    now."""

    queue: str  # the Celery queue's name (the default "studio", "follow-on" or "train")
    position: int  # 1: it is the next one a free worker takes
    queued: int  # jobs waiting in the queue, this one included
    running: list[Job] = field(default_factory=list)
    start_command: str = "celery -A studio worker"

    @property
    def sentence(self) -> str:
        place = f"number {self.position} of {self.queued} waiting in the {self.queue} queue"
        if not self.running:
            # nothing of this queue runs, so no worker has taken its jobs: there may be none
            return (
                f"{place}; no worker is running a job of this "
                f"queue (start one with {self.start_command})"
            )
        busy = ", ".join(f"job #{j.pk} ({j.title})" for j in self.running[:3])
        more = f" and {len(self.running) - 3} more" if len(self.running) > 3 else ""
        return f"{place}; its workers are busy with {busy}{more}"


def job_wait(*, job: Job) -> QueueWait | None:
    """Where a queued job stands in its queue (None once it is not queued): the jobs of the kinds
    sharing its queue that were queued before it, and those running now (jobs run in the order they
    were queued)."""
    from django.conf import settings

    from studio.jobs.registry import job_queue, jobs_on_queue

    if job.status != Job.QUEUED:
        return None
    queue = job_queue(kind=job.kind, automatic=job.automatic)
    jobs = Job.objects.filter(jobs_on_queue(queue)).defer("log_tail", "result", "params")
    waiting = jobs.filter(status=Job.QUEUED)
    ahead = (
        waiting.filter(created_at__lt=job.created_at).count()
        + waiting.filter(created_at=job.created_at, pk__lt=job.pk).count()
    )
    running = list(jobs.filter(status=Job.RUNNING).order_by("started_at", "pk"))
    name = queue or getattr(settings, "CELERY_TASK_DEFAULT_QUEUE", "") or "celery"
    return QueueWait(
        queue=name,
        position=ahead + 1,
        queued=waiting.count(),
        running=running,
        start_command="celery -A studio worker" + (f" --queues {queue}" if queue else ""),
    )


def job_silent_s(*, job: Job, now=None) -> float | None:
    """Seconds a running job's heartbeat is past its lease (None while it beats, or when not
    running): a page says so; the reaper (beat, ``reap-stale-jobs``) marks it failed, never a page's
    GET."""
    from django.conf import settings
    from django.utils import timezone

    if job.status != Job.RUNNING:
        return None
    since = job.heartbeat_at or job.started_at or job.created_at
    silent = ((now or timezone.now()) - since).total_seconds()
    return silent if silent > settings.JOB_LEASE_S else None

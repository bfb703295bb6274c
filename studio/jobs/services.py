"""Writes for jobs: create (enqueue after commit), run in a worker, heartbeat, reap.

A running job is leased: its worker writes `heartbeat_at` every JOB_HEARTBEAT_S
seconds from a side thread. If the worker process dies (killed, OOM, machine
lost) the heartbeats stop and `job_reap_stale` marks the job failed with the
reason, so no job stays "running" forever. The reaper runs on worker start,
on a beat schedule and whenever a job page polls an overdue job.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import traceback
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from studio.audit.services import audit_record
from studio.jobs.models import Job
from studio.jobs.registry import JOB_KINDS, JobFailed, job_queue, jobs_on_queue
from studio.jobs.routing import running_job_queue

logger = logging.getLogger(__name__)


class UnknownJobKind(ValueError):
    pass


class JobQuotaExceeded(Exception):
    """A person already has as many jobs queued or running as JOB_QUOTA_PER_USER allows; the message
    names the limit and those jobs (studio.limits answers it with a 429 wherever it is raised)."""


class JobCancelled(Exception):
    """Raised inside a running job at its next progress or log report after a cancel request."""


class JobNotCancellable(ValueError):
    pass


def worker_identity(*, node: str | None = None) -> str:
    """'<celery node name> pid <pid>' of this process (the node defaults to the hostname)."""
    return f"{node or socket.gethostname()} pid {os.getpid()}"


def job_create(
    *,
    kind: str,
    title: str,
    params: dict[str, Any],
    created_by: User | None,
    automatic: bool = False,
) -> Job:
    """Persist a queued job and send it to the worker once the transaction commits.

    A person's job counts against their quota (``JOB_QUOTA_PER_USER`` queued or running at once;
    JobQuotaExceeded past it). An ``automatic`` one (a follow-on the studio queues itself, on behalf
    of ``created_by``, the person whose action caused it) counts against that person's follow-on
    budget (``JOB_FOLLOW_ON_QUOTA_PER_USER``) instead, goes to the follow-on queue
    (``registry.job_queue``) and waits while a person's job is queued (``job_run``)."""
    if kind not in JOB_KINDS:
        raise UnknownJobKind(
            f"kind: {kind!r} is not a job kind; known: {', '.join(sorted(JOB_KINDS))}"
        )
    if created_by is not None:
        job_quota_check(user=created_by, automatic=automatic)
    job = Job.objects.create(
        kind=kind, title=title[:200], params=params, created_by=created_by, automatic=automatic
    )
    audit_record(
        actor=created_by,
        action="job.create",
        target=f"job #{job.pk} {kind}",
        data={"title": job.title},
    )
    transaction.on_commit(lambda: job_enqueue(job_id=job.pk))
    return job


def job_quota_check(*, user: User, automatic: bool = False) -> None:
    """JobQuotaExceeded when ``user`` already has as many jobs queued or running as allowed: their
    own (``JOB_QUOTA_PER_USER``), or with ``automatic`` the follow-ons queued on their behalf
    (``JOB_FOLLOW_ON_QUOTA_PER_USER``)."""
    limit = settings.JOB_FOLLOW_ON_QUOTA_PER_USER if automatic else settings.JOB_QUOTA_PER_USER
    if not limit:
        return
    active = list(
        Job.objects.filter(created_by=user, automatic=automatic, status__in=Job.ACTIVE).order_by(
            "pk"
        )[:limit]
    )
    listed = ", ".join(f"#{job.pk} {job.title} ({job.status})" for job in active)
    if len(active) >= limit and automatic:
        raise JobQuotaExceeded(
            f"follow-on jobs: {user.username} already has {len(active)} follow-on jobs queued or "
            f"running on their behalf, the limit per user (JOB_FOLLOW_ON_QUOTA_PER_USER={limit}): "
            f"{listed}; cancel one on its job page or wait for one to finish"
        )
    if len(active) >= limit:
        raise JobQuotaExceeded(
            f"jobs: {user.username} already has {len(active)} jobs queued or running, the limit "
            f"per user (JOB_QUOTA_PER_USER={limit}): {listed}; wait for one to finish or cancel "
            "one, then start this again"
        )


def _waits_for_a_person(job: Job) -> bool:
    """An automatic job yields while a person's job is queued on the queue it would go to if a
    person had started it (it is sent again a little later): on workers that read both queues, or
    share a host's cores, the person's job goes first."""
    if not job.automatic:
        return False
    person_queue = job_queue(kind=job.kind, automatic=False)
    return (
        Job.objects.filter(jobs_on_queue(person_queue), status=Job.QUEUED, automatic=False)
        .exclude(pk=job.pk)
        .exists()
    )


def job_enqueue(*, job_id: int) -> None:
    """Hand the job to Celery (on its kind's queue); if the broker cannot be reached the job fails
    saying so."""
    from studio.jobs.tasks import run_job

    row = Job.objects.filter(pk=job_id).values("kind", "automatic").first()
    queue = job_queue(kind=row["kind"], automatic=row["automatic"]) if row else None
    try:
        if queue:
            run_job.apply_async((job_id,), queue=queue)
        else:
            run_job.delay(job_id)
    except Exception as error:  # kombu raises several types for an unreachable broker
        logger.exception("could not enqueue job %s", job_id)
        _finish(
            job_id=job_id,
            status=Job.FAILED,
            error=f"could not reach the Celery broker at {settings.CELERY_BROKER_URL}: {error}",
            only_from=(Job.QUEUED,),
        )


def _append_log(job_id: int, line: str) -> None:
    job = Job.objects.filter(pk=job_id).only("log_tail").first()
    if job is None:
        return
    stamp = timezone.now().strftime("%H:%M:%S")
    tail = (job.log_tail + f"[{stamp}] {line.rstrip()}\n")[-settings.JOB_LOG_TAIL_CHARS :]
    Job.objects.filter(pk=job_id).update(log_tail=tail)


class _Context:
    """What a job kind's function sees: its params and ways to report."""

    def __init__(self, job: Job, *, in_worker: bool = True):
        self.job_id = job.pk
        self.params = job.params
        self.in_worker = in_worker
        kind = JOB_KINDS.get(job.kind)
        self._retitles = kind is not None and kind.title is not None

    def progress(self, percent: int, message: str | None = None) -> None:
        Job.objects.filter(pk=self.job_id).update(progress=max(0, min(100, int(percent))))
        if self._retitles:
            _retitle(self.job_id)
        if message:
            _append_log(self.job_id, message)
        self._stop_if_cancelled()

    def log(self, line: str) -> None:
        _append_log(self.job_id, line)
        self._stop_if_cancelled()

    def _stop_if_cancelled(self) -> None:
        if Job.objects.filter(pk=self.job_id, cancel_requested_at__isnull=False).exists():
            raise JobCancelled("cancel requested")


class Heartbeat(threading.Thread):
    """A side thread that calls ``beat()`` every ``interval_s`` seconds until ``stopped`` is set (a
    lease's sign of life: a job's, an evaluation chunk's); it closes its own database connection
    when it ends."""

    def __init__(self, beat, *, interval_s: float, name: str):
        super().__init__(name=name, daemon=True)
        self.beat, self.interval_s = beat, interval_s
        self.stopped = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopped.wait(self.interval_s):
                self.beat()
        finally:
            connection.close()  # this thread's own connection


def _job_heartbeat(job_id: int, interval_s: float) -> Heartbeat:
    return Heartbeat(
        lambda: Job.objects.filter(pk=job_id, status=Job.RUNNING).update(
            heartbeat_at=timezone.now()
        ),
        interval_s=interval_s,
        name=f"job-{job_id}-heartbeat",
    )


def _retitle(job_id: int) -> None:
    """Rewrite the title of a kind whose title counts progress (JobKind.title), so it never says
    stale counts."""
    job = Job.objects.filter(pk=job_id).only("pk", "kind", "title", "params", "status").first()
    kind = JOB_KINDS.get(job.kind) if job is not None else None
    if kind is None or kind.title is None:
        return
    title = kind.title(job)[:200]
    if title and title != job.title:
        Job.objects.filter(pk=job_id).update(title=title)


def _finish(
    *, job_id: int, status: str, error: str = "", result: Any = None, only_from=(Job.RUNNING,)
) -> bool:
    values: dict[str, Any] = {"status": status, "finished_at": timezone.now(), "error": error}
    if status == Job.SUCCEEDED:
        values.update(progress=100, result=result)
        kind = JOB_KINDS.get(
            Job.objects.filter(pk=job_id).values_list("kind", flat=True).first() or ""
        )
        values["outcome"] = kind.outcome_of(result)[:300] if kind is not None else ""
    finished = bool(Job.objects.filter(pk=job_id, status__in=only_from).update(**values))
    if finished:
        _retitle(job_id)
    return finished


def job_run(*, job_id: int, worker: str | None = None, heartbeat: bool = True) -> Job | None:
    """Run a queued job in this process (called by the Celery task). Returns None if not claimable.

    `heartbeat=False` is for eager runs inside the caller's thread (tests): no
    separate worker can die there, and a second connection writing beside the
    caller's open transaction would only contend for the database lock.
    """
    waiting = Job.objects.filter(pk=job_id, status=Job.QUEUED).first()
    if waiting is not None and heartbeat and _waits_for_a_person(waiting):
        from studio.jobs.tasks import run_job

        queue = job_queue(kind=waiting.kind, automatic=True)
        options = {"queue": queue} if queue else {}
        run_job.apply_async((job_id,), countdown=settings.AUTOMATIC_JOB_YIELD_S, **options)
        logger.info("job %s (automatic) waits: a person's job is queued on its queue", job_id)
        return None
    now = timezone.now()
    claimed = Job.objects.filter(pk=job_id, status=Job.QUEUED).update(
        status=Job.RUNNING, started_at=now, heartbeat_at=now, worker=worker or worker_identity()
    )
    if not claimed:
        logger.warning("job %s is not queued any more; not running it", job_id)
        return None
    job = Job.objects.get(pk=job_id)
    beat = _job_heartbeat(job_id, settings.JOB_HEARTBEAT_S)
    if heartbeat:
        beat.start()
    context = _Context(job, in_worker=heartbeat)
    # what the job sends while it runs (an evaluation's chunk tasks) goes to its own queue
    routed = running_job_queue.set(job_queue(kind=job.kind, automatic=job.automatic))
    try:
        context.log(f"started on {job.worker}")
        result = JOB_KINDS[job.kind].run(context)
    except JobCancelled:
        job = Job.objects.select_related("cancelled_by").get(pk=job_id)
        reason = (
            f"cancelled by {job.cancelled_by or 'someone'} "
            f"at {job.cancel_requested_at:%H:%M:%S} UTC"
        )
        _append_log(job_id, f"stopped: {reason}")
        _finish(job_id=job_id, status=Job.CANCELLED, error=reason)
    except JobFailed as failure:
        _append_log(job_id, f"failed: {failure}")
        _finish(job_id=job_id, status=Job.FAILED, error=str(failure))
    except Exception as error:
        context.log(traceback.format_exc())
        _finish(job_id=job_id, status=Job.FAILED, error=f"{type(error).__name__}: {error}")
    else:
        context.log("finished")
        _finish(job_id=job_id, status=Job.SUCCEEDED, result=result)
    finally:
        running_job_queue.reset(routed)
        beat.stopped.set()
        if heartbeat:
            beat.join(timeout=5)
    return Job.objects.get(pk=job_id)


def job_can_cancel(*, job: Job, user) -> bool:
    """Whether ``user`` may cancel ``job``: the one who started it, whoever may cancel any job, or
    whoever holds its kind's ``cancel_permission`` (ML engineers stop each other's training
    runs)."""
    from studio.accounts.roles import user_can
    from studio.jobs.registry import JOB_KINDS

    if not job.is_active or not getattr(user, "is_authenticated", False):
        return False
    if job.created_by_id == user.pk or user_can(user, "job.cancel_any"):
        return True
    kind = JOB_KINDS.get(job.kind)
    return bool(kind and kind.cancel_permission and user_can(user, kind.cancel_permission))


def job_cancel(*, job: Job, actor: User) -> Job:
    """Stop a job: a queued one ends now; a running one stops at its next progress or log report.

    Whatever it finished before then stays (an evaluation run keeps its scored cases and can be
    resumed).
    """
    if not job_can_cancel(job=job, user=actor):
        if not job.is_active:
            raise JobNotCancellable(f"job #{job.pk} has already ended ({job.status})")
        from studio.accounts.roles import PERMISSIONS, ROLE_NAMES
        from studio.jobs.registry import JOB_KINDS

        kind = JOB_KINDS.get(job.kind)
        others = sorted(
            PERMISSIONS.get(kind.cancel_permission if kind else "", frozenset()) - {"admin"}
        )
        who = (
            "they or an admin"
            if not others
            else "they, an admin or " + " or ".join(ROLE_NAMES[r] for r in others)
        )
        raise JobNotCancellable(
            f"job #{job.pk} was started by {job.created_by or 'the system'}; "
            f"only {who} may cancel it"
        )
    now = timezone.now()
    Job.objects.filter(pk=job.pk, status__in=Job.ACTIVE).update(
        cancel_requested_at=now, cancelled_by=actor
    )
    if _finish(
        job_id=job.pk,
        status=Job.CANCELLED,
        error=f"cancelled by {actor} before it started",
        only_from=(Job.QUEUED,),
    ):
        _append_log(job.pk, f"cancelled by {actor} before a worker took it")
        from studio.jobs.signals import job_cancelled

        job_cancelled.send(
            sender=Job, job_id=job.pk, reason=f"cancelled by {actor} before it started"
        )
    else:
        _append_log(job.pk, f"cancel requested by {actor}; the job stops at its next report")
    audit_record(
        actor=actor,
        action="job.cancel",
        target=f"job #{job.pk} {job.kind}",
        data={"status": job.status},
    )
    return Job.objects.get(pk=job.pk)


def job_reap_stale(*, job: Job | None = None, now=None) -> int:
    """Mark running jobs whose heartbeat is older than JOB_LEASE_S as failed, with the reason."""
    now = now or timezone.now()
    deadline = now - timedelta(seconds=settings.JOB_LEASE_S)
    stale = Job.objects.filter(status=Job.RUNNING).filter(
        Q(heartbeat_at__lt=deadline) | Q(heartbeat_at__isnull=True)
    )
    if job is not None:
        stale = stale.filter(pk=job.pk)
    reaped = 0
    for row in stale.only("pk", "worker", "heartbeat_at"):
        last = row.heartbeat_at.strftime("%H:%M:%S") if row.heartbeat_at else "never"
        reason = (
            f"worker lost: no heartbeat from {row.worker or 'the worker'} since {last} UTC "
            f"(lease {settings.JOB_LEASE_S:g} s); the worker process stopped or was killed mid-job"
        )
        if _finish(job_id=row.pk, status=Job.FAILED, error=reason):
            _append_log(row.pk, reason)
            audit_record(
                actor=None, action="job.reaped", target=f"job #{row.pk}", data={"reason": reason}
            )
            reaped += 1
    return reaped


def job_fail_for_worker(*, node: str, reason: str) -> int:
    """Mark the running jobs of one Celery node failed (its process is shutting down)."""
    failed = 0
    running = Job.objects.filter(status=Job.RUNNING, worker__startswith=f"{node} pid ")
    for job_id in running.values_list("pk", flat=True):
        if _finish(job_id=job_id, status=Job.FAILED, error=reason):
            _append_log(job_id, reason)
            failed += 1
    return failed

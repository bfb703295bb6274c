"""The registry of job kinds: name -> label and the function a worker runs.

An app registers its kinds in <app>/job_kinds.py with @job_kind. The function
receives a JobContext (progress, log, params) and returns a JSON-able result.
It raises JobFailed for a failure it can explain in one line; anything else it
raises is a bug, logged with its traceback.

A job's own status says whether the job ran (queued, running, ran, failed, cancelled); what the work
did is a separate line, the kind's ``outcome`` of its result (a playground run that ran and whose
agent fell back: "Mostly fallback: 1 of 1 request fell back", flagged first by
studio.jobs.fallback). A kind whose title counts progress gives ``title``: the title is rewritten
from the job at each progress report and when it ends.

A kind that would hold a worker for long (training, a deployment replay) names
its ``queue``: "train" sends its jobs to the queue ``settings.CELERY_TRAIN_QUEUE``,
which only the workers started with ``-Q train`` read, so they never take the
slots the default queue's evaluation jobs need (docs/workers.md).

Every other job goes by who asked for it (``job_queue``): a person's job (a playground run, their
own evaluation) to the default queue, ``settings.CELERY_TASK_DEFAULT_QUEUE`` ("studio"), and a
follow-on the studio queued itself (``Job.automatic``: a label move's or a checkpoint's
compatibility cells) to ``settings.CELERY_FOLLOW_ON_QUEUE`` ("follow-on"), which workers of its
own read: interactive work never waits behind follow-on work.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


class JobFailed(Exception):
    """A failure the job kind has explained: the job fails with this one line, logged without a
    traceback."""


class JobContext(Protocol):
    job_id: int
    params: dict[str, Any]
    # True in a worker process of its own (not inline in the caller's thread, as eager runs and
    # tests are): the job may start side threads and hand parts of its work to other workers.
    in_worker: bool

    def progress(self, percent: int, message: str | None = None) -> None: ...

    def log(self, line: str) -> None: ...


@dataclass(frozen=True)
class JobKind:
    name: str
    label: str
    run: Callable[[JobContext], Any]
    # How the job page shows a result: a template included with the context `present(result)`
    # returns.
    result_template: str | None = None
    present: Callable[[Any], dict] | None = None
    # What the work did, in a few words, from the job's result ("" when there is nothing to say).
    outcome: Callable[[Any], str] | None = None
    # The job's title as it stands now (given the Job row), for titles that count progress.
    title: Callable[[Any], str] | None = None
    # "" for the default queue, or a key of QUEUES (the queue's name comes from the settings).
    queue: str = ""
    # A permission (a key of studio.accounts.roles.PERMISSIONS) whose holders may cancel anyone's
    # job of this kind, beside its starter and job.cancel_any ("" when only those two may).
    cancel_permission: str = ""

    def outcome_of(self, result: Any) -> str:
        return (self.outcome or agent_outcome)(result) if result else ""


AGENT_OUTCOMES = {
    "replied": "the agent replied",
    "fallback": "the agent fell back",
    "suppressed": "the agent's reply was suppressed",
    "silent": "the agent stayed silent",
}


def agent_outcome(result: Any) -> str:
    """What the agent did, for a result that carries its trajectory (``{"trajectory": {"outcome":
    ...}}``); a request that fell back is flagged as every run that mostly fell back is
    (studio.jobs.fallback)."""
    from studio.jobs.fallback import fallback_flag

    trajectory = result.get("trajectory") if isinstance(result, dict) else None
    outcome = trajectory.get("outcome") if isinstance(trajectory, dict) else None
    if outcome == "fallback":
        return fallback_flag(counts=[("", 1, 1)])
    return AGENT_OUTCOMES.get(outcome, "")


JOB_KINDS: dict[str, JobKind] = {}
# A kind's queue -> the setting that names it (so a deployment, or a test, can rename it).
QUEUES = {"train": "CELERY_TRAIN_QUEUE"}


def queue_of(kind: JobKind) -> str | None:
    """The Celery queue a kind's jobs go to; None for the default queue."""
    if not kind.queue:
        return None
    from django.conf import settings

    return getattr(settings, QUEUES[kind.queue])


def job_queue(*, kind: str, automatic: bool) -> str | None:
    """The Celery queue a job of ``kind`` goes to: its kind's own queue (train) when it names one,
    else the follow-on queue for an automatic job, else None (the default queue, a person's
    interactive work)."""
    from django.conf import settings

    job_kind = JOB_KINDS.get(kind)
    own = queue_of(job_kind) if job_kind is not None else None
    if own:
        return own
    return settings.CELERY_FOLLOW_ON_QUEUE if automatic else None


def jobs_on_queue(queue: str | None):
    """A filter (``Q``) for the jobs that go to ``queue`` (None: the default queue)."""
    from django.db.models import Q

    person = [name for name in JOB_KINDS if job_queue(kind=name, automatic=False) == queue]
    follow_on = [name for name in JOB_KINDS if job_queue(kind=name, automatic=True) == queue]
    return Q(automatic=False, kind__in=person) | Q(automatic=True, kind__in=follow_on)


def job_kind(
    name: str,
    *,
    label: str,
    result_template: str | None = None,
    present: Callable[[Any], dict] | None = None,
    outcome: Callable[[Any], str] | None = None,
    title: Callable[[Any], str] | None = None,
    queue: str = "",
    cancel_permission: str = "",
) -> Callable:
    if queue and queue not in QUEUES:
        raise ValueError(f"job kind {name!r}: queue {queue!r} is not one of {', '.join(QUEUES)}")

    def register(run: Callable[[JobContext], Any]) -> Callable[[JobContext], Any]:
        if name in JOB_KINDS and JOB_KINDS[name].run is not run:
            raise ValueError(f"job kind {name!r} is registered twice")
        JOB_KINDS[name] = JobKind(
            name=name,
            label=label,
            run=run,
            result_template=result_template,
            present=present,
            outcome=outcome,
            title=title,
            queue=queue,
            cancel_permission=cancel_permission,
        )
        return run

    return register

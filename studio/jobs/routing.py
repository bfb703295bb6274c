"""Where the tasks a running job sends go: to the queue the job itself runs on.

A job's own task (``run_job``) is sent to its queue by ``services.job_enqueue``
(``registry.job_queue``: train, follow-on or the default). What the job hands on while it runs (an
evaluation run's chunk tasks, ``studio.evolution.tasks.score_eval_chunk``) is sent from inside it,
and ``route_task``, the Celery router (``CELERY_TASK_ROUTES`` in studio/settings.py), sends it to
the same queue: a follow-on evaluation's chunks are scored by the follow-on workers, never in the
slots a person's playground run needs (docs/workers.md).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

#: The queue of the job running in this thread (None: the default queue, or no job).
running_job_queue: ContextVar[str | None] = ContextVar("running_job_queue", default=None)


def route_task(name: str, args: Any, kwargs: Any, options: dict, task=None, **_kw) -> dict | None:
    """Celery router: a task sent while a job runs goes to that job's queue (an explicit ``queue=``
    in ``apply_async`` still wins)."""
    queue = running_job_queue.get()
    return {"queue": queue} if queue else None

"""The jobs app's events that other apps react to (Django signals; docs/architecture.md §1). The
Celery worker signals the jobs app itself connects are in ``studio.jobs.signals``."""

from __future__ import annotations

from django.dispatch import Signal

#: A queued job was cancelled before a worker took it (``job_id``, ``reason``): the app whose record
#: the job was working on ends that record saying so (an evaluation run:
#: ``studio.evolution.signals``), so no page has to notice it on a GET. A running job's cancel is
#: seen by the job itself at its next report.
job_cancelled = Signal()

"""The jobs app's signals, which other apps react to (docs/architecture.md §1); its receivers of
Celery's worker signals are ``studio.jobs.receivers``."""

from __future__ import annotations

from django.dispatch import Signal

#: A queued job was cancelled before a worker took it (``job_id``, ``reason``): the app whose record
#: the job was working on ends that record saying so (an evaluation run:
#: ``studio.evolution.receivers``), so no page has to notice it on a GET. A running job's cancel is
#: seen by the job itself at its next report.
job_cancelled = Signal()

"""The Celery application, configured from Django settings (CELERY_* names).

Queues (docs/workers.md): the default one (``CELERY_QUEUE``, "studio") for what a person starts,
``CELERY_FOLLOW_ON_QUEUE`` ("follow-on") for the follow-on work the studio queues itself, and
``CELERY_TRAIN_QUEUE`` ("train") for training and replays; ``studio.jobs.routing.route_task``
sends what a running job hands on to the job's own queue."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")

app = Celery("studio")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

"""Issue 38, item 8: a queued job says where it stands, not "waiting for a worker (start one ...)"
while the workers are alive and busy: its place in its queue and the jobs its queue's workers are
running."""

from __future__ import annotations

from html import unescape

import pytest
from django.utils import timezone
from studio_testing import client_for

from studio.jobs.models import Job

pytestmark = pytest.mark.django_db


def _job(status: str, title: str, kind: str = "worker_check", **fields) -> Job:
    return Job.objects.create(
        kind=kind, title=title, params={"seconds": 5}, status=status, **fields
    )


def test_a_queued_job_behind_busy_workers_names_the_running_job_and_its_place(personas):
    running = _job(
        Job.RUNNING,
        "Evaluate demo v1 on dev-482 (91/482 scored)",
        kind="evolution_eval_run",
        started_at=timezone.now(),
        heartbeat_at=timezone.now(),
    )
    first = _job(Job.QUEUED, "Worker check (5 s)")
    second = _job(Job.QUEUED, "Diagnose stage 1", kind="evolution_diagnose")
    client = client_for(personas.operator)
    page = unescape(client.get(f"/jobs/{second.pk}/").content.decode())
    assert "waiting for a worker" not in page and "start one with" not in page
    assert (
        "queued: number 2 of 2 waiting in the studio queue; "
        f"its workers are busy with job #{running.pk} "
        "(Evaluate demo v1 on dev-482 (91/482 scored))"
    ) in page
    assert "number 1 of 2 waiting" in unescape(
        client.get(f"/jobs/{first.pk}/status/").content.decode()
    )


def test_a_queued_job_with_nothing_running_on_its_queue_says_how_to_start_a_worker(personas):
    _job(
        Job.RUNNING, "Worker check (5 s)", started_at=timezone.now()
    )  # the default queue is busy ...
    train = _job(
        Job.QUEUED, "Training: HSA-SFT", kind="train_sft"
    )  # ... but nothing takes the train queue
    page = unescape(client_for(personas.ml_engineer).get(f"/jobs/{train.pk}/").content.decode())
    assert (
        "number 1 of 1 waiting in the train queue; no worker is running a job of this queue "
        "(start one with celery -A studio worker --queues train)"
    ) in page

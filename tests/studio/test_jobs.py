"""Jobs: run through the task, report progress and errors, and never stay running after their worker
dies."""

from __future__ import annotations

import json
import os
import signal
import time
from datetime import timedelta

import pytest
from django.utils import timezone
from studio_testing import client_for

from studio.audit.models import AuditEvent
from studio.jobs.models import Job
from studio.jobs.services import job_create, job_reap_stale, job_run
from studio.jobs.testing import celery_worker, wait_for

pytestmark = pytest.mark.django_db


def test_a_job_runs_through_the_task_and_records_progress_and_result(
    personas, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = job_create(
            kind="worker_check", title="check", params={"seconds": 0.2}, created_by=personas.admin
        )
    job.refresh_from_db()
    assert job.status == Job.SUCCEEDED and job.progress == 100
    assert job.result["seconds"] == 0.2 and "step 1/1" in job.log_tail
    assert job.started_at <= job.finished_at and job.worker


def test_a_failing_job_records_the_error_and_the_traceback(
    personas, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = job_create(
            kind="worker_check", title="bad", params={"seconds": -1}, created_by=personas.admin
        )
    job.refresh_from_db()
    assert job.status == Job.FAILED
    assert job.error == "ValueError: seconds: -1.0 must be between 0 and 3600"
    assert "Traceback" in job.log_tail


def test_an_unreachable_broker_fails_the_job_saying_so(
    personas, monkeypatch, django_capture_on_commit_callbacks
):
    from kombu.exceptions import OperationalError

    from studio.jobs import tasks

    def refuse(*args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:1. Connection refused.")

    monkeypatch.setattr(tasks.run_job, "delay", refuse)
    with django_capture_on_commit_callbacks(execute=True):
        job = job_create(
            kind="worker_check", title="x", params={"seconds": 1}, created_by=personas.admin
        )
    job.refresh_from_db()
    assert job.status == Job.FAILED
    assert "could not reach the Celery broker" in job.error and "Connection refused" in job.error


def test_the_job_page_says_a_heartbeat_stopped_and_the_reaper_not_the_page_marks_it_failed(
    personas, settings
):
    """Issue 42: a GET wrote (the job page reaped the job it showed). The page now only says the
    worker is silent; the beat's reaper (``reap-stale-jobs``, every 10 s) marks the job failed, and
    the page shows that."""
    settings.JOB_LEASE_S = 5
    stale = timezone.now() - timedelta(seconds=30)
    job = Job.objects.create(
        kind="worker_check",
        title="t",
        status=Job.RUNNING,
        started_at=stale,
        heartbeat_at=stale,
        worker="w@h pid 1",
    )
    fresh = Job.objects.create(
        kind="worker_check", title="t", status=Job.RUNNING, heartbeat_at=timezone.now()
    )
    operator = client_for(personas.operator)
    page = operator.get(f"/jobs/{job.pk}/status/").content.decode()
    job.refresh_from_db()
    assert job.status == Job.RUNNING  # a GET writes nothing
    assert (
        "its worker has not answered for 3" in page and "hx-trigger" in page
    )  # 30 s, or 31 on a slow machine
    assert "has not answered" not in operator.get(f"/jobs/{fresh.pk}/status/").content.decode()
    assert job_reap_stale() == 1
    page = operator.get(f"/jobs/{job.pk}/status/").content.decode()
    job.refresh_from_db()
    assert job.status == Job.FAILED and "worker lost: no heartbeat from w@h pid 1" in job.error
    assert 'data-status="failed"' in page and "worker lost" in page
    assert "hx-trigger" not in page  # polling stops once the job has ended
    fresh.refresh_from_db()
    assert fresh.status == Job.RUNNING


def test_the_running_job_page_polls(personas):
    job = Job.objects.create(
        kind="worker_check", title="t", status=Job.RUNNING, heartbeat_at=timezone.now()
    )
    page = client_for(personas.operator).get(f"/jobs/{job.pk}/").content.decode()
    assert f'hx-get="/jobs/{job.pk}/status/"' in page and 'hx-trigger="every 1s"' in page


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_killing_the_worker_mid_job_ends_the_job_failed(personas, settings):
    """A real worker is SIGKILLed while running a job; a restarted worker marks the job failed."""
    settings.JOB_LEASE_S = 2
    with celery_worker(lease_s=2) as worker:
        job = job_create(
            kind="worker_check", title="long", params={"seconds": 60}, created_by=personas.admin
        )
        wait_for(
            lambda: Job.objects.get(pk=job.pk).progress > 0,
            timeout=60,
            what="the job to make progress",
        )
        os.kill(worker.pid, signal.SIGKILL)
        worker.process.wait(timeout=10)
        job.refresh_from_db()
        assert job.status == Job.RUNNING  # nobody has noticed yet
        progress_at_kill = job.progress
        time.sleep(2.5)  # let the lease run out
    with celery_worker(lease_s=2):  # the new worker reaps jobs of dead workers when it starts
        job = wait_for(
            lambda: Job.objects.filter(pk=job.pk, status=Job.FAILED).first(),
            timeout=60,
            what="the job to be failed",
        )
    assert "worker lost" in job.error and f"pid {worker.pid}" in job.error
    assert job.progress == progress_at_kill < 100 and job.finished_at is not None
    page = client_for(personas.operator).get(f"/jobs/{job.pk}/").content.decode()
    assert "worker lost" in page and 'data-status="failed"' in page


def test_a_queued_job_cancelled_by_its_starter_never_runs(
    personas, django_capture_on_commit_callbacks
):
    job = job_create(
        kind="worker_check", title="queued", params={"seconds": 1}, created_by=personas.ml_engineer
    )
    client = client_for(personas.ml_engineer)
    assert 'id="job-cancel"' in client.get(f"/jobs/{job.pk}/").content.decode()
    response = client.post(f"/jobs/{job.pk}/cancel/", follow=True)
    job.refresh_from_db()
    assert job.status == Job.CANCELLED and job.cancelled_by == personas.ml_engineer
    assert "cancelled by mei before it started" in job.error
    assert 'data-status="cancelled"' in response.content.decode()
    assert (
        job_run(job_id=job.pk, heartbeat=False) is None
    )  # a worker that picks it up later leaves it alone
    assert Job.objects.get(pk=job.pk).status == Job.CANCELLED
    assert AuditEvent.objects.filter(
        action="job.cancel", target__startswith=f"job #{job.pk}"
    ).exists()


def test_only_the_starter_or_an_admin_may_cancel_and_an_ended_job_cannot_be(personas):
    job = job_create(
        kind="worker_check", title="t", params={"seconds": 1}, created_by=personas.ml_engineer
    )
    operator = client_for(personas.operator)
    assert 'id="job-cancel"' not in operator.get(f"/jobs/{job.pk}/").content.decode()
    refused = operator.post(f"/jobs/{job.pk}/cancel/")
    assert (
        refused.status_code == 403
        and "only they or an admin may cancel it" in refused.content.decode()
    )
    assert Job.objects.get(pk=job.pk).status == Job.QUEUED
    assert client_for(personas.admin).post(f"/jobs/{job.pk}/cancel/").status_code == 302
    again = client_for(personas.admin).post(f"/jobs/{job.pk}/cancel/")
    assert again.status_code == 403 and "has already ended (cancelled)" in again.content.decode()
    assert client_for(None).post(f"/jobs/{job.pk}/cancel/").status_code in (302, 403)


def test_a_running_job_stops_at_its_next_report(personas):
    job = job_create(
        kind="worker_check", title="t", params={"seconds": 1}, created_by=personas.admin
    )
    # the cancel request lands after a worker claimed the job: it stops at its first report
    Job.objects.filter(pk=job.pk).update(
        cancel_requested_at=timezone.now(), cancelled_by=personas.admin
    )
    job = job_run(job_id=job.pk, heartbeat=False)
    assert job.status == Job.CANCELLED and job.progress < 100 and job.result is None
    assert "stopped: cancelled by ada" in job.log_tail and job.error.startswith(
        "cancelled by ada at "
    )


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_cancelling_a_job_on_a_real_worker_stops_it(personas, settings):
    with celery_worker():
        job = job_create(
            kind="worker_check",
            title="long",
            params={"seconds": 60},
            created_by=personas.ml_engineer,
        )
        wait_for(
            lambda: Job.objects.get(pk=job.pk).progress > 0,
            timeout=60,
            what="the job to make progress",
        )
        assert client_for(personas.ml_engineer).post(f"/jobs/{job.pk}/cancel/").status_code == 302
        job = wait_for(
            lambda: Job.objects.filter(pk=job.pk, status=Job.CANCELLED).first(),
            timeout=10,
            what="the worker to stop the job",
        )
    assert job.progress < 100 and "stopped: cancelled by mei" in job.log_tail
    assert job.finished_at - job.cancel_requested_at < timedelta(seconds=5)


def test_ml_engineers_cancel_each_others_training_runs_and_an_operator_cannot(personas):
    from studio.accounts.services import user_create

    other = user_create(username="omar", password="pw-omar-123456", roles=["ml_engineer"])
    job = job_create(
        kind="train_sft", title="someone's SFT", params={"run_id": 0}, created_by=other
    )
    operator = client_for(personas.operator)
    assert 'id="job-cancel"' not in operator.get(f"/jobs/{job.pk}/").content.decode()
    refused = operator.post(f"/jobs/{job.pk}/cancel/")
    assert refused.status_code == 403
    assert "only they, an admin or an ML engineer may cancel it" in refused.content.decode()
    mei = client_for(personas.ml_engineer)
    assert 'id="job-cancel"' in mei.get(f"/jobs/{job.pk}/").content.decode()
    assert mei.post(f"/jobs/{job.pk}/cancel/").status_code == 302
    job.refresh_from_db()
    assert job.status == Job.CANCELLED and job.cancelled_by == personas.ml_engineer
    # a kind without a cancel permission stays with its starter and the admins
    check = job_create(kind="worker_check", title="t", params={"seconds": 1}, created_by=other)
    assert mei.post(f"/jobs/{check.pk}/cancel/").status_code == 403


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_celery_worker_exits_0_on_shutdown_after_a_llama_cpp_call_cut_at_its_budget(
    personas, demo_version
):
    """The worker stops and joins its llama.cpp calls when it shuts down
    (tests/engine/test_llama_cpp_exit.py: llama.cpp computes on for a while after a call is cut, as
    on a loaded machine); it used to abort."""
    from harness.model_cache import tiny_model_dir
    from studio.endpoints.services import endpoint_save
    from studio.playground.services import playground_run_start
    from tests.engine.slow_llama import ROOT, late_stop_env

    endpoint = endpoint_save(
        endpoint=None,
        name="tiny",
        route="local",
        base_url="",
        model=str(tiny_model_dir()),
        description="",
        actor=personas.ml_engineer,
    )
    request = json.loads((ROOT / "examples/requests/product_price.json").read_text())
    with celery_worker(
        extra_env=late_stop_env(stop_s=8, first_event_s=3)
    ) as worker:  # outlasts a warm shutdown;
        # round 1 is held past the 2 s budget, on a fast machine too
        job = playground_run_start(
            version=demo_version,
            endpoint=endpoint,
            request=request,
            actor=personas.operator,
            budget_s=2,
        )
        wait_for(
            lambda: "loading" in Job.objects.get(pk=job.pk).log_tail,
            timeout=120,
            what="the run to start",
        )
        # Ctrl-C in scripts/demo.sh mid-run: a warm shutdown lets the run end (at its budget), then
        # exits
        worker.process.send_signal(signal.SIGTERM)
        code = worker.process.wait(timeout=120)
    job.refresh_from_db()
    assert job.status == Job.SUCCEEDED, job.error
    assert job.result["trajectory"]["outcome"] == "fallback"  # its call was cut at the budget
    assert code == 0, f"exit {code}: {worker.log()[-2000:]}"

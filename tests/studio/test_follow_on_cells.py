"""Issue 51, item 1: follow-on evaluations are sized to what they are for, and the person whose
action caused them cancels them.

A 20-second smoke SFT run of the tiny test model used to queue a 120-case compatibility cell on
every production and staging label of every Harness (three, one on a Harness its author never
touched), owned by nobody: only an admin could cancel them, and a cancelled cell then read "failed"
in the matrix. Now a smoke run asks for no cell (the training log says so and how to ask), a real
checkpoint's cells are on the Harness it was trained on only, queued on behalf of the ML engineer
who started the run: she sees Cancel on the matrix and on the job page, others do not, and the
cancelled cell reads "cancelled".

The jobs are recorded instead of sent to a worker; the training job and the checkpoint's own
follow-on job are run inline, the cells' evaluation runs stay queued.
"""

from __future__ import annotations

import json
import re

import pytest
from studio_testing import client_for, page_text

from studio.compatibility.models import Cell
from studio.compatibility.testing import source_dataset
from studio.harnesses.services import harness_import, label_move
from studio.jobs.models import Job
from studio.jobs.services import job_run
from studio.releases.testing import trained_checkpoint

pytestmark = pytest.mark.django_db


@pytest.fixture
def recorded(monkeypatch):
    """The run_job tasks sent, as (job id, queue), instead of a worker taking them."""
    from studio.jobs import tasks

    sent: list[tuple[int, str | None]] = []
    monkeypatch.setattr(
        tasks.run_job, "apply_async", lambda args, **o: sent.append((args[0], o.get("queue")))
    )
    monkeypatch.setattr(tasks.run_job, "delay", lambda job_id: sent.append((job_id, None)))
    return sent


def _finished_training(personas, tmp_path, *, model: str, version):
    run = trained_checkpoint(tmp_path / "runs" / f"run-{model}")
    (run.path / "sft" / "model_card.json").write_text(json.dumps({"stage": "sft", "steps": 2}))
    run.created_by, run.model, run.harness_version = personas.ml_engineer, model, version
    run.job = Job.objects.create(
        kind="train_sft", title="SFT", params={"run_id": run.pk}, created_by=personas.ml_engineer
    )
    run.save(update_fields=["created_by", "model", "harness_version", "job"])
    return run


def _train(run, capture) -> Job:
    with capture(execute=True):
        training = job_run(job_id=run.job_id, heartbeat=False)
    assert training.status == Job.SUCCEEDED, training.error
    return training


@pytest.fixture
def two_harnesses(personas, demo_version, demo_files, settings):
    """The demo Harness and another one (its author: the admin), each with a production version."""
    settings.COMPATIBILITY_CASES = 6
    source_dataset(30)
    files = dict(demo_files)
    files["manifest.yaml"] = files["manifest.yaml"].replace(
        "name: livestream-avatar", "name: other-shop", 1
    )
    other = harness_import(files=files, author=personas.admin, message="another shop").version
    for version in (demo_version, other):
        label_move(
            harness=version.harness,
            name="production",
            version=version,
            actor=personas.admin,
            reason="live",
        )
    Job.objects.all().delete()
    return demo_version, other


def test_a_smoke_checkpoint_asks_for_no_cell_and_says_how_to_ask(
    personas, two_harnesses, settings, tmp_path, recorded, django_capture_on_commit_callbacks
):
    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    demo, _ = two_harnesses
    run = _finished_training(personas, tmp_path, model="tiny", version=demo)
    training = _train(run, django_capture_on_commit_callbacks)
    assert "follow_on_jobs" not in training.result
    assert "is a smoke run of the tiny test model" in training.log_tail
    assert "ask for a cell on /compatibility/" in training.log_tail
    follow_ons = Job.objects.filter(kind__in=["compatibility_checkpoint", "evolution_eval_run"])
    assert not follow_ons.exists() and not Cell.objects.exists()


def test_a_checkpoints_cells_are_its_trainers_to_cancel_and_a_cancelled_cell_says_so(
    personas, two_harnesses, settings, tmp_path, recorded, django_capture_on_commit_callbacks
):
    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    demo, other = two_harnesses
    run = _finished_training(personas, tmp_path, model="local", version=demo)
    training = _train(run, django_capture_on_commit_callbacks)
    (follow_on,) = Job.objects.filter(pk__in=training.result["follow_on_jobs"])
    assert follow_on.automatic and follow_on.created_by == personas.ml_engineer
    with django_capture_on_commit_callbacks(execute=True):  # the follow-on worker takes it
        assert job_run(job_id=follow_on.pk, heartbeat=False).status == Job.SUCCEEDED

    # one cell, on the Harness the run was trained on; none on the other shop's
    (cell,) = Cell.objects.all()
    assert cell.version == demo and cell.automatic and cell.requested_by == personas.ml_engineer
    job = cell.run.job
    assert job.status == Job.QUEUED and job.automatic and job.created_by == personas.ml_engineer
    assert dict(recorded)[job.pk] == settings.CELERY_FOLLOW_ON_QUEUE

    cancel = f'action="/jobs/{job.pk}/cancel/"'
    for role, sees in (("ml_engineer", True), ("operator", False), ("reviewer", False)):
        matrix = client_for(personas.by_role()[role]).get("/compatibility/")
        assert matrix.status_code == 200
        assert (cancel in matrix.content.decode()) == sees, role
    waiting = page_text(client_for(personas.ml_engineer).get(f"/jobs/{job.pk}/"))
    assert "number 1 of 1 waiting in the follow-on queue" in waiting
    assert "start one with celery -A studio worker --queues follow-on" in waiting
    refused = client_for(personas.operator).post(f"/jobs/{job.pk}/cancel/")
    assert refused.status_code == 403
    assert "only they or an admin may cancel it" in page_text(refused)
    mei = client_for(personas.ml_engineer)
    assert f"queued on behalf of {personas.ml_engineer.username}" in page_text(
        mei.get("/compatibility/")
    )
    assert mei.post(f"/jobs/{job.pk}/cancel/").status_code == 302

    matrix = mei.get("/compatibility/")
    html = matrix.content.decode()
    cell_html = re.search(r'<td class="cell[^"]*"\s+data-version="1" data-status="(\w+)"', html)
    assert cell_html is not None and cell_html.group(1) == "cancelled"
    shown = page_text(matrix)
    assert "cancelled" in shown and "failed" not in shown
    assert cancel not in html  # nothing left to cancel

    # not a dead end: she resumes it, as her own job on the default queue
    assert "Resume it" in html
    with django_capture_on_commit_callbacks(execute=True):
        resumed = mei.post(
            "/compatibility/cells/", {"endpoint": cell.endpoint_id, "version": demo.pk}
        )
    assert resumed.status_code == 302
    cell.run.refresh_from_db()
    again = cell.run.job
    assert again.pk != job.pk and again.created_by == personas.ml_engineer
    assert not again.automatic and dict(recorded)[again.pk] is None


def test_what_a_running_job_sends_goes_to_its_own_queue(personas, settings, monkeypatch):
    """An evaluation run's job sends its chunk tasks while it runs: a follow-on's go to the
    follow-on queue (``studio.jobs.routing``), a person's to the default queue."""
    from studio.celery import app
    from studio.jobs.registry import JOB_KINDS, JobKind

    routed = []

    def probe(context):
        route = app.amqp.router.route({}, "studio.evolution.tasks.score_eval_chunk", (1,), {})
        routed.append(route["queue"].name)
        return {}

    monkeypatch.setitem(JOB_KINDS, "probe", JobKind(name="probe", label="Probe", run=probe))
    for automatic in (True, False):
        job = Job.objects.create(
            kind="probe", title="probe", created_by=personas.operator, automatic=automatic
        )
        assert job_run(job_id=job.pk, heartbeat=False).status == Job.SUCCEEDED
    assert routed == [settings.CELERY_FOLLOW_ON_QUEUE, app.conf.task_default_queue]

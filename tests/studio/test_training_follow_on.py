"""A finished training stays finished: the compatibility cells its checkpoint asks for are a job of
their own.

Issue 38: a tiny SFT wrote final/, its curves and its result, then its job failed
("OperationalError") while asking for the compatibility cells, and the run read as failed.
"""

from __future__ import annotations

import json

import pytest
from django.db import OperationalError

from studio.jobs.models import Job
from studio.jobs.services import job_run
from studio.releases.testing import trained_checkpoint

pytestmark = pytest.mark.django_db


def _finished_training(personas, tmp_path, version):
    """An SFT run on ``version`` whose command already wrote final/, and its queued job (the worker
    finds the step done). Not a smoke run (whose cells are not asked for automatically)."""
    run = trained_checkpoint(tmp_path / "runs" / "run-1")
    (run.path / "sft" / "model_card.json").write_text(json.dumps({"stage": "sft", "steps": 2}))
    run.created_by, run.model, run.harness_version = personas.ml_engineer, "local", version
    run.job = Job.objects.create(
        kind="train_sft", title="SFT", params={"run_id": run.pk}, created_by=personas.ml_engineer
    )
    run.save(update_fields=["created_by", "model", "harness_version", "job"])
    return run


def test_a_lock_while_asking_for_the_cells_neither_fails_the_training_nor_loses_the_cells(
    personas, demo_version, settings, tmp_path, monkeypatch, django_capture_on_commit_callbacks
):
    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    run = _finished_training(personas, tmp_path, demo_version)
    tries = []

    def locked_once(*, run_id, **_):
        tries.append(run_id)
        if len(tries) == 1:
            raise OperationalError("database is locked")
        return []

    monkeypatch.setattr("studio.compatibility.services.cells_for_checkpoint", locked_once)
    with django_capture_on_commit_callbacks(execute=True):
        training = job_run(job_id=run.job_id, heartbeat=False)
    assert training.status == Job.SUCCEEDED, training.error
    assert "trained" in training.outcome and "final/" in training.outcome
    follow_on = Job.objects.get(kind="compatibility_checkpoint")
    assert training.result["follow_on_jobs"] == [follow_on.pk]
    assert (
        f"its cells are asked for in job #{follow_on.pk}, a step of their own" in training.log_tail
    )
    assert follow_on.status == Job.SUCCEEDED and tries == [run.pk, run.pk]  # tried again, and done
    assert (
        "the database was locked by another process's write (database is locked); trying again"
        in follow_on.log_tail
    )


def test_cells_that_cannot_be_asked_for_fail_their_own_step_and_the_training_stays_done(
    personas, demo_version, settings, tmp_path, monkeypatch, django_capture_on_commit_callbacks
):
    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    run = _finished_training(personas, tmp_path, demo_version)

    def broken(*, run_id, **_):
        raise ValueError("the compatibility set cannot be built")

    monkeypatch.setattr("studio.compatibility.services.cells_for_checkpoint", broken)
    with django_capture_on_commit_callbacks(execute=True):
        training = job_run(job_id=run.job_id, heartbeat=False)
    assert training.status == Job.SUCCEEDED, training.error
    follow_on = Job.objects.get(kind="compatibility_checkpoint")
    assert (
        follow_on.status == Job.FAILED
        and "the compatibility set cannot be built" in follow_on.error
    )

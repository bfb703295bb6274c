"""The demo's own process layout on SQLite: no write is lost to "database is locked".

``scripts/demo.sh`` runs, on one SQLite file, a Celery worker of two prefork processes (with beat),
a training worker on the train queue and the web server. Here the same: an evaluation spread over
the two worker processes in small chunks, a tiny SFT run on the training worker, and the web's draft
saves from two threads of this process, all at once. Every job runs to its end, every save answers
as it should, and no process logs an OperationalError (it used to: 135 in an hour of the demo, a
482-case evaluation failed at 92/482, draft saves answered 500).
"""

from __future__ import annotations

import os
import threading

import pytest
from django.db import connection
from django.test import Client
from evolution_testing import client_for, small_world

from studio.evolution.models import EvalRun
from studio.evolution.services.runs import eval_run_start
from studio.harnesses.services import draft_create
from studio.jobs.models import Job
from studio.jobs.testing import celery_worker, wait_for
from studio.training.models import TrainingRun
from studio.training.testing import run_ended

CASES = 40
SKILL = "skills/item_qa/SKILL.md"
TINY_SFT = {
    "preset": "tiny-smoke",
    "model": "tiny",
    "max_cases": "2",
    "hsa_variants": "0",
    "save_steps": "1",
    "max_steps": "2",
}


def _save_drafts(user, draft, stop: threading.Event, answers: list[int]) -> None:
    """The web's writes: one draft file saved again and again, as an operator typing in the editor;
    an error is a 500, as the web server answers it."""
    from studio.harnesses.models import Draft

    client = Client(raise_request_exception=False)
    client.force_login(user)
    try:
        n = 0
        while not stop.is_set():
            n += 1
            revision = Draft.objects.get(pk=draft.pk).revision
            response = client.post(
                f"/drafts/{draft.pk}/save/",
                {
                    "path": SKILL,
                    "text": draft.files[SKILL] + f"- Edit {n}: say the price once.\n",
                    "revision": revision,
                },
            )
            answers.append(response.status_code)
    finally:
        connection.close()  # this thread's own connection


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_the_demo_layout_on_sqlite_evaluates_trains_and_saves_with_no_lock_error(
    personas, demo_sets_dir, defect_files, tmp_path, settings
):
    if connection.vendor != "sqlite":
        pytest.skip(
            "the SQLite layout (PostgreSQL takes row locks): "
            "HS_TEST_DB=sqlite bash scripts/test.sh runs it"
        )
    # many chunks: both worker processes claim, heartbeat and write at once
    settings.EVAL_CHUNK_CASES = 2
    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    version, dataset, endpoint = small_world(
        sets_dir=demo_sets_dir,
        files=defect_files,
        actor=personas.admin,
        size=CASES,
        tmp_path=tmp_path,
        delay_s=0.05,
    )
    queue = f"test-layout-{os.getpid()}"
    settings.CELERY_TRAIN_QUEUE = f"{queue}-train"
    drafts = [
        draft_create(
            harness=version.harness, base_version=version, owner=personas.operator, title=f"d{i}"
        )
        for i in range(2)
    ]
    answers: list[int] = []
    stop = threading.Event()
    # the training worker first: the inner worker's queue is where this process sends the other jobs
    with (
        celery_worker(
            queue=settings.CELERY_TRAIN_QUEUE, node=f"{queue}-train", heartbeat_s=0.5, lease_s=20
        ) as trainer,
        celery_worker(queue=queue, processes=2, beat=True, heartbeat_s=0.5, lease_s=20) as worker,
    ):
        savers = [
            threading.Thread(target=_save_drafts, args=(personas.operator, d, stop, answers))
            for d in drafts
        ]
        for saver in savers:
            saver.start()
        try:
            mei = client_for(personas.ml_engineer)
            assert mei.post("/training/new/sft/?preset=tiny-smoke", TINY_SFT).status_code == 302
            run = eval_run_start(
                version=version,
                dataset=dataset,
                endpoint=endpoint,
                case_ids=list(dataset.cases.values_list("case_id", flat=True)),
                actor=personas.operator,
            )
            evaluation = wait_for(
                lambda: (
                    EvalRun.objects.filter(pk=run.pk)
                    .exclude(status__in=(EvalRun.QUEUED, EvalRun.RUNNING))
                    .first()
                ),
                timeout=300,
                what="the evaluation",
            )
            training = run_ended(TrainingRun.objects.get(), timeout=300)
        finally:
            stop.set()
            for saver in savers:
                saver.join(timeout=60)
        logs = worker.log() + trainer.log()
    assert "OperationalError" not in logs, logs[logs.find("OperationalError") - 2000 :][:4000]
    assert evaluation.status == EvalRun.SUCCEEDED, Job.objects.get(pk=evaluation.job_id).error
    assert evaluation.results.count() == CASES
    assert (
        len({w.split(" pid ")[1] for w in evaluation.results.values_list("worker", flat=True)}) == 2
    )
    assert training.status == Job.SUCCEEDED, training.error
    assert not Job.objects.filter(status=Job.FAILED).exists(), list(
        Job.objects.values_list("kind", "error")
    )
    assert answers and set(answers) <= {302}, sorted(
        set(answers)
    )  # a save redirects to the editor; never a 500

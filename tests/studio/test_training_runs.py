"""Training runs on a real Celery worker reading the train queue, as the ML engineer uses them: a
tiny SFT run's loss curve grows while it runs, its checkpoint lands in the registry, gets evaluated
and becomes an endpoint in one click; a cancelled run stops its trainer and resumes from its last
checkpoint. The tiny random model keeps each run to seconds per step on a CPU."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime

import pytest
from studio_testing import client_for

from studio.endpoints.models import ModelEndpoint
from studio.jobs.models import Job
from studio.jobs.templatetags.fallback import after_flag, fell_back
from studio.jobs.testing import celery_worker, wait_for
from studio.training.models import TrainingRun
from studio.training.testing import run_ended
from tests import artefacts
from training.runs import read_metrics, read_model_card

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TINY = {
    "preset": "tiny-smoke",
    "model": "tiny",
    "max_cases": "2",
    "hsa_variants": "0",
    "save_steps": "1",
}


@pytest.fixture(scope="module")
def module_worker(django_db_setup):
    """One worker for the module's runs, reading a private default queue and a private train queue
    (as `-Q studio,train` would): started once instead of once per test (each start and stop is a
    few seconds); between tests it is idle, and each test's rows and run folders are its own."""
    queue = f"test-train-{uuid.uuid4().hex[:8]}"
    with celery_worker(
        queue=queue, also_queues=(f"{queue}-train",), lease_s=20, heartbeat_s=1
    ) as worker:
        yield worker


@pytest.fixture
def train_worker(module_worker, settings, tmp_path):
    """The module's worker; the test's run folders in its own folder, its train jobs routed to the
    worker's train queue."""
    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    settings.CELERY_TRAIN_QUEUE = f"{module_worker.queue}-train"
    return module_worker


def _job(run: TrainingRun) -> Job:
    return Job.objects.get(pk=TrainingRun.objects.get(pk=run.pk).job_id)


def test_a_tiny_sft_run_grows_its_curve_lands_in_the_registry_is_evaluated_and_served(
    personas, train_worker
):
    mei = client_for(personas.ml_engineer)
    response = mei.post("/training/new/sft/?preset=tiny-smoke", {**TINY, "max_steps": "3"})
    assert response.status_code == 302, response.content[:500]
    run = TrainingRun.objects.get()
    seen = []  # rows the dashboard had while the job was running
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        data = mei.get(f"/training/runs/{run.pk}/metrics.json").json()
        if data["active"]:
            seen.append(data["rows"])
        else:
            break
        time.sleep(0.5)
    job = run_ended(run, timeout=60)
    assert job.status == Job.SUCCEEDED, job.error + job.log_tail[-3000:]
    assert any(0 < rows < 3 for rows in seen), seen  # the curve was drawn before the run ended
    final = mei.get(f"/training/runs/{run.pk}/metrics.json").json()
    loss = next(c for c in final["charts"] if c["key"] == "loss")["series"][0]
    assert [p[0] for p in loss["points"]] == [1.0, 2.0, 3.0] and final["active"] is False
    assert final["progress"]["percent"] == 100
    assert "python -m training sft --config" in job.log_tail and "step 3/3" in job.log_tail
    assert job.outcome == "trained 3 steps (sft): model in final/"
    assert f'href="/training/runs/{run.pk}/"' in mei.get(f"/jobs/{job.pk}/").content.decode()

    # the registry: the checkpoint with its model card's facts; operators read it too
    page = client_for(personas.operator).get("/training/checkpoints/").content.decode()
    card = read_model_card(run.path / "sft")
    assert f'data-run="{run.pk}"' in page and card["harness_digest"][:12] in page
    assert str(run.path / "sft" / "final") in page and run.config_digest[:12] in page

    # evaluate it (the default queue) from the registry's link
    form = mei.get(f"/training/new/eval/?model={run.path / 'sft' / 'final'}").content.decode()
    assert str(run.path / "sft" / "final") in form
    mei.post(
        "/training/new/eval/",
        {
            "model": str(run.path / "sft" / "final"),
            "sets": ["", "live_qa"],
            "cases": "1",
        },
    )
    evaluation = TrainingRun.objects.get(kind="eval")
    assert evaluation.parent == run
    job = run_ended(evaluation, timeout=300)
    assert job.status == Job.SUCCEEDED, job.error + job.log_tail[-3000:]
    assert (
        evaluation.__class__.objects.get(pk=evaluation.pk).summary["evaluation"]["live_qa"]["n"]
        == 1
    )
    # the tiny model falls back on its one case: the outcome says so first
    # (studio/jobs/fallback.py), then the score
    assert job.outcome.startswith(
        "Mostly fallback: live_qa: 1 of 1 case fell back; live_qa AVG "
    ), job.outcome
    assert (
        f'href="/training/runs/{evaluation.pk}/"'
        in mei.get("/training/checkpoints/").content.decode()
    )

    # one click: an endpoint on the local route serving this checkpoint, usable by the playground
    assert (
        client_for(personas.operator).post(f"/training/runs/{run.pk}/endpoint/").status_code == 403
    )
    assert mei.post(f"/training/runs/{run.pk}/endpoint/").status_code == 302
    endpoint = ModelEndpoint.objects.get(name=f"run-{run.pk}-sft")
    assert endpoint.route == ModelEndpoint.LOCAL and endpoint.model == str(
        run.path / "sft" / "final"
    )
    assert endpoint.policy_spec == f"local:{run.path / 'sft' / 'final'}"


def test_a_cancelled_run_stops_its_trainer_and_resumes_from_its_last_checkpoint(
    personas, train_worker
):
    mei = client_for(personas.ml_engineer)
    mei.post("/training/new/sft/?preset=tiny-smoke", {**TINY, "max_steps": "5"})
    run = TrainingRun.objects.get()
    metrics = run.path / "sft" / "metrics.jsonl"
    wait_for(
        lambda: len(read_metrics(run.path / "sft")) >= 2,
        timeout=300,
        what="two logged steps",
    )
    first_job = _job(run)
    assert mei.post(f"/jobs/{first_job.pk}/cancel/").status_code == 302
    job = run_ended(run, timeout=60)
    assert job.status == Job.CANCELLED and "stopped: cancelled by mei" in job.log_tail
    size = metrics.stat().st_size
    time.sleep(3)
    assert metrics.stat().st_size == size  # the trainer process is gone, not training on
    page = mei.get(f"/training/runs/{run.pk}/").content.decode()
    assert 'id="run-resume"' in page
    assert client_for(personas.reviewer).post(f"/training/runs/{run.pk}/resume/").status_code == 403

    resumed_at = datetime.now(UTC)
    assert mei.post(f"/training/runs/{run.pk}/resume/").status_code == 302
    job = run_ended(run, timeout=300)
    assert job.pk != first_job.pk and job.status == Job.SUCCEEDED, job.error + job.log_tail[-3000:]
    rows = [r for r in read_metrics(run.path / "sft") if "loss" in r]
    assert [r["step"] for r in rows] == [1, 2, 3, 4, 5]
    # the steps before the last checkpoint were trained by the first job, not again
    assert datetime.fromisoformat(rows[0]["time"]) < resumed_at
    assert read_model_card(run.path / "sft")["steps"] == 5
    assert TrainingRun.objects.get(pk=run.pk).attempts == 2
    again = mei.post(f"/training/runs/{run.pk}/resume/", follow=True).content.decode()
    assert "ran to its end; start a new run to train more" in again


def test_a_replay_on_the_tiny_route_runs_on_the_train_queue_and_its_page_shows_the_table(
    personas, train_worker, tmp_path_factory
):
    cases = artefacts.replay_cases(tmp_path_factory, 3)
    mei = client_for(personas.ml_engineer)
    response = mei.post(
        "/training/new/replay/?preset=replay-tiny",
        {"preset": "replay-tiny", "cases": str(cases), "concurrency": "1"},
    )
    assert response.status_code == 302, response.content[:500]
    run = TrainingRun.objects.get()
    job = run_ended(run, timeout=300)
    assert job.status == Job.SUCCEEDED, job.error + job.log_tail[-3000:]
    # the tiny model mostly falls back: the outcome says so first (studio.jobs.fallback), then the
    # figures
    assert (
        after_flag(job.outcome).split("; ")[-1].startswith("replayed C=1 p95 ")
        and "route cpu-engine-tiny" in job.log_tail
    )
    levels = TrainingRun.objects.get(pk=run.pk).summary["replay"]["levels"]
    assert fell_back(job.outcome) == any(level["mostly_fallback"] for level in levels.values())
    summary = TrainingRun.objects.get(pk=run.pk).summary
    assert (
        summary["replay"]["route"] == "cpu-engine-tiny"
        and summary["replay"]["levels"]["1"]["n_measured"] == 2
    )
    page = client_for(personas.operator).get(f"/training/runs/{run.pk}/").content.decode()
    assert "| cpu-engine-tiny | tiny | 1 | 2 |" in page
    refused = mei.post(f"/training/runs/{run.pk}/resume/", follow=True).content.decode()
    assert "a replay is measured in one go and cannot be resumed" in refused

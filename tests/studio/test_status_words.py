"""Issue 38, item 9: statuses that are neither stale nor contradictory.

- a chunk claimed more than once does not blame a lost worker when its job failed and was resumed;
- a stage whose evaluation failed does not say "Waiting for the evaluation";
- an evaluation job's title counts the cases scored now, as the page beside it does;
- an evaluation run whose job a worker runs is not "queued";
- the replay dashboard does not say "finished finished";
- a checkpoint evaluation's planned count does not grow when its base model starts answering.
"""

from __future__ import annotations

import json
from datetime import timedelta
from html import unescape

import pytest
from django.utils import timezone
from studio_testing import client_for

from studio.jobs.models import Job
from studio.training.models import TrainingRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(personas, demo_version):
    """An evaluation run of 4 cases of a small dev-set, queued, its job created (not run)."""
    from studio.compatibility.testing import dev_cases
    from studio.endpoints.models import ModelEndpoint
    from studio.evolution.models import EvalRun
    from studio.evolution.services.datasets import dataset_import

    cases, catalogue = dev_cases(4)
    dataset = dataset_import(
        name="dev-4",
        text="\n".join(json.dumps(c) for c in cases),
        source="dev.jsonl",
        actor=personas.admin,
        catalogue=catalogue,
    )
    endpoint = ModelEndpoint.objects.create(
        name="scripted", route=ModelEndpoint.SCRIPTED, script_path="/nowhere"
    )
    job = Job.objects.create(
        kind="evolution_eval_run", title="Evaluate", params={}, status=Job.QUEUED
    )
    run = EvalRun.objects.create(
        version=demo_version,
        dataset=dataset,
        endpoint=endpoint,
        job=job,
        attempts=1,
        case_ids=[c["id"] for c in cases],
        created_by=personas.operator,
    )
    Job.objects.filter(pk=job.pk).update(params={"run_id": run.pk})
    return run


def _score(run, case_id: str) -> None:
    from studio.evolution.models import CaseResult

    CaseResult.objects.create(
        run=run,
        case_id=case_id,
        category="product_qa",
        accuracy=1,
        effectiveness=1,
        avg=1,
        verdict={},
        reply="ok",
        route="public",
        trajectory={"outcome": "replied"},
    )


def test_a_running_job_makes_its_run_running_and_its_title_counts_now(personas, run):
    from studio.jobs.services import _retitle

    Job.objects.filter(pk=run.job_id).update(
        status=Job.RUNNING,
        started_at=timezone.now(),
        heartbeat_at=timezone.now(),
        worker="w1@host pid 1",
    )
    _score(run, run.case_ids[0])
    _retitle(run.job_id)  # the title as stored at the last progress report: 1/4
    _score(run, run.case_ids[1])  # ... and one more case scored since
    client = client_for(personas.operator)
    page = unescape(client.get(f"/evolution/runs/{run.pk}/").content.decode())
    assert 'data-status="queued"' in page  # the run's own row: no chunk has finished yet
    assert (
        '<span class="status status-running">running</span>' in page and "status-queued" not in page
    )
    assert "2 of 4 cases scored" in page
    for path in (f"/jobs/{run.job_id}/", "/jobs/"):
        text = unescape(client.get(path).content.decode())
        assert "(2/4 scored)" in text and "(1/4 scored)" not in text, path


def test_a_stage_whose_evaluation_failed_says_so_instead_of_waiting(personas, run):
    from studio.evolution.models import EvalRun, Evolution, Stage

    Job.objects.filter(pk=run.job_id).update(
        status=Job.FAILED, error="OperationalError: database is locked"
    )
    EvalRun.objects.filter(pk=run.pk).update(
        status=EvalRun.FAILED, error="OperationalError: database is locked"
    )
    evolution = Evolution.objects.create(
        name="e",
        harness=run.version.harness,
        base_version=run.version,
        dataset=run.dataset,
        endpoint=run.endpoint,
        case_ids=run.case_ids,
    )
    stage = Stage.objects.create(
        evolution=evolution, number=1, parent_version=run.version, parent_run=run
    )
    page = unescape(
        client_for(personas.reviewer).get(f"/evolution/stages/{stage.pk}/").content.decode()
    )
    assert "Waiting for the evaluation" not in page
    assert (
        "Nothing to diagnose yet: the evaluation of v1 failed." in page
        and f"/evolution/runs/{run.pk}/" in page
    )


def test_a_chunk_claimed_again_after_a_failed_job_does_not_blame_a_lost_worker(
    personas, run, settings
):
    from studio.evolution.services.chunks import chunk_claim, chunk_release, chunks_ensure

    settings.EVAL_CHUNK_CASES = 2  # two chunks, so the page counts them

    chunks_ensure(run=run)
    claim = chunk_claim(run_id=run.pk, worker="w1@host pid 1")
    chunk_release(
        claim=claim
    )  # what a job that failed mid-chunk does, before a resume claims it again
    again = chunk_claim(run_id=run.pk, worker="w2@host pid 2")
    assert again.chunk.claims == 2 and again.taken_from == ""
    page = unescape(
        client_for(personas.reviewer).get(f"/evolution/runs/{run.pk}/").content.decode()
    )
    assert "claimed again after its worker was lost" not in page
    assert (
        "claimed more than once: its worker was lost, or "
        "its job stopped or failed and the run resumed" in page
    )


def test_the_replay_dashboard_says_finished_once(personas, demo_version, settings, tmp_path):
    from studio.releases.testing import replay_run, trained_checkpoint

    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    checkpoint = trained_checkpoint(tmp_path / "runs" / "run-ckpt")
    replay = replay_run(
        tmp_path / "replay",
        checkpoint=checkpoint.final_dir,
        harness_version=demo_version,
        walls={1: [1.0, 1.2]},
    )
    page = unescape(client_for(personas.reviewer).get(f"/replay/{replay.pk}/").content.decode())
    state = page.split('id="replay-state"', 1)[1].split("</p>", 1)[0]
    assert (
        "finished</span> finished" not in state
        and "finished</span> every planned level was measured" in state
    )


def test_an_evaluation_plans_its_base_models_answers_from_the_start(personas, tmp_path):
    """A checkpoint whose card names its base: the base answers the ifeval prompts too, counted from
    the start (before: 15 planned items became 25 when the base began)."""
    final = tmp_path / "ckpt" / "final"
    final.mkdir(parents=True)
    (final / "config.json").write_text("{}")
    (tmp_path / "ckpt" / "model_card.json").write_text(
        json.dumps({"base_model": str(tmp_path / "base")})
    )
    job = Job.objects.create(
        kind="checkpoint_eval",
        title="eval",
        status=Job.RUNNING,
        params={},
        started_at=timezone.now() - timedelta(seconds=30),
    )
    run = TrainingRun.objects.create(
        kind=TrainingRun.EVAL,
        title="eval",
        folder=str(tmp_path / "run"),
        config_digest="0" * 64,
        job=job,
        steps=[],
        config={
            TrainingRun.EVAL: {
                "sets": ["live_qa", "ifeval"],
                "cases": 5,
                "ifeval": 10,
                "model": str(final),
            }
        },
    )
    (tmp_path / "run" / "eval").mkdir(parents=True)
    (tmp_path / "run" / "eval" / "live_qa.jsonl").write_text(
        "".join(f'{{"id": "c{i}"}}\n' for i in range(5))
    )
    client = client_for(personas.ml_engineer)
    before = client.get(f"/training/runs/{run.pk}/live/").content.decode()
    assert "5 of 25 items" in before
    (tmp_path / "run" / "eval" / "ifeval_base.jsonl").write_text('{"id": "1"}\n')
    assert "6 of 25 items" in client.get(f"/training/runs/{run.pk}/live/").content.decode()

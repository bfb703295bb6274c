"""A fallback is not a success: runs whose requests mostly fell back say so on every page and gate.

The replay's record is what ``python -m serving replay`` writes when every request ended in the
Harness's fallback reply (``studio.releases.testing.replay_run`` with ``status="fallback"``, read back
by serving's own reader); the evaluation's summary is ``training.self_eval``'s, computed by its own
``set_summary`` from rows that all fell back. The pages are read through the test client as the ML
engineer.
"""

from __future__ import annotations

from html import unescape

import pytest
from studio_testing import client_for

from studio.releases.models import Release
from studio.releases.testing import _run, ifeval_run, replay_run, trained_checkpoint
from studio.training.models import TrainingRun

pytestmark = pytest.mark.django_db

WARNING = "Most requests fell back to the Harness's fallback reply (C=1: 100% of 3)"


@pytest.fixture
def checkpoint(settings, tmp_path):
    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    return trained_checkpoint(tmp_path / "runs" / "run-ckpt")


def test_a_replay_whose_requests_all_fell_back_warns_shows_no_answer_and_fails_the_latency_gate(
        personas, demo_version, checkpoint, tmp_path):
    final = checkpoint.final_dir
    replay = replay_run(tmp_path / "replay", checkpoint=final, harness_version=demo_version,
                        walls={1: [1.0, 1.5, 2.0]}, status="fallback")
    level = replay.summary["replay"]["levels"]["1"]
    assert level["success_rate"] == 1.0 and level["answered_rate"] == 0.0 and level["mostly_fallback"]
    client = client_for(personas.ml_engineer)

    dashboard = unescape(client.get(f"/replay/{replay.pk}/").content.decode())
    assert 'id="replay-fallback-warning"' in dashboard and WARNING in dashboard
    assert "<th>Answered</th>" in dashboard and 'data-key="answered_rate">0.0%</td>' in dashboard
    run_page = unescape(client.get(f"/training/runs/{replay.pk}/").content.decode())
    assert 'id="replay-fallback-warning"' in run_page and WARNING in run_page

    ifeval_run(tmp_path / "eval", model=final, prompt_strict=60.0)
    client.post("/releases/new/", {"checkpoint": str(final), "draft_head": "", "notes": "", "action": "draft",
                                   "harness_version": f"{demo_version.harness.name}@v{demo_version.number}"})
    gate = {g["name"]: g for g in Release.objects.get().gates}["latency"]
    assert gate["status"] == "fail" and gate["run_id"] == replay.pk
    assert gate["detail"].startswith(WARNING) and "the gate needs answers to time" in gate["detail"]


def test_a_checkpoint_evaluation_whose_cases_fell_back_warns_beside_its_scores(personas, checkpoint, tmp_path):
    from training.runs import update_json
    from training.self_eval import set_summary

    rows = [{"id": f"c{i}", "category": "item_qa", "outcome": "fallback", "accuracy": 1.0, "effectiveness": 0.0,
             "avg": 0.5, "rubric_avg": None, "reasons": [], "error": None} for i in range(4)]
    run = _run(kind=TrainingRun.EVAL, folder=tmp_path / "eval", model=str(checkpoint.final_dir))
    (run.path / "eval").mkdir(parents=True)
    update_json(run.path / "eval" / "summary.json", lambda current: current.update(
        {"model": str(checkpoint.final_dir), "live_qa": set_summary(rows),
         "ifeval": {"error": "IFEvalSourceMissing: IFEval prompts not found at /nowhere.jsonl"}}))
    page = unescape(client_for(personas.ml_engineer).get(f"/training/runs/{run.pk}/").content.decode())
    assert 'id="eval-fallback-live_qa"' in page
    assert "4 of 4 cases ended in the Harness's fallback reply: the scores say how the fallback is judged" in page
    assert "fallback 4" in page
    # the set that failed says why; the set that finished is still shown
    assert 'id="eval-error-ifeval"' in page and "failed: IFEvalSourceMissing" in page
    assert '<tr data-set="live_qa"><td>T1 Live-Stream QA' in page

"""The training dashboards in a real browser: a finished tiny MTP run's curves with its per-step draft
accuracy and the marks (kept checkpoints, final, held-out acceptance), drawn by dashboard.js from the
metrics endpoint. The run folder is real `python -m training mtp`
output on the tiny model (about 25 s on a CPU)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_finished_mtp_runs_dashboard_draws_the_draft_steps_and_marks_its_evaluations(people, sign_in, settings,
                                                                                      tmp_path):
    from studio.jobs.models import Job
    from studio.training.models import TrainingRun

    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    folder = tmp_path / "runs" / "run-mtp"
    done = subprocess.run([sys.executable, "-m", "training", "mtp", "--model", "tiny", "--output-dir",
                           str(folder / "mtp"), "--max-cases", "3", "--max-steps", "4", "--logging-steps", "2",
                           "--save-steps", "2", "--save-total-limit", "2", "--rollout-max-new-tokens", "12",
                           "--variant-pool-size", "1"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    job = Job.objects.create(kind="train_mtp", title="mtp", status=Job.SUCCEEDED, params={})
    run = TrainingRun.objects.create(kind="mtp", title="a tiny head", folder=str(folder), config_digest="0" * 64,
                                     job=job, model="tiny", config={"mtp": {"max_steps": 4}},
                                     steps=[{"name": "mtp", "argv": ["training", "mtp"], "config_file": "mtp.yaml",
                                             "output": "mtp"}])
    page = sign_in("olivia")  # an operator reads the dashboards
    page.goto(f"/training/runs/{run.pk}/")
    expect(page.locator("#chart-draft_accuracy")).to_have_attribute("data-n", "2")
    expect(page.locator("#chart-draft_loss")).to_be_visible()
    marks = page.locator("#dashboard-marks li")
    expect(marks.filter(has_text="checkpoint-4")).to_have_count(1)
    expect(page.locator("#dashboard-marks li[data-kind=eval]")).to_have_count(2)
    expect(page.locator("#dashboard-marks li[data-kind=eval]").first).to_contain_text("step 0: held-out acceptance")
    expect(page.locator("#head-acceptance")).to_contain_text("rate ")

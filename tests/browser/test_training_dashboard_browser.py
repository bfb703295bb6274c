"""The training dashboards in a real browser: a finished tiny MTP run's curves with its per-step
draft accuracy and the marks (kept checkpoints, final, held-out acceptance), drawn by dashboard.js
from the metrics endpoint. The run folder is real `python -m training mtp` output on the tiny model
(tests/artefacts.py builds it once per test run), and a real tiny SFT run with held-out cases for
the eval-loss curve and the best checkpoint."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests import artefacts

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_finished_mtp_runs_dashboard_draws_the_draft_steps_and_marks_its_evaluations(
    people, sign_in, settings, tmp_path, tmp_path_factory
):
    from studio.jobs.models import Job
    from studio.training.models import TrainingRun

    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    folder = tmp_path / "runs" / "run-mtp"
    artefacts.private_copy(artefacts.tiny_mtp_run(tmp_path_factory)[0], folder / "mtp")
    job = Job.objects.create(kind="train_mtp", title="mtp", status=Job.SUCCEEDED, params={})
    run = TrainingRun.objects.create(
        kind="mtp",
        title="a tiny head",
        folder=str(folder),
        config_digest="0" * 64,
        job=job,
        model="tiny",
        config={"mtp": {"max_steps": 4}},
        steps=[
            {"name": "mtp", "argv": ["training", "mtp"], "config_file": "mtp.yaml", "output": "mtp"}
        ],
    )
    page = sign_in("olivia")  # an operator reads the dashboards
    page.goto(f"/training/runs/{run.pk}/")
    expect(page.locator("#chart-draft_accuracy")).to_have_attribute("data-n", "2")
    expect(page.locator("#chart-draft_loss")).to_be_visible()
    marks = page.locator("#dashboard-marks li")
    expect(marks.filter(has_text="checkpoint-4")).to_have_count(1)
    expect(page.locator("#dashboard-marks li[data-kind=eval]")).to_have_count(2)
    expect(page.locator("#dashboard-marks li[data-kind=eval]").first).to_contain_text(
        "step 0: held-out acceptance"
    )
    expect(page.locator("#head-acceptance")).to_contain_text("rate ")


def test_a_finished_sft_runs_dashboard_draws_eval_loss_and_marks_the_best_kept_checkpoint(
    people, sign_in, settings, tmp_path
):
    """A real tiny SFT run with half of its cases held out: eval_loss at each save (steps 1-3),
    two checkpoints kept; the dashboard draws the eval_loss curve and names the best kept
    checkpoint."""
    import json

    from studio.jobs.models import Job
    from studio.training.models import TrainingRun
    from tests.training.conftest import case_examples
    from training.sft_config import SFTStageConfig
    from training.sft_trainer import run_sft

    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    folder = tmp_path / "runs" / "run-sft"
    # the trainer in this process (the command's own run_sft), on two cases of per-turn examples
    # (tests/training/conftest.py): the held-out split needs two cases; a subprocess on the demo's
    # gold cases drew the same curve in 10-20 s of loading and longer sequences
    run_sft(
        SFTStageConfig(
            model="tiny",
            output_dir=str(folder / "sft"),
            max_steps=3,
            save_steps=1,
            save_total_limit=2,
            eval_fraction=0.5,
            learning_rate=1e-3,
        ),
        examples=case_examples(2),
    )
    rows = [
        json.loads(line) for line in (folder / "sft" / "metrics.jsonl").read_text().splitlines()
    ]
    evals = {r["step"]: r["eval_loss"] for r in rows if "eval_loss" in r}
    assert sorted(evals) == [1, 2, 3]
    kept = sorted(int(p.name.split("-")[1]) for p in (folder / "sft").glob("checkpoint-*"))
    assert kept == [
        2,
        3,
    ]  # checkpoint-1 rotated away: not a candidate even if its eval_loss is the lowest
    best = min(kept, key=lambda step: (evals[step], step))
    job = Job.objects.create(kind="train_sft", title="sft", status=Job.SUCCEEDED, params={})
    run = TrainingRun.objects.create(
        kind="sft",
        title="a tiny sft",
        folder=str(folder),
        config_digest="0" * 64,
        job=job,
        model="tiny",
        config={"sft": {"max_steps": 3}},
        steps=[
            {"name": "sft", "argv": ["training", "sft"], "config_file": "sft.yaml", "output": "sft"}
        ],
    )
    page = sign_in("olivia")
    page.goto(f"/training/runs/{run.pk}/")
    expect(page.locator("#chart-loss")).to_have_attribute("data-n", "3")
    assert page.evaluate("Chart.getChart('chart-loss').data.datasets.map(d => d.label)") == [
        "loss",
        "loss (smoothed)",
        "eval_loss",
    ]
    expect(page.locator("#dashboard-marks li[data-kind=evaluation]")).to_have_count(3)
    expect(page.locator("#dashboard-marks li[data-kind=best]")).to_have_text(
        f"step {best}: best checkpoint: checkpoint-{best} (eval_loss {evals[best]:.4f}) (sft)"
    )


def test_a_pipelines_loss_chart_gives_each_stage_its_own_y_axis(
    people, sign_in, settings, tmp_path
):
    """An SFT loss near 10 and an OPD loss near 0.01: each stage's curve is scaled on an axis of its
    own, titled with its stage (issue 29, item 9)."""
    import json

    from studio.jobs.models import Job
    from studio.training.models import TrainingRun

    folder = tmp_path / "runs" / "run-pipeline"
    for stage, steps, loss in (("hsa_sft", 4, 10.8), ("general_opd", 3, 0.01)):
        stage_dir = folder / "pipeline" / stage
        stage_dir.mkdir(parents=True)
        (stage_dir / "metrics.jsonl").write_text(
            "".join(json.dumps({"step": s, "loss": loss / s}) + "\n" for s in range(1, steps + 1))
        )
    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    job = Job.objects.create(
        kind="train_pipeline", title="pipeline", status=Job.SUCCEEDED, params={}
    )
    run = TrainingRun.objects.create(
        kind="pipeline",
        title="a pipeline",
        folder=str(folder),
        config_digest="0" * 64,
        job=job,
        steps=[
            {"name": "pipeline", "argv": [], "config_file": "pipeline.yaml", "output": "pipeline"}
        ],
        config={
            "pipeline": {
                "stages": ["hsa_sft", "general_opd"],
                "hsa_sft": {"max_steps": 4},
                "general_opd": {"max_steps": 3},
            }
        },
    )
    page = sign_in("mei")
    page.goto(f"/training/runs/{run.pk}/")
    expect(page.locator("#chart-loss")).to_be_visible()
    axes = page.evaluate("""() => {
        const scales = Chart.getChart(document.getElementById('chart-loss')).scales;
        return Object.keys(scales).filter(k => k !== 'x').sort()
            .map(k => [k, scales[k].options.title.text, scales[k].max]);
    }""")
    assert [(key, title) for key, title, _top in axes] == [
        ("y", "pipeline/hsa_sft"),
        ("y1", "pipeline/general_opd"),
    ]
    assert axes[0][2] > 5 and axes[1][2] < 0.1  # each axis spans its own stage's values

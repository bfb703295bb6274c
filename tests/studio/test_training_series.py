"""Training curves: the dashboard's charts come from the metrics the trainers write, downsampled on
the server so a 10,000-step run draws as fast as a short one, its shape (spikes included) kept."""

from __future__ import annotations

import json
import math

import pytest
from studio_testing import client_for

from studio.jobs.models import Job
from studio.training.models import TrainingRun
from studio.training.series import curves, ema, lttb


def test_lttb_keeps_the_ends_the_spike_and_at_most_the_points_asked_for():
    points = [(float(x), math.sin(x / 50)) for x in range(10_000)]
    points[6_543] = (6_543.0, 25.0)  # a loss spike a user must see
    kept = lttb(points, 300)
    assert len(kept) == 300
    assert kept[0] == points[0] and kept[-1] == points[-1]
    assert (6_543.0, 25.0) in kept
    assert [p[0] for p in kept] == sorted(p[0] for p in kept)
    assert lttb(points[:10], 300) == points[:10]


def test_ema_smooths_and_starts_at_the_first_value():
    smooth = ema([4.0, 0.0, 4.0, 0.0])
    assert smooth[0] == pytest.approx(4.0)
    assert max(smooth[1:]) < 4.0 and min(smooth[1:]) > 0.0


def test_curves_group_the_metrics_into_charts_with_raw_and_smoothed_loss():
    rows = [
        {
            "x": s,
            "step": s,
            "loss": 3.0 - s / 100,
            "learning_rate": 1e-4,
            "grad_norm": 1.5,
            "kl": 0.01 * s,
            "rewards/accuracy/mean": 0.5,
            "rewards/effectiveness/mean": 0.25,
            "completions/mean_length": 40 + s,
            "frac_reward_zero_std": 0.5,
        }
        for s in range(1, 51)
    ]
    rows.append({"x": 51, "step": 51, "train_loss": 2.5})  # the trainer's closing row has no loss
    charts = {c["key"]: c for c in curves(rows)}
    assert set(charts) == {
        "loss",
        "learning_rate",
        "grad_norm",
        "rewards",
        "kl",
        "completion_length",
        "zero_advantage",
    }
    assert [s["name"] for s in charts["loss"]["series"]] == ["loss", "loss (smoothed)"]
    assert [s["name"] for s in charts["rewards"]["series"]] == [
        "rewards/accuracy/mean",
        "rewards/effectiveness/mean",
    ]
    assert charts["loss"]["series"][0]["n"] == 50


@pytest.mark.django_db
def test_the_metrics_endpoint_downsamples_10000_steps_and_counts_the_stages(personas, tmp_path):
    folder = tmp_path / "run"
    (folder / "sft").mkdir(parents=True)
    with (folder / "sft" / "metrics.jsonl").open("w") as handle:
        for step in range(1, 10_001):
            handle.write(
                json.dumps(
                    {
                        "stage": "sft",
                        "step": step,
                        "loss": 1 / step,
                        "learning_rate": 1e-4,
                        "time": f"2026-12-01T10:{step // 6000:02d}:{(step // 100) % 60:02d}+00:00",
                    }
                )
                + "\n"
            )
        handle.write('{"stage": "sft", "step": 10001, "lo')  # the trainer is writing this line
    job = Job.objects.create(kind="train_sft", title="t", status=Job.RUNNING, params={})
    run = TrainingRun.objects.create(
        kind="sft",
        title="t",
        folder=str(folder),
        config_digest="0" * 64,
        job=job,
        steps=[{"name": "sft", "argv": [], "config_file": "sft.yaml", "output": "sft"}],
        config={"sft": {"max_steps": 20_000}},
    )
    client = client_for(personas.operator)  # operators read the dashboards
    data = client.get(f"/training/runs/{run.pk}/metrics.json?points=200").json()
    loss = next(c for c in data["charts"] if c["key"] == "loss")
    assert [(s["name"], s["n"], len(s["points"])) for s in loss["series"]] == [
        ("loss", 10_000, 200),
        ("loss (smoothed)", 10_000, 200),
    ]
    assert data["rows"] == 10_000 and data["active"] is True
    assert data["progress"]["steps_done"] == 10_000 and data["progress"]["percent"] == 50
    assert data["progress"]["eta"].startswith("about ")
    bad = client.get(f"/training/runs/{run.pk}/metrics.json?points=1e9")
    assert bad.status_code == 400 and bad.json()["error"].startswith(
        "points: a whole number between 50 and 2000"
    )


@pytest.mark.django_db
def test_a_growing_metrics_file_is_read_from_where_it_ended_and_a_resumed_one_again(tmp_path):
    from studio.training.selectors import run_dashboard

    folder = tmp_path / "run"
    (folder / "sft").mkdir(parents=True)
    metrics = folder / "sft" / "metrics.jsonl"
    run = TrainingRun.objects.create(
        kind="sft",
        title="t",
        folder=str(folder),
        config_digest="0" * 64,
        steps=[{"name": "sft", "argv": [], "config_file": "sft.yaml", "output": "sft"}],
        config={"sft": {"max_steps": 4}},
    )

    def losses():
        chart = next(c for c in run_dashboard(run=run)["charts"] if c["key"] == "loss")
        return [p[1] for p in chart["series"][0]["points"]]

    metrics.write_text('{"step": 1, "loss": 4.0}\n{"step": 2, "loss": 3.0}\n{"step": 3, "lo')
    assert losses() == [4.0, 3.0]
    with metrics.open("a") as handle:  # the trainer finishes the torn line and writes one more
        handle.write('ss": 2.0}\n{"step": 4, "loss": 1.0}\n')
    assert losses() == [4.0, 3.0, 2.0, 1.0]
    # a resume from checkpoint-1 drops the later rows, then logs its own
    metrics.write_text('{"step": 1, "loss": 4.0}\n{"step": 2, "loss": 9.0}\n')
    assert losses() == [4.0, 9.0]


@pytest.mark.django_db
def test_a_finished_runs_curves_are_kept_in_the_studio_cache_and_redone_when_they_change(
    tmp_path, monkeypatch
):
    from django.core.cache import caches

    from studio.training import selectors
    from studio.training.selectors import dashboard

    folder = tmp_path / "run"
    (folder / "sft").mkdir(parents=True)
    metrics = folder / "sft" / "metrics.jsonl"
    metrics.write_text('{"step": 1, "loss": 4.0}\n{"step": 2, "loss": 3.0}\n')
    job = Job.objects.create(kind="train_sft", title="t", status=Job.SUCCEEDED, params={})
    run = TrainingRun.objects.create(
        kind="sft",
        title="t",
        folder=str(folder),
        config_digest="0" * 64,
        job=job,
        steps=[{"name": "sft", "argv": [], "config_file": "sft.yaml", "output": "sft"}],
        config={"sft": {"max_steps": 2}},
    )
    first = selectors.run_dashboard(run=run)
    assert not list(folder.glob("dashboard-cache*"))  # Django's cache framework, no file of its own
    caches[
        "local"
    ].clear()  # another web process: it reads the kept curves (Redis), not the metrics
    with monkeypatch.context() as patch:
        patch.setattr(
            dashboard, "run_metrics", lambda run: pytest.fail("the metrics were parsed again")
        )
        assert selectors.run_dashboard(run=run)["charts"] == first["charts"]
    metrics.write_text(
        '{"step": 1, "loss": 4.0}\n{"step": 2, "loss": 1.5}\n{"step": 3, "loss": 1.0}\n'
    )
    loss = next(c for c in selectors.run_dashboard(run=run)["charts"] if c["key"] == "loss")
    assert [p[1] for p in loss["series"][0]["points"]] == [4.0, 1.5, 1.0]


@pytest.mark.django_db
def test_the_curves_mark_kept_checkpoints_the_final_model_and_its_self_evaluation_across_stages(
    tmp_path,
):
    from studio.training.selectors import run_dashboard

    folder = tmp_path / "run"
    for stage, steps in (("sft", 4), ("rl", 2)):
        stage_dir = folder / "pipeline" / stage
        stage_dir.mkdir(parents=True)
        (stage_dir / "metrics.jsonl").write_text(
            "".join(json.dumps({"step": s, "loss": 1.0}) + "\n" for s in range(1, steps + 1))
        )
        for step in range(2, steps + 1, 2):
            (stage_dir / f"checkpoint-{step}").mkdir()
            (stage_dir / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
        (stage_dir / "checkpoint-9").mkdir()  # torn: a save that did not finish is not a checkpoint
        (stage_dir / "model_card.json").write_text(json.dumps({"stage": stage, "steps": steps}))
    (folder / "pipeline" / "rl" / "eval.json").write_text(
        json.dumps({"live_qa": {"n": 2, "avg": 62.5}, "ifeval": {"n": 1, "prompt_strict": 100.0}})
    )
    run = TrainingRun.objects.create(
        kind="pipeline",
        title="t",
        folder=str(folder),
        config_digest="0" * 64,
        steps=[
            {"name": "pipeline", "argv": [], "config_file": "pipeline.yaml", "output": "pipeline"}
        ],
        config={
            "pipeline": {"stages": ["sft", "rl"], "sft": {"max_steps": 4}, "rl": {"max_steps": 2}}
        },
    )
    marks = [(m["x"], m["kind"], m["label"]) for m in run_dashboard(run=run)["marks"]]
    assert marks == [
        (2, "checkpoint", "checkpoint-2"),
        (4, "checkpoint", "checkpoint-4"),
        (4, "final", "final"),
        (6, "checkpoint", "checkpoint-2"),
        (6, "final", "final"),
        (6, "eval", "self-evaluation: live_qa AVG 62.5, ifeval strict 100.0"),
    ]


@pytest.mark.django_db
def test_each_stage_of_a_pipeline_is_drawn_on_its_own_y_axis(personas, tmp_path):
    """SFT's loss (about 10) and OPD's (about 0.01) on one axis drew OPD as a flat line (issue 29,
    item 9)."""
    folder = tmp_path / "run"
    for stage, steps, loss in (("hsa_sft", 4, 10.8), ("general_opd", 3, 0.01)):
        stage_dir = folder / "pipeline" / stage
        stage_dir.mkdir(parents=True)
        (stage_dir / "metrics.jsonl").write_text(
            "".join(json.dumps({"step": s, "loss": loss / s}) + "\n" for s in range(1, steps + 1))
        )
    run = TrainingRun.objects.create(
        kind="pipeline",
        title="t",
        folder=str(folder),
        config_digest="0" * 64,
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
    data = client_for(personas.ml_engineer).get(f"/training/runs/{run.pk}/metrics.json").json()
    loss = next(c for c in data["charts"] if c["key"] == "loss")
    drawn = [
        (s["name"], s["axis"], s["axis_title"], [p[0] for p in s["points"]]) for s in loss["series"]
    ]
    assert drawn == [
        ("loss · pipeline/hsa_sft", 0, "pipeline/hsa_sft", [1.0, 2.0, 3.0, 4.0]),
        ("loss · pipeline/hsa_sft (smoothed)", 0, "pipeline/hsa_sft", [1.0, 2.0, 3.0, 4.0]),
        ("loss · pipeline/general_opd", 1, "pipeline/general_opd", [5.0, 6.0, 7.0]),
        ("loss · pipeline/general_opd (smoothed)", 1, "pipeline/general_opd", [5.0, 6.0, 7.0]),
    ]
    single = curves(
        [{"x": 1, "loss": 2.0}, {"x": 2, "loss": 1.0}]
    )  # one stage: one axis, as before
    assert [set(s) for s in single[0]["series"]] == [{"name", "n", "points"}]


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    ("text", "steps", "columns", "last_loss"),
    [
        (
            "".join(
                json.dumps(
                    {
                        "step": s,
                        "time": f"2026-12-01T10:00:{s:02d}+00:00",
                        "loss": 1 / s,
                        "epoch": s // 2,
                        "stage": "sft",
                        "done": s == 3,
                    }
                )
                + "\n"
                for s in range(1, 6)
            ),
            [1, 2, 3, 4, 5],
            {"loss": [1, 1 / 2, 1 / 3, 1 / 4, 1 / 5], "epoch": [0, 1, 1, 2, 2]},
            0.2,
        ),
        (
            '{"step": 1, "loss": 2}\n{"step": 2, "loss": 1.5, '
            '"kl": 0.1}\n{"loss": 9}\n{"step": 3, "loss": null}\n',
            [1, 2, 3],
            {"loss": [2, 1.5, NAN], "kl": [NAN, 0.1, NAN]},
            1.5,
        ),
        (
            # json reads these; not values
            '{"step": 1, "loss": NaN}\n{"step": 2, "loss": Infinity, "reward": 1}\n',
            [1, 2],
            {"loss": [NAN, INF], "reward": [NAN, 1]},
            None,
        ),
        (
            '{"step": 1, "loss": "high"}\n{"step": 2, "loss": 1.0}\n',  # a string is not a value
            [1, 2],
            {"loss": [NAN, 1.0]},
            1.0,
        ),
        (
            '{"step": 1, "loss": 1.0}\n[1, 2]\n{"step": true, '
            '"loss": 3.0}\n{"step": 2.5}\n{"step": 4, "loss": 0.5}\n',
            [1, 4],
            {"loss": [1.0, 0.5]},
            0.5,
        ),
    ],
)
def test_metrics_columns_are_the_rows_of_the_one_reader(text, steps, columns, last_loss):
    """The dashboards' columns come from training.runs.parse_metrics' rows (no second parser): rows
    without an integer step, lines that are not objects and values that are not numbers are left
    out."""
    import numpy as np

    from studio.training.selectors.metrics import metrics_columns

    metrics = metrics_columns(data=text.encode())
    assert metrics.steps.tolist() == steps
    assert sorted(metrics.columns) == sorted(columns)
    for name, values in columns.items():
        np.testing.assert_array_equal(metrics.columns[name], np.asarray(values, dtype=float))
    assert metrics.last_loss == last_loss
    assert metrics_columns(data=b"").steps.tolist() == []


@pytest.mark.django_db
def test_eval_loss_is_a_curve_each_evaluation_is_marked_and_the_best_kept_checkpoint_is_named(
    tmp_path, monkeypatch
):
    """An SFT run with eval_fraction: eval_loss rows every 2 steps. The lowest eval_loss (step 2) is
    a checkpoint rotated away and step 5's is no checkpoint at all, and checkpoint-7 is torn: the
    best one is checkpoint-8, the lowest of those on disk."""
    from studio.training.selectors import run_dashboard

    folder = tmp_path / "run"
    stage_dir = folder / "sft"
    stage_dir.mkdir(parents=True)
    eval_losses = {2: 0.5, 4: 2.5, 5: 0.9, 6: 2.7, 7: 0.1, 8: 2.25}
    with (stage_dir / "metrics.jsonl").open("w") as handle:
        for step in range(1, 9):
            handle.write(json.dumps({"stage": "sft", "step": step, "loss": 4.0 - step / 4}) + "\n")
            if step in eval_losses:
                handle.write(
                    json.dumps(
                        {
                            "stage": "sft",
                            "step": step,
                            "eval_loss": eval_losses[step],
                            "eval_runtime": 0.2,
                        }
                    )
                    + "\n"
                )
    for step in (4, 6, 8):
        (stage_dir / f"checkpoint-{step}").mkdir()
        (stage_dir / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
    (stage_dir / "checkpoint-7").mkdir()  # a save that did not finish
    run = TrainingRun.objects.create(
        kind="sft",
        title="t",
        folder=str(folder),
        config_digest="0" * 64,
        steps=[{"name": "sft", "argv": [], "config_file": "sft.yaml", "output": "sft"}],
        config={"sft": {"max_steps": 8}},
    )
    data = run_dashboard(run=run)
    loss = next(c for c in data["charts"] if c["key"] == "loss")
    assert [s["name"] for s in loss["series"]] == [
        "loss",
        "loss (smoothed)",
        "eval_loss",
    ]  # eval_loss raw only
    assert loss["series"][2]["points"] == [[float(s), v] for s, v in eval_losses.items()]
    marks = [(m["x"], m["kind"], m["label"]) for m in data["marks"]]
    assert [m for m in marks if m[1] == "evaluation"] == [
        (s, "evaluation", f"eval_loss {v:.4f}") for s, v in eval_losses.items()
    ]
    assert [m for m in marks if m[1] == "checkpoint"] == [
        (4, "checkpoint", "checkpoint-4 (eval_loss 2.5000)"),
        (6, "checkpoint", "checkpoint-6 (eval_loss 2.7000)"),
        (8, "checkpoint", "checkpoint-8 (eval_loss 2.2500)"),
    ]
    best = [m for m in data["marks"] if m["kind"] == "best"]
    assert [(m["x"], m["checkpoint"], m["label"]) for m in best] == [
        (8, "checkpoint-8", "best checkpoint: checkpoint-8 (eval_loss 2.2500)")
    ]
    assert [m[0] for m in marks] == sorted(
        m[0] for m in marks
    )  # in step order, as the list shows them
    from django.core.cache import caches

    from studio.training.selectors import dashboard

    caches[
        "local"
    ].clear()  # another web process: the evaluations are kept with the curves, not parsed again
    with monkeypatch.context() as patch:
        patch.setattr(
            dashboard, "stage_eval_losses", lambda run: pytest.fail("the metrics were parsed again")
        )
        assert run_dashboard(run=run)["marks"] == data["marks"]

    # checkpoint-8 goes (rotated, deleted by hand): the best is the lowest left, checkpoint-4
    import shutil

    shutil.rmtree(stage_dir / "checkpoint-8")
    assert [m["label"] for m in run_dashboard(run=run)["marks"] if m["kind"] == "best"] == [
        "best checkpoint: checkpoint-4 (eval_loss 2.5000)"
    ]
    # a stage without evaluations has no best checkpoint
    (stage_dir / "metrics.jsonl").write_text(
        "".join(json.dumps({"step": s, "loss": 1.0}) + "\n" for s in range(1, 9))
    )
    assert {m["kind"] for m in run_dashboard(run=run)["marks"]} == {"checkpoint"}

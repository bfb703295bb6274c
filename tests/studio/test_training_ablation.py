"""The ablation from the browser: a form generated from ``AblationConfig`` with the ablation's own
presets, ``python -m training ablation --config FILE`` on the train queue, and the ablation
dashboard on the run page, rebuilt from the run folder by ``training/ablation.py``'s table code (the
same numbers as the table.md it writes), on the tiny-smoke preset's real output from a real
worker."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from studio_testing import client_for, page_text

from harness.config_schema import load_config
from studio.jobs.models import Job
from studio.jobs.registry import JOB_KINDS, queue_of
from studio.jobs.testing import celery_worker
from studio.training.models import TrainingRun
from studio.training.testing import assert_form_refused, run_ended
from tests import artefacts
from training.ablation import PRESETS, AblationConfig


@pytest.mark.django_db
def test_the_ablation_form_has_every_field_its_presets_values_and_the_command(personas, runs_dir):
    client = client_for(personas.ml_engineer)
    page = page_text(client.get("/training/new/ablation/"))
    for f in dataclasses.fields(AblationConfig):
        if f.name == "output_dir":
            assert 'name="output_dir"' not in page
            continue
        assert f'name="{f.name}"' in page and f.metadata["help"] in page, f.name
    assert "python -m training ablation --config TRAINING_RUNS_DIR/run-N/ablation.yaml" in page
    smoke = page_text(client.get("/training/new/ablation/?preset=ablation-tiny-smoke"))
    tiny = PRESETS["tiny-smoke"]
    assert f'name="sft_steps" id="in-sft_steps" value="{tiny.sft_steps}"' in smoke
    assert f'name="model" id="in-model" value="{tiny.model}"' in smoke
    assert (
        f'name="eval_cases" id="in-eval_cases" value="{PRESETS["cpu-small"].eval_cases}"'
        in page_text(client.get("/training/new/ablation/?preset=ablation-cpu-small"))
    )
    assert queue_of(JOB_KINDS["ablation_run"]) is not None

    response = client.post(
        "/training/new/ablation/?preset=ablation-tiny-smoke",
        {"preset": "ablation-tiny-smoke", "eval_cases": "2"},
    )
    assert response.status_code == 302, page_text(response)[:2000]
    run = TrainingRun.objects.get()
    config_file = run.path / "ablation.yaml"
    assert run.steps[0]["argv"] == ["training", "ablation", "--config", str(config_file)]
    config = load_config(AblationConfig, config_file)
    assert config == dataclasses.replace(tiny, eval_cases=2, output_dir=str(run.path / "ablation"))
    assert run.job.kind == "ablation_run" and run.job.status == Job.QUEUED


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"sft_steps": "0"}, "sft_steps", "sft_steps: must be at least 1, got 0"),
        (
            {"sft2_steps": "5", "sft2_schedule_steps": "2"},
            "sft2_schedule_steps",
            "sft2_schedule_steps: the schedule",
        ),
        ({"resamples": "5"}, "resamples", "resamples: at least 100 bootstrap resamples, got 5"),
        ({"model": "/etc"}, "model", "model: /etc has no config.json"),
        ({"harness": "../x"}, "harness", "harness: '../x' is not a Harness here"),
        ({"sft_lr": "fast"}, "sft_lr", "sft_lr: expected a number"),
    ],
)
def test_a_wrong_ablation_field_is_refused_naming_it_and_nothing_is_saved(
    personas, runs_dir, data, field, message
):
    assert_form_refused(
        client_for(personas.ml_engineer).post("/training/new/ablation/", data),
        field=field,
        message=message,
        runs_dir=runs_dir,
    )


@pytest.mark.services
@pytest.mark.slow
@pytest.mark.timeout(
    900
)  # the first test to ask builds the shared ablation folder (minutes on 2 cores)
@pytest.mark.django_db(transaction=True)
def test_a_tiny_smoke_ablation_on_a_worker_shows_its_tables_rebuilt_from_the_folder(
    personas, settings, tmp_path, tmp_path_factory
):
    """The form's run on a real worker: ``python -m training ablation --config FILE`` over the run's
    folder. The folder already holds the tiny ablation tests/artefacts.py made with the same
    settings (the library's test checks how it is built), so the command finds every step done,
    rewrites the table and ends; the run page shows that folder's tables."""
    from studio.celery import app
    from studio.jobs.testing import redis_url

    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    queue = f"test-abl-{tmp_path.name[-8:]}"
    settings.CELERY_TRAIN_QUEUE = f"{queue}-train"
    mei = client_for(personas.ml_engineer)
    built, _ = artefacts.tiny_ablation(tmp_path_factory)
    flags = dict(
        zip(artefacts.TINY_ABLATION_ARGS[2::2], artefacts.TINY_ABLATION_ARGS[3::2], strict=True)
    )
    form = {
        "preset": "ablation-tiny-smoke",
        **{flag.removeprefix("--").replace("-", "_"): value for flag, value in flags.items()},
    }
    # queued before the worker starts, so that the folder is in place when the command runs
    previous = app.conf.broker_url, app.conf.task_default_queue
    app.conf.broker_url, app.conf.task_default_queue = redis_url(), queue
    try:
        response = mei.post("/training/new/ablation/?preset=ablation-tiny-smoke", form)
    finally:
        app.conf.broker_url, app.conf.task_default_queue = previous
    assert response.status_code == 302, page_text(response)[:2000]
    run = TrainingRun.objects.get()
    assert load_config(AblationConfig, run.path / "ablation.yaml") == dataclasses.replace(
        PRESETS["tiny-smoke"],
        train_cases=4,
        eval_cases=2,
        eval_prompt_robustness=1,
        eval_ifeval=2,
        output_dir=str(run.path / "ablation"),
    )  # the settings the shared folder was built with
    artefacts.private_copy(built, run.path / "ablation")
    with celery_worker(
        queue=queue, also_queues=(settings.CELERY_TRAIN_QUEUE,), lease_s=30, heartbeat_s=1
    ):
        job = run_ended(run, timeout=300)
    assert job.status == Job.SUCCEEDED, job.error + job.log_tail[-3000:]
    folder = run.path / "ablation"
    written = json.loads(
        (folder / "table.json").read_text()
    )  # what `python -m training ablation` wrote
    steps = json.loads((folder / "steps.json").read_text())
    assert (
        job.outcome
        == f"ablation: {len(steps)} of {len(steps)} steps done; the table is on the run page"
    )
    assert job.progress == 100

    page = page_text(client_for(personas.operator).get(f"/training/runs/{run.pk}/"))
    # Table 4: every model's scores with the interval to Base, as table.json has them
    for model, cells in written["models"].items():
        row = re.search(
            rf'<tr data-model="{model}">(.*?)</tr>', page.split('id="ablation-table"')[1]
        ).group(1)
        for cell in cells.values():
            assert f"{cell['score']:.1f}" in row
            if "vs_base" in cell:
                b = cell["vs_base"]
                assert f"({b['delta']:+.1f} [{b['low']:+.1f}, {b['high']:+.1f}])" in row
    assert "pending" not in page.split('id="ablation-table"')[1].split("</table>")[0]
    target = written["targets"]["hsa_sft_vs_fixed_sft_on_T2"]
    assert f"hsa_sft_vs_fixed_sft_on_T2</code>: delta {target['delta']:+.1f}" in page
    # the step-level T2 table, how requests ended, the wall time of every step
    t2 = page.split('id="ablation-t2-steps"')[1].split("</table>")[0]
    skill = written["t2_steps"]["base"]["skill_selection"]
    assert f"{skill['score']:.1f} (n={skill['n']})" in t2
    outcomes = page.split('id="ablation-outcomes"')[1].split("</table>")[0]
    counts = written["outcomes"]["hsa_sft"]["variant_qa"]
    assert (
        f"{counts['replied']} ({counts['effective']} effective) / {counts['fallback']}" in outcomes
    )
    assert f"of {counts['n']}" in outcomes
    for name, info in steps.items():
        assert f"<code>{name}</code></td><td>done</td><td>{info['wall_s']:.0f} s" in page
    assert (
        folder / "table.md"
    ).read_text().strip() in page  # the library's Markdown, from the same code
    chart = json.loads(
        page.split('id="ablation-chart-data" type="application/json">')[1].split("</script>")[0]
    )
    assert chart["models"][0]["label"] == "Base" and len(chart["steps"]) == len(steps)
    # run again: every step is done, so the ablation only rewrites its table
    again = mei.post(f"/training/runs/{run.pk}/resume/", follow=True)
    assert "ran to its end; start a new run to train more" in page_text(again)

"""MTP draft-head adaptation from the browser: the form generated from ``MTPStageConfig``, its
checks (the policy a model the studio accepts, an init head an existing head folder), a tiny run on
a real worker whose per-step curves and held-out acceptance the run page shows; and the registry's
draft-head column, which lists a checkpoint's head only when the head's card names that checkpoint
(its fingerprint), never a head adapted to another policy, and never a head as a checkpoint."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from studio_testing import client_for, page_text

from harness.config_schema import load_config
from studio.jobs.models import Job
from studio.jobs.registry import JOB_KINDS, queue_of
from studio.jobs.testing import celery_worker
from studio.training.models import TrainingRun
from studio.training.testing import assert_form_refused, run_ended
from training.mtp_config import MTPStageConfig


@pytest.fixture(scope="module")
def tiny_policy():
    from harness.model_cache import tiny_model_dir

    return Path(tiny_model_dir())


def _head(folder: Path, *, policy_dir: Path, fingerprint_of: Path) -> Path:
    """A head saved by the engine's own writer, its card naming the policy at ``fingerprint_of``."""
    from harness.checkpoints import checkpoint_info
    from serving.engine.draft_head import DraftHead
    from serving.engine.policy import load_model

    hf_model, _ = load_model(policy_dir)
    card = {
        "stage": "mtp",
        "policy": str(fingerprint_of),
        "policy_fingerprint": checkpoint_info(fingerprint_of)["fingerprint"],
        "layout": "eagle",
        "draft_steps": 3,
        "steps": 4,
        "acceptance_held_out": {"acceptance_rate": 0.8125, "acceptance_length": 3.25, "cycles": 16},
    }
    final = DraftHead.for_policy(hf_model, layout="eagle", steps=3).save(
        folder / "final", policy_config=hf_model.config, card=card
    )
    (folder / "model_card.json").write_text(json.dumps({"stage": "mtp", "steps": 4}))
    return final


def _finished(kind: str, folder: Path, *, output: str, model: str = "tiny") -> TrainingRun:
    job = Job.objects.create(kind=f"train_{kind}", title="t", status=Job.SUCCEEDED, params={})
    return TrainingRun.objects.create(
        kind=kind,
        title=f"a {kind} run",
        folder=str(folder),
        config_digest="0" * 64,
        job=job,
        model=model,
        config={output: {"max_steps": 4}},
        steps=[{"name": output, "argv": [], "config_file": f"{output}.yaml", "output": output}],
    )


@pytest.mark.django_db
def test_the_mtp_form_has_every_config_field_and_runs_the_training_mtp_command(personas, runs_dir):
    client = client_for(personas.ml_engineer)
    page = page_text(client.get("/training/new/mtp/"))
    for f in dataclasses.fields(MTPStageConfig):
        if f.name in ("output_dir", "resume", "progress_dir"):  # the studio owns run folders
            assert f'name="{f.name}"' not in page
            continue
        assert f'name="{f.name}"' in page and f.metadata["help"] in page, f.name
    assert "python -m training mtp --config TRAINING_RUNS_DIR/run-N/mtp.yaml" in page
    assert queue_of(JOB_KINDS["train_mtp"]) is not None
    assert JOB_KINDS["train_mtp"].cancel_permission == "training.run"

    response = client.post(
        "/training/new/mtp/?preset=mtp-tiny", {"preset": "mtp-tiny", "draft_steps": "2"}
    )
    assert response.status_code == 302, page_text(response)[:2000]
    run = TrainingRun.objects.get()
    config_file = run.path / "mtp.yaml"
    assert run.steps[0]["argv"] == ["training", "mtp", "--config", str(config_file)]
    config = load_config(MTPStageConfig, config_file)  # what the command loads
    assert (config.model, config.max_steps, config.draft_steps, config.output_dir) == (
        "tiny",
        4,
        2,
        str(run.path / "mtp"),
    )
    assert config.resume is True and run.job.kind == "train_mtp"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"model": "gpt-5"}, "model", "model: 'gpt-5' is not a model: use local, tiny or"),
        (
            {"init_head": "heads/old"},
            "init_head",
            "init_head: give the absolute path of a draft-head folder",
        ),
        (
            {"init_head": "/etc"},
            "init_head",
            "init_head: /etc: no config.json; a draft-head folder has config.json",
        ),
        ({"layout": "medusa"}, "layout", "layout: 'medusa' is not one of eagle, nextn"),
        (
            {"report_to": ["", "wandb"]},
            "report_to",
            "report_to: the MTP stage writes metrics.jsonl only",
        ),
        ({"max_cases": "1"}, "max_cases", "max_cases: 1 must be at least 2"),
    ],
)
def test_a_wrong_mtp_field_is_refused_naming_it_and_nothing_is_saved(
    personas, runs_dir, data, field, message
):
    assert_form_refused(
        client_for(personas.ml_engineer).post("/training/new/mtp/", data),
        field=field,
        message=message,
        runs_dir=runs_dir,
    )


@pytest.mark.django_db
def test_an_init_head_whose_weights_do_not_fit_its_layout_is_refused(
    personas, runs_dir, tmp_path, tiny_policy
):
    head = _head(tmp_path / "old", policy_dir=tiny_policy, fingerprint_of=tiny_policy)
    config = json.loads((head / "config.json").read_text())
    config["harness_draft"]["layout"] = "nextn"
    (head / "config.json").write_text(json.dumps(config))
    response = client_for(personas.ml_engineer).post(
        "/training/new/mtp/", {"model": "tiny", "init_head": str(head)}
    )
    assert response.status_code == 400
    assert f"init_head: {head}: mtp.fc.weight: missing (layout nextn needs it)" in page_text(
        response
    )


@pytest.mark.django_db
def test_the_registry_lists_a_checkpoints_own_head_not_a_stale_one_and_never_a_head_as_a_checkpoint(
    personas, runs_dir, tmp_path, tiny_policy
):
    sft = _finished("sft", tmp_path / "run-sft", output="sft")
    checkpoint = shutil.copytree(tiny_policy, tmp_path / "run-sft" / "sft" / "final")
    (checkpoint / "generation_config.json").write_text(
        '{"note": "trained"}'
    )  # not the base model's fingerprint
    (checkpoint.parent / "model_card.json").write_text(json.dumps({"stage": "sft", "steps": 4}))
    other = _finished("sft", tmp_path / "run-other", output="sft")
    other_checkpoint = shutil.copytree(tiny_policy, tmp_path / "run-other" / "sft" / "final")
    (other_checkpoint / "generation_config.json").write_text(
        '{"note": "trained further"}'
    )  # another fingerprint
    (other_checkpoint.parent / "model_card.json").write_text(
        json.dumps({"stage": "sft", "steps": 8})
    )
    # a head adapted to the first checkpoint, and a newer one adapted to the tiny base model
    own = _finished("mtp", tmp_path / "run-mtp", output="mtp", model=str(checkpoint))
    _head(tmp_path / "run-mtp" / "mtp", policy_dir=tiny_policy, fingerprint_of=checkpoint)
    stale = _finished("mtp", tmp_path / "run-mtp-base", output="mtp")
    stale_head = _head(
        tmp_path / "run-mtp-base" / "mtp", policy_dir=tiny_policy, fingerprint_of=tiny_policy
    )

    page = page_text(client_for(personas.ml_engineer).get("/training/checkpoints/"))
    rows = {int(chunk.split('"', 1)[0]): chunk for chunk in page.split('<tr data-run="')[1:]}
    assert set(rows) == {sft.pk, other.pk}  # the MTP runs' heads are not checkpoints
    assert f"run #{own.pk}</a>: acceptance 0.81, length 3.25 (K=3, eagle)" in rows[sft.pk]
    assert "adapt a draft head" not in rows[sft.pk]
    # the other checkpoint has no head of its own: neither head is listed, the link prefills a
    # re-adaptation
    assert (
        f"run #{own.pk}</a>" not in rows[other.pk] and f"run #{stale.pk}</a>" not in rows[other.pk]
    )
    link = f"/training/new/mtp/?preset=mtp-readapt&model={other_checkpoint}&init_head={stale_head}"
    assert link in rows[other.pk].replace("&amp;", "&")
    form = page_text(client_for(personas.ml_engineer).get(link))
    assert f'name="model" id="in-model" value="{other_checkpoint}"' in form
    assert f'name="init_head" id="in-init_head" value="{stale_head}"' in form
    # a head cannot become an endpoint
    refused = client_for(personas.ml_engineer).post(
        f"/training/runs/{own.pk}/endpoint/", follow=True
    )
    assert "its final/ is a draft head, not a model to serve" in page_text(refused)


@pytest.mark.services
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_tiny_mtp_run_on_a_worker_draws_its_per_step_curves_and_shows_its_acceptance(
    personas, settings, tmp_path
):
    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    queue = f"test-mtp-{tmp_path.name[-8:]}"
    settings.CELERY_TRAIN_QUEUE = f"{queue}-train"
    mei = client_for(personas.ml_engineer)
    with celery_worker(
        queue=queue, also_queues=(settings.CELERY_TRAIN_QUEUE,), lease_s=20, heartbeat_s=1
    ):
        assert (
            mei.post("/training/new/mtp/?preset=mtp-tiny", {"preset": "mtp-tiny"}).status_code
            == 302
        )
        run = TrainingRun.objects.get()

        job = run_ended(run, timeout=300)
    assert job.status == Job.SUCCEEDED, job.error + job.log_tail[-3000:]
    assert "python -m training mtp --config" in job.log_tail
    card = json.loads((run.path / "mtp" / "final" / "card.json").read_text())
    rate = card["acceptance_held_out"]["acceptance_rate"]
    assert (
        job.outcome
        == f"adapted a draft head in 4 steps, held-out acceptance {rate:.2f}: head in final/"
    )
    data = client_for(personas.operator).get(f"/training/runs/{run.pk}/metrics.json").json()
    charts = {c["key"]: c for c in data["charts"]}
    assert {"loss", "learning_rate", "grad_norm", "draft_loss", "draft_accuracy"} <= set(charts)
    assert [s["name"] for s in charts["draft_accuracy"]["series"]] == [
        f"accuracy_step_{k}" for k in (1, 2, 3)
    ]
    assert [p[0] for p in charts["draft_loss"]["series"][0]["points"]] == [2.0, 4.0]
    before = card["acceptance_held_out_before"]["acceptance_rate"]
    assert [(m["x"], m["label"]) for m in data["marks"] if m["kind"] == "eval"] == [
        (
            0,
            f"held-out acceptance {before:.3f} (length "
            f"{card['acceptance_held_out_before']['acceptance_length']:.2f})",
        ),
        (
            4,
            f"held-out acceptance {rate:.3f} (length "
            f"{card['acceptance_held_out']['acceptance_length']:.2f})",
        ),
    ]
    page = page_text(client_for(personas.operator).get(f"/training/runs/{run.pk}/"))
    assert f"rate {rate:.3f}" in page and card["policy_fingerprint"][:12] in page
    assert 'id="make-endpoint"' not in page  # a head is not a model to serve
    assert f'data-run="{run.pk}"' not in page_text(mei.get("/training/checkpoints/"))

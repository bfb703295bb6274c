"""Comparing two checkpoints in the registry: per evaluation set both scores and B - A, paired item
by item with the paired-bootstrap interval by the one paired comparison (evaluation.compare), from
the checkpoints' finished evaluation runs (their per-item JSONL); over the items both scored, saying
how many only one side scored, and a clear message when they share none; 400 naming the parameter
for an id that is not a checkpoint."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from studio_testing import client_for, page_text

from evaluation.stats import paired_bootstrap
from studio.jobs.models import Job
from studio.training.models import TrainingRun
from tests.cli import call
from training.self_eval import read_rows

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> dict[int, Path]:
    """Real `python -m training eval` output (its `main`) of the tiny model: on 3 T1 cases and 2
    IFEval prompts, and on 2. The cases run under a copy of the demo Harness that allows one model
    round instead of 4: the tiny model never writes a valid reply, so each case ran every round to
    the fallback; the per-item rows compared here are written the same way."""
    from harness import demo_harness_dir

    harness = shutil.copytree(demo_harness_dir(), tmp_path_factory.mktemp("harness") / "one-round")
    prompt = harness / "prompt.yaml"
    text = prompt.read_text(encoding="utf-8")
    assert "  max_rounds: 4\n" in text
    prompt.write_text(text.replace("  max_rounds: 4\n", "  max_rounds: 1\n"), encoding="utf-8")
    out = {}
    for cases in (3, 2):
        folder = tmp_path_factory.mktemp(f"eval{cases}") / "eval"
        done = call(
            "training",
            "eval",
            "--model",
            "tiny",
            "--harness",
            str(harness),
            "--out",
            str(folder),
            "--sets",
            "live_qa,ifeval",
            "--cases",
            str(cases),
            "--ifeval",
            "2",
        )  # in this process: the worker tests run it for real
        assert done.returncode == 0, done.stderr[-3000:]
        out[cases] = folder
    return out


def _checkpoint(tmp_path: Path, name: str) -> TrainingRun:
    folder = tmp_path / name
    (folder / "sft" / "final").mkdir(parents=True)
    (folder / "sft" / "final" / "config.json").write_text("{}")
    (folder / "sft" / "final" / "model.safetensors").write_bytes(b"")
    job = Job.objects.create(kind="train_sft", title=name, status=Job.SUCCEEDED, params={})
    return TrainingRun.objects.create(
        kind="sft",
        title=name,
        folder=str(folder),
        config_digest="0" * 64,
        job=job,
        steps=[{"name": "sft", "argv": [], "config_file": "sft.yaml", "output": "sft"}],
        config={"sft": {"max_steps": 2}},
    )


def _evaluation(
    tmp_path: Path, of: TrainingRun, source: Path, *, status=Job.SUCCEEDED
) -> TrainingRun:
    folder = tmp_path / f"eval-of-{of.pk}-{TrainingRun.objects.count()}"
    shutil.copytree(source, folder / "eval")
    job = Job.objects.create(kind="checkpoint_eval", title="e", status=status, params={})
    return TrainingRun.objects.create(
        kind="eval",
        title="e",
        folder=str(folder),
        config_digest="0" * 64,
        job=job,
        parent=of,
        steps=[],
        config={},
    )


def _row(page: str, set_name: str) -> str:
    return page.split(f'<tr data-set="{set_name}">')[1].split("</tr>")[0]


def test_two_checkpoints_scored_on_the_same_items_get_the_paired_bootstrap_of_their_difference(
    personas, tmp_path, scored
):
    a, b = _checkpoint(tmp_path, "a"), _checkpoint(tmp_path, "b")
    _evaluation(tmp_path, a, scored[3])
    b_eval = _evaluation(tmp_path, b, scored[3])
    # B did better on two T1 cases; its file lists the cases in another order: pairing is by item id
    path = b_eval.path / "eval" / "live_qa.jsonl"
    rows = list(read_rows(path).values())
    for row in rows[:2]:
        row["avg"] = min(1.0, (row["avg"] or 0.0) + 0.5)
    path.write_text("".join(json.dumps(row) + "\n" for row in reversed(rows)))

    page = page_text(
        client_for(personas.operator).get(f"/training/checkpoints/compare/?a={a.pk}&b={b.pk}")
    )
    base, cand = read_rows(scored[3] / "live_qa.jsonl"), read_rows(path)
    ids = sorted(base)
    expected = paired_bootstrap(
        baseline=[100 * float(base[i]["avg"] or 0) for i in ids],
        candidate=[100 * float(cand[i]["avg"] or 0) for i in ids],
        resamples=10_000,
    )
    assert expected.delta > 0
    row = _row(page, "live_qa")
    assert (
        f"{expected.delta:+.1f} [{expected.low:+.1f}, "
        f'{expected.high:+.1f}] <span class="small">(n=3)' in row
    )
    assert f"{100 * sum(float(base[i]['avg'] or 0) for i in ids) / 3:.1f}" in row
    summary = json.loads((scored[3] / "summary.json").read_text())
    ifeval = _row(page, "ifeval")
    assert (
        '+0.0 [+0.0, +0.0] <span class="small">(n=2)' in ifeval
        and f"{summary['ifeval']['prompt_strict']:.1f}" in ifeval
    )
    # a set neither evaluation scored
    assert f"not scored on T2 Harness-Variant QA yet for run #{a.pk} and run #{b.pk}" in _row(
        page, "variant_qa"
    )


def test_checkpoints_scored_on_different_items_are_paired_on_the_items_both_scored(
    personas, tmp_path, scored
):
    """The one policy of evaluation.compare: the items only one side scored are left out and
    counted."""
    a, b = _checkpoint(tmp_path, "a"), _checkpoint(tmp_path, "b")
    a_eval = _evaluation(tmp_path, a, scored[3])
    b_eval = _evaluation(tmp_path, b, scored[2])
    _evaluation(tmp_path, b, scored[3], status=Job.FAILED)  # a failed evaluation is not used
    page = page_text(
        client_for(personas.ml_engineer).get(f"/training/checkpoints/compare/?a={a.pk}&b={b.pk}")
    )
    row = _row(page, "live_qa")
    base, cand = (
        read_rows(a_eval.path / "eval" / "live_qa.jsonl"),
        read_rows(b_eval.path / "eval" / "live_qa.jsonl"),
    )
    ids = sorted(set(base) & set(cand))
    expected = paired_bootstrap(
        baseline=[100 * float(base[i]["avg"] or 0) for i in ids],
        candidate=[100 * float(cand[i]["avg"] or 0) for i in ids],
        resamples=10_000,
    )
    assert len(ids) == 2 and 'class="difference"' in row
    assert (
        f"{expected.delta:+.1f} [{expected.low:+.1f}, "
        f'{expected.high:+.1f}] <span class="small">(n=2: the items '
        "both scored; 1 only in A, 0 only in B)"
    ) in row


def test_checkpoints_scored_on_no_common_item_get_a_message_not_an_interval(
    personas, tmp_path, scored
):
    a, b = _checkpoint(tmp_path, "a"), _checkpoint(tmp_path, "b")
    a_eval = _evaluation(tmp_path, a, scored[2])
    b_eval = _evaluation(tmp_path, b, scored[2])
    rows = b_eval.path / "eval" / "live_qa.jsonl"
    rows.write_text(
        "".join(
            json.dumps({**json.loads(line), "id": "other-" + json.loads(line)["id"]}) + "\n"
            for line in rows.read_text().splitlines()
            if line.strip()
        )
    )
    page = page_text(
        client_for(personas.ml_engineer).get(f"/training/checkpoints/compare/?a={a.pk}&b={b.pk}")
    )
    row = _row(page, "live_qa")
    assert (
        f"no item in common: run #{a.pk}'s evaluation "
        f"#{a_eval.pk} and run #{b.pk}'s evaluation #{b_eval.pk} "
        "scored different items; evaluate both with the same cases"
    ) in row
    assert 'class="difference"' not in row


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "a=x&b={b}",
            "a: give the id of a training run whose "
            "checkpoint is in the registry (run #N), got 'x'",
        ),
        (
            "b={b}",
            "a: give the id of a training run whose checkpoint is in the registry (run #N), got ''",
        ),
        ("a={a}&b=999999", "b: there is no training run #999999"),
        (
            "a={a}&b={eval}",
            "b: training run #{eval} (Checkpoint evaluation) has no trained checkpoint",
        ),
        ("a={a}&b={a}", "b: the same run as a"),
    ],
)
def test_a_bad_id_answers_400_naming_the_parameter(personas, tmp_path, scored, query, message):
    a, b = _checkpoint(tmp_path, "a"), _checkpoint(tmp_path, "b")
    evaluation = _evaluation(tmp_path, a, scored[2])
    ids = {"a": a.pk, "b": b.pk, "eval": evaluation.pk}
    response = client_for(personas.operator).get(
        "/training/checkpoints/compare/?" + query.format(**ids)
    )
    assert response.status_code == 400
    assert message.format(**ids) in page_text(response)


def test_a_final_folder_with_config_json_and_no_weights_is_no_checkpoint(personas, tmp_path):
    """harness.checkpoints decides (is_checkpoint): the registry, the compare form, the run page and
    the endpoint action all refuse a final/ that holds config.json and no weights."""
    from studio.training.selectors import checkpoint_registry
    from studio.training.services import RunRefused, checkpoint_endpoint_create

    a, weightless = _checkpoint(tmp_path, "a"), _checkpoint(tmp_path, "weightless")
    (weightless.final_dir / "model.safetensors").unlink()
    assert [entry.run.pk for entry in checkpoint_registry(with_heads=False)] == [a.pk]
    client = client_for(personas.operator)
    response = client.get(f"/training/checkpoints/compare/?a={a.pk}&b={weightless.pk}")
    assert (
        response.status_code == 400
        and f"training run #{weightless.pk} (HSA-SFT) has no trained checkpoint"
        in (page_text(response))
    )
    with pytest.raises(RunRefused, match="has no trained model yet"):
        checkpoint_endpoint_create(run=weightless, actor=personas.operator)

"""``python -m training mtp``: the draft-head adaptation on the tiny model, and its loss against
serving.

The stage's run folder (rollouts, metrics with loss and accuracy per draft step,
checkpoints, the head in SGLang's layout with its card), resume from the last
checkpoint, config errors naming the field; and the training forward computes
exactly what the engine's draft steps compute at serving time, so what the head
learns is what it will be asked.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from serving.engine import EngineModel, Speculator
from serving.engine.draft_head import DraftHead, head_tensors, tensor_names
from serving.engine.policy import load_model
from tests import artefacts, cli
from training.mtp_loss import chain_forward, offline_acceptance
from training.mtp_rollouts import RolloutSequence


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "training", "mtp", *args],
        capture_output=True,
        text=True,
        timeout=500,
    )


@pytest.fixture(scope="module")
def mtp_run(tmp_path_factory, tiny_dir):
    """The tiny run ``python -m training mtp`` made (built once per test run:
    tests/artefacts.py)."""
    return artefacts.tiny_mtp_run(tmp_path_factory)


def test_the_run_folder_has_rollouts_metrics_checkpoints_and_the_head(mtp_run):
    out, done = mtp_run
    assert done.stdout.strip().endswith("final")
    assert sorted(p.name for p in (out / "rollouts").glob("*.pt")) == [
        "0000.pt",
        "0001.pt",
        "0002.pt",
    ]
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [2, 4]
    for row in rows:
        assert row["stage"] == "mtp" and row["loss"] > 0
        assert {
            "loss_step_1",
            "accuracy_step_1",
            "loss_step_3",
            "accuracy_step_3",
            "learning_rate",
            "grad_norm",
        } <= set(row)
    assert (out / "checkpoint-4" / "trainer_state.json").is_file()
    final = out / "final"
    config = json.loads((final / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLMEagle"] and config["num_hidden_layers"] == 1
    assert config["harness_draft"]["layout"] == "eagle" and config["harness_draft"]["steps"] == 3
    assert set(head_tensors(final)) == set(tensor_names("eagle").values())
    card = json.loads((final / "card.json").read_text())
    assert card["stage"] == "mtp" and card["steps"] == 4 and len(card["policy_fingerprint"]) == 64
    assert card["data"]["cases"] == 3 and card["data"]["train_sequences"] >= 1
    assert card["acceptance_held_out"]["cycles"] > 0
    model_card = json.loads((out / "model_card.json").read_text())
    assert model_card["stage"] == "mtp" and model_card["extra"]["head"].endswith("final")
    assert "--draft-head" in (out / "MODEL_CARD.md").read_text()


def test_a_longer_run_resumes_from_the_last_checkpoint(mtp_run, tmp_path):
    out = artefacts.private_copy(mtp_run[0], tmp_path / "run")
    args = list(artefacts.TINY_MTP_ARGS)
    args[args.index("--max-steps") + 1] = "6"
    done = _run(*args, "--output-dir", str(out))
    assert done.returncode == 0, done.stderr
    assert "resumed from" in done.stderr and "checkpoint-4 (step 4)" in done.stderr
    assert "rollout 1/" not in done.stderr  # the rollouts on disk are reused
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [2, 4, 6]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--layout", "medusa"], "layout: 'medusa' is not one of eagle, nextn"),
        (["--draft-steps", "0"], "draft_steps: 0 must be between 1 and 8"),
        (["--held-out", "1.5"], "held_out: 1.5 must be between 0 and 1"),
        (["--report-to", "wandb"], "report_to: the MTP stage writes metrics.jsonl only"),
    ],
)
def test_bad_settings_exit_2_naming_the_field(args, message, tmp_path):
    done = cli.call(
        "training", "mtp", "--model", "tiny", "--output-dir", str(tmp_path / "run"), *args
    )
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_the_training_forward_is_what_the_engine_drafts(tiny_dir):
    """Teacher-forced step k at anchor t == the engine's k-th draft step of a cycle starting at t
    whose earlier drafts were right: same inputs, same attention (real slots <= t, then its own
    chain)."""
    model, tokenizer = load_model(tiny_dir)
    engine_model = EngineModel(model)
    torch.manual_seed(0)
    head = DraftHead.for_policy(model).eval()
    ids = tokenizer(
        "The host answers every viewer with the price, the stock and the link of each item.",
        add_special_tokens=False,
    )["input_ids"]
    tokens = torch.tensor(ids)
    with torch.inference_mode():
        seq = engine_model.new_sequence(64)
        _, states = engine_model.prefill(seq, tokens, states=True)
    written = torch.zeros(len(ids), dtype=torch.bool)
    written[8:] = True
    rollout = RolloutSequence(tokens=tokens, states=states[:-1].half().float(), written=written)
    with torch.no_grad():
        anchors, logits, _ = chain_forward(head, rollout, steps=3, teacher_forced=True)
    spec = Speculator(head, steps=3)
    for row, t in enumerate(anchors.tolist()[:4]):
        with torch.inference_mode():
            s = spec.new_sequence(engine_model, 64)
            pending = spec.absorb(s, None, rollout.states[: t + 1], tokens[: t + 1])
            out = spec.extend(s, pending, tokens[t + 1 : t + 2], s.draft_length)[-1:]
            for k in range(3):
                if k:
                    out = spec.extend(s, out, tokens[t + 1 + k : t + 2 + k], t + k)
                torch.testing.assert_close(
                    head.logits(out)[0], logits[k][row], atol=1e-4, rtol=1e-4
                )


def test_offline_acceptance_counts_leading_agreeing_drafts():
    class Head:
        """Drafts by looking the answer up: right at steps 1-2, wrong at step 3 (no draft
        vocabulary)."""

        @staticmethod
        def restrict(logits):
            return logits

    from unittest import mock

    rollout = RolloutSequence(
        tokens=torch.arange(10),
        states=torch.zeros(9, 4),
        written=torch.tensor([False] * 5 + [True] * 5),
    )
    vocab = 12

    def fake_chain(head, seq, *, steps, teacher_forced):
        anchors = seq.anchors()
        logits, targets = [], []
        for k in range(1, steps + 1):
            at = anchors + 1 + k
            target = torch.where(at <= 9, at, -1)
            guess = target.clamp(min=0) if k < 3 else (target.clamp(min=0) + 1) % vocab
            logits.append(torch.nn.functional.one_hot(guess, vocab).float())
            targets.append(target)
        return anchors, logits, targets

    with mock.patch("training.mtp_loss.chain_forward", fake_chain):
        result = offline_acceptance(Head(), [rollout], steps=3)
    # anchors 4..7 (their next token was written); step-2 target is past the end for anchor 7
    assert result["cycles"] == 4
    assert result["acceptance_rate_per_position"] == [1.0, 0.75, 0.0]
    assert result["acceptance_length"] == pytest.approx(1 + (4 + 3) / 4)

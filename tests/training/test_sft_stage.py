"""Stage 1 (SFT) for two steps on the tiny model: logged, trained, reloadable, resumable."""

from __future__ import annotations

import json

import pytest

from tests.training.conftest import case_examples, price_examples
from tests.training.helpers import answer_with_runtime, changed_tensors
from training.runs import last_checkpoint, read_metrics, read_model_card
from training.sft_config import SFTStageConfig
from training.sft_trainer import run_sft


def test_sft_logs_loss_and_changes_weights(sft_run, tiny_dir):
    rows = [r for r in read_metrics(sft_run) if "loss" in r]
    assert [r["step"] for r in rows] == [1, 2]
    assert all(r["loss"] > 0 and r["tokens_per_s"] > 0 for r in rows)
    assert changed_tensors(tiny_dir, sft_run / "final")  # the optimizer moved the weights


def test_sft_run_folder_has_config_card_and_safetensors(sft_run):
    config = json.loads((sft_run / "config.json").read_text())
    assert config["max_steps"] == 2 and config["model"] == "tiny"
    card = read_model_card(sft_run)
    assert card["stage"] == "sft" and card["trainer"] == "trl.SFTTrainer"
    assert card["harness_name"] == "livestream-avatar" and len(card["harness_digest"]) == 64
    assert card["parent_checkpoint"].endswith("smollm2-tiny-random")
    assert (sft_run / "final" / "model.safetensors").is_file()
    assert "parent checkpoint" in (sft_run / "MODEL_CARD.md").read_text()


def test_sft_checkpoint_answers_through_runtime(sft_run):
    traj = answer_with_runtime(sft_run / "final")
    assert traj.model_calls and traj.model_calls[0].output_tokens > 0
    assert traj.model_calls[0].error is None
    assert traj.reply  # the model's reply or the Harness's conservative fallback


def test_sft_resumes_from_last_checkpoint(sft_run, tmp_path):
    import shutil

    run = tmp_path / "resume"
    shutil.copytree(sft_run, run)
    shutil.rmtree(run / "final")
    shutil.rmtree(
        run / "checkpoint-2"
    )  # as if killed after logging step 2 but before its checkpoint
    assert last_checkpoint(run).name == "checkpoint-1"
    config = SFTStageConfig(
        model="tiny", output_dir=str(run), max_steps=3, save_steps=1, learning_rate=1e-3
    )
    run_sft(config, examples=price_examples())
    steps = [r["step"] for r in read_metrics(run) if "loss" in r]
    assert steps == [
        1,
        2,
        3,
    ]  # step 1 from the first run; 2 (lost with its checkpoint) and 3 trained now
    assert read_model_card(run)["steps"] == 3


def test_sft_trains_a_trajectory_as_one_packed_sequence(tmp_path):
    from pathlib import Path

    from training.turns import turn_examples

    recorded = json.loads(
        (Path(__file__).parent / "testdata" / "retry_trajectory.json").read_text()
    )
    examples = turn_examples(recorded["trajectory"], strip_retries=True, meta={"case_id": "c1"})
    config = SFTStageConfig(
        model="tiny", output_dir=str(tmp_path), max_steps=1, save_steps=1, learning_rate=1e-3
    )
    run_sft(config, examples=examples)
    packed = read_model_card(tmp_path)["data"]["packed"]
    assert packed["sequences"] == 1 and packed["turns"] == 3
    assert packed["tokens"] < packed["per_turn_tokens"] / 2
    rows = [r for r in read_metrics(tmp_path) if "loss" in r]
    assert rows and rows[0]["loss"] > 0
    assert rows[0]["num_input_tokens_seen"] == packed["tokens"]  # one sequence, not three


def test_stop_after_steps_keeps_the_schedule_of_max_steps(tmp_path):
    config = SFTStageConfig(
        model="tiny",
        output_dir=str(tmp_path),
        max_steps=4,
        stop_after_steps=2,
        save_steps=10,
        learning_rate=1e-3,
    )
    run_sft(config, examples=price_examples())
    rows = [r for r in read_metrics(tmp_path) if "loss" in r]
    assert [r["step"] for r in rows] == [1, 2]
    # linear decay over 4 steps: step 2 trains at 1e-3 * 3/4 (over 2 steps it would be 1e-3 * 1/2)
    assert abs(rows[1]["learning_rate"] - 7.5e-4) < 1e-9
    assert read_model_card(tmp_path)["steps"] == 2
    assert (tmp_path / "checkpoint-2").is_dir() and (
        tmp_path / "final" / "model.safetensors"
    ).is_file()


def test_a_run_killed_after_its_stop_checkpoint_resumes_without_training_further(tmp_path):
    """Killed after checkpoint-2 was saved but before final/: the resumed run writes checkpoint-2's
    weights as final, and trains no third step."""
    import shutil

    config = SFTStageConfig(
        model="tiny",
        output_dir=str(tmp_path),
        max_steps=4,
        stop_after_steps=2,
        save_steps=10,
        learning_rate=1e-3,
    )
    run_sft(config, examples=price_examples())
    shutil.rmtree(tmp_path / "final")
    (tmp_path / "model_card.json").unlink()
    run_sft(config, examples=price_examples())
    assert [r["step"] for r in read_metrics(tmp_path) if "loss" in r] == [1, 2]
    assert read_model_card(tmp_path)["steps"] == 2
    assert not changed_tensors(tmp_path / "checkpoint-2", tmp_path / "final")
    assert not (tmp_path / "checkpoint-3").exists()


def test_gradient_checkpointing_trains_the_same_step(tmp_path):
    """Recomputing activations trades time for memory; the step it takes is the same."""
    losses = []
    for checkpointing in (False, True):
        out = tmp_path / str(checkpointing)
        run_sft(
            SFTStageConfig(
                model="tiny",
                output_dir=str(out),
                max_steps=1,
                save_steps=10,
                learning_rate=1e-3,
                gradient_checkpointing=checkpointing,
            ),
            examples=price_examples(),
        )
        losses.append([r["loss"] for r in read_metrics(out) if "loss" in r])
        assert (
            json.loads((out / "config.json").read_text())["gradient_checkpointing"] is checkpointing
        )
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)
    from safetensors.torch import load_file

    plain, recomputed = (
        load_file(tmp_path / name / "final" / "model.safetensors") for name in ("False", "True")
    )
    assert plain.keys() == recomputed.keys()
    assert all(torch_allclose(plain[k], recomputed[k]) for k in plain)


def torch_allclose(a, b) -> bool:
    import torch

    return torch.allclose(a, b, rtol=1e-4, atol=1e-6)


def test_the_eval_split_holds_out_whole_cases_with_every_turn_and_variant():
    from training.sft_trainer import split_eval

    examples = case_examples(10, harnesses=("original", "variant-1"))
    train, held_out, facts = split_eval(examples, 0.3, seed=0)
    train_cases = {ex["meta"]["case_id"] for ex in train}
    held_cases = {ex["meta"]["case_id"] for ex in held_out}
    assert len(held_cases) == 3 and len(train_cases) == 7 and not train_cases & held_cases
    for case in held_cases:  # both turns under both Harnesses: 4 examples per held-out case
        assert sorted(
            (ex["meta"]["harness"], ex["meta"]["turn"])
            for ex in held_out
            if ex["meta"]["case_id"] == case
        ) == [("original", 0), ("original", 1), ("variant-1", 0), ("variant-1", 1)]
    assert len(train) + len(held_out) == len(examples) and len(held_out) == 12
    assert facts == {
        "eval_fraction": 0.3,
        "eval_cases": 3,
        "eval_examples": 12,
        "train_cases": 7,
        "train_examples": 28,
    }
    assert [ex for ex in examples if ex in train] == train  # order kept
    assert split_eval(examples, 0.3, seed=0)[1] == held_out  # the seed decides
    assert {ex["meta"]["case_id"] for ex in split_eval(examples, 0.3, seed=1)[1]} != held_cases
    # a tiny share still holds one case out, a large one still trains one
    assert len({ex["meta"]["case_id"] for ex in split_eval(examples, 0.01, seed=0)[1]}) == 1
    assert len({ex["meta"]["case_id"] for ex in split_eval(examples, 0.99, seed=0)[0]}) == 1
    with pytest.raises(ValueError, match="eval_fraction: .* at least 2 cases, the examples have 1"):
        split_eval(case_examples(1, harnesses=("original", "variant-1")), 0.5, seed=0)


def test_sft_with_eval_fraction_logs_eval_loss_at_each_save_on_held_out_cases(tmp_path):
    config = SFTStageConfig(
        model="tiny",
        output_dir=str(tmp_path),
        max_steps=4,
        save_steps=2,
        save_total_limit=5,
        learning_rate=1e-3,
        eval_fraction=0.34,
    )
    run_sft(config, examples=case_examples(6))
    rows = read_metrics(tmp_path)
    evals = [r for r in rows if "eval_loss" in r]
    assert [r["step"] for r in evals] == [2, 4]  # eval_steps 0: at each save
    assert all(r["eval_loss"] > 0 and "loss" not in r for r in evals)
    assert [r["step"] for r in rows if "loss" in r] == [1, 2, 3, 4]
    card = read_model_card(tmp_path)
    split = card["data"]["eval_split"]
    assert (
        split["eval_cases"],
        split["train_cases"],
        split["eval_examples"],
        split["eval_steps"],
    ) == (2, 4, 4, 2)
    # packed like the training set: one sequence per trajectory on each side
    assert card["data"]["packed"]["sequences"] == 4 and split["eval_packed"]["sequences"] == 2
    best = min(evals, key=lambda r: r["eval_loss"])
    assert card["extra"]["best_eval_loss"] == best["eval_loss"]
    assert card["extra"]["best_eval_step"] == best["step"] and card["extra"]["evaluations"] == 2
    assert (tmp_path / "checkpoint-2").is_dir() and (tmp_path / "checkpoint-4").is_dir()


def test_eval_steps_sets_the_trainers_evaluation_and_nothing_else(tmp_path):
    from training.sft_trainer import build_sft_args
    from training.stage_common import start_stage

    config = SFTStageConfig(
        model="tiny", output_dir=str(tmp_path), save_steps=20, eval_fraction=0.2, eval_steps=5
    )
    args = build_sft_args(config, start_stage(config, stage="sft"))
    assert (args.eval_strategy, args.eval_steps) == ("steps", 5)  # IntervalStrategy is a str enum
    assert args.load_best_model_at_end is False and args.metric_for_best_model is None
    assert args.prediction_loss_only is True and args.per_device_eval_batch_size == 2
    off = SFTStageConfig(model="tiny", output_dir=str(tmp_path / "off"))
    assert build_sft_args(off, start_stage(off, stage="sft")).eval_strategy == "no"


def test_sft_without_eval_fraction_holds_nothing_out(sft_run):
    assert not any("eval_loss" in r for r in read_metrics(sft_run))
    card = read_model_card(sft_run)
    assert "eval_split" not in card["data"] and "best_eval_loss" not in card["extra"]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"eval_fraction": 1.0}, "eval_fraction: must be at least 0 (off) and below 1"),
        ({"eval_fraction": -0.1}, "eval_fraction: must be at least 0 (off) and below 1"),
        ({"eval_fraction": float("nan")}, "eval_fraction: must be at least 0"),
        (
            {"eval_fraction": 0.1, "eval_steps": -1},
            "eval_steps: must be 0 (at each save) or more, got -1",
        ),
        ({"eval_steps": 5}, "eval_steps: evaluates the held-out cases; set eval_fraction above 0"),
    ],
)
def test_bad_eval_settings_are_refused_naming_the_field(values, message):
    assert SFTStageConfig(**values).check().startswith(message)


def test_a_bad_eval_fraction_in_a_config_file_names_its_line(tmp_path):
    from harness.config_schema import ConfigError, load_config

    path = tmp_path / "sft.yaml"
    path.write_text("model: tiny\neval_fraction: 1.5\n")
    with pytest.raises(ConfigError, match=r"sft.yaml:2: eval_fraction: must be at least 0"):
        load_config(SFTStageConfig, path)
    path.write_text("eval_fraction: 0.1\neval_steps: 10\n")
    assert load_config(SFTStageConfig, path).eval_steps == 10
